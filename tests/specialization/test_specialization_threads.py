"""CPython 3.12+: threads in the specialization mode.  A thread with a callback
of another cache keeps pyframe's hook in, also when it installs (and removes)
it while another thread runs aside; threads whose callbacks decide by one
cache step aside together, and none misses a frame for it.
"""

import threading
import time

import pytest
from conftest import HAS_SPECIALIZATION_MODE, NO_SPECIALIZATION_MODE, switch_interval
from specialization_scenarios import SCENARIOS
from specialization_support import (
    WARM_UP,
    aside,
    count_frames,
    mode_off_at_start,  # noqa: F401
    owned_pair,
    skipping,
    specialization,
    warm_up,
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
    # Many switches between the two threads.
    with switch_interval(1e-5), specialization(), pyframe.callback(skipping(*codes)):
        owned_driver(10)
        worker = threading.Thread(target=other_thread)
        worker.start()
        while not stop.is_set():
            owned_driver(200)
        worker.join(30)
    assert not errors, errors
    assert other_seen[0] == rounds * per_round


# ---- threads that decide by one cache step aside together ---------------------------


def shared_leaf(a):
    return a


def shared_driver(n, notes):
    notes.append(aside())
    for i in range(n):
        shared_leaf(i)


def test_threads_of_one_cache_step_aside_and_see_every_frame():
    # Both threads' callbacks decide for one pyframe.Cache: what one skips,
    # both skip, so skipped code steps aside in either while the other has
    # its callback installed, and neither misses a frame of its leaf, with
    # the GIL passing between them every few microseconds.
    cache = pyframe.Cache()
    both_in = threading.Barrier(2, timeout=30)
    rounds, per_round = 300, 50
    results = {}
    errors = []

    def worker(name):
        seen = [0]

        def callback(frame):
            if frame.f_code is shared_driver.__code__:
                return pyframe.SKIP
            if frame.f_code is shared_leaf.__code__:
                seen[0] += 1
            return None

        notes = []
        try:
            with pyframe.callback(callback, cache=cache):
                both_in.wait()
                for _ in range(rounds):
                    shared_driver(per_round, notes)
                both_in.wait()  # the other thread is still installed until here
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
            both_in.abort()
        results[name] = (seen[0], notes)

    with switch_interval(1e-5), specialization():
        threads = [threading.Thread(target=worker, args=(name,)) for name in "ab"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert not errors, errors
    for name in "ab":
        seen, notes = results[name]
        assert seen == rounds * per_round, f"thread {name} missed leaf frames"
        assert True in notes, f"thread {name}'s skipped code never ran aside"


def spin_leaf(a):
    return a


def spin_driver(n, notes):
    notes.append(aside())
    for i in range(n):
        spin_leaf(i)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_no_frame_missed_in_a_thread_while_another_runs_aside(name):
    # A second thread of the same cache runs skipped code stepped aside
    # again and again while this one runs each shape of call: the hook is
    # stepped aside at moments this thread does not choose, and no frame of
    # its may go unseen for that.
    run, _ = SCENARIOS[name]
    code = run.__code__
    cache = pyframe.Cache()
    started = threading.Event()
    stop = threading.Event()
    notes = []
    errors = []

    def spinner():
        try:
            with pyframe.callback(skipping(spin_driver.__code__, spin_leaf.__code__), cache=cache):
                started.set()
                while not stop.is_set():
                    spin_driver(100, notes)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            started.set()

    with switch_interval(1e-5), specialization():
        warm_up("under-callback", run, phase="under-callback")
        # Installed for this thread before the spinner starts: its
        # notes are all taken while both threads decide by `cache`.
        with pyframe.run_only(cache):
            worker = threading.Thread(target=spinner)
            worker.start()
            try:
                started.wait(10)
                while len(notes) < 3 and worker.is_alive():
                    time.sleep(0.001)  # the spinner's calls past the first, deciding one
                in_mode = count_frames(run, skip={code}, cache=cache, calls=20)
            finally:
                stop.set()
                worker.join(30)
    assert not errors, errors
    # Without the mode, one thread: every frame reaches the hook.  (After
    # the mode, as test_specialization_calls counts: CPython 3.13.0 inlines
    # __init__ at a site warmed up before, hook or not.)
    reference = count_frames(run, skip={code}, calls=20)
    assert in_mode == reference
    assert True in notes[1:], "the other thread never ran aside"
