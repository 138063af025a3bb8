"""Training under torch.compile on pyframe: pyframe.dynamo.installed() against
native TorchDynamo, in one process.

Each case is a program that seeds torch, builds a small model, compiles what
a training loop compiles (the forward, the optimizer's step, the backward
through compiled autograd) and trains for a few steps.  It runs natively and
then under `installed()`, Dynamo reset before each, and the two runs must
agree bit for bit on every step's loss and on the parameters left at the end
(the same graphs run the same kernels on the same inputs), and on what Dynamo
reports (dynamo_training.dynamo_counts: graphs reaching the backend and their
compile ids, frames, graph breaks, recompiles and their reasons, compiled
autograd's captures).  Every case makes Dynamo compile natively, and the
graph-break and recompile cases break and recompile natively: a case where
nothing happens proves nothing.

The aot_eager backend (AOTAutograd's forward and backward graphs, run
eagerly) runs everywhere; inductor only where PYFRAME_TEST_SLOW=1 (tox's
-models envs), since it compiles for seconds a graph on the CPU.  Inductor
generates the same code for the same graph, and the run on pyframe loads the
native run's kernels from inductor's cache: the comparison stays exact (on
one thread, both_ways).
"""

import contextlib

import pytest

pytest.importorskip("torch", minversion="2.11")

import dynamo_training as training  # noqa: E402
import torch  # noqa: E402
from dynamo_training import Recorder, Trained, parameters_of  # noqa: E402

import pyframe  # noqa: E402
import pyframe.dynamo  # noqa: E402

native_layer = torch._C._dynamo.eval_frame

STEPS = 4


@pytest.fixture(autouse=True)
def clean_dynamo():
    pyframe.dynamo.uninstall()
    training.reset()
    yield
    pyframe.dynamo.uninstall()
    training.reset()
    assert not pyframe.hook_installed()
    assert native_layer.get_eval_frame_callback() is None


def both_ways(program, backend="aot_eager", warm_up=False):
    """`program(recorder)` natively, then on pyframe: the same Trained and
    the same counts.  Returns the native counts, for the case to check that
    it tested what it says.  `warm_up`: run it once natively before, for a
    program whose first run imports modules while Dynamo's callback is set
    (Dynamo is asked about each frame of those imports, in the first run
    only)."""
    runs = []
    # Inductor's CPU code sums some gradients (an embedding's) with atomic
    # adds across threads, so their last bits differ from run to run, natively
    # too (a parameter of the transformer by 1e-10 in CI): one thread makes
    # every run's arithmetic the same, and the comparison exact.  The thread
    # count its kernels are generated for is pinned too (cpp.threads): torch
    # 2.11's FX graph cache does not key on torch.get_num_threads(), so a
    # kernel compiled for two threads earlier (the warm-up's, another test's)
    # would otherwise be reused.
    threads = torch.get_num_threads()
    pinned = contextlib.nullcontext()
    if backend == "inductor":
        torch.set_num_threads(1)
        pinned = torch._inductor.config.patch({"cpp.threads": 1})
    try:
        with pinned:
            if warm_up:
                training.reset()
                program(Recorder(backend))
            for install in (False, True):
                training.reset()
                recorder = Recorder(backend)
                with pyframe.dynamo.installed() if install else contextlib.nullcontext():
                    trained = program(recorder)
                runs.append((trained, training.dynamo_counts(recorder)))
    finally:
        torch.set_num_threads(threads)
    (native, native_counts), (ours, our_counts) = runs
    assert native.differences(ours) == []
    assert our_counts == native_counts
    assert native_counts["graphs"] > 0, "no graph reached the backend natively: nothing tested"
    assert all(map(torch.isfinite, map(torch.tensor, native.losses))), native.losses
    return native_counts


def fit(model, forward, batches, loss, step=None, optimizer=None):
    """Trains `model`, calling `forward` (it, or what compiles it) on each
    batch; `step` (default: the optimizer's own) updates the parameters."""
    optimizer = optimizer or torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for inputs, target in batches:
        value = loss(forward(inputs), target)
        optimizer.zero_grad()
        value.backward()
        (step or optimizer.step)()
        losses.append(value.item())
    return Trained(losses, parameters_of(model))


MODELS = {
    "MLP": (training.MLP, training.regression_batches, training.mse),
    "transformer": (training.Transformer, training.token_batches, training.next_token_loss),
}
slow = pytest.mark.skipif(not training.SLOW, reason=training.SLOW_REASON)
BACKENDS = ["aot_eager", pytest.param("inductor", marks=slow)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(MODELS))
def test_training(name, backend):
    make, batches, loss = MODELS[name]

    def program(recorder):
        torch.manual_seed(0)
        model = make()
        return fit(model, torch.compile(model, backend=recorder), batches([8] * STEPS), loss)

    counts = both_ways(program, backend)
    assert counts["graph breaks"] == counts["recompiles"] == 0, counts


class Breaking(training.MLP):
    """The MLP, its forward broken in three graphs: an explicit break, then a
    branch on a tensor's value."""

    def forward(self, x):
        h = self.layers[:2](x)
        torch._dynamo.graph_break()
        h = self.layers[2:4](h)
        if h.mean() > 0:
            h = h * 2
        return self.layers[4:](h)


def test_graph_breaks_in_a_training_forward():
    def program(recorder):
        torch.manual_seed(0)
        model = Breaking()
        batches = training.regression_batches([8] * STEPS)
        return fit(model, torch.compile(model, backend=recorder), batches, training.mse)

    counts = both_ways(program)
    assert counts["graph breaks"] >= 1 and counts["graphs"] >= 3, counts


def test_recompiles_when_the_batch_size_changes():
    # The second size recompiles with the batch dimension dynamic (automatic
    # dynamic shapes); the third runs that graph.
    def program(recorder):
        torch.manual_seed(0)
        model = training.MLP()
        batches = training.regression_batches([8, 8, 4, 4, 6, 6])
        return fit(model, torch.compile(model, backend=recorder), batches, training.mse)

    counts = both_ways(program)
    assert counts["recompiles"] >= 1 and counts["recompile reasons"], counts


def test_recompiles_on_train_and_eval():
    # Dropout is on in training only: Dynamo guards on the module's mode, and
    # the evaluation between training steps (no_grad) compiles again.
    def program(recorder):
        torch.manual_seed(0)
        model = training.Transformer()
        compiled = torch.compile(model, backend=recorder)
        batches = training.token_batches([4] * 6)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        losses = []
        for i, (tokens, target) in enumerate(batches):
            if i % 3 == 2:
                model.eval()
                with torch.no_grad():
                    losses.append(training.next_token_loss(compiled(tokens), target).item())
                model.train()
                continue
            trained = fit(model, compiled, [(tokens, target)], training.next_token_loss,
                          optimizer=optimizer)  # fmt: skip
            losses += trained.losses
        return Trained(losses, parameters_of(model))

    counts = both_ways(program)
    assert counts["recompiles"] >= 1 and counts["recompile reasons"], counts


def test_activation_checkpointing_in_the_compiled_forward():
    # torch.utils.checkpoint (non-reentrant) around each block: Dynamo traces
    # it as a higher-order op, and the backward recomputes the block.
    def program(recorder):
        torch.manual_seed(0)
        model = training.Transformer(checkpoint=True)
        batches = training.token_batches([4] * STEPS)
        return fit(model, torch.compile(model, backend=recorder), batches,
                   training.next_token_loss)  # fmt: skip

    counts = both_ways(program)
    assert counts["graph breaks"] == 0, counts


def test_autocast_bfloat16_on_the_cpu():
    def program(recorder):
        torch.manual_seed(0)
        model = training.Transformer()
        compiled = torch.compile(model, backend=recorder)

        def forward(tokens):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return compiled(tokens)

        return fit(model, forward, training.token_batches([4] * STEPS), training.next_token_loss)

    counts = both_ways(program)
    assert counts["graph breaks"] == 0, counts


def test_a_compiled_optimizer_step():
    # As PyTorch's compiled-optimizer recipe has it: the step in a compiled
    # function, the model's forward and backward eager.
    def program(recorder):
        torch.manual_seed(0)
        model = training.MLP()
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

        @torch.compile(backend=recorder)
        def step():
            optimizer.step()

        batches = training.regression_batches([8] * STEPS)
        return fit(model, model, batches, training.mse, step=step, optimizer=optimizer)

    # The optimizer's step breaks its graph itself (torch._dynamo.graph_break()
    # in torch.optim), natively as here.
    both_ways(program)


def compiled_autograd_context(compiler_fn):
    """torch._dynamo.compiled_autograd's own context manager, which hands each
    captured backward graph to `compiler_fn`: `_enable` in torch 2.13 and 2.15
    (made private when torch._dynamo.config.compiled_autograd became the way
    to turn it on; `enable` before)."""
    ca = torch._dynamo.compiled_autograd
    return (ca._enable if hasattr(ca, "_enable") else ca.enable)(compiler_fn)


def compiled_autograd_program(how):
    """The MLP trained with compiled autograd turned on `how`: by Dynamo's
    config flag around a compiled training step (forward and backward), or by
    compiled autograd's context manager around the backward of a compiled
    forward."""

    def program(recorder):
        torch.manual_seed(0)
        model = training.MLP()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

        def train_step(inputs, target):
            loss = training.mse(model(inputs), target)
            loss.backward()
            return loss

        losses = []
        batches = training.regression_batches([8] * STEPS)
        if how == "config":
            with torch._dynamo.config.patch(compiled_autograd=True):
                compiled = torch.compile(train_step, backend=recorder)
                for inputs, target in batches:
                    optimizer.zero_grad()
                    losses.append(compiled(inputs, target).item())
                    optimizer.step()
        else:
            forward = torch.compile(model, backend=recorder)
            for inputs, target in batches:
                optimizer.zero_grad()
                loss = training.mse(forward(inputs), target)
                with compiled_autograd_context(torch.compile(backend=recorder)):
                    loss.backward()
                optimizer.step()
                losses.append(loss.item())
        return Trained(losses, parameters_of(model))

    return program


@pytest.mark.parametrize("how", ["config", "context manager"])
def test_compiled_autograd(how):
    # The backward is captured whole by compiled autograd and compiled by
    # Dynamo with the same backend (compile ids "!n/...").  The first capture
    # imports sympy's modules and more with Dynamo's callback set: hundreds of
    # frames Dynamo is asked about once a process, hence the warm-up.
    counts = both_ways(compiled_autograd_program(how), warm_up=True)
    assert counts["compiled autograd captures"] > 0, counts
    assert any(i.startswith("!") for i in counts["compile ids"]), counts
