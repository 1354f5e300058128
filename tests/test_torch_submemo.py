"""torch's "torch" sub-memo in a native memo (memo.c, "A sub-memo").

UntypedStorage.__deepcopy__ keeps its own memo under memo["torch"], keyed by the storage's
_cdata.  With memo=None fastcopy copies tensors without turning its native table into a dict:
the sub-memo is held beside the table and put into the dict a hook is shown at the place the
stdlib's setdefault put it.  Each test copies the same source with copy.deepcopy and
fastcopy.deepcopy (memo=None) and compares the results and the memo each hook was shown,
with hooks that only look, that write into memo["torch"], replace or delete it, or copy a
tensor through the memo themselves.
"""
import copy

import pytest

import fastcopy

torch = pytest.importorskip("torch")

from test_torch import shape_of  # noqa: E402  (needs torch)

IMPLS = {"copy": copy.deepcopy, "fastcopy": fastcopy.deepcopy}


def plain(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g)


class Names:
    """Labels for the objects of a source: its tensors, their storage objects (held here, so
    both runs meet the same ones), dicts and lists, by identity; storages by _cdata."""

    def __init__(self, src):
        self.by_id = {}
        self.cdata = {}
        self.held = []
        self._walk(src, "src")

    def _walk(self, o, name):
        if id(o) in self.by_id:
            return
        self.by_id[id(o)] = name
        self.held.append(o)
        if isinstance(o, torch.Tensor):
            us = o.untyped_storage()
            self.held.append(us)
            self.by_id.setdefault(id(us), name + ".storage")
            self.cdata.setdefault(us._cdata, name + ".storage")
            d = o.__dict__
            self.held.append(d)
            self.by_id.setdefault(id(d), name + ".__dict__")
            if o.grad is not None:
                self._walk(o.grad, name + ".grad")
        elif isinstance(o, (list, tuple)):
            for i, v in enumerate(o):
                self._walk(v, "%s[%d]" % (name, i))
        elif isinstance(o, dict):
            for k, v in o.items():
                self._walk(v, "%s[%r]" % (name, k))

    def label(self, o):
        return self.by_id.get(id(o), type(o).__name__)

    def picture(self, memo):
        """The memo in order: each key by the object it is the id of, values by type; the
        keep-alive list by its originals; the sub-memo by the storages its keys name."""
        out = []
        for k, v in memo.items():
            if k == id(memo):
                out.append(("keep", tuple(self.label(o) for o in v)))
            elif k == "torch":
                out.append(("torch", type(v).__name__,
                            tuple((self.cdata.get(c, "?"), type(s).__name__)
                                  for c, s in v.items()) if isinstance(v, dict) else None))
            else:
                out.append((self.by_id.get(k, "?"), type(v).__name__))
        return out


class Peek:
    """Records the memo it is shown; returns itself."""

    def __init__(self, log, names, tag):
        self.log, self.names, self.tag = log, names, tag

    def __deepcopy__(self, memo):
        self.log.append((self.tag, len(memo), self.names[0].picture(memo)))
        return self


class Act:
    """Runs act(memo) when copied (after recording the memo); returns itself."""

    def __init__(self, log, names, act):
        self.log, self.names, self.act = log, names, act

    def __deepcopy__(self, memo):
        self.log.append(("act", self.names[0].picture(memo)))
        self.act(memo)
        return self


def both(build):
    """build(log, names) -> source; copied by each implementation with memo=None.  Returns
    {impl: (result shape or error, log)} and asserts the two agree."""
    out = {}
    for name, impl in IMPLS.items():
        _IMPL[0] = impl
        log, names = [], [None]
        src = build(log, names)
        names[0] = Names(src)
        try:
            y = impl(src)
            res = shape_of(y, src)
        except Exception as e:
            res = ("raised", type(e).__name__, str(e))
        out[name] = (res, log)
    _IMPL[0] = copy.deepcopy
    assert out["copy"][0] == out["fastcopy"][0]
    assert out["copy"][1] == out["fastcopy"][1]
    return out


def test_hook_after_a_tensor_sees_the_sub_memo():
    out = both(lambda log, names: [plain(4), Peek(log, names, 1)])
    pic = out["copy"][1][0][2]
    assert [e[0] for e in pic] == ["src", "torch", "src[0].storage", "keep",
                                   "src[0].__dict__", "src[0]"]


def test_keep_alive_list_before_the_sub_memo_at_one_place():
    # the inner list's keep-alive comes after two entries, and so does "torch"
    out = both(lambda log, names: [[], plain(4), Peek(log, names, 1)])
    pic = out["copy"][1][0][2]
    assert [e[0] for e in pic][:4] == ["src", "src[0]", "keep", "torch"]


def test_shared_storages_views_and_hooks_between():
    def build(log, names):
        a, b = plain(6), plain(3, seed=1)
        return [a, a[2:], Peek(log, names, 1), b, {"again": a, "b": b[1:]}, Peek(log, names, 2)]
    both(build)


def test_many_tensors_and_a_hook_every_few():
    def build(log, names):
        src = []
        base = [plain(4, seed=i) for i in range(5)]
        for i in range(40):
            src.append(base[i % 5] if i % 3 else base[i % 5][1:])
            if i % 9 == 0:
                src.append(Peek(log, names, i))
        return src
    both(build)


def test_hook_adds_to_the_sub_memo():
    # the next tensor's storage is found in memo["torch"]: both share that storage object
    other = torch.UntypedStorage(16)

    def build(log, names):
        t1, t2 = plain(4), plain(4, seed=1)

        def act(memo):
            memo["torch"][t2.untyped_storage()._cdata] = other
        return [t1, Act(log, names, act), t2, Peek(log, names, 1)]
    out = both(build)
    # the hook's entry is in the sub-memo the last hook is shown
    sub = [e for e in out["copy"][1][-1][2] if e[0] == "torch"]
    assert sub and ("src[2].storage", "UntypedStorage") in sub[0][2]


@pytest.mark.parametrize("how", ["replace", "delete"])
def test_hook_replaces_or_deletes_the_sub_memo(how):
    def build(log, names):
        t1, t2 = plain(4), plain(4, seed=1)

        def act(memo):
            if how == "replace":
                memo["torch"] = {}
            else:
                del memo["torch"]
        return [t1, Act(log, names, act), t1[1:], t2, Peek(log, names, 1), t2[2:]]
    both(build)


def test_hook_makes_the_sub_memo_first():
    def build(log, names):
        return [Act(log, names, lambda memo: memo.setdefault("torch", {})), plain(4),
                Peek(log, names, 1)]
    both(build)


class Nest:
    """Copies more tensors through the memo it is shown, with the implementation under test
    (_IMPL) or the stdlib's own deepcopy, then records the memo."""

    def __init__(self, log, names, items, own):
        self.log, self.names, self.items, self.own = log, names, items, own

    def __deepcopy__(self, memo):
        new = Nest.__new__(Nest)
        deep = copy.deepcopy if self.own else _IMPL[0]
        new.items = deep(self.items, memo)
        self.log.append(("nest", self.names[0].picture(memo)))
        return new


_IMPL = [copy.deepcopy]


@pytest.mark.parametrize("own", [False, True], ids=["same-impl", "stdlib"])
def test_hook_copies_tensors_through_the_memo(own):
    def build(log, names):
        t1, t2 = plain(4), plain(4, seed=1)
        return [t1, Nest(log, names, [t2, t1[1:]], own), t2, Peek(log, names, 1), t1[2:]]
    both(build)


def test_hook_copies_the_first_tensor_through_the_memo():
    def build(log, names):
        t1, t2 = plain(4), plain(4, seed=1)
        return [Nest(log, names, [t2], False), t1, t2[1:], Peek(log, names, 1)]
    both(build)


def test_patched_nested_copies():
    def build(log, names):
        t1, t2 = plain(4), plain(4, seed=1)
        return [t1, Nest(log, names, [t2, t1[1:]], True), t2, Peek(log, names, 1)]
    fastcopy.patch()
    try:
        both(build)
    finally:
        fastcopy.unpatch()


def test_grad_copied_by_its_own_deepcopy_is_shown_the_memo():
    def build(log, names):
        t = plain(4).requires_grad_()
        t.grad = plain(4, seed=2)
        t.grad.tag = "not native"       # a grad with a __dict__: its own __deepcopy__
        return [plain(3), t, Peek(log, names, 1)]
    out = both(build)
    assert out["copy"][1][0][2][-1][0] == "src[1]"


def test_memo_passed_in_is_unchanged_road():
    # a caller's memo: the dict road as before (its "torch" key in place)
    t = plain(4)
    memos = []
    for impl in IMPLS.values():
        m = {}
        impl([t, t[1:]], m)
        memos.append([(k if k == "torch" else type(k).__name__, type(v).__name__)
                      for k, v in m.items()])
    assert memos[0] == memos[1]


def test_state_dict_stays_native():
    """White box: a dict of plain tensors copies with the memo never shown."""
    sd = {"w%d" % i: plain(8, seed=i) for i in range(20)}
    fastcopy.deepcopy(sd)
    before = fastcopy._fastcopy._sysinfo()
    fastcopy.deepcopy(sd)
    after = fastcopy._fastcopy._sysinfo()
    assert after["memo_to_dict"] == before["memo_to_dict"]
    assert after["memo_shown"] == before["memo_shown"]


class Keeper:
    """Keeps the sub-memo it was shown and writes into it when a later Act asks."""

    kept = []

    def __deepcopy__(self, memo):
        Keeper.kept.append(memo.get("torch"))
        return self


@pytest.mark.parametrize("seed", range(40))
def test_random_mixes(seed):
    """Tensors (fresh, views, shared, with grads), containers and hooks that read the memo,
    write into memo["torch"], replace or delete it, keep it, or copy tensors through the
    memo, in a random order; memo=None, compared with the stdlib."""
    import random
    rng = random.Random(seed)
    kinds = ["tensor", "view", "again", "grad", "list", "peek", "add", "replace", "delete",
             "keep", "keptadd", "nest", "nestown", "makesub"]
    picks = [rng.choice(kinds) for _ in range(rng.randrange(3, 20))]
    spare = torch.UntypedStorage(8)

    def build(log, names):
        del Keeper.kept[:]      # each run writes into the sub-memos it kept itself
        pool = [plain(6, seed=seed * 10 + i) for i in range(3)]
        src = []
        for i, k in enumerate(picks):
            t = pool[i % 3]
            if k == "tensor":
                src.append(plain(5, seed=1000 + i))
            elif k == "view":
                src.append(t[i % 4:])
            elif k == "again":
                src.append(t)
            elif k == "grad":
                g = plain(4, seed=i).requires_grad_()
                g.grad = plain(4, seed=i + 1)
                src.append(g)
            elif k == "list":
                src.append([t, [i]])
            elif k == "peek":
                src.append(Peek(log, names, i))
            elif k == "add":
                src.append(Act(log, names, lambda m, t=t: m.setdefault("torch", {}).__setitem__(
                    t.untyped_storage()._cdata, spare)))
            elif k == "replace":
                src.append(Act(log, names, lambda m: m.__setitem__("torch", {})))
            elif k == "delete":
                src.append(Act(log, names, lambda m: m.pop("torch", None)))
            elif k == "keep":
                src.append(Keeper())
            elif k == "keptadd":
                def act(m, t=t):
                    for sub in Keeper.kept:
                        if isinstance(sub, dict):
                            sub[t.untyped_storage()._cdata] = spare
                src.append(Act(log, names, act))
            elif k == "nest":
                src.append(Nest(log, names, [t, t[1:]], False))
            elif k == "nestown":
                src.append(Nest(log, names, [t[2:]], True))
            else:
                src.append(Act(log, names, lambda m: m.setdefault("torch", {})))
        return src
    try:
        both(build)
    finally:
        del Keeper.kept[:]


class Raises:
    def __deepcopy__(self, memo):
        raise KeyError("hook failed")


class Reads:
    def __deepcopy__(self, memo):
        memo.get("torch")
        return self


class Replaces:
    def __deepcopy__(self, memo):
        memo["torch"] = {}
        return self


@pytest.mark.parametrize("case", ["read", "replace", "raises"])
def test_no_block_growth(case):
    """No leak on the sub-memo's roads: a hook that reads it, one that replaces it, a hook
    that raises after tensors (the table cleared on the error path)."""
    import sysconfig
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        pytest.skip("free-threaded builds free memory lazily")
    from test_leaks import _blocks_delta
    t = plain(8)
    hook = {"read": Reads(), "replace": Replaces(), "raises": Raises()}[case]
    src = [t, t[1:], plain(3), hook, {"a": t}, t[2:]]

    def run():
        try:
            fastcopy.deepcopy(src)
        except KeyError:
            pass
    delta = _blocks_delta(run, 400)
    assert delta < 100, "%s: %d blocks more after 400 calls" % (case, delta)


CHILD = r'''
import copy, gc, sys
sys.path.insert(0, %(here)r)
import torch
import fastcopy
from test_torch import shape_of

def plain(n, seed):
    return torch.randn(n, generator=torch.Generator().manual_seed(seed))

class Frees:
    """Drops the source's uncopied tail (its tensors and their storages go with it), then
    resizes a tensor already copied and writes into its storage."""
    def __init__(self, src):
        self.src = src
    def __deepcopy__(self, memo):
        tail = self.src[self.src.index(self) + 1:]
        del self.src[self.src.index(self) + 1:]
        del tail
        gc.collect()
        self.src[0].resize_(2)
        self.src[1].fill_(7.0)
        self.src.append(plain(3, 99))
        return self

class Kept:
    """Keeps the sub-memo and arms a finalizer for the next collection, mid-copy."""
    subs = []
    def __deepcopy__(self, memo):
        Kept.subs.append(memo.get("torch"))
        arm(scribble)
        return self

def arm(action):
    """cyclic garbage whose finalizer runs action() at a collection from now"""
    class D:
        def __del__(self):
            action()
    d = D(); d.me = d

fired = []

def scribble():
    for sub in Kept.subs:
        if isinstance(sub, dict):
            fired.append(len(sub))
            sub.clear()
            sub[12345] = torch.UntypedStorage(4)

def build(kind):
    a, b = plain(6, 1), plain(5, 2)
    if kind == "frees":
        src = [a, a[1:], None, b, b[2:], plain(4, 3)]
        src[2] = Frees(src)
    else:
        src = [a, Kept(), a[2:], b, [b[1:], plain(4, 4)], a]
    return src

out = {}
for impl in (copy.deepcopy, fastcopy.deepcopy):
    for kind in ("frees", "finalizer"):
        Kept.subs.clear()
        src = build(kind)
        if kind == "finalizer":
            gc.set_threshold(1, 1, 1)
        try:
            y = impl(src)
            res = shape_of(y, src)
        except Exception as e:
            res = ("raised", type(e).__name__, str(e))
        finally:
            gc.set_threshold(700, 10, 10)
        out.setdefault(kind, []).append(res)
for kind, (a, b) in out.items():
    assert a == b, (kind, a, b)
# the finalizer found a sub-memo holding the first tensor's storage, in both runs
assert fired == [1, 1], fired
print("ok")
'''


def test_hooks_and_finalizers_free_the_source_in_a_child():
    """A hook that frees the source's uncopied tensors and changes copied ones, and a
    finalizer that clears a sub-memo a hook kept, mid-copy with the sub-memo native: results
    compared with the stdlib's, in a child process (a crash is a failure, not a dead run)."""
    import os
    from shape import run_python
    p = run_python(CHILD % {"here": os.path.dirname(os.path.abspath(__file__))}, timeout=300)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), (p.returncode, p.stderr[-3000:])
