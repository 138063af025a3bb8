"""Generated torch programs: torch.compile on pyframe against native Dynamo.

Hypothesis writes small programs (dynamo_programs.py: closures, cells,
generators, try/except/finally, `with`, globals, `random`, graph breaks,
nested compiled calls, torch.compiler.disable, raised exceptions) and a call
sequence whose shapes, dtypes and argument types change, so that Dynamo
recompiles.  Each program runs in a child process forked from the test's
(forked.py), three times, each from the same state (random.seed,
torch.manual_seed, its module executed afresh, torch._dynamo.reset(),
Dynamo's counters cleared): eagerly, compiled by native torch.compile, and
compiled under pyframe.dynamo.installed().  For
every call a run records its result or exception (type and message), what
it printed, and the next draws of Python's and torch's random streams after
it; at the end, the program's globals (G, LOG) and Dynamo's counts: frames
compiled and ops in their graphs (a CompileCounter backend, which runs each
graph as FX made it), every counter of torch._dynamo.utils.counters (frames
total/ok, graph breaks by reason, resumes, unimplemented, stats) and the
recompilations by code and reason (guard failures).

pyframe must agree with native exactly, on everything.  Both should agree
with eager on everything but the counts; where native does not (Dynamo's
business, not pyframe's), the summary counts the program under
`native != eager`, and pyframe is compared with native only.  Tensors are
compared exactly (dtype, shape, values; NaN equal to NaN): the CompileCounter
backend runs the very ops eager code runs.

PYFRAME_FUZZ_EXAMPLES sets the number of programs; without it the run is
short and derandomized (CI: the same programs every time), with it
Hypothesis draws new ones each run (`make fuzz`: tox -e fuzz-dynamo).  A
difference is shrunk by Hypothesis and printed with the program's source
and calls.  The summary line at the end says how many programs ran (shrinking
included) and what they did.
"""

import contextlib
import gc
import io
import itertools
import math
import os
import random
import re
import time
import types
from collections import Counter
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, example, given, note, settings

pytest.importorskip("torch", minversion="2.11")

import dynamo_programs  # noqa: E402
import forked  # noqa: E402
import torch  # noqa: E402
import torch._dynamo.testing  # noqa: E402
import torch._dynamo.utils  # noqa: E402
from dynamo_programs import Arguments, Program  # noqa: E402

import pyframe  # noqa: E402
import pyframe.dynamo  # noqa: E402

EXAMPLES = int(os.environ.get("PYFRAME_FUZZ_EXAMPLES", 100))
DERANDOMIZE = "PYFRAME_FUZZ_EXAMPLES" not in os.environ
SEED = 20240
CHILD_TIMEOUT = 300  # seconds for one program's three runs (a few, normally)

# What the programs so far did, printed at the end of the module (and every
# PROGRESS programs in long runs, to the terminal).
SUMMARY = Counter()
PROGRESS = 1000
_terminal = []  # (reporter, capture manager, start time) while the module runs


def report(text):
    if _terminal:
        reporter, capture, started = _terminal[0]
        counts = ", ".join(f"{key}: {value}" for key, value in sorted(SUMMARY.items()))
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"{text}{counts} ({time.monotonic() - started:.0f} s)")
            reporter.flush()  # to a pipe too (tox's), for long runs


@pytest.fixture(autouse=True, scope="module")
def summary(request):
    SUMMARY.clear()
    SUMMARY.update({"pyframe != native": 0, "native != eager": 0})
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        _terminal.append((reporter, capture, time.monotonic()))
    yield
    if SUMMARY["programs"]:
        report("\ndynamo fuzz: ")
    _terminal.clear()


@pytest.fixture(autouse=True)
def same_random_states_after(clean_dynamo):  # clean_dynamo: tests/conftest.py
    state = random.getstate(), torch.get_rng_state()
    yield
    random.setstate(state[0])
    torch.set_rng_state(state[1])


# ---- one run ------------------------------------------------------------------

# Addresses and ids (not a float's digits), which differ between runs of the
# same program.
_ADDRESS = re.compile(r"0x[0-9a-f]+|(?<![.\d])\d{9,}\b")


def normalized(text):
    return _ADDRESS.sub("#", text)


@dataclass
class Call:
    outcome: tuple  # ("returned", value) or ("raised", type name, message)
    printed: str
    draws: tuple  # Python's and torch's random streams after the call
    grad: bool  # torch.is_grad_enabled() after the call


@dataclass
class Run:
    calls: list
    globals: tuple  # G, LOG at the end
    counts: dict  # empty for eager runs


def outcome(function, *args):
    try:
        return ("returned", function(*args))
    except Exception as error:
        return ("raised", type(error).__name__, normalized(str(error)))


RUNS = itertools.count()


def unequal_code(code, run):
    """`code`, and the code objects of its functions in it, each with one
    more constant, which nothing loads: `run`.  Equal code objects share
    what Dynamo caches by code (an lru_cache of their instructions, which
    hold the first one's nested code objects), so each run must bring code
    equal to no other run's, as a program in a fresh process would."""
    consts = tuple(
        unequal_code(const, run) if isinstance(const, types.CodeType) else const
        for const in code.co_consts
    )
    return code.replace(co_consts=consts + (f"run {run}",))


def call(f, arguments):
    args = arguments.make(torch)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        result = outcome(f, *args)
    draws = (random.random(), random.random(), torch.rand(2).tolist())
    return Call(result, printed.getvalue(), draws, torch.is_grad_enabled())


def counts(counter):
    counters = {
        category: {normalized(str(key)): value for key, value in sorted(values.items())}
        for category, values in sorted(torch._dynamo.utils.counters.items())
        if values
    }
    recompiles = sorted(
        (code.co_name, normalized(str(reason)))
        for code, reasons in torch._dynamo.utils.guard_failures.items()
        for reason in reasons
    )
    return {
        "frames compiled": counter.frame_count,
        "ops": counter.op_count,
        "counters": counters,
        "recompiles": recompiles,
    }


def run(program, mode):
    """The program's calls, "eager" or compiled ("native", "pyframe"); in a
    child process that runs no collection but Dynamo's own (compare())."""
    torch._dynamo.reset()
    # What an earlier run left behind: native Dynamo (torch 2.13, 2.15) does
    # not restore grad mode when compiled code raises inside `with
    # torch.no_grad()` (eager does), and a run that starts with grad mode
    # off traces the block without its two set_grad_enabled calls.
    torch.set_grad_enabled(True)
    # Dynamo's collections (gc.collect(1) after each compile) see only what
    # this run makes: what earlier runs left is frozen.
    gc.freeze()
    torch._dynamo.utils.counters.clear()
    counter = torch._dynamo.testing.CompileCounter()
    compiled = mode != "eager"

    def compile_(function):
        return torch.compile(function, backend=counter) if compiled else function

    random.seed(SEED)
    torch.manual_seed(SEED)
    namespace = {"COMPILE": compile_}
    exec(unequal_code(compile(program.source, "<generated>", "exec"), next(RUNS)), namespace)
    f = compile_(namespace["f"])
    calls = [call(f, arguments) for arguments in program.calls]
    return Run(
        calls,
        (namespace["G"], list(namespace["LOG"])),
        counts(counter) if compiled else {},
    )


# ---- comparing runs -----------------------------------------------------------


def same(a, b):
    if isinstance(a, torch.Tensor):
        if not isinstance(b, torch.Tensor) or (a.dtype, a.shape) != (b.dtype, b.shape):
            return False
        if a.is_floating_point():
            return bool(((a == b) | (a.isnan() & b.isnan())).all())
        return torch.equal(a, b)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


def differences(got, want, counts=True):
    """What differs between two runs, as lines."""
    found = []
    for index, (g, w) in enumerate(zip(got.calls, want.calls, strict=True)):
        where = f"call {index}"
        if not same(g.outcome, w.outcome):
            found.append(f"{where}: {g.outcome!r} != {w.outcome!r}")
        if g.printed != w.printed:
            found.append(f"{where} printed {g.printed!r} != {w.printed!r}")
        if g.draws != w.draws:
            found.append(f"{where}: random draws after it {g.draws!r} != {w.draws!r}")
        if g.grad != w.grad:
            found.append(f"{where}: grad mode after it {g.grad!r} != {w.grad!r}")
    if not same(got.globals, want.globals):
        found.append(f"globals G, LOG: {got.globals!r} != {want.globals!r}")
    if counts:
        for key, value in want.counts.items():
            if got.counts[key] != value:
                found.append(f"{key}: {got.counts[key]!r} != {value!r}")
    return found


def tally(native):
    return {
        "programs": 1,
        "calls": len(native.calls),
        "calls raising": sum(call.outcome[0] == "raised" for call in native.calls),
        "programs with no graph": int(native.counts["frames compiled"] == 0),
        "frames compiled": native.counts["frames compiled"],
        "graph breaks": sum(native.counts["counters"].get("graph_break", {}).values()),
        "recompiles": len(native.counts["recompiles"]),
    }


def compare(program):
    """Run in a child process: the program eagerly, natively and on pyframe;
    what the runs did, and how they differ (as text)."""
    torch.set_num_threads(1)  # no OpenMP threads in a forked child
    # No automatic collection: Dynamo drops a cache entry when an object its
    # guards hold weakly dies, so a collection that falls due at another
    # moment changes the recompilations (native against native, too).  The
    # child is short-lived; what it inherited stays frozen, untouched.
    gc.disable()
    eager = run(program, "eager")
    native = run(program, "native")
    with pyframe.dynamo.installed():
        ours = run(program, "pyframe")
    problems = differences(ours, native)
    return {
        "tally": tally(native),
        "native != eager": differences(native, eager, counts=False),
        "pyframe != native": problems,
        "eager": repr(eager) if problems else None,
    }


# By hand, once: every feature in one program; the compiling call of f draws
# from `random` in its graph (pyframe.dynamo once lost those draws).
EVERYTHING = Program(
    dynamo_programs.PRELUDE.format(g=1)
    + """
@COMPILE
def helper(t, k):
    global G
    G = G + 1
    return t * k + random.random()


@torch.compiler.disable(recursive=False)
def plain(t, k):
    global G
    return helper(t, k) + 1


def f(x, n):
    global G
    t1 = x + random.randint(0, 3)
    s2 = len(LOG)
    def inner3(a4):
        global G
        nonlocal t1
        t1 = t1 * 2 + a4
        return t1.sin()
    t5 = inner3(x)
    def gen6(k7):
        global G
        for j8 in range(k7):
            yield t1 + j8
    t9 = sum(gen6(2), x)
    try:
        with Ctx("w10", True) as w10:
            if t9.sum() > 0:
                raise ValueError("e11", n)
            print("p12", x.sum().item())
        torch._dynamo.graph_break()
    except (KeyError, ZeroDivisionError) as err13:
        LOG.append(type(err13).__name__)
    finally:
        LOG.append("finally14")
    with torch.no_grad():
        t15 = plain(t5, n) + helper(x, G)
    if n > 1:
        raise RuntimeError("e16", s2 // (n - 2))
    return (t15, t9 + torch.rand(()), w10)
""",
    (
        Arguments((3,), "float32", 1),
        Arguments((3,), "float32", 2),
        Arguments((2, 3), "float64", 0.5),
        Arguments((), "int64", 3),
    ),
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=DERANDOMIZE,
    database=None,
    print_blob=True,  # a failure says how to draw its program again: @reproduce_failure
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(dynamo_programs.programs())
@example(EVERYTHING)
def test_generated_programs_compile_on_pyframe_as_natively(program):
    note(f"program:{program!r}")
    try:
        found = forked.call(compare, program, timeout=CHILD_TIMEOUT)
    except forked.ChildFailed:
        SUMMARY["programs"] += 1
        SUMMARY["children failed"] += 1
        SUMMARY.setdefault("first failure at program", SUMMARY["programs"])
        raise
    SUMMARY.update(found["tally"])
    SUMMARY["native != eager"] += bool(found["native != eager"])
    if SUMMARY["programs"] % PROGRESS == 0:
        report("dynamo fuzz so far: ")
    if found["pyframe != native"]:
        SUMMARY["pyframe != native"] += 1
        SUMMARY.setdefault("first failure at program", SUMMARY["programs"])
        note(f"eager: {found['eager']}")
        raise AssertionError("pyframe != native:\n" + "\n".join(found["pyframe != native"]))


def test_the_generator_writes_what_it_promises():
    """Drawn 200 times, programs hold every feature the docstrings list, and
    they compile (they are not run here: that is the test above)."""
    features = {
        "nonlocal": "nonlocal ",
        "generator": "yield ",
        "try/except": "except ",
        "finally": "finally:",
        "with Ctx": "with Ctx(",
        "grad mode": "with torch.",
        "global write": "G = G + ",
        "random": "random.random()",
        "torch.rand": "torch.rand(",
        ".item()": ".item()",
        "print": "print(",
        "graph_break()": "torch._dynamo.graph_break()",
        "tensor branch": ".sum() > 0:",
        "helper": "helper(",
        "plain": "plain(",
        "non-recursive disable": "disable(recursive=False)",
        "raise": "raise ",
    }
    seen, argument_kinds = Counter(), set()

    @settings(max_examples=200, deadline=None, database=None, derandomize=True)
    @given(dynamo_programs.programs())
    def collect(program):
        compile(program.source, "<generated>", "exec")
        body = program.source.split("def f(x, n):")[1]
        for feature, text in features.items():
            # Each feature is in f's body, but plain's decorator.
            where = program.source if feature == "non-recursive disable" else body
            seen[feature] += text in where
        argument_kinds.update((a.dtype, type(a.n)) for a in program.calls)
        if len({(a.shape, a.dtype, type(a.n)) for a in program.calls}) > 1:
            seen["changing arguments"] += 1

    collect()
    missing = [feature for feature in [*features, "changing arguments"] if seen[feature] < 5]
    assert not missing, f"features in fewer than 5 of 200 programs: {missing} ({seen})"
    assert {kind for _, kind in argument_kinds} == {int, float, bool}
