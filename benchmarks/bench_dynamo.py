"""What a warm call of a torch.compile'd function costs on pyframe's frame
layer (pyframe.dynamo.install()) against TorchDynamo's own C layer, and
against the function run eagerly.

    python benchmarks/bench_dynamo.py [--rounds N] [--workloads ...] [--json out.json]
                                      [--instructions [NAME ...]] [--specialization]
                                      [--python-functions]

Three sides run in this one process, on the same workloads
(dynamo_workloads.py): the function itself (eager), its torch.compile run
natively, and a second torch.compile of it run under pyframe.dynamo.install()
(made under install(), as in a program that installs first, so that it is
pyframe's compile wrapper; installed for that side's batches only, compiled
again each round, untimed: uninstall() forgets pyframe's entries).  Each round times every side, the
side that goes first rotating from one round to the next.  Time is the
calling thread's CPU time (torch runs one intra-op thread here), so that a
busy machine's other processes, which take the CPU away from this one, do
not count; a round's time is its fastest batch's mean.  The report gives
microseconds per call for each side, the best round and the median round,
the ratio pyframe / native and the overhead ratio (pyframe - eager) /
(native - eager): the share of Dynamo's own cost over eager that remains on
pyframe.  --instructions also counts, under valgrind's callgrind, the
instructions per warm call on each side (x + 1 with the eager backend, or
the eager-backend workloads named): exact, and the same on a busy machine.
--specialization runs the pyframe side with install(specialization=True)
(CPython 3.12+: the code Dynamo skips at no-hook speed).
--python-functions (with --instructions, CPython 3.12+) runs the counted
warm calls under CPython's perf trampolines and also reports each Python
function's instructions per warm call, its callees included
(python_functions.py); the trampolines add to every count.

The workloads run on the CPU.  In the one-graph ones a 2-element tensor
makes the call's work small, so what is measured is the frame layer's part
(the compile wrapper, the cache lookup, the guards), not the kernels; in
the graph-break ones, also the Python that runs between the graphs.  Needs
torch (2.11-2.15); the gpt2 workloads need transformers too (random
weights, nothing downloaded).
"""

import argparse
import contextlib
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import python_functions  # noqa: E402
from dynamo_workloads import BY_NAME, WORKLOADS  # noqa: E402  (beside this file)

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
# Native thread pools the callgrind children run with one thread (none to spin).
ONE_THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# What callgrind can count: the eager backend's workloads (inductor's CPU
# kernels use instructions, AVX-512, that valgrind cannot run).
CALLGRIND_OK = [w.name for w in WORKLOADS if w.options.get("backend") == "eager"]
# The per-function table: this many functions, by their instructions per
# warm call on the native and pyframe sides together.
FUNCTIONS_SHOWN = 15


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


SIDES = ("eager", "native", "pyframe")
# --specialization: the pyframe side runs with install(specialization=True).
SPECIALIZATION = False
# --python-functions: the callgrind children run the counted calls under the
# perf trampolines.
PYTHON_FUNCTIONS = False


class Side:
    """One side of the comparison for one workload: the function itself
    (eager), or its own torch.compile of it (its own OptimizedModule for a
    model), run natively or under pyframe.dynamo.install()."""

    def __init__(self, torch, workload, name):
        import pyframe.dynamo

        self.name = name
        self.fn, self.args = workload.make(torch)
        if name == "eager":
            self.compiled = self.fn
        elif name == "native":
            self.compiled = torch.compile(self.fn, **workload.options)
        else:
            # As a program that installs first: torch.compile then returns
            # pyframe's compile wrapper (Dynamo's own when made before).
            with pyframe.dynamo.installed(specialization=SPECIALIZATION):
                self.compiled = torch.compile(self.fn, **workload.options)
        self.times = []

    def run_round(self, torch, calls):
        import pyframe.dynamo

        if self.name != "pyframe":
            self._measure(torch, calls)
            return
        pyframe.dynamo.install(specialization=SPECIALIZATION)
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


def _check_same(torch, workload, sides):
    import pyframe.dynamo

    grad = torch.set_grad_enabled
    results = {}
    for side in sides:
        with (
            pyframe.dynamo.installed(specialization=SPECIALIZATION)
            if side.name == "pyframe"
            else contextlib.nullcontext()
        ):
            result = _calls(side.compiled, side.args, 1, grad)
        results[side.name] = getattr(result, "last_hidden_state", result)
    expected = results["native"]
    for name in ("eager", "pyframe"):
        got = results[name]
        same = (
            torch.allclose(expected, got, rtol=1e-4, atol=1e-5)
            if expected.is_floating_point()
            else torch.equal(expected, got)
        )
        if not same:
            raise SystemExit(
                "bench_dynamo.py: %s gives different results %s"
                % (workload.name, "on pyframe" if name == "pyframe" else "eagerly than compiled")
            )


def _overhead_ratio(times):
    """pyframe's cost over eager divided by native's (None where native
    costs no more than eager: no overhead to divide by)."""
    native = times["native"] - times["eager"]
    return (times["pyframe"] - times["eager"]) / native if native > 0 else None


def run_timing(torch, workloads, rounds, progress):
    report = {}
    for workload in workloads:
        reason = _unavailable(workload)
        if reason is not None:
            progress("%s not available: %s" % (workload.name, reason))
            report[workload.name] = {"unavailable": reason}
            continue
        progress("%s: compiling both sides" % workload.name)
        sides = [Side(torch, workload, name) for name in SIDES]
        _check_same(torch, workload, sides)
        for r in range(rounds):
            progress("%s: round %d of %d" % (workload.name, r + 1, rounds))
            for side in sides[r % 3 :] + sides[: r % 3]:  # each side first in turn
                side.run_round(torch, workload.calls)
        best = {side.name: min(side.times) for side in sides}
        median = {side.name: statistics.median(side.times) for side in sides}
        entry = report[workload.name] = {
            "describe": workload.describe,
            "calls_per_batch": workload.calls,
            "ratio": best["pyframe"] / best["native"],
            "median_ratio": median["pyframe"] / median["native"],
            "overhead_ratio": _overhead_ratio(best),
            "median_overhead_ratio": _overhead_ratio(median),
        }
        for side in sides:
            entry[side.name + "_us"] = best[side.name]
            entry[side.name + "_median_us"] = median[side.name]
            entry[side.name + "_rounds_us"] = side.times
    return report


# ---- callgrind ---------------------------------------------------------------------------


def instructions_child(side, name, calls, mode):
    """Compile a workload on one side, warm it up, make `calls` warm calls:
    what callgrind counts.  `mode`: plain, specialization (the pyframe side
    with install(specialization=True)) or trampolines (the warm calls under
    the perf trampolines)."""
    import torch

    import pyframe.dynamo

    torch.set_num_threads(1)
    workload = BY_NAME[name]
    if side == "pyframe":
        pyframe.dynamo.install(specialization=mode == "specialization")
    fn, args = workload.make(torch)
    compiled = fn if side == "eager" else torch.compile(fn, **workload.options)
    _calls(compiled, args, WARMUP_CALLS, torch.set_grad_enabled)
    # As the timed rounds: no collection during the calls counted.  Where a
    # collection falls depends on every allocation before it, so one
    # falling into the 1200-call process and not the 200-call one moved the
    # count per call by about 4,000 instructions between runs of one build.
    gc.collect()
    gc.disable()
    if mode == "trampolines":
        sys.activate_stack_trampoline("perf")
    _calls(compiled, args, calls, torch.set_grad_enabled)
    if mode == "trampolines":
        sys.deactivate_stack_trampoline()
    gc.enable()
    if side == "pyframe":
        pyframe.dynamo.uninstall()


# callgrind_annotate's per-function lines: "1,234 (5.00%)  file:function [object]".
ANNOTATE_LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S.*?)(?:\s+\[(.*)\])?$")


def _self_instructions(out):
    """{function: instructions spent in it (its own, not its callees')} of
    one callgrind output, recursion levels ('2, '3, ...) summed."""
    functions = {}
    listing = python_functions.annotate(out, inclusive=False).split("file:function", 1)[-1]
    for line in listing.splitlines():
        found = ANNOTATE_LINE.match(line)
        if found is None:
            continue
        count, where, obj = found.groups()
        name = re.sub(r"'\d+$", "", where.split(":", 1)[-1])
        if name.startswith("0x") and obj:
            name = "%s (%s)" % (name, os.path.basename(obj))
        functions[name] = functions.get(name, 0) + int(count.replace(",", ""))
    return functions


def _per_call(small, large, calls):
    """{function: instructions per warm call}: `large` minus `small`."""
    return {
        name: (large.get(name, 0) - small.get(name, 0)) / calls for name in set(small) | set(large)
    }


def run_instructions(names, progress):
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        raise SystemExit("bench_dynamo.py: --instructions needs valgrind and callgrind_annotate")
    small, large = INSTRUCTION_CALLS
    report = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            entry = report[name] = {}
            functions = entry["functions"] = {}
            if PYTHON_FUNCTIONS:
                entry["python_functions"] = {}
            for side in SIDES:
                counts = []
                by_function = []
                by_python_function = []
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
                        "trampolines"
                        if PYTHON_FUNCTIONS
                        else "specialization"
                        if SPECIALIZATION
                        else "plain",
                    ]
                    # One hash seed for both processes: start-up work then cancels out.
                    # callgrind counts every thread: BLAS's idle workers spin for as
                    # long as the process runs (OpenBLAS's blas_thread_server, about
                    # 4,000 instructions a warm call natively and 800 on pyframe in one
                    # measurement), so the count would follow the wall time.
                    env = dict(os.environ, PYTHONHASHSEED="0", **ONE_THREAD_ENV)
                    done = subprocess.run(command, capture_output=True, text=True, env=env)
                    found = re.search(r"Collected : ([\d,]+)", done.stderr)
                    if done.returncode != 0 or found is None:
                        raise SystemExit(
                            "bench_dynamo.py: callgrind run failed (exit %d): %s"
                            % (done.returncode, done.stderr.strip()[-2000:])
                        )
                    counts.append(int(found.group(1).replace(",", "")))
                    by_function.append(_self_instructions(out))
                    if PYTHON_FUNCTIONS:
                        pid = int(re.search(r"==(\d+)==", done.stderr).group(1))
                        try:
                            by_python_function.append(python_functions.inclusive(out, pid))
                        finally:
                            with contextlib.suppress(OSError):
                                os.remove(python_functions.map_path(pid))
                entry[side] = (counts[1] - counts[0]) / (large - small)
                functions[side] = _per_call(*by_function, large - small)
                if PYTHON_FUNCTIONS:
                    entry["python_functions"][side] = _per_call(*by_python_function, large - small)
            entry["ratio"] = entry["pyframe"] / entry["native"]
            entry["overhead_ratio"] = _overhead_ratio(entry)
    return report


def _format_functions(name, functions):
    """The functions that cost most per warm call, native and pyframe."""
    native, ours = functions["native"], functions["pyframe"]
    shown = sorted(
        set(native) | set(ours),
        key=lambda f: -(abs(native.get(f, 0)) + abs(ours.get(f, 0))),
    )[:FUNCTIONS_SHOWN]
    return [
        "",
        "%s: instructions per warm call spent in each C function (its own, not its callees'),"
        % name,
        "the %d with the most on the native and pyframe sides together (all Python code runs"
        % FUNCTIONS_SHOWN,
        "in _PyEval_EvalFrameDefault)",
        *_function_rows(functions, shown, 48),
    ]


def _format_python_functions(name, functions):
    """The Python functions that cost most per warm call, callees included."""
    native, ours = functions["native"], functions["pyframe"]
    shown = sorted(set(native) | set(ours), key=lambda f: -max(native.get(f, 0), ours.get(f, 0)))[
        :FUNCTIONS_SHOWN
    ]
    return [
        "",
        "%s: instructions per warm call in each Python function, its callees included" % name,
        "(under the perf trampolines), the %d with the most on the native or pyframe side"
        % FUNCTIONS_SHOWN,
        *_function_rows(functions, shown, 60),
    ]


def _function_rows(functions, shown, width):
    """A header and a row per function in `shown`: its instructions per warm
    call on each side, the name cut to `width`."""
    rows = ["  %-*s %9s %9s %9s" % (width, "function", *SIDES)]
    for function in shown:
        counts = [functions[side].get(function, 0) for side in SIDES]
        rows.append("  %-*s %9.0f %9.0f %9.0f" % (width, function[:width], *counts))
    return rows


# ---- report ------------------------------------------------------------------------------


def _format_overhead(ratio):
    return "%5.2f" % ratio if ratio is not None else "    -"


def format_report(meta, timing, instructions):
    lines = [
        "pyframe.dynamo.install() against TorchDynamo's C layer: warm calls of "
        "torch.compile'd functions",
        "%s; torch %s (%d thread); pyframe %s; %d rounds"
        % (meta["python"], meta["torch"], meta["torch_threads"], meta["pyframe"], meta["rounds"]),
        "pyframe side: install(specialization=%s)%s"
        % (
            meta["specialization"],
            "; the counted calls under the perf trampolines" if meta["python_functions"] else "",
        ),
        "",
        "us of CPU time per call: best round / median round (a round: the fastest of %d batches);"
        % BATCHES,
        "ratio: pyframe / native; overhead: (pyframe - eager) / (native - eager)",
        "",
        "  %-17s %15s %15s %15s %11s %12s"
        % ("workload", "eager us", "native us", "pyframe us", "ratio", "overhead"),
    ]
    described = []
    for name, entry in timing.items():
        if "unavailable" in entry:
            lines.append("  %-17s not available: %s" % (name, entry["unavailable"]))
            continue
        lines.append(
            "  %-17s %7.1f /%6.1f %7.1f /%6.1f %7.1f /%6.1f %5.2f /%4.2f %s /%s"
            % (
                name,
                entry["eager_us"],
                entry["eager_median_us"],
                entry["native_us"],
                entry["native_median_us"],
                entry["pyframe_us"],
                entry["pyframe_median_us"],
                entry["ratio"],
                entry["median_ratio"],
                _format_overhead(entry["overhead_ratio"]),
                _format_overhead(entry["median_overhead_ratio"]),
            )
        )
        described.append("  %-17s %s" % (name, entry["describe"]))
    if described:
        lines += [""] + described
    if instructions is not None:
        lines += [
            "",
            "instructions per warm call (callgrind; %d calls minus %d, each in a fresh process)"
            % (INSTRUCTION_CALLS[1], INSTRUCTION_CALLS[0]),
            "  %-17s %12s %12s %12s %9s %9s"
            % ("workload", "eager", "native", "pyframe", "ratio", "overhead"),
        ]
        for name, entry in instructions.items():
            lines.append(
                "  %-17s %12.0f %12.0f %12.0f %9.3f %9s"
                % (
                    name,
                    entry["eager"],
                    entry["native"],
                    entry["pyframe"],
                    entry["ratio"],
                    _format_overhead(entry["overhead_ratio"]),
                )
            )
        for name, entry in instructions.items():
            lines += _format_functions(name, entry["functions"])
            if "python_functions" in entry:
                lines += _format_python_functions(name, entry["python_functions"])
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
        nargs="*",
        metavar="NAME",
        help="also count instructions per warm call under callgrind, of add-eager (about 10 "
        "minutes) or of the workloads named (eager backend only: %s)" % ", ".join(CALLGRIND_OK),
    )
    parser.add_argument(
        "--specialization",
        action="store_true",
        help="run the pyframe side with install(specialization=True) (CPython 3.12+)",
    )
    parser.add_argument(
        "--python-functions",
        action="store_true",
        help="with --instructions: also each Python function's instructions per warm call "
        "(CPython 3.12+, under the perf trampolines, which add to every count)",
    )
    parser.add_argument("--instructions-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rounds < 0:
        parser.error("--rounds must be >= 0")
    if args.specialization and sys.version_info < (3, 12):
        parser.error(
            "--specialization: CPython %d.%d has no specialization mode (3.12+)"
            % sys.version_info[:2]
        )
    if args.python_functions:
        if args.instructions is None:
            parser.error("--python-functions counts under callgrind: it needs --instructions")
        if sys.version_info < (3, 12):
            parser.error(
                "--python-functions: CPython %d.%d has no perf trampolines (3.12+)"
                % sys.version_info[:2]
            )
        if args.specialization:
            parser.error(
                "--python-functions and --specialization: the trampolines' evaluator is a "
                "PEP 523 function of its own, under which the mode never steps aside"
            )
    for name in args.instructions or ():
        if name not in CALLGRIND_OK:
            parser.error(
                "--instructions: %r cannot be counted; expected one of %s"
                % (name, ", ".join(CALLGRIND_OK))
            )
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.instructions_child:
        side, name, calls, mode = args.instructions_child
        instructions_child(side, name, int(calls), mode)
        return 0
    global SPECIALIZATION, PYTHON_FUNCTIONS
    SPECIALIZATION = args.specialization
    PYTHON_FUNCTIONS = args.python_functions

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
    if args.instructions is None:
        instructions = None
    else:
        instructions = run_instructions(args.instructions or ["add-eager"], progress)
    meta = {
        "python": "%s %s" % (platform.python_implementation(), platform.python_version()),
        "platform": "%s %s" % (platform.system(), platform.machine()),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "pyframe": "%s (%s)" % (pyframe.__version__, os.path.dirname(pyframe.__file__)),
        "rounds": args.rounds,
        "torch_threads": torch.get_num_threads(),
        "specialization": args.specialization,
        "python_functions": args.python_functions,
    }
    print(format_report(meta, timing, instructions))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "timing": timing, "instructions": instructions}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
