"""CPython 3.12+: reference counts and memory stay flat over many calls in the
mode, and over switching it on and off.
"""

import pytest
from conftest import HAS_SPECIALIZATION_MODE, NO_SPECIALIZATION_MODE, assert_flat
from specialization_scenarios import PARTIAL, POINT, Plain, plain
from specialization_support import (
    WARM_UP,
    mode_off_at_start,  # noqa: F401
    specialization,
)

import pyframe

pytestmark = pytest.mark.skipif(not HAS_SPECIALIZATION_MODE, reason=NO_SPECIALIZATION_MODE)

# mode_off_at_start, imported above, is autouse: it applies to every test here.


# ---- reference counts and memory ---------------------------------------------------


def flat_leaf(a, b=None):
    return a


def flat_gen(a):
    yield a


def flat_target(a, b=None):
    return a


def flat_driver(a):
    flat_leaf(a)
    flat_leaf(a, b=a)
    (lambda: a)()
    Plain(a)
    next(flat_gen(a))
    PARTIAL()
    flat_target(a)
    _ = POINT.prop
    _ = POINT[a]


def test_refcounts_and_memory_flat_in_the_mode():
    a = object()

    def callback(frame):
        if frame.f_code is flat_driver.__code__:
            return pyframe.SKIP
        if frame.f_code is flat_target.__code__:
            return pyframe.Compiled(flat_target.__code__.replace())
        return None

    def run(n):
        for _ in range(n):
            flat_driver(a)

    tracked = (
        a,
        callback,
        flat_driver,
        flat_driver.__code__,
        flat_leaf,
        flat_leaf.__code__,
        flat_target,
        flat_target.__code__,
        Plain,
        Plain.__init__,
        Plain.__init__.__code__,
        flat_gen.__code__,
        PARTIAL,
    )
    with specialization(), pyframe.callback(callback):
        run(WARM_UP)
        assert_flat(run, tracked, 10_000)


def test_switching_the_mode_on_and_off_keeps_nothing():
    def run(n):
        for _ in range(n):
            pyframe.set_specialization(True)
            plain(1)
            pyframe.set_specialization(False)

    run(5)
    assert_flat(run, (plain, plain.__code__, Plain, Plain.__init__), 30)
