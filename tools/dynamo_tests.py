#!/usr/bin/env python3
"""Run test files natively and with TorchDynamo on pyframe; compare per test.

Usage: tools/dynamo_tests.py [--python PY] [--out DIR] [--per-test-timeout S]
                             [--reuse-native] [--only native|pyframe] FILE...

Each FILE (a pytest-runnable test file, PyTorch's test/dynamo ones for
example, kept outside this repository) runs twice with PY (default: this
interpreter), each in its own process, from the file's directory: once
natively and once with PYFRAME_DYNAMO=1 (pyframe.dynamo.install() at start,
through the pyframe-dynamo.pth that pyframe's wheel installs).  The report
counts, per file, the tests that pass natively, how many of those pass on
pyframe, and lists the others with the first line of their failure.

--out DIR keeps each run's JUnit XML and pytest output
(DIR/NAME.MODE.xml, DIR/NAME.MODE.log: the tracebacks to read) and the
per-test results (DIR/results.json, file by file across runs);
--reuse-native then takes the native results found there instead of running
them again (they do not change when pyframe does).  --per-test-timeout stops
a test that hangs (pytest-timeout, which must be installed in PY's
environment) instead of the whole file.
Exit status 0 when every test that passes natively passes on pyframe.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

MODES = {"native": {"PYFRAME_DYNAMO": "0"}, "pyframe": {"PYFRAME_DYNAMO": "1"}}

Results = dict[str, tuple[str, str]]


def run_file(args: argparse.Namespace, path: str, mode: str, out: str) -> Results:
    """{test id: (outcome, first line of its failure)} for one run; the
    run's JUnit XML and output are left in `out`."""
    name = os.path.basename(path)
    report = os.path.join(out, f"{name}.{mode}.xml")
    log = os.path.join(out, f"{name}.{mode}.log")
    command = [
        args.python,
        "-m",
        "pytest",
        name,
        "-p",
        "no:cacheprovider",
        "-rfE",
        "--tb=short",
        "--junitxml",
        report,
        "-o",
        "junit_family=xunit1",
    ]
    if args.per_test_timeout:
        command.append(f"--timeout={args.per_test_timeout:g}")
    command += args.pytest_args
    env = dict(os.environ, **MODES[mode])
    started = time.monotonic()
    print(f"  {mode}: running (output in {log})", file=sys.stderr, flush=True)
    with open(log, "w") as output:
        try:
            subprocess.run(
                command,
                cwd=os.path.dirname(os.path.abspath(path)),
                env=env,
                timeout=args.timeout,
                stdout=output,
                stderr=subprocess.STDOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            print(f"  {mode}: timed out after {args.timeout:.0f} s", file=sys.stderr)
    results = parse_junit(report) if os.path.exists(report) else {}
    counts = summarize(results)
    print(
        f"  {mode}: {time.monotonic() - started:.0f} s, {counts}",
        file=sys.stderr,
        flush=True,
    )
    return results


def summarize(results: Results) -> str:
    tally: dict[str, int] = {}
    for outcome, _ in results.values():
        tally[outcome] = tally.get(outcome, 0) + 1
    return ", ".join(f"{n} {outcome}" for outcome, n in sorted(tally.items())) or "no results"


def parse_junit(report: str) -> Results:
    results = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        outcome, detail = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                lines = (child.get("message") or "").strip().splitlines()[:1]
                detail = lines[0][:200] if lines else ""
                break
            if child.tag == "skipped":
                outcome = "skipped"
        results[test_id] = (outcome, detail)
    return results


def check_interpreter(python: str) -> str | None:
    """None when PYFRAME_DYNAMO=1 installs pyframe.dynamo in `python`, else why not."""
    check = subprocess.run(
        [python, "-c", "import torch._dynamo, pyframe.dynamo as d; print(d.is_installed())"],
        env=dict(os.environ, PYFRAME_DYNAMO="1"),
        capture_output=True,
        text=True,
        check=False,
    )
    if check.stdout.strip() == "True":
        return None
    return (
        f"PYFRAME_DYNAMO=1 does not install pyframe.dynamo in {python} "
        "(is pyframe-dynamo.pth in its site-packages? install pyframe as a wheel):\n" + check.stderr
    )


def compare(path: str, native: Results, ours: Results) -> tuple[int, int, list[str]]:
    passing = sorted(t for t, (outcome, _) in native.items() if outcome == "passed")
    kept = [t for t in passing if ours.get(t, ("missing", ""))[0] == "passed"]
    share = 100.0 * len(kept) / len(passing) if passing else 100.0
    lines = [
        f"{os.path.basename(path):40} {len(native):5} tests  native pass "
        f"{len(passing):5}  pyframe pass {len(kept):5}  {share:6.2f}%"
    ]
    for test_id in passing:
        if test_id not in kept:
            outcome, detail = ours.get(test_id, ("missing", ""))
            lines.append(f"    {outcome}: {test_id}: {detail}")
    return len(passing), len(kept), lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--timeout", type=float, default=3600, help="per file and mode, seconds")
    parser.add_argument(
        "--per-test-timeout", type=float, default=0, help="seconds (pytest-timeout)"
    )
    parser.add_argument("--out", help="keep logs, JUnit XML and results.json here")
    parser.add_argument(
        "--reuse-native", action="store_true", help="take native results from --out"
    )
    parser.add_argument("--only", choices=sorted(MODES), help="run one mode (the other from --out)")
    parser.add_argument("--pytest-args", nargs=argparse.REMAINDER, default=[], help="passed on")
    parser.add_argument("--json", help="write the per-test results here too")
    args = parser.parse_args()

    missing = [path for path in args.files if not os.path.isfile(path)]
    if missing:
        parser.error(f"no such test file: {', '.join(missing)}")
    if (args.reuse_native or args.only) and not args.out:
        parser.error("--reuse-native and --only read earlier results from --out DIR")
    if args.per_test_timeout:
        probe = subprocess.run(
            [args.python, "-c", "import pytest_timeout"], capture_output=True, check=False
        )
        if probe.returncode:
            parser.error(f"--per-test-timeout needs pytest-timeout installed for {args.python}")
    problem = check_interpreter(args.python)
    if problem:
        print(problem, file=sys.stderr)
        return 2

    temporary = None
    out = args.out
    if out is None:
        out = temporary = tempfile.mkdtemp(prefix="dynamo_tests-")
    os.makedirs(out, exist_ok=True)
    try:
        everything: dict[str, dict[str, Results]] = {}
        total_native = total_ours = 0
        lines: list[str] = []
        for path in args.files:
            print(f"{os.path.basename(path)}:", file=sys.stderr, flush=True)
            runs: dict[str, Results] = {}
            for mode in MODES:
                saved = os.path.join(out, f"{os.path.basename(path)}.{mode}.xml")
                reuse = (mode == "native" and args.reuse_native) or (
                    args.only is not None and mode != args.only
                )
                if reuse:
                    if not os.path.exists(saved):
                        print(f"  {mode}: no earlier results at {saved}", file=sys.stderr)
                        return 2
                    runs[mode] = parse_junit(saved)
                    print(f"  {mode}: earlier results, {summarize(runs[mode])}", file=sys.stderr)
                else:
                    runs[mode] = run_file(args, path, mode, out)
            passing, kept, file_lines = compare(path, runs["native"], runs["pyframe"])
            total_native += passing
            total_ours += kept
            lines += file_lines
            everything[path] = runs
        share = 100.0 * total_ours / total_native if total_native else 100.0
        lines.append(
            f"{'total':40} {'':11} native pass {total_native:5}  pyframe pass "
            f"{total_ours:5}  {share:6.2f}%"
        )
        print("\n".join(lines))
        if args.json:
            with open(args.json, "w") as handle:
                json.dump(everything, handle, indent=1)
        if args.out:
            # One results.json for everything run with this --out, file by file.
            kept_results = os.path.join(out, "results.json")
            merged: dict[str, dict[str, Results]] = {}
            if os.path.exists(kept_results):
                with open(kept_results) as handle:
                    merged = json.load(handle)
            merged.update(everything)
            with open(kept_results, "w") as handle:
                json.dump(merged, handle, indent=1)
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
    return 0 if total_ours == total_native else 1


if __name__ == "__main__":
    sys.exit(main())
