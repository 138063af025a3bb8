# pyframe.Compiled: replacement code a callback returns to have it cached
# behind a guard, and how the hook learns what one holds (_classify_other,
# the one callback result only this layer knows).  Included by _cframe.pyx.


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
