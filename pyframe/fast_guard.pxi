# pyframe.FastGuard: a cache entry's guard that pyframe checks without
# calling it, once the guard has said how.  Included by _cframe.pyx.
#
# A JIT's guard is usually a Python function around a compiled check: it
# reads the JIT's settings and the thread's callback, then calls the check
# with the frame's locals.  On a warm call those settings are the same every
# time, so the Python frame only forwards.  A FastGuard arms itself with the
# check and what its verdict assumed (the cache's guard epoch, the thread's
# callback); cframe/eval_frame.c then calls `_check_fast_guard`, which calls
# the check directly while those still hold, and the guard otherwise.


cdef class FastGuard:
    """A cached entry's guard that pyframe checks without calling it, once armed.

    Subclass it and define ``__call__(f_locals)``, the full guard.  When the
    full guard finds that its verdict comes down to ``check(f_locals)`` for as
    long as nothing it read changes, it calls ``self.arm(cache, check)``; from
    then on pyframe calls `check` with the frame's locals (a compiled guard's
    C function, say: no Python frame runs) instead of the guard, until:

    - the thread's callback is another one than when it armed
      (:func:`~pyframe.get_callback`; None under :func:`~pyframe.run_only`):
      the guard is called, and may arm again;
    - ``cache.disarm_guards()`` is called, which the JIT does whenever a
      setting the full guard reads changes;
    - ``self.disarm()``;
    - `unless` (given to ``arm``) returns true: a call with no arguments
      made before each armed check, for a setting the JIT is not told of
      when it changes;
    - `check` raises: the guard is disarmed and called, so that its own error
      handling runs.
    """

    cdef object _check     # called with the frame's locals, while armed
    cdef object _unless    # None, or called before _check: true disarms for the call
    cdef object _callback  # the thread's callback when armed (None: none)
    cdef Cache _cache      # the cache armed for; None: not armed
    cdef unsigned long long _epoch

    def arm(self, cache, check, unless=None):
        """Lets pyframe call ``check(f_locals)`` instead of this guard, for
        frames looked up in `cache` (a :class:`~pyframe.Cache`) while the
        calling thread's callback and `cache`'s guard epoch stay what they
        are now, and ``unless()`` (when given) returns false."""
        if type(cache) is not Cache:
            raise TypeError("pyframe.FastGuard.arm() expects cache to be a pyframe.Cache; "
                            "got %s" % _describe(cache))
        if not callable(check):
            raise TypeError("pyframe.FastGuard.arm() expects check to be a callable taking "
                            "the frame's locals; got %s" % _describe(check))
        if unless is not None and not callable(unless):
            raise TypeError("pyframe.FastGuard.arm() expects unless to be a callable "
                            "taking no arguments, or None; got %s" % _describe(unless))
        cdef PyObject *callback = pyframe_thread_get_callback()
        self._check = check
        self._unless = unless
        self._callback = None if callback == NULL else <object>callback
        self._cache = <Cache>cache
        self._epoch = (<Cache>cache)._guard_epoch

    def disarm(self):
        """pyframe calls this guard itself again (until it arms again)."""
        self._cache = None
        self._check = self._unless = self._callback = None

    @property
    def armed(self):
        """Whether pyframe would call the armed check now, for a frame of
        the calling thread looked up in the cache it armed for (``unless``
        not asked)."""
        cdef PyObject *callback = pyframe_thread_get_callback()
        return (self._cache is not None and self._epoch == self._cache._guard_epoch
                and self._callback is (None if callback == NULL else <object>callback))


cdef int _check_fast_guard(PyObject *guard, PyObject *f_locals, PyObject *cache,
                           PyObject *callback) except -1:
    # cframe/eval_frame.c's lookup, for a guard that is a FastGuard: its
    # verdict (1 or 0) for a frame looked up in `cache` (Borrowed) with the
    # thread's `callback` (Borrowed, NULL: none).
    cdef FastGuard fast = <FastGuard>guard
    cdef object current = None if callback == NULL else <object>callback
    if (fast._cache is not None and <PyObject *>fast._cache == cache
            and fast._epoch == fast._cache._guard_epoch and fast._callback is current):
        check = fast._check
        unless = fast._unless
        if unless is None or not unless():
            try:
                return 1 if check(<object>f_locals) else 0
            except Exception:
                fast.disarm()   # and the guard itself answers, raising as it does
    return 1 if (<object>guard)(<object>f_locals) else 0


@cython.final
cdef class Setting:
    """A value a JIT's guards read, swapped in one C call: setting another
    value disarms the :class:`FastGuard` objects of `cache`
    (:meth:`Cache.disarm_guards`).

    For a JIT's settings that its wrappers set and restore around every call
    of compiled code: ``prior = setting.swap(value)`` costs no Python frame,
    and disarms only when the value changes (neither the same object nor
    equal).  `kind`: values must be exactly of this type (TypeError
    otherwise); `convert`: applied to each value first (``int``, say).
    """

    cdef readonly object value
    cdef readonly Cache cache
    cdef readonly object kind
    cdef readonly object convert

    def __init__(self, cache, value, *, kind=None, convert=None):
        if type(cache) is not Cache:
            raise TypeError("pyframe.Setting() expects cache to be a pyframe.Cache; got %s"
                            % _describe(cache))
        if kind is not None and not isinstance(kind, type):
            raise TypeError("pyframe.Setting() expects kind to be a type, or None; got %s"
                            % _describe(kind))
        if convert is not None and not callable(convert):
            raise TypeError("pyframe.Setting() expects convert to be a callable, or None; "
                            "got %s" % _describe(convert))
        self.cache = <Cache>cache
        self.kind = kind
        self.convert = convert
        self.value = self._accept(value)

    def __repr__(self):
        return "<pyframe.Setting value=%r at %#x>" % (self.value, id(self))

    cdef object _accept(self, object value):
        if self.kind is not None and type(value) is not self.kind:
            if self.kind is bool:
                raise TypeError("expected True/False")
            raise TypeError("expected %s, got %s" % ((<type>self.kind).__name__,
                                                     type(value).__name__))
        if self.convert is not None:
            value = self.convert(value)
        return value

    def swap(self, value):
        """Sets `value` and returns the value it replaces."""
        value = self._accept(value)
        prior = self.value
        if value is not prior and value != prior:
            self.value = value
            self.cache._guard_epoch += 1
        return prior
