# Type stubs for fastcopy: the C core (fastcopy._fastcopy) re-exported by fastcopy/__init__.py.
# Every copying function returns the type of what it was given (the copy of an X is an X), as
# typeshed's copy.pyi does for the stdlib functions fastcopy replaces.
import sys
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, MutableMapping
from contextlib import AbstractContextManager
from copy import Error as Error
from types import GenericAlias
from typing import Any, ClassVar, Literal, Protocol, TypedDict, TypeVar, final, overload, type_check_only

from typing_extensions import Self

__version__: str

_T = TypeVar("_T")
_KT = TypeVar("_KT")
_VT = TypeVar("_VT")
_RT_co = TypeVar("_RT_co", covariant=True)
_S = TypeVar("_S")
_T1 = TypeVar("_T1")
_T2 = TypeVar("_T2")

# What share= accepts: a type or tuple of types whose instances are shared (not copied), or a
# predicate called with each object that answers True to share it.
_Share = type | tuple[type, ...] | Callable[[Any], bool] | None

# A deep= path: a dotted string ("optimizer.state") or a tuple of steps (("layers", 0, "w")):
# keys, indexes or attribute names.  deep= takes one path or an iterable of them.
_Path = str | tuple[Hashable, ...]

# The memo: like the stdlib, any mapping with get / __getitem__ / __setitem__ keyed by id().
_Memo = MutableMapping[int, Any]

error = Error

__all__ = [
    "Error", "error", "copy", "deepcopy", "replicate", "patch", "unpatch", "patched", "is_patched",
    "cowdict", "configure", "trim", "backends", "snapshot", "profile", "CopySite",
    "SlowCopyWarning",
]
if sys.version_info >= (3, 13):
    __all__ += ["replace"]

def deepcopy(x: _T, memo: _Memo | None = None, _nil: Any = ..., *, share: _Share = None) -> _T:
    """Deep copy of x, exactly as copy.deepcopy on the running interpreter."""

def copy(x: _T, *, deep: _Path | Iterable[_Path] | None = None) -> _T:
    """Shallow copy of x, exactly as copy.copy; deep= names fields to deep-copy inside it."""

def replicate(x: _T, n: int, *, share: _Share = None) -> list[_T]:
    """n independent deep copies of x, as [deepcopy(x) for _ in range(n)]."""

if sys.version_info >= (3, 13):
    class _SupportsReplace(Protocol[_RT_co]):
        # the real signature is (self, /, **changes); *args keeps every __replace__ compatible
        def __replace__(self, *args: Any, **changes: Any) -> _RT_co: ...

    def replace(obj: _SupportsReplace[_RT_co], /, **changes: Any) -> _RT_co:
        """copy.replace: a new object like obj with the fields in changes replaced."""

def patch() -> None:
    """Make copy.deepcopy / copy.copy (and copy.replace on 3.13+) fastcopy's functions."""

def unpatch() -> None:
    """Restore the copy module's own functions."""

def patched() -> AbstractContextManager[None]:
    """with fastcopy.patched(): ... runs the block patched and restores the previous state."""

def is_patched() -> bool:
    """Whether the copy module's functions are fastcopy's right now."""

@final  # the C type has no Py_TPFLAGS_BASETYPE: it cannot be subclassed
class cowdict(MutableMapping[_KT, _VT]):
    """A dict whose copies share one table until one of them is written (copy-on-write)."""

    # the keys/values/items view and iterator types the C type builds its helpers from
    # (src/cowdict.c), kept in the type's own dict; not for use
    __cowdict_types__: ClassVar[tuple[type, ...]]

    @overload
    def __init__(self) -> None: ...
    @overload
    def __init__(self: cowdict[str, _VT], **kwargs: _VT) -> None: ...
    @overload
    def __init__(self, map: Mapping[_KT, _VT], /) -> None: ...
    @overload
    def __init__(self: cowdict[str, _VT], map: Mapping[str, _VT], /, **kwargs: _VT) -> None: ...
    @overload
    def __init__(self, iterable: Iterable[tuple[_KT, _VT]], /) -> None: ...
    @overload
    def __init__(self: cowdict[str, _VT], iterable: Iterable[tuple[str, _VT]], /,
                 **kwargs: _VT) -> None: ...
    def __getitem__(self, key: _KT, /) -> _VT: ...
    def __setitem__(self, key: _KT, value: _VT, /) -> None: ...
    def __delitem__(self, key: _KT, /) -> None: ...
    def __iter__(self) -> Iterator[_KT]: ...
    def __len__(self) -> int: ...
    def __reversed__(self) -> Iterator[_KT]: ...
    def copy(self) -> cowdict[_KT, _VT]: ...
    def __copy__(self) -> cowdict[_KT, _VT]: ...
    def __deepcopy__(self, memo: _Memo, /) -> cowdict[_KT, _VT]: ...
    @classmethod
    @overload
    def fromkeys(cls, iterable: Iterable[_T], value: None = None, /) -> cowdict[_T, Any | None]: ...
    @classmethod
    @overload
    def fromkeys(cls, iterable: Iterable[_T], value: _S, /) -> cowdict[_T, _S]: ...
    # | takes any mapping and gives a cowdict; |= also takes (key, value) pairs, like dict
    @overload
    def __or__(self, other: Mapping[_KT, _VT], /) -> cowdict[_KT, _VT]: ...
    @overload
    def __or__(self, other: Mapping[_T1, _T2], /) -> cowdict[_KT | _T1, _VT | _T2]: ...
    @overload
    def __ror__(self, other: Mapping[_KT, _VT], /) -> cowdict[_KT, _VT]: ...
    @overload
    def __ror__(self, other: Mapping[_T1, _T2], /) -> cowdict[_KT | _T1, _VT | _T2]: ...
    # |= accepts more than | (pairs), which mypy flags as an incompatible __ior__
    @overload  # type: ignore[misc]
    def __ior__(self, other: Mapping[_KT, _VT], /) -> Self: ...
    @overload
    def __ior__(self, other: Iterable[tuple[_KT, _VT]], /) -> Self: ...
    def __class_getitem__(cls, item: Any, /) -> GenericAlias: ...

@type_check_only
class _Settings(TypedDict):
    """Every configure() keyword with its current value: what configure() returns."""

    numpy_threads: int             # default: half the usable CPUs, 1 to 4
    numpy_parallel_min_bytes: int  # default: 8 MiB
    numpy_pool: bool               # default: False
    numpy_pool_max_bytes: int      # default: 1 GiB
    torch_defer: bool              # default: True
    torch_cuda: bool               # default: False
    warn_slow: float | None        # default: None (off)

# A keyword left as None keeps its value (except warn_slow, where None means off); the ints must
# be >= 0 (numpy_threads=0: the default, above 64: 64); the bools take any object's truth value.
def configure(
    *,
    numpy_threads: int | None = None,
    numpy_parallel_min_bytes: int | None = None,
    numpy_pool: bool | None = None,
    numpy_pool_max_bytes: int | None = None,
    torch_defer: bool | None = None,
    torch_cuda: bool | None = None,
    warn_slow: float | None = None,
) -> _Settings:
    """Tune fastcopy; returns the previous settings (configure(**old) restores them)."""

def trim() -> int:
    """Give the buffer pool's cached memory back; returns the number of bytes released."""

def backends() -> dict[str, Any]:
    """What the buffer backends (numpy, torch, cuda) see and do, one dict each; imports nothing."""

def snapshot(x: _T, *, device: Any = "cpu", pin_memory: bool = False) -> _T:
    """A deep copy whose torch tensors are created on device (a str or torch.device).

    Not a drop-in for copy.deepcopy: see docs/api.md.
    """

# --- the copy profiler (fastcopy/_profile.py, docs/profiling.md) ---------------------------

_Sort = Literal["time", "bytes", "calls"]
_F = TypeVar("_F", bound=Callable[..., Any])

class SlowCopyWarning(RuntimeWarning):
    """A top-level copy took at least configure(warn_slow=seconds); issued at the caller's line."""

    op: str
    seconds: float
    objects: int
    buffer_bytes: int
    hooks: int

class CopySite:
    """One call site's top-level copies (totals over its calls)."""

    file: str
    line: int
    function: str
    op: str  # "deepcopy" | "copy"
    calls: int
    total_s: float
    max_s: float
    objects: int
    buffer_bytes: int
    hooks: int
    memo_max: int
    buffer_s: float
    buffer_kinds: tuple[str, ...]
    threads: int
    hint: str | None
    def __init__(self, file: str, line: int, function: str, op: str) -> None: ...
    @property
    def mean_s(self) -> float: ...
    def as_dict(self) -> dict[str, Any]: ...

class profile:
    """Record every top-level copy by call site: a context manager and a decorator."""

    patch: bool
    # *args only to refuse @fastcopy.profile without parentheses with a clear TypeError
    def __init__(self, *args: Any, patch: bool = True) -> None: ...
    def start(self) -> Self: ...
    def stop(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *exc: object) -> Literal[False]: ...
    def __call__(self, func: _F) -> _F: ...
    @property
    def active(self) -> bool: ...
    @property
    def elapsed_s(self) -> float: ...
    def clear(self) -> None: ...
    def sites(self, sort: _Sort = "time") -> list[CopySite]: ...
    def report(self, top: int | None = None, sort: _Sort = "time") -> str: ...
    def to_json(self, sort: _Sort = "time", indent: int | None = None) -> str: ...
