"""sitecustomize for tools/regrtest.py's "pyframe" and "locals" runs.

tools/regrtest.py copies this file into a temporary directory and puts that
directory first on PYTHONPATH, so every interpreter the run starts (regrtest,
its workers, and the interpreters tests start without -I/-E) installs, before
any test code runs, a pyframe callback chosen by PYFRAME_REGRTEST_CALLBACK:

  python (the pyframe run; the default)  replaces every code object with a
      fresh copy of itself (``code.replace()``) and caches it on the original:
      every Python frame of the thread then runs pyframe's replacement path;
  c  the same callback in C: regrtest_freshcopy.fresh_copy
      (tools/regrtest_site/freshcopy.c, built by tools/regrtest.py next to
      this file), which runs no Python frame and so is invisible to
      sys.settrace/setprofile/monitoring;
  locals (the locals run)  reads every value of every frame's f_locals (when
      it is a dict: module and class code may run in any mapping) and lets
      the frame run: pyframe's entry-locals path on every frame;
  spec (the spec run)  pyframe's specialization mode on
      (pyframe.set_specialization(True), CPython 3.12+): the callback skips
      half of all code objects (chosen by their first line and name, the same
      in every process) and reads the f_locals of every frame of the other
      half, as the locals run does, so skipped code runs with the hook stepped
      aside, specialized and inlined, beside code that still reaches the
      callback on every frame.

pyframe callbacks are per thread: this installs the callback in the main thread
only.  Other threads still go through pyframe's PEP 523 function (it is
interpreter-wide) but as a pass-through, unless PYFRAME_REGRTEST_THREADS=1:
then threading.Thread._bootstrap_inner is wrapped so that every
threading.Thread installs the callback before it runs (threads started with
_thread.start_new_thread directly still run without it).
This file must stay silent: tests compare their subprocesses' output.
"""

import os

import pyframe


# The names the callbacks use are bound as defaults: frames still run (and
# reach the callback) late in interpreter shutdown, after this module's
# globals were set to None.
def _regrtest_fresh_copy(frame, Compiled=pyframe.Compiled):
    return Compiled(frame.f_code.replace())


def _regrtest_read_f_locals(frame, isinstance=isinstance, dict_values=dict.values, dict=dict):
    f_locals = frame.f_locals
    # exec() and eval() give module and class code any mapping the caller
    # passes: its methods are the test's own code (as for a trace function
    # reading f_locals), so only a dict's values are read, through dict's.
    if isinstance(f_locals, dict):
        for _ in dict_values(f_locals):
            pass


def _regrtest_skip_half(frame, read=_regrtest_read_f_locals, SKIP=pyframe.SKIP, len=len):
    code = frame.f_code
    if (code.co_firstlineno + len(code.co_qualname)) & 1:
        return SKIP
    read(frame)
    return None


_which = os.environ.get("PYFRAME_REGRTEST_CALLBACK")
if _which == "c":
    from regrtest_freshcopy import fresh_copy as _regrtest_callback
elif _which == "locals":
    _regrtest_callback = _regrtest_read_f_locals
elif _which == "spec":
    _regrtest_callback = _regrtest_skip_half
else:
    _regrtest_callback = _regrtest_fresh_copy

pyframe.set_callback(_regrtest_callback)
if _which == "spec":
    pyframe.set_specialization(True)

if os.environ.get("PYFRAME_REGRTEST_THREADS") == "1":
    import threading

    _bootstrap_inner = threading.Thread._bootstrap_inner

    def _regrtest_bootstrap_inner(
        self,
        set_callback=pyframe.set_callback,
        callback=_regrtest_callback,
        bootstrap_inner=_bootstrap_inner,
    ):
        set_callback(callback)
        bootstrap_inner(self)

    threading.Thread._bootstrap_inner = _regrtest_bootstrap_inner
