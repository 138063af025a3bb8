"""tools/dynamo_tests.py's command line: select, run what is not done, save, report.

Exit status: 0 when every test that passes natively passes on pyframe or
has a recorded cause, 1 otherwise, 2 when the run could not be set up.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from .report import Source, failures, load_causes, not_run, table
from .runner import Settings, progress, run_mode
from .selection import SelectionError, TestFile, parse_shard, select
from .store import FINAL, MODES, FileRecord, event_path, read_results, results_name, write_results

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(TOOLS, "dynamo_tests_results")

PROBE = """
import json, os, platform, importlib.util
import torch
found = {"torch": torch.__version__, "git": torch.version.git_version,
         "python": platform.python_version(),
         "pytest_timeout": importlib.util.find_spec("pytest_timeout") is not None}
if os.environ.get("PYFRAME_DYNAMO") == "1":
    import torch._dynamo, pyframe.dynamo
    found["installed"] = pyframe.dynamo.is_installed()
    found["pyframe"] = os.path.dirname(pyframe.__file__)
print(json.dumps(found))
"""


def parse_args(argv: list[str] | None, description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="tools/dynamo_tests.py",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("paths", nargs="*", metavar="PATH", help="test files, directories, list files")
    add("--python", default=sys.executable, help="the interpreter (a venv with torch)")
    add("--root", default=".", help="files are named relative to it (default: .)")
    add("--manifest", help="TSV of path (relative to it) and commit: the files' sources")
    add("--shard", help="I/N: run the I-th of N shards of the files")
    add(
        "--out",
        default=os.path.join(tempfile.gettempdir(), "dynamo_tests"),
        metavar="DIR",
        help="event files and logs, for going on after an interruption (default %(default)s)",
    )
    add(
        "--results",
        default=RESULTS,
        metavar="DIR",
        help="the committed results, one file per torch and CPython (default %(default)s)",
    )
    add("--modes", default=",".join(MODES), help="which runs to make (default %(default)s)")
    add(
        "--rerun",
        nargs="?",
        const=",".join(status.replace(" ", "-") for status in FINAL),
        default="",
        metavar="STATUS,...",
        help="run finished files again (the --modes runs); with statuses, only runs that "
        "ended so (done, timed-out, crashed, collection-error)",
    )
    add(
        "--per-test-timeout",
        type=float,
        default=300,
        metavar="S",
        help="pytest-timeout per test, 0 for none (default %(default)s)",
    )
    add(
        "--file-timeout",
        type=float,
        default=3600,
        metavar="S",
        help="per file and mode, over all its parts (default %(default)s)",
    )
    add(
        "--report",
        nargs="*",
        metavar="RESULTS_FILE",
        help="print the table from saved results only (default: --python's results file)",
    )
    add("--pytest-args", nargs=argparse.REMAINDER, default=[], help="passed on to pytest")
    args = parser.parse_args(argv)
    args.modes = [mode for mode in args.modes.split(",") if mode]
    args.rerun = {status.replace("-", " ") for status in args.rerun.split(",") if status}
    if args.rerun - set(FINAL):
        parser.error(f"--rerun {','.join(sorted(args.rerun - set(FINAL)))}: not a status")
    unknown = set(args.modes) - set(MODES)
    if unknown:
        parser.error(f"--modes {','.join(sorted(unknown))}: expected some of {', '.join(MODES)}")
    if args.report is None and not args.paths:
        parser.error("name the test files, directories or list files to run (or --report)")
    try:
        args.shard = parse_shard(args.shard) if args.shard else None
    except SelectionError as error:
        parser.error(str(error))
    return args


def probe(python: str) -> dict:
    """The interpreter's torch and CPython, and that PYFRAME_DYNAMO=1 installs pyframe there."""
    found: dict = {}
    for value in ("0", "1"):
        done = subprocess.run(
            [python, "-c", PROBE],
            env=dict(os.environ, PYFRAME_DYNAMO=value),
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            raise RuntimeError(f"{python} cannot import torch (or pyframe.dynamo):\n{done.stderr}")
        found.update(json.loads(done.stdout.splitlines()[-1]))
    if not found.get("installed"):
        raise RuntimeError(
            f"PYFRAME_DYNAMO=1 does not install pyframe.dynamo in {python}: is "
            "pyframe-dynamo.pth in its site-packages?"
        )
    return found


def label(versions: dict[str, str]) -> str:
    return f"torch {versions['torch']}, CPython {versions['python']}"


def report(paths: list[str]) -> int:
    sources = []
    for path in paths:
        versions, records = read_results(path)
        if not versions:
            print(f"{path}: no results there", file=sys.stderr)
            return 2
        sources.append(Source(label(versions), records))
    print("\n".join(table(sources) + not_run(sources)))
    lines, unexplained = failures(sources, load_causes())
    print("\n".join(lines))
    return 1 if unexplained else 0


def main(argv: list[str] | None = None, description: str = "") -> int:
    args = parse_args(argv, description)
    if args.report:
        return report(args.report)
    try:
        found = probe(args.python)
    except RuntimeError as error:
        print(error, file=sys.stderr)
        return 2
    results = os.path.join(args.results, results_name(found["torch"], found["python"]))
    if args.report is not None:
        return report([results])
    if args.per_test_timeout and not found["pytest_timeout"]:
        print(f"--per-test-timeout needs pytest-timeout in {args.python}", file=sys.stderr)
        return 2
    try:
        files = select(args.paths, args.root, args.manifest, args.shard)
    except (SelectionError, OSError) as error:
        print(error, file=sys.stderr)
        return 2
    versions = {"torch": found["torch"], "git": found["git"], "python": found["python"]}
    progress(
        f"{label(versions)}, pyframe from {found['pyframe']}; {len(files)} files; "
        f"results in {results}"
    )
    settings = Settings(
        python=args.python,
        out=args.out,
        versions=f"torch-{found['torch']}-py{found['python']}",
        per_test_timeout=args.per_test_timeout,
        file_timeout=args.file_timeout,
        pytest_args=args.pytest_args,
    )
    # Stopped by a signal, the tool ends its pytest process group and leaves
    # the event files to go on from.  SIGINT too where the tool was started
    # in the background (which ignores it).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        run_files(args, settings, files, versions, results)
    except KeyboardInterrupt:
        progress("interrupted: the same command goes on where this run stopped")
        return 130
    return report([results])


def run_files(
    args: argparse.Namespace,
    settings: Settings,
    files: list[TestFile],
    versions: dict[str, str],
    results: str,
) -> None:
    started = time.monotonic()
    for index, test_file in enumerate(files, 1):
        minutes = (time.monotonic() - started) / 60
        tag = f"[{index}/{len(files)}, {minutes:.0f} min] {test_file.name}"
        for mode in args.modes:
            events = event_path(
                settings.out, settings.versions, mode, test_file.name, test_file.sha
            )
            record = current_record(results, test_file)
            if record.run(mode).status in args.rerun:
                # Start over; an interrupted rerun goes on from its events.
                if os.path.exists(events):
                    os.remove(events)
                del record.runs[mode]
                save(results, versions, record)
            if record.run(mode).final:
                progress(f"{tag} {mode}: done before ({record.run(mode).status})")
                continue
            record.runs[mode] = run_mode(settings, test_file, mode, tag, events)
            save(results, versions, record)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def current_record(results: str, test_file: TestFile) -> FileRecord:
    """The file's saved record (read again: another shard may have written
    meanwhile), or a new one when there is none for this content."""
    record = read_results(results)[1].get(test_file.name)
    if record is None or record.sha != test_file.sha:
        record = FileRecord(test_file.name, test_file.sha, test_file.commit)
    record.commit = test_file.commit or record.commit
    return record


def save(results: str, versions: dict[str, str], record: FileRecord) -> None:
    saved = read_results(results)[1]
    saved[record.name] = record
    write_results(results, versions, saved)
