"""Real models under torch.compile with its default backend (inductor, on the
CPU), natively and with pyframe.dynamo installed, in one process.

Each model is built from a configuration with random weights (nothing is
downloaded: HF_HUB_OFFLINE=1), tiny and in eval mode, and compiled with
plain `torch.compile(model)` twice: natively, then under
`pyframe.dynamo.installed()` (torch._dynamo.reset() before each).  Both runs
must give outputs equal to eager within tolerance and report the same
graphs, frames, graph breaks and recompiles.  The second run finds the
first one's kernels in inductor's cache, so it costs seconds; the graphs
Dynamo hands inductor are still traced afresh.

Which model libraries a run tests is a flag, since compiling with inductor
costs tens of seconds a model: PYFRAME_TEST_MODELS names them
("transformers torchvision timm"; tox sets it in the envs that run them).
A library it names must import (a broken install fails the run rather than
skipping); the others' tests skip, giving PYFRAME_TEST_MODELS_LEFT_OUT as
the reason where an env leaves a library out for one.
"""

import importlib
import os

import pytest

pytest.importorskip("torch", minversion="2.11")

import torch  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

import pyframe  # noqa: E402
import pyframe.dynamo  # noqa: E402
from pyframe.dynamo import _cache as entries  # noqa: E402
from pyframe.dynamo import _torch_compat as compat  # noqa: E402

# Inductor's generated code may sum in another order than eager's kernels.
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


@pytest.fixture(autouse=True)
def offline(monkeypatch, clean_dynamo):  # clean_dynamo: tests/conftest.py
    # Read when huggingface_hub is imported: the first test to import
    # transformers or timm does it here.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def library(name):
    """The model library `name`, or a skip where this run does not test it."""
    wanted = os.environ.get("PYFRAME_TEST_MODELS", "").split()
    if not wanted:
        pytest.skip("this run tests no real models: PYFRAME_TEST_MODELS is unset (tox: -models)")
    if name not in wanted:
        reason = os.environ.get("PYFRAME_TEST_MODELS_LEFT_OUT", "(no PYFRAME_TEST_MODELS_LEFT_OUT)")
        pytest.skip(f"{name} is not in PYFRAME_TEST_MODELS={' '.join(wanted)!r}: {reason}")
    return importlib.import_module(name)


def compile_and_run(model, calls):
    """`torch.compile(model)` called on each of `calls`: outputs and Dynamo's counts."""
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(model)
    outputs = [compiled(*args) for args in calls]
    return outputs, {
        "graphs": counters["stats"]["unique_graphs"],
        "frames total": counters["frames"]["total"],
        "frames ok": counters["frames"]["ok"],
        "graph breaks": sum(counters["graph_break"].values()),
        "unimplemented": sorted(counters["unimplemented"]),
        "recompiles": counters["recompiles"].get("total", 0) if "recompiles" in counters else 0,
    }


def check_model(model, calls, output=lambda out: out):
    """Compile `model` natively and on pyframe: eager's outputs, the same counts."""
    with torch.no_grad():
        eager = [output(model(*args)) for args in calls]
        native = compile_and_run(model, calls)
        with pyframe.dynamo.installed():
            ours = compile_and_run(model, calls)
            # The entries are pyframe's, none Dynamo's C layer's.
            codes = [ref() for ref in torch._dynamo.convert_frame.input_codes.seen]
            codes = [code for code in codes if code is not None]
            assert any(pyframe.cache_entries(code, cache=entries.CACHE) for code in codes)
            assert not any(compat.NATIVE["_debug_get_cache_entry_list"](code) for code in codes)
    for outputs in (native[0], ours[0]):
        for got, expected in zip(map(output, outputs), eager, strict=True):
            torch.testing.assert_close(got, expected, **TOLERANCE)
    assert ours[1] == native[1]
    assert native[1]["graphs"] > 0, "Dynamo compiled nothing: the test tests nothing"


def token_ids(*shapes):
    generator = torch.Generator().manual_seed(1)
    return [(torch.randint(0, 128, shape, generator=generator),) for shape in shapes]


def images(*shapes):
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(shape, generator=generator),) for shape in shapes]


# Two calls of one shape: the second runs the cached entry.
TEXT = ((1, 8), (1, 8))
IMAGES = ((1, 3, 32, 32), (1, 3, 32, 32))

# name: (configuration class, its arguments, model class, output compared)
TRANSFORMERS_MODELS = {
    "gpt2": (
        "GPT2Config",
        dict(n_layer=2, n_embd=32, n_head=2),
        "GPT2LMHeadModel",
        "logits",
    ),
    "bert": (
        "BertConfig",
        dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64),
        "BertModel",
        "last_hidden_state",
    ),
    "llama-style decoder": (
        "LlamaConfig",
        dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
        ),
        "LlamaForCausalLM",
        "logits",
    ),
}


@pytest.mark.parametrize("name", list(TRANSFORMERS_MODELS))
def test_transformers_model(name):
    transformers = library("transformers")
    config_class, arguments, model_class, output = TRANSFORMERS_MODELS[name]
    # A vocabulary of 128 tokens; special tokens inside it.
    config = getattr(transformers, config_class)(
        vocab_size=128, max_position_embeddings=64, bos_token_id=0, eos_token_id=0, **arguments
    )
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(config).eval()
    check_model(model, token_ids(*TEXT), lambda out: getattr(out, output))


def test_resnet18():
    torchvision = library("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None, num_classes=10).eval()
    check_model(model, images(*IMAGES))


def test_vit():
    timm = library("timm")
    torch.manual_seed(0)
    model = timm.create_model(
        "vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8, depth=2,
        num_classes=10,
    ).eval()  # fmt: skip
    check_model(model, images(*IMAGES))
