"""The report of `locals`: each frame as a text table or a JSON line.

format_frame() is the table (also what `locals -i` shows at each stop) and
frame_json() the JSON record; short_repr() cuts any value's repr to one line
and never raises, whatever the value's __repr__ does.  A frame's header says
what kind of function it is, whether it is resuming, the asyncio task it runs
in, and, once the program has started threads, its thread's name and id.
"""

from __future__ import annotations

import json
import os
import reprlib
import sys
from dataclasses import dataclass
from typing import TextIO

import pyframe
from pyframe.cli.filters import Decision
from pyframe.cli.seen import FrameView, Seen, code_kind

VALUE_WIDTH = 70  # longest value repr in a slot table; longer ones are cut with "..."


class _ShortRepr(reprlib.Repr):
    """reprlib's bounded repr, which also survives a __repr__ that raises."""

    def repr_instance(self, x: object, level: int) -> str:
        text = safe_repr(x)
        return text if len(text) <= self.maxother else text[: self.maxother - 3] + "..."


_short_repr = _ShortRepr()
# Attributes, not keyword arguments: Repr() takes those from 3.12 on.
_short_repr.maxstring = _short_repr.maxother = VALUE_WIDTH
_short_repr.maxlevel = 3


def safe_repr(value: object) -> str:
    try:
        return repr(value)
    except Exception as error:
        try:
            reason = f"{type(error).__name__}: {error}"
        except Exception:
            reason = type(error).__name__
        return f"<repr failed: {reason}>"


def short_repr(value: object) -> str:
    """One line of at most VALUE_WIDTH characters; never raises."""
    try:
        text = _short_repr.repr(value)
    except Exception:
        text = safe_repr(value)
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 3] + "..."


@dataclass(frozen=True)
class Slot:
    index: int
    name: str
    kind: str
    value: str | None  # short repr; None when the slot is empty


def frame_slots(frame: FrameView) -> list[Slot]:
    return [
        Slot(index, name, kind, None if value is pyframe.UNBOUND else short_repr(value))
        for index, (name, kind, value) in enumerate(frame.localsplus)
    ]


# Taken before the program runs: its chdir() calls must not change how files are shown.
_START_DIR = os.path.join(os.getcwd(), "")


def display_path(filename: str) -> str:
    """Files under the directory pyframe started in are shown relative to it."""
    return filename[len(_START_DIR) :] if filename.startswith(_START_DIR) else filename


def frame_header(seen: Seen) -> str:
    """'[n] qualname  file:line', then what and where it runs."""
    code = seen.code
    header = f"[{seen.number}] {code.co_qualname}  {display_path(code.co_filename)}:"
    header += str(code.co_firstlineno)
    kind = code_kind(code)
    if kind is not None:
        header += f"  ({kind}, resumed)" if seen.event == "resume" else f"  ({kind})"
    if seen.task is not None:
        header += f"  task {_quoted(seen.task)}"
    if seen.show_thread:
        header += f"  thread {_quoted(seen.thread_name)} {seen.thread_id}"
    return header


def _quoted(name: str) -> str:
    # Names may hold spaces ("Thread-3 (process_request_thread)"): quote them.
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_frame(seen: Seen) -> str:
    header = frame_header(seen)
    slots = frame_slots(seen.frame)
    if not slots:
        return f"{header}\n    (no slots)\n"
    index_width = len(str(slots[-1].index))
    name_width = max(4, *(len(slot.name) for slot in slots))
    kind_width = max(4, *(len(slot.kind) for slot in slots))
    lines = [
        header,
        f"    {'#':>{index_width}}  {'name':<{name_width}}  {'kind':<{kind_width}}  value",
    ]
    for slot in slots:
        value = "<unbound>" if slot.value is None else slot.value
        lines.append(
            f"    {slot.index:>{index_width}}  {slot.name:<{name_width}}  "
            f"{slot.kind:<{kind_width}}  {value}"
        )
    return "\n".join(lines) + "\n"


def frame_json(seen: Seen) -> str:
    code = seen.code
    record = {
        "frame": seen.number,
        "qualname": code.co_qualname,
        "file": code.co_filename,
        "line": code.co_firstlineno,
        "generator": code_kind(code) is not None,
        "event": seen.event,
        "task": seen.task,
        "thread": seen.thread_name,
        "thread_id": seen.thread_id,
        "slots": [
            {"index": slot.index, "name": slot.name, "kind": slot.kind, "value": slot.value}
            for slot in frame_slots(seen.frame)
        ],
    }
    # ASCII only: the line stays valid JSON whatever the stream's encoding does.
    return json.dumps(record) + "\n"


class Report:
    """`locals` without -i: one table (or JSON line) per frame."""

    def __init__(self, stream: TextIO, as_json: bool) -> None:
        self.stream = stream
        self.format = frame_json if as_json else format_frame

    def __call__(self, seen: Seen) -> Decision:
        flush_program_output()
        self.stream.write(self.format(seen))
        self.stream.flush()
        return Decision.RUN


def flush_program_output() -> None:
    # The program's buffered output belongs before the report of the frame it leads to.
    try:
        sys.stdout.flush()
    except (AttributeError, OSError, ValueError):
        pass
