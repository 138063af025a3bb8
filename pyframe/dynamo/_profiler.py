"""The profiler events Dynamo's C layer records, recorded here too: "TorchDynamo
Cache Lookup" around a frame's cache lookup, and the entry's trace annotation
("Torch-Compiled Region: 0/0") around running its compiled code.

pyframe's C layer does the lookup and runs the entry's code, so it enters
them (pyframe.Cache.set_regions on Dynamo's cache), only while a torch
profiler is on: torch.autograd.profiler._set_is_profiler_enabled, which
torch.profiler.profile and torch.autograd.profiler.profile call as they start
and stop, is wrapped while pyframe.dynamo is installed.  A profiler started
from C++ alone (without those Python classes) is not seen.  On torch 2.11 and
2.12, whose C layer records the lookup event for a code with no entries too,
the miss path records that (empty) event where pyframe makes no lookup.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
import torch.autograd.profiler

from . import _cache, _state
from . import _torch_compat as compat

LOOKUP_EVENT = "TorchDynamo Cache Lookup"

_record_function = torch._C._profiler._RecordFunctionFast
_lookup_region = functools.partial(_record_function, LOOKUP_EVENT)


def _run_region(guard: Any) -> Any:
    # guard: the entry's _guard.CacheEntry (None only for entries Dynamo did
    # not make, which it has none of).
    return _record_function(getattr(guard, "trace_annotation", "Unknown"))


def _lookup_without_entries() -> None:
    # The lookup of a code with no entries, which pyframe's C layer does not
    # make (its callback is asked at once): an event with nothing in it.
    with _record_function(LOOKUP_EVENT):
        pass


def follow(enabled: bool) -> None:
    """Dynamo's cache records the events while `enabled`."""
    if enabled:
        _cache.CACHE.set_regions(lookup=_lookup_region, run=_run_region)
    else:
        _cache.CACHE.set_regions()
    record = enabled and compat.LOOKUP_EVENT_WITHOUT_ENTRIES
    _state.lookup_event_without_entries = _lookup_without_entries if record else None


def watch(patched: list[tuple[Any, str, Any]]) -> None:
    """Follows the profiler from now on (undone with the other entries of
    `patched`, then follow(False))."""
    module = torch.autograd.profiler
    original = module._set_is_profiler_enabled

    def _set_is_profiler_enabled(enable: bool) -> None:
        original(enable)
        follow(bool(enable))

    module._set_is_profiler_enabled = _set_is_profiler_enabled
    patched.append((module, "_set_is_profiler_enabled", original))
    follow(bool(module._is_profiler_enabled))
