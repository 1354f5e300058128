"""``python -m fastcopy --buffers``: the size sweep of big-buffer copies (docs/buffers-sweep.md).

For numpy (float64 arrays) and torch (float32 CPU tensors), from 1 KiB to 1 GiB, at 1 and 2
threads, one process, the implementations interleaved round by round, medians:

- ``own``: ``copy.deepcopy(x)``, i.e. the library's own ``__deepcopy__`` (a fresh destination
  per copy, as a deepcopy gives);
- ``fastcopy``: ``fastcopy.deepcopy(x)`` with ``configure(numpy_threads=T)`` /
  ``torch.set_num_threads(T)``;
- ``limit``: ``np.copyto`` of the same bytes into a destination whose pages are already mapped
  (with 2 threads, from 1 MiB: each thread copies half), the cost of the memory system alone.

Every sample also reads ``getrusage``: minor page faults and system time per copy say which road a
size took (4 KiB faults, 2 MiB huge-page faults, or none). Then a snapshot loop (5 copies of one
array, each dropped before the next) with and without ``numpy_pool``, and the peak RSS of one copy
(each in a fresh interpreter, its high-water mark ``VmHWM`` before and after).

``--quick`` keeps it under a few minutes (fewer sizes, 5 rounds); the full sweep takes longer.
"""
# Untyped on purpose, like the other command-line helpers: numpy/torch/matplotlib are optional.
# mypy: ignore-errors
import copy
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
SIZES = [KiB, 4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB, 32 * MiB,
         64 * MiB, 128 * MiB, 256 * MiB, 512 * MiB, GiB]
QUICK_SIZES = [KiB, 64 * KiB, MiB, 16 * MiB, 64 * MiB, 256 * MiB, GiB]
RSS_SIZES = [16 * MiB, 128 * MiB, GiB]
IMPLS = ("own", "fastcopy", "limit")
SNAPSHOT_COPIES = 5


def fmt_size(n):
    for unit, div in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= div:
            return "%d %s" % (n // div, unit)
    return "%d B" % n


def parse_size(text):
    """'64K', '128M', '1G', '4096' -> bytes."""
    t = text.strip().upper().rstrip("IB")
    mult = {"K": KiB, "M": MiB, "G": GiB}.get(t[-1:], 1)
    return int(float(t[:-1] if mult > 1 else t) * mult)


def _rusage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_minflt, r.ru_stime, r.ru_utime


def _sample(fn, loops, _perf=time.perf_counter):
    """Per-call (seconds, minor faults, system s, user s) over `loops` calls."""
    f0, s0, u0 = _rusage()
    t0 = _perf()
    for _ in range(loops):
        fn()
    t = _perf() - t0
    f1, s1, u1 = _rusage()
    return t / loops, (f1 - f0) / loops, (s1 - s0) / loops, (u1 - u0) / loops


class _Half:
    """A second thread that runs np.copyto on the upper half while the caller does the lower."""

    def __init__(self, np):
        self.np = np
        self.job = None
        self.go, self.done = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            self.go.wait()
            self.go.clear()
            job, self.job = self.job, None
            if job is None:
                return
            self.np.copyto(*job)
            self.done.set()

    def copy(self, dst, src):
        h = len(src) // 2
        if h >= 2 * MiB:        # on a 2 MiB boundary, as fastcopy's own thread shares
            h = (h + 2 * MiB - 1) & ~(2 * MiB - 1)
        self.job = (dst[h:], src[h:])
        self.done.clear()
        self.go.set()
        self.np.copyto(dst[:h], src[:h])
        self.done.wait()

    def close(self):
        self.job = None
        self.go.set()
        self.thread.join()


def _libs(want):
    out = []
    for name in want:
        try:
            if name == "numpy":
                import numpy  # noqa: F401
            else:
                import torch  # noqa: F401
        except ImportError:
            continue
        out.append(name)
    return out


def _source(lib, nbytes):
    import numpy as np
    if lib == "numpy":
        x = np.random.default_rng(0).random(max(nbytes // 8, 1))
        return x, x.view(np.uint8).reshape(-1)
    import torch
    x = torch.from_numpy(np.random.default_rng(0).random(max(nbytes // 4, 1), dtype=np.float32))
    x = x.clone()
    return x, x.numpy().view(np.uint8).reshape(-1)


def _set_threads(lib, fastcopy, n):
    if lib == "numpy":
        fastcopy.configure(numpy_threads=n)
    else:
        import torch
        torch.set_num_threads(n)


def sweep(fastcopy, libs, sizes, threads, rounds, target, progress=None):
    """Rows of {lib, size, threads, impl: {time, faults, sys, user}} (medians)."""
    import numpy as np
    rows = []
    half = _Half(np) if any(t > 1 for t in threads) else None
    old = fastcopy.configure()
    torch_threads = None
    if "torch" in libs:
        import torch
        torch_threads = torch.get_num_threads()
    try:
        for lib in libs:
            for size in sizes:
                x, xb = _source(lib, size)
                dst = np.empty_like(xb)
                dst[:] = 1                  # mapped: the limit's destination
                for t in threads:
                    if progress:
                        progress("%s %s, %d thread%s" % (lib, fmt_size(size), t, "s"[:t > 1]))
                    _set_threads(lib, fastcopy, t)
                    if t > 1 and size >= MiB:
                        lim = (lambda d=dst, s=xb: half.copy(d, s))
                    else:
                        # below 1 MiB handing half to a thread costs more than it saves
                        # (~80 us here): the limit is one thread's
                        lim = (lambda d=dst, s=xb: np.copyto(d, s))
                    fns = {"own": (lambda x=x: copy.deepcopy(x)),
                           "fastcopy": (lambda x=x: fastcopy.deepcopy(x)),
                           "limit": lim}
                    loops = {}
                    for k, fn in fns.items():
                        fn()
                        once = _sample(fn, 1)[0]
                        loops[k] = max(1, min(10000, int(target / max(once, 1e-7))))
                    got = {k: [] for k in fns}
                    gc.collect()
                    for _ in range(rounds):
                        for k, fn in fns.items():
                            got[k].append(_sample(fn, loops[k]))
                    row = {"lib": lib, "size": size, "threads": t}
                    for k, v in got.items():
                        row[k] = {"time": statistics.median(s[0] for s in v),
                                  "faults": statistics.median(s[1] for s in v),
                                  "sys": statistics.median(s[2] for s in v),
                                  "user": statistics.median(s[3] for s in v)}
                    rows.append(row)
                del x, xb, dst
                gc.collect()
    finally:
        fastcopy.configure(**old)
        if torch_threads is not None:
            import torch
            torch.set_num_threads(torch_threads)
        if half is not None:
            half.close()
    return rows


SNAPSHOT_IMPLS = ("copy.deepcopy", "fastcopy", "fastcopy pool cold", "fastcopy pool warm",
                  "fastcopy pool warm 2t")


def snapshot(fastcopy, size, rounds, progress=None):
    """A snapshot loop: SNAPSHOT_COPIES copies of one numpy array, each dropped before the next;
    copy.deepcopy, fastcopy, and fastcopy with numpy_pool: "cold" trims the pool before each
    loop (its first copy gets fresh pages), "warm" keeps it between loops (a program that takes
    snapshots again and again), "2t" with numpy_threads=2.  Two phases (turning the pool off
    trims it): copy.deepcopy, fastcopy and the cold pool interleaved, then copy.deepcopy and the
    warm pool interleaved with the pool on throughout.  Medians; copy.deepcopy's over both."""
    import numpy as np
    if progress:
        progress("snapshot loop, numpy %s" % fmt_size(size))
    x = np.random.default_rng(0).random(size // 8)
    old = fastcopy.configure()

    def loop(fn, **settings):
        def run():
            if settings:
                fastcopy.configure(**settings)
            s = None
            for _ in range(SNAPSHOT_COPIES):
                s = None
                s = fn(x)
            return s
        return run

    def cold():
        fastcopy.trim()
        return loop(fastcopy.deepcopy, numpy_threads=1)()

    phases = [
        ({"numpy_pool": False},
         {"copy.deepcopy": loop(copy.deepcopy),
          "fastcopy": loop(fastcopy.deepcopy, numpy_threads=1)}),
        ({"numpy_pool": True},
         {"copy.deepcopy": loop(copy.deepcopy),
          "fastcopy pool cold": cold}),
        ({"numpy_pool": True, "numpy_parallel_min_bytes": 0},
         {"copy.deepcopy": loop(copy.deepcopy),
          "fastcopy pool warm": loop(fastcopy.deepcopy, numpy_threads=1),
          "fastcopy pool warm 2t": loop(fastcopy.deepcopy, numpy_threads=2)}),
    ]
    got = {k: [] for k in SNAPSHOT_IMPLS}
    try:
        for settings, fns in phases:
            fastcopy.configure(**settings)
            for fn in fns.values():
                fn()
            for _ in range(rounds):
                for k, fn in fns.items():
                    got[k].append(_sample(fn, 1))
    finally:
        fastcopy.configure(**old)       # numpy_pool=False trims the pool
    return {"size": size, "copies": SNAPSHOT_COPIES,
            **{k: {"time": statistics.median(s[0] for s in v),
                   "faults": statistics.median(s[1] for s in v),
                   "sys": statistics.median(s[2] for s in v)} for k, v in got.items()}}


_RSS_CHILD = r"""
import copy, resource, sys, gc
lib, size, impl = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def peak():
    # VmHWM (KiB) is this process's own high-water mark; ru_maxrss after fork+exec may still
    # carry the parent's
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

import numpy as np
if lib == "torch":
    import torch
    torch.set_num_threads(1)
    x = torch.ones(size // 4)
else:
    x = np.ones(size // 8)
import fastcopy
f = copy.deepcopy if impl == "own" else fastcopy.deepcopy
small = x[:16] if lib == "numpy" else x[:16].clone()
f(small)                  # the libraries' lazy set-up before the mark
gc.collect()
before = peak()
y = f(x)
after = peak()
print(before, after)
"""


def peak_rss(libs, sizes, progress=None):
    """Peak RSS growth (bytes; VmHWM, else ru_maxrss) of one copy, own and fastcopy, each in a
    new process."""
    rows = []
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    for lib in libs:
        for size in sizes:
            row = {"lib": lib, "size": size}
            for impl in ("own", "fastcopy"):
                if progress:
                    progress("peak RSS, %s %s, %s" % (lib, fmt_size(size), impl))
                r = subprocess.run([sys.executable, "-c", _RSS_CHILD, lib, str(size), impl],
                                   capture_output=True, text=True, env=env)
                if r.returncode != 0:
                    row[impl] = None
                    continue
                before, after = map(int, r.stdout.split()[-2:])
                row[impl] = (after - before) * 1024
            rows.append(row)
    return rows


def _ms(t):
    return "%.3f" % (t * 1e3) if t < 0.01 else "%.2f" % (t * 1e3)


def report(doc, out):
    meta = doc["meta"]
    print("fastcopy %s | Python %s | numpy %s | torch %s | THP %s | %d CPUs | %d rounds, "
          "medians, wall clock | %.0f s" % (
              meta.get("fastcopy"), meta.get("python"), meta.get("numpy"), meta.get("torch"),
              meta.get("thp"), meta.get("cpus") or 0, meta.get("rounds"), meta.get("wall_s", 0)),
          file=out)
    print("limit = np.copyto of the same bytes into already-mapped pages (2 threads, from 1 MiB: "
          "a half each); own = copy.deepcopy; ratios: own/fastcopy (>1: fastcopy faster), "
          "fastcopy/limit", file=out)
    print("%-6s %8s %3s %10s %10s %10s %7s %8s %9s %9s %8s %8s" % (
        "lib", "size", "thr", "own ms", "fc ms", "limit ms", "own/fc", "fc/limit",
        "flt own", "flt fc", "sys own", "sys fc"), file=out)
    for r in doc["sweep"]:
        o, f, lim = r["own"], r["fastcopy"], r["limit"]
        print("%-6s %8s %3d %10s %10s %10s %6.2fx %7.2fx %9.1f %9.1f %8s %8s" % (
            r["lib"], fmt_size(r["size"]), r["threads"], _ms(o["time"]), _ms(f["time"]),
            _ms(lim["time"]), o["time"] / f["time"], f["time"] / lim["time"],
            o["faults"], f["faults"], _ms(o["sys"]), _ms(f["sys"])), file=out)
    s = doc.get("snapshot")
    if s:
        base = s["copy.deepcopy"]["time"]
        print("\nsnapshot loop: %d copies of a %s numpy array, each dropped before the next" % (
            s["copies"], fmt_size(s["size"])), file=out)
        for k in SNAPSHOT_IMPLS:
            print("  %-22s %9.2f ms  %6.2fx  faults %8.0f  sys %7.2f ms" % (
                k, s[k]["time"] * 1e3, base / s[k]["time"], s[k]["faults"], s[k]["sys"] * 1e3),
                file=out)
    if doc.get("rss"):
        print("\npeak RSS growth of one copy (VmHWM, a fresh process each)", file=out)
        for r in doc["rss"]:
            def mb(v):
                return "-" if v is None else "%.1f MiB" % (v / MiB)
            extra = (None if r["own"] is None or r["fastcopy"] is None
                     else (r["fastcopy"] - r["own"]) / MiB)
            print("  %-6s %8s  own %12s  fastcopy %12s  fastcopy - own %s" % (
                r["lib"], fmt_size(r["size"]), mb(r["own"]), mb(r["fastcopy"]),
                "-" if extra is None else "%+.1f MiB" % extra), file=out)


def thp_mode():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            text = f.read()
    except OSError:
        return None
    return text[text.find("[") + 1:text.find("]")] if "[" in text else None


def main(args, out, err, fastcopy):
    libs = _libs(args.buffer_libs or ("numpy", "torch"))
    if not _libs(("numpy",)):
        # the limit is np.copyto, whichever libraries are swept
        print("python -m fastcopy --buffers: needs numpy", file=err)
        return 2
    if not libs:
        print("python -m fastcopy --buffers: none of %s is installed"
              % ", ".join(args.buffer_libs), file=err)
        return 2
    sizes = QUICK_SIZES if args.quick else SIZES
    if args.max_size:
        cap = parse_size(args.max_size)
        sizes = [s for s in sizes if s <= cap]
    rounds = args.repeats or (5 if args.quick else 11)
    target = args.sample or (0.002 if args.quick else 0.01)
    threads = (1, 2)

    def progress(msg):
        print("[buffers] " + msg, file=err, flush=True)

    t0 = time.perf_counter()
    doc = {"sweep": sweep(fastcopy, libs, sizes, threads, rounds, target, progress)}
    snap = 128 * MiB if (not args.max_size or parse_size(args.max_size) >= 128 * MiB) else sizes[-1]
    doc["snapshot"] = snapshot(fastcopy, snap, rounds, progress)
    if not args.no_rss:
        doc["rss"] = peak_rss(libs, [s for s in RSS_SIZES if s <= sizes[-1]], progress)
    import numpy
    torch_version = None
    if "torch" in libs:
        import torch
        torch_version = torch.__version__
    doc["meta"] = {"fastcopy": getattr(fastcopy, "__version__", None),
                   "python": sys.version.split()[0], "numpy": numpy.__version__,
                   "torch": torch_version, "thp": thp_mode(), "cpus": os.cpu_count(),
                   "rounds": rounds, "quick": bool(args.quick), "threads": list(threads),
                   "wall_s": time.perf_counter() - t0,
                   "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    report(doc, out)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    if args.plot:
        from . import _plot
        _plot.plot_buffers(doc, args.plot)
        print("python -m fastcopy: chart written to %s" % args.plot, file=err)
    return 0
