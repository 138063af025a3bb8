"""Type stub for pyframe._cframe, the compiled layer (pyframe/_cframe.pyx).

It is also what the documentation's API reference is made from (docs/, with
sphinx-autoapi): each name's type comes from here, and so does its docstring.
Examples are in docs/reference/, where they are run as tests.
"""

from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from types import CellType, CodeType, FrameType, TracebackType
from typing import Any, Final, Literal, TypeAlias, final

@final
class _Sentinel:
    @property
    def name(self) -> str: ...

SKIP: Final[_Sentinel]
"""Returned by a callback: run the frame, and never ask this callback's cache
about this code object again (until :func:`~pyframe.reset`)."""

SKIP_RECURSIVE: Final[_Sentinel]
"""Returned by a callback: run the frame and everything it calls without
callbacks, this time and every time after (until :func:`~pyframe.reset`)."""

RUN_ONLY: Final[_Sentinel]
"""Returned by a callback: run the frame; from now on, frames of this code
run a cached entry whose guard holds, or run as they are, without asking the
callback."""

RUN_ONLY_RECURSIVE: Final[_Sentinel]
"""Returned by a callback: :data:`~pyframe.RUN_ONLY` for this code and everything it
calls."""

UNBOUND: Final[_Sentinel]
"""The value :attr:`~pyframe.Frame.localsplus` shows for an empty slot (a local not
assigned yet)."""

# TypeAlias rather than PEP 695's `type` statement, which 3.11 cannot parse.
SlotKind: TypeAlias = Literal["local", "cell", "local+cell", "free", "hidden"]
"""The kind of a frame slot, as :attr:`~pyframe.Frame.localsplus` names it: ``"hidden"``
is a PEP 709 inlined-comprehension variable (3.12+), never part of
``f_locals``."""

Guard: TypeAlias = Callable[[Mapping[str, Any]], object]
"""A cached entry's guard: called with the frame's entry locals; a true result
runs the entry."""

@final
class Frame:
    """A frame about to run, as a callback is handed it.

    It has not run a single instruction yet.  A :class:`~pyframe.Frame` is valid only
    while the callback it was passed to runs: afterwards every attribute
    raises :exc:`RuntimeError`.  Only pyframe makes them.
    """

    @property
    def f_code(self) -> CodeType:
        """The code object the frame is about to run."""
    @property
    def f_globals(self) -> dict[str, Any]:
        """The globals the frame runs with."""
    @property
    def f_builtins(self) -> dict[str, Any]:
        """The builtins the frame runs with."""
    @property
    def f_lasti(self) -> int:
        """What CPython's ``frame.f_lasti`` says for a frame that has not
        started: -1 on 3.11 and 3.12, 0 from 3.13 on."""
    @property
    def f_lineno(self) -> int | None:
        """The line the frame starts at: CPython's ``frame.f_lineno`` at its
        first traced line; None when its code has no line numbers."""
    @property
    def closure(self) -> tuple[CellType, ...]:
        """The cells the frame's free variables are bound to, in
        ``co_freevars`` order: the function's own closure tuple (the cells
        themselves, not copies); ``()`` without free variables."""
    @property
    def f_back(self) -> FrameType | None:
        """The caller's frame object, or None."""
    @property
    def is_generator(self) -> bool:
        """True for generator, coroutine and async generator code (whose frame
        the callback sees once, when the function is called)."""
    @property
    def f_locals(self) -> Mapping[str, Any]:
        """The frame's entry locals.

        For a function, a new dict equal, key for key, object for object and
        in order, to ``dict(frame.f_locals)`` at the frame's first traced
        line: arguments, cell variables holding their arguments, free
        variables read from the closure; unbound variables are left out.  For
        module, class body and ``exec`` code, the frame's own locals mapping.
        """
    @property
    def localsplus(self) -> list[tuple[str, SlotKind, Any]]:
        """Every slot of the frame as ``(name, kind, value)``, in slot order;
        ``value`` is :data:`~pyframe.UNBOUND` where the slot is empty."""
    def set_local(self, name: str, value: object) -> None:
        """Set argument or local `name` to `value` before the frame runs.

        :raises NameError: the code has no variable `name`.
        :raises ValueError: `name` is a free variable (its cell is shared with
            the enclosing scope).
        """

@final
class Compiled:
    """Replacement code to run instead of a frame, cached on the original code
    object behind `guard`, in the installed callback's :class:`~pyframe.Cache`.

    Later frames of that code call ``guard(f_locals)`` (None: always true);
    the first entry whose guard holds runs without asking the callback.  The
    entry is dropped when an object in `depends_on` dies (they are held by
    weak reference).  `code` may be the frame's own code: "run it as it is
    while the guard holds".  A replacement must take the same arguments as
    the original (counts, names, ``*args``/``**kwargs``); its free variables
    are matched by name against the original closure.

    :raises TypeError: `code` is not a code object, `guard` is not callable,
        or an object in `depends_on` cannot be weakly referenced.
    """

    def __init__(
        self, code: CodeType, guard: Guard | None = None, *, depends_on: Iterable[object] = ()
    ) -> None: ...
    @property
    def code(self) -> CodeType:
        """The replacement code."""
    @property
    def guard(self) -> Guard | None:
        """The guard, or None."""
    @property
    def depends_on(self) -> tuple[object, ...]:
        """The objects whose death drops the entry."""

DropReason: TypeAlias = Literal["limit", "invalidated", "reset"]
"""Why a cached entry left its cache: ``"limit"`` (the least recently used,
past the cache's limit), ``"invalidated"`` (an object in its ``depends_on``
died) or ``"reset"`` (:func:`~pyframe.reset`)."""

OnDrop: TypeAlias = Callable[[CodeType, CodeType, Guard | None, DropReason], object]
"""A cache's ``on_drop(original, replacement, guard, reason)``."""

@final
class Cache:
    """One client's remembered decisions and cached replacement code.

    Every callback installation has one: the cache passed as ``cache=``, or
    the one pyframe keeps for the callback itself as long as the callback
    lives (so the same callback, installed again, finds its decisions and
    entries again).  Decisions and entries are found only through the cache
    that made them; a cache freed takes its entries with it.

    `limit`: entries kept per code object (None: :func:`~pyframe.get_cache_limit` at
    each insertion); past it, the least recently used go.  `on_drop` is
    called as ``on_drop(original, replacement, guard, reason)`` when an entry
    leaves for a :data:`~pyframe.DropReason`; not when the code object or the cache
    itself is freed.  An exception from it is reported as unraisable.

    :raises TypeError: `limit` is not an int or `on_drop` is not callable.
    :raises ValueError: `limit` is not between 0 and 2**20.
    """

    def __init__(self, *, limit: int | None = None, on_drop: OnDrop | None = None) -> None: ...
    @property
    def limit(self) -> int | None:
        """The per-code-object limit, or None for the process's."""
    @property
    def on_drop(self) -> OnDrop | None:
        """The callable told of dropped entries, or None."""
    @property
    def lookup_region(self) -> Callable[[], AbstractContextManager[Any]] | None:
        """What :meth:`set_regions` was given as `lookup`, or None."""
    @property
    def run_region(self) -> Callable[[Any], AbstractContextManager[Any]] | None:
        """What :meth:`set_regions` was given as `run`, or None."""
    def set_regions(
        self,
        *,
        lookup: Callable[[], AbstractContextManager[Any]] | None = None,
        run: Callable[[Any], AbstractContextManager[Any]] | None = None,
    ) -> None:
        """Context managers around this cache's work, for a JIT's profiler
        annotations: ``lookup()``'s around the guard calls of each frame that
        has entries of this cache, ``run(guard)``'s around running an entry's
        code, cached or just made (`guard`: the entry's; None for an entry
        without one or an uncached replacement).  None: no region (the
        default).  Both run as the callback does, unseen by this thread's
        callback; an exception from either is reported as unraisable and the
        frame runs without that region.

        :raises TypeError: `lookup` or `run` is neither callable nor None.
        """
    def disarm_guards(self) -> None:
        """Every :class:`~pyframe.FastGuard` armed for this cache is called
        again, and may arm again: what a JIT calls when a setting its guards
        read changes."""

class FastGuard:
    """A cached entry's guard that pyframe checks without calling it, once armed.

    Subclass it and define ``__call__(f_locals)``, the full guard.  When the
    full guard finds that its verdict comes down to ``check(f_locals)`` for
    as long as nothing it read changes, it calls ``self.arm(cache, check)``;
    from then on pyframe calls `check` with the frame's locals (a compiled
    guard's C function, say: no Python frame runs) instead of the guard,
    until:

    - the thread's callback is another one than when it armed
      (:func:`~pyframe.get_callback`; None under :func:`~pyframe.run_only`):
      the guard is called, and may arm again;
    - :meth:`Cache.disarm_guards` is called, which the JIT does whenever a
      setting the full guard reads changes;
    - :meth:`disarm` is called;
    - `unless` (given to :meth:`arm`) returns true: a call with no
      arguments made before each armed check, for a setting the JIT is not
      told of when it changes;
    - `check` raises an :exc:`Exception`: the guard is disarmed and called,
      so that its own error handling runs.
    """

    def __call__(self, f_locals: Mapping[str, Any], /) -> object: ...
    def arm(
        self,
        cache: Cache,
        check: Callable[[Mapping[str, Any]], object],
        unless: Callable[[], object] | None = None,
    ) -> None:
        """Lets pyframe call ``check(f_locals)`` instead of this guard, for
        frames looked up in `cache` while the calling thread's callback and
        `cache`'s guard epoch stay what they are now, and ``unless()`` (when
        given) returns false.

        :raises TypeError: `cache` is not a :class:`~pyframe.Cache`, `check`
            is not callable, or `unless` is neither callable nor None.
        """
    def disarm(self) -> None:
        """pyframe calls this guard itself again, until it arms again."""
    @property
    def armed(self) -> bool:
        """Whether pyframe would call the armed check now, for a frame of the
        calling thread looked up in the cache it armed for (`unless` not
        asked)."""

@final
class Setting:
    """A value a JIT's guards read, swapped in one C call: setting another
    value disarms the :class:`~pyframe.FastGuard` objects of `cache`
    (:meth:`Cache.disarm_guards`).

    For a JIT's settings that its wrappers set and restore around every call
    of compiled code: ``prior = setting.swap(value)`` costs no Python frame,
    and disarms only when the value changes (neither the same object nor
    equal).  `kind`: values must be exactly of this type; `convert`: applied
    to each value first (``int``, say).

    :raises TypeError: `cache` is not a :class:`~pyframe.Cache`, `kind` is
        neither a type nor None, `convert` is neither callable nor None, or
        `value` is not of `kind`.
    """

    def __init__(
        self,
        cache: Cache,
        value: Any,
        *,
        kind: type | None = None,
        convert: Callable[[Any], Any] | None = None,
    ) -> None: ...
    @property
    def value(self) -> Any:
        """The value set last."""
    @property
    def cache(self) -> Cache:
        """The cache whose guards a change disarms."""
    @property
    def kind(self) -> type | None:
        """The type values must have, or None."""
    @property
    def convert(self) -> Callable[[Any], Any] | None:
        """What each value is passed through first, or None."""
    def swap(self, value: Any, /) -> Any:
        """Sets `value` (converted) and returns the value it replaces.

        :raises TypeError: `value` is not of `kind` (for ``bool``: the
            message is "expected True/False").
        """

CallbackResult: TypeAlias = None | _Sentinel | CodeType | Compiled
"""What a callback may return: None (run the frame, ask again next time), one
of the decision sentinels, a code object to run instead this time, or a
:class:`~pyframe.Compiled`."""

Callback: TypeAlias = Callable[[Frame], CallbackResult]
"""A callback: called with each new frame of the thread it is installed for."""

def get_callback() -> Callback | None:
    """The callback installed for the current thread, or None."""

def set_callback(callback: Callback | None, *, cache: Cache | None = None) -> Callback | None:
    """Install `callback` for the current thread (None removes it); return
    the callback installed before.

    Other threads are unaffected.  `cache` is the :class:`~pyframe.Cache` its
    decisions and entries go to; by default the one pyframe keeps for
    `callback`.

    :raises TypeError: `callback` is not callable, or `cache` is given
        without a callback (use :class:`~pyframe.run_only` for that).
    """

@final
class callback:
    """``with pyframe.callback(cb, cache=None):`` installs `cb` for the
    current thread and puts back what was installed before on exit,
    exceptions included.  ``as`` gives `cb`.

    :raises TypeError: `callback` is not callable or `cache` not a
        :class:`~pyframe.Cache`.
    :raises RuntimeError: the same object is entered twice at once.
    """

    def __init__(self, callback: Callback | None, *, cache: Cache | None = None) -> None: ...
    def __enter__(self) -> Callback | None: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]: ...

@final
class run_only:
    """``with pyframe.run_only(cache):`` runs the current thread's frames with
    the entries cached in `cache` (guards checked) and nothing else: no
    callback is asked, and a miss runs the frame as it is.  What was
    installed before comes back on exit.  ``as`` gives `cache`.
    """

    def __init__(self, cache: Cache) -> None: ...
    def __enter__(self) -> Cache: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]: ...

@final
class Switch:
    """A per-thread on/off switch for one JIT's callback and cache, cheap
    enough to flip around every call of compiled code (two C calls a call).

    ``switch.set(value)`` turns it on for the calling thread: `value` is the
    JIT's own callback object, and the pyframe callback installed, with
    `cache`, is ``make_callback(value)`` (made once per value and kept as long
    as the value lives, so it should hold `value` by weak reference; `value`
    itself when `make_callback` is None).  ``set(False)`` runs `cache`'s
    entries and nothing else, as :class:`~pyframe.run_only`; ``set(None)``
    turns it off and puts back what the thread had installed when it went
    on.  ``set`` returns the value it replaces (None when off), so
    ``prior = switch.set(value); ...; switch.set(prior)`` nests; setting the
    value already set does nothing.  Each thread has its own state, which
    goes when the thread ends.
    """

    def __init__(
        self, cache: Cache, make_callback: Callable[[Any], Callback] | None = None
    ) -> None: ...
    @property
    def cache(self) -> Cache: ...
    @property
    def make_callback(self) -> Callable[[Any], Callback] | None: ...
    def set(self, value: Any) -> Any:
        """Turn the switch on for this thread with `value` (a callable, or
        False: run-only) or off (None); return the value it replaces."""
    def get(self) -> Any:
        """The value set in this thread, or None when off."""
    def callback_for(self, value: Any) -> Callback:
        """The pyframe callback ``set(value)`` installs for `value`."""
    def detach(self) -> object:
        """Leave what the switch installed in place but forget it in this
        thread: :meth:`get` is None, a later ``set(value)`` installs over it
        and ``set(None)`` comes back to it.  Returns the detached state (an
        opaque object) for :meth:`attach`.  For a JIT whose compiler, while
        it runs, may call compiled code that sets the switch."""
    def attach(self, state: object) -> None:
        """End what was set since `state` was detached (as ``set(None)``) and
        make `state` this thread's again.  ValueError for a state of another
        switch or thread, or one attached already."""

def reset(code: CodeType | None = None, *, cache: Cache | None = None) -> None:
    """Forget decisions and cached entries: for `code`, or for every code
    object; of `cache` alone, or of every cache.  Dropped entries are
    reported to their cache's ``on_drop`` as ``"reset"``."""

Decision: TypeAlias = _Sentinel | None
"""A remembered decision: :data:`~pyframe.SKIP`, :data:`~pyframe.SKIP_RECURSIVE`,
:data:`~pyframe.RUN_ONLY`, :data:`~pyframe.RUN_ONLY_RECURSIVE`, or None for
none."""

def remember(code: CodeType, decision: Decision, *, cache: Cache) -> None:
    """Make `decision` for `code` in `cache` without waiting for a frame: as if
    the callback installed with `cache` had returned it for a frame of `code`.
    None forgets the decision, so that the callback is asked again.  Cached
    entries are kept either way.

    :raises TypeError: `decision` is not one of those, `code` is not a code
        object, or `cache` is not a :class:`~pyframe.Cache`.
    """

def remembered(code: CodeType, *, cache: Cache) -> Decision:
    """The decision `cache` holds for `code` (one of the sentinels), or None."""

def set_cache_limit(n: int) -> None:
    """Keep at most `n` entries per code object in caches made without a
    limit (default 8); past it the least recently used entry is dropped.
    0 turns caching off.

    :raises TypeError: `n` is not an int.
    :raises ValueError: `n` is not between 0 and 2**20.
    """

def get_cache_limit() -> int:
    """The per-code-object limit of caches made without one."""

def cache_entries(
    code: CodeType, *, cache: Cache | None = None
) -> list[tuple[CodeType, Guard | None, int]]:
    """The entries cached on `code` as ``(replacement, guard, hits)``, most
    recently used first: of `cache` alone, or of every cache."""

def hook_installed() -> bool:
    """True while pyframe's PEP 523 function is the interpreter's (while some
    thread has a callback or runs :class:`~pyframe.run_only`)."""

def set_specialization(enabled: bool) -> None:
    """Switch the specialization mode on or off, for the process (CPython
    3.12+).

    In the mode, frames of code a callback skipped (:data:`~pyframe.SKIP`,
    :data:`~pyframe.SKIP_RECURSIVE`) run with pyframe's hook stepped aside, so CPython
    specializes and inlines the calls they make, at the speed of no hook at
    all; every frame of other code still reaches the callback or its cached
    replacement.

    :raises NotImplementedError: switching it on on CPython 3.11, whose
        interpreter runs a function's frame without calling its vectorcall
        (switching it off there does nothing).
    :raises TypeError: `enabled` is not a bool.
    """

def specialization_enabled() -> bool:
    """True while the specialization mode is on."""

def _specialization_hooked(func: object) -> bool: ...
def _specialization_aside() -> bool: ...
def _specialization_probe(func: object, driver: object) -> int: ...
