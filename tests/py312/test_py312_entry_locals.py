"""Entry locals where CPython 3.12 differs from 3.13 (tests/py313 has the other side).

CPython 3.11 behaves as 3.12 in each of these, so they run there too (its
oracle is sys.settrace's 'call' event, not PY_START: conftest.py).
"""

import pytest
from conftest import PY313, locals_difference, record_entries
from test_entry_locals import CASES, exec_target, make_preset_class, run_case, token

import pyframe

pytestmark = pytest.mark.skipif(PY313, reason="CPython 3.11 and 3.12 behaviour")


@pytest.mark.parametrize("name", list(CASES))
def test_f_lasti_of_a_frame_not_started_is_minus_one(name):
    # 3.11's and 3.12's frame points one code unit before the next instruction: before
    # the first one, that is offset -1.
    for pair in run_case(name):
        assert pair.f_lasti == -1, f"{pair.qualname} (call #{pair.call})"


def test_exec_of_function_code_shows_its_locals_mapping_merged_in():
    # exec() gives optimized code a locals mapping too.  3.12's f_locals
    # getter writes the fast locals into it and shows all of it, deleting the
    # names of unbound locals; pyframe shows the same from a copy, leaving the
    # caller's mapping alone.
    stale, other = token("stale"), token("other")
    namespace = {"token": token, "local": stale, "other": other}
    seen = []

    def callback(frame):
        if frame.f_code is exec_target.__code__:
            seen.append(frame.f_locals)

    with pyframe.callback(callback):
        exec(exec_target.__code__, namespace)
    (entry,) = seen
    assert list(entry) == ["token", "other", "__builtins__"]
    assert entry["other"] is other
    assert namespace["local"] is stale, "pyframe changed the exec namespace"

    # And CPython agrees, name collision included.
    namespace = {"token": token, "local": stale, "other": other}
    _, pairs = record_entries(exec, exec_target.__code__, namespace)
    (pair,) = [pair for pair in pairs if pair.code is exec_target.__code__]
    assert locals_difference(pair.got, pair.want) is None


def test_cpython_f_locals_deletes_preset_cell_names_from_a_class_namespace():
    # A class body's f_locals is its namespace itself.  Asked for it at
    # PY_START, 3.12 "updates" it from the fast locals and deletes the names
    # of the body's cells, still empty, from the namespace itself: CPython's
    # own observation changes what the body sees.  pyframe shows the
    # namespace the body really starts with and does not touch it.
    assert "__class__" in make_preset_class().seen
    preset, pairs = record_entries(make_preset_class)
    (pair,) = [pair for pair in pairs if pair.code.co_name == "Preset"]
    assert pair.got_mapping is pair.want_mapping
    assert "__class__" in pair.got
    assert "__class__" not in pair.want
    assert "__class__" not in preset.seen
    del pair.got["__class__"]
    assert locals_difference(pair.got, pair.want) is None


class Plain:
    def __init__(self, value):
        self.value = value


def make_plain(value):
    return Plain(value)


def test_init_frames_at_specialized_call_sites():
    # 3.11 and 3.12 have no specialization that enters __init__ directly.
    for _ in range(200):
        make_plain(None)
    _, pairs = record_entries(make_plain, token("value"))
    assert "Plain.__init__" in [pair.qualname for pair in pairs]
    for pair in pairs:
        assert locals_difference(pair.got, pair.want) is None
