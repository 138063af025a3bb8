"""frame.f_locals is a new dict to every callback, however pyframe makes it.

pyframe refills one spare dict per thread instead of making a new one for
every frame (cframe/localsplus.c, pyframe_locals_recycle).  These tests hold
that to the contract: a dict a callback (or guard) keeps is never touched
again, a dict it drops keeps nothing alive, and what the next callback gets
is right whatever the last one did to its dict.
"""

import gc
import sys
import weakref

import pytest
from conftest import PY312

import pyframe


def one(n):
    return n


def two(a, b):
    return a, b


def swapped(b, a):
    return b, a


def collect_f_locals(calls):
    """Runs calls (function, args) under a callback; returns a copy of
    (code name, list(f_locals.items())) for each frame it saw."""
    seen = []

    def callback(frame):
        if frame.f_code.co_filename == __file__:
            seen.append((frame.f_code.co_name, list(frame.f_locals.items())))

    with pyframe.callback(callback):
        for function, args in calls:
            function(*args)
    return seen


def test_dicts_a_callback_keeps_are_never_refilled():
    kept = []

    def callback(frame):
        if frame.f_code is one.__code__:
            f_locals = frame.f_locals
            if f_locals["n"] % 3 == 0:
                kept.append(f_locals)

    with pyframe.callback(callback):
        for i in range(60):
            one(i)
    assert [list(d.items()) for d in kept] == [[("n", i)] for i in range(0, 60, 3)]
    assert len({id(d) for d in kept}) == len(kept)


def test_each_f_locals_in_one_callback_is_a_new_dict():
    pairs = []

    def callback(frame):
        if frame.f_code is two.__code__:
            first, second = frame.f_locals, frame.f_locals
            first["a"] = "changed"
            pairs.append((first, second))

    with pyframe.callback(callback):
        for i in range(5):
            two(i, -i)
    for i, (first, second) in enumerate(pairs):
        assert first is not second
        assert first == {"a": "changed", "b": -i}
        assert second == {"a": i, "b": -i}


def test_a_dropped_dict_keeps_no_value_alive():
    class Payload:
        pass

    def callback(frame):
        frame.f_locals

    payload = Payload()
    alive = weakref.ref(payload)
    before = sys.getrefcount(payload)
    with pyframe.callback(callback):
        for _ in range(1000):
            one(payload)
        assert sys.getrefcount(payload) == before
        del payload
        assert alive() is None  # freed at once, not at the next frame


def four(a, b, c, d):
    return a


def test_the_reused_dict_holds_nothing_a_program_can_count():
    # Between frames the spare's entries hold a value of pyframe's own: were
    # it None, sys.getrefcount(None) would change with the size of the last
    # frame whose f_locals was read (3.11 only: None is immortal from 3.12;
    # CPython's test_sys.test_refcount saw it).
    def callback(frame):
        frame.f_locals

    # Counted by C calls alone: a Python frame would be read and refill it.
    with pyframe.callback(callback):
        one(1)
        before = sys.getrefcount(None), sys.getrefcount(True)
        four(1, 2, 3, 4)  # leaves a spare of four entries, where one's had one
        after = sys.getrefcount(None), sys.getrefcount(True)
        one(True)
        again = sys.getrefcount(None), sys.getrefcount(True)
    assert after == before
    assert again == before


def test_guards_that_keep_their_dict_see_it_unchanged():
    kept = []

    def guard(f_locals):
        kept.append(f_locals)
        return True

    def callback(frame):
        if frame.f_code is one.__code__:
            return pyframe.Compiled(frame.f_code.replace(), guard=guard)
        return None

    with pyframe.callback(callback):
        for i in range(40):
            assert one(i) == i
    assert [d["n"] for d in kept] == list(range(1, 40))
    assert all(list(d) == ["n"] for d in kept)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(extra=1),
        lambda d: d.pop("a"),
        lambda d: d.clear(),
        lambda d: d.__setitem__("a", "replaced"),
        lambda d: d.__setitem__(1, "not a str key"),
        lambda d: d.update({f"k{i}": i for i in range(50)}),  # grows the table
        lambda d: (d.pop("a"), d.__setitem__("a", "back, after b")),  # reorders
    ],
    ids=["add", "delete", "clear", "replace", "int-key", "grow", "reorder"],
)
def test_what_a_callback_does_to_its_dict_never_reaches_the_next_one(change):
    got = []

    def callback(frame):
        if frame.f_code is two.__code__:
            f_locals = frame.f_locals
            got.append(list(f_locals.items()))
            change(f_locals)

    with pyframe.callback(callback):
        for i in range(6):
            two(i, str(i))
    assert got == [[("a", i), ("b", str(i))] for i in range(6)]


def test_frames_of_different_code_get_their_own_names_in_order():
    calls = [(one, (1,)), (two, (2, 3)), (swapped, (4, 5)), (two, (6, 7)), (one, (8,))] * 3
    assert (
        collect_f_locals(calls)
        == [
            ("one", [("n", 1)]),
            ("two", [("a", 2), ("b", 3)]),
            ("swapped", [("b", 4), ("a", 5)]),
            ("two", [("a", 6), ("b", 7)]),
            ("one", [("n", 8)]),
        ]
        * 3
    )


def make_closure(bind):
    if bind:
        captured = "bound"

    def inner(x):
        return captured  # noqa: F821 - unbound when bind is false

    return inner


def test_free_variables_bound_in_one_frame_and_not_the_next():
    # Frames of one code whose bound names differ: an empty closure cell is
    # not shown, so the spare's keys fit one frame and not the next.
    bound, unbound = make_closure(True), make_closure(False)
    assert bound.__code__ is unbound.__code__
    seen = []

    def callback(frame):
        if frame.f_code.co_name == "inner":
            seen.append(list(frame.f_locals.items()))

    with pyframe.callback(callback):
        for i in range(4):
            bound(i)
            with pytest.raises(NameError):
                unbound(i)
    assert seen == [
        [("x", i), ("captured", "bound")] if k == 0 else [("x", i)]
        for i in range(4)
        for k in (0, 1)
    ]


def test_a_refilled_dict_holding_containers_is_tracked_by_the_collector():
    tracked = []

    def callback(frame):
        if frame.f_code is one.__code__:
            tracked.append(gc.is_tracked(frame.f_locals))

    with pyframe.callback(callback):
        one(1)
        one(2)  # refills the spare one(1) left; ints: need not be tracked
        one([])  # refills it with a list: must be tracked, as a new dict would be
    assert tracked[2] is True


@pytest.mark.skipif(not PY312, reason="dict watchers are CPython 3.12's (gh-91052)")
def test_a_dict_someone_watches_is_not_refilled_behind_the_watchers_back():
    testcapi = pytest.importorskip("_testcapi")
    watcher = testcapi.add_dict_watcher(0)  # records every event
    try:
        # Watch the first f_locals a callback reads: the one pyframe may reuse.
        def callback_watching_first(frame):
            if frame.f_code is one.__code__:
                f_locals = frame.f_locals
                if f_locals["n"] == 0:
                    testcapi.watch_dict(watcher, f_locals)

        with pyframe.callback(callback_watching_first):
            for i in range(3):
                one(i)
            # Dropped, it was freed at once, never refilled without a word to
            # its watcher (a spare would live on until the callback goes).
            assert testcapi.get_dict_watcher_events() == ["dealloc"]
    finally:
        testcapi.clear_dict_watcher(watcher)
