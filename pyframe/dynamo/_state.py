"""The state of pyframe's stand-in for Dynamo's C frame layer.

Module-level names, as Dynamo's C layer keeps them in C globals (each is
process-wide there too, except the callback, which is per thread and is
_frame_layer.SWITCH's): the frame layer's setters (_frame_layer) write them,
cache entries' guards (_guard) and the pyframe callback read them.  Whoever
changes one of the settings `unusual` reads calls `changed()`: the guards
armed while they were off are called again.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import pyframe

from . import _cache

# The two settings the compile wrapper sets and restores on every call:
# pyframe.Settings (set in one C call; a change disarms the guards).
# set_skip_guard_eval_unsafe: guards check only what differed between
# entries (each guard manager's diff_guard_root), and a miss is an error.
SKIP_GUARD_EVAL_UNSAFE = pyframe.Setting(_cache.CACHE, False, kind=bool)
# set_eval_frame_isolate_recompiles_id: the region of cache entries that
# frames look up and compile into (-1: the default region).
ISOLATE_RECOMPILES_ID = pyframe.Setting(_cache.CACHE, -1, convert=int)
# By the names of the C layer's state (_install).
SETTINGS = {
    "skip_guard_eval_unsafe": SKIP_GUARD_EVAL_UNSAFE,
    "isolate_recompiles_id": ISOLATE_RECOMPILES_ID,
}
# set_fullgraph_compiled_frame_count: -1 off, else compiled frames run since.
fullgraph_compiled_frame_count = -1
# set_fullgraph_error_on_nested_compile (torch 2.13+).
fullgraph_error_on_nested_compile = False
# Threads whose fullgraph call ran compiled code (_Thread.fullgraph_ran not
# empty): the guards test this first.
fullgraph_threads = 0
# set_eval_frame_override (torch 2.11/2.12): an _EvalFrameOverride.
eval_frame_override: Any = None
# set_guard_error_hook: called with (guard_manager, code, f_locals, index,
# last) when an entry's guard raises.
guard_error_hook: Any = None
# set_guard_complete_hook: called with the lookup's result (hit or miss) for
# code that has entries; False forces a compile.
guard_complete_hook: Any = None
# set_c_recursion_limit: recorded and reported (get_c_recursion_limit).
c_recursion_limit = -1
# set_bytecode_debugger_callback: called with the Dynamo code about to run.
bytecode_debugger_callback: Any = None
# While a torch profiler is on, on a torch whose C layer records its lookup
# event for a code with no entries too: records that event (_profiler).
lookup_event_without_entries: Any = None
# register_breakpoint_code: id(code) -> weak reference to it.
breakpoint_codes: dict[int, weakref.ref[Any]] = {}


class _Thread(threading.local):
    # (The thread's Dynamo callback is _frame_layer.SWITCH's.)
    # The ExtraState whose lookup the guard-complete hook turned into a miss.
    forced_miss: Any = None
    # While the fullgraph count is on: the frame that started it, and the
    # compiled code that ran meanwhile, as (code, the Dynamo callback it ran
    # for, whether what it calls gets the failing callback).
    fullgraph_start: Any = None
    fullgraph_ran: tuple[tuple[Any, Any, bool], ...] = ()


thread = _Thread()


def unusual() -> bool:
    """Whether a setting is on under which a cache entry's verdict is more
    than its guard manager's check (the fast path of _guard.CacheEntry is
    armed only while none is)."""
    return bool(
        SKIP_GUARD_EVAL_UNSAFE.value
        or ISOLATE_RECOMPILES_ID.value != -1
        or fullgraph_compiled_frame_count >= 0
        or fullgraph_threads
        or guard_complete_hook is not None
        or bytecode_debugger_callback is not None
    )


def changed() -> None:
    """A setting `unusual` reads changed: every armed guard is called again."""
    _cache.CACHE.disarm_guards()
