"""The memo a user can see (SEMANTICS.md 1.3 step 1 and 8, 1.6, 1.7)."""
import collections
import sys

import pytest

from shape import Case, assert_equivalent, number

PRE314 = sys.version_info < (3, 14)


def test_keys_values_and_keepalive_post_order(impl):
    inner1 = [1]
    inner3 = [3]
    tup = (2, inner3)
    x = [inner1, tup]
    memo = {}
    y = impl.deepcopy(x, memo)
    assert len(memo) == 5
    assert memo[id(x)] is y
    assert memo[id(inner1)] is y[0]
    assert memo[id(inner3)] is y[1][1]
    assert memo[id(tup)] is y[1]
    keep = memo[id(memo)]
    assert type(keep) is list
    assert [id(o) for o in keep] == [id(inner1), id(inner3), id(tup), id(x)]
    assert all(isinstance(k, int) for k in memo)


def test_no_entries_for_atomics_identity_and_atomic_tuples(impl):
    class Self:
        def __deepcopy__(self, memo):
            return self

    class StrReduce:
        def __reduce__(self):
            return "StrReduce"
    x = [1, "s", None, 2.5, (1, (2, "t")), Self(), StrReduce(), len, frozenset and ()]
    memo = {}
    impl.deepcopy(x, memo)
    assert set(memo) == {id(x), id(memo)}
    assert memo[id(memo)] == [x]
    memo = {}
    impl.deepcopy([(1, 2), 3], memo)
    assert len(memo) == 2  # test_deepcopy_dont_memo_immutable


def test_memo_picture_equiv():
    def scenario(impl):
        a = [1]
        b = {"a": a}
        t = (a, b, (1, 2))
        x = [a, b, t, t, [t], {1: a}]
        memo = {}
        return Case(x, lambda: impl.deepcopy(x, memo), memo)
    assert_equivalent(scenario)


@pytest.mark.skipif(not PRE314, reason="3.14 checks atomics before the memo")
def test_preseeded_memo_entries(impl):
    n = 10 ** 20
    memo = {id(n): "big"}
    assert impl.deepcopy(n, memo) == "big"
    memo = {id(5): "five"}
    assert impl.deepcopy(5, memo) == "five"
    inner = [1]
    memo = {id(inner): "X"}
    assert impl.deepcopy([inner, inner], memo) == ["X", "X"]
    t = (1, 2)
    memo = {id(t): "T"}
    assert impl.deepcopy([t], memo) == ["T"]


def test_preseeded_keepalive_list(impl):
    old = object()
    memo = {}
    memo[id(memo)] = [old]
    x = [[1]]
    impl.deepcopy(x, memo)
    assert memo[id(memo)][0] is old and len(memo[id(memo)]) == 3


def test_preseeded_keepalive_not_a_list_equiv():
    def scenario(impl):
        x = [[1]]
        memo = {}
        memo[id(memo)] = ()
        return Case(x, lambda: impl.deepcopy(x, memo), memo)
    assert assert_equivalent(scenario)["outcome"][:2] == ("raise", "AttributeError")


def test_deepcopy_memo_as_its_own_source_equiv():
    # the memo is labelled by memo_picture (its keys are ids, which differ
    # between runs), so it is not passed as the shape source
    def scenario(impl):
        m = {}
        return Case(None, lambda: impl.deepcopy(m, m), m)
    pic = assert_equivalent(scenario)
    assert pic["outcome"][:2] == ("raise", "AttributeError")

    def scenario2(impl):
        m = {"a": [1]}
        return Case(None, lambda: impl.deepcopy(m, m), m)
    assert_equivalent(scenario2)


@pytest.mark.parametrize("memo", [5, "s", [], ()], ids=["int", "str", "list", "tuple"])
def test_bad_memo_types_equiv(memo):
    def scenario(impl):
        x = [[1]]
        return Case(x, lambda: impl.deepcopy(x, memo))
    assert assert_equivalent(scenario)["outcome"][0] == "raise"


def _labeller(source):
    ids, keep = number(source)

    def label(k):
        if isinstance(k, int) and k in ids:
            return ("src", ids[k])
        return ("tmp",)
    return label, keep


def _logging_memo_classes(log, label):
    class SubMemo(dict):
        def get(self, k, default=None):
            log.append(("get", label(k)))
            return dict.get(self, k, default)

        def __setitem__(self, k, v):
            log.append(("set", label(k)))
            dict.__setitem__(self, k, v)

        def __getitem__(self, k):
            log.append(("getitem", label(k)))
            return dict.__getitem__(self, k)

    class MappingMemo:
        """Only .get, __setitem__, __getitem__ -- and __contains__, which 3.15's copy.py asks
        first (`if d in memo: return memo[d]`) -- plus items() for the test."""

        def __init__(self):
            self.d = {}

        def __contains__(self, k):
            log.append(("in", label(k)))
            return k in self.d

        def get(self, k, default=None):
            log.append(("get", label(k)))
            return self.d.get(k, default)

        def __setitem__(self, k, v):
            log.append(("set", label(k)))
            self.d[k] = v

        def __getitem__(self, k):
            log.append(("getitem", label(k)))
            return self.d[k]

        def items(self):
            return self.d.items()
    return SubMemo, MappingMemo


def _memo_source():
    class Obj:
        pass
    o = Obj()
    a = [1, 2]
    o.a = a
    o.t = (a, 3)
    return [a, o, {"k": a, "o": o}, (1, 2), a]


@pytest.mark.parametrize("kind", ["dict-subclass", "mapping"])
def test_custom_memo_calls_equiv(kind):
    def scenario(impl):
        x = _memo_source()
        log = []
        label, keep = _labeller(x)
        SubMemo, MappingMemo = _logging_memo_classes(log, label)
        memo = SubMemo() if kind == "dict-subclass" else MappingMemo()
        return Case(x, lambda: impl.deepcopy(x, memo), memo, log)
    assert_equivalent(scenario)


@pytest.mark.parametrize("kind", ["dict-subclass", "mapping", "defaultdict"])
def test_custom_memo_works(impl, kind):
    x = _memo_source()
    log = []
    SubMemo, MappingMemo = _logging_memo_classes(log, lambda k: k)
    memo = {"dict-subclass": SubMemo, "mapping": MappingMemo,
            "defaultdict": lambda: collections.defaultdict(list)}[kind]()
    y = impl.deepcopy(x, memo)
    assert y[0] is y[4] and y[0] is not x[0]
    assert y[1].a is y[0] and y[2]["k"] is y[0] and y[2]["o"] is y[1]
    if kind == "defaultdict":
        # stdlib quirk: _deepcopy_tuple probes memo[id(x)] after copying the
        # items, so default_factory answers with a fresh [] for the tuple
        assert y[1].t == [] and type(y[1].t) is list
    else:
        assert y[1].t[0] is y[0]
    if kind != "defaultdict":
        assert log  # the mapping's own methods were called
    d = memo.d if kind == "mapping" else memo
    assert d[id(x)] is y


def test_defaultdict_memo_equiv():
    def scenario(impl):
        x = _memo_source()
        memo = collections.defaultdict(list)
        return Case(x, lambda: impl.deepcopy(x, memo), memo)
    assert_equivalent(scenario)


def test_memo_changes_by_hooks_seen_immediately(impl):
    shared = [1]
    replacement = ["replacement"]

    class Adder:
        def __deepcopy__(self, memo):
            memo[id(shared)] = replacement
            return "adder"

    class Deleter:
        def __deepcopy__(self, memo):
            del memo[id(shared)]
            return "deleter"
    y = impl.deepcopy([Adder(), shared, shared])
    assert y[1] is replacement and y[2] is replacement
    y = impl.deepcopy([shared, Deleter(), shared])
    assert y[0] == [1] and y[2] == [1] and y[0] is not y[2]


def test_hook_reads_parent_from_memo(impl):
    seen = []

    class Reader:
        def __init__(self, parent):
            self.parent = parent

        def __deepcopy__(self, memo):
            seen.append(memo.get(id(self.parent)))
            return "r"
    x = [1]
    x.append(Reader(x))
    y = impl.deepcopy(x)
    assert seen[0] is y  # the new list is memoized before its items are copied
    d = {}
    d["r"] = Reader(d)
    y = impl.deepcopy(d)
    assert seen[1] is y


def test_hook_memo_mutation_equiv():
    def scenario(impl):
        shared = [1]
        other = {"o": 1}

        class Meddler:
            def __deepcopy__(self, memo):
                memo[id(other)] = "meddled"
                memo.pop(id(shared), None)
                memo["junk-key"] = 1
                return [len(memo)]
        x = [shared, other, Meddler(), shared, other, (shared,)]
        memo = {}
        return Case(x, lambda: impl.deepcopy(x, memo), memo)
    assert_equivalent(scenario)


def test_hook_replaces_keepalive_equiv():
    def scenario(impl):
        class K:
            def __deepcopy__(self, memo):
                memo[id(memo)] = []
                return K()
        x = [[1], K(), [2]]
        memo = {}
        return Case(x, lambda: impl.deepcopy(x, memo), memo)
    assert_equivalent(scenario)


def test_memo_none_uses_fresh_dict(impl):
    memos = []

    class H:
        def __deepcopy__(self, memo):
            memos.append(memo)
            return H.__new__(H)
    impl.deepcopy(H())
    impl.deepcopy(H(), None)
    assert memos[0] is not memos[1] and type(memos[0]) is dict
