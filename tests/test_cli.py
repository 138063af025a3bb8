"""The command line, driven as a user would: subprocesses, pipes and a pseudo-terminal.

Every test runs twice: through `python -m pyframe` and through the `pyframe`
command (the console script), which must behave the same but for the name
they give themselves in usage and errors.  The sample programs are in
tests/cli_samples/; each test runs them with and, where it matters, without
pyframe, and compares what pyframe wrote (its report, its errors, the
program's traceback), never the whole of a process's stderr: an interpreter
may print more (a distribution's interpreter did, with an object's address
that differs between runs).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import sysconfig
import termios
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

import pyframe

SAMPLES = Path(__file__).parent / "cli_samples"
TIMEOUT = 60  # seconds for a whole subprocess; a hang fails instead of blocking
EXPECT_TIMEOUT = 20  # seconds to wait for one piece of pseudo-terminal output


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONDONTWRITEBYTECODE="1", TERM="dumb", PYTHON_COLORS="0", NO_COLOR="1")
    env.pop("PYTHONSTARTUP", None)
    return env


def _run(command: Sequence[str], cwd: Path, stdin: str | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=cwd,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=_env(),
    )


def python(
    *args: str, cwd: Path = SAMPLES, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, *args], cwd, stdin)


@dataclass(frozen=True)
class EntryPoint:
    """One way to start the command line."""

    command: tuple[str, ...]
    prog: str  # the name it gives itself in usage and errors


def _console_script() -> str:
    """The `pyframe` command installed beside this interpreter."""
    script = Path(sysconfig.get_path("scripts")) / "pyframe"
    found = str(script) if script.exists() else shutil.which("pyframe")
    if found is None:
        pytest.fail(f"the `pyframe` command is not installed (not in {script.parent} or on PATH)")
    return found


MODULE_ENTRY = EntryPoint((sys.executable, "-m", "pyframe"), "python -m pyframe")
CLI = MODULE_ENTRY  # set for each test by the entry_point fixture


@pytest.fixture(autouse=True, params=["python -m pyframe", "pyframe"])
def entry_point(request: pytest.FixtureRequest) -> Iterator[EntryPoint]:
    """Runs each test through `python -m pyframe` and through the `pyframe` command."""
    global CLI
    if request.param == "pyframe":
        CLI = EntryPoint((_console_script(),), "pyframe")
    else:
        CLI = MODULE_ENTRY
    yield CLI


def pyframe_cli(
    *args: str, cwd: Path = SAMPLES, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return _run([*CLI.command, *args], cwd, stdin)


def headers(report: str) -> list[str]:
    """The '[n] qualname  file:line' lines of a plain report, without the number."""
    return [line.split("] ", 1)[1] for line in report.splitlines() if line.startswith("[")]


def json_records(report: str) -> list[dict]:
    return [json.loads(line) for line in report.splitlines() if line.startswith("{")]


def report_lines(stderr: str) -> list[str]:
    """The lines of a plain report: each frame's header and the table under it."""
    lines = []
    in_frame = False
    for line in stderr.splitlines():
        if re.match(r"\[\d+\] ", line):
            in_frame = True
        elif not line.startswith("    "):
            in_frame = False
        if in_frame:
            lines.append(line)
    return lines


def pyframe_lines(stderr: str) -> list[str]:
    """Everything pyframe itself wrote: report lines, its errors and notices."""
    # "pyframe: ...", "pyframe locals: error: ...", "python -m pyframe run: error: ..."
    own = tuple(prog + end for prog in ("pyframe", "python -m pyframe") for end in (":", " "))
    return report_lines(stderr) + [line for line in stderr.splitlines() if line.startswith(own)]


def traceback_of(stderr: str) -> str:
    """The last traceback in stderr, from its first line to the exception's line
    (or, for a SyntaxError, Python's report of it); "" if there is none."""
    lines = stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line == "Traceback (most recent call last):"]
    if not starts:
        starts = [i for i, line in enumerate(lines) if line.startswith('  File "')][:1]
    if not starts:
        return ""
    start = starts[-1]
    end = next(
        (i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines) - 1
    )
    return "\n".join(lines[start : end + 1]) + "\n"


def slot_rows(report: str, header: str) -> list[list[str]]:
    """The table under the first frame whose header contains `header`, split in columns."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("[") and header in line)
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("    "):
            break
        rows.append(line.split(None, 3))
    return rows


def assert_one_line_error(
    result: subprocess.CompletedProcess[str], *words: str, status: int = 2
) -> None:
    assert result.returncode == status, result
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    (error,) = pyframe_lines(result.stderr)
    assert error.startswith(f"{CLI.prog} ") or error.startswith(f"{CLI.prog}:"), error
    assert "error:" in error
    for word in words:
        assert word in error


# ---- help --------------------------------------------------------------------


def test_help_lists_commands_and_examples() -> None:
    result = pyframe_cli("--help")
    assert result.returncode == 0
    assert result.stdout.startswith(f"usage: {CLI.prog} [-h]")
    for text in ("locals", "run", f"\n  {CLI.prog} locals -i", "--callback"):
        assert text in result.stdout


@pytest.mark.parametrize("entry_point", ["pyframe"], indirect=True)  # it runs both itself
def test_help_is_the_same_either_way() -> None:
    # The two entry points differ in their name only.
    module = subprocess.run(
        [sys.executable, "-m", "pyframe", "locals", "--help"], capture_output=True, text=True
    )
    script = subprocess.run([_console_script(), "locals", "--help"], capture_output=True, text=True)
    assert module.returncode == script.returncode == 0
    assert module.stdout.startswith("usage: python -m pyframe locals ")
    assert module.stdout.replace("python -m pyframe", "pyframe") == script.stdout


def test_version() -> None:
    result = pyframe_cli("--version")
    assert result.returncode == 0
    assert result.stdout == f"pyframe {pyframe.__version__}\n"


def test_locals_help_documents_every_option() -> None:
    result = pyframe_cli("locals", "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    for option in ("-i", "--tty", "--match", "--exclude", "--max", "--skip-stdlib", "--all"):
        assert option in text
    for option in ("--where EXPR", "--thread REGEX", "--resumptions"):
        assert option in text
    assert "Every thread the program starts is seen" in text
    for option in ("--json", "--output", "-m module [args...]", "script.py [args...]"):
        assert option in text
    assert "report goes to stderr" in text
    assert "stdin" in text


def test_run_help() -> None:
    result = pyframe_cli("run", "--help")
    assert result.returncode == 0
    assert result.stdout.startswith(f"usage: {CLI.prog} run --callback MODULE_OR_FILE:FUNCTION")


# ---- locals: the report --------------------------------------------------------


def test_locals_report_leaves_the_program_output_alone() -> None:
    plain = python("demo.py", "one", "two")
    result = pyframe_cli("locals", "demo.py", "one", "two")
    assert result.returncode == plain.returncode == 0
    # Same sys.argv, sys.path[0], __file__ and output as without pyframe.
    assert result.stdout == plain.stdout
    assert "argv ['demo.py', 'one', 'two']" in result.stdout


def test_locals_plain_report() -> None:
    report = pyframe_cli("locals", "demo.py").stderr
    assert headers(report) == [
        "<module>  demo.py:1",
        "Big  demo.py:22",
        "Broken  demo.py:27",
        "main  demo.py:46",
        "make_adder  demo.py:9",
        "make_adder.<locals>.add  demo.py:10",
        "make_adder.<locals>.add  demo.py:10",
        "greet  demo.py:16",
        "show  demo.py:32",
        "show  demo.py:32",
        "countdown  demo.py:36  (generator)",
    ]
    assert slot_rows(report, "greet") == [
        ["0", "name", "local", "'world'"],
        ["1", "punctuation", "local", "'!'"],
        ["2", "message", "local", "<unbound>"],
    ]
    assert slot_rows(report, "make_adder ") == [
        ["0", "base", "local+cell", "10"],
        ["1", "add", "local", "<unbound>"],
    ]
    assert slot_rows(report, "add  ") == [
        ["0", "x", "local", "1"],
        ["1", "y", "local", "2"],
        ["2", "base", "free", "10"],
    ]
    big, broken = [line for line in report.splitlines() if line.lstrip().startswith("0  obj")]
    # A long repr is cut; a repr that raises is reported, and the program goes on.
    assert big.endswith("xxx...") and len(big) < 120
    assert big.split("local  ")[1].startswith("Big(xxx")
    assert broken.endswith("<repr failed: ValueError: no repr today>")
    assert "<module>  demo.py:1\n    (no slots)" in report


def test_locals_json_report() -> None:
    result = pyframe_cli("locals", "--json", "demo.py")
    assert result.returncode == 0
    records = json_records(result.stderr)
    assert [r["frame"] for r in records] == list(range(1, 12))
    greet = next(r for r in records if r["qualname"] == "greet")
    assert greet["file"] == str(SAMPLES / "demo.py")
    assert greet["line"] == 16
    assert greet["generator"] is False
    assert greet["slots"] == [
        {"index": 0, "name": "name", "kind": "local", "value": "'world'"},
        {"index": 1, "name": "punctuation", "kind": "local", "value": "'!'"},
        {"index": 2, "name": "message", "kind": "local", "value": None},
    ]
    adds = [r for r in records if r["qualname"] == "make_adder.<locals>.add"]
    assert [[(s["name"], s["kind"], s["value"]) for s in r["slots"]] for r in adds] == [
        [("x", "local", "1"), ("y", "local", "2"), ("base", "free", "10")],
        [("x", "local", "2"), ("y", "local", "3"), ("base", "free", "10")],
    ]
    countdown = next(r for r in records if r["qualname"] == "countdown")
    assert countdown["generator"] is True
    shows = [r["slots"][0]["value"] for r in records if r["qualname"] == "show"]
    assert shows[1] == "<repr failed: ValueError: no repr today>"


def test_match_and_exclude() -> None:
    def qualnames(*options: str) -> list[str]:
        result = pyframe_cli("locals", "--json", *options, "demo.py")
        assert result.returncode == 0
        return [r["qualname"] for r in json_records(result.stderr)]

    assert qualnames("--match", "^greet$") == ["greet"]
    assert qualnames("--match", "^greet$", "--match", "add$") == [
        "make_adder.<locals>.add",
        "make_adder.<locals>.add",
        "greet",
    ]
    assert qualnames("--match", "add", "--exclude", "<locals>") == ["make_adder"]
    # Both match and exclude also look at the file name.
    assert qualnames("--exclude", r"demo\.py$") == []
    assert len(qualnames("--match", r"cli_samples/demo\.py$")) == 11


def test_match_on_a_module_file() -> None:
    plain = python("-m", "samplepkg.tool", "3", "4")
    result = pyframe_cli("locals", "--match", r"tool\.py$", "-m", "samplepkg.tool", "3", "4")
    assert result.returncode == plain.returncode == 0
    assert result.stdout == plain.stdout == "double 6\ndouble 8\n"
    assert headers(result.stderr) == [
        "<module>  samplepkg/tool.py:1",
        "main  samplepkg/tool.py:10",
        "double  samplepkg/tool.py:6",
        "double  samplepkg/tool.py:6",
    ]
    assert slot_rows(result.stderr, "main") == [
        ["0", "args", "local", "['3', '4']"],
        ["1", "arg", "local", "<unbound>"],
    ]


def test_module_that_is_a_package_runs_its_main() -> None:
    plain = python("-m", "samplepkg", "x")
    result = pyframe_cli("locals", "--match", "double", "-m", "samplepkg", "x")
    assert result.returncode == plain.returncode == 0
    assert result.stdout == plain.stdout == "pkg main __main__ ['x'] 42\n"
    assert headers(result.stderr) == ["double  samplepkg/tool.py:6"]


def test_max_stops_reporting_but_not_the_program() -> None:
    result = pyframe_cli("locals", "--max", "2", "demo.py")
    assert result.returncode == 0
    assert headers(result.stderr) == ["<module>  demo.py:1", "Big  demo.py:22"]
    assert result.stdout.endswith("done\n")


def test_skip_stdlib_is_the_default_and_all_turns_it_off() -> None:
    default = pyframe_cli("locals", "uses_stdlib.py")
    skip = pyframe_cli("locals", "--skip-stdlib", "uses_stdlib.py")
    assert report_lines(default.stderr) == report_lines(skip.stderr)
    assert headers(default.stderr) == ["<module>  uses_stdlib.py:1", "brightness  uses_stdlib.py:6"]
    assert slot_rows(default.stderr, "brightness") == [
        ["0", "red", "local", "0.2"],
        ["1", "green", "local", "0.4"],
        ["2", "blue", "local", "0.6"],
    ]

    everything = pyframe_cli("locals", "--all", "--json", "uses_stdlib.py")
    assert everything.returncode == 0
    assert everything.stdout == default.stdout == python("uses_stdlib.py").stdout
    records = json_records(everything.stderr)
    files = {r["file"] for r in records}
    assert any(r["qualname"] == "rgb_to_hsv" and r["file"].endswith("colorsys.py") for r in records)
    assert any(file.startswith("<frozen importlib") for file in files)
    # The CLI's own frames are never reported, even with --all.
    package = Path(pyframe.__file__).resolve().parent
    assert not [file for file in files if Path(file).resolve().is_relative_to(package)]
    assert records[0]["qualname"] == "<module>"
    assert records[0]["file"].endswith("uses_stdlib.py")


def test_output_file(tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    result = pyframe_cli("locals", "--match", "greet", "--output", str(report), "demo.py")
    assert result.returncode == 0
    assert pyframe_lines(result.stderr) == []
    assert headers(report.read_text()) == ["greet  demo.py:16"]

    jsonl = tmp_path / "report.jsonl"
    result = pyframe_cli("locals", "--json", "--output", str(jsonl), "demo.py")
    assert result.returncode == 0
    assert pyframe_lines(result.stderr) == [] and json_records(result.stderr) == []
    assert len(json_records(jsonl.read_text())) == 11


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_failing_report_does_not_fail_the_program() -> None:
    plain = python("demo.py")
    result = pyframe_cli("locals", "--output", "/dev/full", "demo.py")
    assert result.returncode == 0
    assert result.stdout == plain.stdout
    # The report stops at the first failed write; closing the file fails too.
    stopped, closing = pyframe_lines(result.stderr)
    assert stopped.startswith("pyframe: report stopped: OSError: ")
    assert closing.startswith("pyframe: --output '/dev/full': ")
    assert "Traceback" not in result.stderr


def test_script_in_another_directory(tmp_path: Path) -> None:
    script = str(SAMPLES / "demo.py")
    plain = python(script, cwd=tmp_path)
    result = pyframe_cli("locals", "--match", "greet", script, cwd=tmp_path)
    assert result.stdout == plain.stdout
    assert f"path0 {SAMPLES}\n" in result.stdout
    # Outside the current directory, files are shown with their full path.
    assert headers(result.stderr) == [f"greet  {script}:16"]


# ---- the program's exit status and errors pass through -------------------------


@pytest.mark.parametrize(
    ("args", "status"),
    [(("--exit", "3"), 3), (("--exit", "0"), 0), (("--exit-message", "bye"), 1), ((), 0)],
)
def test_exit_status_passes_through(tmp_path: Path, args: tuple[str, ...], status: int) -> None:
    plain = python("demo.py", *args)
    result = pyframe_cli("locals", "--output", str(tmp_path / "r"), "demo.py", *args)
    assert plain.returncode == result.returncode == status
    assert result.stdout == plain.stdout
    assert pyframe_lines(result.stderr) == []
    assert traceback_of(result.stderr) == traceback_of(plain.stderr) == ""
    if "--exit-message" in args:  # Python prints a SystemExit that is not a number
        assert "bye" in plain.stderr.splitlines() and "bye" in result.stderr.splitlines()


def test_uncaught_exception_is_reported_as_python_does(tmp_path: Path) -> None:
    plain = python("demo.py", "--fail")
    result = pyframe_cli("locals", "--output", str(tmp_path / "r"), "demo.py", "--fail")
    assert plain.returncode == result.returncode == 1
    assert result.stdout == plain.stdout
    # The same traceback, starting at the program's own <module>.
    assert traceback_of(result.stderr) == traceback_of(plain.stderr)
    demo = SAMPLES / "demo.py"
    assert traceback_of(result.stderr).startswith(
        f'Traceback (most recent call last):\n  File "{demo}", line 67, in <module>\n'
    )
    assert traceback_of(result.stderr).endswith("\nValueError: bad value 7\n")


def test_syntax_error_in_the_program(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def (\n")
    plain = python(str(bad))
    result = pyframe_cli("locals", str(bad))
    assert plain.returncode == result.returncode == 1
    assert traceback_of(result.stderr) == traceback_of(plain.stderr)
    assert traceback_of(result.stderr).startswith(f'  File "{bad}", line 1\n')
    assert traceback_of(result.stderr).endswith("\nSyntaxError: invalid syntax\n")


def test_keyboard_interrupt(tmp_path: Path) -> None:
    script = tmp_path / "interrupted.py"
    script.write_text("def work():\n    raise KeyboardInterrupt\n\nwork()\n")
    plain = python(str(script))
    result = pyframe_cli("locals", "--output", str(tmp_path / "r"), str(script))
    assert plain.returncode == -signal.SIGINT
    assert result.returncode == 128 + signal.SIGINT  # what a shell shows for plain Python
    assert traceback_of(result.stderr) == traceback_of(plain.stderr)
    assert traceback_of(result.stderr).endswith("\nKeyboardInterrupt\n")


# ---- bad input -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("locals", "nope.py"), ("'nope.py'", "no such file")),
        (("locals", "-m", "nosuchmodule"), ("'nosuchmodule'", "no module")),
        (("locals", "-m", "samplepkg.nosuch"), ("'samplepkg.nosuch'", "no module")),
        (("locals", "-m"), ("-m needs a module",)),
        # email is a package without __main__ on every version (json has one from 3.14).
        (("locals", "-m", "email"), ("'email'", "package", "__main__")),
        (("locals",), ("no program to run", "script.py")),
        (("locals", "--match", "(", "demo.py"), ("--match", "'('", "regular expression")),
        (("locals", "--exclude", "[", "demo.py"), ("--exclude", "'['", "regular expression")),
        (("locals", "--max", "0", "demo.py"), ("--max", "'0'")),
        (("locals", "--max", "many", "demo.py"), ("--max", "'many'")),
        (("locals", "--no-such-option", "demo.py"), ("--no-such-option",)),
        (("locals", "-i", "--json", "demo.py"), ("-i", "--json")),
        (("locals", "--tty", "demo.py"), ("--tty", "-i")),
        (("locals", "--output", "/nonexistent/dir/r.txt", "demo.py"), ("--output", "nonexistent")),
        (("frames", "demo.py"), ("frames", "locals", "run")),
        ((), ("COMMAND",)),
        (("run", "demo.py"), ("--callback",)),
        (("run", "--callback", "counting_callback", "demo.py"), ("MODULE_OR_FILE:FUNCTION",)),
        (("run", "--callback", "nosuchmodule:f", "demo.py"), ("'nosuchmodule'", "no module")),
        (("run", "--callback", "./nope.py:f", "demo.py"), ("'./nope.py'", "no such file")),
        (("run", "--callback", "counting_callback:nosuch", "demo.py"), ("'nosuch'", "attribute")),
        (
            ("run", "--callback", "counting_callback:not_callable", "demo.py"),
            ("not_callable", "not callable", "42"),
        ),
    ],
)
def test_bad_input_is_one_line(args: tuple[str, ...], words: tuple[str, ...]) -> None:
    assert_one_line_error(pyframe_cli(*args), *words)


def test_callback_that_fails_to_import(tmp_path: Path) -> None:
    broken = tmp_path / "broken_callback.py"
    broken.write_text("import pyframe\n\nrate = 1 / 0\n")
    result = pyframe_cli("run", "--callback", f"{broken}:on_frame", str(SAMPLES / "demo.py"))
    assert_one_line_error(result, str(broken), "ZeroDivisionError", f"{broken}:3")


def test_module_whose_package_fails_to_import(tmp_path: Path) -> None:
    package = tmp_path / "brokenpkg"
    package.mkdir()
    (package / "__init__.py").write_text("ratio = 1 / 0\n")
    (package / "tool.py").write_text("print('never')\n")
    result = pyframe_cli("locals", "-m", "brokenpkg.tool", cwd=tmp_path)
    # As with `python -m`, the package's failure is the program's: status 1.
    assert_one_line_error(result, "'brokenpkg.tool'", "ZeroDivisionError", status=1)


# ---- run --callback ------------------------------------------------------------


def _counted(stderr: str) -> tuple[dict[str, int], list[str]]:
    calls = re.search(r"^calls (.*)$", stderr, re.MULTILINE)
    files = re.search(r"^files (.*)$", stderr, re.MULTILINE)
    assert calls and files, stderr
    return json.loads(calls.group(1)), json.loads(files.group(1))


def test_run_callback_from_a_module() -> None:
    plain = python("demo.py", "--exit", "4")
    result = pyframe_cli("run", "--callback", "counting_callback:count", "demo.py", "--exit", "4")
    assert result.returncode == plain.returncode == 4
    assert result.stdout == plain.stdout
    calls, files = _counted(result.stderr)
    assert calls == {
        "<module>": 1,
        "Big": 1,
        "Broken": 1,
        "main": 1,
        "make_adder": 1,
        "make_adder.<locals>.add": 2,
        "greet": 1,
        "show": 2,
        "countdown": 1,
    }
    # The callback never sees a frame of the CLI (pyframe/cli/, pyframe/__main__.py, runpy).
    assert files == ["demo.py"]


def test_run_callback_from_a_file(tmp_path: Path) -> None:
    callback = str(SAMPLES / "counting_callback.py")
    result = pyframe_cli(
        "run", "--callback", f"{callback}:count", str(SAMPLES / "demo.py"), cwd=tmp_path
    )
    assert result.returncode == 0
    calls, _ = _counted(result.stderr)
    assert calls["make_adder.<locals>.add"] == 2


def test_run_callback_with_a_module_program() -> None:
    result = pyframe_cli(
        "run", "--callback", "counting_callback:count", "-m", "samplepkg.tool", "5"
    )
    assert result.returncode == 0
    assert result.stdout == "double 10\n"
    calls, files = _counted(result.stderr)
    assert calls == {}
    assert files == ["tool.py"]


def test_run_passes_the_callback_result_to_pyframe() -> None:
    # pyframe itself judges what the callback returns: 42 is refused there.
    result = pyframe_cli("run", "--callback", "counting_callback:bad_result", "demo.py")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "TypeError: pyframe callback" in result.stderr
    assert "(42)" in result.stderr


# ---- locals -i with piped commands ---------------------------------------------


def test_interactive_with_piped_commands() -> None:
    commands = [
        "h",
        "p name",
        "p name.upper() + punctuation",
        "p nosuch",
        "p 1/0",
        "p sys.exit(3)",
        "p",
        "frobnicate",
        "set nosuch 1",
        "set name 'pyframe'",
        "p name",
        "w",
        "c",
    ]
    result = pyframe_cli("locals", "-i", "--match", "^greet$", "demo.py", stdin="\n".join(commands))
    assert result.returncode == 0
    # The program saw the new value; the session went to stderr.
    assert "hello pyframe!\n" in result.stdout
    assert "(pyframe)" not in result.stdout
    session = result.stderr
    assert headers(session) == ["greet  demo.py:16"]
    assert "[1] greet  demo.py:16\n    #  name" in session
    for expected in [
        "(pyframe) h\nAt a frame about to run:\n",
        "(pyframe) p name\n'world'\n",
        "(pyframe) p name.upper() + punctuation\n'WORLD!'\n",
        "(pyframe) p nosuch\n*** NameError: name 'nosuch' is not defined\n",
        "(pyframe) p 1/0\n*** ZeroDivisionError: division by zero\n",
        "(pyframe) p sys.exit(3)\n*** SystemExit: 3\n",
        "(pyframe) p\n*** p needs an expression",
        "(pyframe) frobnicate\n*** unknown command 'frobnicate'",
        "(pyframe) set nosuch 1\n*** cannot set nosuch: greet has no such slot",
        "(pyframe) set name 'pyframe'\nname = 'pyframe'\n",
        "(pyframe) p name\n'pyframe'\n",
        "(pyframe) w\n  <module>  demo.py:67\n  main  demo.py:49\n"
        "> greet  demo.py:16  (about to run)\n",
    ]:
        assert expected in session


def test_interactive_continue_skip_and_end_of_input() -> None:
    # c stops at the next match; s never stops at add again (it has a second
    # call); then input ends at greet.
    result = pyframe_cli(
        "locals", "-i", "--match", "add|greet", "demo.py", stdin="c\nset x 100\ns\n"
    )
    assert result.returncode == 0
    assert "sums 112 15\n" in result.stdout
    assert headers(result.stderr) == [
        "make_adder  demo.py:9",
        "make_adder.<locals>.add  demo.py:10",
        "greet  demo.py:16",
    ]
    assert "(pyframe) \n(end of input: the program runs on without stopping)\n" in result.stderr
    assert result.stdout.endswith("done\n")


def test_interactive_quit() -> None:
    result = pyframe_cli("locals", "-i", "demo.py", stdin="q\np 'never read'\n")
    assert result.returncode == 0
    assert headers(result.stderr) == ["<module>  demo.py:1"]
    assert "never read" not in result.stderr
    assert result.stdout == python("demo.py").stdout


def test_interactive_set_free_variable_is_refused() -> None:
    result = pyframe_cli(
        "locals", "-i", "--match", "<locals>.add", "demo.py", stdin="set base 0\nq\n"
    )
    assert "*** cannot set base: it is a free variable" in result.stderr
    assert "sums 13 15\n" in result.stdout


def test_interactive_shares_piped_stdin_with_the_program() -> None:
    result = pyframe_cli(
        "locals", "-i", "--match", "greet", "demo.py", "--read", stdin="c\na line of data\n"
    )
    assert result.returncode == 0
    assert "read a line of data\n" in result.stdout


# ---- locals -i on a terminal ----------------------------------------------------

_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]")


class Terminal:
    """A program run on a pseudo-terminal, read with a timeout on every read."""

    def __init__(
        self, args: Sequence[str], *, stdin_data: str | None = None, cwd: Path = SAMPLES
    ) -> None:
        self.master, slave = os.openpty()
        # A wide window, so line editing never wraps or scrolls what it echoes.
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        self.output = ""
        if stdin_data is None:
            streams = {"stdin": slave, "stdout": slave, "stderr": slave}
            preexec = None
        else:
            # The terminal is only the controlling one (/dev/tty); stdin is a pipe.
            streams = {"stdin": subprocess.PIPE, "stdout": slave, "stderr": slave}

            def preexec() -> None:
                fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

        self.process = subprocess.Popen(
            [*CLI.command, *args],
            cwd=cwd,
            env=_env(),
            start_new_session=True,
            pass_fds=(slave,),
            preexec_fn=preexec,
            **streams,
        )
        os.close(slave)
        if stdin_data is not None:
            assert self.process.stdin is not None
            self.process.stdin.write(stdin_data.encode())
            self.process.stdin.close()

    def _read(self, deadline: float) -> bool:
        """Read what is there; False at end of output."""
        ready, _, _ = select.select([self.master], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise TimeoutError(f"no output in time; so far:\n{self.output}")
        try:
            chunk = os.read(self.master, 4096)
        except OSError:  # EIO: every writer of the terminal has closed it
            return False
        text = chunk.decode(errors="replace").replace("\r\n", "\n")
        self.output += _ESCAPES.sub("", text)
        return bool(chunk)

    def expect(self, text: str) -> str:
        """Wait for `text`; return all output up to and including it, and drop that."""
        deadline = time.monotonic() + EXPECT_TIMEOUT
        while text not in self.output:
            if not self._read(deadline):
                raise EOFError(f"output ended before {text!r}:\n{self.output}")
        end = self.output.index(text) + len(text)
        seen, self.output = self.output[:end], self.output[end:]
        return seen

    def send(self, line: str) -> None:
        os.write(self.master, line.encode())

    def finish(self) -> tuple[str, int]:
        """The rest of the output, and the exit status."""
        deadline = time.monotonic() + EXPECT_TIMEOUT
        try:
            while self._read(deadline):
                pass
            status = self.process.wait(timeout=EXPECT_TIMEOUT)
        finally:
            self.close()
        return self.output, status

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=EXPECT_TIMEOUT)
        os.close(self.master)


@pytest.fixture
def terminal() -> Iterator[Callable[..., Terminal]]:
    """Starts the command line with ARGS on a pseudo-terminal; kills what is left at the end."""
    opened: list[Terminal] = []

    def start(*args: str, stdin_data: str | None = None) -> Terminal:
        opened.append(Terminal(args, stdin_data=stdin_data))
        return opened[-1]

    yield start
    for term in opened:
        if term.process.returncode is None:
            term.close()


def test_terminal_session(terminal: Callable[..., Terminal]) -> None:
    term = terminal("locals", "-i", "--match", "greet|add", "demo.py")
    table = term.expect("(pyframe) ")
    assert "argv ['demo.py']" in table  # the program's output comes first
    assert "[1] make_adder  demo.py:9" in table
    term.send("c\n")
    assert "[2] make_adder.<locals>.add" in term.expect("(pyframe) ")
    term.send("p x, y, base\n")
    assert "(1, 2, 10)" in term.expect("(pyframe) ")
    term.send("s\n")
    table = term.expect("(pyframe) ")
    assert "[3] greet  demo.py:16" in table
    assert "add" not in table  # s: no stop at add's second call
    term.send("p name\n")
    assert "'world'\n" in term.expect("(pyframe) ")
    # Line editing: Ctrl-P brings back the previous command.
    term.send("\x10\n")
    assert "'world'\n" in term.expect("(pyframe) ")
    term.send("set name = 'terminal'\n")
    assert "name = 'terminal'\n" in term.expect("(pyframe) ")
    term.send("w\n")
    where = term.expect("(pyframe) ")
    assert "  <module>  demo.py:67\n  main  demo.py:49\n> greet  demo.py:16" in where
    term.send("bogus\n")
    assert "*** unknown command 'bogus'" in term.expect("(pyframe) ")
    term.send("c\n")
    rest, status = term.finish()
    assert status == 0
    assert "hello terminal!\n" in rest
    assert "\ndone\n" in rest  # the program ran to its end


def test_terminal_quit(terminal: Callable[..., Terminal]) -> None:
    term = terminal("locals", "-i", "--match", "add$", "demo.py")
    term.expect("(pyframe) ")
    term.send("q\n")
    rest, status = term.finish()
    assert status == 0
    assert "(pyframe)" not in rest
    assert "sums 13 15\n" in rest and "\ndone\n" in rest  # the program ran to its end


def test_terminal_end_of_input(terminal: Callable[..., Terminal]) -> None:
    term = terminal("locals", "-i", "demo.py")
    term.expect("(pyframe) ")
    term.send("\x04")  # Ctrl-D
    rest, status = term.finish()
    assert status == 0
    assert "(end of input: the program runs on without stopping)" in rest
    assert "(pyframe)" not in rest
    assert "\ndone\n" in rest  # the program ran to its end


def test_tty_option_leaves_stdin_to_the_program(terminal: Callable[..., Terminal]) -> None:
    term = terminal(
        "locals", "-i", "--tty", "--match", "greet", "demo.py", "--read", stdin_data="piped\n"
    )
    assert "[1] greet" in term.expect("(pyframe) ")
    term.send("set name 'tty'\n")
    term.expect("(pyframe) ")
    term.send("c\n")
    rest, status = term.finish()
    assert status == 0
    assert "hello tty!\n" in rest
    assert "read piped\n" in rest
