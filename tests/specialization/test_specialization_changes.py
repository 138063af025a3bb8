"""CPython 3.12+: what changes under warm call sites in skipped code is seen: a
class's __init__ the mode meets late, func.__code__ reassigned, replacement
code the callback returns, and SKIP_RECURSIVE.
"""

import pytest
from conftest import HAS_SPECIALIZATION_MODE, NO_SPECIALIZATION_MODE, with_const
from specialization_support import (
    WARM_UP,
    aside,
    count_frames,
    frame_key,
    hooked,
    mode_off_at_start,  # noqa: F401
    skipping,
    specialization,
    specialized,
)

import pyframe

pytestmark = pytest.mark.skipif(not HAS_SPECIALIZATION_MODE, reason=NO_SPECIALIZATION_MODE)

# mode_off_at_start, imported above, is autouse: it applies to every test here.


# ---- __init__ of classes the mode meets late --------------------------------------


def test_init_of_a_class_made_in_the_mode_is_seen_from_warm_skipped_code():
    # A class made after the mode went on was not in the GC walk; warm
    # `Cls(...)` sites in skipped code must still not enter its __init__
    # without the hook.
    with specialization():
        namespace = {}
        exec("class Late:\n    def __init__(self, x):\n        self.x = x\n", namespace)
        late = namespace["Late"]

        def driver(n):
            for _ in range(n):
                late(n)

        with pyframe.callback(skipping(driver.__code__)):
            driver(WARM_UP)
        counts = count_frames(driver, 10, skip={driver.__code__}, calls=1)
    assert counts == {frame_key(late.__init__.__code__): 10}


def test_init_assigned_in_the_mode_is_seen_from_warm_skipped_code():
    class Reinit:
        def __init__(self, x):
            self.x = x

    def new_init(self, x):
        self.y = x

    def driver(n):
        for _ in range(n):
            Reinit(n)

    for _ in range(WARM_UP):
        driver(1)
    with specialization():
        Reinit.__init__ = new_init
        with pyframe.callback(skipping(driver.__code__)):
            driver(WARM_UP)
        counts = count_frames(driver, 10, skip={driver.__code__}, calls=1)
    assert counts == {frame_key(new_init.__code__): 10}


# ---- func.__code__ reassigned in the mode -----------------------------------------


REASSIGN_SOURCE = """\
def reassigned(a):
    return a

def driver(n, first, second):
    # Skipped: it gives `reassigned` one code, then half-way another, while
    # its call site stays warm.
    for i in range(n):
        code = first if i < n // 2 else second
        if reassigned.__code__ is not code:
            reassigned.__code__ = code
        reassigned(i)
"""


@pytest.mark.parametrize("new", ["compiled-in-the-mode", "of-a-function-made-before-the-mode"])
def test_code_reassigned_in_the_mode_is_seen(new):
    def made_before(a):
        return (a,)

    namespace = {}
    exec(REASSIGN_SOURCE, namespace)  # fresh code objects: call sites never warmed
    reassigned, driver = namespace["reassigned"], namespace["driver"]
    original = reassigned.__code__
    skip = {driver.__code__}
    for _ in range(WARM_UP // 10):
        driver(10, original, original)
    assert "CALL_PY_EXACT_ARGS" in specialized(driver.__code__)
    with specialization():
        if new == "compiled-in-the-mode":
            compiled = {}
            exec(compile("def body(a):\n    return [a]\n", "<spec body>", "exec"), compiled)
            new_code = compiled["body"].__code__
        else:
            new_code = made_before.__code__
        with pyframe.callback(skipping(*skip)):
            for _ in range(WARM_UP // 10):
                driver(10, original, new_code)
        assert hooked(reassigned)
        counts = count_frames(driver, 200, original, new_code, skip=skip)
        # And back, the new code first.
        back = count_frames(driver, 200, new_code, original, skip=skip)
    assert counts == back == {frame_key(original): 200, frame_key(new_code): 200}


# ---- replacement code called from skipped code --------------------------------------


def replaced_target(a):
    return a * 10


REPLACED = with_const(replaced_target.__code__, 10, 1000)


REPLACEMENT_DRIVER_SOURCE = """\
def replacement_driver(n):
    return [replaced_target(i) for i in range(n)]
"""


@pytest.mark.parametrize("kind", ["code", "compiled", "compiled-with-guard"])
def test_replacement_code_runs_when_called_from_warm_skipped_code(kind):
    namespace = {"replaced_target": replaced_target}
    exec(REPLACEMENT_DRIVER_SOURCE, namespace)  # a call site no other test wore out
    replacement_driver = namespace["replacement_driver"]
    for _ in range(WARM_UP // 10):
        replacement_driver(10)
    assert "CALL_PY_EXACT_ARGS" in specialized(replacement_driver.__code__)
    asked = []

    def callback(frame):
        if frame.f_code is replacement_driver.__code__:
            return pyframe.SKIP
        if frame.f_code is replaced_target.__code__:
            asked.append(frame.f_locals["a"])
            if kind == "code":
                return REPLACED
            if kind == "compiled":
                return pyframe.Compiled(REPLACED)
            return pyframe.Compiled(REPLACED, lambda f_locals: f_locals["a"] % 2 == 0)
        return None

    with specialization(), pyframe.callback(callback):
        for _ in range(3):
            assert replacement_driver(100) == [i * 1000 for i in range(100)]
    if kind == "code":
        assert asked == list(range(100)) * 3
    elif kind == "compiled":
        assert asked == [0]  # cached from then on
    else:
        # Odd arguments miss the guard: the callback is asked each time.
        assert asked[:2] == [0, 1] and len(asked) == 1 + 150


# ---- SKIP_RECURSIVE ---------------------------------------------------------------


def recursive_leaf(a):
    return a


def recursive_driver(n):
    for i in range(n):
        recursive_leaf(i)
    return aside()


def test_skip_recursive_code_and_what_it_calls_run_without_the_callback():
    seen = []

    def callback(frame):
        if frame.f_code is recursive_driver.__code__:
            return pyframe.SKIP_RECURSIVE
        seen.append(frame.f_code)
        return None

    for _ in range(WARM_UP // 10):
        recursive_driver(10)
    with specialization(), pyframe.callback(callback):
        recursive_driver(10)
        assert recursive_driver(10) is True
        assert seen == []
        recursive_leaf(1)  # outside the skipped code: seen
    assert seen == [recursive_leaf.__code__]
