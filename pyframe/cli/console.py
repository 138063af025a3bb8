"""`locals -i`: stop at each frame and run the user's commands on it.

Session is a cmd.Cmd, as pdb is: Cmd writes the prompt, reads a line and
dispatches `p name` to do_p("name").  Commands are read from stdin and the
session is written to stderr, or both go to the terminal with --tty; where
stdin and stdout are a terminal, input() edits the lines (readline).

A stop holds only the thread it is in; stops in several threads come here
one at a time (LocalsCallback takes turns), and once the program has started
threads, the prompt names the thread of the stop: `(pyframe: Thread-2) `.
"""

from __future__ import annotations

import cmd
import os
import re
import sys
from typing import TextIO, cast

from pyframe.cli.errors import UsageError
from pyframe.cli.filters import Decision
from pyframe.cli.program import CLI_DIR, LAUNCHER
from pyframe.cli.reports import (
    display_path,
    flush_program_output,
    format_frame,
    safe_repr,
    short_repr,
)
from pyframe.cli.seen import FrameView, Seen

PROMPT = "(pyframe) "

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


class _CommandLines:
    """Cmd's stdin where lines are not edited (piped commands, or --tty).

    Piped commands are echoed, so the session reads as a transcript; a stream
    the program has closed reads as the end of input.
    """

    def __init__(self, reader: TextIO, writer: TextIO, echo: bool) -> None:
        self.reader = reader
        self.writer = writer
        self.echo = echo

    def readline(self) -> str:
        try:
            line = self.reader.readline()
        except (OSError, ValueError):
            return ""
        if line and self.echo:
            self.writer.write(line.rstrip("\r\n") + "\n")
            self.writer.flush()
        return line


class Session(cmd.Cmd):
    """Shows each frame `locals -i` stops at, then runs commands until one lets it run."""

    prompt = PROMPT
    seen: Seen  # the stop, while the session runs
    frame: FrameView  # its frame

    def __init__(self, reader: TextIO, writer: TextIO, line_editing: bool, echo: bool) -> None:
        commands = _CommandLines(reader, writer, echo)
        # Cmd calls nothing but readline() on stdin.  No completekey: Cmd leaves tab alone.
        super().__init__(completekey="", stdin=cast(TextIO, commands), stdout=writer)
        self.use_rawinput = line_editing  # input() is what edits lines
        self.terminal = reader, sys.stdout  # sys.stdin and sys.stdout while input() reads
        self.program_streams: tuple[TextIO, TextIO] | None = None  # theirs, meanwhile
        self.reading = False
        self.decision = Decision.RUN

    @classmethod
    def on_stdin(cls) -> Session:
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
    def on_tty(cls) -> Session:
        try:
            reader = open("/dev/tty", encoding="utf-8", errors="replace")
            writer = open("/dev/tty", "w", encoding="utf-8", errors="backslashreplace")
        except OSError as error:
            raise UsageError(
                f"--tty: cannot open the terminal /dev/tty: {error.strerror}"
            ) from None
        return cls(reader, writer, line_editing=False, echo=False)

    def __call__(self, seen: Seen) -> Decision:
        flush_program_output()
        self.seen, self.frame = seen, seen.frame
        self.prompt = f"(pyframe: {seen.thread_name}) " if seen.show_thread else PROMPT
        try:
            self.write(format_frame(seen))
            while True:
                try:
                    self.cmdloop()
                    return self.decision
                except KeyboardInterrupt:
                    if not self.reading:
                        raise  # raised by a command, not while reading: the program gets it
                    self.stop_reading()
                    self.write("\n--KeyboardInterrupt-- (q lets the program finish)\n")
        finally:
            self.stop_reading()
            del self.frame, self.seen

    # ---- Cmd's hooks: around reading each line, and taking it apart

    def preloop(self) -> None:
        self.start_reading()

    def precmd(self, line: str) -> str:
        self.stop_reading()
        return line

    def postcmd(self, stop: bool, line: str) -> bool:
        if not stop:
            self.start_reading()
        return stop

    def start_reading(self) -> None:
        self.reading = True
        if self.use_rawinput:
            # input() edits lines only on sys.stdin and sys.stdout, which the
            # program may have replaced; its commands see the program's own.
            self.program_streams = sys.stdin, sys.stdout
            sys.stdin, sys.stdout = self.terminal

    def stop_reading(self) -> None:
        self.reading = False
        if self.program_streams is not None:
            sys.stdin, sys.stdout = self.program_streams
            self.program_streams = None

    def parseline(self, line: str) -> tuple[str | None, str | None, str]:
        # The command is the whole first word (`p(x)` is no command, not p), and `?` is h.
        words = line.split(maxsplit=1)
        if not words:
            return None, None, ""
        command = "help" if words[0] == "?" else words[0]
        return command, words[1].strip() if len(words) > 1 else "", line.strip()

    def emptyline(self) -> bool:
        return False  # Cmd would repeat the last command

    def default(self, line: str) -> None:
        self.error(f"unknown command {line.split()[0]!r} (h lists the commands)")

    # ---- the commands; True ends the session with self.decision

    def do_EOF(self, arg: str) -> bool:
        self.write("\n(end of input: the program runs on without stopping)\n")
        return self.decide(Decision.QUIT)

    def do_print(self, arg: str) -> bool:
        if not arg:
            self.error("p needs an expression, e.g. p name")
            return False
        ok, value = self.evaluate(arg)
        if ok:
            self.write(safe_repr(value) + "\n")
        return False

    def do_set(self, arg: str) -> bool:
        parsed = _SET_SYNTAX.fullmatch(arg)
        if parsed is None:
            self.error("set needs a name and an expression, e.g. set count 10")
            return False
        name, expression = parsed.groups()
        ok, value = self.evaluate(expression)
        if not ok:
            return False
        frame = self.frame
        kinds = {slot_name: kind for slot_name, kind, _ in frame.localsplus}
        try:
            frame.set_local(name, value)
        except NameError:
            slots = ", ".join(kinds) or "none"
            self.error(f"cannot set {name}: {frame.f_code.co_qualname} has no such slot ({slots})")
            return False
        except ValueError as error:
            if kinds.get(name) == "free":
                reason = "it is a free variable, whose cell the enclosing function shares"
            elif kinds.get(name) == "hidden":
                reason = "it is a hidden comprehension variable"
            else:
                reason = str(error)
            self.error(f"cannot set {name}: {reason}")
            return False
        self.write(f"{name} = {short_repr(value)}\n")
        return False

    def do_table(self, arg: str) -> bool:
        self.write(format_frame(self.seen))
        return False

    def do_where(self, arg: str) -> bool:
        callers = []
        caller = self.frame.f_back
        while caller is not None and caller.f_code is not LAUNCHER:
            # pyframe's own frames (a thread's start, sys.monitoring's handler) are left out.
            if os.path.dirname(caller.f_code.co_filename) != CLI_DIR:
                callers.append(caller)
            caller = caller.f_back
        lines = [
            f"  {c.f_code.co_qualname}  {display_path(c.f_code.co_filename)}:{c.f_lineno}"
            for c in reversed(callers)
        ]
        code = self.frame.f_code
        if self.seen.event == "call":
            line, state = code.co_firstlineno, "about to run"
        else:  # a frame that has run before stands at the line it goes on from
            line = self.frame.f_lineno or code.co_firstlineno
            state = "starting" if self.seen.event == "start" else "resuming"
        lines.append(f"> {code.co_qualname}  {display_path(code.co_filename)}:{line}  ({state})")
        self.write("\n".join(lines) + "\n")
        return False

    def do_continue(self, arg: str) -> bool:
        return self.decide(Decision.RUN)

    def do_skip(self, arg: str) -> bool:
        return self.decide(Decision.SKIP)

    def do_quit(self, arg: str) -> bool:
        return self.decide(Decision.QUIT)

    def do_help(self, arg: str) -> bool:
        self.write(SESSION_HELP)  # one table, not Cmd's list of command names
        return False

    do_p = do_print
    do_t = do_table
    do_w = do_where
    do_c = do_cont = do_continue
    do_s = do_skip
    do_q = do_quit
    do_h = do_help

    # ---- helpers of the commands

    def decide(self, decision: Decision) -> bool:
        self.decision = decision
        return True

    def evaluate(self, expression: str) -> tuple[bool, object]:
        """(True, value), or (False, None) after reporting why it failed."""
        try:
            code = compile(expression, "<pyframe>", "eval")
            # f_locals is rebuilt each time, so it shows what `set` changed.
            return True, eval(code, self.frame.f_globals, self.frame.f_locals)
        except BaseException as error:  # even SystemExit: `p sys.exit()` must not end the program
            self.error(f"{type(error).__name__}: {error}")
            return False, None

    def error(self, message: str) -> None:
        self.write(f"*** {message}\n")

    def write(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()
