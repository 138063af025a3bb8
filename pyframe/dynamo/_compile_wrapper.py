"""The compile wrapper a warm call of a torch.compile'd function runs, on
pyframe's layer.

``torch.compile(fn)`` returns Dynamo's ``compile_wrapper`` (made by
``_TorchDynamoContext.__call__``).  On every call it sets the thread's
callback off, asks about ten questions whose answer is almost always "no"
(a nested compile under fake tensors, export, FX or JIT tracing, a stance
other than the default one, ...), each a Python call of its own, runs the
context's enter hooks, sets the callback, calls `fn`, and undoes it all.
A profile of a warm ``x + 1`` on CPython 3.13 with torch 2.15 puts about
13,000 instructions in those helpers, 5,400 of them in FX's tracing flag
alone (a thread-local ``getattr`` whose miss raises an AttributeError).

install() has ``_TorchDynamoContext.__call__`` return `compile_wrapper`
here instead of Dynamo's, for the common case (not fullgraph, no
error_on_graph_break): it reads the
same state those helpers read, directly, and does what Dynamo's does when
every answer is "no".  Whenever one is not (or pyframe's layer is not
installed, or the call is nested under another callback), it calls
Dynamo's own wrapper, which does everything as natively.  The two share
their attributes (``__dict__``: ``_torchdynamo_orig_callable``,
``_torchdynamo_inline``, ``_is_torch_compile``, ...), so that what Dynamo
reads from the function it returned reads the same.

Natively Dynamo's callback skips compile_wrapper's code, in torch/_dynamo,
when a compiled function is called under another callback; here pyframe
skips this module's code, and a nested call goes to Dynamo's wrapper, whose
frame Dynamo's callback sees as natively.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import torch

from . import _state
from . import _torch_compat as compat
from ._disable_wrappers import take_names
from ._miss import SWITCH

_set_callback = SWITCH.set
_eval_frame = compat.dynamo_eval_frame
_config = torch._dynamo.config
_compiler = torch.compiler
_tracing_tls = compat.TRACING_CONTEXT_TLS
_fx_tracing_tls = compat.FX_TRACING_TLS
_fx_tracing_module = compat.FX_TRACING_MODULE
_eager_nested_tls = compat.EAGER_NESTED_COMPILE_TLS
_jit_tracing = torch._C._is_tracing
_layer_depth = torch._C._functorch.get_dynamic_layer_stack_depth
_pop_layers = torch._C._functorch.pop_dynamic_layer_stack_and_undo_to_depth
_KeyGuard = compat.DISPATCH_KEY_GUARD
_local_include = torch._C._dispatch_tls_local_include_set
_local_exclude = torch._C._dispatch_tls_local_exclude_set
_save_keys = compat.save_dispatch_keys
_restore_keys = compat.restore_dispatch_keys
_module_attributes = torch.nn.Module.__dict__
_TAG_NAME, _TAG_PATCHED = compat.GENERATION_TAG_MARK
_GenerationTracker = torch._dynamo.mutation_guard.GenerationTracker
_install_generation_tagging_init = torch._dynamo.mutation_guard.install_generation_tagging_init
_USER_ERRORS = compat.COMPILE_WRAPPER_USER_ERRORS
_ShortenTraceback = torch._dynamo.exc.ShortenTraceback
_SKIP_GUARD_EVAL_UNSAFE = _state.SKIP_GUARD_EVAL_UNSAFE
_REGION = _state.ISOLATE_RECOMPILES_ID

# True while install()ed: the wrappers made meanwhile take the fast path.
_on = False


def _code_named(owner: Callable[..., Any], name: str) -> types.CodeType:
    for const in owner.__code__.co_consts:
        if isinstance(const, types.CodeType) and const.co_name == name:
            return const
    raise ImportError(
        f"pyframe.dynamo: no {name} in {owner.__qualname__} (torch {torch.__version__})"
    )


_NATIVE_CALL = _eval_frame._TorchDynamoContext.__call__
_WRAPPER_CODE = _code_named(_NATIVE_CALL, "compile_wrapper")
_CALL_ON_ENTER_CODE = _code_named(_eval_frame._TorchDynamoContext.__init__, "call_on_enter")
_ON_ENTER_CODE = _code_named(_eval_frame.OptimizeContext.__init__, "on_enter")


def _cells(fn: types.FunctionType) -> dict[str, Any]:
    return {
        name: cell.cell_contents
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True)
    }


def _generation_hook(hooks: list[Any]) -> Any:
    """The context's only enter hook, when it is OptimizeContext's (which
    calls install_generation_tagging_init and leaves nothing to clean up:
    the wrapper calls that directly); else None."""
    if len(hooks) != 1:
        return None
    hook = hooks[0]
    if getattr(hook, "__code__", None) is not _CALL_ON_ENTER_CODE:
        return None
    on_enter = _cells(hook).get("on_enter")
    if getattr(on_enter, "__code__", None) is not _ON_ENTER_CODE:
        return None
    return hook


def _lean(native: types.FunctionType) -> Callable[..., Any] | None:
    """The fast compile wrapper standing for Dynamo's `native` one, or None
    where it would stand for it in no call."""
    cells = _cells(native)
    context, fn, callback = cells["self"], cells["fn"], cells["callback"]
    if context.fullgraph or context.error_on_graph_break is not None:
        return None
    hooks = context.enter_exit_hooks
    generation_hook = _generation_hook(hooks)
    region = getattr(context, "_isolate_recompiles_id", -1)

    def compile_wrapper(*args: Any, **kwargs: Any) -> Any:
        stance = _eval_frame._stance
        if (
            not _on
            or stance.stance != "default"
            or stance.backend is not None
            or stance.skip_guard_eval_unsafe
            or _SKIP_GUARD_EVAL_UNSAFE.value
            or _compiler._is_exporting_flag
            or _tracing_tls.__dict__.get("tracing_context") is not None
            or (
                _fx_tracing_tls.__dict__.get("flag", False)
                if _fx_tracing_tls is not None
                else _fx_tracing_module._is_fx_tracing_flag
            )
            or (_eager_nested_tls is not None and _eager_nested_tls.__dict__.get("depth", 0))
            or _jit_tracing()
        ):
            return native(*args, **kwargs)
        # The common case: the one hook is the generation's and nn.Module is
        # patched, so all it does is count a generation, and no Python runs
        # before fn: the callback goes on at once, in the call that says
        # whether one was on already.
        generation_only = len(hooks) == 1 and hooks[0] is generation_hook
        counted = (
            generation_only
            and _module_attributes.get(_TAG_NAME) is _TAG_PATCHED
            and _eval_frame.install_generation_tagging_init is _install_generation_tagging_init
        )
        prior = _set_callback(callback if counted else None)
        if prior is not None:  # nested under a callback: as natively
            _set_callback(prior)
            return native(*args, **kwargs)
        try:
            if counted:
                cleanups = None
                _GenerationTracker.generation += 1
            elif generation_only:
                cleanups = None
                _eval_frame.install_generation_tagging_init()
            else:
                cleanups = [enter() for enter in hooks]
            prior_region = _REGION.swap(region) if _REGION.value != region else None
            depth = _layer_depth()
            key_guard = None
            if _KeyGuard is not None:
                key_guard = _KeyGuard(_local_include(), _local_exclude())
                key_guard.__enter__()
            elif _save_keys is not None:
                _save_keys()
            try:
                if not counted:
                    _set_callback(callback)
                try:
                    return fn(*args, **kwargs)
                except _USER_ERRORS as e:
                    if _config.verbose:
                        raise
                    # As Dynamo's: the causes' tracebacks go.
                    cause: BaseException = e
                    while cause.__cause__ is not None:
                        cause.__cause__.with_traceback(None)
                        cause = cause.__cause__
                    raise e.with_traceback(None) from e.__cause__
                except _ShortenTraceback as e:
                    raise e.remove_dynamo_frames() from None
                finally:
                    _set_callback(None)
                    _pop_layers(depth)
                    if prior_region is not None:
                        _REGION.swap(prior_region)
                    if cleanups is not None:
                        for cleanup in cleanups:
                            cleanup()
            finally:
                if key_guard is not None:
                    key_guard.__exit__(None, None, None)
                elif _restore_keys is not None:
                    _restore_keys()
        except BaseException:
            _set_callback(None)  # off, whatever raised before fn ran
            raise

    take_names(compile_wrapper, native)
    # One dictionary: what is set on either later is on both.
    compile_wrapper.__dict__ = native.__dict__
    if "_torchdynamo_wrapper_id" in native.__dict__:  # Dynamo's: id(the wrapper returned)
        compile_wrapper._torchdynamo_wrapper_id = id(compile_wrapper)  # type: ignore[attr-defined]
    return compile_wrapper


def _call_in_place_of(native_call: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(native_call)
    def __call__(self: Any, fn: Any) -> Any:
        result = native_call(self, fn)
        if type(result) is types.FunctionType and result.__code__ is _WRAPPER_CODE:
            return _lean(result) or result
        return result

    return __call__


def install(patched: list[tuple[Any, str, Any]]) -> None:
    """Has torch.compile return the wrappers here from now on (added to
    `patched`, undone with it); wrappers made before keep Dynamo's."""
    global _on
    context = _eval_frame._TorchDynamoContext
    patched.append((context, "__call__", context.__call__))
    context.__call__ = _call_in_place_of(context.__call__)
    _on = True


def uninstall() -> None:
    """The wrappers made while installed call Dynamo's from now on."""
    global _on
    _on = False
