"""pyframe.set_specialization's API on every CPython (3.11-3.15): a non-bool is
a TypeError naming it; on 3.11, switching the mode on is refused with the
reason and switching it off is a no-op.

(tests/specialization/test_specialization_*.py hold the mode itself, on 3.12+;
tests/test_specialization_probe.py shows the reason for 3.11.)
"""

import pytest
from conftest import HAS_SPECIALIZATION_MODE

import pyframe


@pytest.mark.skipif(HAS_SPECIALIZATION_MODE, reason="3.12+ have the mode (tests/specialization)")
def test_switching_the_mode_on_on_3_11_names_the_reason_and_version():
    with pytest.raises(NotImplementedError) as raised:
        pyframe.set_specialization(True)
    assert "3.12 or later" in str(raised.value)
    assert "3.11's CALL" in str(raised.value)
    assert "vectorcall" in str(raised.value)
    assert pyframe.specialization_enabled() is False


@pytest.mark.skipif(HAS_SPECIALIZATION_MODE, reason="3.12+ have the mode (tests/specialization)")
def test_switching_it_off_on_3_11_is_a_no_op():
    assert pyframe.set_specialization(False) is None
    assert pyframe.specialization_enabled() is False


@pytest.mark.parametrize("value", [1, 0, None, "yes", 1.0, [True]])
def test_a_non_bool_switch_is_a_type_error_naming_it(value):
    before = pyframe.specialization_enabled()
    with pytest.raises(TypeError) as raised:
        pyframe.set_specialization(value)
    assert type(value).__name__ in str(raised.value)
    assert repr(value) in str(raised.value)
    assert pyframe.specialization_enabled() is before
