"""Instructions per fib call for each mode, counted by valgrind's callgrind in
a child process (bench.py --instructions-child)."""

import os
import re
import shutil
import subprocess
import sys
import tempfile

import workloads
from modes import MODES_BY_NAME, check_clean

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench.py")

# fib sizes whose difference in instructions, divided by the difference in
# calls, is the cost of one call: start-up, imports and the mode's set-up
# cancel out.
INSTRUCTION_SIZES = (18, 22)


def instructions_child(env, mode_name, size):
    """Run fib(size) under one mode (after a warm-up), for callgrind to count."""
    mode = MODES_BY_NAME[mode_name]
    with mode.active(env):
        workloads.run_fib(12)
        workloads.run_fib(size)
    check_clean(env)


def run_instructions(args, modes, progress):
    """Instructions per fib call for each mode, counted by callgrind: the
    same for the same build whatever else the machine is doing."""
    if shutil.which("valgrind") is None:
        raise SystemExit("bench.py: --instructions needs valgrind (apt-get install valgrind)")
    small, large = INSTRUCTION_SIZES
    calls = workloads.fib_frames(large) - workloads.fib_frames(small)
    report = {}
    with tempfile.TemporaryDirectory() as scratch:
        for mode in modes:
            counts = []
            for size in (small, large):
                progress.show("instructions: %s, fib(%d) under callgrind" % (mode.name, size))
                out = os.path.join(scratch, "callgrind.%s.%d" % (mode.name, size))
                command = [
                    "valgrind",
                    "--tool=callgrind",
                    "--callgrind-out-file=" + out,
                    sys.executable,
                    BENCH,
                    "--instructions-child",
                    mode.name,
                    "--size",
                    "fib=%d" % size,
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
                report[mode.name] = {"per_call": (counts[1] - counts[0]) / calls}
    progress.show("instructions: done", final=True)
    return report


def format_instructions(report):
    lines = [
        "instructions per fib call (callgrind; fib(%d) minus fib(%d), divided by the calls)"
        % (INSTRUCTION_SIZES[1], INSTRUCTION_SIZES[0]),
        "  %-18s %12s %9s %9s %12s %10s"
        % ("mode", "instr/call", "x none", "x floor", "x monitoring", "x settrace"),
    ]

    def per_call(name):
        return report.get(name, {}).get("per_call")

    for name, entry in report.items():
        if "error" in entry:
            lines.append("  %-18s failed: %s" % (name, entry["error"]))
            continue
        value = entry["per_call"]
        ratios = []
        for base in ("none", "floor", "monitoring", "settrace"):
            reference = per_call(base)
            ratios.append("%.2f" % (value / reference) if reference else "-")
        lines.append("  %-18s %12.0f %9s %9s %12s %10s" % (name, value, *ratios))
    return "\n".join(lines)
