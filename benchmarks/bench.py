"""Time pyframe against no hook, a do-nothing PEP 523 hook and other frame hooks.

    python benchmarks/bench.py [--rounds N] [--json out.json] [--workloads ...]
                               [--modes ...] [--quick] [--memory]

Every mode runs in this one process, interleaved: round r runs each workload
under every mode once, the modes' order rotated by r, so slow drift of the
machine (frequency, other load) spreads over all modes instead of favouring
whichever ran first.  The table quotes the best round per (workload, mode),
its ratio to `none`, and for pyframe modes the ratio to `floor`: the cost of
merely having a PEP 523 hook, which pyframe cannot go below.

Use a release build of pyframe (`pip install .` without PYFRAME_DEBUG): a
debug build keeps assert()s and is compiled at -O1.  See README.md here.
"""

import argparse
import json
import os
import platform
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# These live beside this file, found through sys.path above.
import workloads  # noqa: E402
from hooks import REPO, Env, describe_pyframe, pyframe_build_kind  # noqa: E402
from instructions import format_instructions, instructions_child, run_instructions  # noqa: E402
from memory import memory_child, run_memory  # noqa: E402
from modes import MODES, MODES_BY_NAME, check_clean  # noqa: E402
from report import Progress, print_report  # noqa: E402
from timing import run_timing, summarize  # noqa: E402

DEFAULT_ROUNDS = 7
QUICK_ROUNDS = 2
MEMORY_FRAMES = 1_000_000
QUICK_MEMORY_FRAMES = 100_000


# ---- command line ------------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rounds",
        type=int,
        help="rounds (default %d; --quick: %d); 0: no timing" % (DEFAULT_ROUNDS, QUICK_ROUNDS),
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results here")
    parser.add_argument(
        "--workloads",
        nargs="+",
        choices=list(workloads.BY_NAME),
        metavar="NAME",
        help="of: " + ", ".join(workloads.BY_NAME),
    )
    parser.add_argument(
        "--modes",
        nargs="+",
        choices=list(MODES_BY_NAME),
        metavar="MODE",
        help="of: " + ", ".join(MODES_BY_NAME),
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes and %d rounds: a smoke test, not a measurement" % QUICK_ROUNDS,
    )
    parser.add_argument(
        "--size",
        action="append",
        default=[],
        metavar="WORKLOAD=N",
        help="override a workload's size, e.g. --size fib=25",
    )
    parser.add_argument(
        "--memory",
        action="store_true",
        help="also measure peak RSS growth over --memory-frames frames per "
        "pyframe mode, each in a fresh process",
    )
    parser.add_argument(
        "--memory-frames",
        type=int,
        help="default %d (--quick: %d)" % (MEMORY_FRAMES, QUICK_MEMORY_FRAMES),
    )
    parser.add_argument(
        "--build-dir",
        default=os.path.join(REPO, "build", "floorhook"),
        help="where floorhook is built (default: build/floorhook)",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count instructions per unit of work for each mode under valgrind's "
        "callgrind: exact, and the same on a busy machine (a few minutes a workload); "
        "fib alone, or each of --workloads fib closures methods generators",
    )
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    parser.add_argument("--instructions-child", help=argparse.SUPPRESS)
    parser.add_argument("--instructions-workload", default="fib", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rounds is None:
        args.rounds = QUICK_ROUNDS if args.quick else DEFAULT_ROUNDS
    if args.rounds < 0:
        parser.error("--rounds must be >= 0")
    if args.memory_frames is None:
        args.memory_frames = QUICK_MEMORY_FRAMES if args.quick else MEMORY_FRAMES
    args.sizes = {}
    for item in args.size:
        name, _, value = item.partition("=")
        if name not in workloads.BY_NAME or not value.isdigit():
            parser.error(
                "--size expects WORKLOAD=N with WORKLOAD one of %s" % ", ".join(workloads.BY_NAME)
            )
        args.sizes[name] = int(value)
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    chosen = [MODES_BY_NAME[n] for n in args.modes] if args.modes else list(MODES)
    if args.memory_child:
        env = Env(args.build_dir, want_torch=False)
        memory_child(env, args.memory_child, args.memory_frames)
        return 0
    if args.instructions_child:
        env = Env(args.build_dir, want_torch=MODES_BY_NAME[args.instructions_child].torch)
        instructions_child(
            env,
            args.instructions_child,
            args.instructions_workload,
            args.sizes[args.instructions_workload],
        )
        return 0

    progress = Progress()
    progress.show("loading hooks (building floorhook if needed)")
    selected = (
        [workloads.BY_NAME[n] for n in args.workloads]
        if args.workloads
        else list(workloads.WORKLOADS)
    )
    want_torch = any(m.torch for m in chosen) or any(w.needs_torch for w in selected)
    env = Env(args.build_dir, want_torch=want_torch)
    unavailable = {}
    for w in selected:
        if w.needs_torch and env.dynamo is None:
            unavailable["workload " + w.name] = env.dynamo_reason
            progress.show("workload %s not available: %s" % (w.name, env.dynamo_reason), True)
    selected = [w for w in selected if "workload " + w.name not in unavailable]
    modes = []
    for m in chosen:
        reason = m.reason(env)
        if reason is None:
            modes.append(m)
        else:
            unavailable[m.name] = reason
            progress.show("mode %s not available: %s" % (m.name, reason), final=True)
    sizes = {
        w.name: args.sizes.get(w.name, w.quick_size if args.quick else w.size) for w in selected
    }
    check_clean(env)

    results, errors, hook_calls = {}, {}, {}
    if args.rounds > 0 and modes:
        results, errors, hook_calls = run_timing(env, modes, selected, sizes, args.rounds, progress)
    summary = summarize(selected, modes, sizes, results, hook_calls) if results else {}

    memory = None
    if args.memory:
        memory_modes = [m for m in MODES if m.name in ("none", "floor") or m.group == "pyframe"]
        memory = run_memory(args, memory_modes, progress)

    instructions = None
    if args.instructions:
        # fib, or the workloads asked for that callgrind can count (each mode
        # that runs them).
        counted = args.workloads if args.workloads else ["fib"]
        instructions = run_instructions(args, modes, progress, counted)

    meta = {
        "python": "%s %s (%s)"
        % (platform.python_implementation(), platform.python_version(), sys.executable),
        "python_version": platform.python_version(),
        "platform": "%s %s" % (platform.system(), platform.machine()),
        "cpu_count": os.cpu_count(),
        "pyframe": describe_pyframe(env),
        "pyframe_build": pyframe_build_kind(env.pyframe) if env.pyframe else None,
        "torch": env.dynamo.version if env.dynamo else None,
        "rounds": args.rounds,
        "quick": args.quick,
    }
    print_report(meta, summary, modes, unavailable, errors, memory)
    if instructions is not None:
        print()
        print(format_instructions(instructions))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "meta": meta,
                    "unavailable": unavailable,
                    "errors": errors,
                    "workloads": summary,
                    "memory": memory,
                    "instructions": instructions,
                },
                f,
                indent=2,
            )
            f.write("\n")
        progress.show("wrote %s" % args.json, final=True)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
