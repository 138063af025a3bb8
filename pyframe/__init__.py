"""pyframe: see, skip or replace every Python frame before it runs.

pyframe installs a PEP 523 frame evaluation function on CPython 3.11 to 3.15
and hands each new frame of a thread to that thread's callback, with the
frame's entry locals built by pyframe itself.
"""

from ._support import unsupported_reason as _unsupported_reason

_reason = _unsupported_reason()
if _reason is not None:
    raise ImportError(_reason)
del _reason, _unsupported_reason

from ._cframe import (  # noqa: E402
    RUN_ONLY,
    RUN_ONLY_RECURSIVE,
    SKIP,
    SKIP_RECURSIVE,
    UNBOUND,
    Cache,
    Compiled,
    FastGuard,
    Frame,
    Setting,
    Switch,
    cache_entries,
    callback,
    get_cache_limit,
    get_callback,
    hook_installed,
    remember,
    remembered,
    reset,
    run_only,
    set_cache_limit,
    set_callback,
    set_specialization,
    specialization_enabled,
)

__all__ = [
    "RUN_ONLY",
    "RUN_ONLY_RECURSIVE",
    "SKIP",
    "SKIP_RECURSIVE",
    "UNBOUND",
    "Cache",
    "Compiled",
    "FastGuard",
    "Frame",
    "Setting",
    "Switch",
    "cache_entries",
    "callback",
    "get_cache_limit",
    "get_callback",
    "hook_installed",
    "remember",
    "remembered",
    "reset",
    "run_only",
    "set_cache_limit",
    "set_callback",
    "set_specialization",
    "specialization_enabled",
]
__version__ = "0.1.0.dev0"
