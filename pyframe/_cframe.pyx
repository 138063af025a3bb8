# cython: language_level=3, boundscheck=False, wraparound=False
"""pyframe._cframe: the Python-facing layer over cframe/.

It owns the Frame type handed to callbacks, the sentinels, argument checking
and the callback API; cframe/eval_frame.c owns the hook itself, which fills
in a Frame, calls the callback and reads its result (`_classify_other` below
for the results only this module knows).
"""

cimport cython
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF
from cpython.pystate cimport PyThreadState

from types import MethodType
from weakref import ref as _weak_ref


cdef extern from "Python.h":
    object PyObject_CallOneArg(object callable, object arg)
    object PyObject_GenericGetAttr(object o, object name)
    bint PyCode_Check(object o)


cdef extern from "pyframe.h":
    cdef struct _PyInterpreterFrame:
        pass

    ctypedef struct pyframe_frame_ref:
        _PyInterpreterFrame *frame
        _PyInterpreterFrame *caller
        PyThreadState *tstate

    ctypedef int (*pyframe_classify_fn)(object, object, PyObject **, PyObject **,
                                        PyObject **) except -1
    ctypedef object (*pyframe_notify_fn)(object)

    ctypedef struct pyframe_owner:
        pass

    ctypedef struct pyframe_layer:
        PyTypeObject *frame_type
        Py_ssize_t frame_ref_offset
        PyObject *skip
        PyObject *skip_recursive
        PyObject *run_only
        PyObject *run_only_recursive
        pyframe_classify_fn classify_other
        pyframe_notify_fn notify_dropped

    enum:
        PYFRAME_ERROR
        PYFRAME_RUN
        PYFRAME_SKIP
        PYFRAME_SKIP_RECURSIVE
        PYFRAME_REPLACE
        PYFRAME_CACHE
        PYFRAME_RUN_ONLY
        PYFRAME_RUN_ONLY_RECURSIVE

    int pyframe_hook_init(const pyframe_layer *layer) except -1
    PyObject *pyframe_thread_get_callback()
    object pyframe_thread_install(PyObject *callback, PyObject *cache, pyframe_owner *owner,
                                  int run_only)
    int pyframe_hook_installed()
    pyframe_owner *pyframe_owner_new(PyObject *self, int limit) except NULL
    void pyframe_owner_free(pyframe_owner *owner)
    int pyframe_reset_code(object code, pyframe_owner *owner) except -1
    int pyframe_reset_all(pyframe_owner *owner) except -1
    int pyframe_remember(object code, pyframe_owner *owner, int action) except -1
    int pyframe_remembered(object code, pyframe_owner *owner)
    int pyframe_set_cache_limit(int limit) except -1
    int pyframe_get_cache_limit()
    object pyframe_cache_entries(object code, pyframe_owner *owner)

    PyObject *pyframe_frame_code(_PyInterpreterFrame *frame)
    PyObject *pyframe_frame_globals(_PyInterpreterFrame *frame)
    PyObject *pyframe_frame_builtins(_PyInterpreterFrame *frame)
    int pyframe_frame_lasti(_PyInterpreterFrame *frame)
    int pyframe_frame_lineno(_PyInterpreterFrame *frame)
    object pyframe_frame_back(PyThreadState *tstate, _PyInterpreterFrame *caller)

    object pyframe_callback_locals(_PyInterpreterFrame *frame)
    object pyframe_localsplus(_PyInterpreterFrame *frame, object unbound)
    int pyframe_set_local(_PyInterpreterFrame *frame, object name, object value) except -1
    object pyframe_frame_closure(_PyInterpreterFrame *frame)

    int pyframe_specialization_set(int on) except -1
    int pyframe_specialization_enabled()
    int pyframe_specialization_hooked(object func)
    int pyframe_specialization_aside()
    Py_ssize_t pyframe_specialization_probe(object func, object driver) except -1


cdef extern from "Python.h":
    ctypedef struct PyCodeObject:
        int co_flags


cdef class _Sentinel:
    """A named singleton such as pyframe.SKIP."""

    cdef readonly str name

    def __init__(self, str name):
        self.name = name

    def __repr__(self):
        return "pyframe." + self.name

    def __reduce__(self):
        return self.name


# The code below reads C-level names, never module globals: at interpreter
# shutdown CPython sets module globals to None while frames (__del__
# methods, atexit handlers) still run through the hook.
cdef _Sentinel _SKIP = _Sentinel("SKIP")
cdef _Sentinel _SKIP_RECURSIVE = _Sentinel("SKIP_RECURSIVE")
cdef _Sentinel _RUN_ONLY = _Sentinel("RUN_ONLY")
cdef _Sentinel _RUN_ONLY_RECURSIVE = _Sentinel("RUN_ONLY_RECURSIVE")
cdef _Sentinel _UNBOUND = _Sentinel("UNBOUND")
SKIP = _SKIP
SKIP_RECURSIVE = _SKIP_RECURSIVE
RUN_ONLY = _RUN_ONLY
RUN_ONLY_RECURSIVE = _RUN_ONLY_RECURSIVE
UNBOUND = _UNBOUND

# A remembered action (cframe's PYFRAME_*) as what a callback returns for it.
cdef dict _DECISION_NAMES = {
    PYFRAME_RUN: None,
    PYFRAME_SKIP: _SKIP,
    PYFRAME_SKIP_RECURSIVE: _SKIP_RECURSIVE,
    PYFRAME_RUN_ONLY: _RUN_ONLY,
    PYFRAME_RUN_ONLY_RECURSIVE: _RUN_ONLY_RECURSIVE,
}

cdef int _CO_GENERATOR_LIKE = 0x20 | 0x80 | 0x200   # generator, coroutine, async generator


@cython.final
@cython.freelist(8)
cdef class Frame:
    """A frame about to run, as a pyframe callback sees it.

    Valid only while the callback runs; afterwards every attribute raises
    RuntimeError.
    """

    # Filled in and emptied by the hook (cframe/eval_frame.c, ask_callback).
    cdef pyframe_frame_ref _ref

    def __init__(self):
        raise TypeError("pyframe.Frame objects are made by pyframe for its callbacks")

    def __getattribute__(self, name):
        # frame.f_locals is read for nearly every frame by observing
        # callbacks: answer it before the generic lookup (type MRO, then the
        # descriptor), which costs more than building a small dict.  The
        # name CPython passes is interned, as is this constant.
        if name is "f_locals":
            return pyframe_callback_locals(self._live())
        return PyObject_GenericGetAttr(self, name)

    cdef inline _PyInterpreterFrame *_live(self) except NULL:
        if self._ref.frame == NULL:
            raise RuntimeError(
                "this pyframe.Frame is gone: a Frame is valid only while the "
                "callback it was passed to runs")
        return self._ref.frame

    @property
    def f_code(self):
        """The code object the frame is about to run."""
        return <object>pyframe_frame_code(self._live())

    @property
    def f_globals(self):
        return <object>pyframe_frame_globals(self._live())

    @property
    def f_builtins(self):
        return <object>pyframe_frame_builtins(self._live())

    @property
    def f_lasti(self):
        """What CPython's frame.f_lasti would say: -1 on 3.11 and 3.12, 0 from 3.13 on."""
        return pyframe_frame_lasti(self._live())

    @property
    def f_lineno(self):
        """The line the frame starts at: CPython's frame.f_lineno at its
        first traced line; None when its code has no line numbers."""
        cdef int line = pyframe_frame_lineno(self._live())
        return None if line < 0 else line

    @property
    def closure(self):
        """The cells the frame's free variables are bound to, in co_freevars
        order: the function's own closure tuple (the cells themselves, not
        copies); () when the code has no free variables."""
        return pyframe_frame_closure(self._live())

    @property
    def f_back(self):
        """The caller's frame object, or None."""
        self._live()
        return pyframe_frame_back(self._ref.tstate, self._ref.caller)

    @property
    def is_generator(self):
        """True for generator, coroutine and async generator code."""
        cdef PyCodeObject *code = <PyCodeObject *>pyframe_frame_code(self._live())
        return bool(code.co_flags & _CO_GENERATOR_LIKE)

    @property
    def f_locals(self):
        """The frame's entry locals: for functions a new dict equal to the
        f_locals CPython shows at the first traced line; for module, class and
        exec code the frame's own locals mapping."""
        return pyframe_callback_locals(self._live())

    @property
    def localsplus(self):
        """[(name, kind, value)] for every slot; kind is "local", "cell",
        "local+cell", "free" or "hidden"; value is pyframe.UNBOUND if empty."""
        return pyframe_localsplus(self._live(), _UNBOUND)

    def set_local(self, name, value):
        """Set an argument or local before the frame runs."""
        pyframe_set_local(self._live(), name, value)

    def __repr__(self):
        if self._ref.frame == NULL:
            return "<pyframe.Frame (gone)>"
        code = <object>pyframe_frame_code(self._ref.frame)
        return "<pyframe.Frame of %s at %s:%d>" % (
            code.co_qualname, code.co_filename, code.co_firstlineno)


@cython.final
cdef class Compiled:
    """Replacement code to run in place of a frame, and to cache on the
    original code object behind `guard`, for the installed callback's cache.

    Later frames of that code call ``guard(f_locals)`` (None: always valid);
    the first cached entry whose guard returns true runs without asking the
    callback.  The entry is dropped when any object in `depends_on` dies
    (pyframe holds them by weak reference).  `code` may be the frame's own
    code: "run it as it is while the guard holds".
    """

    cdef readonly object code
    cdef readonly object guard
    cdef readonly tuple depends_on

    def __init__(self, code, guard=None, *, depends_on=()):
        _check_code("Compiled", code)
        if guard is not None and not callable(guard):
            raise TypeError("pyframe.Compiled() expects guard to be a callable taking "
                            "the frame's f_locals, or None; got %s" % _describe(guard))
        try:
            depends = tuple(depends_on)
        except TypeError:
            raise TypeError("pyframe.Compiled() expects depends_on to be an iterable of "
                            "objects; got %s" % _describe(depends_on)) from None
        for obj in depends:
            try:
                _weak_ref(obj)
            except TypeError:
                raise TypeError("pyframe.Compiled() expects depends_on to hold objects that "
                                "can be weakly referenced; got %s" % _describe(obj)) from None
        self.code = code
        self.guard = guard
        self.depends_on = depends

    def __repr__(self):
        if self.depends_on:
            return "pyframe.Compiled(%r, guard=%r, depends_on=%r)" % (
                self.code, self.guard, self.depends_on)
        return "pyframe.Compiled(%r, guard=%r)" % (self.code, self.guard)


cdef int _classify_other(object callback, object result, PyObject **code_out,
                         PyObject **guard_out, PyObject **depends_out) except -1:
    # The hook (cframe/eval_frame.c) maps None, the sentinels and code
    # objects itself and asks here about anything else.
    if type(result) is Compiled:
        compiled = <Compiled>result
        Py_INCREF(compiled.code)
        code_out[0] = <PyObject *>compiled.code
        if compiled.guard is not None:
            Py_INCREF(compiled.guard)
            guard_out[0] = <PyObject *>compiled.guard
        if compiled.depends_on:
            Py_INCREF(compiled.depends_on)
            depends_out[0] = <PyObject *>compiled.depends_on
        return PYFRAME_CACHE
    raise TypeError(
        "pyframe callback %r returned %s; expected None, pyframe.SKIP, "
        "pyframe.SKIP_RECURSIVE, pyframe.RUN_ONLY, pyframe.RUN_ONLY_RECURSIVE, "
        "a code object or pyframe.Compiled" % (callback, _describe(result)))


@cython.final
cdef class Cache:
    """One client's remembered decisions and cached replacement code.

    Every callback installation has one: the cache passed to
    ``pyframe.callback(cb, cache=...)``, or the one pyframe keeps for `cb`
    itself (so the same callback, installed again, finds its decisions and
    entries again).  Decisions and entries are found only through the cache
    that made them.

    `limit`: entries kept per code object (None: ``pyframe.get_cache_limit()``
    at the time of each insertion); past it, the least recently used go.
    `on_drop(original, replacement, guard, reason)` is called when an entry
    leaves for `reason` "limit", "invalidated" (an object it depended on
    died) or "reset"; not when the code object or the cache itself is freed.
    An exception from it is reported as unraisable.
    """

    cdef pyframe_owner *_owner
    cdef readonly object limit
    cdef readonly object on_drop
    cdef object __weakref__

    def __init__(self, *, limit=None, on_drop=None):
        if self._owner != NULL:
            raise RuntimeError("pyframe.Cache() is already initialized")
        if limit is not None:
            _check_limit("Cache", limit)
        if on_drop is not None and not callable(on_drop):
            raise TypeError("pyframe.Cache() expects on_drop to be a callable taking "
                            "(original, replacement, guard, reason), or None; got %s"
                            % _describe(on_drop))
        self.limit = limit
        self.on_drop = on_drop
        self._owner = pyframe_owner_new(<PyObject *>self, -1 if limit is None else limit)

    def __dealloc__(self):
        pyframe_owner_free(self._owner)

    def __repr__(self):
        return "<pyframe.Cache limit=%r at %#x>" % (self.limit, id(self))


cdef pyframe_owner *_owner_of(str function, object cache) except NULL:
    if type(cache) is not Cache:
        raise TypeError("pyframe.%s() expects cache to be a pyframe.Cache; got %s"
                        % (function, _describe(cache)))
    if (<Cache>cache)._owner == NULL:
        raise RuntimeError("pyframe.%s(): this pyframe.Cache was never initialized" % function)
    return (<Cache>cache)._owner


cdef object _notify_dropped(object record):
    # cframe/cache.c: (cache, original, replacement, guard, reason).
    on_drop = (<Cache>record[0]).on_drop
    if on_drop is not None:
        on_drop(record[1], record[2], record[3], record[4])
    return None


# The cache each callback installed without one gets, kept as long as the
# callback lives: installing it again finds its decisions and entries.  A
# bound method is made anew by each attribute lookup, so it is known by its
# object and function.  A callback that cannot be weakly referenced (or
# hashed) gets a new cache each time.  Keys are weak references whose
# callback is the dict's own pop: installing a callback runs no Python
# frames (tracers and monitoring would see them) and a dead key goes away.
cdef dict _callback_caches = {}   # weakref to callback -> Cache
cdef dict _method_caches = {}     # weakref to a bound method's object -> {function: Cache}


cdef Cache _cache_for(object callback):
    cdef Cache cache
    cdef dict per_object
    try:
        if type(callback) is MethodType:
            target = callback.__self__
            per_object = _method_caches.get(_weak_ref(target))
            if per_object is None:
                per_object = {}
                _method_caches[_weak_ref(target, _method_caches.pop)] = per_object
            cache = per_object.get(callback.__func__)
            if cache is None:
                cache = per_object[callback.__func__] = Cache()
            return cache
        cache = _callback_caches.get(_weak_ref(callback))
        if cache is None:
            cache = Cache()
            _callback_caches[_weak_ref(callback, _callback_caches.pop)] = cache
        return cache
    except TypeError:
        return Cache()


cdef str _describe(object value):
    return "a %s object (%.60r)" % (type(value).__name__, value)


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
_probe = None
pyframe_hook_init(&_layer)


def get_callback():
    """The callback installed for the current thread, or None."""
    cdef PyObject *callback = pyframe_thread_get_callback()
    return None if callback == NULL else <object>callback


cdef object _install(str function, object callback, object cache):
    """Installs callback with cache (None: the callback's own); returns the
    previous installation."""
    if callback is None:
        if cache is not None:
            raise TypeError("pyframe.%s() got a cache but no callback; to run cached "
                            "entries without a callback use pyframe.run_only(cache)" % function)
        return pyframe_thread_install(NULL, NULL, NULL, 0)
    if not callable(callback):
        raise TypeError(
            "pyframe.%s() expects a callable taking a pyframe.Frame, "
            "or None; got %s" % (function, _describe(callback)))
    if cache is None:
        cache = _cache_for(callback)
    cdef pyframe_owner *owner = _owner_of(function, cache)
    return pyframe_thread_install(<PyObject *>callback, <PyObject *>cache, owner, 0)


cdef object _restore(tuple previous):
    callback, cache, run_only = previous
    if cache is None:
        return pyframe_thread_install(NULL, NULL, NULL, 0)
    return pyframe_thread_install(NULL if callback is None else <PyObject *>callback,
                                  <PyObject *>cache, (<Cache>cache)._owner, run_only)


def set_callback(callback, *, cache=None):
    """Install `callback` for the current thread (None removes it); return the
    previous one.  Other threads are unaffected.  `cache`: the pyframe.Cache
    its decisions and entries go to (default: the one kept for `callback`)."""
    return _install("set_callback", callback, cache)[0]


@cython.final
cdef class callback:
    """with pyframe.callback(cb, cache=None): ...  installs cb for the current
    thread and puts back what was installed before on exit, exceptions
    included."""

    cdef object _callback
    cdef object _cache
    cdef object _previous
    cdef bint _entered

    def __init__(self, callback, *, cache=None):
        if callback is not None and not callable(callback):
            raise TypeError(
                "pyframe.callback() expects a callable taking a pyframe.Frame, "
                "or None; got %s" % _describe(callback))
        if cache is not None:
            _owner_of("callback", cache)
        self._callback = callback
        self._cache = cache

    def __enter__(self):
        if self._entered:
            raise RuntimeError("this pyframe.callback(...) is already in use")
        self._previous = _install("callback", self._callback, self._cache)
        self._entered = True
        return self._callback

    def __exit__(self, *exc_info):
        previous, self._previous = self._previous, None
        self._entered = False
        _restore(previous)
        return False


@cython.final
cdef class run_only:
    """with pyframe.run_only(cache): ...  runs the current thread's frames
    with the entries cached in `cache` (guards checked) and nothing else: no
    callback is asked, a miss runs the frame as it is.  What was installed
    before comes back on exit."""

    cdef object _cache
    cdef object _previous
    cdef bint _entered

    def __init__(self, cache):
        _owner_of("run_only", cache)
        self._cache = cache

    def __enter__(self):
        if self._entered:
            raise RuntimeError("this pyframe.run_only(...) is already in use")
        self._previous = pyframe_thread_install(NULL, <PyObject *>self._cache,
                                                (<Cache>self._cache)._owner, 1)
        self._entered = True
        return self._cache

    def __exit__(self, *exc_info):
        previous, self._previous = self._previous, None
        self._entered = False
        _restore(previous)
        return False


def reset(code=None, *, cache=None):
    """Forget decisions and cached replacement code: for `code`, or for every
    code object; of `cache` alone, or of every cache."""
    cdef pyframe_owner *owner = NULL
    if cache is not None:
        owner = _owner_of("reset", cache)
    if code is None:
        pyframe_reset_all(owner)
        return
    if not PyCode_Check(code):
        raise TypeError("pyframe.reset() expects a code object or None; got %s"
                        % _describe(code))
    pyframe_reset_code(code, owner)


def remember(code, decision, *, cache):
    """Make `decision` for `code` in `cache` without waiting for a frame: as if
    the callback installed with `cache` had returned it for a frame of `code`
    (pyframe.SKIP, SKIP_RECURSIVE, RUN_ONLY or RUN_ONLY_RECURSIVE); None
    forgets the decision, so that the callback is asked again.  Cached
    entries are kept either way."""
    cdef pyframe_owner *owner = _owner_of("remember", cache)
    cdef int action
    _check_code("remember", code)
    if decision is None:
        action = PYFRAME_RUN
    elif decision is _SKIP:
        action = PYFRAME_SKIP
    elif decision is _SKIP_RECURSIVE:
        action = PYFRAME_SKIP_RECURSIVE
    elif decision is _RUN_ONLY:
        action = PYFRAME_RUN_ONLY
    elif decision is _RUN_ONLY_RECURSIVE:
        action = PYFRAME_RUN_ONLY_RECURSIVE
    else:
        raise TypeError("pyframe.remember() expects decision to be None, pyframe.SKIP, "
                        "pyframe.SKIP_RECURSIVE, pyframe.RUN_ONLY or "
                        "pyframe.RUN_ONLY_RECURSIVE; got %s" % _describe(decision))
    pyframe_remember(code, owner, action)


def remembered(code, *, cache):
    """The decision `cache` holds for `code` (a sentinel), or None."""
    cdef pyframe_owner *owner = _owner_of("remembered", cache)
    _check_code("remembered", code)
    return _DECISION_NAMES[pyframe_remembered(code, owner)]


cdef int _check_code(str function, object code) except -1:
    if not PyCode_Check(code):
        raise TypeError("pyframe.%s() expects a code object; got %s"
                        % (function, _describe(code)))
    return 0


cdef int _check_limit(str function, object n) except -1:
    if type(n) is not int:
        raise TypeError("pyframe.%s() expects an int limit; got %s" % (function, _describe(n)))
    if not 0 <= n <= 1 << 20:
        raise ValueError("pyframe.%s() expects 0 <= limit <= %d; got %d"
                         % (function, 1 << 20, n))
    return 0


def set_cache_limit(n):
    """Cache at most `n` replacements per code object and cache (default 8)
    for caches made without a limit; past it the least recently used entry
    is dropped.  0 turns caching off."""
    _check_limit("set_cache_limit", n)
    pyframe_set_cache_limit(n)


def get_cache_limit():
    """The per-code-object cache limit."""
    return pyframe_get_cache_limit()


def cache_entries(code, *, cache=None):
    """[(replacement code, guard, hits)] cached on `code` (by `cache` alone,
    or by every cache), most recently used first."""
    cdef pyframe_owner *owner = NULL
    _check_code("cache_entries", code)
    if cache is not None:
        owner = _owner_of("cache_entries", cache)
    return pyframe_cache_entries(code, owner)


def hook_installed():
    """True while pyframe's PEP 523 function is the interpreter's."""
    return bool(pyframe_hook_installed())


def set_specialization(enabled):
    """Switch the specialization mode on or off (CPython 3.12+).

    In the mode, frames of code the callback skipped (SKIP, SKIP_RECURSIVE)
    run with pyframe's hook stepped aside, so CPython specializes and inlines
    the calls they make, at the speed of no hook at all; every frame of other
    code still reaches the callback or its cached replacement.  The mode
    steps aside only while a single thread has a callback installed.  On
    3.11, switching it on raises NotImplementedError; off is a no-op."""
    if type(enabled) is not bool:
        raise TypeError("pyframe.set_specialization() expects True or False; got %s"
                        % _describe(enabled))
    pyframe_specialization_set(enabled)


def specialization_enabled():
    """True while the specialization mode is on."""
    return bool(pyframe_specialization_enabled())


def _specialization_hooked(func):
    """For tests: True when `func` carries pyframe's vectorcall."""
    return bool(pyframe_specialization_hooked(func))


def _specialization_probe(func, driver):
    """For tests: how many of func's calls made while driver() runs go
    through the function's vectorcall (pyframe swaps in one that counts)."""
    return pyframe_specialization_probe(func, driver)


def _specialization_aside():
    """For tests: True while pyframe's hook is stepped aside for skipped code."""
    return bool(pyframe_specialization_aside())


include "switch.pxi"
