"""torch.distributed under torch.compile on pyframe: a job of two ranks (gloo,
the CPU, the loopback interface) on pyframe.dynamo against the same job
natively.

dynamo_distributed_job.py is the job; it runs twice, natively and on
pyframe, started either way PyTorch users start one:
- `torchrun --nproc-per-node 2`, pyframe.dynamo installed in each rank by
  PYFRAME_DYNAMO=1 in the environment (pyframe-dynamo.pth, which pyframe's
  wheel puts in site-packages);
- `torch.multiprocessing.spawn`, each worker calling pyframe.dynamo.install()
  before anything else.
Its cases: torch.compile(DDP(model)) with DDPOptimizer splitting the graph
at DDP's bucket boundaries, DDP(torch.compile(model)), and FSDP2
(fully_shard) with each block compiled as torchtitan does it.  Per rank,
both runs must give the same losses at every step, bit for bit (gloo sums
the same two tensors in the same order), the same parameters, and the same
Dynamo counts (graphs reaching the backend and their compile ids, frames,
graph breaks, recompiles); natively at least one graph must reach the
backend, and under DDPOptimizer one frame's graph must split in several.

Each job has a timeout (and each collective in it one of its own): a hung
job fails its test, and its processes are killed.  Every environment runs
compile(DDP) started by spawn; the other five (torchrun, DDP(compile),
FSDP2) where PYFRAME_TEST_SLOW=1 (tox's -models envs): each job starts
two processes that import torch and compile.
"""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch", minversion="2.11")

import dynamo_training as training  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from conftest import dynamo_pth_installed  # noqa: E402

if not (dist.is_available() and dist.is_gloo_available()):
    pytest.skip("this torch has no torch.distributed with gloo", allow_module_level=True)

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dynamo_distributed_job.py")
RANKS = 2
# Seconds for one job: about 15 on two busy cores.
JOB_TIMEOUT = 300

slow = pytest.mark.skipif(not training.SLOW, reason=training.SLOW_REASON)
CASES = [
    pytest.param("spawn", "compile(DDP)"),
    pytest.param("spawn", "DDP(compile)", marks=slow),
    pytest.param("spawn", "FSDP2", marks=slow),
    pytest.param("torchrun", "compile(DDP)", marks=slow),
    pytest.param("torchrun", "DDP(compile)", marks=slow),
    pytest.param("torchrun", "FSDP2", marks=slow),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kill(process, out):
    """The launcher's process group, then any rank left (torchrun starts
    each rank in a session of its own; SIGTERM first lets it stop them)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=30)
            break
        except subprocess.TimeoutExpired:
            continue
    for name in os.listdir(out):
        if name.endswith(".pid"):
            with open(os.path.join(out, name)) as pid:
                try:
                    os.kill(int(pid.read()), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass


def run_job(launcher, case, out, on_pyframe):
    """The job's per-rank results, run natively or on pyframe."""
    os.makedirs(out)
    port = str(free_port())
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, GLOO_SOCKET_IFNAME="lo")
    env.pop("PYFRAME_DYNAMO", None)
    # One thread a rank, under either launcher (torchrun's default).
    env["OMP_NUM_THREADS"] = "1"
    if launcher == "torchrun":
        if on_pyframe:
            env["PYFRAME_DYNAMO"] = "1"
        command = [
            sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={RANKS}",
            "--master-addr=127.0.0.1", f"--master-port={port}", JOB, "torchrun", case, out,
        ]  # fmt: skip
    else:
        command = [sys.executable, JOB, "spawn", case, out] + (["--install"] if on_pyframe else [])
    started = time.monotonic()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)  # fmt: skip
    try:
        output, _ = process.communicate(timeout=JOB_TIMEOUT)
    except subprocess.TimeoutExpired:
        kill(process, out)
        output, _ = process.communicate()
        pytest.fail(f"{' '.join(command)}: no end in {JOB_TIMEOUT} s, killed\n{output[-6000:]}")
    finally:
        if process.poll() is None:
            kill(process, out)
    exit_status = process.returncode
    assert exit_status == 0, f"{' '.join(command)}: exit {exit_status}\n{output[-6000:]}"
    results = [torch.load(os.path.join(out, f"rank{rank}.pt")) for rank in range(RANKS)]
    print(f"{launcher} {case} {'pyframe' if on_pyframe else 'native'}: "
          f"{time.monotonic() - started:.1f} s")  # fmt: skip
    return results


@pytest.mark.parametrize(("launcher", "case"), CASES)
def test_same_as_native_per_rank(launcher, case, tmp_path):
    if launcher == "torchrun" and not dynamo_pth_installed():
        pytest.skip("pyframe-dynamo.pth is not in site-packages (an editable install?)")
    native = run_job(launcher, case, str(tmp_path / "native"), on_pyframe=False)
    ours = run_job(launcher, case, str(tmp_path / "pyframe"), on_pyframe=True)
    for rank, (theirs, mine) in enumerate(zip(native, ours, strict=True)):
        assert (theirs["rank"], mine["rank"]) == (rank, rank)
        assert (theirs["installed"], mine["installed"]) == (False, True)
        trained = training.Trained(theirs["losses"], theirs["parameters"])
        assert trained.differences(training.Trained(mine["losses"], mine["parameters"])) == []
        assert mine["counts"] == theirs["counts"], f"rank {rank}"
        counts = theirs["counts"]
        assert counts["graphs"] > 0, f"rank {rank}: no graph reached the backend natively"
        if case == "compile(DDP)":
            # DDPOptimizer: one frame, one graph per bucket.
            ids = counts["compile ids"]
            assert len(ids) > len(set(ids)), f"rank {rank}: DDPOptimizer split nothing: {ids}"
    if case != "FSDP2":
        # DDP keeps the ranks' replicas equal (each rank trained on its own data).
        first, second = (training.Trained([], result["parameters"]) for result in native)
        assert first.differences(second) == []
        assert native[0]["losses"] != native[1]["losses"]
