"""pyframe.set_specialization's API on every CPython (3.11-3.15): a non-bool is
a TypeError naming it; before 3.15, switching the mode on is refused with the
reason and switching it off is a no-op.

(tests/py315/test_specialization_*.py hold the mode itself.)
"""

import pytest
from conftest import PY315

import pyframe


@pytest.mark.skipif(PY315, reason="3.15 has the mode (tests/py315)")
def test_switching_the_mode_on_before_3_15_names_the_issue_and_version():
    with pytest.raises(NotImplementedError) as raised:
        pyframe.set_specialization(True)
    assert "gh-146031" in str(raised.value)
    assert "3.15" in str(raised.value)
    assert pyframe.specialization_enabled() is False


@pytest.mark.skipif(PY315, reason="3.15 has the mode (tests/py315)")
def test_switching_it_off_before_3_15_is_a_no_op():
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
