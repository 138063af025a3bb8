"""TorchDynamo's compiler on pyframe: pyframe.dynamo.compile next to torch.compile.

pyframe.dynamo.compile(fn, backend=...) runs TorchDynamo's own compiler
(bytecode analysis, guards, graph breaks, backends) with pyframe's PEP 523
hook as the frame layer instead of Dynamo's C eval_frame.  This compiles a
small function with a graph break both ways and shows that the backend is
handed the same FX graphs.

Run it with `python examples/dynamo_compile.py` where torch 2.13 and pyframe
are installed (CPU is enough).
"""

import torch

import pyframe
import pyframe.dynamo


def step(x, scale):
    hidden = torch.relu(x @ x.T) * scale
    print("  (a graph break: Dynamo runs this print eagerly)")
    return hidden.sum(dim=0) + 1


def compile_and_run(compile_fn, label):
    graphs = []

    def backend(graph_module, example_inputs):
        graphs.append(len(graph_module.graph.nodes))
        return graph_module.forward  # run the FX graph as it is

    compiled = compile_fn(step, backend=backend)
    x = torch.arange(6.0).reshape(2, 3)
    print(f"{label}:")
    results = [compiled(x, 0.5) for _ in range(3)]  # compiled once, then cached
    print(f"  {len(graphs)} graphs, FX nodes per graph: {graphs}")
    return results[-1], graphs


def main():
    native, native_graphs = compile_and_run(torch.compile, "torch.compile")
    torch._dynamo.reset()
    ours, our_graphs = compile_and_run(pyframe.dynamo.compile, "pyframe.dynamo.compile")
    assert torch.allclose(native, ours) and native_graphs == our_graphs
    print("same results and same graphs as torch.compile:", ours.tolist())
    entries = pyframe.cache_entries(step.__code__)
    print(f"pyframe caches {len(entries)} entry for step (Dynamo's code behind its guards)")
    assert not pyframe.hook_installed()


if __name__ == "__main__":
    main()
