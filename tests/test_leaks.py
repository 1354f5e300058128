"""Repeated copies must not grow memory or change the sources' refcounts,
on success paths and on error paths (checked as deltas with a tolerance; the
stdlib run shows the harness itself is quiet)."""
import contextlib
import copy
import copyreg
import gc
import os
import sys
import sysconfig
import tracemalloc

import pytest

ROUNDS = 300


class Plain:
    def __init__(self, v):
        self.v = v
        self.w = (v, [v])


class Slots:
    __slots__ = ("a", "b")

    def __init__(self):
        self.a = [1]
        self.b = {"k": self.a}


class Hook:
    def __init__(self):
        self.data = [1, 2]

    def __deepcopy__(self, memo):
        new = Hook.__new__(Hook)
        memo[id(self)] = new
        new.data = copy.deepcopy(self.data, memo)
        return new


class Red:
    def __init__(self, *a):
        self.a = a

    def __reduce__(self):
        return (Red, self.a, {"s": [1]}, iter([1, [2]]), iter([("k", [3])]))

    def append(self, x):
        pass

    def __setitem__(self, k, v):
        pass


class Boom(Exception):
    pass


class Raiser:
    def __deepcopy__(self, memo):
        raise Boom("no")

    def __copy__(self):
        raise Boom("no")


class Grower:
    def __init__(self, d):
        self.d = d

    def __deepcopy__(self, memo):
        self.d[len(self.d)] = 0
        return "g"


class Unpicklable:
    __reduce_ex__ = None
    __reduce__ = None


class BadReduce:
    def __reduce_ex__(self, p):
        return (BadReduce,)


class SetstateRaises:
    def __reduce__(self):
        return (SetstateRaises, (), {"x": [1]})

    def __setstate__(self, st):
        raise Boom("setstate")


class Forever:
    def __deepcopy__(self, memo):
        return self._impl.deepcopy(Forever(), memo)


def _shared():
    inner = [1, "x", 2.5]
    d = {"a": inner, ("t", 1): (inner, 3)}
    x = [inner, d, (inner, [inner]), {1, 2}, frozenset({3}), bytearray(b"ab"),
         Plain(inner), Slots(), Hook(), Red([5], 6), range(3), slice(inner), len, Plain]
    x.append(x)
    d["self"] = d
    return x


def _success_cases(impl):
    x = _shared()
    return {
        "deepcopy-mix": (x, lambda: impl.deepcopy(x)),
        "deepcopy-memo": (x, lambda: impl.deepcopy(x, {})),
        "copy-each": (x, lambda: [impl.copy(e) for e in x]),
        "bound-method": (x, lambda: impl.deepcopy(x[6].__init__)),
    }


def _error_cases(impl):
    inner = [1, [2]]
    cases = {}
    x1 = [inner, {"k": inner}, Raiser(), [3]]
    cases["hook-raises"] = (x1, lambda: impl.deepcopy(x1))
    cases["copy-hook-raises"] = (x1, lambda: impl.copy(x1[2]))
    d = {"a": inner, "b": None, "c": [4]}
    d["b"] = Grower(d)

    def grow():
        try:
            impl.deepcopy(d)
        finally:  # put the dict back to its original size
            for k in [k for k in d if isinstance(k, int)]:
                del d[k]
    cases["dict-size-change"] = (d, grow)
    x2 = [inner, Unpicklable()]
    cases["uncopyable"] = (x2, lambda: impl.deepcopy(x2))
    cases["uncopyable-shallow"] = (x2, lambda: impl.copy(x2[1]))
    x3 = [inner, BadReduce()]
    cases["bad-reduce"] = (x3, lambda: impl.deepcopy(x3))
    x4 = [inner, SetstateRaises()]
    cases["setstate-raises"] = (x4, lambda: impl.deepcopy(x4))
    cases["bad-memo"] = (inner, lambda: impl.deepcopy(inner, 5))
    return cases


def _run(fn, n):
    for _ in range(n):
        try:
            fn()
        except (Boom, RuntimeError, copy.Error, TypeError, AttributeError, RecursionError):
            pass


@contextlib.contextmanager
def _heap_frozen():
    """Everything alive before a measurement moved out of the collector's reach (gc.freeze)
    while it runs: its collections then walk only what the calls made, not the whole test
    session's heap (torch's objects made each collection ~0.2 s, each test ~1 s).  Whatever the
    calls leave in cycles is new, so still collected, and still counted when it is not."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _blocks_delta(fn, n):
    """Smallest allocated-block growth over three measurement rounds."""
    _run(fn, 30)
    best = None
    with _heap_frozen():
        for _ in range(3):
            gc.collect()
            before = sys.getallocatedblocks()
            _run(fn, n)
            gc.collect()
            delta = sys.getallocatedblocks() - before
            best = delta if best is None else min(best, delta)
    return best


def _tracked(src):
    """Objects whose refcounts we watch: the source, its direct members and
    their types."""
    objs = [src]
    if isinstance(src, (list, tuple)):
        objs += list(src)
    elif isinstance(src, dict):
        objs += list(src.values()) + list(src.keys())
    objs += list({id(type(o)): type(o) for o in objs}.values())
    return objs


def _refcount_deltas(src, fn, n):
    _run(fn, 20)
    objs = _tracked(src)
    with _heap_frozen():
        gc.collect()
        before = [sys.getrefcount(o) for o in objs]
        _run(fn, n)
        gc.collect()
        after = [sys.getrefcount(o) for o in objs]
    return [(type(o).__name__, a - b) for o, b, a in zip(objs, before, after) if a != b]


def _case_names(kind):
    return sorted((_success_cases if kind == "ok" else _error_cases)(copy))


@pytest.mark.skipif(bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                    reason="free-threaded builds free memory lazily (QSBR, mimalloc pages): "
                           "the block count grows for the stdlib's own copy too")
@pytest.mark.parametrize("name", _case_names("ok") + _case_names("err"))
def test_no_block_growth(impl, name):
    cases = dict(_success_cases(impl), **_error_cases(impl))
    src, fn = cases[name]
    delta = _blocks_delta(fn, ROUNDS)
    # a leak of one block per call would show up as >= ROUNDS
    assert delta < ROUNDS // 4, "%s: %d blocks more after %d calls" % (name, delta, ROUNDS)


@pytest.mark.parametrize("name", _case_names("ok") + _case_names("err"))
def test_source_refcounts_unchanged(impl, name):
    cases = dict(_success_cases(impl), **_error_cases(impl))
    src, fn = cases[name]
    deltas = _refcount_deltas(src, fn, 100)
    assert all(abs(d) < 10 for _, d in deltas), "%s: refcount deltas %r after 100 calls" % (name, deltas)


def test_tracemalloc_flat(impl):
    cases = dict(_success_cases(impl), **_error_cases(impl))
    fns = [fn for _, fn in cases.values()]

    def all_cases():
        for fn in fns:
            try:
                fn()
            except (Boom, RuntimeError, copy.Error, TypeError, AttributeError):
                pass
    _run(all_cases, 20)
    with _heap_frozen():
        tracemalloc.start()
        try:
            gc.collect()
            base = tracemalloc.get_traced_memory()[0]
            _run(all_cases, 50)
            gc.collect()
            mid = tracemalloc.get_traced_memory()[0]
            _run(all_cases, 100)
            gc.collect()
            end = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
    # growth between the two windows would be linear in calls for a leak;
    # allow some slack for caches (free lists, type caches, method caches)
    assert end - mid < 64 * 1024, (base, mid, end)


def test_recursion_error_path_no_growth(impl):
    Forever._impl = impl
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        def fn():
            impl.deepcopy([Forever()])
        delta = _blocks_delta(fn, 30)
    finally:
        sys.setrecursionlimit(limit)
    assert delta < 30 * 5, delta


def test_copyreg_and_dispatch_entries_no_growth(impl):
    class C:
        def __init__(self):
            self.v = [1]
    copyreg.dispatch_table[C] = lambda o: (C, ())
    try:
        c = C()
        delta = _blocks_delta(lambda: (impl.deepcopy(c), impl.copy(c)), ROUNDS)
        assert delta < ROUNDS // 4, delta
        deltas = _refcount_deltas(c, lambda: impl.deepcopy([c, c]), 100)
        assert all(abs(d) < 10 for _, d in deltas), deltas
    finally:
        del copyreg.dispatch_table[C]


@pytest.mark.skipif(os.environ.get("PYTHONMALLOC", "").startswith("malloc"),
                    reason="sys.getallocatedblocks() is always 0 without pymalloc")
def test_harness_detects_leaks():
    sink = []
    src = [[1]]
    assert _blocks_delta(lambda: sink.append([0]), ROUNDS) >= ROUNDS
    deltas = _refcount_deltas(src, lambda: sink.append(src[0]), 100)
    assert ("list", 100) in deltas
    del sink[:]
