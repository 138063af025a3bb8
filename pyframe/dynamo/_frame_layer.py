"""torch._C._dynamo.eval_frame's frame layer, on pyframe.

Each public function here stands for the function of the same name in
Dynamo's C module and behaves as it does (arguments, results, errors), with
pyframe doing the frame work:

- ``set_eval_frame(callback)`` installs, for the calling thread, a pyframe
  callback (`DynamoHook`) standing for Dynamo's callback, with the one
  pyframe.Cache that holds Dynamo's decisions and entries
  (`_entries.CACHE`); ``False`` (run only) is ``pyframe.run_only`` of that
  cache; ``None`` puts back what the thread had before (another pyframe
  user's callback, say).  It and ``get_eval_frame_callback`` are a
  pyframe.Switch's set and get (`SWITCH`): Dynamo calls set_eval_frame four
  times or more per call of compiled code, and they are C calls, as
  natively.
- A frame of code with a remembered decision (Dynamo's frame execution
  strategy) or an entry whose guard holds never reaches Python here: pyframe
  runs it.  Otherwise pyframe calls the hook, which calls Dynamo's callback
  as Dynamo's C layer does and turns its ConvertFrameReturn into a pyframe
  decision or a cached entry.

The module's names are listed, by release, in _torch_compat.LAYER_NAMES.
"""

from __future__ import annotations

import functools
import random
import sys
import types
import weakref
from typing import Any

import pyframe

from . import _entries, _state
from . import _torch_compat as compat
from ._entries import CacheEntry, ExtraState, PrecompileEntry

_FrameAction = compat.native._FrameAction
_FrameExecStrategy = compat.native._FrameExecStrategy
_DEFAULT, _SKIP, _RUN_ONLY = _FrameAction.DEFAULT, _FrameAction.SKIP, _FrameAction.RUN_ONLY

# A frame execution strategy (cur_action, recursive_action) as the pyframe
# decision that means the same.  Dynamo makes no other pairs.
_DECISIONS = {
    (_DEFAULT, _DEFAULT): None,
    (_SKIP, _DEFAULT): pyframe.SKIP,
    (_SKIP, _SKIP): pyframe.SKIP_RECURSIVE,
    (_RUN_ONLY, _DEFAULT): pyframe.RUN_ONLY,
    (_RUN_ONLY, _RUN_ONLY): pyframe.RUN_ONLY_RECURSIVE,
}

_SKIP_UNSAFE_MISS = (
    "Recompilation triggered with skip_guard_eval_unsafe stance. "
    "This usually means that you have not warmed up your model "
    "with enough inputs such that you can guarantee no more recompilations."
)


def _decision(strategy: Any) -> Any:
    try:
        key = (strategy.cur_action, strategy.recursive_action)
    except AttributeError:
        raise TypeError(
            "expected a torch._C._dynamo.eval_frame._FrameExecStrategy; got "
            f"{type(strategy).__name__}"
        ) from None
    try:
        return _DECISIONS[key]
    except KeyError:
        raise NotImplementedError(
            f"pyframe.dynamo: the frame execution strategy {key[0].name}/{key[1].name} "
            "has no pyframe decision (supported: DEFAULT/DEFAULT, SKIP/DEFAULT, "
            "SKIP/SKIP, RUN_ONLY/DEFAULT, RUN_ONLY/RUN_ONLY)"
        ) from None


def _check_code(code: Any, message: str = "expected a code object") -> None:
    if not isinstance(code, types.CodeType):
        raise TypeError(message)


# ---- the frame Dynamo's callback is handed ----------------------------------------------


class FrameView:
    """The frame as Dynamo's callback reads it (the attributes of
    torch._C._dynamo.eval_frame._PyInterpreterFrame), read from the
    pyframe.Frame once: Dynamo reads f_locals many times and keeps it."""

    __slots__ = (
        "_frame",
        "f_code",
        "f_locals",
        "f_globals",
        "f_builtins",
        "closure",
        "f_lasti",
        "f_lineno",
    )

    def __init__(self, frame: pyframe.Frame) -> None:
        self._frame = frame
        self.f_code = frame.f_code
        self.f_locals = dict(frame.f_locals)
        self.f_globals = frame.f_globals
        self.f_builtins = frame.f_builtins
        self.closure = frame.closure
        self.f_lasti = frame.f_lasti
        self.f_lineno = frame.f_lineno

    @property
    def f_back(self) -> types.FrameType | None:
        return self._frame.f_back


# ---- the pyframe callback standing for Dynamo's -----------------------------------------


def _call_from_nonrecursive_disable(callback: Any, *args: Any) -> Any:
    # ConvertFrameAssert leaves a frame alone (this time) when the Python
    # frame above its callback is torch.compiler.disable(recursive=False)'s
    # wrapper; with pyframe, the frame above is the hook.  While pyframe.dynamo
    # is installed, Dynamo's name for that wrapper's code is this function's
    # (_install), and the hook calls Dynamo from here exactly when the frame's
    # caller is that wrapper.
    return callback(*args)


NONRECURSIVE_TRAMPOLINE_CODE = _call_from_nonrecursive_disable.__code__


def _call_dynamo(
    callback: Any, frame: pyframe.Frame, view: FrameView, first: Any, state: Any
) -> Any:
    # As Dynamo's C layer (torch 2.7+, pytorch#147562): what its callback
    # draws from Python's random module (tracing random.randint, say) is
    # given back, raising or not, so the program's stream goes on as in
    # eager code; the guard-complete hook before it keeps its draws.
    random_state = random.getstate()
    try:
        caller = frame.f_back
        if caller is not None and caller.f_code is _ORIGINAL_NONRECURSIVE_CODE[0]:
            return _call_from_nonrecursive_disable(callback, view, first, state)
        return callback(view, first, state)
    finally:
        random.setstate(random_state)


class DynamoHook:
    """The pyframe callback for one Dynamo callback: asked about frames with
    no remembered decision and no entry whose guard holds (Dynamo's cache
    miss).  SWITCH makes one per Dynamo callback and keeps it while the
    callback lives, so it holds the callback by weak reference."""

    __slots__ = ("_callback", "backend", "__weakref__")

    def __init__(self, callback: Any) -> None:
        try:
            self._callback: Any = weakref.ref(callback)
        except TypeError:  # made again on each set_eval_frame (pyframe.Switch)
            self._callback = lambda: callback
        self.backend = compat.backend_of(callback)

    @property
    def callback(self) -> Any:
        """The Dynamo callback (set while this hook is installed)."""
        return self._callback()

    def __repr__(self) -> str:
        return f"<pyframe.dynamo hook for {self.callback!r}>"

    def __call__(self, frame: pyframe.Frame) -> Any:
        if compat.torch_function_hop_pending():
            # Started under a one-hop skip of __torch_function__: run as it
            # is, this time, as Dynamo's C layer does (CacheEntry held none).
            return None
        if _state.fullgraph_threads:
            ran = _entries.fullgraph_code_calling(self.callback, frame.f_back)
            if ran is not None:
                # Under fullgraph compiled code: Dynamo's C layer has no
                # callback here, or the failing one.
                if not ran[2]:
                    return None
                return SWITCH.callback_for(compat.fail_callback(self.callback))(frame)
        code = frame.f_code
        extra = _entries.extra_for(code)
        thread = _state.thread
        forced = thread.forced_miss is extra
        thread.forced_miss = None
        if not forced:
            found = _lookup_elsewhere(self, frame, extra)
            if found is not None:
                return found
        if _state.skip_guard_eval_unsafe:
            raise RuntimeError(_SKIP_UNSAFE_MISS)
        if not forced and _state.guard_complete_hook is not None and _entries.entries_of(code):
            _state.guard_complete_hook(False)
        return self._compile(frame, code, extra)

    def _compile(self, frame: pyframe.Frame, code: types.CodeType, extra: ExtraState) -> Any:
        view = FrameView(frame)
        entries = _entries.entries_of(code)
        first = entries[0] if entries else None
        callback = self.callback
        # As Dynamo's C layer: the thread has no callback while Dynamo's
        # runs; a torch.compile'd function it calls installs its own over
        # this installation and puts it back.
        detached = SWITCH.detach()
        try:
            result = _call_dynamo(callback, frame, view, first, extra.frame_state)
            strategy = result.frame_exec_strategy
            apply_to_code = bool(result.apply_to_code)
            guarded = result.guarded_code
            decision = _decision(strategy)
        except BaseException:
            # Dynamo's rule: after its callback raised, the thread has no
            # callback until one is set again.
            SWITCH.attach(detached)
            SWITCH.set(None)
            raise
        SWITCH.attach(detached)  # ends what a nested set_eval_frame left installed
        if apply_to_code:
            extra.strategy = strategy
        if guarded is not None:
            if apply_to_code and decision is not None:
                pyframe.remember(code, decision, cache=_entries.CACHE)
            entry = CacheEntry(guarded, self.backend, _state.isolate_recompiles_id, extra)
            _entries.ran_compiled_code(entry.code, self)
            return pyframe.Compiled(guarded.code, entry)
        if apply_to_code:
            return decision
        return None


def _lookup_elsewhere(hook: DynamoHook, frame: pyframe.Frame, extra: ExtraState) -> Any:
    """What Dynamo's lookup finds that pyframe's does not: in an
    isolate_recompiles region, the default region's entries (read only),
    then the code's precompiled entries.  Their code runs this time, uncached."""
    region = _state.isolate_recompiles_id
    code = frame.f_code
    if region >= 0:
        for entry in _entries.entries_of(code):
            if entry.isolate_recompiles_id == -1:
                _state.isolate_recompiles_id = -1
                try:
                    holds = entry(frame.f_locals)
                finally:
                    _state.isolate_recompiles_id = region
                if holds:
                    return entry.code
    if extra.precompile_entries:
        f_locals = frame.f_locals
        for precompiled in extra.precompile_entries:
            if precompiled.guard_manager.root.check(f_locals):
                _entries.ran_compiled_code(precompiled.code, hook)
                return precompiled.code
    return None


# The code object ConvertFrameAssert compares the caller with, as Dynamo
# made it (_install sets it; Dynamo's own name points at the trampoline).
_ORIGINAL_NONRECURSIVE_CODE: list[Any] = [None]

# Each thread's Dynamo callback: set(callback) installs its DynamoHook (one
# per callback, kept while it lives) with Dynamo's cache, set(False) runs that
# cache alone, set(None) puts back what the thread had before.
SWITCH = pyframe.Switch(_entries.CACHE, DynamoHook)


# ---- torch._C._dynamo.eval_frame's functions ---------------------------------------------

set_eval_frame = SWITCH.set
get_eval_frame_callback = SWITCH.get


def set_skip_guard_eval_unsafe(value: Any) -> bool:
    if type(value) is not bool:
        raise TypeError("expected True/False")
    prior = _state.skip_guard_eval_unsafe
    _state.skip_guard_eval_unsafe = value
    return prior


def reset_code(code: Any) -> None:
    _check_code(code)
    compat.NATIVE["reset_code"](code)
    _entries.reset_code(code)


def set_code_exec_strategy(code: Any, strategy: Any) -> None:
    _check_code(code)
    decision = _decision(strategy)
    compat.NATIVE["set_code_exec_strategy"](code, strategy)
    _entries.extra_for(code).strategy = strategy
    pyframe.remember(code, decision, cache=_entries.CACHE)


def set_guard_error_hook(hook: Any) -> None:
    _state.guard_error_hook = hook


def set_guard_complete_hook(hook: Any) -> Any:
    prior = _state.guard_complete_hook
    _state.guard_complete_hook = hook
    return prior


def set_c_recursion_limit(limit: int) -> None:
    limit = int(limit)
    if limit < 1 and limit != -1:
        raise ValueError("recursion limit must be >= 1, or -1 to reset")
    _state.c_recursion_limit = limit


def get_c_recursion_limit() -> int:
    return _state.c_recursion_limit


def _debug_get_cache_entry_list(code: Any) -> list[CacheEntry]:
    _check_code(code, "expected a code object!")
    if compat.ENTRIES_LINKED:
        return _entries.entries_of(code)
    return _entries.entries_by_region(code)


def _get_cache_entries_for_region(code: Any, isolate_recompiles_id: int) -> list[CacheEntry]:
    if not isinstance(code, types.CodeType):
        raise RuntimeError("expected a code object!")
    region = int(isolate_recompiles_id)
    return [e for e in _entries.entries_of(code) if e.isolate_recompiles_id == region]


def _get_total_cache_entry_count(code: Any) -> int:
    if not isinstance(code, types.CodeType):
        raise RuntimeError("expected a code object!")
    return len(pyframe.cache_entries(code, cache=_entries.CACHE))


def _load_precompile_entry(code: Any, guard_manager: Any, dynamo_code: Any) -> None:
    _check_code(code)
    _check_code(dynamo_code)
    _entries.extra_for(code).precompile_entries.append(PrecompileEntry(guard_manager, dynamo_code))


def _reset_precompile_entries(code: Any) -> None:
    _check_code(code)
    extra = _entries.extra_of(code)
    if extra is not None:
        extra.precompile_entries.clear()


def _debug_get_precompile_entries(code: Any) -> list[PrecompileEntry]:
    _check_code(code)
    extra = _entries.extra_of(code)
    return list(extra.precompile_entries) if extra is not None else []


def set_fullgraph_compiled_frame_count(value: int) -> int:
    # As Dynamo's: starting the count (>= 0) while it runs changes nothing,
    # so a fullgraph call nested in another neither resets the outer call's
    # count nor ends it (its compile wrapper sees the count was on).
    value = int(value)
    prior = _state.fullgraph_compiled_frame_count
    if value >= 0:
        if prior < 0:
            _state.fullgraph_compiled_frame_count = value
            _entries.set_fullgraph_call(sys._getframe(1))
    else:
        _state.fullgraph_compiled_frame_count = value
        if prior >= 0:
            _entries.set_fullgraph_call(None)
    return prior


def set_fullgraph_error_on_nested_compile(value: Any) -> bool:
    if type(value) is not bool:
        raise TypeError("expected True/False")
    prior = _state.fullgraph_error_on_nested_compile
    _state.fullgraph_error_on_nested_compile = value
    return prior


def set_eval_frame_override(value: Any) -> Any:
    # torch 2.11/2.12's word for the fullgraph count (see _torch_compat):
    # the same fullgraph call, begun and ended by the compile wrapper.
    on, fails = compat.override_says(value)
    prior = _state.eval_frame_override
    _state.eval_frame_override = value
    _state.fullgraph_error_on_nested_compile = fails
    was_on = _state.fullgraph_compiled_frame_count >= 0
    if on and not was_on:
        _state.fullgraph_compiled_frame_count = 0
        _entries.set_fullgraph_call(sys._getframe(1))
    elif was_on and not on:
        _state.fullgraph_compiled_frame_count = -1
        _entries.set_fullgraph_call(None)
    return prior


def set_eval_frame_isolate_recompiles_id(isolate_recompiles_id: int) -> int:
    prior = _state.isolate_recompiles_id
    _state.isolate_recompiles_id = int(isolate_recompiles_id)
    return prior


def get_eval_frame_isolate_recompiles_id() -> int:
    return _state.isolate_recompiles_id


def set_bytecode_debugger_callback(callback: Any) -> None:
    if callback is not None and not callable(callback):
        raise TypeError("expected a callable or None")
    _state.bytecode_debugger_callback = callback


def get_bytecode_debugger_callback() -> Any:
    return _state.bytecode_debugger_callback


def register_breakpoint_code(code: Any) -> None:
    _check_code(code)
    key = id(code)
    codes = _state.breakpoint_codes
    codes[key] = weakref.ref(code, functools.partial(_forget_breakpoint, codes, key))


def _forget_breakpoint(codes: dict[int, Any], key: int, ref: Any) -> None:
    if codes.get(key) is ref:
        del codes[key]


def _set_lru_cache(value: Any) -> None:
    if not value:
        raise NotImplementedError(
            "pyframe.dynamo keeps cache entries most recently used first: "
            "_set_lru_cache(False) is not supported"
        )


# The names pyframe.dynamo puts in place of the C module's (those of the
# release that has them: _torch_compat.PRESENT).
SURFACE: dict[str, Any] = {
    "set_eval_frame": set_eval_frame,
    "get_eval_frame_callback": get_eval_frame_callback,
    "set_skip_guard_eval_unsafe": set_skip_guard_eval_unsafe,
    "reset_code": reset_code,
    "set_code_exec_strategy": set_code_exec_strategy,
    "set_guard_error_hook": set_guard_error_hook,
    "set_guard_complete_hook": set_guard_complete_hook,
    "set_c_recursion_limit": set_c_recursion_limit,
    "get_c_recursion_limit": get_c_recursion_limit,
    "_CacheEntry": CacheEntry,
    "_ExtraState": ExtraState,
    "_PrecompileEntry": PrecompileEntry,
    "_PyInterpreterFrame": FrameView,
    "_debug_get_cache_entry_list": _debug_get_cache_entry_list,
    "_get_cache_entries_for_region": _get_cache_entries_for_region,
    "_get_total_cache_entry_count": _get_total_cache_entry_count,
    "_load_precompile_entry": _load_precompile_entry,
    "_reset_precompile_entries": _reset_precompile_entries,
    "_debug_get_precompile_entries": _debug_get_precompile_entries,
    "set_fullgraph_compiled_frame_count": set_fullgraph_compiled_frame_count,
    "set_fullgraph_error_on_nested_compile": set_fullgraph_error_on_nested_compile,
    "set_eval_frame_override": set_eval_frame_override,
    "set_eval_frame_isolate_recompiles_id": set_eval_frame_isolate_recompiles_id,
    "get_eval_frame_isolate_recompiles_id": get_eval_frame_isolate_recompiles_id,
    "set_bytecode_debugger_callback": set_bytecode_debugger_callback,
    "get_bytecode_debugger_callback": get_bytecode_debugger_callback,
    "register_breakpoint_code": register_breakpoint_code,
    "_set_lru_cache": _set_lru_cache,
}
assert set(SURFACE) == set(compat.LAYER_NAMES)
