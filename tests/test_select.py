"""Selective copying: copy(x, deep=paths), deepcopy(x, share=...), replicate(x, n).

Expected results are built by hand; the source is compared before and after every call
(success and error) by a stdlib deep copy taken beforehand.
"""
import collections
import copy
import dataclasses
import pickle

import pytest

import fastcopy
from shape import assert_same_shape  # noqa: F401  (imported for its availability check)


@dataclasses.dataclass
class Opt:
    state: dict
    lr: float


@dataclasses.dataclass(frozen=True)
class Frozen:
    table: list
    name: str


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a = a
        self.b = b


class Plain:
    def __init__(self, **kw):
        self.__dict__.update(kw)


Point = collections.namedtuple("Point", "x y")


def snapshot(x):
    return pickle.dumps(x)


def make_trainer():
    shared = [0.5, 0.25]
    return Plain(
        opt=Opt({"m": [1.0, 2.0], "shared": shared}, 0.1),
        cfg={"layers": [{"w": [1, 2]}, {"w": [3, 4]}], 7: ["seven"], ("k", 1): {"t": [0]}},
        slots=Slotted([1], [2]),
        frozen=Frozen([9], "f"),
        point=Point([1], [2]),
        shared=shared,
        name="trainer",
    )


# ---------------------------------------------------------------------------
# copy(x, deep=...)
# ---------------------------------------------------------------------------

def test_no_deep_is_copy():
    t = make_trainer()
    y = fastcopy.copy(t)
    z = copy.copy(t)
    assert type(y) is Plain and y.__dict__ == z.__dict__
    assert all(y.__dict__[k] is t.__dict__[k] for k in t.__dict__)
    assert fastcopy.copy(t, deep=None).opt is t.opt


@pytest.mark.parametrize("path", ["opt.state", ("opt", "state")])
def test_attribute_path(path):
    t = make_trainer()
    before = snapshot(t)
    y = fastcopy.copy(t, deep=[path])
    assert snapshot(t) == before
    assert y is not t and type(y) is Plain
    assert y.opt is not t.opt and type(y.opt) is Opt          # shallow-copied along the path
    assert y.opt.lr == t.opt.lr
    assert y.opt.state == t.opt.state and y.opt.state is not t.opt.state
    assert y.opt.state["m"] is not t.opt.state["m"]          # deep
    assert y.cfg is t.cfg and y.slots is t.slots             # siblings stay shared
    assert y.shared is t.shared


def test_dict_keys_list_indices_and_nested():
    t = make_trainer()
    before = snapshot(t)
    y = fastcopy.copy(t, deep=["cfg.layers.1.w", ("cfg", 7), ("cfg", ("k", 1), "t")])
    assert snapshot(t) == before
    assert y.cfg is not t.cfg and y.cfg["layers"] is not t.cfg["layers"]
    assert y.cfg["layers"][0] is t.cfg["layers"][0]           # sibling index shared
    assert y.cfg["layers"][1] is not t.cfg["layers"][1]
    assert y.cfg["layers"][1]["w"] == [3, 4] and y.cfg["layers"][1]["w"] is not t.cfg["layers"][1]["w"]
    assert y.cfg[7] == ["seven"] and y.cfg[7] is not t.cfg[7]  # non-string key
    assert y.cfg[("k", 1)]["t"] is not t.cfg[("k", 1)]["t"]    # tuple key, nested
    assert y.opt is t.opt


def test_slots_frozen_dataclass_and_namedtuple_fields():
    t = make_trainer()
    before = snapshot(t)
    y = fastcopy.copy(t, deep=["slots.a", "frozen.table", "point.x"])
    assert snapshot(t) == before
    assert type(y.slots) is Slotted and y.slots is not t.slots
    assert y.slots.a == [1] and y.slots.a is not t.slots.a and y.slots.b is t.slots.b
    assert type(y.frozen) is Frozen and y.frozen.table is not t.frozen.table
    assert y.frozen.name == "f"
    assert type(y.point) is Point and y.point.x is not t.point.x and y.point.y is t.point.y


def test_aliasing_across_fields_is_kept():
    t = make_trainer()
    y = fastcopy.copy(t, deep=["shared", "opt.state"])
    # one memo for all the fields: the list shared by two fields stays one list
    assert y.shared is y.opt.state["shared"]
    assert y.shared is not t.shared


def test_overlapping_paths():
    t = make_trainer()
    y = fastcopy.copy(t, deep=["opt", "opt.state"])
    assert y.opt is not t.opt and y.opt.state is not t.opt.state
    assert y.opt.state["m"] is not t.opt.state["m"]


def test_top_level_container():
    d = {"a": [1], "b": [2]}
    y = fastcopy.copy(d, deep=["a"])
    assert y == d and y["a"] is not d["a"] and y["b"] is d["b"]
    lst = [[1], [2]]
    y = fastcopy.copy(lst, deep=[(1,)])
    assert y[0] is lst[0] and y[1] is not lst[1] and y[1] == [2]
    tup = ([1], [2])
    y = fastcopy.copy(tup, deep=["0"])
    assert type(y) is tuple and y[0] is not tup[0] and y[1] is tup[1]


@pytest.mark.parametrize("path, exc, words", [
    ("opt.nope", AttributeError, "opt.nope"),
    ("cfg.missing", KeyError, "cfg.missing"),
    ("cfg.layers.5.w", IndexError, "cfg.layers.5"),
    (("cfg", 99), KeyError, "cfg.99"),
    ("slots.nope", AttributeError, "slots.nope"),
])
def test_missing_field_names_the_whole_path_and_builds_nothing(path, exc, words):
    t = make_trainer()
    before = snapshot(t)
    with pytest.raises(exc) as info:
        fastcopy.copy(t, deep=["opt.state", path])
    assert words in str(info.value)
    assert snapshot(t) == before


@pytest.mark.parametrize("deep, exc", [
    (5, TypeError),
    ([5], TypeError),
    (["a..b"], ValueError),
    ([""], ValueError),
    ([()], ValueError),
])
def test_malformed_deep(deep, exc):
    t = make_trainer()
    before = snapshot(t)
    with pytest.raises(exc):
        fastcopy.copy(t, deep=deep)
    assert snapshot(t) == before


def test_deep_copy_error_propagates_and_source_untouched():
    class Bad:
        def __deepcopy__(self, memo):
            raise ValueError("no")
    d = {"a": [1], "b": Bad()}
    with pytest.raises(ValueError, match="no"):
        fastcopy.copy(d, deep=["a", "b"])
    assert d["a"] == [1]


# ---------------------------------------------------------------------------
# deepcopy(x, share=...)
# ---------------------------------------------------------------------------

class Weights:
    def __init__(self, data):
        self.data = data


def test_share_by_type():
    w = Weights([1, 2])
    x = {"w": w, "also": [w], "cfg": {"lr": [0.1]}}
    y = fastcopy.deepcopy(x, share=Weights)
    assert y["w"] is w and y["also"][0] is w       # kept by reference wherever it occurs
    assert y["also"] is not x["also"]
    assert y["cfg"]["lr"] == [0.1] and y["cfg"]["lr"] is not x["cfg"]["lr"]


def test_share_tuple_of_types_and_predicate():
    w = Weights([1])
    lst = [3]
    x = [w, lst, (w, lst)]
    y = fastcopy.deepcopy(x, share=(Weights, list))
    assert y is x   # the outer list is shared too: it matches `list`
    y = fastcopy.deepcopy(x, share=lambda o: isinstance(o, Weights))
    assert y[0] is w and y[1] is not lst and y[2][0] is w and y[2][1] is y[1]


def test_share_predicate_asked_about_flat_tuples():
    """A tuple of atomic items is its own deep copy and skips the memo, but a share
    predicate is still asked about it, in every container, as about any other object."""
    t1, t2, t3, t4 = (1, "a"), (2.5,), (), (3, None)
    x = [t1, {"k": t2}, (t3, [t4])]
    asked = []

    def pred(o):
        asked.append(o)
        return False
    y = fastcopy.deepcopy(x, share=pred)
    assert y == x and y[0] is t1 and y[1]["k"] is t2 and y[2][0] is t3 and y[2][1][0] is t4
    for t in (t1, t2, t3, t4):
        assert any(o is t for o in asked), t


def test_share_not_traversed_and_not_memoized():
    seen = []

    class Probe:
        def __deepcopy__(self, memo):
            seen.append(1)
            return Probe()
    w = Weights([Probe()])
    memo = {}
    y = fastcopy.deepcopy([w], memo, share=Weights)
    assert y[0] is w and seen == []
    assert id(w) not in memo


def test_share_predicate_raises():
    x = {"a": [1], "b": Weights(1)}
    before = snapshot(x["a"])

    def pred(o):
        if isinstance(o, Weights):
            raise RuntimeError("boom")
        return False
    with pytest.raises(RuntimeError, match="boom"):
        fastcopy.deepcopy(x, share=pred)
    assert snapshot(x["a"]) == before


def test_share_malformed():
    with pytest.raises(TypeError):
        fastcopy.deepcopy([1], share=5)
    with pytest.raises(TypeError):
        fastcopy.deepcopy([1], share=(int, 5))


def test_share_none_is_plain_deepcopy():
    x = {"a": [1]}
    assert fastcopy.deepcopy(x, share=None) == x


# ---------------------------------------------------------------------------
# replicate(x, n)
# ---------------------------------------------------------------------------

def _config():
    shared = [1, 2]
    return {"a": [1.0, {"b": (1, 2), "c": ([3], 4)}], "s1": shared, "s2": {"x": shared},
            "t": (shared, 5), "n": None, "self": None}


@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_replicate_equals_n_deepcopies(n):
    x = _config()
    reps = fastcopy.replicate(x, n)
    assert type(reps) is list and len(reps) == n
    ref = copy.deepcopy(x)
    for y in reps:
        assert pickle.dumps(y) == pickle.dumps(ref)            # values and aliasing pattern
        assert y["s1"] is y["s2"]["x"] is y["t"][0]
        assert y["s1"] is not x["s1"]
        assert y["a"][1]["b"] is x["a"][1]["b"]                # all-atomic tuple kept, as deepcopy
    assert len({id(y) for y in reps}) == n
    if n > 1:
        assert reps[0]["s1"] is not reps[1]["s1"]             # independent


def test_replicate_cycles_and_objects_fall_back_exactly():
    x = _config()
    x["self"] = x                                              # a cycle through a dict
    x["obj"] = Plain(v=[1])                                    # an instance: tape gives up
    reps = fastcopy.replicate(x, 3)
    for y in reps:
        assert y["self"] is y and y["obj"].v == [1] and y["obj"] is not x["obj"]
    assert reps[0]["obj"] is not reps[1]["obj"]


def test_replicate_share():
    w = Weights(1)
    reps = fastcopy.replicate({"w": w, "l": [w]}, 4, share=Weights)
    assert all(r["w"] is w and r["l"][0] is w for r in reps)


@pytest.mark.parametrize("n, exc", [(-1, ValueError), (1.5, TypeError), ("3", TypeError),
                                    (True, TypeError)])
def test_replicate_bad_n(n, exc):
    with pytest.raises(exc):
        fastcopy.replicate([1], n)


def test_replicate_recursive_tuple():
    lst = []
    t = (lst,)
    lst.append(t)
    reps = fastcopy.replicate(t, 2)
    ref = copy.deepcopy(t)
    for y in reps:
        assert y[0][0] is y and type(y) is tuple
        assert pickle.dumps(y) == pickle.dumps(ref)


# ---------------------------------------------------------------------------
# replicate(x, n): the tape's road and the walk's road give the same replicas
# ---------------------------------------------------------------------------

from fastcopy import _fastcopy  # noqa: E402
from shape import shape  # noqa: E402


def _sparse_dict():
    d = {"k%d" % i: [i] for i in range(30)}
    for i in range(25):                      # x.copy() rebuilds such a table
        del d["k%d" % i]
    return d


def _replicate_shapes():
    sh = [1, 2, 3]
    shd = {"k": [4, 5]}
    holder = Plain()                         # its __dict__ is a split table
    holder.a, holder.b = [1], {"c": 2}
    w = Weights(3)
    return {
        "config200": {"key%d" % i: {"a": i, "b": float(i), "c": "v%d" % i} for i in range(200)},
        "flat_list": [v for i in range(300) for v in (i, i * 0.5, "s%d" % i)],
        "json": {"users": [{"id": i, "name": "u%d" % i, "tags": ["a", "b"],
                            "meta": {"x": i, "y": [1, 2]}} for i in range(20)], "v": 3},
        "tuples": [(i, "s%d" % i, float(i)) for i in range(100)],
        "tuples_mut": [(i, [i]) for i in range(100)],
        "shared": {"a": [sh, sh, shd], "b": {"x": sh, "y": shd, "z": [shd, (sh, 1)]},
                   "c": [{"p": sh, "q": i} for i in range(20)]},
        "nested_atomic_tuples": [((1, 2), (3, (4, 5))), ((1, 2),)],
        "empties": [[], {}, (), [[]], {"e": {}}, ((),)],
        "keys": {1: [1], 2.5: [2], None: [3], b"b": [4], True: [6], 3j: [7]},
        "sparse_dict": {"s": _sparse_dict(), "t": _sparse_dict()},
        "split_dict": [holder.__dict__, holder.__dict__],
        "share_const": [w, (w, 1), {"w": w, "t": (w,)}, [w]],
        "cycles": None,
        "top_atomic": 42,
        "top_tuple_of_lists": ([1], [2], [1, [3]]),
    }


# shapes that reach some container twice: whether a tape pays depends on how
# many second references there are against containers (fc_tape_pays)
_REFERENCED_AGAIN = {"cycles", "shared", "split_dict"}


def _cycles():
    a = [1]
    d = {"self": None, "a": a}
    d["self"] = d
    a.append(d)
    lst = [a, d, (a, d)]
    lst.append(lst)
    return lst


def _walk_road(walk):
    return _fastcopy._replicate_road(walk)["walk"]


def _tapes():
    return _fastcopy._replicate_road()["tapes"]


def _all_nodes(root):
    seen, stack, out = set(), [root], []
    while stack:
        o = stack.pop()
        if id(o) in seen or not isinstance(o, (list, tuple, dict)):
            continue
        seen.add(id(o))
        out.append(o)
        stack.extend(o.values() if isinstance(o, dict) else o)
    return out


@pytest.mark.thread_unsafe(reason="the tape counter and the walk switch are process-wide")
@pytest.mark.parametrize("name", sorted(_replicate_shapes()))
@pytest.mark.parametrize("n", [1, 2, 3, 10])
def test_replicate_roads_match_n_deepcopies(name, n):
    import gc
    src = _cycles() if name == "cycles" else _replicate_shapes()[name]
    share = Weights if name == "share_const" else None
    before = pickle.dumps(src)
    ref = [copy.deepcopy(src, {}) if share is None else fastcopy.deepcopy(src, share=share)
           for _ in range(n)]
    tapes = _tapes()
    reps = fastcopy.replicate(src, n, share=share)
    taped = _tapes() - tapes
    old = _walk_road("tape")
    try:
        tapes = _tapes()
        forced = fastcopy.replicate(src, n, share=share)
        forced_taped = _tapes() - tapes
        _walk_road(True)
        walked = fastcopy.replicate(src, n, share=share)
    finally:
        _walk_road(old)
    # every shape here is tape-able: the first replica is a walk, and a tape
    # is recorded for two replicas or more after it (one when forced) --
    # unless second references make it cost more than it saves (cost model)
    if name in _REFERENCED_AGAIN:
        assert taped <= forced_taped
    else:
        assert taped == (1 if n >= 3 else 0)
    assert forced_taped == (1 if n >= 2 else 0)
    # types, values, sharing within a replica, with the source and across replicas
    assert shape(reps, src) == shape(ref, src)
    assert shape(forced, src) == shape(ref, src)
    assert shape(walked, src) == shape(ref, src)
    assert pickle.dumps(src) == before                  # the source is untouched
    assert len({id(r) for r in reps}) == n or name == "top_atomic"
    assert len({id(r) for r in forced}) == n or name == "top_atomic"
    for r in reps + forced:
        for node in _all_nodes(r):
            # the collector sees every replica container that can hold a cycle
            if isinstance(node, list) or (
                    isinstance(node, dict)
                    and any(gc.is_tracked(v) for v in node.values())):
                assert gc.is_tracked(node), (name, node)
    # independent: changing every container of one replica leaves the others
    # (the walk's replica, a replayed one and the last, made of the templates)
    for got in (reps, forced):
        for k in range(n - 1):
            for node in _all_nodes(got[k]):
                if isinstance(node, list):
                    node.append("x")
                elif isinstance(node, dict):
                    node["x"] = "x"
            assert shape(got[k + 1:], src) == shape(ref[k + 1:], src)


def test_replicate_tape_keeps_every_replica_alive_through_collections():
    import gc
    x = {"k%d" % i: [[i], {"v": (i, [i])}] for i in range(300)}
    x["loop"] = x
    reps = fastcopy.replicate(x, 5)
    gc.collect()
    for r in reps:
        assert r["loop"] is r and r["k7"] == [[7], {"v": (7, [7])}]
    del reps
    gc.collect()


@pytest.mark.thread_unsafe(reason="the tape counters are process-wide")
def test_replicate_cost_model_for_second_references():
    # a list of 5,000 references to one list: recording a reference costs
    # more than the walk's memo hit and a replica saves little on it, so a
    # tape pays only for many replicas; a tree of containers from n = 3
    sh = [1, 2]
    refs = [sh] * 5000
    tree = [[i, [i]] for i in range(1000)]
    mixed = [[i, sh] for i in range(1000)]           # one reference per container
    for x, n, taped in ((refs, 3, 0), (refs, 4, 0), (refs, 100, 1),
                        (tree, 2, 0), (tree, 3, 1), (mixed, 3, 1)):
        before = _tapes()
        reps = fastcopy.replicate(x, n)
        assert _tapes() - before == taped, (len(x), n)
        assert shape(reps, x) == shape([copy.deepcopy(x) for _ in range(n)], x)


def _deep_nest(depth):
    x = [1]
    for _ in range(depth):
        x = [x]
    return x


def _untapeable_sources():
    rec = []
    rec_t = (rec, [1])
    rec.append(rec_t)
    late = {"k%d" % i: {"a": [i], "b": i} for i in range(50)}
    return {
        "instance_first": [Plain(v=[2]), {"a": [1]}],
        "instance_last": [{"a": [1]}] * 3 + [Plain(v=[2])],
        "instance_late_in_dict": dict(late, zz={"p": Plain(v=[3])}),
        "tuple_key_last": dict(late, zz={(1, 2): [4]}),
        "str_subclass_key": {"a": [1], Key("b"): [2]},
        "set_last": [[1], {"s": {1, 2}}],
        "recursive_tuple": [[0], rec_t],
        "bound_method": [[1], Plain(v=1).__init__],
        "too_deep": _deep_nest(2100),
    }


class Key(str):
    pass


@pytest.mark.thread_unsafe(reason="the tape counters and the road switch are process-wide")
@pytest.mark.parametrize("name", sorted(_untapeable_sources()))
def test_replicate_walk_road_for_untapeable_sources(name):
    # the first replica's walk tells the source is not one a tape holds:
    # nothing is recorded, so nothing is recorded in vain either, wherever
    # the object that stops a tape lies -- even where a tape is forced
    x = _untapeable_sources()[name]
    # (the stdlib's recursion limit stops it on the deep one)
    deep = fastcopy.deepcopy if name == "too_deep" else copy.deepcopy
    ref = [deep(x) for _ in range(4)]
    for road in (False, "tape"):
        old = _walk_road(road)
        try:
            before = _fastcopy._replicate_road()
            reps = fastcopy.replicate(x, 4)
            after = _fastcopy._replicate_road()
        finally:
            _walk_road(old)
        assert after["tapes"] == before["tapes"], (name, road)
        assert after["wasted"] == before["wasted"], (name, road)
        if name != "too_deep":
            assert shape(reps, x) == shape(ref, x)
        else:
            for r in reps:
                depth, a, b = 0, r, x
                while isinstance(a, list) and len(a) == 1 and isinstance(a[0], list):
                    assert a is not b
                    depth, a, b = depth + 1, a[0], b[0]
                assert depth == 2100 and a == b == [1] and a is not b
