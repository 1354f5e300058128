"""What each CPython's own copy.py changes (src/pyver.h), run under copy and fastcopy alike.

- 3.14+: copy() asks `cls in _copy_atomic_types` and `cls in _copy_builtin_containers`,
  deepcopy() asks `cls in _atomic_types` first, before the memo is made or read (gh-114264).
  On 3.14 those are sets a user may change in place; 3.15 made them frozensets, which can only be
  rebound.
- 3.15: a caller's memo is read as `d in memo` then `memo[d]`; deepcopy() has no _nil; the
  builtin frozendict (PEP 814) is atomic for copy() and rebuilt by _deepcopy_frozendict.
- Every release: a seeded memo entry and a memo mapping that logs its calls.

Each scenario runs once per implementation, and the two pictures (results, identity with the
source, the calls a mapping saw, the memo) must be equal.  Tests that change the copy module's
tables restore them, whatever happens.
"""
import builtins
import copy
import inspect
import unittest

import pytest

from conftest import FASTCOPY, needs_fastcopy

SETS = hasattr(copy, "_atomic_types")
MUTABLE_SETS = SETS and isinstance(copy._atomic_types, set)
FROZENDICT = getattr(builtins, "frozendict", None)
HAS_FROZENDICT = FROZENDICT is not None
needs_sets = pytest.mark.skipif(not SETS, reason="copy's atomic sets are 3.14+")
needs_mutable_sets = pytest.mark.skipif(not MUTABLE_SETS,
                                        reason="copy's sets can be changed in place on 3.14 only")
needs_frozendict = pytest.mark.skipif(not HAS_FROZENDICT, reason="frozendict is 3.15+")


class Loud:
    """A plain class: deep-copied through reduce, shallow-copied through reduce."""

    def __init__(self, v=0):
        self.v = v

    def __eq__(self, other):
        return type(other) is Loud and other.v == self.v

    __hash__ = None


class LogMemo:
    """A memo mapping that logs every call made on it."""

    def __init__(self, log, seed=None):
        self.d = dict(seed or {})
        self.log = log

    def get(self, k, default=None):
        self.log.append(("get", k))
        return self.d.get(k, default)

    def __contains__(self, k):
        self.log.append(("in", k))
        return k in self.d

    def __getitem__(self, k):
        self.log.append(("getitem", k))
        return self.d[k]

    def __setitem__(self, k, v):
        self.log.append(("set", k))
        self.d[k] = v


def both(scenario):
    """scenario(impl) under copy and fastcopy: the two pictures, equal."""
    want = scenario(copy)
    if FASTCOPY is None:
        pytest.skip("fastcopy core not built")
    got = scenario(FASTCOPY)
    assert got == want
    return want


def outcome(f):
    try:
        return ("ok", f())
    except Exception as e:  # the picture of an error: its type and text
        return ("raise", type(e).__name__, str(e))


class Restore:
    """Put the copy module's tables back as they were (sets: their members too)."""

    NAMES = ("_atomic_types", "_copy_atomic_types", "_copy_builtin_containers",
             "_deepcopy_dispatch")

    def __enter__(self):
        self.saved = {n: getattr(copy, n) for n in self.NAMES if hasattr(copy, n)}
        self.members = {n: set(v) if isinstance(v, set) else dict(v) if isinstance(v, dict) else None
                        for n, v in self.saved.items()}
        return self

    def __exit__(self, *exc):
        for n, v in self.saved.items():
            setattr(copy, n, v)
            m = self.members[n]
            if isinstance(v, set):
                v.clear()
                v.update(m)
            elif isinstance(v, dict):
                v.clear()
                v.update(m)
        return False


# --------------------------------------------------------------------------------------------
# The memo, every release
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("atom", [5, "s", 2.5, None, b"b", range(3), len, int])
def test_seeded_memo_entry_for_an_atomic(atom):
    # <= 3.13: the memo is asked first, so the seeded value comes back; 3.14+: the atomic test
    # comes first and the entry is ignored
    def run(impl):
        memo = {id(atom): "seeded"}
        r = impl.deepcopy(atom, memo)
        return (r if r == "seeded" else r is atom), len(memo)
    both(run)


@pytest.mark.parametrize("make", [lambda: 5, lambda: "text", lambda: [1, [2]],
                                  lambda: (1, [2]), lambda: {"a": [1]}, lambda: Loud(3),
                                  lambda: [5, "s", (None,)]])
def test_mapping_memo_calls(make):
    # the calls a caller's mapping sees, in order: `get` through 3.14, `in` then `[]` from 3.15;
    # none at all for an atomic on 3.14+
    def run(impl):
        x = make()
        log = []
        memo = LogMemo(log)
        y = impl.deepcopy(x, memo)
        ids = {id(x): "x"}
        return ([(op, ids.get(k, "other")) for op, k in log], y == x,
                sorted(type(v).__name__ for v in memo.d.values()))
    both(run)


def test_mapping_memo_hit():
    def run(impl):
        x = [1]
        log = []
        memo = LogMemo(log, {id(x): "hit"})
        return impl.deepcopy(x, memo), [op for op, _ in log]
    both(run)


def test_mapping_memo_contains_lies():
    # 3.15 asks `in` first: a mapping whose __contains__ says yes for a missing key is then
    # indexed, and its KeyError is the caller's; through 3.14 .get answers alone
    class Liar(LogMemo):
        def __contains__(self, k):
            self.log.append(("in", k))
            return True

    def run(impl):
        log = []
        return outcome(lambda: impl.deepcopy([1], Liar(log))), [op for op, _ in log][:3]
    both(run)


@needs_fastcopy
def test_patched_signature_is_the_stdlib_one():
    want = inspect.signature(copy.deepcopy)
    with FASTCOPY.patched():
        assert inspect.signature(copy.deepcopy) == want
        assert copy.deepcopy([1, [2]]) == [1, [2]]
        assert copy.deepcopy([1], {}) == [1]
    assert inspect.signature(copy.deepcopy) == want


# --------------------------------------------------------------------------------------------
# 3.14+: the sets
# --------------------------------------------------------------------------------------------

@needs_sets
def test_super_is_atomic_for_copy():
    both(lambda impl: impl.copy(s := super(int, 1)) is s)


@needs_mutable_sets
def test_atomic_set_gains_a_class():
    def run(impl):
        with Restore():
            copy._atomic_types.add(Loud)
            x = [Loud(1), Loud(1)]
            y = impl.deepcopy(x)
            memo = {}
            z = impl.deepcopy(x, memo)
            return y[0] is x[0], y[1] is x[1], z[0] is x[0], len(memo)
    both(run)


@needs_mutable_sets
def test_atomic_set_loses_complex():
    # complex leaves _atomic_types: deepcopy(complex) goes the whole road (a reduce whose args,
    # two floats, are still atomic: int or float would recurse forever in the stdlib too), and
    # a memo entry for it counts again
    def run(impl):
        with Restore():
            copy._atomic_types.discard(complex)
            z = complex(1, 2)
            memo = {}
            y = impl.deepcopy([z, z], memo)
            seeded = impl.deepcopy(z, {id(z): "seeded"})
            return y == [z, z], y[0] is z, y[0] is y[1], len(memo), seeded
    both(run)


@needs_mutable_sets
def test_atomic_set_swap_in_place():
    # one member out and another in: the same size, so only the members tell
    def run(impl):
        with Restore():
            impl.deepcopy([1])          # the sets read before the change
            copy._atomic_types.discard(range)
            copy._atomic_types.add(Loud)
            x = [range(3), Loud(1)]
            y = impl.deepcopy(x)
            return y[0] == range(3), y[0] is x[0], y[1] is x[1]
    both(run)


@needs_mutable_sets
def test_atomic_set_changed_by_a_hook_mid_copy():
    class Adder:
        def __deepcopy__(self, memo):
            copy._atomic_types.add(Loud)
            return Adder()

    def run(impl):
        with Restore():
            x = [Loud(1), Adder(), Loud(2)]
            y = impl.deepcopy(x)
            return y[0] is x[0], y[2] is x[2]
    both(run)


@needs_mutable_sets
def test_copy_sets_changed():
    class WithCopy(list):
        def copy(self):
            return ["via copy()"]

    def run(impl):
        with Restore():
            out = []
            copy._copy_atomic_types.add(Loud)
            x = Loud(1)
            out.append(impl.copy(x) is x)
            copy._copy_atomic_types.discard(Loud)
            out.append(impl.copy(x) is x)
            copy._copy_builtin_containers.add(WithCopy)
            out.append(impl.copy(WithCopy([1])))
            copy._copy_builtin_containers.discard(list)
            lst = [1, [2]]
            c = impl.copy(lst)
            out.append((c == lst, c is lst, c[1] is lst[1]))
            copy._copy_atomic_types.add(list)
            out.append(impl.copy(lst) is lst)
            return out
    both(run)


@needs_mutable_sets
def test_copy_sets_changed_between_deepcopies():
    # deepcopy() reads only _atomic_types: a change to copy()'s two sets made while deepcopy()
    # calls run must still be seen by the next copy()
    def run(impl):
        with Restore():
            out = []
            x, lst = Loud(1), [1, [2]]
            impl.deepcopy([1])
            copy._copy_atomic_types.add(Loud)
            out.append(impl.deepcopy([x])[0] is x)      # deepcopy: not atomic
            impl.deepcopy({"k": [1]})
            out.append(impl.copy(x) is x)               # copy: atomic now
            copy._copy_atomic_types.discard(Loud)
            impl.deepcopy([1])
            out.append(impl.copy(x) is x)
            copy._copy_builtin_containers.discard(list)
            impl.deepcopy([lst])
            c = impl.copy(lst)
            out.append((c == lst, c is lst, c[1] is lst[1]))
            return out
    both(run)


@needs_mutable_sets
def test_copy_sets_changed_by_a_hook_mid_deepcopy():
    class Adder:
        def __deepcopy__(self, memo):
            copy._copy_atomic_types.add(Loud)
            copy._copy_builtin_containers.discard(dict)
            return Adder()

    def run(impl):
        with Restore():
            x, d = Loud(1), {"a": [1]}
            y = impl.deepcopy([Loud(2), Adder(), {"b": [2]}, Loud(3)])
            c = impl.copy(d)
            return (type(y[1]).__name__, y[2], impl.copy(x) is x,
                    (c == d, c is d, c["a"] is d["a"]))
    both(run)


@needs_mutable_sets
@pytest.mark.parametrize("extra", [0, 40], ids=["small_table", "big_table"])
def test_atomic_set_swap_in_place_at_every_table_size(extra):
    # _atomic_types with a table of up to 32 slots is compared whole, a bigger one member by
    # member (plan.c, fc_set_moved): one member out and another in, the same size, either way
    fillers = [type("Filler%d" % i, (), {}) for i in range(extra)]

    def run(impl):
        with Restore():
            copy._atomic_types.update(fillers)
            f = fillers[0]() if fillers else None
            impl.deepcopy([1, f])
            copy._atomic_types.discard(range)
            copy._atomic_types.add(Loud)
            x = [range(3), Loud(1), f]
            y = impl.deepcopy(x)
            copy._atomic_types.discard(Loud)
            copy._atomic_types.add(range)
            z = impl.deepcopy(x)
            return (y[0] == range(3), y[0] is x[0], y[1] is x[1], y[2] is x[2],
                    z[0] is x[0], z[1] is x[1], z[1] == x[1])
    both(run)


@needs_mutable_sets
def test_copy_sets_changed_by_a_hook_between_pydantic_models():
    # pydantic's __deepcopy__ copies __pydantic_fields_set__ with copy(): a hook that makes set
    # atomic for copy() midway is seen by the next model's fields set (the native road reads
    # copy()'s sets once a call, and again after user code)
    pydantic = pytest.importorskip("pydantic")
    from typing import Any

    class M(pydantic.BaseModel):
        a: list
        h: Any = None

    class Flip:
        def __deepcopy__(self, memo):
            copy._copy_atomic_types.add(set)
            return Flip()

    def run(impl):
        with Restore():
            ms = [M(a=[1]), M(a=[2], h=Flip()), M(a=[3]), M(a=[4])]
            ys = impl.deepcopy(ms)
            return ([y.a for y in ys],
                    [y.__pydantic_fields_set__ is m.__pydantic_fields_set__
                     for y, m in zip(ys, ms)],
                    [sorted(y.__pydantic_fields_set__) for y in ys])
    want = both(run)
    assert want[1] == [False, True, True, True]   # model 2: its h field is copied first


@needs_sets
def test_sets_rebound():
    # rebinding works on 3.14 and 3.15 alike: the module's globals are watched
    def run(impl):
        with Restore():
            kind = type(copy._atomic_types)
            copy._atomic_types = kind(set(copy._atomic_types) | {Loud})
            x = [Loud(1)]
            a = impl.deepcopy(x)[0] is x[0]
            copy._copy_atomic_types = kind(set(copy._copy_atomic_types) - {tuple})
            t = (1, 2)
            b = impl.copy(t) is t
            return a, b
    both(run)


@needs_sets
def test_atomic_set_replaced_by_a_user_container():
    class Box:
        def __init__(self, log):
            self.log = log

        def __contains__(self, cls):
            self.log.append(cls.__name__)
            return cls in (int, float, str, type, type(None), Loud)

    def run(impl):
        with Restore():
            log = []
            copy._atomic_types = Box(log)
            x = [1, Loud(2), "s", 2.5, complex(1, 2)]
            y = impl.deepcopy(x)
            return [a is b for a, b in zip(x, y)], log
    both(run)


@needs_sets
def test_atomic_never_touches_a_mapping_memo():
    def run(impl):
        log = []
        memo = LogMemo(log)
        for atom in (1, "s", None, int, len, 2.5, b"x"):
            assert impl.deepcopy(atom, memo) is atom
        return log
    assert both(run) == []


# A reconstruct's user code (its __reduce__, its class call, its __setstate__) may change
# _atomic_types; the set is compared again before anything after it is classified: the
# reduce's args, its state, the parent's next items, a nested walk's (deepcopy.c, "Syncs owed").

class Rebuilt:
    """Built by ``Rebuilt(*args)``, given its state by __setstate__."""

    def __init__(self, *args):
        self.args = args
        _EDIT.pop("func", _nothing)()

    def __reduce__(self):
        _EDIT.pop("reduce", _nothing)()
        return (Rebuilt, self.args, self.__dict__.get("state"))

    def __setstate__(self, state):
        self.state = state
        _EDIT.pop("setstate", _nothing)()


def _nothing():
    pass


_EDIT = {}


def _add_loud():
    copy._atomic_types.add(Loud)


def _swap_range_for_loud():
    copy._atomic_types.discard(range)
    copy._atomic_types.add(Loud)


def _drop_complex():
    copy._atomic_types.discard(complex)


def _picture(src, y):
    """What a copy kept of its source, by identity, for the Loud, range and complex leaves."""
    out = []

    def walk(a, b):
        if isinstance(a, Rebuilt):
            walk(a.args, b.args)
            walk(a.__dict__.get("state"), b.__dict__.get("state"))
        elif isinstance(a, (list, tuple)):
            for p, q in zip(a, b):
                walk(p, q)
        elif isinstance(a, dict):
            for k in a:
                walk(a[k], b[k])
        elif isinstance(a, (Loud, range, complex)):
            out.append((type(a).__name__, a is b, a == b))
    walk(src, y)
    return out


def _rebuilt(args=(), state=None):
    r = Rebuilt(*args)
    if state is not None:
        r.state = state
    return r


@needs_mutable_sets
@pytest.mark.parametrize("where", ["reduce", "func", "setstate"])
@pytest.mark.parametrize("edit", [_add_loud, _swap_range_for_loud, _drop_complex],
                         ids=["add", "swap", "drop"])
@pytest.mark.parametrize("shape", ["root", "list", "dict", "tuple", "nested"])
def test_atomic_set_changed_by_a_reconstruct(where, edit, shape):
    def leaves():
        return [Loud(1), range(3), complex(1, 2)]

    def build():
        r = _rebuilt(args=tuple(leaves()), state={"s": leaves()})
        if shape == "root":
            return r
        if shape == "list":
            return [r] + leaves()
        if shape == "dict":
            return {"r": r, "after": leaves()}
        if shape == "tuple":
            return (r,) + tuple(leaves())
        # the reconstruct inside another one's state, its parent's items after it
        return _rebuilt(args=(Loud(0),), state={"inner": r, "after": leaves()})

    def run(impl):
        with Restore():
            x = build()
            _EDIT.clear()
            _EDIT[where] = edit
            try:
                y = impl.deepcopy(x)
                memo = {}
                _EDIT[where] = edit
                impl.deepcopy(build(), memo)
            finally:
                _EDIT.clear()
            return _picture(x, y), len(memo) > 0, sorted(t.__name__ for t in copy._atomic_types
                                                         if t in (Loud, range, complex))
    both(run)


@needs_mutable_sets
def test_atomic_set_changed_by_a_reconstruct_seen_by_a_mapping_memo():
    # complex leaves the set in a __setstate__: the stdlib asks the memo for the complex
    # numbers after it, and stores their copies there
    def run(impl):
        with Restore():
            log = []
            memo = LogMemo(log)
            z = complex(1, 2)
            x = [_rebuilt(state={"a": 1, "z": z}), z, [z, 8]]
            _EDIT["setstate"] = _drop_complex
            try:
                y = impl.deepcopy(x, memo)
            finally:
                _EDIT.clear()
            ids = {id(z): "z", id(x[2]): "[z, 8]", id(x): "x", id(x[0]): "r"}
            return (y[1:], y[1] is z, y[2][0] is y[1],
                    [(op, ids.get(k, "other")) for op, k in log])
    both(run)


@needs_mutable_sets
def test_atomic_set_changed_by_a_reconstruct_in_an_object_array():
    # numpy's object arrays copy their items through a nested walk (numpy.c)
    np = pytest.importorskip("numpy")

    def run(impl):
        with Restore():
            a = np.empty(3, dtype=object)
            a[0] = _rebuilt(state={"s": 1})
            a[1] = Loud(1)
            a[2] = [Loud(2)]
            _EDIT["setstate"] = _add_loud
            try:
                b = impl.deepcopy(a)
            finally:
                _EDIT.clear()
            return b[1] is a[1], b[2][0] is a[2][0], b[2] is a[2]
    both(run)


# --------------------------------------------------------------------------------------------
# 3.15: frozendict
# --------------------------------------------------------------------------------------------

def _fd(*a, **k):
    return FROZENDICT(*a, **k)


@needs_frozendict
def test_frozendict_copy_is_itself():
    both(lambda impl: impl.copy(fd := _fd(a=[1])) is fd)


@needs_frozendict
@pytest.mark.parametrize("make", [
    lambda: _fd(),
    lambda: _fd(a=1, b="s"),
    lambda: _fd(a=[1], b=(2, [3])),
    lambda: [_fd(a=[1])] * 2,
    lambda: _fd({(1, 2): Loud(3)}),
    lambda: {"x": _fd(y=_fd(z=[1]))},
])
def test_frozendict_deepcopy(make):
    def run(impl):
        x = make()
        memo = {}
        y = impl.deepcopy(x, memo)
        inner = y[0] if isinstance(y, list) else y
        return (y == x, type(y).__name__, y is x, inner is (x[0] if isinstance(x, list) else x),
                isinstance(y, list) and y[0] is y[1], len(memo), id(x) in memo)
    both(run)


@needs_frozendict
def test_frozendict_recursive_through_a_list():
    # the frozendict is not stored, but a list inside it that holds it is: the copy made through
    # the list is what the memo answers after the items
    def run(impl):
        lst = []
        fd = _fd(a=lst)
        lst.append(fd)
        y = impl.deepcopy(fd)
        return type(y).__name__, y["a"][0] is y, y is fd
    both(run)


@needs_frozendict
def test_frozendict_hook_sees_the_memo():
    class Hook:
        def __deepcopy__(self, memo):
            memo[id(self)] = "seen"
            return sorted(type(v).__name__ for v in memo.values())

    def run(impl):
        y = impl.deepcopy(_fd(a=[1], h=Hook()))
        return dict(y)["h"]
    both(run)


@needs_frozendict
def test_frozendict_key_and_value_order():
    log = []

    class Rec:
        def __init__(self, n):
            self.n = n

        def __deepcopy__(self, memo):
            log.append(self.n)
            return Rec(self.n)

        def __hash__(self):
            return hash(self.n)

        def __eq__(self, other):
            return isinstance(other, Rec) and other.n == self.n

    def run(impl):
        del log[:]
        impl.deepcopy(_fd({Rec("k1"): Rec("v1"), Rec("k2"): Rec("v2")}))
        return list(log)
    both(run)


@needs_frozendict
@needs_fastcopy
def test_frozendict_along_a_selective_path():
    # copy(x, deep=...) rebuilds an exact frozendict on the path as it rebuilds a tuple: the
    # named keys deep-copied, the rest shared, the source untouched
    inner = [1]
    fd = _fd(a=[2], b=inner)
    y = FASTCOPY.copy({"x": fd}, deep=[("x", "a")])
    assert type(y["x"]) is FROZENDICT and y["x"] == fd and y["x"] is not fd
    assert y["x"]["a"] is not fd["a"] and y["x"]["b"] is inner
    top = FASTCOPY.copy(fd, deep=["a"])
    assert type(top) is FROZENDICT and top["a"] == [2] and top["a"] is not fd["a"]

    class Sub(FROZENDICT):
        pass
    with pytest.raises(TypeError, match="cannot rebuild a Sub"):
        FASTCOPY.copy(Sub(a=[1]), deep=["a"])


@needs_frozendict
@needs_fastcopy
def test_frozendict_share_cowdict_profile():
    fd = _fd(a=[1], b=_fd(c=[2]))
    y = FASTCOPY.deepcopy((fd, fd), share=list)
    assert y[0] is y[1] and y[0] is not fd and y[0]["a"] is fd["a"]
    m = FASTCOPY.cowdict(fd)
    assert dict(m) == dict(fd)
    c = copy.deepcopy(FASTCOPY.cowdict(x=fd))
    assert c["x"] == fd and c["x"] is not fd
    with FASTCOPY.profile(patch=False) as prof:
        FASTCOPY.deepcopy([fd])
    # the native road: no Python hook ran
    assert sum(s.hooks for s in prof.sites()) == 0


if __name__ == "__main__":
    unittest.main()
