"""What a regrtest run says: its output, parsed line by line into test ids.

A test id is unittest's dotted id of a test case that failed ("FAIL:",
"ERROR:", "UNEXPECTED SUCCESS:" lines, sub-tests included), or a pseudo id for
a test file that did not finish normally: "test.test_x.C.test_m <crashed>"
(the test case that was running; or <timed out>), "test_x <crashed after its
tests>", "test_x <env changed>" and the like.  Outcome parses one ``python -m
test`` run; ModeRun gathers a mode's main run and its continuations.
"""

import re

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
