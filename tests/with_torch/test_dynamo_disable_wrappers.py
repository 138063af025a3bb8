"""The wrappers compiled code calls through (pyframe/dynamo/_disable_wrappers.py):
each graph's disable wrapper and the pre-graph profiler bracket, natively and
under pyframe.dynamo.installed(), in one process.

What a graph sees of the frame layer while it runs (the thread's callback,
by stance), what a profiler records, what an error in a graph does, and what
the wrapper object looks like to Dynamo, are compared with native Dynamo.
"""

import pytest

pytest.importorskip("torch", minversion="2.11")

import torch  # noqa: E402
import torch._dynamo.testing  # noqa: E402

import pyframe  # noqa: E402
import pyframe.dynamo  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_dynamo")  # tests/conftest.py


def both_ways(program):
    """program() natively, then under installed() (Dynamo reset before each)."""
    torch._dynamo.reset()
    native = program()
    torch._dynamo.reset()
    with pyframe.dynamo.installed():
        ours = program()
    return native, ours


def callback_seeing_backend(seen):
    """An eager backend whose graphs note, each time they run, the thread's
    Dynamo callback as the frame layer reports it: None, False (run-only) or
    a callback."""

    def backend(gm, example_inputs):
        def run(*args):
            callback = torch._C._dynamo.eval_frame.get_eval_frame_callback()
            seen.append(callback if callback in (None, False) else "a callback")
            return gm.forward(*args)

        return run

    return backend


def add_one(x):
    return x + 1


def test_a_graph_runs_with_no_callback_and_gives_it_back_as_natively():
    def program():
        seen = []
        fn = torch.compile(add_one, backend=callback_seeing_backend(seen))
        fn(torch.ones(3))
        fn(torch.ones(3))
        after = torch._C._dynamo.eval_frame.get_eval_frame_callback()
        return seen, after

    native, ours = both_ways(program)
    assert native == ([None, None], None)
    assert ours == native


def test_the_graph_sees_the_stances_callback_as_natively():
    # eager_on_recompile runs cached code with a run-only callback (False):
    # Dynamo's own wrapper does that; force_eager runs no graph.
    def program():
        seen = []
        fn = torch.compile(add_one, backend=callback_seeing_backend(seen))
        fn(torch.ones(3))
        with torch.compiler.set_stance("eager_on_recompile"):
            fn(torch.ones(3))
            fn(torch.ones(5))
        with torch.compiler.set_stance("force_eager"):
            fn(torch.ones(3))
        fn(torch.ones(3))
        return seen

    native, ours = both_ways(program)
    assert False in native, "the stance does not reach the graph's wrapper: the test sees nothing"
    assert ours == native


def test_an_error_in_a_graph_propagates_and_the_callback_is_given_back():
    def failing_backend(gm, example_inputs):
        def run(*args):
            raise ValueError("graph failed")

        return run

    def program():
        fn = torch.compile(add_one, backend=failing_backend)
        outcomes = []
        for _ in range(2):
            try:
                fn(torch.ones(3))
            except ValueError as error:
                outcomes.append(str(error))
            outcomes.append(torch._C._dynamo.eval_frame.get_eval_frame_callback())
        return outcomes

    native, ours = both_ways(program)
    assert native == ["graph failed", None, "graph failed", None]
    assert ours == native


def test_a_graph_that_is_a_module_runs_as_natively():
    # A backend may return a module (DDPOptimizer returns its split graph):
    # Dynamo wraps it in an OptimizedModule, not in a function.
    def module_backend(gm, example_inputs):
        return gm

    def program():
        fn = torch.compile(add_one, backend=module_backend)
        outputs = [fn(torch.ones(3)).tolist() for _ in range(2)]
        outputs.append(torch._C._dynamo.eval_frame.get_eval_frame_callback())
        return outputs

    native, ours = both_ways(program)
    assert native == [[2.0] * 3, [2.0] * 3, None]
    assert ours == native


def test_the_profiler_records_the_pregraph_bytecode_as_natively():
    def program():
        fn = torch.compile(add_one, backend="eager")
        x = torch.ones(3)
        fn(x)
        with torch.profiler.profile() as prof:
            for _ in range(3):
                fn(x)
        return sum(event.name == "Pregraph bytecode" for event in prof.events())

    native, ours = both_ways(program)
    assert native == 3
    assert ours == native


def test_the_graph_wrapper_carries_dynamos_attributes():
    def program():
        # Compiled code reads its graph's wrapper from the function's globals.
        before = set(add_one.__globals__)
        fn = torch.compile(add_one, backend="eager")
        fn(torch.ones(3))
        [wrapper] = [
            value
            for name, value in add_one.__globals__.items()
            if name not in before and name.startswith("__compiled_fn")
        ]
        inner = wrapper._torchdynamo_orig_callable
        return {
            "attributes": sorted(vars(wrapper)),
            "own id": wrapper._torchdynamo_wrapper_id == id(wrapper),
            "wraps the graph": wrapper.__wrapped__ is inner,
            "name": wrapper.__name__ == getattr(inner, "__name__", None),
            "recursive": wrapper._torchdynamo_disable_recursive,
            "message": wrapper._torchdynamo_disable_msg,
        }

    native, ours = both_ways(program)
    assert native["own id"] and native["wraps the graph"]
    assert ours == native


def test_uninstall_gives_dynamos_functions_back():
    utils = torch._dynamo.utils
    before = (
        torch._dynamo.decorators.disable,
        utils.record_pregraph_bytecode_enter,
        utils.record_pregraph_bytecode_exit,
    )
    assert before[0] is torch._dynamo.disable
    pyframe.dynamo.install()
    assert torch._dynamo.decorators.disable is not before[0]
    counter = torch._dynamo.testing.CompileCounter()
    assert torch.compile(add_one, backend=counter)(torch.ones(3)).tolist() == [2.0] * 3
    pyframe.dynamo.uninstall()
    after = (
        torch._dynamo.decorators.disable,
        utils.record_pregraph_bytecode_enter,
        utils.record_pregraph_bytecode_exit,
    )
    assert after == before


def test_dynamo_decides_about_the_wrappers_again_after_a_reset():
    # Natively Dynamo's callback decides about the code of a disable wrapper
    # at its first frame, and again after that code is reset (one code, or
    # all of them by torch._dynamo.reset()).  The wrappers hand such a call
    # to the native one, so the layer holds Dynamo's decision after it.
    from pyframe.dynamo import _cache

    graph_code = torch._dynamo.disable(add_one).__code__  # every graph wrapper's
    enter_code = torch._dynamo.utils.record_pregraph_bytecode_enter.__code__

    def decisions(codes):
        return [pyframe.remembered(code, cache=_cache.CACHE) for code in codes]

    torch._dynamo.reset()
    x = torch.ones(3)
    with pyframe.dynamo.installed():
        fn = torch.compile(add_one, backend="eager")
        fn(x)
        fn(x)
        # torch 2.15's compiled code calls the pre-graph bracket only while
        # a profiler is on (it reads torch.autograd.profiler's
        # _is_profiler_enabled first); 2.11-2.14's on every call.
        [entry] = torch._dynamo.eval_frame._debug_get_cache_entry_list(add_one.__code__)
        codes = [graph_code]
        if "_is_profiler_enabled" not in entry.code.co_names:
            codes.append(enter_code)
        decided = decisions(codes)
        assert None not in decided
        # One code reset while the compiled code stays cached: its wrapper,
        # which saw the decision before, asks again.
        torch._C._dynamo.eval_frame.reset_code(graph_code)
        assert decisions(codes) == [None] + decided[1:]
        assert fn(x).tolist() == [2.0] * 3
        assert decisions(codes) == decided
        torch._dynamo.reset()
        assert decisions(codes) == [None] * len(codes)
        fn(x)
        fn(x)
        assert decisions(codes) == decided
