"""The timing harness: every mode in this one process, interleaved, best of
rounds, gc off while timing; and the per-workload summary of the times."""

import gc
import statistics
import time

from modes import MODES_BY_NAME, LeftoverHook, check_clean

# Per hook call only where there are enough calls for the difference to mean
# something (not for the loop workload).
MIN_CALLS_FOR_PER_CALL = 10_000


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


def count_hook_calls(env, workload, size):
    """PEP 523 calls per run (new frames and generator resumptions), via floorhook."""
    if env.floorhook is None:
        return None
    with MODES_BY_NAME["floor"].active(env):
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
                if mode.name in errors or not mode.runs(w.name):
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
