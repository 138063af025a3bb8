"""tools/regrtest.py's command line: its options, and the run from start to end.

parse_args checks every option (and that this interpreter is a supported
CPython with pyframe importable) before anything runs; main sets the runs up,
runs each mode, compares, rechecks, reports, and turns the verdict into the
exit status: 0 PASS (or no verdict), 1 FAIL, 2 INCOMPLETE or the runs could
not be set up, 130 interrupted.
"""

import argparse
import importlib.util
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile

from .compare import Comparison, overall_verdict
from .report import header_lines, print_report, write_json
from .runner import (
    ALLOWLISTED_MODES,
    MODES,
    PYFRAME_MODES,
    clean_log_dir,
    extension_digest,
    log,
    mode_env,
    preflight,
    prepare_sites,
    recheck,
    run_mode,
)
from .versions import DataError, load, running_version


def parse_args(argv, description):
    parser = argparse.ArgumentParser(
        prog="tools/regrtest.py",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "positional_tests",
        nargs="*",
        metavar="TEST",
        help="regrtest test files to run (default: a selection about frames, "
        "code objects, generators, tracing and introspection)",
    )
    parser.add_argument("--tests", nargs="+", default=[], metavar="TEST", help="the same")
    parser.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="regrtest -j (default %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=int,
        default=600,
        help="regrtest --timeout: seconds per test file (default %(default)s)",
    )
    parser.add_argument("--json", metavar="OUT", help="write the results as JSON to OUT")
    parser.add_argument(
        "--modes",
        default=None,
        help="comma-separated subset of %s (default: every mode this version can run: "
        "spec from 3.12, where pyframe has the specialization mode; a verdict needs pyframe, "
        "locals or spec and none or floorhook)" % ",".join(MODES),
    )
    parser.add_argument(
        "--threads",
        action="store_true",
        help="also install the pyframe callback in every threading.Thread",
    )
    parser.add_argument(
        "--callback",
        choices=("python", "c"),
        default="python",
        help="the pyframe run's callback: a Python function (default) or the same "
        "in C (tools/regrtest_site/freshcopy.c); the locals run's is Python",
    )
    parser.add_argument(
        "--log-dir", help="where regrtest's output goes (default: a new temporary directory)"
    )
    parser.add_argument(
        "--no-recheck",
        dest="recheck",
        action="store_false",
        help="do not re-run offending tests alone to see if they are flaky",
    )
    try:
        versions = load(ALLOWLISTED_MODES)
    except DataError as exc:
        parser.error(str(exc))
    version = running_version()
    parser.epilog = "Arguments after -- go to every `python -m test` run. Default tests: " + (
        " ".join(versions.named_tests(version))
    )
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1 :]
    args = parser.parse_args(argv)
    args.extra = extra

    if sys.implementation.name != "cpython" or version not in versions.supported:
        parser.error(
            "run this with CPython %s to %s (this is %s %s)"
            % (
                versions.supported[0],
                versions.supported[-1],
                platform.python_implementation(),
                platform.python_version(),
            )
        )
    if args.modes is None:
        modes = [m for m in MODES if versions.has_mode(m, version)]
    else:
        modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - set(MODES))
    if not modes or unknown:
        parser.error(
            "--modes takes a comma-separated subset of %s, not %r" % (",".join(MODES), args.modes)
        )
    for mode in modes:
        if not versions.has_mode(mode, version):
            parser.error(
                "--modes %s: the %s run needs CPython %s or later (tests.toml's [mode_since]), "
                "this is %s" % (mode, mode, versions.mode_since[mode], version)
            )
    args.modes = [m for m in MODES if m in modes]
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.timeout < 1:
        parser.error("--timeout must be a positive number of seconds")
    tests = list(dict.fromkeys(args.positional_tests + args.tests)) or versions.default_tests(
        version
    )
    missing = []
    for test in tests:
        if not re.match(r"^test_\w+$", test):
            parser.error("%r is not a regrtest test name (like test_frame)" % test)
        try:
            found = importlib.util.find_spec("test." + test)
        except ImportError:
            found = None
        if found is None:
            missing.append(test)
    if missing:
        parser.error("no such test in %s's test package: %s" % (sys.executable, " ".join(missing)))
    args.tests = tests
    args.allowlist = {mode: versions.allowlist_for(version, mode) for mode in ALLOWLISTED_MODES}
    if set(PYFRAME_MODES) & set(args.modes) and extension_digest()[0] is None:
        parser.error(
            "pyframe is not importable by %s: run this script with the python of a "
            "venv where pyframe is installed" % sys.executable
        )
    if args.log_dir and os.path.exists(args.log_dir) and not os.path.isdir(args.log_dir):
        parser.error("--log-dir %s exists and is not a directory" % args.log_dir)
    if args.json and os.path.isdir(args.json):
        parser.error("--json %s is a directory" % args.json)
    return args


def main(description, argv=None):
    """Run tools/regrtest.py; `description` is the first paragraph of its
    docstring (the help's description)."""
    args = parse_args(argv, description)
    modes, tests = args.modes, args.tests
    log_dir = os.path.abspath(args.log_dir or tempfile.mkdtemp(prefix="pyframe-regrtest-"))
    os.makedirs(log_dir, exist_ok=True)
    clean_log_dir(log_dir)

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # A shell starts background jobs with SIGINT ignored and the children
        # inherit that: CPython then installs no KeyboardInterrupt handler and
        # the tests of KeyboardInterrupt and _thread.interrupt_main fail, or
        # hang (test_threading's gh-102056 test recurses until its timeout).
        # A handler (unlike SIG_IGN) is reset to the default by exec.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        log("regrtest.py: SIGINT was ignored (a background job?): restored for the tests")
    header = header_lines(args, log_dir)
    for line in header:
        log(line)

    tmp = tempfile.mkdtemp(prefix="pyframe-regrtest-site-")
    runs = {}
    try:
        try:
            sites = prepare_sites(tmp, args.callback)
            envs = {
                mode: mode_env(mode, sites[mode], args.threads, args.callback) for mode in MODES
            }
            checks = {mode: preflight(mode, envs[mode], tmp, args.threads) for mode in modes}
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            log("regrtest.py: cannot set the runs up: %s" % exc)
            return 2
        for mode in modes:
            log("[%s] %s" % (mode, checks[mode]))
        so_path, so_before = extension_digest()

        regrtest_args = ["-v", "-j", str(args.jobs), "--timeout", str(args.timeout)]
        regrtest_args += [*args.extra, *tests]
        # Past regrtest's own timeouts (a hung worker is killed after 1.5x
        # --timeout): a last resort, should regrtest itself hang.
        deadline = (len(tests) // args.jobs + 2) * args.timeout * 1.5 + 600
        for mode in modes:
            runs[mode] = run_mode(
                mode,
                regrtest_args,
                envs[mode],
                tmp,
                log_dir,
                deadline,
                tests,
                args.timeout,
                args.extra,
            )
        so_after = extension_digest()[1]

        # The allowlist explains what a copy of the code, or code-extra
        # storage, cannot pass; the locals run stores nothing and has none.
        comparisons = [
            Comparison(runs, args.allowlist.get(mode, []), tests, mode)
            for mode in PYFRAME_MODES
            if mode in runs
        ]
        for comparison in comparisons:
            if comparison.offending and args.recheck:
                comparison.rechecked = recheck(
                    comparison.mode,
                    comparison.offending,
                    envs,
                    tmp,
                    log_dir,
                    args.timeout,
                    args.extra,
                )
    except KeyboardInterrupt:
        log("regrtest.py: interrupted")
        return 130
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    extension = {"path": so_path, "sha256": so_before, "after": so_after}
    print_report(header, extension, runs, comparisons, log_dir, tests)
    sys.stdout.flush()
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        write_json(args.json, args, log_dir, runs, comparisons, extension)
    return {None: 0, "PASS": 0, "FAIL": 1, "INCOMPLETE": 2}[overall_verdict(comparisons)]
