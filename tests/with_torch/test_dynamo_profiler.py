"""torch.profiler around torch.compile'd calls, natively and on pyframe.

Dynamo's C layer records two events of its own: "TorchDynamo Cache Lookup"
around a frame's cache lookup and the entry's trace annotation ("Torch-
Compiled Region: 0/0") around running its compiled code.  Under install()
pyframe's C layer does both (pyframe.Cache.set_regions on Dynamo's cache,
while a profiler is on); each test compares the events natively and under
installed() in one process.
"""

import pytest

pytest.importorskip("torch", minversion="2.11")

import torch  # noqa: E402
import torch._dynamo.testing  # noqa: E402

import pyframe  # noqa: E402
import pyframe.dynamo  # noqa: E402
from pyframe.dynamo import _cache  # noqa: E402
from pyframe.dynamo import _torch_compat as compat  # noqa: E402

OURS = ("TorchDynamo Cache Lookup", "Torch-Compiled Region")


pytestmark = pytest.mark.usefixtures("clean_dynamo")  # tests/conftest.py


def with_graph_break(x, y):
    r = y.sum(dim=1)
    torch._dynamo.graph_break()
    return x * r


def events(profiler, names, run):
    with profiler() as prof:
        run()
    found = prof.function_events if profiler is torch.autograd.profiler.profile else prof.events()
    return [event.name for event in found if any(name in event.name for name in names)]


def on_both_layers(make_run, profiler):
    """The Dynamo events of make_run()() natively and under installed().

    Each layer runs it once unprofiled first: a process's first run calls
    functions of torch that later runs do not (made once, then kept), and
    Dynamo is asked about each, which torch 2.11/2.12 record as a lookup;
    warmed up, both layers run the same frames."""
    seen = []
    for layer in ("native", "pyframe"):
        torch._dynamo.reset()
        if layer == "pyframe":
            pyframe.dynamo.install()
        try:
            make_run()()
            torch._dynamo.reset()
            seen.append(events(profiler, OURS, make_run()))
        finally:
            pyframe.dynamo.uninstall()
    return seen


PROFILERS = [torch.autograd.profiler.profile, torch.profiler.profile]


@pytest.mark.parametrize("profiler", PROFILERS, ids=["autograd", "kineto"])
def test_compiling_calls_record_the_regions_of_each_frame_as_natively(profiler):
    def make_run():
        compiled = torch.compile(with_graph_break, backend="eager")

        def run():
            compiled(torch.randn(10), torch.randn(10, 10))
            compiled(torch.randn(10), torch.randn(10, 15))  # recompiles the first frame

        return run

    native, ours = on_both_layers(make_run, profiler)
    # torch 2.11/2.12 record the lookup of a code with no entries too (the
    # first call's): the release difference pyframe.dynamo follows.
    first_lookup = native[0] == "TorchDynamo Cache Lookup"
    assert first_lookup == compat.LOOKUP_EVENT_WITHOUT_ENTRIES
    regions = [name for name in native if name.startswith("Torch-Compiled Region")]
    assert regions == [
        "Torch-Compiled Region: 0/0",
        "Torch-Compiled Region: 1/0",
        "Torch-Compiled Region: 0/1",
        "Torch-Compiled Region: 1/0",
    ]
    assert ours == native


@pytest.mark.parametrize("profiler", PROFILERS, ids=["autograd", "kineto"])
def test_a_warm_call_records_one_lookup_and_its_region_as_natively(profiler):
    def make_run():
        compiled = torch.compile(lambda x: (x**2 + 2) ** 3, backend="aot_eager")
        x = torch.randn(2, 2, requires_grad=True)
        compiled(x)  # compiled before the profiler starts
        return lambda: compiled(x)

    native, ours = on_both_layers(make_run, profiler)
    assert native == ["TorchDynamo Cache Lookup", "Torch-Compiled Region: 0/0"]
    assert ours == native


def test_the_regions_are_set_only_while_a_profiler_runs():
    pyframe.dynamo.install()
    compiled = torch.compile(lambda x: x + 1, backend="eager")
    compiled(torch.ones(2))
    assert _cache.CACHE.lookup_region is None and _cache.CACHE.run_region is None
    with torch.profiler.profile():
        assert _cache.CACHE.lookup_region is not None and _cache.CACHE.run_region is not None
        compiled(torch.ones(2))
    assert _cache.CACHE.lookup_region is None and _cache.CACHE.run_region is None
    with torch.profiler.profile():
        pyframe.dynamo.uninstall()  # while profiling: the regions go with it
        assert _cache.CACHE.lookup_region is None
    assert torch.autograd.profiler._set_is_profiler_enabled.__module__ == "torch.autograd.profiler"
