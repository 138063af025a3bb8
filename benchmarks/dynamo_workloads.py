"""The workloads of bench_dynamo.py: torch.compile'd functions and models,
each made fresh for each side (eager, native Dynamo, pyframe.dynamo).

Two kinds.  Warm calls of one graph (add-*, mul-add-relu-sum, gpt2), where
what a call costs beyond eager is the frame layer's fast path: the compile
wrapper, the cache lookup, the guards.  And calls with graph breaks
(graph-breaks, gpt2-generate), where Python runs between the graphs: the
standard library and user helpers a compiled function calls around its
breaks, each of whose frames goes through the frame layer's hook with
Dynamo's callback set.
"""

import collections
import dataclasses
import json
import textwrap


def _add_one(x):
    return x + 1


def _mul_add_relu_sum(x, y):
    return (x * y + 1).relu().sum()


def _tensor_add_one(torch):
    return _add_one, (torch.ones(2),)


def _tensor_mul_add(torch):
    return _mul_add_relu_sum, (torch.ones(2), torch.full((2,), 2.0))


def _gpt2_config(transformers):
    return transformers.GPT2Config(
        n_layer=2, n_embd=64, n_head=4, n_positions=64, vocab_size=512, use_cache=False
    )


def _gpt2(torch):
    import transformers

    torch.manual_seed(0)
    model = transformers.GPT2Model(_gpt2_config(transformers)).eval()
    return model, (torch.randint(0, 512, (1, 16)),)


# ---- graph breaks with Python between the graphs ----------------------------------------


@dataclasses.dataclass
class _Item:
    name: str
    qty: int
    price: float


def _describe(items):
    # Standard-library Python between two graphs (code Dynamo skips):
    # dataclasses, json, textwrap, collections.
    rows = [dataclasses.asdict(item) for item in items]
    text = json.dumps(rows, sort_keys=True, indent=1)
    return len(textwrap.fill(text, 40)) + len(collections.Counter(text).most_common(3))


def _helper(v, k):
    return (v * k + 3) % 7


def _user_work(n):
    total = 0
    for k in range(n):
        total += _helper(k, 3)
    return total


def _with_graph_breaks(x, items):
    y = x.sin() + 1
    n = int(y.sum().item())  # graph break: .item()
    m = _describe(items)
    _graph_break()  # torch._dynamo.graph_break
    s = _user_work(50)  # 50 calls of a small user function
    return y * (n + m + s)


_graph_break = None  # torch._dynamo.graph_break, once torch is imported


def _graph_breaks(torch):
    global _graph_break
    _graph_break = torch._dynamo.graph_break
    items = [_Item("item%d" % i, i, i * 1.5) for i in range(8)]
    return _with_graph_breaks, (torch.ones(4), items)


def _gpt2_generate(torch):
    # Greedy decoding of 4 tokens by a real transformers model: each step's
    # .item() breaks the graph, and transformers' Python (the model's
    # forward wrappers, output classes) runs around each graph.
    import transformers

    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(_gpt2_config(transformers)).eval()

    def generate(ids):
        for _ in range(4):
            logits = model(ids).logits
            token = int(logits[0, -1].argmax().item())  # graph break
            ids = torch.cat([ids, ids.new_tensor([[token]])], dim=1)
        return ids

    return generate, (torch.randint(0, 512, (1, 12)),)


class Workload:
    def __init__(self, name, describe, make, options, calls, needs=()):
        self.name = name
        self.describe = describe
        self.make = make  # make(torch) -> (function or module, args)
        self.options = options  # torch.compile's keyword arguments
        self.calls = calls  # warm calls per timed batch
        self.needs = needs  # modules it imports besides torch


WORKLOADS = [
    Workload("add-eager", "x + 1, backend='eager'", _tensor_add_one, {"backend": "eager"}, 1000),
    Workload("add-inductor", "x + 1, inductor", _tensor_add_one, {}, 1000),
    Workload("mul-add-relu-sum", "(x * y + 1).relu().sum(), inductor", _tensor_mul_add, {}, 1000),
    Workload(
        "gpt2",
        "GPT-2 forward, 2 layers, 16 tokens (transformers, random weights), inductor",
        _gpt2,
        {},
        100,
        ("transformers",),
    ),
    Workload(
        "graph-breaks",
        "two graph breaks; json, textwrap, dataclasses, Counter and 50 user-helper calls "
        "between them, backend='eager'",
        _graph_breaks,
        {"backend": "eager"},
        200,
    ),
    Workload(
        "gpt2-generate",
        "GPT-2 LM, 2 layers, greedy decoding of 4 tokens, a .item() graph break a token, "
        "backend='eager'",
        _gpt2_generate,
        {"backend": "eager"},
        20,
        ("transformers",),
    ),
]
BY_NAME = {w.name: w for w in WORKLOADS}
