"""The small-tree road (deepcopy.c, "Small trees"): a deepcopy(x) with a fresh memo of a
small tree of exact dicts, lists and tuples of atoms is copied by a plain recursion, with no
memo.  Each case is compared with the stdlib through shape.assert_equivalent, right at the
edges where the road must step aside: a container met twice, a cycle, a tuple shared or
not, keys that are not quiet, a subclass, an instance's split __dict__, too deep, too wide,
too many containers, a dispatch table or atomic set edited at run time, and a hook.
"""
import contextlib
import copy
import gc
import sys
import sysconfig

import pytest

from shape import Case, assert_equivalent, fastcopy_module, run_python


def _native(build):
    def scenario(impl):
        x = build()
        return Case(x, lambda: impl.deepcopy(x))
    return scenario


def _chain(depth):
    node = {"leaf": [depth]}
    for i in range(depth):
        node = {"level": i, "child": node}
    return node


def _left_deep(depth):
    """depth + 1 dicts, each but the last a level deeper than its parent through a child
    that is not its tail (the last dict or list in it: the road's loop takes that one)."""
    node = {"leaf": 1}
    for i in range(depth):
        node = {"deeper": node, "tail": {"i": i}}
    return node


def _spines():
    """Tails (a dict's or list's last dict or list, copied after the rest by the road's loop)
    of every kind: dicts and lists in dicts and lists, followed by atoms and tuples, tuples
    holding them, and chains of them."""
    lists = [1]
    for i in range(120):
        lists = [i, lists]
    mixed = {"end": [0]}
    for i in range(40):
        mixed = [{"i": i, "next": mixed, "after": (i, [i])}, "s"] if i % 2 else \
            {"first": {"a": [i]}, "next": mixed, "atom": i}
    branches = {"end": 1}
    for i in range(40):
        # past the 16 levels of plain recursion: lists and dicts with several dicts and
        # lists in them, all but the last copied by recursion
        branches = [{"a": i}, [i], branches, 7] if i % 2 else \
            {"x": {"a": i}, "y": [i], "next": branches}
    return {
        "spine_branches_below_16": lambda: branches,
        "spine_dict_then_atoms": lambda: {"c": {"k": [1]}, "a": 1, "b": "s", "t": (2,)},
        "spine_two_dicts": lambda: {"a": {"x": [1]}, "b": {"y": {"z": [2]}}, "n": None},
        "spine_list_of_dicts": lambda: [{"a": 1}, {"b": [2]}, 3, (4, [5]), "x"],
        "spine_list_tail_in_dict": lambda: {"a": {"b": 1}, "l": [1, {"c": [2]}, [3]]},
        "spine_tuple_holding_dicts": lambda: {"t": ({"e": 1}, [2], {"f": {"g": 3}})},
        "spine_chain_400": lambda: _chain(400),
        "spine_list_chain_120": lambda: lists,
        "spine_mixed_chain": lambda: mixed,
        "spine_left_deep": lambda: _left_deep(15),
        "spine_left_deeper": lambda: _left_deep(40),
    }


class Key(str):
    """A str subclass key: its __hash__ is not the interpreter's own."""

    def __hash__(self):
        return str.__hash__(self)


def _shapes():
    shared = [1, 2]
    tup = (3, 4)
    cyc = {"a": [1]}
    cyc["self"] = cyc
    lst = [1]
    lst.append(lst)

    class Obj:
        pass
    o = Obj()
    o.a, o.b = [1], {"c": 2}
    sub = type("D", (dict,), {})(a=[1])
    return {
        "pyperf_a": lambda: {"list": [1, 2, 3, 43], "t": (1, 2, 3), "str": "hello",
                             "subdict": {"a": True}},
        "atoms_only": lambda: {"a": 1, "b": "x", "c": None, "d": 1.5, "e": b"b", "f": True},
        "empty": lambda: {},
        "empty_list": lambda: [],
        "list_root": lambda: [{"a": [1]}, [2, (3, [4])], (5, 6)],
        "tuple_changes": lambda: {"t": (1, [2]), "u": ((1, 2), [3])},
        "tuple_shared_atoms": lambda: {"t": tup, "u": tup, "v": [tup, tup]},
        "list_shared": lambda: {"a": shared, "b": shared},
        "list_shared_outside": lambda: {"a": shared},
        "dict_shared": lambda: (lambda d: {"a": d, "b": [d]})({"k": [1]}),
        "tuple_holding_shared": lambda: {"t": (shared, shared)},
        "tuple_shared_mutable": lambda: (lambda t: {"a": t, "b": t})((1, [2])),
        "cycle": lambda: cyc,
        "list_cycle": lambda: lst,
        "int_keys": lambda: {1: [1], 2.5: {"x": 1}, None: (1,), b"k": [2], (1, 2): [3]},
        "loud_key": lambda: {Key("k"): [1], "j": [2]},
        "subclass_value": lambda: {"d": sub},
        "instance_dict": lambda: o.__dict__,
        "object_leaf": lambda: {"o": o, "l": [1]},
        "set_leaf": lambda: {"s": {1, 2}, "l": [1]},
        "deep_chain": lambda: _chain(40),
        "deeper_chain": lambda: _chain(300),
        "wide": lambda: {"k%d" % i: [i] for i in range(300)},
        "wide_list": lambda: [[i] for i in range(300)],
        "many_nodes": lambda: [{"a": [i], "b": {"c": i}} for i in range(200)],
        "deleted_entries": lambda: (lambda d: ([d.pop("k%d" % i) for i in range(5)], d)[1])(
            {"k%d" % i: [i] for i in range(10)}),
        "deleted_dense": lambda: (lambda d: (d.pop("k1"), d)[1])(
            {"k%d" % i: [i] if i % 2 else {"v": [i]} for i in range(10)}),
        "empty_inner": lambda: {"a": {}, "b": [{}, {"c": {}}], "d": ({},)},
        "json_config": lambda: {"version": 3, "services": {
            "svc-%d" % i: {"name": "s%d" % i, "port": 8000 + i, "tags": ["a", "b"],
                           "limits": {"cpu": 0.5, "memory": 256}} for i in range(30)}},
    }


_SHAPES = _shapes()
_SHAPES.update(_spines())


@pytest.mark.parametrize("name", sorted(_SHAPES))
def test_against_stdlib(name):
    assert_equivalent(_native(_SHAPES[name]))


@pytest.mark.parametrize("name", ["pyperf_a", "list_root", "deleted_entries", "deleted_dense"])
def test_with_a_memo(name):
    """A caller's memo: the walker's road, the memo filled as the stdlib fills it."""
    build = _SHAPES[name]

    def scenario(impl):
        x, memo = build(), {}
        return Case(x, lambda: impl.deepcopy(x, memo), memo=memo)
    assert_equivalent(scenario)


def test_copies_are_new_and_sources_untouched():
    fc = fastcopy_module()
    if fc is None:
        pytest.skip("fastcopy core not built")
    x = _SHAPES["pyperf_a"]()
    y = fc.deepcopy(x)
    assert y == x and y is not x
    assert y["list"] is not x["list"] and y["subdict"] is not x["subdict"]
    assert y["t"] is x["t"]
    assert sys.getrefcount(x["list"]) == sys.getrefcount(y["list"])


# Tuples (and their ints) held by their parent's slot alone, so that the road copies them: a
# tuple whose items all come back as themselves (an empty or atomic tuple inside) must be the
# tuple itself, as _deepcopy_tuple returns it (found by tests/finalizer_fuzz.py, seed 3520).
_BIG = 10 ** 20
_UNSHARED_TUPLES = {
    "in_list": lambda: [((), _BIG + 1)],
    "in_dict": lambda: {"t": ((), _BIG + 1), "u": ((1, 2), _BIG + 2)},
    "nested": lambda: [(("a",), ((), _BIG + 3))],
    "beside_a_copy": lambda: [((), _BIG + 1), ((), [_BIG + 5])],
    "deeper": lambda: {"l": [{"k": ((2.5,), _BIG + 6)}]},
}


def _first_tuples(x, out):
    if type(x) is tuple:
        out.append(x)
    for v in (x.values() if type(x) is dict else x if type(x) in (list, tuple) else ()):
        _first_tuples(v, out)
    return out


@pytest.mark.parametrize("name", sorted(_UNSHARED_TUPLES))
def test_nested_atomic_tuples_come_back_as_themselves(name):
    fc = fastcopy_module()
    if fc is None:
        pytest.skip("fastcopy core not built")
    pictures = []
    for impl in (copy, fc):
        x = _UNSHARED_TUPLES[name]()
        y = impl.deepcopy(x)
        assert y == x
        pictures.append([a is b for a, b in zip(_first_tuples(y, []), _first_tuples(x, []))])
    assert pictures[1] == pictures[0]
    assert any(pictures[0])


@pytest.mark.parametrize("name", sorted(_UNSHARED_TUPLES))
def test_nested_atomic_tuples_against_stdlib(name):
    def scenario(impl):
        x = _UNSHARED_TUPLES[name]()
        return Case(x, lambda: impl.deepcopy(x))
    assert_equivalent(scenario)


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_state_kept(enabled):
    """3.10/3.11 hold the collector off for the copy: its state is as the caller left it."""
    fc = fastcopy_module()
    if fc is None:
        pytest.skip("fastcopy core not built")
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        fc.deepcopy({"a": [1], "b": {"c": (1, [2])}})
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_tracking_as_the_stdlib():
    """A copy is tracked by the collector exactly when the stdlib's is."""
    fc = fastcopy_module()
    if fc is None:
        pytest.skip("fastcopy core not built")
    for x in ({"a": [1], "b": {"c": 1}}, [[1], {"k": 2}], {"t": (1, [2])}):
        gc.collect()
        a, b = copy.deepcopy(x), fc.deepcopy(x)
        for p, q in ((a, b),) + tuple(zip(a.values(), b.values()) if isinstance(a, dict)
                                       else zip(a, b)):
            assert gc.is_tracked(p) == gc.is_tracked(q), (x, p)


def test_dispatch_edits_honoured():
    """An edited _deepcopy_dispatch (or 3.14's _atomic_types) turns the road off for the
    kinds it names: the user's copier runs, as in the stdlib."""
    code = r"""
import copy, sys
sys.path.insert(0, %(root)r)
import fastcopy
calls = []
orig = copy._deepcopy_dispatch[list]
def mine(x, memo, deepcopy=copy.deepcopy):
    calls.append(len(x))
    return orig(x, memo, deepcopy)
copy._deepcopy_dispatch[list] = mine
x = {"a": [1, 2], "b": {"c": [3]}}
fastcopy.deepcopy(x); n_fast = len(calls)
del calls[:]
copy.deepcopy(x); n_std = len(calls)
assert n_fast == n_std == 2, (n_fast, n_std)
copy._deepcopy_dispatch[list] = orig
if sys.version_info >= (3, 14) and isinstance(copy._atomic_types, set):
    # int then goes through its reduce value (which recurses without end in both)
    copy._atomic_types.discard(int)
    def outcome(impl):
        try:
            return ("ok", impl.deepcopy({"a": [10 ** 30]}))
        except Exception as e:
            return (type(e).__name__,)
    assert outcome(fastcopy) == outcome(copy), (outcome(fastcopy), outcome(copy))
print("OK")
"""
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = run_python(code % {"root": root})
    assert out.returncode == 0 and out.stdout.strip().endswith("OK"), out


def test_recursion_limit_as_the_walker():
    """At the recursion limit a small tree raises RecursionError as any deepcopy() call
    does (the road enters one level, as the walker's call)."""
    fc = fastcopy_module()
    if fc is None:
        pytest.skip("fastcopy core not built")

    def at_limit(n):
        if n == 0:
            return fc.deepcopy({"a": [1]})
        return at_limit(n - 1)
    with pytest.raises(RecursionError):
        at_limit(sys.getrecursionlimit() + 10)
    assert at_limit(10) == {"a": [1]}


def test_no_leak():
    fc = fastcopy_module()
    if fc is None:
        pytest.skip("fastcopy core not built")
    x = _SHAPES["json_config"]()
    for _ in range(100):
        fc.deepcopy(x)
    gc.collect()
    before = sys.gettotalrefcount() if hasattr(sys, "gettotalrefcount") else None
    blocks = sys.getallocatedblocks()
    for _ in range(2000):
        fc.deepcopy(x)
        fc.deepcopy(_SHAPES["pyperf_a"]())
    gc.collect()
    assert sys.getallocatedblocks() - blocks < 200
    if before is not None:
        assert sys.gettotalrefcount() - before < 100


# ---------------------------------------------------------------------------
# A list frame's repeated item ([l] * n): the same memo answer without a lookup, within one
# run of the frame's loop only -- a hook in between may rewrite the memo.

class Rewriter:
    """Rewrites the memo's entry for `target` when copied."""

    def __init__(self, target):
        self.target = target

    def __deepcopy__(self, memo):
        memo[id(self.target)] = ["replaced"]
        return self


class Grower:
    """Its copy (through __reduce_ex__, which is not shown the memo) appends `more` to
    `target`: the list being copied grows past the copy's allocation."""

    def __init__(self, target, more):
        self.target, self.more = target, more

    def __reduce_ex__(self, proto):
        self.target.extend(self.more)
        return (int, (0,))


def _repeats():
    l = [1, [2]]
    d = {"k": [3]}

    def grown():
        x = [l, l]
        x.append(Grower(x, [l] * 40 + [d, l, l]))
        x.extend([l] * 3)
        return x
    return {
        "runs": lambda: [l] * 5 + [d, d, l, 7, l] + [(l, l)] * 3,
        "long_run": lambda: [[0] * 3] + [l] * 300 + [d] * 2 + [l],
        "rewritten_midway": lambda: [l, l, Rewriter(l), l, l],
        "first_copied_then_hits": lambda: [[l, l], l, l],
        "grown_past_the_copy": grown,
        "atom_runs": lambda: [None] * 4 + [0, 0, [1], 0, 0, (2,), (2,), "s", "s"],
    }


_REPEATS = _repeats()


@pytest.mark.parametrize("name", sorted(_REPEATS))
def test_repeated_items(name):
    assert_equivalent(_native(_REPEATS[name]))

    build = _REPEATS[name]

    def visible(impl):
        x, memo = build(), {}
        return Case(x, lambda: impl.deepcopy(x, memo), memo=memo)
    assert_equivalent(visible)


# ---------------------------------------------------------------------------
# Subtrees a walker's frame copies without a frame of its own: the memo a later hook is
# shown holds what the stdlib's holds, in its order, keep-alive list included.

def _containers(root):
    """The source's containers in walk order (their index is their label)."""
    out, seen, todo = [], set(), [root]
    while todo:
        o = todo.pop()
        if isinstance(o, (dict, list, tuple)) and id(o) not in seen:
            seen.add(id(o))
            out.append(o)
            todo.extend(reversed(list(o.values()) if isinstance(o, dict) else list(o)))
    return out


class MemoLog:
    """Shown the memo: logs each entry (source label, copy's type) and the keep-alive list."""

    def __init__(self, log, src):
        self.log, self.src = log, src

    def __deepcopy__(self, memo):
        labels = {id(o): i for i, o in enumerate(_containers(self.src))}
        entries = [(labels.get(k, "other"), type(v).__name__) for k, v in memo.items()
                   if k != id(memo)]
        kept = [labels.get(id(o), type(o).__name__) for o in memo.get(id(memo), [])]
        keys = list(memo)
        where = keys.index(id(memo)) if id(memo) in memo else None   # the list's place
        self.log.append((entries, kept, where))
        return self


def _subtrees():
    def build(make):
        def scenario(impl):
            log = []
            src = make()
            x = [src, MemoLog(log, src)]
            return Case(x, lambda: impl.deepcopy(x), log=log)
        return scenario
    shared = [9]
    return {
        "list_of_dicts": build(lambda: [{"a": [i], "b": (i, [i])} for i in range(5)]),
        "dict_of_trees": build(lambda: {"k%d" % i: {"v": [i, {"w": (1, 2)}]} for i in range(4)}),
        "with_shared": build(lambda: [{"a": shared}, {"b": [1]}, shared, {"c": {"d": [2]}}]),
        "nested_lists": build(lambda: [[[1, [2]], (3, [4])], [[5]]]),
        "too_big_then_small": build(lambda: [list(range(200)), {"a": [1]}]),
    }


_SUBTREES = _subtrees()


@pytest.mark.parametrize("name", sorted(_SUBTREES))
def test_subtrees_memo_as_the_stdlib(name):
    std = assert_equivalent(_SUBTREES[name])
    assert std["log"] and std["log"][0][0]   # the hook saw entries


def test_finalizers_mid_copy_mutate_and_free_the_source():
    """A collection with finalizers at any allocation (3.10/3.11; 3.12+ at the eval breaker):
    the finalizer empties, grows and frees parts of the tree being copied.  The road holds
    the collector off, so the copy is the tree as it was either before the finalizer ran or
    after -- never half of each -- and nothing freed is read (child process: a crash fails)."""
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = r"""
import copy, gc, sys
sys.path.insert(0, %(root)r)
import fastcopy

class Bomb:
    def __init__(self, x):
        self.x, self.me = x, self
    def __del__(self):
        x = self.x
        x["a"].clear()
        x["a"].extend(range(40))
        del x["b"]                  # frees the dict (and its list) mid-copy if it could
        x["t"] = (7, [8])
        x["new"] = {"n": [9]}

gc.set_threshold(1, 1, 1)
seen = set()
for trial in range(300):
    x = {"a": [1, 2], "b": {"c": [3], "d": (4, [5])}, "t": (1, [2]), "s": "k"}
    before = copy.deepcopy(x)
    Bomb(x)
    del trial
    y = fastcopy.deepcopy(x)
    gc.collect()
    after = copy.deepcopy(x)
    assert y == before or y == after, (y, before, after)
    assert y["a"] is not x["a"]
    seen.add(y == before)
print("OK", sorted(seen))
"""
    out = run_python(code % {"root": root})
    assert out.returncode == 0 and "OK" in out.stdout, (out.stdout, out.stderr)


def _list_chain(depth):
    node = [0]
    for _ in range(depth - 1):
        node = [node]
    return node


def _tuple_chain(depth):
    """depth tuples around a list (a tuple's copy needs its items first: never a tail)."""
    node = [0]
    for _ in range(depth):
        node = (node,)
    return node


def _small_runs():
    from fastcopy import _fastcopy
    return _fastcopy._sysinfo()["small_trees"]


@contextlib.contextmanager
def _deep_recursion():
    """The stdlib's two frames a level need a raised recursion limit for the longest chains."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4000))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def _config(services, tags=2):
    return {"version": 3, "services": {
        "svc-%d" % i: {"name": "s%d" % i, "port": 8000 + i, "ratio": i / 7.0, "owner": None,
                       "tags": ["t%d" % j for j in range(tags)],
                       "limits": {"cpu": 0.5, "memory": 256}} for i in range(services)}}


@pytest.mark.skipif(bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                    reason="the small road proves its misses by reference counts (GIL builds)")
@pytest.mark.parametrize("name,build,taken", [
    # up to 2,048 items in all, of which up to 256 in lists and tuples
    ("config_100_services", lambda: _config(100), True),
    ("config_200_services", lambda: _config(200), False),      # 2,800 items
    ("list_items_256", lambda: {"a": list(range(200)), "b": [0] * 56}, True),
    ("list_items_257", lambda: {"a": list(range(200)), "b": [0] * 57}, False),
    ("long_lists_in_dicts", lambda: {i: {"m": [0.5] * 100, "v": [0.25] * 100}
                                     for i in range(10)}, False),
    ("wide_dict_of_atoms", lambda: {"k%d" % i: i for i in range(2000)}, True),
    # 16 levels of plain recursion, then 16 more, below which a container's tail (its last
    # dict or list) is taken by a loop at its parent's level: a chain of any depth within
    # the budgets qualifies
    ("chain_400", lambda: _chain(400), True),
    ("chain_681", lambda: _chain(681), True),                    # 2,047 items
    ("chain_682", lambda: _chain(682), False),                   # 2,050 items
    ("list_chain_256", lambda: _list_chain(256), True),
    ("list_chain_257", lambda: _list_chain(257), False),         # 257 list items
    ("depth_32", lambda: _left_deep(31), True),
    ("deeper_than_32", lambda: _left_deep(32), False),
    ("tuples_depth_32", lambda: {"t": _tuple_chain(30)}, True),
    ("tuples_deeper_than_32", lambda: {"t": _tuple_chain(31)}, False),
    ("tails_below_16_levels", lambda: {"a": [[[[[[[[[[[[[[[_chain(100)]]]]]]]]]]]]]]]}, True),
])
def test_road_bounds(name, build, taken):
    """Which trees the road takes, by the call counter; each copy compared with the stdlib
    (whose two frames a level need a raised recursion limit for the longest chains)."""
    x = build()
    before = _small_runs()
    y = fastcopy_module().deepcopy(x)
    assert (_small_runs() > before) == taken, name
    with _deep_recursion():
        assert_equivalent(_native(lambda: x))
        assert repr(y) == repr(copy.deepcopy(x))


@pytest.mark.skipif(bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                    reason="the small road proves its misses by reference counts (GIL builds)")
@pytest.mark.parametrize("name", sorted(_spines()))
def test_spines_take_the_road(name):
    """The tail shapes above are copied by the road (else test_against_stdlib would test the
    walker), but the one too deep through children that are not tails."""
    x = _SHAPES[name]()
    before = _small_runs()
    fastcopy_module().deepcopy(x)
    assert (_small_runs() > before) == (name != "spine_left_deeper"), name


def _random_tree(rng, depth, budget):
    """A random tree of exact dicts, lists and tuples over atoms, each container held by its
    parent alone (so the small road may take it), with chains (the last dict or list, a
    tail) and deep branches that are not tails mixed at random."""
    atoms = [0, 1, -5, 2.5, "s", "", None, True, b"b", (1, "t"), 10 ** 30]
    if depth <= 0 or budget[0] <= 0 or rng.random() < 0.15:
        return rng.choice(atoms)
    budget[0] -= 1
    kind = rng.choice("ddlt")
    n = rng.randrange(0 if kind != "t" else 1, 5)
    chain = rng.random() < 0.5     # the last child goes deep, the rest stay shallow
    kids = [_random_tree(rng, depth - 1 if (chain and i == n - 1) else
                         min(depth - 1, rng.randrange(4)), budget) for i in range(n)]
    if kind == "d":
        d = {}
        for i, v in enumerate(kids):
            d[rng.choice(["k%d" % i, i, 1.5 * i, (i, "t"), None if i == 0 else "n%d" % i])] = v
        if d and rng.random() < 0.2:
            d.pop(next(iter(d)))        # a deleted entry in the source's table
            d["late"] = rng.choice(atoms)
        return d
    if kind == "l":
        return kids
    return tuple(kids)


@pytest.mark.parametrize("seed", range(40))
def test_random_trees_against_stdlib(seed):
    """Random trees (deep chains, deep branches that are not tails, tuples between them),
    each compared with the stdlib; about half of them within the road's bounds."""
    import random
    rng = random.Random(seed)
    for _ in range(10):
        depth = rng.choice([3, 8, 20, 40, 120])
        x = _random_tree(rng, depth, [rng.choice([30, 300, 1500])])
        if isinstance(x, (dict, list)):
            with _deep_recursion():
                assert_equivalent(_native(lambda: x))


# ---------------------------------------------------------------------------------------------
# Small trees inside a walk the road does not take (a hook keeps the call off it): the memo a
# hook sees between them and the copies it takes out of it, entry by entry, as the stdlib's.
# ---------------------------------------------------------------------------------------------


class Grab:
    """A hook that returns what the memo holds for target (its copy, if it was copied)."""

    def __init__(self, target):
        self.target = target

    def __deepcopy__(self, memo):
        return memo.get(id(self.target), "not in the memo")


def _rows(n, shared=None):
    return [{"a": i, "b": "x", "c": [i, 2] if shared is None else shared} for i in range(n)]


def _with_hooks(make):
    """src between two hooks that log the memo, then a hook that takes a copy from it."""
    def scenario(impl):
        log = []
        src = make()
        inner = _containers(src)
        target = inner[len(inner) // 2]
        x = [MemoLog(log, src), src, MemoLog(log, src), Grab(target)]
        return Case(x, lambda: impl.deepcopy(x), log=log)
    return scenario


def _walk_shapes():
    shared = [7, 8]
    def cyclic():
        d = {"a": [1]}
        d["self"] = d
        return [d, {"b": [2]}]
    return {
        "rows": lambda: _rows(20),
        "rows_sharing_a_list": lambda: _rows(10, shared),
        "tuples_in_rows": lambda: [{"t": (i, [i]), "u": ((1, 2), [(3, [4])]), "v": ()}
                                   for i in range(6)],
        "chain_in_a_list": lambda: [_chain(40), {"x": 1}],
        "big_dict_of_small_dicts": lambda: {"k%d" % i: {"v": [i], "w": {}} for i in range(100)},
        "cycle": cyclic,
        "dict_in_tuple": lambda: [({"a": [1]}, {"b": (2, [3])}), {"c": {"d": {"e": []}}}],
        "empty_dicts": lambda: [{}, {"a": {}}, {"b": []}],
        "dict_with_a_deleted_entry": lambda: [_deleted_entry(i) for i in range(4)],
    }


def _deleted_entry(i):
    d = {"gone": [0], "a": [i], "b": {"c": (i, [i])}}
    del d["gone"]
    d["late"] = {"z": [i]}
    return d


_WALK_SHAPES = _walk_shapes()


@pytest.mark.parametrize("name", sorted(_WALK_SHAPES))
def test_memo_between_hooks(name):
    """Each shape between two hooks that log the memo (entries in order, keep-alive list) and
    a hook that takes a copy out of it: the same as the stdlib's, results and aliasing too."""
    std = assert_equivalent(_with_hooks(_WALK_SHAPES[name]))
    assert std["log"][1][0]   # the second hook saw entries


@pytest.mark.parametrize("name", sorted(_WALK_SHAPES))
def test_walk_shapes_with_a_fresh_memo(name):
    assert_equivalent(_native(_WALK_SHAPES[name]))


@pytest.mark.parametrize("seed", range(30))
def test_random_trees_between_hooks(seed):
    """Random trees (the small road's, some past its bounds) in a list with hooks that log
    the memo and take copies out of it at random places, compared with the stdlib."""
    import random

    def scenario(impl):
        r = random.Random(seed)
        log = []
        items = [_random_tree(r, r.choice([2, 4, 8, 30]), [r.choice([5, 40, 200])])
                 for _ in range(r.randrange(2, 8))]
        inner = _containers(items)
        x = []
        for it in items:
            x.append(it)
            if r.random() < 0.5:
                x.append(MemoLog(log, items))
            if inner and r.random() < 0.5:
                x.append(Grab(r.choice(inner)))
        return Case(x, lambda: impl.deepcopy(x), log=log)

    with _deep_recursion():
        assert_equivalent(scenario)


# ---------------------------------------------------------------------------------------------
# User code after small trees the walker copied on the road (deepcopy.c, "Small subtrees"): the
# entries below each tree's root are made only then, in the stdlib's order and places.
# ---------------------------------------------------------------------------------------------


def _handed_back(x):
    return x


class Handback:
    """A reductor that hands back a container of a tree copied earlier, found only when it
    runs (a reference held before would keep the tree off the road): user code makes a
    second reference to it, the walker meets it, and must find its copy in the memo."""

    def __init__(self, find):
        self.find = find

    def __reduce__(self):
        return (_handed_back, (self.find(),))


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


def _after_subtrees(make):
    def scenario(impl):
        log = []
        x = make(log)
        return Case(x, lambda: impl.deepcopy(x), log=log)
    return scenario


def _rows_deep(n):
    return [{"a": i, "t": (i, [i]), "d": {"e": {"f": [i]}}, "u": ((1, 2), [(3, [4])])}
            for i in range(n)]


def _after_subtrees_shapes():
    def handback(log):
        rows = _rows_deep(12)
        return [rows, Handback(lambda: rows[3]["t"][1]), Handback(lambda: rows[5]["d"]),
                MemoLog(log, rows), Handback(lambda: rows[7]["u"])]

    def handback_root(log):
        rows = _rows(10)
        return [rows, Handback(lambda: rows[2]), rows[4], MemoLog(log, rows)]

    def set_ghost(log):
        rows = _rows_deep(6)
        return [rows, {1, 2, 3}, frozenset({4}), MemoLog(log, rows), _rows(3)]

    def slots_ghost(log):
        rows = _rows_deep(6)
        return [rows, Slotted([1], {"k": (2, [3])}), MemoLog(log, rows)]

    def two_rounds(log):
        rows, more = _rows_deep(5), _rows(8)
        src = [rows, more]
        return [rows, MemoLog(log, src), more, Grab(more[3]["c"]), MemoLog(log, src)]

    def first_keep_deep(log):
        rows = [{"d": {"e": {"f": {"g": [i]}}}, "h": [i]} for i in range(4)]
        return [rows, MemoLog(log, rows)]

    def in_a_dict(log):
        rows = {"k%d" % i: {"v": [i], "w": {"z": (i, [i])}} for i in range(20)}
        return {"rows": rows, "log": MemoLog(log, rows), "grab": Grab(rows["k4"]["w"])}

    return {"handback": handback, "handback_root": handback_root, "set_ghost": set_ghost,
            "slots_ghost": slots_ghost, "two_rounds": two_rounds,
            "first_keep_deep": first_keep_deep, "in_a_dict": in_a_dict}


_AFTER_SUBTREES = _after_subtrees_shapes()


@pytest.mark.parametrize("name", sorted(_AFTER_SUBTREES))
def test_user_code_after_small_subtrees(name):
    """Small trees, then a reductor that hands one of their containers back (found in the
    memo), a set or a slots object (their temporaries' places in the memo), hooks that log
    the memo and take copies out of it: results, aliasing and the memo as the stdlib's."""
    std = assert_equivalent(_after_subtrees(_AFTER_SUBTREES[name]))
    assert std["log"] and std["log"][0][0]


def test_small_subtrees_taken():
    """The walker takes the road for rows after a hook, and not when given a memo."""
    fc = fastcopy_module()
    if fc is None or not hasattr(fc._fastcopy, "_sysinfo"):
        pytest.skip("fastcopy's C core is not built")
    info = fc._fastcopy._sysinfo
    if sysconfig.get_config_var("Py_GIL_DISABLED") or sys.version_info < (3, 12):
        pytest.skip("the road needs counted references and no collection inside allocations")
    rows = _rows(50)
    before = info()["small_subtrees"]
    fc.deepcopy([Grab(rows[0]), rows])
    assert info()["small_subtrees"] - before == 50
    before = info()["small_subtrees"]
    fc.deepcopy([Grab(rows[0]), rows], {})
    assert info()["small_subtrees"] == before


_SUBTREE_NOMEM = r"""
import copy, gc, sys
import _testcapi
import fastcopy
from fastcopy import _fastcopy

def handed_back(x):
    return x

class Handback:
    def __init__(self, find):
        self.find = find
    def __reduce__(self):
        return (handed_back, (self.find(),))

class MemoTypes:
    def __deepcopy__(self, memo):
        return [type(v).__name__ for k, v in memo.items() if k != id(memo)]

SHAPE = %r
rows = [{"a": i, "b": "x", "c": [i, 2], "d": {"e": (i, [i])}} for i in range(30)]
if SHAPE == "subtrees":
    # rows inside a walk between hooks, two of their containers handed back by reductors
    x = [rows, Handback(lambda: rows[3]["c"]), MemoTypes(),
         Handback(lambda: rows[9]["d"]["e"]), {"more": rows[10:20]}, MemoTypes()]
    counter, taken_want = "small_subtrees", 30

    def picture(y):
        return (y[2], y[5], y[0] == rows, y[4]["more"] == rows[10:20],
                y[1] is y[0][3]["c"], y[3] is y[0][9]["d"]["e"], y[4]["more"][0] is y[0][10])
else:
    # a whole call on the small road: a tree, its tails below 16 levels included
    def tree():
        node = {"leaf": [0, "x"], "t": (1, [2])}
        for i in range(40):
            node = {"level": i, "side": {"v": [i]}, "items": [{"a": i}, (i, [i])],
                    "child": node}
        return node
    rows = []
    x = {"root": [tree()]}        # nothing else holds a container of it
    counter, taken_want = "small_trees", 1

    def picture(y):
        return y == x and y["root"] is not x["root"]

def containers():
    out, todo = [], [x]
    while todo:
        o = todo.pop()
        if isinstance(o, (dict, list, tuple)):
            out.append(o)
            todo.extend(o.values() if isinstance(o, dict) else o)
    return out

def counts():
    # read at once and let go: held, they would keep the trees off the road
    return [sys.getrefcount(o) for o in containers()]

# 3.14.10 (Debian's): every attempt of this sweep, whichever allocation fails, leaves 4 more
# blocks allocated -- also before small subtrees existed (270be46) and for a copy that runs no
# Python code; the stdlib's own copy crashes under the same sweep there, so it gives no
# baseline.  Reference counts are still checked on every version.
BLOCKS_GROW = sys.version_info >= (3, 14)
want = picture(copy.deepcopy(x))
before = counts()
taken = _fastcopy._sysinfo()[counter]
assert picture(fastcopy.deepcopy(x)) == want
assert _fastcopy._sysinfo()[counter] - taken == taken_want, "the road was not taken"

def attempt(i, mode):
    _testcapi.set_nomemory(i, i + 1 if mode == "single" else 0)
    try:
        y, exc = fastcopy.deepcopy(x), None
    except MemoryError as e:
        y, exc = None, e
    finally:
        _testcapi.remove_mem_hooks()
    return y, exc

errors = {"single": 0, "from": 0}
for mode in ("single", "from"):
    i, first = 0, True
    while True:
        attempt(i, mode)                  # warm what this index touches
        grown = []
        for again in range(2):            # a leak grows every time; one-time state once
            gc.collect()
            blocks = sys.getallocatedblocks()
            y, exc = attempt(i, mode)
            if exc is None:
                assert picture(y) == want, (mode, i, picture(y))
            elif not again:
                errors[mode] += 1
            del y, exc
            gc.collect()
            grown.append(sys.getallocatedblocks() - blocks)
            assert counts() == before, (mode, i)
        grown = min(grown)
        if first:
            first = False                  # one-time interpreter state: index 0 again
            continue
        assert grown <= 0 or BLOCKS_GROW, (mode, i, grown)
        if mode == "from" and errors[mode] and i > 0 and attempt(i, mode)[1] is None:
            break                          # every allocation from i on failing: it got through
        i += 1
        if mode == "single" and i > 3000:
            break
assert errors["single"] > 0 and errors["from"] > 0, errors
print("ok", errors)
"""


@pytest.mark.parametrize("shape", ["subtrees", "small_tree"])
def test_memoryerror_on_the_small_road(shape):
    """A failing allocation anywhere in a copy on the small road -- small subtrees between
    hooks (a tree's copy, its root's entry, the entries made below it before user code runs:
    the memo's arrays grown, its index built again), or a whole call's tree with its tails --
    gives MemoryError or the stdlib's result, with nothing leaked and the source untouched
    (child process: a crash fails).  test_memoryerror.py's sweeps cannot reach the road: their
    bookkeeping holds every container of the source, which keeps it off."""
    try:
        import _testcapi  # noqa: F401
    except ImportError:
        pytest.skip("_testcapi is not available")
    if sysconfig.get_config_var("Py_GIL_DISABLED") or (shape == "subtrees"
                                                         and sys.version_info < (3, 12)):
        pytest.skip("the road needs counted references (GIL builds); trees inside a walk, "
                    "no collection inside allocations too (3.12+)")
    p = run_python(_SUBTREE_NOMEM % shape, timeout=600)
    assert p.returncode == 0 and p.stdout.strip().startswith("ok"), (p.stdout[-2000:],
                                                                     p.stderr[-3000:])


_SUBTREE_MUTATE = r"""
import copy, gc, sys
import fastcopy

def handed_back(x):
    return x

class Mutator:
    # user code after the rows: changes and frees containers of rows copied on the road, then
    # hands one back (the memo's entries below each row must be the ones made before it ran)
    def __init__(self, rows, how):
        self.rows, self.how = rows, how
    def __reduce__(self):
        r = self.rows
        if self.how == "clear_inner":
            r[1]["c"].clear(); r[2]["d"]["e"] = None
        elif self.how == "replace":
            r[1]["c"] = [9]; r[2]["d"] = {}; r[3] = {"new": [1]}
        elif self.how == "free":
            del r[0]["c"], r[2]["d"]; r.pop(4)
        elif self.how == "clear_all":
            r.clear()
        gc.collect()
        return (handed_back, (r[:1] and r[0].get("c"),))

class Log:
    def __init__(self, log):
        self.log = log
    def __deepcopy__(self, memo):
        self.log.append(([type(v).__name__ for k, v in memo.items() if k != id(memo)],
                         [type(o).__name__ for o in memo.get(id(memo), [])],
                         list(memo).index(id(memo)) if id(memo) in memo else None))
        return 0

def picture(impl, how):
    rows = [{"a": i, "c": [i, 2], "d": {"e": (i, [i])}} for i in range(8)]
    log = []
    x = [Log(log), rows, Mutator(rows, how), Log(log), rows[5:]]
    y = impl.deepcopy(x)
    return (log, repr(y), y[2] is (y[1][0].get("c") if y[1] and "c" in y[1][0] else None),
            y[4][0] is y[1][5] if len(y[1]) > 5 else None)

for how in ("clear_inner", "replace", "free", "clear_all"):
    a, b = picture(copy, how), picture(fastcopy, how)
    assert a == b, (how, a, b)
print("ok")
"""


def test_user_code_mutates_and_frees_rows_copied_on_the_road():
    """A reductor after rows copied as small subtrees empties, replaces and deletes their
    containers (freed with the last reference), then hands one back; hooks log the memo before
    and after: the same as the stdlib (child process: reading a freed container crashes)."""
    p = run_python(_SUBTREE_MUTATE, timeout=120)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), (p.stdout[-2000:],
                                                                   p.stderr[-3000:])


class _Fixed:
    """A hook whose copy is always the same object (itself immortal or not)."""

    def __init__(self, result):
        self.result = result

    def __deepcopy__(self, memo):
        return self.result


def _run_picture(impl, make):
    """deepcopy of runs of one object o: which items are the run's copy c, whether c is o, how
    many references to c the result held, and c's count once it is dropped (counts not for
    None, which other objects move)."""
    o = make()
    x = [o] * 100 + [0, o, o, 5] + [o] * 30
    y = impl.deepcopy(x)
    c = y[0]
    pattern = [v is c for v in y]
    during = sys.getrefcount(c)
    del y
    gc.collect()
    after = sys.getrefcount(c)
    counts = None if c is None else (during - after, after)
    return pattern, c is o, counts


@pytest.mark.parametrize("make", [
    lambda: [1.5, "s"],                 # a list: its copy, 132 times
    lambda: _Fixed([7]),                # a hook's copy, a list the hook keeps
    lambda: _Fixed(None),               # ... an immortal one on 3.12+
    lambda: _Fixed(int("1" * 31)),     # made at run time: 3.13t makes constants immortal
], ids=["list", "hook_list", "hook_none", "hook_int"])
def test_runs_of_one_memo_hit_count_every_reference(make):
    """[o] * 100 and runs after other items: every item of a run is the copy of o, the result
    holds one reference to it per item, and they are all given back with the result -- as
    the stdlib (a list's run of one memo hit is counted in one write on 3.12+ GIL builds)."""
    std = _run_picture(copy, make)
    assert std[0].count(True) == 132 and std[1] is False
    assert std[2] is None or std[2][0] == 132    # c's count after: the stdlib's, below
    fc = fastcopy_module()
    if fc is not None:
        assert _run_picture(fc, make) == std
