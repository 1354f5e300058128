"""Dispatch order, atomic tables, hooks and _reconstruct (SEMANTICS.md 1.1-1.6).

Every test runs with impl = copy (the oracle) and impl = fastcopy.  Tests
named *_equiv run a scenario under both and compare shape, hook log, memo
and exception text."""
import collections
import copy
import copyreg
import inspect
import dataclasses
import enum
import sys
import types
import weakref

import pytest

from shape import Case, assert_equivalent, assert_same_shape, shape

PY311 = sys.version_info >= (3, 11)
PY313 = sys.version_info >= (3, 13)


# ---------------------------------------------------------------------------
# 1.1 API surface

def test_copy_keyword_argument(impl):
    x = [1, [2]]
    y = impl.copy(x=x)
    assert y == x and y is not x and y[1] is x[1]


def test_deepcopy_three_positional_and_memo_keyword(impl):
    x = [1, [2]]
    if "_nil" in inspect.signature(copy.deepcopy).parameters:
        y = impl.deepcopy(x, None, [])
        assert y == x and y[1] is not x[1]
    else:   # 3.15: deepcopy(x, memo=None)
        with pytest.raises(TypeError, match="takes from 1 to 2 positional arguments"):
            impl.deepcopy(x, None, [])
    memo = {}
    y = impl.deepcopy(x, memo=memo)
    assert memo[id(x)] is y


def test_deepcopy_memo_positional(impl):
    memo = {}
    x = [[1]]
    y = impl.deepcopy(x, memo)
    assert memo[id(x)] is y and memo[id(x[0])] is y[0]


def test_error_is_copy_error(fc):
    assert fc.Error is copy.Error
    assert copy.error is copy.Error


def test_error_raised_is_copy_error(impl):
    class NoReduce:
        __reduce_ex__ = None
        __reduce__ = None
    with pytest.raises(copy.Error) as ei:
        impl.copy(NoReduce())
    assert str(ei.value) == "un(shallow)copyable object of type %s" % NoReduce
    with pytest.raises(copy.Error) as ei:
        impl.deepcopy(NoReduce())
    assert str(ei.value) == "un(deep)copyable object of type %s" % NoReduce


@pytest.mark.skipif(not PY313, reason="copy.replace is 3.13+")
def test_replace(impl):
    P = collections.namedtuple("P", "a b")
    assert impl.replace(P(1, 2), b=5) == P(1, 5)

    @dataclasses.dataclass
    class D:
        x: int
        y: list
    d = D(1, [2])
    r = impl.replace(d, x=3)
    assert r == D(3, [2]) and r.y is d.y
    with pytest.raises(TypeError) as ei:
        impl.replace([1])
    assert str(ei.value) == "replace() does not support list objects"

    class Rep:
        def __replace__(self, **kw):
            return ("class", kw)
    o = Rep()
    o.__replace__ = lambda **kw: ("instance", kw)  # ignored: looked up on __class__
    assert impl.replace(o, a=1) == ("class", {"a": 1})

    class Fake:  # looked up on obj.__class__, not type(obj)
        __class__ = Rep
    assert impl.replace(Fake(), z=2) == ("class", {"z": 2})


@pytest.mark.skipif(PY313, reason="replace is 3.13+")
def test_no_replace_before_313(fc):
    assert not hasattr(copy, "replace")


# ---------------------------------------------------------------------------
# 1.2 / 1.3 dispatch order

def test_copy_uses_type_not_class(impl):
    class Fake:
        @property
        def __class__(self):
            return list
    f = Fake()
    f.a = [1]
    for fn in (impl.copy, impl.deepcopy):
        y = fn(f)
        assert type(y) is Fake and y is not f


def test_exact_type_dispatch_subclasses(impl):
    class L(list):
        pass
    x = L([1, [2]])
    x.attr = [3]
    y = impl.copy(x)
    assert type(y) is L and y == x and y[1] is x[1] and y.attr is x.attr
    z = impl.deepcopy(x)
    assert type(z) is L and z == x and z[1] is not x[1] and z.attr == [3] and z.attr is not x.attr


def test_classes_and_metaclass_instances_are_atomic(impl):
    calls = []

    class Meta(type):
        def __deepcopy__(cls, memo):
            calls.append("meta")
            return "meta-hook"

        def __copy__(cls):
            calls.append("meta-copy")
            return "meta-copy-hook"

    class C(metaclass=Meta):
        def __deepcopy__(self, memo):
            calls.append("inst")
            return "inst-hook"

    assert impl.copy(C) is C
    assert impl.deepcopy(C) is C
    assert impl.deepcopy([C])[0] is C
    assert calls == []
    assert impl.deepcopy(C()) == "inst-hook"


def test_deepcopy_hook_on_instance_and_getattr_fallback(impl):
    class Inst:
        pass
    o = Inst()
    o.__deepcopy__ = lambda memo: ("inst", type(memo).__name__)
    assert impl.deepcopy(o) == ("inst", "dict")

    class GA:
        def __getattr__(self, name):
            if name == "__deepcopy__":
                return lambda memo: "from-getattr"
            raise AttributeError(name)
    assert impl.deepcopy(GA()) == "from-getattr"

    class Always42:
        def __getattr__(self, name):
            return 42
    with pytest.raises(TypeError) as ei:
        impl.deepcopy(Always42())
    assert str(ei.value) == "'int' object is not callable"


def test_deepcopy_hook_receives_same_memo(impl):
    seen = []

    class H:
        def __deepcopy__(self, memo):
            seen.append(memo)
            return "h"
    memo = {}
    impl.deepcopy([H()], memo)
    assert seen[0] is memo
    # memo=None: the hook still gets a real dict
    impl.deepcopy(H())
    assert type(seen[1]) is dict


def test_copy_hook_on_class_only(impl):
    class C:
        def __copy__(self):
            return "class-copy"
    o = C()
    assert impl.copy(o) == "class-copy"

    class D:
        pass
    d = D()
    d.__copy__ = lambda: "instance-copy"  # ignored by copy()
    y = impl.copy(d)
    assert type(y) is D and y is not d

    class GA:
        def __getattr__(self, name):
            if name == "__copy__":
                return lambda: "getattr-copy"
            raise AttributeError(name)
    y = impl.copy(GA())
    assert type(y) is GA  # instance __getattr__ not consulted for __copy__


@pytest.mark.thread_unsafe(reason='global state: edits copyreg.dispatch_table')
def test_copyreg_dispatch_table(impl):
    class C:
        def __init__(self, v):
            self.v = v
    log = []

    def red(o):
        log.append(type(o).__name__)
        return (C, (o.v,))
    copyreg.pickle(C, red)
    try:
        x = C([1])
        y = impl.copy(x)
        assert type(y) is C and y.v is x.v
        z = impl.deepcopy(x)
        assert type(z) is C and z.v == [1] and z.v is not x.v
        assert log == ["C", "C"]
    finally:
        del copyreg.dispatch_table[C]
    y = impl.copy(x)
    assert log == ["C", "C"] and y.v is x.v


@pytest.mark.thread_unsafe(reason='global state: edits copyreg.dispatch_table')
def test_falsy_reductor_diverges_between_copy_and_deepcopy(impl):
    class C:
        def __init__(self):
            self.v = [1]

    class FalsyReductor:
        def __bool__(self):
            return False

        def __call__(self, o):
            return (str, ("from-table",))
    copyreg.dispatch_table[C] = FalsyReductor()
    try:
        assert impl.copy(C()) == "from-table"       # `is not None`
        y = impl.deepcopy(C())                       # truthiness: falls through
        assert type(y) is C and y.v == [1]
    finally:
        del copyreg.dispatch_table[C]


def test_reduce_ex_called_with_4_then_reduce(impl):
    log = []

    class RE:
        def __reduce_ex__(self, proto):
            log.append(("ex", proto))
            return (RE, ())
    impl.copy(RE())
    impl.deepcopy(RE())
    assert log == [("ex", 4), ("ex", 4)]

    class R:
        __reduce_ex__ = None

        def __reduce__(self):
            log.append("reduce")
            return (R, ())
    del log[:]
    assert type(impl.copy(R())) is R
    assert type(impl.deepcopy(R())) is R
    assert log == ["reduce", "reduce"]

    class OnlyReduce:  # object.__reduce_ex__ calls an overridden __reduce__
        def __reduce__(self):
            log.append("only-reduce")
            return (OnlyReduce, ())
    del log[:]
    impl.copy(OnlyReduce())
    impl.deepcopy(OnlyReduce())
    assert log == ["only-reduce", "only-reduce"]

    class FalsyReduce:
        __reduce_ex__ = None
        __reduce__ = 0  # tested by truthiness
    with pytest.raises(copy.Error):
        impl.copy(FalsyReduce())
    with pytest.raises(copy.Error):
        impl.deepcopy(FalsyReduce())


def test_reduce_returning_str(impl):
    class S:
        def __reduce__(self):
            return "S_global"
    s = S()
    assert impl.copy(s) is s
    memo = {}
    assert impl.deepcopy(s, memo) is s
    assert memo == {}
    assert impl.deepcopy([s, s])[0] is s


def test_reduce_value_may_be_a_list(impl):
    class C:
        def __reduce__(self):
            return [C, (), {"a": 1}]
    for fn in (impl.copy, impl.deepcopy):
        y = fn(C())
        assert type(y) is C and y.a == 1


# ---------------------------------------------------------------------------
# 1.4 atomic tables

def _func():
    pass


ATOMIC_BOTH = [None, 1, 2 ** 100, -1.5, True, 3j, "s", b"b", int, type, Ellipsis,
               NotImplemented, _func, len, _func.__code__, property(_func)]


@pytest.mark.parametrize("x", ATOMIC_BOTH, ids=lambda x: type(x).__name__)
def test_atomics_return_self(impl, x):
    memo = {}
    assert impl.copy(x) is x
    assert impl.deepcopy(x, memo) is x
    assert memo == {}


def test_weakref_ref_atomic(impl):
    class C:
        pass
    c = C()
    r = weakref.ref(c)
    assert impl.copy(r) is r and impl.deepcopy(r) is r
    assert impl.deepcopy([r])[0] is r


def test_range_atomic_for_deepcopy_310(impl):
    r = range(10)
    assert impl.copy(r) is r
    assert impl.deepcopy(r) is r  # 3.10+ (the project's floor)


@pytest.mark.parametrize("make", [lambda: frozenset({1, 2}), lambda: frozenset(),
                                  lambda: slice(1, 2, 3), lambda: slice([1], [2])],
                         ids=["frozenset", "empty-frozenset", "slice", "slice-of-lists"])
def test_frozenset_slice_copy_atomic_deepcopy_reduced(impl, make):
    x = make()
    assert impl.copy(x) is x
    y = impl.deepcopy(x)
    assert y == x and type(y) is type(x)
    assert y is not x
    if isinstance(x, slice) and isinstance(x.start, list):
        assert y.start is not x.start and y.stop is not x.stop


def test_tuple_copy_is_self(impl):
    t = (1, [2])
    assert impl.copy(t) is t
    assert impl.copy(()) == ()


def test_subclasses_of_atomics_are_not_atomic(impl):
    class I(int):
        pass

    class S(str):
        pass

    class T(tuple):
        pass
    for x in (I(5), S("x"), T((1, 2))):
        for fn in (impl.copy, impl.deepcopy):
            y = fn(x)
            assert y is not x and type(y) is type(x) and y == x


def test_set_and_bytearray(impl):
    s = {1, (2, 3)}
    b = bytearray(b"ab")
    for fn in (impl.copy, impl.deepcopy):
        assert fn(s) == s and fn(s) is not s and type(fn(s)) is set
        assert fn(b) == b and fn(b) is not b and type(fn(b)) is bytearray


def test_list_dict_shallow(impl):
    inner = [1]
    for x in ([inner, inner], {"a": inner}):
        y = impl.copy(x)
        assert y == x and y is not x
        vals = y if isinstance(y, list) else list(y.values())
        assert all(v is inner for v in vals)


@pytest.mark.parametrize("bad", [lambda: types.ModuleType("m"), lambda: (i for i in ()),
                                  lambda: memoryview(b"x"), lambda: staticmethod(len),
                                  lambda: classmethod(len), lambda: sys._getframe(),
                                  lambda: types.MappingProxyType({})],
                         ids=["module", "generator", "memoryview", "staticmethod",
                              "classmethod", "frame", "mappingproxy"])
def test_uncopyable_builtins_same_error(bad):
    def scenario(impl):
        x = bad()
        return Case(x, lambda: (impl.copy(x), impl.deepcopy(x)))
    pic = assert_equivalent(scenario)
    assert pic["outcome"][0] == "raise"


def test_opt_out_types_return_self(impl):
    import decimal
    import fractions
    import re

    class Color(enum.Enum):
        RED = 1
    p = re.compile("a+")
    m = p.match("aa")
    for x in (p, m, Color.RED, decimal.Decimal("1.5"), fractions.Fraction(1, 3)):
        assert impl.copy(x) is x and impl.deepcopy(x) is x


# ---------------------------------------------------------------------------
# bound methods

def test_bound_methods(impl):
    class A:
        def m(self):
            return self
    a = A()
    a.v = [1]
    bm = a.m
    c = impl.copy(bm)
    assert c.__self__ is a and c.__func__ is A.m
    d = impl.deepcopy(bm)
    assert d.__self__ is not a and type(d.__self__) is A and d.__self__.v == [1]
    assert d.__func__ is A.m
    r = impl.deepcopy([a, a.m])
    assert r[1].__self__ is r[0]


def test_builtin_methods_atomic(impl):
    lst = [1]
    app = lst.append
    assert impl.copy(app) is app
    d = impl.deepcopy(app)
    assert d is app and d.__self__ is lst
    r = impl.deepcopy([lst, app])
    assert r[1].__self__ is lst and r[0] is not lst


# ---------------------------------------------------------------------------
# 1.5 _reconstruct

class _Args:
    def __init__(self, *args):
        self.args = args

    def __reduce__(self):
        return (_Args, self.args)


def test_reconstruct_args_deep_in_deepcopy_only(impl):
    x = _Args([1], (2, [3]))
    y = impl.copy(x)
    assert y.args[0] is x.args[0]
    z = impl.deepcopy(x)
    assert z.args == x.args and z.args[0] is not x.args[0] and z.args[1][1] is not x.args[1][1]


def test_reconstruct_non_iterable_args_equiv():
    class Bad:
        def __reduce__(self):
            return (Bad, 5)

    def scenario(impl):
        x = Bad()
        return Case(x, lambda: impl.deepcopy(x))
    assert assert_equivalent(scenario)["outcome"][0] == "raise"

    def scenario2(impl):
        x = Bad()
        return Case(x, lambda: impl.copy(x))
    assert assert_equivalent(scenario2)["outcome"][0] == "raise"


@pytest.mark.parametrize("rv", [None, (), (list,), (list, (), None, None, None, None),
                                (list, (), None, None, None, None, None), 5, (5, ()),
                                (list, (), None, 5), (dict, (), None, None, 5),
                                (list, (), None, [1]), (dict, (), None, None, [1])],
                         ids=["None", "empty", "1-tuple", "6-tuple", "7-tuple", "int",
                              "noncallable", "listiter-int", "dictiter-int", "listiter-list",
                              "dictiter-bad-pairs"])
@pytest.mark.parametrize("deep", [False, True], ids=["copy", "deepcopy"])
def test_malformed_reduce_values_equiv(rv, deep):
    class M:
        def __reduce_ex__(self, proto):
            return rv

    def scenario(impl):
        x = M()
        fn = impl.deepcopy if deep else impl.copy
        return Case(x, lambda: fn(x))
    assert_equivalent(scenario)


@pytest.mark.parametrize("state", [0, [], {}, False, (), "", None],
                         ids=["0", "list", "dict", "False", "tuple", "str", "None"])
def test_falsy_states_passed_to_setstate(impl, state):
    log = []

    class C:
        def __reduce__(self):
            return (C, (), state)

        def __setstate__(self, st):
            log.append(st)
    for fn in (impl.copy, impl.deepcopy):
        del log[:]
        fn(C())
        if state is None:
            assert log == []
        else:
            assert log == [state] and type(log[0]) is type(state)


def test_setstate_receives_deep_copied_state(impl):
    got = []
    st = {"a": [1]}

    class C:
        def __reduce__(self):
            return (C, (), st)

        def __setstate__(self, s):
            got.append(s)
    impl.copy(C())
    assert got[0] is st
    impl.deepcopy(C())
    assert got[1] == st and got[1] is not st and got[1]["a"] is not st["a"]


def _setstate_variants(log):
    def fn(self, st):
        log.append(("class", type(self).__name__, st))

    class Plain:
        __setstate__ = fn

        def __reduce__(self):
            return (type(self), (), {"v": 1})

    class Shadowed(Plain):
        def __init__(self):
            # an instance attribute named __setstate__ is what y.__setstate__ finds
            self.__dict__["__setstate__"] = lambda st: log.append(("instance", st))

    class Static(Plain):
        __setstate__ = staticmethod(lambda st: log.append(("static", st)))

    class Hooked(Plain):
        def __getattr__(self, name):
            log.append(("getattr", name))
            raise AttributeError(name)

    class Looking(Plain):
        def __getattribute__(self, name):
            if name == "__setstate__":
                log.append(("getattribute", name))
            return object.__getattribute__(self, name)

    class Raising(Plain):
        def __setstate__(self, st):
            raise KeyError("from __setstate__")
    return [Plain, Shadowed, Static, Hooked, Looking, Raising]


def test_setstate_lookup_and_call(impl):
    """y.__setstate__ as the stdlib finds and calls it: a function on the class, an instance
    attribute in front of it, a staticmethod, classes with __getattr__/__getattribute__."""
    logs = []
    for lib in (copy, impl):
        log = []
        for cls in _setstate_variants(log):
            try:
                lib.deepcopy([cls()])
            except KeyError as e:
                log.append(("raised", str(e)))
        logs.append(log)
    assert logs[0] == logs[1]
    assert ("instance", {"v": 1}) in logs[0]


def test_state_dict_slots_pair(impl):
    class S:
        __slots__ = ("a", "b", "__dict__")

        def __reduce__(self):
            return (S, (), ({"d": [1]}, {"a": [2]}))
    for fn in (impl.copy, impl.deepcopy):
        y = fn(S())
        assert y.d == [1] and y.a == [2] and not hasattr(y, "b")

    class P:
        def __reduce__(self):
            return (P, (), (None, {"x": 1}))
    assert impl.deepcopy(P()).x == 1

    class NotPair:  # a 3-tuple state without __setstate__ goes to __dict__.update
        def __reduce__(self):
            return (NotPair, (), (1, 2, 3))
    with pytest.raises(TypeError) as ei:
        impl.copy(NotPair())
    # the interpreter's own dict.update message (3.14 changed it)
    with pytest.raises(TypeError) as want:
        {}.update((1, 2, 3))
    assert str(ei.value) == str(want.value)


def test_listiter_uses_append_each_time(impl):
    log = []

    class L(list):
        def append(self, v):
            log.append(("append", v))
            list.append(self, v)

        def extend(self, vs):  # never used by _reconstruct
            log.append("extend")
            list.extend(self, vs)
    x = L([1, [2]])
    for fn in (impl.copy, impl.deepcopy):
        del log[:]
        y = fn(x)
        assert type(y) is L and y == [1, [2]]
        assert [e[0] for e in log] == ["append", "append"]
    assert log[1][1] is not x[1]


def test_dictiter_uses_setitem(impl):
    log = []

    class K:
        def __init__(self, n):
            self.n = n

        def __hash__(self):
            return hash(self.n)

        def __eq__(self, o):
            return isinstance(o, K) and o.n == self.n

        def __deepcopy__(self, memo):
            log.append(("dc", self.n))
            return K(self.n)

    class D(dict):
        def __setitem__(self, k, v):
            log.append(("set", k.n if isinstance(k, K) else k))
            dict.__setitem__(self, k, v)
    x = D()
    dict.__setitem__(x, K("k1"), K("v1"))
    dict.__setitem__(x, K("k2"), K("v2"))
    y = impl.deepcopy(x)
    assert type(y) is D and len(y) == 2
    # _reconstruct's dictiter: key first, then value, then __setitem__
    assert log == [("dc", "k1"), ("dc", "v1"), ("set", "k1"), ("dc", "k2"), ("dc", "v2"), ("set", "k2")]
    del log[:]
    y = impl.copy(x)
    assert log == [("set", "k1"), ("set", "k2")]


def test_plain_dict_copies_value_then_key(impl):
    log = []

    class K:
        def __init__(self, n):
            self.n = n

        def __hash__(self):
            return hash(self.n)

        def __eq__(self, o):
            return o.n == self.n

        def __deepcopy__(self, memo):
            log.append(self.n)
            return K(self.n)
    impl.deepcopy({K("k"): K("v")})
    # stdlib _deepcopy_dict: y[deepcopy(key)] = deepcopy(value) evaluates the value first
    assert log == ["v", "k"]


def test_reconstruct_order_state_list_dict(impl):
    log = []

    class C:
        def __reduce__(self):
            return (C, (), {"s": 1}, iter([1, 2]), iter([("k", "v")]))

        def __setstate__(self, st):
            log.append(("state", st))

        def append(self, v):
            log.append(("append", v))

        def __setitem__(self, k, v):
            log.append(("setitem", k, v))
    for fn in (impl.copy, impl.deepcopy):
        del log[:]
        fn(C())
        assert log == [("state", {"s": 1}), ("append", 1), ("append", 2), ("setitem", "k", "v")]


def test_reconstruct_memoizes_before_state(impl):
    class C:
        pass
    c = C()
    c.me = c
    c.lst = [c]
    y = impl.deepcopy(c)
    assert y is not c and y.me is y and y.lst[0] is y


# ---------------------------------------------------------------------------
# tuples

def test_tuples(impl):
    memo = {}
    t = (1, "a", (2, None))
    assert impl.deepcopy(t, memo) is t
    assert memo == {}
    assert impl.deepcopy(()) == ()
    u = (1, [2])
    v = impl.deepcopy(u)
    assert v == u and v is not u and v[1] is not u[1]


def test_recursive_tuple_through_list(impl):
    lst = []
    t = (lst, 1)
    lst.append(t)
    y = impl.deepcopy(t)
    assert type(y) is tuple and y is not t
    assert y[0][0] is y and y[0] is not lst
    z = impl.deepcopy(lst)
    assert z[0][0] is z


def test_recursive_tuple_equiv():
    def scenario(impl):
        lst = [1]
        t = (lst, (lst,), [lst])
        lst.append(t)
        memo = {}
        return Case(t, lambda: impl.deepcopy(t, memo), memo)
    assert_equivalent(scenario)


# ---------------------------------------------------------------------------
# 3.11+ __getstate__ rules (object.__getstate__)

@pytest.mark.skipif(not PY311, reason="object.__getstate__ is 3.11+")
def test_super_getstate_works(impl):
    class C:
        def __getstate__(self):
            st = super().__getstate__()
            return dict(st, extra=1)
    c = C()
    c.a = [1]
    y = impl.deepcopy(c)
    assert y.a == [1] and y.extra == 1


@pytest.mark.skipif(PY311, reason="<=3.10 behaviour")
def test_super_getstate_fails_before_311(impl):
    class C:
        def __getstate__(self):
            return super().__getstate__()
    c = C()
    c.a = 1
    with pytest.raises(AttributeError):
        impl.copy(c)


def test_getattr_answering_everything(impl):
    class G:
        def __getattr__(self, name):
            if name.startswith("__") and name != "__getstate__":
                raise AttributeError(name)
            return None
    g = G()
    g.a = 1
    if PY311:
        assert impl.copy(g).a == 1 and impl.deepcopy(g).a == 1
    else:
        with pytest.raises(TypeError):
            impl.copy(g)


@pytest.mark.parametrize("state", [None, 0, [], {}, False, (), ""],
                         ids=["None", "0", "list", "dict", "False", "tuple", "str"])
def test_getstate_return_values(impl, state):
    log = []

    class C:
        def __getstate__(self):
            return state

        def __setstate__(self, st):
            log.append(st)
    c = C()
    c.a = 1
    for fn in (impl.copy, impl.deepcopy):
        del log[:]
        y = fn(c)
        assert type(y) is C
        if state is None:
            assert log == []
        else:
            assert log == [state]


def test_getstate_none_without_setstate(impl):
    class C:
        def __getstate__(self):
            return None
    c = C()
    c.a = 1
    for fn in (impl.copy, impl.deepcopy):
        y = fn(c)
        assert type(y) is C and y.__dict__ == {}


def test_getstate_2tuple_read_as_dict_slots(impl):
    class C:
        def __getstate__(self):
            return ({"x": 1}, {"y": 2})
    c = C()
    for fn in (impl.copy, impl.deepcopy):
        y = fn(c)
        assert y.x == 1 and y.y == 2


def test_slotnames_cached_on_class(impl):
    class S:
        __slots__ = ("a", "b")
    s = S()
    s.a = [1]
    assert "__slotnames__" not in S.__dict__
    y = impl.deepcopy(s)
    assert "__slotnames__" in S.__dict__ and S.__slotnames__ == ["a", "b"]
    assert y.a == [1] and y.a is not s.a and not hasattr(y, "b")

    class T:
        __slots__ = ("a",)
    impl.copy(T())
    assert T.__dict__.get("__slotnames__") == ["a"]

    class Plain:
        pass
    impl.copy(Plain())
    assert Plain.__dict__.get("__slotnames__") == []


# ---------------------------------------------------------------------------
# common user types, compared by shape against the stdlib

@dataclasses.dataclass
class DC:
    a: int
    b: list
    c: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class FrozenDC:
    a: int
    b: tuple


@dataclasses.dataclass
class SlotsLikeDC:
    __slots__ = ("p", "q")
    p: list
    q: int


NT = collections.namedtuple("NT", "x y")


class Color(enum.Enum):
    RED = 1
    BLUE = [2]


class Flag(enum.IntFlag):
    A = 1
    B = 2


class Plain:
    def __init__(self):
        self.a = [1, 2]
        self.b = {"k": self.a}
        self.me = self


class Slots:
    __slots__ = ("x", "y", "z")

    def __init__(self):
        self.x = [1]
        self.y = self.x


class SlotsDict(Slots):
    __slots__ = ("__dict__", "__w")

    def __init__(self):
        super().__init__()
        self.extra = (self.x,)
        self.__w = 5


class LS(list):
    pass


class DS(dict):
    pass


class SS(set):
    pass


class IS(int):
    pass


class FS(float):
    pass


def _builders():
    shared = [0]

    def dsub():
        d = DS(a=shared, b=[shared])
        d.attr = shared
        return d

    def lsub():
        ls = LS([shared, shared])
        ls.attr = shared
        ls.append(ls)
        return ls
    return {
        "nested": lambda: {"l": [1, 2.5, "s", None, (1, 2)], "t": (shared, shared), "d": {1: shared}},
        "dataclass": lambda: DC(1, [shared, shared], {"x": shared}),
        "frozen-dataclass": lambda: FrozenDC(1, (shared,)),
        "slots-dataclass": lambda: SlotsLikeDC([shared], 3),
        "namedtuple": lambda: NT([1], NT(2, shared)),
        "namedtuple-atomic": lambda: NT(1, "a"),
        "enum": lambda: [Color.RED, Color.BLUE, Flag.A | Flag.B, Color.BLUE],
        "plain": Plain,
        "slots": Slots,
        "slots-dict": SlotsDict,
        "list-subclass": lsub,
        "dict-subclass": dsub,
        "set-subclass": lambda: SS({1, 2, "a"}),
        "int-float-subclass": lambda: [IS(7), FS(1.5), IS(7)],
        "set-frozenset": lambda: [{1, 2}, frozenset({3, (4, 5)}), frozenset()],
        "bytes-like": lambda: [bytearray(b"ab"), b"cd", memoryview(b"x").tobytes()],
        "slice-range": lambda: [slice(shared, 2), range(3), slice(None)],
        "methods": lambda: (lambda p: [p, p.__init__, len, [].append])(Plain()),
        "self-ref-list": lambda: (lambda x: (x.append(x), x)[1])([1]),
        "self-ref-dict": lambda: (lambda d: (d.__setitem__("me", d), d)[1])({}),
    }


@pytest.mark.parametrize("name", sorted(_builders()))
@pytest.mark.parametrize("fn", ["copy", "deepcopy"])
def test_common_types_equiv(name, fn):
    def scenario(impl):
        x = _builders()[name]()
        memo = {} if fn == "deepcopy" else None
        call = (lambda: impl.deepcopy(x, memo)) if fn == "deepcopy" else (lambda: impl.copy(x))
        return Case(x, call, memo)
    assert_equivalent(scenario)


@pytest.mark.parametrize("name", sorted(_builders()))
def test_common_types_deepcopy_values(impl, name):
    x = _builders()[name]()
    y = impl.deepcopy(x)
    assert type(y) is type(x)
    # self-check of the shape helper: deepcopy twice gives the same shape
    assert_same_shape(y, impl.deepcopy(x), x, x)


def test_shape_helper_sees_aliasing():
    a = [1]
    assert shape([a, a]) != shape([[1], [1]])
    assert shape([a], [a]) != shape([[1]], [a])
    assert shape([1, 2]) != shape([1, 3])
    assert shape((1,)) != shape([1])


# ---------------------------------------------------------------------------
# per-type caches must notice class changes

def test_class_attribute_changes_invalidate(impl):
    class C:
        pass
    c = C()
    c.v = [1]
    for _ in range(3):
        assert type(impl.deepcopy(c)) is C and type(impl.copy(c)) is C
    C.__deepcopy__ = lambda self, memo: "dc-hook"
    C.__copy__ = lambda self: "copy-hook"
    assert impl.deepcopy(c) == "dc-hook" and impl.copy(c) == "copy-hook"
    assert impl.deepcopy([c]) == ["dc-hook"]
    del C.__deepcopy__, C.__copy__
    assert type(impl.deepcopy(c)) is C and type(impl.copy(c)) is C

    C.__reduce_ex__ = lambda self, proto: (str, ("re",))
    assert impl.copy(c) == "re" and impl.deepcopy(c) == "re"
    del C.__reduce_ex__
    C.__getstate__ = lambda self: {"v": "gs"}
    assert impl.deepcopy(c).v == "gs" and impl.copy(c).v == "gs"
    C.__setstate__ = lambda self, st: self.__dict__.update(v="ss")
    assert impl.deepcopy(c).v == "ss"
    del C.__getstate__, C.__setstate__
    assert impl.deepcopy(c).v == [1]


def test_base_class_changes_invalidate(impl):
    class Base:
        pass

    class Sub(Base):
        pass
    s = Sub()
    s.v = 1
    for _ in range(3):
        assert type(impl.deepcopy(s)) is Sub
    Base.__deepcopy__ = lambda self, memo: "base-hook"
    Base.__copy__ = lambda self: "base-copy"
    try:
        assert impl.deepcopy(s) == "base-hook" and impl.copy(s) == "base-copy"
    finally:
        del Base.__deepcopy__, Base.__copy__
    assert type(impl.deepcopy(s)) is Sub


def test_instance_class_reassignment(impl):
    class A:
        pass

    class B:
        def __deepcopy__(self, memo):
            return "B"
    a = A()
    assert type(impl.deepcopy(a)) is A
    a.__class__ = B
    assert impl.deepcopy(a) == "B"


def test_instance_dict_hook_entries(impl):
    class C:
        pass
    c = C()
    c.__deepcopy__ = lambda memo: "inst-dc"
    assert impl.deepcopy(c) == "inst-dc"
    del c.__deepcopy__
    c.__reduce_ex__ = lambda proto: (str, ("inst-re-%d" % proto,))
    assert impl.copy(c) == "inst-re-4" and impl.deepcopy(c) == "inst-re-4"
    del c.__reduce_ex__


def test_instance_getstate_entry_equiv():
    class C:
        pass

    def scenario(impl):
        c = C()
        c.v = [1]
        c.__getstate__ = lambda: {"v": "inst-gs"}
        return Case(c, lambda: [impl.copy(c).v, impl.deepcopy(c).v])
    assert_equivalent(scenario)


@pytest.mark.thread_unsafe(reason='global state: edits copy._deepcopy_dispatch')
def test_runtime_deepcopy_dispatch_entries(impl):
    class C:
        pass
    c = C()
    assert type(impl.deepcopy(c)) is C
    copy._deepcopy_dispatch[C] = lambda x, memo: "dispatched"
    try:
        assert impl.deepcopy(c) == "dispatched"
        assert impl.deepcopy([c, c]) == ["dispatched", "dispatched"]
    finally:
        del copy._deepcopy_dispatch[C]
    assert type(impl.deepcopy(c)) is C


@pytest.mark.thread_unsafe(reason='global state: edits copy._copy_dispatch')
@pytest.mark.skipif(not hasattr(copy, "_copy_dispatch"),
                    reason="3.14+ has no copy._copy_dispatch (its sets: tests/test_pyver.py)")
def test_runtime_copy_dispatch_entries(impl):
    class C:
        pass
    c = C()
    copy._copy_dispatch[C] = lambda x: "shallow-dispatched"
    try:
        assert impl.copy(c) == "shallow-dispatched"
    finally:
        del copy._copy_dispatch[C]
    assert type(impl.copy(c)) is C


@pytest.mark.thread_unsafe(reason='global state: edits copy._deepcopy_dispatch')
def test_runtime_override_of_builtin_dispatch(impl):
    saved = copy._deepcopy_dispatch[list]
    copy._deepcopy_dispatch[list] = lambda x, memo: "list!"
    try:
        assert impl.deepcopy([1, 2]) == "list!"
        assert impl.deepcopy({"a": [1]}) == {"a": "list!"}
    finally:
        copy._deepcopy_dispatch[list] = saved
    assert impl.deepcopy([1, 2]) == [1, 2]


@pytest.mark.thread_unsafe(reason='global state: edits copyreg.dispatch_table')
def test_runtime_copyreg_entries(impl):
    class C:
        pass
    c = C()
    c.v = [1]
    assert type(impl.deepcopy(c)) is C
    copyreg.dispatch_table[C] = lambda o: (str, ("via-copyreg",))
    try:
        assert impl.deepcopy(c) == "via-copyreg" and impl.copy(c) == "via-copyreg"
    finally:
        del copyreg.dispatch_table[C]
    assert type(impl.deepcopy(c)) is C and type(impl.copy(c)) is C


@pytest.mark.thread_unsafe(reason='global state: edits copyreg.dispatch_table')
def test_copyreg_entry_for_builtin_subclass_only(impl):
    # dispatch_table is consulted after the exact-type tables: an entry for
    # list is never used, one for a list subclass is.
    class L(list):
        pass
    copyreg.dispatch_table[list] = lambda o: (str, ("never",))
    copyreg.dispatch_table[L] = lambda o: (str, ("L-table",))
    try:
        assert impl.deepcopy([1]) == [1] and impl.copy([1]) == [1]
        assert impl.deepcopy(L()) == "L-table" and impl.copy(L()) == "L-table"
    finally:
        del copyreg.dispatch_table[list], copyreg.dispatch_table[L]


def test_assert_equivalent_detects_differences():
    """Self-test of the harness: a wrong implementation must be caught."""
    class Wrong:
        Error = copy.Error

        @staticmethod
        def copy(x):
            return copy.copy(x)

        @staticmethod
        def deepcopy(x, memo=None):
            return copy.copy(x)  # shallow: aliasing differs

    def scenario(impl):
        x = [[1], [2]]
        return Case(x, lambda: impl.deepcopy(x))
    with pytest.raises(AssertionError, match="shapes differ"):
        assert_equivalent(scenario, fc=Wrong)

    class WrongMemo(Wrong):
        @staticmethod
        def deepcopy(x, memo=None):
            y = copy.deepcopy(x, memo)
            memo.pop(id(memo), None)
            return y

    def scenario2(impl):
        x = [[1], [2]]
        memo = {}
        return Case(x, lambda: impl.deepcopy(x, memo), memo)
    with pytest.raises(AssertionError, match="memo differs"):
        assert_equivalent(scenario2, fc=WrongMemo)

    def scenario3(impl):
        class E:
            def __deepcopy__(self, memo):
                raise ValueError("boom" if impl is copy else "bam")
        x = E()
        return Case(x, lambda: impl.deepcopy(x))
    with pytest.raises(AssertionError, match="outcome differs"):
        assert_equivalent(scenario3, fc=Wrong)


# ---------------------------------------------------------------------------
# hook call order everywhere a hook can sit

class _Logged:
    """Logs every __deepcopy__ / __copy__ call; deterministic hash so set
    order is the same in both runs."""

    def __init__(self, log, name):
        self.log = log
        self.name = name

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        return isinstance(other, _Logged) and other.name == self.name

    def __deepcopy__(self, memo):
        self.log.append(("deepcopy", self.name))
        return _Logged(self.log, self.name + "'")

    def __copy__(self):
        self.log.append(("copy", self.name))
        return _Logged(self.log, self.name + "'")


class _WithNewargs:
    def __new__(cls, *a):
        self = object.__new__(cls)
        self.new_args = a
        return self

    def __getnewargs__(self):
        return self.new_args


class _WithNewargsEx:
    def __new__(cls, *a, **kw):
        self = object.__new__(cls)
        self.new_args = (a, kw)
        return self

    def __getnewargs_ex__(self):
        return self.new_args


class _ReduceAll:
    def __init__(self, *args):
        self.args = args

    def __reduce__(self):
        a = self.args
        return (_ReduceAll, (a[0],), {"st": a[1]}, iter([a[2]]), iter([(a[3], a[4])]))

    def __setstate__(self, st):
        self.st = st

    def append(self, v):
        self.appended = v

    def __setitem__(self, k, v):
        self.item = (k, v)


def test_hook_call_order_equiv():
    def scenario(impl):
        log = []

        def L(n):
            return _Logged(log, n)

        class Slot:
            __slots__ = ("s1", "s2")
        sl = Slot()
        sl.s2, sl.s1 = L("slot2"), L("slot1")
        inst = Plain()
        inst.__dict__.update(z=L("attr-z"), a=L("attr-a"))
        shared = L("shared")
        x = [L("l0"), (L("t0"), L("t1")), {L("k0"): L("v0"), "k1": L("v1")},
             {L("set0"), L("set1")}, frozenset({L("fs0")}), inst, sl,
             _WithNewargs(L("na0"), [L("na1")]), _WithNewargsEx(L("nx0"), kw=L("nx1")),
             _ReduceAll(L("arg"), L("state"), L("li"), L("dk"), L("dv")),
             DC(L("dc-a"), [L("dc-b")]), NT(L("nt0"), L("nt1")),
             shared, [shared, (shared,)], L("last")]
        memo = {}
        return Case(x, lambda: (impl.deepcopy(x, memo), [impl.copy(e) for e in x]), memo, log)
    pic = assert_equivalent(scenario)
    assert pic["log"][0] == ("deepcopy", "l0")
    assert pic["log"].count(("deepcopy", "shared")) == 1


def test_new_args_types_equiv():
    def scenario(impl):
        inner = [1]
        x = [_WithNewargs(inner, 2), _WithNewargsEx(inner, k=inner), inner]
        memo = {}
        return Case(x, lambda: (impl.deepcopy(x, memo), impl.copy(x[0]), impl.copy(x[1])), memo)
    assert_equivalent(scenario)


def test_more_class_changes_invalidate(impl):
    class C:
        def __init__(self):
            self.v = 1
    c = C()
    for _ in range(3):
        impl.deepcopy(c)
        impl.copy(c)
    C.__reduce__ = lambda self: (str, ("reduce",))
    assert impl.deepcopy(c) == "reduce" and impl.copy(c) == "reduce"
    del C.__reduce__
    C.__getnewargs__ = lambda self: ()
    calls = []
    C.__new__ = lambda cls, *a: (calls.append(a), object.__new__(cls))[1]
    assert impl.deepcopy(c).v == 1 and calls == [()]
    del C.__getnewargs__, C.__new__
    C.__getattr__ = lambda self, name: (lambda memo: "ga") if name == "__deepcopy__" else 1 / 0
    assert impl.deepcopy(c) == "ga"
    del C.__getattr__
    assert type(impl.deepcopy(c)) is C
    C.__slotnames__ = ["v"]  # read by copyreg._slotnames via object.__reduce_ex__
    y = impl.copy(c)
    assert y.v == 1
