"""The classifier: a pyframe run's failing test ids against the reference runs.

Each run with a pyframe callback (runner.PYFRAME_MODES: pyframe, locals, spec) is
compared on its own.  Every test id that fails in it is either
  shared        it fails in the none or floorhook run too;
  allowlisted   an allowlist entry for this CPython version (allowlist.toml)
                says why a copy of the code cannot pass it (the pyframe run
                only: the locals and spec runs change no code and have no
                allowlist);
  incomparable  the none or floorhook run did not finish its test file;
  offending     anything else: pyframe broke it.
Comparison holds the four sets and the verdict they make; overall_verdict
the worst of them.  The allowlist comes in as the running version's
(pattern, reason) entries: nothing here knows versions.
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


def classify_failures(runs, allowlist, mode):
    """Sort the failing ids of `mode`'s run into shared / allowlisted /
    incomparable / offending."""
    references = [runs[m] for m in REFERENCE_MODES if m in runs]
    shared, allowlisted, incomparable, offending = set(), {}, {}, set()
    reference_failures = set().union(*(run.failures() for run in references))
    for test_id in runs[mode].failures():
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
    """The failures of `mode`'s run (one of runner.PYFRAME_MODES) against the
    reference runs, and the verdict."""

    def __init__(self, runs, allowlist, tests, mode):
        self.mode = mode
        self.has_allowlist = bool(allowlist)
        self.references = [m for m in REFERENCE_MODES if m in runs]
        self.comparable = mode in runs and bool(self.references)
        self.shared, self.allowlisted, self.incomparable, self.offending = set(), {}, {}, set()
        self.rechecked = {}
        self.stale = []
        self.unusable = [m for m, run in runs.items() if not any(o.status for o in run.segments)]
        if self.comparable:
            found = classify_failures(runs, allowlist, mode)
            self.shared, self.allowlisted, self.incomparable, self.offending = found
            self.stale = stale_allowlist(allowlist, tests, runs[mode].failures())

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
        verdict, mode = self.verdict, self.mode
        if verdict is None:
            return "%s: no verdict: it needs the %s run and the none or floorhook run" % (
                mode,
                mode,
            )
        if verdict == "FAIL":
            return (
                "%s: FAIL: %d test id(s) fail in the %s run, pass without pyframe and are "
                "not allowlisted" % (mode, len(self.offending), mode)
            )
        if self.unusable:
            return (
                "%s: INCOMPLETE: regrtest reported no test file in the %s run(s); see "
                "the logs" % (mode, ", ".join(self.unusable))
            )
        if verdict == "INCOMPLETE":
            return "%s: INCOMPLETE: %d failure(s) of the %s run could not be compared" % (
                mode,
                len(self.incomparable),
                mode,
            )
        allowlisted = (
            " or is allowlisted (%d)" % len(self.allowlisted) if self.has_allowlist else ""
        )
        return "%s: PASS: every failure of the %s run fails without pyframe too (%d)%s" % (
            mode,
            mode,
            len(self.shared),
            allowlisted,
        )


def overall_verdict(comparisons):
    """The worst verdict of the comparisons that have one: FAIL, then
    INCOMPLETE, then PASS; None when none has."""
    verdicts = {c.verdict for c in comparisons} - {None}
    for verdict in ("FAIL", "INCOMPLETE", "PASS"):
        if verdict in verdicts:
            return verdict
    return None


def overall_verdict_line(comparisons):
    verdict = overall_verdict(comparisons)
    if verdict is None:
        return (
            "no verdict: it needs a run with pyframe (pyframe, locals, spec) and the none or "
            "floorhook run"
        )
    return "VERDICT: %s (%s)" % (
        verdict,
        ", ".join("%s %s" % (c.mode, c.verdict) for c in comparisons if c.verdict),
    )
