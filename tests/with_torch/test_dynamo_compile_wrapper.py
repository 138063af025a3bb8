"""The compile wrapper torch.compile returns under pyframe.dynamo.install()
(pyframe/dynamo/_compile_wrapper.py), against Dynamo's own in one process.

Its fast path must leave what Dynamo's wrapper leaves: the thread's callback,
the cache region, the dynamic layer stack and dispatch keys, the generation
count, the frame and graph counters, errors and their tracebacks' frames;
every case off the fast path must be Dynamo's wrapper itself.
"""

import traceback

import pytest

pytest.importorskip("torch", minversion="2.11")

import torch  # noqa: E402
import torch._dynamo.testing  # noqa: E402
from torch._dynamo.mutation_guard import GenerationTracker  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

import pyframe.dynamo  # noqa: E402
from pyframe.dynamo import _compile_wrapper  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_dynamo")  # tests/conftest.py

eval_frame = torch._C._dynamo.eval_frame
LEAN_FILE = _compile_wrapper.__file__


def both_ways(program):
    """program() natively, then under installed() (Dynamo reset before each)."""
    torch._dynamo.reset()
    counters.clear()
    native = program()
    torch._dynamo.reset()
    counters.clear()
    with pyframe.dynamo.installed():
        ours = program()
    return native, ours


def add_one(x):
    return x + 1


def is_lean(wrapper):
    return wrapper.__code__.co_filename == LEAN_FILE


def thread_state():
    """What a compile wrapper sets for a call and must give back."""
    state = {
        "callback": eval_frame.get_eval_frame_callback(),
        "layers": torch._C._functorch.get_dynamic_layer_stack_depth(),
        "include": str(torch._C._dispatch_tls_local_include_set()),
        "exclude": str(torch._C._dispatch_tls_local_exclude_set()),
    }
    if hasattr(eval_frame, "get_eval_frame_isolate_recompiles_id"):
        state["region"] = eval_frame.get_eval_frame_isolate_recompiles_id()
    return state


def test_torch_compile_returns_the_lean_wrapper_with_dynamos_attributes():
    def program():
        fn = torch.compile(add_one, backend="eager")
        return {
            "lean": is_lean(fn),
            "name": (fn.__name__, fn.__qualname__, fn.__module__, fn.__doc__),
            "wrapped": fn.__wrapped__ is add_one,
            "orig": fn._torchdynamo_orig_callable is add_one,
            "inline": fn._torchdynamo_inline is add_one,
            "compile": getattr(fn, "_is_torch_compile", None),  # (torch 2.13+)
            "wrapper_id": fn._torchdynamo_wrapper_id == id(fn),
            "innermost": torch._dynamo.eval_frame.innermost_fn(fn) is add_one,
        }

    native, ours = both_ways(program)
    assert native.pop("lean") is False
    assert ours.pop("lean") is True
    assert ours == native


def test_warm_calls_give_what_dynamos_wrapper_gives_and_leave_the_thread_as_found():
    def program():
        backend = torch._dynamo.testing.CompileCounter()
        fn = torch.compile(add_one, backend=backend)
        before = thread_state()
        generation = GenerationTracker.generation
        results = [fn(torch.full((3,), float(i))).tolist() for i in range(5)]
        return {
            "results": results,
            "frames": backend.frame_count,
            "ops": backend.op_count,
            "unique_graphs": counters["stats"]["unique_graphs"],
            "generations": GenerationTracker.generation - generation,
            "state": (before, thread_state()),
        }

    native, ours = both_ways(program)
    assert ours == native
    before, after = ours["state"]
    assert before == after


def test_a_compiled_module_calls_through_the_lean_wrapper_as_natively():
    def program():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
        backend = torch._dynamo.testing.CompileCounter()
        compiled = torch.compile(model, backend=backend)
        x = torch.ones(2, 4)
        results = [compiled(x).tolist() for _ in range(3)]
        return is_lean(compiled.forward), results, backend.frame_count, thread_state()

    native, ours = both_ways(program)
    assert native[0] is False and ours[0] is True
    assert ours[1:] == native[1:]


@pytest.mark.parametrize("dynamic", [True, False])
def test_enter_hooks_run_and_clean_up_as_natively(dynamic):
    # dynamic= adds an enter hook whose cleanup undoes a config patch.
    def program():
        seen = []

        def backend(gm, example_inputs):
            seen.append(torch._dynamo.config.assume_static_by_default)
            return gm.forward

        fn = torch.compile(add_one, backend=backend, dynamic=dynamic)
        results = [fn(torch.ones(n)).tolist() for n in (2, 3, 4)]
        after = torch._dynamo.config.assume_static_by_default
        return is_lean(fn), seen, results, after, thread_state()

    native, ours = both_ways(program)
    assert native[0] is False and ours[0] is True
    assert ours[1:] == native[1:]


def test_an_isolated_region_is_set_for_the_call_and_given_back():
    if not hasattr(eval_frame, "get_eval_frame_isolate_recompiles_id"):
        pytest.skip("torch 2.13+ has isolate_recompiles")

    def program():
        seen = []

        def backend(gm, example_inputs):
            def run(*args):
                seen.append(eval_frame.get_eval_frame_isolate_recompiles_id() != -1)
                return gm.forward(*args)

            return run

        fn = torch.compile(add_one, backend=backend, isolate_recompiles=True)
        fn(torch.ones(2))
        fn(torch.ones(2))
        return seen, is_lean(fn), thread_state()

    native, ours = both_ways(program)
    assert ours[0] == native[0] == [True, True]
    assert ours[1] is True
    assert ours[2] == native[2]


def test_fullgraph_keeps_dynamos_wrapper():
    with pyframe.dynamo.installed():
        assert not is_lean(torch.compile(add_one, backend="eager", fullgraph=True))


def test_run_only_runs_what_was_compiled_and_compiles_nothing_as_natively():
    def program():
        backend = torch._dynamo.testing.CompileCounter()
        compiled = torch.compile(add_one, backend=backend)
        compiled(torch.ones(2))
        run_only = torch._dynamo.run(add_one)
        results = [run_only(torch.ones(2)).tolist(), run_only(torch.ones(2, 2)).tolist()]
        return is_lean(run_only), results, backend.frame_count, thread_state()

    native, ours = both_ways(program)
    assert native[0] is False and ours[0] is True
    assert ours[1:] == native[1:]


def test_a_stance_other_than_the_default_takes_dynamos_wrapper():
    def program():
        backend = torch._dynamo.testing.CompileCounter()
        fn = torch.compile(add_one, backend=backend)
        with torch.compiler.set_stance("force_eager"):
            eager = fn(torch.ones(2)).tolist()
        compiled = fn(torch.ones(2)).tolist()
        return eager, compiled, backend.frame_count

    native, ours = both_ways(program)
    assert ours == native == ([2.0, 2.0], [2.0, 2.0], 1)


@pytest.mark.parametrize("error_on_nested_fx_trace", [True, False])
def test_a_call_under_fx_tracing_is_what_dynamos_wrapper_makes_of_it(error_on_nested_fx_trace):
    def program():
        backend = torch._dynamo.testing.CompileCounter()
        fn = torch.compile(add_one, backend=backend)
        with torch._dynamo.config.patch(error_on_nested_fx_trace=error_on_nested_fx_trace):
            try:
                outcome = str(torch.fx.symbolic_trace(lambda x: fn(x) * 2).code).strip()
            except RuntimeError as error:
                outcome = str(error)
        return outcome, backend.frame_count, thread_state()

    native, ours = both_ways(program)
    assert ours == native


def test_a_compiled_function_called_from_compiled_code_as_natively():
    def program():
        inner_backend = torch._dynamo.testing.CompileCounter()
        outer_backend = torch._dynamo.testing.CompileCounter()
        inner = torch.compile(add_one, backend=inner_backend)

        def outer(x):
            y = inner(x)
            torch._dynamo.graph_break()
            return inner(y) * 2

        fn = torch.compile(outer, backend=outer_backend)
        results = [fn(torch.ones(2)).tolist() for _ in range(3)]
        return results, inner_backend.frame_count, outer_backend.frame_count, thread_state()

    native, ours = both_ways(program)
    assert ours == native


def test_a_backend_error_has_dynamos_message_and_frames():
    def failing(gm, example_inputs):
        raise ValueError("the backend fails")

    def program():
        fn = torch.compile(add_one, backend=failing)
        before = thread_state()
        with pytest.raises(Exception) as caught:
            fn(torch.ones(2))
        frames = [frame.name for frame in traceback.extract_tb(caught.value.__traceback__)]
        return type(caught.value).__name__, str(caught.value), frames, before == thread_state()

    native, ours = both_ways(program)
    assert ours == native
    assert ours[3] is True


def test_an_unsupported_error_is_raised_without_its_tracebacks_as_natively():
    error_on_graph_break = getattr(torch._dynamo, "error_on_graph_break", None)
    if error_on_graph_break is None:
        pytest.skip("torch._dynamo.error_on_graph_break() is in torch 2.13+")

    def program():
        def breaks(x):
            torch._dynamo.graph_break()
            return x + 1

        fn = torch.compile(breaks, backend="eager")
        with error_on_graph_break(True):
            with pytest.raises(torch._dynamo.exc.Unsupported) as caught:
                fn(torch.ones(2))
        error = caught.value
        frames = [frame.name for frame in traceback.extract_tb(error.__traceback__)]
        return type(error).__name__, frames, error.__cause__ is None, thread_state()

    native, ours = both_ways(program)
    assert ours == native


def test_a_wrapper_made_while_installed_is_dynamos_after_uninstall():
    backend = torch._dynamo.testing.CompileCounter()
    with pyframe.dynamo.installed():
        fn = torch.compile(add_one, backend=backend)
        assert fn(torch.ones(2)).tolist() == [2.0, 2.0]
    assert is_lean(fn)
    torch._dynamo.reset()
    before = thread_state()
    assert fn(torch.ones(2)).tolist() == [2.0, 2.0]
    assert backend.frame_count == 2  # compiled again, by Dynamo's own layer
    assert thread_state() == before
    assert torch._dynamo.eval_frame._TorchDynamoContext.__call__ is (_compile_wrapper._NATIVE_CALL)
