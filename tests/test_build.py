"""The build and import refuse unsupported interpreters with one message."""

import os
import subprocess
import sys

import pytest

import pyframe
from pyframe import _support

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def other_python():
    """A CPython that pyframe does not support, if this machine has one."""
    find_python = os.path.join(ROOT, "tools", "find-python")
    if not os.path.exists(find_python):  # the sdist's tests carry no tools/find-python
        pytest.skip("no tools/find-python to look for other interpreters with")
    for version in ("3.10", "3.9"):
        result = subprocess.run(
            [find_python, version],
            capture_output=True,
            text=True,
        )
        if result.returncode == 0:
            return result.stdout.strip()
    pytest.skip("no CPython that pyframe does not support on this machine")


def test_supported_here():
    assert _support.unsupported_reason() is None
    assert pyframe.__version__


def test_import_on_unsupported_interpreter_is_an_import_error_with_the_message():
    python = other_python()
    env = dict(os.environ, PYTHONPATH=ROOT)
    result = subprocess.run(
        [python, "-c", "import pyframe"], capture_output=True, text=True, env=env, cwd="/"
    )
    assert result.returncode == 1
    assert "ImportError: pyframe supports CPython 3.11 to 3.15" in result.stderr
    assert "Segmentation" not in result.stderr


def test_build_on_unsupported_interpreter_refuses_with_the_message():
    python = other_python()
    result = subprocess.run(
        [python, "setup.py", "--name"], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode != 0
    assert "pyframe supports CPython 3.11 to 3.15" in result.stderr


def test_message_names_the_interpreter(monkeypatch):
    monkeypatch.setattr(sys, "version_info", (3, 10, 13, "final", 0))
    reason = _support.unsupported_reason()
    assert (
        reason
        == "pyframe supports CPython 3.11 to 3.15 (with the GIL) only; this is cpython 3.10.13"
    )


def test_message_for_a_newer_interpreter(monkeypatch):
    monkeypatch.setattr(sys, "version_info", (3, 16, 0, "alpha", 1))
    assert _support.unsupported_reason().endswith("only; this is cpython 3.16.0")
