"""Run replacement code: a toy JIT that swaps in a faster version behind a guard.

Run it with `make run`, or `python examples/compiled.py` once pyframe is installed.
"""

import pyframe


def total(n):
    """Sum 0..n-1 the slow way."""
    result = 0
    for i in range(n):
        result += i
    return result


# What our "compiler" produces for `total`: same arguments, different body.
FAST_SOURCE = "def total(n):\n    return n * (n - 1) // 2\n"


def compile_fast():
    namespace = {}
    exec(compile(FAST_SOURCE, "<jit:total>", "exec"), namespace)
    return namespace["total"].__code__


def jit(frame):
    if frame.f_code is total.__code__:
        print(f"jit: compiling {frame.f_code.co_qualname} for {frame.f_locals}")
        # Cache it on total's code object; later calls with an int skip the callback.
        return pyframe.Compiled(compile_fast(), guard=lambda f_locals: type(f_locals["n"]) is int)
    return pyframe.SKIP  # nothing to do for other code: never ask again


if __name__ == "__main__":
    with pyframe.callback(jit):
        answers = [total(n) for n in (10, 1000, 10**6)]
    print("answers:", answers)
    for code, guard, hits in pyframe.cache_entries(total.__code__):
        print(f"cached: {code.co_filename} guard={guard.__name__} hits={hits}")
    assert answers == [sum(range(n)) for n in (10, 1000, 10**6)]
