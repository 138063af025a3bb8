"""CPython 3.12+: the mode gives every Python function pyframe's vectorcall and
switching it off (also from skipped code, also after the callback went)
takes it back; a vectorcall someone else set is left alone.
"""

import ctypes
import gc
import types

import pytest
from conftest import HAS_SPECIALIZATION_MODE, NO_SPECIALIZATION_MODE
from specialization_scenarios import Point, plain
from specialization_support import (
    aside,
    hooked,
    hooked_functions,
    mode_off_at_start,  # noqa: F401
    specialization,
)

import pyframe

pytestmark = pytest.mark.skipif(not HAS_SPECIALIZATION_MODE, reason=NO_SPECIALIZATION_MODE)

# mode_off_at_start, imported above, is autouse: it applies to every test here.


# ---- switching the mode off --------------------------------------------------------


def test_the_mode_hooks_every_function_and_switching_it_off_unhooks_them():
    def made_before():
        return None

    with specialization():
        made_in = lambda: None  # noqa: E731
        assert hooked(made_before) and hooked(made_in) and hooked(plain)
        assert hooked(Point.__init__) and hooked(Point.prop.fget)
        unhooked = [f for f in gc.get_objects() if type(f) is types.FunctionType and not hooked(f)]
        assert not unhooked, f"{len(unhooked)} functions without the hook, e.g. {unhooked[:5]}"
    assert not hooked_functions()
    assert pyframe.specialization_enabled() is False


def off_leaf(a):
    return a


def off_driver(n):
    for i in range(n):
        if i == n // 2:
            pyframe.set_specialization(False)
        off_leaf(i)
    return aside()


def test_switching_the_mode_off_inside_skipped_code():
    seen = []

    def callback(frame):
        if frame.f_code is off_driver.__code__:
            return pyframe.SKIP
        seen.append(frame.f_code.co_name)
        return None

    with pyframe.callback(callback):
        for _ in range(20):
            pyframe.set_specialization(True)
            off_driver(100)
        assert seen == ["off_leaf"] * 2000
        assert not pyframe.specialization_enabled()
        assert not hooked_functions()
        seen.clear()
        # Back to normal: the hook in, every frame seen.
        assert off_driver(10) is False
        assert seen == ["off_leaf"] * 10


def test_the_callback_removed_in_the_mode_then_the_mode_off():
    seen = []

    def callback(frame):
        if frame.f_code is removing_driver.__code__:
            return pyframe.SKIP
        seen.append(frame.f_code.co_name)

    def removing_driver(n):
        for i in range(n):
            if i == n // 2:
                pyframe.set_callback(None)
            off_leaf(i)

    with specialization():
        pyframe.set_callback(callback)
        removing_driver(10)
        assert pyframe.get_callback() is None
        assert not pyframe.hook_installed()
        assert seen == ["off_leaf"] * 5
        # No callback: the functions keep pyframe's vectorcall and run as they are.
        assert off_leaf(3) == 3 and hooked(off_leaf)
        made_without_a_callback = lambda: "made"  # noqa: E731
        assert hooked(made_without_a_callback)
        # A callback again, the mode still on: everything is seen.
        seen.clear()
        with pyframe.callback(callback):
            removing_driver(2)  # removes the callback half-way again
        seen.clear()
        with pyframe.callback(lambda frame: seen.append(frame.f_code.co_name)):
            made_without_a_callback()
            off_leaf(1)
        assert seen == ["<lambda>", "off_leaf"]
    assert not hooked_functions()
    assert not pyframe.hook_installed()
    seen.clear()
    with pyframe.callback(lambda frame: seen.append(frame.f_code.co_name)):
        made_without_a_callback()
    assert seen == ["<lambda>"]


# ---- a vectorcall someone else set is left alone -----------------------------------

VECTORCALL = ctypes.CFUNCTYPE(
    ctypes.py_object, ctypes.py_object, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p
)
CUSTOM_CALLS = []


@VECTORCALL
def custom_vectorcall(func, args, nargsf, kwnames):
    CUSTOM_CALLS.append(func.__name__)
    return "custom"


def set_vectorcall(func):
    """PyFunction_SetVectorcall(func, custom_vectorcall), as a C extension
    that gives a function its own calling convention would."""
    set_it = ctypes.pythonapi.PyFunction_SetVectorcall
    set_it.argtypes = (ctypes.py_object, ctypes.c_void_p)
    set_it.restype = None
    set_it(func, ctypes.cast(custom_vectorcall, ctypes.c_void_p))


def test_a_vectorcall_someone_else_set_is_kept():
    def before():
        return "python"

    def during():
        return "python"

    def driver(n):
        return [before() for _ in range(n)] + [during() for _ in range(n)]

    set_vectorcall(before)
    CUSTOM_CALLS.clear()
    seen = []

    def callback(frame):
        if frame.f_code is driver.__code__:
            return pyframe.SKIP
        if frame.f_code in (before.__code__, during.__code__):
            seen.append(frame.f_code.co_name)
        return None

    with specialization():
        # pyframe may put its own vectorcall in front of `before`'s (the
        # test cannot tell); calls must still end in the custom one.
        assert before() == "custom"
        assert hooked(during)
        set_vectorcall(during)
        assert during() == "custom"
        with pyframe.callback(callback):
            for _ in range(3):
                assert driver(10) == ["custom"] * 20
    assert not hooked(before) and not hooked(during)
    assert before() == during() == "custom"
    assert seen == []
    assert CUSTOM_CALLS == (
        ["before", "during"] + (["before"] * 10 + ["during"] * 10) * 3 + ["before", "during"]
    )
