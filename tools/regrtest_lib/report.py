"""The report: text on stdout, and the same results as JSON.

The text is a header (what ran, how), each mode's failing ids and how the
runs differ, then the summary tables, the allowlisted ids with their reasons
and the verdict line last.  The JSON file holds the same, per run and per
test file, for tools that read it.
"""

import json
import os
import platform
import shlex
import sys

from .compare import overall_verdict, overall_verdict_line
from .results import module_of

# What each run with a pyframe callback installs, for the header.
CALLBACKS = {
    "pyframe": "Compiled(frame.f_code.replace()) for every code object",
    "locals": "reads every value of every frame's f_locals (a dict) and lets the frame run",
    "spec": "the specialization mode on; skips half of all code objects, reads the other "
    "half's f_locals",
}


def print_set(title, ids, notes=None):
    print("%s (%d)" % (title, len(ids)))
    for test_id in sorted(ids):
        note = (notes or {}).get(test_id)
        print("    " + test_id + ("  " + note if note else ""))


def table(rows, header):
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, None, *rows]:
        if row is None:
            lines.append("  ".join("-" * w for w in widths))
        else:
            cells = (str(c).ljust(w) for c, w in zip(row, widths, strict=True))
            lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def wrap(text, indent, width=100):
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(indent) + len(line) + 1 + len(word) > width:
            lines.append(indent + line)
            line = word
        else:
            line = (line + " " + word) if line else word
    if line:
        lines.append(indent + line)
    return "\n".join(lines)


def header_lines(args, log_dir):
    """What runs and how: logged as the run starts, printed again atop the report."""
    header = [
        "pyframe regrtest: CPython %s, %s" % (platform.python_version(), sys.executable),
        "%d test files, -j%d, --timeout %d s, modes: %s; logs in %s"
        % (len(args.tests), args.jobs, args.timeout, ", ".join(args.modes), log_dir),
    ]
    threads = (
        "and in every threading.Thread (--threads)"
        if args.threads
        else "only (other threads: pyframe's hook as a pass-through; see --threads)"
    )
    for mode, callback in CALLBACKS.items():
        if mode in args.modes:
            language = (
                "C (--callback c)" if mode == "pyframe" and args.callback == "c" else "Python"
            )
            header.append(
                "%s callback: %s, in %s, installed in the main thread %s"
                % (mode, callback, language, threads)
            )
    if args.extra:
        header.append("extra regrtest arguments: " + shlex.join(args.extra))
    return header


def print_report(header, extension, runs, comparisons, log_dir, tests):
    """The whole text report, on stdout."""
    for line in header:
        print(line)
    if extension["path"]:
        print("pyframe extension: %s (sha256 %s)" % (extension["path"], extension["sha256"]))
        if extension["after"] != extension["sha256"]:
            print(
                "WARNING: the pyframe extension changed during the run (now %s)"
                % extension["after"]
            )
    print_details(runs, comparisons, log_dir)
    print_summary(runs, comparisons, tests)


def print_details(runs, comparisons, log_dir):
    """Every failing id of every run, and how the runs differ."""
    for mode, run in runs.items():
        print()
        print(
            "== %s: %.0f s, exit %d, %s, result %s; log %s"
            % (mode, run.seconds, run.returncode, run.main.totals, run.main.result, run.logs[0])
        )
        for test, ignored in sorted(run.continued.items()):
            logs = os.path.join(log_dir, "continue*-%s-%s.log" % (mode, test))
            print("   %s ran again without %s (logs %s)" % (test, " ".join(ignored), logs))
        print_set("failing test ids in the %s run" % mode, run.failures())
    if "none" in runs and "floorhook" in runs:
        print()
        print_set(
            "floorhook-only failures (fail under the pass-through hook, pass without)",
            runs["floorhook"].failures() - runs["none"].failures(),
        )
    for comparison in comparisons:
        if not comparison.comparable:
            continue
        mode, references = comparison.mode, "/".join(comparison.references)
        print()
        print_set(
            "%s shared: fail in it and without pyframe (%s)" % (mode, references), comparison.shared
        )
        print()
        print_set(
            "fixed in the %s run (fail in a reference run, pass there)" % mode,
            set().union(*(runs[m].failures() for m in comparison.references))
            - runs[mode].failures(),
        )


def print_summary(runs, comparisons, tests):
    """The tables and the verdict: the end of the report."""
    print()
    print("== summary: CPython %s, %d test files" % (platform.python_version(), len(tests)))
    rows = [
        (
            mode,
            "%.0f s" % run.seconds,
            run.returncode,
            run.tests_run(),
            len(run.failures()),
            ", ".join(sorted(run.continued)) or "-",
        )
        for mode, run in runs.items()
    ]
    print(table(rows, ("mode", "time", "exit", "test cases", "failing ids", "ran again")))
    print()
    comparable = [c for c in comparisons if c.comparable]
    file_rows, quiet = [], 0
    for test in tests:
        cells = [run.cell(test) for run in runs.values()]
        counts = [
            len([t for t in ids if module_of(t) == test])
            for c in comparable
            for ids in counted_ids(c)
        ]
        if all(c in ("ok", "skipped") for c in cells) and not any(counts):
            quiet += 1
            continue
        file_rows.append([test, *cells, *(n or "" for n in counts)])
    if file_rows:
        header = ["test file", *runs]
        for c in comparable:
            whats = ("allowlisted",) * c.has_allowlist + ("incomparable", "OFFENDING")
            header += ["%s %s" % (c.mode, what) for what in whats]
        print(table(file_rows, header))
    print("%d%s test file(s) pass in every mode" % (quiet, " other" if file_rows else ""))
    for comparison in comparable:
        print_comparison(comparison)
    print()
    for comparison in comparisons:
        print(comparison.verdict_line())
    print(overall_verdict_line(comparisons))


def counted_ids(comparison):
    """The sets of failing ids the file table counts for a comparison:
    allowlisted (where it has an allowlist), incomparable, offending."""
    sets = (comparison.incomparable, comparison.offending)
    return (comparison.allowlisted, *sets) if comparison.has_allowlist else sets


def print_comparison(comparison):
    """One pyframe run's failures, sorted, with the allowlist's reasons."""
    mode = comparison.mode
    print()
    counts = [
        ("shared (fail without pyframe too)", len(comparison.shared)),
        ("allowlisted (allowlist.toml says why)", len(comparison.allowlisted)),
        ("incomparable (a reference run did not finish)", len(comparison.incomparable)),
        ("offending", len(comparison.offending)),
    ]
    if not comparison.has_allowlist:
        del counts[1]
    print(table(counts, ("%s run's failures" % mode, "ids")))
    if comparison.allowlisted:
        print()
        print("allowlisted in the %s run (%d):" % (mode, len(comparison.allowlisted)))
        for test_id, reason in sorted(comparison.allowlisted.items()):
            print("    " + test_id)
            print(wrap(reason, " " * 8))
    if comparison.stale:
        print()
        print_set(
            "NOTE: allowlist patterns that matched no failure (pyframe or CPython changed?)",
            comparison.stale,
        )
    if comparison.incomparable:
        print()
        print_set(
            "incomparable: fail in the %s run, a reference run did not finish the file" % mode,
            comparison.incomparable,
            {t: "(in %s)" % ", ".join(ms) for t, ms in comparison.incomparable.items()},
        )
    if comparison.offending:
        print()
        notes = {
            t: "[alone: %s %s, floorhook %s]" % (mode, v[mode], v["floorhook"])
            for t, v in comparison.rechecked.items()
        }
        print_set("OFFENDING: fail in the %s run only" % mode, comparison.offending, notes)


def write_json(path, args, log_dir, runs, comparisons, extension):
    data = {
        "python": sys.executable,
        "version": platform.python_version(),
        "tests": args.tests,
        "jobs": args.jobs,
        "timeout": args.timeout,
        "threads": args.threads,
        "callback": args.callback,
        "extra": args.extra,
        "log_dir": log_dir,
        "pyframe_extension": extension,
        "runs": {
            mode: {
                "seconds": round(run.seconds, 1),
                "returncode": run.returncode,
                "totals": run.main.totals,
                "result": run.main.result,
                "test_cases": run.tests_run(),
                "status": run.main.status,
                "continued": run.continued,
                "failures": sorted(run.failures()),
                "logs": run.logs,
            }
            for mode, run in runs.items()
        },
        "files": {
            test: {mode: run.cell(test) for mode, run in runs.items()} for test in args.tests
        },
        "comparisons": {
            c.mode: {
                "shared": sorted(c.shared),
                "allowlisted": dict(sorted(c.allowlisted.items())),
                "stale_allowlist": c.stale,
                "incomparable": dict(sorted(c.incomparable.items())),
                "offending": sorted(c.offending),
                "recheck": c.rechecked,
                "verdict": c.verdict,
            }
            for c in comparisons
        },
        "verdict": overall_verdict(comparisons),
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
