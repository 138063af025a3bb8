"""Entry f_locals of PEP 695 scopes (type parameters, type aliases).

PEP 695 is CPython 3.12 syntax: conftest.py collects this module on 3.12 and
later only, so that test_entry_locals.py, the rest of the corpus, stays
importable on 3.11.  The checks are test_entry_locals.py's.
"""

import pytest
from conftest import PY313, record_entries_traced
from test_entry_locals import (
    case_registry,
    check_entry_locals,
    check_localsplus,
    run_case,
    token,
)

PEP695_CASES = {}
case = case_registry(PEP695_CASES)


@case("generic", "<generic parameters of generic>", "Box", "<generic parameters of Box>", "Alias")
def case_pep695():
    def generic[T, *Ts, **P](x: T, *args: *Ts) -> T:
        return x

    class Box[T]:
        def get(self, item: T) -> T:
            return item

        def generic_method[U](self, item: U) -> U:
            return item

    type Alias[K] = dict[K, list[K]]
    type Plain = list[Box]

    generic(token("x"))
    Box().get(token("item"))
    Box().generic_method(token("item"))
    # Lazily evaluated scopes run when asked for.
    _ = Alias.__value__, Plain.__value__


@case("bounded", "constrained")
def case_pep695_lazy_bounds():
    def bounded[T: dict](x: T) -> T:
        return x

    def constrained[S: (list, tuple)](x: S) -> S:
        return x

    _ = bounded.__type_params__[0].__bound__
    _ = constrained.__type_params__[0].__constraints__
    bounded(token("x"))
    constrained(token("x"))


@case("InClass", "generic_in_class")
def case_pep695_in_class():
    outer = token("outer")

    class InClass:
        # Annotation scopes in a class body see its namespace (__classdict__).
        attribute = int

        def generic_in_class[T](self, x: T, y: attribute) -> T:
            return outer, x

        class Member[U]:
            value: U

        type Inner = list[attribute]

    InClass().generic_in_class(token("x"), token("y"))
    _ = InClass.Inner.__value__


@pytest.mark.parametrize("name", list(PEP695_CASES))
def test_entry_locals_match_cpython(name):
    check_entry_locals(run_case(name, PEP695_CASES))


@pytest.mark.parametrize("name", list(PEP695_CASES))
def test_settrace_oracle_agrees_where_py_start_is_the_oracle(name):
    # See test_entry_locals.py's test of the same name.
    check_entry_locals(run_case(name, PEP695_CASES, record=record_entries_traced))


@pytest.mark.parametrize("name", list(PEP695_CASES))
def test_localsplus_matches_code_and_cpython(name):
    for pair in run_case(name, PEP695_CASES):
        check_localsplus(pair)


@pytest.mark.parametrize("name", list(PEP695_CASES))
def test_f_lasti_of_a_frame_not_started(name):
    # As for the rest of the corpus (tests/py312, tests/py313): -1 on 3.12,
    # the first instruction from 3.13 on.
    for pair in run_case(name, PEP695_CASES):
        assert pair.f_lasti == (0 if PY313 else -1), f"{pair.qualname} (call #{pair.call})"
