"""CPython 3.12+: code a callback skipped is seen again by the next owner (a new
cache, pyframe.reset, a callback installed inside skipped code), though its
call sites were inlined meanwhile.
"""

import pytest
from conftest import HAS_SPECIALIZATION_MODE, NO_SPECIALIZATION_MODE
from specialization_support import (
    WARM_UP,
    hooked,
    mode_off_at_start,  # noqa: F401
    owned_pair,
    specialization,
    specialized,
)

import pyframe

pytestmark = pytest.mark.skipif(not HAS_SPECIALIZATION_MODE, reason=NO_SPECIALIZATION_MODE)

# mode_off_at_start, imported above, is autouse: it applies to every test here.


# ---- a new owner sees again what the old one skipped --------------------------------


@pytest.mark.parametrize("switch", ["new-cache", "reset-all", "reset-code", "reset-of-the-cache"])
def test_code_skipped_by_the_old_owner_is_seen_by_the_new_one(switch):
    owned_leaf, owned_driver = owned_pair()
    skip_leaf = [True]
    seen = []

    def callback(frame):
        if frame.f_code is owned_driver.__code__:
            return pyframe.SKIP
        if frame.f_code is owned_leaf.__code__:
            if skip_leaf[0]:
                return pyframe.SKIP
            seen.append(frame.f_locals["a"])
        return None

    old_cache = pyframe.Cache()
    with specialization():
        with pyframe.callback(callback, cache=old_cache):
            for _ in range(WARM_UP // 10):
                owned_driver(10)
        # Skipped code calling skipped code: inlined, without the hook.
        assert "CALL_PY_EXACT_ARGS" in specialized(owned_driver.__code__)
        skip_leaf[0] = False
        if switch == "new-cache":
            cache = pyframe.Cache()
        else:
            cache = old_cache
            if switch == "reset-all":
                pyframe.reset()
            elif switch == "reset-code":
                pyframe.reset(owned_leaf.__code__)
            else:
                pyframe.reset(cache=old_cache)
        with pyframe.callback(callback, cache=cache):
            owned_driver(50)
            owned_driver(50)
    assert seen == list(range(50)) * 2


def test_a_callback_installed_inside_skipped_code_sees_what_the_outer_one_skipped():
    owned_leaf, _ = owned_pair()
    inner_seen = []

    def outer(frame):
        if frame.f_code is switching_driver.__code__ or frame.f_code is owned_leaf.__code__:
            return pyframe.SKIP
        return None

    def inner(frame):
        inner_seen.append(frame.f_code.co_name)

    def switching_driver(n):
        # One call site: warm and inlined under `outer`, which skips both
        # codes, then met again under `inner`, which skips nothing.
        for i in range(2 * n):
            if i == n:
                pyframe.set_callback(inner)
            owned_leaf(i)
        pyframe.set_callback(outer)

    with specialization(), pyframe.callback(outer):
        for _ in range(WARM_UP // 10):
            switching_driver(10)
        inner_seen.clear()
        switching_driver(10)
    assert inner_seen == ["owned_leaf"] * 10


# ---- a JIT's switch, flipped around every call ----------------------------------------


def test_a_switch_flipped_around_each_call_keeps_its_released_functions_and_a_new_owner_sees_them():
    # pyframe.Switch goes from its owner to none and back around every call
    # of compiled code.  Functions its owner's SKIPs released stay released
    # across the flips (going back on the hook at each would walk every
    # function alive, per flip), and an owner that decides otherwise still
    # sees every frame of them.
    owned_leaf, owned_driver = owned_pair()
    seen = []

    def skips_both(frame):
        if frame.f_code in (owned_driver.__code__, owned_leaf.__code__):
            return pyframe.SKIP
        return None

    def skips_the_driver_only(frame):
        if frame.f_code is owned_driver.__code__:
            return pyframe.SKIP
        if frame.f_code is owned_leaf.__code__:
            seen.append(frame.f_locals["a"])
        return None

    first = pyframe.Switch(pyframe.Cache())
    second = pyframe.Switch(pyframe.Cache())
    with specialization():
        for _ in range(WARM_UP // 10):
            first.set(skips_both)
            owned_driver(10)
            first.set(None)
        assert "CALL_PY_EXACT_ARGS" in specialized(owned_driver.__code__)
        assert not hooked(owned_leaf)
        for _ in range(3):
            first.set(skips_both)
            owned_driver(5)
            first.set(None)
            assert not hooked(owned_leaf)
            second.set(skips_the_driver_only)
            owned_driver(5)
            second.set(None)
    assert seen == list(range(5)) * 3
