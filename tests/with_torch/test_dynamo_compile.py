"""TorchDynamo's compiler on pyframe: pyframe.dynamo.compile against
torch.compile, case by case, in one process.

Each case runs the same calls through native torch.compile and through
pyframe.dynamo.compile (torch.compile with pyframe.dynamo installed;
torch._dynamo.reset() before each) with a backend that records the FX graphs
it is handed, and compares the outputs (with eager ones too), the number of
graphs and each graph's node count.  Every test uninstalls pyframe.dynamo
after it.
"""

import gc
import os
import subprocess
import sys
import tracemalloc
from dataclasses import dataclass

import pytest

torch = pytest.importorskip("torch", minversion="2.11")

import pyframe  # noqa: E402
import pyframe.dynamo  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_dynamo")  # tests/conftest.py


class RecordingBackend:
    """A backend that runs the graph as FX made it and records its size."""

    def __init__(self):
        self.graphs = []

    def __call__(self, graph_module, example_inputs):
        self.graphs.append(len(graph_module.graph.nodes))
        return graph_module.forward


@dataclass
class Case:
    make: object  # () -> the function or module to compile
    calls: list  # [(args, kwargs)]


def same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.allclose(a, b)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return a == b


T = torch.randn(4)
U = torch.randn(4)


def arithmetic(x, y):
    return (x * 2 + y).sin() / 3


def graph_break(x):
    y = x.cos()
    print("graph break")
    return y + 1


def make_closure():
    scale = torch.tensor(3.0)
    offset = torch.ones(4)

    def closed(x):
        return x * scale + offset

    return closed


def make_cell_mutation():
    total = torch.zeros(4)

    def accumulate(x):
        nonlocal total
        total = total + x
        return total * 2

    return accumulate


def signature(x, y=None, *extra, scale=2.0, **options):
    out = x * scale
    if y is not None:
        out = out + y
    for e in extra:
        out = out - e
    if options.get("negate"):
        out = -out
    return out


def python_loop(x, n):
    for i in range(n):
        x = x * 0.5 + i
    return x


class TinyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, x, scale=2.0):
        return torch.relu(self.linear(x)) * scale


def shapes(x):
    return (x * 2).sum() + x.shape[0]


def int_branch(x, mode):
    if mode > 1:
        return x + mode
    return x - mode


def inner(x):
    return x.exp() - 1


def middle(x):
    return inner(x) * inner(x + 1)


def nested(x):
    return middle(x) + inner(x)


def no_grad_fn(x):
    with torch.no_grad():
        y = x * 3
    return y + x


def breaks_inside(x):
    print("graph break in a callee")
    return x.tanh()


def calls_a_breaking_function(x):
    y = x + 1
    z = breaks_inside(y)
    return z * 2


def string_argument(x, name):
    return x + len(name) if name.startswith("k") else x - len(name)


@torch.compiler.disable
def disabled_helper(t):
    # Dynamo must not trace (or compile) what this calls either.
    return torch.sin(t).sum().item()


def uses_disabled(x):
    y = x * 2
    z = disabled_helper(y)
    return y + z


def two_models(x):
    return x.relu() * 5


CASES = {
    "tensor arithmetic": Case(lambda: arithmetic, [((T, U), {})] * 3),
    "graph break (print)": Case(lambda: graph_break, [((T,), {})] * 3),
    "closure over tensors": Case(make_closure, [((T,), {})] * 3),
    "closure mutating a cell": Case(make_cell_mutation, [((T,), {})] * 3),
    "kwargs, defaults and **extra, 4 ways": Case(
        lambda: signature,
        [
            ((T,), {}),
            ((T, U), {"scale": 3.0}),
            ((T, U, U, U), {}),
            ((T,), {"y": U, "negate": True}),
        ]
        * 2,
    ),
    "python loop": Case(lambda: python_loop, [((T, 3), {}), ((T, 3), {}), ((T, 5), {})]),
    "nn.Module forward": Case(
        lambda: (torch.manual_seed(0), TinyNet())[1], [((T,), {}), ((T,), {"scale": 3.0})] * 2
    ),
    "recompile for shapes, then dynamic shapes": Case(
        lambda: shapes,
        [((torch.ones(n),), {}) for n in (2, 3, 4, 5, 3)],
    ),
    "branch on a python int": Case(lambda: int_branch, [((T, m), {}) for m in (0, 2, 3, 0)]),
    "nested calls": Case(lambda: nested, [((T,), {})] * 3),
    "torch.no_grad": Case(lambda: no_grad_fn, [((T.requires_grad_(False),), {})] * 3),
    "graph break inside a called function": Case(
        lambda: calls_a_breaking_function, [((T,), {})] * 3
    ),
    "12 distinct str arguments (recompile limit)": Case(
        lambda: string_argument,
        [((T, name), {}) for name in [f"k{'x' * i}" for i in range(12)] * 2],
    ),
    "torch.compiler.disable helper": Case(lambda: uses_disabled, [((T,), {})] * 3),
}


def run(compile_fn, case, backend):
    fn = case.make()
    compiled = compile_fn(fn, backend=backend)
    return [compiled(*args, **kwargs) for args, kwargs in case.calls]


def eager(case):
    fn = case.make()
    return [fn(*args, **kwargs) for args, kwargs in case.calls]


@pytest.mark.parametrize("name", list(CASES))
def test_same_outputs_and_graphs_as_torch_compile(name):
    case = CASES[name]
    want = eager(case)

    native_backend = RecordingBackend()
    native = run(torch.compile, case, native_backend)
    torch._dynamo.reset()
    ours_backend = RecordingBackend()
    ours = run(pyframe.dynamo.compile, case, ours_backend)

    assert same(native, want) and same(ours, want)
    assert native_backend.graphs, "torch.compile made no graph: the case tests nothing"
    assert ours_backend.graphs == native_backend.graphs
    assert not pyframe.hook_installed()


def test_the_recompile_limit_stops_compiling_as_dynamo_does():
    case = CASES["12 distinct str arguments (recompile limit)"]
    backend = RecordingBackend()
    run(pyframe.dynamo.compile, case, backend)
    assert len(backend.graphs) == torch._dynamo.config.recompile_limit == 8


def test_two_backends_each_compile_their_own_graphs():
    def per_backend(compile_fn):
        first, second = RecordingBackend(), RecordingBackend()
        a = compile_fn(arithmetic, backend=first)
        b = compile_fn(arithmetic, backend=second)
        c = compile_fn(graph_break, backend=second)
        outputs = [a(T, U), b(T, U), a(T, U), c(T), b(T, U), c(T)]
        return outputs, first.graphs, second.graphs

    native = per_backend(torch.compile)
    torch._dynamo.reset()
    ours = per_backend(pyframe.dynamo.compile)
    assert pyframe.dynamo.is_installed()
    assert same(ours[0], native[0])
    assert ours[1:] == native[1:]
    assert len(ours[1]) == 1 and len(ours[2]) == 3  # arithmetic; + graph_break in two


def test_decorator_form_and_torch_dynamo_reset():
    backend = RecordingBackend()

    @pyframe.dynamo.compile(backend=backend)
    def decorated(x):
        return x * 4

    assert same(decorated(T), T * 4)
    assert same(decorated(T), T * 4)
    assert len(backend.graphs) == 1
    torch._dynamo.reset()  # forgets pyframe.dynamo's entries too
    decorated(T)
    assert len(backend.graphs) == 2


def test_bad_input():
    with pytest.raises(TypeError, match="function or an nn.Module; got a int"):
        pyframe.dynamo.compile(3, backend="eager")


def test_importing_pyframe_does_not_import_torch():
    result = subprocess.run(
        [sys.executable, "-c", "import sys, pyframe; print('torch' in sys.modules)"],
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.abspath(__file__)),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


WARM_CALLS = 100_000


def test_nothing_leaks_in_100000_warm_calls():
    backend = RecordingBackend()

    def trivial(x):
        return x + 1

    compiled = pyframe.dynamo.compile(trivial, backend=backend)
    x = torch.ones(2)
    for _ in range(1000):  # compile and warm up
        compiled(x)
    gc.collect()
    tracked = (trivial.__code__, x, compiled, backend)
    before = [sys.getrefcount(obj) for obj in tracked]
    tracemalloc.start()
    try:
        for _ in range(WARM_CALLS // 2):
            compiled(x)
        gc.collect()
        first, _ = tracemalloc.get_traced_memory()
        for _ in range(WARM_CALLS // 2):
            compiled(x)
        gc.collect()
        second, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [sys.getrefcount(obj) for obj in tracked] == before
    assert second - first < 16 * 1024, f"traced memory grew by {second - first} bytes"
    assert backend.graphs == [3]
