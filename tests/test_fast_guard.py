"""pyframe.FastGuard: a guard that arms itself with a check, which pyframe
then calls instead of the guard while what the check assumed holds."""

import gc
import threading
import weakref

import pytest
from conftest import assert_flat

import pyframe


def original(x):
    return ("original", x)


def compiled(x):
    return ("compiled", x)


class Check:
    """The check a guard arms with: x > 0, counting its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, f_locals):
        self.calls += 1
        return f_locals["x"] > 0


class ArmingGuard(pyframe.FastGuard):
    """A full guard that checks x > 0 itself, counts its calls, and arms
    with `check` while `self.arming` is true."""

    __slots__ = ("cache", "check", "calls", "arming", "unless", "__weakref__")

    def __init__(self, cache, check, unless=None):
        self.cache = cache
        self.check = check
        self.calls = 0
        self.arming = True
        self.unless = unless

    def __call__(self, f_locals):
        self.calls += 1
        if self.arming:
            self.arm(self.cache, self.check, self.unless)
        return f_locals["x"] > 0


def caching(guard):
    """A callback caching `compiled` for `original` behind `guard`, for an
    x > 0."""

    def callback(frame):
        if frame.f_code is original.__code__ and frame.f_locals["x"] > 0:
            return pyframe.Compiled(compiled.__code__, guard=guard)
        return None

    return callback


@pytest.fixture
def cache():
    cache = pyframe.Cache()
    yield cache
    pyframe.reset(cache=cache)


def test_once_armed_the_check_is_called_instead_of_the_guard(cache):
    check = Check()
    guard = ArmingGuard(cache, check)
    with pyframe.callback(caching(guard), cache=cache):
        assert original(1) == ("compiled", 1)  # compiled on the miss: no guard call
        assert original(2) == ("compiled", 2)  # the guard, which arms
        assert (guard.calls, check.calls) == (1, 0)
        assert guard.armed
        assert [original(x) for x in (3, -4, 5)] == [
            ("compiled", 3),
            ("original", -4),  # the check says no: the callback is asked again
            ("compiled", 5),
        ]
    assert guard.calls == 1
    assert check.calls >= 3


def test_disarm_guards_has_every_guard_of_the_cache_called_again(cache):
    check = Check()
    guard = ArmingGuard(cache, check)
    other = pyframe.Cache()
    with pyframe.callback(caching(guard), cache=cache):
        original(1)
        original(2)
        other.disarm_guards()  # another cache's epoch: nothing changes here
        original(3)
        assert guard.calls == 1
        cache.disarm_guards()
        assert not guard.armed
        guard.arming = False
        assert original(4) == ("compiled", 4)
        assert original(5) == ("compiled", 5)
        assert guard.calls == 3
        assert check.calls == 1


def test_a_guard_armed_for_one_callback_is_called_under_another(cache):
    check = Check()
    guard = ArmingGuard(cache, check)
    with pyframe.callback(caching(guard), cache=cache):
        original(1)
        original(2)
    assert guard.calls == 1

    def other_callback(frame):
        return None

    with pyframe.callback(other_callback, cache=cache):
        assert not guard.armed
        assert original(3) == ("compiled", 3)  # the guard, armed again for this one
        assert guard.calls == 2
        assert original(4) == ("compiled", 4)
        assert guard.calls == 2
    with pyframe.run_only(cache=cache):  # no callback: armed for None
        assert original(5) == ("compiled", 5)
        assert original(6) == ("compiled", 6)
        assert guard.calls == 3


def test_disarm_and_arming_again(cache):
    check = Check()
    guard = ArmingGuard(cache, check)
    with pyframe.callback(caching(guard), cache=cache):
        original(1)
        original(2)
        guard.disarm()
        guard.arming = False
        assert not guard.armed
        original(3)
        original(4)
        assert guard.calls == 3
        guard.arming = True
        original(5)
        original(6)
        assert guard.calls == 4


def test_unless_true_has_the_guard_called_for_that_frame(cache):
    check = Check()
    skipping = []
    guard = ArmingGuard(cache, check, unless=lambda: bool(skipping))
    with pyframe.callback(caching(guard), cache=cache):
        original(1)
        original(2)
        skipping.append(True)
        original(3)
        assert (guard.calls, check.calls) == (2, 0)
        skipping.clear()
        original(4)
        assert (guard.calls, check.calls) == (2, 1)


def test_a_check_that_raises_disarms_and_the_guard_answers(cache):
    class Failing(Exception):
        pass

    def failing_check(f_locals):
        raise Failing("from the check")

    guard = ArmingGuard(cache, failing_check)
    with pyframe.callback(caching(guard), cache=cache):
        original(1)
        original(2)
        guard.arming = False
        assert original(3) == ("compiled", 3)  # the guard's verdict
        assert guard.calls == 2
        assert not guard.armed

    class RaisingGuard(ArmingGuard):
        __slots__ = ()

        def __call__(self, f_locals):
            if self.calls:
                raise Failing("from the guard")
            return super().__call__(f_locals)

    raising = RaisingGuard(cache, failing_check)
    with pyframe.callback(caching(raising), cache=cache):
        pyframe.reset(original.__code__, cache=cache)
        original(1)
        original(2)
        with pytest.raises(Failing, match="from the guard"):
            original(3)


def test_arm_names_what_it_was_given_instead(cache):
    guard = ArmingGuard(cache, Check())
    with pytest.raises(TypeError, match=r"FastGuard.arm\(\) expects cache to be a pyframe.Cache"):
        guard.arm({}, Check())
    with pytest.raises(TypeError, match=r"expects check to be a callable .* got .*int"):
        guard.arm(cache, 3)
    with pytest.raises(TypeError, match=r"expects unless to be a callable .* got .*str"):
        guard.arm(cache, Check(), "no")
    assert not guard.armed


def test_the_armed_guard_holds_its_check_until_disarmed_and_leaks_nothing(cache):
    check = Check()
    guard = ArmingGuard(cache, check)
    gone = weakref.ref(guard)
    with pyframe.callback(caching(guard), cache=cache):
        original(1)
        original(2)

        def run(calls):
            for i in range(calls):
                original(i + 1)

        run(100)
        assert_flat(run, [check, guard, cache, original.__code__], 20000)
    assert guard.calls == 1
    armed_check = weakref.ref(check)
    guard.check = None
    del check
    gc.collect()
    assert armed_check() is not None  # held by the armed guard
    guard.disarm()
    gc.collect()
    assert armed_check() is None
    del guard
    pyframe.reset(cache=cache)
    gc.collect()
    assert gone() is None


def test_each_thread_checks_against_its_own_callback(cache):
    check = Check()
    guard = ArmingGuard(cache, check)
    callback = caching(guard)
    seen = []

    def worker():
        with pyframe.callback(callback, cache=cache):
            seen.append(guard.armed)  # the same callback in this thread: still armed
            seen.append(original(7))

    with pyframe.callback(callback, cache=cache):
        original(1)
        original(2)
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
    assert seen == [True, ("compiled", 7)]
    assert guard.calls == 1


# ---- pyframe.Setting ---------------------------------------------------------------


def test_a_setting_swaps_and_disarms_only_when_the_value_changes(cache):
    check = Check()
    guard = ArmingGuard(cache, check)
    region = pyframe.Setting(cache, -1, convert=int)
    with pyframe.callback(caching(guard), cache=cache):
        original(1)
        original(2)
        assert region.swap(-1) == -1  # the same value: still armed
        assert region.swap(-1.0) == -1  # converted, and equal
        assert guard.armed
        assert region.swap("3") == -1
        assert region.value == 3
        assert not guard.armed
        original(3)  # the guard, arming again
        assert region.swap(-1) == 3
        assert not guard.armed
    assert guard.calls == 2


def test_a_setting_of_a_kind_takes_that_type_only(cache):
    flag = pyframe.Setting(cache, False, kind=bool)
    with pytest.raises(TypeError, match=r"^expected True/False$"):
        flag.swap(1)
    assert flag.swap(True) is False
    assert flag.value is True
    name = pyframe.Setting(cache, "a", kind=str)
    with pytest.raises(TypeError, match=r"^expected str, got bytes$"):
        name.swap(b"b")
    with pytest.raises(TypeError, match=r"^expected True/False$"):
        pyframe.Setting(cache, 0, kind=bool)


def test_setting_names_what_it_was_given_instead(cache):
    with pytest.raises(TypeError, match=r"Setting\(\) expects cache to be a pyframe.Cache"):
        pyframe.Setting(None, 0)
    with pytest.raises(TypeError, match=r"expects kind to be a type, or None; got .*str"):
        pyframe.Setting(cache, 0, kind="int")
    with pytest.raises(TypeError, match=r"expects convert to be a callable, or None; got .*int"):
        pyframe.Setting(cache, 0, convert=3)
