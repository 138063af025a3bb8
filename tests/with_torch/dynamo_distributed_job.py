"""One distributed training job for test_dynamo_distributed.py: each rank
trains with torch.compile and writes what it saw to OUT/rank<N>.pt.

    torchrun --nproc-per-node 2 ... dynamo_distributed_job.py torchrun CASE OUT
    python dynamo_distributed_job.py spawn CASE OUT [--install]

`torchrun`: the ranks are torchrun's workers, and pyframe.dynamo is installed
in them by PYFRAME_DYNAMO=1 in the environment (pyframe-dynamo.pth), or not
at all.  `spawn`: this process starts the ranks with
torch.multiprocessing.spawn, and each worker calls pyframe.dynamo.install()
first where --install says so.  Either way the ranks meet through gloo on the
loopback interface (MASTER_ADDR, MASTER_PORT; GLOO_SOCKET_IFNAME=lo), with a
timeout on every collective.

CASE is one of CASES: the way the model is made distributed and compiled.
Each rank writes its losses, its parameters (its own shard of them under
FSDP2) and Dynamo's counts (dynamo_training.dynamo_counts), and whether
pyframe.dynamo was installed; and, first, its process id to OUT/rank<N>.pid.
"""

import datetime
import os
import sys

import dynamo_training as training
import torch
import torch.distributed as dist
from dynamo_training import Recorder, Trained
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2
STEPS = 3
# A collective that waits longer than this fails its rank (and the job).
COLLECTIVE_TIMEOUT = datetime.timedelta(seconds=120)
# DDP's bucket size, in MiB: the least DDPOptimizer takes (no bucket may be
# smaller than its first, c10d's 1 MiB).  The MLP is made wide enough (2 MiB
# of parameters) to fill several, so that DDPOptimizer splits its graph.
BUCKET_CAP_MB = 1
WIDTH = 512


def compiled_ddp(recorder):
    """torch.compile(DDP(model)), with DDPOptimizer splitting the graph at
    DDP's bucket boundaries."""
    torch._dynamo.config.optimize_ddp = "ddp_optimizer"
    model = training.MLP(WIDTH)
    return model, torch.compile(DDP(model, bucket_cap_mb=BUCKET_CAP_MB), backend=recorder)


def ddp_of_compiled(recorder):
    """DDP(torch.compile(model)): DDP's hooks outside the compiled code (and
    DDPOptimizer splits the graph all the same, Dynamo compiling inside DDP's
    forward)."""
    model = training.MLP(WIDTH)
    return model, DDP(torch.compile(model, backend=recorder), bucket_cap_mb=BUCKET_CAP_MB)


def fsdp2(recorder):
    """FSDP2 as torchtitan applies it: each block compiled (fullgraph) and put
    back in its place, then each block sharded, then the root."""
    # Public here in every release pyframe.dynamo supports (it was
    # torch.distributed._composable.fsdp's before torch 2.6).
    from torch.distributed.fsdp import fully_shard

    model = training.Transformer()
    for i, block in enumerate(model.layers):
        model.layers.register_module(str(i), torch.compile(block, backend=recorder, fullgraph=True))
    for block in model.layers:
        fully_shard(block)
    fully_shard(model)
    return model, model


# name: (makes (model, what the loop calls), batches for a rank, loss)
CASES = {
    "compile(DDP)": (compiled_ddp, training.regression_batches, training.mse),
    "DDP(compile)": (ddp_of_compiled, training.regression_batches, training.mse),
    "FSDP2": (fsdp2, training.token_batches, training.next_token_loss),
}


def local(tensor):
    """A rank's own part of a parameter: the local shard of FSDP2's DTensor."""
    return tensor.to_local() if hasattr(tensor, "to_local") else tensor


def train(case, rank):
    make, batches, loss = CASES[case]
    training.reset()
    recorder = Recorder("aot_eager")
    torch.manual_seed(0)
    model, forward = make(recorder)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    # Each rank its own data.
    for inputs, target in batches([4] * STEPS, seed=rank + 1):
        value = loss(forward(inputs), target)
        optimizer.zero_grad()
        value.backward()
        optimizer.step()
        losses.append(value.item())
    parameters = {name: local(p.detach()).clone() for name, p in model.named_parameters()}
    return Trained(losses, parameters), training.dynamo_counts(recorder)


def run_rank(rank, case, out):
    # For the test to kill a rank that outlives its launcher (torchrun starts
    # each in a session of its own).
    with open(os.path.join(out, f"rank{rank}.pid"), "w") as pid:
        pid.write(str(os.getpid()))
    dist.init_process_group(
        "gloo", rank=rank, world_size=WORLD_SIZE, timeout=COLLECTIVE_TIMEOUT
    )  # fmt: skip
    try:
        trained, counts = train(case, rank)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    pyframe_dynamo = sys.modules.get("pyframe.dynamo")
    result = {
        "rank": rank,
        "installed": bool(pyframe_dynamo and pyframe_dynamo.is_installed()),
        "losses": trained.losses,
        "parameters": trained.parameters,
        "counts": counts,
    }
    torch.save(result, os.path.join(out, f"rank{rank}.pt"))


def spawned(rank, case, out, install):
    if install:
        import pyframe.dynamo

        pyframe.dynamo.install()
    run_rank(rank, case, out)


def main(argv):
    launcher, case, out, *flags = argv
    if case not in CASES:
        raise SystemExit(f"unknown case {case!r}: expected one of {', '.join(CASES)}")
    if launcher == "torchrun":
        assert int(os.environ["WORLD_SIZE"]) == WORLD_SIZE
        run_rank(int(os.environ["RANK"]), case, out)
    elif launcher == "spawn":
        import torch.multiprocessing as mp

        mp.spawn(spawned, args=(case, out, "--install" in flags), nprocs=WORLD_SIZE, join=True)
    else:
        raise SystemExit(f"unknown launcher {launcher!r}: expected torchrun or spawn")


if __name__ == "__main__":
    main(sys.argv[1:])
