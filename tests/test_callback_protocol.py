"""The callback protocol: installing, what the callback sees, what it may return."""

import asyncio
import os
import sys
import threading

import pytest
from conftest import at_first_traced_line, monitoring

import pyframe


def add(a, b):
    return a + b


def calls_add(x):
    return add(x, 1)


class Recorder:
    """A callback recording the qualified names it is asked about."""

    def __init__(self, result=None):
        self.names = []
        self.result = result

    def __call__(self, frame):
        self.names.append(frame.f_code.co_qualname)
        return self.result


def test_set_callback_returns_previous_and_get_callback_reports_it():
    first, second = Recorder(), Recorder()
    assert pyframe.set_callback(first) is None
    try:
        assert pyframe.get_callback() is first
        assert pyframe.set_callback(second) is first
        assert pyframe.get_callback() is second
    finally:
        assert pyframe.set_callback(None) is second
    assert pyframe.get_callback() is None


@pytest.mark.parametrize("bad", [42, "cb", object()])
def test_set_callback_rejects_non_callables_naming_the_type(bad):
    with pytest.raises(TypeError, match=type(bad).__name__):
        pyframe.set_callback(bad)
    with pytest.raises(TypeError, match=type(bad).__name__):
        pyframe.callback(bad)
    assert pyframe.get_callback() is None
    assert not pyframe.hook_installed()


def test_callback_context_restores_previous_even_on_exception():
    outer, inner = Recorder(), Recorder()
    with pyframe.callback(outer):
        with pytest.raises(ZeroDivisionError):
            with pyframe.callback(inner):
                assert pyframe.get_callback() is inner
                1 / 0  # noqa: B018
        assert pyframe.get_callback() is outer
    assert pyframe.get_callback() is None


def test_hook_installed_only_while_some_thread_has_a_callback():
    assert not pyframe.hook_installed()
    started, release = threading.Event(), threading.Event()

    def worker():
        with pyframe.callback(Recorder()):
            started.set()
            release.wait(10)

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert started.wait(10)
        assert pyframe.hook_installed()
        with pyframe.callback(Recorder()):
            assert pyframe.hook_installed()
        assert pyframe.hook_installed(), "the other thread still has a callback"
    finally:
        release.set()
        thread.join(10)
    assert not pyframe.hook_installed()


def test_thread_exit_with_callback_installed_removes_the_hook():
    def worker():
        pyframe.set_callback(Recorder())  # never removed: the thread just ends

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(10)
    assert not pyframe.hook_installed()


def test_callbacks_are_per_thread():
    mine, theirs = Recorder(), Recorder()
    done = threading.Event()

    def worker():
        with pyframe.callback(theirs):
            calls_add(1)
        done.set()

    with pyframe.callback(mine):
        thread = threading.Thread(target=worker)
        thread.start()
        assert done.wait(10)
        thread.join(10)
        calls_add(2)
    assert "calls_add" in mine.names and "add" in mine.names
    assert "worker" not in mine.names
    assert theirs.names == ["calls_add", "add"]


def test_frame_attributes():
    seen = {}

    def callback(frame):
        if frame.f_code is add.__code__:
            seen.update(
                code=frame.f_code,
                globals=frame.f_globals,
                builtins=frame.f_builtins,
                back=frame.f_back,
                lasti=frame.f_lasti,
                is_generator=frame.is_generator,
                locals=frame.f_locals,
                repr=repr(frame),
            )

    caller = sys._getframe()
    with pyframe.callback(callback):
        assert add(2, 3) == 5
    assert seen["code"] is add.__code__
    assert seen["globals"] is globals()
    assert seen["builtins"] is __builtins__ or seen["builtins"] is getattr(
        __builtins__, "__dict__", None
    )
    assert seen["back"] is caller
    assert seen["lasti"] == (0 if sys.version_info >= (3, 13) else -1)
    assert seen["is_generator"] is False
    assert seen["locals"] == {"a": 2, "b": 3}
    assert "add" in seen["repr"]


def test_is_generator_for_generators_coroutines_and_async_generators():
    kinds = {}

    def gen():
        yield 1

    async def coro():
        return 1

    async def agen():
        yield 1

    def callback(frame):
        kinds[frame.f_code.co_name] = frame.is_generator

    with pyframe.callback(callback):
        list(gen())
        c = coro()
        c.close()
        a = agen()
        asyncio.run(a.aclose())
    assert kinds["gen"] and kinds["coro"] and kinds["agen"]


def test_frame_is_gone_after_the_callback_returned():
    kept = []
    with pyframe.callback(lambda frame: kept.append(frame)):
        add(1, 2)
    frame = kept[0]
    for attribute in ("f_code", "f_locals", "localsplus", "f_back", "f_globals", "f_lasti"):
        with pytest.raises(RuntimeError, match="gone"):
            getattr(frame, attribute)
    with pytest.raises(RuntimeError, match="gone"):
        frame.set_local("a", 1)
    assert "gone" in repr(frame)


def test_a_kept_frame_stays_gone_while_later_frames_are_live():
    # pyframe hands a Frame no callback kept to the next callback; one that
    # was kept must never come back to life for another frame.
    kept, states = [], []

    def callback(frame):
        states.append([repr(old) for old in kept])
        if frame.f_code is add.__code__:
            kept.append(frame)

    with pyframe.callback(callback):
        for i in range(3):
            calls_add(i)
    assert len({id(frame) for frame in kept}) == 3
    assert all("gone" in text for state in states for text in state)
    assert kept[0].__class__ is pyframe.Frame


def test_frames_cannot_be_made_by_users():
    with pytest.raises(TypeError):
        pyframe.Frame()


def test_skip_stops_asking_for_that_code_until_reset():
    recorder = Recorder(result=pyframe.SKIP)
    with pyframe.callback(recorder):
        for _ in range(3):
            calls_add(1)
        assert recorder.names == ["calls_add", "add"]
        pyframe.reset(add.__code__)
        calls_add(1)
        assert recorder.names == ["calls_add", "add", "add"]
        pyframe.reset()
        calls_add(1)
        assert recorder.names == ["calls_add", "add", "add", "calls_add", "add"]


def test_skip_is_remembered_for_the_callback_that_said_it():
    with pyframe.callback(lambda frame: pyframe.SKIP):
        add(1, 2)
    later = Recorder()
    with pyframe.callback(later):  # a new installation is asked afresh
        add(1, 2)
        add(1, 2)
    assert later.names == ["add", "add"]

    other_thread = Recorder()

    def worker():
        with pyframe.callback(other_thread):
            add(1, 2)

    with pyframe.callback(lambda frame: pyframe.SKIP):
        add(1, 2)
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(10)
    assert other_thread.names == ["add"]


def test_reset_rejects_non_code():
    with pytest.raises(TypeError, match="code object"):
        pyframe.reset(add)


def test_skip_recursive_runs_the_whole_call_tree_without_callbacks():
    names = []

    def callback(frame):
        names.append(frame.f_code.co_name)
        if frame.f_code is calls_add.__code__:
            return pyframe.SKIP_RECURSIVE
        return None

    with pyframe.callback(callback):
        calls_add(1)
        add(1, 2)
        calls_add(2)  # remembered: not asked again, nor about what it calls
        assert names == ["calls_add", "add"]
        pyframe.reset(calls_add.__code__)
        calls_add(3)
    assert names == ["calls_add", "add", "calls_add"]


def test_callback_is_not_called_for_its_own_frames():
    names = []

    def callback(frame):
        add(0, 0)  # a Python call made by the callback itself
        names.append(frame.f_code.co_name)

    with pyframe.callback(callback):
        calls_add(1)
    assert names == ["calls_add", "add"]


def test_not_called_inside_settrace_or_monitoring_callbacks():
    names = []

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code is calls_add.__code__:
            add(10, 10)
        return None

    def on_start(code, offset):
        if code is calls_add.__code__:
            add(20, 20)

    with monitoring({"PY_START": on_start}):
        sys.settrace(tracer)
        try:
            with pyframe.callback(lambda frame: names.append(frame.f_locals)):
                calls_add(1)
        finally:
            sys.settrace(None)
    assert names == [{"x": 1}, {"a": 1, "b": 1}]


def test_tracers_and_monitoring_do_not_see_the_callback_or_guards():
    # Like a trace function's own frames: a debugger or profiler running
    # beside pyframe sees the program, not pyframe's callback and guards.
    traced, started = [], []

    def tracer(frame, event, arg):
        traced.append((event, frame.f_code.co_name))
        return tracer

    def on_start(code, offset):
        started.append(code.co_name)

    def guard(f_locals):
        add(0, 0)
        return True

    def callback(frame):
        add(0, 0)
        if frame.f_code is add.__code__:
            return pyframe.Compiled(add.__code__.replace(), guard=guard)
        return None

    try:
        with monitoring({"PY_START": on_start}) as monitored:
            with pyframe.callback(callback):
                sys.settrace(tracer)
                calls_add(1)  # add's replacement is cached...
                calls_add(2)  # ...and its guard runs here
                sys.settrace(None)
    finally:
        sys.settrace(None)
        pyframe.reset()
    assert [name for event, name in traced if event == "call"] == ["calls_add", "add"] * 2
    if monitored:
        assert started.count("add") == 2  # the program's two calls, no more
        assert "callback" not in started and "guard" not in started


def test_generator_frames_are_intercepted_once_not_on_resumption_or_throw():
    names = []

    def gen(n):
        try:
            yield from range(n)
        except KeyError:
            yield "thrown"

    with pyframe.callback(lambda frame: names.append(frame.f_code.co_name)):
        g = gen(3)
        assert next(g) == 0
        assert next(g) == 1
        assert g.throw(KeyError()) == "thrown"
        g.close()
    assert names == ["gen"]


class Boom(Exception):
    pass


def test_callback_exception_propagates_as_if_the_function_raised():
    def callback(frame):
        if frame.f_code is add.__code__:
            raise Boom("from the callback")

    with pyframe.callback(callback):
        with pytest.raises(Boom, match="from the callback"):
            calls_add(1)
        # still installed, and the next call works the same way
        assert pyframe.get_callback() is callback
        with pytest.raises(Boom):
            add(1, 2)
        assert calls_add.__code__ is not None


def test_keyboard_interrupt_from_callback_behaves_like_any_exception():
    def callback(frame):
        if frame.f_code is add.__code__:
            raise KeyboardInterrupt

    with pyframe.callback(callback):
        with pytest.raises(KeyboardInterrupt):
            calls_add(1)
        try:
            calls_add(1)
        except KeyboardInterrupt:
            pass
        assert pyframe.get_callback() is callback


@pytest.mark.parametrize("bad", [42, "text", calls_add, pyframe.UNBOUND])
def test_bad_return_value_is_a_type_error_naming_callback_and_type(bad):
    def callback(frame):
        return bad if frame.f_code is add.__code__ else None

    with pyframe.callback(callback):
        with pytest.raises(TypeError) as info:
            calls_add(1)
    message = str(info.value)
    assert "callback" in message and type(bad).__name__ in message
    assert repr(callback)[:30] in message


def test_exception_inside_with_block_of_generator_function_call():
    """An error for a generator function's frame: no generator is made."""

    def gen(x):
        yield x

    def callback(frame):
        if frame.f_code is gen.__code__:
            raise Boom

    value = object()
    before = sys.getrefcount(value)
    with pyframe.callback(callback):
        for _ in range(100):
            with pytest.raises(Boom):
                gen(value)
    assert sys.getrefcount(value) == before


# ---- closure cells and the starting line ------------------------------------------


def make_counter():
    count = 0
    step = 1

    def counter():
        nonlocal count
        count += step
        return count

    return counter


def test_closure_is_the_functions_own_cells_in_freevars_order():
    counter = make_counter()
    seen = {}

    def callback(frame):
        if frame.f_code is counter.__code__:
            seen["closure"] = frame.closure
        elif frame.f_code is add.__code__:
            seen["none"] = frame.closure

    with pyframe.callback(callback):
        assert counter() == 1
        add(1, 2)
    assert seen["closure"] is counter.__closure__
    assert counter.__code__.co_freevars == ("count", "step")
    assert [cell.cell_contents for cell in seen["closure"]] == [1, 1]
    assert seen["none"] == ()


def test_a_callback_writing_a_cell_is_seen_by_the_frame():
    counter = make_counter()

    def callback(frame):
        if frame.f_code is counter.__code__:
            count_cell, step_cell = frame.closure
            step_cell.cell_contents = 10

    with pyframe.callback(callback):
        assert counter() == 10
    assert counter() == 20


def test_f_lineno_is_the_line_the_frame_starts_at():
    """Against CPython: the frame's f_lineno at its first traced line, for
    code whose prologue has cells, free variables, a generator's setup."""
    counter = make_counter()

    def gen():
        yield 1

    namespace = {}
    module = compile("x = 1\n\n\ny = 2\n", "<lines>", "exec")
    codes = {counter.__code__, make_counter.__code__, gen.__code__, module, add.__code__}
    got, want = {}, {}

    def callback(frame):
        if frame.f_code in codes:
            got.setdefault(frame.f_code, frame.f_lineno)

    def on_start(code, frame):
        if code in codes:
            want.setdefault(code, frame.f_lineno)

    with at_first_traced_line(on_start):
        with pyframe.callback(callback):
            counter()
            make_counter()
            list(gen())
            exec(module, namespace)
            add(1, 2)
    assert set(got) == codes
    assert got == want


def test_skip_of_a_freed_code_does_not_apply_to_new_code_at_its_address():
    # The hook remembers the last code whose state it looked up; a code object
    # allocated where a freed one was must be asked about afresh.
    preloaded = os.environ.get("LD_PRELOAD", "")
    if "libasan" in preloaded or "vgpreload_memcheck" in preloaded:
        pytest.skip("AddressSanitizer and memcheck hold freed memory back: no address comes back")
    source = "def f():\n    return 1\n"
    asked = []

    def callback(frame):
        if frame.f_code.co_name == "f":
            asked.append(frame.f_code)
            return pyframe.SKIP

    cache = pyframe.Cache()
    with pyframe.callback(callback, cache=cache):
        namespace = {}
        exec(source, namespace)
        namespace["f"]()
        namespace["f"]()  # skipped: the callback was asked once
        assert len(asked) == 1
        address = id(asked.pop())
        namespace.clear()  # frees f and its code (and pyframe's state on it)
        for _ in range(10_000):
            namespace = {}
            exec(source, namespace)
            if id(namespace["f"].__code__) == address:
                break
        else:
            pytest.fail("no new code object was allocated at the freed one's address")
        namespace["f"]()
    assert [id(code) for code in asked] == [address]
