"""Loading the callback of `run --callback MODULE_OR_FILE:FUNCTION`.

MODULE_OR_FILE is imported as a module, or loaded from its .py file under a
private module name; FUNCTION may be dotted.  Every way it can fail is a
UsageError that names what was passed and what was expected.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from typing import TYPE_CHECKING

from pyframe.cli.errors import UsageError, describe_exception
from pyframe.cli.reports import short_repr

if TYPE_CHECKING:
    from pyframe._cframe import Callback  # the protocol, from the stub


def load_callback(spec: str) -> Callback:
    """The callable named by MODULE_OR_FILE:FUNCTION."""
    source, colon, attribute = spec.rpartition(":")
    if not colon or not source or not attribute:
        raise UsageError(
            f"--callback {spec!r} is not MODULE_OR_FILE:FUNCTION "
            f"(e.g. mycallbacks:on_frame or ./callbacks.py:on_frame)"
        )
    is_path = source.endswith(".py") or os.sep in source or bool(os.altsep and os.altsep in source)
    module = _import_file(source) if is_path else _import_module(source)
    target: object = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise UsageError(
                f"--callback {spec!r}: {source!r} has no attribute {attribute!r}"
            ) from None
    if not callable(target):
        raise UsageError(
            f"--callback {spec!r} is not callable: it is {short_repr(target)} "
            f"({type(target).__name__}); expected a function taking a pyframe.Frame"
        )
    return target


def _import_module(name: str) -> types.ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name is not None and (name == error.name or name.startswith(error.name + ".")):
            raise UsageError(
                f"--callback: no module named {error.name!r} "
                f"(expected a module importable from the current directory or sys.path, "
                f"or a path to a .py file)"
            ) from None
        raise UsageError(
            f"--callback: importing {name!r} failed: {describe_exception(error)}"
        ) from None
    except Exception as error:
        raise UsageError(
            f"--callback: importing {name!r} failed: {describe_exception(error)}"
        ) from None


# Private: a callback file named like a real module (json.py) must not shadow it.
_CALLBACK_MODULE = "__pyframe_callback__"


def _import_file(path: str) -> types.ModuleType:
    if not os.path.isfile(path):
        raise UsageError(f"--callback: no such file {path!r} (expected a .py file)")
    spec = importlib.util.spec_from_file_location(_CALLBACK_MODULE, os.path.abspath(path))
    if spec is None or spec.loader is None:
        raise UsageError(f"--callback: cannot load {path!r} as Python source")
    module = importlib.util.module_from_spec(spec)
    # Registered, as imports are, so dataclasses and pickle inside it work.
    sys.modules[_CALLBACK_MODULE] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[_CALLBACK_MODULE]
        raise UsageError(
            f"--callback: importing {path!r} failed: {describe_exception(error)}"
        ) from None
    return module
