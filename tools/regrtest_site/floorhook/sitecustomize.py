"""sitecustomize for tools/regrtest.py's "floorhook" run.

tools/regrtest.py copies this file into a temporary directory next to a fresh
build of tools/floorhook and puts that directory first on PYTHONPATH, so every
interpreter the run starts (regrtest, its workers, and the interpreters tests
start without -I/-E) installs floorhook's pass-through PEP 523 function before
any test code runs.  The hook is interpreter-wide: every thread goes through it.

With PYFRAME_REGRTEST_THREADS=1 threading.Thread._bootstrap_inner is wrapped
exactly as in the pyframe run (the wrapper does nothing here), so both runs
have the same extra frame at the bottom of every threading.Thread's stack.
This file must stay silent: tests compare their subprocesses' output.
"""

import os

import floorhook

floorhook.install()

if os.environ.get("PYFRAME_REGRTEST_THREADS") == "1":
    import threading

    _bootstrap_inner = threading.Thread._bootstrap_inner

    def _regrtest_bootstrap_inner(self, bootstrap_inner=_bootstrap_inner):
        bootstrap_inner(self)

    threading.Thread._bootstrap_inner = _regrtest_bootstrap_inner
