"""What a warm call of a torch.compile'd function costs on pyframe's frame
layer (pyframe.dynamo.install()) against TorchDynamo's own C layer.

    python benchmarks/bench_dynamo.py [--rounds N] [--workloads ...] [--json out.json]
                                      [--instructions]

Both sides run in this one process, on the same workloads: each round times
batches of warm calls natively, then installs pyframe.dynamo, times the same
batches through a second torch.compile of the same function (compiled again
in that round, untimed: uninstall() forgets pyframe's entries) and
uninstalls; the sides' order alternates from one round to the next.  Time is
the calling thread's CPU time (torch runs one intra-op thread here), so that
a busy machine's other processes, which take the CPU away from this one, do
not count; a round's time is its fastest batch's mean.  The report gives
microseconds per call for each side, the best round and the median round,
and their ratios (pyframe / native).  --instructions also counts, under
valgrind's callgrind, the instructions per warm call of x + 1 (eager
backend) on each side: exact, and the same on a busy machine.

The workloads run on the CPU; a 2-element tensor makes the call's work
small, so what is measured is the frame layer's part (the compile wrapper,
the cache lookup, the guards), not the kernels.  Needs torch (2.11-2.15);
the gpt2 workload needs transformers too (random weights, nothing
downloaded).
"""

import argparse
import gc
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

DEFAULT_ROUNDS = 7
# Warm calls before a side's timed batches (the first compiles).
WARMUP_CALLS = 20
# Timed batches per side and round.
BATCHES = 5
# callgrind: instructions of (LARGE - SMALL) warm calls, in two processes,
# so that start-up, imports and compiling cancel out.
INSTRUCTION_CALLS = (200, 1200)


# ---- the workloads -----------------------------------------------------------------------


def _add_one(x):
    return x + 1


def _mul_add_relu_sum(x, y):
    return (x * y + 1).relu().sum()


def _tensor_add_one(torch):
    return _add_one, (torch.ones(2),)


def _tensor_mul_add(torch):
    return _mul_add_relu_sum, (torch.ones(2), torch.full((2,), 2.0))


def _gpt2(torch):
    import transformers

    config = transformers.GPT2Config(
        n_layer=2, n_embd=64, n_head=4, n_positions=64, vocab_size=512, use_cache=False
    )
    torch.manual_seed(0)
    model = transformers.GPT2Model(config).eval()
    return model, (torch.randint(0, 512, (1, 16)),)


class Workload:
    def __init__(self, name, describe, make, options, calls, needs=()):
        self.name = name
        self.describe = describe
        self.make = make  # make(torch) -> (function or module, args)
        self.options = options  # torch.compile's keyword arguments
        self.calls = calls  # warm calls per timed batch
        self.needs = needs  # modules it imports besides torch


WORKLOADS = [
    Workload("add-eager", "x + 1, backend='eager'", _tensor_add_one, {"backend": "eager"}, 1000),
    Workload("add-inductor", "x + 1, inductor", _tensor_add_one, {}, 1000),
    Workload("mul-add-relu-sum", "(x * y + 1).relu().sum(), inductor", _tensor_mul_add, {}, 1000),
    Workload(
        "gpt2",
        "GPT-2 forward, 2 layers, 16 tokens (transformers, random weights), inductor",
        _gpt2,
        {},
        100,
        ("transformers",),
    ),
]
BY_NAME = {w.name: w for w in WORKLOADS}


# ---- timing ------------------------------------------------------------------------------


def _unavailable(workload):
    for module in workload.needs:
        try:
            __import__(module)
        except ImportError as e:
            return "needs %s (%s)" % (module, e)
    return None


def _calls(compiled, args, n, grad):
    """n calls of compiled(*args); the last result."""
    result = None
    with grad(False):
        for _ in range(n):
            result = compiled(*args)
    return result


def _timed(compiled, args, n, grad):
    gc.collect()
    gc.disable()
    try:
        start = time.thread_time_ns()
        _calls(compiled, args, n, grad)
        return (time.thread_time_ns() - start) / n / 1000.0
    finally:
        gc.enable()


class Side:
    """One side of the comparison for one workload: its own torch.compile of
    the workload's function (its own OptimizedModule for a model)."""

    def __init__(self, torch, workload, on_pyframe):
        self.on_pyframe = on_pyframe
        self.fn, self.args = workload.make(torch)
        self.compiled = torch.compile(self.fn, **workload.options)
        self.times = []

    def run_round(self, torch, calls):
        import pyframe.dynamo

        if not self.on_pyframe:
            self._measure(torch, calls)
            return
        pyframe.dynamo.install()
        try:
            self._measure(torch, calls)
        finally:
            pyframe.dynamo.uninstall()

    def _measure(self, torch, calls):
        grad = torch.set_grad_enabled
        _calls(self.compiled, self.args, WARMUP_CALLS, grad)
        self.times.append(
            min(_timed(self.compiled, self.args, calls, grad) for _ in range(BATCHES))
        )


def _check_same(torch, workload, native, on_pyframe):
    import pyframe.dynamo

    grad = torch.set_grad_enabled
    expected = _calls(native.compiled, native.args, 1, grad)
    with pyframe.dynamo.installed():
        got = _calls(on_pyframe.compiled, on_pyframe.args, 1, grad)
    if hasattr(expected, "last_hidden_state"):
        expected, got = expected.last_hidden_state, got.last_hidden_state
    if not torch.allclose(expected, got, rtol=1e-4, atol=1e-5):
        raise SystemExit("bench_dynamo.py: %s gives different results on pyframe" % workload.name)


def run_timing(torch, workloads, rounds, progress):
    report = {}
    for workload in workloads:
        reason = _unavailable(workload)
        if reason is not None:
            progress("%s not available: %s" % (workload.name, reason))
            report[workload.name] = {"unavailable": reason}
            continue
        progress("%s: compiling both sides" % workload.name)
        native = Side(torch, workload, on_pyframe=False)
        on_pyframe = Side(torch, workload, on_pyframe=True)
        _check_same(torch, workload, native, on_pyframe)
        for r in range(rounds):
            progress("%s: round %d of %d" % (workload.name, r + 1, rounds))
            sides = (native, on_pyframe) if r % 2 == 0 else (on_pyframe, native)
            for side in sides:
                side.run_round(torch, workload.calls)
        native_best, pyframe_best = min(native.times), min(on_pyframe.times)
        native_median = statistics.median(native.times)
        pyframe_median = statistics.median(on_pyframe.times)
        report[workload.name] = {
            "describe": workload.describe,
            "calls_per_batch": workload.calls,
            "native_us": native_best,
            "pyframe_us": pyframe_best,
            "ratio": pyframe_best / native_best,
            "native_median_us": native_median,
            "pyframe_median_us": pyframe_median,
            "median_ratio": pyframe_median / native_median,
            "native_rounds_us": native.times,
            "pyframe_rounds_us": on_pyframe.times,
        }
    return report


# ---- callgrind ---------------------------------------------------------------------------


def instructions_child(side, name, calls):
    """Compile a workload on one side, warm it up, make `calls` warm calls:
    what callgrind counts."""
    import torch

    import pyframe.dynamo

    torch.set_num_threads(1)
    workload = BY_NAME[name]
    if side == "pyframe":
        pyframe.dynamo.install()
    fn, args = workload.make(torch)
    compiled = torch.compile(fn, **workload.options)
    _calls(compiled, args, WARMUP_CALLS, torch.set_grad_enabled)
    _calls(compiled, args, calls, torch.set_grad_enabled)
    if side == "pyframe":
        pyframe.dynamo.uninstall()


def run_instructions(names, progress):
    if shutil.which("valgrind") is None:
        raise SystemExit("bench_dynamo.py: --instructions needs valgrind")
    small, large = INSTRUCTION_CALLS
    report = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            entry = report[name] = {}
            for side in ("native", "pyframe"):
                counts = []
                for calls in (small, large):
                    progress("instructions: %s, %s, %d calls under callgrind" % (name, side, calls))
                    out = os.path.join(scratch, "callgrind.%s.%s.%d" % (name, side, calls))
                    command = [
                        "valgrind",
                        "--tool=callgrind",
                        "--callgrind-out-file=" + out,
                        sys.executable,
                        os.path.abspath(__file__),
                        "--instructions-child",
                        side,
                        name,
                        str(calls),
                    ]
                    # One hash seed for both processes: start-up work then cancels out.
                    env = dict(os.environ, PYTHONHASHSEED="0")
                    done = subprocess.run(command, capture_output=True, text=True, env=env)
                    found = re.search(r"Collected : ([\d,]+)", done.stderr)
                    if done.returncode != 0 or found is None:
                        raise SystemExit(
                            "bench_dynamo.py: callgrind run failed (exit %d): %s"
                            % (done.returncode, done.stderr.strip()[-2000:])
                        )
                    counts.append(int(found.group(1).replace(",", "")))
                entry[side] = (counts[1] - counts[0]) / (large - small)
            entry["ratio"] = entry["pyframe"] / entry["native"]
    return report


# ---- report ------------------------------------------------------------------------------


def format_report(meta, timing, instructions):
    lines = [
        "pyframe.dynamo.install() against TorchDynamo's C layer: one warm call of a "
        "torch.compile'd function",
        "%s; torch %s (%d thread); pyframe %s; %d rounds"
        % (meta["python"], meta["torch"], meta["torch_threads"], meta["pyframe"], meta["rounds"]),
        "",
        "us of CPU time per call: best round / median round (a round: the fastest of %d batches)"
        % BATCHES,
        "",
        "  %-18s %15s %15s %11s  %s" % ("workload", "native us", "pyframe us", "ratio", "what"),
    ]
    for name, entry in timing.items():
        if "unavailable" in entry:
            lines.append("  %-18s not available: %s" % (name, entry["unavailable"]))
            continue
        lines.append(
            "  %-18s %7.1f /%6.1f %7.1f /%6.1f %5.2f /%4.2f  %s"
            % (
                name,
                entry["native_us"],
                entry["native_median_us"],
                entry["pyframe_us"],
                entry["pyframe_median_us"],
                entry["ratio"],
                entry["median_ratio"],
                entry["describe"],
            )
        )
    if instructions is not None:
        lines += [
            "",
            "instructions per warm call (callgrind; %d calls minus %d, each in a fresh process)"
            % (INSTRUCTION_CALLS[1], INSTRUCTION_CALLS[0]),
            "  %-18s %12s %12s %9s" % ("workload", "native", "pyframe", "ratio"),
        ]
        for name, entry in instructions.items():
            lines.append(
                "  %-18s %12.0f %12.0f %9.3f"
                % (name, entry["native"], entry["pyframe"], entry["ratio"])
            )
    return "\n".join(lines)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rounds", type=int, default=DEFAULT_ROUNDS, help="default %d" % DEFAULT_ROUNDS
    )
    parser.add_argument(
        "--workloads",
        nargs="+",
        choices=list(BY_NAME),
        metavar="NAME",
        help="of: " + ", ".join(BY_NAME),
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results here")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count instructions per warm call of add-eager under callgrind (about 8 minutes)",
    )
    parser.add_argument("--instructions-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rounds < 0:
        parser.error("--rounds must be >= 0")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.instructions_child:
        side, name, calls = args.instructions_child
        instructions_child(side, name, int(calls))
        return 0

    def progress(message):
        print("bench_dynamo: " + message, file=sys.stderr, flush=True)

    import torch

    import pyframe
    import pyframe.dynamo

    # One intra-op thread: the kernels' time then does not depend on what
    # else the machine runs (both sides run the same kernels).
    torch.set_num_threads(1)
    workloads = [BY_NAME[n] for n in args.workloads] if args.workloads else WORKLOADS
    timing = run_timing(torch, workloads, args.rounds, progress) if args.rounds else {}
    # Only the eager backend: inductor's kernels use instructions (AVX-512)
    # that valgrind cannot run.
    instructions = run_instructions(["add-eager"], progress) if args.instructions else None
    meta = {
        "python": "%s %s" % (platform.python_implementation(), platform.python_version()),
        "platform": "%s %s" % (platform.system(), platform.machine()),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "pyframe": "%s (%s)" % (pyframe.__version__, os.path.dirname(pyframe.__file__)),
        "rounds": args.rounds,
        "torch_threads": torch.get_num_threads(),
    }
    print(format_report(meta, timing, instructions))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "timing": timing, "instructions": instructions}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
