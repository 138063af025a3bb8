"""The TorchDynamo examples run, each in a process of its own: the
documentation shows them (docs/dynamo.md, docs/reference/dynamo.md)."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch", minversion="2.11")

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "examples")


@pytest.mark.parametrize(
    ("example", "said"),
    [
        # pyframe.dynamo.compile next to torch.compile, with a graph break.
        ("dynamo_compile.py", "same results and same graphs as torch.compile"),
        # install(), uninstall(), installed(), is_installed(), compile().
        ("dynamo_install.py", "same results and graphs as native torch.compile"),
    ],
)
def test_the_example_runs(example, said):
    result = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, example)],
        capture_output=True,
        text=True,
        timeout=300,
        # Not the source tree: the examples import the installed pyframe.
        cwd=os.path.dirname(os.path.abspath(__file__)),
    )
    assert result.returncode == 0, result.stderr
    assert said in result.stdout, result.stdout
