"""What `locals` hands its report or its interactive session: a frame, and where it ran.

A frame is seen at one of three events:

- "call": pyframe's callback got it, about to run its first instruction (a
  pyframe.Frame; for a generator, coroutine or async generator that is when
  its function is called, on CPython 3.11 for coroutines too);
- "start": a coroutine's first run, in its task (CPython 3.12+, through
  sys.monitoring; a RunningFrame);
- "resume": a generator, coroutine or async generator running again
  (--resumptions; a RunningFrame).

FrameView is what the report and the session use of either kind of frame.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Event = Literal["call", "start", "resume"]


class FrameView(Protocol):
    """What pyframe.Frame and RunningFrame both give."""

    @property
    def f_code(self) -> types.CodeType: ...
    @property
    def f_globals(self) -> dict[str, Any]: ...
    @property
    def f_locals(self) -> Mapping[str, Any]: ...
    @property
    def f_back(self) -> types.FrameType | None: ...
    @property
    def f_lineno(self) -> int | None: ...
    @property
    def localsplus(self) -> list[tuple[str, Any, Any]]: ...
    def set_local(self, name: str, value: object) -> None: ...


@dataclass(frozen=True)
class Seen:
    """One frame to report or stop at."""

    frame: FrameView
    number: int  # 1, 2, ... across every thread, in the order they were seen
    event: Event
    thread_name: str
    thread_id: int
    show_thread: bool  # the program has started threads: say which one this is
    task: str | None  # the asyncio task, for frames that run in one

    @property
    def code(self) -> types.CodeType:
        return self.frame.f_code


def code_kind(code: types.CodeType) -> str | None:
    """'generator', 'coroutine' or 'async generator'; None for a plain function."""
    flags = code.co_flags
    if flags & inspect.CO_COROUTINE:
        return "coroutine"
    if flags & inspect.CO_ASYNC_GENERATOR:
        return "async generator"
    if flags & inspect.CO_GENERATOR:
        return "generator"
    return None


RUNS_IN_TASKS = inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
