"""torch.compile itself on pyframe: pyframe.dynamo.install() against native
TorchDynamo, in one process.

Each comparison runs the same program twice, natively and with
pyframe.dynamo installed (torch._dynamo.reset() before each), and compares
what Dynamo reports: outputs, graphs compiled (a CompileCounter), frames
Dynamo was asked about and compiled, graph breaks, recompiles and
guard-failure reasons.  Every test leaves the layer uninstalled.
"""

import contextlib
import gc
import os
import subprocess
import sys
import textwrap
import threading
import tracemalloc
import types
import weakref
from unittest import mock

import pytest

pytest.importorskip("torch", minversion="2.11")

import torch  # noqa: E402
import torch._dynamo.testing  # noqa: E402
from conftest import dynamo_pth_installed  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

import pyframe  # noqa: E402
import pyframe.dynamo  # noqa: E402
from pyframe.dynamo import _torch_compat as compat  # noqa: E402

native_layer = torch._C._dynamo.eval_frame


@pytest.fixture(autouse=True)
def clean_counters(clean_dynamo):  # clean_dynamo: tests/conftest.py
    counters.clear()


def report(program):
    """What Dynamo did running `program(counter)`: its result, then the counts."""
    torch._dynamo.reset()
    counters.clear()
    counter = torch._dynamo.testing.CompileCounter()
    result = program(counter)
    return result, {
        "graphs": counter.frame_count,
        "ops": counter.op_count,
        "frames total": counters["frames"]["total"],
        "frames ok": counters["frames"]["ok"],
        "graph breaks": sum(counters["graph_break"].values()),
        "unimplemented": sorted(counters["unimplemented"]),
        "recompiles": counters["recompiles"].get("total", 0) if "recompiles" in counters else 0,
    }


def same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.allclose(a, b)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return a == b


def both_ways(program):
    native = report(program)
    with pyframe.dynamo.installed():
        ours = report(program)
    assert same(ours[0], native[0])
    assert ours[1] == native[1]
    assert native[1]["graphs"] > 0 or native[1]["frames total"] > 0, "the program tests nothing"
    return native, ours


# ---- programs ---------------------------------------------------------------------------

X = torch.randn(4)


def tensor_math(x, y):
    return (x * 2 + y).sin()


def breaks(x):
    y = x.cos()
    print("graph break")
    return y + 1


def closure_over(scale):
    offset = torch.ones(4)

    def closed(x):
        return x * scale + offset

    return closed


class TinyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.linear(x))


def calls_compiled(compiled_inner):
    def outer(x):
        y = x + 1
        print("break before the inner compiled call")
        return compiled_inner(y) * 2

    return outer


PROGRAMS = {
    "function, graph break, closure": lambda c: [
        torch.compile(tensor_math, backend=c)(X, X),
        torch.compile(breaks, backend=c)(X),
        torch.compile(breaks, backend=c)(X),
        torch.compile(closure_over(3.0), backend=c)(X),
    ],
    "fullgraph=True": lambda c: [torch.compile(tensor_math, backend=c, fullgraph=True)(X, X)],
    "dynamic=True then shapes": lambda c: [
        torch.compile(tensor_math, backend=c, dynamic=True)(torch.ones(n), torch.ones(n))
        for n in (2, 3, 5)
    ],
    "recompiles for shapes (automatic dynamic)": lambda c: [
        torch.compile(tensor_math, backend=c)(torch.ones(n), torch.ones(n)) for n in (2, 3, 4, 3)
    ],
    "nn.Module, train/eval": lambda c: (lambda m: [m(X), m.eval()(X), m.train()(X)])(
        torch.compile((torch.manual_seed(0), TinyNet())[1], backend=c)
    ),
    "a compiled function calling another": lambda c: [
        torch.compile(calls_compiled(torch.compile(tensor_math.__get__(X), backend=c)), backend=c)(
            X
        )
    ],
    "torch._dynamo.optimize and optimize_assert": lambda c: [
        torch._dynamo.optimize(c)(tensor_math)(X, X),
        torch._dynamo.optimize_assert(c)(tensor_math)(X, X),
    ],
    "options= and a guard filter": lambda c: [
        torch.compile(
            tensor_math,
            backend=c,
            options={"guard_filter_fn": lambda entries: [True] * len(entries)},
        )(X, X)
    ],
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_same_as_native_torch_compile(name):
    both_ways(PROGRAMS[name])


def test_the_default_backend_inductor():
    def program(counter):
        return torch.compile(tensor_math)(X, X)

    native = report(program)
    with pyframe.dynamo.installed():
        ours = report(program)
    assert same(ours[0], native[0]) and same(ours[0], tensor_math(X, X))
    assert ours[1]["frames ok"] == native[1]["frames ok"] == 1


def test_a_fullgraph_call_nested_in_another_keeps_the_outer_count():
    # The outer fullgraph call's compiled graph calls a second fullgraph
    # function, run eagerly: starting the count again must leave the outer
    # call's count of compiled frames alone (Dynamo's does), or the outer call
    # finds "no compiled frames" when it returns.
    def program(counter):
        inner = torch.compile(tensor_math, backend="eager", fullgraph=True)

        def eager_inner(x):
            with torch.compiler.set_stance("force_eager"):
                return inner(x, x)

        def backend(gm, example_inputs):
            counter(gm, example_inputs)
            return lambda first, *rest: gm(eager_inner(first), *rest)

        return torch.compile(tensor_math, backend=backend, fullgraph=True)(X, X)

    both_ways(program)


# What compiled code calls, in a fullgraph call.  Its graph runs disabled, so
# the compiled code gets a callee of its own here: Dynamo's code generation
# is made to call `calls_after_the_graph` before tensor_math's compiled code
# returns.
AFTER_THE_GRAPH = {}


def doubled(x):
    return x * 2


def calls_after_the_graph():
    AFTER_THE_GRAPH["outputs"].append(AFTER_THE_GRAPH["inner"](torch.ones(4)) + X.sum())


@contextlib.contextmanager
def compiled_code_calls(name, into):
    from torch._dynamo.bytecode_transformation import create_call_function, create_instruction
    from torch._dynamo.symbolic_convert import InstructionTranslatorBase

    generate_return = InstructionTranslatorBase.codegen_return_with_pops

    def codegen_return_with_pops(self, *args):
        instructions = generate_return(*args)
        if self.f_code.co_name == into:
            instructions[-1:-1] = [
                create_instruction("LOAD_GLOBAL", argval=name),
                *create_call_function(0, True),
                create_instruction("POP_TOP"),
            ]
        return instructions

    with mock.patch.object(
        InstructionTranslatorBase, "codegen_return_with_pops", codegen_return_with_pops
    ):
        yield


@pytest.mark.skipif(
    not hasattr(torch._dynamo.config, "error_on_dynamo_callback_in_fullgraph_compiled_code"),
    reason="this torch has no error_on_dynamo_callback_in_fullgraph_compiled_code",
)
def test_what_fullgraph_compiled_code_calls():
    # Dynamo compiles the callee of compiled code, except in a fullgraph
    # call: there it runs as it is, or fails to compile under
    # error_on_dynamo_callback_in_fullgraph_compiled_code.  A torch.compile'd
    # function it calls is compiled all the same.
    def program(counter):
        outputs = AFTER_THE_GRAPH["outputs"] = []
        AFTER_THE_GRAPH["inner"] = torch.compile(doubled, backend=counter)
        with compiled_code_calls("calls_after_the_graph", into="tensor_math"):
            outputs.append(torch.compile(tensor_math, backend=counter)(X, X))
            torch._dynamo.eval_frame.reset_code(calls_after_the_graph.__code__)
            fullgraph = torch.compile(tensor_math, backend=counter, fullgraph=True)
            outputs.append(fullgraph(X, X))
            with torch._dynamo.config.patch(
                error_on_dynamo_callback_in_fullgraph_compiled_code=True
            ):
                try:
                    fullgraph(X, X)
                except RuntimeError as error:
                    outputs.append(str(error).split(" - ")[0])
        return outputs

    native, ours = both_ways(program)
    assert native[0][-1].endswith("Dynamo: expected not to compile nested code")


# ---- disable, stance, run-only ------------------------------------------------------------


def disabled_inner(x):
    return x.sin() * 2


def test_disable_recursive_and_not():
    def program(counter):
        def helper(x):
            return x.cos()

        def uses(x, inner):
            return inner(x + 1) - 1

        outputs = []
        for recursive in (True, False):
            inner = torch.compiler.disable(disabled_inner, recursive=recursive)
            outputs.append(torch.compile(uses, backend=counter)(X, inner))
            outputs.append(torch.compile(uses, backend=counter)(X, torch.compiler.disable(helper)))
        return outputs

    both_ways(program)


def test_set_stance():
    def program(counter):
        fn = torch.compile(tensor_math, backend=counter)
        outputs = [fn(X, X)]
        with torch.compiler.set_stance("force_eager"):
            outputs.append(fn(torch.ones(3), torch.ones(3)))
        with torch.compiler.set_stance("eager_on_recompile"):
            outputs.append(fn(torch.ones(5), torch.ones(5)))
            outputs.append(fn(X, X))
        try:
            with torch.compiler.set_stance("fail_on_recompile"):
                fn(torch.ones(2, 2), torch.ones(2, 2))
        except RuntimeError as error:
            outputs.append(str(error).splitlines()[0])
        return outputs

    native, ours = both_ways(program)
    assert "fail_on_recompile" in native[0][-1]


def test_torch_dynamo_run_uses_compiled_code_only():
    def program(counter):
        fn = torch.compile(tensor_math, backend=counter)
        fn(X, X)
        run = torch._dynamo.run(tensor_math)
        return [run(X, X), run(torch.ones(7), torch.ones(7))]

    both_ways(program)


def test_recompile_limit_and_guard_failure_reasons():
    def program(counter):
        def by_name(x, name):
            return x + len(name)

        fn = torch.compile(by_name, backend=counter)
        outputs = [fn(X, "k" * n) for n in range(12)]
        reasons = sorted(
            reason.split(":", 1)[1]
            for code_reasons in torch._dynamo.utils.guard_failures.values()
            for reason in code_reasons
        )
        return outputs, reasons

    native, ours = both_ways(program)
    assert native[1]["graphs"] == torch._dynamo.config.recompile_limit


@pytest.mark.skipif(
    not hasattr(native_layer, "get_eval_frame_isolate_recompiles_id"),
    reason="isolate_recompiles is torch 2.13+",
)
def test_isolate_recompiles_regions():
    def program(counter):
        def f(x):
            return x + 1

        default = torch.compile(f, backend=counter)
        first = torch.compile(f, backend=counter, isolate_recompiles=True)
        second = torch.compile(f, backend=counter, isolate_recompiles=True)
        outputs = [
            default(torch.ones(2)),
            first(torch.ones(2)),
            first(torch.ones(2, 2)),
            second(torch.ones(2, 2)),
            default(torch.ones(2, 2)),
        ]
        entries = torch._C._dynamo.eval_frame._debug_get_cache_entry_list(f.__code__)
        # Region ids count on across the process: compare them by rank.
        ids = {first._isolate_recompiles_id: 0, second._isolate_recompiles_id: 1, -1: -1}
        return outputs, [(ids[e.isolate_recompiles_id], str(e.compile_id)) for e in entries]

    both_ways(program)


def test_skip_guard_eval_unsafe_stance():
    def program(counter):
        def fn(x, flag):
            return x * 2 if flag else x - 1

        compiled = torch.compile(fn, backend=counter)
        outputs = [compiled(X, True), compiled(X, False)]
        with torch.compiler.set_stance(skip_guard_eval_unsafe=True):
            outputs += [compiled(X, True), compiled(X, False)]
            try:
                compiled(torch.ones(3, 3), True)
            except RuntimeError as error:
                outputs.append(str(error).split(".")[0])
        return outputs

    native, ours = both_ways(program)
    assert native[0][-1] == "Recompilation triggered with skip_guard_eval_unsafe stance"


# ---- errors -------------------------------------------------------------------------------


def test_a_bad_option_gives_dynamos_own_error():
    errors = []
    for installed in (False, True):
        if installed:
            pyframe.dynamo.install()
        with pytest.raises(RuntimeError) as caught:
            torch.compile(tensor_math, mode="fastest-please")(X, X)
        errors.append(str(caught.value))
        with pytest.raises(torch._dynamo.exc.Unsupported) as caught:
            torch.compile(breaks, backend="eager", fullgraph=True)(X)
        errors.append(str(caught.value).splitlines()[0])
    assert errors[:2] == errors[2:]


def test_a_failing_backend_leaves_nothing_installed():
    def broken_backend(graph_module, example_inputs):
        raise ValueError("backend broke")

    with pyframe.dynamo.installed():
        fn = torch.compile(tensor_math, backend=broken_backend)
        with pytest.raises(Exception, match="backend broke"):
            fn(X, X)
        assert not pyframe.hook_installed()
        assert torch._C._dynamo.eval_frame.get_eval_frame_callback() is None
        assert pyframe.get_callback() is None
        assert torch._C._dynamo.eval_frame._debug_get_cache_entry_list(tensor_math.__code__) == []
        # And the next call compiles again (as natively: no half-built entry).
        ok = torch.compile(tensor_math, backend="eager")
        assert same(ok(X, X), tensor_math(X, X))


def test_the_layer_never_hashes_code_objects():
    # Code objects can hold a dict constant, and are unhashable then.
    def with_dict_constant(x):
        return x + 1

    code = with_dict_constant.__code__
    unhashable = code.replace(co_consts=code.co_consts + ({"a": 1},))
    with pytest.raises(TypeError):
        hash(unhashable)
    layer = torch._C._dynamo.eval_frame
    strategy = torch._dynamo.types.FrameExecStrategy(
        torch._dynamo.types.FrameAction.SKIP, torch._dynamo.types.FrameAction.DEFAULT
    )
    with pyframe.dynamo.installed():
        layer.set_code_exec_strategy(unhashable, strategy)
        assert layer._debug_get_cache_entry_list(unhashable) == []
        layer.reset_code(unhashable)
        layer.reset_code(unhashable)
        assert pyframe.remembered(unhashable, cache=pyframe.dynamo._cache.CACHE) is None


# ---- install, uninstall ---------------------------------------------------------------------


def _layer_bindings():
    modules = [
        m
        for n, m in sorted(sys.modules.items())
        if n.startswith("torch") and isinstance(m, types.ModuleType)
    ]
    return {
        (m.__name__, k): id(v)
        for m in modules
        for k, v in vars(m).items()
        if any(v is obj for obj in compat.NATIVE.values())
    }


def test_install_twice_and_uninstall_gives_the_native_layer_back():
    before = _layer_bindings()
    assert before, "no module binds the C layer's functions: the test sees nothing"
    pyframe.dynamo.install()
    pyframe.dynamo.install()
    assert pyframe.dynamo.is_installed()
    assert native_layer.set_eval_frame is not compat.NATIVE["set_eval_frame"]
    assert torch._dynamo.eval_frame.set_eval_frame is native_layer.set_eval_frame
    assert _layer_bindings() == {}
    pyframe.dynamo.uninstall()
    pyframe.dynamo.uninstall()
    assert _layer_bindings() == before
    for name, obj in compat.NATIVE.items():
        assert getattr(native_layer, name) is obj
    # Native torch.compile works after it, in the same process.
    counter = torch._dynamo.testing.CompileCounter()
    assert same(torch.compile(tensor_math, backend=counter)(X, X), tensor_math(X, X))
    assert counter.frame_count == 1
    assert len(compat.NATIVE["_debug_get_cache_entry_list"](tensor_math.__code__)) == 1


def test_install_inside_compiled_code_is_refused():
    seen = []

    def inner(x):
        torch._dynamo.graph_break()
        try:
            pyframe.dynamo.install()
        except RuntimeError as error:
            seen.append(str(error))
        return x + 1

    torch.compile(inner, backend="eager")(X)
    assert seen and "torch.compile'd code" in seen[0]
    assert not pyframe.dynamo.is_installed()


def test_the_environment_variable_installs_at_start():
    if not dynamo_pth_installed():
        pytest.skip("pyframe-dynamo.pth is not installed (an editable install?)")
    script = textwrap.dedent("""
        import sys, torch
        assert "pyframe.dynamo" not in sys.modules
        fn = torch.compile(lambda x: x * 3, backend="eager")
        out = fn(torch.ones(2))
        import pyframe.dynamo
        # Once torch._dynamo is imported, none of pyframe's import hooks is
        # left (site runs a venv's .pth files twice).
        left = [f for f in sys.meta_path if type(f).__module__ == "pyframe._dynamo_startup"]
        print(pyframe.dynamo.is_installed(), out.tolist(), left)
    """)
    for value, expected in (("1", "True [3.0, 3.0] []"), ("0", "False [3.0, 3.0] []")):
        result = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            env=dict(os.environ, PYFRAME_DYNAMO=value),
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == expected


def test_the_environment_variable_installs_when_pyframe_dynamo_imports_torch_dynamo():
    # torch._dynamo's import ends inside pyframe.dynamo's own: install()
    # waits for it (once failed: "cannot access submodule 'dynamo'").
    if not dynamo_pth_installed():
        pytest.skip("pyframe-dynamo.pth is not installed (an editable install?)")
    script = textwrap.dedent("""
        import sys, torch
        assert "torch._dynamo" not in sys.modules
        import pyframe.dynamo
        fn = torch.compile(lambda x: x * 3, backend="eager")
        print(pyframe.dynamo.is_installed(), fn(torch.ones(2)).tolist())
    """)
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYFRAME_DYNAMO="1"),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True [3.0, 3.0]"


# ---- beside pyframe's own users, threads, leaks --------------------------------------------


def test_beside_a_pyframe_callback():
    seen = []

    def observer(frame):
        seen.append(frame.f_code.co_name)

    def caller(fn):
        return fn(X, X) + 1

    with pyframe.dynamo.installed():
        fn = torch.compile(tensor_math, backend="eager")
        with pyframe.callback(observer):
            first = caller(fn)
            second = caller(fn)
            assert pyframe.get_callback() is observer
        assert same(first, tensor_math(X, X) + 1) and same(second, first)
    assert seen.count("caller") == 2
    assert "tensor_math" not in seen  # Dynamo's frames, inside the compiled call


def test_compiled_functions_in_threads():
    results = {}

    def work(i):
        results[i] = fn(torch.full((4,), float(i)), X)

    with pyframe.dynamo.installed():
        fn = torch.compile(tensor_math, backend="eager")
        fn(X, X)
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert all(same(results[i], tensor_math(torch.full((4,), float(i)), X)) for i in range(4))


WARM_CALLS = 100_000


def test_nothing_leaks_in_100000_warm_calls():
    def trivial(x):
        return x + 1

    with pyframe.dynamo.installed():
        counter = torch._dynamo.testing.CompileCounter()
        compiled = torch.compile(trivial, backend=counter)
        x = torch.ones(2)
        for _ in range(1000):
            compiled(x)
        gc.collect()
        tracked = (trivial.__code__, x, compiled, counter)
        before = [sys.getrefcount(obj) for obj in tracked]
        tracemalloc.start()
        try:
            for _ in range(WARM_CALLS // 2):
                compiled(x)
            gc.collect()
            first, _ = tracemalloc.get_traced_memory()
            for _ in range(WARM_CALLS // 2):
                compiled(x)
            gc.collect()
            second, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert [sys.getrefcount(obj) for obj in tracked] == before
        assert second - first < 16 * 1024, f"traced memory grew by {second - first} bytes"
        assert counter.frame_count == 1


def test_a_compiled_function_and_its_dynamo_callback_go_when_dropped():
    # As natively: pyframe.dynamo's hook for a Dynamo callback (kept by its
    # pyframe.Switch while the callback lives) must not keep it alive.
    def trivial(x):
        return x + 1

    def compile_call_and_drop():
        compiled = torch.compile(trivial, backend="eager")
        compiled(torch.ones(2))
        closure = dict(zip(compiled.__code__.co_freevars, compiled.__closure__, strict=True))
        return weakref.ref(closure["callback"].cell_contents)

    for install in (False, True):
        with pyframe.dynamo.installed() if install else contextlib.nullcontext():
            callback = compile_call_and_drop()
            torch._dynamo.reset()
            gc.collect()
            assert callback() is None, "installed" if install else "native"
