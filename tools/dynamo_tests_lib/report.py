"""The table: per file, the tests that pass natively and how many of those pass on pyframe.

One results source gives one table; several (one per torch/CPython pair)
give one table with a group of columns each.  Then every test that passes
natively and not on pyframe, with its outcome and the first line of its
failure, and the cause recorded for it in causes.toml when there is one.
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from dataclasses import dataclass

from .store import FileRecord, ModeRun

CAUSES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "causes.toml")


@dataclass
class Source:
    label: str  # "torch 2.13.0+cpu, CPython 3.11.7"
    records: dict[str, FileRecord]


@dataclass
class Counts:
    tests: int
    native: int
    kept: int

    @property
    def share(self) -> str:
        return f"{100.0 * self.kept / self.native:.1f}%" if self.native else "-"


def passing(run: ModeRun) -> list[str]:
    return sorted(t for t, (outcome, _) in run.tests.items() if outcome == "passed")


def counts(record: FileRecord) -> Counts:
    native, ours = record.run("native"), record.run("pyframe")
    passed = passing(native)
    kept = sum(1 for t in passed if ours.tests.get(t, ("-", ""))[0] == "passed")
    return Counts(len(native.tests), len(passed), kept)


def note(record: FileRecord) -> str:
    notes = []
    for mode, run in record.runs.items():
        if run.status != "done":
            notes.append(f"{mode} {run.status}")
        elif run.parts > 1:
            notes.append(f"{mode} in {run.parts} parts")
    for mode in ("native", "pyframe"):
        if mode not in record.runs:
            notes.append(f"{mode} not run")
    return "; ".join(notes)


def load_causes(path: str = CAUSES) -> list[dict]:
    """[{tests: [file::id glob, ...], cause: text, sources: [label glob, ...]}]"""
    if not os.path.exists(path):
        return []
    with open(path, "rb") as handle:
        return tomllib.load(handle).get("cause", [])


def cause_of(causes: list[dict], source: Source, test: str) -> str | None:
    for entry in causes:
        sources = entry.get("sources", ["*"])
        if not any(fnmatch.fnmatchcase(source.label, pattern) for pattern in sources):
            continue
        if any(fnmatch.fnmatchcase(test, pattern) for pattern in entry["tests"]):
            return entry["cause"]
    return None


def table(sources: list[Source]) -> list[str]:
    names = sorted({name for source in sources for name in source.records})
    header = ["file"]
    rule = ["---"]
    for source in sources:
        prefix = f"{short(source.label)}: " if len(sources) > 1 else ""
        header += [f"{prefix}tests", "native pass", "pyframe pass", "share", "note"]
        rule += ["---:", "---:", "---:", "---:", "---"]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    totals = [Counts(0, 0, 0) for _ in sources]
    for name in names:
        row = [f"`{name}`"]
        for index, source in enumerate(sources):
            record = source.records.get(name)
            if record is None:
                row += ["", "", "", "", "not run"]
                continue
            found = counts(record)
            total = totals[index]
            total.tests += found.tests
            total.native += found.native
            total.kept += found.kept
            row += [str(found.tests), str(found.native), str(found.kept), found.share, note(record)]
        lines.append("| " + " | ".join(row) + " |")
    row = [f"**total ({len(names)} files)**"]
    for total in totals:
        row += [str(total.tests), str(total.native), str(total.kept), total.share, ""]
    lines.append("| " + " | ".join(row) + " |")
    return lines


def short(label: str) -> str:
    # "torch 2.13.0+cpu, CPython 3.11.7" -> "2.13.0+cpu/3.11"
    torch_part, python_part = label.split(", ")
    python = ".".join(python_part.split()[-1].split(".")[:2])
    return f"{torch_part.split()[-1]}/{python}"


def not_run(sources: list[Source]) -> list[str]:
    """The files whose native run ended with no test run (mostly a file of
    another release that does not import with this one), and why."""
    lines: list[str] = []
    for source in sources:
        found = []
        for name in sorted(source.records):
            native = source.records[name].run("native")
            if not native.tests:
                found.append(f"- `{name}`: {native.status}: {native.detail}")
        if found:
            lines += ["", f"{source.label}: {len(found)} files ran no test natively", *found]
    return lines


def failures(sources: list[Source], causes: list[dict]) -> tuple[list[str], int]:
    """The lines listing every native-pass/pyframe-fail test, and how many have no cause."""
    lines: list[str] = []
    unexplained = 0
    for source in sources:
        found = []
        for name in sorted(source.records):
            record = source.records[name]
            ours = record.run("pyframe").tests
            for test_id in passing(record.run("native")):
                outcome, detail = ours.get(test_id, ("not run", ""))
                if outcome != "passed":
                    found.append((f"{name}::{test_id}", outcome, detail))
        lines.append("")
        lines.append(f"{source.label}: {len(found)} tests pass natively and not on pyframe")
        for test, outcome, detail in found:
            cause = cause_of(causes, source, test)
            if cause is None:
                unexplained += 1
            lines.append(f"- `{test}`: {outcome}: {detail}")
            lines.append(f"  cause: {cause or 'NOT EXPLAINED'}")
    return lines, unexplained
