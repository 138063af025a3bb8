"""pyframe.dynamo: TorchDynamo's compiler running on pyframe's frame layer.

``pyframe.dynamo.compile(fn, backend=...)`` does what
``torch.compile(fn, backend=...)`` does, with pyframe's PEP 523 hook in place
of Dynamo's C ``eval_frame``: pyframe hands each new frame to Dynamo's own
per-frame callback (its bytecode analysis, guards and backends, unchanged),
caches what Dynamo compiles in a pyframe.Cache behind Dynamo's guards, and
maps Dynamo's frame strategies to pyframe's remembered decisions.

Written against torch 2.13.0 (the torch tox environments pin it).  Every
Dynamo-internal name pyframe touches is in this module, each with a comment
naming the torch function and version; importing pyframe alone never imports
torch.  What is covered and what is not: README.md, "TorchDynamo on pyframe".
"""

from __future__ import annotations

import functools
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any

import torch

# torch 2.13.0: torch._dynamo.eval_frame (OptimizeContext, skip_code's
# set_code_exec_strategy) and torch._dynamo.convert_frame (the recompile
# limit's cache queries) are Dynamo's Python side of its frame layer.
import torch._dynamo
import torch._dynamo.convert_frame as _convert_frame
import torch._dynamo.eval_frame as _eval_frame

# torch 2.13.0: torch._C._dynamo.eval_frame._FrameAction, the actions of a
# FrameExecStrategy (DEFAULT, SKIP, RUN_ONLY).
from torch._C._dynamo.eval_frame import _FrameAction

import pyframe

__all__ = ["compile"]

_DEFAULT, _SKIP, _RUN_ONLY = _FrameAction.DEFAULT, _FrameAction.SKIP, _FrameAction.RUN_ONLY

# A FrameExecStrategy(cur_action, recursive_action) Dynamo applies to a code
# object, as the pyframe decision that means the same.
_DECISIONS = {
    (_DEFAULT, _DEFAULT): None,
    (_SKIP, _DEFAULT): pyframe.SKIP,
    (_SKIP, _SKIP): pyframe.SKIP_RECURSIVE,
    (_RUN_ONLY, _DEFAULT): pyframe.RUN_ONLY,
    (_RUN_ONLY, _RUN_ONLY): pyframe.RUN_ONLY_RECURSIVE,
}

# Dynamo's own cache has no size limit (its recompile limits bound it), so
# neither has the pyframe.Cache standing in for it.
_UNLIMITED = 1 << 20

# What Dynamo keeps per code object in its C extra state, kept here:
# decisions made outside a callback (skip_code), and the frame_state dict
# its callback is handed for every frame of the code.
_decided: weakref.WeakKeyDictionary[types.CodeType, Any] = weakref.WeakKeyDictionary()
_frame_states: weakref.WeakKeyDictionary[types.CodeType, dict] = weakref.WeakKeyDictionary()
_compilers: weakref.WeakValueDictionary[Any, _Compiler] = weakref.WeakValueDictionary()
_compiling = threading.local()  # .compiler while Dynamo's callback runs on this thread

# torch 2.13.0: @torch.compiler.disable wraps a function in
# DisableContext.__call__'s `_fn`, which switches Dynamo's own hook off with
# set_eval_frame(None) for the call; under pyframe that does nothing, so the
# wrapper's code (one code object for every disabled function) is skipped
# recursively instead.
_DISABLED_WRAPPER_CODE = torch.compiler.disable(lambda: None).__code__


def _strategy_decision(strategy: Any) -> Any:
    key = (strategy.cur_action, strategy.recursive_action)
    if key not in _DECISIONS:
        raise RuntimeError(
            f"pyframe.dynamo: TorchDynamo asked for the frame strategy {key}, which "
            "pyframe has no decision for"
        )
    return _DECISIONS[key]


class _FrameView:
    """The frame as Dynamo's callback reads it (torch 2.13.0: the attributes of
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


class _Compiler:
    """Dynamo's callback for one backend, as a pyframe callback, with the
    pyframe.Cache that holds what it compiled."""

    def __init__(self, backend: str | Callable[..., Any]) -> None:
        # torch 2.13.0: torch._dynamo.optimize(backend) builds the
        # OptimizeContext torch.compile uses; .callback is Dynamo's per-frame
        # callback (a convert_frame.CatchErrorsWrapper) and .enter_exit_hooks
        # what torch.compile's wrapper runs around each call.
        context = torch._dynamo.optimize(backend)
        self.backend = backend
        self.dynamo_callback = context.callback
        self.enter_exit_hooks = list(context.enter_exit_hooks)
        self.cache = pyframe.Cache(limit=_UNLIMITED, on_drop=self._dropped)
        # guard -> Dynamo's GuardedCode, for Dynamo's recompile accounting.
        self.guarded: dict[Any, Any] = {}

    def __call__(self, frame: pyframe.Frame) -> Any:
        code = frame.f_code
        if code is _DISABLED_WRAPPER_CODE:
            return pyframe.SKIP_RECURSIVE
        decided = _decided.get(code)
        if decided is not None:
            return decided
        view = _FrameView(frame)
        frame_state = _frame_states.get(code)
        if frame_state is None:
            frame_state = _frame_states[code] = {}
        outer = getattr(_compiling, "compiler", None)
        _compiling.compiler = self
        try:
            # Dynamo's callback: (frame, cache_entry, frame_state) ->
            # ConvertFrameReturn.  Dynamo reads its cache through the
            # functions patched below, not through cache_entry.
            result = self.dynamo_callback(view, None, frame_state)
        finally:
            _compiling.compiler = outer
        return self._decide(result)

    def _decide(self, result: Any) -> Any:
        # torch 2.13.0: torch._dynamo.types.ConvertFrameReturn.
        strategy = result.frame_exec_strategy
        guarded = result.guarded_code
        if guarded is not None:
            if strategy.recursive_action != _DEFAULT:
                _strategy_decision(strategy)  # raises: no such decision
            # torch 2.13.0: GuardedCode.guard_manager is a GuardManagerWrapper;
            # .root.check(f_locals) runs the guards on a dict of the frame's
            # locals, and .id_matched_objs holds weak references to the
            # objects the guards match by id, whose death invalidates the
            # entry (Dynamo's CheckFunctionManager.invalidate).
            manager = guarded.guard_manager
            check = manager.root.check
            depends = [
                obj for ref in manager.id_matched_objs.values() if (obj := ref()) is not None
            ]
            self.guarded[check] = guarded
            return pyframe.Compiled(guarded.code, check, depends_on=depends)
        if not result.apply_to_code:
            if strategy.recursive_action != _DEFAULT:
                _strategy_decision(strategy)
            return None
        return _strategy_decision(strategy)

    def _dropped(
        self, original: types.CodeType, replacement: types.CodeType, guard: Any, reason: str
    ) -> None:
        self.guarded.pop(guard, None)

    def entries_for(self, code: types.CodeType) -> list[Any]:
        """Dynamo's view of this compiler's cache for `code`: its GuardedCode
        objects (what Dynamo reads of a cache entry: .code, .guard_manager,
        .compile_id), most recently used first."""
        return [
            self.guarded[guard]
            for _, guard, _ in pyframe.cache_entries(code, cache=self.cache)
            if guard in self.guarded
        ]


# ---- what Dynamo reads and writes of its C frame layer, pointed at pyframe --------


def _cache_entries_for_region(code: Any, isolate_recompiles_id: int) -> list[Any]:
    compiler = getattr(_compiling, "compiler", None)
    if compiler is None:
        return _original_entries_for_region(code, isolate_recompiles_id)
    return compiler.entries_for(getattr(code, "__code__", code))


def _total_cache_entry_count(code: Any) -> int:
    compiler = getattr(_compiling, "compiler", None)
    if compiler is None:
        return _original_total_count(code)
    return len(compiler.entries_for(getattr(code, "__code__", code)))


def _set_code_exec_strategy(code: types.CodeType, strategy: Any) -> None:
    _original_set_strategy(code, strategy)
    key = (strategy.cur_action, strategy.recursive_action)
    if key in _DECISIONS:
        _decided[code] = _DECISIONS[key]


def _reset_code(code: types.CodeType) -> None:
    _original_reset_code(code)
    _decided.pop(code, None)
    _frame_states.pop(code, None)
    for compiler in list(_compilers.values()):
        pyframe.reset(code, cache=compiler.cache)


# torch 2.13.0: convert_frame.ConvertFrameAssert.__call__ counts recompiles
# with the module-level names _get_cache_entries_for_region and
# _get_total_cache_entry_count (imported from eval_frame, reading Dynamo's C
# cache); while pyframe.dynamo's callback runs they answer from its cache.
_original_entries_for_region = _convert_frame._get_cache_entries_for_region
_original_total_count = _convert_frame._get_total_cache_entry_count
# torch 2.13.0: eval_frame.skip_code(code) calls the module-level
# set_code_exec_strategy (torch._C._dynamo.eval_frame); Dynamo skips the code
# it generates (FX forward functions, some resume functions) this way.
_original_set_strategy = _eval_frame.set_code_exec_strategy
# torch 2.13.0: torch._dynamo.reset() -> reset_code_caches() calls the
# module-level reset_code of torch._dynamo for every code object Dynamo saw.
_original_reset_code = torch._dynamo.reset_code

_convert_frame._get_cache_entries_for_region = _cache_entries_for_region
_convert_frame._get_total_cache_entry_count = _total_cache_entry_count
_eval_frame.set_code_exec_strategy = _set_code_exec_strategy
torch._dynamo.reset_code = _reset_code


# ---- compile ------------------------------------------------------------------------


def _compiler_for(backend: str | Callable[..., Any]) -> _Compiler:
    # One compiler (and cache) per backend, as Dynamo matches cache entries
    # to the backend that made them.
    try:
        compiler = _compilers.get(backend)
    except TypeError:  # an unhashable backend: its own compiler
        return _Compiler(backend)
    if compiler is None:
        compiler = _Compiler(backend)
        _compilers[backend] = compiler
    return compiler


def _wrap(fn: Callable[..., Any], compiler: _Compiler) -> Callable[..., Any]:
    callback = compiler
    cache = compiler.cache
    hooks = compiler.enter_exit_hooks

    @functools.wraps(fn)
    def compiled(*args: Any, **kwargs: Any) -> Any:
        cleanups = [enter() for enter in hooks]
        try:
            with pyframe.callback(callback, cache=cache):
                return fn(*args, **kwargs)
        finally:
            for cleanup in cleanups:
                cleanup()

    compiled._pyframe_dynamo_compiler = compiler  # type: ignore[attr-defined]
    return compiled


class _CompiledModule(torch.nn.Module):
    """A module whose calls run the original module's __call__ (hooks and
    all) compiled, as torch.compile(module) does."""

    def __init__(self, module: torch.nn.Module, compiler: _Compiler) -> None:
        super().__init__()
        self._orig_mod = module
        self._compiled_call = _wrap(module.__call__, compiler)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._compiled_call(*args, **kwargs)


def compile(fn: Any = None, *, backend: str | Callable[..., Any]) -> Any:
    """Like ``torch.compile(fn, backend=backend)``, with pyframe as the frame
    layer; also a decorator (``@pyframe.dynamo.compile(backend="eager")``).
    An nn.Module comes back as a module whose calls are compiled."""
    if fn is None:
        return functools.partial(compile, backend=backend)
    if not callable(fn):
        raise TypeError(
            "pyframe.dynamo.compile() expects a function or an nn.Module; got a "
            f"{type(fn).__name__} object ({fn!r:.60})"
        )
    compiler = _compiler_for(backend)
    if isinstance(fn, torch.nn.Module):
        return _CompiledModule(fn, compiler)
    return _wrap(fn, compiler)
