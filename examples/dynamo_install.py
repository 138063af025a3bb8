"""torch.compile itself on pyframe: pyframe.dynamo.install(), uninstall(), installed().

install() puts pyframe in place of TorchDynamo's C frame layer for the whole
process: torch.compile then runs unchanged, every option included, with what
it compiles cached in pyframe behind Dynamo's guards.  This compiles one
function on pyframe and natively and shows the backend gets the same graph.

Run it with `python examples/dynamo_install.py` where torch 2.11-2.15 and
pyframe are installed (CPU is enough); tests/with_torch runs it.
"""

import torch

import pyframe
import pyframe.dynamo


def step(x):
    return torch.relu(x) * 2 + 1


def graph_counter():
    """A torch.compile backend that counts the FX graphs it is handed."""
    graphs = []

    def backend(graph_module, example_inputs):
        graphs.append(len(graph_module.graph.nodes))
        return graph_module.forward  # run the FX graph as it is

    return graphs, backend


def on_pyframe(x):
    pyframe.dynamo.install()  # the whole process; a second call does nothing
    assert pyframe.dynamo.is_installed()
    graphs, backend = graph_counter()
    compiled = torch.compile(step, backend=backend)
    result = [compiled(x) for _ in range(3)]  # compiled once, then cached
    entries = pyframe.cache_entries(step.__code__)
    print(f"on pyframe: {len(graphs)} graph, {len(entries)} entry cached on step's code")
    pyframe.dynamo.uninstall()  # Dynamo's own C layer back, exactly
    assert not pyframe.dynamo.is_installed()
    return result[-1], graphs


def natively(x):
    torch._dynamo.reset()
    graphs, backend = graph_counter()
    result = torch.compile(step, backend=backend)(x)
    print(f"natively: {len(graphs)} graph")
    return result, graphs


def for_a_block(x):
    torch._dynamo.reset()
    with pyframe.dynamo.installed():  # install() for the block, uninstall() after it
        result = torch.compile(step, backend="eager")(x)
    assert not pyframe.dynamo.is_installed()
    return result


def with_compile(x):
    torch._dynamo.reset()
    # torch.compile(step, **options) after install().
    compiled = pyframe.dynamo.compile(step, backend="eager", dynamic=False)
    result = compiled(x)
    assert pyframe.dynamo.is_installed()
    pyframe.dynamo.uninstall()
    return result


def main():
    x = torch.arange(-2.0, 3.0)
    ours, our_graphs = on_pyframe(x)
    native, native_graphs = natively(x)
    assert torch.equal(ours, native) and our_graphs == native_graphs
    assert torch.equal(for_a_block(x), native)
    assert torch.equal(with_compile(x), native)
    print("same results and graphs as native torch.compile:", ours.tolist())
    assert not pyframe.hook_installed()


if __name__ == "__main__":
    main()
