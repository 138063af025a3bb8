"""Dynamo's cache entry: the guard pyframe calls on every frame of a code
with compiled code, before it runs that code (the fast path of a warm call).

A `CacheEntry` stands for torch._C._dynamo.eval_frame._CacheEntry: compiled
code behind Dynamo's guard manager, for one backend and one
isolate_recompiles region.  It is the guard of its pyframe cache entry
(in _cache.CACHE): pyframe calls it with the frame's f_locals, most
recently used entry first, and runs the first entry whose guard holds.  A
frame that no entry admits goes on to the miss path (_miss).

While none of the settings that make a lookup unusual is on (_state.unusual)
and the thread's Dynamo callback is one whose backend the entry's matches,
the verdict is the guard manager's alone: the entry arms itself
(pyframe.FastGuard) with `root.check`, which pyframe then calls without this
Python frame, until a setting changes (_state.changed) or the callback does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from sys import _getframe
from typing import Any

import pyframe

from . import _cache, _state
from . import _torch_compat as compat
from ._compiled_runs import fullgraph_code_calling, ran_compiled_code

_current_callback: Callable[[], Any] = pyframe.get_callback
_torch_function_hop_pending: Callable[[], bool] = compat.torch_function_hop_pending
# Asked by pyframe before each armed check (a C call); None: nothing to ask.
_hop_unless = None if compat.torch_function_hop_pending is bool else _torch_function_hop_pending
_CACHE = _cache.CACHE


class CacheEntry(pyframe.FastGuard):
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

    def __init__(
        self, guarded_code: Any, backend: Any, region: int, extra: _cache.ExtraState
    ) -> None:
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
        if self.isolate_recompiles_id != _state.ISOLATE_RECOMPILES_ID.value:
            return False  # another region's (the default one's: on a miss)
        if not _state.unusual():
            self.arm(_CACHE, root.check, _hop_unless)
        elif _state.SKIP_GUARD_EVAL_UNSAFE.value and self._diff_root is not None:
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
            ran_compiled_code(self.code, None if hook is None else hook.callback)
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
        entries = _cache.entries_of(code)
        for i, entry in enumerate(entries):
            if entry is self:
                return entries[i + 1] if i + 1 < len(entries) else None
        return None

    def _invalidate(self, deleted_guard_manager: Any) -> None:
        self.disarm()
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
    entries = _cache.entries_of(code) if code is not None else [entry]
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
