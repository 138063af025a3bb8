"""Python's random module around torch.compile, natively and on pyframe.

Dynamo traces a call of random.random() by calling it (for an example
value) and makes the compiled code draw again when it runs; its C layer
saves the random module's state before calling Dynamo's callback and sets
it back afterwards, so the program's stream is the one eager code draws.
pyframe.dynamo's layer must do the same, at the same moment: each test runs
a program natively and under installed(), and compares what the program
drew and computed against eager Python.
"""

import random

import pytest

pytest.importorskip("torch", minversion="2.11")

import torch  # noqa: E402
import torch._dynamo.testing  # noqa: E402

import pyframe  # noqa: E402
import pyframe.dynamo  # noqa: E402

native_layer = torch._C._dynamo.eval_frame


@pytest.fixture(autouse=True)
def same_random_state_after(clean_dynamo):  # clean_dynamo: tests/conftest.py
    state = random.getstate()
    yield
    random.setstate(state)


def same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return a == b


def draws_after(call, *args):
    """call(*args)'s result after random.seed(1), and the next three draws."""
    random.seed(1)
    result = call(*args)
    return result, [random.random() for _ in range(3)]


def on_both_layers(fn, *args, backend="eager", **options):
    """[eager, native, pyframe]: fn's result and the random stream after
    the first (compiling) and the second (warm) compiled call."""
    runs = [draws_after(fn, *args)]
    for layer in ("native", "pyframe"):
        torch._dynamo.reset()
        if layer == "pyframe":
            pyframe.dynamo.install()
        counter = torch._dynamo.testing.CompileCounterWithBackend(backend)
        compiled = torch.compile(fn, backend=counter, **options)
        first = draws_after(compiled, *args)
        warm = draws_after(compiled, *args)
        runs.append((first, warm, counter.frame_count))
        pyframe.dynamo.uninstall()
    eager, native, ours = runs
    assert native[2] > 0, "nothing was compiled: the program tests nothing"
    return eager, native, ours


def assert_as_eager(fn, *args, **options):
    eager, native, ours = on_both_layers(fn, *args, **options)
    for layer in (native, ours):
        first, warm, _ = layer
        assert same(first[0], eager[0]) and first[1] == eager[1]
        assert same(warm[0], eager[0]) and warm[1] == eager[1]
    assert ours[2] == native[2]


def seeded_randn_times_randint(shape):
    torch.manual_seed(123)
    return torch.randn(shape) * random.randint(30, 100)


def test_a_random_value_fed_into_the_graph():
    # The compiling call gives eager's result: the draw Dynamo made while
    # tracing is given back before the compiled code draws.
    assert_as_eager(seeded_randn_times_randint, [2, 3])


def draws_around_item_breaks(x):
    r1 = random.random()
    y = x + random.uniform(10, 20)
    y.sum().item()
    r2 = random.randint(2, 18)
    y.sum().item()
    return y + r1, r2


def test_draws_around_graph_breaks():
    # .item() breaks the graph: the resume functions are compiled on the
    # first call too, each with its own draws to give back.
    assert_as_eager(draws_around_item_breaks, torch.tensor([[1.0, 2.0], [3.0, 4.0]]))


def consecutive_draws_before_the_graph(x):
    dim1 = random.randrange(start=0, stop=5)
    dim2 = random.randrange(start=0, stop=5)
    dim3 = random.randrange(start=1, stop=5)
    return x + 2, torch.zeros(dim1, dim2, dim3)


def test_consecutive_draws_before_the_graph():
    # Draws that decide shapes: a wrong stream builds a tensor of another
    # size (natively the sizes match eager's).
    assert_as_eager(consecutive_draws_before_the_graph, torch.tensor([[1.0, 2.0], [3.0, 4.0]]))


def test_draws_while_compiling_are_given_back_raising_or_not():
    def backend_drawing(graph_module, example_inputs):
        random.random()
        random.random()
        return graph_module.forward

    def backend_drawing_then_failing(graph_module, example_inputs):
        random.random()
        raise RuntimeError("this backend fails")

    def program(backend):
        compiled = torch.compile(lambda x: x + 1, backend=backend)

        def call():
            try:
                return compiled(torch.ones(2))
            except Exception as error:  # Dynamo wraps it: BackendCompilerFailed
                return type(error).__name__

        return draws_after(call)

    for backend in (backend_drawing, backend_drawing_then_failing):
        torch._dynamo.reset()
        native = program(backend)
        with pyframe.dynamo.installed():
            torch._dynamo.reset()
            ours = program(backend)
        assert same(ours[0], native[0])
        random.seed(1)
        assert ours[1] == native[1] == [random.random() for _ in range(3)]


def test_the_guard_complete_hook_keeps_its_draws():
    # Dynamo's C layer saves the state after the guard-complete hook, just
    # before its callback: what the hook draws on a hit or a miss is drawn.
    def hook(hit):
        random.random()
        return True

    def program():
        compiled = torch.compile(lambda x: x * 2, backend="eager")
        compiled(torch.ones(2))
        prior = native_layer.set_guard_complete_hook(hook)
        try:
            hit = draws_after(compiled, torch.ones(2))
            miss = draws_after(compiled, torch.ones(3, 3))
        finally:
            native_layer.set_guard_complete_hook(prior)
        return hit[1], miss[1]

    torch._dynamo.reset()
    native = program()
    with pyframe.dynamo.installed():
        torch._dynamo.reset()
        # (install() replaced the module's attribute: the hook goes to pyframe.)
        ours = program()
    random.seed(1)
    stream = [random.random() for _ in range(4)]
    assert native == (stream[1:4], stream[1:4])
    assert ours == native
