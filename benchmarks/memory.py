"""Peak RSS growth per mode over many frames, each mode in a fresh process
(bench.py --memory-child) so one mode's allocations cannot hide another's."""

import json
import os
import resource
import subprocess
import sys

import workloads
from modes import MODES_BY_NAME, check_clean

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench.py")


def _max_rss_kib():
    """This process's peak RSS in KiB.

    Linux keeps getrusage()'s ru_maxrss across execve(), so a child started by
    a big parent (torch loaded, say) would report the parent's peak and show
    no growth at all; VmHWM in /proc belongs to the new address space.  Other
    systems fall back to ru_maxrss.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak  # bytes on macOS


def memory_child(env, mode_name, frames):
    """Run `frames` intercepted frames under one mode; print peak RSS as JSON."""
    mode = MODES_BY_NAME[mode_name]
    reason = mode.reason(env)
    if reason is not None:
        print(json.dumps({"mode": mode_name, "unavailable": reason}))
        return
    warmup = 10_000
    with mode.active(env):
        workloads.run_calls(warmup)
        before = _max_rss_kib()
        workloads.run_calls(frames)
        after = _max_rss_kib()
    check_clean(env)
    print(
        json.dumps(
            {
                "mode": mode_name,
                "frames": frames,
                "before_kib": before,
                "after_kib": after,
                "growth_kib": after - before,
            }
        )
    )


def run_memory(args, modes, progress):
    report = {}
    for mode in modes:
        progress.show("memory: %s (%d frames, fresh process)" % (mode.name, args.memory_frames))
        command = [
            sys.executable,
            BENCH,
            "--memory-child",
            mode.name,
            "--memory-frames",
            str(args.memory_frames),
            "--build-dir",
            args.build_dir,
        ]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            report[mode.name] = {
                "error": "exit %d: %s" % (done.returncode, done.stderr.strip()[-500:])
            }
        else:
            report[mode.name] = json.loads(done.stdout.strip().splitlines()[-1])
    progress.show("memory: done", final=True)
    return report
