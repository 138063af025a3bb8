"""What Dynamo keeps per code object, kept on pyframe.

Dynamo's C layer keeps, per code object, an ``_ExtraState``: the frame
execution strategy, the ``frame_state`` dict its callback is handed, its
precompiled entries and its list of ``_CacheEntry`` objects (compiled code
behind a guard manager, for one backend and one isolate_recompiles region).
Here the strategies are pyframe decisions and the cache entries pyframe
cache entries of one pyframe.Cache (`CACHE`), each entry's guard being a
`_guard.CacheEntry`; the rest of the extra state lives in an `ExtraState`
found by the code object's identity: code objects are never hashed (a code
object Dynamo generates can hold a dict constant).
"""

from __future__ import annotations

import threading
import types
import weakref
from collections.abc import Callable
from typing import Any

import pyframe

# Dynamo's cache has no size limit of its own (its recompile limits bound
# it), so neither has the pyframe.Cache standing in for it.
_UNLIMITED = 1 << 20


class ExtraState:
    """Dynamo's per-code state (torch._C._dynamo.eval_frame._ExtraState)."""

    __slots__ = ("_code", "frame_state", "strategy", "precompile_entries", "__weakref__")

    def __init__(self, code: types.CodeType) -> None:
        self._code = weakref.ref(code, _forget_extra(id(code)))
        self.frame_state: dict[Any, Any] = {}
        self.strategy: Any = None
        self.precompile_entries: list[PrecompileEntry] = []

    @property
    def code(self) -> types.CodeType | None:
        return self._code()

    def invalidate(self, cache_entry: Any, deleted_guard_manager: Any) -> None:
        """An object the entry's guards matched by id died: the entry stays
        (it still counts towards the recompile limits) and never holds again,
        as Dynamo's does."""
        cache_entry._invalidate(deleted_guard_manager)


class PrecompileEntry:
    """A guard manager and the code it admits, loaded from a precompiled
    package (torch._C._dynamo.eval_frame._PrecompileEntry)."""

    __slots__ = ("guard_manager", "code")

    def __init__(self, guard_manager: Any, code: types.CodeType) -> None:
        self.guard_manager = guard_manager
        self.code = code


# ---- per-code state -------------------------------------------------------------------

# id(code) -> ExtraState; an entry goes when its code object is freed (the
# weak reference's callback runs before the id can be reused).
_extras: dict[int, ExtraState] = {}
_extras_lock = threading.Lock()


def _forget_extra(key: int) -> Callable[[weakref.ref[Any]], None]:
    extras = _extras  # bound: this may run at shutdown, after globals are cleared

    def forget(ref: weakref.ref[Any]) -> None:
        extra = extras.get(key)
        if extra is not None and extra._code is ref:
            del extras[key]

    return forget


def extra_of(code: types.CodeType) -> ExtraState | None:
    extra = _extras.get(id(code))
    if extra is not None and extra._code() is code:
        return extra
    return None


def extra_for(code: types.CodeType) -> ExtraState:
    extra = extra_of(code)
    if extra is None:
        with _extras_lock:
            extra = extra_of(code)
            if extra is None:
                extra = _extras[id(code)] = ExtraState(code)
    return extra


# ---- the cache -------------------------------------------------------------------------


def _dropped(original: types.CodeType, replacement: Any, guard: Any, reason: str) -> None:
    # Reset (torch._dynamo.reset, reset_code) frees Dynamo's entries: their
    # guard managers no longer point at them.  (Every guard in CACHE is a
    # _guard.CacheEntry: only this layer adds entries to it.)
    guard._detach()


CACHE = pyframe.Cache(limit=_UNLIMITED, on_drop=_dropped)


def entries_of(code: types.CodeType) -> list[Any]:
    """The code's entries (_guard.CacheEntry objects), most recently used
    first (every backend and region), invalidated ones last, as Dynamo's C
    layer orders them."""
    entries: list[Any] = [guard for _, guard, _ in pyframe.cache_entries(code, cache=CACHE)]
    return [e for e in entries if e._root is not None] + [e for e in entries if e._root is None]


def entries_by_region(code: types.CodeType) -> list[Any]:
    """_debug_get_cache_entry_list's order (torch 2.13+): the default
    region's entries, then each isolate_recompiles region's, in id order."""
    return sorted(entries_of(code), key=lambda e: e.isolate_recompiles_id)


# Bumped whenever the layer forgets decisions (reset_code, reset_all, a
# DEFAULT strategy set): a decision read from CACHE while `generation` was g
# still stands while it is.
generation = 0


def remember(code: types.CodeType, decided: Any) -> None:
    """Remembers pyframe's decision `decided` for `code` (None forgets)."""
    global generation
    if decided is None:
        generation += 1
    pyframe.remember(code, decided, cache=CACHE)


def reset_code(code: types.CodeType) -> None:
    global generation
    generation += 1
    pyframe.reset(code, cache=CACHE)
    if extra_of(code) is not None:
        _extras.pop(id(code), None)


def reset_all() -> None:
    global generation
    generation += 1
    pyframe.reset(cache=CACHE)
    _extras.clear()
