"""Instructions per Python function, from a callgrind run of code that ran
under CPython's perf trampolines (3.12+, sys.activate_stack_trampoline("perf")).

callgrind puts every Python function's own work in _PyEval_EvalFrameDefault.
With the trampolines on, each code object is entered through a small
trampoline of its own, a function to callgrind (an address in no object),
whose inclusive count is the Python function's cost with its callees';
CPython names each trampoline in /tmp/perf-PID.map ("ADDRESS SIZE
py::QUALNAME:FILE").  The trampolines add a few instructions to every
Python call, so these counts are read beside the plain ones, not against
them.
"""

import os
import re
import subprocess

# callgrind_annotate's lines for a function with no symbol: "1,234 (5.00%)
# ???:0x00000000d3fca000 [???]", "'2" after the address at a recursion level.
_UNNAMED = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+\?\?\?:0x([0-9a-f]+)('\d+)? \[\?\?\?\]$")


def map_path(pid):
    return "/tmp/perf-%d.map" % pid


def read_map(pid):
    """{trampoline address: "qualname (file name)"} for process `pid`."""
    names = {}
    with open(map_path(pid)) as f:
        for line in f:
            address, _size, name = line.rstrip("\n").split(" ", 2)
            if name.startswith("py::"):
                qualname, _, path = name[4:].rpartition(":")
                names[int(address, 16)] = "%s (%s)" % (qualname, os.path.basename(path))
    return names


def annotate(out, inclusive):
    """callgrind_annotate's listing of callgrind output `out`: each
    function's instructions, its callees' included when `inclusive`."""
    done = subprocess.run(
        [
            "callgrind_annotate",
            "--inclusive=" + ("yes" if inclusive else "no"),
            "--threshold=100",
            out,
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit("callgrind_annotate failed on %s: %s" % (out, done.stderr.strip()))
    return done.stdout


def inclusive(out, pid):
    """{Python function: its instructions, callees included} in callgrind
    output `out` of process `pid` (the outermost call of a recursion: its
    inner levels are inside it)."""
    names = read_map(pid)
    functions = {}
    for line in annotate(out, inclusive=True).splitlines():
        found = _UNNAMED.match(line)
        if found is None or found.group(3):
            continue
        name = names.get(int(found.group(2), 16))
        if name is not None:
            functions[name] = functions.get(name, 0) + int(found.group(1).replace(",", ""))
    return functions
