"""The command line: `pyframe locals|run ... PROGRAM` (or `python -m pyframe ...`).

build_parser() holds every option and help text; command_locals() and
command_run() put a command's parts together (the program, the frame filter,
the report or the interactive session, the user's callback); main() turns
UsageError into one line on stderr and an exit status.  The two ways in,
`python -m pyframe` (pyframe/__main__.py) and the `pyframe` console script
(console_script()), differ only in the name usage and errors give them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from typing import IO, NoReturn, TextIO

import pyframe
from pyframe.cli.conditions import Condition, compile_condition
from pyframe.cli.errors import UsageError, write_quietly
from pyframe.cli.filters import FrameFilter
from pyframe.cli.locals_callback import LocalsCallback, ShowFrame
from pyframe.cli.program import load_program, report_uncaught, run_program
from pyframe.cli.reports import Report
from pyframe.cli.user_callback import EveryThread, load_callback

PROG = "pyframe"  # the console script; python -m pyframe passes its own name
PROGRAM_USAGE = "(script.py [args...] | -m module [args...])"


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


def _condition(text: str) -> str:
    try:
        compile_condition(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--where ")) from None
    return text


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
  {prog} locals myscript.py --verbose
  {prog} locals --match '^parse' --max 5 -m mypackage.tool
  {prog} locals --match handle_user --where 'n > 30' server.py
  {prog} locals --thread '^Worker' -i server.py
  {prog} locals --json --output frames.jsonl myscript.py
  {prog} locals -i myscript.py
  {prog} run --callback mycallbacks:on_frame myscript.py
"""

LOCALS_DESCRIPTION = """\
For each Python function the program starts, print its qualified name, the
file:line where it is defined, and a table of its frame's slots (localsplus) as
the frame starts: index, name, kind (local, cell, local+cell, free, hidden) and
a short repr of the value (<unbound> where the slot is empty).

The report goes to stderr, so the program's stdout stays clean; use --output to
send it to a file.  By default, frames of the standard library, of installed
packages (site-packages), of <frozen> and other <...> code, and of pyframe
itself are skipped, at no cost after their first call.

Every thread the program starts is seen (threading, concurrent.futures pools,
_thread); once it has started one, each frame says its thread's name and id.
A coroutine is reported once, when it starts running (CPython 3.12+; when it
is created on 3.11), with the name of its asyncio task; generators when they
are created, and with --resumptions at every later run too.

With -i, the program stops at each matching frame and reads commands (h lists
them): inspect with p, change an argument with set before the frame runs, see
the call stack with w, and c, s or q to go on.  A stop holds only its own
thread; stops in several threads wait their turn, and the prompt names the
thread.  Commands are read from stdin, which the program shares: on a
terminal you type both, and with piped input the lines are taken in the order
the two read them.  End of input lets the program run to its end.  --tty
reads commands from the terminal instead, leaving stdin to the program (e.g.
for piped data).
"""

RUN_DESCRIPTION = """\
Import FUNCTION from MODULE_OR_FILE and run the program with it installed as
the pyframe callback of the main thread and of every thread the program
starts.  It is called with a pyframe.Frame for each frame the program starts,
and whatever it returns goes to pyframe unchanged.

MODULE_OR_FILE is a dotted module name, importable from the current directory
or sys.path, or a path to a .py file.  FUNCTION may be dotted (obj.method).
"""


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog,
        description=DESCRIPTION,
        epilog=EXAMPLES.format(prog=prog),
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pyframe {pyframe.__version__}")
    commands = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    commands.required = True

    locals_parser = commands.add_parser(
        "locals",
        help="show each function's arguments and locals as it starts (-i: stop and inspect)",
        description=LOCALS_DESCRIPTION,
        usage=f"{prog} locals [options] {PROGRAM_USAGE}",
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
        help="only frames whose qualified name or file name (or a coroutine's task "
        "name) matches REGEX (re.search; repeat for any of several)",
    )
    locals_parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        type=_regex,
        metavar="REGEX",
        help="leave out frames whose qualified name or file name (or a coroutine's task "
        "name) matches REGEX (repeatable)",
    )
    locals_parser.add_argument(
        "--where",
        type=_condition,
        metavar="EXPR",
        help="only frames where the Python expression EXPR is true, evaluated over the "
        "frame's entry locals, then its globals and builtins (e.g. 'n > 30'); a frame "
        "where it raises is left out, with a warning once per function",
    )
    locals_parser.add_argument(
        "--thread",
        action="append",
        default=[],
        type=_regex,
        metavar="REGEX",
        help="only threads whose name (as the thread starts; the main thread is "
        "MainThread) matches REGEX (repeatable); the others run without pyframe",
    )
    locals_parser.add_argument(
        "--resumptions",
        action="store_true",
        help="also report generators, coroutines and async generators each time they "
        "resume (on CPython 3.11 this traces every call: about 8x slower)",
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
        '"generator", "event" (call, start, resume), "task", "thread", "thread_id", '
        '"slots": [{"index", "name", "kind", "value"}]}, values as repr strings, null '
        "when unbound",
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
        usage=f"{prog} run --callback MODULE_OR_FILE:FUNCTION {PROGRAM_USAGE}",
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
    show: ShowFrame
    stream: TextIO | None = None
    if args.interactive:
        # Imported only for -i: before 3.14 cmd imports string, whose frames --all would then miss.
        from pyframe.cli.console import Session

        session = Session.on_tty() if args.tty else Session.on_stdin()
        show, errors = session, session.stdout
    elif args.output is None:
        show, errors = Report(sys.stderr, args.json), sys.stderr
    else:
        try:
            # Line-buffered, so the report survives a program that ends with os._exit().
            stream = open(
                args.output, "w", encoding="utf-8", errors="backslashreplace", buffering=1
            )
        except OSError as error:
            raise UsageError(f"--output: cannot write {args.output!r}: {error.strerror}") from None
        show, errors = Report(stream, args.json), sys.stderr
    condition = Condition(args.where, errors) if args.where is not None else None

    def end() -> None:
        # The program is over: its main code and every non-daemon thread it started.
        if SPECIALIZATION_MODE:
            pyframe.set_specialization(False)
        if stream is not None:
            _close_output(stream, args.output)

    callback = LocalsCallback(
        FrameFilter(args.match, args.exclude, args.skip_library),
        condition,
        show,
        args.max,
        errors,
        threads=args.thread,
        resumptions=args.resumptions,
        on_end=end,
    )
    # Before the program is loaded: `-m package.module` imports the package, which may
    # start threads.  The specialization mode makes what the filter skips cost nothing.
    callback.start()
    if SPECIALIZATION_MODE:
        pyframe.set_specialization(True)
    return _load_and_run(args, callback, errors)


def _load_and_run(
    args: argparse.Namespace, callback: LocalsCallback | EveryThread, errors: IO[str]
) -> int:
    """Load the program and run it with `callback` (started: its threads hooked)."""
    try:
        program = load_program(*_program_target(args))
    except BaseException:
        callback.end_now()
        raise
    names = ", ".join(callback.threads.threads_before())
    if names:
        note = f"pyframe: note: threads started before pyframe are not seen: {names}\n"
        write_quietly(errors, note)
    return run_program(program, callback.main_thread(), callback.program_done)


# The specialization mode (docs/specialization.md) needs CPython 3.12+.
SPECIALIZATION_MODE = sys.version_info >= (3, 12)


def _close_output(stream: TextIO, name: str) -> None:
    try:
        stream.close()
    except OSError as error:  # the program's exit status matters more
        write_quietly(sys.stderr, f"pyframe: --output {name!r}: {error}\n")


def command_run(args: argparse.Namespace) -> int:
    # Before the program's directory replaces the current one as sys.path[0].
    callback = EveryThread(load_callback(args.callback))
    # Before the program is loaded, as for `locals`: its packages may start threads.
    callback.start()
    return _load_and_run(args, callback, sys.stderr)


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """The command line, named `prog` in usage and errors; returns the exit status."""
    parser = build_parser(prog)
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


def console_script() -> int:
    """The `pyframe` command: `python -m pyframe` under its own name.

    `python -m` puts the current directory first on sys.path, a console script
    its own bin/ directory: put the current directory there, so that `-m
    module` and `run --callback module:function` find the same modules either
    way (with -P or PYTHONSAFEPATH neither adds anything).
    """
    if not sys.flags.safe_path and sys.path:
        sys.path[0] = os.getcwd()
    return main()
