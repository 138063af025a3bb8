# The sentinels a callback returns (pyframe.SKIP, SKIP_RECURSIVE, RUN_ONLY,
# RUN_ONLY_RECURSIVE) and the one localsplus shows for an empty slot
# (pyframe.UNBOUND), and the remembered actions named by them.  Included by
# _cframe.pyx.


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
