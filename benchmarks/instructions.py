"""Instructions per unit of work (a fib call, a closure made and called, ...)
for each mode and workload, counted by valgrind's callgrind in a child process
(bench.py --instructions-child)."""

import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile

import workloads
from modes import MODES_BY_NAME, NAME_WIDTH, check_clean

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench.py")

# Per workload, two sizes whose difference in instructions, divided by the
# difference in units of work, is the cost of one unit: start-up, imports and
# the mode's set-up cancel out.  The unit: a fib call; a closure made and
# called twice; a method call on the tree (total() and own() per node, the
# tree walked twice, and built once); a short generator run by sum().
INSTRUCTION_SIZES = {
    "fib": (18, 22),
    "closures": (2_000, 6_000),
    "methods": (8, 10),
    "generators": (2_000, 6_000),
}
UNITS = {
    "fib": workloads.fib_frames,
    "closures": lambda size: size,
    "methods": lambda depth: 4 * (2 ** (depth + 1) - 1),
    "generators": lambda size: size,
}
UNIT_NAMES = {
    "fib": "fib call",
    "closures": "closure made and called twice",
    "methods": "method call",
    "generators": "generator",
}


def instructions_child(env, mode_name, workload_name, size):
    """Run one workload at `size` under one mode (after a warm-up), for
    callgrind to count."""
    mode = MODES_BY_NAME[mode_name]
    workload = workloads.BY_NAME[workload_name]
    # The collector stays off, as while timing: when a collection starts
    # depends on allocations since the last one, the mode's set-up included,
    # and one would land in one size's count and not the other's.
    gc.disable()
    with mode.active(env):
        workload.run(workload.quick_size)
        workload.run(size)
    check_clean(env)


def run_instructions(args, modes, progress, workload_names=("fib",)):
    """Instructions per unit of each workload for each mode, counted by
    callgrind: the same for the same build whatever else the machine is
    doing.  {workload: {mode: {"per_call": n} or {"error": why}}}."""
    if shutil.which("valgrind") is None:
        raise SystemExit("bench.py: --instructions needs valgrind (apt-get install valgrind)")
    report = {}
    for name in workload_names:
        if name in INSTRUCTION_SIZES:
            runs = [m for m in modes if m.runs(name)]
            report[name] = _count_workload(args, name, runs, progress)
    progress.show("instructions: done", final=True)
    return report


def _count_workload(args, workload_name, modes, progress):
    small, large = INSTRUCTION_SIZES[workload_name]
    units = UNITS[workload_name](large) - UNITS[workload_name](small)
    report = {}
    with tempfile.TemporaryDirectory() as scratch:
        for mode in modes:
            counts = []
            for size in (small, large):
                progress.show(
                    "instructions: %s, %s(%d) under callgrind" % (mode.name, workload_name, size)
                )
                out = os.path.join(scratch, "callgrind.%s.%d" % (mode.name, size))
                command = [
                    "valgrind",
                    "--tool=callgrind",
                    "--callgrind-out-file=" + out,
                    sys.executable,
                    BENCH,
                    "--instructions-child",
                    mode.name,
                    "--instructions-workload",
                    workload_name,
                    "--size",
                    "%s=%d" % (workload_name, size),
                    "--build-dir",
                    args.build_dir,
                ]
                # One hash seed for both sizes: start-up work varies with the
                # seed by about 10 instructions per fib call once divided, and
                # only cancels out when both processes do the same.
                env = dict(os.environ, PYTHONHASHSEED="0")
                done = subprocess.run(command, capture_output=True, text=True, env=env)
                found = re.search(r"Collected : ([\d,]+)", done.stderr)
                if done.returncode != 0 or found is None:
                    report[mode.name] = {
                        "error": "exit %d: %s" % (done.returncode, done.stderr.strip()[-500:])
                    }
                    break
                counts.append(int(found.group(1).replace(",", "")))
            else:
                report[mode.name] = {"per_call": (counts[1] - counts[0]) / units}
    return report


def format_instructions(report):
    return "\n\n".join(_format_workload(name, entries) for name, entries in report.items())


def _format_workload(workload_name, report):
    small, large = INSTRUCTION_SIZES[workload_name]
    lines = [
        "instructions per %s, %s (callgrind; size %d minus size %d, divided by the units)"
        % (UNIT_NAMES[workload_name], workload_name, large, small),
        "  %-*s %12s %9s %9s %12s %10s"
        % (NAME_WIDTH, "mode", "instr/unit", "x none", "x floor", "x monitoring", "x settrace"),
    ]

    def per_call(name):
        return report.get(name, {}).get("per_call")

    for name, entry in report.items():
        if "error" in entry:
            lines.append("  %-*s failed: %s" % (NAME_WIDTH, name, entry["error"]))
            continue
        value = entry["per_call"]
        ratios = []
        for base in ("none", "floor", "monitoring", "settrace"):
            reference = per_call(base)
            ratios.append("%.2f" % (value / reference) if reference else "-")
        lines.append("  %-*s %12.0f %9s %9s %12s %10s" % (NAME_WIDTH, name, value, *ratios))
    return "\n".join(lines)
