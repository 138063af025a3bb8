"""The callback of `run --callback MODULE_OR_FILE:FUNCTION`: loading it, and
installing it in every thread.

MODULE_OR_FILE is imported as a module, or loaded from its .py file under a
private module name; FUNCTION may be dotted.  Every way it can fail is a
UsageError that names what was passed and what was expected.

EveryThread installs it in the main thread around the program's code, and in
each thread the program starts (threads.py), as `locals` does its own.  The
main thread's callback is the user's function itself; another thread's calls
it through a function that, once the program is over, removes itself at the
thread's next frame (a daemon thread outliving the program is left with no
callback, as under `locals`).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import pyframe
from pyframe.cli.errors import UsageError, describe_exception
from pyframe.cli.reports import short_repr
from pyframe.cli.threads import Detach, ThreadHooks

if TYPE_CHECKING:
    from pyframe._cframe import Callback, CallbackResult  # the protocols, from the stub


def load_callback(spec: str) -> Callback:
    """The callable named by MODULE_OR_FILE:FUNCTION."""
    source, colon, attribute = spec.rpartition(":")
    if not colon or not source or not attribute:
        raise UsageError(
            f"--callback {spec!r} is not MODULE_OR_FILE:FUNCTION "
            f"(e.g. mycallbacks:on_frame or ./callbacks.py:on_frame)"
        )
    is_path = source.endswith(".py") or os.sep in source or bool(os.altsep and os.altsep in source)
    module = _import_file(source) if is_path else _import_module(source)
    target: object = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise UsageError(
                f"--callback {spec!r}: {source!r} has no attribute {attribute!r}"
            ) from None
    if not callable(target):
        raise UsageError(
            f"--callback {spec!r} is not callable: it is {short_repr(target)} "
            f"({type(target).__name__}); expected a function taking a pyframe.Frame"
        )
    return target


def _import_module(name: str) -> types.ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name is not None and (name == error.name or name.startswith(error.name + ".")):
            raise UsageError(
                f"--callback: no module named {error.name!r} "
                f"(expected a module importable from the current directory or sys.path, "
                f"or a path to a .py file)"
            ) from None
        raise UsageError(
            f"--callback: importing {name!r} failed: {describe_exception(error)}"
        ) from None
    except Exception as error:
        raise UsageError(
            f"--callback: importing {name!r} failed: {describe_exception(error)}"
        ) from None


# Private: a callback file named like a real module (json.py) must not shadow it.
_CALLBACK_MODULE = "__pyframe_callback__"


def _import_file(path: str) -> types.ModuleType:
    if not os.path.isfile(path):
        raise UsageError(f"--callback: no such file {path!r} (expected a .py file)")
    spec = importlib.util.spec_from_file_location(_CALLBACK_MODULE, os.path.abspath(path))
    if spec is None or spec.loader is None:
        raise UsageError(f"--callback: cannot load {path!r} as Python source")
    module = importlib.util.module_from_spec(spec)
    # Registered, as imports are, so dataclasses and pickle inside it work.
    sys.modules[_CALLBACK_MODULE] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[_CALLBACK_MODULE]
        raise UsageError(
            f"--callback: importing {path!r} failed: {describe_exception(error)}"
        ) from None
    return module


class EveryThread:
    """`callback` in the main thread and in every thread the program starts."""

    def __init__(self, callback: Callback) -> None:
        self.callback = callback
        self.threads = ThreadHooks((), self._attach, lambda: None)

    def start(self) -> None:
        """Hook the threads the program will start (before it, or its packages, can)."""
        self.threads.start()

    def main_thread(self) -> AbstractContextManager[object]:
        """Installed in the main thread around the program's code: pyframe's own
        context manager, so that leaving it runs no Python frame the callback sees."""
        return pyframe.callback(self.callback)

    def program_done(self) -> None:
        """The program's main code is over: the end comes when its threads are."""
        self.threads.program_done()

    def end_now(self) -> None:
        """The program never ran (it failed to load)."""
        self.threads.end()

    def _attach(self, name: str) -> Detach:
        callback, threads = self.callback, self.threads

        def detach() -> None:
            if pyframe.get_callback() is in_thread:
                pyframe.set_callback(None)

        def in_thread(frame: pyframe.Frame) -> CallbackResult:
            if threads.ended:
                detach()
                return None
            return callback(frame)

        pyframe.set_callback(in_thread)
        return detach
