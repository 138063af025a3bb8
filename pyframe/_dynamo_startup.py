"""PYFRAME_DYNAMO=1: pyframe.dynamo.install() in every process, at start
(with PYFRAME_DYNAMO_SPECIALIZATION=1 too: install(specialization=True)).

The pyframe-dynamo.pth file pyframe's wheel puts in site-packages imports
this module at interpreter start when PYFRAME_DYNAMO is set (to anything but
"" or "0"); it imports neither torch nor pyframe.dynamo.  A process that
never imports torch._dynamo pays nothing more; in one that does,
pyframe.dynamo.install() runs as soon as torch._dynamo's own import is done,
before any of it is used.  A .pth file rather than sitecustomize: a program
or a test runner may have its own sitecustomize, and the .pth reaches every
interpreter of the environment, the subprocesses a test starts included.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from typing import Any

ENVIRONMENT_VARIABLE = "PYFRAME_DYNAMO"
# Set too (to anything but "" or "0"): install(specialization=True).
SPECIALIZATION_VARIABLE = "PYFRAME_DYNAMO_SPECIALIZATION"
_TARGET = "torch._dynamo"


def _is_set(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def wanted() -> bool:
    return _is_set(ENVIRONMENT_VARIABLE)


# True when torch._dynamo's import ended inside pyframe.dynamo's own (which
# imports it): pyframe.dynamo calls install_deferred() once it is complete.
_deferred = False


def _install() -> None:
    global _deferred
    dynamo = sys.modules.get("pyframe.dynamo")
    if dynamo is not None and getattr(dynamo.__spec__, "_initializing", False):
        # importlib's own mark of a module being executed: install() is not
        # there yet.
        _deferred = True
        return
    import pyframe.dynamo

    _install_with(pyframe.dynamo.install)


def _install_with(install: Any) -> None:
    install(specialization=_is_set(SPECIALIZATION_VARIABLE))


def install_deferred(install: Any) -> None:
    """Called with pyframe.dynamo.install at the end of pyframe.dynamo's
    import: the install() that torch._dynamo's import, inside it, could not
    make."""
    global _deferred
    if _deferred:
        _deferred = False
        _install_with(install)


class _Loader(importlib.abc.Loader):
    """torch._dynamo's own loader, then install()."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        _install()


class _Finder(importlib.abc.MetaPathFinder):
    """Finds torch._dynamo as the other finders do, with _Loader; then
    leaves sys.meta_path."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != _TARGET:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _Loader(spec.loader)
        return spec


def start() -> None:
    """Called by pyframe-dynamo.pth, maybe more than once: CPython's site
    module reads a venv's site-packages twice (site.venv(), then
    site.main()'s addsitepackages) and runs its .pth files each time."""
    if not wanted():
        return
    if _TARGET in sys.modules:
        _install()
    elif not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        # One finder: it leaves sys.meta_path once torch._dynamo is imported,
        # and a second would stay, a Python call in every import after it
        # (each a frame Dynamo is asked about, where its callback is set).
        sys.meta_path.insert(0, _Finder())
