"""The callback of `locals`, in every thread: which frames to show, one at a time.

LocalsCallback is installed in the main thread around the program's code and
in every thread the program starts whose name passes --thread (threads.py).
What it decides from a code object alone (the library, pyframe's own files,
--match and --exclude on names) becomes pyframe.SKIP: those frames then cost
what the specialization mode makes them cost (CPython 3.12+: no-hook speed
while one thread has a callback).  --where is asked at every call of code it
keeps.  Coroutines (3.12+) and, with --resumptions, every run of a
generator after its creation come through the watcher (resumptions.py).

Frames to show go to `show` (a report, or the interactive session) in turns,
in the order their threads got here: only one is shown at a time, and a
thread waiting for its turn waits alone.  Once `over` (q, end of input,
--max, a report that failed, or the program's end), each thread removes its
callback at its next frame.
"""

from __future__ import annotations

import collections
import contextlib
import inspect
import threading
import types
from collections.abc import Callable, Iterator, Sequence
from typing import IO, TYPE_CHECKING

import pyframe
from pyframe.cli.conditions import Condition
from pyframe.cli.errors import describe_exception, write_quietly
from pyframe.cli.filters import Decision, FrameFilter
from pyframe.cli.resumptions import RunningFrame, Watcher, kinds_of
from pyframe.cli.seen import RUNS_IN_TASKS, Event, FrameView, Seen, code_kind
from pyframe.cli.threads import Detach, ThreadHooks, current_task_name

if TYPE_CHECKING:
    import re

    from pyframe._cframe import CallbackResult  # from the stub

ShowFrame = Callable[[Seen], Decision]

# What a code object alone decides (LocalsCallback._verdict).
_SKIP = "skip"  # never shown: pyframe.SKIP
_KEEP = "keep"  # shown (where --where holds)
_KEEP_IN_TASK = "keep in task"  # shown, with the name of the task it runs in
_BY_TASK = "by task"  # shown if the name of the task it runs in passes --match/--exclude


class Turns:
    """A lock taken in the order it was asked for: one stop at a time, first come first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: collections.deque[threading.Lock] = collections.deque()
        self._taken = False

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        with self._lock:
            if not self._taken:
                self._taken = True
                gate = None
            else:
                gate = threading.Lock()
                gate.acquire()
                self._waiting.append(gate)
        if gate is not None:
            try:
                gate.acquire()  # the thread before hands its turn over by releasing it
            except BaseException:  # KeyboardInterrupt, in the main thread
                with self._lock:
                    if gate in self._waiting:
                        self._waiting.remove(gate)
                        raise
                self._hand_on()  # it was handed over meanwhile: pass it on
                raise
        try:
            yield
        finally:
            self._hand_on()

    def _hand_on(self) -> None:
        with self._lock:
            if self._waiting:
                self._waiting.popleft().release()
            else:
                self._taken = False


class _PerThread(threading.local):
    attached = False  # this thread has the callback installed


class LocalsCallback:
    """The pyframe callback of `locals`: filters frames and shows the rest."""

    def __init__(
        self,
        frame_filter: FrameFilter,
        condition: Condition | None,
        show: ShowFrame,
        limit: int | None,
        errors: IO[str],
        *,
        threads: Sequence[re.Pattern[str]] = (),
        resumptions: bool = False,
        on_end: Callable[[], None] = lambda: None,
    ) -> None:
        self.frame_filter = frame_filter
        self.condition = condition
        self.show = show
        self.limit = limit
        self.errors = errors
        self.on_end = on_end
        self.shown = 0
        self.over = False
        # One cache in every thread: a SKIP decided in one thread holds in all.
        self.cache = pyframe.Cache()
        self.threads = ThreadHooks(list(threads), self.attach, self._program_ended)
        self.watcher = Watcher(self._running_frame, resumptions, errors)
        self._turns = Turns()
        self._count_lock = threading.Lock()
        self._local = _PerThread()
        self._verdicts: dict[types.CodeType, object] = {}
        # What is installed: one bound method, made once (a call through it costs
        # less than calling the instance, which looks __call__ up each time).
        self.on_frame = self._on_frame

    # ---- installation, in the main thread and in the threads the program starts

    def start(self) -> None:
        """Hook the threads the program will start (before it, or its packages, can)."""
        self.threads.start()

    def attach(self, name: str) -> Detach:
        """Install the callback in the current thread; returns what removes it."""
        pyframe.set_callback(self.on_frame, cache=self.cache)
        untrace = self.watcher.attach_thread()
        self._local.attached = True

        def detach() -> None:
            self._local.attached = False
            if untrace is not None:
                untrace()
            if pyframe.get_callback() is self.on_frame:
                pyframe.set_callback(None)

        return detach

    @contextlib.contextmanager
    def main_thread(self) -> Iterator[None]:
        """Installed in the main thread around the program's code (if --thread wants it)."""
        name = threading.main_thread().name
        detach = self.attach(name) if self.threads.wants(name) and not self.over else None
        try:
            yield
        finally:
            if detach is not None:
                detach()

    def program_done(self) -> None:
        """The program's main code is over: the end comes when its threads are."""
        self.threads.program_done()

    def end_now(self) -> None:
        """The program never ran (it failed to load)."""
        self.threads.end()

    def _program_ended(self) -> None:
        self._stop()
        self.on_end()

    # ---- pyframe's callback: a frame about to run its first instruction

    def _on_frame(self, frame: pyframe.Frame) -> CallbackResult:
        if self.over:
            self._leave_thread()
            return None
        try:
            code = frame.f_code
            verdict = self._verdicts.get(code)
            if verdict is None:
                verdict = self._verdicts[code] = self._verdict(frame)
            if verdict is _SKIP:
                return pyframe.SKIP
            task = None
            if verdict is not _KEEP:
                task = current_task_name()
                if verdict is _BY_TASK and not self.frame_filter.matches(code, task):
                    return None
            condition = self.condition
            if condition is not None:
                # Inline, not condition.holds(): this runs at every call of the code.
                try:
                    if not eval(condition.code, frame.f_globals, frame.f_locals):
                        return None
                except Exception as error:
                    condition.warn_once(code, error)
                    return None
            decision = self._show(frame, "call", task)
        except Exception as error:
            self._failed(error)
            return None
        return pyframe.SKIP if decision is Decision.SKIP else None

    def _verdict(self, frame: pyframe.Frame) -> object:
        """What the code object alone decides, worked out at its first call and kept:
        code that is not skipped (--where, reports) comes back at every call."""
        code = frame.f_code
        if not self.frame_filter.admits(code):
            return _SKIP
        flags = code.co_flags
        if flags & inspect.CO_COROUTINE and self.watcher.watches_coroutine_starts():
            # Reported at its first run, in the task that runs it.
            self.watcher.watch(code, kinds_of(frame))
            return _SKIP
        if flags & RUNS_IN_TASKS:
            # A task's name may decide (--match, --exclude), and it labels the frame.
            verdict = _BY_TASK if self.frame_filter.by_name else _KEEP_IN_TASK
        else:
            verdict = _KEEP if self.frame_filter.matches(code) else _SKIP
        if verdict is not _SKIP and self.watcher.resumptions and code_kind(code) is not None:
            self.watcher.watch(code, kinds_of(frame))
        return verdict

    # ---- the watcher's events: a frame that has started

    def _running_frame(self, frame: types.FrameType, event: Event) -> None:
        if self.over or not self._local.attached:
            return
        try:
            code = frame.f_code
            task = current_task_name()
            if not self.frame_filter.matches(code, task):
                return
            view = RunningFrame(frame, self.watcher.kinds(code) or [])
            if self.condition is not None and not self.condition.holds(
                code, frame.f_globals, view.f_locals
            ):
                return
            # Unlike pyframe's callback, this one runs with the thread's frames
            # intercepted: what a command at the stop runs must not be shown.
            pyframe.set_callback(None)
            try:
                decision = self._show(view, event, task)
            finally:
                if not self.over:
                    pyframe.set_callback(self.on_frame, cache=self.cache)
            if decision is Decision.SKIP:
                self.watcher.unwatch(code)
                pyframe.remember(code, pyframe.SKIP, cache=self.cache)
        except Exception as error:
            self._failed(error)

    # ---- showing, one frame at a time

    def _show(self, frame: FrameView, event: Event, task: str | None) -> Decision:
        with self._turns.turn():
            if self.over:
                return Decision.RUN
            with self._count_lock:
                self.shown += 1
                number = self.shown
            label = self.threads.label()
            seen = Seen(frame, number, event, label.name, label.ident, self.threads.in_play, task)
            decision = self.show(seen)
            if decision is Decision.QUIT or (self.limit is not None and number >= self.limit):
                # The rest of the program runs without callbacks, in every thread.
                self._stop()
                self._leave_thread()
        if decision is Decision.SKIP and event == "call":
            self.watcher.unwatch(frame.f_code)
        return decision

    def _failed(self, error: Exception) -> None:
        # A failing report (closed stream, full disk) must not fail the program.
        already = self.over
        self._stop()
        self._leave_thread()
        if not already:
            write_quietly(self.errors, f"pyframe: report stopped: {describe_exception(error)}\n")

    def _stop(self) -> None:
        self.over = True
        self.watcher.stop()

    def _leave_thread(self) -> None:
        if pyframe.get_callback() is self.on_frame:
            pyframe.set_callback(None)
