"""pyframe callbacks for `python -m pyframe run` in tests/test_cli.py.

count: counts the calls of demo.py's functions and prints them at exit, with
the base names of every file whose frames it was asked about.
by_thread: the names of the threads each function of thread_ends.py ran in,
printed at exit.
"""

import atexit
import collections
import json
import os
import sys
import threading

import pyframe

calls: collections.Counter[str] = collections.Counter()
files: set[str] = set()
threads: collections.defaultdict[str, set[str]] = collections.defaultdict(set)


def count(frame):
    code = frame.f_code
    name = os.path.basename(code.co_filename)
    files.add(name)
    if name != "demo.py":
        return pyframe.SKIP
    calls[code.co_qualname] += 1
    return None


def by_thread(frame):
    code = frame.f_code
    if os.path.basename(code.co_filename) != "thread_ends.py":
        return pyframe.SKIP
    # Not current_thread(): _thread's threads would get a _DummyThread.
    ident = threading.get_ident()
    name = next((t.name for t in threading.enumerate() if t.ident == ident), "_thread")
    threads[code.co_qualname].add(name)
    return None


def bad_result(frame):
    return 42


@atexit.register
def _report():
    if files:
        print("calls", json.dumps(dict(sorted(calls.items()))), file=sys.stderr)
        print("files", json.dumps(sorted(files)), file=sys.stderr)
    if threads:
        seen = {name: sorted(names) for name, names in sorted(threads.items())}
        print("threads", json.dumps(seen), file=sys.stderr)


not_callable = 42
