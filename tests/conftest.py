"""Shared test helpers.  Version flags mirror cframe/compat.h's PYFRAME_PY313."""

import sys

import pytest

import pyframe

PY313 = sys.version_info >= (3, 13)


@pytest.fixture(autouse=True)
def no_leaked_hook():
    """Every test starts and ends with no pyframe callback on this thread.

    A test that fails half-way must not leave a callback installed: later
    tests would run under it and lie.
    """
    pyframe.set_callback(None)
    pyframe.reset()
    try:
        yield
    finally:
        leaked = pyframe.set_callback(None)
        pyframe.reset()
    assert leaked is None, f"test left a pyframe callback installed: {leaked!r}"
    assert not pyframe.hook_installed(), "test left pyframe's PEP 523 hook installed"
