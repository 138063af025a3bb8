"""Replacement code: what runs, how the frame is built, and the guarded cache."""

import asyncio
import gc
import inspect
import sys
import traceback
import weakref

import bytecode
import pytest
from conftest import assert_flat, with_const

import pyframe


def replace_for(target, replacement, cached=False, guard=None):
    """A callback that replaces frames of `target`'s code with `replacement`."""

    def callback(frame):
        if frame.f_code is target:
            return pyframe.Compiled(replacement, guard) if cached else replacement
        return None

    return callback


def add100(a, b=2):
    return a + b + 100


# ---- semantics -----------------------------------------------------------------


def test_bare_code_runs_this_time_only():
    replacement = with_const(add100.__code__, 100, 1000)
    asked = []

    def callback(frame):
        asked.append(frame.f_code.co_name)
        return replacement if len(asked) == 1 else None

    with pyframe.callback(callback):
        assert add100(1) == 1003
        assert add100(1) == 103
    assert asked == ["add100", "add100"]
    assert add100(1) == 103


def test_bytecode_transform_that_counts_calls():
    ticks = []
    globals()["_pyframe_tick"] = lambda: ticks.append(1)
    try:
        program = bytecode.Bytecode.from_code(add100.__code__)
        resume = next(i for i, ins in enumerate(program) if getattr(ins, "name", "") == "RESUME")
        program[resume + 1 : resume + 1] = [
            bytecode.Instr("LOAD_GLOBAL", (True, "_pyframe_tick")),
            bytecode.Instr("CALL", 0),
            bytecode.Instr("POP_TOP"),
        ]
        counting = program.to_code()
        with pyframe.callback(replace_for(add100.__code__, counting, cached=True)):
            assert [add100(i) for i in range(5)] == [102, 103, 104, 105, 106]
        assert len(ticks) == 5
    finally:
        del globals()["_pyframe_tick"]


def make_pair():
    a, b = 1, 2

    def pair():
        return a * 10 + b

    return pair


def test_free_variables_matched_by_name_in_another_order():
    pair = make_pair()
    program = bytecode.Bytecode.from_code(pair.__code__)
    program.freevars = list(reversed(program.freevars))  # ('b', 'a')
    reordered = program.to_code()
    assert reordered.co_freevars == ("b", "a")
    with pyframe.callback(replace_for(pair.__code__, reordered)):
        assert pair() == 12


def test_replacement_with_fewer_free_variables():
    pair = make_pair()

    def only_a_maker():
        a = None

        def pair():
            return a * 100

        return pair

    fewer = only_a_maker().__code__
    assert fewer.co_freevars == ("a",)
    with pyframe.callback(replace_for(pair.__code__, fewer)):
        assert pair() == 100


def test_replacement_needing_a_free_variable_the_closure_lacks():
    pair = make_pair()

    def maker():
        zzz = None

        def pair():
            return zzz

        return pair

    with pyframe.callback(replace_for(pair.__code__, maker().__code__)):
        with pytest.raises(TypeError, match="free variable 'zzz'"):
            pair()
        assert pair.__code__ is not None and pyframe.hook_installed()


def test_replacement_with_extra_locals_and_cells():
    def original(x):
        return x

    def richer(x):
        y = x * 2
        z = [y + i for i in range(3)]

        def uses_cell():
            return y

        return z, uses_cell()

    with pyframe.callback(replace_for(original.__code__, richer.__code__)):
        assert original(5) == ([10, 11, 12], 10)


def rec_down(n):
    return 0 if n == 0 else rec_down(n - 1) + 1


def test_replacement_with_hundreds_of_locals_under_deep_recursion():
    # Each level's replacement frame (~20 KiB) is bigger than a data-stack
    # chunk, so every level moves its frame to a fresh chunk.
    names = ", ".join(f"v{i}" for i in range(2500))
    namespace = {}
    exec(
        f"def rec_down(n):\n    {names} = [n] * 2500\n"
        f"    return 0 if n == 0 else rec_down(n - 1) + 1 + (v2499 - n)\n",
        namespace,
    )
    wide = namespace["rec_down"].__code__
    levels = []

    def callback(frame):
        if frame.f_code is rec_down.__code__:
            levels.append(frame.f_locals["n"])
            return pyframe.Compiled(wide, lambda f_locals: f_locals["n"] % 2 == 0)
        return None

    with pyframe.callback(callback):
        for depth in (1, 5, 50, 300):
            assert rec_down(depth) == depth
    # Odd levels fail every guard and ask again, each adding an entry, so the
    # cache fills to its limit; even levels mostly hit without asking.
    assert 1 in levels and 299 in levels and 298 not in levels
    entries = pyframe.cache_entries(rec_down.__code__)
    assert len(entries) == pyframe.get_cache_limit()
    assert all(code is wide for code, _, _ in entries)


def test_generator_coroutine_and_async_generator_replacement():
    def gen(n):
        yield from range(n)

    async def coro(x):
        return x + 1

    async def agen(n):
        for i in range(n):
            yield i

    async def drain(agen_obj):
        return [item async for item in agen_obj]

    replacements = {
        gen.__code__: with_const(gen.__code__, None, None).replace(co_name="gen"),
        coro.__code__: with_const(coro.__code__, 1, 100),
        agen.__code__: agen.__code__.replace(),
    }

    def callback(frame):
        return replacements.get(frame.f_code)

    with pyframe.callback(callback):
        g = gen(3)
        assert g.gi_code is replacements[gen.__code__]
        assert g.__name__ == "gen" and g.__qualname__ == gen.__qualname__
        assert list(g) == [0, 1, 2]
        c = coro(1)
        assert c.cr_code is replacements[coro.__code__]
        assert asyncio.run(c) == 101
        a = agen(3)
        assert a.ag_code is replacements[agen.__code__]
        assert asyncio.run(drain(a)) == [0, 1, 2]


class Base:
    def hello(self):
        return "base"


class Child(Base):
    def hello(self):
        return "child+" + super().hello()


def test_method_using_zero_argument_super():
    replacement = with_const(Child.hello.__code__, "child+", "CHILD+")
    with pyframe.callback(replace_for(Child.hello.__code__, replacement, cached=True)):
        assert Child().hello() == "CHILD+base"
        assert Child().hello() == "CHILD+base"


def test_lambda_and_each_level_of_recursion_replaced():
    square = lambda x: x * x  # noqa: E731
    levels = []

    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    def callback(frame):
        if frame.f_code is square.__code__:
            return with_const(square.__code__, None, None).replace(co_name="square")
        if frame.f_code is fact.__code__:
            levels.append(frame.f_locals["n"])
            return fact.__code__.replace()
        return None

    with pyframe.callback(callback):
        assert square(7) == 49
        assert fact(6) == 720
    assert levels == [6, 5, 4, 3, 2, 1]


def test_class_body_replacement():
    def make_class():
        class Thing:
            kind = "original"

        return Thing

    body = next(c for c in make_class.__code__.co_consts if inspect.iscode(c))
    replacement = with_const(body, "original", "replaced")
    with pyframe.callback(replace_for(body, replacement)):
        assert make_class().kind == "replaced"
    assert make_class().kind == "original"


def test_module_code_replacement():
    original = compile("result = 'original'\n", "<module-a>", "exec")
    replacement = compile("result = 'replaced'\n", "<module-b>", "exec")
    namespace = {}
    with pyframe.callback(replace_for(original, replacement)):
        exec(original, namespace)
    assert namespace["result"] == "replaced"
    separate = {}
    with pyframe.callback(replace_for(original, replacement)):
        exec(original, {}, separate)
    assert separate == {"result": "replaced"}


# ---- the replacement frame behaves like any frame --------------------------------


def failing(x):
    return x


def test_tracebacks_and_frame_chains_show_the_replacement():
    source = "def failing(x):\n    here = sys._getframe()\n    raise ValueError(here)\n"
    namespace = {"sys": sys}
    exec(compile(source, "replacement_file.py", "exec"), namespace)
    replacement = namespace["failing"].__code__
    caller = sys._getframe()
    with pyframe.callback(replace_for(failing.__code__, replacement)):
        with pytest.raises(ValueError) as info:
            failing(1)
    frame = info.value.args[0]
    assert frame.f_code is replacement
    assert frame.f_back is caller
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert (last.filename, last.name, last.lineno) == ("replacement_file.py", "failing", 3)


def test_inspect_stack_locals_finally_and_settrace_inside_replacement():
    def original(x):
        return x

    def inside(x):
        stack = inspect.stack()
        try:
            local_view = dict(locals())
            raise KeyError(x)
        except KeyError:
            pass
        finally:
            local_view["finally"] = True
        return stack[0].function, stack[1].function, local_view

    events = []

    def tracer(frame, event, arg):
        if frame.f_code is inside.__code__:
            events.append(event)
        return tracer

    with pyframe.callback(replace_for(original.__code__, inside.__code__)):
        sys.settrace(tracer)
        try:
            me, caller, view = original(3)
        finally:
            sys.settrace(None)
    assert (me, caller) == (
        "inside",
        "test_inspect_stack_locals_finally_and_settrace_inside_replacement",
    )
    assert view["x"] == 3 and view["finally"] is True
    assert events[0] == "call" and "line" in events and events[-1] == "return"


def test_runaway_recursion_in_replacement_code_is_a_recursion_error():
    def runaway(n):
        return runaway(n + 1)

    with pyframe.callback(replace_for(runaway.__code__, runaway.__code__.replace(), cached=True)):
        with pytest.raises(RecursionError):
            runaway(0)
        with pytest.raises(RecursionError):
            runaway(0)


# ---- bad replacements ------------------------------------------------------------


def takes_ab(a, b):
    return a, b


@pytest.mark.parametrize(
    "source, difference",
    [
        ("def f(a):\n    pass\n", "takes 1 positional arguments where the original takes 2"),
        ("def f(a, c):\n    pass\n", "argument 1 is named 'c'"),
        ("def f(a, b, *args):\n    pass\n", "*args"),
        ("def f(a, b, **kw):\n    pass\n", "**kwargs"),
        ("def f(a, /, b):\n    pass\n", "positional-only"),
        ("def f(a, b, *, c):\n    pass\n", "keyword-only"),
        ("def f(a, b):\n    yield\n", "generator"),
    ],
)
def test_mismatched_arguments_are_a_type_error_naming_both(source, difference):
    namespace = {}
    exec(source, namespace)
    bad = namespace["f"].__code__
    value = object()
    before = sys.getrefcount(value)
    with pyframe.callback(replace_for(takes_ab.__code__, bad)):
        with pytest.raises(TypeError) as info:
            takes_ab(value, 2)
        assert pyframe.hook_installed()
    message = str(info.value)
    assert difference in message
    assert "takes_ab" in message and "code object f" in message
    assert sys.getrefcount(value) == before


def test_module_code_cannot_replace_a_function():
    with pyframe.callback(replace_for(takes_ab.__code__, compile("1", "m", "exec"))):
        with pytest.raises(TypeError, match="module, class or exec code"):
            takes_ab(1, 2)


def test_compiled_rejects_bad_input():
    with pytest.raises(TypeError, match="code object"):
        pyframe.Compiled(takes_ab)
    with pytest.raises(TypeError, match="guard"):
        pyframe.Compiled(takes_ab.__code__, guard=3)


# ---- the cache -----------------------------------------------------------------


def scaled(x):
    return x * 1


def test_guards_choose_among_cached_entries_without_the_callback():
    times10 = with_const(scaled.__code__, 1, 10)
    times100 = with_const(scaled.__code__, 1, 100)
    asked = []
    guard_arguments = []

    def small(f_locals):
        guard_arguments.append(dict(f_locals))
        return f_locals["x"] < 10

    def callback(frame):
        asked.append(frame.f_locals["x"])
        if frame.f_locals["x"] < 10:
            return pyframe.Compiled(times10, small)
        return pyframe.Compiled(times100, None)

    with pyframe.callback(callback):
        assert scaled(1) == 10  # asks, caches times10
        assert scaled(2) == 20  # hit, no callback
        assert scaled(50) == 5000  # small() says no: asks, caches times100 (no guard)
        assert scaled(3) == 300  # times100 is first now and always valid
    assert asked == [1, 50]
    assert guard_arguments == [{"x": 2}, {"x": 50}]
    entries = pyframe.cache_entries(scaled.__code__)
    assert [(code, guard) for code, guard, _ in entries] == [(times100, None), (times10, small)]
    assert [hits for _, _, hits in entries] == [1, 1]


def test_most_recently_used_first_and_least_recently_used_dropped():
    versions = [with_const(scaled.__code__, 1, k) for k in (2, 3, 4)]
    previous = pyframe.get_cache_limit()
    pyframe.set_cache_limit(2)
    shared = pyframe.Cache()  # one owner for the three callbacks
    try:
        for version in versions:
            guard_value = version.co_consts[-1]

            def callback(frame, version=version):
                return pyframe.Compiled(version, lambda f: False)

            with pyframe.callback(callback, cache=shared):
                assert scaled(1) == guard_value
        codes = [code for code, _, _ in pyframe.cache_entries(scaled.__code__)]
        assert codes == [versions[2], versions[1]]
    finally:
        pyframe.set_cache_limit(previous)


def test_reset_clears_cached_entries():
    replacement = with_const(scaled.__code__, 1, 7)
    with pyframe.callback(replace_for(scaled.__code__, replacement, cached=True)):
        scaled(1)
        assert len(pyframe.cache_entries(scaled.__code__)) == 1
        pyframe.reset(scaled.__code__)
        assert pyframe.cache_entries(scaled.__code__) == []
        scaled(1)
        pyframe.reset()
        assert pyframe.cache_entries(scaled.__code__) == []


def test_cache_limit_and_entries_validate_input():
    with pytest.raises(TypeError, match="int"):
        pyframe.set_cache_limit("8")
    with pytest.raises(ValueError, match="got -1"):
        pyframe.set_cache_limit(-1)
    with pytest.raises(TypeError, match="code object"):
        pyframe.cache_entries(scaled)


def test_entries_are_freed_with_their_code_object():
    class Guard:
        def __call__(self, f_locals):
            return True

    namespace = {}
    exec("def temporary(x):\n    return x\n", namespace)
    temporary = namespace.pop("temporary")
    guard = Guard()
    guard_alive = weakref.ref(guard)
    replacement = temporary.__code__.replace()
    replacement_alive = weakref.ref(replacement)
    with pyframe.callback(replace_for(temporary.__code__, replacement, True, guard)):
        assert temporary(4) == 4
    del guard, replacement, temporary
    gc.collect()
    assert guard_alive() is None and replacement_alive() is None


def test_guard_that_raises_propagates_and_the_cache_stays_usable():
    replacement = with_const(scaled.__code__, 1, 5)
    fail = [True]

    def guard(f_locals):
        if fail[0]:
            raise LookupError("guard failed")
        return True

    value = 3
    with pyframe.callback(replace_for(scaled.__code__, replacement, True, guard)):
        assert scaled(value) == 15  # first call asks the callback; no guard yet
        with pytest.raises(LookupError, match="guard failed"):
            scaled(value)
        fail[0] = False
        assert scaled(value) == 15
        assert pyframe.hook_installed()


# ---- leaks -----------------------------------------------------------------------

CALLS = 100_000


@pytest.mark.parametrize("cached", [False, True], ids=["bare", "cached"])
def test_refcounts_and_memory_flat_over_many_replaced_calls(cached):
    def original(a, b, *rest):
        c = a
        return c

    replacement = original.__code__.replace()
    arg_a, arg_b = object(), object()
    callback = replace_for(original.__code__, replacement, cached=cached)

    def run(n):
        with pyframe.callback(callback):
            for _ in range(n):
                original(arg_a, arg_b, 1)

    run(100)
    assert_flat(run, (original.__code__, replacement, arg_a, arg_b), CALLS // 2)
