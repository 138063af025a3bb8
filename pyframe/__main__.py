"""python -m pyframe: the command line debugger (see pyframe.cli).

The `pyframe` command (pyframe.cli.console_script) is the same command line.
"""

from pyframe.cli import main

if __name__ == "__main__":
    raise SystemExit(main(prog="python -m pyframe"))
