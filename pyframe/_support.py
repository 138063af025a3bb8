"""Which interpreters pyframe runs on.

This module imports nothing and is read by ``setup.py`` too, so the build and
``import pyframe`` refuse an unsupported interpreter with the same words.
"""

import sys

SUPPORTED = ((3, 11), (3, 12), (3, 13), (3, 14), (3, 15))

UNSUPPORTED_MESSAGE = (
    "pyframe supports CPython 3.11 to 3.15 (with the GIL) only; this is {impl} {version}"
)


def unsupported_reason():
    """Return why this interpreter cannot run pyframe, or None if it can."""
    impl = sys.implementation.name
    version = "%d.%d.%d" % sys.version_info[:3]
    gil_disabled = False
    try:
        import sysconfig

        gil_disabled = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    except Exception:  # pragma: no cover - sysconfig is always there on CPython
        pass
    if impl != "cpython" or tuple(sys.version_info[:2]) not in SUPPORTED:
        return UNSUPPORTED_MESSAGE.format(impl=impl, version=version)
    if gil_disabled:
        return UNSUPPORTED_MESSAGE.format(impl=impl, version=version + " (free-threaded)")
    return None
