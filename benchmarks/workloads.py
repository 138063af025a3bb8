"""The code bench.py times: four call-heavy workloads, one loop-heavy one,
and (where torch imports) one that calls a tiny tensor function.

Each workload is `run(size) -> result`.  The result is deterministic for a
size, so the harness can check that no mode changed what the code computes.
The call-heavy ones make hundreds of thousands of frames per run, which is
where a frame hook's per-frame cost shows; the loop-heavy one makes a handful,
so a hook should cost nothing there (what it does cost is the price of
having a hook installed at all, e.g. lost specialization or tracing checks).
"""

from dataclasses import dataclass

# ---- recursion --------------------------------------------------------------


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def run_fib(size):
    return fib(size)


def fib_frames(size):
    # fib(n) makes fib(n-1) + fib(n-2) + 1 calls: 2 * fib(n + 1) - 1 in all.
    a, b = 0, 1
    for _ in range(size + 1):
        a, b = b, a + b
    return 2 * a - 1


# ---- closures ---------------------------------------------------------------


def make_scaler(factor, offset):
    # Two free variables, so every closure carries cells (and the frame has
    # free slots a hook has to deal with when it builds locals).
    def scale(x):
        return x * factor + offset

    return scale


def run_closures(size):
    total = 0
    for i in range(size):
        scale = make_scaler(i & 7, i & 3)
        total += scale(i) + scale(1)
    return total


# ---- a tree of method calls ---------------------------------------------------


class Node:
    __slots__ = ("left", "right", "weight")

    def __init__(self, depth, weight):
        self.weight = weight
        if depth > 0:
            self.left = Node(depth - 1, weight * 2)
            self.right = Node(depth - 1, weight * 2 + 1)
        else:
            self.left = self.right = None

    def own(self):
        return self.weight & 0xFF

    def total(self):
        result = self.own()
        if self.left is not None:
            result += self.left.total() + self.right.total()
        return result


_TREES = {}


def run_methods(size):
    # Built once per depth and kept: the timed part is the method calls, not
    # the allocation of the tree.
    tree = _TREES.get(size)
    if tree is None:
        tree = _TREES[size] = Node(size, 1)
    return tree.total() + tree.total()


# ---- generators ---------------------------------------------------------------


def countdown(n):
    while n > 0:
        yield n
        n -= 1


def evens(values):
    for v in values:
        if not v & 1:
            yield v


def run_generators(size):
    # Many short generators (a new frame each, then resumptions from C via
    # sum()) and one pipeline resumed from Python for-loops.
    total = 0
    for i in range(size):
        total += sum(countdown(i & 7))
    for v in evens(countdown(size)):
        total += v
    return total


# ---- loop-heavy, few frames ------------------------------------------------------


def run_loop(size):
    acc = 0
    for i in range(size):
        acc = (acc * 31 + i) & 0xFFFFF
        if acc & 1:
            acc ^= i
    return acc


# ---- a tensor function, what TorchDynamo compiles (needs torch) -------------------


def add_one(x):
    return x + 1


_TENSOR = []


def run_tensor(size):
    # torch is imported on first use only: the other workloads run without it.
    if not _TENSOR:
        import torch

        _TENSOR.append(torch.ones(2))
    x = _TENSOR[0]
    total = 0.0
    for _ in range(size):
        total += float(add_one(x)[0])
    return total


# ---- memory check: one small frame at a time ----------------------------------------


def leaf(a, b):
    c = a + b
    return c


def run_calls(frames):
    total = 0
    for i in range(frames):
        total += leaf(i, 1)
    return total


# ---- the table the harness reads -----------------------------------------------


@dataclass(frozen=True)
class Workload:
    name: str
    run: object  # callable(size) -> result
    size: int  # for a real run: about 30-80 ms on a 2020s x86 core, no hook
    quick_size: int  # for --quick, and for warming up before each timed run
    describe: str
    needs_torch: bool = False


WORKLOADS = [
    Workload("fib", run_fib, 27, 12, "recursive fib(n)"),
    Workload("closures", run_closures, 150_000, 500, "make a closure and call it twice, n times"),
    Workload("methods", run_methods, 15, 6, "method calls over a binary tree of depth n, twice"),
    Workload("generators", run_generators, 60_000, 300, "n short generators + a 2-stage pipeline"),
    Workload("loop", run_loop, 2_000_000, 5_000, "one function looping n times (few frames)"),
    Workload(
        "tensor", run_tensor, 20_000, 50, "call x + 1 on a 2-element CPU tensor n times", True
    ),
]

BY_NAME = {w.name: w for w in WORKLOADS}
