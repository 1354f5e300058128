"""Threads copying records of their own that share one non-immortal atom.

    PYTHON_GIL=0 python3.13t benchmarks/bench_shared_atoms.py [-s SECONDS] [-r ROUNDS]
        [--shape dict,list,object] [--so OTHER_BUILD.so]

Every record holds the same float (made by the main thread: not immortal, not owned by the
copying threads) in 8 places; each thread builds 200 records of its own and deep-copies the
list in a loop.  Reported per shape, for fastcopy and copy.deepcopy: copies per second with 1
and 2 threads (all threads together, wall clock), the speed-up ("scaling"), and the CPU
seconds the 2 threads used -- then fastcopy's scaling over the stdlib's.  The same with a
float of each thread's own ("own") shows what sharing costs.  On a free-threaded build every
count of the shared float is an atomic write to one cache line both cores want; with the GIL
the threads take turns and scaling is about 1.  Medians of ROUNDS alternating rounds.

--so loads another build of the extension (an older one, say) as fastcopy instead of the
package's, to compare the two in the same run.  docs/free-threading.md ("Shared atoms") has the
figures.
"""
import argparse
import copy
import importlib.machinery
import importlib.util
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_threads import run_loop  # noqa: E402

SHARED = float(os.getpid()) + 0.5


def rec_dict(i, a):
    return {"id": i, "name": "n%d" % i, "a": a, "b": a, "c": a, "d": a,
            "e": a, "f": a, "g": a, "h": a, "tags": ["x", "y"]}


def rec_list(i, a):
    return [i, "n%d" % i, a, a, a, a, a, a, a, a, ["x", "y"]]


class Rec:
    def __init__(self, i, a):
        self.id = i
        self.name = "n%d" % i
        self.a = self.b = self.c = self.d = self.e = self.f = self.g = self.h = a


SHAPES = {"dict": rec_dict, "list": rec_list, "object": Rec}


def run(shape, fn, nthreads, seconds, shared, n=200):
    """(copies per second of all threads, CPU seconds they used): bench_threads' loop, each
    thread copying its own list of n records."""
    def make(t):
        a = SHARED if shared else float(t * 1000 + os.getpid()) + 0.25
        return [[SHAPES[shape](i, a) for i in range(n)]]
    rate, cpu, _wall = run_loop(make, nthreads, seconds, fn)
    return rate, cpu


def load(so):
    if so is None:
        import fastcopy
        return fastcopy
    loader = importlib.machinery.ExtensionFileLoader("fastcopy._fastcopy", so)
    spec = importlib.util.spec_from_file_location("fastcopy._fastcopy", so, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-s", "--seconds", type=float, default=1.0)
    ap.add_argument("-r", "--rounds", type=int, default=3)
    ap.add_argument("--shape", default=",".join(SHAPES))
    ap.add_argument("--so", default=None, help="another build of fastcopy._fastcopy")
    ap.add_argument("--own", action="store_true", help="also each thread's own float")
    args = ap.parse_args(argv)
    fc = load(args.so)
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    print("Python %s, GIL %s, %s" % (sys.version.split()[0], "on" if gil else "off",
                                     args.so or "fastcopy"))
    impls = [("fastcopy", fc.deepcopy), ("stdlib", copy.deepcopy)]
    for shape in args.shape.split(","):
        for shared in (True, False) if args.own else (True,):
            res = {name: {1: [], 2: [], "cpu": []} for name, _ in impls}
            for _ in range(args.rounds):
                for name, fn in impls:
                    r1, _c = run(shape, fn, 1, args.seconds, shared)
                    r2, c2 = run(shape, fn, 2, args.seconds, shared)
                    res[name][1].append(r1)
                    res[name][2].append(r2)
                    res[name]["cpu"].append(c2 / args.seconds)
            cells, scal = [], {}
            for name, _ in impls:
                r1 = statistics.median(res[name][1])
                r2 = statistics.median(res[name][2])
                scal[name] = statistics.median(b / a for a, b in zip(res[name][1], res[name][2]))
                cells.append("%s %7.0f -> %7.0f /s  x%.2f (CPU %.2f)" % (
                    name, r1, r2, scal[name], statistics.median(res[name]["cpu"])))
            print("%-6s %-6s | %s | fastcopy/stdlib scaling %.2f" % (
                shape, "shared" if shared else "own", " | ".join(cells),
                scal["fastcopy"] / scal["stdlib"]), flush=True)


if __name__ == "__main__":
    main()
