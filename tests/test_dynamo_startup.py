"""pyframe._dynamo_startup, which pyframe-dynamo.pth runs at interpreter start
when PYFRAME_DYNAMO is set (tests/with_torch/test_dynamo_install.py starts
interpreters with it).  It needs no torch."""

import sys

from pyframe import _dynamo_startup as startup


def finders():
    return [finder for finder in sys.meta_path if isinstance(finder, startup._Finder)]


def test_start_twice_puts_one_finder(monkeypatch):
    # CPython's site module runs a venv's .pth files twice (site.venv(), then
    # site.main()), so start() runs twice there: a second finder would stay
    # in sys.meta_path after torch._dynamo's import took the first one out.
    monkeypatch.setenv(startup.ENVIRONMENT_VARIABLE, "1")
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path if f not in finders()])
    monkeypatch.delitem(sys.modules, startup._TARGET, raising=False)
    startup.start()
    startup.start()
    assert len(finders()) == 1


def test_start_does_nothing_unless_asked(monkeypatch):
    monkeypatch.setenv(startup.ENVIRONMENT_VARIABLE, "0")
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path if f not in finders()])
    monkeypatch.delitem(sys.modules, startup._TARGET, raising=False)
    startup.start()
    assert finders() == []
