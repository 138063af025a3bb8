"""Reference counts and memory stay flat over many intercepted calls."""

import gc
import os
import subprocess
import sys
import textwrap
import tracemalloc

import pytest
from conftest import assert_flat

import pyframe

CALLS = 10_000


def target(a, b, *args, **kwargs):
    c = a

    def inner():
        return c

    return inner


def run_many(callback, make_call):
    with pyframe.callback(callback):
        for _ in range(CALLS):
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

    make_call()  # warm caches (specializer, code extras) before counting
    gc.collect()
    before = [sys.getrefcount(x) for x in (target.__code__, a, b, extra, kw, callback)]
    run_many(callback, make_call)
    gc.collect()
    after = [sys.getrefcount(x) for x in (target.__code__, a, b, extra, kw, callback)]
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
    watched = (function.__code__, TARGET_COPY, GENERATOR_COPY, a, b, SET_VALUE, None, 1)
    before = [sys.getrefcount(x) for x in watched]
    run_many(callback, make_call)
    gc.collect()
    after = [sys.getrefcount(x) for x in watched]
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
