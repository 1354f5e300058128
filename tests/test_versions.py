"""Behaviour that depends on the running interpreter (SEMANTICS.md 1.1, 1.4,
1.5, 1.9).  fastcopy follows the running interpreter's own copy.py."""
import copy
import inspect
import sys

import pytest

from shape import Case, assert_equivalent

V = sys.version_info[:2]


def test_all_names_exist(impl):
    names = ["Error", "copy", "deepcopy"] + (["replace"] if V >= (3, 13) else [])
    assert sorted(copy.__all__) == sorted(names)
    for name in names:
        assert callable(getattr(impl, name))


def test_stdlib_signatures():
    params = list(inspect.signature(copy.deepcopy).parameters)
    if V <= (3, 13):
        assert params == ["x", "memo", "_nil"]
    assert list(inspect.signature(copy.copy).parameters) == ["x"]


@pytest.mark.parametrize("call", [
    "copy()", "copy(1, 2)", "copy(y=1)", "copy(1, x=1)",
    "deepcopy()", "deepcopy(1, None, [], 4)", "deepcopy(1, foo=2)", "deepcopy(memo={})",
    "deepcopy(x=1)", "deepcopy(1, {}, _nil=[])", "deepcopy(1, None, None)",
])
def test_argument_handling_equiv(call):
    def scenario(impl):
        return Case(None, lambda: eval(call, {"copy": impl.copy, "deepcopy": impl.deepcopy}))
    assert_equivalent(scenario)


def test_range_subclass_args(impl):
    class I(int):
        pass
    r = range(I(10))
    assert impl.copy(r) is r
    assert impl.deepcopy(r) is r  # atomic for deepcopy since 3.10


def test_reduce_6tuple(impl):
    class C:
        def __reduce__(self):
            return (C, (), self.__dict__, None, None, None)
    c = C()
    c.a = 1
    if V >= (3, 10):
        with pytest.raises(TypeError):
            impl.deepcopy(c)
        with pytest.raises(TypeError):
            impl.copy(c)


@pytest.mark.parametrize("rv", [None, (), (list,)], ids=["None", "empty", "1-tuple"])
def test_reduce_too_short_message_equiv(rv):
    class C:
        def __reduce_ex__(self, p):
            return rv

    def scenario(impl):
        c = C()
        return Case(c, lambda: impl.deepcopy(c))
    pic = assert_equivalent(scenario)
    assert pic["outcome"][:2] == ("raise", "TypeError")


def test_getstate_rules_per_version(impl):
    log = []

    class C:
        def __getstate__(self):
            return None

        def __setstate__(self, st):
            log.append(st)
    impl.deepcopy(C())
    assert log == []  # a None state: __setstate__ not called (3.10 too)

    class D:  # <=3.10: no object.__getstate__, so super() fails
        def __getstate__(self):
            return super().__getstate__()
    d = D()
    d.a = 1
    if V >= (3, 11):
        assert impl.deepcopy(d).a == 1
    else:
        with pytest.raises(AttributeError):
            impl.deepcopy(d)


def test_slots_without_getstate_per_version(impl):
    class S:
        __slots__ = ("a", "b")
    s = S()
    s.a = [1]
    y = impl.deepcopy(s)
    assert y.a == [1] and y.a is not s.a
    z = impl.copy(s)
    assert z.a is s.a


@pytest.mark.skipif(V < (3, 14), reason="3.14+: atomics skip the memo")
def test_atomic_before_memo_314(impl):
    memo = {id(5): "five"}
    assert impl.deepcopy(5, memo) == 5


@pytest.mark.skipif(V >= (3, 14), reason="<=3.13: memo first")
def test_memo_before_atomic(impl):
    memo = {id(None): "none"}
    assert impl.deepcopy(None, memo) == "none"
    assert impl.deepcopy([None], memo) == ["none"]


def test_recursion_error_message_per_version():
    # stdlib only: nesting past the limit; the message fastcopy must use when
    # a user hook recurses forever is checked in test_depth.
    x = []
    for _ in range(5000):
        x = [x]
    with pytest.raises(RecursionError) as ei:
        copy.deepcopy(x)
    if V >= (3, 12):
        assert str(ei.value) == "maximum recursion depth exceeded"
    else:
        assert str(ei.value).startswith("maximum recursion depth exceeded")
