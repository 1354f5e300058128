"""fastcopy.cowdict: a dict whose copies share one table until written.

One suite runs against two implementations (dict, the oracle, and cowdict),
in the style of immutables' BaseMapTest; the rest checks what only cowdict
promises: isolation between copies, O(1) sharing, deepcopy snapshots, GC.
Plain unittest classes, so CPython's refleak runner can drive them too.
"""
import collections.abc
import copy
import gc
import json
import os
import pickle
import random
import sys
import threading
import unittest
import weakref

try:   # pytest-run-parallel's marker; plain unittest runs need no pytest
    import pytest
    thread_unsafe = pytest.mark.thread_unsafe
except ImportError:
    def thread_unsafe(reason=None):
        return lambda f: f

import fastcopy

cowdict = fastcopy.cowdict


class HashKeyCrasher:
    """A key whose __hash__ / __eq__ raise on demand."""

    def __init__(self, v, hash_error=False, eq_error=False):
        self.v, self.hash_error, self.eq_error = v, hash_error, eq_error

    def __hash__(self):
        if self.hash_error:
            raise ZeroDivisionError("hash")
        return hash(self.v)

    def __eq__(self, other):
        if self.eq_error:
            raise ZeroDivisionError("eq")
        return isinstance(other, HashKeyCrasher) and self.v == other.v


class Box:
    """A mutable, weakref-able value."""

    def __init__(self, v=None):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, Box) and self.v == other.v

    __hash__ = None


# --------------------------------------------------------------------------
# The same behaviour as dict, operation by operation
# --------------------------------------------------------------------------

class BaseDictBehaviour:
    M = None  # the mapping type under test

    def outcome(self, fn, *args):
        try:
            return ("ok", fn(*args))
        except Exception as e:  # noqa: BLE001
            # messages that name the type say cowdict where dict says dict
            msg = str(e).replace("fastcopy.cowdict", "dict").replace("cowdict", "dict")
            return ("raise", type(e), msg)

    def same(self, fn):
        """fn(M) must do to M what fn(dict) does to dict."""
        d = {"a": 1, "b": [2], 3: "c"}
        m = self.M(d)
        rd = self.outcome(fn, d)
        rm = self.outcome(fn, m)
        self.assertEqual(rm, rd)
        self.assertEqual(dict(m), d)
        self.assertEqual(list(m), list(d))

    def test_construct(self):
        self.assertEqual(dict(self.M()), {})
        self.assertEqual(dict(self.M({"a": 1})), {"a": 1})
        self.assertEqual(dict(self.M([("a", 1), ("b", 2)])), {"a": 1, "b": 2})
        self.assertEqual(dict(self.M(a=1, b=2)), {"a": 1, "b": 2})
        self.assertEqual(dict(self.M({"a": 1}, a=2, c=3)), {"a": 2, "c": 3})
        self.assertEqual(dict(self.M(self.M(x=1))), {"x": 1})
        self.assertEqual(dict(self.M(collections.OrderedDict(z=1))), {"z": 1})
        self.assertRaises(TypeError, self.M, 1)
        self.assertRaises(TypeError, self.M, {}, {})
        self.assertRaises(ValueError, self.M, [(1, 2, 3)])
        self.assertRaises(TypeError, self.M, [1])

    def test_getitem_get_contains(self):
        self.same(lambda d: d["a"])
        self.same(lambda d: d["zz"])
        self.same(lambda d: d[(1, 2)])
        self.same(lambda d: d[[1]])
        self.same(lambda d: d.get("a"))
        self.same(lambda d: d.get("zz"))
        self.same(lambda d: d.get("zz", 5))
        self.same(lambda d: d.get())
        self.same(lambda d: d.get(1, 2, 3))
        self.same(lambda d: d.get([1]))
        self.same(lambda d: "a" in d)
        self.same(lambda d: "q" in d)
        self.same(lambda d: [1] in d)
        self.same(lambda d: len(d))

    def test_keyerror_args(self):
        m = self.M({(1, 2): 3})
        with self.assertRaises(KeyError) as cm:
            m[(5, 6)]
        self.assertEqual(cm.exception.args, ((5, 6),))

    def test_setitem_delitem(self):
        self.same(lambda d: d.__setitem__("a", 9))
        self.same(lambda d: d.__setitem__("new", 9))
        self.same(lambda d: d.__setitem__([1], 9))
        self.same(lambda d: d.__delitem__("a"))
        self.same(lambda d: d.__delitem__("zz"))
        self.same(lambda d: d.__delitem__([1]))

    def test_pop_popitem_setdefault(self):
        self.same(lambda d: d.pop("a"))
        self.same(lambda d: d.pop("zz"))
        self.same(lambda d: d.pop("zz", None))
        self.same(lambda d: d.pop())
        self.same(lambda d: d.pop([1], 0))
        self.same(lambda d: d.popitem())
        self.same(lambda d: (d.popitem(), d.popitem(), d.popitem(), d.popitem()))
        self.same(lambda d: d.setdefault("a", 5))
        self.same(lambda d: d.setdefault("n", 5))
        self.same(lambda d: d.setdefault("n"))
        self.same(lambda d: d.setdefault([1], 5))
        self.same(lambda d: d.setdefault())

    def test_update_forms(self):
        self.same(lambda d: d.update({"a": 0, "z": 1}))
        self.same(lambda d: d.update([("a", 0), ("z", 1)]))
        self.same(lambda d: d.update(a=0, z=1))
        self.same(lambda d: d.update({"a": 0}, z=1))
        self.same(lambda d: d.update(self.M(q=1)))
        self.same(lambda d: d.update(collections.UserDict(q=1)))
        self.same(lambda d: d.update(d))
        self.same(lambda d: d.update())
        self.same(lambda d: d.update(1))
        self.same(lambda d: d.update({}, {}))
        # dict keeps the items before a bad one: so must we
        self.same(lambda d: d.update([("p", 1), ("q", 2), (1, 2, 3)]))
        self.same(lambda d: d.update([("p", 1), 5]))
        self.same(lambda d: d.update([("p", 1), ([], 2)]))

    def test_or_ior(self):
        self.same(lambda d: dict(d | {"a": 0, "z": 1}))
        self.same(lambda d: dict({"a": 0, "z": 1} | d))
        self.same(lambda d: d | 1)
        self.same(lambda d: d | [("x", 1)])
        self.same(lambda d: d.__ior__([("x", 1)]) is d)
        self.same(lambda d: d.__ior__(1))
        m = self.M(a=1)
        m |= {"b": 2}
        self.assertEqual(dict(m), {"a": 1, "b": 2})
        self.assertIsInstance(m, self.M)
        self.assertIsInstance(m | {}, self.M)

    def test_clear_copy(self):
        self.same(lambda d: d.clear())
        self.same(lambda d: dict(d.copy()))
        self.same(lambda d: type(d.copy()) is type(d))

    def test_views(self):
        self.same(lambda d: list(d.keys()))
        self.same(lambda d: list(d.values()))
        self.same(lambda d: list(d.items()))
        self.same(lambda d: d.keys() & {"a", "x"})
        self.same(lambda d: d.keys() | {"x"})
        self.same(lambda d: d.keys() ^ {"a", "x"})
        self.same(lambda d: d.keys() - {"a"})
        self.same(lambda d: {"a", "x"} & d.keys())
        self.same(lambda d: {"a", "x"} - d.keys())
        self.same(lambda d: d.keys() == {"a", "b", 3})
        self.same(lambda d: d.keys() <= {"a", "b", 3, 4})
        self.same(lambda d: d.keys() > {"a"})
        self.same(lambda d: d.keys() == ["a", "b", 3])
        self.same(lambda d: d.keys().isdisjoint({"q"}))
        self.same(lambda d: d.keys().isdisjoint(["a"]))
        self.same(lambda d: ("a", 1) in d.items())
        self.same(lambda d: ("a", 2) in d.items())
        self.same(lambda d: ([1], 2) in d.items())
        self.same(lambda d: "a" in d.items())
        self.same(lambda d: [2] in d.values())
        self.same(lambda d: 7 in d.values())
        self.same(lambda d: "a" in d.keys())
        self.same(lambda d: len(d.items()))
        self.same(lambda d: list(reversed(d)))
        self.same(lambda d: list(reversed(d.keys())))
        self.same(lambda d: list(reversed(d.values())))
        self.same(lambda d: list(reversed(d.items())))
        self.same(lambda d: dict(d.keys().mapping))
        self.same(lambda d: hash(d.keys()))
        self.same(lambda d: d.values() == d.values())

    def test_view_abcs(self):
        m = self.M(a=1)
        self.assertIsInstance(m, collections.abc.MutableMapping)
        self.assertIsInstance(m.keys(), collections.abc.KeysView)
        self.assertIsInstance(m.values(), collections.abc.ValuesView)
        self.assertIsInstance(m.items(), collections.abc.ItemsView)

    def test_views_are_live(self):
        m = self.M(a=1)
        k, v, i = m.keys(), m.values(), m.items()
        m["b"] = 2
        self.assertEqual(list(k), ["a", "b"])
        self.assertEqual(list(v), [1, 2])
        self.assertEqual(list(i), [("a", 1), ("b", 2)])
        del m["a"]
        self.assertEqual(len(k), 1)

    def test_iteration_order(self):
        m = self.M()
        for k in [5, 3, "x", 1, (1,)]:
            m[k] = k
        del m[3]
        m[3] = 0
        self.assertEqual(list(m), [5, "x", 1, (1,), 3])

    def test_mutation_during_iteration(self):
        for view in (lambda m: m, dict.keys, dict.values, dict.items):
            view = {dict.keys: lambda m: m.keys(), dict.values: lambda m: m.values(),
                    dict.items: lambda m: m.items()}.get(view, view)
            m = self.M(a=1, b=2)
            it = iter(view(m))
            next(it)
            m["c"] = 3
            with self.assertRaisesRegex(RuntimeError, "changed size during iteration"):
                next(it)
            with self.assertRaisesRegex(RuntimeError, "changed size"):
                next(it)  # sticky, like dict's
        m = self.M(a=1, b=2)
        it = reversed(m)
        next(it)
        del m["a"]
        with self.assertRaisesRegex(RuntimeError, "changed size during iteration"):
            next(it)

    def test_value_replacement_during_iteration(self):
        m = self.M(a=1, b=2, c=3)
        for k in m:
            m[k] = m[k] * 10
        self.assertEqual(dict(m), {"a": 10, "b": 20, "c": 30})
        m = self.M(a=1, b=2, c=3)
        seen = []
        for k, v in m.items():
            seen.append(v)
            m["c"] = 99
        self.assertEqual(seen, [1, 2, 99])

    def test_exhausted_iterator_stays_exhausted(self):
        m = self.M(a=1)
        it = iter(m)
        self.assertEqual(list(it), ["a"])
        m["b"] = 2
        self.assertEqual(list(it), [])

    def test_length_hint(self):
        import operator
        m = self.M(a=1, b=2)
        it = iter(m)
        self.assertEqual(operator.length_hint(it), 2)
        next(it)
        self.assertEqual(operator.length_hint(it), 1)

    def test_equality(self):
        m = self.M(a=1, b=[2])
        self.assertTrue(m == {"a": 1, "b": [2]})
        self.assertTrue({"a": 1, "b": [2]} == m)
        self.assertTrue(m == self.M(b=[2], a=1))
        self.assertFalse(m != {"a": 1, "b": [2]})
        self.assertTrue(m != {"a": 1})
        self.assertFalse(m == [("a", 1)])
        self.assertTrue(m == collections.UserDict(a=1, b=[2]))
        with self.assertRaises(TypeError):
            m < m  # noqa: B015
        nan = float("nan")
        self.assertEqual(self.M(x=nan), {"x": nan})

    def test_fromkeys(self):
        self.assertEqual(dict(self.M.fromkeys("abc")), dict.fromkeys("abc"))
        self.assertEqual(dict(self.M.fromkeys("abc", 0)), dict.fromkeys("abc", 0))
        self.assertIsInstance(self.M.fromkeys("a"), self.M)
        self.assertRaises(TypeError, self.M.fromkeys, 1)
        self.assertRaises(TypeError, self.M.fromkeys, [[1]])

    def test_unhashable(self):
        self.assertRaises(TypeError, hash, self.M())

    def test_hash_eq_errors_leave_it_unchanged(self):
        stored = HashKeyCrasher(1)
        m = self.M({stored: 1, "a": 2})
        before = list(m.items())

        def eq_fails(fn):
            def run():
                stored.eq_error = True
                try:
                    fn()
                finally:
                    stored.eq_error = False
            return run

        for op in (lambda: m.__setitem__(HashKeyCrasher(2, hash_error=True), 0),
                   lambda: m.__getitem__(HashKeyCrasher(2, hash_error=True)),
                   lambda: m.__delitem__(HashKeyCrasher(2, hash_error=True)),
                   lambda: m.setdefault(HashKeyCrasher(2, hash_error=True), 0),
                   eq_fails(lambda: m.pop(HashKeyCrasher(1))),
                   eq_fails(lambda: m.__delitem__(HashKeyCrasher(1))),
                   eq_fails(lambda: m.__setitem__(HashKeyCrasher(1), 0)),
                   eq_fails(lambda: m.update({HashKeyCrasher(1): 0}))):
            c = m.copy()
            self.assertRaises(ZeroDivisionError, op)
            self.assertEqual(list(m.items()), before)
            self.assertEqual(list(c.items()), before)

    def test_pickle_json(self):
        m = self.M(a=1, b=[1, 2], c={"d": (1, 2)})
        for proto in range(pickle.HIGHEST_PROTOCOL + 1):
            r = pickle.loads(pickle.dumps(m, proto))
            self.assertIs(type(r), self.M)
            self.assertEqual(r, m)
        self.assertEqual(json.loads(json.dumps(dict(m))), json.loads(json.dumps(dict(m))))
        self.assertEqual(json.dumps(dict(m)), json.dumps(dict({"a": 1, "b": [1, 2], "c": {"d": (1, 2)}})))
        r = self.M()
        r["self"] = r
        r2 = pickle.loads(pickle.dumps(r))
        self.assertIs(r2["self"], r2)

    def test_unpacking(self):
        m = self.M(a=1)
        self.assertEqual({**m}, {"a": 1})
        self.assertEqual(dict(**m), {"a": 1})

        def f(**kw):
            return kw
        self.assertEqual(f(**m), {"a": 1})

    def test_match_mapping(self):
        m = self.M(a=1)
        match m:
            case {"a": x}:
                self.assertEqual(x, 1)
            case _:
                self.fail("cowdict must match a mapping pattern")

    def test_class_getitem(self):
        self.assertEqual(self.M[str, int].__origin__, self.M)

    def test_repr_recursive(self):
        m = self.M(a=1)
        m["self"] = m
        r = repr(m)
        self.assertIn("...", r)
        self.assertIn("'a': 1", r)


class DictBehaviourTest(BaseDictBehaviour, unittest.TestCase):
    M = dict


class CowdictBehaviourTest(BaseDictBehaviour, unittest.TestCase):
    M = cowdict

    def test_repr(self):
        self.assertEqual(repr(cowdict(a=1)), "cowdict({'a': 1})")
        self.assertEqual(repr(cowdict()), "cowdict({})")
        self.assertEqual(repr(cowdict(a=1).keys()), "cowdict_keys(['a'])")
        self.assertEqual(repr(cowdict(a=1).items()), "cowdict_items([('a', 1)])")
        self.assertEqual(repr(cowdict(a=1).values()), "cowdict_values([1])")

    def test_not_a_dict(self):
        self.assertFalse(isinstance(cowdict(), dict))
        self.assertEqual(cowdict.__module__, "fastcopy")
        with self.assertRaises(TypeError):
            class Sub(cowdict):  # noqa: F841
                pass
        with self.assertRaises(TypeError):
            type(cowdict().keys())()

    def test_init_again_updates(self):
        m = cowdict(a=1)
        m.__init__({"b": 2})
        self.assertEqual(dict(m), {"a": 1, "b": 2})


# --------------------------------------------------------------------------
# Copies: isolation, sharing, deepcopy snapshots
# --------------------------------------------------------------------------

def _copiers():
    return [
        ("copy()", lambda m: m.copy()),
        ("copy.copy", copy.copy),
        ("copy.deepcopy", copy.deepcopy),
        ("fastcopy.deepcopy", fastcopy.deepcopy),
        ("fastcopy.copy", fastcopy.copy),
        ("cowdict()", cowdict),
    ]


class CopyIsolationTest(unittest.TestCase):
    def test_writes_never_leak(self):
        # each failure names its copier (msg=), not through subTest: pytest-run-parallel runs
        # this method in two threads on one TestCase, whose subTest state the threads share
        # (one thread's exit cleared it under the other: 'NoneType' has no 'test_case')
        for name, cp in _copiers():
            a = cowdict(x=1, y=2)
            b = cp(a)
            self.assertIs(type(b), cowdict, msg=name)
            self.assertEqual(b, a, msg=name)
            b["x"] = 10
            del b["y"]
            b["z"] = 3
            self.assertEqual(dict(a), {"x": 1, "y": 2}, msg=name)
            a["w"] = 0
            self.assertEqual(dict(b), {"x": 10, "z": 3}, msg=name)
            a.clear()
            self.assertEqual(dict(b), {"x": 10, "z": 3}, msg=name)

    def test_every_write_operation_copies(self):
        ops = [
            lambda m: m.__setitem__("x", 0), lambda m: m.__delitem__("x"),
            lambda m: m.pop("x"), lambda m: m.popitem(), lambda m: m.setdefault("n", 1),
            lambda m: m.update(n=1), lambda m: m.__ior__({"n": 1}), lambda m: m.clear(),
            lambda m: m.__init__(n=1),
        ]
        for op in ops:
            a = cowdict(x=1, y=2)
            b = a.copy()
            op(b)
            self.assertEqual(dict(a), {"x": 1, "y": 2})
            b2 = a.copy()
            op(a)
            self.assertEqual(dict(b2), {"x": 1, "y": 2})

    def test_views_and_iterators_see_only_their_handle(self):
        a = cowdict(x=1, y=2)
        b = a.copy()
        ka, ib = a.keys(), iter(b.items())
        b["x"] = 100
        self.assertEqual(list(ka), ["x", "y"])
        self.assertEqual(list(a.values()), [1, 2])
        self.assertEqual(list(ib), [("x", 100), ("y", 2)])
        # an iterator over a survives its handle copying its table away
        a = cowdict(x=1, y=2, z=3)
        it = iter(a.items())
        self.assertEqual(next(it), ("x", 1))
        c = a.copy()
        a["y"] = 20   # shared: a gets its own table, same order
        self.assertEqual(list(it), [("y", 20), ("z", 3)])
        self.assertEqual(dict(c), {"x": 1, "y": 2, "z": 3})
        it = reversed(a)
        self.assertEqual(next(it), "z")
        a["z"] = 30
        self.assertEqual(list(it), ["y", "x"])

    def test_copy_of_empty_then_write(self):
        a = cowdict()
        b = a.copy()
        b["k"] = 1
        self.assertEqual(len(a), 0)

    def test_sizeof_shares_the_table(self):
        a = cowdict.fromkeys(range(1000))
        alone = sys.getsizeof(a)
        b = a.copy()
        self.assertLess(sys.getsizeof(b), alone)
        self.assertLess(sys.getsizeof(a) + sys.getsizeof(b), alone * 1.2)
        self.assertGreater(alone, sys.getsizeof({}))


class DeepcopyTest(unittest.TestCase):
    impls = (copy.deepcopy, fastcopy.deepcopy)

    def test_immutable_values_are_shared(self):
        t = (1, "s", (2.5, None), frozenset({1, 2}))
        for dc in self.impls:
            a = cowdict(a=1, b="x", c=t, d=b"y", e=1j, f=True, g=int, h=len)
            b = dc(a)
            self.assertEqual(b, a)
            self.assertIs(b["c"], t)
            b["a"] = 2
            self.assertEqual(a["a"], 1)

    def test_mutable_values_are_snapshotted(self):
        for dc in self.impls:
            inner = [1, 2]
            shared = {"k": inner}
            a = cowdict(x=inner, y=shared, z=(inner,), n=5)
            b = dc(a)
            self.assertEqual(b, a)
            self.assertIsNot(b["x"], inner)
            self.assertIs(b["y"]["k"], b["x"])    # aliasing kept through memo
            self.assertIs(b["z"][0], b["x"])
            inner.append(3)
            self.assertEqual(b["x"], [1, 2])
            self.assertEqual(list(b), ["x", "y", "z", "n"])

    def test_matches_stdlib_shape_of_dict(self):
        lst = [1]
        src = {"a": lst, "b": lst, "c": (lst, 2), "d": {"e": lst}}
        for dc in self.impls:
            ref = copy.deepcopy(src)
            got = dc(cowdict(src))
            self.assertEqual(dict(got), ref)
            self.assertIs(got["a"], got["b"])
            self.assertIs(got["c"][0], got["a"])
            self.assertIs(got["d"]["e"], got["a"])

    def test_nested_cowdicts(self):
        for dc in self.impls:
            inner = cowdict(p=1)
            a = cowdict(i=inner, j=inner)
            b = dc(a)
            self.assertIsNot(b["i"], inner)
            self.assertIs(b["i"], b["j"])
            b["i"]["p"] = 2
            self.assertEqual(inner["p"], 1)
            inner["q"] = 0
            self.assertNotIn("q", b["i"])

    def test_cycle_through_cowdict(self):
        for dc in self.impls:
            a = cowdict()
            a["self"] = a
            a["lst"] = [a]
            b = dc(a)
            self.assertIs(b["self"], b)
            self.assertIs(b["lst"][0], b)

    def test_memo_protocol(self):
        a = cowdict(x=[1])
        memo = {}
        b = copy.deepcopy(a, memo)
        self.assertIs(memo[id(a)], b)
        self.assertIn(a, memo[id(memo)])  # the caller kept it alive
        self.assertIs(copy.deepcopy(a, memo), b)
        a2 = cowdict(x=1)
        memo = {}
        b2 = copy.deepcopy(a2, memo)
        self.assertIs(memo[id(a2)], b2)
        self.assertIsNot(b2, a2)

    def test_mutable_keys_are_copied(self):
        class K:
            def __init__(self):
                self.state = [1]

            def __hash__(self):
                return 1

            def __eq__(self, o):
                return isinstance(o, K)

        k = K()
        for dc in self.impls:
            a = cowdict({k: 1, "b": 2})
            b = dc(a)
            (k2, v), = [(kk, vv) for kk, vv in b.items() if isinstance(kk, K)]
            self.assertIsNot(k2, k)
            self.assertEqual(list(b.values()), [1, 2])

    @thread_unsafe(reason='global state: replaces copy.deepcopy')
    def test_deepcopy_uses_patched_copy_deepcopy(self):
        calls = []
        orig = copy.deepcopy

        def spy(x, memo=None, _nil=[]):  # noqa: B006
            calls.append(type(x))
            return orig(x, memo)

        copy.deepcopy = spy
        try:
            cowdict(a=[1]).__deepcopy__({})
        finally:
            copy.deepcopy = orig
        self.assertEqual(calls, [list])

    @thread_unsafe(reason='global state: patches the copy module')
    def test_under_patch(self):
        if not hasattr(fastcopy, "patched"):
            self.skipTest("fastcopy.patched not available")
        inner = [1]
        a = cowdict(x=inner, y=inner, z=cowdict(w=[2]))
        with fastcopy.patched():
            b = copy.deepcopy(a)
        self.assertIs(b["x"], b["y"])
        self.assertIsNot(b["x"], inner)
        self.assertEqual(b, a)

    @thread_unsafe(reason='global state: replaces copy.deepcopy')
    def test_all_immutable_deepcopy_never_calls_copy(self):
        calls = []
        orig = copy.deepcopy
        copy.deepcopy = lambda *a, **k: calls.append(a) or orig(*a, **k)
        try:
            a = cowdict.fromkeys(range(100), (1, "x"))
            b = a.__deepcopy__({})
        finally:
            copy.deepcopy = orig
        self.assertEqual(calls, [])
        self.assertEqual(b, a)

    @thread_unsafe(reason='global state: replaces copy.deepcopy')
    def test_mutable_count_follows_writes(self):
        calls = []
        orig = copy.deepcopy

        def spy(x, memo=None, _nil=[]):  # noqa: B006
            calls.append(x)
            return orig(x, memo)

        a = cowdict(a=1)
        a["b"] = [1]
        a["b"] = 2          # replaced: nothing mutable left
        a["c"] = [3]
        del a["c"]
        a.update(d=[4])
        a.pop("d")
        a.setdefault("e", [5])
        a.popitem()
        copy.deepcopy = spy
        try:
            a.__deepcopy__({})
        finally:
            copy.deepcopy = orig
        self.assertEqual(calls, [])


# --------------------------------------------------------------------------
# Random operation sequences over a family of copies, each against its model
# --------------------------------------------------------------------------

class RandomModelTest(unittest.TestCase):
    STEPS = int(os.environ.get("COWDICT_STEPS", "1500"))

    def test_random_family(self):
        seed = int(os.environ.get("COWDICT_SEED", random.randrange(2**32)))
        print(f"\ncowdict random seed: {seed} (COWDICT_SEED={seed} to replay)")
        rng = random.Random(seed)
        keys = list(range(12)) + ["a", "b", (1, 2), 2.5]

        def value():
            r = rng.random()
            return rng.randrange(100) if r < 0.5 else [rng.randrange(9)] if r < 0.8 else (1, "t")

        family = [(cowdict(), {})]
        copiers = [lambda m: m.copy(), copy.copy, copy.deepcopy, fastcopy.deepcopy,
                   cowdict, lambda m: m | {}]
        live_iters = []
        for step in range(self.STEPS):
            i = rng.randrange(len(family))
            m, d = family[i]
            op = rng.randrange(14)
            k = rng.choice(keys)
            ctx = f"seed={seed} step={step} op={op} key={k!r}"
            try:
                if op <= 3:
                    v = value()
                    m[k] = v
                    d[k] = v
                elif op == 4:
                    self.assertEqual(k in m, k in d, ctx)
                    if k in d:
                        del m[k]
                        del d[k]
                    else:
                        self.assertRaises(KeyError, m.__delitem__, k)
                elif op == 5:
                    self.assertEqual(m.pop(k, "D"), d.pop(k, "D"), ctx)
                elif op == 6:
                    if d:
                        self.assertEqual(m.popitem(), d.popitem(), ctx)
                    else:
                        self.assertRaises(KeyError, m.popitem)
                elif op == 7:
                    v = value()
                    self.assertEqual(m.setdefault(k, v), d.setdefault(k, v), ctx)
                elif op == 8:
                    upd = {rng.choice(keys): value() for _ in range(3)}
                    m.update(upd)
                    d.update(upd)
                elif op == 9 and len(family) < 12:
                    cp = rng.choice(copiers)
                    c = cp(m)
                    dc = copy.deepcopy(d) if cp in (copy.deepcopy, fastcopy.deepcopy) else dict(d)
                    family.append((c, dc))
                elif op == 10 and rng.random() < 0.1:
                    m.clear()
                    d.clear()
                elif op == 11:
                    live_iters.append((iter(m.items()), iter(list(d.items())), m, len(d)))
                elif op == 12 and live_iters:
                    it, ref, owner, n = live_iters.pop(rng.randrange(len(live_iters)))
                    if len(owner) != n:
                        with self.assertRaises(RuntimeError):
                            next(it)
                elif op == 13 and rng.random() < 0.2 and len(family) > 1:
                    family.pop(i)
                    continue
            except AssertionError:
                raise
            for fm, fd in family:
                self.assertEqual(list(fm.items()), list(fd.items()), ctx)
                self.assertEqual(len(fm), len(fd), ctx)


# --------------------------------------------------------------------------
# Threads, GC, reference leaks
# --------------------------------------------------------------------------

class ThreadTest(unittest.TestCase):
    @thread_unsafe(reason='global state: sets the switch interval')
    def test_concurrent_writes_to_copies(self):
        base = cowdict.fromkeys(range(2000), 0)
        nthreads, rounds = 8, 200
        barrier = threading.Barrier(nthreads)
        results, errors = [None] * nthreads, []

        def work(t):
            try:
                barrier.wait()
                mine = base.copy()
                for r in range(rounds):
                    mine[(t, r)] = r
                    mine[r] = t
                    other = mine.copy()
                    other[-1] = t
                    if r % 50 == 0:
                        mine = copy.deepcopy(mine)
                results[t] = mine
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        old = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        try:
            threads = [threading.Thread(target=work, args=(t,)) for t in range(nthreads)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        finally:
            sys.setswitchinterval(old)
        self.assertEqual(errors, [])
        for t, mine in enumerate(results):
            for r in range(rounds):
                self.assertEqual(mine[(t, r)], r)
                self.assertEqual(mine[r], t)
            self.assertNotIn(-1, mine)
            self.assertEqual(len(mine), 2000 + rounds)
        self.assertEqual(dict(base), dict.fromkeys(range(2000), 0))


class GCTest(unittest.TestCase):
    def test_cycle_is_collected(self):
        for make in (lambda m: m.__setitem__("self", m),
                     lambda m: m.__setitem__("box", Box(m)),
                     lambda m: m.__setitem__("view", m.keys()),
                     lambda m: m.__setitem__("it", iter(m)),
                     lambda m: m.__setitem__("rit", reversed(m))):
            m = cowdict()
            sentinel = Box()
            m["sentinel"] = sentinel
            make(m)
            c = m.copy()   # a second handle on the same table, also garbage
            wr = weakref.ref(sentinel)
            del m, c, sentinel
            gc.collect()
            self.assertIsNone(wr(), "cycle through a cowdict was not collected")

    def test_gc_referents(self):
        m = cowdict(a=1)
        self.assertTrue(gc.is_tracked(m))
        # The collector still reaches the contents, through the private table
        # holder; the shared dict itself is never handed out (issue 14: it
        # used to be, and mutating it changed every handle sharing it).
        refs = gc.get_referents(m)
        self.assertFalse(any(isinstance(r, dict) for r in refs))
        inner = [x for r in refs for x in gc.get_referents(r)]
        self.assertIn("a", inner)
        self.assertIn(1, inner)


class TableTrackingTest(unittest.TestCase):
    """I7 (src/cowdict.c): a table whose keys and values cannot be part of a cycle is not
    tracked by the collector, as CPython leaves such a dict untracked; anything that may be
    (any container but a tuple the collector has already untracked) tracks it for good."""

    @staticmethod
    def holder(m):
        (h,) = [r for r in gc.get_referents(m) if type(r).__name__ == "cowdict_table"]
        return h

    def assertTracked(self, m, tracked):
        self.assertEqual(gc.is_tracked(self.holder(m)), tracked)
        self.assertTrue(gc.is_tracked(m))

    def test_immutable_contents(self):
        plain_tuple = (1, "a", 2.5)
        gc.collect()                # CPython untracks tuples of atoms when it sees them
        self.assertFalse(gc.is_tracked(plain_tuple))
        for m in (cowdict(), cowdict(a=1), cowdict({i: str(i) for i in range(1000)}),
                  cowdict({"t": plain_tuple, b"x": None, 1.5: True, (1, 2): "k"})):
            self.assertTracked(m, False)
            self.assertTracked(m.copy(), False)
            self.assertTracked(copy.deepcopy(m), False)
            c = m.copy()
            c["more"] = "str"
            self.assertTracked(c, False)

    def test_containers_track_the_table(self):
        for value in ([], {}, set(), (1, []), Box(), lambda: None, cowdict()):
            for build in (lambda v: cowdict(x=v),
                          lambda v: cowdict({"x": v}),
                          lambda v: cowdict([("x", v)])):
                self.assertTracked(build(value), True)
            m = cowdict(a=1)
            c = m.copy()
            c["x"] = value
            self.assertTracked(c, True)
            self.assertTracked(m, False)
            m = cowdict(a=1)
            m.setdefault("x", value)
            self.assertTracked(m, True)
            m = cowdict(a=1)
            m.update(cowdict(y=value))
            self.assertTracked(m, True)
            m = cowdict(a=1)
            m |= {"z": value}
            self.assertTracked(m, True)
            # a key too
            if isinstance(value, tuple) or type(value).__hash__ is not None:
                try:
                    m = cowdict({value: 1})
                except TypeError:
                    continue
                self.assertTracked(m, True)

    def test_tracked_for_good(self):
        m = cowdict(a=[])
        del m["a"]
        self.assertTracked(m, True)     # as a dict stays tracked until a collection

    def test_cycles_through_a_tracked_table_are_collected(self):
        m = cowdict({i: str(i) for i in range(100)})
        self.assertTracked(m, False)
        sentinel = Box()
        m["box"] = Box(m)
        m["sentinel"] = sentinel
        self.assertTracked(m, True)
        wr = weakref.ref(sentinel)
        del m, sentinel
        gc.collect()
        self.assertIsNone(wr())

    def test_an_untracked_dict_value_tracks_the_table(self):
        inner = {}
        # through 3.13 an empty dict starts untracked; 3.14+ track every dict from birth (the
        # cowdict must track itself either way)
        self.assertEqual(gc.is_tracked(inner), sys.version_info >= (3, 14))
        m = cowdict(inner=inner)
        self.assertTracked(m, True)      # inner may get a container later: a cycle
        sentinel = Box()
        inner["m"] = m
        inner["s"] = sentinel
        wr = weakref.ref(sentinel)
        del m, inner, sentinel
        gc.collect()
        self.assertIsNone(wr())


class RefleakTest(unittest.TestCase):
    def check_no_leak(self, fn, rounds=200):
        val = Box()
        fn(val)
        gc.collect()
        before = sys.getrefcount(val)
        for _ in range(rounds):
            fn(val)
        gc.collect()
        self.assertEqual(sys.getrefcount(val) - before, 0)

    def test_operations_do_not_leak(self):
        def ops(v):
            a = cowdict(x=v, y=1)
            b = a.copy()
            b["x"] = v
            b["z"] = v
            a.setdefault("w", v)
            a.get("x")
            a.pop("x")
            b.update({"q": v}, r=v)
            b |= [("s", v)]
            c = copy.deepcopy(b)
            c = copy.deepcopy(cowdict(k=1))
            list(b.items())
            list(reversed(b.values()))
            b.keys() & {"x"}
            ("x", v) in b.items()
            pickle.loads(pickle.dumps(cowdict(a=1)))
            b == a
            b | a
            repr(b)
            try:
                a["missing"]
            except KeyError:
                pass
            try:
                b.update([(1, 2, 3)])
            except ValueError:
                pass
            it = iter(b)
            next(it)
            b["new"] = v
            try:
                next(it)
            except RuntimeError:
                pass
            del c
            b.popitem()
            b.clear()

        self.check_no_leak(ops)

    def test_table_not_leaked(self):
        import tracemalloc
        tracemalloc.start()
        try:
            base = cowdict.fromkeys(range(1000), 0)
            for _ in range(5):
                x = base.copy()
                x[0] = 1
            gc.collect()
            snap1 = tracemalloc.take_snapshot()
            for _ in range(200):
                x = base.copy()
                x[0] = 1
                y = copy.deepcopy(base)
                y[1] = 2
            del x, y
            gc.collect()
            snap2 = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
        grown = sum(s.size_diff for s in snap2.compare_to(snap1, "filename"))
        self.assertLess(grown, 200_000)


@unittest.skipUnless(hasattr(cowdict(), "_debug_state"), "needs FASTCOPY_DEBUG=1 build")
class WhiteBoxTest(unittest.TestCase):
    def test_copy_shares_and_write_unshares(self):
        a = cowdict(x=1)
        b = a.copy()
        self.assertEqual(a._debug_state()[0], b._debug_state()[0])
        c = copy.deepcopy(a)
        self.assertEqual(a._debug_state()[0], c._debug_state()[0])
        b["x"] = 2
        self.assertNotEqual(a._debug_state()[0], b._debug_state()[0])
        t = a._debug_state()[0]
        del c
        a["y"] = 1      # now unique again: written in place
        self.assertEqual(a._debug_state()[0], t)

    def test_counts(self):
        a = cowdict(a=1, b=[1], c=(1, [2]))
        self.assertEqual(a._debug_state()[1], 2)
        a["b"] = 0
        self.assertEqual(a._debug_state()[1], 1)


if __name__ == "__main__":
    unittest.main()
