"""Hooks that mutate what is being copied, raise, recurse or return junk
(SEMANTICS.md 1.3 step 8, 1.6, section 2)."""
import copy
import os
import textwrap

import pytest

from shape import Case, assert_equivalent


class Popper:
    """Deep-copying it pops the tail of the list it lives in."""

    def __init__(self, target, n=1):
        self.target = target
        self.n = n

    def __deepcopy__(self, memo):
        for _ in range(self.n):
            self.target.pop()
        return "A"


class Appender:
    def __init__(self, target):
        self.target = target

    def __deepcopy__(self, memo):
        self.target.append("appended")
        return "Ap"


def test_pop_during_list_copy(impl):
    x = [1, 2, 3, 4, None, 5, 6, 7]
    x[4] = Popper(x)
    assert impl.deepcopy(x) == [1, 2, 3, 4, "A", 5, 6]
    assert len(x) == 7


def test_pop_everything_after(impl):
    x = [1, None, 2, 3, 4]
    x[1] = Popper(x, n=3)
    assert impl.deepcopy(x) == [1, "A"]


def test_append_during_list_copy(impl):
    x = [1, None]
    x[1] = Appender(x)
    assert impl.deepcopy(x) == [1, "Ap", "appended"]
    assert x[2:] == ["appended"]


def test_clear_and_refill_list_during_copy(impl):
    class Refill:
        def __init__(self, target):
            self.target = target

        def __deepcopy__(self, memo):
            self.target[:] = [[9], [8], [7]]
            return "R"
    x = [None, 1, 2]
    x[0] = Refill(x)
    y = impl.deepcopy(x)
    assert y == ["R", [8], [7]]
    assert y[1] is not x[1]


def test_list_mutation_equiv():
    def scenario(impl):
        x = [1, [2], None, [3], [4]]
        x[2] = Popper(x, n=2)
        x.append(Appender(x))
        memo = {}
        return Case(x, lambda: impl.deepcopy(x, memo), memo)
    assert_equivalent(scenario)


class DictGrower:
    def __init__(self, target):
        self.target = target

    def __deepcopy__(self, memo):
        self.target["new-key"] = 1
        return "G"


class DictReplacer:
    def __init__(self, target, key):
        self.target = target
        self.key = key

    def __deepcopy__(self, memo):
        self.target[self.key] = ["replaced"]
        return "R"


def test_dict_size_change_raises(impl):
    x = {"a": None, "b": 2}
    x["a"] = DictGrower(x)
    with pytest.raises(RuntimeError) as ei:
        impl.deepcopy(x)
    assert str(ei.value) == "dictionary changed size during iteration"


def test_dict_delete_raises(impl):
    class Deleter:
        def __init__(self, t):
            self.t = t

        def __deepcopy__(self, memo):
            del self.t["b"]
            return "D"
    x = {"a": None, "b": 2, "c": 3}
    x["a"] = Deleter(x)
    with pytest.raises(RuntimeError) as ei:
        impl.deepcopy(x)
    assert str(ei.value) == "dictionary changed size during iteration"


def test_dict_value_replacement_no_error(impl):
    x = {"a": None, "b": [1], "c": 3}
    x["a"] = DictReplacer(x, "b")
    y = impl.deepcopy(x)
    assert y == {"a": "R", "b": ["replaced"], "c": 3}
    assert y["b"] is not x["b"]


def test_dict_mutation_equiv():
    def scenario(impl):
        x = {"a": None, "b": [1], "c": [3]}
        x["a"] = DictReplacer(x, "c")
        memo = {}
        return Case(x, lambda: impl.deepcopy(x, memo), memo)
    assert_equivalent(scenario)

    def scenario2(impl):
        x = {"a": [0], "b": None, "c": [3]}
        x["b"] = DictGrower(x)
        memo = {}
        return Case(x, lambda: impl.deepcopy(x, memo), memo)
    assert assert_equivalent(scenario2)["outcome"][0] == "raise"


def test_mutating_hook_inside_reduce_listiter_equiv():
    class L(list):
        pass

    def scenario(impl):
        x = L([1, None, 3, 4])
        x[1] = Popper(x)
        return Case(x, lambda: impl.deepcopy(x))
    assert_equivalent(scenario)


def test_hook_dropping_last_reference_to_source(impl):
    """A hook that removes the only other reference to an element must not
    crash the copier (it has to hold its own references)."""
    class Dropper:
        def __init__(self, holder):
            self.holder = holder

        def __deepcopy__(self, memo):
            self.holder[:] = []
            return "dropped"
    for _ in range(3):
        x = [None, [1, 2], {"k": [3]}, (4, [5])]
        x[0] = Dropper(x)
        y = impl.deepcopy(x)
        assert y == ["dropped"]
        x = {"a": None, "b": [1]}

        class Repl:
            def __deepcopy__(self, memo, x=x):
                x["b"] = None  # drop the [1] while it may be next
                return "r"
        x["a"] = Repl()
        assert impl.deepcopy(x) == {"a": "r", "b": None}


# ---------------------------------------------------------------------------
# identity results, None results, call counts

def test_identity_results_not_memoized(impl):
    calls = []

    class Self:
        def __deepcopy__(self, memo):
            calls.append(1)
            return self
    o = Self()
    memo = {}
    y = impl.deepcopy([o, o, o], memo)
    assert y == [o, o, o] and all(e is o for e in y)
    assert len(calls) == 3
    assert id(o) not in memo


def test_none_result_memoized(impl):
    calls = []

    class N:
        def __deepcopy__(self, memo):
            calls.append(1)
            return None
    o = N()
    memo = {}
    assert impl.deepcopy([o, o, o], memo) == [None, None, None]
    assert len(calls) == 1
    assert memo[id(o)] is None


def test_identity_reduce_result_counts(impl):
    calls = []

    class R:
        def __reduce_ex__(self, proto):
            calls.append(1)
            return "R"
    o = R()
    impl.deepcopy([o, o, o])
    assert len(calls) == 3


@pytest.mark.parametrize("what", ["deepcopy", "copy", "reduce_ex", "reduce", "setstate",
                                  "getstate", "append", "setitem", "func", "getnewargs"])
def test_hook_raising_equiv(what):
    class Boom(Exception):
        pass

    def scenario(impl):
        log = []

        def boom(*a, **k):
            log.append(what)
            raise Boom("from %s" % what)
        ns = {}
        if what == "deepcopy":
            ns["__deepcopy__"] = boom
        elif what == "copy":
            ns["__copy__"] = boom
        elif what == "reduce_ex":
            ns["__reduce_ex__"] = boom
        elif what == "reduce":
            ns["__reduce_ex__"] = None
            ns["__reduce__"] = boom
        elif what == "setstate":
            ns["__setstate__"] = boom
        elif what == "getstate":
            ns["__getstate__"] = boom
        elif what == "getnewargs":
            ns["__getnewargs__"] = boom
        elif what == "append":
            ns["__reduce__"] = lambda self: (C, (), None, iter([1]))
            ns["append"] = boom
        elif what == "setitem":
            ns["__reduce__"] = lambda self: (C, (), None, None, iter([(1, 2)]))
            ns["__setitem__"] = boom
        elif what == "func":
            ns["__reduce__"] = lambda self: (boom, ())
        C = type("C", (), ns)
        c = C()
        c.v = 1
        x = [[0], c, [2]]
        memo = {}
        call = (lambda: (impl.copy(c), impl.copy(x))) if what == "copy" else (lambda: impl.deepcopy(x, memo))
        return Case(x, call, memo, log)
    pic = assert_equivalent(scenario)
    assert pic["outcome"][:2] == ("raise", "Boom")


@pytest.mark.parametrize("junk", [None, 5, "str", (), [], (1, 2), object()],
                         ids=["None", "int", "str", "tuple0", "list", "tuple2", "object"])
def test_hooks_returning_junk_equiv(junk):
    def scenario(impl):
        class J:
            def __deepcopy__(self, memo):
                return junk

            def __copy__(self):
                return junk
        j = J()
        x = [j, j, [j]]
        memo = {}
        return Case(x, lambda: (impl.deepcopy(x, memo), impl.copy(j)), memo)
    assert_equivalent(scenario)


@pytest.mark.parametrize("junk", [None, 5, "str", (), [], (1,), {}, object()],
                         ids=["None", "int", "str", "tuple0", "list", "tuple1", "dict", "object"])
def test_getstate_setstate_junk_equiv(junk):
    def scenario(impl):
        class G:
            def __getstate__(self):
                return junk
        g = G()
        g.a = 1
        return Case(g, lambda: (impl.copy(g), impl.deepcopy(g)))
    assert_equivalent(scenario)


def test_getattr_returning_42_equiv():
    def scenario(impl):
        class A:
            def __getattr__(self, name):
                return 42
        a = A()
        return Case(a, lambda: impl.deepcopy(a))
    pic = assert_equivalent(scenario)
    assert pic["outcome"] == ("raise", "TypeError", "'int' object is not callable")


def test_getattr_raising_other_error_equiv():
    def scenario(impl):
        class A:
            def __getattr__(self, name):
                raise KeyError(name)
        a = A()
        return Case(a, lambda: impl.deepcopy(a))
    assert_equivalent(scenario)


def test_hook_recursing_with_memo_idiom(impl):
    class Node:
        def __init__(self):
            self.children = []

        def __deepcopy__(self, memo):
            new = Node()
            memo[id(self)] = new
            new.children = impl.deepcopy(self.children, memo)
            return new
    a = Node()
    a.children.append(a)
    a.children.append([a])
    y = impl.deepcopy(a)
    assert y is not a and y.children[0] is y and y.children[1][0] is y


def test_hook_without_memo_breaks_sharing(impl):
    class H:
        def __init__(self, v):
            self.v = v

        def __deepcopy__(self, memo):
            return H(impl.deepcopy(self.v))
    shared = [1]
    y = impl.deepcopy([H(shared), H(shared)])
    assert y[0].v is not y[1].v


def test_copy_raises_error_class(impl):
    class U:
        __reduce_ex__ = None
        __reduce__ = None
    with pytest.raises(impl.Error if hasattr(impl, "Error") else copy.Error):
        impl.copy(U())


class KeySwapper:
    """Its reduce (run while the memo is still private) swaps a key of the dict being
    copied for another at the same size, as the iterator's last step would notice."""

    def __init__(self, target, drop, add):
        self.target, self.drop, self.add = target, drop, add

    def __reduce__(self):
        if self.drop in self.target:
            del self.target[self.drop]
            self.target[self.add] = [self.add]
        return "swapped"


@pytest.mark.parametrize("shape", ["only", "last", "first"])
def test_dict_keys_swapped_by_reduce_equiv(shape):
    def scenario(impl):
        x = {}
        if shape == "only":
            x["a"] = KeySwapper(x, "a", "z")
        elif shape == "last":
            x["k"] = 1
            x["a"] = KeySwapper(x, "k", "z")
        else:
            x["a"] = None
            x["b"] = [2]
            x["a"] = KeySwapper(x, "b", "z")
        return Case(x, lambda: impl.deepcopy(x))
    assert_equivalent(scenario)


class DictReshaper:
    """Rewrites its dict while the dict's frame is between two entries: `how` names the
    change (a frame steps through its source's entry array only while the source is
    unmoved)."""

    def __init__(self, target, how):
        self.target, self.how = target, how

    def __reduce_ex__(self, proto):
        d = self.target
        if self.how == "atom_replaced":
            d["k7"] = "new"
        elif self.how == "moved_to_end":
            d["k5"] = d.pop("k5")
        elif self.how == "deleted_and_added":
            del d["k6"]
            d["z"] = [9]
        elif self.how == "rebuilt":
            items = list(d.items())
            d.clear()
            d.update(items)
        elif self.how == "grown_past_resize":
            for i in range(40):
                d["g%d" % i] = i
        elif self.how == "cleared":
            d.clear()           # the values not yet copied are freed
        return (str, ("H",))


_RESHAPES = ["atom_replaced", "moved_to_end", "deleted_and_added", "rebuilt",
             "grown_past_resize", "cleared"]


@pytest.mark.parametrize("how", _RESHAPES)
@pytest.mark.parametrize("with_memo", [False, True])
def test_prefilled_dict_rewritten_between_entries(how, with_memo):
    """Atomic entries before and after a hook that rewrites the dict being copied: the copy,
    or the error, is the stdlib's."""
    def scenario(impl):
        x = {"k%d" % i: i for i in range(4)}
        x["h"] = None
        x.update(("k%d" % i, i) for i in range(4, 10))
        x["h"] = DictReshaper(x, how)
        memo = {} if with_memo else None
        return Case(x, lambda: impl.deepcopy(x, memo))
    assert_equivalent(scenario)


def test_prefilled_dict_rewritten_between_entries_in_a_child():
    """The same rewrites, and a reducer that grows the list being copied past its copy's
    room, in a fresh interpreter (a crash there fails this test): every outcome, copy or
    error, equals the stdlib's."""
    from shape import run_python
    code = textwrap.dedent("""
        import copy, sys
        sys.path.insert(0, %r)
        import fastcopy
        from test_hostile import DictReshaper, _RESHAPES
        from test_small_trees import Grower

        def outcome(deepcopy, build, memo):
            x = build()
            try:
                return "ok", repr(deepcopy(x, {} if memo else None))
            except Exception as e:
                return "raise", type(e).__name__, str(e)

        def reshaped(how):
            def build():
                x = {"k%%d" %% i: i for i in range(4)}
                x["h"] = None
                x.update(("k%%d" %% i, [i] if i %% 3 == 0 else i) for i in range(4, 10))
                x["h"] = DictReshaper(x, how)
                return x
            return build

        def grown():
            l = [1, [2]]
            x = [l, l]
            x.append(Grower(x, [l] * 40 + [{"d": [3]}, l, l]))
            x.extend([l] * 3)
            return x

        builds = [reshaped(how) for how in _RESHAPES] + [grown]
        for build in builds:
            for memo in (False, True):
                want = outcome(copy.deepcopy, build, memo)
                got = outcome(fastcopy.deepcopy, build, memo)
                assert got == want, (build, memo, got, want)
        print("ok")
        """) % os.path.dirname(os.path.abspath(__file__))
    p = run_python(code)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), (p.returncode, p.stderr[-3000:])
