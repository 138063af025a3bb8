"""`locals --where EXPR`: report a frame only where EXPR holds over its locals.

The expression is compiled once, when the command line is read, so a syntax
error is a usage error before the program starts.  It is evaluated as `p`
evaluates at a stop: names are looked up in the frame's entry locals first,
then in its globals, then in its builtins.  A frame whose locals make it raise
is not reported, and the first such error of each function is reported once,
as a warning (a condition about `key` raises NameError in a function without
one; that is no reason to stop the program).
"""

from __future__ import annotations

import threading
import types
from collections.abc import Mapping
from typing import IO, Any

from pyframe.cli.errors import UsageError, write_quietly
from pyframe.cli.reports import display_path


def compile_condition(text: str) -> types.CodeType:
    """EXPR compiled for eval(); a UsageError that says where it went wrong."""
    try:
        return compile(text, "<--where>", "eval", dont_inherit=True)
    except SyntaxError as error:
        where = f" at column {error.offset}" if error.offset else ""
        raise UsageError(
            f"--where {text!r} is not a Python expression: {error.msg}{where}"
        ) from None
    except ValueError as error:  # a null byte
        raise UsageError(f"--where {text!r} is not a Python expression: {error}") from None


class Condition:
    """--where EXPR, evaluated over one frame's locals at a time."""

    def __init__(self, text: str, errors: IO[str]) -> None:
        self.text = text
        self.code = compile_condition(text)
        self.errors = errors
        self._warned: set[types.CodeType] = set()
        self._lock = threading.Lock()

    def holds(
        self, code: types.CodeType, f_globals: dict[str, Any], f_locals: Mapping[str, Any]
    ) -> bool:
        """True where the expression is true; False where it is false or raises."""
        try:
            return bool(eval(self.code, f_globals, f_locals))
        except Exception as error:
            self.warn_once(code, error)
            return False

    def warn_once(self, code: types.CodeType, error: Exception) -> None:
        """The first error of each code object, as a warning."""
        with self._lock:
            if code in self._warned:
                return
            self._warned.add(code)
        try:
            reason = f"{type(error).__name__}: {error}"
        except Exception:
            reason = type(error).__name__
        place = f"{code.co_qualname} ({display_path(code.co_filename)}:{code.co_firstlineno})"
        write_quietly(
            self.errors,
            f"pyframe: warning: --where {self.text!r} raised {reason} in {place}; "
            f"its frames where it raises are not reported\n",
        )
