"""CPython 3.12+: every case of the entry-locals corpus (test_entry_locals.CASES)
called from warm skipped code: CPython's own entry locals, every frame.
"""

import pytest
from conftest import HAS_SPECIALIZATION_MODE, NO_SPECIALIZATION_MODE, record_entries
from specialization_support import (
    INLINE_CALLS,
    WARM_UPS,
    aside,
    call_twice,
    mode_off_at_start,  # noqa: F401
    specialization,
    specialized,
    warm_up,
)
from test_entry_locals import CASES, check_entry_locals, run_case

pytestmark = pytest.mark.skipif(not HAS_SPECIALIZATION_MODE, reason=NO_SPECIALIZATION_MODE)

# mode_off_at_start, imported above, is autouse: it applies to every test here.


# ---- the entry-locals corpus, driven from warm skipped code ------------------------

DRIVER_SOURCE = """\
def driver(times):
    for _ in range(times):
        asides.append(aside())
        run()
"""


def make_driver(run):
    """A driver of its own (a fresh code object) that calls `run`; it notes
    whether each of its frames ran stepped aside."""
    namespace = {"run": run, "aside": aside, "asides": []}
    exec(DRIVER_SOURCE, namespace)
    return namespace["driver"], namespace["asides"]


@pytest.mark.parametrize("warm", WARM_UPS)
@pytest.mark.parametrize("name", list(CASES))
def test_corpus_entry_locals_from_warm_skipped_code(name, warm):
    run, _ = CASES[name]
    driver, asides = make_driver(run)
    warm_up(warm, driver, 1, phase="before-mode")
    if warm == "before-mode":
        assert specialized(driver.__code__) & INLINE_CALLS, "the warm-up specialized nothing"
    with specialization():
        warm_up(warm, driver, 1, phase="in-mode")
        warm_up(warm, driver, 1, phase="under-callback")
        del asides[:]

        def record(_run):
            return record_entries(call_twice, driver, 1, skip={driver.__code__})

        pairs = run_case(name, record=record)
    assert not [pair for pair in pairs if pair.code is driver.__code__]
    check_entry_locals(pairs)
    # The second call of the driver: skipped, and stepped aside.
    assert asides[-1] is True, asides
