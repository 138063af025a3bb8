"""pyframe callbacks for `python -m pyframe run` in tests/test_cli.py.

count: counts the calls of demo.py's functions and prints them at exit, with
the base names of every file whose frames it was asked about.
"""

import atexit
import collections
import json
import os
import sys

import pyframe

calls: collections.Counter[str] = collections.Counter()
files: set[str] = set()


def count(frame):
    code = frame.f_code
    name = os.path.basename(code.co_filename)
    files.add(name)
    if name != "demo.py":
        return pyframe.SKIP
    calls[code.co_qualname] += 1
    return None


def bad_result(frame):
    return 42


@atexit.register
def _report():
    if files:
        print("calls", json.dumps(dict(sorted(calls.items()))), file=sys.stderr)
        print("files", json.dumps(sorted(files)), file=sys.stderr)


not_callable = 42
