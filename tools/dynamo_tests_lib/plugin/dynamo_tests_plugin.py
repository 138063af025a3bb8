"""A pytest plugin that tools/dynamo_tests.py loads into the runs it starts.

It appends one JSON line per event to the file named by DYNAMO_TESTS_EVENTS,
flushed at once, so what a run did survives the run being killed (a file
timeout, a crash in C, the tool itself interrupted): {"start": id} when a
test begins, {"test": id, "outcome": ..., "detail": ...} when it ends,
{"collect_error": id, "detail": ...} for a module that does not import.
DYNAMO_TESTS_SKIP names a file of test ids (one a line) to deselect: the
tests an earlier part of the run already did, when a run goes on after a
crash or an interruption.  Test ids are pytest's node ids without the file
("Class::test_name").

This directory alone is put on the runs' PYTHONPATH, so nothing else of the
tool is importable there.

It also gives torch.testing._internal.common_utils the names that test
files older than the torch release import and the release no longer has
(STAND_INS), each with what it did, so that such a file imports; natively
and on pyframe alike.  Only names whose stand-in does what the original
did in these runs are given.
"""

from __future__ import annotations

import importlib
import json
import os

import pytest

EVENTS = os.environ.get("DYNAMO_TESTS_EVENTS")
SKIP = os.environ.get("DYNAMO_TESTS_SKIP")

# Per test id, the phases' reports folded so far.
_outcomes: dict[str, tuple[str, str]] = {}


def _write(event: dict) -> None:
    if not EVENTS:
        return
    with open(EVENTS, "a") as handle:
        handle.write(json.dumps(event) + "\n")
        handle.flush()


def _test_id(nodeid: str) -> str:
    # "test_x.py::Class::test_y" -> "Class::test_y": the file is the record's.
    return nodeid.split("::", 1)[1] if "::" in nodeid else nodeid


def _first_line(report) -> str:
    longrepr = report.longrepr
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple):  # a skip: (file, line, reason)
        text = str(longrepr[2])
    else:
        crash = getattr(longrepr, "reprcrash", None)
        text = crash.message if crash is not None else str(longrepr)
    lines = text.strip().splitlines()
    return lines[0][:200] if lines else ""


def _unchanged(fn):
    return fn


# (module, name): (the stand-in made from the module, why it is the same here).
STAND_INS = {
    # torch <= 2.3 test files (test_functions, test_modules, test_ctx_manager
    # through test_functions) decorate tests with it; it turned translation
    # validation off under dynamic shapes, and translation validation is only
    # on with PYTORCH_TEST_WITH_TV=1, which these runs do not set.
    (
        "torch.testing._internal.common_utils",
        "disable_translation_validation_if_dynamic_shapes",
    ): (lambda module: _unchanged, "PYTORCH_TEST_WITH_TV unset"),
    # Older test files (test_higher_order_ops, test_logging, test_package,
    # inductor's test_compiled_autograd) import HAS_CUDA, which torch renamed
    # HAS_CUDA_AND_TRITON with the same value (CUDA available and Triton).
    ("torch.testing._internal.inductor_utils", "HAS_CUDA"): (
        lambda module: module.HAS_CUDA_AND_TRITON,
        "renamed",
    ),
}


def pytest_configure(config) -> None:
    if os.environ.get("PYTORCH_TEST_WITH_TV") == "1":
        return  # the first stand-in would not be the same
    for (module_name, name), (make, _) in STAND_INS.items():
        try:
            module = importlib.import_module(module_name)
            if not hasattr(module, name):
                setattr(module, name, make(module))
        except Exception:  # a torch without it: the file says why it fails
            continue


def pytest_collection_modifyitems(session, config, items) -> None:
    if not SKIP:
        return
    with open(SKIP) as handle:
        skip = {line.rstrip("\n") for line in handle if line.strip()}
    kept = [item for item in items if _test_id(item.nodeid) not in skip]
    deselected = [item for item in items if _test_id(item.nodeid) in skip]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
    items[:] = kept


def pytest_collectreport(report) -> None:
    if report.failed:
        # pytest's text opens with "ImportError while importing test module
        # ..."; the exception itself is on the last "E   " line.
        text = str(report.longrepr)
        raised = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
        detail = raised[-1][:200] if raised else _first_line(report)
        _write({"collect_error": report.nodeid, "detail": detail})


def pytest_runtest_logstart(nodeid, location) -> None:
    _write({"start": _test_id(nodeid)})


def pytest_runtest_logreport(report) -> None:
    test_id = _test_id(report.nodeid)
    outcome, detail = _outcomes.get(test_id, ("passed", ""))
    if report.when == "call":
        if hasattr(report, "wasxfail"):
            outcome = "xpassed" if report.passed else "xfailed"
        elif report.failed:
            outcome, detail = "failed", _first_line(report)
            if detail.startswith("Failed: Timeout"):  # pytest-timeout's
                outcome = "timeout"
        elif report.skipped:
            outcome, detail = "skipped", _first_line(report)
    elif report.failed and outcome not in ("failed", "timeout"):
        # A setup or teardown that fails makes the test an error, whatever
        # its call did.
        outcome, detail = "error", _first_line(report)
    elif report.when == "setup" and report.skipped:
        outcome, detail = "skipped", _first_line(report)
    _outcomes[test_id] = (outcome, detail)


@pytest.hookimpl(trylast=True)
def pytest_runtest_logfinish(nodeid, location) -> None:
    test_id = _test_id(nodeid)
    outcome, detail = _outcomes.pop(test_id, ("error", "no report"))
    _write({"test": test_id, "outcome": outcome, "detail": detail})
