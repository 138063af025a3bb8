"""Type stub for pyframe._cframe, the compiled layer (pyframe/_cframe.pyx)."""

from collections.abc import Callable, Iterable, Mapping
from types import CellType, CodeType, FrameType, TracebackType
from typing import Any, Final, Literal, TypeAlias, final

@final
class _Sentinel:
    @property
    def name(self) -> str: ...

SKIP: Final[_Sentinel]
SKIP_RECURSIVE: Final[_Sentinel]
RUN_ONLY: Final[_Sentinel]
RUN_ONLY_RECURSIVE: Final[_Sentinel]
UNBOUND: Final[_Sentinel]

# TypeAlias rather than PEP 695's `type` statement, which 3.11 cannot parse.
SlotKind: TypeAlias = Literal["local", "cell", "local+cell", "free", "hidden"]
Guard: TypeAlias = Callable[[Mapping[str, Any]], object]

@final
class Frame:
    """A frame about to run; valid only while the callback it was passed to runs."""

    @property
    def f_code(self) -> CodeType: ...
    @property
    def f_globals(self) -> dict[str, Any]: ...
    @property
    def f_builtins(self) -> dict[str, Any]: ...
    @property
    def f_lasti(self) -> int: ...
    @property
    def f_lineno(self) -> int | None: ...
    @property
    def closure(self) -> tuple[CellType, ...]: ...
    @property
    def f_back(self) -> FrameType | None: ...
    @property
    def is_generator(self) -> bool: ...
    @property
    def f_locals(self) -> Mapping[str, Any]: ...
    @property
    def localsplus(self) -> list[tuple[str, SlotKind, Any]]: ...
    def set_local(self, name: str, value: object) -> None: ...

@final
class Compiled:
    """Replacement code, cached on the original code object behind `guard`."""

    def __init__(
        self, code: CodeType, guard: Guard | None = None, *, depends_on: Iterable[object] = ()
    ) -> None: ...
    @property
    def code(self) -> CodeType: ...
    @property
    def guard(self) -> Guard | None: ...
    @property
    def depends_on(self) -> tuple[object, ...]: ...

DropReason: TypeAlias = Literal["limit", "invalidated", "reset"]
OnDrop: TypeAlias = Callable[[CodeType, CodeType, Guard | None, DropReason], object]

@final
class Cache:
    """One client's remembered decisions and cached replacement code."""

    def __init__(self, *, limit: int | None = None, on_drop: OnDrop | None = None) -> None: ...
    @property
    def limit(self) -> int | None: ...
    @property
    def on_drop(self) -> OnDrop | None: ...

CallbackResult: TypeAlias = None | _Sentinel | CodeType | Compiled
Callback: TypeAlias = Callable[[Frame], CallbackResult]

def get_callback() -> Callback | None: ...
def set_callback(callback: Callback | None, *, cache: Cache | None = None) -> Callback | None: ...

@final
class callback:
    def __init__(self, callback: Callback | None, *, cache: Cache | None = None) -> None: ...
    def __enter__(self) -> Callback | None: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]: ...

@final
class run_only:
    def __init__(self, cache: Cache) -> None: ...
    def __enter__(self) -> Cache: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]: ...

def reset(code: CodeType | None = None, *, cache: Cache | None = None) -> None: ...
def set_cache_limit(n: int) -> None: ...
def get_cache_limit() -> int: ...
def cache_entries(
    code: CodeType, *, cache: Cache | None = None
) -> list[tuple[CodeType, Guard | None, int]]: ...
def hook_installed() -> bool: ...
