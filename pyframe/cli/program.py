"""Running the program as `python script.py` or `python -m module` would.

load_program() finds and compiles it and sets out its __main__ namespace,
sys.argv and sys.path[0]; run_program() runs it with the callback installed
around the exec of its code alone, and turns what it raises into the exit
status and traceback Python would give.
"""

from __future__ import annotations

import builtins
import importlib.machinery
import importlib.util
import io
import os
import sys
import types
import zipfile
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from pyframe.cli.errors import UsageError, describe_exception


@dataclass
class Program:
    """A program ready to run as the __main__ module."""

    code: types.CodeType
    namespace: dict[str, object]  # the globals of its __main__ module
    argv: list[str]
    path0: str | None  # sys.path[0] while it runs; None leaves sys.path as it is


# Not runpy.run_path/run_module: the callback would see their own frames around the exec.
def load_program(script: str | None, module: str | None, args: list[str]) -> Program:
    """Find and compile the program; SyntaxError is the program's own error."""
    if module is not None:
        return _module_program(module, args)
    assert script is not None
    return _script_program(script, args)


def _script_program(path: str, args: list[str]) -> Program:
    if not os.path.exists(path):
        raise UsageError(
            f"cannot run {path!r}: no such file "
            f"(expected script.py [args...] or -m module [args...])"
        )
    if os.path.isdir(path) or zipfile.is_zipfile(path):
        # As `python DIR` and `python ZIP` do: run its __main__, with it first on sys.path.
        spec = importlib.machinery.PathFinder.find_spec("__main__", [path])
        if spec is None:
            raise UsageError(f"cannot run {path!r}: it has no __main__.py")
        return _spec_program(spec, path, [path, *args], path0=path)
    filename = os.path.abspath(path)
    try:
        with io.open_code(filename) as file:
            source = file.read()
    except OSError as error:
        raise UsageError(f"cannot read {path!r}: {error.strerror or error}") from None
    namespace: dict[str, object] = {
        "__name__": "__main__",
        "__doc__": None,
        "__package__": None,
        "__loader__": importlib.machinery.SourceFileLoader("__main__", filename),
        "__spec__": None,
        "__file__": filename,
        "__cached__": None,
        "__builtins__": builtins,
    }
    code = compile(source, filename, "exec", dont_inherit=True)
    # Python puts the script's real directory first on sys.path.
    return Program(code, namespace, [path, *args], os.path.dirname(os.path.realpath(filename)))


def _module_program(name: str, args: list[str]) -> Program:
    hint = "-m expects a module importable from the current directory or sys.path"
    spec = _find_spec(name, hint)
    if spec is not None and spec.submodule_search_locations is not None:
        # A package runs as its __main__ submodule.
        spec = _find_spec(f"{name}.__main__", hint)
        if spec is None:
            raise UsageError(f"cannot run {name!r}: it is a package with no __main__ module")
    if spec is None:
        raise UsageError(f"no module named {name!r} ({hint})")
    origin = spec.origin if spec.has_location and spec.origin else name
    return _spec_program(spec, name, [origin, *args], path0=None)


def _find_spec(name: str, hint: str) -> importlib.machinery.ModuleSpec | None:
    try:
        # Imports the parent packages first, as `python -m` does.
        return importlib.util.find_spec(name)
    except ModuleNotFoundError as error:
        raise UsageError(f"no module named {error.name or name!r} ({hint})") from None
    except (ImportError, ValueError) as error:
        raise UsageError(f"cannot find module {name!r}: {error} ({hint})") from None
    except Exception as error:  # a parent package's own code failed
        raise UsageError(
            f"error while finding module {name!r}: {describe_exception(error)}", status=1
        ) from None


def _spec_program(
    spec: importlib.machinery.ModuleSpec, label: str, argv: list[str], path0: str | None
) -> Program:
    get_code = getattr(spec.loader, "get_code", None)
    code = get_code(spec.name) if get_code is not None else None
    if code is None:
        raise UsageError(f"cannot run {label!r}: it has no Python code to run")
    namespace: dict[str, object] = {
        "__name__": "__main__",
        "__doc__": None,
        "__package__": spec.parent,
        "__loader__": spec.loader,
        "__spec__": spec,
        "__builtins__": builtins,
    }
    if spec.has_location:
        namespace["__file__"] = spec.origin
        namespace["__cached__"] = spec.cached
    return Program(code, namespace, argv, path0)


def run_program(
    program: Program,
    installed: AbstractContextManager[object],
    done: Callable[[], None] | None = None,
) -> int:
    """Run the program inside `installed` (pyframe.callback(...), say); return
    its exit status.  `done` is called once the program's code is over,
    however it ended.

    SystemExit passes through untouched, so Python itself turns it into the
    exit status (and prints a non-integer code) as it would without pyframe.
    """
    main_module = types.ModuleType("__main__")
    main_module.__dict__.update(program.namespace)
    # Left in place afterwards: atexit handlers and pickling may still look it up.
    sys.modules["__main__"] = main_module
    sys.argv = program.argv
    if program.path0 is not None and not sys.flags.safe_path:
        sys.path[:1] = [program.path0]
    try:
        _run_code(program.code, main_module.__dict__, installed)
    except SystemExit:
        raise
    except KeyboardInterrupt as error:
        report_uncaught(error)
        return 130  # what a shell reports for a program ended by SIGINT
    except BaseException as error:
        report_uncaught(error)
        return 1
    finally:
        if done is not None:
            done()
    return 0


def _run_code(
    code: types.CodeType, namespace: dict[str, object], installed: AbstractContextManager[object]
) -> None:
    # exec is C: the first frame the callback sees is the program's own.
    with installed:
        exec(code, namespace)


LAUNCHER = _run_code.__code__  # `w` stops walking the stack here
# The command line's own frames, which a traceback of the program leaves out.
CLI_DIR = os.path.dirname(LAUNCHER.co_filename)


def report_uncaught(error: BaseException) -> None:
    """Print an exception the program did not catch, as Python would."""
    traceback = error.__traceback__
    # Python's traceback starts at the program's first frame: drop ours.
    while (
        traceback is not None and os.path.dirname(traceback.tb_frame.f_code.co_filename) == CLI_DIR
    ):
        traceback = traceback.tb_next
    error.__traceback__ = traceback
    sys.last_exc = sys.last_value = error
    sys.last_type = type(error)
    sys.last_traceback = traceback
    try:
        sys.excepthook(type(error), error, traceback)
    except Exception:
        sys.__excepthook__(type(error), error, traceback)
