"""Two builds of the C core in one process, timed on the scale benchmark's shapes.

A change to the walker is worth a few percent on big copies, less than this machine's noise
between two processes; loaded side by side and interleaved round by round, the two builds see
the same heap, caches and neighbours.  The memo-free floor of `python -m fastcopy --scale` runs
in the same rounds.  CPU time per item of the copy call alone (not its release), medians:

    python setup.py build_ext --build-lib /tmp/before      # at the commit to compare with
    python setup.py build_ext --inplace                    # the change
    python benchmarks/ab_builds.py /tmp/before/fastcopy/_fastcopy.*.so \\
        fastcopy/_fastcopy.*.so --gc off --keep -n 10000 -n 100000 -n 1000000

--keep holds the previous copy alive while the next one is made (a replay buffer, snapshots):
what a source shares with its earlier copies (atomic tuples, say) then has more references.
Run from the repository root, with the machine otherwise idle.
"""
import argparse
import gc
import importlib.machinery
import importlib.util
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fastcopy import _scale  # noqa: E402


def load(path):
    """The extension module at path, under the package's name, not put in sys.modules."""
    name = "fastcopy._fastcopy"
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def measure(fns, data, n, rounds, keep):
    """{name: [ns per item per round]}, the implementations interleaved, their order turned
    every round."""
    times = {name: [] for name in fns}
    kept = [fns["floor"](data)] if keep else []
    inner = max(1, 200000 // n)
    order = list(fns)
    for r in range(rounds):
        for name in (order if r % 2 else order[::-1]):
            fn, total = fns[name], 0.0
            for _ in range(inner):
                t0 = time.process_time()
                y = fn(data)
                total += time.process_time() - t0
                if keep:
                    kept[:] = [y]
                del y
            times[name].append(total / (n * inner) * 1e9)
    return times


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", help="the _fastcopy extension to compare with")
    ap.add_argument("after", help="the _fastcopy extension under test")
    ap.add_argument("--shape", default="records", choices=sorted(_scale.SHAPES))
    ap.add_argument("-n", type=int, action="append", help="items (repeatable)")
    ap.add_argument("--gc", choices=["on", "off"], default="off")
    ap.add_argument("--keep", action="store_true", help="keep the previous copy alive")
    ap.add_argument("--rounds", type=int, default=0, help="default: 15 to 100k items, then 5")
    args = ap.parse_args(argv)
    before, after = load(args.before), load(args.after)
    build, floor, _ = _scale.SHAPES[args.shape]
    print("%s, collector %s%s: CPU ns per item, medians of interleaved rounds"
          % (args.shape, args.gc, ", previous copy kept" if args.keep else ""))
    print("%10s %8s %8s %8s %10s %12s" % ("N", "floor", "before", "after", "after/floor",
                                         "before/after"))
    for n in args.n or [1000, 10000, 100000, 1000000]:
        data = build(n)
        fns = {"floor": floor, "before": before.deepcopy, "after": after.deepcopy}
        ref = before.deepcopy(data)
        if not _scale._shape_of(ref, after.deepcopy(data)):
            raise SystemExit("the two builds' copies differ at N=%d" % n)
        del ref
        rounds = args.rounds or (15 if n <= 100000 else 5)
        was = gc.isenabled()
        if args.gc == "off":
            gc.disable()
        try:
            t = measure(fns, data, n, rounds, args.keep)
        finally:
            if was:
                gc.enable()
        m = {k: statistics.median(v) for k, v in t.items()}
        print("%10d %8.0f %8.0f %8.0f %9.2fx %11.2fx" % (n, m["floor"], m["before"], m["after"],
                                                        m["after"] / m["floor"],
                                                        m["before"] / m["after"]))
        del data


if __name__ == "__main__":
    main()
