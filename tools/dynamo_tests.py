#!/usr/bin/env python3
"""Run PyTorch's test files natively and with TorchDynamo on pyframe; compare per test.

    tools/dynamo_tests.py [--python PY] [--root DIR] [--manifest TSV] [--shard I/N]
                          [--out DIR] [--results DIR] [--modes native,pyframe] [--rerun]
                          [--per-test-timeout S] [--file-timeout S]
                          [--report [RESULTS_FILE ...]] PATH...

Each PATH is a test file, a directory (its test_*.py files) or a list file
(one path a line, relative to the list, # comments).  Each file runs under
pytest with PY (default: this interpreter), from the file's directory,
twice, each in processes of its own: natively (PYFRAME_DYNAMO=0) and with
TorchDynamo on pyframe (PYFRAME_DYNAMO=1: pyframe.dynamo.install() at
start, through pyframe-dynamo.pth in PY's site-packages; put your
pyframe first with PYTHONPATH).  The table counts, per file, the tests that
pass natively and how many of those pass on pyframe, then lists every
other one with the first line of its failure and its cause when
dynamo_tests_lib/causes.toml records one.

Results are kept per file (keyed by its path under --root and its content
hash) and per mode in the results file of PY's torch and CPython,
--results/torch-VERSION-pyX.Y.tsv (committed: test ids, outcomes, first
lines of failures; never PyTorch's files).  A file finished there is not
run again (--rerun runs it again, in the --modes given); a file
interrupted half way goes on from its event file under --out.  So the
same command, run again in a later session, does the rest.  --shard I/N
takes the I-th of N shards (by a hash of the file's name).  A test that
passes --per-test-timeout fails (pytest-timeout); a file that passes
--file-timeout is killed and recorded as timed out, what it did kept; a
process that dies in a test records that test as crashed and goes on with
the rest.  --manifest names a TSV of the files' paths and the commits
they were taken from, recorded with the results.  --report prints the
table from saved results alone (several files: one column group each).

Progress goes to stderr; the table to stdout.  Exit status 0 when every
test that passes natively passes on pyframe or has a recorded cause, 1
otherwise, 2 when the run could not be set up.  The parts are in
dynamo_tests_lib/ beside this file: selection.py (which files), runner.py
(pytest in parts, with the plugin in plugin/), store.py (event and results
files), report.py (the table) and cli.py.
"""

import os
import sys

# dynamo_tests_lib lives beside this file; Python puts the script's directory
# on sys.path, except under -I or -P, so make sure.
TOOLS = os.path.dirname(os.path.abspath(__file__))
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)

from dynamo_tests_lib.cli import main  # noqa: E402  (needs the sys.path above)

if __name__ == "__main__":
    sys.exit(main(description=__doc__.split("\n\n")[0]))
