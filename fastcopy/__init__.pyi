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

if sys.version_info < (3, 15):
    def deepcopy(x: _T, memo: _Memo | None = None, _nil: Any = ...,
                 *, share: _Share = None) -> _T:
        """Deep copy operation on arbitrary Python objects: the same result as
        `copy.deepcopy(x, memo)` on this interpreter, computed in C.

        Types, values and aliasing, the memo's contents (keep-alive list
        included), the hook calls and the errors are the stdlib's.

        Args:
            x: the object to copy.
            memo: the stdlib's memo: any mapping from `id(obj)` to its copy,
                shared with every `__deepcopy__(memo)` hook called on the way.
            _nil: accepted where the stdlib has it (through 3.14); ignored.
            share: not in the stdlib.  A type, a tuple of types, or a predicate
                called with each object: matching objects are kept by reference
                wherever they occur instead of being copied.  None: the drop-in.

        Returns:
            The deep copy of x.
        """

else:
    # 3.15's copy.deepcopy has no _nil: neither has fastcopy's there
    def deepcopy(x: _T, memo: _Memo | None = None, *, share: _Share = None) -> _T: ...


def copy(x: _T, *, deep: _Path | Iterable[_Path] | None = None) -> _T:
    """Shallow copy operation on arbitrary Python objects: the same result as
    `copy.copy(x)` on this interpreter, computed in C.

    Args:
        x: the object to copy.
        deep: not in the stdlib.  Fields to deep-copy inside the shallow
            copy: one path or an iterable of paths, each a dotted string
            ("optimizer.state") or a tuple of steps (("layers", 0)); a step
            is a key, an index or an attribute name.  Every object along a
            path is shallow-copied (the source is never modified) and the
            fields share one memo.  None: the drop-in.

    Returns:
        The shallow copy of x.

    Raises:
        KeyError: a path names a missing key (IndexError, AttributeError
            likewise); the message names the whole path and nothing is
            built.
    """

def replicate(x: _T, n: int, *, share: _Share = None) -> list[_T]:
    """A list of n independent deep copies of x: the same as
    `[deepcopy(x, share=share) for _ in range(n)]`, made in one call.

    Args:
        x: the object to copy.
        n: how many copies.
        share: as for deepcopy(): objects kept by reference in every copy.

    Returns:
        A list of n deep copies of x.

    Raises:
        ValueError: n is below 0.
    """

if sys.version_info >= (3, 13):
    class _SupportsReplace(Protocol[_RT_co]):
        # the real signature is (self, /, **changes); *args keeps every __replace__ compatible
        def __replace__(self, *args: Any, **changes: Any) -> _RT_co: ...

    def replace(obj: _SupportsReplace[_RT_co], /, **changes: Any) -> _RT_co:
        """copy.replace: a new object like obj with the fields in changes replaced."""

def patch() -> None:
    """Make copy.deepcopy and copy.copy use fastcopy (idempotent).

    The stdlib's function objects themselves are redirected, so references
    taken before patch() reach fastcopy too.
    """

def unpatch() -> None:
    """Restore the stdlib's copy.deepcopy and copy.copy exactly (idempotent)."""

def patched() -> AbstractContextManager[None]:
    """``with fastcopy.patched():`` -- patch for the block, then restore
    whatever was in place before (nesting is fine).
    """

def is_patched() -> bool:
    """True while copy.deepcopy / copy.copy are fastcopy's."""

@final  # the C type has no Py_TPFLAGS_BASETYPE: it cannot be subclassed
class cowdict(MutableMapping[_KT, _VT]):
    """A mapping that behaves like dict, whose copy(), copy.copy() and (for
    immutable values) copy.deepcopy() cost O(1): copies share one table
    until one of them is written to.

    Takes dict's constructor arguments: cowdict(), cowdict(mapping),
    cowdict(iterable), cowdict(**kwargs) and a mapping or iterable with
    keywords.  Not a dict subclass: a MutableMapping, and not subclassable.
    """

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
    def copy(self) -> cowdict[_KT, _VT]:
        """D.copy() -> a shallow copy of D, in O(1): the table is shared until written."""
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
    huge_pages: bool               # default: True
    keep_arenas: int               # default: 0 (off)

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
    huge_pages: bool | None = None,
    keep_arenas: int | None = None,
) -> _Settings:
    """Tune fastcopy; arguments left as None keep their value.  Returns the
    previous settings as a dict, so configure(**old) restores them.

    numpy_threads (int, default 0: half the usable CPUs, 1 to 4): threads that copy one big contiguous array (0: the default); 1 turns threading off.

    numpy_parallel_min_bytes (int, default 8 MiB): arrays of at least this many bytes are copied by numpy_threads threads.

    numpy_pool (bool, default False): allocate the data of copied arrays of 1 MiB and more from a pool that keeps freed blocks (already faulted pages) for the next copy.  Off by default: it keeps memory.  Turning it off trims it.

    numpy_pool_max_bytes (int, default 1 GiB): how many bytes of free blocks the pool keeps.

    torch_defer (bool, default True): record the byte copies of torch tensors and run them together, before any user code and at the end of the call (on by default).  Host copies of 64 KiB and more run with the GIL released, from 32 MiB on up to torch.get_num_threads() threads (16 MiB each at least), as torch's own copy_ would.

    torch_cuda (bool, default False): copy plain CUDA tensors natively, their bytes in one batch per device on torch's current stream (off by default: see docs/buffers-cuda.md).  Needs fastcopy._cuda and a CUDA torch.

    warn_slow (float or None, default None (off)): seconds; every top-level copy taking at least that long warns with fastcopy.SlowCopyWarning at the caller's line (profile.c).  Unlike the others, warn_slow=None (or False) switches it off.

    huge_pages (bool, default True): the fresh destination of a numpy array or torch storage of 4 MiB and more gets transparent huge pages (MADV_HUGEPAGE where the kernel's THP mode is "madvise"; none needed in "always"; "never" and other systems ignore it) and is written as it is; False maps its missing 4 KiB pages ahead of the copy instead (MADV_POPULATE_WRITE).  The bytes are the same either way.

    keep_arenas (int, default 0 (off)): bytes of empty object arenas (and of the memo's tables of 2 MiB and more) kept mapped for reuse instead of handed back to the system: a program that copies and drops big structures again and again reuses pages already faulted in (arenas.c).  Process-wide; 0 releases the kept ones.  Free-threaded builds allocate objects with mimalloc: there only the memo's tables are kept.
    """

def trim() -> int:
    """Give the memory the buffer backends keep (numpy's pool) and the object
    arenas kept by configure(keep_arenas=) back to the system.  Blocks in
    use are not affected.

    Returns:
        The number of bytes released.
    """

def backends() -> dict[str, Any]:
    """What the buffer backends see and do: numpy (version, native path,
    threads, pool), torch (version, when imported) and CUDA (driver found or
    why not).  Imports nothing.
    """

def snapshot(x: _T, *, device: Any = "cpu", pin_memory: bool = False) -> _T:
    """A deep copy of `x` whose torch tensors are on `device`. NOT a drop-in.

    Differences from ``copy.deepcopy`` (everything else is the same):

    - every ``torch.Tensor`` and ``torch.nn.Parameter`` (exact types) is
      created on `device`; the source's device memory is never duplicated.
      Views of one storage become views of one new storage, Parameters
      included (``Parameter.__deepcopy__`` would clone each separately).
      ``requires_grad`` and the Parameter type are kept; plain tensors also
      get their ``.grad`` and ``__dict__`` copied (onto `device`), Parameters
      do not, as with deepcopy.  Sparse, quantized, conjugated/negated and
      non-CPU/CUDA tensors are copied with ``tensor.to(device, copy=True)``
      (no storage sharing).
    - tensors of other subclasses, and tensors reached through some other
      object's own ``__deepcopy__``, are copied by their own code, i.e. onto
      their own device.
    - ``pin_memory=True`` (CPU targets only) allocates the copies in pinned
      host memory; device-to-host copies are then enqueued asynchronously on
      the current streams and waited for once before returning, so code run
      during the copy (``__setstate__``, ``__deepcopy__`` hooks) must not
      read the new tensors' values.
    - the memo is private to the call.
    """

# --- the copy profiler (fastcopy/_profile.py, docs/profiling.md) ---------------------------

_Sort = Literal["time", "bytes", "calls"]
_F = TypeVar("_F", bound=Callable[..., Any])

class SlowCopyWarning(RuntimeWarning):
    """A top-level copy took at least ``configure(warn_slow=seconds)``.

    Issued at the line that called ``copy.deepcopy`` / ``copy.copy`` / ``fastcopy.deepcopy`` /
    ``fastcopy.copy``.  Attributes: ``op``, ``seconds``, ``objects``, ``buffer_bytes``, ``hooks``.
    """

    op: str
    seconds: float
    objects: int
    buffer_bytes: int
    hooks: int

class CopySite:
    """One call site's copies: ``file:line`` in ``function``, of one ``op``.

    ``calls``, ``total_s``, ``mean_s``, ``max_s``; ``objects`` (objects copied: memo entries made,
    one per new shallow copy), ``buffer_bytes`` and ``buffer_s`` (bytes of numpy arrays / torch
    tensors copied natively, time in those byte copies), ``hooks`` (objects copied through a
    ``__deepcopy__``, ``__copy__``, reduce or ``copy._deepcopy_dispatch`` copier), ``memo_max``
    (the largest memo at the end of a call), ``buffer_kinds`` (``"numpy"``, ``"torch"``),
    ``threads`` (how many threads copied here) and ``hint`` (a suggestion, or None).  Totals are
    over all calls.
    """

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
    def mean_s(self) -> float:
        """Seconds per call: ``total_s / calls`` (0.0 before any call)."""
    def as_dict(self) -> dict[str, Any]:
        """Every field and ``mean_s`` as a dict of JSON-ready values (what ``to_json`` writes)."""

class profile:
    """Record every top-level copy by call site while active.

    ``with fastcopy.profile() as prof: ...`` or ``@fastcopy.profile()`` (or ``prof.start()`` /
    ``prof.stop()``); records add up over every activation.  ``copy.deepcopy`` and ``copy.copy``
    are patched while a profiler runs unless ``patch=False``, and restored as they were found.
    Copies from every thread are recorded.  ``report()``, ``sites()``, ``to_json()`` read it.
    """

    patch: bool
    # *args only to refuse @fastcopy.profile without parentheses with a clear TypeError
    def __init__(self, *args: Any, patch: bool = True) -> None: ...
    def start(self) -> Self:
        """Start recording (nested starts count: as many stops end it); returns the profiler."""
    def stop(self) -> None:
        """End one start(): the last one stops recording and puts back what patching changed."""
    def __enter__(self) -> Self: ...
    def __exit__(self, *exc: object) -> Literal[False]: ...
    def __call__(self, func: _F) -> _F: ...
    @property
    def active(self) -> bool:
        """Whether the profiler is recording now."""
    @property
    def elapsed_s(self) -> float:
        """Seconds this profiler has been active."""
    def clear(self) -> None:
        """Forget every record (the profiler keeps running if it is)."""
    def sites(self, sort: _Sort = "time") -> list[CopySite]:
        """The call sites as ``CopySite`` records, costliest first by ``sort``
        (``"time"``: total time, ``"bytes"``: buffer bytes, ``"calls"``).
        """
    def report(self, top: int | None = None, sort: _Sort = "time") -> str:
        """A table of the call sites, costliest first (``sort``: ``"time"``, ``"bytes"`` or
        ``"calls"``), at most ``top`` rows, with a hint under a row where one applies.
        """
    def to_json(self, sort: _Sort = "time", indent: int | None = None) -> str:
        """The records for tools, as a JSON string: ``{"version": 1, "sites": [...], ...}``;
        each site is ``CopySite.as_dict()``.
        """
