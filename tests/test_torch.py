"""torch tensors, parameters and modules: fastcopy.deepcopy must give what
copy.deepcopy gives with the installed torch (types, values, layout, storage
aliasing, autograd flags, memo contents, errors)."""
import collections
import copy
import gc
import subprocess
import sys

import pytest

import fastcopy
from shape import python_calls

torch = pytest.importorskip("torch")
nn = torch.nn

IMPLS = [copy.deepcopy, fastcopy.deepcopy]
IDS = ["copy", "fastcopy"]


@pytest.fixture(autouse=True, params=[True, False], ids=["deferred", "eager"])
def torch_defer(request):
    """Every test runs with the byte copies deferred to a flush (the default)
    and with each copy run at once (configure(torch_defer=False))."""
    old = fastcopy.configure(torch_defer=request.param)
    yield request.param
    fastcopy.configure(**old)


# --------------------------------------------------------------------------
# Comparing results by shape
# --------------------------------------------------------------------------

def tensor_sig(t, storages):
    """Everything observable about one tensor copy; storages maps a result
    storage's _cdata to the order it was first seen (aliasing pattern)."""
    if not isinstance(t, torch.Tensor):
        return ("obj", type(t), t if isinstance(t, (int, float, str, type(None))) else None)
    sig = [type(t), t.dtype, t.device.type, t.layout, tuple(t.shape), t.requires_grad,
           t.is_leaf, t.grad_fn is None, t.is_conj(), t.is_neg(), t.is_inference(),
           str(torch._C._dispatch_keys(t)), t._is_view(), t._base is None,
           [type(r) for r in gc.get_referents(t)]]
    if t.layout == torch.strided and t.device.type != "meta" and not t.is_quantized:
        us = t.untyped_storage()
        sig += [t.stride(), t.storage_offset(), us.nbytes(),
                None if t.is_inference() else t._version,
                storages.setdefault(us._cdata, len(storages)), t.is_contiguous()]
        vals = t.detach().resolve_conj().resolve_neg()
        sig.append(repr(vals.tolist()))
    elif t.is_quantized:
        sig += [t.q_scale(), repr(t.int_repr().tolist())]
    elif t.is_sparse:
        sig.append(repr(t.detach().to_dense().tolist()))
    g = t.grad if t.is_leaf else None
    sig.append(None if g is None else tensor_sig(g, storages))
    sig.append(sorted((k, repr(v)) for k, v in vars(t).items()) if hasattr(t, "__dict__") else None)
    return tuple(sig)


def shape_of(y, x):
    """A comparable description of copy y of x: per node its signature and
    whether it is shared with the source or with an earlier node."""
    seen = {}
    storages = {}
    out = []

    def walk(a, b):
        if id(b) in seen:
            out.append(("again", seen[id(b)]))
            return
        seen[id(b)] = len(seen)
        out.append(("same-as-source", a is b))
        if isinstance(b, torch.Tensor):
            out.append(tensor_sig(b, storages))
        elif isinstance(b, dict):
            out.append(("dict", type(b), list(b)))
            for k in b:
                walk(a.get(k) if isinstance(a, dict) else None, b[k])
        elif isinstance(b, (list, tuple)):
            out.append((type(b), len(b)))
            for i, v in enumerate(b):
                walk(a[i] if isinstance(a, (list, tuple)) and i < len(a) else None, v)
        else:
            out.append(("obj", type(b)))
    walk(x, y)
    return out


def memo_shape(memo, x):
    """The memo as the stdlib leaves it: keys in order (ids of originals are
    the same in both runs), value types, keep-alive list by identity."""
    out = []
    for k, v in memo.items():
        if k == id(memo):
            out.append(("keep", [id(o) for o in v]))
        elif k == "torch":
            out.append(("torch", list(v), [type(s) for s in v.values()]))
        else:
            out.append((k, type(v)))
    return out


def run_both(make, memo=False):
    """Copy make()'s object with both implementations (fresh memo dicts when
    memo=True) and return their shapes."""
    x = make()
    shapes = []
    for impl in IMPLS:
        m = {} if memo else None
        try:
            y = impl(x, m)
        except Exception as e:   # the same error, or the same result
            shapes.append(("raised", type(e), str(e)))
            continue
        shapes.append((shape_of(y, x), memo_shape(m, x) if memo else None))
    return shapes


def assert_same(make, memo=True):
    a, b = run_both(make, memo)
    assert a == b


# --------------------------------------------------------------------------
# Modes of the native path: run each test with and without it active
# --------------------------------------------------------------------------

def plain(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, generator=g).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    return torch.randint(-100, 100, tuple(shape), generator=g).to(dtype)


CASES = {
    "scalar": lambda: plain(),
    "matrix": lambda: plain(3, 4),
    "empty": lambda: plain(0, 3),
    "non_contiguous": lambda: plain(4, 6)[:, ::2],
    "transposed": lambda: plain(3, 5).t(),
    "offset_view": lambda: plain(10)[3:7],
    "expanded": lambda: plain(3, 1).expand(3, 4),
    "requires_grad": lambda: plain(3).requires_grad_(),
    "int64": lambda: plain(5, dtype=torch.int64),
    "bool": lambda: plain(5, dtype=torch.bool),
    "float16": lambda: plain(5, dtype=torch.float16),
    "bfloat16": lambda: plain(5, dtype=torch.bfloat16),
    "complex": lambda: plain(4, dtype=torch.complex64),
    "uint8": lambda: plain(7, dtype=torch.uint8),
    "int8": lambda: plain(7, dtype=torch.int8),
    "complex128_conj": lambda: plain(4, dtype=torch.complex128).conj(),
    "float8": lambda: plain(6).to(getattr(torch, "float8_e4m3fn", torch.float16)),
    "quantized": lambda: torch.quantize_per_tensor(plain(5), 0.1, 3, torch.quint8),
    "big_2mib": lambda: plain(1 << 19),
    "channels_last": lambda: plain(2, 3, 4, 5).to(memory_format=torch.channels_last),
    # contiguous with an unusual stride on a size-1 dimension
    "size1_odd_stride": lambda: torch.empty_strided((3, 1), (1, 7)).copy_(plain(3, 1)),
    # bytes a bool copy must not normalise, NaN payloads a float copy must keep
    "raw_bool_bytes": lambda: torch.tensor([0, 2, 255, 1], dtype=torch.uint8).view(torch.bool),
    "nan_payload": lambda: torch.tensor([0x7FC00001, -0x3EDCBB], dtype=torch.int32)
    .view(torch.float32),
    # a storage bigger than the tensor, at offset 0
    "short_of_storage": lambda: plain(10)[:4],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_plain_tensor(name):
    assert_same(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_parameter(name):
    make = CASES[name]

    def mk():
        t = make()
        rg = t.dtype.is_floating_point or t.dtype.is_complex
        return nn.Parameter(t.detach(), requires_grad=rg)
    assert_same(mk)


def raw_bytes(t):
    return bytes(t.untyped_storage())


@pytest.mark.parametrize("impl", IMPLS, ids=IDS)
def test_storage_in_memo_is_the_copy_storage(impl):
    # the memo's new storage object is the copy's storage, and the bytes of
    # the whole storage are copied as they are
    x = CASES["raw_bool_bytes"]()
    n = CASES["nan_payload"]()
    memo = {}
    y, m = impl([x, n], memo)
    for src, dst in ((x, y), (n, m)):
        st = memo[id(src.untyped_storage())]
        assert st is dst.untyped_storage()
        assert memo["torch"][src.untyped_storage()._cdata] is st
        assert raw_bytes(dst) == raw_bytes(src)
        assert dst._version == 1


@pytest.mark.parametrize("impl", IMPLS, ids=IDS)
def test_storage_seen_first_through_another_tensor(impl):
    # a tensor whose storage the memo already holds goes through set_
    base = plain(8)
    whole = base.view(2, 4)
    y = impl([base[2:], whole])
    assert y[1].untyped_storage().data_ptr() == y[0].untyped_storage().data_ptr()
    assert y[1].storage_offset() == 0 and y[0].storage_offset() == 2


@pytest.mark.parametrize("rg", [True, False])
def test_parameter_copy_behaves_like_torch(rg):
    x = nn.Parameter(plain(3, 4), requires_grad=rg)
    a, b = copy.deepcopy(x), fastcopy.deepcopy(x)
    for y in (a, b):
        assert type(y) is nn.Parameter and y.is_leaf and y.requires_grad == rg
        assert y._version == 0 and not y._is_view() and y._base is None
        assert y.__dict__ == {} and y.grad is None
    assert str(torch._C._dispatch_keys(a)) == str(torch._C._dispatch_keys(b))
    assert torch.equal(a, b) and a.stride() == b.stride()
    with torch.no_grad():
        b.add_(1)
    assert b._version == 1 and torch.equal(x + 1, b)
    if rg:
        (b * 2).sum().backward()
        assert torch.equal(b.grad, torch.full_like(b, 2.0))
        assert x.grad is None
    b.data = torch.zeros(2)   # metadata changes allowed, as after _make_subclass
    assert b.shape == (2,)


def test_views_share_one_new_storage():
    def make():
        base = plain(8, 8)
        return [base, base[2], base[:, 3], base.t(), base[1:3, 2:5], base.view(64)]
    assert_same(make)
    x = make()
    y = fastcopy.deepcopy(x)
    cd = {t.untyped_storage()._cdata for t in y}
    assert len(cd) == 1 and cd != {x[0].untyped_storage()._cdata}
    y[1][0] = 1234.0
    assert y[0][2, 0] == 1234.0 and x[0][2, 0] != 1234.0


def test_dict_of_tensors_and_shared_across_containers():
    def make():
        a = plain(3, 3)
        return {"a": a, "b": [a, a[0]], "c": (a[1], {"d": a})}
    assert_same(make)


def test_grad_is_copied():
    def make():
        t = plain(4).requires_grad_()
        t.grad = plain(4, seed=1)
        return [t, t.grad]
    assert_same(make)


def test_grad_sharing_storage_with_data():
    def make():
        base = plain(8)
        t = base[:4].clone().requires_grad_()
        t.grad = base[4:]
        return {"t": t, "base": base}
    assert_same(make)


def test_tensor_dict_attributes():
    def make():
        t = plain(3)
        t.tag = "weights"
        t.meta = {"k": [1, 2]}
        return [t]
    assert_same(make)


def test_conj_and_neg_materialised():
    def make():
        z = plain(4, dtype=torch.complex64)
        return [z.conj(), z.conj().imag, torch._neg_view(plain(3))]
    assert_same(make)


def test_parameters_over_conj_and_neg_views():
    # the Parameter fast path asks is_conj() only of complex tensors (no
    # other dtype can carry the bit) and is_neg() of all
    def make():
        z = plain(4, dtype=torch.complex64)
        return [nn.Parameter(z.conj()), nn.Parameter(z.conj().imag),
                nn.Parameter(torch._neg_view(plain(3))), nn.Parameter(z),
                nn.Parameter(plain(2, dtype=torch.complex128), requires_grad=False)]
    assert_same(make)
    x = make()
    for impl in IMPLS:
        y = impl(x)
        assert [p.is_conj() for p in y] == [p.is_conj() for p in copy.deepcopy(x)]
        assert [p.is_neg() for p in y] == [p.is_neg() for p in copy.deepcopy(x)]
        assert all(torch.equal(a.resolve_conj().resolve_neg(), b.resolve_conj().resolve_neg())
                   for a, b in zip(x, y))


def test_non_leaf_raises_torch_error():
    x = plain(3).requires_grad_() * 2
    errs = []
    for impl in IMPLS:
        with pytest.raises(RuntimeError) as e:
            impl(x)
        errs.append(str(e.value))
    assert errs[0] == errs[1] and "graph leaves" in errs[0]


def test_parameter_drops_grad_and_dict():
    def make():
        p = nn.Parameter(plain(3))
        p.grad = plain(3, seed=2)
        p.note = "x"
        return [p]
    assert_same(make)
    y = fastcopy.deepcopy(make())[0]
    assert type(y) is nn.Parameter and y.grad is None and not hasattr(y, "note")


def test_declined_kinds():
    class Sub(torch.Tensor):
        pass
    makers = [
        lambda: plain(3).as_subclass(Sub),
        lambda: plain(3).to_sparse(),
        lambda: torch.quantize_per_tensor(plain(4), 0.1, 10, torch.quint8),
        lambda: torch.empty(3, device="meta"),
    ]
    for make in makers:
        assert_same(make)
    with torch.inference_mode():
        inf = plain(3)
    assert_same(lambda: [inf])


def test_inference_mode_active():
    with torch.inference_mode():
        assert_same(lambda: [plain(3)])


def test_torch_function_mode_declines():
    from torch.overrides import TorchFunctionMode

    class Log(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.seen.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    seen = []
    for impl in IMPLS:
        with Log() as m:
            impl([plain(2), nn.Parameter(plain(2))])
        seen.append(m.seen)
    assert seen[0] == seen[1] and seen[0]


def test_dispatch_mode_declines():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Log(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.append(str(func))
            return func(*args, **(kwargs or {}))

    seen = []
    for impl in IMPLS:
        with Log() as m:
            impl([plain(2), nn.Parameter(plain(2))])
        seen.append(m.seen)
    assert seen[0] == seen[1] and seen[0]


def test_replaced_deepcopy_is_called(monkeypatch):
    calls = []
    orig = torch.Tensor.__deepcopy__

    def spy(self, memo):
        calls.append(1)
        return orig(self, memo)
    monkeypatch.setattr(torch.Tensor, "__deepcopy__", spy)
    fastcopy.deepcopy([plain(2), plain(3)])
    assert len(calls) == 2


def test_replaced_storage_deepcopy_is_called(monkeypatch):
    calls = []
    orig = torch.UntypedStorage.__deepcopy__

    def spy(self, memo):
        calls.append(1)
        return orig(self, memo)
    monkeypatch.setattr(torch.UntypedStorage, "__deepcopy__", spy, raising=False)
    x = plain(2)
    assert_same(lambda: [x, x[1]])
    n = len(calls)
    fastcopy.deepcopy([plain(2)])
    assert len(calls) == n + 1


def test_replaced_parameter_deepcopy_is_called(monkeypatch):
    calls = []
    orig = nn.Parameter.__deepcopy__

    def spy(self, memo):
        calls.append(1)
        return orig(self, memo)
    monkeypatch.setattr(nn.Parameter, "__deepcopy__", spy)
    fastcopy.deepcopy([nn.Parameter(plain(2))])
    assert calls == [1]


def test_registered_copier_wins():
    seen = []

    def copier(x, memo):
        seen.append(x)
        return "copied"
    copy._deepcopy_dispatch[torch.Tensor] = copier
    try:
        assert fastcopy.deepcopy([plain(1)]) == ["copied"]
    finally:
        del copy._deepcopy_dispatch[torch.Tensor]
    assert len(seen) == 1
    assert isinstance(fastcopy.deepcopy([plain(1)])[0], torch.Tensor)


def test_preseeded_memo_and_mapping_memo():
    x = plain(3)
    for impl in IMPLS:
        assert impl(x, {id(x): "hit"}) == "hit"

    class M(dict):
        pass
    shapes = []
    for impl in IMPLS:
        m = M()
        y = impl([x, x[1:]], m)
        shapes.append((shape_of(y, [x, x[1:]]), sorted(map(str, map(type, m)))))
    assert shapes[0] == shapes[1]


def test_native_path_calls_no_python():
    """White box: plain tensors and parameters never enter torch's Python
    __deepcopy__ (the profiler sees only C calls)."""
    x = {"t": plain(3), "v": plain(4)[1:], "p": nn.Parameter(plain(2))}
    fastcopy.deepcopy(x)
    names, _ = python_calls(lambda: fastcopy.deepcopy(x))
    assert "__deepcopy__" not in names and "_deepcopy" not in names


def test_import_does_not_import_torch():
    code = "import sys, fastcopy; fastcopy.deepcopy([1]); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(__import__("pathlib").Path(fastcopy.__file__).parent.parent))
    assert out.stdout.strip() == "False", out.stderr


# --------------------------------------------------------------------------
# Modules
# --------------------------------------------------------------------------

def module_report(m, inp):
    sd = m.state_dict()
    params = dict(m.named_parameters())
    tied = sorted((a, b) for a in params for b in params
                  if a < b and params[a] is params[b])
    return {
        "structure": repr(m),
        "types": [type(s) for s in m.modules()],
        "training": [s.training for s in m.modules()],
        "state_keys": list(sd),
        "buffers": [(n, b.dtype, tuple(b.shape)) for n, b in m.named_buffers()],
        "non_persistent": [sorted(s._non_persistent_buffers_set) for s in m.modules()],
        "hooks": [(len(s._forward_hooks), len(s._forward_pre_hooks)) for s in m.modules()],
        "tied": tied,
        "requires_grad": [p.requires_grad for p in m.parameters()],
    }


def make_transformer():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32,
                                       batch_first=True)
    return nn.TransformerEncoder(layer, num_layers=3, enable_nested_tensor=False)


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.out = nn.Linear(4, 10, bias=False)
        self.out.weight = self.emb.weight
        self.norm = nn.BatchNorm1d(4)
        self.register_buffer("scale", torch.ones(1))
        self.register_buffer("cache", torch.zeros(2), persistent=False)
        self.hits = collections.OrderedDict()

    def forward(self, i):
        return self.out(self.norm(self.emb(i)))


def _count_hook(mod, args, out):
    mod.hits["n"] = mod.hits.get("n", 0) + 1


@pytest.mark.parametrize("make", [make_transformer, Tied], ids=["transformer", "tied"])
@pytest.mark.parametrize("patched", [False, True], ids=["direct", "patched"])
def test_module_copy_is_exact(make, patched):
    src = make()
    if isinstance(src, Tied):
        src.register_forward_hook(_count_hook)
        src.eval()
        src.norm.train()
        inp = torch.tensor([1, 2, 3])
    else:
        src.eval()
        inp = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(1))
    ctx = fastcopy.patched() if patched else __import__("contextlib").nullcontext()
    with ctx:
        a = copy.deepcopy(src)
        b = fastcopy.deepcopy(src)
    assert module_report(a, inp) == module_report(b, inp) == module_report(src, inp)
    for k, v in a.state_dict().items():
        assert torch.equal(v, b.state_dict()[k])
    with torch.no_grad():
        assert torch.equal(a(inp), b(inp))
        assert torch.equal(a(inp), src(inp))
    for p, q in zip(b.parameters(), src.parameters()):
        assert p is not q and p.data_ptr() != q.data_ptr()


def test_patched_internal_deepcopy_calls():
    """torch's own copy.deepcopy calls (storage and __dict__ copies inside
    Tensor.__deepcopy__, reached when a tensor is declined) still work."""
    def make():
        t = plain(3)
        t.tag = [1, {"a": 2}]
        z = plain(2, dtype=torch.complex64).conj()
        return [t, z, t[1:], nn.Parameter(plain(2))]
    with fastcopy.patched():
        a = run_both(make)
    assert a[0] == a[1] and a[0][0] != "raised"
    assert a[0] == run_both(make)[0]


def test_optimizer_state_copy():
    m = nn.Linear(3, 2)
    opt = torch.optim.Adam(m.parameters())
    m(torch.randn(4, 3)).sum().backward()
    opt.step()
    assert_same(lambda: {"model": m.state_dict(), "opt": opt.state_dict()}, memo=True)
