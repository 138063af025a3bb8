"""The miss path: a frame of code with no remembered decision and no entry
whose guard holds reaches the pyframe callback standing for Dynamo's
(`DynamoHook`), which looks where Dynamo's C layer looks and pyframe does
not, then calls Dynamo's callback as that layer does and turns its
ConvertFrameReturn into a pyframe decision or a cached entry.

`SWITCH` holds each thread's Dynamo callback (torch._C._dynamo.eval_frame's
set_eval_frame / get_eval_frame_callback are its set and get, in _frame_layer).
"""

from __future__ import annotations

import random
import types
import weakref
from typing import Any

import pyframe

from . import _cache, _state
from . import _torch_compat as compat
from ._compiled_runs import fullgraph_code_calling, ran_compiled_code
from ._guard import CacheEntry

_FrameAction = compat.native._FrameAction
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


def decision(strategy: Any) -> Any:
    """The pyframe decision for one of Dynamo's frame execution strategies."""
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
            ran = fullgraph_code_calling(self.callback, frame.f_back)
            if ran is not None:
                # Under fullgraph compiled code: Dynamo's C layer has no
                # callback here, or the failing one.
                if not ran[2]:
                    return None
                return SWITCH.callback_for(compat.fail_callback(self.callback))(frame)
        code = frame.f_code
        if _state.lookup_event_without_entries is not None and not _cache.entries_of(code):
            _state.lookup_event_without_entries()
        extra = _cache.extra_for(code)
        thread = _state.thread
        forced = thread.forced_miss is extra
        thread.forced_miss = None
        if not forced:
            found = _lookup_elsewhere(self, frame, extra)
            if found is not None:
                return found
        if _state.SKIP_GUARD_EVAL_UNSAFE.value:
            raise RuntimeError(_SKIP_UNSAFE_MISS)
        if not forced and _state.guard_complete_hook is not None and _cache.entries_of(code):
            _state.guard_complete_hook(False)
        return self._compile(frame, code, extra)

    def _compile(self, frame: pyframe.Frame, code: types.CodeType, extra: _cache.ExtraState) -> Any:
        view = FrameView(frame)
        entries = _cache.entries_of(code)
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
            decided = decision(strategy)
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
            if apply_to_code and decided is not None:
                _cache.remember(code, decided)
            entry = CacheEntry(guarded, self.backend, _state.ISOLATE_RECOMPILES_ID.value, extra)
            ran_compiled_code(entry.code, callback)
            return pyframe.Compiled(guarded.code, entry)
        if apply_to_code:
            return decided
        return None


def _call_from_nonrecursive_disable(callback: Any, *args: Any) -> Any:
    # ConvertFrameAssert leaves a frame alone (this time) when the Python
    # frame above its callback is torch.compiler.disable(recursive=False)'s
    # wrapper; with pyframe, the frame above is the hook.  While pyframe.dynamo
    # is installed, Dynamo's name for that wrapper's code is this function's
    # (_install), and the hook calls Dynamo from here exactly when the frame's
    # caller is that wrapper.
    return callback(*args)


NONRECURSIVE_TRAMPOLINE_CODE = _call_from_nonrecursive_disable.__code__

# The code object ConvertFrameAssert compares the caller with, as Dynamo
# made it (_install sets it; Dynamo's own name points at the trampoline).
ORIGINAL_NONRECURSIVE_CODE: list[Any] = [None]


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
        if caller is not None and caller.f_code is ORIGINAL_NONRECURSIVE_CODE[0]:
            return _call_from_nonrecursive_disable(callback, view, first, state)
        return callback(view, first, state)
    finally:
        random.setstate(random_state)


def _lookup_elsewhere(hook: DynamoHook, frame: pyframe.Frame, extra: _cache.ExtraState) -> Any:
    """What Dynamo's lookup finds that pyframe's does not: in an
    isolate_recompiles region, the default region's entries (read only),
    then the code's precompiled entries.  Their code runs this time, uncached."""
    region = _state.ISOLATE_RECOMPILES_ID.value
    code = frame.f_code
    if region >= 0:
        for entry in _cache.entries_of(code):
            if entry.isolate_recompiles_id == -1:
                _state.ISOLATE_RECOMPILES_ID.swap(-1)
                try:
                    holds = entry(frame.f_locals)
                finally:
                    _state.ISOLATE_RECOMPILES_ID.swap(region)
                if holds:
                    return entry.code
    if extra.precompile_entries:
        f_locals = frame.f_locals
        for precompiled in extra.precompile_entries:
            if precompiled.guard_manager.root.check(f_locals):
                ran_compiled_code(precompiled.code, hook.callback)
                return precompiled.code
    return None


# Each thread's Dynamo callback: set(callback) installs its DynamoHook (one
# per callback, kept while it lives) with Dynamo's cache, set(False) runs that
# cache alone, set(None) puts back what the thread had before.
SWITCH = pyframe.Switch(_cache.CACHE, DynamoHook)
