"""How the command line reports trouble.

UsageError is what the user asked for and cannot be done: main() prints it as
one line, no traceback.  describe_exception() puts an exception of the program
or of the user's callback on one line; write_quietly() writes where writing
may itself fail.
"""

from __future__ import annotations

from typing import IO


class UsageError(Exception):
    """What the user asked for cannot be done; reported as one line, no traceback."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def describe_exception(error: BaseException) -> str:
    """'Type: message (at file:line)', the innermost place it was raised."""
    text = f"{type(error).__name__}: {error}"
    traceback = error.__traceback__
    while traceback is not None and traceback.tb_next is not None:
        traceback = traceback.tb_next
    if traceback is not None:
        text += f" (at {traceback.tb_frame.f_code.co_filename}:{traceback.tb_lineno})"
    return text


def write_quietly(stream: IO[str], text: str) -> None:
    try:
        stream.write(text)
        stream.flush()
    except Exception:  # closed, full, or None (python ... 2>&-): nowhere left to say it
        pass
