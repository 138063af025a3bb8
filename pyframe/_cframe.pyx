# cython: language_level=3, boundscheck=False, wraparound=False
"""pyframe._cframe: the Python-facing layer over cframe/.

It owns the Frame type handed to callbacks, the sentinels, argument checking
and the callback API; cframe/eval_frame.c owns the hook itself, which fills
in a Frame, calls the callback and reads its result (`_classify_other` in
compiled.pxi for the results only this module knows).
"""

# One extension module made of textual includes, one type or concern each, in
# the order they depend on one another: cdef functions and types stay direct
# C calls across files, as they were in one file.  Module-level statements
# run in this order at import.

cimport cython
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF
from cpython.pystate cimport PyThreadState

from types import MethodType
from weakref import ref as _weak_ref

include "cframe_api.pxi"        # pyframe.h: what cframe/ offers this layer
include "checks.pxi"            # argument checking and error wording
include "sentinels.pxi"         # SKIP, SKIP_RECURSIVE, RUN_ONLY(_RECURSIVE), UNBOUND
include "frame.pxi"             # pyframe.Frame
include "compiled.pxi"          # pyframe.Compiled and the results only this layer knows
include "cache.pxi"             # pyframe.Cache and each callback's own cache
include "fast_guard.pxi"        # pyframe.FastGuard and Setting: guards checked without a call
include "callback.pxi"          # set_callback, callback, run_only and the rest
include "cache_functions.pxi"   # reset, remember(ed), the cache limit, cache_entries
include "specialization.pxi"    # the specialization mode's switches
include "switch.pxi"            # pyframe.Switch


# Start-up: hand the hook (cframe/eval_frame.c) the types, sentinels and
# functions it needs from this layer.
cdef pyframe_layer _layer
cdef Frame _probe = Frame.__new__(Frame)
_layer.frame_type = <PyTypeObject *>Frame
# Where Cython put the field in the object struct: computed, not assumed.
_layer.frame_ref_offset = <char *>&_probe._ref - <char *><PyObject *>_probe
_layer.skip = <PyObject *>_SKIP
_layer.skip_recursive = <PyObject *>_SKIP_RECURSIVE
_layer.run_only = <PyObject *>_RUN_ONLY
_layer.run_only_recursive = <PyObject *>_RUN_ONLY_RECURSIVE
_layer.classify_other = _classify_other
_layer.notify_dropped = _notify_dropped
_layer.fast_guard_type = <PyTypeObject *>FastGuard
_layer.check_fast_guard = _check_fast_guard
_probe = None
pyframe_hook_init(&_layer)
