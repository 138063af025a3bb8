"""python -m samplepkg.tool [N...]: doubles each N."""

import sys


def double(value):
    return value * 2


def main(args):
    for arg in args:
        print("double", double(int(arg)))
    return len(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) and 0)
