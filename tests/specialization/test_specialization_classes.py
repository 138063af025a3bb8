"""CPython 3.12+: classes made or changed while the mode is on.

A `Cls(...)` call site specialized as CALL_ALLOC_AND_ENTER_INIT enters
__init__ checking only the class's version (3.13+), so pyframe keeps CPython
from making such call sites for every class whose __init__ is not skipped.
3.12 has no such call site: its class calls reach __init__ through the
function's vectorcall, and the frames are checked the same way there.  These
tests make and change classes where the mode has had no chance to walk them:
inside skipped code, at call sites that specialize on their second run
(CPython's warm-up), so that the first time the site meets the class is also
the time it specializes for it.
"""

import types

import pytest
from conftest import HAS_SPECIALIZATION_MODE, NO_SPECIALIZATION_MODE
from specialization_support import (  # noqa: F401
    INLINES_INIT,
    INLINES_INIT_AGAIN,
    mode_off_at_start,
    specialization,
    specialized,
    xfail_init_ignores_pep_523,
)

import pyframe

pytestmark = pytest.mark.skipif(not HAS_SPECIALIZATION_MODE, reason=NO_SPECIALIZATION_MODE)

# mode_off_at_start, imported above, is autouse: it applies to every test here.


class NoInit:
    pass


def observing_init(seen):
    """A callback that counts __init__ frames and skips every other code."""

    def callback(frame):
        if frame.f_code.co_name == "__init__":
            seen.append(frame.f_code)
            return None
        return pyframe.SKIP

    return callback


MAKE_AND_CALL = """\
def make_and_call():
    class Made:
        def __init__(self):
            pass
    for cls in (NoInit, Made, Made, Made, Made):
        cls()
"""


@xfail_init_ignores_pep_523
def test_a_class_made_in_skipped_code_is_seen_at_a_site_that_first_meets_it():
    # The first function skips the class body's code; its copies (fresh call
    # sites, the same nested body code) then make the class stepped aside.
    namespace = {"NoInit": NoInit}
    exec(MAKE_AND_CALL, namespace)
    first = namespace["make_and_call"]
    seen = []
    with specialization(), pyframe.callback(observing_init(seen)):
        first()
        for _ in range(50):
            types.FunctionType(first.__code__.replace(), namespace)()
    assert len(seen) == 51 * 4


TYPE_CALL = """\
def make_with_type(init):
    made = type("Made", (), {"__init__": init})
    for cls in (NoInit, made, made, made, made):
        cls()
"""


@xfail_init_ignores_pep_523
def test_a_class_made_by_a_type_call_in_skipped_code_is_seen():
    namespace = {"NoInit": NoInit}
    exec(TYPE_CALL, namespace)
    first = namespace["make_with_type"]

    def __init__(self):
        pass

    seen = []
    with specialization(), pyframe.callback(observing_init(seen)):
        first(__init__)
        for _ in range(50):
            types.FunctionType(first.__code__.replace(), namespace)(__init__)
    assert len(seen) == 51 * 4


DRIVER = """\
def driver(cls, n):
    for _ in range(n):
        cls()
"""


def fresh_driver():
    namespace = {}
    exec(DRIVER, namespace)
    return namespace["driver"]


def test_an_observed_init_assigned_to_a_class_whose_init_was_skipped_is_seen():
    class Changing:
        def __init__(self):
            pass

    skipped_init = Changing.__init__.__code__
    driver = fresh_driver()

    def observed(self):
        pass

    seen = []

    def callback(frame):
        if frame.f_code is observed.__code__:
            seen.append(1)
            return None
        return pyframe.SKIP

    with specialization(), pyframe.callback(callback):
        driver(Changing, 2000)
        # Its __init__ skipped, the class was free to specialize for.
        assert not INLINES_INIT_AGAIN or "CALL_ALLOC_AND_ENTER_INIT" in specialized(driver.__code__)
        assert skipped_init is Changing.__init__.__code__
        Changing.__init__ = observed
        driver(Changing, 100)
    assert len(seen) == 100


def test_new_bases_that_bring_an_observed_init_are_seen():
    class SkippedBase:
        def __init__(self):
            pass

    class ObservedBase:
        def __init__(self):
            pass

    class Child(SkippedBase):
        pass

    driver = fresh_driver()
    seen = []

    def callback(frame):
        if frame.f_code is ObservedBase.__init__.__code__:
            seen.append(1)
            return None
        return pyframe.SKIP

    with specialization(), pyframe.callback(callback):
        driver(Child, 2000)
        assert not INLINES_INIT_AGAIN or "CALL_ALLOC_AND_ENTER_INIT" in specialized(driver.__code__)
        Child.__bases__ = (ObservedBase,)
        driver(Child, 100)
    assert len(seen) == 100


@pytest.mark.skipif(not INLINES_INIT, reason="no CALL_ALLOC_AND_ENTER_INIT before 3.13")
@pytest.mark.skipif(
    INLINES_INIT and not INLINES_INIT_AGAIN, reason="3.13.0 does not inline __init__ again"
)
def test_a_class_whose_init_is_skipped_is_inlined_again():
    # Kept from CALL_ALLOC_AND_ENTER_INIT while its __init__ is observed, the
    # class gets it back once the callback skips __init__.
    class Later:
        def __init__(self):
            pass

    driver = fresh_driver()
    observe = [True]

    def callback(frame):
        if frame.f_code is Later.__init__.__code__ and observe[0]:
            return None
        return pyframe.SKIP

    with specialization():
        with pyframe.callback(callback):
            driver(Later, 200)
            assert "CALL_ALLOC_AND_ENTER_INIT" not in specialized(driver.__code__)
        observe[0] = False
        pyframe.reset(Later.__init__.__code__)
        with pyframe.callback(callback):
            for _ in range(20):
                driver(Later, 200)
            assert "CALL_ALLOC_AND_ENTER_INIT" in specialized(driver.__code__)
