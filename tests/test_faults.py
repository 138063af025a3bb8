"""Faults around the hook: exceptions and interrupts from callbacks and guards,
garbage collection at awkward moments, code objects dying with cached entries,
fork, tracers and monitoring alongside, runaway recursion, and callbacks or
guards that change pyframe's own state while frames run.

Each test ends by checking that the interpreter still works (`sanity()`); the
autouse fixture in conftest checks that no callback and no hook is left.
"""

import asyncio
import gc
import os
import re
import signal
import subprocess
import sys
import threading
import traceback
import types
import warnings
import weakref

import pytest
from conftest import (
    HOOK_LOWERS_RECURSION_LIMIT,
    PY312,
    _free_tool_id,
    monitoring,
    with_const,
)

import pyframe


def sanity():
    """A little of everything the interpreter does, with and without pyframe."""

    def gen(n):
        yield from range(n)

    async def coro(x):
        await asyncio.sleep(0)
        return x * 2

    class Thing:
        def __init__(self, value):
            self.value = value

    def run():
        try:
            {}["missing"]
        except KeyError:
            pass
        return sum(gen(4)) + asyncio.run(coro(3)) + Thing(5).value + len([i for i in range(3)])

    assert run() == 6 + 6 + 5 + 3
    seen = []
    with pyframe.callback(lambda frame: seen.append(frame.f_code.co_name)):
        assert run() == 20
    assert "run" in seen and "gen" in seen and "__init__" in seen


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def calls_add(x):
    return add(x, 1) * 2


def descend(n):
    return 0 if n == 0 else descend(n - 1) + 1


def deepest_descent():
    """How deep descend() can go from here before a RecursionError.

    Under the hook that is less than without it on 3.12, whose eval loop
    counts each entry against its C recursion limit too (a PEP 523 function
    makes every Python call enter it).
    """
    low, high = 0, sys.getrecursionlimit()
    while low < high:
        middle = (low + high + 1) // 2
        try:
            descend(middle)
        except RecursionError:
            high = middle - 1
        else:
            low = middle
    return low


class Boom(Exception):
    pass


# ---- exceptions and interrupts from callbacks ------------------------------------


@pytest.mark.parametrize("error", [Boom, KeyboardInterrupt, SystemExit, GeneratorExit])
def test_exception_from_the_callback_at_every_depth(error):
    """The frame the callback refused never runs; its caller sees the exception
    at the call, at any depth, and every level above unwinds normally."""
    value = object()
    before = sys.getrefcount(value)

    def deep(n, payload):
        return 0 if n == 0 else deep(n - 1, payload) + 1

    for fail_at in (0, 1, 7, 30):

        def callback(frame, fail_at=fail_at):
            if frame.f_code is deep.__code__ and frame.f_locals["n"] == fail_at:
                raise error(fail_at)

        with pyframe.callback(callback):
            with pytest.raises(error) as info:
                deep(30, value)
            if fail_at:  # a shallower call never reaches the refused depth
                assert deep(fail_at - 1, value) == fail_at - 1
        assert info.value.args == (fail_at,)
        # The traceback runs from the caller of the refused frame (which never
        # ran) straight into the callback.
        names = [entry.name for entry in traceback.extract_tb(info.value.__traceback__)]
        test_name = test_exception_from_the_callback_at_every_depth.__name__
        caller = "deep" if fail_at < 30 else test_name
        assert names[-2:] == [caller, "callback"]
        assert names.count("deep") == 30 - fail_at
        del info
    assert sys.getrefcount(value) == before
    sanity()


class Hashed:
    def __hash__(self):
        return 1

    def __eq__(self, other):
        return self is other


class Attrs:
    def __getattr__(self, name):
        return "dynamic"


def test_exception_from_the_callback_for_frames_called_from_c():
    """Frames that C code calls (a dict's __hash__, sorted's key, __init__,
    __getattr__, a class body, exec'd module code) fail at that C call."""
    refused = {
        Hashed.__hash__.__code__,
        add.__code__,
        Attrs.__getattr__.__code__,
    }

    def callback(frame):
        if frame.f_code in refused or frame.f_code.co_name in ("Body", "<module>"):
            raise Boom(frame.f_code.co_name)

    with pyframe.callback(callback):
        with pytest.raises(Boom, match="__hash__"):
            {Hashed(): 1}
        with pytest.raises(Boom, match="add"):
            sorted([3, 1, 2], key=lambda v: add(v, 0))
        with pytest.raises(Boom, match="add"):
            list(map(add, [1], [2]))
        # getattr with a default only swallows AttributeError.
        with pytest.raises(Boom, match="__getattr__"):
            getattr(Attrs(), "x", None)
        with pytest.raises(Boom, match="Body"):

            class Body:
                pass

        with pytest.raises(Boom, match="<module>"):
            exec(compile("x = 1", "<faults>", "exec"), {})
    assert {Hashed(): 1} and Attrs().x == "dynamic"
    sanity()


def test_attribute_error_from_the_callback_is_a_missing_attribute():
    """The exception is the function's, so __getattr__ refusing with
    AttributeError means "no such attribute" to getattr(obj, name, default)."""

    def callback(frame):
        if frame.f_code is Attrs.__getattr__.__code__:
            raise AttributeError("refused")

    with pyframe.callback(callback):
        assert getattr(Attrs(), "x", "default") == "default"
    assert getattr(Attrs(), "x", "default") == "dynamic"


def test_sigint_delivered_inside_the_callback_is_a_keyboard_interrupt():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers run on the main thread only")
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    raised = []

    def callback(frame):
        if frame.f_code is add.__code__ and not raised:
            raised.append(True)
            signal.raise_signal(signal.SIGINT)

    try:
        with pyframe.callback(callback):
            with pytest.raises(KeyboardInterrupt):
                calls_add(1)
            assert calls_add(1) == 4
    finally:
        signal.signal(signal.SIGINT, handler)
    sanity()


def test_exception_from_a_finalizer_frame_is_unraisable_not_lost():
    """A finalizer runs Python outside any callback; when the callback refuses
    its frame the error goes to sys.unraisablehook, as any __del__ error."""
    unraisable = []

    class Finalized:
        def __del__(self):
            add(1, 2)

    def callback(frame):
        if frame.f_code is add.__code__:
            raise Boom("in __del__")

    previous = sys.unraisablehook
    sys.unraisablehook = lambda report: unraisable.append(report.exc_type)
    try:
        with pyframe.callback(callback):
            Finalized()
    finally:
        sys.unraisablehook = previous
    assert unraisable == [Boom]
    sanity()


# ---- guards that fail, and guards that change pyframe ----------------------------


def guarded(x):
    return x


def guarded_callback(guard):
    """Caches a copy of guarded()'s code behind `guard`."""
    replacement = guarded.__code__.replace()

    def callback(frame):
        if frame.f_code is guarded.__code__:
            return pyframe.Compiled(replacement, guard)
        return None

    return callback


class BadBool:
    def __init__(self, error):
        self.error = error

    def __bool__(self):
        raise self.error


@pytest.mark.parametrize(
    "expected, bad_bool",
    [
        (Boom, False),
        (KeyboardInterrupt, False),
        (RecursionError, False),
        (Boom, True),
        (KeyboardInterrupt, True),
    ],
    ids=["raises", "interrupt", "recursion", "bad-bool", "bad-bool-interrupt"],
)
def test_guard_failures_propagate_and_leave_the_cache_usable(expected, bad_bool):
    value = object()
    before = sys.getrefcount(value)
    failing = [False]

    def guard(f_locals):
        # A new exception each time: a raised one keeps the guard's frame, and
        # so its f_locals, alive through its traceback.
        if failing[0]:
            if bad_bool:
                return BadBool(expected())
            raise expected()
        return True

    callback = guarded_callback(guard)  # kept alive: its cache holds the entry
    with pyframe.callback(callback):
        assert guarded(value) is value  # the callback caches the entry
        failing[0] = True
        for _ in range(3):
            with pytest.raises(expected):
                guarded(value)
        failing[0] = False
        assert guarded(value) is value
    assert [hits for _, _, hits in pyframe.cache_entries(guarded.__code__)] == [1]
    assert sys.getrefcount(value) == before
    sanity()


def test_guard_returning_non_bools_uses_their_truth():
    verdicts = iter([[], [0], 0.0, "yes", None, 3])
    asked = []

    def callback(frame):
        if frame.f_code is guarded.__code__:
            asked.append(frame.f_locals["x"])
            return pyframe.Compiled(guarded.__code__.replace(), lambda f_locals: next(verdicts))
        return None

    with pyframe.callback(callback):
        assert [guarded(i) for i in range(5)] == list(range(5))
    # Call 0 asks (no entry yet); later calls ask whenever every guard said no.
    # Guards are asked most recently used first: 1 -> [] no (ask, new entry),
    # 2 -> [0] yes, 3 -> 0.0 no, "yes" yes, 4 -> None no, 3 yes.
    assert asked == [0, 1]


def test_guard_that_resets_pyframe_is_kept_alive_and_the_callback_asked():
    class Guard:
        calls = 0

        def __call__(self, f_locals):
            Guard.calls += 1
            pyframe.reset()  # drops the entry holding this guard
            return True

    # The first guard is handed over: then only the cache holds it.
    handed = [Guard()]
    alive = weakref.ref(handed[0])
    asked = []

    def callback(frame):
        if frame.f_code is guarded.__code__:
            asked.append(frame.f_locals["x"])
            guard = handed.pop() if handed else Guard()
            return pyframe.Compiled(guarded.__code__.replace(), guard)
        return None

    with pyframe.callback(callback):
        assert guarded(1) == 1
        gc.collect()
        assert alive() is not None  # the cache holds it
        assert guarded(2) == 2  # the guard drops its own entry: ask again
        assert alive() is None
        assert guarded(3) == 3
    assert asked == [1, 2, 3]
    assert Guard.calls == 2
    sanity()


def test_guard_whose_bool_resets_pyframe():
    class ResettingTrue:
        def __bool__(self):
            pyframe.reset()
            return True

    asked = []

    def callback(frame):
        if frame.f_code is guarded.__code__:
            asked.append(frame.f_locals["x"])
            return pyframe.Compiled(guarded.__code__.replace(), lambda f_locals: ResettingTrue())
        return None

    with pyframe.callback(callback):
        assert [guarded(i) for i in range(4)] == [0, 1, 2, 3]
    assert asked == [0, 1, 2, 3]


@pytest.mark.parametrize("action", ["remove", "replace", "cache-limit-0"])
def test_guard_that_changes_the_thread_callback_or_the_cache_limit(action):
    """A guard may remove the thread's callback (the frame then just runs:
    this used to call a NULL callback and crash), install another, or turn
    the cache off."""
    other_saw = []

    def other(frame):
        other_saw.append(frame.f_code.co_name)

    def guard(f_locals):
        if action == "remove":
            pyframe.set_callback(None)
        elif action == "replace":
            pyframe.set_callback(other)
        else:
            pyframe.set_cache_limit(0)
        return False

    limit = pyframe.get_cache_limit()
    try:
        with pyframe.callback(guarded_callback(guard)):
            assert guarded(1) == 1  # caches the entry
            assert guarded(2) == 2  # the guard runs and says no
            assert guarded(3) == 3
    finally:
        pyframe.set_cache_limit(limit)
    if action == "replace":
        assert other_saw == ["guarded", "guarded"]
    sanity()


# ---- callbacks that change pyframe while frames run ------------------------------


def test_callback_that_removes_itself_mid_recursion():
    seen = []

    def callback(frame):
        n = frame.f_locals.get("n")
        seen.append(n)
        if n == 5:
            pyframe.set_callback(None)
            assert not pyframe.hook_installed()

    with pyframe.callback(callback):
        assert descend(10) == 10
        assert pyframe.get_callback() is None
        assert descend(3) == 3
    assert seen == [10, 9, 8, 7, 6, 5]
    sanity()


def test_callback_that_installs_another_mid_recursion():
    first, second = [], []

    def later(frame):
        second.append(frame.f_locals.get("n"))

    def callback(frame):
        n = frame.f_locals.get("n")
        first.append(n)
        if n == 5:
            pyframe.set_callback(later)
        return None

    with pyframe.callback(callback):
        assert descend(8) == 8
        assert pyframe.get_callback() is later
    assert first == [8, 7, 6, 5] and second == [4, 3, 2, 1, 0]
    sanity()


def test_callback_that_reinstalls_the_hook_while_frames_run():
    """Frames started under pyframe's hook keep running after it is removed
    and installed again underneath them."""
    seen = []

    def bounce(n):
        if n == 3:
            previous = pyframe.set_callback(None)
            assert not pyframe.hook_installed()
            pyframe.set_callback(previous)
            assert pyframe.hook_installed()
        return 0 if n == 0 else bounce(n - 1) + 1

    with pyframe.callback(lambda frame: seen.append(frame.f_locals.get("n"))):
        assert bounce(6) == 6
    assert seen == [6, 5, 4, 3, 2, 1, 0]
    sanity()


def rec_cached(n):
    return probe(n) if n == 0 else rec_cached(n - 1) + 7


def probe(n):
    return n


def test_reset_while_replacement_code_runs_on_the_stack():
    """pyframe.reset() drops the entries while their code runs in frames
    below; those frames own their code and finish normally, and the code is
    freed once the last of them returns."""
    # The callback hands each replacement over: then the cache and the frames
    # running it are all that hold it.
    handed = [with_const(rec_cached.__code__, 7, 10) for _ in range(2)]  # + 10 per level
    watched = []  # a weakref to the replacement handed over last
    held_while_running = []
    resets = []

    def callback(frame):
        if frame.f_code is rec_cached.__code__:
            watched[:] = [weakref.ref(handed[-1])]
            return pyframe.Compiled(handed.pop())
        if frame.f_code is probe.__code__:
            pyframe.reset()
            resets.append(len(pyframe.cache_entries(rec_cached.__code__)))
            gc.collect()
            held_while_running.append(watched[0]() is not None)
        return None

    with pyframe.callback(callback):
        assert rec_cached(5) == 50
        gc.collect()
        assert watched[0]() is None, "no frame runs the replacement now: it should be freed"
        assert rec_cached(2) == 20  # a fresh entry
        gc.collect()
        assert watched[0]() is None
    assert resets == [0, 0]
    assert held_while_running == [True, True]
    sanity()


def test_callback_that_turns_the_cache_off_mid_run():
    limit = pyframe.get_cache_limit()

    def callback(frame):
        if frame.f_code is rec_cached.__code__:
            if frame.f_locals["n"] == 2:
                pyframe.set_cache_limit(0)
            return pyframe.Compiled(with_const(rec_cached.__code__, 7, 10), lambda f: False)
        return None

    try:
        with pyframe.callback(callback):
            assert rec_cached(4) == 40
            # n = 4 and 3 were cached; at n = 2 caching is off: the code's
            # entries go, and neither n = 2, 1 nor 0 is cached.
            assert pyframe.cache_entries(rec_cached.__code__) == []
    finally:
        pyframe.set_cache_limit(limit)
    sanity()


def test_lowered_cache_limit_holds_from_the_next_insert():
    """Entries cached under a higher limit go, least recently used first, when
    the next one is added (not only one of them)."""
    limit = pyframe.get_cache_limit()

    def callback(frame):
        if frame.f_code is guarded.__code__:
            replacement = with_const(guarded.__code__, None, frame.f_locals["x"])
            return pyframe.Compiled(replacement, lambda f_locals: False)
        return None

    try:
        with pyframe.callback(callback):
            for x in range(8):
                guarded(x)
            assert len(pyframe.cache_entries(guarded.__code__)) == 8
            pyframe.set_cache_limit(3)
            guarded(100)
            entries = pyframe.cache_entries(guarded.__code__)
            # The new entry, then the two most recently added before it.
            assert [code.co_consts[0] for code, _, _ in entries] == [100, 7, 6]
    finally:
        pyframe.set_cache_limit(limit)
    sanity()


# ---- garbage collection at awkward moments ---------------------------------------


@pytest.fixture
def manual_gc():
    """Collections happen only where the test calls gc.collect(): an automatic
    one could run the finalizers somewhere else first."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def make_cyclic_garbage(log, dying_code_owner=None):
    """A reference cycle whose finalizer runs Python and whose collection may
    free a function carrying cached entries."""

    class Node:
        def __del__(self):
            log.append(add(len(log), 0))

    node = Node()
    node.cycle = node
    node.function = dying_code_owner


def make_temporary_function():
    namespace = {}
    exec("def temporary(x):\n    return x * 3\n", namespace)
    return namespace["temporary"]


# Entries die with the cache that made them: cache_on's outlive its callback
# in this one, until the fixture's pyframe.reset().
CACHE_ON = pyframe.Cache()


def cache_on(function, guard=None):
    """Cache a replacement for `function` (run it once under a callback);
    return weakrefs to the replacement and the guard."""
    replacement = function.__code__.replace()
    with pyframe.callback(
        lambda frame: (
            pyframe.Compiled(replacement, guard) if frame.f_code is function.__code__ else None
        ),
        cache=CACHE_ON,
    ):
        function(1)
    return weakref.ref(replacement), (weakref.ref(guard) if guard else None)


class Guard:
    """A guard weakref can watch (a function's closure would tie it to the test)."""

    def __init__(self, verdict=True, hook=None):
        self.verdict, self.hook = verdict, hook

    def __call__(self, f_locals):
        if self.hook:
            self.hook()
        return self.verdict


def test_gc_collect_inside_the_callback(manual_gc):
    log = []
    temporary = make_temporary_function()
    replacement_alive, guard_alive = cache_on(temporary, Guard())
    make_cyclic_garbage(log, temporary)
    del temporary
    seen = []

    def callback(frame):
        seen.append(frame.f_code.co_name)
        if frame.f_code is add.__code__:
            gc.collect()  # runs Node.__del__ -> add() inside the callback, unseen
        return None

    with pyframe.callback(callback):
        assert calls_add(1) == 4
    assert log == [0]
    assert seen == ["calls_add", "add"]
    assert replacement_alive() is None and guard_alive() is None
    sanity()


def test_gc_collect_inside_a_guard_frees_other_code_with_entries(manual_gc):
    log = []
    temporary = make_temporary_function()
    dying_replacement, dying_guard = cache_on(temporary, Guard())
    make_cyclic_garbage(log, temporary)
    del temporary

    with pyframe.callback(guarded_callback(Guard(hook=gc.collect))):
        assert guarded(1) == 1
        assert guarded(2) == 2  # the guard collects: Node.__del__, temporary's entries
        assert guarded(3) == 3
    assert log == [0]
    assert dying_replacement() is None and dying_guard() is None
    sanity()


def test_finalizer_that_resets_pyframe_during_a_guard(manual_gc):
    """Garbage collected inside a guard whose finalizer resets every cache,
    the guard's own entry included."""

    class Resetter:
        def __del__(self):
            pyframe.reset()

    def hook():
        node = Resetter()
        node.cycle = node
        del node
        gc.collect()

    with pyframe.callback(guarded_callback(Guard(hook=hook))):
        for i in range(5):
            assert guarded(i) == i
    sanity()


# ---- code objects that die with entries cached -----------------------------------


def test_code_freed_with_entries_frees_the_entries():
    temporary = make_temporary_function()
    replacement_alive, guard_alive = cache_on(temporary, Guard())
    code_alive = weakref.ref(temporary.__code__)
    assert len(pyframe.cache_entries(temporary.__code__)) == 1
    del temporary
    gc.collect()
    assert code_alive() is None
    assert replacement_alive() is None and guard_alive() is None
    sanity()


def test_code_freed_by_another_thread_and_inside_a_callback():
    functions = [make_temporary_function() for _ in range(6)]
    watches = [cache_on(function, Guard()) for function in functions]

    def drop_half():
        del functions[:3]
        gc.collect()

    thread = threading.Thread(target=drop_half)
    thread.start()
    thread.join(10)

    def callback(frame):
        if frame.f_code is add.__code__:
            functions.clear()
            gc.collect()
        return None

    with pyframe.callback(callback):
        assert calls_add(2) == 6
    gc.collect()
    assert all(code() is None and guard() is None for code, guard in watches)
    sanity()


def test_many_code_objects_come_and_go_with_entries_and_skips():
    """code_state objects are linked on one list that pyframe.reset() walks:
    freeing many of them in any order must keep that list whole."""
    kept = []
    for round_number in range(200):
        function = make_temporary_function()
        verdict = (
            pyframe.SKIP
            if round_number % 3 == 0
            else pyframe.Compiled(function.__code__.replace(), Guard())
        )
        with pyframe.callback(
            lambda frame, f=function, v=verdict: v if frame.f_code is f.__code__ else None
        ):
            assert function(2) == 6
        if round_number % 5 == 0:
            kept.append(function)
        if round_number % 50 == 0:
            pyframe.reset()
    del function, verdict
    kept.clear()
    gc.collect()
    pyframe.reset()  # walks whatever is left
    sanity()


def guard_referring_to(function):
    """A guard whose closure holds `function`: cached on function's code, it
    closes the cycle function -> code -> entry -> guard -> function."""

    def guard(f_locals):
        return function is not None

    return guard


def test_entries_freed_by_reset_even_in_a_cycle_through_the_code():
    """A guard that refers to the function makes a cycle through the code
    object's extra storage, which the collector cannot see (code objects are
    not tracked): pyframe.reset() is what frees such entries."""
    temporary = make_temporary_function()

    replacement_alive, guard_alive = cache_on(temporary, guard_referring_to(temporary))
    function_alive = weakref.ref(temporary)
    del temporary
    gc.collect()
    pyframe.reset()
    gc.collect()
    assert replacement_alive() is None and guard_alive() is None and function_alive() is None


@pytest.mark.xfail(
    strict=True,
    reason="limitation: code objects are not tracked by the collector, so a cycle "
    "function -> code -> cached entry -> guard -> function is never collected",
)
def test_cycle_through_a_cached_guard_is_collected():
    temporary = make_temporary_function()

    _, guard_alive = cache_on(temporary, guard_referring_to(temporary))
    del temporary
    gc.collect()
    assert guard_alive() is None


# ---- fork ------------------------------------------------------------------------


def run_in_child(body):
    """Fork; run body() in the child, which exits 0 if it returned; return
    (exit code, what the child reported on failure)."""
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        # 3.12 warns when a process with threads forks; the tests mean it.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        status = 1
        try:
            os.close(read_end)
            body()
            status = 0
        except BaseException:
            os.write(write_end, traceback.format_exc().encode())
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        report = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), report


def test_fork_with_a_callback_installed():
    seen = []
    replacement = with_const(calls_add.__code__, 2, 200)

    def callback(frame):
        seen.append(frame.f_code.co_name)
        if frame.f_code is calls_add.__code__ and frame.f_locals["x"] == 5:
            return pyframe.Compiled(replacement, lambda f_locals: f_locals["x"] == 5)
        return None

    def child():
        seen.clear()
        assert calls_add(5) == 1200  # the entry cached before the fork
        assert calls_add(1) == 4
        assert seen == ["add", "calls_add", "add"], seen
        assert descend(50) == 50
        # A replacement the child's own new callback picks runs too.
        subtract = add.__code__.replace(co_code=sub.__code__.co_code)
        with pyframe.callback(lambda frame: subtract if frame.f_code is add.__code__ else None):
            assert calls_add(3) == (3 - 1) * 2  # (calls_add(5) would hit the cache)
        assert pyframe.get_callback() is callback
        pyframe.set_callback(None)
        assert not pyframe.hook_installed()
        sanity()

    with pyframe.callback(callback):
        assert calls_add(5) == 1200
        code, report = run_in_child(child)
        assert calls_add(1) == 4  # the parent goes on as before
    assert code == 0, report
    sanity()


def test_fork_while_another_thread_has_a_callback():
    """The child has only the forking thread: the other thread's callback is
    gone with it, and removing the child's own callback removes the hook."""
    started, release = threading.Event(), threading.Event()

    def worker():
        with pyframe.callback(lambda frame: None):
            started.set()
            release.wait(30)

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert started.wait(10)
        seen = []

        def child():
            seen.clear()
            assert calls_add(1) == 4
            assert seen == ["calls_add", "add"], seen
            pyframe.set_callback(None)
            assert not pyframe.hook_installed()
            pyframe.set_callback(lambda frame: None)
            assert pyframe.hook_installed()
            pyframe.set_callback(None)
            assert not pyframe.hook_installed()

        with pyframe.callback(lambda frame: seen.append(frame.f_code.co_name)):
            code, report = run_in_child(child)
        assert code == 0, report
    finally:
        release.set()
        thread.join(10)
    sanity()


def test_fork_inside_a_callback():
    def callback(frame):
        if frame.f_code is add.__code__:
            code, report = run_in_child(lambda: calls_add(1))
            assert code == 0, report
        return None

    with pyframe.callback(callback):
        assert calls_add(1) == 4
    sanity()


# ---- tracers and monitoring alongside --------------------------------------------


def traced_work(n):
    total = 0
    for i in range(n):
        total += add(i, 1)
    return total


def test_settrace_and_monitoring_with_replacement_code():
    """sys.settrace, sys.monitoring and pyframe at once: tracers see the
    replacement code run (its calls, lines and returns), pyframe still sees
    the frames the program runs, and the results are the replacement's."""
    replacement = with_const(traced_work.__code__, 1, 100)  # add(i, 100)
    trace_events, monitor_events, seen = [], [], []

    def tracer(frame, event, arg):
        if frame.f_code in (replacement, add.__code__):
            trace_events.append((frame.f_code.co_name, event, frame.f_code is replacement))
        return tracer

    def on_start(code, offset):
        monitor_events.append(("start", code is replacement, code.co_name))

    def on_return(code, offset, value):
        monitor_events.append(("return", code is replacement, value))

    def callback(frame):
        seen.append(frame.f_code.co_name)
        if frame.f_code is traced_work.__code__:
            return pyframe.Compiled(replacement)
        return None

    with monitoring({"PY_START": on_start, "PY_RETURN": on_return}) as monitored:
        sys.settrace(tracer)
        try:
            with pyframe.callback(callback):
                assert traced_work(3) == 0 + 1 + 2 + 300
                assert traced_work(2) == 0 + 1 + 200  # the cached entry
        finally:
            sys.settrace(None)
    assert seen == ["traced_work"] + ["add"] * 3 + ["add"] * 2
    assert trace_events[0] == ("traced_work", "call", True)
    assert ("traced_work", "line", True) in trace_events
    assert ("traced_work", "return", True) in trace_events
    assert sum(e == ("add", "call", False) for e in trace_events) == 5
    if monitored:
        starts = [e for e in monitor_events if e[0] == "start" and e[2] == "traced_work"]
        assert starts == [("start", True, "traced_work")] * 2
        assert ("return", True, 303) in monitor_events and ("return", True, 201) in monitor_events
    sanity()


def test_tracing_turned_on_and_off_from_callbacks_and_replacement_code():
    """The callback starts a tracer before the frame it was asked about runs;
    the replacement code stops it.  The frame's first event is its call."""
    trace_events = []

    def tracer(frame, event, arg):
        trace_events.append((frame.f_code.co_name, event))
        return tracer

    namespace = {"sys": sys}
    exec(
        "def calls_add(x):\n    sys.settrace(None)\n    return add(x, 1) * 2\n",
        namespace,
    )
    stopping = namespace["calls_add"].__code__

    def callback(frame):
        if frame.f_code is calls_add.__code__:
            sys.settrace(tracer)
            return stopping
        return None

    try:
        with pyframe.callback(callback):
            assert calls_add(1) == 4
    finally:
        sys.settrace(None)
    assert trace_events[:2] == [("calls_add", "call"), ("calls_add", "line")]
    assert all(name == "calls_add" for name, _ in trace_events)
    sanity()


@pytest.mark.skipif(not PY312, reason="sys.monitoring is CPython 3.12's (PEP 669)")
def test_monitoring_disable_and_exceptions_inside_monitoring_callbacks():
    """A monitoring callback that returns DISABLE, and one that raises: the
    frames pyframe replaced behave as ordinary frames there too."""
    tool = _free_tool_id()
    events = sys.monitoring.events
    starts = []

    def on_start(code, offset):
        starts.append(code.co_name)
        return sys.monitoring.DISABLE

    def on_call(code, offset, callable_, arg0):
        if callable_ is add:
            raise Boom("from monitoring")

    with pyframe.callback(lambda frame: frame.f_code.replace()):
        sys.monitoring.use_tool_id(tool, "pyframe-faults")
        try:
            sys.monitoring.register_callback(tool, events.PY_START, on_start)
            sys.monitoring.set_events(tool, events.PY_START)
            assert calls_add(1) == 4
            assert calls_add(2) == 6
            sys.monitoring.set_events(tool, 0)
            sys.monitoring.register_callback(tool, events.CALL, on_call)
            sys.monitoring.set_events(tool, events.CALL)
            with pytest.raises(Boom, match="from monitoring"):
                calls_add(1)
        finally:
            sys.monitoring.set_events(tool, 0)
            sys.monitoring.register_callback(tool, events.PY_START, None)
            sys.monitoring.register_callback(tool, events.CALL, None)
            sys.monitoring.free_tool_id(tool)
            sys.monitoring.restart_events()
    # Each replacement is a new code object: DISABLE holds for that one only.
    assert starts.count("calls_add") == 2 and starts.count("add") == 2
    sanity()


# ---- the recursion limit is reached in the program's frames -----------------------
# The callback and guards run before the frame they decide about has started,
# at its depth: their own calls (Python frames, and on 3.11 C calls such as
# f_locals.values(), which count there too) go deeper than the program.  They
# run unseen: RecursionError comes where it comes without pyframe, in the
# program's frame, and the traceback is the program's alone.


def descend_forever():
    return descend_forever()


def runaway_recursion():
    """(message, [(function, line), ...] of the traceback) of the
    RecursionError that a runaway recursion started here ends with."""
    try:
        descend_forever()
    except RecursionError as error:
        entries = traceback.extract_tb(error.__traceback__)
        return str(error), [(entry.name, entry.lineno) for entry in entries]
    raise AssertionError("descend_forever() returned")


def read_every_local(frame):
    for _ in frame.f_locals.values():  # a C call: a level of recursion on 3.11
        pass


def call_nested_helpers(frame, depth=10):
    # Python frames of the callback's own, deeper than the frame's.
    return None if depth == 0 else call_nested_helpers(frame, depth - 1)


def every_local_read(f_locals):
    read_every_local(types.SimpleNamespace(f_locals=f_locals))
    return True


def cache_behind_a_reading_guard(frame):
    if frame.f_code is descend_forever.__code__:
        return pyframe.Compiled(frame.f_code, every_local_read)
    return None


@pytest.mark.parametrize(
    "callback", [read_every_local, call_nested_helpers, cache_behind_a_reading_guard]
)
def test_recursion_limit_is_reached_in_the_programs_frame(callback, floorhook):
    plain = runaway_recursion()
    # The same under a PEP 523 function that does nothing but pass frames on.
    floorhook.install()
    try:
        passed_through = runaway_recursion()
    finally:
        floorhook.uninstall()
    with pyframe.callback(callback):
        for _ in range(2):  # the second with the guard's entry cached
            assert runaway_recursion() == passed_through
    if not HOOK_LOWERS_RECURSION_LIMIT:
        assert passed_through == plain
    message, entries = plain
    assert message == "maximum recursion depth exceeded"
    assert {name for name, _ in entries[1:]} == {"descend_forever"}
    sanity()


# ---- runaway recursion with every frame replaced ---------------------------------


def ping(n):
    return pong(n + 1)


def pong(n):
    return ping(n + 1)


@pytest.mark.parametrize("mode", ["bare", "cached", "guarded"])
def test_recursion_error_with_every_frame_replaced(mode):
    copies = {}

    def callback(frame):
        # Every frame: the test's own, pytest's context managers, ping/pong.
        copy = copies.get(frame.f_code)
        if copy is None:
            copy = copies[frame.f_code] = frame.f_code.replace()
        if mode == "bare":
            return copy
        return pyframe.Compiled(copy, (lambda f_locals: True) if mode == "guarded" else None)

    limit = sys.getrecursionlimit()
    unhooked = deepest_descent()
    with pyframe.callback(callback):
        hooked = deepest_descent()
        for _ in range(3):
            with pytest.raises(RecursionError):
                ping(0)
            # The depth accounting came back whole: all the room is still there.
            assert deepest_descent() == hooked
    assert sys.getrecursionlimit() == limit
    assert ping.__code__ in copies and pong.__code__ in copies
    assert deepest_descent() == unhooked
    sanity()


def test_recursion_error_in_big_replacement_frames():
    """Replacement frames too big for a data-stack chunk move to chunks of
    their own on every level, up to the RecursionError and back."""
    names = ", ".join(f"v{i}" for i in range(3000))
    namespace = {}
    exec(f"def ping(n):\n    {names} = [n] * 3000\n    return pong(n + 1)\n", namespace)
    big_ping = namespace["ping"].__code__

    def callback(frame):
        if frame.f_code is ping.__code__:
            return pyframe.Compiled(big_ping)
        if frame.f_code is pong.__code__:
            return pyframe.Compiled(pong.__code__.replace())
        return None

    with pyframe.callback(callback):
        for _ in range(3):
            with pytest.raises(RecursionError):
                ping(0)
        assert descend(200) == 200
    sanity()


SHUTDOWN_PROGRAM = """
import builtins, sys
import pyframe

def make_callback(mode, Compiled=pyframe.Compiled, SKIP=pyframe.SKIP):
    def callback(frame):
        if mode == "compiled":
            return Compiled(frame.f_code.replace())
        if mode == "code":
            return frame.f_code.replace()
        if mode == "skip":
            return SKIP
        return None
    return callback

class C:
    def __del__(self):
        print("__del__ ran")

c = C()
# Keeps this module, and so c, alive into the late phase of finalization,
# after module globals (pyframe._cframe's too) were set to None.
builtins.here = sys.modules[__name__]
here = sys.modules[__name__]
pyframe.set_callback(make_callback(sys.argv[1]))
"""


@pytest.mark.parametrize("mode", ["none", "skip", "code", "compiled"])
def test_callback_results_accepted_during_interpreter_shutdown(mode, tmp_path):
    script = tmp_path / "shutdown.py"
    script.write_text(SHUTDOWN_PROGRAM)
    done = subprocess.run(
        [sys.executable, str(script), mode], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "__del__ ran\n", done.stderr
    # What a failure at shutdown prints (PyErr_WriteUnraisable, a fatal
    # error), not the whole stderr: an interpreter may print more of its own.
    assert not re.search(r"Exception ignored|Traceback|Fatal Python error|Error:", done.stderr), (
        done.stderr
    )
