"""pyframe alongside another PEP 523 function (a debugger's, TorchDynamo's).

tools/floorhook is a pass-through PEP 523 function that counts the frames it
evaluates; it stands in for the other tool.
"""

import importlib.util
import os

import pytest

import pyframe

BUILDER = os.path.join(os.path.dirname(__file__), os.pardir, "tools", "floorhook", "build.py")


@pytest.fixture(scope="module")
def floorhook(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("floorhook_build", BUILDER)
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    module = builder.load(str(tmp_path_factory.mktemp("floorhook")))
    yield module
    if module.installed():
        module.uninstall()


def work(n):
    return n + 1


def test_pyframe_runs_frames_with_the_previously_installed_function(floorhook):
    floorhook.install()
    try:
        seen = []
        with pyframe.callback(lambda frame: seen.append(frame.f_code.co_name)):
            assert pyframe.hook_installed()
            floorhook.reset_calls()
            for i in range(10):
                work(i)
            assert floorhook.calls() >= 10, "pyframe bypassed the other evaluator"
        assert seen.count("work") == 10
        # pyframe put the other function back
        assert not pyframe.hook_installed()
        assert floorhook.installed()
        floorhook.reset_calls()
        work(1)
        assert floorhook.calls() >= 1
    finally:
        floorhook.uninstall()


def test_replacement_and_skip_run_under_the_previous_function(floorhook):
    floorhook.install()
    try:
        consts = tuple(2 if c == 1 else c for c in work.__code__.co_consts)
        replacement = work.__code__.replace(co_consts=consts)  # returns n + 2

        def callback(frame):
            if frame.f_code is work.__code__:
                return pyframe.Compiled(replacement)
            return pyframe.SKIP

        with pyframe.callback(callback):
            floorhook.reset_calls()
            assert [work(i) for i in range(3)] == [2, 3, 4]
            assert floorhook.calls() >= 3
    finally:
        floorhook.uninstall()


def test_another_function_installed_over_pyframe(floorhook):
    calls = []
    with pyframe.callback(lambda frame: calls.append(frame.f_code.co_name)):
        floorhook.install()  # on top of pyframe: it runs frames with pyframe's
        floorhook.reset_calls()
        work(1)
        assert floorhook.calls() >= 1 and "work" in calls
    # pyframe could not take itself out from under floorhook: it stays in the
    # chain as a pass-through and is not called for work() any more.
    calls.clear()
    work(2)
    assert calls == []
    floorhook.uninstall()  # puts pyframe's function back...
    work(3)  # ...which steps aside on the next frame
    assert not pyframe.hook_installed()
    assert not floorhook.installed()
