"""Which frames `locals` reports, by their code: names, files and the library.

FrameFilter decides from a code object alone (--match, --exclude, the
library directories, pyframe's own files), so a "no" becomes pyframe.SKIP
and costs nothing after a code object's first call (no-hook speed in the
specialization mode).  The one exception: --match and --exclude also look
at the asyncio task a coroutine runs in, which is known only when it runs.
Decision is what the interactive session decides at a stop.
"""

from __future__ import annotations

import enum
import os
import re
import site
import sysconfig
import types
from collections.abc import Sequence

import pyframe


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
        """The whole decision, for code that runs in no task."""
        return self.admits(code) and self.matches(code)

    def admits(self, code: types.CodeType) -> bool:
        """Not library code, not pyframe's, not excluded by its names."""
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
        names = (code.co_qualname, filename)
        return not any(p.search(name) for p in self.exclude for name in names)

    def matches(self, code: types.CodeType, task: str | None = None) -> bool:
        """--match takes the qualified name, the file name or the task's name;
        --exclude also leaves out a task's frames by the task's name."""
        if task is not None and any(p.search(task) for p in self.exclude):
            return False
        if not self.match:
            return True
        names = (
            (code.co_qualname, code.co_filename)
            if task is None
            else (code.co_qualname, code.co_filename, task)
        )
        return any(p.search(name) for p in self.match for name in names)

    @property
    def by_name(self) -> bool:
        """--match or --exclude was given: a task's name may decide."""
        return bool(self.match or self.exclude)


class Decision(enum.Enum):
    RUN = "run"  # run the frame; stop at its function again next time
    SKIP = "skip"  # run it; never stop at its function again
    QUIT = "quit"  # run it and the rest of the program without stopping
