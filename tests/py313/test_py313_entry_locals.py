"""Entry locals where CPython 3.13 differs from 3.12 (tests/py312 has the other side)."""

import sys
import textwrap

import pytest
from conftest import IN_SPECIALIZATION_MODE, PY313, locals_difference, record_entries
from test_entry_locals import CASES, exec_target, make_preset_class, run_case, token

import pyframe

pytestmark = pytest.mark.skipif(not PY313, reason="CPython 3.13 behaviour")


@pytest.mark.parametrize("name", list(CASES))
def test_f_lasti_of_a_frame_not_started_is_zero(name):
    # 3.13's frame points at the next instruction: the first one, offset 0.
    for pair in run_case(name):
        assert pair.f_lasti == 0, f"{pair.qualname} (call #{pair.call})"


def test_exec_of_function_code_shows_only_its_fast_locals():
    # 3.13's FrameLocalsProxy shows an optimized frame's fast locals and
    # ignores the locals mapping exec() handed it.
    namespace = {"token": token, "local": token("stale"), "other": token("other")}
    seen = []

    def callback(frame):
        if frame.f_code is exec_target.__code__:
            seen.append(frame.f_locals)

    with pyframe.callback(callback):
        exec(exec_target.__code__, namespace)
    assert seen == [{}]

    _, pairs = record_entries(exec, exec_target.__code__, dict(namespace))
    (pair,) = [pair for pair in pairs if pair.code is exec_target.__code__]
    assert pair.want == {}
    assert locals_difference(pair.got, pair.want) is None


def test_class_namespace_with_preset_cell_names_is_shown_as_is():
    # Unlike 3.12's, 3.13's f_locals getter leaves a class namespace alone.
    preset, pairs = record_entries(make_preset_class)
    (pair,) = [pair for pair in pairs if pair.code.co_name == "Preset"]
    assert pair.got_mapping is pair.want_mapping
    assert "__class__" in pair.want
    assert "__class__" in preset.seen
    assert locals_difference(pair.got, pair.want) is None


# PEP 696 type parameter defaults are 3.13 syntax: compiled at run time so
# that 3.12 can still import this file.
TYPE_PARAMETER_DEFAULTS = textwrap.dedent(
    """
    def generic[T = int, *Ts = *tuple[str, ...], **P = [bytes]](x: T) -> T:
        return x

    class Box[T = list[int]]:
        def get(self, item: T) -> T:
            return item

    type Alias[K = dict] = list[K]

    defaults = [param.__default__ for param in generic.__type_params__]
    defaults += [param.__default__ for param in Box.__type_params__]
    defaults += [param.__default__ for param in Alias.__type_params__]
    generic(given)
    Box().get(given)
    value = Alias.__value__
    """
)


def test_type_parameter_defaults():
    namespace = {"given": token("given")}
    code = compile(TYPE_PARAMETER_DEFAULTS, "<type parameter defaults>", "exec")
    _, pairs = record_entries(exec, code, namespace)
    names = [pair.qualname for pair in pairs]
    # Each default is a lazily evaluated scope of its own, named after its
    # parameter.
    for expected in ("generic", "Box", "Box.get", "Alias", "T", "Ts", "P", "K"):
        assert expected in names, f"no frame {expected!r} in {names}"
    for pair in pairs:
        problem = locals_difference(pair.got, pair.want)
        assert problem is None, f"{pair.qualname} (call #{pair.call}): {problem}"


class Plain:
    def __init__(self, value):
        self.value = value


def make_plain(value):
    return Plain(value)


@pytest.mark.xfail(
    # In the specialization mode pyframe keeps Plain (made before the mode
    # went on) from CALL_ALLOC_AND_ENTER_INIT, and sees every __init__ frame.
    sys.version_info[:3] == (3, 13, 0) and not IN_SPECIALIZATION_MODE,
    raises=AssertionError,
    strict=True,
    reason=(
        "CPython 3.13.0 specializes Plain(...) into CALL_ALLOC_AND_ENTER_INIT, which "
        "pushes the __init__ frame without checking for a PEP 523 function: pyframe "
        "never sees it, PY_START does"
    ),
)
def test_init_frames_at_specialized_call_sites():
    for _ in range(200):
        make_plain(None)
    _, pairs = record_entries(make_plain, token("value"))
    assert "Plain.__init__" in [pair.qualname for pair in pairs]
    for pair in pairs:
        assert locals_difference(pair.got, pair.want) is None
