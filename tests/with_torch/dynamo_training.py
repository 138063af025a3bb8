"""What the training tests train and what they compare, shared by
test_dynamo_training.py (in one process) and dynamo_distributed_job.py (one
process per rank).

A run is a program that builds its model from a fixed seed, trains it for a
few steps and returns `Trained`: the loss of each step and the final
parameters.  `Recorder` is the backend it compiles with: it counts the graphs
that reach the real backend and keeps each one's compile id (frame, recompile
number, compiled-autograd graph), and `dynamo_counts()` adds what Dynamo
counted itself.  The same program natively and on pyframe must give equal
`Trained` and equal counts.

This module imports torch but not pyframe.
"""

import dataclasses
import os

import torch
import torch.nn.functional as F
from torch._dynamo.backends.registry import lookup_backend
from torch._dynamo.utils import counters, guard_failures
from torch._guards import CompileContext

# The slow cases (inductor, FSDP2, torchrun) run where this is "1": tox's
# -models envs set it, as inductor compiles for seconds to tens of seconds a
# graph on the CPU.
SLOW = os.environ.get("PYFRAME_TEST_SLOW") == "1"
SLOW_REASON = "a slow case (inductor, FSDP2, torchrun): PYFRAME_TEST_SLOW=1 runs it (tox: -models)"


class Recorder:
    """A backend: the compile id of each graph handed to it, then `backend`
    (a name torch.compile knows) compiles the graph."""

    def __init__(self, backend="aot_eager"):
        self.backend = backend
        self.compile_ids = []

    def __call__(self, graph_module, example_inputs):
        self.compile_ids.append(CompileContext.current_compile_id())
        return lookup_backend(self.backend)(graph_module, example_inputs)


def reset():
    """Dynamo as a fresh process has it: no compiled code, counters at 0."""
    torch._dynamo.reset()
    counters.clear()
    guard_failures.clear()


def dynamo_counts(recorder):
    """What Dynamo did since reset(): graphs reaching the backend (and their
    compile ids: "frame/recompile", "!n/..." for compiled autograd's), frames,
    graph breaks, recompiles and why."""
    ids = recorder.compile_ids
    return {
        "graphs": len(ids),
        "compile ids": [str(i) for i in ids],
        # frame_compile_id counts the frame's earlier compiles.
        "recompiles": len({i for i in ids if i.frame_compile_id}),
        "recompile reasons": sorted(
            reason for reasons in guard_failures.values() for reason in reasons
        ),
        "frames total": counters["frames"]["total"],
        "frames ok": counters["frames"]["ok"],
        "unique graphs": counters["stats"]["unique_graphs"],
        "graph breaks": sum(counters["graph_break"].values()),
        "graph break reasons": sorted(counters["graph_break"]),
        "compiled autograd captures": counters["compiled_autograd"]["captures"],
    }


@dataclasses.dataclass
class Trained:
    """Per step losses, then the parameters the steps left."""

    losses: list
    parameters: dict

    def differences(self, other):
        """Where `other` differs from this run, bit for bit; [] when nowhere."""
        found = []
        if self.losses != other.losses:
            found.append(f"losses {self.losses} != {other.losses}")
        if list(self.parameters) != list(other.parameters):
            found.append(f"parameter names {list(self.parameters)} != {list(other.parameters)}")
        for name, value in self.parameters.items():
            theirs = other.parameters.get(name)
            if theirs is not None and not torch.equal(value, theirs):
                found.append(f"parameter {name}: max |diff| {(value - theirs).abs().max()}")
        return found


def parameters_of(model):
    return {name: p.detach().clone() for name, p in model.named_parameters()}


# ---- models ---------------------------------------------------------------------------


class MLP(torch.nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.layers = torch.nn.Sequential(
            torch.nn.Linear(16, width),
            torch.nn.ReLU(),
            torch.nn.Linear(width, width),
            torch.nn.ReLU(),
            torch.nn.Linear(width, width),
            torch.nn.ReLU(),
            torch.nn.Linear(width, 4),
        )

    def forward(self, x):
        return self.layers(x)


VOCAB = 64
WIDTH = 32
HEADS = 4
CONTEXT = 16


class Block(torch.nn.Module):
    """A pre-norm decoder block: causal self-attention, then an MLP."""

    def __init__(self, dropout=0.1):
        super().__init__()
        self.norm1 = torch.nn.LayerNorm(WIDTH)
        self.qkv = torch.nn.Linear(WIDTH, 3 * WIDTH)
        self.out = torch.nn.Linear(WIDTH, WIDTH)
        self.norm2 = torch.nn.LayerNorm(WIDTH)
        self.up = torch.nn.Linear(WIDTH, 4 * WIDTH)
        self.down = torch.nn.Linear(4 * WIDTH, WIDTH)
        self.dropout = torch.nn.Dropout(dropout)

    def attention(self, x):
        batch, length, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(WIDTH, dim=-1)
        q, k, v = (t.view(batch, length, HEADS, WIDTH // HEADS).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.dropout(self.out(y.transpose(1, 2).reshape(batch, length, WIDTH)))

    def forward(self, x):
        x = x + self.attention(x)
        return x + self.dropout(self.down(F.gelu(self.up(self.norm2(x)))))


class Transformer(torch.nn.Module):
    """A two-block decoder over a 64-token vocabulary; `layers` holds the
    blocks (FSDP2 shards and torchtitan compiles each one)."""

    def __init__(self, depth=2, dropout=0.1, checkpoint=False):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, WIDTH)
        self.position = torch.nn.Parameter(torch.randn(CONTEXT, WIDTH) * 0.02)
        self.layers = torch.nn.ModuleList(Block(dropout) for _ in range(depth))
        self.norm = torch.nn.LayerNorm(WIDTH)
        self.head = torch.nn.Linear(WIDTH, VOCAB)
        self.checkpoint = checkpoint

    def forward(self, tokens):
        x = self.embed(tokens) + self.position[: tokens.shape[1]]
        for block in self.layers:
            if self.checkpoint:
                x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return self.head(self.norm(x))


# ---- data -----------------------------------------------------------------------------


def regression_batches(sizes, seed=1):
    """(inputs, targets) for the MLP, one batch of each size."""
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(n, 16, generator=generator), torch.randn(n, 4, generator=generator))
            for n in sizes]  # fmt: skip


def token_batches(sizes, length=CONTEXT, seed=1):
    """(tokens, next tokens) for the transformer, one batch of each size."""
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for n in sizes:
        tokens = torch.randint(0, VOCAB, (n, length + 1), generator=generator)
        batches.append((tokens[:, :-1], tokens[:, 1:]))
    return batches


def mse(output, target):
    return F.mse_loss(output, target)


def next_token_loss(logits, target):
    return F.cross_entropy(logits.reshape(-1, VOCAB), target.reshape(-1))
