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
import contextlib
import gc
import importlib.util
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import workloads  # noqa: E402  (lives beside this file, found through sys.path above)

DEFAULT_ROUNDS = 7
QUICK_ROUNDS = 2
MEMORY_FRAMES = 1_000_000
QUICK_MEMORY_FRAMES = 100_000
MONITORING_TOOL_NAME = "pyframe-bench"
MIN_CALLS_FOR_PER_CALL = 10_000
NOISY_SPREAD = 1.25


# ---- what the modes need: loaded once, reasons kept when something is missing ----


class Env:
    """The hook providers the modes use, each either loaded or with a reason."""

    def __init__(self, build_dir, want_torch):
        self.floorhook, self.floorhook_reason = _load_floorhook(build_dir)
        self.pyframe, self.pyframe_reason = _load_pyframe()
        self.dynamo, self.dynamo_reason = (None, "not requested")
        if want_torch:
            self.dynamo, self.dynamo_reason = _load_dynamo()


def _load_floorhook(build_dir):
    path = os.path.join(REPO, "tools", "floorhook", "build.py")
    try:
        spec = importlib.util.spec_from_file_location("_floorhook_build", path)
        builder = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(builder)
        return builder.load(build_dir), None
    except Exception as exc:  # a missing compiler must not stop the other modes
        return None, "floorhook could not be built: %s: %s" % (type(exc).__name__, exc)


def _load_pyframe():
    try:
        import pyframe
    except ImportError as exc:
        return None, "pyframe is not importable here: %s" % exc
    return pyframe, None


def pyframe_build_kind(pyframe):
    """'debug' if the extension has assert()s compiled in, else 'release'.

    A debug build (PYFRAME_DEBUG=1) keeps assert() and so links glibc's
    __assert_fail; release builds compile asserts out.  Only a heuristic (and
    only for glibc), but it catches the usual mistake of timing the dev venv.
    """
    from pyframe import _cframe

    try:
        with open(_cframe.__file__, "rb") as f:
            data = f.read()
    except OSError:
        return "unknown"
    return "debug" if b"__assert_fail" in data else "release"


class DynamoHook:
    """TorchDynamo's PEP 523 hook, driven directly with a callback that skips.

    The callback protocol (torch/csrc/dynamo/eval_frame_cpp.cpp, torch >= 2.6)
    is callback(frame, cache_entry, frame_state) -> an object with
    frame_exec_strategy, apply_to_code and guarded_code; the default
    torch._dynamo.types.ConvertFrameReturn() means "run this frame as is and
    skip this code from now on", stored on the code object like pyframe.SKIP.
    Older torch read None as "no compiled code" and needed skip_code(code).
    """

    def __init__(self, torch):
        from torch._C._dynamo import eval_frame

        self.version = torch.__version__
        self.set_eval_frame = eval_frame.set_eval_frame
        self.get_eval_frame_callback = getattr(eval_frame, "get_eval_frame_callback", None)
        self.reset_code = getattr(eval_frame, "reset_code", None)
        self.skip_code = getattr(eval_frame, "skip_code", None)
        try:
            from torch._dynamo.types import ConvertFrameReturn
        except ImportError:
            ConvertFrameReturn = None
        if ConvertFrameReturn is not None:
            # One instance serves every frame: the hook only reads it.
            self.skip_result = ConvertFrameReturn()
        elif self.skip_code is not None:
            self.skip_result = None
        else:
            raise RuntimeError(
                "torch %s has neither ConvertFrameReturn nor skip_code" % self.version
            )


def _load_dynamo():
    try:
        with warnings.catch_warnings():
            # torch warns on import when numpy is missing: not our business.
            warnings.simplefilter("ignore")
            import torch
    except Exception as exc:
        return None, "torch is not importable here (%s: %s)" % (type(exc).__name__, exc)
    try:
        return DynamoHook(torch), None
    except Exception as exc:
        return None, "torch %s: Dynamo's eval-frame hook is not usable: %s" % (
            torch.__version__,
            exc,
        )


# ---- the modes -------------------------------------------------------------------
#
# Each mode is a context manager that installs its hook and removes it in a
# finally block, so an exception (or ^C) in a workload never leaves a hook
# behind for the next mode.


class Mode:
    def __init__(self, name, group, describe, activate, unavailable=None):
        self.name = name
        # "base", "floor-callback", "pyframe" or "other": the x-floor column is
        # shown for the middle two, whose cost over floor is the point.
        self.group = group
        self.describe = describe
        self._activate = activate
        self.unavailable = unavailable  # (env) -> reason or None

    def reason(self, env):
        return self.unavailable(env) if self.unavailable else None

    def active(self, env):
        return self._activate(env)


@contextlib.contextmanager
def _none(env):
    yield


@contextlib.contextmanager
def _floor(env):
    env.floorhook.install()
    try:
        yield
    finally:
        env.floorhook.uninstall()


def _empty():
    pass


@contextlib.contextmanager
def _callback_floor(env):
    env.floorhook.install(_empty)
    try:
        yield
    finally:
        env.floorhook.uninstall()


def _pyframe_mode(make_callback):
    @contextlib.contextmanager
    def activate(env):
        pyframe = env.pyframe
        # SKIP decisions (and cached code) live on code objects and would
        # carry over into the next install: start and end each run clean.
        pyframe.reset()
        previous = pyframe.set_callback(make_callback(pyframe))
        try:
            yield
        finally:
            pyframe.set_callback(previous)
            pyframe.reset()

    return activate


def _skip_callback(pyframe):
    skip = pyframe.SKIP

    def skip_every_code(frame):
        return skip

    return skip_every_code


def _observe_callback(pyframe):
    def observe(frame):
        _ = frame.f_locals

    return observe


def _cached_callback(pyframe):
    def compile_unguarded(frame):
        return pyframe.Compiled(frame.f_code.replace(), guard=None)

    return compile_unguarded


def _always_true(f_locals):
    return True


def _guarded_callback(pyframe):
    def compile_guarded(frame):
        return pyframe.Compiled(frame.f_code.replace(), guard=_always_true)

    return compile_guarded


def _on_py_start(code, instruction_offset):
    # Frame 0 is this callback; frame 1 the function that is starting.
    _ = sys._getframe(1).f_locals


@contextlib.contextmanager
def _monitoring(env):
    mon = sys.monitoring
    free = [t for t in (mon.PROFILER_ID, 3, 4, mon.OPTIMIZER_ID) if mon.get_tool(t) is None]
    if not free:
        raise RuntimeError("no free sys.monitoring tool id")
    tool = free[0]
    mon.use_tool_id(tool, MONITORING_TOOL_NAME)
    try:
        mon.register_callback(tool, mon.events.PY_START, _on_py_start)
        mon.set_events(tool, mon.events.PY_START)
        yield
    finally:
        # free_tool_id() alone leaves the events and callback in place on 3.12.
        try:
            mon.set_events(tool, mon.events.NO_EVENTS)
            mon.register_callback(tool, mon.events.PY_START, None)
        finally:
            mon.free_tool_id(tool)


def _trace_calls(frame, event, arg):
    if event == "call":
        _ = frame.f_locals
    return None  # no local tracing: only 'call' events


@contextlib.contextmanager
def _settrace(env):
    previous = sys.gettrace()
    sys.settrace(_trace_calls)
    try:
        yield
    finally:
        sys.settrace(previous)


@contextlib.contextmanager
def _dynamo_skip(env):
    hook = env.dynamo
    seen = set()
    skip_result = hook.skip_result

    def skip_every_code(frame, cache_entry=None, frame_state=None):
        code = frame.f_code
        seen.add(code)
        if skip_result is None:  # torch before ConvertFrameReturn
            hook.skip_code(code)
        return skip_result

    previous = hook.set_eval_frame(skip_every_code)
    try:
        yield
    finally:
        hook.set_eval_frame(previous)
        # Dynamo keeps SKIP on the code objects; forget it as pyframe.reset() does.
        if hook.reset_code is not None:
            for code in seen:
                hook.reset_code(code)


def _needs_floorhook(env):
    return env.floorhook_reason


def _needs_pyframe(env):
    return env.pyframe_reason


def _needs_compiled(env):
    if env.pyframe is None:
        return env.pyframe_reason
    if not hasattr(env.pyframe, "Compiled"):
        return "pyframe %s has no pyframe.Compiled yet (callbacks cannot return code)" % getattr(
            env.pyframe, "__version__", "?"
        )
    return None


def _needs_dynamo(env):
    return env.dynamo_reason


def _needs_monitoring(env):
    # PEP 669 is CPython 3.12's; on 3.11 `settrace` is the stdlib way to see
    # every frame's entry locals.
    return None if hasattr(sys, "monitoring") else "no sys.monitoring before CPython 3.12"


MODES = [
    Mode("none", "base", "no hook", _none),
    Mode("floor", "base", "floorhook: pass-through PEP 523 hook", _floor, _needs_floorhook),
    Mode(
        "callback-floor",
        "floor-callback",
        "floorhook calling an empty Python function per new frame",
        _callback_floor,
        _needs_floorhook,
    ),
    Mode(
        "pyframe-skip",
        "pyframe",
        "pyframe, callback returns SKIP",
        _pyframe_mode(_skip_callback),
        _needs_pyframe,
    ),
    Mode(
        "pyframe-observe",
        "pyframe",
        "pyframe, callback reads f_locals",
        _pyframe_mode(_observe_callback),
        _needs_pyframe,
    ),
    Mode(
        "pyframe-cached",
        "pyframe",
        "pyframe, Compiled(code.replace(), guard=None)",
        _pyframe_mode(_cached_callback),
        _needs_compiled,
    ),
    Mode(
        "pyframe-guarded",
        "pyframe",
        "pyframe, Compiled(code.replace(), guard=<returns True>)",
        _pyframe_mode(_guarded_callback),
        _needs_compiled,
    ),
    Mode(
        "monitoring",
        "other",
        "sys.monitoring PY_START reading f_locals",
        _monitoring,
        _needs_monitoring,
    ),
    Mode("settrace", "other", "sys.settrace 'call' events reading f_locals", _settrace),
    Mode(
        "dynamo-skip",
        "other",
        "TorchDynamo eval-frame hook skipping each code",
        _dynamo_skip,
        _needs_dynamo,
    ),
]
MODES_BY_NAME = {m.name: m for m in MODES}


class LeftoverHook(RuntimeError):
    """A mode's cleanup did not remove everything: later numbers would lie."""


def check_clean(env):
    left = []
    if env.floorhook is not None and env.floorhook.installed():
        left.append("floorhook")
    if env.pyframe is not None and (
        env.pyframe.hook_installed() or env.pyframe.get_callback() is not None
    ):
        left.append("pyframe")
    if sys.gettrace() is not None:
        left.append("sys.settrace")
    dynamo = env.dynamo
    if dynamo is not None and dynamo.get_eval_frame_callback is not None:
        if dynamo.get_eval_frame_callback() is not None:
            left.append("TorchDynamo callback")
    for tool in range(6 if hasattr(sys, "monitoring") else 0):
        if sys.monitoring.get_tool(tool) == MONITORING_TOOL_NAME:
            left.append("sys.monitoring tool %d" % tool)
    if left:
        raise LeftoverHook("hooks left installed after a mode: " + ", ".join(left))


# ---- timing ------------------------------------------------------------------------


def timed_run(workload, size):
    """One timed call of the workload; the collector is off so its pauses,
    which depend on allocation history, do not land on a random mode."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        result = workload.run(size)
        elapsed = time.perf_counter_ns() - start
    finally:
        gc.enable()
    return elapsed, result


def measure(env, mode, workload, size):
    with mode.active(env):
        # Warm up under the mode: installing or removing a PEP 523 hook
        # changes which call sites CPython can specialize, and the first frames
        # under a hook pay one-time costs (SKIP decisions, compiled code).
        workload.run(workload.quick_size)
        return timed_run(workload, size)


class Progress:
    """Where the run is, on stderr: one updating line on a terminal, a line per
    round-and-workload otherwise (logs stay short)."""

    def __init__(self):
        self.tty = sys.stderr.isatty()
        self.start = time.monotonic()

    def show(self, text, final=False):
        elapsed = time.monotonic() - self.start
        line = "[%6.1fs] %s" % (elapsed, text)
        if self.tty:
            sys.stderr.write("\r\033[K" + line + ("\n" if final else ""))
        elif final:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def count_hook_calls(env, workload, size):
    """PEP 523 calls per run (new frames and generator resumptions), via floorhook."""
    if env.floorhook is None:
        return None
    with _floor(env):
        env.floorhook.reset_calls()
        workload.run(size)
        return env.floorhook.calls()


def run_timing(env, modes, selected, sizes, rounds, progress):
    results = {w.name: {m.name: [] for m in modes} for w in selected}
    errors = {}
    expected = {}
    hook_calls = {}
    for w in selected:
        progress.show("setup %s: reference result and hook calls per run" % w.name)
        expected[w.name] = w.run(sizes[w.name])
        hook_calls[w.name] = count_hook_calls(env, w, sizes[w.name])
        check_clean(env)
    for r in range(rounds):
        shift = r % len(modes)
        order = modes[shift:] + modes[:shift]
        for w in selected:
            for mode in order:
                if mode.name in errors:
                    continue
                progress.show("round %d/%d  %-10s  %s" % (r + 1, rounds, w.name, mode.name))
                try:
                    elapsed, result = measure(env, mode, w, sizes[w.name])
                except LeftoverHook:
                    raise
                except Exception as exc:
                    errors[mode.name] = "%s on %s: %s" % (type(exc).__name__, w.name, exc)
                    progress.show("mode %s failed: %s" % (mode.name, errors[mode.name]), True)
                    continue
                finally:
                    check_clean(env)
                if result != expected[w.name]:
                    errors[mode.name] = "wrong result on %s: %r, expected %r" % (
                        w.name,
                        result,
                        expected[w.name],
                    )
                    progress.show("mode %s failed: %s" % (mode.name, errors[mode.name]), True)
                    continue
                results[w.name][mode.name].append(elapsed)
            progress.show("round %d/%d  %-10s  done" % (r + 1, rounds, w.name), final=True)
    return results, errors, hook_calls


# ---- memory: a fresh process per mode ------------------------------------------------


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
            os.path.abspath(__file__),
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


# ---- instruction counts (valgrind) -------------------------------------------------------

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
                    os.path.abspath(__file__),
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


# ---- report ----------------------------------------------------------------------------


def _best(times):
    return min(times) if times else None


def summarize(selected, modes, sizes, results, hook_calls):
    summary = {}
    for w in selected:
        per_mode = {}
        best_none = _best(results[w.name].get("none", []))
        best_floor = _best(results[w.name].get("floor", []))
        calls = hook_calls.get(w.name)
        for m in modes:
            times = results[w.name][m.name]
            if not times:
                continue
            best = _best(times)
            entry = {
                "times_ns": times,
                "best_ms": best / 1e6,
                "median_ms": statistics.median(times) / 1e6,
                "ratio_none": best / best_none if best_none else None,
                "ratio_floor": best / best_floor if best_floor and m.group != "base" else None,
                # Per hook call only where there are enough calls for the
                # difference to mean something (not for the loop workload).
                "ns_per_hook_call_over_none": (
                    (best - best_none) / calls
                    if best_none and calls and calls >= MIN_CALLS_FOR_PER_CALL
                    else None
                ),
            }
            per_mode[m.name] = entry
        summary[w.name] = {
            "size": sizes[w.name],
            "describe": w.describe,
            "hook_calls_per_run": calls,
            "modes": per_mode,
        }
    return summary


def _fmt(value, spec, missing="-"):
    return missing if value is None else format(value, spec)


def print_report(meta, summary, modes, unavailable, errors, memory):
    out = sys.stdout
    print("pyframe benchmark", file=out)
    print("  python:  %s" % meta["python"], file=out)
    print("  machine: %s, %s CPUs" % (meta["platform"], meta["cpu_count"]), file=out)
    print("  pyframe: %s" % meta["pyframe"], file=out)
    if meta.get("torch"):
        print("  torch:   %s" % meta["torch"], file=out)
    print(
        "  rounds:  %d (best of rounds shown; modes interleaved, order rotated each round; "
        "gc off while timing)" % meta["rounds"],
        file=out,
    )
    for name, reason in unavailable.items():
        print("  not available: %-16s %s" % (name, reason), file=out)
    for name, error in errors.items():
        print("  FAILED:        %-16s %s" % (name, error), file=out)
    for wname, w in summary.items():
        calls = w["hook_calls_per_run"]
        print(file=out)
        print(
            "%s: %s, n=%s, %s PEP 523 calls/run"
            % (wname, w["describe"], w["size"], _fmt(calls, ",d", "?")),
            file=out,
        )
        print(
            "  %-16s %10s %10s %8s %8s %12s"
            % ("mode", "best ms", "median ms", "x none", "x floor", "+ns/call"),
            file=out,
        )
        for m in modes:
            e = w["modes"].get(m.name)
            if e is None:
                continue
            show_floor = m.group in ("pyframe", "floor-callback")
            print(
                "  %-16s %10.2f %10.2f %8s %8s %12s"
                % (
                    m.name,
                    e["best_ms"],
                    e["median_ms"],
                    _fmt(e["ratio_none"], ".2f"),
                    _fmt(e["ratio_floor"] if show_floor else None, ".2f"),
                    _fmt(e["ns_per_hook_call_over_none"] if m.name != "none" else None, ".1f"),
                ),
                file=out,
            )
    if summary:
        names = list(summary)
        print(file=out)
        print("time / time(none), best of rounds:", file=out)
        print("  %-16s" % "mode" + "".join("%12s" % n for n in names), file=out)
        for m in modes:
            cells = [summary[n]["modes"].get(m.name, {}).get("ratio_none") for n in names]
            if all(c is None for c in cells):
                continue
            print("  %-16s" % m.name + "".join("%12s" % _fmt(c, ".2f") for c in cells), file=out)
    noisy = [
        "%s %.2f" % (name, w["modes"]["none"]["median_ms"] / w["modes"]["none"]["best_ms"])
        for name, w in summary.items()
        if "none" in w["modes"]
        and w["modes"]["none"]["median_ms"] > NOISY_SPREAD * w["modes"]["none"]["best_ms"]
    ]
    if noisy:
        # Best-of survives some load, but when even `none` varies this much
        # the ratios deserve a rerun on a quieter machine.
        print(file=out)
        print("WARNING: noisy machine, median/best of `none`: " + ", ".join(noisy), file=out)
    if memory:
        print(file=out)
        frames = next((r["frames"] for r in memory.values() if "frames" in r), None)
        print(
            "memory: peak RSS growth over %s frames after a 10,000-frame warmup, "
            "fresh process per mode" % _fmt(frames, ",d", "?"),
            file=out,
        )
        print("  %-16s %14s %14s %12s" % ("mode", "warm KiB", "after KiB", "growth KiB"), file=out)
        for name, r in memory.items():
            if "growth_kib" in r:
                print(
                    "  %-16s %14d %14d %12d"
                    % (name, r["before_kib"], r["after_kib"], r["growth_kib"]),
                    file=out,
                )
            else:
                print("  %-16s %s" % (name, r.get("unavailable") or r.get("error")), file=out)


def describe_pyframe(env):
    if env.pyframe is None:
        return "not importable (%s)" % env.pyframe_reason
    p = env.pyframe
    kind = pyframe_build_kind(p)
    text = "%s, %s build, %s" % (getattr(p, "__version__", "?"), kind, os.path.dirname(p.__file__))
    if kind == "debug":
        text += "  <-- WARNING: debug build (asserts, -O1); time a release build"
    return text


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
        help="also count instructions per fib call for each mode under valgrind's "
        "callgrind: exact, and the same on a busy machine (a few minutes)",
    )
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    parser.add_argument("--instructions-child", help=argparse.SUPPRESS)
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
        env = Env(args.build_dir, want_torch=args.instructions_child == "dynamo-skip")
        instructions_child(env, args.instructions_child, args.sizes["fib"])
        return 0

    progress = Progress()
    progress.show("loading hooks (building floorhook if needed)")
    env = Env(args.build_dir, want_torch=any(m.name == "dynamo-skip" for m in chosen))
    unavailable = {}
    modes = []
    for m in chosen:
        reason = m.reason(env)
        if reason is None:
            modes.append(m)
        else:
            unavailable[m.name] = reason
            progress.show("mode %s not available: %s" % (m.name, reason), final=True)
    selected = (
        [workloads.BY_NAME[n] for n in args.workloads]
        if args.workloads
        else list(workloads.WORKLOADS)
    )
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
        instructions = run_instructions(args, modes, progress)

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
