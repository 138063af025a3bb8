"""Shared test helpers.  Version flags mirror cframe/compat.h's PYFRAME_PY31X."""

import contextlib
import dis
import gc
import importlib.util
import inspect
import os
import sys
import tracemalloc
import types
from collections import defaultdict
from dataclasses import dataclass

import pytest

import pyframe

# CPython 3.12 changed what a PEP 523 function must do (cframe/compat.h,
# PYFRAME_PY312): gh-96421 made the evaluator clear and pop the frame it is
# handed; on 3.11 the caller that pushed it does (PYFRAME_CALLER_POPS_FRAME).
# 3.11 also has no sys.monitoring (PEP 669, 3.12): its entry-locals oracle is
# sys.settrace's 'call' event (record_entries below).
PY312 = sys.version_info >= (3, 12)
CALLER_POPS_FRAME = not PY312
PY313 = sys.version_info >= (3, 13)
# CPython 3.12 counts each entry to its eval loop against a C recursion limit
# (GH-107535: 1500, 2 an entry), and under any PEP 523 function every Python
# call enters it: RecursionError comes at about 750 nested calls, not 1000.
HOOK_LOWERS_RECURSION_LIMIT = PY312 and not PY313
PY314 = sys.version_info >= (3, 14)
PY315 = sys.version_info >= (3, 15)
# Specialization mode (pyframe.set_specialization) runs on CPython 3.12+
# (cframe/compat.h, PYFRAME_HAS_SPECIALIZATION_MODE); PYFRAME_TEST_SPECIALIZATION=1
# runs every test in it there.
HAS_SPECIALIZATION_MODE = PY312
NO_SPECIALIZATION_MODE = (
    "no specialization mode on 3.11: its CALL runs a Python function's frame without "
    "calling its vectorcall (cframe/compat.h; tests/test_specialization_probe.py)"
)
IN_SPECIALIZATION_MODE = (
    HAS_SPECIALIZATION_MODE and os.environ.get("PYFRAME_TEST_SPECIALIZATION") == "1"
)

# Modules in syntax 3.11 cannot parse: a skip marker would come too late.
collect_ignore = [] if PY312 else ["test_entry_locals_pep695.py"]

# CPython 3.14 loads the ints 0-255 with LOAD_SMALL_INT (gh-125837): they are
# no longer in co_consts.
_LOAD_SMALL_INT = dis.opmap.get("LOAD_SMALL_INT")
_LOAD_CONST = dis.opmap["LOAD_CONST"]


def with_const(code, old, new):
    """A copy of `code` in which every load of the constant `old` loads `new`.

    Where `old` is a small int that 3.14+ loads with LOAD_SMALL_INT (so it is
    not in co_consts), those loads become LOAD_CONST of `new`, appended to
    co_consts; both instructions are one code unit without caches.
    """
    consts = tuple(new if type(c) is type(old) and c == old else c for c in code.co_consts)
    raw = bytearray(code.co_code)
    small = _LOAD_SMALL_INT is not None and type(old) is int and 0 <= old < 256
    loads = [
        i
        for i in range(0, len(raw), 2)
        if small and raw[i : i + 2] == bytes((_LOAD_SMALL_INT, old))
    ]
    if loads:
        assert len(consts) < 256, "a LOAD_CONST of this index needs EXTENDED_ARG"
        for i in loads:
            raw[i], raw[i + 1] = _LOAD_CONST, len(consts)
        consts += (new,)
    return code.replace(co_consts=consts, co_code=bytes(raw))


@pytest.fixture(autouse=True)
def no_leaked_hook():
    """Every test starts and ends with no pyframe callback on this thread.

    A test that fails half-way must not leave a callback installed: later
    tests would run under it and lie.
    """
    pyframe.set_callback(None)
    pyframe.reset()
    try:
        yield
    finally:
        leaked = pyframe.set_callback(None)
        pyframe.reset()
    assert leaked is None, f"test left a pyframe callback installed: {leaked!r}"
    assert not pyframe.hook_installed(), "test left pyframe's PEP 523 hook installed"


@pytest.fixture(autouse=True)
def specialization_mode():
    """With PYFRAME_TEST_SPECIALIZATION=1 (3.12+), every test runs in
    specialization mode: switched on before it, off after it, failing or not."""
    if not IN_SPECIALIZATION_MODE:
        yield
        return
    pyframe.set_specialization(True)
    try:
        yield
    finally:
        pyframe.set_specialization(False)


def dynamo_pth_installed():
    """Whether pyframe-dynamo.pth (PYFRAME_DYNAMO=1 at interpreter start) is
    in site-packages: a wheel install has it, an editable one does not."""
    import site

    return any(
        os.path.exists(os.path.join(p, "pyframe-dynamo.pth")) for p in site.getsitepackages()
    )


@pytest.fixture
def clean_dynamo():
    """For the TorchDynamo tests (with_torch/, which use it): Dynamo reset on
    its own C layer before the test; after it, the same, and no Dynamo
    callback left behind.  Imports torch only when a test uses it."""
    import torch

    import pyframe.dynamo

    pyframe.dynamo.uninstall()
    torch._dynamo.reset()
    yield
    pyframe.dynamo.uninstall()
    torch._dynamo.reset()
    assert not pyframe.hook_installed()
    assert torch._C._dynamo.eval_frame.get_eval_frame_callback() is None


# ---- tools/floorhook: another PEP 523 function, for chaining tests ----------

FLOORHOOK_BUILDER = os.path.join(
    os.path.dirname(__file__), os.pardir, "tools", "floorhook", "build.py"
)


def load_floorhook(directory):
    """Builds tools/floorhook (a pass-through PEP 523 function that counts
    frames) into `directory` and imports it."""
    spec = importlib.util.spec_from_file_location("floorhook_build", FLOORHOOK_BUILDER)
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    return builder.load(str(directory))


@pytest.fixture(scope="module")
def floorhook(tmp_path_factory):
    """tools/floorhook, uninstalled after the module if a test left it in.

    PYFRAME_TEST_FLOORHOOK_DIR names a directory where it was built already:
    tools/dist.py check-wheel runs the tests where no compiler is.
    """
    prebuilt = os.environ.get("PYFRAME_TEST_FLOORHOOK_DIR")
    module = load_floorhook(prebuilt or tmp_path_factory.mktemp("floorhook"))
    yield module
    if module.installed():
        module.uninstall()


# ---- entry-locals recording: pyframe against CPython's own f_locals --------


@dataclass
class EntryPair:
    """One frame as pyframe saw it before it ran, next to what CPython showed
    for the same frame at its PY_START event (its first traced line)."""

    code: types.CodeType
    call: int  # 0 for the first frame of `code` in the run, 1 for the next...
    got: dict  # dict(frame.f_locals) taken in pyframe's callback
    want: dict  # dict(frame.f_locals) taken at PY_START
    got_mapping: object  # frame.f_locals itself, as pyframe returned it
    want_mapping: object  # frame.f_locals itself, as CPython returned it
    localsplus: list  # frame.localsplus taken in pyframe's callback
    f_lasti: int
    is_generator: bool

    @property
    def qualname(self):
        return self.code.co_qualname

    @property
    def optimized(self):
        """False for module, class body and exec'd module code, whose
        f_locals is a mapping of their own."""
        return bool(self.code.co_flags & inspect.CO_OPTIMIZED)

    def __repr__(self):
        return f"<EntryPair {self.qualname} call #{self.call}>"


def _free_tool_id():
    # DEBUGGER_ID first; skip ids someone else (coverage, a debugger) holds.
    candidates = (sys.monitoring.DEBUGGER_ID, sys.monitoring.PROFILER_ID, 2, 3, 4)
    for tool in candidates:
        if sys.monitoring.get_tool(tool) is None:
            return tool
    pytest.skip("no free sys.monitoring tool id")


@contextlib.contextmanager
def monitoring(callbacks):
    """Registers sys.monitoring callbacks ({"PY_START": function, ...}) under
    a free tool id and turns their events on for the block; yields True.
    3.11 has no sys.monitoring (PEP 669 is 3.12's): the block runs without
    it and this yields False, for tests to check what it saw only then."""
    if not PY312:
        yield False
        return
    tool = _free_tool_id()
    events = sys.monitoring.events
    sys.monitoring.use_tool_id(tool, "pyframe-tests")
    try:
        wanted = 0
        for name, function in callbacks.items():
            sys.monitoring.register_callback(tool, getattr(events, name), function)
            wanted |= getattr(events, name)
        sys.monitoring.set_events(tool, wanted)
        try:
            yield True
        finally:
            sys.monitoring.set_events(tool, 0)
    finally:
        for name in callbacks:
            sys.monitoring.register_callback(tool, getattr(events, name), None)
        sys.monitoring.free_tool_id(tool)


@contextlib.contextmanager
def at_first_traced_line(record):
    """Call record(code, frame) at each frame's first traced line while the
    block runs: a sys.monitoring PY_START callback on 3.12+, on 3.11 a
    sys.settrace 'call' event at the RESUME that starts a frame (as in
    record_entries).  Frames of this context manager's own exit are seen
    too: `record` should look for the code it wants."""
    if PY312:

        def on_start(code, offset):
            record(code, sys._getframe(1))

        with monitoring({"PY_START": on_start}):
            yield
        return
    previous = sys.gettrace()
    sys.settrace(_settrace_call_at_start(record))
    try:
        yield
    finally:
        sys.settrace(previous)


def _settrace_call_at_start(record):
    """A sys.settrace function for 3.11, which has no sys.monitoring: it calls
    record(code, frame) at the 'call' event of the RESUME that starts a frame
    (oparg & 3 == 0; 1-3 resume a frame after a yield or an await, or throw
    into it, and fire 'call' too).  MAKE_CELL and COPY_FREE_VARS run before
    that RESUME as before 3.12's PY_START, so f_locals there is the same."""
    resume = dis.opmap["RESUME"]

    def on_call(frame, event, arg):
        if event == "call":
            raw = frame.f_code.co_code
            lasti = frame.f_lasti
            if raw[lasti] == resume and raw[lasti + 1] & 3 == 0:
                record(frame.f_code, frame)
        return None  # no line events

    return on_call


# Set by record_entries_traced(): the 3.11 oracle on any version.
_use_settrace = [False]


def record_entries_traced(func, *args, **kwargs):
    """record_entries() with 3.11's oracle (sys.settrace 'call' at the RESUME
    that starts a frame) on every version, so that 3.12+ can show it agrees
    with PY_START."""
    _use_settrace[0] = True
    try:
        return record_entries(func, *args, **kwargs)
    finally:
        _use_settrace[0] = False


def record_entries(func, *args, skip=(), **kwargs):
    """Run func(*args, **kwargs) with a pyframe callback and CPython's own
    view of each frame's first traced line both active (a sys.monitoring
    PY_START callback; on 3.11 a sys.settrace 'call' event at the RESUME
    that starts the frame); return (result, [EntryPair]).

    Frames are paired per code object, in the order each recorder met them:
    pyframe sees a frame when it is pushed, PY_START fires when its RESUME
    runs, and the n-th frame of a code object one saw is the n-th the other
    saw.  For generators, coroutines and async generators PY_START waits for
    the first next()/send(): func must start them in the order it made them,
    and before it changes what their closures hold.  Pairs come in the order
    pyframe first met each code object.  An exception from func propagates
    after both recorders are removed.  The callback returns pyframe.SKIP for
    the code objects in `skip`, and neither recorder keeps their frames.
    """
    seen = defaultdict(list)  # code -> [(dict, mapping, localsplus, f_lasti, is_generator)]
    oracle = defaultdict(list)  # code -> [(dict, mapping)]
    # While pyframe's callback runs, Python code it triggers (a custom
    # mapping's methods, say) is invisible to pyframe: PY_START must skip it.
    inside = [False]
    # By identity: equal code objects (two compiles of one source) are not the same code.
    skip_ids = {id(code) for code in skip}

    # Both recorders make only C-level calls (dict(), list.append, attribute
    # reads), so neither runs Python frames that one would see and the other not.
    def on_frame(frame):
        if id(frame.f_code) in skip_ids:
            return pyframe.SKIP
        inside[0] = True
        mapping = frame.f_locals
        seen[frame.f_code].append(
            (dict(mapping), mapping, frame.localsplus, frame.f_lasti, frame.is_generator)
        )
        inside[0] = False

    def on_start(code, frame):
        # on_frame's own frame starts before it can raise the flag.
        if inside[0] or code is own_code or id(code) in skip_ids:
            return
        mapping = frame.f_locals
        oracle[code].append((dict(mapping), mapping))

    own_code = on_frame.__code__
    # No Python frame may start between switching one recorder on and the
    # other (nor between switching them off): only C calls here.
    if not PY312 or _use_settrace[0]:
        previous = sys.gettrace()
        sys.settrace(_settrace_call_at_start(on_start))
        try:
            with pyframe.callback(on_frame):
                result = func(*args, **kwargs)
        finally:
            sys.settrace(previous)
    else:

        def on_py_start(code, offset):
            on_start(code, sys._getframe(1))

        tool = _free_tool_id()
        sys.monitoring.use_tool_id(tool, "pyframe-tests")
        try:
            sys.monitoring.register_callback(tool, sys.monitoring.events.PY_START, on_py_start)
            sys.monitoring.set_events(tool, sys.monitoring.events.PY_START)
            try:
                with pyframe.callback(on_frame):
                    result = func(*args, **kwargs)
            finally:
                sys.monitoring.set_events(tool, 0)
        finally:
            sys.monitoring.register_callback(tool, sys.monitoring.events.PY_START, None)
            sys.monitoring.free_tool_id(tool)

    pairs = []
    for code in [*seen, *(code for code in oracle if code not in seen)]:
        mine, theirs = seen.get(code, []), oracle.get(code, [])
        if len(mine) != len(theirs):
            raise AssertionError(
                f"{code.co_qualname}: pyframe intercepted {len(mine)} frame(s) but "
                f"CPython started {len(theirs)} (PY_START, or 'call' at RESUME 0 on 3.11); "
                f"the frames cannot be paired"
            )
        for call, (record, (want, want_mapping)) in enumerate(zip(mine, theirs, strict=True)):
            got, got_mapping, slots, lasti, is_gen = record
            pairs.append(
                EntryPair(code, call, got, want, got_mapping, want_mapping, slots, lasti, is_gen)
            )
    return result, pairs


def _short(value):
    try:
        text = repr(value)
    except Exception as exc:  # a repr that fails must not hide the real finding
        text = f"<{type(value).__name__} with failing repr: {exc!r}>"
    return text if len(text) <= 80 else text[:77] + "..."


def locals_difference(got, want):
    """Describe the first way `got` (pyframe) differs from `want` (CPython):
    a missing key, an extra key, a different object, or a different order.
    None when they agree key for key, object for object, in order."""
    for key, value in want.items():
        if key not in got:
            return f"missing key {key!r} (CPython has {_short(value)})"
        if got[key] is not value:
            return (
                f"different object for {key!r}: pyframe has {_short(got[key])}, "
                f"CPython has {_short(value)}"
            )
    for key, value in got.items():
        if key not in want:
            return f"extra key {key!r} (pyframe has {_short(value)})"
    for position, (mine, theirs) in enumerate(zip(got, want, strict=True)):
        if mine != theirs:
            return (
                f"different order at position {position}: pyframe has {mine!r}, "
                f"CPython has {theirs!r} (pyframe: {list(got)}, CPython: {list(want)})"
            )
    return None


# ---- reference counts -------------------------------------------------------

# PEP 683 (CPython 3.12) made None, True, False, the small ints and interned
# strings immortal: their reference counts never change there, so a
# reference pyframe takes or gives back once too often shows on 3.11 alone
# (a refilled f_locals dict once kept a reference to None per variable).
# Tests that count references count these too, through refcounts().
INTERNED = sys.intern("pyframe test: an interned str")
IMMORTAL_FROM_312 = (None, True, False, -5, 0, 1, 7, 255, 256, INTERNED)


@contextlib.contextmanager
def switch_interval(seconds):
    """The GIL passed between threads every `seconds` in the block (to
    interleave them finely), CPython's interval back after it."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(seconds)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def refcounts(objects):
    """sys.getrefcount of each of `objects`, then of each of IMMORTAL_FROM_312.
    Floats: a list of ints would hold references to the small ints it counts
    (a count of 7, say), and the second count would see the first."""
    return [float(sys.getrefcount(x)) for x in (*objects, *IMMORTAL_FROM_312)]


def assert_flat(run, tracked, calls):
    """Runs `run(calls)` twice under tracemalloc, after the caller warmed it
    up: the reference counts of `tracked` (and of IMMORTAL_FROM_312) and the
    traced memory must not grow (16 KiB of slack for the allocator's own
    tables)."""
    gc.collect()
    before = refcounts(tracked)
    tracemalloc.start()
    try:
        run(calls)
        gc.collect()
        first = float(tracemalloc.get_traced_memory()[0])  # not a small int: see refcounts()
        run(calls)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - first
    finally:
        tracemalloc.stop()
    assert refcounts(tracked) == before
    assert grown < 16 * 1024, f"traced memory grew by {grown:.0f} bytes"
