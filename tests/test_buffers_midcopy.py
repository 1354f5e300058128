"""User code in the middle of a buffer copy (issue 14).

A finalizer (on 3.10/3.11 a collection starts inside any allocation), or a hook of a sibling
object, may rebind a Parameter's ``.data``, ``set_()`` or resize a tensor, drop its last
reference, or resize a numpy array (``refcheck=False``) while fastcopy is copying it -- after
a deferred byte copy of it was recorded, or between an allocation and the bytes it receives.
The copy must never read freed memory nor crash; each node of the result is its source as it
was before or after the change (the stdlib's outcome), or the call raises.

Everything risky runs in a child process (tests/shape.py run_python), so that a crash is a
failed test.  Hooks run at defined points, so there the result is compared with
copy.deepcopy exactly; finalizers run at collections, whose timing differs between the two,
so there each result is checked for consistency (tests/fuzz_buffers.check) and the stdlib run
alongside is held to the same check (where torch's own path allows it).
"""
import os
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from shape import run_python  # noqa: E402

import fastcopy  # noqa: E402

try:
    import numpy  # noqa: F401
    HAVE_NUMPY = True
except ImportError:
    HAVE_NUMPY = False
try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="needs torch")
needs_numpy = pytest.mark.skipif(not HAVE_NUMPY, reason="needs numpy")
# the pool is part of the numpy path, which a core built before numpy was installed lacks
needs_numpy_path = pytest.mark.skipif(not (HAVE_NUMPY and fastcopy.backends()["numpy"]["built"]),
                                      reason="needs a core built with numpy")
SANITIZED = "asan" in os.environ.get("LD_PRELOAD", "")

PRELUDE = textwrap.dedent("""
    import copy, gc, random, sys
    sys.path.insert(0, %r)
    import fastcopy
    import fuzz_buffers as fb

    def arm(k, action):
        # cyclic garbage that runs action() at the k-th collection from now;
        # state["n"] = -1 disarms what is left of it
        state = {"n": k}
        class D:
            def __del__(self):
                state["n"] -= 1
                if state["n"] > 0:
                    d = D(); d.me = d
                elif state["n"] == 0:
                    action()
        d = D(); d.me = d
        return state

    def under_threshold(thr, fn):
        old = gc.get_threshold()
        gc.set_threshold(thr)
        try:
            return fn()
        finally:
            gc.set_threshold(*old)
""" % HERE)


def _run(body, timeout=300):
    proc = run_python(PRELUDE + textwrap.dedent(body), timeout=timeout)
    assert proc.returncode == 0, "rc=%s\n%s\n%s" % (proc.returncode, proc.stdout[-3000:],
                                                    proc.stderr[-3000:])
    assert "DONE" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


# ---------------------------------------------------------------------------------------------
# torch: deferred copies whose source changes before the flush

TORCH_FINALIZER = """
    import torch
    fb.freeze_imports()
    N = 1 << 16                      # 256 KiB of float32: recorded, flushed later
    MODE = %r
    problems, outcomes = [], {}
    for defer in (True, False):
        fastcopy.configure(torch_defer=defer)
        for impl in (fastcopy, copy):
            for k in range(1, 25):
                for thr in (1, 3):
                    ps = [torch.nn.Parameter(torch.randn(N)) for _ in range(3)]
                    ts = [torch.randn(N) for _ in range(3)]
                    src = {}
                    for i, (p, t) in enumerate(zip(ps, ts)):
                        src["p%%d" %% i] = p
                        src["l%%d" %% i] = [[] for _ in range(8)]
                        src["t%%d" %% i] = t
                    before = fb.snapshot(src)
                    snap = {}
                    def act():
                        with torch.no_grad():
                            for p in ps:
                                if MODE == "data":
                                    p.data = torch.zeros(3)
                                elif MODE == "resize":
                                    p.data.resize_(2 * N)       # the storage moves
                                elif MODE == "fill":
                                    p.fill_(7)
                            for t in ts:
                                if MODE == "data":
                                    t.set_()
                                elif MODE == "resize":
                                    t.resize_(3 * N)
                                elif MODE == "fill":
                                    t.fill_(7)
                        if MODE == "drop":
                            ps.clear(); ts.clear()
                            for key in [key for key in src if key[0] in "pt"]:
                                del src[key]
                        snap["after"] = fb.snapshot(src)
                        gc.collect()               # free what was dropped, now
                    st = arm(k, act)
                    try:
                        y = under_threshold(thr, lambda: impl.deepcopy(src))
                        out = "ok"
                    except RuntimeError as e:
                        y, out = None, "RuntimeError"
                        assert "changed size" in str(e), e
                    finally:
                        st["n"] = -1
                    if y is not None:
                        y = {key: v for key, v in y.items() if key[0] in "pt"}
                        for p in fb.check(y, before, snap.get("after")):
                            problems.append((impl.__name__, defer, k, thr, p[:150]))
                    outcomes[impl.__name__, out] = outcomes.get((impl.__name__, out), 0) + 1
                    ps = ts = src = y = None
                    gc.collect()
    print(outcomes)
    assert not problems, problems[:5]
    print("DONE")
"""


@needs_torch
@pytest.mark.parametrize("mode", ["data", "resize", "fill", "drop"])
def test_torch_source_changed_by_finalizer(mode):
    """Parameters' .data rebound, tensors set_() or resized bigger (their storages move),
    filled, or dropped with their last reference, by a finalizer at the k-th collection:
    the deferred copies keep the storages and re-read their addresses, so every copied
    tensor is its source before or after (used to read freed memory: SIGSEGV)."""
    _run(TORCH_FINALIZER % mode)


@needs_torch
@pytest.mark.skipif(sys.version_info >= (3, 12),
                    reason="needs a collection inside an allocation (3.10/3.11): from 3.12 on "
                           "finalizers wait for the eval breaker, so the storage cannot shrink "
                           "between a recorded copy and its flush (found by the 3.12/3.13 wheel runs, "
                           "the first with torch there)")
def test_torch_storage_shrunk_before_flush():
    """A finalizer shrinks the storage of a tensor whose copy was recorded: the bytes are
    gone, so the flush raises RuntimeError instead of reading past the storage; the other
    tensors of the call are still copied, and the source itself stays usable."""
    _run("""
        import torch
        fb.freeze_imports()
        N = 1 << 16
        seen = set()
        for k in range(1, 30):
            ts = [torch.randn(N) for _ in range(4)]
            src = [x for t in ts for x in (t, [[] for _ in range(8)])]
            def act():
                for t in ts[:2]:
                    t.untyped_storage().resize_(0)
            st = arm(k, act)
            try:
                y = under_threshold(1, lambda: fastcopy.deepcopy(src))
                seen.add("ok")
                for a, b in zip(y[4::2], ts[2:]):
                    assert torch.equal(a, b)
            except RuntimeError as e:
                assert "resized" in str(e) or "changed size" in str(e), e
                seen.add("RuntimeError")
            st["n"] = -1
            gc.collect()
        print(seen)
        assert "RuntimeError" in seen, seen
        print("DONE")
    """)


@needs_torch
@pytest.mark.parametrize("mode", ["data", "set_", "resize", "drop", "fill"])
def test_torch_source_changed_by_hook(mode):
    """A sibling's __deepcopy__ changes tensors copied before it (their copies may still be
    recorded) and after it: the result equals copy.deepcopy's, node by node."""
    _run("""
        import torch
        MODE = %r
        N = 1 << 15
        def build():
            ps = [torch.nn.Parameter(torch.arange(N, dtype=torch.float32) + i) for i in range(2)]
            ts = [torch.arange(N, dtype=torch.float32) * (i + 2) for i in range(2)]
            holder = {"ps": ps, "ts": ts}
            class Hook:
                def __deepcopy__(self, memo):
                    with torch.no_grad():
                        for p in holder["ps"]:
                            if MODE == "data": p.data = torch.zeros(5)
                            elif MODE == "fill": p.fill_(-1)
                            elif MODE == "resize": p.data.resize_(3 * N)
                        for t in holder["ts"]:
                            if MODE == "set_": t.set_()
                            elif MODE == "resize": t.resize_(3 * N)
                            elif MODE == "fill": t.fill_(-2)
                    if MODE == "drop":
                        src[0] = src[1] = None
                        holder.clear()
                        gc.collect()
                    return "hooked"
            src = [ps[0], ts[0], Hook(), ps[1], ts[1]]
            return src
        for defer in (True, False):
            fastcopy.configure(torch_defer=defer)
            want = copy.deepcopy(build())
            got = fastcopy.deepcopy(build())
            assert len(want) == len(got)
            for a, b in zip(want, got):
                assert type(a) is type(b), (a, b)
                if isinstance(a, torch.Tensor):
                    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape)
                    n = min(a.numel(), N)       # resize_ leaves the new tail unset
                    assert torch.equal(a.detach().flatten()[:n], b.detach().flatten()[:n]), (MODE, defer)
                else:
                    assert a == b
        print("DONE")
    """ % mode)


@needs_torch
def test_torch_grad_replaced_by_finalizer():
    """A finalizer swaps tensors' dense .grad for a sparse one after fastcopy vetted the
    tensor: the grad is vetted again and the sparse one takes its own __deepcopy__ (it used
    to be copied natively: NotImplementedError 'Cannot access storage of SparseTensorImpl',
    which copy.deepcopy never raises)."""
    _run("""
        import warnings
        import torch
        warnings.simplefilter("ignore")
        seen = set()
        for impl in (fastcopy, copy):
            for k in range(1, 20):
                xs = []
                for i in range(3):
                    x = torch.randn(1 << 15, requires_grad=True)
                    x.grad = torch.ones(1 << 15)
                    xs.append(x)
                src = [v for x in xs for v in (x, [[] for _ in range(5)])]
                def act(xs=xs):
                    for x in xs:
                        x.grad = torch.sparse_coo_tensor([[0, 5]], [1., 2.], (1 << 15,))
                st = arm(k, act)
                try:
                    y = under_threshold(1, lambda: impl.deepcopy(src))
                finally:
                    st["n"] = -1
                for a, b in zip(y[0::2], xs):
                    assert torch.equal(a.detach(), b.detach())
                    g = a.grad
                    if g.layout == torch.strided:
                        assert torch.equal(g, torch.ones(1 << 15))
                    else:
                        assert torch.equal(g.to_dense(), b.grad.to_dense())
                    seen.add((impl.__name__, str(g.layout)))
        print(seen)
        print("DONE")
    """)


# ---------------------------------------------------------------------------------------------
# numpy

@needs_numpy
def test_numpy_object_items_resize_the_source():
    """The items' __deepcopy__ resize the source object array and a plain array copied
    later (refcheck=False): numpy's own loop copies the items of the copy it made first,
    and so does fastcopy's -- the results equal copy.deepcopy's."""
    _run("""
        import numpy as np
        def build():
            holder = {}
            class Item:
                def __init__(self, v): self.v = v
                def __deepcopy__(self, memo):
                    holder["obj"].resize((1,), refcheck=False)
                    holder["plain"].resize((2,), refcheck=False)
                    gc.collect()
                    return ("copied", self.v, [self.v])
            o = np.empty(6, dtype=object)
            for i in range(6):
                o[i] = Item(i) if i % 2 else [i, [i]]
            plain = np.arange(1 << 15, dtype=np.float64)
            holder.update(obj=o, plain=plain)
            return [o, plain, o]
        for pool in (False, True):
            fastcopy.configure(numpy_pool=pool)
            want, got = copy.deepcopy(build()), fastcopy.deepcopy(build())
            for a, b in zip(want, got):
                assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape)
                assert a.tolist() == b.tolist()
            assert got[0] is got[2]
        print("DONE")
    """)


@needs_numpy
def test_numpy_finalizer_resizes_arrays_pooled():
    """Finalizers resize, fill and drop arrays (float and object dtype) while they are
    copied, pool on and off: each copied array is its source before or after."""
    _run("""
        import numpy as np
        problems = []
        for pool in (False, True):
            fastcopy.configure(numpy_pool=pool)
            for seed in range(40):
                for impl in (fastcopy, copy):
                    rng = random.Random(seed)
                    frag, mutate = fb.fragment(rng, np=np, torch=False)
                    before, snap = fb.snapshot(frag), {}
                    def act(frag=frag, mutate=mutate, snap=snap):
                        mutate(); snap["after"] = fb.snapshot(frag)
                    st = arm(rng.randint(1, 12), act)
                    try:
                        y = under_threshold(rng.choice([1, 2, 5]), lambda: impl.deepcopy(frag))
                    except RuntimeError as e:
                        assert "changed size" in str(e), e
                        continue
                    finally:
                        st["n"] = -1
                    for p in fb.check(y, before, snap.get("after")):
                        problems.append((impl.__name__, pool, seed, p[:150]))
                    gc.collect()
        assert not problems, problems[:5]
        print("DONE")
    """)


@needs_numpy_path
def test_numpy_pool_context_made_once():
    """The pool's handler lives in one private context made at the first pooled copy: no
    context variable is set per copy, the caller's handler (also inside a context of its
    own) is left as it was, and copies still come from the pool."""
    _run("""
        import contextvars
        import numpy as np
        try:
            from numpy._core.multiarray import get_handler_name
        except ImportError:
            from numpy.core.multiarray import get_handler_name
        fastcopy.configure(numpy_pool=True)
        a = np.ones(1 << 18)
        names = set()
        def body():
            for _ in range(20):
                y = fastcopy.deepcopy([a, {"k": a}])
                names.add(get_handler_name(y[0]))
                assert y[0] is y[1]["k"] and (y[0] == a).all()
                assert get_handler_name() == "default_allocator"
        body()
        contextvars.copy_context().run(body)
        assert names == {"fastcopy_pool"}, names
        assert get_handler_name(np.empty(1 << 18)) == "default_allocator"
        print("DONE")
    """)


@needs_numpy_path
def test_numpy_pool_turned_on_before_numpy_import():
    """configure(numpy_pool=True) before numpy is imported: the first pooled copy puts the
    handler in the pool's context; later copies only enter it."""
    _run("""
        assert "numpy" not in sys.modules
        fastcopy.configure(numpy_pool=True)
        import numpy as np
        try:
            from numpy._core.multiarray import get_handler_name
        except ImportError:
            from numpy.core.multiarray import get_handler_name
        a = np.arange(1 << 18, dtype=np.float64)
        for _ in range(3):
            y = fastcopy.deepcopy(a)
            assert get_handler_name(y) == "fastcopy_pool" and (y == a).all()
            assert get_handler_name() == "default_allocator"
        print("DONE")
    """)


# ---------------------------------------------------------------------------------------------
# the building block itself

def test_fuzz_buffers_without_numpy_or_torch():
    """fuzz_buffers imports and builds without numpy and torch: no buffer nodes."""
    import random
    import fuzz_buffers
    frag, mutate = fuzz_buffers.fragment(random.Random(1), np=False, torch=False)
    assert frag == {}
    assert isinstance(mutate(), str)
    assert fuzz_buffers.check({}, fuzz_buffers.snapshot(frag), None) == []


FUZZ = """
    lo, hi = %d, %d
    fb.freeze_imports()
    problems, outcomes = [], {}
    for seed in range(lo, hi):
        for impl in (fastcopy, copy):
            rng = random.Random(seed)
            frag, mutate = fb.fragment(rng)
            before, snap = fb.snapshot(frag), {}
            def act(frag=frag, mutate=mutate, snap=snap):
                snap["what"] = mutate(); snap["after"] = fb.snapshot(frag)
            st = arm(rng.randint(1, 12), act)
            try:
                y = under_threshold(rng.choice([1, 2, 3, 5]), lambda: impl.deepcopy(frag))
                out = "ok" if "after" in snap else "ok, unchanged"
            except RuntimeError as e:
                y, out = None, "RuntimeError"
                assert "changed size" in str(e) or "resized" in str(e), (seed, e)
            finally:
                st["n"] = -1
            if y is not None:
                for p in fb.check(y, before, snap.get("after")):
                    problems.append((impl.__name__, seed, snap.get("what"), p[:150]))
            outcomes[impl.__name__, out] = outcomes.get((impl.__name__, out), 0) + 1
            frag = y = mutate = None
            gc.collect()
    print(outcomes)
    assert not problems, problems[:5]
    print("DONE")
"""


@pytest.mark.skipif(not (HAVE_NUMPY or HAVE_TORCH), reason="needs numpy or torch")
@pytest.mark.parametrize("batch", range(3))
def test_finalizer_fuzz_buffers(batch):
    """Random fragments (fuzz_buffers) copied while cyclic garbage's __del__ mutates them at
    a random collection, thresholds swept low: no crash, and every copied node is its source
    before or after -- for fastcopy and for copy.deepcopy alike."""
    n = 10 if SANITIZED else 40
    _run(FUZZ % (batch * n, batch * n + n), timeout=600)
