"""Why the specialization mode stops at 3.11 (cframe/compat.h,
PYFRAME_HAS_SPECIALIZATION_MODE): the mode keeps each frame that must reach
the callback on the hook by giving its function a vectorcall of pyframe's, and
steps the hook aside for skipped code.  That holds only where the interpreter,
with no PEP 523 function installed, calls a Python function through its
vectorcall.  3.11's CALL pushes the frame of any Python function itself and
specializes for any function, whatever its vectorcall: forced on there, the
mode would run those frames unseen.

The probe swaps in a vectorcall that counts (and calls CPython's), runs a
loop of calls from Python with no hook installed, and counts.
"""

import pytest
from conftest import HAS_SPECIALIZATION_MODE

import pyframe
from pyframe import _cframe

CALLS = 1000  # past CPython's warm-up: the call site specializes


def probed_calls():
    def target(a):
        return a

    def driver():
        for i in range(CALLS):
            target(i)

    assert not pyframe.hook_installed()
    return _cframe._specialization_probe(target, driver)


@pytest.mark.skipif(HAS_SPECIALIZATION_MODE, reason="3.12+ call a function through its vectorcall")
def test_3_11_runs_python_calls_past_the_functions_vectorcall():
    # Every call bypasses it: the generic CALL inlines the frame, and so does
    # the CALL_PY_EXACT_ARGS it specializes into.
    assert probed_calls() == 0
    with pytest.raises(NotImplementedError, match="vectorcall"):
        pyframe.set_specialization(True)
    assert pyframe.specialization_enabled() is False


@pytest.mark.skipif(not HAS_SPECIALIZATION_MODE, reason="3.11 bypasses the vectorcall")
def test_3_12_and_later_call_python_functions_through_their_vectorcall():
    assert probed_calls() == CALLS


def test_the_probe_gives_the_function_its_vectorcall_back():
    def target():
        return 1

    def driver():
        return target()

    through = 1 if HAS_SPECIALIZATION_MODE else 0
    assert _cframe._specialization_probe(target, driver) == through
    # The first probe put CPython's vectorcall back: a second one counts
    # afresh, and the function runs as before.
    assert _cframe._specialization_probe(target, driver) == through
    assert target() == 1
