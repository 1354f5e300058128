"""A plain instance's state stored as attributes (reduce.c, fc_store_inline_attrs).

On 3.13 deepcopy gives a new plain instance its state without making it a __dict__
object, when nothing but this call has seen the new instance.  These tests hold that
road to `y.__dict__.update(state)`, the stdlib's, where it applies and at its edges:
names the class defines (data descriptors, class attributes, `__dict__`), keys that are
not exact strs, attribute order after deletions, a __setattr__ that must not run, more
attributes than the class's shared keys hold, and a hook that sees the new instance
through the memo before its state is set.
"""
import copy
import sys
import sysconfig

import pytest

import fastcopy
from shape import assert_equivalent, both_memo_modes


def _items(o):
    return [(k, type(k).__name__, v) for k, v in vars(o).items()]


def _same_dicts(x):
    """The copies' attributes: the same items in the same order, with the very same str
    key objects (a key of another type is itself deep-copied), under both libraries."""
    a, b = copy.deepcopy(x), fastcopy.deepcopy(x)
    assert _items(a) == _items(b)
    assert all(ka is kb for ka, kb in zip(vars(a), vars(b)) if type(ka) is str)
    return a, b


class Plain:
    def __init__(self, n):
        self.a = n
        self.b = [n]
        self.c = "c%d" % n


def test_order_after_deletion_and_reinsertion():
    x = Plain(1)
    del x.a
    x.a = [2]
    x.z = {"k": [3]}
    a, b = _same_dicts(x)
    assert list(vars(b)) == ["b", "c", "a", "z"]


def test_runtime_built_names_keep_their_key_objects():
    x = Plain(1)
    for i in range(3):
        setattr(x, "".join(["dyn", str(i)]), [i])
    _same_dicts(x)
    a, b = copy.deepcopy([x, Plain(2), x]), fastcopy.deepcopy([x, Plain(2), x])
    assert [_items(o) for o in a] == [_items(o) for o in b] and b[0] is b[2]


def test_more_attributes_than_the_shared_keys_hold():
    xs = []
    for j in range(3):
        x = Plain(j)
        for i in range(60):
            setattr(x, "n%d_%d" % (i, j), [i])
        xs.append(x)
    a, b = copy.deepcopy(xs), fastcopy.deepcopy(xs)
    assert [_items(o) for o in a] == [_items(o) for o in b]


class Logged:
    def __init__(self, log):
        self.__dict__["log"] = log

    def __setattr__(self, name, value):
        self.log.append(("setattr", name))
        object.__setattr__(self, name, value)


def _logged():
    log = []
    x = Logged(log)
    x.v = [1]
    x.w = (2, [3])
    del log[:]
    return [x, x], log


@pytest.mark.parametrize("scenario", both_memo_modes(_logged), ids=["native", "memo"])
def test_setattr_override_is_not_called(scenario):
    std = assert_equivalent(scenario)
    assert std["log"] == []


class WithDescriptor:
    calls = []

    @property
    def p(self):
        return "property"

    @p.setter
    def p(self, value):
        WithDescriptor.calls.append(value)

    shadowed = "class attribute"


def _descriptors():
    x = WithDescriptor()
    x.__dict__["p"] = [1]            # under the data descriptor: dict only
    x.shadowed = [2]                 # shadows a class attribute
    x.__dict__["__dict__"] = [3]     # the __dict__ descriptor's name
    x.plain = [4]
    return [x], []


@pytest.mark.parametrize("scenario", both_memo_modes(_descriptors), ids=["native", "memo"])
def test_names_the_class_defines(scenario):
    WithDescriptor.calls.clear()
    assert_equivalent(scenario)
    assert WithDescriptor.calls == []
    x = _descriptors()[0][0]
    a, b = _same_dicts(x)
    assert b.p == "property" and vars(b)["p"] == [1] and b.shadowed == [2]


class StrSub(str):
    pass


def _odd_keys():
    x = Plain(1)
    x.__dict__[7] = [7]
    y = Plain(2)
    y.__dict__[StrSub("sub")] = [8]
    return [x, y], []


@pytest.mark.parametrize("scenario", both_memo_modes(_odd_keys), ids=["native", "memo"])
def test_keys_that_are_not_exact_strs(scenario):
    assert_equivalent(scenario)
    x, y = _odd_keys()[0]
    _same_dicts(x)
    _same_dicts(y)
    assert type(next(k for k in vars(fastcopy.deepcopy(y)) if k == "sub")) is StrSub


class Peek:
    """A value whose __deepcopy__ writes on the new instance before its state is set."""

    def __init__(self, owner, log):
        self.owner = owner
        self.log = log

    def __deepcopy__(self, memo):
        y = memo.get(id(self.owner))
        self.log.append(("peek", type(y).__name__, sorted(vars(y)) if y is not None else None))
        if y is not None:
            y.a = "set by the hook"
            y.extra = "hook only"
        return "peeked"


def _peek():
    log = []
    x = Plain(1)
    x.m = Peek(x, log)
    x.after = [5]
    return [x], log


@pytest.mark.parametrize("scenario", both_memo_modes(_peek), ids=["native", "memo"])
def test_hook_sees_the_new_instance_first(scenario):
    std = assert_equivalent(scenario)
    assert std["log"] == [("peek", "Plain", [])]


def test_copies_have_working_attributes():
    xs = [Plain(i) for i in range(50)]
    ys = fastcopy.deepcopy(xs)
    for x, y in zip(xs, ys):
        assert (y.a, y.b, y.c) == (x.a, x.b, x.c) and y.b is not x.b
        y.new = 1
        del y.a
        assert vars(y) == {"b": x.b, "c": x.c, "new": 1}
        assert vars(x) == {"a": x.a, "b": x.b, "c": x.c}


def _stores(fn):
    import fastcopy._fastcopy as core
    before = core._sysinfo()["state_stores"]
    fn()
    return core._sysinfo()["state_stores"] - before


@pytest.mark.thread_unsafe(reason="counts a module-wide counter")
def test_which_states_take_the_road():
    expect = 1 if sys.version_info[:2] == (3, 13) else 0
    xs = [Plain(i) for i in range(10)]
    assert _stores(lambda: fastcopy.deepcopy(xs)) == 10 * expect
    # a caller's small dict is taken as a native memo's mirror where the build can
    # (memo.c, "A caller's dict"); one it cannot take is the memo throughout
    import fastcopy._fastcopy as core
    adopted = core._sysinfo()["memo_adopted"]
    n = _stores(lambda: fastcopy.deepcopy(xs, {}))
    assert n == (10 * expect if core._sysinfo()["memo_adopted"] > adopted else 0)
    assert _stores(lambda: fastcopy.deepcopy(xs, {"not an id": 1})) == 0
    assert _stores(lambda: fastcopy.deepcopy(_descriptors()[0])) == 0
    x, y = _odd_keys()[0]
    assert _stores(lambda: fastcopy.deepcopy(x)) == 0
    assert _stores(lambda: fastcopy.deepcopy(y)) == 0
    assert _stores(lambda: fastcopy.deepcopy(_peek()[0])) == 0        # a hook saw the memo
    # an instance made after a hook saw the memo takes it again where the memo goes back
    # to native (not on free-threaded builds: there the dict stays the memo)
    again = 0 if sysconfig.get_config_var("Py_GIL_DISABLED") else expect
    assert _stores(lambda: fastcopy.deepcopy([_peek()[0], Plain(3)])) == again


def _fresh(s):
    """An equal str that is a different object."""
    return "".join(list(s))


class Keys:
    pass


@pytest.mark.parametrize("layout", ["shared_first", "fresh_first", "fresh_new", "mixed"])
def test_equal_keys_that_are_other_objects(layout):
    # the key objects a copy's attributes end up with depend on the class's shared keys
    # and on when an instance's attributes stop fitting them: both roads must agree
    first = Keys()
    if layout != "fresh_first":
        first.name = [0]
        first.other = [0]
    x = Keys()
    if layout == "shared_first":
        x.__dict__[_fresh("name")] = [1]
        x.__dict__[_fresh("other")] = [2]
    elif layout == "fresh_first":
        x.__dict__[_fresh("name")] = [1]
        x.other = [2]
    elif layout == "fresh_new":
        x.__dict__[_fresh("brand_new")] = [1]
        x.__dict__[_fresh("name")] = [2]
    else:
        for i in range(40):
            x.__dict__[_fresh("k%d" % i) if i % 2 else "k%d" % i] = [i]
        x.__dict__[_fresh("name")] = [3]
    srcs = [first, x, Keys(), x]
    a, b = copy.deepcopy(srcs), fastcopy.deepcopy(srcs)
    for p, q in zip(a, b):
        assert _items(p) == _items(q)
        assert all(kp is kq for kp, kq in zip(vars(p), vars(q)))
