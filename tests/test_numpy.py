"""numpy arrays: fastcopy.deepcopy must be indistinguishable from copy.deepcopy.

Every behavioural test runs against both implementations (the stdlib is the
oracle) and compares results by shape: types, dtypes, layout, flags, bytes,
and which nodes are shared with each other and with the source.
"""
import contextvars
import copy
import ctypes
import gc
import os
import subprocess
import sys
import threading

import pytest

np = pytest.importorskip("numpy")

import fastcopy  # noqa: E402
from shape import MALLOC_REGIMES, run_python_under_malloc  # noqa: E402

#: built with the numpy fast path (numpy >= 2.0 headers at build time)
BUILT = fastcopy.backends()["numpy"]["built"]
native = pytest.mark.skipif(not BUILT, reason="built without numpy")

IMPLS = [copy, fastcopy]
IDS = ["copy", "fastcopy"]
impls = pytest.mark.parametrize("impl", IMPLS, ids=IDS)

try:
    from numpy._core.multiarray import get_handler_name
except ImportError:  # numpy 1.x
    from numpy.core.multiarray import get_handler_name


@pytest.fixture(autouse=True)
def _restore_settings():
    old = fastcopy.configure()
    yield
    fastcopy.configure(**old)
    fastcopy.trim()


# --------------------------------------------------------------------------
# Shape of a result
# --------------------------------------------------------------------------

_FLAGS = ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED",
          "WRITEBACKIFCOPY")


def _flags(a):
    return tuple(a.flags[f] for f in _FLAGS)


def _array_facts(y, x):
    facts = [type(y).__name__, y.dtype.str, str(y.dtype), y.dtype is x.dtype,
             y.shape, y.strides, _flags(y), y.base is None, y is x]
    if y.dtype.names is None and not y.dtype.hasobject:
        facts.append(y.tobytes(order="A"))
    elif not y.dtype.hasobject:
        # padding bytes of structured dtypes are not copied by numpy
        facts.append([y[n].tobytes(order="A") for n in y.dtype.names])
    return facts


def shape_of(y, x):
    """A picklable description of y's structure and its aliasing with x."""
    src = {}

    def index_src(o):
        if id(o) in src:
            return
        src[id(o)] = len(src)
        for c in children(o):
            index_src(c)

    def children(o):
        if isinstance(o, np.ndarray) and o.dtype.hasobject:
            return list(o.ravel(order="K")) if o.dtype.names is None else [
                v for rec in o.ravel(order="K") for v in rec.item()
            ] if o.size else []
        if isinstance(o, (list, tuple)):
            return list(o)
        if isinstance(o, dict):
            return [v for kv in o.items() for v in kv]
        if hasattr(o, "__dict__") and not isinstance(o, type):
            return list(vars(o).values())
        return []

    index_src(x)
    seen = {}
    out = []

    def walk(o, xo):
        if id(o) in seen:
            out.append(("seen", seen[id(o)]))
            return
        seen[id(o)] = len(seen)
        out.append(("src", src.get(id(o))))
        if isinstance(o, np.ndarray):
            out.append(_array_facts(o, xo if isinstance(xo, np.ndarray) else o))
        elif isinstance(o, np.generic):
            out.append((type(o).__name__, repr(o)))
        elif isinstance(o, (int, float, str, bytes, type(None))):
            out.append((type(o).__name__, o))
        else:
            out.append(type(o).__name__)
        xs = children(xo) if xo is not None else []
        for i, c in enumerate(children(o)):
            walk(c, xs[i] if i < len(xs) else None)

    walk(y, x)
    return out


def both(x, **kw):
    """(stdlib shape, fastcopy shape) of deepcopy(x)."""
    return (shape_of(copy.deepcopy(x, **kw), x),
            shape_of(fastcopy.deepcopy(x, **kw), x))


def assert_same(x):
    a, b = both(x)
    assert a == b


# --------------------------------------------------------------------------
# Arrays of every kind
# --------------------------------------------------------------------------

def _dtypes():
    return [
        "?", "i1", "u1", "<i2", ">i2", "<i4", ">u4", "<i8", ">i8", "<f2", "<f4",
        ">f4", "<f8", ">f8", "g", "<c8", ">c16", "G", "M8[ns]", ">M8[D]", "m8[s]",
        "S5", "<U3", ">U3", "V4",
        np.dtype([("a", "<i4"), ("b", ">f8")]),
        np.dtype([("a", "u1"), ("b", "<f8")], align=True),
        np.dtype([("a", "<i2", (3,)), ("b", [("c", "?"), ("d", "<c8")])]),
    ]


@pytest.mark.parametrize("dt", _dtypes(), ids=str)
@pytest.mark.parametrize("order", ["C", "F"])
def test_plain_dtypes(dt, order):
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 256, size=2 * 3 * 4 * np.dtype(dt).itemsize, dtype="u1")
    x = raw.view(dt).reshape(2, 3, 4).copy(order=order)
    assert_same(x)
    assert_same([x, x, {"k": x}])


def _views():
    base = np.arange(120, dtype="<f8").reshape(4, 5, 6)
    ro = base.copy()
    ro.flags.writeable = False
    unaligned = np.frombuffer(bytearray(8 * 10 + 1), dtype="u1")[1:].view("<f8")
    return {
        "c": base, "f": np.asfortranarray(base), "t": base.transpose(2, 0, 1),
        "step": base[::2, 1:, ::3], "neg": base[::-1, :, ::-2],
        "negall": base[::-1, ::-1, ::-1], "row": base[1], "col": base[:, 2, :],
        "bcast": np.broadcast_to(np.arange(3.0), (4, 3)),
        "zerostride": np.lib.stride_tricks.as_strided(np.arange(3.0), (3, 4), (8, 0)),
        "0d": np.array(3.5), "0d_obj": np.array(None, dtype=object),
        "empty": np.zeros((0, 3)), "empty_f": np.zeros((3, 0, 2), order="F"),
        "empty_obj": np.empty((2, 0), dtype=object),
        "readonly": ro, "unaligned": unaligned,
        "swapaxes_view": np.arange(24, dtype="<i4").reshape(2, 3, 4).swapaxes(0, 2),
        "size1": np.ones((1, 5, 1)), "size1_strided": np.ones((5, 1))[::2],
    }


@pytest.mark.parametrize("name", list(_views()))
def test_layouts(name):
    x = _views()[name]
    assert_same(x)
    assert_same((x, [x]))


def test_views_of_one_base_become_independent():
    base = np.arange(10.0)
    x = [base, base[2:5], base[::-1]]
    a, b = both(x)
    assert a == b
    y = fastcopy.deepcopy(x)
    y[0][3] = -1
    assert y[1][1] == 3


@impls
def test_result_properties(impl):
    base = np.arange(12.0).reshape(3, 4)
    base.flags.writeable = False
    y = impl.deepcopy(base[:, ::-2])
    assert y.flags.owndata and y.flags.writeable and y.base is None
    assert y.strides == (16, 8)


# --------------------------------------------------------------------------
# Subclasses and scalars: their own __deepcopy__
# --------------------------------------------------------------------------

class Sub(np.ndarray):
    def __array_finalize__(self, obj):
        self.tag = getattr(obj, "tag", "new")


class SubDeep(np.ndarray):
    calls = 0

    def __deepcopy__(self, memo):
        SubDeep.calls += 1
        return np.ndarray.__deepcopy__(self, memo)


def _matrix():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return np.matrix([[1, 2], [3, 4]])


def _subclasses():
    rec = np.rec.array([(1, 2.0), (3, 4.0)], dtype=[("a", "i4"), ("b", "f8")])
    s = np.arange(4.0).view(Sub)
    s.tag = "orig"
    return {
        "matrix": _matrix(),
        "masked": np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0]),
        "masked_obj": np.ma.masked_array(np.array([[1], [2]], dtype=object)),
        "recarray": rec, "sub": s, "subdeep": np.arange(3).view(SubDeep),
        "memmap_like": np.arange(6).reshape(2, 3).view(Sub)[:, 1],
    }


@pytest.mark.parametrize("name", list(_subclasses()))
def test_subclasses(name):
    x = _subclasses()[name]
    assert_same(x)
    assert_same([x, x])
    for impl in IMPLS:
        y = impl.deepcopy(x)
        assert type(y) is type(x)
        if isinstance(x, np.ma.MaskedArray):
            assert (y.mask == x.mask).all()
        if isinstance(x, Sub):
            assert y.tag == x.tag


def test_subclass_hook_runs():
    x = np.arange(3).view(SubDeep)
    before = SubDeep.calls
    fastcopy.deepcopy([x, x])
    assert SubDeep.calls == before + 1


@impls
@pytest.mark.parametrize("s", [np.float64(1.5), np.int8(-3), np.bool_(True),
                               np.complex64(1 + 2j), np.datetime64("2020-01-01"),
                               np.str_("abc"), np.bytes_(b"x"),
                               np.array([(1, 2.0)], dtype="i4,f8")[0]],
                         ids=lambda s: type(s).__name__)
def test_scalars(impl, s):
    y = impl.deepcopy(s)
    assert type(y) is type(s) and y == s
    # identity follows numpy's own __deepcopy__ (self on numpy >= 2.4
    # for non-void scalars)
    assert (y is s) == (copy.deepcopy(s) is s)
    memo = {}
    impl.deepcopy([s], memo)
    ref = {}
    copy.deepcopy([s], ref)
    assert len(memo) == len(ref)


# --------------------------------------------------------------------------
# Object dtypes: elements through the same memo
# --------------------------------------------------------------------------

class Node:
    def __init__(self, v):
        self.v = v


def test_object_aliasing():
    shared = [1, 2]
    node = Node(shared)
    a = np.empty((2, 3), dtype=object)
    a[0] = [shared, node, "s"]
    a[1] = [node, (shared,), 7]
    x = {"a": a, "shared": shared, "a2": a, "t": a.T}
    assert_same(x)
    y = fastcopy.deepcopy(x)
    assert y["a"] is y["a2"]
    assert y["a"][0, 0] is y["shared"] and y["a"][0, 0] is not shared
    assert y["a"][0, 1] is y["a"][1, 0] and y["a"][0, 1].v is y["shared"]
    assert y["t"][0, 0] is y["shared"]


@pytest.mark.parametrize("order", ["C", "F"])
def test_object_layouts(order):
    items = [[i] for i in range(24)]
    a = np.empty(24, dtype=object)
    a[:] = items
    a = a.reshape(2, 3, 4).copy(order=order)
    for v in [a, a.T, a[::-1, :, ::2], a.transpose(1, 0, 2), a[1], np.array(items[0] + [None], dtype=object)]:
        assert_same([v, items])


def test_object_structured():
    dt = np.dtype([("n", "i4"), ("o", "O"), ("sub", [("p", "O"), ("q", "f8")])])
    lst = [1]
    x = np.array([(1, lst, (lst, 2.0)), (2, {"k": lst}, ({}, 3.0))], dtype=dt)
    assert_same([x, lst])
    y = fastcopy.deepcopy([x, lst])
    assert y[0][0]["o"] is y[1] and y[0][0]["sub"]["p"] is y[1]


def test_object_fields_with_titles():
    dt = np.dtype({"names": ["a", "b"], "formats": ["O", "O"],
                   "titles": ["ta", "tb"], "offsets": [8, 0]})
    items = [[1], [2]]
    x = np.zeros(2, dtype=dt)
    x[0] = (items[0], items[1])
    x[1] = (items[1], items[0])
    assert_same([x, items])


def test_object_subarray_quirk():
    # numpy 2.x's __deepcopy__ leaves objects inside subarray fields shared,
    # 1.x copies the first one only: whatever numpy does, fastcopy does
    dt = np.dtype([("a", "O", (2,)), ("b", "O")])
    lst = [1]
    x = np.zeros(1, dtype=dt)
    x[0] = ((lst, lst), lst)
    seen = []
    for impl in IMPLS:
        y = impl.deepcopy(x)
        seen.append((y[0]["a"][0] is lst, y[0]["a"][1] is lst, y[0]["b"] is lst,
                     y[0]["a"][0] is y[0]["b"]))
    assert seen[0] == seen[1]


def test_object_null_slots():
    a = np.empty(4, dtype="O")
    ctypes.memset(a.ctypes.data, 0, a.nbytes)
    for impl in IMPLS:
        y = impl.deepcopy(a)
        assert list(y) == [None] * 4


def test_nested_object_arrays():
    inner = np.array([[1], [2, 3]], dtype=object)
    outer = np.empty(3, dtype=object)
    outer[:] = [inner, inner, np.arange(3)]
    assert_same([outer, inner])


@impls
def test_self_containing_array(impl):
    a = np.empty(1, dtype=object)
    a[0] = a
    with pytest.raises(RecursionError):
        impl.deepcopy(a)


class Recorder:
    log = []

    def __init__(self, k):
        self.k = k

    def __deepcopy__(self, memo):
        keep = memo.get(id(memo), [])
        Recorder.log.append((self.k, len(memo), [type(o).__name__ for o in keep]))
        return Recorder(self.k)


@pytest.mark.parametrize("view", ["c", "f", "t", "neg", "perm"])
def test_object_visit_order_and_memo(view):
    a = np.empty(12, dtype=object)
    a[:] = [Recorder(i) for i in range(12)]
    a = a.reshape(2, 3, 2)
    v = {"c": a, "f": np.asfortranarray(a), "t": a.T, "neg": a[::-1, ::-2],
         "perm": a.transpose(1, 2, 0)}[view]
    x = [[1], v, [2]]
    logs = []
    for impl in IMPLS:
        Recorder.log = []
        memo = {}
        impl.deepcopy(x, memo)
        keep = memo[id(memo)]
        logs.append((Recorder.log, [k for k in memo if k != id(memo)],
                     [id(o) for o in keep]))
    assert logs[0] == logs[1]


@impls
def test_memo_identical_plain(impl):
    arr = np.arange(4.0)
    lst = [arr]
    memo = {}
    y = impl.deepcopy(lst, memo)
    assert list(memo) == [id(lst), id(arr), id(memo)]
    assert memo[id(arr)] is y[0]
    assert memo[id(memo)] == [arr, lst] or (memo[id(memo)][0] is arr and memo[id(memo)][1] is lst)


class MemoSpy:
    seen = []

    def __deepcopy__(self, memo):
        MemoSpy.seen.append(sorted(type(v).__name__ for k, v in memo.items() if k != id(memo)))
        return MemoSpy()


def test_memo_seen_by_later_hook():
    x = [np.arange(3), np.array([[1]], dtype=object), MemoSpy()]
    out = []
    for impl in IMPLS:
        MemoSpy.seen = []
        impl.deepcopy(x)
        out.append(MemoSpy.seen)
    assert out[0] == out[1]


def test_preseeded_memo():
    arr = np.arange(3.0)
    sentinel = object()
    for impl in IMPLS:
        assert impl.deepcopy([arr], {id(arr): sentinel})[0] is sentinel
    a = np.array([None, 1], dtype=object)
    # numpy copies each item with copy.deepcopy(item, memo): the seeded entry for None is asked
    # through 3.13, and not from 3.14 (atomics are tested first, src/pyver.h)
    want = ["none!", 1] if not hasattr(copy, "_atomic_types") else [None, 1]
    for impl in IMPLS:
        memo = {id(None): "none!"}
        assert list(impl.deepcopy(a, memo)) == want


def test_user_memo_mapping():
    class M(dict):
        pass
    lst = [1]
    a = np.array([lst, lst, None], dtype=object)
    res = []
    for impl in IMPLS:
        m = M()
        y = impl.deepcopy([a, lst], m)
        res.append((y[0][0] is y[1], y[0][1] is y[1], len(m)))
    assert res[0] == res[1]


# --------------------------------------------------------------------------
# The stdlib's tables and patching
# --------------------------------------------------------------------------

def test_registered_copier_wins():
    calls = []

    def copier(x, memo):
        calls.append(x)
        return "copied"

    copy._deepcopy_dispatch[np.ndarray] = copier
    try:
        for impl in IMPLS:
            assert impl.deepcopy([np.arange(2)]) == ["copied"]
    finally:
        del copy._deepcopy_dispatch[np.ndarray]
    assert len(calls) == 2
    assert isinstance(fastcopy.deepcopy(np.arange(2)), np.ndarray)


def test_patched():
    lst = [1]
    x = [np.array([lst, {"a": lst}], dtype=object), lst]
    plain = shape_of(copy.deepcopy(x), x)
    with fastcopy.patched():
        assert shape_of(copy.deepcopy(x), x) == plain
        assert shape_of(fastcopy.deepcopy(x), x) == plain


def test_foreign_copy_deepcopy_is_called():
    # numpy calls copy.deepcopy for each item: a replacement must see them
    orig = copy.deepcopy
    calls = []

    def spy(x, memo=None, _nil=[]):
        calls.append(x)
        return orig(x, memo)

    a = np.array([[1], [2]], dtype=object)
    copy.deepcopy = spy
    try:
        fastcopy.deepcopy(a)
        n_fast = len(calls)
        calls.clear()
        orig(a)
        n_std = len(calls)
    finally:
        copy.deepcopy = orig
    assert n_fast == n_std == 2


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------

class Boom:
    def __deepcopy__(self, memo):
        raise ValueError("boom")


@impls
@pytest.mark.parametrize("pool", [False, True])
def test_element_error(impl, pool):
    fastcopy.configure(numpy_pool=pool)
    victim = [1, 2]
    a = np.empty(300_000, dtype=object)   # 2.4 MB: pooled when on
    a.fill(victim)
    a[-1] = Boom()
    handler = get_handler_name()
    nctx = len(contextvars.copy_context())
    gc.collect()
    before = sys.getrefcount(victim)
    with pytest.raises(ValueError, match="boom"):
        impl.deepcopy({"a": a})
    gc.collect()
    assert sys.getrefcount(victim) == before
    assert get_handler_name() == handler
    assert len(contextvars.copy_context()) == nctx


def test_no_leak_plain():
    x = np.arange(1000.0)
    before = sys.getrefcount(x)
    for _ in range(10):
        fastcopy.deepcopy([x, x])
    assert sys.getrefcount(x) == before


# --------------------------------------------------------------------------
# Threads and the pool
# --------------------------------------------------------------------------

@pytest.mark.parametrize("threads", [1, 2, 3, 7])
@pytest.mark.parametrize("dt", ["u1", "<f8", ">c16", "U2", "M8[s]"])
def test_threaded_copy(threads, dt):
    fastcopy.configure(numpy_threads=threads, numpy_parallel_min_bytes=0)
    n = (1 << 20) // np.dtype(dt).itemsize + 3
    raw = np.random.default_rng(1).integers(0, 256, n * np.dtype(dt).itemsize, dtype="u1")
    x = raw.view(dt)
    for v in [x, x.reshape(-1, 1), np.asfortranarray(x[: n - n % 4].reshape(4, -1))]:
        assert_same(v)


POPULATE_CHILD = r"""
import copy, numpy as np, fastcopy
rng = np.random.default_rng(7)
# byte sizes around the page-population minimum (64 KiB), the 2 MiB pieces
# and numpy's 4 MiB huge-page limit, none a multiple of the page size; 14 MB
# in all, so a dropped copy leaves a heap top that glibc trims
# (and 12 MB: two threads' shares of 4 MiB and more end on 2 MiB boundaries)
sizes = [16_385, 65_537, 70_001, 262_147, 1_100_003, 2_500_001, 4_194_305, 6_000_011,
         12_582_917]
for threads, huge in ((1, True), (2, True), (1, False), (2, False)):
    fastcopy.configure(numpy_threads=threads, numpy_parallel_min_bytes=1 << 20,
                       huge_pages=huge)
    for rnd in range(6):
        x = [rng.integers(0, 256, n, dtype="u1") for n in sizes]
        x += [x[4][:-3].view("<u4"), np.asfortranarray(x[6][:-1].reshape(4, -1))]
        keep = [fastcopy.deepcopy(x) for _ in range(rnd % 3)]   # heap holes and tops
        y, z = fastcopy.deepcopy(x), copy.deepcopy(x)
        for a, b, c in zip(x, y, z):
            assert b.dtype == c.dtype and b.strides == c.strides, (threads, huge, rnd, a.shape)
            assert np.array_equal(b, c) and np.array_equal(b, a), (threads, huge, rnd, a.shape)
            assert b.flags.owndata and not np.shares_memory(a, b)
        del keep, y, z
print("ok")
"""


@pytest.mark.parametrize("malloc", list(MALLOC_REGIMES))
def test_populated_and_threaded_copies_are_exact(malloc):
    """Raw copies of 64 KiB and more map the destination pages that are
    missing (mincore) before writing them, or, from 4 MiB with huge_pages
    on, advise huge pages for them: the stdlib's bytes whether glibc hands
    out fresh mmaps, a trimmed heap top or reused heap."""
    run_python_under_malloc(POPULATE_CHILD, malloc)


@native
def test_pool_roundtrip():
    fastcopy.configure(numpy_pool=True, numpy_pool_max_bytes=64 << 20)
    x = np.arange(1 << 19, dtype="f8")                   # 4 MiB
    y = fastcopy.deepcopy(x)
    assert get_handler_name(y) == "fastcopy_pool"
    assert get_handler_name() == "default_allocator"
    assert np.zeros(1 << 19).base is None and get_handler_name(np.zeros(1 << 19)) == "default_allocator"
    assert_same(x)
    misses = fastcopy.backends()["numpy"]["pool_misses"]
    del y
    assert fastcopy.backends()["numpy"]["pool_cached_bytes"] >= x.nbytes
    y = fastcopy.deepcopy(x)
    b = fastcopy.backends()["numpy"]
    assert b["pool_misses"] == misses and b["pool_hits"] >= 1
    assert (y == x).all()
    # numpy may realloc our block (resize) and free it with a stale size
    y.resize(3 << 19, refcheck=False)
    assert (y[: 1 << 19] == x).all() and (y[1 << 19:] == 0).all()
    y.resize(10, refcheck=False)
    assert (y == x[:10]).all()
    del y
    assert fastcopy.trim() > 0
    assert fastcopy.backends()["numpy"]["pool_cached_bytes"] == 0


@native
def test_pool_small_and_object_arrays():
    fastcopy.configure(numpy_pool=True)
    small = np.arange(10)
    assert get_handler_name(fastcopy.deepcopy(small)) == "default_allocator"
    objs = np.empty(200_000, dtype=object)
    objs[:] = [[1]] * 200_000
    y = fastcopy.deepcopy(objs)
    assert get_handler_name(y) == "fastcopy_pool"
    assert y[0] is y[-1] and y[0] is not objs[0]
    nc = np.arange(1 << 20, dtype="f8")[::2]
    y = fastcopy.deepcopy(nc)
    assert get_handler_name(y) == "fastcopy_pool" and (y == nc).all()


@native
def test_pool_cap():
    fastcopy.configure(numpy_pool=True, numpy_pool_max_bytes=3 << 20)
    x = np.ones(1 << 19)    # 4 MiB > cap: never cached
    del x
    y = fastcopy.deepcopy(np.ones(1 << 19))
    del y
    assert fastcopy.backends()["numpy"]["pool_cached_bytes"] == 0
    fastcopy.configure(numpy_pool_max_bytes=64 << 20)
    y = fastcopy.deepcopy(np.ones(1 << 19))
    del y
    assert fastcopy.backends()["numpy"]["pool_cached_bytes"] > 0
    fastcopy.configure(numpy_pool=False)
    assert fastcopy.backends()["numpy"]["pool_cached_bytes"] == 0


@native
def test_pool_arrays_outlive_pool_off():
    fastcopy.configure(numpy_pool=True)
    y = fastcopy.deepcopy(np.ones(1 << 18))
    fastcopy.configure(numpy_pool=False)
    assert get_handler_name(y) == "fastcopy_pool" and y.sum() == 1 << 18
    del y
    assert fastcopy.backends()["numpy"]["pool_cached_bytes"] == 0


def test_pool_threads():
    fastcopy.configure(numpy_pool=True, numpy_threads=2, numpy_parallel_min_bytes=1 << 20)
    x = np.arange(1 << 18, dtype="f8")
    errors = []
    barrier = threading.Barrier(4)

    def work():
        try:
            barrier.wait()
            for _ in range(20):
                y = fastcopy.deepcopy({"x": x})
                assert (y["x"] == x).all()
                z = np.empty(1 << 18)
                assert get_handler_name(z) == "default_allocator"
        except Exception as e:  # pragma: no cover
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


@native
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_pool_fork():
    fastcopy.configure(numpy_pool=True)
    x = np.arange(1 << 18, dtype="f8")
    y = fastcopy.deepcopy(x)
    del y
    pid = os.fork()
    if pid == 0:  # pragma: no cover
        ok = 1
        try:
            z = fastcopy.deepcopy(x)
            ok = 0 if (z == x).all() and get_handler_name(z) == "fastcopy_pool" else 1
            del z
            fastcopy.trim()
        finally:
            os._exit(ok)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


# --------------------------------------------------------------------------
# configure / backends
# --------------------------------------------------------------------------

def test_configure_roundtrip():
    old = fastcopy.configure(numpy_threads=3, numpy_parallel_min_bytes=123,
                             numpy_pool=True, numpy_pool_max_bytes=1 << 20)
    assert set(old) == {"numpy_threads", "numpy_parallel_min_bytes", "numpy_pool",
                        "numpy_pool_max_bytes", "torch_defer", "torch_cuda", "warn_slow",
                        "huge_pages", "keep_arenas"}
    now = fastcopy.configure()
    assert now == {"numpy_threads": 3, "numpy_parallel_min_bytes": 123,
                   "numpy_pool": True, "numpy_pool_max_bytes": 1 << 20,
                   "torch_defer": True, "torch_cuda": False, "warn_slow": None,
                   "huge_pages": True, "keep_arenas": 0}
    fastcopy.configure(**old)
    assert fastcopy.configure() == old
    fastcopy.configure(numpy_threads=0)
    assert fastcopy.configure()["numpy_threads"] >= 1


@pytest.mark.parametrize("kw,exc", [({"numpy_threads": -1}, ValueError),
                                    ({"numpy_threads": "2"}, TypeError),
                                    ({"numpy_pool_max_bytes": 1.5}, TypeError),
                                    ({"nope": 1}, TypeError)])
def test_configure_errors(kw, exc):
    with pytest.raises(exc):
        fastcopy.configure(**kw)
    with pytest.raises(TypeError):
        fastcopy.configure(1)


@native
def test_backends():
    fastcopy.deepcopy(np.arange(2))
    b = fastcopy.backends()["numpy"]
    assert b["version"] == np.__version__
    assert b["built"] and b["native"]
    assert b["threads"] >= 1 and b["pool"] is False


# --------------------------------------------------------------------------
# numpy absent or not yet imported
# --------------------------------------------------------------------------

def _run(code):
    from source_tree import RUN_CWD, subprocess_env
    return subprocess.run([sys.executable, "-c", code], cwd=RUN_CWD, env=subprocess_env(),
                          capture_output=True, text=True, timeout=120)


def test_import_does_not_import_numpy():
    r = _run("import sys, fastcopy\n"
             "fastcopy.deepcopy({'a': [1, (2,)]}); fastcopy.backends()\n"
             "fastcopy.configure(numpy_pool=True); fastcopy.trim()\n"
             "assert 'numpy' not in sys.modules, 'numpy imported'\n"
             "import numpy as np\n"
             "a = np.arange(3.0)\n"
             "assert (fastcopy.deepcopy([a])[0] == a).all()\n"
             "assert fastcopy.backends()['numpy']['native'] == %r\n" % BUILT)
    assert r.returncode == 0, r.stderr


def test_numpy_blocked():
    r = _run("import sys; sys.modules['numpy'] = None\n"
             "import fastcopy, copy\n"
             "x = {'a': [1, 2], 'b': (3,)}\n"
             "assert fastcopy.deepcopy(x) == copy.deepcopy(x)\n"
             "assert fastcopy.backends()['numpy']['version'] is None\n"
             "assert not fastcopy.backends()['numpy']['native']\n")
    assert r.returncode == 0, r.stderr
