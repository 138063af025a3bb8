# Argument checking the public functions and types share: how a bad value is
# described in an error, and the checks for a code object and a cache limit.
# Included by _cframe.pyx.


cdef extern from "Python.h":
    bint PyCode_Check(object o)


cdef str _describe(object value):
    return "a %s object (%.60r)" % (type(value).__name__, value)


cdef int _check_code(str function, object code) except -1:
    if not PyCode_Check(code):
        raise TypeError("pyframe.%s() expects a code object; got %s"
                        % (function, _describe(code)))
    return 0


cdef int _check_limit(str function, object n) except -1:
    if type(n) is not int:
        raise TypeError("pyframe.%s() expects an int limit; got %s" % (function, _describe(n)))
    if not 0 <= n <= 1 << 20:
        raise ValueError("pyframe.%s() expects 0 <= limit <= %d; got %d"
                         % (function, 1 << 20, n))
    return 0
