"""pyframe.dynamo.install(specialization=True): pyframe's specialization mode
under TorchDynamo (CPython 3.12+).  The code Dynamo skips runs with
pyframe's hook stepped aside while compiled code runs; what Dynamo does is
the same as natively; uninstall() switches off the mode install() switched
on, and only that."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch", minversion="2.11")

import torch  # noqa: E402
from conftest import (  # noqa: E402
    HAS_SPECIALIZATION_MODE,
    IN_SPECIALIZATION_MODE,
    NO_SPECIALIZATION_MODE,
    dynamo_pth_installed,
)
from torch._dynamo.utils import counters  # noqa: E402

import pyframe  # noqa: E402
import pyframe.dynamo  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_dynamo")  # tests/conftest.py
needs_the_mode = pytest.mark.skipif(not HAS_SPECIALIZATION_MODE, reason=NO_SPECIALIZATION_MODE)
# Under PYFRAME_TEST_SPECIALIZATION=1 the mode is on around every test.
mode_off_around_tests = pytest.mark.skipif(
    IN_SPECIALIZATION_MODE, reason="the mode is on around every test here"
)


# Run in a fresh process: once Dynamo's own callback has raised in this one
# (other tests make it), its C layer leaves its PEP 523 function installed
# for good (torch 2.11-2.15), pyframe's hook chains to it, and the mode then
# never steps aside.
ASIDE_PROGRAM = """
import torch, pyframe, pyframe.dynamo
from pyframe import _cframe

def aside_probe():
    # Whether this frame runs with pyframe's hook stepped aside.
    return _cframe._specialization_aside()

def with_a_probe_between_graphs(x):
    y = x + 1
    torch._dynamo.graph_break()
    return y, aside_probe()

for specialization in (True, False):
    torch._dynamo.reset()
    with pyframe.dynamo.installed(specialization=specialization):
        torch._dynamo.eval_frame.skip_code(aside_probe.__code__)
        fn = torch.compile(with_a_probe_between_graphs, backend="eager")
        print([fn(torch.ones(2))[1] for _ in range(3)], pyframe.specialization_enabled())
print(pyframe.specialization_enabled())
"""


@needs_the_mode
def test_code_dynamo_skips_runs_aside_while_compiled_code_runs():
    env = dict(os.environ, PYFRAME_DYNAMO="0")
    env.pop("PYFRAME_TEST_SPECIALIZATION", None)
    result = subprocess.run(
        [sys.executable, "-c", ASIDE_PROGRAM], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:3] == [
        "[True, True, True] True",
        "[False, False, False] False",
        "False",
    ]


# Two threads in compiled code at once: both callbacks are Dynamo's, with
# one cache, so the code Dynamo skips steps aside in either while the other
# is inside compiled code too (barriers inside the skipped code keep both
# there while the probes look).
THREADS_ASIDE_PROGRAM = """
import threading
import torch, pyframe, pyframe.dynamo
from pyframe import _cframe

both_in = threading.Barrier(2, timeout=60)

def probe_frame():
    # Whether this frame, skipped, starts with pyframe's hook stepped aside.
    return _cframe._specialization_aside()

def aside_probe():
    both_in.wait()
    aside = probe_frame()
    both_in.wait()  # neither leaves compiled code before both have probed
    return aside

def with_a_probe_between_graphs(x):
    y = x + 1
    torch._dynamo.graph_break()
    return y * 2, aside_probe()

results = {}

def worker(name, fn):
    results[name] = [fn(torch.ones(2) * i) for i in range(20)]

with pyframe.dynamo.installed(specialization=True):
    torch._dynamo.eval_frame.skip_code(aside_probe.__code__)
    torch._dynamo.eval_frame.skip_code(probe_frame.__code__)
    fn = torch.compile(with_a_probe_between_graphs, backend="eager")
    threads = [threading.Thread(target=worker, args=(name, fn)) for name in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
for name in "ab":
    values = [y.tolist() for y, _ in results[name]]
    print(values == [[(i + 1) * 2.0] * 2 for i in range(20)], any(a for _, a in results[name][1:]))
print(torch._dynamo.utils.counters["frames"]["ok"])
"""


@needs_the_mode
def test_code_dynamo_skips_runs_aside_in_threads_running_compiled_code_at_once():
    env = dict(os.environ, PYFRAME_DYNAMO="0")
    env.pop("PYFRAME_TEST_SPECIALIZATION", None)
    result = subprocess.run(
        [sys.executable, "-c", THREADS_ASIDE_PROGRAM],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[:2] == ["True True", "True True"]
    assert int(lines[2]) >= 2  # the function and its resume function, compiled


def summarize(rows):
    # Standard-library Python between graphs: code Dynamo skips.
    text = json.dumps(rows, sort_keys=True)
    return len(textwrap.fill(text, 20))


def with_graph_breaks(x, rows):
    y = x.sin() + 1
    n = int(y.sum().item())
    m = summarize(rows)
    torch._dynamo.graph_break()
    return y * (n + m)


def graph_break_program():
    counters.clear()
    compiled = []

    def backend(gm, example_inputs):
        compiled.append(len(gm.graph.nodes))
        return gm.forward

    fn = torch.compile(with_graph_breaks, backend=backend)
    rows = [{"k": i, "v": [i] * i} for i in range(5)]
    outputs = [fn(torch.ones(3) * i, rows).tolist() for i in range(4)]
    outputs.append(fn(torch.ones(5), rows[:2]).tolist())  # another shape: recompiles
    return (
        outputs,
        compiled,
        dict(counters["frames"]),
        sum(counters["graph_break"].values()),
        dict(counters["recompiles"]) if "recompiles" in counters else {},
    )


@needs_the_mode
def test_graph_breaks_in_the_mode_give_what_native_gives():
    torch._dynamo.reset()
    native = graph_break_program()
    torch._dynamo.reset()
    with pyframe.dynamo.installed(specialization=True):
        assert pyframe.specialization_enabled()
        ours = graph_break_program()
    assert ours == native
    assert native[1], "no graph reached the backend"


@needs_the_mode
@mode_off_around_tests
def test_uninstall_switches_off_only_the_mode_install_switched_on():
    pyframe.dynamo.install(specialization=True)
    try:
        assert pyframe.specialization_enabled()
        pyframe.dynamo.install()  # again: changes nothing
        assert pyframe.specialization_enabled()
    finally:
        pyframe.dynamo.uninstall()
    assert not pyframe.specialization_enabled()

    pyframe.set_specialization(True)  # the program's own
    try:
        with pyframe.dynamo.installed(specialization=True):
            assert pyframe.specialization_enabled()
        assert pyframe.specialization_enabled()
    finally:
        pyframe.set_specialization(False)


@needs_the_mode
@mode_off_around_tests
def test_installed_then_asked_for_the_mode_switches_it_on_until_uninstall():
    with pyframe.dynamo.installed():
        assert not pyframe.specialization_enabled()
        with pyframe.dynamo.installed(specialization=True):  # installed already
            assert pyframe.specialization_enabled()
        assert pyframe.specialization_enabled()  # the inner block uninstalled nothing
    assert not pyframe.specialization_enabled()


@pytest.mark.skipif(HAS_SPECIALIZATION_MODE, reason="CPython 3.12+ has the mode")
def test_on_311_asking_for_the_mode_raises_and_installs_nothing():
    with pytest.raises(NotImplementedError):
        pyframe.dynamo.install(specialization=True)
    assert not pyframe.dynamo.is_installed()
    assert torch._C._dynamo.eval_frame.set_eval_frame.__module__ != "pyframe.dynamo._frame_layer"


def test_specialization_must_be_true_or_false():
    with pytest.raises(TypeError, match=r"specialization=True or False; got str 'yes'"):
        pyframe.dynamo.install(specialization="yes")
    assert not pyframe.dynamo.is_installed()


@needs_the_mode
def test_the_environment_variable_asks_for_the_mode():
    if not dynamo_pth_installed():
        pytest.skip("pyframe-dynamo.pth is not installed (an editable install?)")
    script = textwrap.dedent("""
        import torch, pyframe, pyframe.dynamo
        fn = torch.compile(lambda x: x * 3, backend="eager")
        on = pyframe.specialization_enabled()
        print(pyframe.dynamo.is_installed(), on, fn(torch.ones(1)).tolist())
    """)
    for value, expected in (("1", "True True [3.0]"), ("0", "True False [3.0]")):
        env = dict(os.environ, PYFRAME_DYNAMO="1", PYFRAME_DYNAMO_SPECIALIZATION=value)
        env.pop("PYFRAME_TEST_SPECIALIZATION", None)
        result = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == expected
