#!/usr/bin/env python3
"""CPython's own regression tests, run plain, under a pass-through PEP 523 hook and under pyframe.

Runs a selection of ``python -m test`` (with the interpreter running this
script: use a venv where pyframe is installed) three times:

  none       no hook at all;
  floorhook  a sitecustomize installs tools/floorhook's pass-through PEP 523
             function (every frame goes through a hook that does nothing);
  pyframe    a sitecustomize installs a pyframe callback returning
             ``pyframe.Compiled(frame.f_code.replace())`` for every code object,
             so every frame runs a fresh copy of its code, cached on the
             original (tools/regrtest_site/*/sitecustomize.py).

The sitecustomize modules are copied into a temporary directory put first on
PYTHONPATH, so regrtest, its workers and the interpreters tests start without
-I/-E all load them.  pyframe callbacks are per thread: the pyframe
sitecustomize installs its callback in the main thread only, unless --threads,
which wraps threading.Thread._bootstrap_inner so every threading.Thread
installs it too (the floorhook run then gets the same, empty, wrapper).

Results are compared per test id: the ``FAIL:``/``ERROR:``/``UNEXPECTED
SUCCESS:`` lines unittest prints (sub-tests included), plus a pseudo id for a
test file that did not finish normally: "test.test_x.C.test_m <crashed>" (the
test case that was running; or <timed out>), "test_x <crashed after its
tests>", "test_x <env changed>" and the like.  A test file that crashed or
timed out in a test case is run again without the cases that stopped it
(regrtest --ignore), so the rest of the file still counts.

Every test id that fails under pyframe is then either
  shared        it fails in the none or floorhook run too;
  allowlisted   an entry of regrtest_lib/allowlist.toml says why: a
                consequence of running a copy of the code (code identity, the
                original never specialized, ...), each reason checked against
                the test's source;
  incomparable  the none or floorhook run did not finish its test file;
  offending     anything else: pyframe broke it.
Offending ids are run again alone (both hooks) to tell reproducible failures
from flaky ones.  Exit status: 0 PASS, 1 FAIL (offending ids), 2 the runs
could not be made or compared (INCOMPLETE), 130 interrupted.  Not part of
the default tox run: ``tox -e regrtest-py312`` (or -py313, -py314, -py315) runs it,
``tox -e regrtest-py312 -- test_frame test_sys`` a few test files.

    python tools/regrtest.py [TEST ...] [--jobs N] [--timeout SEC] [--json OUT]
                             [--log-dir DIR] [--threads] [--callback python|c]
                             [--modes none,floorhook,pyframe] [--no-recheck]
                             [-- REGRTEST_ARGS...]

--callback c swaps the Python callback for the same one written in C
(tools/regrtest_site/freshcopy.c), to tell "the callback's own Python frame
is seen" from other differences.

Progress goes to stderr, the report to stdout, regrtest's full output to
LOG_DIR/<mode>.log (continuations and rechecks to LOG_DIR/<what>-<mode>-<test>.log).
"""

import argparse
import fnmatch
import glob
import hashlib
import importlib.util
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# regrtest_lib lives beside this file; Python puts the script's directory on
# sys.path, except under -I or -P, so make sure.
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from regrtest_lib.versions import DataError, load, running_version  # noqa: E402

SITE_SOURCES = os.path.join(HERE, "regrtest_site")
FLOORHOOK_BUILDER = os.path.join(HERE, "floorhook", "build.py")

MODES = ("none", "floorhook", "pyframe")
REFERENCE_MODES = ("none", "floorhook")
THREADS_ENV = "PYFRAME_REGRTEST_THREADS"
CALLBACK_ENV = "PYFRAME_REGRTEST_CALLBACK"
# How many times a test file that crashed or timed out is run again without
# the test cases that did it.
MAX_CONTINUATIONS = 3

# "0:01:02 load avg: 1.93 [ 3/38/1] test_x failed (2 errors) (35.1 sec) -- running (1): ..."
TIMESTAMP_RE = re.compile(r"^\d+:\d\d:\d\d (?:load avg: [\d.]+ )?(.*)$")
# A test package may report each of its modules: "test_pkg.test_mod passed".
MODULE_RE = re.compile(r"^\[\s*\d+/\d+(?:/\d+)?\] (test_\w+(?:\.\w+)*) (.*)$")
# unittest's error list: "FAIL: test_m (test.test_x.C.test_m) [msg] (i=1)"
CASE_FAILED_RE = re.compile(r"^(FAIL|ERROR|UNEXPECTED SUCCESS): (\S+) \(([\w.]+)\)(.*)$")
# unittest -v: "test_m (test.test_x.C.test_m) ... ok", or "name (id)" alone
# when the docstring's first line follows on the next line.
CASE_RAN_RE = re.compile(r"^(\w+) \((test(?:\.[\w.]+)?)\)(?:$| \.\.\. )")
# A test case's result, after its "... " or alone on a line when the test
# printed something first.
CASE_RESULT_RE = re.compile(
    r"(?:^|\.\.\. )(?:ok|FAIL|ERROR|skipped\b.*|expected failure|unexpected success)$"
)
# unittest's summary: the test cases of the section have all run.
RAN_RE = re.compile(r"^Ran \d+ tests? in ")
TOTAL_RE = re.compile(r"^Total tests: (.*)$")
# Outcomes of whole test files: "test_x <crashed>", "test.test_x.C.test_m <timed out>".
PSEUDO_ID_RE = re.compile(r"^\S+ <[^<>]*>$")
# Outcomes a test file ends with when its worker died with a test case running.
STOPPED = ("crashed", "timed out")
# What a pseudo id says when the worker died after unittest's "Ran N tests".
AFTER_TESTS = "after its tests"


def log(message):
    print(message, file=sys.stderr, flush=True)


# ---- parsing regrtest's output ----------------------------------------------


def case_id(name, dotted, rest=""):
    """A test id from unittest's "name (dotted)" description: the dotted id,
    with the sub-test description ("[msg] (i=1)") after a space if any."""
    if dotted == name or dotted.endswith("." + name):
        base = dotted
    else:  # "setUpClass (test.test_x.C)", "syntax (test.test_x.__test__)"
        base = "%s.%s" % (dotted, name)
    rest = rest.strip()
    return base + " " + rest if rest else base


def base_id(test_id):
    """The test method's id, without a sub-test description or <outcome>."""
    return test_id.split(" ", 1)[0]


def module_of(test_id):
    """The regrtest test file a test id or pseudo id belongs to."""
    parts = base_id(test_id).split(".")
    return parts[1] if parts[0] == "test" and len(parts) > 1 else parts[0]


# Result-text prefixes, most specific first: (prefix, outcome, whether the
# test file finished normally).
STATUS_PREFIXES = (
    ("failed (env changed)", "env changed", True),
    ("failed (uncaught exception)", "uncaught exception", True),
    ("failed (reference leak)", "reference leak", True),
    ("failed", "failed", True),
    ("ran no tests", "ran no tests", True),
    ("timed out", "timed out", False),
    ("worker non-zero exit code", "crashed", False),
    ("worker bug", "crashed", False),
    ("process crashed", "crashed", False),
    ("interrupted", "interrupted", False),
)


def classify(status):
    """A regrtest result text ("passed (35.1 sec)", "failed (2 errors)", "worker
    non-zero exit code (Exit code -11)") -> (outcome, finished normally)."""
    status = status.split(" -- running", 1)[0]
    if status == "not run":
        return status, False
    if status.startswith(("passed", "skipped")):
        return status.split(" ", 1)[0], True
    for prefix, outcome, finished in STATUS_PREFIXES:
        if status.startswith(prefix):
            return outcome, finished
    return status, False


class Outcome:
    """What one regrtest run says, parsed from its output line by line.

    With -j, regrtest prints a test file's result line, then the whole output
    of its worker: the lines after a result line belong to that test file."""

    def __init__(self, tests):
        self.tests = list(tests)
        self.status = {}  # test file (or package module) -> regrtest's result text
        self.case_failures = set()
        self.ran = set()  # base ids of the test cases seen starting (-v)
        self.running = {}  # test file (or module) -> the test case started, no result yet
        self.after_tests = set()  # test files (or modules) whose unittest run ended
        self.section = None
        self.totals = None
        self.result = None

    def feed(self, line):
        """Parse one line; return it if it is a progress line, else None."""
        line = line.rstrip("\n")
        stamped = TIMESTAMP_RE.match(line)
        if stamped:
            found = MODULE_RE.match(stamped.group(1))
            if found:
                self.status[found.group(1)] = found.group(2)
                self.section = found.group(1)
            elif not stamped.group(1).startswith("running"):
                self.section = None
            return stamped.group(1)
        failed = CASE_FAILED_RE.match(line)
        if failed and failed.group(3).startswith("test"):
            self.case_failures.add(case_id(failed.group(2), failed.group(3), failed.group(4)))
            return None
        ran = CASE_RAN_RE.match(line)
        if ran:
            test_id = case_id(ran.group(1), ran.group(2))
            self.ran.add(test_id)
            if self.section is not None:
                done = CASE_RESULT_RE.search(line[ran.end() :])
                self.running[self.section] = None if done else test_id
            return None
        if self.section is not None:
            if self.running.get(self.section) and CASE_RESULT_RE.search(line):
                self.running[self.section] = None
            elif RAN_RE.match(line):
                self.running[self.section] = None
                self.after_tests.add(self.section)
                return None
        if line.startswith("== Tests result"):
            self.section = None
        total = TOTAL_RE.match(line)
        if total:
            self.totals = total.group(1)
        elif line.startswith("Result: "):
            self.result = line[len("Result: ") :]
        return None

    def entries(self, test):
        """[(name, status)] regrtest reported for a test file or the modules
        of a test package."""
        return [
            (name, status)
            for name, status in self.status.items()
            if name == test or name.startswith(test + ".")
        ]

    def finished(self, test):
        """True if regrtest ran the test file to its end (passed or not)."""
        entries = self.entries(test)
        return bool(entries) and all(classify(status)[1] for _, status in entries)

    def stopped_cases(self, test):
        """The test cases that were running when the test file's worker crashed
        or timed out (those regrtest --ignore can leave out next time)."""
        return [
            self.running[name]
            for name, status in self.entries(test)
            if classify(status)[0] in STOPPED and self.running.get(name)
        ]

    def failures(self):
        """Test case ids that failed, and one pseudo id per test file that did
        not finish normally or failed without a test case to show for it."""
        failures = {t for t in self.case_failures if module_of(t) in self.tests}
        failed_files = {module_of(t) for t in failures}
        for test in self.tests:
            for name, status in self.entries(test) or [(test, "not run")]:
                outcome, _ = classify(status)
                if outcome in ("passed", "skipped"):
                    continue
                if outcome == "failed" and test in failed_files:
                    continue
                if outcome in STOPPED and self.running.get(name):
                    # "test.test_x.C.test_m <crashed>": the case that was running
                    failures.add("%s <%s>" % (self.running[name], outcome))
                elif outcome in STOPPED and name in self.after_tests:
                    # "test_x <crashed after its tests>"
                    failures.add("%s <%s %s>" % (name, outcome, AFTER_TESTS))
                else:
                    failures.add("%s <%s>" % (name, outcome))
        return failures

    def tests_run(self):
        """regrtest's "run=N" count of test cases, or None."""
        found = re.search(r"run=([\d,]+)", self.totals or "")
        return int(found.group(1).replace(",", "")) if found else None


class ModeRun:
    """A mode's main regrtest run plus the continuations of the test files
    that crashed or timed out in it."""

    def __init__(self, mode, main, returncode, seconds, log_path):
        self.mode = mode
        self.segments = [main]  # Outcomes, in the order they ran
        self.returncode = returncode
        self.seconds = seconds
        self.logs = [log_path]
        self.continued = {}  # test file -> the test cases ignored to finish it

    @property
    def main(self):
        return self.segments[0]

    def last(self, test):
        """The last Outcome that ran the test file."""
        for outcome in reversed(self.segments):
            if test in outcome.tests:
                return outcome
        return self.main

    def failures(self):
        return set().union(*(outcome.failures() for outcome in self.segments))

    def finished(self, test):
        return self.last(test).finished(test)

    def tests_run(self):
        """How many test cases started, in all the segments (regrtest's own
        count misses those of a crashed worker)."""
        return len(set().union(*(outcome.ran for outcome in self.segments)))

    def cell(self, test):
        """A short text for the test file in the summary table."""
        ids = [t for t in self.failures() if module_of(t) == test]
        outcomes = {}
        for t in ids:
            if PSEUDO_ID_RE.match(t):
                outcome = t.rsplit(" <", 1)[1][:-1].replace(" " + AFTER_TESTS, "")
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
        failed = len(ids) - sum(outcomes.values())
        parts = [o if n == 1 else "%s (%d)" % (o, n) for o, n in sorted(outcomes.items())]
        if failed:
            parts.append("%d failed" % failed)
        if parts:
            return ", ".join(parts)
        entries = self.last(test).entries(test)
        if entries and all(classify(status)[0] == "skipped" for _, status in entries):
            return "skipped"
        return "ok"


# ---- the runs -----------------------------------------------------------------


def load_floorhook_builder():
    spec = importlib.util.spec_from_file_location("floorhook_build", FLOORHOOK_BUILDER)
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    return builder


def build_extension(source, module, target_dir):
    """Compile a one-file extension with the running interpreter's sysconfig
    (as tools/floorhook/build.py does; CC from the environment wins)."""
    config = sysconfig.get_config_var
    compiler = shlex.split(config("LDSHARED"))
    if os.environ.get("CC"):
        compiler[:1] = shlex.split(os.environ["CC"])
    command = [
        *compiler,
        *shlex.split(config("CFLAGS") or ""),
        *shlex.split(config("CCSHARED") or ""),
        "-I" + sysconfig.get_paths()["include"],
        source,
        "-o",
        os.path.join(target_dir, module + config("EXT_SUFFIX")),
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            "building %s failed:\n$ %s\n%s%s"
            % (module, shlex.join(command), done.stdout, done.stderr)
        )


def prepare_sites(tmp, callback):
    """{mode: directory to put first on PYTHONPATH, or None}."""
    sites = {"none": None}
    for mode in ("floorhook", "pyframe"):
        site = os.path.join(tmp, mode)
        os.makedirs(site)
        shutil.copy(os.path.join(SITE_SOURCES, mode, "sitecustomize.py"), site)
        sites[mode] = site
    load_floorhook_builder().build(sites["floorhook"])
    if callback == "c":
        source = os.path.join(SITE_SOURCES, "freshcopy.c")
        build_extension(source, "regrtest_freshcopy", sites["pyframe"])
    return sites


def mode_env(mode, site, threads, callback):
    env = dict(os.environ)
    env.pop(THREADS_ENV, None)
    env.pop(CALLBACK_ENV, None)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [site, env.get("PYTHONPATH")]))
        if threads:
            env[THREADS_ENV] = "1"
        if mode == "pyframe":
            env[CALLBACK_ENV] = callback
    return env


PREFLIGHT = {
    "none": "import sys; assert 'sitecustomize' not in sys.modules; print('no hook')",
    "floorhook": (
        "import sitecustomize, floorhook; assert floorhook.installed(); "
        "print('floorhook installed by', sitecustomize.__file__)"
    ),
    "pyframe": (
        "import sitecustomize, pyframe; "
        "assert pyframe.hook_installed() and pyframe.get_callback() is not None; "
        "f = lambda: 1; f(); [(code, guard, hits)] = pyframe.cache_entries(f.__code__); "
        "assert code is not f.__code__ and code == f.__code__; "
        "print('pyframe', pyframe.__version__, 'from', pyframe.__file__, "
        "'callback', pyframe.get_callback(), 'installed by', sitecustomize.__file__)"
    ),
}


THREAD_PREFLIGHT = (
    "; import threading; seen = []; "
    "t = threading.Thread(target=lambda: seen.append(pyframe.get_callback())); "
    "t.start(); t.join(); assert seen[0] is pyframe.get_callback(), seen; "
    "print('and in threading.Thread (--threads)')"
)


def preflight(mode, env, cwd, threads):
    """Check the mode's sitecustomize really installs its hook (a failing
    sitecustomize only prints a warning and the run would go on hook-less)."""
    check = PREFLIGHT[mode] + (THREAD_PREFLIGHT if threads and mode == "pyframe" else "")
    done = subprocess.run(
        [sys.executable, "-c", check],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0 or done.stderr.strip():
        raise RuntimeError(
            "%s: the sitecustomize check failed (exit %d):\n%s%s"
            % (mode, done.returncode, done.stdout, done.stderr)
        )
    return done.stdout.strip()


def run_regrtest(label, regrtest_args, env, cwd, log_path, deadline, tests):
    """Run ``python -m test`` with `regrtest_args`; stream its output into
    `log_path`, progress lines to stderr.  Returns (Outcome, exit code,
    seconds)."""
    outcome = Outcome(tests)
    command = [sys.executable, "-m", "test", *regrtest_args]
    start = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log_file:
        log_file.write("$ %s\n" % shlex.join(command))
        log_file.flush()
        process = subprocess.Popen(
            command,
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        watchdog = threading.Timer(deadline, stop, (label, process, deadline))
        watchdog.daemon = True
        watchdog.start()
        try:
            for line in process.stdout:
                log_file.write(line)
                progress = outcome.feed(line)
                if progress is not None:
                    log("[%s] %s" % (label, progress))
            returncode = process.wait()
        except BaseException:
            stop(label, process, None)
            raise
        finally:
            watchdog.cancel()
    return outcome, returncode, time.monotonic() - start


def stop(label, process, deadline):
    """Interrupt regrtest (it then stops its workers), kill it if it lingers."""
    if process.poll() is not None:
        return
    if deadline is not None:
        log("[%s] still running after %d s: interrupting it" % (label, deadline))
    try:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def single_file_args(test, timeout, extra, match=(), ignore=()):
    """regrtest arguments to run one test file in one worker process (so a
    crash ends the worker, not regrtest)."""
    args = ["-v", "-j1", "--timeout", str(timeout), *extra]
    for test_id in match:
        args += ["-m", test_id]
    for test_id in ignore:
        args += ["-i", test_id]
    return [*args, test]


def run_mode(mode, regrtest_args, env, cwd, log_dir, deadline, tests, timeout, extra):
    """The mode's main run, then each test file that crashed or timed out with
    a test case running is run again without the cases that stopped it."""
    log("[%s] starting: %s -m test %s" % (mode, sys.executable, shlex.join(regrtest_args)))
    log_path = os.path.join(log_dir, mode + ".log")
    outcome, returncode, seconds = run_regrtest(
        mode, regrtest_args, env, cwd, log_path, deadline, tests
    )
    run = ModeRun(mode, outcome, returncode, seconds, log_path)
    for test in tests:
        ignored = []
        for round_ in range(1, MAX_CONTINUATIONS + 1):
            stopped = [c for c in run.last(test).stopped_cases(test) if c not in ignored]
            if not stopped:
                break
            ignored += stopped
            label = "%s %s, without %s" % (mode, test, " ".join(stopped))
            log_path = os.path.join(log_dir, "continue%d-%s-%s.log" % (round_, mode, test))
            args = single_file_args(test, timeout, extra, ignore=ignored)
            segment, _, more = run_regrtest(
                label, args, env, cwd, log_path, timeout * 2 + 120, [test]
            )
            run.segments.append(segment)
            run.logs.append(log_path)
            run.seconds += more
            run.continued[test] = list(ignored)
    failures = run.failures()
    log(
        "[%s] done in %.0f s: exit %d, %d failing test ids, %s"
        % (mode, run.seconds, run.returncode, len(failures), run.main.totals)
    )
    return run


def recheck(offending, envs, cwd, log_dir, timeout, extra):
    """Run each offending id again, alone (its test file with -m for the test),
    under floorhook and pyframe.  Returns {id: {mode: "fail"|"pass"}}."""
    by_file = {}
    for test_id in offending:
        by_file.setdefault(module_of(test_id), set()).add(test_id)
    verdicts = {}
    for test, ids in sorted(by_file.items()):
        match = ()
        if not any(PSEUDO_ID_RE.match(t) and base_id(t) == test for t in ids):
            match = sorted({base_id(t) for t in ids})
        args = single_file_args(test, timeout, extra, match=match)
        for mode in ("floorhook", "pyframe"):
            label = "recheck %s %s" % (mode, test)
            log_path = os.path.join(log_dir, "recheck-%s-%s.log" % (mode, test))
            outcome, _, _ = run_regrtest(
                label, args, envs[mode], cwd, log_path, timeout * 2 + 120, [test]
            )
            failed = outcome.failures()
            for test_id in ids:
                verdicts.setdefault(test_id, {})[mode] = "fail" if test_id in failed else "pass"
    return verdicts


def extension_digest():
    """sha256 of the pyframe extension this interpreter imports (the tree may
    be rebuilt while the run goes on: the report says if it was)."""
    try:
        spec = importlib.util.find_spec("pyframe._cframe")
    except ImportError:
        spec = None
    if spec is None or not spec.origin:
        return None, None
    with open(spec.origin, "rb") as f:
        return spec.origin, hashlib.sha256(f.read()).hexdigest()[:16]


# ---- comparing ----------------------------------------------------------------


def allowlist_matches(pattern, test_id):
    """fnmatch, except that only a pattern naming an <outcome> matches a
    pseudo id: "test.test_x.C.*" does not cover "test.test_x.C.test_m <crashed>"."""
    if PSEUDO_ID_RE.match(test_id) and "<" not in pattern:
        return False
    return fnmatch.fnmatchcase(test_id, pattern)


def allowlist_reason(test_id, allowlist):
    for pattern, reason in allowlist:
        if allowlist_matches(pattern, test_id):
            return reason
    return None


def classify_failures(runs, allowlist):
    """Sort the pyframe run's failing ids into shared / allowlisted /
    incomparable / offending."""
    references = [runs[mode] for mode in REFERENCE_MODES if mode in runs]
    shared, allowlisted, incomparable, offending = set(), {}, {}, set()
    reference_failures = set().union(*(run.failures() for run in references))
    for test_id in runs["pyframe"].failures():
        if test_id in reference_failures:
            shared.add(test_id)
            continue
        unfinished = [run.mode for run in references if not run.finished(module_of(test_id))]
        reason = allowlist_reason(test_id, allowlist)
        if reason is not None:
            allowlisted[test_id] = reason
        elif unfinished:
            incomparable[test_id] = unfinished
        else:
            offending.add(test_id)
    return shared, allowlisted, incomparable, offending


def stale_allowlist(allowlist, tests, pyframe_failures):
    """Allowlist patterns for this version, in the selected test files, that
    matched no failing id: pyframe (or CPython) may have changed."""
    stale = []
    for pattern, _ in allowlist:
        if module_of(pattern) not in tests:
            continue
        if not any(allowlist_matches(pattern, t) for t in pyframe_failures):
            stale.append(pattern)
    return stale


# ---- report -------------------------------------------------------------------


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


# ---- command line -----------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="tools/regrtest.py",
        description=__doc__.split("\n\n")[0],
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
        default=",".join(MODES),
        help="comma-separated subset of %s (default: all; the verdict needs pyframe "
        "and at least one other)" % ",".join(MODES),
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
        "in C (tools/regrtest_site/freshcopy.c)",
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
        versions = load()
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
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - set(MODES))
    if not modes or unknown:
        parser.error(
            "--modes takes a comma-separated subset of %s, not %r" % (",".join(MODES), args.modes)
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
    args.allowlist = versions.allowlist_for(version)
    if "pyframe" in args.modes and extension_digest()[0] is None:
        parser.error(
            "pyframe is not importable by %s: run this script with the python of a "
            "venv where pyframe is installed" % sys.executable
        )
    if args.log_dir and os.path.exists(args.log_dir) and not os.path.isdir(args.log_dir):
        parser.error("--log-dir %s exists and is not a directory" % args.log_dir)
    if args.json and os.path.isdir(args.json):
        parser.error("--json %s is a directory" % args.json)
    return args


def clean_log_dir(log_dir):
    """Remove the logs an earlier run left in a reused --log-dir."""
    for pattern in ("none.log", "floorhook.log", "pyframe.log", "continue*-*.log", "recheck-*.log"):
        for path in glob.glob(os.path.join(log_dir, pattern)):
            os.unlink(path)


class Comparison:
    """The pyframe run's failures against the reference runs, and the verdict."""

    def __init__(self, runs, allowlist, tests):
        self.references = [mode for mode in REFERENCE_MODES if mode in runs]
        self.comparable = "pyframe" in runs and bool(self.references)
        self.shared, self.allowlisted, self.incomparable, self.offending = set(), {}, {}, set()
        self.rechecked = {}
        self.stale = []
        self.unusable = [m for m, run in runs.items() if not any(o.status for o in run.segments)]
        if self.comparable:
            found = classify_failures(runs, allowlist)
            self.shared, self.allowlisted, self.incomparable, self.offending = found
            self.stale = stale_allowlist(allowlist, tests, runs["pyframe"].failures())

    @property
    def verdict(self):
        if not self.comparable:
            return None
        if self.offending:
            return "FAIL"
        if self.unusable or self.incomparable:
            return "INCOMPLETE"
        return "PASS"

    def verdict_line(self):
        verdict = self.verdict
        if verdict is None:
            return "no verdict: it needs the pyframe run and the none or floorhook run"
        if verdict == "FAIL":
            return (
                "VERDICT: FAIL: %d test id(s) fail under pyframe, pass without it and are "
                "not allowlisted" % len(self.offending)
            )
        if self.unusable:
            return (
                "VERDICT: INCOMPLETE: regrtest reported no test file in the %s run(s); see "
                "the logs" % ", ".join(self.unusable)
            )
        if verdict == "INCOMPLETE":
            return "VERDICT: INCOMPLETE: %d pyframe failure(s) could not be compared" % len(
                self.incomparable
            )
        return (
            "VERDICT: PASS: every pyframe failure fails without pyframe too (%d) or is "
            "allowlisted (%d)" % (len(self.shared), len(self.allowlisted))
        )


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


def main(argv=None):
    args = parse_args(argv)
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
    header = [
        "pyframe regrtest: CPython %s, %s" % (platform.python_version(), sys.executable),
        "%d test files, -j%d, --timeout %d s, modes: %s; logs in %s"
        % (len(tests), args.jobs, args.timeout, ", ".join(modes), log_dir),
    ]
    if "pyframe" in modes:
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

        comparison = Comparison(runs, args.allowlist, tests)
        if comparison.offending and args.recheck:
            comparison.rechecked = recheck(
                comparison.offending, envs, tmp, log_dir, args.timeout, args.extra
            )
    except KeyboardInterrupt:
        log("regrtest.py: interrupted")
        return 130
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    for line in header:
        print(line)
    if so_path:
        print("pyframe extension: %s (sha256 %s)" % (so_path, so_before))
        if so_after != so_before:
            print("WARNING: the pyframe extension changed during the run (now %s)" % so_after)
    print_details(runs, comparison, log_dir)
    print_summary(runs, comparison, tests)
    sys.stdout.flush()
    if args.json:
        extension = {"path": so_path, "sha256": so_before, "after": so_after}
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        write_json(args.json, args, log_dir, runs, comparison, extension)
    return {None: 0, "PASS": 0, "FAIL": 1, "INCOMPLETE": 2}[comparison.verdict]


if __name__ == "__main__":
    sys.exit(main())
