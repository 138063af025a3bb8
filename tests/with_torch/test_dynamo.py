"""pyframe next to TorchDynamo (torch 2.13), the PEP 523 user it is most often
combined with.

TorchDynamo's raw hook, as torch 2.13 exposes it:

- ``torch._C._dynamo.eval_frame.set_eval_frame(callback)`` sets the calling
  thread's callback and returns the previous one (None when there was none).
  While any thread has one, Dynamo's PEP 523 function is installed; it saves
  the function it replaced and calls it for every frame it lets run.
  ``set_eval_frame(None)`` on the last thread puts that saved function back,
  whatever is installed at the time.
- The callback is called as ``callback(frame, cache_entry, frame_state)`` for
  every frame evaluation of that thread (new frames and generator
  resumptions; not throws), but not for the frames the callback itself runs
  (Dynamo switches itself off around the call).  ``frame`` wraps the
  interpreter frame: ``f_code``, ``f_lasti``, ``f_globals``, ``f_builtins``
  and ``f_locals``, a dict Dynamo builds from the frame's fast-local slots
  and closure.
  ``cache_entry`` is the head of Dynamo's cache for the code (None here) and
  ``frame_state`` a dict shared by the frames of the code.
- It must return an object with ``frame_exec_strategy`` (a
  ``FrameExecStrategy(cur_action, recursive_action)`` of ``FrameAction``
  DEFAULT / SKIP / RUN_ONLY), ``apply_to_code`` and ``guarded_code``:
  torch._dynamo.types.ConvertFrameReturn.  DEFAULT/DEFAULT with
  apply_to_code=False and no guarded code runs the frame unchanged and asks
  again next time.  If the callback raises, Dynamo clears the thread's
  callback for good (without uninstalling its function), so the recorder
  below never raises.
- ``get_eval_frame_callback()`` reports the thread's callback.  Nothing in
  torch reports which PEP 523 function is installed: `current_evaluator()`
  below reads it from CPython with ctypes.

Every test that installs a hook removes it in a finally block; the fixtures
check that nothing is left installed.
"""

import collections
import contextlib
import ctypes
import subprocess
import sys
import textwrap

import pytest

# Skipped where torch is not installed (the py312/py313 environments); the
# py312-torch/py313-torch ones install it.  2.13 is the torch whose raw hook
# these tests are written against.
torch = pytest.importorskip("torch", minversion="2.13")

import dynamo_corpus as corpus  # noqa: E402
from conftest import PY313, load_floorhook, locals_difference, record_entries  # noqa: E402
from torch._C._dynamo import eval_frame as dynamo_eval_frame  # noqa: E402
from torch._dynamo.types import (  # noqa: E402
    ConvertFrameReturn,
    FrameAction,
    FrameExecStrategy,
)

import pyframe  # noqa: E402

# ---- which PEP 523 function is installed -------------------------------------

_api = ctypes.pythonapi
_api.PyInterpreterState_Get.restype = ctypes.c_void_p
_api.PyInterpreterState_Get.argtypes = []
_api._PyInterpreterState_GetEvalFrameFunc.restype = ctypes.c_void_p
_api._PyInterpreterState_GetEvalFrameFunc.argtypes = [ctypes.c_void_p]
# CPython reports its own evaluator by this address when no hook is set.
CPYTHON_EVALUATOR = ctypes.cast(_api._PyEval_EvalFrameDefault, ctypes.c_void_p).value

# Address -> name; the `evaluators` fixture learns pyframe's, Dynamo's and
# floorhook's by installing each alone.
EVALUATOR_NAMES = {CPYTHON_EVALUATOR: "cpython"}


def evaluator_address():
    return _api._PyInterpreterState_GetEvalFrameFunc(_api.PyInterpreterState_Get())


def current_evaluator():
    """The installed PEP 523 function: "cpython", "pyframe", "dynamo",
    "floorhook", or an address nobody registered."""
    address = evaluator_address()
    return EVALUATOR_NAMES.get(address, hex(address))


# ---- TorchDynamo's raw hook ---------------------------------------------------

# Run the frame unchanged, and ask again for the next frame of this code.
RUN_AND_ASK_AGAIN = ConvertFrameReturn(
    frame_exec_strategy=FrameExecStrategy(FrameAction.DEFAULT, FrameAction.DEFAULT),
    apply_to_code=False,
)


class DynamoRecorder:
    """A raw Dynamo callback recording, for the code objects `wanted` accepts,
    [(f_lasti, dict(f_locals))] per code object; every frame runs unchanged."""

    def __init__(self, wanted=lambda code: True):
        self.wanted = wanted
        self.frames = collections.defaultdict(list)
        self.errors = []

    def __call__(self, frame, cache_entry, frame_state):
        # An exception would switch Dynamo off for this thread for good, and
        # leave its function installed: keep it for the test to report.
        try:
            if self.wanted(frame.f_code):
                self.frames[frame.f_code].append((frame.f_lasti, dict(frame.f_locals)))
        except BaseException as exc:
            self.errors.append(exc)
        return RUN_AND_ASK_AGAIN


@contextlib.contextmanager
def dynamo_raw_hook(callback):
    previous = dynamo_eval_frame.set_eval_frame(callback)
    try:
        yield callback
    finally:
        dynamo_eval_frame.set_eval_frame(previous)


@pytest.fixture(scope="module")
def floorhook(tmp_path_factory):
    """tools/floorhook: a pass-through PEP 523 function standing in for a
    debugger's, registered in EVALUATOR_NAMES."""
    module = load_floorhook(tmp_path_factory.mktemp("floorhook"))
    module.install()
    try:
        EVALUATOR_NAMES[evaluator_address()] = "floorhook"
    finally:
        module.uninstall()
    yield module
    if module.installed():
        module.uninstall()


@pytest.fixture(scope="module", autouse=True)
def evaluators():
    """Learns the addresses of pyframe's and Dynamo's functions."""
    assert evaluator_address() == CPYTHON_EVALUATOR, "a PEP 523 function is already installed"
    with pyframe.callback(lambda frame: None):
        EVALUATOR_NAMES[evaluator_address()] = "pyframe"
    with dynamo_raw_hook(DynamoRecorder(wanted=lambda code: False)):
        EVALUATOR_NAMES[evaluator_address()] = "dynamo"
    assert len(set(EVALUATOR_NAMES.values())) == 3
    return EVALUATOR_NAMES


@pytest.fixture(autouse=True)
def no_leaked_dynamo_hook():
    """Every test starts with CPython's evaluator and leaves no Dynamo callback.

    (tests/conftest.py checks pyframe's callback and hook the same way.)
    """
    assert current_evaluator() == "cpython", "an earlier test left a PEP 523 function installed"
    try:
        yield
    finally:
        leaked = dynamo_eval_frame.set_eval_frame(None)
    assert leaked is None, f"test left a Dynamo callback installed: {leaked!r}"
    if not pyframe.hook_installed():  # a leaked pyframe hook is conftest's to report
        assert current_evaluator() == "cpython", "test left a PEP 523 function installed"


# ---- (a) entry locals: pyframe against Dynamo's raw hook ------------------------

# f_lasti of a frame that has not started, as pyframe and Dynamo both report
# it: -1 on 3.12, 0 on 3.13.  A resumed generator's frame is past it.
UNSTARTED_LASTI = 0 if PY313 else -1


def label(code):
    """A code object's name in EXPECTED_DIFFERENCES and in messages: its
    qualname, with the file name for module code run by exec."""
    if code.co_filename == corpus.__file__:
        return code.co_qualname
    return f"{code.co_filename} {code.co_qualname}"


class Difference:
    def __init__(self, reason, dynamo_reports):
        self.reason = reason
        self.dynamo_reports = dynamo_reports  # CPython's entry locals -> Dynamo's


# Where Dynamo's raw hook disagrees with CPython itself (the sys.monitoring
# PY_START oracle, which pyframe matches).  Each entry is asserted to happen
# exactly as described, so a torch that changes it fails here.
EXPECTED_DIFFERENCES = {
    "<corpus module> <module>": Difference(
        "module-level code: CPython's f_locals is the module namespace (the globals "
        "dict); Dynamo builds f_locals from fast-local slots only, and module code has "
        "none, so it reports {}",
        dynamo_reports=lambda cpython: {},
    ),
    "<corpus exec with locals> <module>": Difference(
        "exec(code, globals, locals): CPython's f_locals is the locals mapping; Dynamo "
        "reports {} as for any module-level code",
        dynamo_reports=lambda cpython: {},
    ),
    "make_classes.<locals>.Prepared": Difference(
        "class body: CPython's f_locals is the class namespace, here pre-filled by the "
        "metaclass's __prepare__; Dynamo reports {} (its free variables and __class__ "
        "cell excluded, it has no other slots).  A plain class body (Plain) agrees only "
        "because its namespace starts empty",
        dynamo_reports=lambda cpython: {},
    ),
}

# Dynamo's hook is also called when a generator or coroutine resumes, with the
# locals at that point: its frames of such code are the call's plus one per
# resumption.  pyframe and PY_START see the call's frame only.
EXPECTED_RESUMPTIONS = corpus.RESUMPTIONS


def same_objects(pyframe_value, dynamo_value):
    """The same object, or (for what a call builds afresh in each run: *args
    tuples, **kwargs dicts, a metaclass's bases) a container of the same type
    holding the same objects in the same order."""
    if pyframe_value is dynamo_value:
        return True
    if type(pyframe_value) is not type(dynamo_value):
        return False
    if type(pyframe_value) is tuple:
        return len(pyframe_value) == len(dynamo_value) and all(
            same_objects(a, b) for a, b in zip(pyframe_value, dynamo_value, strict=True)
        )
    if type(pyframe_value) is dict:
        return list(pyframe_value) == list(dynamo_value) and all(
            same_objects(pyframe_value[key], dynamo_value[key]) for key in pyframe_value
        )
    return False


def same_locals(pyframe_locals, dynamo_locals):
    return list(pyframe_locals) == list(dynamo_locals) and all(
        same_objects(pyframe_locals[key], dynamo_locals[key]) for key in pyframe_locals
    )


def in_corpus(code):
    return code.co_filename in corpus.CORPUS_FILES


def test_entry_locals_match_dynamo_raw_hook():
    # Run 1: pyframe's callback, paired with CPython's PY_START oracle.
    _, pairs = record_entries(corpus.workload)
    pyframe_frames = collections.defaultdict(list)
    for pair in pairs:
        if in_corpus(pair.code):
            pyframe_frames[pair.code].append(pair)

    # Run 2: the same workload under Dynamo's raw hook.
    recorder = DynamoRecorder(wanted=in_corpus)
    with dynamo_raw_hook(recorder):
        corpus.workload()
    assert recorder.errors == []

    assert set(recorder.frames) == set(pyframe_frames), "the hooks saw different code"
    compared = set()
    problems = []
    for code, mine in pyframe_frames.items():
        name = label(code)
        where_defined = f"{name} (line {code.co_firstlineno})"
        entries = [locals_ for lasti, locals_ in recorder.frames[code] if lasti == UNSTARTED_LASTI]
        resumed = [lasti for lasti, _ in recorder.frames[code] if lasti != UNSTARTED_LASTI]
        # Frames pair up per code object in call order.
        if len(entries) != len(mine):
            problems.append(
                f"{where_defined}: pyframe saw {len(mine)} frames, Dynamo {len(entries)}"
            )
            continue
        if len(resumed) != EXPECTED_RESUMPTIONS.get(code.co_qualname, 0):
            problems.append(f"{where_defined}: Dynamo saw {len(resumed)} resumptions: {resumed}")
        for pair, dynamo_locals in zip(mine, entries, strict=True):
            where = f"{where_defined} call #{pair.call}"
            # pyframe against CPython: the claim pyframe makes, object for object.
            difference = locals_difference(pair.got, pair.want)
            if difference is not None:
                problems.append(f"{where}: pyframe differs from CPython: {difference}")
            expected = EXPECTED_DIFFERENCES.get(name)
            if expected is None:
                if not same_locals(pair.got, dynamo_locals):
                    problems.append(f"{where}: pyframe {pair.got!r} but Dynamo {dynamo_locals!r}")
                continue
            # A documented difference: Dynamo reports exactly what the table
            # says, and that really differs from CPython.
            if dynamo_locals != expected.dynamo_reports(pair.want):
                problems.append(
                    f"{where}: Dynamo reports {dynamo_locals!r}, the table expects "
                    f"{expected.dynamo_reports(pair.want)!r} ({expected.reason})"
                )
            if same_locals(pair.want, dynamo_locals):
                problems.append(f"{where}: documented difference did not happen: {expected.reason}")
            compared.add(name)
    assert problems == []
    # Every documented difference was met, so none is stale.
    assert compared == set(EXPECTED_DIFFERENCES)
    assert {
        code.co_qualname for code in pyframe_frames if code.co_qualname in EXPECTED_RESUMPTIONS
    } == set(EXPECTED_RESUMPTIONS)


# ---- (b) coexistence ----------------------------------------------------------


def _scaled(t, scale):
    return t * scale


def _scaled_plus_one(t, scale):
    return t * scale + 1


# Dynamo leaves this function out of the graph: each call is a real frame.
scaled = torch._dynamo.disable(_scaled)


def _sine(t):
    # Dynamo traces this into the graph: it never runs as a frame of its own.
    return t.sin()


def model(x, y):
    a = _sine(x) + y
    b = scaled(a, 2.0)
    return b.cos()


def test_torch_compile_under_pyframe():
    compiled = torch.compile(model, backend="eager")
    x, y = torch.arange(4.0), torch.ones(4)
    expected = model(x, y)
    seen = collections.defaultdict(list)

    def on_frame(frame):
        # Dynamo's code made from this file keeps its co_filename.
        if frame.f_code.co_filename == __file__:
            seen[frame.f_code].append(dict(frame.f_locals))

    with pyframe.callback(on_frame):
        assert current_evaluator() == "pyframe"
        first = compiled(x, y)  # compiles (unless an earlier test compiled model)
        assert current_evaluator() == "pyframe", "Dynamo did not put pyframe back"
        second = compiled(x, y)  # runs the cached code
        assert current_evaluator() == "pyframe"
    assert current_evaluator() == "cpython"
    assert torch.equal(first, expected) and torch.equal(second, expected)

    # Dynamo took model's frames: pyframe sees the code Dynamo runs instead,
    # in a frame holding model's own arguments.
    assert model.__code__ not in seen
    transformed = [
        entry.code for entry in dynamo_eval_frame._debug_get_cache_entry_list(model.__code__)
    ]
    assert len(transformed) == 1
    assert len(seen[transformed[0]]) == 2
    for entry in seen[transformed[0]]:
        assert list(entry) == ["x", "y"] and entry["x"] is x and entry["y"] is y
    # _sine became part of the graph: no frame ran it.
    assert _sine.__code__ not in seen
    # The frames Dynamo does not take reach pyframe's callback, entry locals
    # and all: the disabled function, once per call.
    scaled_frames = seen[_scaled.__code__]
    assert len(scaled_frames) == 2
    for entry in scaled_frames:
        assert list(entry) == ["t", "scale"]
        assert torch.equal(entry["t"], _sine(x) + y) and entry["scale"] == 2.0


def test_pyframe_replacement_inside_torch_compile():
    # A frame Dynamo does not take can still be replaced by pyframe.
    compiled = torch.compile(model, backend="eager")
    x, y = torch.arange(4.0), torch.ones(4)

    def on_frame(frame):
        if frame.f_code is _scaled.__code__:
            return pyframe.Compiled(_scaled_plus_one.__code__)
        return None

    with pyframe.callback(on_frame):
        result = compiled(x, y)
    assert torch.equal(result, ((x.sin() + y) * 2.0 + 1).cos())
    # Without a callback, pyframe's cached replacement is not used.
    assert torch.equal(compiled(x, y), model(x, y))


def work(n):
    return n + 1


def test_pyframe_over_dynamo_raw_hook():
    recorder = DynamoRecorder(wanted=lambda code: code is work.__code__)
    pyframe_saw = []

    def on_frame(frame):
        if frame.f_code is work.__code__:
            pyframe_saw.append(dict(frame.f_locals))

    with dynamo_raw_hook(recorder):
        assert current_evaluator() == "dynamo"
        work(1)
        with pyframe.callback(on_frame):
            assert current_evaluator() == "pyframe"
            work(2)
        assert current_evaluator() == "dynamo", "pyframe did not put Dynamo's function back"
        assert not pyframe.hook_installed()
        work(3)
    assert current_evaluator() == "cpython"
    assert recorder.errors == []
    assert pyframe_saw == [{"n": 2}]
    # pyframe ran work(2) with Dynamo's function, which it had replaced.
    assert [locals_["n"] for _, locals_ in recorder.frames[work.__code__]] == [1, 2, 3]


def _tripled(t):
    return t * 3


def _install_pyframe_inside(t, report):
    seen = []
    before = current_evaluator()
    with pyframe.callback(lambda frame: seen.append(frame.f_code)):
        inside = current_evaluator()
        result = _tripled(t)
    report.append((before, inside, current_evaluator(), seen.count(_tripled.__code__)))
    return result


# Dynamo leaves this frame alone but keeps its callback on for what it calls.
install_pyframe_inside = torch._dynamo.disable(_install_pyframe_inside, recursive=False)


def model_installing_pyframe(x, report):
    return install_pyframe_inside(x.sin(), report).cos()


def test_pyframe_installed_and_removed_while_compiled_code_runs():
    compiled = torch.compile(model_installing_pyframe, backend="eager")
    x = torch.arange(3.0)
    expected = (x.sin() * 3).cos()
    report = []
    assert torch.equal(compiled(x, report), expected)  # compiles
    assert torch.equal(compiled(x, report), expected)  # cached
    assert current_evaluator() == "cpython"
    # Both times Dynamo's function is installed in the helper (its callback
    # on for what the helper calls); pyframe goes over it, then puts it back.
    assert [tuple(evaluators) for *evaluators, _ in report] == [("dynamo", "pyframe", "dynamo")] * 2
    # pyframe saw the frame of _tripled both times.
    assert [calls for *_, calls in report] == [1, 1]


def test_debugger_pyframe_and_torch_compile(floorhook):
    # A pass-through function (a debugger's, say) installed first, pyframe
    # over it, Dynamo over both while compiled code runs.
    compiled = torch.compile(model, backend="eager")
    x, y = torch.arange(4.0), torch.ones(4)
    scaled_calls = []

    def on_frame(frame):
        if frame.f_code is _scaled.__code__:
            scaled_calls.append(frame.f_locals["scale"])

    floorhook.install()
    try:
        with pyframe.callback(on_frame):
            assert current_evaluator() == "pyframe"
            floorhook.reset_calls()
            result = compiled(x, y)
            # pyframe ran what Dynamo handed it with the debugger's function.
            assert floorhook.calls() > 0
            assert current_evaluator() == "pyframe"
        assert current_evaluator() == "floorhook"
    finally:
        floorhook.uninstall()
    assert current_evaluator() == "cpython"
    assert torch.equal(result, model(x, y))
    assert scaled_calls == [2.0]


def test_dynamo_removed_from_under_pyframe_drops_pyframe():
    """Dynamo removed before pyframe, out of order: Dynamo puts back the
    function it replaced (CPython's) over pyframe's, so pyframe's callback
    stops being called; the next set_callback() installs pyframe again."""
    seen = []

    def on_frame(frame):
        if frame.f_code is work.__code__:
            seen.append(frame.f_locals["n"])

    previous = dynamo_eval_frame.set_eval_frame(DynamoRecorder(wanted=lambda code: False))
    try:
        pyframe.set_callback(on_frame)
        try:
            assert current_evaluator() == "pyframe"
            dynamo_eval_frame.set_eval_frame(previous)
            assert current_evaluator() == "cpython"
            assert not pyframe.hook_installed()
            work(1)
            assert seen == []
            pyframe.set_callback(on_frame)
            assert current_evaluator() == "pyframe"
            work(2)
            assert seen == [2]
        finally:
            pyframe.set_callback(None)
    finally:
        dynamo_eval_frame.set_eval_frame(None)
    assert current_evaluator() == "cpython"


# ---- (c) regressions found with Dynamo, each in its own interpreter ---------------

# Every script prints this last; a crash prints nothing after it.
SURVIVED = "survived"

# Dynamo's raw hook without importing torch._dynamo (seconds faster): any
# object with ConvertFrameReturn's three attributes will do.
RAW_HOOK_PRELUDE = """
import types
import pyframe
from torch._C._dynamo import eval_frame

DEFAULT = eval_frame._FrameAction.DEFAULT
RUN = types.SimpleNamespace(
    frame_exec_strategy=eval_frame._FrameExecStrategy(DEFAULT, DEFAULT),
    apply_to_code=False,
    guarded_code=None,
)
"""


def run_script(tmp_path, source):
    script = tmp_path / "repro.py"
    script.write_text(textwrap.dedent(source))
    # cwd: the source tree's pyframe/ must not shadow the installed one.
    return subprocess.run(
        [sys.executable, "-X", "faulthandler", str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )


def assert_survived(done):
    assert done.returncode == 0 and done.stdout.rstrip().endswith(SURVIVED), (
        f"exit status {done.returncode}\n--- stdout\n{done.stdout[-2000:]}"
        f"\n--- stderr\n{done.stderr[-4000:]}"
    )


CODE_EXTRA_SCRIPTS = {
    # Dynamo stores its state on every code object its hook sees; CPython
    # calls each code-extra index's free function when the code dies, with
    # NULL for indices that hold nothing, pyframe's among them.
    "short-lived code seen by the raw hook": RAW_HOOK_PRELUDE
    + """
eval_frame.set_eval_frame(lambda frame, cache_entry, frame_state: RUN)
try:
    exec(compile("x = 1", "<short-lived>", "exec"), {})
finally:
    eval_frame.set_eval_frame(None)
print("survived", flush=True)
""",
    # The same at interpreter exit, for any program using torch.compile.
    "torch.compile, then exit": """
import pyframe
import torch

def add_one(x):
    return x + 1

print(torch.compile(add_one, backend="eager")(torch.ones(2)))
print("survived", flush=True)
""",
}


@pytest.mark.parametrize("source", CODE_EXTRA_SCRIPTS.values(), ids=CODE_EXTRA_SCRIPTS.keys())
def test_code_freed_after_dynamo_saw_it(tmp_path, source):
    assert_survived(run_script(tmp_path, source))


SET_CALLBACK_UNDER_DYNAMO_SCRIPTS = {
    # pyframe installed, Dynamo's function over it (its previous: pyframe's);
    # a new pyframe callback must not install pyframe over Dynamo's again,
    # whose previous is pyframe's: every frame would go round for ever.
    "raw hook": RAW_HOOK_PRELUDE
    + """
import os

def work():
    return 1

pyframe.set_callback(lambda frame: None)
eval_frame.set_eval_frame(lambda frame, cache_entry, frame_state: RUN)
try:
    pyframe.set_callback(lambda frame: None)
    work()
finally:
    eval_frame.set_eval_frame(None)
    pyframe.set_callback(None)
print("survived", flush=True)
# Skip interpreter teardown: test_code_freed_after_dynamo_saw_it covers it.
os._exit(0)
""",
    "nested pyframe.callback in a torch.compile'd function": """
import os
import pyframe
import torch

@torch._dynamo.disable(recursive=False)
def helper(x):
    with pyframe.callback(lambda frame: None):
        return x + 1

def fn(x):
    return helper(x * 2)

with pyframe.callback(lambda frame: None):
    print(torch.compile(fn, backend="eager")(torch.ones(2)))
print("survived", flush=True)
os._exit(0)  # as above
""",
}


@pytest.mark.parametrize(
    "source",
    SET_CALLBACK_UNDER_DYNAMO_SCRIPTS.values(),
    ids=SET_CALLBACK_UNDER_DYNAMO_SCRIPTS.keys(),
)
def test_set_callback_while_dynamo_is_over_pyframe(tmp_path, source):
    assert_survived(run_script(tmp_path, source))
