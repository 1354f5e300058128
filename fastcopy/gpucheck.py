"""python -m fastcopy.gpucheck -- fastcopy on a real GPU, in one run.

Without a GPU (no CUDA driver, or torch sees no device) it prints one line
saying so and exits 0.  With one it runs, in this order:

1. equivalence matrix: fastcopy.deepcopy vs copy.deepcopy for CUDA tensors
   (dtypes, views sharing a storage, Parameters, grads, modules, tied
   weights, memo sharing, non-leaf errors), compared by shape: types,
   dtype/device/shape/stride/offset, values, requires_grad, grads, and the
   storage-aliasing pattern; plus snapshot() to CPU;
2. stream semantics: a slow producer kernel writes the source on the current
   stream just before the copy (side stream and default stream), for
   fastcopy.deepcopy and for fastcopy._cuda.copy_batch;
3. graph capture: copy_batch and deepcopy inside torch.cuda.graph, replayed;
4. memory accounting: torch.cuda.memory_allocated deltas of fastcopy equal
   torch's own path; snapshot() to CPU allocates nothing on the GPU;
5. a speed table: 1,000 x 4 KiB, 1,000 x 1 MiB, 10 x 1 GiB and a 7B-shaped
   bf16 parameter list; copy.deepcopy vs fastcopy.deepcopy vs the raw
   copy_batch, against the device-to-device bandwidth.

fastcopy's native CUDA path (configure(torch_cuda=True): byte copies batched
through fastcopy._cuda) is switched on for the whole run -- that is the code
this script exists to verify -- and the equivalence matrix runs with byte
copies deferred and eager; ``--torch-cuda off`` checks torch's own path
instead.  Exits 1 on any mismatch.  ``--cpu-dry-run`` runs 1, 4 (trivially) and a
shrunken 5 on CPU tensors: it checks this script's own logic on machines
without a GPU and proves nothing about CUDA.
"""
# Untyped on purpose (a command-line check; torch and fastcopy._cuda may be absent or
# have no stubs, and `python -m mypy.stubtest fastcopy` builds every submodule):
# mypy: ignore-errors
import argparse
import copy
import gc
import sys
import time

import fastcopy
from fastcopy import _cuda
from fastcopy._snapshot import snapshot

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


class Report:
    def __init__(self):
        self.failures = 0
        self.passes = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passes += 1
        else:
            self.failures += 1
            print("FAIL  %s%s" % (name, (": " + detail) if detail else ""))
        return ok

    def note(self, text):
        print("      " + text)


# --------------------------------------------------------------------------
# Comparison by shape
# --------------------------------------------------------------------------

def _tensors(obj, out, seen):
    """Tensors reachable through containers, modules and tensor grads, in a
    deterministic order."""
    import torch
    if id(obj) in seen:
        out.append(obj) if isinstance(obj, torch.Tensor) else None
        return out
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        out.append(obj)
        if obj.grad is not None:
            _tensors(obj.grad, out, seen)
    elif isinstance(obj, torch.nn.Module):
        for _, p in obj.named_parameters(remove_duplicate=False):
            _tensors(p, out, seen)
        for _, b in obj.named_buffers(remove_duplicate=False):
            _tensors(b, out, seen)
    elif isinstance(obj, dict):
        for v in obj.values():
            _tensors(v, out, seen)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _tensors(v, out, seen)
    return out


def _labels(keys):
    first = {}
    return [first.setdefault(k, len(first)) for k in keys]


def compare(ref, got, src):
    """'' when `got` has the shape of `ref` (both deep copies of `src`)."""
    import torch
    if type(ref) is not type(got):
        return "type %s vs %s" % (type(ref).__name__, type(got).__name__)
    tr, tg, ts = (_tensors(o, [], set()) for o in (ref, got, src))
    if len(tr) != len(tg):
        return "%d tensors vs %d" % (len(tr), len(tg))
    for i, (a, b) in enumerate(zip(tr, tg)):
        for attr in ("dtype", "device", "shape", "requires_grad", "is_leaf"):
            if getattr(a, attr) != getattr(b, attr):
                return "tensor %d %s: %r vs %r" % (i, attr, getattr(a, attr), getattr(b, attr))
        if type(a) is not type(b):
            return "tensor %d type %s vs %s" % (i, type(a).__name__, type(b).__name__)
        if a.layout == torch.strided:
            if a.stride() != b.stride() or a.storage_offset() != b.storage_offset():
                return "tensor %d layout %r/%d vs %r/%d" % (
                    i, a.stride(), a.storage_offset(), b.stride(), b.storage_offset())
        if not torch.equal(a.detach(), b.detach()):
            return "tensor %d values differ" % i
    # Same aliasing pattern (identity and storages) in both, none with the source.
    if _labels(id(t) for t in tr) != _labels(id(t) for t in tg):
        return "tensor identity pattern differs"
    key = lambda t: t.untyped_storage().data_ptr() if t.layout == torch.strided else id(t)
    if _labels(key(t) for t in tr) != _labels(key(t) for t in tg):
        return "storage sharing pattern differs"
    src_ptrs = {key(t) for t in ts if t.numel()}
    if any(key(t) in src_ptrs for t in tg if t.numel()):
        return "result shares storage with the source"
    if isinstance(ref, torch.nn.Module):
        sr, sg = ref.state_dict(), got.state_dict()
        if list(sr) != list(sg):
            return "state_dict keys differ"
    return ""


def _outcome(fn, x):
    try:
        return fn(x), None
    except Exception as e:          # compared, not hidden
        return None, e


def equivalence(rep, torch, dev, label=""):
    from fastcopy import _fastcopy
    g = torch.Generator(device="cpu").manual_seed(0)

    def rnd(*shape, dtype=torch.float32):
        t = torch.randn(*shape, generator=g)
        if dtype == torch.bool:
            return (t > 0).to(dev)
        if not (dtype.is_floating_point or dtype.is_complex):
            return (t * 50).to(dtype).to(dev)
        return t.to(dtype).to(dev)

    cases = {}
    for dt in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8,
               torch.uint8, torch.int32, torch.int64, torch.bool, torch.complex64):
        cases["dtype %s" % str(dt).replace("torch.", "")] = rnd(17, 33, dtype=dt)
    base = rnd(8, 16)
    cases["views of one storage"] = [base, base[1:], base.t(), base.view(-1)[::3], base[2, 3]]
    cases["memo sharing"] = [base, base, {"again": base}]
    cases["zero-size and 0-dim"] = [rnd(0, 4), torch.tensor(3.5, device=dev)]
    cases["non-contiguous"] = rnd(6, 10)[:, ::2]
    p = torch.nn.Parameter(rnd(5, 7))
    cases["Parameter requires_grad"] = p
    cases["Parameter frozen"] = torch.nn.Parameter(rnd(3), requires_grad=False)
    pg = torch.nn.Parameter(rnd(4, 4))
    pg.grad = rnd(4, 4)
    cases["Parameter with grad"] = pg
    tg = rnd(3, 3).requires_grad_()
    tg.grad = rnd(3, 3)
    cases["tensor with grad"] = tg
    m = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                            torch.nn.Linear(8, 8)).to(dev)
    cases["module"] = m
    tied = torch.nn.ModuleList([torch.nn.Embedding(10, 8), torch.nn.Linear(8, 10, bias=False)]).to(dev)
    tied[1].weight = tied[0].weight
    cases["module with tied weights"] = tied
    cases["optimizer-like state"] = {"step": 3, "exp_avg": [rnd(4) for _ in range(3)],
                                     "params": list(m.parameters())}
    nl = rnd(3).requires_grad_() * 2
    cases["non-leaf (error)"] = [nl]

    batches = _fastcopy._defer_stats()["cuda_batches"]
    for name, x in cases.items():
        name += label
        ref, e_ref = _outcome(copy.deepcopy, x)
        got, e_got = _outcome(fastcopy.deepcopy, x)
        if e_ref is not None or e_got is not None:
            rep.check("equivalence: " + name,
                      type(e_ref) is type(e_got) and str(e_ref) == str(e_got),
                      "copy.deepcopy raised %r, fastcopy %r" % (e_ref, e_got))
            continue
        rep.check("equivalence: " + name, not compare(ref, got, x), compare(ref, got, x))

    if dev.type == "cuda" and fastcopy.configure()["torch_cuda"]:
        used = _fastcopy._defer_stats()["cuda_batches"] - batches
        rep.check("native CUDA path taken" + label, used > 0,
                  "no batch reached fastcopy._cuda: tensors went through torch's path")

    # snapshot() to CPU: same values and aliasing, CPU tensors.
    x = cases["views of one storage"]
    y = snapshot(x)
    ok = all(t.device.type == "cpu" for t in y) and all(
        torch.equal(a.cpu(), b) for a, b in zip(x, y))
    ptrs = [t.untyped_storage().data_ptr() for t in y]
    rep.check("snapshot to cpu: values, device, one storage", ok and len(set(ptrs)) == 1)
    ym = snapshot(tied)
    rep.check("snapshot to cpu: tied weights stay tied",
              ym[1].weight is ym[0].weight and ym[0].weight.device.type == "cpu")


# --------------------------------------------------------------------------
# Streams, capture, memory (GPU only)
# --------------------------------------------------------------------------

def _slow_fill(torch, t, value):
    torch.cuda._sleep(20_000_000)       # keeps the stream busy ~10 ms
    t.fill_(value)


def streams(rep, torch, dev):
    n = 1 << 20
    for label, stream in (("side stream", torch.cuda.Stream(dev)),
                          ("default stream", torch.cuda.default_stream(dev))):
        with torch.cuda.stream(stream):
            x = torch.zeros(n, device=dev)
            _slow_fill(torch, x, 7.0)
            y = fastcopy.deepcopy(x)
            r = y.sum()                                  # consumer on the same stream
        stream.synchronize()
        rep.check("stream order, deepcopy, " + label,
                  bool((y == 7.0).all()) and r.item() == 7.0 * n)
        ok, _ = _cuda.available()
        if not ok:
            continue
        with torch.cuda.stream(stream):
            srcs = [torch.zeros(4096 + i, device=dev) for i in range(64)]
            dsts = [torch.empty_like(s) for s in srcs]
            for s in srcs:
                _slow_fill(torch, s, 3.0) if s is srcs[-1] else s.fill_(3.0)
            path = _cuda.copy_batch([(d.data_ptr(), s.data_ptr(), s.nbytes)
                                     for d, s in zip(dsts, srcs)],
                                    dev.index, torch.cuda.current_stream(dev).cuda_stream)
            total = sum(d.sum() for d in dsts)
        stream.synchronize()
        want = 3.0 * sum(s.numel() for s in srcs)
        rep.check("stream order, copy_batch, %s (%s)" % (label, path), total.item() == want)


def capture(rep, torch, dev):
    ok, _ = _cuda.available()
    x = torch.randn(1 << 16, device=dev)
    dst = torch.empty_like(x)
    s = torch.cuda.Stream(dev)
    s.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(s):
        dst.copy_(x)                                     # warm-up, as torch advises
    torch.cuda.current_stream(dev).wait_stream(s)
    if ok:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            path = _cuda.copy_batch([(dst.data_ptr(), x.data_ptr(), x.nbytes)], dev.index,
                                    torch.cuda.current_stream(dev).cuda_stream)
        x.copy_(torch.arange(x.numel(), device=dev, dtype=x.dtype))
        g.replay()
        torch.cuda.synchronize(dev)
        rep.check("graph capture: copy_batch (%s) replays" % path,
                  path == "memcpy-capture" and torch.equal(dst, x))
    # deepcopy under capture: fastcopy must do whatever torch's path does.
    outcomes = []
    for fn in (copy.deepcopy, fastcopy.deepcopy):
        g = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(g):
                y = fn(x)
            x.add_(1)
            g.replay()
            torch.cuda.synchronize(dev)
            outcomes.append(("ok", bool(torch.equal(y, x))))
        except Exception as e:
            outcomes.append(("raised", type(e).__name__))
            torch.cuda.synchronize(dev)
    rep.check("graph capture: deepcopy behaves as copy.deepcopy",
              outcomes[0] == outcomes[1], "copy.deepcopy %r, fastcopy %r" % tuple(outcomes))


def memory(rep, torch, dev):
    m = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(8)]).to(dev)
    x = {"model": m, "extra": [torch.randn(1000, device=dev) for _ in range(10)]}

    def delta(fn):
        gc.collect()
        torch.cuda.synchronize(dev)
        before = torch.cuda.memory_allocated(dev)
        y = fn(x)
        torch.cuda.synchronize(dev)
        d = torch.cuda.memory_allocated(dev) - before
        del y
        gc.collect()
        return d

    d_ref, d_fc, d_snap = delta(copy.deepcopy), delta(fastcopy.deepcopy), delta(snapshot)
    rep.check("memory: fastcopy allocates what torch's path does",
              d_ref == d_fc, "copy.deepcopy %d B, fastcopy %d B" % (d_ref, d_fc))
    rep.check("memory: snapshot to cpu allocates nothing on the GPU", d_snap == 0,
              "%d B" % d_snap)


# --------------------------------------------------------------------------
# Speed
# --------------------------------------------------------------------------

def _llama7b_shapes():
    h, inter, vocab, layers = 4096, 11008, 32000, 32
    shapes = [(vocab, h)]
    for _ in range(layers):
        shapes += [(h, h)] * 4 + [(inter, h), (inter, h), (h, inter), (h,), (h,)]
    return shapes + [(h,), (vocab, h)]


def _best(fn, sync, reps):
    best = float("inf")
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        r = fn()
        sync()
        best = min(best, time.perf_counter() - t0)
        del r
    return best


def speed(rep, torch, dev, dry):
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    if dry:
        rows = [("100 x 4 KiB", [(1024,)] * 100, torch.float32),
                ("10 x 1 MiB", [(MiB // 4,)] * 10, torch.float32),
                ("tiny 7B-shaped", [(s[0] // 64,) + s[1:] for s in _llama7b_shapes()[:20]],
                 torch.bfloat16)]
    else:
        rows = [("1000 x 4 KiB", [(1024,)] * 1000, torch.float32),
                ("1000 x 1 MiB", [(MiB // 4,)] * 1000, torch.float32),
                ("10 x 1 GiB", [(GiB // 4,)] * 10, torch.float32),
                ("7B bf16 params", _llama7b_shapes(), torch.bfloat16)]
    # Device-to-device bandwidth, from one large copy.
    n = (64 * MiB if dry else GiB)
    a = torch.empty(n, dtype=torch.uint8, device=dev)
    b = torch.empty_like(a)
    bw = n / _best(lambda: b.copy_(a), sync, 5)
    del a, b
    cuda_ok = dev.type == "cuda" and _cuda.available()[0]
    print("%-16s %10s %12s %12s %12s %12s" % ("case", "bytes", "deepcopy ms",
                                             "fastcopy ms", "batch ms", "d2d bound ms"))
    for name, shapes, dtype in rows:
        nbytes = sum(torch.Size(s).numel() for s in shapes) * torch.empty(0, dtype=dtype).element_size()
        if dev.type == "cuda":
            free, _ = torch.cuda.mem_get_info(dev)
            if free < 2.2 * nbytes:
                print("%-16s skipped: needs %.1f GiB free, %.1f GiB are" % (
                    name, 2.2 * nbytes / GiB, free / GiB))
                continue
        params = [torch.nn.Parameter(torch.empty(s, dtype=dtype, device=dev), requires_grad=False)
                  if "params" in name or "7B" in name else torch.empty(s, dtype=dtype, device=dev)
                  for s in shapes]
        reps = 2 if nbytes >= GiB else 5
        t_ref = _best(lambda: copy.deepcopy(params), sync, reps)
        t_fc = _best(lambda: fastcopy.deepcopy(params), sync, reps)
        t_batch = float("nan")
        if cuda_ok:
            dsts = [torch.empty_like(p) for p in params]
            copies = [(d.data_ptr(), p.data_ptr(), p.nbytes) for d, p in zip(dsts, params)]
            stream = torch.cuda.current_stream(dev).cuda_stream
            t_batch = _best(lambda: _cuda.copy_batch(copies, dev.index, stream), sync, reps)
            del dsts
        print("%-16s %10s %12.3f %12.3f %12.3f %12.3f" % (
            name, _human(nbytes), t_ref * 1e3, t_fc * 1e3, t_batch * 1e3, nbytes / bw * 1e3))
        del params
        gc.collect()
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    rep.note("d2d bandwidth %.1f GB/s (one %s copy)" % (bw / 1e9, _human(n)))


def _human(n):
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            return "%.1f %s" % (n / size, unit)
    return "%d B" % n


# --------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m fastcopy.gpucheck", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpu-dry-run", action="store_true",
                    help="run the device-independent checks on CPU tensors (tests this script)")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--torch-cuda", choices=["on", "off"], default="on",
                    help="fastcopy's native CUDA tensor path (default on: it is what is checked)")
    args = ap.parse_args(argv)

    if not args.cpu_dry_run:
        ok, reason = _cuda.available()
        if not ok:
            print("fastcopy.gpucheck: no GPU here (%s); nothing to check." % reason)
            return 0
    try:
        import torch
    except ImportError:
        print("fastcopy.gpucheck: torch is not installed; install a CUDA build of torch to run "
              "the GPU checks.")
        return 2
    if not args.cpu_dry_run and not torch.cuda.is_available():
        print("fastcopy.gpucheck: no GPU visible to torch (torch %s, built for CUDA %s); "
              "nothing to check." % (torch.__version__, torch.version.cuda))
        return 0

    dev = torch.device("cpu") if args.cpu_dry_run else torch.device(args.device)
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    t0 = time.perf_counter()
    rep = Report()
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
        info = _cuda.info()
        print("fastcopy.gpucheck on %s (%s), torch %s (CUDA %s), driver %s, batch ABI %s, "
              "_cuda ABI checked against CUDA %s" % (
                  dev, torch.cuda.get_device_name(dev), torch.__version__, torch.version.cuda,
                  info["driver_version"], info["batch_abi"], info["abi_checked_against"]))
    else:
        print("fastcopy.gpucheck --cpu-dry-run: checks this script's logic on CPU tensors; "
              "proves nothing about CUDA")
    old = fastcopy.configure(torch_cuda=args.torch_cuda == "on", torch_defer=True)
    try:
        print("native CUDA tensor path: %s" % args.torch_cuda)
        equivalence(rep, torch, dev, " (deferred)")
        fastcopy.configure(torch_defer=False)
        equivalence(rep, torch, dev, " (eager)")
        fastcopy.configure(torch_defer=True)
        if dev.type == "cuda":
            streams(rep, torch, dev)
            capture(rep, torch, dev)
            memory(rep, torch, dev)
        speed(rep, torch, dev, args.cpu_dry_run)
    finally:
        fastcopy.configure(**old)
    print("%d passed, %d failed  (%.1f s)" % (rep.passes, rep.failures, time.perf_counter() - t0))
    return 1 if rep.failures else 0


if __name__ == "__main__":
    sys.exit(main())
