"""What the user reads: progress on stderr while it runs, and the text report."""

import sys
import time

from modes import NAME_WIDTH

# When even `none` varies this much (median over best), say the machine is noisy.
NOISY_SPREAD = 1.25


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
        print("  not available: %-*s %s" % (NAME_WIDTH, name, reason), file=out)
    for name, error in errors.items():
        print("  FAILED:        %-*s %s" % (NAME_WIDTH, name, error), file=out)
    for wname, w in summary.items():
        calls = w["hook_calls_per_run"]
        print(file=out)
        print(
            "%s: %s, n=%s, %s PEP 523 calls/run"
            % (wname, w["describe"], w["size"], _fmt(calls, ",d", "?")),
            file=out,
        )
        print(
            "  %-*s %10s %10s %8s %8s %12s"
            % (NAME_WIDTH, "mode", "best ms", "median ms", "x none", "x floor", "+ns/call"),
            file=out,
        )
        for m in modes:
            e = w["modes"].get(m.name)
            if e is None:
                continue
            show_floor = m.group in ("pyframe", "floor-callback")
            print(
                "  %-*s %10.2f %10.2f %8s %8s %12s"
                % (
                    NAME_WIDTH,
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
        print("  %-*s" % (NAME_WIDTH, "mode") + "".join("%12s" % n for n in names), file=out)
        for m in modes:
            cells = [summary[n]["modes"].get(m.name, {}).get("ratio_none") for n in names]
            if all(c is None for c in cells):
                continue
            print(
                "  %-*s" % (NAME_WIDTH, m.name) + "".join("%12s" % _fmt(c, ".2f") for c in cells),
                file=out,
            )
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
        print(
            "  %-*s %14s %14s %12s" % (NAME_WIDTH, "mode", "warm KiB", "after KiB", "growth KiB"),
            file=out,
        )
        for name, r in memory.items():
            if "growth_kib" in r:
                print(
                    "  %-*s %14d %14d %12d"
                    % (NAME_WIDTH, name, r["before_kib"], r["after_kib"], r["growth_kib"]),
                    file=out,
                )
            else:
                print(
                    "  %-*s %s" % (NAME_WIDTH, name, r.get("unavailable") or r.get("error")),
                    file=out,
                )
