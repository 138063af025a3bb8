"""Running one test file in one mode: pytest in its own process group, in parts.

A part is one pytest process over the file's tests not done yet.  When the
process dies inside a test (a crash in C, os._exit), that test is recorded
as crashed and the next part runs the rest; when the file's time is up
(--file-timeout, counted over every part and session) the process group is
killed, the test it was in recorded as timed out and the file as "timed
out", with everything done before kept.  Tests run from the file's
directory, as PyTorch's CI runs them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass

from .selection import TestFile
from .store import ModeRun, append_event, fold

PLUGIN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugin")
MODE_ENV = {"native": {"PYFRAME_DYNAMO": "0"}, "pyframe": {"PYFRAME_DYNAMO": "1"}}
MAX_PARTS = 50  # a file that crashes in more tests than this is recorded as crashed
PROGRESS_EVERY = 120.0  # seconds between progress lines while a part runs


@dataclass
class Settings:
    python: str
    out: str
    versions: str  # the (torch, CPython) pair, as a directory name
    per_test_timeout: float
    file_timeout: float
    pytest_args: list[str]


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def tally(run: ModeRun) -> str:
    counts = Counter(outcome for outcome, _ in run.tests.values())
    return ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())) or "no tests"


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def run_mode(
    settings: Settings, test_file: TestFile, mode: str, label: str, events: str
) -> ModeRun:
    """Run (or go on running) `test_file` in `mode` until it is final."""
    log = events[: -len(".jsonl")] + ".log"
    skip = events[: -len(".jsonl")] + ".skip"
    os.makedirs(os.path.dirname(events), exist_ok=True)
    run = fold(events)
    while not run.final:
        left = settings.file_timeout - run.seconds
        if left <= 0:
            append_event(events, {"status": "timed out", "detail": "no time left for this file"})
            break
        if run.parts >= MAX_PARTS:
            append_event(events, {"status": "crashed", "detail": f"{MAX_PARTS} parts"})
            break
        part = run.parts + 1
        with open(skip, "w") as handle:
            handle.writelines(f"{test_id}\n" for test_id in run.tests)
        append_event(events, {"begin": part})
        progress(f"{label} {mode}: part {part}, {len(run.tests)} tests done before")
        returncode, seconds, timed_out = _run_part(
            settings, test_file, mode, events, skip, log, left, label
        )
        append_event(events, {"seconds": seconds, "part": part, "returncode": returncode})
        run = fold(events)
        stopped_in = run.in_progress
        if timed_out:
            if stopped_in:
                append_event(
                    events,
                    {
                        "test": stopped_in,
                        "outcome": "timeout",
                        "detail": f"the file's {settings.file_timeout:.0f} s were up in this test",
                    },
                )
            append_event(
                events,
                {"status": "timed out", "detail": f"after {settings.file_timeout:.0f} s"},
            )
        elif stopped_in:
            # The process ended inside a test: record it and run the rest.
            append_event(
                events,
                {
                    "test": stopped_in,
                    "outcome": "crashed",
                    "detail": f"the process ended in this test ({describe_exit(returncode)})",
                },
            )
        elif run.detail and not run.tests:
            append_event(events, {"status": "collection error", "detail": run.detail})
        elif returncode in (0, 1, 5):  # pytest: all passed, some failed, none collected
            append_event(events, {"status": "done"})
        else:
            append_event(
                events,
                {"status": "crashed", "detail": f"{describe_exit(returncode)}; see {log}"},
            )
        run = fold(events)
    progress(f"{label} {mode}: {run.status}, {run.seconds:.0f} s, {tally(run)}")
    return run


def _run_part(
    settings: Settings,
    test_file: TestFile,
    mode: str,
    events: str,
    skip: str,
    log: str,
    limit: float,
    label: str,
) -> tuple[int, float, bool]:
    """(pytest's exit status, seconds, whether the time limit stopped it)."""
    command = [
        settings.python,
        "-m",
        "pytest",
        os.path.basename(test_file.path),
        "-p",
        "dynamo_tests_plugin",
        "-p",
        "no:cacheprovider",
        "-q",
        "-rfE",
        "--tb=short",
    ]
    if settings.per_test_timeout:
        command.append(f"--timeout={settings.per_test_timeout:g}")
    command += settings.pytest_args
    path = os.environ.get("PYTHONPATH")
    env = dict(
        os.environ,
        **MODE_ENV[mode],
        PYTHONPATH=PLUGIN_DIR + (os.pathsep + path if path else ""),
        DYNAMO_TESTS_EVENTS=events,
        DYNAMO_TESTS_SKIP=skip,
    )
    started = time.monotonic()
    timed_out = False
    with open(log, "a") as output:
        output.write(f"\n===== part, {' '.join(command)}\n")
        output.flush()
        # A process group of its own, so that a time limit ends the
        # subprocesses a test started too.
        process = subprocess.Popen(
            command,
            cwd=os.path.dirname(test_file.path),
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            next_line = started + PROGRESS_EVERY
            while process.poll() is None:
                now = time.monotonic()
                if now - started > limit:
                    timed_out = True
                    _kill_group(process)
                    break
                if now >= next_line:
                    next_line += PROGRESS_EVERY
                    progress(f"{label} {mode}: {now - started:.0f} s, {tally(fold(events))}")
                time.sleep(1.0)
        except BaseException:
            _kill_group(process)  # interrupted: the event file lets a later run go on
            raise
    return process.returncode, time.monotonic() - started, timed_out


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
