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

    ctypedef int (*pyframe_classify_fn)(object, object, PyObject **, PyObject **) except -1

    ctypedef struct pyframe_layer:
        PyTypeObject *frame_type
        Py_ssize_t frame_ref_offset
        PyObject *skip
        PyObject *skip_recursive
        pyframe_classify_fn classify_other

    enum:
        PYFRAME_ERROR
        PYFRAME_RUN
        PYFRAME_SKIP
        PYFRAME_SKIP_RECURSIVE
        PYFRAME_REPLACE
        PYFRAME_CACHE

    int pyframe_hook_init(const pyframe_layer *layer) except -1
    PyObject *pyframe_thread_get_callback()
    object pyframe_thread_set_callback(PyObject *callback)
    int pyframe_hook_installed()
    int pyframe_reset_code(object code) except -1
    int pyframe_reset_all() except -1
    int pyframe_set_cache_limit(int limit) except -1
    int pyframe_get_cache_limit()
    object pyframe_cache_entries(object code)

    PyObject *pyframe_frame_code(_PyInterpreterFrame *frame)
    PyObject *pyframe_frame_globals(_PyInterpreterFrame *frame)
    PyObject *pyframe_frame_builtins(_PyInterpreterFrame *frame)
    int pyframe_frame_lasti(_PyInterpreterFrame *frame)
    object pyframe_frame_back(PyThreadState *tstate, _PyInterpreterFrame *caller)

    object pyframe_callback_locals(_PyInterpreterFrame *frame)
    object pyframe_localsplus(_PyInterpreterFrame *frame, object unbound)
    int pyframe_set_local(_PyInterpreterFrame *frame, object name, object value) except -1


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
cdef _Sentinel _UNBOUND = _Sentinel("UNBOUND")
SKIP = _SKIP
SKIP_RECURSIVE = _SKIP_RECURSIVE
UNBOUND = _UNBOUND

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
        """What CPython's frame.f_lasti would say: -1 on 3.12, 0 from 3.13 on."""
        return pyframe_frame_lasti(self._live())

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
    original code object behind `guard`.

    Later frames of that code call ``guard(f_locals)`` (None: always valid);
    the first cached entry whose guard returns true runs without asking the
    callback.
    """

    cdef readonly object code
    cdef readonly object guard

    def __init__(self, code, guard=None):
        _check_code("Compiled", code)
        if guard is not None and not callable(guard):
            raise TypeError("pyframe.Compiled() expects guard to be a callable taking "
                            "the frame's f_locals, or None; got %s" % _describe(guard))
        self.code = code
        self.guard = guard

    def __repr__(self):
        return "pyframe.Compiled(%r, guard=%r)" % (self.code, self.guard)


cdef int _classify_other(object callback, object result,
                         PyObject **code_out, PyObject **guard_out) except -1:
    # The hook (cframe/eval_frame.c) maps None, the sentinels and code
    # objects itself and asks here about anything else.
    if type(result) is Compiled:
        compiled = <Compiled>result
        Py_INCREF(compiled.code)
        code_out[0] = <PyObject *>compiled.code
        if compiled.guard is not None:
            Py_INCREF(compiled.guard)
            guard_out[0] = <PyObject *>compiled.guard
        return PYFRAME_CACHE
    raise TypeError(
        "pyframe callback %r returned %s; expected None, pyframe.SKIP, "
        "pyframe.SKIP_RECURSIVE, a code object or pyframe.Compiled"
        % (callback, _describe(result)))


cdef str _describe(object value):
    return "a %s object (%.60r)" % (type(value).__name__, value)


cdef pyframe_layer _layer
cdef Frame _probe = Frame.__new__(Frame)
_layer.frame_type = <PyTypeObject *>Frame
# Where Cython put the field in the object struct: computed, not assumed.
_layer.frame_ref_offset = <char *>&_probe._ref - <char *><PyObject *>_probe
_layer.skip = <PyObject *>_SKIP
_layer.skip_recursive = <PyObject *>_SKIP_RECURSIVE
_layer.classify_other = _classify_other
_probe = None
pyframe_hook_init(&_layer)


def get_callback():
    """The callback installed for the current thread, or None."""
    cdef PyObject *callback = pyframe_thread_get_callback()
    return None if callback == NULL else <object>callback


def set_callback(callback):
    """Install `callback` for the current thread (None removes it); return the
    previous one.  Other threads are unaffected."""
    if callback is None:
        return pyframe_thread_set_callback(NULL)
    if not callable(callback):
        raise TypeError(
            "pyframe.set_callback() expects a callable taking a pyframe.Frame, "
            "or None; got %s" % _describe(callback))
    return pyframe_thread_set_callback(<PyObject *>callback)


@cython.final
cdef class callback:
    """with pyframe.callback(cb): ...  installs cb for the current thread and
    puts the previous callback back on exit, exceptions included."""

    cdef object _callback
    cdef object _previous
    cdef bint _entered

    def __init__(self, callback):
        if callback is not None and not callable(callback):
            raise TypeError(
                "pyframe.callback() expects a callable taking a pyframe.Frame, "
                "or None; got %s" % _describe(callback))
        self._callback = callback

    def __enter__(self):
        if self._entered:
            raise RuntimeError("this pyframe.callback(...) is already in use")
        self._previous = set_callback(self._callback)
        self._entered = True
        return self._callback

    def __exit__(self, *exc_info):
        previous, self._previous = self._previous, None
        self._entered = False
        set_callback(previous)
        return False


def reset(code=None):
    """Forget SKIP decisions and cached replacement code: for `code`, or for
    every code object."""
    if code is None:
        pyframe_reset_all()
        return
    if not PyCode_Check(code):
        raise TypeError("pyframe.reset() expects a code object or None; got %s"
                        % _describe(code))
    pyframe_reset_code(code)


cdef int _check_code(str function, object code) except -1:
    if not PyCode_Check(code):
        raise TypeError("pyframe.%s() expects a code object; got %s"
                        % (function, _describe(code)))
    return 0


def set_cache_limit(n):
    """Cache at most `n` replacements per code object (default 8); past it the
    least recently used entry is dropped.  0 turns caching off."""
    if type(n) is not int:
        raise TypeError("pyframe.set_cache_limit() expects an int; got %s" % _describe(n))
    if not 0 <= n <= 1 << 20:
        raise ValueError("pyframe.set_cache_limit() expects 0 <= n <= %d; got %d"
                         % (1 << 20, n))
    pyframe_set_cache_limit(n)


def get_cache_limit():
    """The per-code-object cache limit."""
    return pyframe_get_cache_limit()


def cache_entries(code):
    """[(replacement code, guard, hits)] cached on `code`, most recently used
    first."""
    _check_code("cache_entries", code)
    return pyframe_cache_entries(code)


def hook_installed():
    """True while pyframe's PEP 523 function is the interpreter's."""
    return bool(pyframe_hook_installed())
