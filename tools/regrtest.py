#!/usr/bin/env python3
"""CPython's own regression tests, run plain, under a pass-through PEP 523 hook and under pyframe.

Runs a selection of ``python -m test`` (with the interpreter running this
script: use a venv where pyframe is installed) in each of five modes:

  none       no hook at all;
  floorhook  a sitecustomize installs tools/floorhook's pass-through PEP 523
             function (every frame goes through a hook that does nothing);
  pyframe    a sitecustomize installs a pyframe callback returning
             ``pyframe.Compiled(frame.f_code.replace())`` for every code object,
             so every frame runs a fresh copy of its code, cached on the
             original (tools/regrtest_site/*/sitecustomize.py);
  locals     a sitecustomize installs a pyframe callback that reads every value
             of every frame's ``f_locals`` (when it is a dict: exec() may run
             module and class code in any mapping) and lets the frame run;
  spec       (CPython 3.12+) the same sitecustomize turns pyframe's
             specialization mode on and installs a callback that skips half
             of all code objects (by first line and name, the same in every
             process) and reads every other frame's ``f_locals``: skipped
             code runs with the hook stepped aside, specialized and inlined.

The sitecustomize modules are copied into a temporary directory put first on
PYTHONPATH, so regrtest, its workers and the interpreters tests start without
-I/-E all load them.  pyframe callbacks are per thread: the pyframe, locals
and spec sitecustomize installs its callback in the main thread only, unless
--threads, which wraps threading.Thread._bootstrap_inner so every
threading.Thread installs it too (the floorhook run then gets the same, empty,
wrapper).

Results are compared per test id: the ``FAIL:``/``ERROR:``/``UNEXPECTED
SUCCESS:`` lines unittest prints (sub-tests included), plus a pseudo id for a
test file that did not finish normally: "test.test_x.C.test_m <crashed>" (the
test case that was running; or <timed out>), "test_x <crashed after its
tests>", "test_x <env changed>" and the like.  A test file that crashed or
timed out in a test case is run again without the cases that stopped it
(regrtest --ignore), so the rest of the file still counts.

Every test id that fails in the pyframe, locals or spec run is then
either
  shared        it fails in the none or floorhook run too;
  allowlisted   (pyframe run only) an entry of regrtest_lib/allowlist.toml
                says why: a consequence of running a copy of the code (code
                identity, the original never specialized, ...), each reason
                checked against the test's source;
  incomparable  the none or floorhook run did not finish its test file;
  offending     anything else: pyframe broke it.
The locals and spec runs change no code, so they have no allowlist: a callback
that only reads f_locals or skips code must change nothing a test can see.  Offending ids are run
again alone (under floorhook and the run's own mode) to tell reproducible
failures from flaky ones.  Exit status: 0 PASS, 1 FAIL (offending ids in
either run), 2 the runs could not be made or compared (INCOMPLETE), 130
interrupted.  Not part of
the default tox run: ``tox -e regrtest-py312`` (or -py313, -py314, -py315) runs it,
``tox -e regrtest-py312 -- test_frame test_sys`` a few test files,
``tox -e regrtest-py311 -- --modes none,floorhook,locals test_sys`` the
locals run alone.  All modes run by default (spec from 3.12).

    python tools/regrtest.py [TEST ...] [--jobs N] [--timeout SEC] [--json OUT]
                             [--log-dir DIR] [--threads] [--callback python|c]
                             [--modes none,floorhook,pyframe,locals,spec] [--no-recheck]
                             [-- REGRTEST_ARGS...]

--callback c swaps the pyframe run's Python callback for the same one written in C
(tools/regrtest_site/freshcopy.c), to tell "the callback's own Python frame
is seen" from other differences.

Progress goes to stderr, the report to stdout, regrtest's full output to
LOG_DIR/<mode>.log (continuations and rechecks to LOG_DIR/<what>-<mode>-<test>.log,
the floorhook recheck of a locals id to LOG_DIR/recheck-floorhook-for-locals-<test>.log).

This file is the entry point; the parts are in regrtest_lib/ beside it: the
supported versions, default test files and allowlist as data (tests.toml,
allowlist.toml, read by versions.py), running regrtest (runner.py), parsing
its output (results.py), classifying the failures (compare.py), the report
(report.py) and the command line (cli.py).
"""

import os
import sys

# regrtest_lib lives beside this file; Python puts the script's directory on
# sys.path, except under -I or -P, so make sure.
TOOLS = os.path.dirname(os.path.abspath(__file__))
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)

from regrtest_lib.cli import main  # noqa: E402  (needs the sys.path above)

if __name__ == "__main__":
    sys.exit(main(__doc__.split("\n\n")[0]))
