"""Many threads, each with its own callback, intercepting frames at once.

Callbacks are per thread but SKIP decisions and cached replacements live on
code objects, which threads share.  So each thread runs its own copies of the
per-thread functions (exec'd once per thread: distinct code objects), and all
threads also run one shared function, where the only thing that may differ
between threads is what their callbacks return and what the cached entries'
guards accept.
"""

import gc
import threading
from dataclasses import dataclass, field

from conftest import switch_interval, with_const

import pyframe

THREADS = 8
# 8 threads x ITERATIONS x (frames each thread's callback is asked about per
# iteration: 4, 2, 3 or 4 by kind, after the first) comes to just over 200,000
# callbacks.
ITERATIONS = 8_000
KINDS = ("observe", "skip", "replace", "raising") * 2
ASKED_PER_ITERATION = {"observe": 4, "skip": 1, "replace": 3, "raising": 4}
RAISE_EVERY = 7


def shared_leaf(tag, i):
    return i - tag


def shared(tag, i):
    return shared_leaf(tag, i) * 10


SHARED_REPLACED = with_const(shared.__code__, 10, 1000)

PER_THREAD_SOURCE = """
def leaf(tag, i):
    return i * 2 + tag

def outer(tag, i):
    return leaf(tag, i) + 1
"""


class Boom(Exception):
    pass


@dataclass
class Worker:
    tag: int
    kind: str
    asked: int = 0
    ident: int | None = None
    # What went wrong, as text: the callback cannot assert (an exception
    # there is the frame's exception), so it reports here.
    problems: list = field(default_factory=list)
    raised: int = 0


def make_callback(worker, leaf_code, outer_code, leaf_replaced):
    owner = threading.get_ident()
    skipped_leaf = [0]

    def guard(f_locals):
        # The cached replacement of `shared` is this thread's alone.
        return f_locals["tag"] == worker.tag

    def callback(frame):
        worker.asked += 1
        code = frame.f_code
        f_locals = frame.f_locals
        if threading.get_ident() != owner:
            worker.problems.append(f"called on thread {threading.get_ident()}, not {owner}")
        if f_locals.get("tag") != worker.tag:
            worker.problems.append(f"saw {code.co_name}{f_locals} of another thread")
        if code not in (leaf_code, outer_code, shared.__code__, shared_leaf.__code__):
            worker.problems.append(f"saw a frame of {code.co_qualname}")
        kind = worker.kind
        if kind == "skip":
            if code is leaf_code:
                skipped_leaf[0] += 1
                if skipped_leaf[0] > 1:
                    worker.problems.append("asked again about a skipped code object")
                return pyframe.SKIP
            if code is shared.__code__:
                return pyframe.SKIP_RECURSIVE
            if code is shared_leaf.__code__:
                worker.problems.append("asked about shared_leaf under SKIP_RECURSIVE")
        elif kind == "replace":
            if code is leaf_code:
                return leaf_replaced
            if code is shared.__code__:
                return pyframe.Compiled(SHARED_REPLACED, guard)
        elif kind == "raising":
            if code is leaf_code and f_locals["i"] % RAISE_EVERY == 0:
                raise Boom(worker.tag, f_locals["i"])
        return None

    return callback


def run_worker(worker, barrier, errors):
    try:
        namespace = {}
        exec(PER_THREAD_SOURCE, namespace)
        leaf, outer = namespace["leaf"], namespace["outer"]
        # leaf * 3 instead of * 2: outer's result tells which leaf ran.
        leaf_replaced = with_const(leaf.__code__, 2, 3)
        worker.ident = threading.get_ident()
        callback = make_callback(worker, leaf.__code__, outer.__code__, leaf_replaced)
        tag, kind = worker.tag, worker.kind
        barrier.wait(30)
        with pyframe.callback(callback):
            for i in range(ITERATIONS):
                try:
                    got = outer(tag, i)
                except Boom as boom:
                    if kind != "raising" or boom.args != (tag, i):
                        raise
                    worker.raised += 1
                else:
                    if kind == "raising" and i % RAISE_EVERY == 0:
                        raise AssertionError(f"outer({tag}, {i}) did not raise")
                    factor = 3 if kind == "replace" else 2
                    if got != i * factor + tag + 1:
                        raise AssertionError(f"{kind}: outer({tag}, {i}) == {got}")
                got = shared(tag, i)
                want = (i - tag) * (1000 if kind == "replace" else 10)
                if got != want:
                    raise AssertionError(f"{kind}: shared({tag}, {i}) == {got}, not {want}")
    except BaseException as error:  # reported to the main thread, which asserts
        errors[worker.tag] = error
        barrier.abort()


def test_eight_threads_with_their_own_callbacks():
    workers = [Worker(tag, kind) for tag, kind in enumerate(KINDS)]
    barrier = threading.Barrier(THREADS)
    errors = {}
    threads = [
        threading.Thread(target=run_worker, args=(w, barrier, errors), name=f"pyframe-{w.kind}")
        for w in workers
    ]
    # Switch threads often, so callbacks, guards and cache updates of
    # different threads interleave.
    with switch_interval(1e-4):
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    assert not any(thread.is_alive() for thread in threads), "a worker thread hung"
    assert errors == {}
    for worker in workers:
        assert worker.problems == [], (worker.kind, worker.problems[:5])
        # skip threads are asked about their leaf and `shared` (remembered
        # SKIP_RECURSIVE) once, then never again; replace threads about
        # `shared` once, then its cached entry runs.
        extra = {"skip": 2, "replace": 1}.get(worker.kind, 0)
        assert worker.asked == ITERATIONS * ASKED_PER_ITERATION[worker.kind] + extra, worker
    raising = [w for w in workers if w.kind == "raising"]
    assert all(w.raised == len(range(0, ITERATIONS, RAISE_EVERY)) for w in raising)
    assert sum(w.asked for w in workers) >= 180_000
    # Each replace thread's entry belonged to its callback's cache, which
    # died with the callback when the thread ended.
    gc.collect()
    assert pyframe.cache_entries(shared.__code__) == []
    assert not pyframe.hook_installed()
    # The main thread never had a callback, and still runs shared normally.
    assert shared(0, 5) == 50


def test_threads_come_and_go_with_callbacks_installed():
    """Threads that end with a callback installed give up their share of the
    hook; the main thread's callback keeps working throughout."""
    mine = []

    def churn(round_number):
        pyframe.set_callback(lambda frame: None)  # never removed: the thread just ends
        shared(round_number, 1)

    with pyframe.callback(lambda frame: mine.append(frame.f_code)):
        for round_number in range(50):
            batch = [threading.Thread(target=churn, args=(round_number,)) for _ in range(4)]
            for thread in batch:
                thread.start()
            shared(0, round_number)
            for thread in batch:
                thread.join(10)
            assert pyframe.hook_installed()
    assert not pyframe.hook_installed()
    assert mine.count(shared.__code__) == 50 and mine.count(shared_leaf.__code__) == 50
    # The threads' frames (churn, run, ...) are not the main thread's.
    assert churn.__code__ not in mine


def picks(who):
    return 0


def test_a_hit_in_another_thread_during_a_guard_does_not_hide_a_cached_entry():
    """While thread A's guard runs (and lets go of the GIL), thread B's cache
    hit moves an entry to the front.  A must still find its own entry, not ask
    its callback again and cache a duplicate."""
    replaced = {who: with_const(picks.__code__, 0, who) for who in (1, 2, 3)}
    a_in_guard, b_done = threading.Event(), threading.Event()
    asked = []

    def make_guard(owner):
        def guard(f_locals):
            if owner == 3 and f_locals["who"] == 1 and not b_done.is_set():
                a_in_guard.set()
                b_done.wait(10)  # blocks thread A in its first guard until B's hit
            return f_locals["who"] == owner

        return guard

    def callback(frame):
        if frame.f_code is not picks.__code__:
            return None
        who = frame.f_locals["who"]
        asked.append(who)
        return pyframe.Compiled(replaced[who], make_guard(who))

    with pyframe.callback(callback):
        assert [picks(who) for who in (1, 2, 3)] == [1, 2, 3]  # entries 3, 2, 1
    asked.clear()

    b_results = []

    def thread_b():
        try:
            a_in_guard.wait(10)
            with pyframe.callback(callback):
                b_results.append(picks(2))  # guard 3 no, guard 2 yes: entry 2 moves first
        finally:
            b_done.set()

    b = threading.Thread(target=thread_b)
    b.start()
    try:
        with pyframe.callback(callback):
            assert picks(1) == 1
    finally:
        b_done.set()
        b.join(10)
    assert b_results == [2]
    assert asked == []
    entries = pyframe.cache_entries(picks.__code__)
    assert [(code.co_consts[-1], hits) for code, _, hits in entries] == [(1, 1), (2, 1), (3, 0)]
