"""Frames that start while one hop of __torch_function__ is being skipped.

torch.overrides.redispatch_function (torch._C._skip_one_hop_torch_function)
sets a thread flag and calls the function; the function's first
has_torch_function check takes the flag and answers False.  Dynamo's
C layer runs a frame that starts while the flag is set as it is, with no
cache lookup and no callback (pytorch#177530): Dynamo's compiling would take
the flag, and its compiled code assumes the check it traced.  The frames
that frame calls are Dynamo's again.  Each test runs one program natively
and under installed() and compares.
"""

import pytest

pytest.importorskip("torch", minversion="2.11")

import torch  # noqa: E402
import torch._dynamo.testing  # noqa: E402
from torch.overrides import handle_torch_function, has_torch_function  # noqa: E402

import pyframe  # noqa: E402
import pyframe.dynamo  # noqa: E402

if not hasattr(torch._C, "_peek_should_skip_torch_function"):
    pytest.skip("this torch has no one-hop skip of __torch_function__", allow_module_level=True)


@pytest.fixture(autouse=True)
def no_hop_left(clean_dynamo):  # clean_dynamo: tests/conftest.py
    yield
    assert not torch._C._peek_should_skip_torch_function()


def on_both_layers(program):
    """[native, pyframe]: program() run after a reset, on each layer."""
    results = []
    for layer in ("native", "pyframe"):
        torch._dynamo.reset()
        if layer == "pyframe":
            pyframe.dynamo.install()
        try:
            results.append(program())
        finally:
            pyframe.dynamo.uninstall()
    return results


def recording_backend(graphs):
    """A backend that records, each time a graph runs, the functions it calls."""

    def backend(gm, example_inputs):
        nodes = [node for node in gm.graph.nodes if node.op == "call_function"]
        called = [getattr(node.target, "__name__", str(node.target)) for node in nodes]

        def run(*args):
            graphs.append(called)
            return gm(*args)

        return run

    return backend


def inner(x):
    pending = torch._C._peek_should_skip_torch_function()
    has_torch_function((x,))  # takes the flag, as redispatched functions do
    return torch.sin(x), pending


def hop_to_inner(x):
    return torch._C._skip_one_hop_torch_function(inner, (), (x,), {})


# Dynamo runs it without looking at it, and compiles what it calls.
hop_to_inner = torch.compiler.disable(hop_to_inner, recursive=False)


def test_a_frame_started_under_the_hop_is_not_compiled():
    def program():
        counter = torch._dynamo.testing.CompileCounter()

        @torch.compile(backend=counter)
        def outer(x):
            return hop_to_inner(x)[0].cos()

        result, pending = outer(torch.ones(2))[0], hop_to_inner(torch.ones(2))[1]
        return result.tolist(), pending, counter.frame_count

    native, ours = on_both_layers(program)
    assert native[1] is True, "the flag was not set when inner started: this tests nothing"
    assert ours == native


def test_a_frame_started_under_the_hop_does_not_run_its_cached_code():
    def program():
        graphs = []
        backend = recording_backend(graphs)
        torch.compile(inner, backend=backend)(torch.ones(2))  # an entry for inner

        @torch.compile(backend=backend)
        def outer(x):
            return hop_to_inner(x)[0] + 1

        outer(torch.ones(2))
        del graphs[:]
        outer(torch.ones(2))  # warm: inner's entry would hold
        return graphs

    native, ours = on_both_layers(program)
    assert ["sin"] not in native
    assert ours == native


class Redispatching(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args, kwargs=None):
        return torch.overrides.redispatch_function(func, types, args, kwargs or {})


def add_overridable(a, b):
    if has_torch_function((a, b)):
        return handle_torch_function(add_overridable, (a, b), a, b)
    torch._dynamo.graph_break()
    return a + b


def test_redispatch_through_a_graph_break():
    def program():
        counter = torch._dynamo.testing.CompileCounter()

        @torch.compile(backend=counter)
        def fn(x, y):
            return add_overridable(x, y)

        x = torch.tensor([1.0]).as_subclass(Redispatching)
        y = torch.tensor([2.0]).as_subclass(Redispatching)
        return fn(x, y).as_subclass(torch.Tensor).tolist(), counter.frame_count

    native, ours = on_both_layers(program)
    assert native[0] == [3.0]
    assert ours == native
