"""The classifier: the pyframe run's failing test ids against the reference runs.

Every test id that fails under pyframe is either
  shared        it fails in the none or floorhook run too;
  allowlisted   an allowlist entry for this CPython version (allowlist.toml)
                says why a copy of the code cannot pass it;
  incomparable  the none or floorhook run did not finish its test file;
  offending     anything else: pyframe broke it.
Comparison holds the four sets and the verdict they make.  The allowlist comes
in as the running version's (pattern, reason) entries: nothing here knows
versions.
"""

import fnmatch

from .results import PSEUDO_ID_RE, module_of
from .runner import REFERENCE_MODES


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
