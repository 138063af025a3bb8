"""Which torch pyframe.dynamo runs on: the release this run pinned, and a
one-line error on any other.

The unsupported-release test needs no torch (it puts a stand-in first on
the path), so it runs in every tox env, with torch or without.
"""

import os
import subprocess
import sys

import pytest


def test_torch_is_the_release_this_run_pinned():
    # tox pins torch and what depends on it (torchvision, timm) in one pip
    # command; a package asking for another torch would have replaced it.
    pinned = os.environ.get("PYFRAME_TEST_TORCH")
    if not pinned:
        pytest.skip("PYFRAME_TEST_TORCH (set by tox's torch envs) names no release")
    torch = pytest.importorskip("torch")
    assert torch.__version__.split("+")[0] == pinned


def test_an_unsupported_torch_is_a_one_line_import_error(tmp_path):
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text("__version__ = '2.10.1+cpu'\n")
    result = subprocess.run(
        [sys.executable, "-c", "import pyframe.dynamo"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(tmp_path)),
        cwd=str(tmp_path),
        timeout=120,
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last == (
        "ImportError: pyframe.dynamo supports torch 2.11, 2.12, 2.13, 2.14 and "
        "2.15; this is torch 2.10.1+cpu"
    )
