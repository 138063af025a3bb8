"""Which frames `locals` reports, and the callback that applies the choice.

FrameFilter decides from a code object alone (--match, --exclude, the
library directories, pyframe's own files), so a "no" becomes pyframe.SKIP
and costs nothing after a code object's first call.  LocalsCallback hands the
frames it keeps to a report or to the interactive session, and stops at --max.
"""

from __future__ import annotations

import enum
import os
import re
import site
import sysconfig
import types
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING

import pyframe
from pyframe.cli.errors import describe_exception, write_quietly

if TYPE_CHECKING:
    from pyframe._cframe import CallbackResult  # from the stub


def _dir_prefixes(paths: Sequence[str]) -> tuple[str, ...]:
    prefixes = set()
    for path in paths:
        for form in (os.path.abspath(path), os.path.realpath(path)):
            prefixes.add(os.path.join(form, ""))
    return tuple(sorted(prefixes))


def library_prefixes() -> tuple[str, ...]:
    """Directories of the standard library and of installed packages."""
    paths = sysconfig.get_paths()
    dirs = [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths]
    dirs.extend(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return _dir_prefixes(dirs)


_PYFRAME_PREFIXES = _dir_prefixes([os.path.dirname(os.path.abspath(pyframe.__file__))])


class FrameFilter:
    """Decides from a code object alone, so a "no" can be pyframe.SKIP for good."""

    def __init__(
        self,
        match: Sequence[re.Pattern[str]],
        exclude: Sequence[re.Pattern[str]],
        skip_library: bool,
    ) -> None:
        self.match = match
        self.exclude = exclude
        self.library = library_prefixes() if skip_library else ()

    def wants(self, code: types.CodeType) -> bool:
        filename = code.co_filename
        if filename.startswith("<"):
            # Frozen modules and code made by exec/eval (dataclass and namedtuple
            # methods...) have no file to read; they count as library code.
            if self.library:
                return False
        else:
            absolute = os.path.abspath(filename)
            if absolute.startswith(_PYFRAME_PREFIXES):
                return False  # pyframe's own frames are never the user's interest
            if absolute.startswith(self.library):
                return False
        qualname = code.co_qualname
        if self.match and not any(p.search(qualname) or p.search(filename) for p in self.match):
            return False
        return not any(p.search(qualname) or p.search(filename) for p in self.exclude)


class Decision(enum.Enum):
    RUN = "run"  # run the frame; stop at its function again next time
    SKIP = "skip"  # run it; never stop at its function again
    QUIT = "quit"  # run it and the rest of the program without stopping


ShowFrame = Callable[[pyframe.Frame, int], Decision]


class LocalsCallback:
    """The pyframe callback of `locals`: filters frames and shows the rest."""

    def __init__(
        self, frame_filter: FrameFilter, show: ShowFrame, limit: int | None, errors: IO[str]
    ) -> None:
        self.frame_filter = frame_filter
        self.show = show
        self.limit = limit
        self.errors = errors
        self.shown = 0

    def __call__(self, frame: pyframe.Frame) -> CallbackResult:
        try:
            if not self.frame_filter.wants(frame.f_code):
                return pyframe.SKIP
            self.shown += 1
            decision = self.show(frame, self.shown)
        except Exception as error:
            # A failing report (closed stream, full disk) must not fail the program.
            self._stop()
            write_quietly(self.errors, f"pyframe: report stopped: {describe_exception(error)}\n")
            return None
        if decision is Decision.QUIT or (self.limit is not None and self.shown >= self.limit):
            # Uninstalling is cheaper than answering SKIP for every code object left.
            self._stop()
            return None
        return pyframe.SKIP if decision is Decision.SKIP else None

    def _stop(self) -> None:
        if pyframe.get_callback() is self:
            pyframe.set_callback(None)
