"""Threads that end every way a thread can, for tests/test_cli_threads.py.

python thread_ends.py [--os-exit]
"""

import _thread
import atexit
import os
import sys
import threading
import time

import pyframe

daemon_let_go = threading.Event()
raw_done = threading.Event()
raw_failed = threading.Event()


def tick(i):
    return i + 1


def ticking():
    # A daemon thread: still running when the program is over.
    i = 0
    while True:
        i = tick(i)
        if pyframe.get_callback() is None and i > 1:
            daemon_let_go.set()
        time.sleep(0.01)


def failing():
    raise ValueError("boom in a thread")


def leaving():
    sys.exit(5)  # ends the thread alone


def raw(x):
    print("raw thread", tick(x), flush=True)
    raw_done.set()


def raw_failing():
    raise KeyError("boom in a _thread thread")


def unraisable(args):
    # What _thread does with raw_failing's error, then tell the main thread it is out.
    sys.__unraisablehook__(args)
    raw_failed.set()


def at_exit():
    # Runs after the program's code and its non-daemon threads are over.
    print("daemon let go", daemon_let_go.wait(60))
    print("hook installed at exit", pyframe.hook_installed())


atexit.register(at_exit)
_thread.start_new_thread(raw, (41,))
raw_done.wait(60)
sys.unraisablehook = unraisable
_thread.start_new_thread(raw_failing, ())
raw_failed.wait(60)
for target in (failing, leaving):
    thread = threading.Thread(target=target, name=target.__name__)
    thread.start()
    thread.join()
threading.Thread(target=ticking, name="ticker", daemon=True).start()
if "--os-exit" in sys.argv:
    threading.Thread(target=os._exit, args=(3,), name="exiting").start()
    time.sleep(60)
print("main done")
