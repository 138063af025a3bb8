"""Warm-call overhead of a trivial compiled function: pyframe.dynamo.compile
against torch.compile and Dynamo's raw hook, in one process.

    python benchmarks/dynamo_bench.py [--calls N] [--rounds R]

Modes (each a compiled `x + 1` on a 2-element CPU tensor, backend "eager",
called N times per round; best round reported, in microseconds per call):

- eager: the function itself.
- torch.compile: torch.compile's wrapper around every call.
- dynamo-raw: Dynamo's hook installed once around the loop
  (torch._C._dynamo.eval_frame.set_eval_frame with torch.compile's callback),
  so each call costs Dynamo's C cache lookup and guards only.
- pyframe.dynamo.compile: pyframe.dynamo's wrapper around every call.
- pyframe-raw: pyframe's callback installed once around the loop, so each
  call costs pyframe's cache lookup and Dynamo's guard only.

Needs torch 2.13 (the torch tox environments).  Modes are interleaved, so a
busy machine slows them alike.
"""

import argparse
import time

import torch
from torch._C._dynamo import eval_frame as dynamo_eval_frame

import pyframe
import pyframe.dynamo


def trivial(x):
    return x + 1


def loop(fn, x, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn(x)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    x = torch.ones(2)

    native = torch.compile(trivial, backend="eager")
    native(x)  # compiles; Dynamo's cache now holds trivial's entry
    dynamo_callback = torch._dynamo.optimize("eager").callback
    ours = pyframe.dynamo.compile(trivial, backend="eager")
    ours(x)
    compiler = ours._pyframe_dynamo_compiler

    # The raw hooks are installed inside the frame that loops, which is
    # running already and so is never handed to Dynamo's callback.
    def dynamo_raw(x, calls):
        prior = dynamo_eval_frame.set_eval_frame(dynamo_callback)
        start = time.perf_counter()
        for _ in range(calls):
            trivial(x)
        elapsed = time.perf_counter() - start
        dynamo_eval_frame.set_eval_frame(prior)
        return elapsed

    def pyframe_raw(x, calls):
        pyframe.set_callback(compiler, cache=compiler.cache)
        start = time.perf_counter()
        for _ in range(calls):
            trivial(x)
        elapsed = time.perf_counter() - start
        pyframe.set_callback(None)
        return elapsed

    modes = {
        "eager": lambda: loop(trivial, x, args.calls),
        "torch.compile": lambda: loop(native, x, args.calls),
        "dynamo-raw": lambda: dynamo_raw(x, args.calls),
        "pyframe.dynamo.compile": lambda: loop(ours, x, args.calls),
        "pyframe-raw": lambda: pyframe_raw(x, args.calls),
    }
    best = {name: float("inf") for name in modes}
    for _ in range(args.rounds):
        for name, run in modes.items():
            best[name] = min(best[name], run())
    eager = best["eager"]
    print(f"{'mode':<24} {'us/call':>8} {'over eager':>11}")
    for name, seconds in best.items():
        per_call = seconds / args.calls * 1e6
        over = (seconds - eager) / args.calls * 1e6
        print(f"{name:<24} {per_call:8.2f} {over:11.2f}")


if __name__ == "__main__":
    main()
