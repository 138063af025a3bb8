"""`locals -i`: stop at each frame and read the user's commands.

Console is where commands are read and the session is written (stdin and
stderr, or the terminal with --tty); Session shows each frame and runs the
commands on it until one lets the frame run.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import TextIO

import pyframe
from pyframe.cli.errors import UsageError
from pyframe.cli.filters import Decision
from pyframe.cli.program import LAUNCHER
from pyframe.cli.reports import (
    display_path,
    flush_program_output,
    format_frame,
    safe_repr,
    short_repr,
)

PROMPT = "(pyframe) "


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
        flush_program_output()
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
        while caller is not None and caller.f_code is not LAUNCHER:
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
