"""A small program for tests/test_cli.py.

python demo.py [--fail] [--exit CODE] [--exit-message TEXT] [--read]
"""

import sys


def make_adder(base):
    def add(x, y=2):
        return base + x + y

    return add


def greet(name, punctuation="!"):
    message = f"hello {name}{punctuation}"
    print(message)
    return message


class Big:
    def __repr__(self):
        return "Big(" + "x" * 500 + ")"


class Broken:
    def __repr__(self):
        raise ValueError("no repr today")


def show(obj, label="obj"):
    return label


def countdown(n):
    while n > 0:
        yield n
        n -= 1


def fail(n):
    raise ValueError(f"bad value {n}")


def main(argv):
    add = make_adder(10)
    print("sums", add(1), add(2, y=3))
    greet("world")
    show(Big())
    show(Broken(), label="broken")
    print("countdown", list(countdown(2)))
    if "--read" in argv:
        print("read", sys.stdin.readline().strip())
    if "--fail" in argv:
        fail(7)
    if "--exit" in argv:
        sys.exit(int(argv[argv.index("--exit") + 1]))
    if "--exit-message" in argv:
        sys.exit(argv[argv.index("--exit-message") + 1])


if __name__ == "__main__":
    print("argv", sys.argv)
    print("path0", sys.path[0])
    print("file", __file__)
    main(sys.argv[1:])
    print("done")
