"""What counts runs of Dynamo's compiled code: the fullgraph call's frame
count and the bytecode debugger's callback.

While a fullgraph call counts compiled frames (torch 2.13+; torch
2.11/2.12's set_eval_frame_override says the same), Dynamo's C layer runs
what a compiled frame calls with no callback (nothing compiled or looked
up there), or with the failing callback (convert_frame.get_fail_callback)
under error_on_dynamo_callback_in_fullgraph_compiled_code, and sets its
callback back when the frame returns; a callback set meanwhile (a
torch.compile'd function called there) holds below the frame that set it.
Here the thread's callback stays: the hook and the guards find, when the
fullgraph call has run compiled code, whether the frame at hand runs under
such code (the stack up to the frame that started the count), for that
callback.
"""

from __future__ import annotations

import types
from typing import Any

from . import _state


def ran_compiled_code(code: types.CodeType, callback: Any = None) -> None:
    """Dynamo code is about to run in a frame (a hit, or just compiled), for
    Dynamo's `callback` (None: run-only)."""
    if _state.fullgraph_compiled_frame_count >= 0:
        _state.fullgraph_compiled_frame_count += 1
        if callback is not None:
            _ran_in_fullgraph_call(code, callback)
    debugger = _state.bytecode_debugger_callback
    if debugger is not None:
        debugger(code)


def _ran_in_fullgraph_call(code: types.CodeType, callback: Any) -> None:
    thread = _state.thread
    if thread.fullgraph_start is None:
        return  # the count is another thread's fullgraph call's
    ran = thread.fullgraph_ran
    fails = _state.fullgraph_error_on_nested_compile
    for known in ran:
        if known[0] is code and known[1] is callback and known[2] is fails:
            return
    if not ran:
        _state.fullgraph_threads += 1
        _state.changed()
    thread.fullgraph_ran = (*ran, (code, callback, fails))


def fullgraph_code_calling(callback: Any, frame: types.FrameType | None) -> Any:
    """The (code, callback, fails) of the compiled code run for `callback`
    in this thread's fullgraph call under which `frame` runs (`frame` or its
    callers), or None."""
    thread = _state.thread
    ran = thread.fullgraph_ran
    if not ran:
        return None  # another thread's fullgraph call
    start = thread.fullgraph_start
    while frame is not None and frame is not start:
        code = frame.f_code
        for record in ran:
            if record[0] is code and record[1] is callback:
                return record
        frame = frame.f_back
    return None


def set_fullgraph_call(start: types.FrameType | None) -> None:
    """A fullgraph call starts (`start`: the frame that started the count) or
    ends (None): no compiled code has run in it."""
    thread = _state.thread
    if thread.fullgraph_ran:
        _state.fullgraph_threads -= 1
        thread.fullgraph_ran = ()
    thread.fullgraph_start = start
