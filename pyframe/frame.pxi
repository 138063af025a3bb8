# pyframe.Frame: the frame about to run, as a callback sees it.  The hook
# (cframe/eval_frame.c) fills in its frame reference before the callback runs
# and empties it after; every attribute reads the frame through cframe/.
# Included by _cframe.pyx.


cdef extern from "Python.h":
    object PyObject_GenericGetAttr(object o, object name)

    ctypedef struct PyCodeObject:
        int co_flags


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
