"""pyframe alongside another PEP 523 function (a debugger's, TorchDynamo's).

tools/floorhook is a pass-through PEP 523 function that counts the frames it
evaluates; it stands in for the other tool.
"""

import ctypes

from conftest import PY312, with_const

import pyframe


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
        replacement = with_const(work.__code__, 1, 2)  # returns n + 2

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


def test_callback_set_again_while_another_function_is_over_pyframe(floorhook):
    # pyframe is left in floorhook's chain as a pass-through; installing a
    # callback again must not put pyframe over floorhook too (each would then
    # call the other, forever): pyframe finds frames still reach it.
    with pyframe.callback(lambda frame: None):
        floorhook.install()
    try:
        seen = []
        with pyframe.callback(lambda frame: seen.append(frame.f_code.co_name)):
            assert not pyframe.hook_installed()  # floorhook stays on top
            floorhook.reset_calls()
            assert work(1) == 2
            assert seen == ["work"]
            assert floorhook.calls() >= 1
    finally:
        floorhook.uninstall()
    work(2)
    assert not pyframe.hook_installed() and not floorhook.installed()


_api = ctypes.pythonapi
_api.PyInterpreterState_Get.restype = ctypes.c_void_p
_api.PyInterpreterState_Get.argtypes = []
_api._PyInterpreterState_SetEvalFrameFunc.restype = None
_api._PyInterpreterState_SetEvalFrameFunc.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
CPYTHON_EVALUATOR = ctypes.cast(_api._PyEval_EvalFrameDefault, ctypes.c_void_p).value


def test_callback_set_after_another_tool_took_pyframe_out_of_the_chain():
    # As torch's set_eval_frame(None) does: it puts back the function it
    # replaced, whatever is installed by then, here over pyframe's.
    with pyframe.callback(lambda frame: None):
        _api._PyInterpreterState_SetEvalFrameFunc(_api.PyInterpreterState_Get(), CPYTHON_EVALUATOR)
        assert not pyframe.hook_installed()
        seen = []
        with pyframe.callback(lambda frame: seen.append(frame.f_code.co_name)):
            assert pyframe.hook_installed()  # frames no longer reached it
            work(1)
        assert seen == ["work"]
    assert not pyframe.hook_installed()


def test_code_freed_with_extra_storage_of_another_tool():
    # Dynamo and others keep their own code-extra slots.  A code object with
    # one at an index above pyframe's has an empty slot for pyframe, which
    # CPython still hands to pyframe's free function when the code goes.
    # PEP 689 named them PyUnstable_* in 3.12; 3.11 has the underscore names.
    request_index = getattr(
        _api, "PyUnstable_Eval_RequestCodeExtraIndex" if PY312 else "_PyEval_RequestCodeExtraIndex"
    )
    set_extra = getattr(_api, "PyUnstable_Code_SetExtra" if PY312 else "_PyCode_SetExtra")
    request_index.restype = ctypes.c_ssize_t
    request_index.argtypes = [ctypes.c_void_p]
    set_extra.restype = ctypes.c_int
    set_extra.argtypes = [ctypes.py_object, ctypes.c_ssize_t, ctypes.c_void_p]
    index = request_index(None)  # no free function
    assert index >= 0
    for _ in range(3):
        code = compile("x = 1", "<other tool>", "exec")
        assert set_extra(code, index, 1) == 0
        del code  # crashed: pyframe's free function read the empty slot
