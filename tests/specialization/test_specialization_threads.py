"""CPython 3.12+: a thread with a callback of its own keeps pyframe's hook in,
also when it installs (and removes) it while another thread runs aside.
"""

import sys
import threading

import pytest
from conftest import HAS_SPECIALIZATION_MODE, NO_SPECIALIZATION_MODE
from specialization_support import (
    WARM_UP,
    aside,
    mode_off_at_start,  # noqa: F401
    owned_pair,
    skipping,
    specialization,
)

import pyframe

pytestmark = pytest.mark.skipif(not HAS_SPECIALIZATION_MODE, reason=NO_SPECIALIZATION_MODE)

# mode_off_at_start, imported above, is autouse: it applies to every test here.


# ---- a second thread with its own callback keeps the hook in ------------------------


def thread_leaf(a):
    return a


def thread_driver(n, notes):
    for i in range(n):
        notes.append(aside())
        thread_leaf(i)


def other_thread_leaf(a):
    return a


def test_a_second_thread_with_a_callback_keeps_the_hook_in():
    other_installed = threading.Event()
    main_done = threading.Event()
    other_removed = threading.Event()
    other_counts = {}
    errors = []
    calls_per_round = 2000

    def other_callback(frame):
        key = frame.f_code.co_name
        other_counts[key] = other_counts.get(key, 0) + 1

    def other_thread():
        try:
            with pyframe.callback(other_callback):
                other_installed.set()
                while not main_done.is_set():
                    for i in range(calls_per_round):
                        other_thread_leaf(i)
                    other_counts["rounds"] = other_counts.get("rounds", 0) + 1
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            other_installed.set()
            other_removed.set()

    for _ in range(WARM_UP // 10):
        thread_driver(10, [])
    main_counts = {}

    def main_callback(frame):
        if frame.f_code is thread_driver.__code__:
            return pyframe.SKIP
        key = frame.f_code.co_name
        main_counts[key] = main_counts.get(key, 0) + 1
        return None

    with specialization(), pyframe.callback(main_callback):
        worker = threading.Thread(target=other_thread)
        worker.start()
        try:
            other_installed.wait(10)
            while_other = []
            thread_driver(WARM_UP, while_other)
        finally:
            main_done.set()
            worker.join(30)
        assert not errors, errors
        other_removed.wait(10)
        alone = []
        thread_driver(100, alone)
    assert main_counts["thread_leaf"] == WARM_UP + 100
    assert other_counts["other_thread_leaf"] == other_counts["rounds"] * calls_per_round
    assert set(while_other) == {False}, "the hook stepped aside under another thread's callback"
    assert set(alone) == {True}


def test_a_thread_installing_a_callback_while_the_main_thread_runs_aside():
    # The other thread's callback comes while this thread is inside skipped
    # code with the hook stepped aside: the other thread's frames must reach
    # it all the same.
    started = threading.Event()
    finish = threading.Event()
    other_counts = {}
    errors = []

    def other_callback(frame):
        key = frame.f_code.co_name
        other_counts[key] = other_counts.get(key, 0) + 1

    def other_thread():
        try:
            started.wait(10)
            with pyframe.callback(other_callback):
                for i in range(5000):
                    other_thread_leaf(i)
        except BaseException as exc:
            errors.append(exc)
        finally:
            finish.set()

    def waiting_driver(n, notes):
        # Skipped: it waits, stepped aside, while the other thread works.
        notes.append(aside())
        if n:
            started.set()
            finish.wait(30)
        for i in range(n):
            thread_leaf(i)
        notes.append(aside())

    main_counts = {}

    def main_callback(frame):
        if frame.f_code is waiting_driver.__code__:
            return pyframe.SKIP
        key = frame.f_code.co_name
        main_counts[key] = main_counts.get(key, 0) + 1

    with specialization(), pyframe.callback(main_callback):
        notes = []
        waiting_driver(0, [])  # decided: skipped
        worker = threading.Thread(target=other_thread)
        worker.start()
        waiting_driver(100, notes)
        worker.join(30)
    assert not errors, errors
    assert other_counts == {"other_thread_leaf": 5000}
    assert main_counts["thread_leaf"] == 100
    assert notes[0] is True


def test_threads_installing_and_removing_callbacks_while_another_runs_aside():
    # One thread steps aside again and again (skipped code calling skipped
    # code, inlined); another installs and removes its callback again and
    # again; each of its installations must see every frame it runs.
    stop = threading.Event()
    errors = []
    rounds = 300
    per_round = 20
    other_seen = [0]

    def other_callback(frame):
        if frame.f_code is other_thread_leaf.__code__:
            other_seen[0] += 1

    def other_thread():
        try:
            for _ in range(rounds):
                with pyframe.callback(other_callback):
                    for i in range(per_round):
                        other_thread_leaf(i)
        except BaseException as exc:
            errors.append(exc)
        finally:
            stop.set()

    owned_leaf, owned_driver = owned_pair()
    codes = (owned_driver.__code__, owned_leaf.__code__)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # many switches between the two threads
    try:
        with specialization(), pyframe.callback(skipping(*codes)):
            owned_driver(10)
            worker = threading.Thread(target=other_thread)
            worker.start()
            while not stop.is_set():
                owned_driver(200)
            worker.join(30)
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    assert other_seen[0] == rounds * per_round
