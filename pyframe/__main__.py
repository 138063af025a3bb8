"""python -m pyframe: the command line debugger (see pyframe.cli)."""

from pyframe.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
