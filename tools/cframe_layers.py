"""Check that cframe/ is in layers: each file uses only files below it.

    python tools/cframe_layers.py [--cc CC] [--versions 3.11 3.12 ...]

The layers are the picture at the top of cframe/pyframe.h, top first.  Each
cframe/*.c is compiled on its own (with this interpreter's headers, or with
each version's, found by tools/find-python: the code differs per version),
and the
symbols its object leaves undefined are matched with the objects that define
them: that is which file calls (or reads) which, inline helpers from headers
included.  Prints the list, and exits 1 when a file uses a file at its own
level or above it, or a file is missing from the picture.
"""

import argparse
import os
import re
import subprocess
import sys
import sysconfig
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CFRAME = os.path.join(ROOT, "cframe")
# A picture line: " *   hook.c    per-thread state ..."; a file can share a
# level with the one above it by standing on the same line ("a.c, b.c").
PICTURE_LINE = re.compile(r"^ \*   ([a-z_]+\.c(?:, [a-z_]+\.c)*)(?:\s|$)")


def read_picture():
    """The layers from pyframe.h, bottom first: a list of sets of stems."""
    with open(os.path.join(CFRAME, "pyframe.h"), encoding="utf-8") as header:
        lines = header.read().split("*/", 1)[0].splitlines()
    levels = []
    for line in lines:
        match = PICTURE_LINE.match(line)
        if match:
            levels.append({name[: -len(".c")] for name in match.group(1).split(", ")})
    if not levels:
        sys.exit("cframe_layers: no layer picture found at the top of cframe/pyframe.h")
    return levels[::-1]


def include_dirs(versions):
    """(version, CPython's include directory) for each version, or for this
    interpreter when none is given."""
    if not versions:
        return [("%d.%d" % sys.version_info[:2], sysconfig.get_paths()["include"])]
    found = []
    for version in versions:
        finder = [os.path.join(ROOT, "tools", "find-python"), version]
        python = subprocess.run(finder, capture_output=True, text=True)
        if python.returncode != 0:
            sys.exit("cframe_layers: no CPython %s: %s" % (version, python.stderr.strip()))
        query = "import sysconfig; print(sysconfig.get_paths()['include'])"
        include = subprocess.run(
            [python.stdout.strip(), "-c", query], capture_output=True, text=True, check=True
        )
        found.append((version, include.stdout.strip()))
    return found


def compile_objects(cc, include, sources, into):
    objects = {}
    for stem in sources:
        obj = os.path.join(into, stem + ".o")
        command = [*cc, "-c", "-O1", "-fPIC", "-fvisibility=hidden", "-std=gnu11"]
        command += ["-I" + CFRAME, "-I" + include, os.path.join(CFRAME, stem + ".c"), "-o", obj]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit("cframe_layers: %s failed:\n%s" % (" ".join(command), result.stderr))
        objects[stem] = obj
    return objects


def symbols(obj, defined):
    flag = "--defined-only" if defined else "--undefined-only"
    output = subprocess.run(["nm", flag, obj], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in output.splitlines() if line.strip()}


def uses_of(cc, include, sources):
    """For each file, the other files whose symbols its object uses, with
    those symbols: {stem: {other stem: [symbol, ...]}}."""
    with tempfile.TemporaryDirectory(prefix="cframe-layers-") as into:
        objects = compile_objects(cc, include, sources, into)
        defined_by = {}
        for stem, obj in objects.items():
            for symbol in symbols(obj, defined=True):
                defined_by[symbol] = stem
        uses = {}
        for stem, obj in objects.items():
            uses[stem] = {}
            for symbol in sorted(symbols(obj, defined=False)):
                owner = defined_by.get(symbol)
                if owner is not None and owner != stem:
                    uses[stem].setdefault(owner, []).append(symbol)
    return uses


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cc", default=os.environ.get("CC", "cc"), help="the C compiler")
    parser.add_argument(
        "--versions", nargs="+", metavar="3.X", help="check the code as built for each of these"
    )
    args = parser.parse_args(argv)

    sources = sorted(name[: -len(".c")] for name in os.listdir(CFRAME) if name.endswith(".c"))
    levels = read_picture()
    level_of = {stem: index for index, level in enumerate(levels) for stem in level}
    problems = ["%s.c is not in pyframe.h's picture" % s for s in sources if s not in level_of]
    problems += [
        "pyframe.h's picture names %s.c, which does not exist" % s
        for s in level_of
        if s not in sources
    ]

    for version, include in include_dirs(args.versions):
        uses = uses_of(args.cc.split(), include, sources)
        print(
            "cframe/ layers (CPython %s build), top first; each file and the files it uses:"
            % version
        )
        for level in reversed(levels):
            for stem in sorted(level & set(sources)):
                used = uses.get(stem, {})
                named = ", ".join(sorted(f + ".c" for f in used)) or "-"
                print("  %-20s -> %s" % (stem + ".c", named))
                for target, names in sorted(used.items()):
                    if (
                        target in level_of
                        and stem in level_of
                        and level_of[target] >= level_of[stem]
                    ):
                        problems.append(
                            "%s: %s.c uses %s.c, which is not below it: %s"
                            % (version, stem, target, ", ".join(names))
                        )
    if problems:
        print("\n".join(["", "cframe_layers: not in layers:"] + ["  " + p for p in problems]))
        return 1
    print("every file uses only files below it: no circle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
