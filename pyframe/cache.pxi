# pyframe.Cache: one client's decisions and cached entries (its C side is
# cframe/cache.c's pyframe_owner), the cache each callback installed without
# one gets, and the on_drop notification cframe/ calls back.  Included by
# _cframe.pyx.


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
    # set_regions(); the owner borrows them.
    cdef readonly object lookup_region
    cdef readonly object run_region
    # Moved by disarm_guards(): a FastGuard armed at another epoch is called.
    cdef unsigned long long _guard_epoch
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

    def disarm_guards(self):
        """Every :class:`~pyframe.FastGuard` armed for this cache is called
        again (and may arm again): what a JIT calls when a setting its guards
        read changes."""
        self._guard_epoch += 1

    def set_regions(self, *, lookup=None, run=None):
        """Context managers around this cache's work, for a JIT's profiler
        annotations: ``lookup()``'s around the guard calls of each frame that
        has entries of this cache, ``run(guard)``'s around running an entry's
        code (`guard`: the entry's, None for an entry without one or for an
        uncached replacement).  None: no region.  Both run as the callback
        does (unseen by this thread's callback); an exception from either is
        reported as unraisable and the frame runs without that region."""
        for name, region in (("lookup", lookup), ("run", run)):
            if region is not None and not callable(region):
                raise TypeError("pyframe.Cache.set_regions() expects %s to be a callable "
                                "returning a context manager, or None; got %s"
                                % (name, _describe(region)))
        if self._owner == NULL:
            raise RuntimeError("pyframe.Cache.set_regions(): this pyframe.Cache was never "
                               "initialized")
        self.lookup_region = lookup
        self.run_region = run
        pyframe_owner_set_regions(self._owner,
                                  <PyObject *>lookup if lookup is not None else NULL,
                                  <PyObject *>run if run is not None else NULL)


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
