"""Dynamo's cache entries as pyframe.FastGuards (pyframe/dynamo/_guard.py):
on a warm call pyframe checks the guard manager itself, without the entry's
Python guard, and the settings that change a lookup disarm that path; what
Dynamo does is compared with native, in one process."""

import pytest

pytest.importorskip("torch", minversion="2.11")

import torch  # noqa: E402

import pyframe  # noqa: E402
import pyframe.dynamo  # noqa: E402
from pyframe.dynamo import _guard  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_dynamo")  # tests/conftest.py


def both_ways(program):
    """program() natively, then under installed() (Dynamo reset before each)."""
    torch._dynamo.reset()
    native = program()
    torch._dynamo.reset()
    with pyframe.dynamo.installed():
        ours = program()
    assert ours == native
    return native


def add_n(x, n):
    return x + n


class CountingEntries:
    """Counts calls of the Python guard of every Dynamo cache entry."""

    def __init__(self):
        self.calls = 0
        self.full_guard = _guard.CacheEntry.__call__

    def __enter__(self):
        full_guard = self.full_guard

        def counting(entry, f_locals):
            self.calls += 1
            return full_guard(entry, f_locals)

        _guard.CacheEntry.__call__ = counting
        return self

    def __exit__(self, *exc):
        _guard.CacheEntry.__call__ = self.full_guard


def test_a_warm_call_checks_the_guard_manager_without_the_entrys_python_guard():
    torch._dynamo.reset()
    x = torch.ones(2)
    with pyframe.dynamo.installed(), CountingEntries() as entries:
        fn = torch.compile(add_n, backend="eager")
        fn(x, 1)  # compiles: no guard asked
        fn(x, 1)  # the Python guard, which arms the entry
        assert entries.calls == 1
        outputs = [fn(x, 1).tolist() for _ in range(20)]
        assert entries.calls == 1
        assert fn(x, 2).tolist() == [3.0, 3.0]  # the armed check fails: compiled again
        assert fn(x, 1).tolist() == [2.0, 2.0]
        assert entries.calls == 2  # n=1's, found second: not armed for n=2
        entries_now = pyframe.cache_entries(add_n.__code__, cache=pyframe.dynamo._cache.CACHE)
        assert len(entries_now) == 2
    assert outputs == [[2.0, 2.0]] * 20


def test_the_unsafe_stance_disarms_the_entries_armed_before_it():
    # One entry, armed by the warm calls; under skip_guard_eval_unsafe only
    # what differs between entries is checked (nothing, with one), so n=2
    # runs the n=1 code, natively.  An entry still armed would check all of
    # its guards and fail the call ("Recompilation triggered ...").
    def program():
        fn = torch.compile(add_n, backend="eager")
        x = torch.ones(2)
        outputs = [fn(x, 1).tolist() for _ in range(3)]
        try:
            with torch.compiler.set_stance(skip_guard_eval_unsafe=True):
                outputs.append(fn(x, 2).tolist())
        except RuntimeError as error:
            outputs.append(str(error).split(".")[0])
        outputs.append(fn(x, 2).tolist())
        return outputs

    native = both_ways(program)
    assert native == [[2.0, 2.0]] * 4 + [[3.0, 3.0]]


def test_an_entry_of_another_backend_is_asked_again_and_not_run():
    # Armed for the first compile's callback; the second compile's callback,
    # with another backend, must not run its code (Dynamo compiles again).
    def program():
        counts = []

        def counting(gm, example_inputs):
            counts.append(len(counts))
            return gm.forward

        first = torch.compile(add_n, backend="eager")
        second = torch.compile(add_n, backend=counting)
        x = torch.ones(2)
        outputs = [first(x, 1).tolist() for _ in range(3)]
        outputs += [second(x, 1).tolist() for _ in range(3)]
        outputs += [first(x, 1).tolist()]
        return outputs, counts

    outputs, counts = both_ways(program)
    assert counts == [0]
