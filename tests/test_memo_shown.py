"""The memo a hook is shown: a real dict holding exactly what the stdlib's memo holds at that
moment, whatever the hook does with it -- and, behind it, a walker that goes back to its native
table when the hook left the dict alone (memo.c, "Showing the memo").

Every test runs both implementations (shape.assert_equivalent) and compares, besides the result,
a picture of the memo taken *inside* each hook (shape.memo_picture: keys, values and the
keep-alive list, labelled relative to the source and the result).
"""
import copy
import gc
import sysconfig

import pytest

import shape
from shape import Case, assert_equivalent


class Peek:
    """__deepcopy__ that records the memo it is shown and returns self (no memo entry)."""

    def __init__(self, log, src, tag):
        self.log, self.src, self.tag = log, src, tag

    def __deepcopy__(self, memo):
        self.log.append((self.tag, len(memo), shape.memo_picture(memo, source=self.src)))
        return self


class Idiom:
    """The memo idiom: memo[id(self)] = new before copying the children."""

    def __init__(self, log, child):
        self.log, self.child = log, child

    def __deepcopy__(self, memo):
        new = Idiom.__new__(Idiom)
        memo[id(self)] = new
        self.log.append(("idiom", len(memo)))
        new.log = self.log
        new.child = _IMPL[0].deepcopy(self.child, memo)
        return new


class Nested:
    """copy.deepcopy(self.__dict__, memo) inside __deepcopy__ (pydantic's shape)."""

    def __init__(self, log, **kw):
        self.__dict__.update(kw)
        self._log = log

    def __deepcopy__(self, memo):
        new = Nested.__new__(Nested)
        log = self.__dict__.pop("_log")
        try:
            d = _IMPL[0].deepcopy(self.__dict__, memo)
        finally:
            self._log = log
        log.append(("nested", len(memo)))
        new.__dict__.update(d)
        new._log = log
        return new


class Keeper:
    """Keeps the memo it was shown; a later Peek reads it through its own argument."""

    kept = []

    def __deepcopy__(self, memo):
        Keeper.kept.append(memo)
        return self


class KeepAliveEditor:
    def __deepcopy__(self, memo):
        lst = memo.setdefault(id(memo), [])
        lst.append("edited")
        return self


class Deleter:
    def __init__(self, victim):
        self.victim = victim

    def __deepcopy__(self, memo):
        memo.pop(id(self.victim), None)
        return self


_IMPL = [copy]


def _scenario(build):
    def scenario(impl):
        _IMPL[0] = impl
        log = []
        src = build(log)
        return Case(src, lambda: impl.deepcopy(src), log=log)
    return scenario


def _check(build):
    try:
        std = assert_equivalent(_scenario(build))
    finally:
        _IMPL[0] = copy
        del Keeper.kept[:]
    return std


def test_untouched_memo_is_current_at_every_hook():
    def build(log):
        shared = [1, [2]]
        src = []
        src.extend([{"a": shared}, Peek(log, src, 1), [shared, (shared,)], {"b": [3]},
                    Peek(log, src, 2), [[4], shared], Peek(log, src, 3)])
        return src
    std = _check(build)
    assert [t for t, _, _ in std["log"]] == [1, 2, 3]


def test_many_hooks_between_native_stretches():
    def build(log):
        src = []
        for i in range(60):
            src.append({"i": [i], "t": ([i],)})
            if i % 7 == 0:
                src.append(Peek(log, src, i))
        return src
    _check(build)


def test_memo_idiom_then_native_again():
    def build(log):
        src = []
        src.extend([[1], Idiom(log, [2, [3]]), Peek(log, src, "after"), {"k": [4]},
                    Idiom(log, {"x": [5]}), Peek(log, src, "end")])
        return src
    _check(build)


def test_nested_deepcopy_with_the_memo_it_was_shown():
    def build(log):
        shared = [0]
        inner = Nested(log, a=[1], s=shared)
        src = []
        src.extend([shared, inner, Nested(log, b=[2], s=shared, inner=inner),
                    Peek(log, src, "after"), [shared, inner]])
        return src
    _check(build)


def test_nested_calls_three_deep():
    def build(log):
        leaf = Nested(log, x=[1])
        mid = Nested(log, leaf=leaf, p=Peek(log, None, "deep"))
        top = Nested(log, mid=mid, y=[2])
        src = []
        src.extend([top, Peek(log, src, "after"), leaf, mid])
        return src
    _check(build)


def test_hook_keeps_the_memo():
    def build(log):
        src = []
        src.extend([[1], Keeper(), {"a": [2]}, Peek(log, src, "after keeper"), [3]])
        return src
    _check(build)


def test_hook_edits_the_keep_alive_list():
    def build(log):
        src = []
        src.extend([[1], KeepAliveEditor(), [2], Peek(log, src, "after"), ([3],)])
        return src
    _check(build)


def test_hook_deletes_an_entry():
    def build(log):
        victim = [9]
        src = []
        src.extend([victim, Deleter(victim), Peek(log, src, "after"), victim])
        return src
    _check(build)


class Raises:
    def __deepcopy__(self, memo):
        raise ValueError("no")


class NestedRaises:
    def __init__(self):
        self.a = [1]
        self.b = Raises()

    def __deepcopy__(self, memo):
        return _IMPL[0].deepcopy(self.__dict__, memo)


def test_nested_call_raises():
    def scenario(impl):
        _IMPL[0] = impl
        src = [[0], NestedRaises()]
        memo = {}
        return Case(src, lambda: impl.deepcopy(src, memo), memo=memo)
    try:
        std = assert_equivalent(scenario)
    finally:
        _IMPL[0] = copy
    assert std["outcome"][0] == "raise"


class CatchNested:
    """A hook whose nested copy fails and is caught: the memo keeps what was stored."""

    def __init__(self, log, src):
        self.log, self.src = log, src

    def __deepcopy__(self, memo):
        try:
            _IMPL[0].deepcopy([[5], Raises()], memo)
        except ValueError:
            pass
        self.log.append(shape.memo_picture(memo, source=self.src))
        return self


def test_nested_call_raises_and_is_caught():
    def build(log):
        src = []
        src.extend([[1], CatchNested(log, src), [2], Peek(log, src, "after")])
        return src
    _check(build)


def test_patched_deepcopy_inside_hooks(fc):
    def build(log):
        shared = [0]
        src = []
        src.extend([Nested(log, a=[1], s=shared), shared, Peek(log, src, "p")])
        return src
    with fc.patched():
        # the hooks call copy.deepcopy, which is fastcopy's now: both sides run fastcopy's
        # code for the nested calls, and the stdlib's outer walk is the reference
        std = assert_equivalent(_scenario(build))
    assert std["outcome"][0] == "ok"


def test_shown_memo_is_not_left_behind(fc):
    # the mirror of a finished call is garbage at once (no final fill, no leak)
    import sys

    class Same:
        def __deepcopy__(self, memo):
            return self
    src = [[1], Same(), {"a": [2]}]
    for _ in range(50):
        fc.deepcopy(src)
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(200):
        fc.deepcopy(src)
    gc.collect()
    assert len(gc.get_objects()) - before < 50
    if hasattr(sys, "gettotalrefcount"):
        t0 = sys.gettotalrefcount()
        for _ in range(100):
            fc.deepcopy(src)
        assert sys.gettotalrefcount() - t0 < 100


@pytest.mark.parametrize("seed", range(80))
def test_random_hook_mixes(seed):
    import random
    rng = random.Random(seed)
    kinds = ["peek", "idiom", "nested", "keeper", "keepalive", "deleter", "list", "dict",
             "tuple", "overwriter", "storesother", "atomkey", "foreign", "addthendelete",
             "makeskeep", "replkeep", "stdidiom", "atom"]
    picks = [rng.choice(kinds) for _ in range(rng.randrange(3, 25))]

    def build(log):
        src = []
        shared = [[-1]]
        for i, k in enumerate(picks):
            if k == "peek":
                src.append(Peek(log, src, i))
            elif k == "idiom":
                src.append(Idiom(log, [i, shared]))
            elif k == "nested":
                src.append(Nested(log, v=[i], s=shared))
            elif k == "keeper":
                src.append(Keeper())
            elif k == "keepalive":
                src.append(KeepAliveEditor())
            elif k == "deleter":
                src.append(Deleter(shared))
            elif k == "list":
                src.append([i, shared])
            elif k == "dict":
                src.append({"i": [i], "s": shared})
            elif k == "overwriter":
                src.append(Overwriter(shared))
            elif k == "storesother":
                src.append(StoresOther())
            elif k == "atomkey":
                src.append(AtomKey())
            elif k == "foreign":
                src.append(ForeignKeys())
            elif k == "addthendelete":
                src.append(AddThenDelete())
            elif k == "makeskeep":
                src.append(MakesKeepList())
            elif k == "replkeep":
                src.append(ReplacesKeepList())
            elif k == "stdidiom":
                src.append(StdIdiom(v=[i], s=shared))
            elif k == "atom":
                src.append([5, i])
            else:
                src.append((i, shared))
        return src
    _check(build)


def _counts(absorbed=False):
    import fastcopy._fastcopy as core
    i = core._sysinfo()
    out = i["memo_shown"], i["memo_borrowed"], i["memo_to_dict"]
    return out + (i["memo_absorbed"],) if absorbed else out


def _delta(fn, absorbed=False):
    a = _counts(absorbed)
    fn()
    return tuple(q - p for p, q in zip(a, _counts(absorbed)))


class PassAlong:
    """pydantic's BaseModel.__deepcopy__: deepcopy(self.__dict__, memo=memo) through the
    module's own `deepcopy` (the stdlib's function, patched or not)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __deepcopy__(self, memo):
        new = PassAlong.__new__(PassAlong)
        new.__dict__.update(copy.deepcopy(self.__dict__, memo=memo))
        return new


@pytest.mark.skipif(bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                    reason="free-threaded builds never go back to the native memo once it was "
                           "shown: a reference count says nothing there about who holds it")
def test_patched_nested_calls_stay_native(fc):
    # white box: with fastcopy patched in, a hook that passes the memo along neither
    # changes nor keeps it, so the walk goes on natively (no switch to the dict)
    src = [PassAlong(a=[i], b={"c": [i]}) for i in range(20)]
    with fc.patched():
        shown, borrowed, to_dict = _delta(lambda: fc.deepcopy(src))
    assert (shown, borrowed, to_dict) == (20, 20, 0)
    # unpatched, the stdlib's deepcopy writes into the memo: entries whose keys are the ids of
    # the originals it appended to the keep-alive list, which are taken back into the native
    # table after each hook (memo.c, "A hook that writes into the memo")
    assert _delta(lambda: fc.deepcopy(src), absorbed=True) == (20, 0, 0, 20)


class PassAtoms:
    """pydantic's deepcopy(self.__pydantic_extra__, memo=memo) of None, and other atoms,
    next to a container: the memo is looked up and left alone."""

    def __init__(self, items):
        self.items = items

    def __deepcopy__(self, memo):
        before = dict(memo)
        atoms = [copy.deepcopy(a, memo=memo) for a in (None, 5, "s", 2.5, b"b", PassAtoms)]
        assert dict(memo) == before
        new = PassAtoms.__new__(PassAtoms)
        new.items = copy.deepcopy(self.items, memo)
        new.atoms = atoms
        return new


@pytest.mark.skipif(bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                    reason="free-threaded builds never go back to the native memo once it was "
                           "shown: a reference count says nothing there about who holds it")
def test_patched_atoms_with_a_shown_memo_borrow_nothing(fc):
    # white box: an atomic x with the memo a hook was shown is answered from the lender's
    # table, with no loan; the container next to it borrows as before
    src = [PassAtoms([i, [i]]) for i in range(10)]
    with fc.patched():
        shown, borrowed, to_dict = _delta(lambda: fc.deepcopy(src))
        res = fc.deepcopy(src)
    assert (shown, borrowed, to_dict) == (10, 10, 0)
    assert [r.atoms for r in res] == [[None, 5, "s", 2.5, b"b", PassAtoms]] * 10
    assert [r.items for r in res] == [s.items for s in src]
    assert all(r.items[1] is not s.items[1] for r, s in zip(res, src))


@pytest.mark.skipif(bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                    reason="free-threaded builds never go back to the native memo once it was "
                           "shown: a reference count says nothing there about who holds it")
def test_untouched_memo_stays_native(fc):
    class Same:
        def __deepcopy__(self, memo):
            return self
    src = [Same(), [1], Same(), {"a": [2]}, Same()]
    assert _delta(lambda: fc.deepcopy(src)) == (3, 0, 0)


def test_memo_handed_to_another_thread(fc):
    # a hook that copies through another thread with the memo it was shown: that thread's
    # call works on the dict (no loan across threads), and the outcome is the stdlib's
    import threading

    class Threaded:
        def __init__(self, child):
            self.child = child

        def __deepcopy__(self, memo):
            out = []
            t = threading.Thread(target=lambda: out.append(_IMPL[0].deepcopy(self.child, memo)))
            t.start()
            t.join()
            new = Threaded.__new__(Threaded)
            new.child = out[0]
            return new

    def build(log):
        shared = [1]
        src = []
        src.extend([shared, Threaded([shared, {"a": [2]}]), Peek(log, src, "after"), shared])
        return src
    _check(build)


# ---------------------------------------------------------------------------------------------
# Hooks that write into the memo they are shown: what they add is taken back into the native
# table when it can be proven to be only additions of ids of live objects; anything else leaves
# the dict as the memo.  Either way every later hook and the caller see the stdlib's memo.
# ---------------------------------------------------------------------------------------------

class Overwriter:
    """Replaces the copy stored for `victim` (copied before): later references get the marker."""

    def __init__(self, victim):
        self.victim = victim

    def __deepcopy__(self, memo):
        if id(self.victim) in memo:
            memo[id(self.victim)] = ["replaced"]
        return self


class StoresOther:
    """memo[id(self)] = one object, returns another: the caller's store replaces the entry."""

    def __deepcopy__(self, memo):
        memo[id(self)] = ["stored"]
        return ["returned"]


class AtomKey:
    """Pre-seeds an atomic's id: later copies of that atom must return the marker."""

    def __deepcopy__(self, memo):
        memo[id(5)] = "five"
        return self


class ForeignKeys:
    """Keys that are no object's id (an int, a string, as torch's memo["torch"])."""

    def __deepcopy__(self, memo):
        memo[12345] = "x"
        memo.setdefault("torch", {})
        new = ForeignKeys.__new__(ForeignKeys)
        memo[id(self)] = new
        return new


class AddThenDelete:
    def __deepcopy__(self, memo):
        new = AddThenDelete.__new__(AddThenDelete)
        memo[id(self)] = new
        memo[id(new)] = new
        del memo[id(new)]
        return new


class DeleteThenIdiom:
    def __init__(self, victim):
        self.victim = victim

    def __deepcopy__(self, memo):
        memo.pop(id(self.victim), None)
        new = DeleteThenIdiom.__new__(DeleteThenIdiom)
        memo[id(self)] = new
        new.victim = _IMPL[0].deepcopy(self.victim, memo)
        return new


class MakesKeepList:
    """The idiom plus an explicit _keep_alive of its own."""

    def __deepcopy__(self, memo):
        new = MakesKeepList.__new__(MakesKeepList)
        memo[id(self)] = new
        memo.setdefault(id(memo), []).append(self)
        return new


class ReplacesKeepList:
    def __deepcopy__(self, memo):
        memo[id(memo)] = ["fresh"]
        return self


class WritesAndKeeps:
    """The idiom, and the memo kept for a later hook."""

    kept = []

    def __deepcopy__(self, memo):
        new = WritesAndKeeps.__new__(WritesAndKeeps)
        memo[id(self)] = new
        WritesAndKeeps.kept.append(memo)
        return new


class StdIdiom:
    """The documented idiom whose children are copied by the stdlib's own deepcopy, whatever
    the implementation under test: its entries and keep-alive originals come in as additions."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __deepcopy__(self, memo):
        cls = self.__class__
        result = cls.__new__(cls)
        memo[id(self)] = result
        for k, v in self.__dict__.items():
            setattr(result, k, _STD_DEEPCOPY(v, memo))
        return result


def _std_deepcopy():
    import importlib.util
    spec = importlib.util.find_spec("copy")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)     # a private copy of the module: never patched
    return mod.deepcopy


_STD_DEEPCOPY = _std_deepcopy()


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_idiom_then_shared_references(where):
    def build(log):
        shared = [0, [1]]
        src = []
        body = [[shared], {"s": shared}, Peek(log, src, "p1"), (shared, [2])]
        idiom = Idiom(log, [shared, {"k": [3]}])
        pos = {"first": 0, "middle": 2, "last": len(body)}[where]
        body.insert(pos, idiom)
        src.extend(body + [shared, Peek(log, src, "end"), idiom])
        return src
    _check(build)


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_hook_overwrites_an_entry(where):
    def build(log):
        victim = [9]
        src = []
        body = [victim, [victim], Peek(log, src, "p")]
        body.insert({"first": 1, "middle": 2, "last": 3}[where], Overwriter(victim))
        src.extend(body + [victim, {"v": victim}, Peek(log, src, "end")])
        return src
    _check(build)


def test_hook_stores_one_copy_returns_another():
    def build(log):
        src = []
        so = StoresOther()
        src.extend([[1], so, Peek(log, src, "after"), so, [so]])
        return src
    _check(build)


def test_hook_preseeds_an_atom():
    def build(log):
        src = []
        src.extend([[1], AtomKey(), 5, [5, 6], {"five": 5}, (5,), Peek(log, src, "after")])
        return src
    std = _check(build)
    assert std["outcome"][0] == "ok"


def test_hook_adds_foreign_keys():
    def build(log):
        src = []
        src.extend([[1], ForeignKeys(), [2], Peek(log, src, "after"), [3]])
        return src
    _check(build)


def test_hook_adds_then_deletes():
    def build(log):
        src = []
        a = AddThenDelete()
        src.extend([[1], a, [2], Peek(log, src, "after"), a])
        return src
    _check(build)


def test_hook_deletes_then_uses_the_idiom():
    def build(log):
        victim = [7]
        src = []
        src.extend([victim, DeleteThenIdiom(victim), Peek(log, src, "after"), victim, [victim]])
        return src
    _check(build)


@pytest.mark.parametrize("first", [True, False])
def test_hook_makes_or_replaces_the_keep_alive_list(first):
    def build(log):
        src = [] if first else [[0]]
        src.extend([MakesKeepList(), [1], Peek(log, src, "made"), ReplacesKeepList(), [2],
                    Peek(log, src, "replaced"), ([3],)])
        return src
    _check(build)


def test_hook_writes_and_keeps_the_memo():
    class Reader:
        def __deepcopy__(self, memo):
            kept = WritesAndKeeps.kept[-1]
            return [len(kept), kept is memo]

    def build(log):
        src = []
        src.extend([[1], WritesAndKeeps(), {"a": [2]}, Reader(), Peek(log, src, "after"), [3]])
        return src
    try:
        _check(build)
    finally:
        del WritesAndKeeps.kept[:]


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_stdlib_idiom_inside_a_hook(where):
    def build(log):
        shared = [0]
        src = []
        body = [{"a": [1], "s": shared}, [shared], Peek(log, src, "p")]
        body.insert({"first": 0, "middle": 2, "last": 3}[where],
                    StdIdiom(a=[1, [2]], s=shared, t=(shared, {"k": [3]}), n=None))
        src.extend(body + [shared, Peek(log, src, "end")])
        return src
    _check(build)


@pytest.mark.skipif(bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                    reason="free-threaded builds never go back to the native memo once it was "
                           "shown: a reference count says nothing there about who holds it")
def test_writes_go_native_only_when_proven(fc):
    # white box: the idiom's additions are taken back; a key that is no live object's id, an
    # atom's id, a deletion or a replaced keep-alive list leave the dict as the memo
    def run(hook, patched=False):
        src = [[0], hook, [1], {"a": [2]}]
        if patched:
            with fc.patched():
                return _delta(lambda: fc.deepcopy(src), absorbed=True)
        return _delta(lambda: fc.deepcopy(src), absorbed=True)
    assert run(Idiom([], [5])) == (1, 0, 0, 1)
    assert run(Idiom([], [5]), patched=True) == (1, 1, 0, 1)
    assert run(StdIdiom(a=[1], b={"c": [2]})) == (1, 0, 0, 1)
    assert run(MakesKeepList()) == (1, 0, 0, 1)
    assert run(AtomKey()) == (1, 0, 1, 0)
    assert run(ForeignKeys()) == (1, 0, 1, 0)
    # an entry added and deleted again leaves only the addition (and a hole after it)
    assert run(AddThenDelete()) == (1, 0, 0, 1)
    assert run(DeleteThenIdiom([0])) == (1, 0, 0, 1)      # its victim is no entry there

    class DeleteOld:
        def __deepcopy__(self, memo):
            memo.pop(next(iter(memo)))
            return self
    assert run(DeleteOld()) == (1, 0, 1, 0)
    assert run(ReplacesKeepList()) == (1, 0, 1, 0)
