"""pyframe.Switch: a JIT's callback turned on and off per thread, around
each call of its compiled code."""

import gc
import threading
import weakref

import pytest
from conftest import assert_flat

import pyframe


def target(x):
    return x + 1


class Recorder:
    """A pyframe callback made for one value: records target's frames (by
    the id of the value, which it holds weakly, as make_callback should)."""

    def __init__(self, value):
        self.value = weakref.ref(value)
        self.seen = []

    def __call__(self, frame):
        if frame.f_code is target.__code__:
            self.seen.append(id(self.value()))
        return None


class JitCallback:
    """Stands for a JIT's own callback object (what set() is given)."""

    def __call__(self, *args):
        raise AssertionError("the switch installs make_callback(value), not value")


def test_set_installs_the_callback_made_for_the_value_and_none_puts_back_the_previous():
    cache = pyframe.Cache()
    switch = pyframe.Switch(cache, Recorder)
    value = JitCallback()

    def outer(frame):
        return None

    with pyframe.callback(outer):
        assert switch.get() is None
        assert switch.set(value) is None
        made = pyframe.get_callback()
        assert type(made) is Recorder and switch.get() is value
        assert switch.callback_for(value) is made
        target(1)
        assert switch.set(None) is value
        assert pyframe.get_callback() is outer and switch.get() is None
        target(1)
    assert made.seen == [id(value)]
    assert pyframe.get_callback() is None


def test_one_callback_per_value_while_it_lives():
    made = []

    def make(value):
        made.append(Recorder(value))
        return made[-1]

    switch = pyframe.Switch(pyframe.Cache(), make)
    first, second = JitCallback(), JitCallback()
    for _ in range(3):
        switch.set(first)
        assert switch.set(first) is first  # the value already set: nothing changes
        assert switch.set(second) is first
        target(1)
        assert switch.set(None) is second
    assert len(made) == 2 and [m.seen for m in made] == [[], [id(second)] * 3]
    assert pyframe.get_callback() is None
    gone = weakref.ref(made[0])
    del first, made[:]
    gc.collect()
    assert gone() is None  # the value died: so did what was made for it


def test_without_make_callback_the_value_is_the_callback():
    switch = pyframe.Switch(pyframe.Cache())
    seen = []

    def callback(frame):
        seen.append(frame.f_code)

    assert switch.set(callback) is None
    assert pyframe.get_callback() is callback
    target(1)
    switch.set(None)
    assert seen == [target.__code__]


def test_false_runs_the_cache_alone():
    cache = pyframe.Cache()
    replacement = (lambda x: x + 100).__code__.replace(co_name="target")

    def compile_target(frame):
        if frame.f_code is target.__code__:
            return pyframe.Compiled(replacement)
        return None

    switch = pyframe.Switch(cache)
    switch.set(compile_target)
    assert target(1) == 101
    assert switch.set(False) is compile_target
    assert pyframe.get_callback() is None and pyframe.hook_installed()
    assert target(2) == 102  # the cached entry, no callback asked
    assert switch.set(None) is False
    assert target(2) == 3 and not pyframe.hook_installed()


def test_bad_arguments():
    with pytest.raises(TypeError, match=r"pyframe.Switch\(\) expects cache to be a pyframe.Cache"):
        pyframe.Switch(None)
    with pytest.raises(TypeError, match="make_callback to be a callable"):
        pyframe.Switch(pyframe.Cache(), 3)
    switch = pyframe.Switch(pyframe.Cache(), lambda value: "not callable")
    with pytest.raises(TypeError, match="expects a callable, False or None; got a int"):
        switch.set(3)
    with pytest.raises(TypeError, match="returned a str object"):
        switch.set(JitCallback())
    with pytest.raises(TypeError, match="expects a callable"):
        switch.callback_for(None)
    assert switch.get() is None and pyframe.get_callback() is None
    with pytest.raises(TypeError, match="expects what detach"):
        switch.attach(None)


def test_detach_keeps_the_installation_for_a_nested_set_and_attach_ends_it():
    switch = pyframe.Switch(pyframe.Cache(), Recorder)
    outer_value, inner_value = JitCallback(), JitCallback()
    switch.set(outer_value)
    outer = pyframe.get_callback()
    detached = switch.detach()
    assert switch.get() is None and pyframe.get_callback() is outer
    assert switch.set(inner_value) is None  # a compiled function called by the compiler
    inner = pyframe.get_callback()
    assert switch.set(None) is inner_value and pyframe.get_callback() is outer
    switch.set(inner_value)  # ... left set: attach ends it
    switch.attach(detached)
    assert switch.get() is outer_value and pyframe.get_callback() is outer
    assert inner is not outer
    with pytest.raises(ValueError, match="attached already"):
        switch.attach(detached)
    with pytest.raises(ValueError, match="another switch"):
        pyframe.Switch(pyframe.Cache()).attach(detached)
    assert switch.set(None) is outer_value
    assert pyframe.get_callback() is None and not pyframe.hook_installed()


def test_each_thread_has_its_own_and_a_thread_that_ends_lets_go():
    switch = pyframe.Switch(pyframe.Cache(), Recorder)
    value = JitCallback()
    switch.set(value)
    made = pyframe.get_callback()
    results = {}

    def other():
        results["before"] = switch.get()
        other_value = JitCallback()
        switch.set(other_value)
        results["installed"] = pyframe.get_callback()
        target(1)
        results["value"] = weakref.ref(other_value)
        detached = switch.detach()
        results["detached"] = detached
        # leaves its switch on and exits: the thread's state goes with it

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert results["before"] is None
    assert results["installed"] is not made and len(results["installed"].seen) == 1
    assert switch.get() is value and pyframe.get_callback() is made
    with pytest.raises(ValueError, match="another thread"):
        switch.attach(results.pop("detached"))
    del results["installed"]
    gc.collect()
    assert results["value"]() is None
    switch.set(None)


def test_references_and_memory_flat_over_many_switches():
    cache = pyframe.Cache()
    switch = pyframe.Switch(cache, Recorder)
    value, other = JitCallback(), JitCallback()

    def outer(frame):
        return None

    def run(calls):
        with pyframe.callback(outer):
            for _ in range(calls):
                prior = switch.set(value)
                switch.set(other)
                detached = switch.detach()
                switch.set(value)
                switch.attach(detached)
                switch.get()
                switch.set(prior)
                switch.set(False)
                switch.set(None)

    run(100)
    made = (switch.callback_for(value), switch.callback_for(other))
    assert_flat(run, [switch, cache, value, other, outer, *made], 20_000)
