"""pyframe.Cache.set_regions: context managers around a cache's lookup and
around running its entries' code, as a JIT's profiler annotations need them
(TorchDynamo's C layer records "TorchDynamo Cache Lookup" and "Torch-Compiled
Region" events there)."""

import gc
import sys
import tracemalloc

import pytest
from conftest import refcounts

import pyframe


def fresh(source, name):
    namespace = {}
    exec(source, namespace)
    return namespace[name]


LEAF = "def leaf(x):\n    return x + 1\n"
FAST = "def leaf(x):\n    return x + 100\n"
RAISES = "def leaf(x):\n    raise KeyError(x)\n"


class Events:
    """Records what happens, in order: regions entered and left, guards
    called, replacement code run (through `note`)."""

    def __init__(self):
        self.log = []

    def region(self, name):
        events = self

        class Manager:
            def __init__(self, *args):
                self.args = args

            def __enter__(self):
                events.log.append(("enter", name) + self.args)
                return self

            def __exit__(self, *exc):
                events.log.append(("exit", name, exc))
                return True  # would swallow an exception: pyframe passes None

        return Manager

    def guard(self, verdict):
        def guard(f_locals):
            self.log.append(("guard", f_locals["x"]))
            return verdict

        return guard


def for_leaf(leaf, answer):
    """A callback answering answer() for frames of `leaf`, None for others."""
    return lambda frame: answer() if frame.f_code is leaf.__code__ else None


def replacement_noting(events, leaf, source=FAST):
    """The replacement code of `source`'s leaf, calling note(x) first (in
    `leaf`'s globals, where replacement code runs)."""
    leaf.__globals__["note"] = lambda x: events.log.append(("run", x))
    namespace = {}
    exec(source.replace("def leaf(x):\n", "def leaf(x):\n    note(x)\n"), namespace)
    return namespace["leaf"].__code__, namespace


def test_lookup_and_run_regions_surround_the_guards_and_the_entrys_code():
    events = Events()
    leaf = fresh(LEAF, "leaf")
    code, _ = replacement_noting(events, leaf)
    guard = events.guard(True)
    cache = pyframe.Cache()
    cache.set_regions(lookup=events.region("lookup"), run=events.region("run"))
    assert cache.lookup_region is not None and cache.run_region is not None
    with pyframe.callback(for_leaf(leaf, lambda: pyframe.Compiled(code, guard)), cache=cache):
        assert leaf(1) == 101  # made by the callback: run in its region
        events.log.clear()
        assert leaf(2) == 102  # cached: looked up, then run
    assert events.log == [
        ("enter", "lookup"),
        ("guard", 2),
        ("exit", "lookup", (None, None, None)),
        ("enter", "run", guard),
        ("run", 2),
        ("exit", "run", (None, None, None)),
    ]


def test_the_entry_made_by_the_callback_runs_in_its_region_with_its_guard():
    events = Events()
    leaf = fresh(LEAF, "leaf")
    code, _ = replacement_noting(events, leaf)
    guard = events.guard(True)
    cache = pyframe.Cache()
    cache.set_regions(lookup=events.region("lookup"), run=events.region("run"))
    with pyframe.callback(for_leaf(leaf, lambda: pyframe.Compiled(code, guard)), cache=cache):
        leaf(1)
    # No entry yet: no lookup.  The new entry runs in the run region.
    assert events.log == [("enter", "run", guard), ("run", 1), ("exit", "run", (None, None, None))]


def test_a_miss_has_a_lookup_region_and_no_run_region():
    events = Events()
    leaf = fresh(LEAF, "leaf")
    code, _ = replacement_noting(events, leaf)
    cache = pyframe.Cache()
    cache.set_regions(lookup=events.region("lookup"), run=events.region("run"))
    answers = iter([pyframe.Compiled(code, events.guard(False)), None])
    with pyframe.callback(for_leaf(leaf, lambda: next(answers)), cache=cache):
        leaf(1)
        events.log.clear()
        assert leaf(2) == 3  # the guard fails; the callback lets it run as it is
    assert events.log == [
        ("enter", "lookup"),
        ("guard", 2),
        ("exit", "lookup", (None, None, None)),
    ]


def test_an_uncached_replacement_and_an_entry_without_a_guard_get_none():
    events = Events()
    leaf = fresh(LEAF, "leaf")
    code, _ = replacement_noting(events, leaf)
    cache = pyframe.Cache()
    cache.set_regions(run=events.region("run"))
    with pyframe.callback(for_leaf(leaf, lambda: code), cache=cache):
        leaf(1)
    with pyframe.callback(for_leaf(leaf, lambda: pyframe.Compiled(code)), cache=cache):
        leaf(2)
        leaf(3)  # the guardless entry's fast path steps aside for the region
    runs = [event for event in events.log if event[0] == "enter"]
    assert runs == [("enter", "run", None)] * 3


def test_the_run_region_is_left_when_the_code_raises_and_the_exception_goes_on():
    events = Events()
    leaf = fresh(LEAF, "leaf")
    code, _ = replacement_noting(events, leaf, RAISES)
    cache = pyframe.Cache()
    cache.set_regions(run=events.region("run"))
    with pyframe.callback(
        for_leaf(leaf, lambda: pyframe.Compiled(code, lambda f_locals: True)), cache=cache
    ):
        for x in (1, 2):
            with pytest.raises(KeyError) as raised:
                leaf(x)
            assert raised.value.args == (x,)
    assert [event[:2] for event in events.log] == [
        ("enter", "run"),
        ("run", 1),
        ("exit", "run"),
    ] + [
        ("enter", "run"),
        ("run", 2),
        ("exit", "run"),
    ]


def test_the_callback_does_not_see_the_regions_frames():
    events = Events()
    leaf = fresh(LEAF, "leaf")
    code, _ = replacement_noting(events, leaf)
    seen = []

    def callback(frame):
        seen.append(frame.f_code.co_name)
        if frame.f_code is leaf.__code__:
            return pyframe.Compiled(code, lambda f_locals: True)
        return pyframe.SKIP

    cache = pyframe.Cache()
    cache.set_regions(lookup=events.region("lookup"), run=events.region("run"))
    with pyframe.callback(callback, cache=cache):
        leaf(1)
        leaf(2)
    assert "leaf" in seen
    assert not {"__enter__", "__exit__", "__init__"} & set(seen)  # the regions' frames


def test_a_failing_region_is_reported_and_the_frame_runs_without_it():
    leaf = fresh(LEAF, "leaf")
    reports = []

    def broken(*args):
        raise ValueError("no region")

    cache = pyframe.Cache()
    cache.set_regions(lookup=broken, run=broken)
    old_hook = sys.unraisablehook
    sys.unraisablehook = lambda report: reports.append(type(report.exc_value))
    try:
        with pyframe.callback(
            for_leaf(leaf, lambda: pyframe.Compiled(FAST_CODE, lambda f: True)), cache=cache
        ):
            assert leaf(1) == 101
            assert leaf(2) == 102
    finally:
        sys.unraisablehook = old_hook
    assert reports == [ValueError] * 3  # run, then lookup and run


FAST_CODE = fresh(FAST, "leaf").__code__


def test_no_regions_after_set_regions_with_none():
    events = Events()
    leaf = fresh(LEAF, "leaf")
    cache = pyframe.Cache()
    cache.set_regions(lookup=events.region("lookup"), run=events.region("run"))
    cache.set_regions()
    assert cache.lookup_region is None and cache.run_region is None
    with pyframe.callback(
        for_leaf(leaf, lambda: pyframe.Compiled(FAST_CODE, lambda f: True)), cache=cache
    ):
        leaf(1)
        leaf(2)
    assert events.log == []


def test_a_guard_that_takes_the_regions_away_is_safe():
    events = Events()
    leaf = fresh(LEAF, "leaf")
    cache = pyframe.Cache()

    def guard(f_locals):
        cache.set_regions()  # drops the only reference to both factories
        return True

    cache.set_regions(lookup=events.region("lookup"), run=events.region("run"))
    with pyframe.callback(for_leaf(leaf, lambda: pyframe.Compiled(FAST_CODE, guard)), cache=cache):
        leaf(1)
        cache.set_regions(lookup=events.region("lookup"), run=events.region("run"))
        events.log.clear()
        assert leaf(2) == 102
    # The regions in force when the lookup began are kept to its end.
    assert [event[:2] for event in events.log] == [
        ("enter", "lookup"),
        ("exit", "lookup"),
        ("enter", "run"),
        ("exit", "run"),
    ]


def test_set_regions_rejects_what_is_not_callable():
    cache = pyframe.Cache()
    with pytest.raises(
        TypeError, match=r"expects run to be a callable returning a context manager"
    ):
        cache.set_regions(run=42)
    assert cache.run_region is None


class Quiet:
    """A region that records nothing (what it would record would be counted
    as growth: tuples kept on CPython's free lists, say)."""

    def __init__(self, *guard):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def test_regions_leak_nothing():
    leaf = fresh(LEAF, "leaf")

    def guard(f_locals):
        return True

    cache = pyframe.Cache()
    cache.set_regions(lookup=Quiet, run=Quiet)

    def calls(n):
        for x in range(n):
            leaf(x)

    def growth(n):
        """What n calls add to the reference counts and to traced memory."""
        gc.collect()
        before = refcounts([guard, Quiet, cache, FAST_CODE])
        tracemalloc.start()
        try:
            calls(n)
            gc.collect()
            memory = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        return [
            after - b
            for after, b in zip(refcounts([guard, Quiet, cache, FAST_CODE]), before, strict=True)
        ], memory

    with pyframe.callback(for_leaf(leaf, lambda: pyframe.Compiled(FAST_CODE, guard)), cache=cache):
        calls(5000)
        few, few_memory = growth(2000)
        many, many_memory = growth(20000)
    # 18,000 more calls add nothing: a reference or a block kept per call
    # would add 18,000 of them.  (On 3.11, None's count moves by a few under
    # pytest and tracemalloc, the same after 2,000 calls as after 20,000.)
    assert all(abs(m - f) < 100 for m, f in zip(many, few, strict=True)), (few, many)
    assert many_memory - few_memory < 16 * 1024
