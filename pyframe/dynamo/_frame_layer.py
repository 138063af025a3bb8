"""torch._C._dynamo.eval_frame's frame layer, on pyframe: the functions
Dynamo's Python modules call.

Each public function here stands for the function of the same name in
Dynamo's C module and behaves as it does (arguments, results, errors), with
pyframe doing the frame work.  The layer below them, each module using only
those after it:

- `_miss`: the pyframe callback standing for Dynamo's callback (a frame no
  decision and no cache entry covers), and `SWITCH`, each thread's Dynamo
  callback: ``set_eval_frame`` and ``get_eval_frame_callback`` are its set
  and get, C calls as natively (Dynamo calls set_eval_frame four times or
  more per call of compiled code);
- `_guard`: the cache entry whose guard pyframe calls on every frame of a
  code with compiled code (a warm call's path: no other Python runs there);
- `_compiled_runs`: the fullgraph frame count and the bytecode debugger;
- `_cache`: per-code state and the pyframe.Cache holding Dynamo's decisions
  and entries;
- `_state`: the process-wide settings the setters here write.

The module's names are listed, by release, in _torch_compat.LAYER_NAMES.
"""

from __future__ import annotations

import functools
import sys
import types
import weakref
from typing import Any

import pyframe

from . import _cache, _compiled_runs, _state
from . import _torch_compat as compat
from ._cache import ExtraState, PrecompileEntry
from ._guard import CacheEntry
from ._miss import SWITCH, FrameView, decision


def _check_code(code: Any, message: str = "expected a code object") -> None:
    if not isinstance(code, types.CodeType):
        raise TypeError(message)


# ---- torch._C._dynamo.eval_frame's functions ---------------------------------------------

set_eval_frame = SWITCH.set
get_eval_frame_callback = SWITCH.get


set_skip_guard_eval_unsafe = _state.SKIP_GUARD_EVAL_UNSAFE.swap


def reset_code(code: Any) -> None:
    _check_code(code)
    compat.NATIVE["reset_code"](code)
    _cache.reset_code(code)


def set_code_exec_strategy(code: Any, strategy: Any) -> None:
    _check_code(code)
    decided = decision(strategy)
    compat.NATIVE["set_code_exec_strategy"](code, strategy)
    _cache.extra_for(code).strategy = strategy
    _cache.remember(code, decided)


def set_guard_error_hook(hook: Any) -> None:
    _state.guard_error_hook = hook


def set_guard_complete_hook(hook: Any) -> Any:
    prior = _state.guard_complete_hook
    _state.guard_complete_hook = hook
    _state.changed()
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
        return _cache.entries_of(code)
    return _cache.entries_by_region(code)


def _get_cache_entries_for_region(code: Any, isolate_recompiles_id: int) -> list[CacheEntry]:
    if not isinstance(code, types.CodeType):
        raise RuntimeError("expected a code object!")
    region = int(isolate_recompiles_id)
    return [e for e in _cache.entries_of(code) if e.isolate_recompiles_id == region]


def _get_total_cache_entry_count(code: Any) -> int:
    if not isinstance(code, types.CodeType):
        raise RuntimeError("expected a code object!")
    return len(pyframe.cache_entries(code, cache=_cache.CACHE))


def _load_precompile_entry(code: Any, guard_manager: Any, dynamo_code: Any) -> None:
    _check_code(code)
    _check_code(dynamo_code)
    _cache.extra_for(code).precompile_entries.append(PrecompileEntry(guard_manager, dynamo_code))


def _reset_precompile_entries(code: Any) -> None:
    _check_code(code)
    extra = _cache.extra_of(code)
    if extra is not None:
        extra.precompile_entries.clear()


def _debug_get_precompile_entries(code: Any) -> list[PrecompileEntry]:
    _check_code(code)
    extra = _cache.extra_of(code)
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
            _compiled_runs.set_fullgraph_call(sys._getframe(1))
            _state.changed()
    else:
        _state.fullgraph_compiled_frame_count = value
        if prior >= 0:
            _compiled_runs.set_fullgraph_call(None)
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
        _compiled_runs.set_fullgraph_call(sys._getframe(1))
        _state.changed()
    elif was_on and not on:
        _state.fullgraph_compiled_frame_count = -1
        _compiled_runs.set_fullgraph_call(None)
    return prior


set_eval_frame_isolate_recompiles_id = _state.ISOLATE_RECOMPILES_ID.swap


def get_eval_frame_isolate_recompiles_id() -> int:
    return _state.ISOLATE_RECOMPILES_ID.value  # type: ignore[no-any-return]


def set_bytecode_debugger_callback(callback: Any) -> None:
    if callback is not None and not callable(callback):
        raise TypeError("expected a callable or None")
    _state.bytecode_debugger_callback = callback
    _state.changed()


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
