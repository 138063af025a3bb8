# What a user reads and changes in the caches: reset, remember, remembered,
# the per-code cache limit and cache_entries.  Included by _cframe.pyx.


def reset(code=None, *, cache=None):
    """Forget decisions and cached replacement code: for `code`, or for every
    code object; of `cache` alone, or of every cache."""
    cdef pyframe_owner *owner = NULL
    if cache is not None:
        owner = _owner_of("reset", cache)
    if code is None:
        pyframe_reset_all(owner)
        return
    if not PyCode_Check(code):
        raise TypeError("pyframe.reset() expects a code object or None; got %s"
                        % _describe(code))
    pyframe_reset_code(code, owner)


def remember(code, decision, *, cache):
    """Make `decision` for `code` in `cache` without waiting for a frame: as if
    the callback installed with `cache` had returned it for a frame of `code`
    (pyframe.SKIP, SKIP_RECURSIVE, RUN_ONLY or RUN_ONLY_RECURSIVE); None
    forgets the decision, so that the callback is asked again.  Cached
    entries are kept either way."""
    cdef pyframe_owner *owner = _owner_of("remember", cache)
    cdef int action
    _check_code("remember", code)
    if decision is None:
        action = PYFRAME_RUN
    elif decision is _SKIP:
        action = PYFRAME_SKIP
    elif decision is _SKIP_RECURSIVE:
        action = PYFRAME_SKIP_RECURSIVE
    elif decision is _RUN_ONLY:
        action = PYFRAME_RUN_ONLY
    elif decision is _RUN_ONLY_RECURSIVE:
        action = PYFRAME_RUN_ONLY_RECURSIVE
    else:
        raise TypeError("pyframe.remember() expects decision to be None, pyframe.SKIP, "
                        "pyframe.SKIP_RECURSIVE, pyframe.RUN_ONLY or "
                        "pyframe.RUN_ONLY_RECURSIVE; got %s" % _describe(decision))
    pyframe_remember(code, owner, action)


def remembered(code, *, cache):
    """The decision `cache` holds for `code` (a sentinel), or None."""
    cdef pyframe_owner *owner = _owner_of("remembered", cache)
    _check_code("remembered", code)
    return _DECISION_NAMES[pyframe_remembered(code, owner)]


def set_cache_limit(n):
    """Cache at most `n` replacements per code object and cache (default 8)
    for caches made without a limit; past it the least recently used entry
    is dropped.  0 turns caching off."""
    _check_limit("set_cache_limit", n)
    pyframe_set_cache_limit(n)


def get_cache_limit():
    """The per-code-object cache limit."""
    return pyframe_get_cache_limit()


def cache_entries(code, *, cache=None):
    """[(replacement code, guard, hits)] cached on `code` (by `cache` alone,
    or by every cache), most recently used first."""
    cdef pyframe_owner *owner = NULL
    _check_code("cache_entries", code)
    if cache is not None:
        owner = _owner_of("cache_entries", cache)
    return pyframe_cache_entries(code, owner)
