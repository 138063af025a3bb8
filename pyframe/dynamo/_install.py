"""Putting pyframe's frame layer in place of Dynamo's C one, and taking it out.

Dynamo's Python modules reach ``torch._C._dynamo.eval_frame`` two ways: by
attribute at call time (``torch._C._dynamo.eval_frame._debug_get_cache_entry_list``)
and through names bound at import (``from torch._C._dynamo.eval_frame import
set_eval_frame`` in torch._dynamo.eval_frame, convert_frame, guards, types,
decorators' copy of every name, aliases such as eval_frame's
``_maybe_set_eval_frame``).  install() replaces the C module's attributes of
the layer (_torch_compat.PRESENT) and every module-level name in torch's
modules that is bound to one of those objects; uninstall() puts each back.
Modules imported later bind the C module's attribute, whichever it is then.
It also puts the leaner wrappers of _disable_wrappers in place of the
disable wrappers Dynamo's compiled code calls on every warm call, and has
torch.compile return _compile_wrapper's compile wrapper.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types
from collections.abc import Iterator
from typing import Any

import torch

import pyframe

from . import (
    _cache,
    _compile_wrapper,
    _compiled_runs,
    _disable_wrappers,
    _frame_layer,
    _guard,
    _miss,
    _profiler,
    _state,
)
from . import _torch_compat as compat

_lock = threading.RLock()
# While installed: [(namespace, name, the native object)] for every binding
# install() replaced, in the order it replaced them.
_patched: list[tuple[Any, str, Any]] | None = None
# Whether install(specialization=True) switched the specialization mode on
# (uninstall() switches it off again; a mode the program had on stays on).
_specialization_ours = False


def _torch_modules() -> list[types.ModuleType]:
    return [
        module
        for name, module in list(sys.modules.items())
        if (name == "torch" or name.startswith("torch.")) and isinstance(module, types.ModuleType)
    ]


def _rebind(replacements: dict[int, Any], patched: list[tuple[Any, str, Any]]) -> None:
    """Points every module-level name of torch's modules that is bound to an
    object in `replacements` (by id) at its replacement."""
    for module in _torch_modules():
        namespace = vars(module)
        for name, value in list(namespace.items()):
            replacement = replacements.get(id(value))
            if replacement is not None and replacement[0] is value:
                setattr(module, name, replacement[1])
                patched.append((module, name, value))


def _native_state() -> dict[str, Any]:
    """The C layer's process-wide settings, read without changing them."""
    native = compat.native
    state: dict[str, Any] = {}
    prior: Any = native.set_skip_guard_eval_unsafe(False)
    native.set_skip_guard_eval_unsafe(prior)
    state["skip_guard_eval_unsafe"] = prior
    prior = native.set_guard_complete_hook(None)
    native.set_guard_complete_hook(prior)
    state["guard_complete_hook"] = prior
    state["c_recursion_limit"] = native.get_c_recursion_limit()
    if hasattr(native, "get_eval_frame_isolate_recompiles_id"):
        state["isolate_recompiles_id"] = native.get_eval_frame_isolate_recompiles_id()
    if hasattr(native, "set_fullgraph_compiled_frame_count"):
        prior = native.set_fullgraph_compiled_frame_count(-1)
        native.set_fullgraph_compiled_frame_count(prior)
        state["fullgraph_compiled_frame_count"] = prior
        prior = native.set_fullgraph_error_on_nested_compile(False)
        native.set_fullgraph_error_on_nested_compile(prior)
        state["fullgraph_error_on_nested_compile"] = prior
    if hasattr(native, "set_eval_frame_override"):
        prior = native.set_eval_frame_override(native._EvalFrameOverride.NONE)  # type: ignore[attr-defined]
        native.set_eval_frame_override(prior)
        state["eval_frame_override"] = prior
    if hasattr(native, "get_bytecode_debugger_callback"):
        state["bytecode_debugger_callback"] = native.get_bytecode_debugger_callback()
    return state


def _give_back_state() -> None:
    """Hands the settings made while installed to the C layer."""
    native = compat.native
    native.set_skip_guard_eval_unsafe(_state.SKIP_GUARD_EVAL_UNSAFE.value)
    native.set_guard_complete_hook(_state.guard_complete_hook)
    if _state.guard_error_hook is not None:
        native.set_guard_error_hook(_state.guard_error_hook)
    native.set_c_recursion_limit(_state.c_recursion_limit)
    if hasattr(native, "set_eval_frame_isolate_recompiles_id"):
        native.set_eval_frame_isolate_recompiles_id(_state.ISOLATE_RECOMPILES_ID.value)
    if hasattr(native, "set_fullgraph_compiled_frame_count"):
        native.set_fullgraph_compiled_frame_count(_state.fullgraph_compiled_frame_count)
        native.set_fullgraph_error_on_nested_compile(_state.fullgraph_error_on_nested_compile)
    if hasattr(native, "set_eval_frame_override") and _state.eval_frame_override is not None:
        native.set_eval_frame_override(_state.eval_frame_override)
    if hasattr(native, "set_bytecode_debugger_callback"):
        native.set_bytecode_debugger_callback(_state.bytecode_debugger_callback)


def _take_state() -> None:
    for name, value in _native_state().items():
        setting = _state.SETTINGS.get(name)
        if setting is not None:
            setting.swap(value)
        else:
            setattr(_state, name, value)
    # The C layer has no getter for it; Dynamo sets its own at import.
    guards = sys.modules.get("torch._dynamo.guards")
    _state.guard_error_hook = getattr(guards, "guard_error_hook", None)
    _state.changed()


def _check_no_callback(action: str) -> None:
    if compat.native.get_eval_frame_callback() is not None or _miss.SWITCH.get() is not None:
        raise RuntimeError(
            f"pyframe.dynamo.{action}() was called while this thread runs torch.compile'd "
            "code (a TorchDynamo callback is set); call it outside compiled code"
        )


def install(*, specialization: bool = False) -> None:
    """Run TorchDynamo (torch.compile, torch._dynamo.optimize/run/reset,
    torch.compiler.disable/set_stance, ...) on pyframe's frame layer instead
    of its own C one, for the whole process.  Calling it again does nothing
    but switch the specialization mode on, when asked to.

    ``specialization=True`` (CPython 3.12+) also switches pyframe's
    specialization mode on until uninstall(): the code Dynamo skips (the
    Python between graphs: the standard library, torch's own) then runs at
    no-hook speed while compiled code runs, but Python code Dynamo never
    decided about runs unspecialized everywhere, compiled code or not
    (docs/dynamo.md, "The specialization mode under install()", has the
    figures).  On 3.11 it raises NotImplementedError, installing nothing."""
    global _patched
    if type(specialization) is not bool:
        raise TypeError(
            "pyframe.dynamo.install() expects specialization=True or False; got "
            f"{type(specialization).__name__} {specialization!r:.60}"
        )
    with _lock:
        if _patched is not None:
            if specialization:
                _specialization_on()
            return
        _check_no_callback("install")
        if specialization:
            _specialization_on()  # first: on 3.11 nothing is installed
        native = compat.native
        patched: list[tuple[Any, str, Any]] = []
        try:
            _take_state()
            natives = {name: getattr(native, name) for name in compat.PRESENT}
            surface = _frame_layer.SURFACE
            _rebind({id(obj): (obj, surface[name]) for name, obj in natives.items()}, patched)
            for name, obj in natives.items():
                if getattr(native, name) is obj:
                    setattr(native, name, surface[name])
                    patched.append((native, name, obj))
            decorators = torch._dynamo.decorators
            original_code = compat.nonrecursive_disable_code()
            _miss.ORIGINAL_NONRECURSIVE_CODE[0] = original_code
            decorators._nonrecursive_disable_wrapper_code = _miss.NONRECURSIVE_TRAMPOLINE_CODE
            patched.append((decorators, "_nonrecursive_disable_wrapper_code", original_code))
            # What Dynamo decided at import, in its C layer, decided again.
            torch._dynamo.eval_frame.skip_code(original_code)
            # The layer's own functions run where Dynamo's C ones ran, with no
            # frame Dynamo would see: they never reach its callback.
            layer = (_frame_layer, _miss, _guard, _compiled_runs, _cache, _state, _profiler)
            for code in _code_objects(*layer):
                pyframe.remember(code, pyframe.SKIP_RECURSIVE, cache=_cache.CACHE)
            # The wrappers stand for Dynamo's disable wrappers, whose frames
            # its callback skips: what they call goes on through the layer
            # (a graph may start compiled code of its own).
            _disable_wrappers.install(patched)
            _compile_wrapper.install(patched)
            for code in _code_objects(_disable_wrappers, _compile_wrapper, compat):
                pyframe.remember(code, pyframe.SKIP, cache=_cache.CACHE)
            _profiler.watch(patched)
        except BaseException:
            _compile_wrapper.uninstall()
            _undo(patched)
            _profiler.follow(False)
            _specialization_off()
            raise
        _patched = patched


def _specialization_on() -> None:
    global _specialization_ours
    if not pyframe.specialization_enabled():
        pyframe.set_specialization(True)
        _specialization_ours = True


def _specialization_off() -> None:
    global _specialization_ours
    if _specialization_ours:
        _specialization_ours = False
        pyframe.set_specialization(False)


def _code_objects(*modules: types.ModuleType) -> list[types.CodeType]:
    """Every code object of the functions of `modules` (nested ones too)."""
    found: list[types.CodeType] = []

    def add(code: types.CodeType) -> None:
        found.append(code)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                add(const)

    for module in modules:
        for value in vars(module).values():
            members = vars(value).values() if isinstance(value, type) else (value,)
            for member in members:
                member = getattr(member, "fget", member)
                code = getattr(member, "__code__", None)
                if (
                    isinstance(code, types.CodeType)
                    and getattr(member, "__module__", None) == module.__name__
                ):
                    add(code)
    return found


def _undo(patched: list[tuple[Any, str, Any]]) -> None:
    for namespace, name, original in reversed(patched):
        setattr(namespace, name, original)


def uninstall() -> None:
    """Give TorchDynamo its own C frame layer back, exactly as install()
    found it; what was compiled on pyframe is forgotten.  Does nothing when
    not installed."""
    global _patched
    with _lock:
        if _patched is None:
            return
        _check_no_callback("uninstall")
        patched, _patched = _patched, None
        _compile_wrapper.uninstall()
        _undo(patched)
        # Modules imported while installed bound the layer's objects.
        surface = _frame_layer.SURFACE
        _rebind(
            {
                id(surface[name]): (surface[name], original)
                for namespace, name, original in patched
                if namespace is compat.native
            },
            [],
        )
        _give_back_state()
        _profiler.follow(False)
        _cache.reset_all()
        _specialization_off()


def is_installed() -> bool:
    """True between install() and uninstall()."""
    return _patched is not None


@contextlib.contextmanager
def installed(*, specialization: bool = False) -> Iterator[None]:
    """``with pyframe.dynamo.installed(): ...`` installs for the block and
    uninstalls after it, unless it was installed before the block
    (`specialization` as install()'s)."""
    with _lock:
        was = is_installed()
        install(specialization=specialization)
    try:
        yield
    finally:
        if not was:
            uninstall()
