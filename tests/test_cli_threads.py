"""`pyframe locals` on threaded and asyncio programs, and --where.

Each test runs a real program from tests/cli_samples/ (a ThreadingHTTPServer
on 127.0.0.1 and a free port answering a client thread, an asyncio program
with three tasks, a ThreadPoolExecutor map...) through `python -m pyframe`,
and compares what pyframe wrote, never a whole process's output.  Which
thread runs what, and in what order threads get there, differs between runs:
the tests check what must hold whatever the order.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from conftest import PY312
from test_cli import (
    MODULE_ENTRY,
    SAMPLES,
    TIMEOUT,
    _env,
    headers,
    json_records,
    pyframe_lines,
    python,
    report_lines,
    slot_rows,
)

# How long to wait for one piece of output from a program run with pipes.
EXPECT_TIMEOUT = 60
# A frame's header: '[n] qualname  file:line', then what and where it runs.
HEADER = re.compile(
    r"\[(?P<number>\d+)\] (?P<qualname>\S+)  (?P<place>\S+)"
    r"(?:  \((?P<kind>[^)]*)\))?"
    r'(?:  task "(?P<task>[^"]*)")?'
    r'(?:  thread "(?P<thread>[^"]*)" (?P<ident>\d+))?$'
)


def pyframe_cli(
    *args: str, cwd: Path = SAMPLES, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MODULE_ENTRY.command, *args],
        cwd=cwd,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env or _env(),
    )


def frames(report: str) -> list[dict[str, str | None]]:
    """Each header of a plain report, taken apart."""
    found = []
    for line in report.splitlines():
        if line.startswith("["):
            match = HEADER.match(line)
            assert match, f"not a frame header: {line!r}"
            found.append(match.groupdict())
    return found


def tracebacks(stderr: str) -> list[str]:
    """Every traceback in stderr, from its first line to the exception's line."""
    found = []
    lines = stderr.splitlines()
    for start, line in enumerate(lines):
        if line == "Traceback (most recent call last):":
            end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(" "))
            found.append("\n".join(lines[start : end + 1]))
    return found


def handled(stdout: str) -> dict[str, tuple[str, str]]:
    """threaded_server.py's 'handled KEY in NAME IDENT' lines: {key: (name, ident)}."""
    return {
        m["key"]: (m["name"], m["ident"])
        for m in re.finditer(
            r"^handled (?P<key>\S+) in '(?P<name>[^']*)' (?P<ident>\d+)$", stdout, re.MULTILINE
        )
    }


# ---- a threaded server ------------------------------------------------------------


def test_threaded_server_handler_is_seen_in_its_thread() -> None:
    plain = python("threaded_server.py", "21", "40")
    result = pyframe_cli("locals", "--match", "handle_user", "threaded_server.py", "21", "40")
    assert result.returncode == plain.returncode == 0
    assert "user21: 42\nuser40: 80\n" in result.stdout
    assert len(plain.stdout.splitlines()) == len(result.stdout.splitlines())
    seen = frames(result.stderr)
    assert [f["qualname"] for f in seen] == ["handle_user", "handle_user"]
    threads = handled(result.stdout)
    for frame, key in zip(seen, ["user21", "user40"], strict=True):
        # The thread that ran the handler, by the name and id the program itself saw.
        assert (frame["thread"], frame["ident"]) == threads[key]
        assert frame["thread"].endswith(" (process_request_thread)")
        assert frame["place"] == "threaded_server.py:14"
    assert slot_rows(result.stderr, "[1] handle_user") == [
        ["0", "key", "local", "'user21'"],
        ["1", "n", "local", "21"],
    ]


def test_threaded_server_interactive_set_before_the_handler_runs() -> None:
    commands = "p key, n\nset n 50\nw\nc\n"
    result = pyframe_cli(
        "locals", "-i", "--match", "handle_user", "threaded_server.py", "21", stdin=commands
    )
    assert result.returncode == 0
    # The handler ran with the new argument, and answered the client with it.
    assert "user21: 100\n" in result.stdout
    (frame,) = frames(result.stderr)
    assert (frame["thread"], frame["ident"]) == handled(result.stdout)["user21"]
    prompt = f"(pyframe: {frame['thread']}) "
    session = result.stderr
    assert f"{prompt}p key, n\n('user21', 21)\n" in session
    assert f"{prompt}set n 50\nn = 50\n" in session
    where = session.split(f"{prompt}w\n", 1)[1].split(prompt, 1)[0].splitlines()
    # The calls that led to the handler, in its own thread; none of pyframe's.
    assert where[-2].startswith("  Handler.do_GET  threaded_server.py:")
    assert where[-1] == "> handle_user  threaded_server.py:14  (about to run)"
    assert any("process_request_thread" in line for line in where)
    assert not [line for line in where if "pyframe/cli/" in line]


def test_threaded_server_where() -> None:
    result = pyframe_cli(
        "locals",
        "--where",
        'n > 30 and key.startswith("user")',
        "--match",
        "handle_user",
        "threaded_server.py",
        "21",
        "40",
    )
    assert result.returncode == 0
    assert "user21: 42\nuser40: 80\n" in result.stdout
    (frame,) = frames(result.stderr)
    assert (frame["thread"], frame["ident"]) == handled(result.stdout)["user40"]
    assert slot_rows(result.stderr, "handle_user")[1] == ["1", "n", "local", "40"]
    assert [line for line in pyframe_lines(result.stderr) if "warning" in line] == []


# ---- a thread pool ---------------------------------------------------------------


def test_thread_pool_map() -> None:
    plain = python("thread_pool.py")
    result = pyframe_cli("locals", "--json", "thread_pool.py")
    assert result.returncode == 0
    assert result.stdout == plain.stdout == "[0, 1, 4, 9, 16]\n48 6\n"
    records = json_records(result.stderr)
    assert [r["frame"] for r in records] == list(range(1, len(records) + 1))
    squares = [r for r in records if r["qualname"] == "square"]
    assert sorted(int(r["slots"][0]["value"]) for r in squares) == [0, 1, 2, 3, 4]
    assert {r["thread"] for r in squares} <= {"pool_0", "pool_1"}
    assert all(r["event"] == "call" and r["task"] is None for r in records)
    main_ids = {r["thread_id"] for r in records if r["thread"] == "MainThread"}
    assert len(main_ids) == 1
    assert not main_ids & {r["thread_id"] for r in squares}
    lookups = [r for r in records if r["qualname"] == "lookup"]
    assert [r["thread"] for r in lookups] == ["MainThread", "MainThread"]


def test_thread_filter() -> None:
    pool = pyframe_cli("locals", "--thread", "^pool", "thread_pool.py")
    assert pool.returncode == 0
    assert {(f["qualname"], f["thread"]) for f in frames(pool.stderr)} <= {
        ("square", "pool_0"),
        ("square", "pool_1"),
    }
    assert len(frames(pool.stderr)) == 5

    main = pyframe_cli("locals", "--thread", "MainThread", "thread_pool.py")
    assert [f["qualname"] for f in frames(main.stderr)] == ["<module>", "lookup", "lookup"]
    # Until the pool starts its threads, nothing says which thread a frame is in.
    assert [f["thread"] for f in frames(main.stderr)] == [None, "MainThread", "MainThread"]


def test_where_on_a_thread_pool() -> None:
    result = pyframe_cli("locals", "--where", "n > 2", "thread_pool.py")
    assert result.returncode == 0
    assert result.stdout == "[0, 1, 4, 9, 16]\n48 6\n"
    seen = [
        (f["qualname"], slot_rows(result.stderr, f"[{f['number']}] "))
        for f in frames(result.stderr)
    ]
    values = sorted((name, rows[-1][3]) for name, rows in seen)
    assert values == [("lookup", "40"), ("square", "3"), ("square", "4")]
    # <module> has no n: NameError there, reported once; square and lookup never raise.
    (warning,) = [line for line in pyframe_lines(result.stderr) if "warning" in line]
    assert warning == (
        "pyframe: warning: --where 'n > 2' raised NameError: name 'n' is not defined in "
        "<module> (thread_pool.py:1); its frames where it raises are not reported"
    )


def test_where_error_is_reported_once_per_function() -> None:
    result = pyframe_cli("locals", "--where", 'key.startswith("user")', "thread_pool.py")
    assert result.returncode == 0
    assert [(f["qualname"]) for f in frames(result.stderr)] == ["lookup"]
    warnings = [line for line in pyframe_lines(result.stderr) if "warning" in line]
    # square raises NameError five times, in two threads: one warning.
    assert [w.split(" raised ", 1)[1] for w in warnings] == [
        "NameError: name 'key' is not defined in <module> (thread_pool.py:1); "
        "its frames where it raises are not reported",
        "NameError: name 'key' is not defined in square (thread_pool.py:6); "
        "its frames where it raises are not reported",
    ]


@pytest.mark.parametrize("expression", ["n >", "n > 2 )", "lambda: (", "x = 1"])
def test_where_syntax_error_is_one_line_before_the_program(expression: str) -> None:
    result = pyframe_cli("locals", "--where", expression, "thread_pool.py")
    assert result.returncode == 2
    assert result.stdout == ""  # the program never ran
    (error,) = result.stderr.splitlines()
    assert error.startswith("python -m pyframe locals: error: argument --where: ")
    assert repr(expression) in error and "not a Python expression" in error


# ---- several threads at one prompt ---------------------------------------------------


def test_stops_in_several_threads_take_turns() -> None:
    result = pyframe_cli(
        "locals", "-i", "--match", "^step$", "thread_stops.py", stdin="p i\nc\n" * 3
    )
    assert result.returncode == 0
    assert "results [0, 10, 20]\n" in result.stdout
    seen = frames(result.stderr)
    assert sorted(f["thread"] for f in seen) == ["stepper-0", "stepper-1", "stepper-2"]
    # One stop after the other, each whole: its table, then its prompts, in its thread.
    lines = [line for line in result.stderr.splitlines() if not line.startswith("    ")]
    assert len(lines) == 3 * 4
    for frame, start in zip(seen, range(0, 12, 4), strict=True):
        i = frame["thread"].rsplit("-", 1)[1]
        prompt = f"(pyframe: {frame['thread']}) "
        assert lines[start : start + 4] == [lines[start], f"{prompt}p i", i, f"{prompt}c"]
        assert HEADER.match(lines[start])["thread"] == frame["thread"]


def test_quit_in_one_thread_lets_every_thread_go() -> None:
    # The stops queued behind the first one are not shown: q ends the asking everywhere.
    result = pyframe_cli("locals", "-i", "--match", "^step$", "thread_stops.py", stdin="q\n")
    assert result.returncode == 0
    assert "results [0, 10, 20]\n" in result.stdout
    assert len(frames(result.stderr)) == 1
    assert result.stderr.count("(pyframe: stepper-") == 1


class Piped:
    """A program with its stdin, stdout and stderr on pipes, read with timeouts."""

    def __init__(self, args: Sequence[str]) -> None:
        self.process = subprocess.Popen(
            [*MODULE_ENTRY.command, *args],
            cwd=SAMPLES,
            env=_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.out = {"stdout": "", "stderr": ""}

    def expect(self, stream: str, text: str) -> None:
        deadline = time.monotonic() + EXPECT_TIMEOUT
        pipes = {self.process.stdout: "stdout", self.process.stderr: "stderr"}
        while text not in self.out[stream]:
            left = deadline - time.monotonic()
            ready, _, _ = select.select(list(pipes), [], [], max(0.0, left))
            if not ready:
                raise TimeoutError(f"no {text!r} on {stream} in time: {self.out}")
            for pipe in ready:
                chunk = os.read(pipe.fileno(), 4096)
                if not chunk:
                    raise EOFError(f"{pipes[pipe]} ended before {text!r}: {self.out}")
                self.out[pipes[pipe]] += chunk.decode()

    def send(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode())
        self.process.stdin.flush()

    def finish(self) -> tuple[str, str, int]:
        stdout, stderr = self.process.communicate(timeout=TIMEOUT)
        return (
            self.out["stdout"] + stdout.decode(),
            self.out["stderr"] + stderr.decode(),
            (self.process.returncode),
        )


@pytest.fixture
def piped() -> Iterator[type[Piped]]:
    started: list[Piped] = []

    def start(*args: str) -> Piped:
        started.append(Piped(args))
        return started[-1]

    yield start  # type: ignore[misc]
    for program in started:
        if program.process.poll() is None:
            program.process.kill()
            program.process.wait(timeout=TIMEOUT)


def test_a_stop_holds_only_its_thread(piped) -> None:
    program = piped("locals", "-i", "--match", "^step$", "thread_stops.py")
    program.expect("stderr", "(pyframe: stepper-")
    # Nothing typed yet: the ticker thread still ticks while a stepper is stopped.
    ticks = program.out["stdout"].count("tick ")
    program.expect("stdout", f"tick {ticks + 3}\n")
    assert len(frames(program.out["stderr"])) == 1
    for number in (2, 3):
        program.send("c\n")
        program.expect("stderr", f"[{number}] step")
    program.send("c\n")
    stdout, stderr, status = program.finish()
    assert status == 0
    assert "results [0, 10, 20]\n" in stdout
    assert sorted(f["thread"] for f in frames(stderr)) == ["stepper-0", "stepper-1", "stepper-2"]


# ---- how threads end ------------------------------------------------------------------


def thread_ends_as_without_pyframe(*command: str) -> subprocess.CompletedProcess[str]:
    """pyframe COMMAND... thread_ends.py, whose threads end every way, checked
    against the program without pyframe; the run's result."""
    plain = python("thread_ends.py")
    result = pyframe_cli(*command, "thread_ends.py")
    assert result.returncode == plain.returncode == 0
    assert result.stdout == plain.stdout
    # After the program's code and its non-daemon threads are over, the daemon
    # thread's callback is gone and pyframe's hook with it.
    assert result.stdout.endswith("main done\ndaemon let go True\nhook installed at exit False\n")
    # A thread's uncaught exception reads as without pyframe (threading's, _thread's).
    assert sorted(tracebacks(result.stderr)) == sorted(tracebacks(plain.stderr))
    assert sorted(t.splitlines()[-1] for t in tracebacks(result.stderr)) == [
        "KeyError: 'boom in a _thread thread'",
        "ValueError: boom in a thread",
    ]
    return result


def test_threads_that_raise_exit_or_outlive_the_program() -> None:
    result = thread_ends_as_without_pyframe("locals", "--match", "^(tick|raw|failing|leaving)$")
    seen = frames(result.stderr)
    raw = next(f for f in seen if f["qualname"] == "raw")
    assert raw["thread"] == "_thread"  # started with _thread.start_new_thread
    assert {f["thread"] for f in seen if f["qualname"] == "failing"} == {"failing"}
    assert {f["thread"] for f in seen if f["qualname"] == "leaving"} == {"leaving"}
    assert {f["thread"] for f in seen if f["qualname"] == "tick"} >= {"ticker"}


def test_run_callback_in_every_thread() -> None:
    # The daemon thread outliving the program is let go, as under `locals`.
    result = thread_ends_as_without_pyframe("run", "--callback", "counting_callback:by_thread")
    seen = re.search(r"^threads (.*)$", result.stderr, re.MULTILINE)
    assert seen, result.stderr
    threads = json.loads(seen.group(1))
    assert threads["<module>"] == ["MainThread"]
    assert threads["raw"] == threads["raw_failing"] == ["_thread"]
    assert threads["failing"] == ["failing"]
    assert threads["leaving"] == ["leaving"]
    assert threads["ticking"] == ["ticker"]
    assert "ticker" in threads["tick"]


def test_os_exit_in_a_thread() -> None:
    plain = python("thread_ends.py", "--os-exit")
    result = pyframe_cli("locals", "--match", "tick", "thread_ends.py", "--os-exit")
    assert plain.returncode == result.returncode == 3
    assert result.stdout == plain.stdout


def test_threads_a_package_starts_before_the_program(tmp_path: Path) -> None:
    # `-m package.module` imports the package first: its threads are the program's too.
    package = tmp_path / "threadpkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import threading\n\n\n"
        "def warm(level):\n"
        "    return level + 1\n\n\n"
        "thread = threading.Thread(target=warm, args=(1,), name='warmer')\n"
        "thread.start()\n"
        "thread.join()\n"
    )
    (package / "tool.py").write_text("print('tool ran')\n")
    result = pyframe_cli("locals", "--match", "warm", "-m", "threadpkg.tool", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout == "tool ran\n"
    (frame,) = frames(result.stderr)
    assert (frame["qualname"], frame["thread"]) == ("warm", "warmer")
    assert slot_rows(result.stderr, "warm") == [["0", "level", "local", "1"]]


def test_threads_started_before_pyframe_are_named(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,), name='early', daemon=True).start()\n"
    )
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    result = pyframe_cli("locals", "--match", "lookup", "thread_pool.py", env=env)
    assert result.returncode == 0
    assert "pyframe: note: threads started before pyframe are not seen: early" in (
        pyframe_lines(result.stderr)
    )
    # With a thread running already, every frame says its thread.
    assert [f["thread"] for f in frames(result.stderr)] == ["MainThread", "MainThread"]


# ---- asyncio -------------------------------------------------------------------------

# CPython 3.12+ reports a coroutine when it first runs, in its task (sys.monitoring);
# 3.11 when it is created, in the task that creates it (pyframe/cli/resumptions.py).
WORKER_TASKS = ["worker-a", "worker-b", "worker-c"] if PY312 else ["Task-1"] * 3


def test_asyncio_three_tasks() -> None:
    plain = python("asyncio_tasks.py")
    result = pyframe_cli("locals", "--match", "worker|fetch|numbers", "asyncio_tasks.py")
    assert result.returncode == 0
    assert result.stdout == plain.stdout == "['a=A', 'b=B', 'c=C']\nsum 6\n"
    seen = frames(result.stderr)
    workers = [f for f in seen if f["qualname"] == "worker"]
    fetches = [f for f in seen if f["qualname"] == "fetch"]
    assert [f["task"] for f in workers] == WORKER_TASKS
    assert [f["task"] for f in fetches] == ["worker-a", "worker-b", "worker-c"]
    assert {f["kind"] for f in workers + fetches} == {"coroutine"}
    assert [slot_rows(result.stderr, f"[{f['number']}] ")[0][3] for f in workers] == [
        "'a'",
        "'b'",
        "'c'",
    ]
    # A generator: reported once, at its creation, in no task.
    (numbers,) = [f for f in seen if f["qualname"] == "numbers"]
    assert (numbers["kind"], numbers["task"]) == ("generator", None)
    # One thread: nothing says which.
    assert {f["thread"] for f in seen} == {None}


def test_asyncio_match_takes_task_names() -> None:
    result = pyframe_cli("locals", "--json", "--match", "^worker-b$", "asyncio_tasks.py")
    assert result.returncode == 0
    records = json_records(result.stderr)
    expected = [("worker", "worker-b", "start"), ("fetch", "worker-b", "start")]
    if not PY312:
        expected = [("fetch", "worker-b", "call")]
    assert [(r["qualname"], r["task"], r["event"]) for r in records] == expected
    excluded = pyframe_cli("locals", "--exclude", "^worker-b$", "asyncio_tasks.py")
    assert "worker-b" not in {f["task"] for f in frames(excluded.stderr)}
    assert "worker-a" in {f["task"] for f in frames(excluded.stderr)}


def test_asyncio_where() -> None:
    result = pyframe_cli("locals", "--where", 'key == "b"', "asyncio_tasks.py")
    assert result.returncode == 0
    seen = frames(result.stderr)
    assert [(f["qualname"], f["task"]) for f in seen] == [
        ("worker", WORKER_TASKS[1]),
        ("fetch", "worker-b"),
    ]


def test_asyncio_interactive_set() -> None:
    result = pyframe_cli(
        "locals", "-i", "--match", "^worker$", "asyncio_tasks.py", stdin="p key\nset key 'zz'\nq\n"
    )
    assert result.returncode == 0
    assert "['zz=ZZ', 'b=B', 'c=C']\n" in result.stdout
    (frame,) = frames(result.stderr)
    assert frame["task"] == WORKER_TASKS[0]
    assert "(pyframe) p key\n'a'\n(pyframe) set key 'zz'\nkey = 'zz'\n" in result.stderr


def test_asyncio_interactive_skip() -> None:
    # s: never stop at this function again, in any task.
    result = pyframe_cli(
        "locals", "-i", "--match", "^(worker|fetch)$", "asyncio_tasks.py", stdin="s\nc\nc\nc\n"
    )
    assert result.returncode == 0
    assert "['a=A', 'b=B', 'c=C']\n" in result.stdout
    assert [f["qualname"] for f in frames(result.stderr)] == ["worker", "fetch", "fetch", "fetch"]


def test_resumption_interactive_set() -> None:
    # At numbers' first run (n is 3, i unbound), n becomes 1: it yields 0 alone.
    result = pyframe_cli(
        "locals",
        "-i",
        "--resumptions",
        "--match",
        "^numbers$",
        "asyncio_tasks.py",
        stdin="c\np n\nset n 1\nw\nq\n",
    )
    assert result.returncode == 0
    assert result.stdout == "['a=A', 'b=B', 'c=C']\nsum 0\n"
    assert [f["kind"] for f in frames(result.stderr)] == ["generator", "generator, resumed"]
    assert "(pyframe) p n\n3\n(pyframe) set n 1\nn = 1\n" in result.stderr
    assert "\n> numbers  asyncio_tasks.py:16  (resuming)\n" in result.stderr


def test_resumptions() -> None:
    result = pyframe_cli(
        "locals", "--resumptions", "--match", "^(fetch|numbers)$", "asyncio_tasks.py"
    )
    assert result.returncode == 0
    assert result.stdout == "['a=A', 'b=B', 'c=C']\nsum 6\n"
    seen = frames(result.stderr)
    numbers = [f["kind"] for f in seen if f["qualname"] == "numbers"]
    # Created once; run four times (three values, then the end).
    assert numbers == ["generator"] + ["generator, resumed"] * 4
    for key in "abc":
        fetch = [
            f["kind"] for f in seen if f["qualname"] == "fetch" and f["task"] == f"worker-{key}"
        ]
        # First reported (3.12+: as it starts; 3.11: as it is created), then each run after
        # (3.11: its first run too), the one after its sleep included.
        assert fetch == ["coroutine"] + ["coroutine, resumed"] * (1 if PY312 else 2)
    # What a resumption shows: the locals as they are then.
    first, second = [f["number"] for f in seen if f["kind"] == "generator, resumed"][:2]
    assert slot_rows(result.stderr, f"[{first}] ") == [
        ["0", "n", "local", "3"],
        ["1", "i", "local", "<unbound>"],
    ]
    assert slot_rows(result.stderr, f"[{second}] ")[1] == ["1", "i", "local", "0"]


# ---- the specialization mode ---------------------------------------------------------


def test_filtered_code_runs_with_the_hook_aside() -> None:
    result = pyframe_cli("locals", "--match", "reported", "skipped_speed.py")
    assert result.returncode == 0
    # 3.12+: code the filter skipped runs at no-hook speed, in one thread with the
    # callback and in two: every thread's callback decides by one cache.
    assert result.stdout == (
        f"specialization {PY312}\naside alone {PY312}\naside in a second thread {PY312}\n"
    )
    assert [f["qualname"] for f in frames(result.stderr)] == ["reported"]


def test_report_lines_of_a_threaded_program_are_whole() -> None:
    # Frames of several threads at once: each table stays under its own header.
    result = pyframe_cli("locals", "--match", "square", "thread_pool.py")
    lines = report_lines(result.stderr)
    assert len(lines) == 5 * 3
    for i in range(0, 15, 3):
        assert HEADER.match(lines[i])["qualname"] == "square"
        assert lines[i + 1].split() == ["#", "name", "kind", "value"]
        assert lines[i + 2].split()[:3] == ["0", "n", "local"]
    assert len(headers(result.stderr)) == 5
