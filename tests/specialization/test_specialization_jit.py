"""CPython 3.12+: JIT traces compiled before the mode do not hide frames from
the callback (run in a subprocess with PYTHON_JIT=1).
"""

import os
import subprocess
import sys
import textwrap

import pytest
from conftest import HAS_SPECIALIZATION_MODE, NO_SPECIALIZATION_MODE
from specialization_support import mode_off_at_start  # noqa: F401

pytestmark = pytest.mark.skipif(not HAS_SPECIALIZATION_MODE, reason=NO_SPECIALIZATION_MODE)

# mode_off_at_start, imported above, is autouse: it applies to every test here.


# ---- the JIT ----------------------------------------------------------------------

JIT_SCRIPT = textwrap.dedent(
    """
    import sys
    import pyframe

    def leaf(a):
        return a

    def hot(n):
        total = 0
        for i in range(n):
            total += leaf(i)
        return total

    assert sys._jit.is_enabled(), "the JIT is off"
    hot(200_000)  # traced and compiled before the mode
    seen = [0]

    def callback(frame):
        if frame.f_code is hot.__code__:
            return pyframe.SKIP
        seen[0] += 1

    pyframe.set_specialization(True)
    with pyframe.callback(callback):
        for _ in range(5):
            hot(100_000)
    pyframe.set_specialization(False)
    print(seen[0])
    """
)


@pytest.mark.skipif(
    not (hasattr(sys, "_jit") and sys._jit.is_available()), reason="no JIT in this build"
)
def test_jit_traces_made_before_the_mode_do_not_hide_frames():
    env = dict(os.environ, PYTHON_JIT="1")
    result = subprocess.run(
        [sys.executable, "-c", JIT_SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(500_000)]
