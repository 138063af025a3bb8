"""The command line debugger: ``python -m pyframe``.

``locals`` reports (or, with ``-i``, stops at) the entry slots of every frame a
program starts; ``run`` runs a program under a callback of the user's own.

The program runs as ``python script.py`` or ``python -m module`` would run it.
The callback is installed only around the ``exec`` of the program's code, so
the first frame it sees is the program's ``<module>`` and no frame of this
module ever reaches it.
"""

from __future__ import annotations

import argparse
import builtins
import enum
import importlib
import importlib.machinery
import importlib.util
import io
import json
import os
import re
import reprlib
import site
import sys
import sysconfig
import types
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn, TextIO

import pyframe

PROG = "python -m pyframe"
PROGRAM_USAGE = "(script.py [args...] | -m module [args...])"
VALUE_WIDTH = 70  # longest value repr in a slot table; longer ones are cut with "..."
PROMPT = "(pyframe) "

if TYPE_CHECKING:
    from pyframe._cframe import Callback, CallbackResult  # the protocol, from the stub
else:
    Callback = Callable[[pyframe.Frame], object]


class UsageError(Exception):
    """What the user asked for cannot be done; reported as one line, no traceback."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


# ---- the program to run ------------------------------------------------------


@dataclass
class Program:
    """A program ready to run as the __main__ module."""

    code: types.CodeType
    namespace: dict[str, object]  # the globals of its __main__ module
    argv: list[str]
    path0: str | None  # sys.path[0] while it runs; None leaves sys.path as it is


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
            f"error while finding module {name!r}: {_describe_exception(error)}", status=1
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


def run_program(program: Program, callback: Callback) -> int:
    """Run the program with `callback` installed; return its exit status.

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
        _run_code(program.code, main_module.__dict__, callback)
    except SystemExit:
        raise
    except KeyboardInterrupt as error:
        report_uncaught(error)
        return 130  # what a shell reports for a program ended by SIGINT
    except BaseException as error:
        report_uncaught(error)
        return 1
    return 0


def _run_code(code: types.CodeType, namespace: dict[str, object], callback: Callback) -> None:
    # exec is C: the first frame the callback sees is the program's own.
    with pyframe.callback(callback):
        exec(code, namespace)


_LAUNCHER = _run_code.__code__  # `w` stops walking the stack here
_OWN_FILE = _LAUNCHER.co_filename


def report_uncaught(error: BaseException) -> None:
    """Print an exception the program did not catch, as Python would."""
    traceback = error.__traceback__
    # Python's traceback starts at the program's first frame: drop ours.
    while traceback is not None and traceback.tb_frame.f_code.co_filename == _OWN_FILE:
        traceback = traceback.tb_next
    error.__traceback__ = traceback
    sys.last_exc = sys.last_value = error
    sys.last_type = type(error)
    sys.last_traceback = traceback
    try:
        sys.excepthook(type(error), error, traceback)
    except Exception:
        sys.__excepthook__(type(error), error, traceback)


def _describe_exception(error: BaseException) -> str:
    """'Type: message (at file:line)', the innermost place it was raised."""
    text = f"{type(error).__name__}: {error}"
    traceback = error.__traceback__
    while traceback is not None and traceback.tb_next is not None:
        traceback = traceback.tb_next
    if traceback is not None:
        text += f" (at {traceback.tb_frame.f_code.co_filename}:{traceback.tb_lineno})"
    return text


# ---- which frames `locals` reports -------------------------------------------


def _dir_prefixes(paths: Sequence[str]) -> tuple[str, ...]:
    prefixes = set()
    for path in paths:
        for form in (os.path.abspath(path), os.path.realpath(path)):
            prefixes.add(os.path.join(form, ""))
    return tuple(sorted(prefixes))


def library_prefixes() -> tuple[str, ...]:
    """Directories of the standard library and of installed packages."""
    paths = sysconfig.get_paths()
    dirs = [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths]
    dirs.extend(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return _dir_prefixes(dirs)


_PYFRAME_PREFIXES = _dir_prefixes([os.path.dirname(os.path.abspath(pyframe.__file__))])


class FrameFilter:
    """Decides from a code object alone, so a "no" can be pyframe.SKIP for good."""

    def __init__(
        self,
        match: Sequence[re.Pattern[str]],
        exclude: Sequence[re.Pattern[str]],
        skip_library: bool,
    ) -> None:
        self.match = match
        self.exclude = exclude
        self.library = library_prefixes() if skip_library else ()

    def wants(self, code: types.CodeType) -> bool:
        filename = code.co_filename
        if filename.startswith("<"):
            # Frozen modules and code made by exec/eval (dataclass and namedtuple
            # methods...) have no file to read; they count as library code.
            if self.library:
                return False
        else:
            absolute = os.path.abspath(filename)
            if absolute.startswith(_PYFRAME_PREFIXES):
                return False  # pyframe's own frames are never the user's interest
            if absolute.startswith(self.library):
                return False
        qualname = code.co_qualname
        if self.match and not any(p.search(qualname) or p.search(filename) for p in self.match):
            return False
        return not any(p.search(qualname) or p.search(filename) for p in self.exclude)


class Decision(enum.Enum):
    RUN = "run"  # run the frame; stop at its function again next time
    SKIP = "skip"  # run it; never stop at its function again
    QUIT = "quit"  # run it and the rest of the program without stopping


ShowFrame = Callable[[pyframe.Frame, int], Decision]


class LocalsCallback:
    """The pyframe callback of `locals`: filters frames and shows the rest."""

    def __init__(
        self, frame_filter: FrameFilter, show: ShowFrame, limit: int | None, errors: TextIO
    ) -> None:
        self.frame_filter = frame_filter
        self.show = show
        self.limit = limit
        self.errors = errors
        self.shown = 0

    def __call__(self, frame: pyframe.Frame) -> CallbackResult:
        try:
            if not self.frame_filter.wants(frame.f_code):
                return pyframe.SKIP
            self.shown += 1
            decision = self.show(frame, self.shown)
        except Exception as error:
            # A failing report (closed stream, full disk) must not fail the program.
            self._stop()
            _write_quietly(self.errors, f"pyframe: report stopped: {_describe_exception(error)}\n")
            return None
        if decision is Decision.QUIT or (self.limit is not None and self.shown >= self.limit):
            # Uninstalling is cheaper than answering SKIP for every code object left.
            self._stop()
            return None
        return pyframe.SKIP if decision is Decision.SKIP else None

    def _stop(self) -> None:
        if pyframe.get_callback() is self:
            pyframe.set_callback(None)


def _write_quietly(stream: TextIO, text: str) -> None:
    try:
        stream.write(text)
        stream.flush()
    except Exception:  # closed, full, or None (python ... 2>&-): nowhere left to say it
        pass


def _flush_program_output() -> None:
    # The program's buffered output belongs before the report of the frame it leads to.
    try:
        sys.stdout.flush()
    except (AttributeError, OSError, ValueError):
        pass


# ---- describing a frame ----------------------------------------------------


class _ShortRepr(reprlib.Repr):
    """reprlib's bounded repr, which also survives a __repr__ that raises."""

    def repr_instance(self, x: object, level: int) -> str:
        text = safe_repr(x)
        return text if len(text) <= self.maxother else text[: self.maxother - 3] + "..."


_short_repr = _ShortRepr()
# Attributes, not keyword arguments: Repr() takes those from 3.12 on.
_short_repr.maxstring = _short_repr.maxother = VALUE_WIDTH
_short_repr.maxlevel = 3


def safe_repr(value: object) -> str:
    try:
        return repr(value)
    except Exception as error:
        try:
            reason = f"{type(error).__name__}: {error}"
        except Exception:
            reason = type(error).__name__
        return f"<repr failed: {reason}>"


def short_repr(value: object) -> str:
    """One line of at most VALUE_WIDTH characters; never raises."""
    try:
        text = _short_repr.repr(value)
    except Exception:
        text = safe_repr(value)
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 3] + "..."


@dataclass(frozen=True)
class Slot:
    index: int
    name: str
    kind: str
    value: str | None  # short repr; None when the slot is empty


def frame_slots(frame: pyframe.Frame) -> list[Slot]:
    return [
        Slot(index, name, kind, None if value is pyframe.UNBOUND else short_repr(value))
        for index, (name, kind, value) in enumerate(frame.localsplus)
    ]


# Taken before the program runs: its chdir() calls must not change how files are shown.
_START_DIR = os.path.join(os.getcwd(), "")


def display_path(filename: str) -> str:
    """Files under the directory pyframe started in are shown relative to it."""
    return filename[len(_START_DIR) :] if filename.startswith(_START_DIR) else filename


def format_frame(frame: pyframe.Frame, number: int) -> str:
    code = frame.f_code
    header = (
        f"[{number}] {code.co_qualname}  {display_path(code.co_filename)}:{code.co_firstlineno}"
    )
    if frame.is_generator:
        header += "  (generator)"
    slots = frame_slots(frame)
    if not slots:
        return f"{header}\n    (no slots)\n"
    index_width = len(str(slots[-1].index))
    name_width = max(4, *(len(slot.name) for slot in slots))
    kind_width = max(4, *(len(slot.kind) for slot in slots))
    lines = [
        header,
        f"    {'#':>{index_width}}  {'name':<{name_width}}  {'kind':<{kind_width}}  value",
    ]
    for slot in slots:
        value = "<unbound>" if slot.value is None else slot.value
        lines.append(
            f"    {slot.index:>{index_width}}  {slot.name:<{name_width}}  "
            f"{slot.kind:<{kind_width}}  {value}"
        )
    return "\n".join(lines) + "\n"


def frame_json(frame: pyframe.Frame, number: int) -> str:
    code = frame.f_code
    record = {
        "frame": number,
        "qualname": code.co_qualname,
        "file": code.co_filename,
        "line": code.co_firstlineno,
        "generator": frame.is_generator,
        "slots": [
            {"index": slot.index, "name": slot.name, "kind": slot.kind, "value": slot.value}
            for slot in frame_slots(frame)
        ],
    }
    # ASCII only: the line stays valid JSON whatever the stream's encoding does.
    return json.dumps(record) + "\n"


class Report:
    """`locals` without -i: one table (or JSON line) per frame."""

    def __init__(self, stream: TextIO, as_json: bool) -> None:
        self.stream = stream
        self.format = frame_json if as_json else format_frame

    def __call__(self, frame: pyframe.Frame, number: int) -> Decision:
        _flush_program_output()
        self.stream.write(self.format(frame, number))
        self.stream.flush()
        return Decision.RUN


# ---- `locals -i`: stop at each frame -----------------------------------------


class Console:
    """Where the interactive session reads commands and writes to the user."""

    def __init__(self, reader: TextIO, writer: TextIO, line_editing: bool, echo: bool) -> None:
        self.reader = reader
        self.writer = writer
        self.line_editing = line_editing
        self.echo = echo  # piped commands are echoed so the session reads as a transcript
        self.stdout = sys.stdout

    @classmethod
    def on_stdin(cls) -> Console:
        if sys.stdin is None:
            raise UsageError("-i reads commands from stdin, which is closed")
        editing = sys.stdin.isatty() and sys.stdout is not None and sys.stdout.isatty()
        if editing:
            try:
                import readline  # noqa: F401  (gives input() line editing and history)
            except ImportError:
                pass
        return cls(sys.stdin, sys.stderr, editing, echo=not sys.stdin.isatty())

    @classmethod
    def on_tty(cls) -> Console:
        try:
            reader = open("/dev/tty", encoding="utf-8", errors="replace")
            writer = open("/dev/tty", "w", encoding="utf-8", errors="backslashreplace")
        except OSError as error:
            raise UsageError(
                f"--tty: cannot open the terminal /dev/tty: {error.strerror}"
            ) from None
        return cls(reader, writer, line_editing=False, echo=False)

    def read(self, prompt: str) -> str | None:
        """The next command line, or None at end of input."""
        if self.line_editing:
            # input() edits lines only on the real stdin/stdout, which the
            # program may have replaced.
            saved = sys.stdin, sys.stdout
            sys.stdin, sys.stdout = self.reader, self.stdout
            try:
                return input(prompt)
            except EOFError:
                return None
            finally:
                sys.stdin, sys.stdout = saved
        self.write(prompt)
        try:
            line = self.reader.readline()
        except (OSError, ValueError):
            return None
        if not line:
            return None
        line = line.rstrip("\r\n")
        if self.echo:
            self.write(line + "\n")
        return line

    def write(self, text: str) -> None:
        self.writer.write(text)
        self.writer.flush()


SESSION_HELP = """\
At a frame about to run:
  p EXPR         print EXPR, evaluated with the frame's locals and globals
  set NAME EXPR  set argument or local NAME to EXPR before the frame runs
                 (also: set NAME = EXPR)
  t              show the slot table again
  w              show the calls that led to this frame, outermost first
  c              continue: run the frame, stop at the next matching one
  s              skip: run the frame, never stop at this function again
  q              quit: stop asking, let the program run to its end
  h              show this help
"""

_SET_SYNTAX = re.compile(r"(\w+)(?:\s*=(?!=)\s*|\s+)(\S.*)", re.DOTALL)


class Session:
    """`locals -i`: shows each frame, then runs the user's commands on it."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.commands: dict[str, Callable[[pyframe.Frame, int, str], Decision | None]] = {}
        for names, command in (
            (("p", "print"), self.do_print),
            (("set",), self.do_set),
            (("t", "table"), self.do_table),
            (("w", "where"), self.do_where),
            (("c", "cont", "continue"), lambda *_: Decision.RUN),
            (("s", "skip"), lambda *_: Decision.SKIP),
            (("q", "quit"), lambda *_: Decision.QUIT),
            (("h", "help", "?"), self.do_help),
        ):
            self.commands.update(dict.fromkeys(names, command))

    def __call__(self, frame: pyframe.Frame, number: int) -> Decision:
        _flush_program_output()
        self.console.write(format_frame(frame, number))
        while True:
            try:
                line = self.console.read(PROMPT)
            except KeyboardInterrupt:
                self.console.write("\n--KeyboardInterrupt-- (q lets the program finish)\n")
                continue
            if line is None:
                self.console.write("\n(end of input: the program runs on without stopping)\n")
                return Decision.QUIT
            words = line.split(maxsplit=1)
            if not words:
                continue
            command = self.commands.get(words[0])
            if command is None:
                self.error(f"unknown command {words[0]!r} (h lists the commands)")
                continue
            decision = command(frame, number, words[1].strip() if len(words) > 1 else "")
            if decision is not None:
                return decision

    def error(self, message: str) -> None:
        self.console.write(f"*** {message}\n")

    def evaluate(self, frame: pyframe.Frame, expression: str) -> tuple[bool, object]:
        """(True, value), or (False, None) after reporting why it failed."""
        try:
            code = compile(expression, "<pyframe>", "eval")
            # f_locals is rebuilt each time, so it shows what `set` changed.
            return True, eval(code, frame.f_globals, frame.f_locals)
        except BaseException as error:  # even SystemExit: `p sys.exit()` must not end the program
            self.error(f"{type(error).__name__}: {error}")
            return False, None

    def do_print(self, frame: pyframe.Frame, number: int, argument: str) -> None:
        if not argument:
            self.error("p needs an expression, e.g. p name")
            return
        ok, value = self.evaluate(frame, argument)
        if ok:
            self.console.write(safe_repr(value) + "\n")

    def do_set(self, frame: pyframe.Frame, number: int, argument: str) -> None:
        parsed = _SET_SYNTAX.fullmatch(argument)
        if parsed is None:
            self.error("set needs a name and an expression, e.g. set count 10")
            return
        name, expression = parsed.groups()
        ok, value = self.evaluate(frame, expression)
        if not ok:
            return
        kinds = {slot_name: kind for slot_name, kind, _ in frame.localsplus}
        try:
            frame.set_local(name, value)
        except NameError:
            slots = ", ".join(kinds) or "none"
            self.error(f"cannot set {name}: {frame.f_code.co_qualname} has no such slot ({slots})")
            return
        except ValueError as error:
            if kinds.get(name) == "free":
                reason = "it is a free variable, whose cell the enclosing function shares"
            elif kinds.get(name) == "hidden":
                reason = "it is a hidden comprehension variable"
            else:
                reason = str(error)
            self.error(f"cannot set {name}: {reason}")
            return
        self.console.write(f"{name} = {short_repr(value)}\n")

    def do_table(self, frame: pyframe.Frame, number: int, argument: str) -> None:
        self.console.write(format_frame(frame, number))

    def do_where(self, frame: pyframe.Frame, number: int, argument: str) -> None:
        callers = []
        caller = frame.f_back
        while caller is not None and caller.f_code is not _LAUNCHER:
            callers.append(caller)
            caller = caller.f_back
        lines = [
            f"  {c.f_code.co_qualname}  {display_path(c.f_code.co_filename)}:{c.f_lineno}"
            for c in reversed(callers)
        ]
        code = frame.f_code
        lines.append(
            f"> {code.co_qualname}  {display_path(code.co_filename)}:{code.co_firstlineno}"
            "  (about to run)"
        )
        self.console.write("\n".join(lines) + "\n")

    def do_help(self, frame: pyframe.Frame, number: int, argument: str) -> None:
        self.console.write(SESSION_HELP)


# ---- `run --callback` --------------------------------------------------------


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
            f"--callback: importing {name!r} failed: {_describe_exception(error)}"
        ) from None
    except Exception as error:
        raise UsageError(
            f"--callback: importing {name!r} failed: {_describe_exception(error)}"
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
            f"--callback: importing {path!r} failed: {_describe_exception(error)}"
        ) from None
    return module


# ---- the command line ----------------------------------------------------------


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    def _format_action_invocation(self, action: argparse.Action) -> str:
        # argparse shows "-m ..." for a REMAINDER option; say what goes there.
        if action.option_strings and action.nargs == argparse.REMAINDER:
            return f"{', '.join(action.option_strings)} {action.metavar}"
        return super()._format_action_invocation(action)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line that names the problem, instead of argparse's usage dump.
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _regex(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as error:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a valid regular expression: {error}"
        ) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _add_program_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "the program to run (everything after it is its own arguments)"
    )
    group.add_argument(
        "program",
        nargs=argparse.REMAINDER,
        metavar="script.py [args...]",
        help="a Python file (or a directory or zip file with __main__.py), "
        "run as `python script.py args...` would run it",
    )
    group.add_argument(
        "-m",
        dest="module",
        nargs=argparse.REMAINDER,
        metavar="module [args...]",
        help="a module, run as `python -m module args...` would run it",
    )


DESCRIPTION = """\
Run a Python program under pyframe, which sees every Python frame before it runs.
The program runs as `python script.py` or `python -m module` would: same
sys.argv, __main__ module, sys.path[0], output, exit status and tracebacks.
"""

EXAMPLES = """\
examples:
  python -m pyframe locals myscript.py --verbose
  python -m pyframe locals --match '^parse' --max 5 -m mypackage.tool
  python -m pyframe locals --json --output frames.jsonl myscript.py
  python -m pyframe locals -i myscript.py
  python -m pyframe run --callback mycallbacks:on_frame myscript.py
"""

LOCALS_DESCRIPTION = """\
For each Python function the program starts, print its qualified name, the
file:line where it is defined, and a table of its frame's slots (localsplus) as
the frame starts: index, name, kind (local, cell, local+cell, free, hidden) and
a short repr of the value (<unbound> where the slot is empty).

The report goes to stderr, so the program's stdout stays clean; use --output to
send it to a file.  Only the main thread's frames are seen.  By default, frames
of the standard library, of installed packages (site-packages), of <frozen> and
other <...> code, and of pyframe itself are skipped, at no cost after their
first call.

With -i, the program stops at each matching frame and reads commands (h lists
them): inspect with p, change an argument with set before the frame runs, see
the call stack with w, and c, s or q to go on.  Commands are read from stdin,
which the program shares: on a terminal you type both, and with piped input
the lines are taken in the order the two read them.  End of input lets the
program run to its end.  --tty reads commands from the terminal instead,
leaving stdin to the program (e.g. for piped data).
"""

RUN_DESCRIPTION = """\
Import FUNCTION from MODULE_OR_FILE and run the program with it installed as
the main thread's pyframe callback.  It is called with a pyframe.Frame for each
frame the program starts, and whatever it returns goes to pyframe unchanged.

MODULE_OR_FILE is a dotted module name, importable from the current directory
or sys.path, or a path to a .py file.  FUNCTION may be dotted (obj.method).
"""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pyframe {pyframe.__version__}")
    commands = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    commands.required = True

    locals_parser = commands.add_parser(
        "locals",
        help="show each function's arguments and locals as it starts (-i: stop and inspect)",
        description=LOCALS_DESCRIPTION,
        usage=f"{PROG} locals [options] {PROGRAM_USAGE}",
        formatter_class=_HelpFormatter,
    )
    locals_parser.set_defaults(handler=command_locals, parser=locals_parser)
    locals_parser.add_argument(
        "-i",
        "--interactive",
        action="store_true",
        help="stop at each matching frame and read commands (h lists them)",
    )
    locals_parser.add_argument(
        "--tty",
        action="store_true",
        help="with -i: read commands from /dev/tty, leaving stdin to the program",
    )
    locals_parser.add_argument(
        "--match",
        action="append",
        default=[],
        type=_regex,
        metavar="REGEX",
        help="only frames whose qualified name or file name matches REGEX "
        "(re.search; repeat for any of several)",
    )
    locals_parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        type=_regex,
        metavar="REGEX",
        help="leave out frames whose qualified name or file name matches REGEX (repeatable)",
    )
    locals_parser.add_argument(
        "--max",
        type=_positive_int,
        metavar="N",
        help="stop after N frames; the program then runs on at full speed",
    )
    library = locals_parser.add_mutually_exclusive_group()
    library.add_argument(
        "--skip-stdlib",
        dest="skip_library",
        action="store_true",
        default=True,
        help="skip frames of the standard library, site-packages, <frozen> and other "
        "<...> code (the default)",
    )
    library.add_argument(
        "--all",
        dest="skip_library",
        action="store_false",
        help="report those frames too (pyframe's own are never reported)",
    )
    locals_parser.add_argument(
        "--json",
        action="store_true",
        help='one JSON object per frame per line: {"frame", "qualname", "file", "line", '
        '"generator", "slots": [{"index", "name", "kind", "value"}]}, values as repr '
        "strings, null when unbound",
    )
    locals_parser.add_argument(
        "--output",
        metavar="FILE",
        help="write the report to FILE instead of stderr",
    )
    _add_program_arguments(locals_parser)

    run = commands.add_parser(
        "run",
        help="run a program with your own pyframe callback installed",
        description=RUN_DESCRIPTION,
        usage=f"{PROG} run --callback MODULE_OR_FILE:FUNCTION {PROGRAM_USAGE}",
        formatter_class=_HelpFormatter,
    )
    run.set_defaults(handler=command_run, parser=run)
    run.add_argument(
        "--callback",
        required=True,
        metavar="MODULE_OR_FILE:FUNCTION",
        help="the callback, e.g. mycallbacks:on_frame or ./callbacks.py:on_frame",
    )
    _add_program_arguments(run)
    return parser


def _program_target(args: argparse.Namespace) -> tuple[str | None, str | None, list[str]]:
    """(script, module, program args) from the command line."""
    if args.module is not None:
        if not args.module:
            raise UsageError("-m needs a module name: -m module [args...]")
        return None, args.module[0], args.module[1:]
    program = list(args.program)
    if program[:1] == ["--"]:
        program = program[1:]
    if not program:
        raise UsageError(f"no program to run: expected {PROGRAM_USAGE}")
    return program[0], None, program[1:]


def command_locals(args: argparse.Namespace) -> int:
    if args.interactive and (args.json or args.output):
        raise UsageError("-i talks to the terminal: it does not go with --json or --output")
    if args.tty and not args.interactive:
        raise UsageError("--tty is for -i (it reads the interactive commands from /dev/tty)")
    program = load_program(*_program_target(args))
    frame_filter = FrameFilter(args.match, args.exclude, args.skip_library)
    if args.interactive:
        console = Console.on_tty() if args.tty else Console.on_stdin()
        show: ShowFrame = Session(console)
        return run_program(program, LocalsCallback(frame_filter, show, args.max, console.writer))
    if args.output is None:
        report = Report(sys.stderr, args.json)
        return run_program(program, LocalsCallback(frame_filter, report, args.max, sys.stderr))
    try:
        # Line-buffered, so the report survives a program that ends with os._exit().
        stream = open(args.output, "w", encoding="utf-8", errors="backslashreplace", buffering=1)
    except OSError as error:
        raise UsageError(f"--output: cannot write {args.output!r}: {error.strerror}") from None
    try:
        report = Report(stream, args.json)
        return run_program(program, LocalsCallback(frame_filter, report, args.max, sys.stderr))
    finally:
        try:
            stream.close()
        except OSError as error:  # the program's exit status matters more
            _write_quietly(sys.stderr, f"pyframe: --output {args.output!r}: {error}\n")


def command_run(args: argparse.Namespace) -> int:
    # Before the program's directory replaces the current one as sys.path[0].
    callback = load_callback(args.callback)
    program = load_program(*_program_target(args))
    return run_program(program, callback)


def main(argv: Sequence[str] | None = None) -> int:
    """python -m pyframe; returns the exit status."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # Unknown options before the program (after it, they are the program's own).
        args.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return int(args.handler(args))
    except UsageError as error:
        print(f"{args.parser.prog}: error: {error}", file=sys.stderr)
        return error.status
    except SyntaxError as error:
        # The program (or its module) does not compile: Python reports that without a traceback.
        report_uncaught(error)
        return 1
