#!/usr/bin/env bash
# Usage: tools/asan.sh [3.11|3.12|3.13|3.14|3.15] [pytest arguments...]
#
# Builds pyframe with AddressSanitizer and UndefinedBehaviorSanitizer into its
# own venv (.venv-asan-VERSION) and runs the test suite there.
#
# - The interpreter is not instrumented, so libasan is LD_PRELOADed: its
#   runtime must be first in the process to intercept malloc and free.
# - PYTHONMALLOC=malloc sends every Python object through malloc, so a
#   use-after-free or overflow of an object pyframe released is caught (pymalloc
#   would hand the memory out again unseen).
# - detect_leaks=0: CPython does not free everything at exit; leaks are
#   tests/test_refcounts.py's business.
# - UBSan stops at its first report, with a stack trace.
#
# tools/variant-venv.sh builds it (from a copy of the sources, not in place).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
version=${1:-3.12}
shift || true

libasan=$(gcc -print-file-name=libasan.so)
if [ ! -e "$libasan" ]; then
    echo "asan.sh: gcc has no libasan.so (apt-get install libasan8 or gcc's)" >&2
    exit 2
fi

sanitize="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
venv=$(CFLAGS="$sanitize" LDFLAGS="$sanitize" tools/variant-venv.sh asan "$version")

# From tests/, so `import pyframe` finds the venv's instrumented install and
# not the source tree (as tox does).
cd "$root/tests"
export LD_PRELOAD=$libasan
export PYTHONMALLOC=malloc
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:halt_on_error=1:print_summary=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
exec "$venv/bin/python" -m pytest -p no:cacheprovider -q "$@"
