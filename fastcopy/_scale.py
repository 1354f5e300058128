"""``python -m fastcopy --scale``: the cost per object of deep copies as they grow.

Four shapes of data users copy in bulk, each built with N items from 1,000 up, copied by the
stdlib, fastcopy and copium (where installed) and by a hand-written copy of the same shape that
keeps no memo (the *floor*: what building the same new objects costs); per N and
implementation:

* CPU time per item (median of interleaved rounds, the collector on or off: ``--gc``),
* what a full collection right after the copy, with the copy alive, costs over one just
  before it (the rest of the heap),
* with ``--rss``: the peak resident memory a copy adds, measured in a fresh process per cell,
* with ``--serializers``: msgspec's msgpack and orjson round trips, where installed.

Every copy is compared with the stdlib's (same shape, same sharing) once per cell.
docs/scale.md shows a run; ``--json FILE`` and ``--plot FILE`` write the numbers and a chart.
"""
# Untyped on purpose, as the other command-line modules (mypy: ignore-errors)
# mypy: ignore-errors
import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time

SIZES = (1_000, 10_000, 100_000, 1_000_000)


# ---------------------------------------------------------------------------------------------
# Shapes: build(n) -> data, floor(data) -> the memo-free copy, items(data) -> n
# ---------------------------------------------------------------------------------------------

def build_records(n):
    return [{"id": i, "name": "n%d" % i, "score": i * 0.5, "tags": ["a", "b", str(i % 7)],
             "meta": {"ok": bool(i & 1), "pos": (i, i + 1)}} for i in range(n)]


def floor_records(x):
    return [{"id": d["id"], "name": d["name"], "score": d["score"], "tags": d["tags"][:],
             "meta": {"ok": d["meta"]["ok"], "pos": d["meta"]["pos"]}} for d in x]


def build_dict_of_lists(n):
    return {"k%d" % i: [i, i + 1, float(i)] for i in range(n)}


def floor_dict_of_lists(x):
    return {k: v[:] for k, v in x.items()}


def build_tree(n):
    """A tree of n dict nodes, four children each (depth log4 n)."""
    nodes = [{"v": i, "kids": []} for i in range(n)]
    for i in range(1, n):
        nodes[(i - 1) // 4]["kids"].append(nodes[i])
    return nodes[0]


def floor_tree(x):
    out = {"v": x["v"], "kids": []}
    stack = [(x, out)]
    while stack:
        src, dst = stack.pop()
        kids = dst["kids"]
        for k in src["kids"]:
            c = {"v": k["v"], "kids": []}
            kids.append(c)
            stack.append((k, c))
    return out


def build_graph(n):
    """n nodes in a list, each with edges to three earlier nodes: shared references."""
    nodes = []
    for i in range(n):
        nodes.append({"id": i, "edges": [nodes[(i * 7 + j) % i] for j in range(3)] if i else []})
    return nodes


def floor_graph(x):
    """A memo in all but name: the edges are found again by position (the nodes' ids)."""
    new = [{"id": d["id"], "edges": None} for d in x]
    for d, c in zip(x, new):
        c["edges"] = [new[e["id"]] for e in d["edges"]]
    return new


SHAPES = {
    "records": (build_records, floor_records,
                "list of dicts {id, name, score, tags: [3], meta: {ok, pos: (i, i+1)}}"),
    "dict_of_lists": (build_dict_of_lists, floor_dict_of_lists,
                      "dict str -> [int, int, float]"),
    "tree": (build_tree, floor_tree, "tree of dict nodes, 4 children each"),
    "graph": (build_graph, floor_graph,
              "list of dict nodes, each with edges to 3 earlier nodes (shared)"),
}


# ---------------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------------

def _impls(names):
    import copy

    import fastcopy
    out = {"stdlib": copy.deepcopy, "fastcopy": fastcopy.deepcopy}
    if "copium" in names:
        try:
            import copium
        except ImportError:
            pass
        else:
            out["copium"] = copium.deepcopy
    return out


SERIALIZERS = ("msgspec", "orjson")


def _serializers(shape):
    """The serializer round trips users reach for instead of a deep copy of JSON-like data,
    where installed: {name: fn}.  Not copies (tuples come back as lists, int keys as strs with
    orjson), timed for comparison only; not for the graph, whose shared nodes they would write
    out again at every reference."""
    out = {}
    if shape == "graph":
        return out
    try:
        import msgspec
    except ImportError:
        pass
    else:
        enc, dec = msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder()
        out["msgspec"] = lambda x: dec.decode(enc.encode(x))
    try:
        import orjson
    except ImportError:
        pass
    else:
        out["orjson"] = lambda x: orjson.loads(orjson.dumps(x))
    return out


def _shape_of(a, b):
    """Compare two copies of the same shape: equal values and the same sharing pattern."""
    ids_a, ids_b = {}, {}
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, (dict, list, tuple)):
            ia, ib = ids_a.get(id(x)), ids_b.get(id(y))
            if ia != ib:
                return False
            if ia is not None:
                continue
            ids_a[id(x)] = ids_b[id(y)] = len(ids_a)
            if isinstance(x, dict):
                if list(x) != list(y):
                    return False
                stack.extend(zip(x.values(), y.values()))
            else:
                if len(x) != len(y):
                    return False
                stack.extend(zip(x, y))
        elif x != y:
            return False
    return True


def _rounds(n):
    return 7 if n <= 10_000 else 5 if n <= 100_000 else 3


# Above this N a cell runs each implementation in an interpreter of its own (measure_split):
# 10M records are 7 GiB of source, each copy 4.6 GiB more, the stdlib's memo 3 GiB, and copium
# keeps the copy of its last call alive -- together more than a 24 GiB machine holds.
SPLIT_N = 1_000_000


def _time_rounds(fns, data, n, use_gc):
    """Interleaved rounds of fns over data: {name: {"ns", "gc_ms"}} (medians)."""
    times = {name: [] for name in fns}
    gcs = {name: [] for name in fns}
    was = gc.isenabled()
    try:
        for _ in range(_rounds(n)):
            for name, fn in fns.items():
                t = time.perf_counter()
                gc.collect()
                base = time.perf_counter() - t
                if use_gc:
                    gc.enable()
                else:
                    gc.disable()
                t = time.process_time()
                y = fn(data)
                dt = time.process_time() - t
                gc.disable()
                t = time.perf_counter()
                gc.collect()
                gcs[name].append(time.perf_counter() - t - base)
                del y
                times[name].append(dt)
    finally:
        if was:
            gc.enable()
    return {name: {"ns": statistics.median(times[name]) / n * 1e9,
                   "gc_ms": statistics.median(gcs[name]) * 1e3} for name in fns}


def measure(shape, n, names, use_gc, serializers=False):
    """{impl: {"ns": ns per item, "gc_ms": full collection after the copy}} for one cell."""
    build, floor, _ = SHAPES[shape]
    data = build(n)
    fns = dict(_impls(names))
    fns["floor"] = floor
    if serializers:
        fns.update(_serializers(shape))
    ref = fns["stdlib"](data)
    for name, fn in fns.items():
        if name in SERIALIZERS:
            continue
        if name not in ("stdlib", "floor") and not _shape_of(ref, fn(data)):
            raise AssertionError("%s's copy of %s (N=%d) differs from the stdlib's"
                                 % (name, shape, n))
    del ref
    return _time_rounds(fns, data, n, use_gc)


def measure_one(shape, n, impl, use_gc):
    """One implementation and the floor, interleaved, in this process: measure_split's child.
    The copy is checked against the floor's: by shape for the graph (its nodes share), by
    value (==) for the others -- the id tables of _shape_of for 10M records would not fit
    beside the copies (up to SPLIT_N every cell is checked by shape against the stdlib's)."""
    build, floor, _ = SHAPES[shape]
    data = build(n)
    if impl in SERIALIZERS:
        fn = _serializers(shape)[impl]
    else:
        fn = _impls([impl])[impl]
        ref, got = floor(data), fn(data)
        same = _shape_of(ref, got) if shape == "graph" else ref == got
        del ref, got
        if not same:
            raise AssertionError("%s's copy of %s (N=%d) differs from the floor's"
                                 % (impl, shape, n))
    return _time_rounds({impl: fn, "floor": floor}, data, n, use_gc)


def _child(template, **fields):
    """Run template (filled with fields and this checkout's path) in a fresh interpreter:
    the CompletedProcess, output captured as text."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = template % dict(fields, path=[root])
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


_SPLIT_CHILD = r"""
import json, sys
sys.path[:0] = %(path)r
import fastcopy
from fastcopy import _scale
if %(keep_arenas)d:
    fastcopy.configure(keep_arenas=%(keep_arenas)d)
print(json.dumps(_scale.measure_one(%(shape)r, %(n)d, %(impl)r, %(use_gc)r)))
"""


def measure_split(shape, n, names, use_gc, serializers=False):
    """measure() for a cell too big for one process: each implementation in a fresh
    interpreter with the floor beside it (measure_one).  The floor reported is the one timed
    beside fastcopy; fastcopy's ratio to it comes from one process, its ratios to the others
    from separate ones.  "floors" keeps every child's floor (how much they moved)."""
    import fastcopy
    impls = [m for m in names if m in _impls(names)]
    if serializers:
        impls += [m for m in SERIALIZERS if m in _serializers(shape)]
    out, floors, failed = {}, {}, {}
    for impl in impls:
        proc = _child(_SPLIT_CHILD, shape=shape, n=n, impl=impl, use_gc=use_gc,
                      keep_arenas=fastcopy.configure()["keep_arenas"])
        if proc.returncode == -9 or (proc.returncode != 0 and "MemoryError" in proc.stderr):
            # out of memory: SIGKILL from the kernel's OOM killer (copium's retained copy at
            # 10M records on a 24 GiB machine), or a MemoryError; that column stays empty and
            # the row goes on.  Any other death (a crash) is an error like any failure.
            failed[impl] = ("killed by signal 9" if proc.returncode == -9 else "MemoryError")
            continue
        if proc.returncode != 0:
            raise RuntimeError("the %s cell of %s (N=%d) failed in its process:\n%s"
                               % (impl, shape, n, proc.stderr[-2000:]))
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        out[impl] = r[impl]
        floors[impl] = r["floor"]
    if "fastcopy" not in out:
        raise RuntimeError("fastcopy's cell of %s (N=%d) failed: %s"
                           % (shape, n, failed.get("fastcopy")))
    out["floor"] = floors["fastcopy"]
    out["floors"] = floors
    out["failed"] = failed
    return out


_RSS_CHILD = r"""
import gc, resource, sys
sys.path[:0] = %(path)r
from fastcopy import _scale
shape, n, impl = %(shape)r, %(n)d, %(impl)r
build, floor, _ = _scale.SHAPES[shape]
data = build(n)
fn = floor if impl == "floor" else _scale._impls([impl])[impl]
def peak():
    # this process's own high-water mark (ru_maxrss can carry the parent's over exec)
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
gc.collect()
before = peak()
y = fn(data)
print(peak() - before)
"""


def peak_rss(shape, n, impl):
    """Bytes a copy adds to the process's peak resident memory (a fresh process; POSIX:
    the resource module)."""
    out = _child(_RSS_CHILD, shape=shape, n=n, impl=impl)
    out.check_returncode()
    return int(out.stdout.split()[-1])


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------

def _parser():
    p = argparse.ArgumentParser(prog="python -m fastcopy --scale",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--shape", action="append", choices=sorted(SHAPES),
                   help="shape (repeatable; default: all)")
    p.add_argument("--max-n", type=int, default=1_000_000, metavar="N",
                   help="largest N (default 1,000,000; 10,000,000 adds that size, each "
                        "implementation in a process of its own with the floor beside it: "
                        "half an hour a shape and close to 20 GiB of memory for records)")
    p.add_argument("--min-n", type=int, default=1_000, metavar="N",
                   help="smallest N (default 1,000)")
    p.add_argument("--gc", choices=("off", "on"), default="off",
                   help="the collector during the timed copies (default off)")
    p.add_argument("--rss", action="store_true",
                   help="also the peak memory each copy adds, N >= 100,000, a fresh process "
                        "per cell")
    p.add_argument("--keep-arenas", type=int, default=0, metavar="MIB",
                   help="configure(keep_arenas=MIB MiB) for the whole run: every "
                        "implementation's freed objects leave their pages mapped for the next "
                        "round (docs/scale.md, \"Fresh arenas\"; default 0: off)")
    p.add_argument("--no-copium", action="store_true", help="leave copium out")
    p.add_argument("--serializers", action="store_true",
                   help="also time msgspec's msgpack and orjson round trips where installed "
                        "(not copies: tuples come back as lists; not for the graph)")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    p.add_argument("--plot", metavar="FILE", help="also draw ns per item against N (needs "
                   "matplotlib)")
    return p


def main(argv, out=None, err=None):
    out = out or sys.stdout
    err = err or sys.stderr
    args = _parser().parse_args(argv)
    shapes = args.shape or list(SHAPES)
    sizes = [n for n in SIZES + (10_000_000,) if args.min_n <= n <= args.max_n]
    names = ["stdlib", "fastcopy"] + ([] if args.no_copium else ["copium"])
    if args.plot:
        from . import _plot
        _plot.check_path(args.plot)
    cols = ["floor"] + [n for n in names if n in _impls(names)]
    if args.keep_arenas < 0:
        print("--keep-arenas: MiB >= 0", file=err)
        return 2
    import fastcopy
    old_keep = fastcopy.configure(keep_arenas=args.keep_arenas << 20)["keep_arenas"]
    try:
        return _run(args, shapes, sizes, names, cols, out, err)
    finally:
        fastcopy.configure(keep_arenas=old_keep)


def _run(args, shapes, sizes, names, cols, out, err):
    if args.keep_arenas:
        print("configure(keep_arenas=%d MiB): empty arenas stay mapped between rounds"
              % args.keep_arenas, file=out)
    print("ns per item, CPU time, medians; collector %s during copies; gc ms: what a full "
          "collection after the copy costs over one before it" % args.gc, file=out)
    print("%-14s %10s  %s  %s" % ("shape", "N", "  ".join("%10s" % c for c in cols),
                                  "  fastcopy/floor  fastcopy vs copium   gc ms (stdlib, fastcopy)"),
          file=out)
    rows = []
    for shape in shapes:
        for n in sizes:
            print("[%s N=%d]" % (shape, n), file=err, flush=True)
            split = n > SPLIT_N
            r = (measure_split if split else measure)(shape, n, names, args.gc == "on",
                                                      args.serializers)
            floors, failed = r.pop("floors", None), r.pop("failed", {})
            row = {"shape": shape, "n": n, "gc": args.gc, "results": r}
            if split:
                row["split"] = {"floors": floors, "failed": failed}
            if args.rss and n >= 100_000:
                row["rss"] = {c: peak_rss(shape, n, c) for c in cols}
            rows.append(row)
            ratio = r["fastcopy"]["ns"] / r["floor"]["ns"]
            vs = ("%.2fx" % (r["copium"]["ns"] / r["fastcopy"]["ns"])) if "copium" in r else "-"
            print("%-14s %10d  %s  %14.2fx  %18s   %6s %6.1f" % (
                shape, n, "  ".join("%10.0f" % r[c]["ns"] if c in r else "%10s" % "-"
                                    for c in cols), ratio, vs,
                "%.1f" % r["stdlib"]["gc_ms"] if "stdlib" in r else "-",
                r["fastcopy"]["gc_ms"]), file=out, flush=True)
            sers = [k for k in SERIALIZERS if k in r]
            if sers:
                print("%-14s %10s  %s" % ("", "", "  ".join(
                    "%s %.0f ns (fastcopy %.2fx faster)" % (k, r[k]["ns"], r[k]["ns"]
                                                            / r["fastcopy"]["ns"])
                    for k in sers)), file=out, flush=True)
            if split:
                print("%-14s %10s  each in a process of its own, the floor beside it: %s%s" % (
                    "", "", "  ".join("%s %.0f" % (k, v["ns"]) for k, v in floors.items()),
                    "".join("; %s: %s" % kv for kv in failed.items())), file=out, flush=True)
            if "rss" in row:
                print("%-14s %10s  %s  (peak MiB added)" % ("", "", "  ".join(
                    "%10.1f" % (row["rss"][c] / 2**20) for c in cols)), file=out, flush=True)
    from . import _bench
    doc = {"meta": {"suite": "scale", "python": platform.python_version(),
                    "implementation": platform.python_implementation(),
                    "platform": platform.platform(), "machine": platform.machine(),
                    "cpu_count": os.cpu_count(), "cpu": _bench.cpu_model(), "clock": "cpu",
                    "gc": args.gc, "keep_arenas_mib": args.keep_arenas,
                    "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())},
           "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    if args.plot:
        from . import _plot
        _plot.plot_scale(doc, args.plot)
    return 0
