#!/usr/bin/env python3
"""Run test files natively and with TorchDynamo on pyframe; compare per test.

Usage: tools/dynamo_tests.py [--python PY] [--timeout S] [--json OUT] FILE...

Each FILE (a pytest-runnable test file, PyTorch's test/dynamo ones for
example, kept outside this repository) runs twice with PY (default: this
interpreter), each in its own process, from the file's directory: once
natively and once with PYFRAME_DYNAMO=1 (pyframe.dynamo.install() at start,
through pyframe-dynamo.pth).  The report counts, per file, the tests that
pass natively, how many of those pass on pyframe, and lists the others with
the first line of their failure.  Exit status 0 when every test that passes
natively passes on pyframe.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

MODES = {"native": {"PYFRAME_DYNAMO": "0"}, "pyframe": {"PYFRAME_DYNAMO": "1"}}


def run_file(python: str, path: str, mode: str, timeout: float) -> dict[str, tuple[str, str]]:
    """{test id: (outcome, first line of its failure)} for one run."""
    env = dict(os.environ, **MODES[mode])
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.xml")
        command = [
            python,
            "-m",
            "pytest",
            os.path.basename(path),
            "-q",
            "-p",
            "no:cacheprovider",
            "--junitxml",
            report,
            "-o",
            "junit_family=xunit1",
        ]
        started = time.monotonic()
        try:
            subprocess.run(
                command,
                cwd=os.path.dirname(os.path.abspath(path)),
                env=env,
                timeout=timeout,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired:
            print(f"  {mode}: timed out after {timeout:.0f} s", file=sys.stderr)
        print(f"  {mode}: {time.monotonic() - started:.0f} s", file=sys.stderr)
        if not os.path.exists(report):
            return {}
        return parse_junit(report)


def parse_junit(report: str) -> dict[str, tuple[str, str]]:
    results = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        outcome, detail = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                detail = (child.get("message") or "").strip().splitlines()[:1]
                detail = detail[0][:200] if detail else ""
                break
            if child.tag == "skipped":
                outcome = "skipped"
        results[test_id] = (outcome, detail)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--json", help="write the per-test results here")
    args = parser.parse_args()

    check = subprocess.run(
        [args.python, "-c", "import torch._dynamo, pyframe.dynamo as d; print(d.is_installed())"],
        env=dict(os.environ, PYFRAME_DYNAMO="1"),
        capture_output=True,
        text=True,
        check=False,
    )
    if check.stdout.strip() != "True":
        print(
            "PYFRAME_DYNAMO=1 does not install pyframe.dynamo in this interpreter "
            "(is pyframe-dynamo.pth in its site-packages?):\n" + check.stderr,
            file=sys.stderr,
        )
        return 2

    everything = {}
    total_native = total_ours = 0
    lines = []
    for path in args.files:
        print(f"{os.path.basename(path)}:", file=sys.stderr)
        native = run_file(args.python, path, "native", args.timeout)
        ours = run_file(args.python, path, "pyframe", args.timeout)
        passing = sorted(t for t, (outcome, _) in native.items() if outcome == "passed")
        kept = [t for t in passing if ours.get(t, ("missing", ""))[0] == "passed"]
        total_native += len(passing)
        total_ours += len(kept)
        share = 100.0 * len(kept) / len(passing) if passing else 100.0
        lines.append(
            f"{os.path.basename(path):40} {len(native):5} tests  native pass "
            f"{len(passing):5}  pyframe pass {len(kept):5}  {share:6.2f}%"
        )
        for test_id in passing:
            if test_id not in kept:
                outcome, detail = ours.get(test_id, ("missing", ""))
                lines.append(f"    {outcome}: {test_id}: {detail}")
        everything[path] = {"native": native, "pyframe": ours}
    share = 100.0 * total_ours / total_native if total_native else 100.0
    lines.append(
        f"{'total':40} {'':11} native pass {total_native:5}  pyframe pass "
        f"{total_ours:5}  {share:6.2f}%"
    )
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(everything, out, indent=1)
    return 0 if total_ours == total_native else 1


if __name__ == "__main__":
    sys.exit(main())
