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

torch = pytest.importorskip("torch")

IMPLS = [copy.deepcopy, fastcopy.deepcopy]


@pytest.fixture(params=[True, False], ids=["deferred", "eager"])
def defer(request):
    old = fastcopy.configure(torch_defer=request.param)
    yield request.param
    fastcopy.configure(**old)


def flushes():
    return _fastcopy._defer_stats()["flushes"]


def tensors(n=4, size=8):
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
        t = torch.arange(6, dtype=torch.float64)
        p = torch.nn.Parameter(torch.ones(3))
        y = impl([t, p, MutatesSource(t), MutatesSource(p.data)])
        results.append((y[0].tolist(), y[1].tolist(), y[2].t.tolist(), y[3].t.tolist()))
    assert results[0] == results[1]
    assert results[1][0] == list(range(6))          # copied before the hook ran


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
        t = torch.arange(5) * 3
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
        k = TensorKey(torch.tensor([1, 2, 3]))
        d = {k: "v", "other": torch.zeros(2)}
        y = impl(d)
        seen.append(TensorKey.hashed)
        (ky,) = [key for key in y if isinstance(key, TensorKey)]
        assert ky.t.tolist() == [1, 2, 3]
    assert seen[0] == seen[1]


class Boom:
    def __deepcopy__(self, memo):
        raise ValueError("boom")


def test_error_after_queued_copies_leaves_complete_tensors_in_memo(defer):
    for impl in IMPLS:
        ts = tensors(3, 1000)
        memo = {}
        with pytest.raises(ValueError, match="boom"):
            impl([ts[0], ts[1], ts[2], Boom()], memo)
        for t in ts:
            assert torch.equal(memo[id(t)], t)


def test_one_flush_per_call(defer):
    x = {"t%d" % i: torch.randn(4) for i in range(50)}
    x["p"] = [torch.nn.Parameter(torch.randn(3)) for _ in range(5)]
    before = flushes()
    y = fastcopy.deepcopy(x)
    assert flushes() - before == (1 if defer else 0)
    for k in x:
        if k != "p":
            assert torch.equal(y[k], x[k])


def test_flush_per_hook_boundary(defer):
    ts = tensors(4)
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


def test_share_predicate_sees_complete_copies(defer):
    t = torch.arange(4)
    seen = []

    def share(o):
        if isinstance(o, list):
            seen.append(memo_probe[0] if memo_probe else None)
        return False

    memo_probe = []
    memo = {}
    y = fastcopy.deepcopy([t, [1, 2]], memo, share=share)
    assert torch.equal(y[0], t)
    assert torch.equal(memo[id(t)], t)


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
    x = [torch.randn(16) for _ in range(20)]
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
