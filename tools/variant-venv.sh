#!/usr/bin/env bash
# Usage: tools/variant-venv.sh NAME VERSION   (CFLAGS/LDFLAGS from the environment)
#
# Makes .venv-NAME-VERSION with the [test] extras and a debug build of pyframe
# (-O1 -g, asserts on, our C with -Werror) compiled with the CFLAGS/LDFLAGS
# it is given: tools/asan.sh and tools/valgrind.sh build their variants here.
#
# Built without isolation (so the flags reach the compiler and nothing is
# downloaded per build) from a copy of the sources, never in place: the dev
# venvs import pyframe/_cframe.*.so from the source tree, and a variant there
# would break them.  Prints the venv's path.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
name=$1
version=$2
python=$(tools/find-python "$version")
venv=$root/.venv-$name-$version
work=$root/build/$name-$version

if [ ! -x "$venv/bin/python" ]; then
    tools/make-venv "$python" "$venv"
fi
"$venv/bin/python" - >&2 <<'PY'
import subprocess, sys, tomllib
with open("pyproject.toml", "rb") as f:
    test = tomllib.load(f)["project"]["optional-dependencies"]["test"]
subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", "cython", "setuptools>=77", *test])
PY

rm -rf "$work"
mkdir -p "$work/src"
# What setup.py builds from (MANIFEST-less: these are the whole sdist).
cp -r setup.py pyproject.toml README.md pyframe-dynamo.pth pyframe cframe "$work/src/"
rm -f "$work"/src/pyframe/*.so "$work"/src/pyframe/_cframe.c
(
    cd "$work/src"
    PYFRAME_DEBUG=1 PYFRAME_WERROR=1 \
        "$venv/bin/pip" install --quiet --no-build-isolation --no-deps --force-reinstall . >&2
)
rm -rf "$work"
echo "$venv"
