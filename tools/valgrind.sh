#!/usr/bin/env bash
# Usage: tools/valgrind.sh [3.11|3.12|3.13|3.14|3.15] [pytest arguments...]
#
# Runs a representative part of the test suite under valgrind's memcheck, with
# pyframe built for debugging (-O1 -g, asserts on) into its own venv
# (.venv-valgrind-VERSION).  Any memcheck error fails the run (exit 99).
#
# - PYTHONMALLOC=malloc: pymalloc's pools hide use-after-free of Python
#   objects from memcheck and make it report false positives (its
#   address_in_range reads memory it does not own); with plain malloc every
#   object is a heap block memcheck tracks.
# - --leak-check=no: CPython does not free everything at exit; leaks are
#   tests/test_refcounts.py's business.
# - tools/variant-venv.sh builds it (from a copy of the sources, not in place).
# - tools/valgrind-python.supp holds the suppressions this needs, if any.
#
# With pytest arguments, they replace the default selection below.  Memcheck
# runs code some 20-50 times slower: the default selection is the tests that
# drive cframe/ hardest, with fewer generated examples.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
version=${1:-3.12}
shift || true

if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2
    exit 2
fi

venv=$(tools/variant-venv.sh valgrind "$version")

if [ $# -eq 0 ]; then
    set -- test_callback_protocol.py test_locals_dict.py test_replacement.py test_faults.py \
        test_threads.py test_generated.py test_chaining.py py311 specialization
    export PYFRAME_FUZZ_EXAMPLES=${PYFRAME_FUZZ_EXAMPLES:-15}
fi

# CPython 3.11.7 itself trips memcheck's uninitialised-value checks: its
# _PyLong_New leaves the digit of a zero-sized int unset, maybe_small_long
# multiplies that digit by the size (0), and memcheck, which does not know the
# product is defined, flags every small int got that way wherever it is used:
# 622 errors from 26 contexts in `python3.11 -c pass` alone, all from
# _PyLong_New by --track-origins, none in pyframe's code.  On 3.11 memcheck
# checks addressing only (invalid reads, writes and frees: use-after-free of
# what pyframe releases); uninitialised values are checked on 3.12+.
checks=()
if [ "$version" = 3.11 ]; then
    checks+=(--undef-value-errors=no)
fi

# From tests/, so `import pyframe` finds the venv's install, not the source tree.
cd "$root/tests"
export PYTHONMALLOC=malloc
exec valgrind --tool=memcheck --error-exitcode=99 --leak-check=no "${checks[@]}" \
    --suppressions="$root/tools/valgrind-python.supp" --num-callers=40 \
    "$venv/bin/python" -m pytest -p no:cacheprovider -q "$@"
