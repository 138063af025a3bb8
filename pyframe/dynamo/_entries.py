"""What Dynamo keeps per code object, kept on pyframe.

Dynamo's C layer keeps, per code object, an ``_ExtraState``: the frame
execution strategy, the ``frame_state`` dict its callback is handed, its
precompiled entries and its list of ``_CacheEntry`` objects (compiled code
behind a guard manager, for one backend and one isolate_recompiles region).
Here the strategies are pyframe decisions and the cache entries pyframe
cache entries of one pyframe.Cache (`CACHE`), each entry's guard being the
`CacheEntry` object below: pyframe calls it with the frame's f_locals on
every frame of the code, most recently used entry first, and runs the first
entry whose guard holds.  The rest of the extra state lives in an
`ExtraState` found by the code object's identity: code objects are never
hashed (a code object Dynamo generates can hold a dict constant).
"""

from __future__ import annotations

import threading
import types
import weakref
from collections.abc import Callable, Mapping
from sys import _getframe
from typing import Any

import pyframe

from . import _state
from . import _torch_compat as compat

_current_callback: Callable[[], Any] = pyframe.get_callback
_torch_function_hop_pending: Callable[[], bool] = compat.torch_function_hop_pending

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

    def invalidate(self, cache_entry: CacheEntry, deleted_guard_manager: Any) -> None:
        """An object the entry's guards matched by id died: the entry stays
        (it still counts towards the recompile limits) and never holds again,
        as Dynamo's does."""
        cache_entry._invalidate(deleted_guard_manager)


class CacheEntry:
    """A compiled code object behind Dynamo's guards, for one backend
    (torch._C._dynamo.eval_frame._CacheEntry); the guard of its pyframe
    cache entry."""

    __slots__ = (
        "code",
        "compile_id",
        "guard_manager",
        "backend",
        "isolate_recompiles_id",
        "trace_annotation",
        "_root",
        "_diff_root",
        "_extra",
        "__weakref__",
    )

    def __init__(self, guarded_code: Any, backend: Any, region: int, extra: ExtraState) -> None:
        manager = guarded_code.guard_manager
        self.code = guarded_code.code
        self.compile_id = guarded_code.compile_id
        self.guard_manager = manager
        self.backend = backend
        self.isolate_recompiles_id = region
        self.trace_annotation = getattr(guarded_code, "trace_annotation", "Unknown")
        self._root = manager.root
        self._diff_root = getattr(manager, "diff_guard_root", None)
        self._extra = extra
        # As Dynamo's C layer does: the guard manager finds its entry and
        # extra state (CheckFunctionManager.invalidate, recompile reasons).
        manager.cache_entry = self
        manager.extra_state = extra

    def __call__(self, f_locals: Mapping[str, Any]) -> bool:
        """Whether the frame may run this entry's code: Dynamo's lookup for
        one entry (its backend, its region, its guard manager)."""
        root = self._root
        if root is None:
            return False  # invalidated
        if _torch_function_hop_pending():
            return False  # Dynamo's C layer looks nothing up (DynamoHook runs it)
        hook = _current_callback()
        if hook is not None:  # None: run-only, where any backend's entries run
            if _state.fullgraph_threads and fullgraph_code_calling(hook.callback, _getframe(1)):
                return False  # Dynamo's C layer looks nothing up there
            backend = hook.backend
            if backend is not self.backend and not _same_backend(self.backend, backend):
                return False
        if self.isolate_recompiles_id != _state.isolate_recompiles_id:
            return False  # another region's (the default one's: on a miss)
        if _state.skip_guard_eval_unsafe and self._diff_root is not None:
            root = self._diff_root
        try:
            holds = root.check(f_locals)
        except BaseException:
            _report_guard_error(self, f_locals)
            raise
        if not holds:
            return False
        if _state.guard_complete_hook is not None and not _guards_complete(self):
            return False
        # ran_compiled_code's conditions, tested here: most hits need neither.
        if (
            _state.fullgraph_compiled_frame_count >= 0
            or _state.bytecode_debugger_callback is not None
        ):
            ran_compiled_code(self.code, hook)
        return True

    def update_diff_guard_root_manager(self) -> None:
        self._diff_root = self.guard_manager.diff_guard_root

    def check_fn(self, f_locals: Mapping[str, Any]) -> bool:
        root = self._root
        return root is not None and bool(root.check(f_locals))

    @property
    def next(self) -> CacheEntry | None:
        """The entry after this one in the code's list (torch 2.11/2.12)."""
        code = self._extra.code
        if code is None:
            return None
        entries = entries_of(code)
        for i, entry in enumerate(entries):
            if entry is self:
                return entries[i + 1] if i + 1 < len(entries) else None
        return None

    def _invalidate(self, deleted_guard_manager: Any) -> None:
        self._detach()
        self.code = None
        self.guard_manager = deleted_guard_manager
        self._root = self._diff_root = None
        self.trace_annotation = "Invalidated"

    def _detach(self) -> None:
        manager = self.guard_manager
        if getattr(manager, "cache_entry", None) is self:
            manager.cache_entry = None
            manager.extra_state = None


class PrecompileEntry:
    """A guard manager and the code it admits, loaded from a precompiled
    package (torch._C._dynamo.eval_frame._PrecompileEntry)."""

    __slots__ = ("guard_manager", "code")

    def __init__(self, guard_manager: Any, code: types.CodeType) -> None:
        self.guard_manager = guard_manager
        self.code = code


def _same_backend(saved: Any, backend: Any) -> bool:
    # Dynamo's rule: the same object, or an equal one of the same type.
    try:
        return type(saved) is type(backend) and bool(saved == backend)
    except Exception:
        return False


def _report_guard_error(entry: CacheEntry, f_locals: Mapping[str, Any]) -> None:
    hook = _state.guard_error_hook
    if hook is None:
        return
    code = entry._extra.code
    entries = entries_of(code) if code is not None else [entry]
    index = next((i for i, e in enumerate(entries) if e is entry), 0)
    hook(entry.guard_manager, entry.code, f_locals, index, index == len(entries) - 1)


def _guards_complete(entry: CacheEntry) -> bool:
    """The guard-complete hook's word on a hit: False turns it into a miss
    (for this frame: the other entries are not asked either)."""
    thread = _state.thread
    if thread.forced_miss is entry._extra:
        return False
    if _state.guard_complete_hook(True):
        return True
    thread.forced_miss = entry._extra
    return False


def ran_compiled_code(code: types.CodeType, hook: Any = None) -> None:
    """Dynamo code is about to run in a frame (a hit, or just compiled), for
    `hook` (a pyframe.dynamo hook; None: run-only)."""
    if _state.fullgraph_compiled_frame_count >= 0:
        _state.fullgraph_compiled_frame_count += 1
        if hook is not None:
            _ran_in_fullgraph_call(code, hook.callback)
    callback = _state.bytecode_debugger_callback
    if callback is not None:
        callback(code)


# ---- what compiled code calls in a fullgraph call ----------------------------------------
#
# While a fullgraph call counts compiled frames (torch 2.13+), Dynamo's C
# layer runs what a compiled frame calls with no callback (nothing compiled
# or looked up there), or with the failing callback
# (convert_frame.get_fail_callback) under
# error_on_dynamo_callback_in_fullgraph_compiled_code, and sets its callback
# back when the frame returns; a callback set meanwhile (a torch.compile'd
# function called there) holds below the frame that set it.  Here the
# thread's callback stays: its hook and guards find, when the fullgraph call
# has run compiled code, whether the frame at hand runs under such code
# (the stack up to the frame that started the count), for that callback.


def _ran_in_fullgraph_call(code: types.CodeType, callback: Any) -> None:
    thread = _state.thread
    if thread.fullgraph_start is None:
        return  # the count is another thread's fullgraph call's
    ran = thread.fullgraph_ran
    record = (code, callback, _state.fullgraph_error_on_nested_compile)
    for known in ran:
        if known[0] is code and known[1] is callback and known[2] is record[2]:
            return
    if not ran:
        _state.fullgraph_threads += 1
    thread.fullgraph_ran = (*ran, record)


def fullgraph_code_calling(callback: Any, frame: types.FrameType | None) -> Any:
    """The (code, callback, fails) of the compiled code run for `callback`
    in this thread's fullgraph call under which `frame` runs (`frame` or its
    callers), or None."""
    thread = _state.thread
    ran = thread.fullgraph_ran
    if not ran:
        return None  # another thread's fullgraph call
    start = thread.fullgraph_start
    while frame is not None and frame is not start:
        code = frame.f_code
        for record in ran:
            if record[0] is code and record[1] is callback:
                return record
        frame = frame.f_back
    return None


def set_fullgraph_call(start: types.FrameType | None) -> None:
    """A fullgraph call starts (`start`: the frame that started the count) or
    ends (None): no compiled code has run in it."""
    thread = _state.thread
    if thread.fullgraph_ran:
        _state.fullgraph_threads -= 1
        thread.fullgraph_ran = ()
    thread.fullgraph_start = start


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


def forget_extra(code: types.CodeType) -> None:
    extra = extra_of(code)
    if extra is not None:
        _extras.pop(id(code), None)


def forget_all_extras() -> None:
    _extras.clear()


# ---- the cache -------------------------------------------------------------------------


def _dropped(original: types.CodeType, replacement: Any, guard: Any, reason: str) -> None:
    # Reset (torch._dynamo.reset, reset_code) frees Dynamo's entries: their
    # guard managers no longer point at them.
    if isinstance(guard, CacheEntry):
        guard._detach()


CACHE = pyframe.Cache(limit=_UNLIMITED, on_drop=_dropped)


def entries_of(code: types.CodeType) -> list[CacheEntry]:
    """The code's entries, most recently used first (every backend and
    region), invalidated ones last, as Dynamo's C layer orders them."""
    entries: list[Any] = [guard for _, guard, _ in pyframe.cache_entries(code, cache=CACHE)]
    return [e for e in entries if e._root is not None] + [e for e in entries if e._root is None]


def entries_by_region(code: types.CodeType) -> list[CacheEntry]:
    """_debug_get_cache_entry_list's order (torch 2.13+): the default
    region's entries, then each isolate_recompiles region's, in id order."""
    entries = entries_of(code)
    return sorted(entries, key=lambda e: e.isolate_recompiles_id)


def reset_code(code: types.CodeType) -> None:
    pyframe.reset(code, cache=CACHE)
    forget_extra(code)


def reset_all() -> None:
    pyframe.reset(cache=CACHE)
    forget_all_extras()


__all__ = [
    "CACHE",
    "CacheEntry",
    "ExtraState",
    "PrecompileEntry",
    "compat",
    "entries_by_region",
    "entries_of",
    "extra_for",
    "extra_of",
    "reset_all",
    "reset_code",
    "ran_compiled_code",
    "fullgraph_code_calling",
    "set_fullgraph_call",
]
