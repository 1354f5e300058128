"""Deferred byte copies of torch tensors (src/defer.c).

fastcopy records the byte copies of one deepcopy call and runs them together;
it must flush before any code that is not its own could look at a result or
write a source, and at the end of the call -- also when the call fails.  Each
test compares with copy.deepcopy, in both modes (torch_defer on and off).
"""
import copy

import pytest

import fastcopy
from fastcopy import _fastcopy
from shape import MALLOC_REGIMES, run_python_under_malloc

torch = pytest.importorskip("torch")

IMPLS = [copy.deepcopy, fastcopy.deepcopy]

# float32 elements: 66 KB, over the 64 KiB below which host copies are not
# recorded but run at once -- the tensors that exercise deferral
BIG = 16_500


@pytest.fixture(params=[True, False], ids=["deferred", "eager"])
def defer(request):
    old = fastcopy.configure(torch_defer=request.param)
    yield request.param
    fastcopy.configure(**old)


def flushes():
    return _fastcopy._defer_stats()["flushes"]


def tensors(n=4, size=BIG):
    return [torch.arange(size, dtype=torch.float32) + 100 * i for i in range(n)]


class ReadsMemo:
    """A __deepcopy__ that reports what the copies of `ts` hold right now."""

    def __init__(self, ts):
        self.ts = ts
        self.seen = None

    def __deepcopy__(self, memo):
        got = []
        for t in self.ts:
            y = memo.get(id(t))
            got.append(None if y is None else y.tolist())
        return got


def test_hook_sees_complete_results(defer):
    for impl in IMPLS:
        ts = tensors()
        x = [ts[0], ts[1], {"t": ts[2]}, ts[3], ReadsMemo(ts)]
        y = impl(x)
        assert y[4] == [t.tolist() for t in ts]


class MutatesSource:
    """A __reduce_ex__ that writes into a source tensor already copied."""

    def __init__(self, t):
        self.t = t

    def __reduce_ex__(self, proto):
        self.t.add_(1000)
        return (MutatesSource, (self.t,))


def test_hook_writing_a_source_after_its_copy(defer):
    results = []
    for impl in IMPLS:
        t = torch.arange(BIG, dtype=torch.float64)
        p = torch.nn.Parameter(torch.ones(BIG))
        y = impl([t, p, MutatesSource(t), MutatesSource(p.data)])
        results.append((y[0].tolist(), y[1].tolist(), y[2].t.tolist(), y[3].t.tolist()))
    assert results[0] == results[1]
    assert results[1][0] == list(range(BIG))        # copied before the hook ran


class SetstateReads:
    def __init__(self, t):
        self.t = t
        self.at_setstate = None

    def __getstate__(self):
        return {"t": self.t}

    def __setstate__(self, state):
        self.t = state["t"]
        self.at_setstate = state["t"].tolist()


def test_setstate_sees_complete_state(defer):
    for impl in IMPLS:
        t = torch.arange(BIG) * 3
        y = impl({"a": t, "obj": SetstateReads(t)})
        assert y["obj"].at_setstate == t.tolist()
        assert y["obj"].t is y["a"]


class TensorKey:
    """A dict key whose hash reads its tensor's values (as a copy's hash
    would read the copied tensor while the dict copy inserts it)."""

    hashed = []

    def __init__(self, t):
        self.t = t

    def __hash__(self):
        v = tuple(self.t.tolist())
        TensorKey.hashed.append(v)
        return hash(v)

    def __eq__(self, other):
        return isinstance(other, TensorKey) and self.t.tolist() == other.t.tolist()


def test_key_hash_sees_complete_copy(defer):
    seen = []
    for impl in IMPLS:
        TensorKey.hashed = []
        k = TensorKey(torch.arange(BIG))
        d = {k: "v", "other": torch.zeros(2)}
        y = impl(d)
        seen.append(TensorKey.hashed)
        (ky,) = [key for key in y if isinstance(key, TensorKey)]
        assert ky.t.tolist() == list(range(BIG))
    assert seen[0] == seen[1]


class Boom:
    def __deepcopy__(self, memo):
        raise ValueError("boom")


def test_error_after_queued_copies_leaves_complete_tensors_in_memo(defer):
    for impl in IMPLS:
        ts = tensors(3)
        memo = {}
        with pytest.raises(ValueError, match="boom"):
            impl([ts[0], ts[1], ts[2], Boom()], memo)
        for t in ts:
            assert torch.equal(memo[id(t)], t)


def test_one_flush_per_call(defer):
    x = {"t%d" % i: torch.randn(BIG) for i in range(20)}
    x["p"] = [torch.nn.Parameter(torch.randn(BIG)) for _ in range(5)]
    x["small"] = [torch.randn(4) for _ in range(10)]
    before = flushes()
    y = fastcopy.deepcopy(x)
    assert flushes() - before == (1 if defer else 0)
    for k in x:
        if k not in ("p", "small"):
            assert torch.equal(y[k], x[k])
    assert all(torch.equal(a, b) for a, b in zip(x["p"] + x["small"], y["p"] + y["small"]))


def test_small_host_copies_run_at_once(defer):
    x = {"t%d" % i: torch.randn(4) for i in range(50)}
    x["p"] = [torch.nn.Parameter(torch.randn(3)) for _ in range(5)]
    before = flushes()
    y = fastcopy.deepcopy(x)
    assert flushes() == before             # nothing was recorded
    assert all(torch.equal(x[k], y[k]) for k in x if k != "p")


def test_flush_per_hook_boundary(defer):
    ts = tensors(4, BIG)
    x = [ts[0], ReadsMemo([ts[0]]), ts[1], ReadsMemo([ts[1]]), ts[2], ts[3]]
    before = flushes()
    y = fastcopy.deepcopy(x)
    # a flush before each hook that follows queued copies, one at the end
    assert flushes() - before == (3 if defer else 0)
    assert y[1] == [ts[0].tolist()] and y[3] == [ts[1].tolist()]


def test_threaded_flush_of_big_copies(defer):
    old = fastcopy.configure(numpy_threads=3, numpy_parallel_min_bytes=1 << 16)
    try:
        base = torch.randn(300_000, dtype=torch.float64)
        x = {"a": base, "view": base[10:5000], "b": torch.randn(512, 513),
             "p": torch.nn.Parameter(torch.randn(70_000)), "small": torch.ones(3)}
        a, b = copy.deepcopy(x), fastcopy.deepcopy(x)
        for k in x:
            assert torch.equal(a[k], b[k]) and b[k].stride() == x[k].stride()
        assert b["view"].untyped_storage().data_ptr() == b["a"].untyped_storage().data_ptr()
        assert b["view"].storage_offset() == 10
    finally:
        fastcopy.configure(**old)


POPULATE_CHILD = r"""
import copy, torch, fastcopy
g = torch.Generator().manual_seed(7)
# sizes around the page-population minimum (64 KiB) and the 2 MiB pieces,
# none a multiple of the page size; 38 MB in all, over the 32 MiB from which
# a flush is split over two threads (16 MiB each at least)
sizes = [16_385, 70_001, 262_147, 524_289, 1_100_003, 2_500_001, 5_000_011]
for threads, huge in ((1, True), (3, True), (1, False), (3, False)):
    torch.set_num_threads(threads)
    fastcopy.configure(huge_pages=huge)
    for rnd in range(6):
        x = {i: torch.randn(n, generator=g) for i, n in enumerate(sizes)}
        x["view"] = x[6][1000:4_000_000]
        keep = [fastcopy.deepcopy(x) for _ in range(rnd % 3)]   # heap holes and tops
        y, z = fastcopy.deepcopy(x), copy.deepcopy(x)
        for k in x:
            assert torch.equal(y[k], z[k]), (threads, huge, rnd, k)
            assert y[k].storage_offset() == z[k].storage_offset()
        assert y["view"].untyped_storage().data_ptr() == y[6].untyped_storage().data_ptr()
        del keep, y, z
print("ok")
"""


@pytest.mark.parametrize("malloc", list(MALLOC_REGIMES))
def test_populated_and_threaded_copies_are_exact(malloc):
    """Big host copies map only the destination pages that are missing
    (mincore), or advise huge pages from 4 MiB with huge_pages on, and split
    the bytes over threads: the same bytes as the stdlib's, whether glibc
    hands out fresh mmaps, reused heap, or both."""
    run_python_under_malloc(POPULATE_CHILD, malloc)


def test_share_predicate_sees_complete_copies(defer):
    # share= is fastcopy's own: no stdlib oracle.  The predicate is user
    # code; when it runs on the inner list, the copy of t made just before
    # must hold t's bytes.
    t = torch.arange(BIG)
    memo = {}
    seen = []

    def share(o):
        if isinstance(o, list) and o and o[0] == "inner":
            seen.append(torch.equal(memo[id(t)], t))
        return False

    y = fastcopy.deepcopy([t, ["inner", 2]], memo, share=share)
    assert seen == [True]
    assert torch.equal(y[0], t) and y[1] == ["inner", 2]


def test_configure_roundtrip():
    old = fastcopy.configure(torch_defer=False, torch_cuda=False)
    try:
        now = fastcopy.configure()
        assert now["torch_defer"] is False and now["torch_cuda"] is False
    finally:
        fastcopy.configure(**old)
    assert fastcopy.configure()["torch_defer"] is old["torch_defer"]


def test_cuda_switch_without_cuda_torch_changes_nothing():
    """torch_cuda=True on a CPU-only torch: CPU tensors as before, nothing
    else taken over."""
    old = fastcopy.configure(torch_cuda=True)
    try:
        x = {"t": torch.randn(3, 4), "p": torch.nn.Parameter(torch.randn(2))}
        y = fastcopy.deepcopy(x)
        assert torch.equal(y["t"], x["t"]) and type(y["p"]) is torch.nn.Parameter
    finally:
        fastcopy.configure(**old)


def test_no_leak_of_queued_owners(defer):
    import gc
    import sys
    x = [torch.randn(BIG) for _ in range(20)]
    refs = [sys.getrefcount(t) for t in x]
    for _ in range(50):
        fastcopy.deepcopy(x)
        with pytest.raises(ValueError):
            fastcopy.deepcopy([x, Boom()])
    gc.collect()
    assert [sys.getrefcount(t) for t in x] == refs


class EntersInferenceMode:
    """A hook that leaves torch's inference mode on: the tensors copied
    after it must see it, as torch's own path does."""

    def __deepcopy__(self, memo):
        self.ctx = torch.inference_mode()
        self.ctx.__enter__()
        return "entered"


def test_mode_entered_by_a_hook_is_seen_by_later_tensors(defer):
    shapes = []
    for impl in IMPLS:
        hook = EntersInferenceMode()
        x = [torch.randn(3), torch.nn.Parameter(torch.randn(2)), hook,
             torch.randn(3), torch.nn.Parameter(torch.randn(2))]
        try:
            y = impl(x)
        finally:
            hook.ctx.__exit__(None, None, None)
        shapes.append([(type(v).__name__, v.is_inference(), v.requires_grad)
                       if isinstance(v, torch.Tensor) else v for v in y])
    assert shapes[0] == shapes[1]


# --------------------------------------------------------------------------
# Random graphs: tensors (views of shared storages, Parameters, grads) mixed
# with hooks that read copies, write sources and rebuild state, compared with
# copy.deepcopy by shape (test_torch.shape_of) and by what the hooks saw
# --------------------------------------------------------------------------

LOG = []


class Peek:
    """__deepcopy__ that records the copies of some tensors made so far."""

    def __init__(self, targets):
        self.targets = targets

    def __deepcopy__(self, memo):
        got = []
        for t in self.targets:
            y = memo.get(id(t))
            got.append(None if y is None else y.detach().resolve_neg().tolist())
        LOG.append(("peek", got))
        return got


class Bump:
    """__reduce_ex__ that writes into a source tensor, then rebuilds a list."""

    def __init__(self, t):
        self.t = t

    def __reduce_ex__(self, proto):
        with torch.no_grad():
            self.t.add_(1)
        return (list, ([self.t.detach().sum().item()],))


class Holder:
    """__getstate__/__setstate__ around tensors; __setstate__ reads them."""

    def __init__(self, items):
        self.items = items

    def __getstate__(self):
        return {"items": self.items}

    def __setstate__(self, state):
        self.items = state["items"]
        LOG.append(("setstate", describe(self.items)))


def describe(o, depth=0):
    """Values of tensors inside o (as far as a hook could see them)."""
    if isinstance(o, torch.Tensor):
        return o.detach().resolve_neg().tolist()
    if isinstance(o, (list, tuple)) and depth < 4:
        return [describe(v, depth + 1) for v in o]
    if isinstance(o, dict) and depth < 4:
        return {k: describe(v, depth + 1) for k, v in o.items()}
    return type(o).__name__


def random_graph(seed):
    import random
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    tensors = []

    def tensor():
        r = rng.random()
        if tensors and r < 0.25:
            base = rng.choice(tensors)
            if base.dim() and base.shape[0] > 1 and not isinstance(base, torch.nn.Parameter):
                return base[1:]                      # a view sharing the storage
            return base                              # the same tensor again
        n = rng.choice([1, 3, 8, 300, BIG])
        t = torch.randn(n, generator=g)
        if r < 0.4:
            t = torch.nn.Parameter(t, requires_grad=rng.random() < 0.5)
        elif r < 0.5:
            t.requires_grad_()
            t.grad = torch.randn(n, generator=g)
        elif r < 0.55:
            t = torch._neg_view(t)
        tensors.append(t)
        return t

    def node(depth):
        r = rng.random()
        if depth > 3 or r < 0.35:
            return tensor()
        if r < 0.5:
            return [node(depth + 1) for _ in range(rng.randint(0, 4))]
        if r < 0.6:
            return tuple(node(depth + 1) for _ in range(rng.randint(0, 3)))
        if r < 0.72:
            return {"k%d" % i: node(depth + 1) for i in range(rng.randint(0, 4))}
        if r < 0.8 and tensors:
            return Peek(rng.sample(tensors, min(len(tensors), 3)))
        if r < 0.87 and tensors:
            return Bump(rng.choice([t for t in tensors]))
        if r < 0.95:
            return Holder([node(depth + 1) for _ in range(rng.randint(1, 3))])
        return rng.choice([1, "s", None, 2.5])
    return [node(0) for _ in range(rng.randint(2, 6))]


def holders_state(y, out):
    """What the Holders of a result hold, in walk order."""
    seen = set()
    stack = [y]
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        if isinstance(o, Holder):
            out.append(len(o.items))
            stack.extend(o.items)
        elif isinstance(o, (list, tuple)):
            stack.extend(o)
        elif isinstance(o, dict):
            stack.extend(o.values())
    return out


def memo_sig(memo):
    """The memo's entries in order, without the ids (each implementation
    copies its own fresh graph)."""
    out = []
    for k, v in memo.items():
        if k == id(memo):
            out.append(("keep", [type(o).__name__ for o in v]))
        elif k == "torch":
            out.append(("torch", len(v), [type(s).__name__ for s in v.values()]))
        else:
            out.append(type(v).__name__)
    return out


@pytest.mark.parametrize("memo_kind", [None, "dict"])
def test_random_graphs_with_hooks(defer, memo_kind):
    from test_torch import shape_of
    import os
    for seed in range(int(os.environ.get("FASTCOPY_TORCH_FUZZ_N", "120"))):
        results = []
        for impl in IMPLS:
            x = random_graph(seed)        # fresh: Bump writes into sources
            LOG.clear()
            memo = {} if memo_kind else None
            try:
                y = impl(x, memo)
                res = (shape_of(y, x), holders_state(y, []),
                       memo_sig(memo) if memo is not None else None)
            except Exception as e:        # the same error, at the same point
                res = ("raised", type(e), str(e))
            results.append((res, list(LOG)))
        assert results[0] == results[1], "seed %d" % seed
