"""Reference counts and memory stay flat over many intercepted calls.

Every count here includes None, True, False, small ints and interned strings
(conftest.IMMORTAL_FROM_312): immortal from 3.12 on, they show on 3.11 a
reference pyframe takes or gives back once too often.
"""

import gc
import os
import subprocess
import sys
import textwrap
import tracemalloc

import pytest
from conftest import INTERNED, assert_flat, refcounts

import pyframe

CALLS = 10_000


def target(a, b, *args, **kwargs):
    c = a

    def inner():
        return c

    return inner


def run_many(callback, make_call, calls=CALLS):
    with pyframe.callback(callback):
        for _ in range(calls):
            try:
                make_call()
            except (TypeError, ValueError):
                pass


def observe(frame):
    frame.f_locals
    frame.localsplus
    frame.f_back


def raises(frame):
    if frame.f_code is target.__code__:
        raise ValueError("no")


def bad_result(frame):
    return 1 if frame.f_code is target.__code__ else None


def skip(frame):
    return pyframe.SKIP


@pytest.mark.parametrize("callback", [observe, raises, bad_result, skip])
def test_refcounts_of_code_and_arguments_unchanged(callback):
    a, b, extra, kw = object(), object(), object(), object()

    def make_call():
        target(a, b, extra, key=kw)

    # Warm caches (specializer, code extras, what a first exception makes)
    # before counting.
    run_many(callback, make_call, 10)
    gc.collect()
    before = refcounts((target.__code__, a, b, extra, kw, callback))
    run_many(callback, make_call)
    gc.collect()
    after = refcounts((target.__code__, a, b, extra, kw, callback))
    assert after == before


# ---- the paths that write the frame's slots ----------------------------------
# On 3.14+ a slot holds a stack reference that may not own its object (an
# immortal one, or a borrowed argument: the caller's LOAD_FAST_BORROW, see
# tests/py314): writing, moving and emptying slots must leave every count as
# it was.

SET_VALUE = object()


def set_locals(frame):
    if frame.f_code is target.__code__:
        frame.set_local("b", SET_VALUE)  # an argument slot
        frame.set_local("c", SET_VALUE)  # a cell slot: MAKE_CELL wraps it


TARGET_COPY = target.__code__.replace()


def replace_after_set_local(frame):
    if frame.f_code is target.__code__:
        frame.set_local("c", SET_VALUE)  # moved out before the copy runs
        return TARGET_COPY


def replace_cached(frame):
    if frame.f_code is target.__code__:
        return pyframe.Compiled(TARGET_COPY)


def generator_target(a, b):
    yield a
    yield b


GENERATOR_COPY = generator_target.__code__.replace()


def replace_with_new_function(frame):
    # Generator code runs under a function made for the replacement.
    if frame.f_code is generator_target.__code__:
        return GENERATOR_COPY


@pytest.mark.parametrize(
    "callback, function",
    [
        (set_locals, target),
        (replace_after_set_local, target),
        (replace_cached, target),
        (replace_with_new_function, generator_target),
    ],
)
def test_refcounts_unchanged_where_slots_are_written(callback, function):
    a, b = object(), object()

    def make_call():
        result = function(a, b)
        if function is generator_target:
            assert list(result) == [a, b]

    pyframe.reset()
    with pyframe.callback(callback):
        make_call()  # warm up, and cache the replacement
    gc.collect()
    watched = (function.__code__, TARGET_COPY, GENERATOR_COPY, a, b, SET_VALUE)
    before = refcounts(watched)
    run_many(callback, make_call)
    gc.collect()
    after = refcounts(watched)
    pyframe.reset()
    assert after == before


# ---- frames whose values are immortal from 3.12 on ------------------------------
# The frame's own values are None, True, False, small ints and interned
# strings here, on each path that reads, writes or drops them: f_locals (the
# thread's spare dict refilled, or a new dict the callback keeps),
# localsplus, set_local, guards (handed f_locals), replacements, and module,
# class and exec code, whose f_locals is their own mapping.


def flags(a, b=None, *rest, switch=True, **named):
    c = False
    d = 7

    def inner():
        return a, d

    return inner if c is False else None


def flags_gen(a=None, b=False):
    yield a


def same_first_name(a, z=None):
    # Its first name is flags's: the spare flags left fits it in part only.
    return a


FLAGS_COPY = flags.__code__.replace()
FLAGS_GEN_COPY = flags_gen.__code__.replace()
MODULE_CODE = compile("x = None\ny = True\nclass K:\n    z = 7\n", "<module code>", "exec")


class Refused(Exception):
    """What the failing callbacks and guards below raise."""


def call_flags():
    for args in ((None,), (INTERNED, False, None, True)):
        try:
            flags(*args, switch=None, key=7)()
        except Refused:
            pass
    same_first_name(None)
    assert list(flags_gen()) == [None]
    exec(MODULE_CODE, {})


def read_f_locals(frame):
    frame.f_locals
    frame.f_locals  # a second one in a callback is a new dict, never lent


kept_f_locals = []


def keep_f_locals(frame):
    kept_f_locals[:] = [frame.f_locals]  # kept past the callback: not the spare


def read_localsplus(frame):
    frame.localsplus


def set_immortals(frame):
    if frame.f_code is flags.__code__:
        frame.set_local("b", True)  # an argument
        frame.set_local("c", None)  # a plain local
        frame.set_local("d", INTERNED)  # a cell: MAKE_CELL wraps it


def replace_flags(frame):
    frame.f_locals
    if frame.f_code is flags.__code__:
        frame.set_local("c", None)  # moved out before the copy runs
        return FLAGS_COPY
    if frame.f_code is flags_gen.__code__:
        return FLAGS_GEN_COPY  # generator code: runs under a new function
    return None


def cache_behind_guards(frame):
    if frame.f_code is flags.__code__:
        return pyframe.Compiled(FLAGS_COPY, lambda f_locals: f_locals["b"] is None)
    if frame.f_code is flags_gen.__code__:
        return pyframe.Compiled(FLAGS_GEN_COPY, lambda f_locals: f_locals["a"] is None)
    if frame.f_code is same_first_name.__code__:
        return pyframe.Compiled(frame.f_code, lambda f_locals: f_locals["z"] is None)
    return None


def refuse_flags(frame):
    if frame.f_code is flags.__code__:
        refused = frame.f_locals["b"] is False
        set_immortals(frame)
        if refused:
            raise Refused  # the frame is dropped, with the values just set


def refusing_guard(f_locals):
    if f_locals["b"] is False:
        raise Refused
    return f_locals["b"] is None


def cache_behind_failing_guards(frame):
    if frame.f_code is flags.__code__:
        return pyframe.Compiled(FLAGS_COPY, refusing_guard)
    return None


@pytest.mark.parametrize(
    "callback",
    [
        read_f_locals,
        keep_f_locals,
        read_localsplus,
        set_immortals,
        refuse_flags,
        replace_flags,
        cache_behind_guards,
        cache_behind_failing_guards,
    ],
)
def test_refcounts_of_values_immortal_from_312_unchanged(callback):
    pyframe.reset()
    with pyframe.callback(callback):
        # Warm up; guards that fail add entries until the cache is full.
        for _ in range(2 * pyframe.get_cache_limit()):
            call_flags()
    kept_f_locals.clear()
    gc.collect()
    before = refcounts((flags.__code__, FLAGS_COPY, FLAGS_GEN_COPY, MODULE_CODE))
    with pyframe.callback(callback):
        for _ in range(CALLS // 10):
            call_flags()
    kept_f_locals.clear()
    gc.collect()
    after = refcounts((flags.__code__, FLAGS_COPY, FLAGS_GEN_COPY, MODULE_CODE))
    pyframe.reset()
    assert after == before


@pytest.mark.parametrize("callback", [observe, raises, skip])
def test_traced_memory_stays_flat(callback):
    def make_call():
        target(1, 2, 3, key=4)

    run_many(callback, make_call)  # warm up
    gc.collect()
    tracemalloc.start()
    try:
        run_many(callback, make_call)
        gc.collect()
        first, _ = tracemalloc.get_traced_memory()
        run_many(callback, make_call)
        gc.collect()
        second, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert second - first < 16 * 1024, f"traced memory grew by {second - first} bytes"


def run_python(source, timeout=120):
    env = dict(os.environ)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=os.path.dirname(os.path.abspath(__file__)),  # not the source tree
    )


def test_deep_recursion_under_the_hook_is_a_recursion_error_not_a_crash():
    result = run_python(
        """
        import pyframe

        def down(n):
            return down(n + 1)

        def observe(frame):
            frame.f_locals

        for callback in (lambda f: None, observe, lambda f: pyframe.SKIP):
            pyframe.reset()
            with pyframe.callback(callback):
                try:
                    down(0)
                except RecursionError:
                    print("RecursionError")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["RecursionError"] * 3


def test_abandoned_frames_at_data_stack_chunk_boundaries():
    """Frames too big to share a data-stack chunk start a chunk of their own;
    when the callback fails, pyframe pops them, chunk and all."""
    result = run_python(
        """
        import os
        import sys
        import pyframe

        names = ", ".join(f"v{i}" for i in range(3000))
        namespace = {}
        exec(f"def big(n, fail):\\n    {names} = [0] * 3000\\n"
             f"    return big(n - 1, fail) if n else 0\\n", namespace)
        big = namespace["big"]

        def callback(frame):
            if frame.f_code is not big.__code__:
                return
            locals_ = frame.f_locals
            if locals_["n"] == locals_["fail"]:
                raise LookupError(locals_["n"])

        value = object()
        before = sys.getrefcount(big.__code__)
        with pyframe.callback(callback):
            for depth in range(0, 40, 3):
                for fail in range(depth + 1):
                    try:
                        big(depth, fail)
                    except LookupError as error:
                        assert error.args[0] == fail
        assert sys.getrefcount(big.__code__) == before
        if "libasan" in os.environ.get("LD_PRELOAD", ""):
            # tools/asan.sh: AddressSanitizer keeps freed memory in
            # quarantine, so RSS grows whatever pyframe does; the default
            # runs measure it.
            print("ok")
            sys.exit(0)

        def rss_kib():
            with open("/proc/self/statm") as statm:
                return int(statm.read().split()[1]) * 4

        with pyframe.callback(callback):
            start = rss_kib()
            for _ in range(5000):   # a leaked 24 KiB chunk each time would be 120 MiB
                try:
                    big(0, 0)
                except LookupError:
                    pass
            grown = rss_kib() - start
        assert grown < 8 * 1024, f"RSS grew by {grown} KiB"
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# ---- the paths a JIT uses: caches, remembered decisions, run-only -----------------


class Token:
    """Something an entry can depend on."""


def jit_workload(mode):
    """(callback, cache, call) for one JIT path; `call` runs one warm call
    the way a framework does: installing the callback around it."""
    cache = pyframe.Cache(limit=4)
    replacement = target.__code__.replace()
    token = [Token()]

    def decide(frame):
        if frame.f_code is not target.__code__:
            return None
        if mode == "skip-recursive":
            return pyframe.SKIP_RECURSIVE
        if mode == "run-only-recursive":
            return pyframe.RUN_ONLY_RECURSIVE
        if mode == "original":
            return pyframe.Compiled(frame.f_code, lambda f_locals: True)
        if mode == "depends-on":
            # A new token each time: the old one dies, its entry with it.
            token[0] = Token()
            return pyframe.Compiled(replacement, depends_on=(token[0],))
        return pyframe.Compiled(replacement, lambda f_locals: f_locals["a"] is not None)

    def call(a, b, extra, kw):
        if mode == "run-only":
            with pyframe.run_only(cache):
                target(a, b, extra, key=kw)
                target(None, b, extra, key=kw)  # a miss
        elif mode == "depends-on":
            with pyframe.callback(decide, cache=cache):
                target(a, b, extra, key=kw)
            token[0] = None
        else:
            with pyframe.callback(decide, cache=cache):
                target(a, b, extra, key=kw)

    if mode == "run-only":
        with pyframe.callback(decide, cache=cache):
            target(1, 2)  # caches the entry run-only mode runs
    return decide, cache, call


JIT_MODES = ["cached", "original", "skip-recursive", "run-only-recursive", "run-only", "depends-on"]


@pytest.mark.parametrize("mode", JIT_MODES)
def test_refcounts_and_memory_flat_on_the_jit_paths(mode):
    a, b, extra, kw = object(), object(), object(), object()
    callback, cache, call = jit_workload(mode)

    def run(n):
        for _ in range(n):
            call(a, b, extra, kw)

    run(100)  # warm up
    assert_flat(run, (target.__code__, a, b, extra, kw, callback, cache), CALLS)


def test_installing_many_callbacks_keeps_nothing_of_the_dead_ones():
    def make():
        return lambda frame: pyframe.SKIP

    def install_and_drop(n):
        for _ in range(n):
            with pyframe.callback(make()):
                target(1, 2)

    install_and_drop(100)
    gc.collect()
    tracemalloc.start()
    try:
        install_and_drop(CALLS)
        gc.collect()
        first, _ = tracemalloc.get_traced_memory()
        install_and_drop(CALLS)
        gc.collect()
        second, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert second - first < 16 * 1024, f"traced memory grew by {second - first} bytes"
