"""CPython 3.14+: frame slots are stack references (gh-117139).

A slot may refer to an object without owning a reference: immortal objects,
and arguments the caller loaded with LOAD_FAST_BORROW.  The shared tests in
test_refcounts.py write, move and empty such slots; these tests check that
they really are handed borrowed and immortal references here, so those tests
keep covering the case, and that a borrowed argument a replacement keeps
outlives the caller's variable.
"""

import dis
import gc
import sys
import weakref

import pytest
from conftest import PY314

import pyframe

pytestmark = pytest.mark.skipif(not PY314, reason="CPython 3.14 behaviour")


def callee(a, b):
    return a, b


def caller(a, b):
    return callee(a, b)


def test_the_shared_refcount_tests_pass_borrowed_arguments():
    import test_refcounts

    def loads(code):
        return {ins.opname for ins in dis.get_instructions(code)}

    make_call = test_refcounts.test_refcounts_unchanged_where_slots_are_written
    inner = next(c for c in make_call.__code__.co_consts if hasattr(c, "co_code"))
    assert "LOAD_FAST_BORROW" in loads(inner) | loads(caller)


class Value:
    pass


KEPT = []


def keeper(a, b):
    return a, b


def keeper_replacement(a, b):
    KEPT.append(a)
    return a, b


def test_a_borrowed_argument_kept_by_a_replacement_outlives_the_caller():
    def run_once():
        value = Value()
        ref = weakref.ref(value)
        keeper(value, None)  # value reaches keeper's frame as a borrowed ref
        del value
        return ref

    replacement = keeper_replacement.__code__.replace(co_name="keeper")

    def callback(frame):
        if frame.f_code is keeper.__code__:
            frame.set_local("b", 7)  # immortal: a tagged reference
            return replacement

    KEPT.clear()
    with pyframe.callback(callback):
        refs = [run_once() for _ in range(100)]
    gc.collect()
    assert all(ref() is not None for ref in refs)
    assert [sys.getrefcount(v) for v in KEPT] == [sys.getrefcount(KEPT[0])] * 100
    KEPT.clear()
    gc.collect()
    assert all(ref() is None for ref in refs)
