"""Caches: whose decisions and entries are found, what is remembered, when
entries go.  The API a JIT stands on: pyframe.Cache, the remembered
decisions (SKIP, SKIP_RECURSIVE, RUN_ONLY, RUN_ONLY_RECURSIVE),
pyframe.run_only, Compiled(depends_on=...) and Cache(on_drop=...)."""

import gc
import sys
import weakref

import pytest
from conftest import with_const

import pyframe


def fresh(source, name):
    """A function of its own code object (the fixture resets every cache,
    but a new code object also keeps tests from sharing states)."""
    namespace = {}
    exec(source, namespace)
    return namespace[name]


LEAF = "def leaf(x):\n    return x + 1\n"
TREE = "def leaf(x):\n    return x + 1\n\ndef root(x):\n    return leaf(x) * 2\n"


class Recorder:
    """A callback answering `result` (or result(frame)) and recording names."""

    def __init__(self, result=None):
        self.names = []
        self.result = result

    def __call__(self, frame):
        self.names.append(frame.f_code.co_name)
        return self.result(frame) if callable(self.result) else self.result

    def method(self, frame):
        return self(frame)


def caching(replacement, **options):
    """A callback caching `replacement` for every frame."""
    return lambda frame: pyframe.Compiled(replacement, **options)


# ---- decisions survive re-installation --------------------------------------------


def test_the_same_callback_installed_again_is_not_asked_about_what_it_skipped():
    leaf = fresh(LEAF, "leaf")
    recorder = Recorder(pyframe.SKIP)
    for _ in range(3):  # as a framework's wrapper installs it around every call
        with pyframe.callback(recorder):
            leaf(1)
    assert recorder.names == ["leaf"]
    other = Recorder()
    with pyframe.callback(other):
        leaf(1)
    assert other.names == ["leaf"], "another callback is asked"


def test_a_bound_method_installed_again_is_the_same_callback():
    leaf = fresh(LEAF, "leaf")
    recorder = Recorder(pyframe.SKIP)
    for _ in range(3):
        with pyframe.callback(recorder.method):  # a new bound method each time
            leaf(1)
    assert recorder.names == ["leaf"]
    another = Recorder(pyframe.SKIP)
    with pyframe.callback(another.method):
        leaf(1)
    assert another.names == ["leaf"]


def test_a_callback_and_its_cache_die_together():
    leaf = fresh(LEAF, "leaf")
    replacement = with_const(leaf.__code__, 1, 100)
    alive = weakref.ref(replacement)
    callback = caching(replacement)
    with pyframe.callback(callback):
        assert leaf(1) == 101
    assert len(pyframe.cache_entries(leaf.__code__)) == 1
    del callback, replacement
    gc.collect()
    assert pyframe.cache_entries(leaf.__code__) == []
    assert alive() is None


def test_skip_recursive_is_remembered_for_the_whole_call_tree():
    namespace = {}
    exec(TREE, namespace)
    root, leaf = namespace["root"], namespace["leaf"]
    recorder = Recorder(
        lambda frame: pyframe.SKIP_RECURSIVE if frame.f_code is root.__code__ else None
    )
    for _ in range(3):
        with pyframe.callback(recorder):
            assert root(1) == 4
            leaf(1)  # called on its own, leaf is asked
    assert recorder.names == ["root", "leaf", "leaf", "leaf"]
    pyframe.reset(root.__code__, cache=None)
    with pyframe.callback(recorder):
        root(1)
    assert recorder.names[-1] == "root"


# ---- caches belong to their owner ----------------------------------------------------


def test_two_clients_never_run_each_others_entries():
    leaf = fresh(LEAF, "leaf")
    tens = with_const(leaf.__code__, 1, 10)
    hundreds = with_const(leaf.__code__, 1, 100)
    first, second = pyframe.Cache(), pyframe.Cache()
    asked = []

    def compiler(replacement):
        def callback(frame):
            asked.append(replacement)
            return pyframe.Compiled(replacement)

        return callback

    one, two = compiler(tens), compiler(hundreds)
    for _ in range(3):
        with pyframe.callback(one, cache=first):
            assert leaf(1) == 11
        with pyframe.callback(two, cache=second):
            assert leaf(1) == 101
    assert asked == [tens, hundreds], "each compiled once, then its own entry ran"
    assert [code for code, _, _ in pyframe.cache_entries(leaf.__code__, cache=first)] == [tens]
    assert [code for code, _, _ in pyframe.cache_entries(leaf.__code__, cache=second)] == [hundreds]
    assert len(pyframe.cache_entries(leaf.__code__)) == 2

    pyframe.reset(leaf.__code__, cache=first)
    assert pyframe.cache_entries(leaf.__code__, cache=first) == []
    assert len(pyframe.cache_entries(leaf.__code__, cache=second)) == 1
    with pyframe.callback(two, cache=second):
        assert leaf(1) == 101
    assert asked == [tens, hundreds]
    pyframe.reset(cache=second)
    assert pyframe.cache_entries(leaf.__code__) == []


def test_a_cache_limit_counts_one_owners_entries():
    leaf = fresh(LEAF, "leaf")
    small, big = pyframe.Cache(limit=1), pyframe.Cache(limit=3)
    versions = [with_const(leaf.__code__, 1, k) for k in range(4)]

    def caching(frame):
        return pyframe.Compiled(versions[frame.f_locals["x"]], guard=lambda f: False)

    for x in range(4):
        with pyframe.callback(caching, cache=small):
            assert leaf(x) == 2 * x
        with pyframe.callback(caching, cache=big):
            assert leaf(x) == 2 * x
    assert [c for c, _, _ in pyframe.cache_entries(leaf.__code__, cache=small)] == [versions[3]]
    assert [c for c, _, _ in pyframe.cache_entries(leaf.__code__, cache=big)] == versions[:0:-1]


def test_a_freed_cache_takes_its_entries_and_decisions_with_it():
    leaf = fresh(LEAF, "leaf")
    replacement = leaf.__code__.replace()
    alive = weakref.ref(replacement)
    cache = pyframe.Cache()
    with pyframe.callback(caching(replacement), cache=cache):
        leaf(1)
    del replacement
    assert alive() is not None
    del cache
    gc.collect()
    assert alive() is None
    assert pyframe.cache_entries(leaf.__code__) == []


# ---- run-only ---------------------------------------------------------------------------


def test_run_only_runs_cached_entries_and_never_asks():
    leaf = fresh(LEAF, "leaf")
    faster = with_const(leaf.__code__, 1, 1000)
    cache = pyframe.Cache()
    compiler = Recorder(lambda frame: pyframe.Compiled(faster, lambda f: f["x"] < 10))
    with pyframe.callback(compiler, cache=cache):
        assert leaf(1) == 1001
    with pyframe.run_only(cache):
        assert pyframe.get_callback() is None and pyframe.hook_installed()
        assert leaf(2) == 1002  # a hit: the entry runs
        assert leaf(50) == 51  # a miss: runs as it is, nobody asked
    assert compiler.names == ["leaf"]
    assert not pyframe.hook_installed()
    assert [hits for _, _, hits in pyframe.cache_entries(leaf.__code__, cache=cache)] == [1]


def test_run_only_decision_for_one_code_object():
    leaf = fresh(LEAF, "leaf")
    faster = with_const(leaf.__code__, 1, 1000)

    def decide(frame):
        x = frame.f_locals["x"]
        return pyframe.Compiled(faster, lambda f: f["x"] == 1) if x == 1 else pyframe.RUN_ONLY

    compiler = Recorder(decide)
    for x in (1, 2, 3, 1, 4):
        with pyframe.callback(compiler):
            assert leaf(x) == (1001 if x == 1 else x + 1)
    assert compiler.names == ["leaf", "leaf"], "after RUN_ONLY, misses are not asked about"


def test_run_only_recursive_covers_what_the_frame_calls():
    namespace = {}
    exec(TREE, namespace)
    root, leaf = namespace["root"], namespace["leaf"]
    fast_leaf = with_const(leaf.__code__, 1, 1000)
    state = {"limit": False}

    def decide(frame):
        if frame.f_code is leaf.__code__:
            return pyframe.Compiled(fast_leaf, lambda f: f["x"] == 1)
        return pyframe.RUN_ONLY_RECURSIVE if state["limit"] else None

    compiler = Recorder(decide)
    with pyframe.callback(compiler):
        assert root(1) == 2002  # leaf's entry cached for x == 1
        state["limit"] = True
        assert root(1) == 2002  # root: RUN_ONLY_RECURSIVE; leaf: hit
        assert root(5) == 12  # root and leaf miss: neither is asked
        assert root(1) == 2002
    assert compiler.names == ["root", "leaf", "root"]


# ---- entries tied to objects, and owners told ------------------------------------------


class Model:
    """An object an entry can depend on (specialized for one instance)."""


def test_an_entry_goes_when_an_object_it_depends_on_dies():
    leaf = fresh(LEAF, "leaf")
    faster = with_const(leaf.__code__, 1, 1000)
    model = Model()
    dropped = []
    cache = pyframe.Cache(on_drop=lambda *args: dropped.append(args))
    compiler = Recorder(caching(faster, depends_on=(model,)))
    with pyframe.callback(compiler, cache=cache):
        assert leaf(1) == 1001
        assert leaf(1) == 1001
        del compiler.result, model
        gc.collect()
        assert pyframe.cache_entries(leaf.__code__) == []
        assert dropped == [(leaf.__code__, faster, None, "invalidated")]
        compiler.result = None
        assert leaf(1) == 2
    assert compiler.names == ["leaf", "leaf"]


def test_owners_are_told_of_limit_and_reset_drops_not_of_their_own_death():
    leaf = fresh(LEAF, "leaf")
    versions = [with_const(leaf.__code__, 1, k) for k in range(3)]
    guard = lambda f: False  # noqa: E731
    dropped = []
    cache = pyframe.Cache(limit=2, on_drop=lambda *args: dropped.append(args))

    def caching(frame):
        return pyframe.Compiled(versions[frame.f_locals["x"]], guard)

    with pyframe.callback(caching, cache=cache):
        for x in range(3):
            leaf(x)
    assert dropped == [(leaf.__code__, versions[0], guard, "limit")]
    pyframe.reset(leaf.__code__)
    assert [reason for *_, reason in dropped] == ["limit", "reset", "reset"]
    assert {args[1] for args in dropped[1:]} == {versions[1], versions[2]}
    with pyframe.callback(caching, cache=cache):
        leaf(0)
    del cache
    gc.collect()
    assert len(dropped) == 3


def test_an_on_drop_that_raises_is_reported_as_unraisable():
    leaf = fresh(LEAF, "leaf")
    reported = []

    def on_drop(*args):
        raise LookupError("from on_drop")

    cache = pyframe.Cache(on_drop=on_drop)
    with pyframe.callback(lambda frame: pyframe.Compiled(leaf.__code__.replace()), cache=cache):
        leaf(1)
    previous = sys.unraisablehook
    sys.unraisablehook = reported.append
    try:
        pyframe.reset(cache=cache)
    finally:
        sys.unraisablehook = previous
    assert [type(report.exc_value) for report in reported] == [LookupError]
    assert pyframe.cache_entries(leaf.__code__) == []


# ---- an entry that runs the original code ----------------------------------------------


def test_an_entry_running_the_original_code_does_not_keep_it_alive():
    """Compiled(frame.f_code, guard): "run it as it is while the guard holds".
    The entry lives on the code object; holding the code would keep the code
    alive through its own state (CPython's test_code saw it: CodeWeakRefTest,
    CoExtra.test_free_called)."""
    leaf = fresh(LEAF, "leaf")
    guard_calls = []

    def guard(f_locals):
        guard_calls.append(f_locals["x"])
        return True

    def callback(frame):
        return pyframe.Compiled(frame.f_code, guard)

    code_alive = weakref.ref(leaf.__code__)
    with pyframe.callback(callback):
        assert leaf(1) == 2
        assert leaf(2) == 3  # a hit: the frame runs as it is
    assert guard_calls == [2]
    assert [(code, hits) for code, _, hits in pyframe.cache_entries(leaf.__code__)] == [
        (leaf.__code__, 1)
    ]
    del leaf
    gc.collect()
    assert code_alive() is None


# ---- bad input --------------------------------------------------------------------------


def test_bad_input_is_a_clear_error():
    with pytest.raises(TypeError, match="limit.*str"):
        pyframe.Cache(limit="8")
    with pytest.raises(ValueError, match="got -1"):
        pyframe.Cache(limit=-1)
    with pytest.raises(TypeError, match="on_drop.*int"):
        pyframe.Cache(on_drop=3)
    with pytest.raises(TypeError, match="pyframe.Cache; got a int"):
        pyframe.callback(print, cache=3)
    with pytest.raises(TypeError, match="pyframe.Cache; got a str"):
        pyframe.run_only("cache")
    with pytest.raises(TypeError, match="pyframe.Cache; got a dict"):
        pyframe.cache_entries(fresh(LEAF, "leaf").__code__, cache={})
    with pytest.raises(TypeError, match="run_only"):
        pyframe.set_callback(None, cache=pyframe.Cache())
    with pytest.raises(TypeError, match="weakly referenced; got a int"):
        pyframe.Compiled(fresh(LEAF, "leaf").__code__, depends_on=[1])
    with pytest.raises(TypeError, match="iterable"):
        pyframe.Compiled(fresh(LEAF, "leaf").__code__, depends_on=1)
    assert not pyframe.hook_installed()


def test_remember_makes_and_forgets_a_decision_outside_a_callback():
    cache = pyframe.Cache()
    seen = []

    def target():
        return 1

    def observer(frame):
        seen.append(frame.f_code.co_name)

    code = target.__code__
    assert pyframe.remembered(code, cache=cache) is None
    pyframe.remember(code, pyframe.SKIP, cache=cache)
    assert pyframe.remembered(code, cache=cache) is pyframe.SKIP
    with pyframe.callback(observer, cache=cache):
        target()
    assert seen == []
    # Another cache does not see it.
    assert pyframe.remembered(code, cache=pyframe.Cache()) is None
    pyframe.remember(code, None, cache=cache)
    with pyframe.callback(observer, cache=cache):
        target()
    assert seen == ["target"]
    with pytest.raises(TypeError, match="expects decision to be None, pyframe.SKIP"):
        pyframe.remember(code, "skip", cache=cache)
    with pytest.raises(TypeError, match="expects a code object"):
        pyframe.remember(target, pyframe.SKIP, cache=cache)
