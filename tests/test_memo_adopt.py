"""deepcopy(x, memo) with a caller's small dict: the call runs on a native table whose
mirror is that dict (src/memo.c, "A caller's dict").  Whatever code reaches the dict
while the copy runs -- user code that is not shown it, through a closure or a global --
must find the stdlib's memo of that moment, and what it writes there must count; the
dict after the call, success or failure, is the stdlib's."""
import copy
import gc
import sys
import sysconfig

import pytest

from shape import Case, assert_equivalent

PY314 = sys.version_info >= (3, 14)


def _counter():
    import fastcopy._fastcopy as core
    return core._sysinfo()["memo_adopted"]


def _glance(memo):
    """What code holding the memo can see of it, without ids."""
    out = []
    for k, v in memo.items():
        if k == id(memo):
            out.append(("keep", [type(o).__name__ for o in v]))
        else:
            out.append((type(v).__name__, v if isinstance(v, (int, str)) else None))
    return out


class Peek:
    """A reduce road (user code, never shown the memo) that looks at the caller's memo
    through a box (a class: copied as itself, so the walk never reaches the memo), and
    may write into it."""

    def __init__(self, log, memo, act=None, child=None):
        self.box = type("Box", (), {"log": log, "memo": memo,
                                    "act": staticmethod(act) if act else None})
        self.child = child

    def __reduce__(self):
        box = self.box
        box.log.append(("reduce", _glance(box.memo)))
        if box.act is not None:
            box.act(box.memo)
        return (Peek.rebuilt, (box,), {"child": self.child})

    @staticmethod
    def rebuilt(box):
        box.log.append(("rebuilt", _glance(box.memo)))
        p = Peek.__new__(Peek)
        p.box = box
        return p

    def __setstate__(self, state):
        self.box.log.append(("setstate", _glance(self.box.memo)))
        self.child = state["child"]


def _scenario(build, seed=None):
    def scenario(impl):
        log = []
        memo = {}
        x = build(log, memo)
        if seed is not None:
            seed(memo, x)
        return Case(x, lambda: impl.deepcopy(x, memo), memo=memo, log=log)
    return scenario


def test_user_code_sees_the_memo_of_its_moment():
    def build(log, memo):
        shared = [1, [2]]
        return [shared, {"a": shared, "t": (shared, 3)}, Peek(log, memo, child=[shared, {"k": [4]}]),
                {1, 2}, [shared], Peek(log, memo)]
    assert_equivalent(_scenario(build))


def test_user_code_adds_an_entry_for_what_comes_later():
    def build(log, memo):
        later = [7]

        def act(m):
            m[id(later)] = "seeded"
        return [[1], Peek(log, memo, act), later, [later]]
    assert_equivalent(_scenario(build))


def test_user_code_deletes_an_entry():
    def build(log, memo):
        first = [1]

        def act(m):
            del m[id(first)]
        return [first, Peek(log, memo, act), first]
    assert_equivalent(_scenario(build))


def test_user_code_replaces_or_empties_the_keep_alive_list():
    def build_replace(log, memo):
        def act(m):
            m[id(m)] = ["mine"]
        return [[1], (2, [3]), Peek(log, memo, act), [4]]

    def build_clear(log, memo):
        def act(m):
            m[id(m)].clear()
        return [[1], (2, [3]), Peek(log, memo, act), [4]]
    assert_equivalent(_scenario(build_replace))
    assert_equivalent(_scenario(build_clear))


def test_user_code_copies_with_the_same_memo():
    def build(log, memo):
        shared = [1, [2]]

        def act(m):
            log.append(("nested", len(copy.deepcopy([shared, [5]], m))))
        return [shared, Peek(log, memo, act), shared, [shared]]

    def build_patched(log, memo):
        import fastcopy
        shared = [1, [2]]

        def act(m):
            log.append(("nested", len(fastcopy.deepcopy([shared, [5]], m))))
        return [shared, Peek(log, memo, act), shared, [shared]]
    assert_equivalent(_scenario(build))
    assert_equivalent(_scenario(build_patched))


def test_a_failed_copy_leaves_the_stdlibs_memo():
    class Boom:
        def __reduce__(self):
            raise ValueError("boom")

    def build(log, memo):
        shared = [1, [2]]
        return [shared, {"a": shared}, {1, 2}, (shared, [3]), [Boom()], [9]]
    pic = assert_equivalent(_scenario(build))
    assert pic["outcome"][:2] == ("raise", "ValueError")


def test_the_same_memo_across_calls():
    def scenario(impl):
        memo = {}
        a = [[1], {"k": [2]}]
        b = [a[0], [3]]
        x = [a, b]

        def call():
            return impl.deepcopy(a, memo), impl.deepcopy(b, memo), impl.deepcopy(a, memo)
        return Case(x, call, memo=memo)
    assert_equivalent(scenario)


def test_seeded_entries():
    # 3.14+ takes them into the table; before, the dict stays the memo (an atomic's
    # entry counts there)
    def seed_inner(memo, x):
        memo[id(x[0])] = "seeded"

    def seed_root(memo, x):
        memo[id(x)] = "root"

    def seed_stale(memo, x):
        memo[id(object())] = "stale"        # a dead object's id, as callers leave them
        memo[12345] = "no object"

    def build(log, memo):
        inner = [1]
        return [inner, (inner, 2), {"i": inner}, [5]]
    for seed in (seed_inner, seed_root, seed_stale):
        assert_equivalent(_scenario(build, seed))


def test_the_memo_or_its_keep_alive_list_inside_the_source():
    def scenario(impl):
        memo = {}
        impl.deepcopy([[0]], memo)          # the list is made
        x = [[1], memo[id(memo)]]
        return Case(None, lambda: impl.deepcopy(x, memo), memo)

    assert_equivalent(scenario)

    # the dict itself: the stdlib finds it under id(memo) (its keep-alive
    # list is its "copy") or copies it as it writes into it; the copy holds
    # ids, so it is compared by the types it holds
    def picture(impl, make):
        memo = {}
        x = make(memo)
        try:
            y = impl.deepcopy(x, memo)
        except Exception as e:
            out = ("raise", type(e).__name__, str(e))
        else:
            out = ("ok", repr(type(y[-1])), [type(v).__name__ for v in y[-1].values()]
                   if isinstance(y[-1], dict) else len(y[-1]))
        return out, [type(v).__name__ for v in memo.values()]
    import fastcopy
    for make in (lambda m: [m], lambda m: [[1], m], lambda m: [[1], {"m": m}],
                 lambda m: [(1, [2]), m, m]):
        assert picture(copy, make) == picture(fastcopy, make)


def test_copies_in_the_memo_are_tracked_when_user_code_runs():
    def build(log, memo):
        def act(m):
            log.append(("tracked", [gc.is_tracked(v) for k, v in m.items() if k != id(m)]))
        rows = [[i, [i]] for i in range(300)]       # past the collector's grace
        return [rows, {"r": rows}, Peek(log, memo, act), [[1]]]
    assert_equivalent(_scenario(build))


@pytest.mark.thread_unsafe(reason="counts a module-wide counter")
def test_which_dicts_are_taken(fc):
    x = [[1], {"a": (2, [3])}]
    probe = []

    def taken(memo):
        before = _counter()
        fc.deepcopy(x, memo)
        return _counter() - before
    if taken({}) == 0:
        # 3.10/3.11 (a collection, and so a finalizer, in any allocation) and
        # free-threaded builds keep the dict as the memo
        assert sys.version_info < (3, 12) or sysconfig.get_config_var("Py_GIL_DISABLED")
        return
    probe.append(object())
    assert taken({id(probe[0]): 1}) == (1 if PY314 else 0)
    assert taken({"torch": {}}) == 0                    # not an id
    assert taken({True: 1}) == 0
    assert taken({-5: 1}) == 0
    big = {i: i for i in range(1, 10)}
    assert taken(big) == 0                              # past FC_ADOPT_MAX keys
    m = {}
    m[id(m)] = ()
    with pytest.raises(AttributeError):
        taken(m)                                        # not a list: the dict's road
    m = {}
    fc.deepcopy([[1]], m)                                # its keep-alive list made
    assert taken(m) == (1 if PY314 else 0)             # its entries: 3.14+ only


def test_pydantic_style_hook_memo():
    # pydantic's BaseModel.__deepcopy__: memo = {id(self): new}, then
    # deepcopy(self.__dict__, memo) -- the call this road is for
    class Model:
        def __init__(self, **kw):
            self.__dict__.update(kw)

        def __deepcopy__(self, memo=None):
            if memo is None:
                memo = {}
            new = Model.__new__(Model)
            memo[id(self)] = new
            object.__setattr__(new, "__dict__", copy.deepcopy(self.__dict__, memo=memo))
            return new

    def scenario(impl):
        inner = Model(v=[1], d={"k": (2, [3])})
        m = Model(a=inner, b=[inner, {1, 2}], c=(inner, "s"))
        memo = {}
        memo[id(m)] = Model.__new__(Model)
        return Case(m, lambda: impl.deepcopy(m.__dict__, memo), memo=memo)
    assert_equivalent(scenario)


class CopiesTheMemo:
    """A hook that hands the walk the very memo it was shown, inside what it copies with it."""

    def __init__(self, log, v):
        self.log, self.v = log, v

    def __deepcopy__(self, memo):
        r = copy.deepcopy([self.v, memo], memo)
        self.log.append((type(r[1]).__name__, len(r[1]) if hasattr(r[1], "__len__") else None))
        return r[0]


@pytest.mark.parametrize("callers", [False, True], ids=["no memo", "caller's dict"])
def test_a_hook_hands_the_walk_its_memo(fc, callers):
    def run(impl):
        log = []
        shared = [1, [2]]
        x = [shared, CopiesTheMemo(log, shared), (shared, [3]), CopiesTheMemo(log, [4])]
        memo = {} if callers else None
        try:
            y = impl.deepcopy(x, memo)
        except Exception as e:
            return ("raise", type(e).__name__, str(e)), log
        types = [type(v).__name__ for v in memo.values()] if callers else None
        return ("ok", [type(v).__name__ for v in y], y[1] is y[0]), log, types
    assert run(copy) == run(fc)


def test_buffers_between_user_code():
    np = pytest.importorskip("numpy")

    def build(log, memo):
        a = np.arange(200000, dtype=np.float64)         # big enough for a native copy
        return [a, {"a": a, "v": a[10:20]}, Peek(log, memo, child=[a]), np.ones(3), [a]]
    assert_equivalent(_scenario(build))


_ADOPT_MUTATE = r"""
import copy, gc, sys
import fastcopy

def handed_back(x):
    return x

BOX = {}

def _free(r, m):
    del r[0]["c"], r[6]["d"]
    r.pop(5)

def _write_memo(r, m):
    m[id(r[6]["c"])] = "seeded"
    del m[id(r[0]["c"])]

# what the user code does to the source r and the memo m
ACTS = {
    "clear_inner": lambda r, m: (r[1]["c"].clear(), r[6]["d"].__setitem__("e", None)),
    "replace": lambda r, m: (r[1].__setitem__("c", [9]), r[6].__setitem__("d", {}),
                             r.__setitem__(7, {"new": [1]})),
    "free": _free,
    "clear_all": lambda r, m: r.clear(),
    "write_memo": _write_memo,
}

class Mutator:
    # user code, not shown the memo, in a call given a caller's dict: empties, replaces and
    # frees parts of the source (some copied already, some not yet), reads the memo through
    # a global, and hands a container of the source back
    def __init__(self, rows, how):
        self.rows, self.act = rows, ACTS[how]
    def __reduce__(self):
        m = BOX["memo"]
        BOX["log"].append((len(m), [type(v).__name__ for k, v in m.items() if k != id(m)]))
        self.act(self.rows, m)
        gc.collect()
        return (handed_back, (self.rows[:1] and self.rows[0].get("c"),))

def picture(impl, how, seeded):
    rows = [{"a": i, "c": [i, 2], "d": {"e": (i, [i])}} for i in range(8)]
    x = [rows[:3], Mutator(rows, how), rows, rows[0]["c"]]
    memo = {id(rows[2]): "pre"} if seeded else {}
    BOX.update(memo=memo, log=[])
    try:
        y = impl.deepcopy(x, memo)
        out = (repr(y), y[1] is (y[2][0].get("c") if y[2] and "c" in y[2][0] else None))
    except Exception as e:
        out = ("raise", type(e).__name__, str(e))
    return (out, BOX["log"], [type(v).__name__ for k, v in memo.items() if k != id(memo)],
            [type(o).__name__ for o in memo.get(id(memo), [])])

for seeded in (False, True):
    for how in ACTS:
        a, b = picture(copy, how, seeded), picture(fastcopy, how, seeded)
        assert a == b, (how, seeded, a, b)
print("ok")
"""


def test_user_code_mutates_and_frees_the_source_with_a_callers_dict():
    """A reductor in a call given a caller's dict empties, replaces and deletes containers of
    the source (freed with their last reference), writes into the memo it reaches through a
    global, then hands a container back: the same result, log and memo as the stdlib's
    (child process: reading a freed container crashes)."""
    from shape import run_python
    p = run_python(_ADOPT_MUTATE, timeout=120)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), (p.stdout[-2000:],
                                                                   p.stderr[-3000:])
