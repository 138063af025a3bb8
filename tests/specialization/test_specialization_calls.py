"""CPython 3.12+: no frame missed, whatever the shape of the call made from warm
skipped code (the scenarios are in specialization_scenarios.py): as many
frames as without the mode, with CPython's own entry locals.
"""

import pytest
from conftest import HAS_SPECIALIZATION_MODE, NO_SPECIALIZATION_MODE, record_entries
from specialization_scenarios import INLINE_AFTER_WARM_UP, SCENARIOS
from specialization_support import (
    WARM_UPS,
    call_twice,
    count_frames,
    mode_off_at_start,  # noqa: F401
    specialization,
    specialized,
    warm_up,
    xfail_init_ignores_pep_523,
)
from test_entry_locals import check_entry_locals, run_case

pytestmark = pytest.mark.skipif(not HAS_SPECIALIZATION_MODE, reason=NO_SPECIALIZATION_MODE)

# mode_off_at_start, imported above, is autouse: it applies to every test here.


def test_every_scenario_says_what_its_warm_up_specializes():
    assert set(INLINE_AFTER_WARM_UP) == set(SCENARIOS)


@pytest.mark.parametrize("warm", WARM_UPS)
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_no_frame_missed_from_warm_skipped_code(name, warm, request):
    if name == "class_bodies_run_in_skipped_code" and warm != "under-callback":
        request.applymarker(xfail_init_ignores_pep_523)
    run, _ = SCENARIOS[name]
    code = run.__code__
    warm_up(warm, run, phase="before-mode")
    if warm == "before-mode":
        missing = INLINE_AFTER_WARM_UP[name] - specialized(code)
        assert not missing, f"the warm-up did not specialize {missing}"
    with specialization():
        warm_up(warm, run, phase="in-mode")
        warm_up(warm, run, phase="under-callback")
        in_mode = count_frames(run, skip={code})
        # Then with CPython's oracle watching too: same entry locals, and
        # as many frames as CPython started.
        pairs = run_case(
            name, SCENARIOS, record=lambda run: record_entries(call_twice, run, skip={code})
        )
        check_entry_locals(pairs)
    # Without the mode every frame reaches the hook: the reference counts.
    reference = count_frames(run, skip={code})
    assert in_mode == reference
