"""pyframe.dynamo.compile: torch.compile on pyframe's frame layer."""

from __future__ import annotations

import functools
from typing import Any

import torch

from ._install import install


def compile(fn: Any = None, **options: Any) -> Any:
    """``torch.compile(fn, **options)`` with pyframe as TorchDynamo's frame
    layer: installs it (pyframe.dynamo.install(), for the whole process) if
    it is not installed yet, then compiles with every option torch.compile
    takes (backend, fullgraph, dynamic, mode, options, disable, ...).  Also a
    decorator: ``@pyframe.dynamo.compile(backend="eager")``."""
    if fn is None:
        return functools.partial(compile, **options)
    if not callable(fn):
        raise TypeError(
            "pyframe.dynamo.compile() expects a function or an nn.Module; got a "
            f"{type(fn).__name__} object ({fn!r:.60})"
        )
    install()
    return torch.compile(fn, **options)
