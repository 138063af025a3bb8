"""Print every intercepted function's name and entry locals.

Run it with `make run`, or `python examples/hello.py` once pyframe is installed.
"""

import pyframe


def show(frame):
    code = frame.f_code
    print(f"-> {code.co_qualname}  {frame.f_locals}")
    # Returning None lets the frame run normally; ask again next time.


def make_counter(start):
    count = start

    def bump(step=1):
        nonlocal count
        count += step
        return count

    return bump


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def main():
    bump = make_counter(10)
    bump()
    bump(step=5)
    squares = [x * x for x in range(3)]
    return fib(3), squares


if __name__ == "__main__":
    with pyframe.callback(show):
        result = main()
    print("result:", result)
