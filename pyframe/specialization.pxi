# The specialization mode's switches (CPython 3.12+; cframe/specialize.c):
# set_specialization, specialization_enabled, and the probes the tests use.
# Included by _cframe.pyx.


def set_specialization(enabled):
    """Switch the specialization mode on or off (CPython 3.12+).

    In the mode, frames of code the callback skipped (SKIP, SKIP_RECURSIVE)
    run with pyframe's hook stepped aside, so CPython specializes and inlines
    the calls they make, at the speed of no hook at all; every frame of other
    code still reaches the callback or its cached replacement.  The mode
    steps aside only while a single thread has a callback installed.  On
    3.11, switching it on raises NotImplementedError; off is a no-op."""
    if type(enabled) is not bool:
        raise TypeError("pyframe.set_specialization() expects True or False; got %s"
                        % _describe(enabled))
    pyframe_specialization_set(enabled)


def specialization_enabled():
    """True while the specialization mode is on."""
    return bool(pyframe_specialization_enabled())


def _specialization_hooked(func):
    """For tests: True when `func` carries pyframe's vectorcall."""
    return bool(pyframe_specialization_hooked(func))


def _specialization_probe(func, driver):
    """For tests: how many of func's calls made while driver() runs go
    through the function's vectorcall (pyframe swaps in one that counts)."""
    return pyframe_specialization_probe(func, driver)


def _specialization_aside():
    """For tests: True while pyframe's hook is stepped aside for skipped code."""
    return bool(pyframe_specialization_aside())
