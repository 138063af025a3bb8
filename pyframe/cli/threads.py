"""Every thread of the program: a callback in each thread it starts, and their names.

pyframe's callbacks are per thread (docs/callbacks.md): a thread has none
until it installs one itself.  ThreadHooks wraps what runs first in each new
thread, so that the thread installs `locals`' callback, runs, and removes it
however it ends (returns, raises, sys.exit()).  Two ways in cover the threads
Python code starts:

- `threading.Thread._bootstrap`, the method every Thread (and so every
  concurrent.futures and multiprocessing.pool thread, every
  ThreadingHTTPServer request) runs first in its new thread; one name, the
  same on 3.11-3.15 (3.13 changed what Thread.start() calls it through,
  `_start_new_thread` became `_start_joinable_thread`, but not the method);
- `_thread.start_new_thread` (and its old alias `start_new`), for programs
  that start threads without threading.

Threads that exist before pyframe starts (in a plain interpreter only the
main thread; a .pth file or sitecustomize may start more) cannot be reached:
installing a callback is something a thread does for itself.

`ended` is set once the program is over: its main code has returned and
every non-daemon thread it started has ended (what Python waits for before
its atexit handlers).  A daemon thread still running then removes its
callback at its next frame.
"""

from __future__ import annotations

import _thread
import re
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# Detach: removes what attach installed in the current thread.
Detach = Callable[[], None]
# Attach: installs the callback in the current thread, or returns None when the
# thread's name does not pass --thread.
Attach = Callable[[str], "Detach | None"]

_THREAD_MODULE_NAME = "_thread"  # what threads started by _thread.start_new_thread are called


@dataclass(frozen=True)
class ThreadLabel:
    """The thread a frame runs in: its name (as now) and threading.get_ident()."""

    name: str
    ident: int


class _NamedByThread(threading.local):
    thread: threading.Thread | None = None


class ThreadHooks:
    """Installs `attach` in the threads the program starts, from start() to end()."""

    def __init__(
        self, thread_filter: Sequence[re.Pattern[str]], attach: Attach, on_end: Callable[[], None]
    ) -> None:
        self.thread_filter = thread_filter
        self.attach = attach
        self.on_end = on_end
        self.ended = False
        # Set once the program starts a thread: from then on each report says its thread.
        self.in_play = False
        self._lock = threading.Lock()
        self._live = 0  # non-daemon threads started through the hooks that have not ended
        self._program_done = False
        self._local = _NamedByThread()
        self._saved: list[tuple[Any, str, Any]] = []

    # ---- the program's threads

    def start(self) -> None:
        """Hook thread starts; call before the program (or its packages) can start any."""
        if self.threads_before():
            self.in_play = True
        self._patch(threading.Thread, "_bootstrap", self._thread_bootstrap())
        for name in ("start_new_thread", "start_new"):
            original = getattr(_thread, name, None)
            if original is not None:
                self._patch(_thread, name, self._thread_starter(original))

    def threads_before(self) -> list[str]:
        """Names of the threads that were running before start(), main thread aside."""
        return [t.name for t in threading.enumerate() if t is not threading.main_thread()]

    def wants(self, name: str) -> bool:
        """--thread: any of its patterns finds the name (no --thread: every thread)."""
        return not self.thread_filter or any(p.search(name) for p in self.thread_filter)

    def label(self) -> ThreadLabel:
        """The current thread's name and id."""
        thread = self._local.thread
        ident = threading.get_ident()
        if thread is None and ident == threading.main_thread().ident:
            # Not threading.current_thread(): in a thread of _thread's it makes a
            # _DummyThread that the program would then see in threading.enumerate().
            thread = threading.main_thread()
        name = thread.name if thread is not None else _THREAD_MODULE_NAME
        return ThreadLabel(name, ident)

    # ---- the end of the program

    def program_done(self) -> None:
        """The program's main code has returned (or raised)."""
        with self._lock:
            self._program_done = True
        self._end_if_over()

    def _thread_done(self, counted: bool) -> None:
        if counted:
            with self._lock:
                self._live -= 1
        self._end_if_over()

    def _end_if_over(self) -> None:
        with self._lock:
            if self.ended or not self._program_done or self._live > 0:
                return
            self.ended = True
            self._unpatch()
        self.on_end()

    def end(self) -> None:
        """End now (the program never started, or failed to load)."""
        with self._lock:
            if self.ended:
                return
            self.ended = True
            self._unpatch()
        self.on_end()

    # ---- the wrappers

    def _run_attached(self, name: str, run: Callable[[], object], daemon: bool) -> None:
        detach: Detach | None = None
        with self._lock:
            if self.ended:
                counted = False
            else:
                counted = not daemon
                self._live += counted
                self.in_play = True
        try:
            if not self.ended and self.wants(name):
                detach = self.attach(name)
            run()
        finally:
            try:
                if detach is not None:
                    detach()
                self._thread_done(counted)
            except Exception:  # a daemon thread at interpreter exit: nothing left to undo
                pass

    def _thread_bootstrap(self) -> Callable[[threading.Thread], None]:
        original = threading.Thread._bootstrap  # type: ignore[attr-defined]
        hooks = self

        def _bootstrap(thread: threading.Thread) -> None:
            hooks._local.thread = thread
            hooks._run_attached(thread.name, lambda: original(thread), thread.daemon)

        return _bootstrap

    def _thread_starter(self, original: Callable[..., int]) -> Callable[..., int]:
        hooks = self

        def start_new_thread(function: Any, args: Any, kwargs: Any = None) -> int:
            # The checks start_new_thread makes, before the thread would run ours instead.
            if not callable(function):
                raise TypeError("first arg must be callable")
            if not isinstance(args, tuple):
                raise TypeError("2nd arg must be a tuple")
            if kwargs is not None and not isinstance(kwargs, dict):
                raise TypeError("optional 3rd arg must be a dictionary")
            return original(_InThread(hooks, function, args, kwargs or {}), ())

        start_new_thread.__doc__ = original.__doc__
        return start_new_thread

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        self._saved.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, replacement)

    def _unpatch(self) -> None:
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()


class _InThread:
    """What a thread of _thread.start_new_thread runs: the function, attached.

    Its repr is the function's, because _thread names it when the function
    raises ("Exception ignored in thread started by: ...").
    """

    def __init__(self, hooks: ThreadHooks, function: Any, args: tuple, kwargs: dict) -> None:
        self.hooks, self.function, self.args, self.kwargs = hooks, function, args, kwargs

    def __call__(self) -> None:
        try:
            # Not joined at exit, as a daemon thread is not.
            self.hooks._run_attached(
                _THREAD_MODULE_NAME, lambda: self.function(*self.args, **self.kwargs), daemon=True
            )
        except BaseException as error:
            # _thread prints the traceback of what the function raised: from the
            # function's own frame, as without pyframe.  A bare raise adds no frame.
            traceback = error.__traceback__
            while traceback is not None and traceback.tb_frame.f_code.co_filename == __file__:
                traceback = traceback.tb_next
            error.__traceback__ = traceback
            raise

    def __repr__(self) -> str:
        return repr(self.function)


def current_task_name() -> str | None:
    """The name of the asyncio task running now in this thread, or None.

    Only asked for frames that run in tasks (coroutines, async generators,
    resumptions), never for every frame: asyncio.current_task() is a C call,
    but a call into asyncio's state all the same.
    """
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        if asyncio._get_running_loop() is None:
            return None
        task = asyncio.current_task()
        return None if task is None else str(task.get_name())
    except Exception:  # a half-imported or replaced asyncio: no task to name
        return None
