# pyframe.Switch: turning a JIT's callback on and off around each call of
# compiled code, at the cost of a C call.  Included by _cframe.pyx.
#
# A JIT's wrapper around a compiled function switches its callback on before
# the call and back off after it, on every call; pyframe.callback(...) as a
# context manager (or set_callback and a restore) costs Python-level work on
# each switch.  A Switch keeps, per thread, what the JIT set and what the
# thread had installed before, so set(value) / set(None) are one C call each,
# and maps the JIT's own callback object ("value") to the pyframe callback
# standing for it once per value.

from cpython.pythread cimport PyThread_get_thread_ident


cdef extern from "Python.h":
    PyObject *PyThreadState_GetDict()
    PyThreadState *PyThreadState_Get()
    unsigned long long PyThreadState_GetID(PyThreadState *tstate)
    PyObject *PyDict_GetItemWithError(object d, object key) except? NULL
    object PyLong_FromVoidPtr(void *p)


@cython.final
@cython.freelist(4)
cdef class _SwitchState:
    """What a Switch holds for one thread: the value set (None: off) and the
    installation the thread had when it went on (restored by set(None))."""

    cdef object value       # None: off; False: run-only; else the JIT's callback
    cdef object previous    # (callback, cache, run_only) found when it went on, or None
    cdef object switch      # the Switch it belongs to
    cdef long thread
    cdef bint detached

    def __dealloc__(self):
        # The switch's memo borrows its state: it must not outlive it.
        if self.switch is not None and (<Switch>self.switch)._last == <PyObject *>self:
            (<Switch>self.switch)._last = NULL


@cython.final
cdef class Switch:
    """A per-thread on/off switch for one JIT's callback and cache, cheap
    enough to flip around every call of compiled code.

    ``switch.set(value)`` turns it on for the calling thread: `value` is the
    JIT's own callback object, and the pyframe callback installed is
    ``make_callback(value)`` (made once per value, kept as long as the value
    lives; `value` itself when `make_callback` is None), with `cache`.
    ``set(False)`` runs `cache`'s entries and nothing else
    (:class:`~pyframe.run_only`); ``set(None)`` turns it off, putting back
    what the thread had installed when it went on.  ``set`` returns the value
    it replaces (None when off), so ``prior = s.set(v); ...; s.set(prior)``
    nests.  Setting the value already set does nothing.
    """

    cdef readonly Cache cache
    cdef readonly object make_callback
    # The pyframe callback made for each value.
    cdef _SwitchMade _made
    # The state _state() found last (borrowed: a state forgets itself here
    # when freed) and the id of the thread state it belongs to, which no
    # other thread state ever has: a JIT flips its switch in one thread
    # again and again, and the thread-dict lookup costs most of a set().
    cdef PyObject *_last
    cdef unsigned long long _last_thread
    cdef object __weakref__

    def __init__(self, cache, make_callback=None):
        _owner_of("Switch", cache)
        if make_callback is not None and not callable(make_callback):
            raise TypeError("pyframe.Switch() expects make_callback to be a callable taking "
                            "the value set and returning a pyframe callback, or None; got %s"
                            % _describe(make_callback))
        self.cache = cache
        self.make_callback = make_callback
        self._made = _SwitchMade()

    def __repr__(self):
        return "<pyframe.Switch cache=%r make_callback=%r at %#x>" % (
            self.cache, self.make_callback, id(self))

    cdef _SwitchState _state(self, bint create):
        # Kept in the thread's state dict, keyed by the switch: it goes when
        # the thread does.
        cdef unsigned long long thread = PyThreadState_GetID(PyThreadState_Get())
        cdef PyObject *tdict
        cdef PyObject *found
        cdef _SwitchState state
        if self._last != NULL and self._last_thread == thread:
            return <_SwitchState>self._last
        tdict = PyThreadState_GetDict()
        if tdict == NULL:
            raise RuntimeError("pyframe.Switch: this thread has no state dict")
        found = PyDict_GetItemWithError(<object>tdict, self)
        if found == NULL:
            if not create:
                return None
            state = _SwitchState.__new__(_SwitchState)
            state.switch = self
            state.thread = PyThread_get_thread_ident()
            (<dict>tdict)[self] = state
            found = <PyObject *>state
        self._last = found
        self._last_thread = thread
        return <_SwitchState>found

    def callback_for(self, value):
        """The pyframe callback ``set(value)`` installs for `value`."""
        if value is None or value is False:
            raise TypeError("pyframe.Switch.callback_for() expects a callable; got %s"
                            % _describe(value))
        return self._callback_for(value)

    cdef object _callback_for(self, object value):
        cdef _SwitchMade made = self._made
        cdef object found = made.last
        if found is not None and (<tuple>found)[0]() is value:
            return (<tuple>found)[1]
        if not callable(value):
            raise TypeError("pyframe.Switch.set() expects a callable, False or None; got %s"
                            % _describe(value))
        if self.make_callback is None:
            return value
        # The address as the key, not id(value): id() raises an audit event,
        # and an audit hook written in Python (filelock installs one) makes
        # that cost more than the rest of a switch.
        key = PyLong_FromVoidPtr(<void *>value)
        found = made.by_address.get(key)
        if found is not None and (<tuple>found)[0]() is value:
            made.last = found
            return (<tuple>found)[1]
        callback = self.make_callback(value)
        if not callable(callback):
            raise TypeError("pyframe.Switch: make_callback(%.60r) returned %s; expected a "
                            "callable taking a pyframe.Frame" % (value, _describe(callback)))
        try:
            ref = _weak_ref(value, _SwitchForget(made, key))
        except TypeError:
            return callback   # cannot be weakly referenced: made again each time
        made.last = made.by_address[key] = (ref, callback)
        return callback

    def set(self, value):
        """Turn the switch on for this thread with `value` (a callable: the
        JIT's callback; False: run-only) or off (None); return the value it
        replaces."""
        cdef _SwitchState state = self._state(value is not None)
        cdef Cache cache = self.cache
        cdef PyObject *made
        if state is None:
            return None
        prior = state.value
        if value is prior:
            return prior
        if value is None:
            previous, state.previous = state.previous, None
            state.value = None
            _put_back(previous)
            return prior
        callback = None if value is False else self._callback_for(value)
        made = NULL if callback is None else <PyObject *>callback
        if state.previous is None:
            # Going on: what the thread had is put back when it goes off.
            state.previous = pyframe_thread_install(made, <PyObject *>cache, cache._owner,
                                                    value is False)
        else:
            pyframe_thread_replace(made, <PyObject *>cache, cache._owner, value is False)
        state.value = value
        return prior

    def get(self):
        """The value set in this thread, or None when off."""
        cdef _SwitchState state = self._state(False)
        return None if state is None else state.value

    def detach(self):
        """Leave what the switch installed in place but forget it here: get()
        is None, a later set(value) installs over it and set(None) comes back
        to it.  Returns the detached state, for attach().  A JIT does this
        while its compiler runs, which may set the switch itself."""
        cdef _SwitchState state = self._state(True)
        cdef _SwitchState fresh = _SwitchState.__new__(_SwitchState)
        cdef PyObject *tdict = PyThreadState_GetDict()
        fresh.switch = self
        fresh.thread = state.thread
        self._last = NULL   # the thread's state is another from now on
        (<dict>tdict)[self] = fresh
        state.detached = True
        return state

    def attach(self, state):
        """Undo what was set since `state` was detached (as set(None)) and
        make `state` this thread's again."""
        cdef _SwitchState detached
        if type(state) is not _SwitchState:
            raise TypeError("pyframe.Switch.attach() expects what detach() returned; got %s"
                            % _describe(state))
        detached = <_SwitchState>state
        if detached.switch is not self:
            raise ValueError("pyframe.Switch.attach(): this state was detached from another "
                             "switch")
        if detached.thread != PyThread_get_thread_ident():
            raise ValueError("pyframe.Switch.attach(): this state was detached in another "
                             "thread")
        if not detached.detached:
            raise ValueError("pyframe.Switch.attach(): this state is attached already")
        self.set(None)
        detached.detached = False
        self._last = NULL   # as in detach()
        (<dict>PyThreadState_GetDict())[self] = detached


@cython.final
cdef class _SwitchMade:
    # The pyframe callbacks a Switch made: by_address maps a value's address
    # to (a weak reference to the value, its callback); last is the entry
    # found last, looked at first (a JIT sets the same value again and
    # again).
    cdef dict by_address
    cdef object last

    def __cinit__(self):
        self.by_address = {}


@cython.final
cdef class _SwitchForget:
    # The weak reference callback that drops a dead value's callback.  What
    # it drops from is held, not looked up: this may run at interpreter
    # shutdown.
    cdef _SwitchMade made
    cdef object key

    def __init__(self, _SwitchMade made, key):
        self.made = made
        self.key = key

    def __call__(self, ref):
        made = self.made
        found = made.by_address.get(self.key)
        if found is not None and (<tuple>found)[0] is ref:
            del made.by_address[self.key]
        if made.last is not None and (<tuple>made.last)[0] is ref:
            made.last = None
