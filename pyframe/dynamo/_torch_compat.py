"""Which torch releases pyframe.dynamo runs on, and what differs between them.

This is to torch what cframe/compat.h is to CPython: every difference between
torch releases in the surface pyframe.dynamo stands in for
(``torch._C._dynamo.eval_frame`` and the Python modules of Dynamo that use
it) is decided here, each naming the release and the change; the other
modules of pyframe.dynamo ask this one instead of testing versions.

The wheels PyPI has (x86-64 Linux, CPython builds with the GIL):
torch 2.11, 2.12, 2.13 and 2.14 for CPython 3.11-3.14; 2.15 for 3.11-3.15.
"""

from __future__ import annotations

import re
from typing import Any

import torch

SUPPORTED = ((2, 11), (2, 12), (2, 13), (2, 14), (2, 15))

UNSUPPORTED_MESSAGE = (
    "pyframe.dynamo supports torch 2.11, 2.12, 2.13, 2.14 and 2.15; this is torch {version}"
)


def _release(version: str) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


RELEASE = _release(torch.__version__)
if RELEASE not in SUPPORTED:
    raise ImportError(UNSUPPORTED_MESSAGE.format(version=torch.__version__))

import torch._dynamo  # noqa: E402  (after the check: an old torch may fail in it)
from torch._C._dynamo import eval_frame as native  # noqa: E402

# ---- the surface, by release --------------------------------------------------------
#
# The names of torch._C._dynamo.eval_frame that belong to Dynamo's frame layer
# (its PEP 523 function, per-code state and cache), which pyframe.dynamo
# replaces.  The module's other names (unsupported, raise_sigtrap,
# code_framelocals_names, py_opcode_caches, _get_frame_value_stack_with_depth,
# NullStackValue, _FrameAction, _FrameExecStrategy) read code objects or real
# frame objects, not the layer, and stay Dynamo's own.
#
# A release has the names its C module has: what the releases added is
# listed here, the rest are in all five.
#   torch 2.13: regions of cache entries for torch.compile(isolate_recompiles=
#     True) (set/get_eval_frame_isolate_recompiles_id,
#     _get_cache_entries_for_region, _get_total_cache_entry_count; before it
#     convert_frame counts _debug_get_cache_entry_list), the fullgraph frame
#     counter (set_fullgraph_compiled_frame_count,
#     set_fullgraph_error_on_nested_compile), and the bytecode debugger's
#     hooks (set/get_bytecode_debugger_callback, register_breakpoint_code).
#     The counter replaced torch 2.11/2.12's set_eval_frame_override(
#     _EvalFrameOverride), which said the same for fullgraph code (what the
#     frames compiled code calls do: NONE, SKIP, ERROR).
LAYER_NAMES = (
    "set_eval_frame_override",
    "set_eval_frame",
    "get_eval_frame_callback",
    "set_skip_guard_eval_unsafe",
    "reset_code",
    "set_code_exec_strategy",
    "set_guard_error_hook",
    "set_guard_complete_hook",
    "set_c_recursion_limit",
    "get_c_recursion_limit",
    "_CacheEntry",
    "_ExtraState",
    "_PrecompileEntry",
    "_PyInterpreterFrame",
    "_debug_get_cache_entry_list",
    "_get_cache_entries_for_region",
    "_get_total_cache_entry_count",
    "_load_precompile_entry",
    "_reset_precompile_entries",
    "_debug_get_precompile_entries",
    "set_fullgraph_compiled_frame_count",
    "set_fullgraph_error_on_nested_compile",
    "set_eval_frame_isolate_recompiles_id",
    "get_eval_frame_isolate_recompiles_id",
    "set_bytecode_debugger_callback",
    "get_bytecode_debugger_callback",
    "register_breakpoint_code",
    "_set_lru_cache",
)

PRESENT = tuple(name for name in LAYER_NAMES if hasattr(native, name))
# Dynamo's own objects for those names, as its C module had them when
# pyframe.dynamo was imported (install() replaces the module's attributes).
NATIVE = {name: getattr(native, name) for name in PRESENT}


# torch 2.11/2.12: a cache entry has `next`, and ConvertFrameAssert counts
# recompiles by walking it from the entry its callback is handed; 2.13 lists
# a code's entries per region instead (_get_cache_entries_for_region).
ENTRIES_LINKED = not hasattr(native, "_get_cache_entries_for_region")


# torch 2.11/2.12: Dynamo's C layer records its "TorchDynamo Cache Lookup"
# profiler event around every lookup it makes, a code's first (no entries
# yet) included; 2.13 records it only for a code that has cache entries
# (seen with tests/with_torch/test_dynamo_profiler.py natively: on 2.11.0 and
# 2.12.1 the first call of a compiled function and every frame Dynamo is asked
# about for the first time have the event, on 2.13.0-2.15.0 none does).
LOOKUP_EVENT_WITHOUT_ENTRIES = RELEASE < (2, 13)


# torch 2.11/2.12: Dynamo's compile wrapper of a fullgraph call sets
# set_eval_frame_override(_EvalFrameOverride) for the call and sets the prior
# value back after it: SKIP runs what compiled code calls with no callback,
# ERROR with the failing one (error_on_dynamo_callback_in_fullgraph_compiled_
# code), NONE with the thread's callback.  2.13 replaced it with the
# fullgraph frame counter, which says the same per call
# (set_fullgraph_compiled_frame_count, set_fullgraph_error_on_nested_compile).
def override_says(value: Any) -> tuple[bool, bool]:
    """(a fullgraph call is on, what compiled code calls gets the failing
    callback) for a set_eval_frame_override value."""
    kinds = native._EvalFrameOverride  # type: ignore[attr-defined]
    if value == kinds.NONE:
        return False, False
    if value == kinds.SKIP:
        return True, False
    if value == kinds.ERROR:
        return True, True
    raise TypeError(f"set_eval_frame_override(): expected an _EvalFrameOverride, got {value!r}")


def backend_of(callback: object) -> object:
    """The backend Dynamo's C layer files a callback's cache entries under:
    the end of its ``_torchdynamo_orig_backend`` chain (every release since
    2.11; the same as torch._dynamo.eval_frame.innermost_backend)."""
    while hasattr(callback, "_torchdynamo_orig_backend"):
        callback = callback._torchdynamo_orig_backend
    return callback


def nonrecursive_disable_code() -> Any:
    """The code object of torch.compiler.disable(fn, recursive=False)'s
    wrapper, which ConvertFrameAssert looks for in the Python stack above its
    callback (torch._dynamo.decorators, every supported release)."""
    return torch._dynamo.decorators._nonrecursive_disable_wrapper_code


def fail_callback(callback: Any) -> Any:
    """The callback Dynamo's C layer gives what fullgraph compiled code calls
    under error_on_dynamo_callback_in_fullgraph_compiled_code (torch 2.13+:
    torch._dynamo.convert_frame.get_fail_callback, which it calls)."""
    from torch._dynamo.convert_frame import get_fail_callback

    return get_fail_callback(callback)


# torch.overrides.redispatch_function (torch._C._skip_one_hop_torch_function,
# pytorch#177530, in 2.13 and 2.15) sets a thread flag that the called
# function's first has_torch_function check takes.  Dynamo's C layer runs a
# frame that starts while the flag is set as it is, with no cache lookup and
# no callback: its compiling would take the flag, and compiled code assumes
# the check it traced.  A torch without the flag (no such function here)
# never has it set: `bool()` is False, and a C call, as the check is.
torch_function_hop_pending: Any = getattr(torch._C, "_peek_should_skip_torch_function", bool)


# Dynamo's output graph wraps each compiled graph with
# torch._dynamo.decorators.disable(graph, reason=COMPILED_GRAPH_DISABLE_REASON),
# importing `disable` from torch._dynamo.decorators when it does (2.11-2.15);
# _disable_wrappers recognises the wrapper it asks for by that reason.
COMPILED_GRAPH_DISABLE_REASON = "do not trace Dynamo-compiled graph"
# DisableContext's wrapper reads the stance as torch._dynamo.eval_frame._stance
# (set_stance replaces the object: read through the module) and the export
# flag through torch.compiler.is_exporting() (torch.compiler._is_exporting_flag),
# in 2.11-2.15.
dynamo_eval_frame: Any = torch._dynamo.eval_frame


# ---- what Dynamo's compile wrapper reads on every call (_compile_wrapper) -----------
#
# The thread-local state behind its questions, read directly.
# TracingContext.try_get(): torch._guards._TLS.tracing_context (2.11-2.15).
TRACING_CONTEXT_TLS: Any = torch._guards._TLS
# is_fx_symbolic_tracing(): true only while FX's tracing flag is; the flag
# is torch.fx._symbolic_trace._is_fx_tracing_flag in 2.11-2.13 and the
# thread-local _is_fx_tracing_tls.flag from 2.14 (each release's
# torch/fx/_symbolic_trace.py).
FX_TRACING_MODULE: Any = torch.fx._symbolic_trace
FX_TRACING_TLS: Any = getattr(torch.fx._symbolic_trace, "_is_fx_tracing_tls", None)
# _is_eager_on_nested_compile() (torch 2.14+): the thread-local depth of
# _use_eager_on_nested_compile(); before 2.14 no such check.
EAGER_NESTED_COMPILE_TLS: Any = getattr(dynamo_eval_frame, "_force_eager_nested_compile", None)
# install_generation_tagging_init(), its context's enter hook: patches
# nn.Module.__init__ once, marking nn.Module with a class attribute, then
# counts a generation on every call.  The mark: ___needs_generation_tag_patch
# = False in 2.11-2.14, ___has_generation_tag_patch = True in 2.15 (read
# from the function's code).
_tagging = torch._dynamo.mutation_guard.install_generation_tagging_init
GENERATION_TAG_MARK: tuple[str, bool] = (
    ("___has_generation_tag_patch", True)
    if "___has_generation_tag_patch" in _tagging.__code__.co_names
    else ("___needs_generation_tag_patch", False)
)
# What it re-raises without their tracebacks: UserError too from 2.12.
COMPILE_WRAPPER_USER_ERRORS: tuple[type[BaseException], ...] = (
    torch._dynamo.exc.Unsupported,
    torch._dynamo.exc.UncapturedHigherOrderOpError,
) + ((torch._dynamo.exc.UserError,) if RELEASE >= (2, 12) else ())


# The thread's local dispatch key set, kept across the compiled call: 2.13
# enters torch._C._ForceDispatchKeyGuard with the sets it read before
# (DISPATCH_KEY_GUARD); 2.14 keeps them on a C++ stack instead
# (_dynamo_save_local_dispatch_key_set and _dynamo_restore_local_dispatch_key_set,
# no objects per call); 2.11 and 2.12 do neither (None).
DISPATCH_KEY_GUARD: Any = None
save_dispatch_keys: Any = None
restore_dispatch_keys: Any = None
if hasattr(torch._C, "_dynamo_save_local_dispatch_key_set"):
    save_dispatch_keys = torch._C._dynamo_save_local_dispatch_key_set
    restore_dispatch_keys = torch._C._dynamo_restore_local_dispatch_key_set
elif RELEASE >= (2, 13):
    DISPATCH_KEY_GUARD = torch._C._ForceDispatchKeyGuard
