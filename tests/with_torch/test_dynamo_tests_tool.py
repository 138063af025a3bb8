"""tools/dynamo_tests.py records what each mode did, per test, and picks up where it stopped.

A made-up test file (ours, not PyTorch's) whose tests behave differently
under PYFRAME_DYNAMO=1: one fails there only, one kills its process there
only. The tool must count them as passing natively and not on pyframe,
run the rest of the file after the crash, keep the results file, and not
run a finished file again.
"""

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch", minversion="2.11")

TOOL = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "tools", "dynamo_tests.py")
if not os.path.exists(TOOL):  # the sdist's tests carry no tools/
    pytest.skip("no tools/dynamo_tests.py", allow_module_level=True)

TESTS = textwrap.dedent(
    """
    import os
    import unittest

    ON_PYFRAME = os.environ.get("PYFRAME_DYNAMO") == "1"

    class Shapes(unittest.TestCase):
        def test_passes(self):
            pass

        def test_fails_natively(self):
            self.fail("both ways")

        def test_fails_on_pyframe(self):
            if ON_PYFRAME:
                raise RuntimeError("on pyframe only\\nand a second line")

        def test_kills_on_pyframe(self):
            if ON_PYFRAME:
                os._exit(3)

        @unittest.skip("never")
        def test_skipped(self):
            pass

        def test_z_runs_after_the_crash(self):
            pass
    """
)


def run_tool(tmp_path, *extra):
    return subprocess.run(
        [sys.executable, TOOL, "--python", sys.executable, "--root", str(tmp_path)]
        + ["--out", str(tmp_path / "out"), "--results", str(tmp_path / "results")]
        + ["--per-test-timeout", "0", *extra],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_records_compares_and_resumes(tmp_path):
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "test_shapes.py").write_text(TESTS)
    (tmp_path / "files.txt").write_text("# the list\nsuite/test_shapes.py\n")

    first = run_tool(tmp_path, str(tmp_path / "files.txt"))
    assert first.returncode == 1, first.stderr  # two tests fail on pyframe only
    (results,) = (tmp_path / "results").iterdir()
    lines = results.read_text().splitlines()
    tests = {line.split("\t")[1]: line.split("\t")[2:] for line in lines if line.startswith("test")}
    assert tests == {
        "Shapes::test_passes": ["passed", "passed", ""],
        "Shapes::test_fails_natively": ["failed", "failed", "AssertionError: both ways"],
        "Shapes::test_fails_on_pyframe": ["passed", "failed", "RuntimeError: on pyframe only"],
        "Shapes::test_kills_on_pyframe": [
            "passed",
            "crashed",
            "the process ended in this test (exit status 3)",
        ],
        "Shapes::test_skipped": ["skipped", "skipped", ""],
        "Shapes::test_z_runs_after_the_crash": ["passed", "passed", ""],
    }
    runs = [line.split("\t")[1:5] for line in lines if line.startswith("run")]
    assert [(mode, status, parts) for mode, status, _, parts in runs] == [
        ("native", "done", "1"),
        ("pyframe", "done", "2"),
    ]
    row = "| `suite/test_shapes.py` | 6 | 4 | 2 | 50.0% | pyframe in 2 parts |"
    assert row in first.stdout.splitlines()

    # Finished: the same command runs nothing and prints the same table.
    again = run_tool(tmp_path, str(tmp_path / "suite"))
    assert "part 1" not in again.stderr and "done before" in again.stderr
    assert again.stdout == first.stdout

    # --report reads the results file alone.
    alone = run_tool(tmp_path, "--report", str(results))
    assert alone.stdout == first.stdout
    assert alone.returncode == 1
