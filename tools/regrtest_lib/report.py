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

from .results import module_of


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
    if "pyframe" in args.modes:
        header.append(
            "pyframe callback: Compiled(frame.f_code.replace()) for every code object, in "
            + ("Python" if args.callback == "python" else "C (--callback c)")
            + ", installed in the main thread "
            + (
                "and in every threading.Thread (--threads)"
                if args.threads
                else "only (other threads: pyframe's hook as a pass-through; see --threads)"
            )
        )
    if args.extra:
        header.append("extra regrtest arguments: " + shlex.join(args.extra))
    return header


def print_report(header, extension, runs, comparison, log_dir, tests):
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
    print_details(runs, comparison, log_dir)
    print_summary(runs, comparison, tests)


def print_details(runs, comparison, log_dir):
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
    if comparison.comparable:
        references = "/".join(comparison.references)
        print()
        print_set("shared: fail under pyframe and without it (%s)" % references, comparison.shared)
        print()
        print_set(
            "fixed under pyframe (fail in a reference run, pass with pyframe)",
            set().union(*(runs[m].failures() for m in comparison.references))
            - runs["pyframe"].failures(),
        )


def print_summary(runs, comparison, tests):
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
    file_rows, quiet = [], 0
    for test in tests:
        cells = [run.cell(test) for run in runs.values()]
        counts = [
            len([t for t in ids if module_of(t) == test])
            for ids in (comparison.allowlisted, comparison.incomparable, comparison.offending)
        ]
        if all(c in ("ok", "skipped") for c in cells) and not any(counts):
            quiet += 1
            continue
        if comparison.comparable:
            cells += [n or "" for n in counts]
        file_rows.append([test, *cells])
    if file_rows:
        header = ["test file", *runs]
        if comparison.comparable:
            header += ["allowlisted", "incomparable", "OFFENDING"]
        print(table(file_rows, header))
    print("%d%s test file(s) pass in every mode" % (quiet, " other" if file_rows else ""))
    if comparison.comparable:
        print()
        counts = [
            ("shared (fail without pyframe too)", len(comparison.shared)),
            ("allowlisted (a copy of the code cannot pass)", len(comparison.allowlisted)),
            ("incomparable (a reference run did not finish)", len(comparison.incomparable)),
            ("offending", len(comparison.offending)),
        ]
        print(table(counts, ("pyframe failures", "ids")))
        if comparison.allowlisted:
            print()
            print("allowlisted (%d):" % len(comparison.allowlisted))
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
                "incomparable: fail under pyframe, a reference run did not finish the file",
                comparison.incomparable,
                {t: "(in %s)" % ", ".join(ms) for t, ms in comparison.incomparable.items()},
            )
        if comparison.offending:
            print()
            notes = {
                t: "[alone: pyframe %s, floorhook %s]" % (v["pyframe"], v["floorhook"])
                for t, v in comparison.rechecked.items()
            }
            print_set("OFFENDING: fail under pyframe only", comparison.offending, notes)
    print()
    print(comparison.verdict_line())


def write_json(path, args, log_dir, runs, comparison, extension):
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
        "shared": sorted(comparison.shared),
        "allowlisted": dict(sorted(comparison.allowlisted.items())),
        "stale_allowlist": comparison.stale,
        "incomparable": dict(sorted(comparison.incomparable.items())),
        "offending": sorted(comparison.offending),
        "recheck": comparison.rechecked,
        "verdict": comparison.verdict,
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
