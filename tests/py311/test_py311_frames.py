"""CPython 3.11: what differs from 3.12 for a PEP 523 function.

- The caller that pushed a frame (_PyEval_Vector) clears and pops it once the
  PEP 523 function returns (gh-96421 moved that into the evaluator in 3.12;
  cframe/compat.h, PYFRAME_CALLER_POPS_FRAME).  A replacement that does not
  fit where the frame is runs in a shadow frame pyframe pushes on a new
  data-stack chunk and pops itself.  These tests drive that path with
  replacements whose value stack alone is larger than a chunk (16 KiB).
- Comprehensions are frames of their own (PEP 709 inlined them in 3.12): the
  callback is asked about them, with their `.0` iterator argument.

Entry locals that 3.11 shows as 3.12 does (f_lasti -1, exec'd function code,
preset class namespaces) are checked by tests/py312, which runs here too.
"""

import asyncio
import gc
import sys
import traceback
import weakref

import pytest
from conftest import CALLER_POPS_FRAME, assert_flat, locals_difference, record_entries

import pyframe

pytestmark = pytest.mark.skipif(not CALLER_POPS_FRAME, reason="CPython 3.11 behaviour")

# Words: more than a 16 KiB data-stack chunk holds, so no replacement given
# this much more value stack fits where the frame is.
BIGGER_THAN_A_CHUNK = 3000


def roomier(code):
    """`code` needing more room than a data-stack chunk has (a value stack it
    never fills): it cannot run where the original frame is."""
    return code.replace(co_stacksize=code.co_stacksize + BIGGER_THAN_A_CHUNK)


def replace_with(original, replacement, cached=False):
    def callback(frame):
        if frame.f_code is original:
            return pyframe.Compiled(replacement) if cached else replacement
        return None

    return callback


def adds(a, b=10, *rest, scale=1, **named):
    total = (a + b + sum(rest) + sum(named.values())) * scale
    return total


def test_a_replacement_bigger_than_a_chunk_gets_every_kind_of_argument():
    with pyframe.callback(replace_with(adds.__code__, roomier(adds.__code__))):
        assert adds(1) == 11
        assert adds(1, 2, 3, 4, scale=2, x=5) == 30


def test_the_shadow_frame_outlives_itself_in_its_frame_object():
    # A traceback and sys._getframe() keep the replacement's frame object
    # after pyframe popped the shadow frame: the object takes the frame over,
    # linked to its caller's frame object.
    def failing(x):
        here = sys._getframe()
        local = [x]
        raise ValueError(here, local)

    caller = sys._getframe()
    replacement = roomier(failing.__code__)
    with pyframe.callback(replace_with(failing.__code__, replacement)):
        with pytest.raises(ValueError) as info:
            failing(7)
    frame, local = info.value.args
    assert frame.f_code is replacement
    assert frame.f_back is caller
    assert frame.f_locals["x"] == 7 and frame.f_locals["local"] is local
    assert frame.f_lineno == failing.__code__.co_firstlineno + 3
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert (last.name, last.lineno) == ("failing", frame.f_lineno)
    frame.clear()
    assert frame.f_locals == {}
    del info, frame
    gc.collect()
    assert sys.getrefcount(local) == 2  # `local`, and getrefcount's argument


def test_generators_coroutines_and_class_bodies_in_a_shadow_frame():
    def gen(n):
        yield from range(n)

    async def coro(x):
        await asyncio.sleep(0)
        return x + 1

    def make(value):
        class Body:
            attribute = value

            def method(self):
                return __class__

        return Body

    (body,) = [c for c in make.__code__.co_consts if getattr(c, "co_name", None) == "Body"]
    replacements = {
        gen.__code__: roomier(gen.__code__),
        coro.__code__: roomier(coro.__code__),
        body: roomier(body),
    }

    def callback(frame):
        return replacements.get(frame.f_code)

    with pyframe.callback(callback):
        made = gen(3)
        assert made.__name__ == "gen" and made.gi_code is replacements[gen.__code__]
        assert list(made) == [0, 1, 2]
        assert asyncio.run(coro(1)) == 2
        cls = make("value")
    assert cls.attribute == "value" and cls().method() is cls


def test_module_code_in_a_shadow_frame():
    source = compile("result = [n * n for n in range(4)]\nname = __name__\n", "<mod>", "exec")
    namespace = {"__name__": "shadowed"}
    with pyframe.callback(replace_with(source, roomier(source))):
        exec(source, namespace)
    assert namespace["result"] == [0, 1, 4, 9] and namespace["name"] == "shadowed"


def deep(n):
    return 0 if n == 0 else deep(n - 1) + 1


def test_every_level_of_a_recursion_in_a_shadow_frame():
    # Each level's shadow frame starts a chunk of its own, above the chunk
    # of the level below; each pop must give the level below its data stack
    # back exactly as it was.
    with pyframe.callback(replace_with(deep.__code__, roomier(deep.__code__), cached=True)):
        for depth in (1, 10, 200):
            assert deep(depth) == depth
    assert deep(50) == 50


def test_a_callback_that_raises_leaves_the_frame_to_its_caller():
    # On 3.11 the caller pops the frame: pyframe must not pop it too.  Any
    # double pop would corrupt the data stack of the frames around it.
    def raising(frame):
        if frame.f_code is deep.__code__ and frame.f_locals["n"] == 3:
            raise KeyError("from the callback")
        return None

    for _ in range(50):
        with pyframe.callback(raising):
            with pytest.raises(KeyError):
                deep(10)
        assert deep(20) == 20


@pytest.mark.parametrize("cached", [False, True])
def test_refcounts_and_memory_flat_over_many_shadow_frames(cached):
    arg = object()
    replacement = roomier(adds.__code__)

    def run(n):
        with pyframe.callback(replace_with(adds.__code__, replacement, cached=cached)):
            for _ in range(n):
                adds(1, 2, scale=1, extra=3)

    run(100)
    assert_flat(run, (adds.__code__, replacement, arg), 2000)


class Local:
    pass


def test_frame_objects_of_shadow_frames_are_freed_with_what_they_hold():
    def keeps_frame(value):
        held = Local()
        return sys._getframe(), weakref.ref(held)

    with pyframe.callback(replace_with(keeps_frame.__code__, roomier(keeps_frame.__code__))):
        frame, held = keeps_frame(Local())
    assert frame.f_back is sys._getframe()
    assert held() is frame.f_locals["held"]
    value = weakref.ref(frame.f_locals["value"])
    del frame
    gc.collect()
    assert held() is None and value() is None


def comprehensions(items):
    squares = [item * item for item in items]
    doubled = {item: item * 2 for item in items}
    return squares, doubled, sum(item for item in items)


def test_comprehensions_are_frames_the_callback_sees():
    items = [1, 2, 3]
    seen = []

    def callback(frame):
        seen.append((frame.f_code.co_name, frame.localsplus))

    with pyframe.callback(callback):
        comprehensions(items)
    names = [name for name, _ in seen]
    assert names == ["comprehensions", "<listcomp>", "<dictcomp>", "<genexpr>"]
    for name, slots in seen[1:]:
        # The iterator is the argument .0; nothing is hidden.
        assert slots[0][:2] == (".0", "local"), name
        assert all(kind != "hidden" for _, kind, _ in slots), name
    _, pairs = record_entries(comprehensions, items)
    assert {pair.qualname for pair in pairs} >= {
        "comprehensions",
        "comprehensions.<locals>.<listcomp>",
        "comprehensions.<locals>.<genexpr>",
    }
    for pair in pairs:
        assert locals_difference(pair.got, pair.want) is None, pair.qualname
