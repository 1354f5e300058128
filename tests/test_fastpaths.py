"""The core's shortcuts, each compared with the stdlib through shape.assert_equivalent
(result shape and aliasing, hook log, memo contents and keep-alive order, source after).

Each shortcut is exercised where it applies and right at its edges, where it must step
aside: plans for OrderedDict, namedtuples, classes overriding only __reduce__, enum
members; dict prefill and its demotion; the single __setstate__ lookup; copies hidden
from the cyclic GC during the call.
"""
import collections
import copy
import datetime
import enum
import gc

import pytest

from shape import Case, assert_equivalent, both_memo_modes


class Hook:
    """Records its deepcopy and shares the log."""

    def __init__(self, log, name):
        self.log = log
        self.name = name

    def __deepcopy__(self, memo):
        self.log.append(("deepcopy", self.name, len(memo)))
        return Hook(self.log, self.name + "'")

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        return isinstance(other, Hook) and other.name == self.name


# ---------------------------------------------------------------------------
# OrderedDict

def _odicts():
    log = []
    od = collections.OrderedDict([(1, [1]), ("k", Hook(log, "v")), (Hook(log, "k"), (2, [3]))])
    od.move_to_end(1)
    with_attr = collections.OrderedDict(a=[1])
    with_attr.note = ["attr"]                 # a non-empty instance dict: generic road

    class Sub(collections.OrderedDict):
        pass
    sub = Sub(b=[2])
    return [od, od, with_attr, sub, {"od": od}], log


@pytest.mark.parametrize("scenario", both_memo_modes(_odicts), ids=["native", "memo"])
def test_ordereddict(scenario):
    assert_equivalent(scenario)


# ---------------------------------------------------------------------------
# flat tuples (atomic items): placed by the list or tuple frame that meets them

class MemoPeek:
    """Shown the memo midway: logs its size and which of the source's objects it holds."""

    def __init__(self, log, src):
        self.log, self.src = log, src

    def __deepcopy__(self, memo):
        self.log.append((len(memo), sorted(i for i, o in enumerate(self.src) if id(o) in memo)))
        return self


def _flat_tuples():
    log = []
    shared = (1, [2])
    t = (1, "a", 2.5, None, True, b"x", 3 + 1j, ...)
    src = [(), (1,), t, t, (t,), ((1, 2), (3, 4)), (1, [2]), shared, shared, (1, (2, [3])),
           tuple(range(9)), tuple(range(9)) + ([1],), ("a", shared), [(5, 6), ((7,), [8])]]
    src.append(MemoPeek(log, src))
    src.append({"k": (1, 2), "l": [(3, 4)], "t": ((5, 6), [7])})
    return src, log


@pytest.mark.parametrize("scenario", both_memo_modes(_flat_tuples), ids=["native", "memo"])
def test_flat_tuples(scenario):
    std = assert_equivalent(scenario)
    assert std["outcome"][0] == "ok"


# ---------------------------------------------------------------------------
# namedtuples

Point = collections.namedtuple("Point", "x y")


class PointWithDict(Point):                   # no __slots__: instances have a __dict__
    pass


class PointNewOverride(Point):
    __slots__ = ()

    def __new__(cls, x, y):
        return super().__new__(cls, x, [y])


class PointGetnewargs(Point):
    __slots__ = ()

    def __getnewargs__(self):
        return (self.x, "replaced")


def _namedtuples():
    log = []
    shared = [1]
    pwd = PointWithDict(shared, 2)
    pwd.extra = shared
    items = [Point(shared, Hook(log, "h")), Point(1, 2), pwd,
             PointNewOverride(shared, 3), PointGetnewargs(1, 2)]
    return items + [items[0]], log


@pytest.mark.parametrize("scenario", both_memo_modes(_namedtuples), ids=["native", "memo"])
def test_namedtuples(scenario):
    assert_equivalent(scenario)


def test_namedtuple_pre_seeded_class_in_memo():
    # the reduce args start with the class: a memo entry for it is honoured
    def scenario(impl):
        x = Point([1], 2)
        memo = {id(Point): PointWithDict}
        return Case(x, lambda: impl.deepcopy(x, memo), memo=memo)
    assert_equivalent(scenario)


# ---------------------------------------------------------------------------
# classes that override only __reduce__

class ReduceOnly:
    def __init__(self, v=None):
        self.v = v

    def __reduce__(self):
        return (ReduceOnly, (self.v,))


class ReduceOnlyCounting:
    calls = []

    def __init__(self, v=None):
        self.v = v

    def __reduce__(self):
        ReduceOnlyCounting.calls.append("reduce")
        return (ReduceOnlyCounting, (self.v,))

    def __getattribute__(self, name):
        ReduceOnlyCounting.calls.append(name)
        return object.__getattribute__(self, name)


def _reduce_only():
    log = []
    shared = [1]
    shadowed = ReduceOnly(shared)
    shadowed.__reduce_ex__ = lambda proto: (list, ((7,),))   # instance dict shadows it
    ReduceOnlyCounting.calls = log
    return [ReduceOnly(shared), shadowed, ReduceOnlyCounting(shared), ReduceOnly(shared)], log


@pytest.mark.thread_unsafe(reason='global state: a log list shared by the calls')
@pytest.mark.parametrize("scenario", both_memo_modes(_reduce_only), ids=["native", "memo"])
def test_reduce_only(scenario):
    assert_equivalent(scenario)


@pytest.mark.thread_unsafe(reason='global state: a log list shared by the calls')
def test_reduce_only_shallow():
    def scenario(impl):
        x, log = _reduce_only()
        return Case(x, lambda: [impl.copy(o) for o in x], log=log)
    assert_equivalent(scenario)


# ---------------------------------------------------------------------------
# __setstate__: one lookup with the generic getattr, two with a custom one

class WithSetstate:
    def __init__(self):
        self.a = [1]

    def __reduce__(self):
        return (WithSetstate, (), {"a": self.a})

    def __setstate__(self, state):
        self.__dict__.update(state)


class CountingSetstate(WithSetstate):
    log = []

    def __reduce__(self):
        return (CountingSetstate, (), {"a": self.a})

    def __getattr__(self, name):         # only reached for missing names
        CountingSetstate.log.append(("getattr", name))
        raise AttributeError(name)

    def __getattribute__(self, name):
        if name == "__setstate__":
            CountingSetstate.log.append(("getattribute", name))
        return object.__getattribute__(self, name)


@pytest.mark.thread_unsafe(reason='global state: counts lookups in a shared class')
@pytest.mark.parametrize("deep", [True, False], ids=["deepcopy", "copy"])
def test_setstate_lookups(deep):
    def scenario(impl):
        log = []
        CountingSetstate.log = log
        x = [WithSetstate(), CountingSetstate()]
        fn = impl.deepcopy if deep else impl.copy
        return Case(x, lambda: [fn(o) for o in x], log=log)
    assert_equivalent(scenario)


# ---------------------------------------------------------------------------
# dict prefill and demotion

def test_dict_same_size_key_swap_during_copy():
    # a hook deletes a later key and adds another (same size): the stdlib's
    # live iteration never sees the deleted key
    def scenario(impl):
        d = {}
        log = []

        class Swap:
            def __reduce__(self):
                if "z" in d:
                    del d["z"]
                    d["new"] = [1]
                    log.append("swapped")
                return (list, ())
        d.update(a=1, s=Swap(), m=[2], z=3)
        return Case(d, lambda: impl.deepcopy(d), log=log)
    assert_equivalent(scenario)


def test_dict_value_replaced_during_copy():
    def scenario(impl):
        d = {}

        class Replace:
            def __reduce__(self):
                d["later"] = ["replaced"]
                return (list, ())
        d.update(first=Replace(), later=["original"], tail=(1, [2]))
        return Case(d, lambda: impl.deepcopy(d))
    assert_equivalent(scenario)


def test_dict_seen_by_hook_mid_copy():
    # a __deepcopy__ hook looks at the half-built copies in the memo
    def scenario(impl):
        log = []

        class Peek:
            def __deepcopy__(self, memo):
                half = [sorted(map(repr, v.items())) for v in memo.values() if isinstance(v, dict)]
                log.append(half)
                return "P"
        d = {"a": 1, "b": [1], "inner": {"x": [2], "p": Peek(), "y": [3]}, "c": 3, "d": [2]}
        return Case(d, lambda: impl.deepcopy(d), log=log)
    assert_equivalent(scenario)


def test_dict_non_atomic_key_demotes():
    def scenario(impl):
        log = []
        k = Hook(log, "key")
        d = {"a": [1], k: [2], "b": Hook(log, "v"), (1, (2, 3)): 4}
        return Case(d, lambda: impl.deepcopy(d), log=log)
    assert_equivalent(scenario)


class LoggedKey:
    """A key whose __hash__ and __eq__ are logged, source or copy alike."""

    def __init__(self, log, name):
        self.log = log
        self.name = name

    def __hash__(self):
        self.log.append(("hash", self.name, len(self.log)))
        return hash(self.name)

    def __eq__(self, other):
        self.log.append(("eq", self.name))
        return isinstance(other, LoggedKey) and other.name == self.name


class HashMeta(type):
    log = None

    def __hash__(cls):
        if HashMeta.log is not None:
            HashMeta.log.append(("type-hash", cls.__name__))
        return 7

    def __eq__(cls, other):
        return cls is other


@pytest.mark.thread_unsafe(reason='global state: counts hash calls of shared keys')
def test_dict_user_key_hashes_like_the_stdlib():
    # demoting a prefilled dict must not hash the source's keys; keys whose
    # hash is user code are never prefilled (a type's hash is its metaclass's,
    # a weakref's its referent's)
    import weakref

    def scenario(impl):
        log = []
        HashMeta.log = log
        K = HashMeta("K", (), {})
        target = LoggedKey(log, "referent")
        d = {"a": [1], LoggedKey(log, "k1"): [2], "b": 3, K: [4],
             weakref.ref(target): 5, LoggedKey(log, "k2"): "v", "c": [5]}
        log.clear()
        keep = (target, K)
        return Case(d, lambda: (impl.deepcopy(d), keep)[0], log=log)
    try:
        assert_equivalent(scenario)
        for scenario in both_memo_modes(lambda: ({LoggedKey([], "k"): 1, "x": [1]}, [])):
            assert_equivalent(scenario)
    finally:
        HashMeta.log = None


def test_dict_self_reference_and_split_table():
    class Obj:
        pass

    def scenario(impl):
        o = Obj()
        o.a = [1]
        o.b = 2
        d = {"self": None, "inst_dict": o.__dict__, "o": o}
        d["self"] = d
        return Case(d, lambda: impl.deepcopy(d))
    assert_equivalent(scenario)


# ---------------------------------------------------------------------------
# enum members: the identity plan only for the stdlib's `return self`

class Color(enum.Enum):
    RED = 1
    BLUE = 2


def test_enum_members():
    for scenario in both_memo_modes(lambda: ([Color.RED, Color.BLUE, Color.RED, {"c": Color.RED}], [])):
        assert_equivalent(scenario)


@pytest.mark.thread_unsafe(reason="global state: replaces enum.Enum.__deepcopy__")
def test_enum_deepcopy_replaced_is_called():
    calls = []

    def fake(self, memo):
        calls.append(self)
        return "copied"
    # Enum defines __deepcopy__ from 3.11 on; on 3.10 the fake is an addition
    original = enum.Enum.__dict__.get("__deepcopy__")
    enum.Enum.__deepcopy__ = fake
    try:
        def scenario(impl):
            calls.clear()
            x = [Color.RED]
            return Case(x, lambda: impl.deepcopy(x), log=calls)
        assert assert_equivalent(scenario)["log"] == [Color.RED]
    finally:
        if original is None:
            del enum.Enum.__deepcopy__
        else:
            enum.Enum.__deepcopy__ = original


# ---------------------------------------------------------------------------
# copies and the cyclic GC

def _gc_grace():
    try:
        from fastcopy import _fastcopy
        return _fastcopy._sysinfo()["gc_grace"]
    except (ImportError, AttributeError, KeyError):
        return 1000


# A call leaves its first gc_grace copies tracked and hides the rest from the GC until it
# returns (memo.c): each test runs once as is and once after that many empty-list copies.
gc_padding = pytest.mark.parametrize("pad", [0, _gc_grace()], ids=["small", "past_grace"])


@gc_padding
def test_results_tracked_like_the_stdlib(impl, pad):
    x = {"pad": [[] for _ in range(pad)],
         "l": [1, [2]], "t": ([1], 2), "d": {"k": [3]}, "atomic_d": {"k": 3}, "o": Point([1], 2),
         "s": {"a", 2}, "fs": frozenset({"b"}), "empty_s": set(), "big_s": set(range(50))}
    y = impl.deepcopy(x)
    ref = copy.deepcopy(x)
    for key in x:
        assert gc.is_tracked(y[key]) == gc.is_tracked(ref[key]), key
    assert gc.is_tracked(y) == gc.is_tracked(ref)
    assert all(gc.is_tracked(v) for v in y["pad"])


@pytest.mark.thread_unsafe(reason='global state: turns the collector off and on')
@pytest.mark.parametrize("turn_on", [False, True], ids=["off", "turned_on_midway"])
def test_collector_off_results_tracked_like_the_stdlib(impl, turn_on):
    """With the collector disabled nothing is hidden from it (no collection can run); a hook
    that turns it on, or collects by hand, midway sees every container made so far tracked
    or hidden, and the results are tracked as the stdlib's."""
    grace = _gc_grace()
    seen = []

    class Midway:
        def __deepcopy__(self, memo):
            if turn_on:
                gc.enable()
            seen.append(gc.collect() >= 0)
            return self
    x = {"pad": [[i] for i in range(3 * grace)], "hook": Midway(),
         "more": [{"k": [i], "t": (i, [i])} for i in range(3 * grace)], "s": {1, 2}}
    was = gc.isenabled()
    gc.disable()
    try:
        y = impl.deepcopy(x)
        ref = copy.deepcopy(x)
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()
    assert seen == [True, True]
    assert y["pad"] == ref["pad"] and y["more"] == ref["more"] and y["s"] == ref["s"]
    for a, b in ((y, ref), (y["pad"], ref["pad"]), (y["more"], ref["more"]), (y["s"], ref["s"])):
        assert gc.is_tracked(a) == gc.is_tracked(b)
    assert all(gc.is_tracked(v) for v in y["pad"])
    assert all(gc.is_tracked(d) and gc.is_tracked(d["k"]) and gc.is_tracked(d["t"])
               for d in y["more"])


@gc_padding
def test_cyclic_copies_and_partial_results_are_collectable(impl, pad):
    import weakref

    class Node:
        pass
    n = Node()
    n.me = n
    n.items = [[] for _ in range(pad)] + [n, {"n": n}]
    y = impl.deepcopy(n)
    ref = weakref.ref(y)
    del y
    gc.collect()
    assert ref() is None

    made = []

    class Fail:
        def __reduce__(self):
            raise ValueError("stop")

    class Tracked(list):
        def __init__(self, *a):
            super().__init__(*a)
            made.append(weakref.ref(self))
    src = [[] for _ in range(pad)]
    src.append(src)
    src.append(Tracked([src]))
    src.append(Fail())
    with pytest.raises(ValueError):
        impl.deepcopy(src)
    gc.collect()
    assert all(r() is None for r in made[1:])      # made[0] is the source's own


@pytest.mark.thread_unsafe(reason="gc.collect() and a module-wide counter")
def test_prefilled_values_put_in_place():
    """Values copied into a prefilled dict are written into its entries in place on
    3.11-3.13 (deepcopy.c, "Values put in place"); a table whose copy is compacted
    (deleted entries) and instance dicts (split tables) take PyDict_SetItem; an untracked
    dict (a datetime is no GC object) stays so, as the stdlib's copy does (3.10-3.13: 3.14+
    track every dict)."""
    import sys
    import sysconfig
    import fastcopy
    from fastcopy import _fastcopy
    info = _fastcopy._sysinfo
    expect = ((3, 11) <= sys.version_info[:2] <= (3, 15)
              and not sysconfig.get_config_var("Py_GIL_DISABLED"))
    assert info()["dict_slots_ok"] == int(expect)
    sparse = {"k%d" % i: [i] for i in range(60)}
    for i in range(50):
        del sparse["k%d" % i]
    untracked = {"a": datetime.datetime(2024, 1, 2, 3, 4), "b": 2}
    gc.collect()
    # through 3.13 a collection untracks a dict that holds no GC object; 3.14+ track every dict
    lazy_untrack = sys.version_info < (3, 14)
    assert gc.is_tracked(untracked) != lazy_untrack
    class Plain:
        pass
    p = Plain()
    p.a, p.b = [1], {"q": [2]}
    shared = [0]
    x = {"chain": {"level": 1, "child": {"level": 2, "leaf": [3]}}, "sparse": sparse,
         "untracked": untracked, "inst": p.__dict__, 5: {6: [7], "s": {8}},
         "shared": [shared, {"again": shared}]}
    before = info()["dict_puts"]
    y, ref = fastcopy.deepcopy(x), copy.deepcopy(x)
    assert (info()["dict_puts"] > before) == expect
    assert repr(y) == repr(ref)
    assert list(y["sparse"]) == list(ref["sparse"])
    assert gc.is_tracked(y["untracked"]) == gc.is_tracked(ref["untracked"]) != lazy_untrack
    assert y["untracked"]["a"] is not x["untracked"]["a"]
    assert y["chain"]["child"]["leaf"] is not x["chain"]["child"]["leaf"]
    assert y["shared"][1]["again"] is y["shared"][0]
    for a, b in ((y["sparse"], x["sparse"]), (y[5], x[5]), (y["inst"], x["inst"])):
        assert all(a[k] is not b[k] for k in b)


SHARED_LIST = [["module-level"]]    # an existing container a reduce function hands back


def _shared_list():
    return SHARED_LIST


class GivesShared:
    def __reduce__(self):
        return (_shared_list, ())


class ReportsTracking:
    """A __reduce_ex__ that does not see the memo: it reports, at that point
    of the copy, whether the existing list is tracked by the GC."""
    seen = []

    def __reduce_ex__(self, proto):
        ReportsTracking.seen.append(gc.is_tracked(SHARED_LIST))
        return (ReportsTracking, ())


@pytest.mark.thread_unsafe(reason='global state: a class attribute records what the hook saw')
def test_existing_object_from_a_reduce_stays_tracked():
    # after the GC grace runs out the walker hides the containers it made
    # so far; a container a reduce function returned is not one of them
    import fastcopy
    results = []
    for impl in (copy, fastcopy):
        ReportsTracking.seen = []
        x = [GivesShared(), [[] for _ in range(2 * _gc_grace())], ReportsTracking()]
        y = impl.deepcopy(x)
        assert y[0] is SHARED_LIST
        results.append(ReportsTracking.seen)
    assert results[0] == results[1] == [True]


@gc_padding
def test_hook_sees_tracked_copies(pad):
    # a hook that gets the memo sees every copy made so far tracked again, as the stdlib's
    # are (all of them, but on 3.15+ a frozenset of atomic items, which the interpreter
    # leaves untracked from birth)
    seen = []

    class Look:
        def __deepcopy__(self, memo):
            seen.extend(gc.is_tracked(v) for v in memo.values()
                        if isinstance(v, (list, dict, set, frozenset))
                        and v is not memo.get(id(memo)))
            return self
    import fastcopy

    def run(impl):
        del seen[:]
        impl.deepcopy([[] for _ in range(pad)]
                      + [[1, [2]], {"a": [3]}, {"s", 1}, frozenset({2.5}), Look()])
        return list(seen)
    want = run(copy)
    assert want and want == run(fastcopy)
    assert all(want[:-1]) and want[-1] == gc.is_tracked(frozenset({2.5}))


class Collects:
    """Copied through reduce (user code that is not shown the memo): collects there."""
    calls = 0

    def __reduce_ex__(self, proto):
        type(self).calls += 1
        gc.collect()
        return (Collects, ())


@pytest.mark.thread_unsafe(reason='a class attribute counts the reductions')
def test_copies_hidden_after_a_hook_are_tracked_again():
    # Before 3.12 a call hides its copies from the collector from the end of the grace on; on
    # 3.12+, where only running Python code collects, the copies made since the last sweep are
    # hidden just before user code that is not shown the memo (a reduction here), and never
    # when no user code follows them (memo.c).  Either way a later hook, and the caller, find
    # every copy tracked as the stdlib's are, and the collections the reductions run free none
    # of them.
    grace = _gc_grace()
    seen = []

    class Early:
        def __deepcopy__(self, memo):
            return self

    class Look:
        def __deepcopy__(self, memo):
            gc.collect()
            seen.extend(gc.is_tracked(v) for v in memo.values()
                        if isinstance(v, (list, dict)) and v is not memo.get(id(memo)))
            return self
    import fastcopy

    def run(impl):
        del seen[:]
        Collects.calls = 0
        x = [Early(), [[i] for i in range(3 * grace)], Collects(), {"a": [3], "t": ([4], 5)},
             [(i, [i]) for i in range(2 * grace)], Collects(), Look(),
             [{"k": [i]} for i in range(2 * grace)], Collects()]
        y = impl.deepcopy(x)
        tracked = ([gc.is_tracked(v) for v in y[1]]
                   + [gc.is_tracked(t) and gc.is_tracked(t[1]) for t in y[4]]
                   + [gc.is_tracked(d) and gc.is_tracked(d["k"]) for d in y[7]])
        return (list(seen), tracked, gc.is_tracked(y[3]), gc.is_tracked(y[3]["t"]),
                y[1] == x[1], y[3] == x[3], y[4] == x[4], y[7] == x[7], Collects.calls,
                [type(y[i]).__name__ for i in (2, 5, 8)])
    want = run(copy)
    assert all(want[0]) and all(want[1])
    assert run(fastcopy) == want


def test_sweep_then_finalizers_mutate_and_free_the_source():
    """Copies hidden just before a reduction (3.12+; from the grace's end before) while the
    collection that reduction runs fires finalizers that empty, grow and free parts of the
    source, copied and not yet copied.  The collection runs at the same step for both, so the
    result is the stdlib's; every copy is tracked at the end (child process: a crash fails)."""
    import os
    from shape import run_python
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = r"""
import copy, gc, sys
sys.path.insert(0, %(root)r)
import fastcopy
G = 1000

class Bomb:
    def __init__(self, x):
        self.x, self.me = x, self
    def __del__(self):
        x = self.x
        del x[0][: 2 * G]              # copied already: frees those source lists
        x[0].append([-1])
        x[2].clear()                   # not copied yet
        x[2].extend({"k": [i, i]} for i in range(3))
        x[3] = None                    # frees the last tail

class Collects:
    def __reduce_ex__(self, proto):
        gc.collect()
        return (Collects, ())

def build():
    x = [[[i] for i in range(3 * G)], Collects(), [{"k": [i]} for i in range(2 * G)],
         [(i, [i]) for i in range(G)], Collects()]
    Bomb(x)
    return x

def picture(y):
    return (y[0], type(y[1]).__name__, y[2], y[3], type(y[4]).__name__)

gc.disable()
pics = []
for impl in (copy, fastcopy):
    x = build()
    y = impl.deepcopy(x)
    pics.append(picture(y))
    lists = [v for v in y[0]] + [d for d in y[2]] + [d["k"] for d in y[2]]
    assert all(gc.is_tracked(v) for v in lists), impl.__name__
    del x, y, lists
gc.enable()
assert pics[0] == pics[1], "results differ"
print("OK", len(pics[0][0]), len(pics[0][2]))
"""
    out = run_python(code % {"root": root})
    assert out.returncode == 0 and "OK" in out.stdout, (out.stdout, out.stderr)


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


@gc_padding
def test_hook_sees_tracked_temporaries(impl, pad):
    # the slot state pairs and dicts a call makes for __slots__ objects, and the sets it
    # copies, are hidden from the GC like its copies; a hook sees all of them tracked
    # again, as the stdlib's are, in the keep-alive list and among the memo's values
    seen = []

    class Look:
        def __deepcopy__(self, memo):
            keep = memo.get(id(memo), [])
            seen.append(([gc.is_tracked(o) for o in keep if isinstance(o, (tuple, dict, set))],
                         [gc.is_tracked(v) for v in memo.values()
                          if isinstance(v, (tuple, dict, set, Slotted)) and v is not keep]))
            return self
    x = [[[] for _ in range(pad)], [Slotted(i, [i]) for i in range(3)],
         [{"s%d" % i, i} for i in range(3)], Look()]
    impl.deepcopy(x)
    copy.deepcopy(x)
    assert seen[0] == seen[1] and seen[0][0] and seen[0][1], seen


# ---------------------------------------------------------------------------
# heap buffers kept from one call for the next (memo.c, "Spare buffers")

def _chain(depth, leaf):
    node = {"level": depth, "leaf": leaf}
    for i in range(depth - 1, 0, -1):
        node = {"level": i, "child": node, "shared": node}
    return node


def test_nested_call_while_buffers_are_held():
    # the outer call has left its inline arrays (frames, memo, keep-alive) when the hook
    # runs; the hook's own deepcopy() needs heap arrays too, and both must come out whole.
    # Depths stay within what the stdlib's recursion can do under pytest.
    class Inner:
        def __init__(self, payload):
            self.payload = payload

        def __deepcopy__(self, memo):
            return Inner(self.impl.deepcopy(self.payload))

    def scenario(impl):
        Inner.impl = impl
        x = [_chain(150, Inner(_chain(150, [1]))), _chain(20, [2])]
        return Case(x, lambda: impl.deepcopy(x))
    for _ in range(3):          # the later rounds start with buffers left by the calls before
        assert_equivalent(scenario)
