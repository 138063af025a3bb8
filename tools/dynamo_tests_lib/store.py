"""What a run found, kept two ways.

While a file runs, each (file, mode) has an event file under --out: the
plugin's lines (tests started and ended) and the tool's (each part of the
run, the final status), folded into a ModeRun.  A run that stops half way
(the tool interrupted, the machine gone) goes on from its event file.

When a file is finished, its record goes into the results file of the
(torch, CPython) pair, a compact TSV meant to be committed (test ids,
outcomes and the first line of failures: our measurements, none of
PyTorch's code), so that the next session, on a fresh machine, skips what
is done and --report can print the table from it alone.  A record counts
for a file only while the file's content hash is the same.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

MODES = ("native", "pyframe")
# A run in one of these states is not run again unless asked (--rerun).
FINAL = ("done", "timed out", "crashed", "collection error")

Outcome = tuple[str, str]  # (outcome, first line of the failure or "")


@dataclass
class ModeRun:
    status: str = "not run"  # FINAL, "running" (unfinished) or "not run"
    tests: dict[str, Outcome] = field(default_factory=dict)
    seconds: float = 0.0
    parts: int = 0
    detail: str = ""  # why the file as a whole ended as it did
    in_progress: str | None = None  # started in the last part and never ended

    @property
    def final(self) -> bool:
        return self.status in FINAL


@dataclass
class FileRecord:
    name: str
    sha: str
    commit: str
    runs: dict[str, ModeRun] = field(default_factory=dict)

    def run(self, mode: str) -> ModeRun:
        return self.runs.get(mode) or ModeRun()


def clean(text: str, limit: int = 200) -> str:
    return " ".join(text.split())[:limit]


# --- event files -------------------------------------------------------------


def event_path(out: str, versions: str, mode: str, name: str, sha: str) -> str:
    flat = name.replace(os.sep, "%")
    return os.path.join(out, "events", versions, mode, f"{flat}.{sha}.jsonl")


def append_event(path: str, event: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as handle:
        handle.write(json.dumps(event) + "\n")


def fold(path: str) -> ModeRun:
    run = ModeRun()
    if not os.path.exists(path):
        return run
    run.status = "running"
    with open(path) as handle:
        for line in handle:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a kill
            if "begin" in event:
                run.parts = event["begin"]
                run.in_progress = None
            elif "start" in event:
                run.in_progress = event["start"]
            elif "test" in event:
                run.tests[event["test"]] = (event["outcome"], clean(event["detail"]))
                if run.in_progress == event["test"]:
                    run.in_progress = None
            elif "collect_error" in event:
                run.detail = clean(f"{event['collect_error']}: {event['detail']}")
            elif "seconds" in event:
                run.seconds += event["seconds"]
            elif "status" in event:
                run.status = event["status"]
                run.detail = clean(event.get("detail", run.detail))
    return run


# --- the committed results file ----------------------------------------------
#
#   version<TAB>torch=...<TAB>git=...<TAB>python=...
#   file<TAB>NAME<TAB>SHA<TAB>COMMIT
#   run<TAB>MODE<TAB>STATUS<TAB>SECONDS<TAB>PARTS<TAB>DETAIL
#   test<TAB>ID<TAB>NATIVE<TAB>PYFRAME<TAB>DETAIL
#
# run and test lines belong to the file line above them.  An outcome is "-"
# where the mode did not run the test.  DETAIL is the first line of pyframe's
# failure where the test passed natively, else of the native failure; skips
# keep no reason (they are many and say "not on this device" mostly).

HEADER = (
    "# tools/dynamo_tests.py results (see its docstring): per PyTorch test file,\n"
    "# each mode's run and each test's outcome natively and on pyframe.\n"
)


def results_name(torch_version: str, python_version: str) -> str:
    major_minor = ".".join(python_version.split(".")[:2])
    return f"torch-{torch_version}-py{major_minor}.tsv"


def read_results(path: str) -> tuple[dict[str, str], dict[str, FileRecord]]:
    versions: dict[str, str] = {}
    records: dict[str, FileRecord] = {}
    if not os.path.exists(path):
        return versions, records
    record = None
    with open(path) as handle:
        for number, line in enumerate(handle, 1):
            if line.startswith("#") or not line.strip():
                continue
            kind, *fields = line.rstrip("\n").split("\t")
            if kind == "version":
                versions = dict(item.split("=", 1) for item in fields)
            elif kind == "file":
                name, sha, commit = fields
                record = records[name] = FileRecord(name, sha, commit)
            elif kind == "run" and record is not None:
                mode, status, seconds, parts, detail = fields
                record.runs[mode] = ModeRun(status, {}, float(seconds), int(parts), detail)
            elif kind == "test" and record is not None:
                test_id, native, ours, detail = fields
                for mode, outcome in zip(MODES, (native, ours), strict=True):
                    if outcome != "-":
                        run = record.runs.setdefault(mode, ModeRun("running"))
                        run.tests[test_id] = (outcome, _detail_for(mode, native, ours, detail))
            else:
                raise ValueError(f"{path}:{number}: cannot read {line!r}")
    return versions, records


def _detail_for(mode: str, native: str, ours: str, detail: str) -> str:
    shown_for = "pyframe" if native == "passed" else "native"
    own = ours if mode == "pyframe" else native
    return detail if mode == shown_for and own not in ("passed", "skipped") else ""


def write_results(path: str, versions: dict[str, str], records: dict[str, FileRecord]) -> None:
    lines = [HEADER, "version\t" + "\t".join(f"{k}={v}" for k, v in versions.items()) + "\n"]
    for name in sorted(records):
        record = records[name]
        lines.append(f"file\t{record.name}\t{record.sha}\t{record.commit}\n")
        for mode in MODES:
            if mode in record.runs:
                run = record.runs[mode]
                lines.append(
                    f"run\t{mode}\t{run.status}\t{run.seconds:.0f}\t{run.parts}\t"
                    f"{clean(run.detail)}\n"
                )
        native, ours = record.run("native").tests, record.run("pyframe").tests
        for test_id in sorted(set(native) | set(ours)):
            n_outcome, n_detail = native.get(test_id, ("-", ""))
            o_outcome, o_detail = ours.get(test_id, ("-", ""))
            if n_outcome == "passed":
                detail = o_detail if o_outcome not in ("passed", "skipped") else ""
            else:
                detail = n_detail if n_outcome not in ("skipped", "-") else ""
            lines.append(f"test\t{test_id}\t{n_outcome}\t{o_outcome}\t{clean(detail, 160)}\n")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    temporary = path + ".tmp"
    with open(temporary, "w") as handle:
        handle.writelines(lines)
    os.replace(temporary, path)
