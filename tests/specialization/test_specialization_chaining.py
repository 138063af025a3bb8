"""CPython 3.12+: a PEP 523 function installed while pyframe stands aside.

Skipped code runs with pyframe's function stepped aside, so a tool that
installs its own PEP 523 function from there finds CPython's evaluator to
chain to.  pyframe goes back over it once the skipped code returns: frames
reach pyframe's callback, then the other function, and removing pyframe's
callback leaves the other one installed.
"""

import pytest
from conftest import HAS_SPECIALIZATION_MODE, NO_SPECIALIZATION_MODE
from specialization_support import aside, mode_off_at_start, specialization  # noqa: F401

import pyframe

pytestmark = pytest.mark.skipif(not HAS_SPECIALIZATION_MODE, reason=NO_SPECIALIZATION_MODE)

# mode_off_at_start, imported above, is autouse: it applies to every test here.


def work(n):
    return n + 1


def test_a_function_installed_inside_skipped_code_runs_under_pyframe(floorhook):
    install = floorhook.install  # a C call: no frame of its own

    def installs_its_hook(notes):
        notes.append(aside())
        install()

    seen = []

    def callback(frame):
        if frame.f_code is installs_its_hook.__code__:
            return pyframe.SKIP
        seen.append(frame.f_code.co_name)
        return None

    notes = []
    try:
        with specialization(), pyframe.callback(callback):
            installs_its_hook(notes)
            assert notes == [True], "the installing code did not run stepped aside"
            assert pyframe.hook_installed()
            floorhook.reset_calls()
            for i in range(10):
                work(i)
            assert seen.count("work") == 10
            assert floorhook.calls() >= 10, "pyframe bypassed the function installed aside"
        assert not pyframe.hook_installed()
        assert floorhook.installed()
    finally:
        if floorhook.installed():
            floorhook.uninstall()
