"""Frames seen after they have started: coroutines in their tasks, and resumptions.

pyframe hands its callback each frame once, before its first instruction.  A
generator's, coroutine's or async generator's frame gets there when its
function is called, which for a coroutine is usually in the task that
creates it (`asyncio.create_task(worker())`), not the task that runs it.  So
`locals` sees these frames again with the interpreter's own events:

- CPython 3.12+ (PEP 669): sys.monitoring's PY_START (a frame's first run)
  and PY_RESUME, asked for only on the code objects watched ("local
  events"), so no other code pays anything.  (PY_THROW, a resumption by
  throw(), cannot be asked for per code object: those are not reported.)  A coroutine is reported
  at its first run, in the task that runs it; with --resumptions every later
  run too, and every run of a generator or async generator.
- CPython 3.11 has no sys.monitoring: coroutines stay reported when they are
  created, and --resumptions uses sys.settrace's 'call' event (it comes at
  each run of a generator frame, not at its creation) in every thread that
  has the callback, which makes all Python code there about 8 times slower.

RunningFrame shows such a frame as the report and the session show a
pyframe.Frame.  `set` writes through frame.f_locals: a write-through proxy
from CPython 3.13 (PEP 667); before, a snapshot dict that
PyFrame_LocalsToFast copies back into the frame.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable, Mapping
from typing import IO, Any

import pyframe
from pyframe.cli.errors import write_quietly
from pyframe.cli.seen import Event, code_kind

# PEP 669 (CPython 3.12): sys.monitoring, with events for chosen code objects only.
HAS_MONITORING = sys.version_info >= (3, 12)
if sys.version_info >= (3, 12):
    _monitoring: Any = sys.monitoring
else:
    _monitoring: Any = None
# PEP 667 (CPython 3.13): a running function's frame.f_locals writes through to it.
LOCALS_WRITE_THROUGH = sys.version_info >= (3, 13)

# sys.monitoring's tool ids 3 and 4 have no assigned use (0 is debuggers', 1
# coverage's, 2 profilers', 5 optimizers'); pyframe takes one of those when free.
_TOOL_IDS = (4, 3)
_TOOL_NAME = "pyframe locals"

Kinds = list[tuple[str, str]]  # (name, kind) of each slot, as pyframe.Frame.localsplus says
Handler = Callable[[types.FrameType, Event], None]  # runs in the thread where it happened


class RunningFrame:
    """A FrameView of a frame object that has started (its code is past its entry)."""

    def __init__(self, frame: types.FrameType, kinds: Kinds) -> None:
        self.frame = frame
        self.kinds = kinds

    @property
    def f_code(self) -> types.CodeType:
        return self.frame.f_code

    @property
    def f_globals(self) -> dict[str, Any]:
        return self.frame.f_globals

    @property
    def f_back(self) -> types.FrameType | None:
        return self.frame.f_back

    @property
    def f_lineno(self) -> int | None:
        return self.frame.f_lineno

    @property
    def f_locals(self) -> Mapping[str, Any]:
        return self.frame.f_locals

    @property
    def localsplus(self) -> list[tuple[str, Any, Any]]:
        values = self.frame.f_locals
        return [(name, kind, values.get(name, pyframe.UNBOUND)) for name, kind in self.kinds]

    def set_local(self, name: str, value: object) -> None:
        kinds = dict(self.kinds)
        if name not in kinds:
            raise NameError(f"{self.f_code.co_qualname} has no variable {name!r}")
        if kinds[name] in ("free", "hidden"):
            raise ValueError(f"{name!r} is a {kinds[name]} variable")
        if LOCALS_WRITE_THROUGH:
            self.frame.f_locals[name] = value
            return
        snapshot = self.frame.f_locals
        snapshot[name] = value
        _locals_to_fast(self.frame)


def _locals_to_fast(frame: types.FrameType) -> None:
    import ctypes  # only on 3.11 and 3.12, and only for `set` at a resumption

    locals_to_fast = ctypes.pythonapi.PyFrame_LocalsToFast
    locals_to_fast.argtypes = [ctypes.py_object, ctypes.c_int]
    locals_to_fast.restype = None
    locals_to_fast(frame, 0)


def kinds_of(frame: pyframe.Frame) -> Kinds:
    return [(name, kind) for name, kind, _ in frame.localsplus]


class Watcher:
    """Reports the starts and resumptions of the code objects it watches to `handler`."""

    def __init__(self, handler: Handler, resumptions: bool, errors: IO[str]) -> None:
        self.handler = handler
        self.resumptions = resumptions
        self.errors = errors
        self._kinds: dict[types.CodeType, Kinds] = {}
        self._lock = threading.Lock()
        self._tool: int | None = None
        self._no_tool = not HAS_MONITORING  # 3.11, or the tool ids were taken
        self._stopped = False

    # ---- what is watched

    def watches_coroutine_starts(self) -> bool:
        """3.12+: coroutines are reported at their first run (when a tool id is free)."""
        with self._lock:
            return not self._stopped and self._has_tool()

    def watch(self, code: types.CodeType, kinds: Kinds) -> None:
        """Report `code`'s first runs (a coroutine, on 3.12+) or, with
        --resumptions, its runs after its creation."""
        with self._lock:
            if self._stopped or code in self._kinds:
                return
            self._kinds[code] = kinds
            if self._has_tool():
                _monitoring.set_local_events(self._tool, code, self._events_for(code))

    def unwatch(self, code: types.CodeType) -> None:
        with self._lock:
            if self._kinds.pop(code, None) is not None and self._tool is not None:
                _monitoring.set_local_events(self._tool, code, 0)

    def kinds(self, code: types.CodeType) -> Kinds | None:
        return self._kinds.get(code)

    def _events_for(self, code: types.CodeType) -> int:
        events = _monitoring.events
        if self.resumptions:
            return events.PY_START | events.PY_RESUME
        return events.PY_START if code_kind(code) == "coroutine" else 0

    # ---- 3.12+: sys.monitoring

    def _has_tool(self) -> bool:
        """Takes a sys.monitoring tool id the first time one is needed (with the lock)."""
        if self._tool is not None or self._no_tool:
            return self._tool is not None
        monitoring = _monitoring
        for tool in _TOOL_IDS:
            if monitoring.get_tool(tool) is None:
                monitoring.use_tool_id(tool, _TOOL_NAME)
                monitoring.register_callback(tool, monitoring.events.PY_START, self._on_start)
                monitoring.register_callback(tool, monitoring.events.PY_RESUME, self._on_resume)
                self._tool = tool
                return True
        self._no_tool = True
        write_quietly(
            self.errors,
            "pyframe: warning: sys.monitoring's tool ids 3 and 4 are both taken: coroutines "
            "are reported when they are created, and resumptions are not reported\n",
        )
        return False

    def _on_start(self, code: types.CodeType, offset: int) -> object:
        event: Event = "start" if code_kind(code) == "coroutine" else "resume"
        if code in self._kinds:
            self.handler(sys._getframe(1), event)
        return None

    def _on_resume(self, code: types.CodeType, offset: int) -> object:
        if code in self._kinds:
            self.handler(sys._getframe(1), "resume")
        return None

    # ---- 3.11: sys.settrace, per thread

    def attach_thread(self) -> Callable[[], None] | None:
        """For the current thread: what --resumptions needs on 3.11 (a trace function)."""
        if HAS_MONITORING or not self.resumptions:
            return None
        sys.settrace(self._trace)

        def detach() -> None:
            if sys.gettrace() == self._trace:
                sys.settrace(None)

        return detach

    def _trace(self, frame: types.FrameType, event: str, arg: object) -> None:
        # 'call' comes at each run of a generator's frame (not at its creation).
        if self._stopped:
            sys.settrace(None)
        elif event == "call" and frame.f_code in self._kinds:
            self.handler(frame, "resume")
        return None

    # ---- the end

    def stop(self) -> None:
        """No more events; gives the tool id back."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            tool, self._tool = self._tool, None
            codes = list(self._kinds)
        if tool is None:
            return
        monitoring = _monitoring
        for code in codes:
            monitoring.set_local_events(tool, code, 0)
        for event in (monitoring.events.PY_START, monitoring.events.PY_RESUME):
            monitoring.register_callback(tool, event, None)
        monitoring.free_tool_id(tool)
