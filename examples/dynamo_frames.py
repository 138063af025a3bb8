"""Which frames does TorchDynamo see?  pyframe shows them, with their entry locals.

TorchDynamo, the front end of torch.compile, is a PEP 523 frame evaluation
hook, as pyframe is: while a compiled function runs, Dynamo's callback is
handed each Python frame before it runs.  It takes the first one, traces what
it calls into an FX graph instead of running it, and runs its own bytecode in
the frame's place; it is handed frames again only where it gave up tracing
(a graph break) and for what it left out on purpose (torch.compiler.disable).

This example runs a tiny nn.Module and a small function twice:

1. Eagerly, under pyframe: the frames of this file each call starts, with
   their entry locals, as a tree.  These are the frames Dynamo's hook would be
   handed if its callback were on for the whole call; under torch.compile it is
   handed the first of each tree and traces the rest.  Library frames (torch.nn
   and the like) are only counted.

2. Through torch.compile(backend="eager"), with pyframe installed first.  For
   the duration of each compiled call Dynamo installs its function over
   pyframe's and hands pyframe, as the function it replaced, every frame it
   lets run: Dynamo's compiled code in place of the frame it took, the
   functions left out of the graph, the resume functions Dynamo makes for the
   code after a graph break, and the FX graph's forward.  Frames traced into
   the graph never run, so they do not appear.  The first call also runs
   Dynamo's own Python (the compiler): only counted.

pyframe's entry locals equal CPython's own f_locals at each frame's first
line; tests/with_torch/test_dynamo.py compares them with the f_locals Dynamo's raw
hook reports (equal for function frames; Dynamo reports {} for module-level
code and class bodies).

Run it with `python examples/dynamo_frames.py` where torch and pyframe are
installed (CPU is enough).
"""

import collections
import sys

import torch
from torch._C._dynamo import eval_frame as dynamo_eval_frame

import pyframe

# ---- the program --------------------------------------------------------------


class TinyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, x, scale=2.0):
        hidden = self.linear(x)
        return activation(hidden) * scale


def activation(t):
    return torch.relu(t) + 0.5


@torch.compiler.disable
def describe(t, label):
    # Python floats and strings: Dynamo leaves this out of its graph.
    return f"{label}: mean {t.mean().item():.3f}"


def pipeline(x, steps=2):
    y = x
    for _ in range(steps):
        y = activation(y) * 0.9
    note = describe(y, "after the loop")  # a graph break: the rest is a new graph
    return y.sum() + 1, note


# ---- the report ---------------------------------------------------------------


def is_ours(code):
    """Code of this file (Dynamo's code made from it keeps its file name), or
    an FX graph's generated forward."""
    return code.co_filename == __file__ or code.co_filename.startswith("<eval_with_key>")


def short(value):
    if isinstance(value, torch.Tensor):
        return f"Tensor{tuple(value.shape)}"
    if isinstance(value, torch.nn.Module):
        return f"{type(value).__name__}()"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def library(code):
    """A frame's package, for counting: torch.nn, torch._dynamo, contextlib..."""
    path = code.co_filename.replace("\\", "/")
    if "/torch/" in path:
        parts = path.rsplit("/torch/", 1)[1].split("/")
        return "torch." + parts[0].removesuffix(".py") if len(parts) > 1 else "torch"
    name = path.rsplit("/", 1)[-1]
    return name.removesuffix(".py").strip("<>") or path


class Recorder:
    """A pyframe callback that keeps our frames with their entry locals and
    counts the others per package."""

    def __init__(self):
        self.frames = []  # (depth, code, {name: short value})
        self.others = collections.Counter()

    def __call__(self, frame):
        code = frame.f_code
        if not is_ours(code):
            self.others[library(code)] += 1
            return None
        depth = 0
        caller = frame.f_back
        while caller is not None:
            depth += is_ours(caller.f_code)
            caller = caller.f_back
        locals_ = {name: short(value) for name, value in frame.f_locals.items()}
        self.frames.append((depth, code, locals_))
        return None


def print_frames(recorder, describe_code=lambda code: ""):
    top = min((depth for depth, _, _ in recorder.frames), default=0)
    for depth, code, locals_ in recorder.frames:
        arguments = ", ".join(f"{name}={value}" for name, value in locals_.items())
        note = describe_code(code)
        print(f"  {'  ' * (depth - top)}{code.co_qualname}({arguments}){note}")
    if recorder.others:
        counts = ", ".join(f"{name} {n}" for name, n in recorder.others.most_common(6))
        more = len(recorder.others) - 6
        print(f"  + {sum(recorder.others.values())} library frames: {counts}", end="")
        print(f" and {more} more packages" if more > 0 else "")


def run(label, function, *args, describe_code=lambda code: "", summary_only=False):
    recorder = Recorder()
    with pyframe.callback(recorder):
        result = function(*args)
    print(f"{label}")
    if summary_only:
        print(f"  {len(recorder.frames)} frames of ours, ", end="")
        print(f"{sum(recorder.others.values())} library frames")
    else:
        print_frames(recorder, describe_code)
    return result


def dynamo_origin(originals):
    """Labels for the frames Dynamo made: its compiled code stands in for the
    code objects in `originals`, found in their Dynamo caches."""
    made = {}
    for original in originals:
        for entry in dynamo_eval_frame._debug_get_cache_entry_list(original):
            made[entry.code] = f"    <- Dynamo's code for {original.co_qualname}"

    def describe_code(code):
        if code in made:
            return made[code]
        if code.co_name.startswith("torch_dynamo_resume_in_"):
            return "    <- Dynamo's code for the rest of a function after a graph break"
        if code.co_filename.startswith("<eval_with_key>"):
            return "    <- the FX graph, run by the backend"
        if code.co_filename == __file__:
            return "    <- runs as itself: not in the graph"
        return ""

    return describe_code


def main():
    torch.manual_seed(0)
    net = TinyNet()
    x = torch.randn(2, 4)

    print("== 1. eager: the frames each call starts")
    print("   (under torch.compile Dynamo takes the first of ours and traces the rest)\n")
    eager_net = run("net(x):", net, x)
    eager_pipeline = run("pipeline(x):", pipeline, x)

    compiled_net = torch.compile(net, backend="eager")
    compiled_pipeline = torch.compile(pipeline, backend="eager")
    print("\n== 2. torch.compile: the frames Dynamo lets run\n")
    run("net(x), first call (compiles):", compiled_net, x, summary_only=True)
    run("pipeline(x), first call (compiles):", compiled_pipeline, x, summary_only=True)
    describe_code = dynamo_origin([TinyNet.forward.__code__, pipeline.__code__])
    again_net = run("\nnet(x), cached:", compiled_net, x, describe_code=describe_code)
    again_pipeline = run(
        "\npipeline(x), cached:", compiled_pipeline, x, describe_code=describe_code
    )

    assert torch.allclose(again_net, eager_net)
    assert torch.allclose(again_pipeline[0], eager_pipeline[0])
    assert again_pipeline[1] == eager_pipeline[1]
    print("\ncompiled results match eager ones:", again_pipeline[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
