"""What a `pyframe locals --where` condition costs per call of the code it is asked about.

    python benchmarks/cli_where.py [--calls N] [--rounds R] [--instructions]

A small program calls `work(n, key)` N times and times that loop itself
(perf_counter), so neither start-up nor the report counts.  It runs as plain
`python`, then under `pyframe locals`:

- filtered: `--match` leaves `work` out (pyframe.SKIP: the specialization
  mode's speed on 3.12+);
- where-False: `--match ^work$ --where False`: the callback is asked at every
  call and builds the entry locals, the condition is a constant;
- where-n: `--where "n < 0"`: the same, and a comparison (never true, so
  nothing is reported);
- where-call: `--where 'n < 0 or key.startswith("admin")'`: a method call too.

Prints the best of R rounds, in ns per call, and each mode's cost over plain
python.  --instructions counts instructions per call instead, with valgrind's
callgrind (the same whatever else the machine does): each mode runs at two
call counts, and the difference, divided by the difference in calls, is one
call's cost, start-up cancelled out.  Use a release build of pyframe
(benchmarks/README.md).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

PROGRAM = """\
import sys
import time


def work(n, key):
    return n + 1


def main(calls):
    start = time.perf_counter()
    for i in range(calls):
        work(i, "user")
    print((time.perf_counter() - start) / calls * 1e9)


main(int(sys.argv[1]))
"""

MODES = {
    "python": [],
    "filtered": ["-m", "pyframe", "locals", "--match", "^nothing$"],
    "where-False": ["-m", "pyframe", "locals", "--match", "^work$", "--where", "False"],
    "where-n": ["-m", "pyframe", "locals", "--match", "^work$", "--where", "n < 0"],
    "where-call": [
        "-m",
        "pyframe",
        "locals",
        "--match",
        "^work$",
        "--where",
        'n < 0 or key.startswith("admin")',
    ],
}


def run(mode_args, program, calls):
    command = [sys.executable, *mode_args, program, str(calls)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def count(mode_args, program, calls):
    """Instructions callgrind counts for the whole process."""
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    command += [sys.executable, *mode_args, program, str(calls)]
    # One hash seed for both counts, so that start-up work cancels out.
    env = dict(os.environ, PYTHONHASHSEED="0")
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    found = re.search(r"Collected : ([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"cli_where.py: no count from callgrind:\n{done.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--instructions", action="store_true", help="count with callgrind")
    args = parser.parse_args()
    version = "%d.%d.%d" % sys.version_info[:3]
    with tempfile.TemporaryDirectory() as tmp:
        program = os.path.join(tmp, "calls.py")
        with open(program, "w", encoding="utf-8") as file:
            file.write(PROGRAM)
        if args.instructions:
            small, large = 2_000, 12_000
            per_call = {
                mode: (count(mode_args, program, large) - count(mode_args, program, small))
                / (large - small)
                for mode, mode_args in MODES.items()
            }
            print(f"CPython {version}, instructions per call (callgrind, {large} - {small} calls)")
            unit = "instr/call"
        else:
            per_call = dict.fromkeys(MODES, float("inf"))
            for _ in range(args.rounds):
                for mode, mode_args in MODES.items():  # interleaved: drift spreads over all
                    per_call[mode] = min(per_call[mode], run(mode_args, program, args.calls))
            print(f"CPython {version}, {args.calls} calls, best of {args.rounds} rounds")
            unit = "ns/call"
    print(f"{'mode':<12} {unit:>10} {'over python':>12}")
    for mode, value in per_call.items():
        print(f"{mode:<12} {value:10.1f} {value - per_call['python']:12.1f}")


if __name__ == "__main__":
    main()
