# Installing a callback for the current thread: get_callback, set_callback,
# the pyframe.callback and pyframe.run_only context managers, and
# hook_installed.  Included by _cframe.pyx.


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


cdef int _put_back(tuple previous) except -1:
    # Installs `previous`, what pyframe_thread_install returned.
    callback, cache, run_only = previous
    if cache is None:
        return pyframe_thread_replace(NULL, NULL, NULL, 0)
    return pyframe_thread_replace(NULL if callback is None else <PyObject *>callback,
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
        _put_back(previous)
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
        _put_back(previous)
        return False


def hook_installed():
    """True while pyframe's PEP 523 function is the interpreter's."""
    return bool(pyframe_hook_installed())
