"""What fastcopy.profile() and configure(warn_slow=) cost per top-level copy (docs/profiling.md).

Times tiny copies -- where the per-call overhead is all there is to see -- with profiling off,
with only warn_slow set (a threshold no copy reaches), and with a profiler recording.  Modes are
interleaved, each sample is the best of a few loops, and the median of the samples is reported
with the difference to "off".  Run from the repository root:

    python benchmarks/bench_profile.py                   # 15 samples
    python benchmarks/bench_profile.py --samples 31 --loops 20000

    python benchmarks/bench_profile.py --instructions    # callgrind: instructions per call

--instructions runs each case and mode under valgrind --tool=callgrind, once with one call and
once with 1 + N, and prints the difference divided by N: steady on a busy machine, where the
times are not.  The off cost is counted the same way by benchmarks/callgrind_counts.py before and
after the change (docs/profiling.md has the numbers).
"""
import argparse
import copy
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fastcopy  # noqa: E402


def _sample(fn, x, loops):
    best = None
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(loops):
            fn(x)
        dt = (time.perf_counter() - t) / loops
        best = dt if best is None else min(best, dt)
    return best


CASES = [
    ("fastcopy.deepcopy([1, 2])", "fastcopy.deepcopy", "[1, 2]"),
    ("copy.deepcopy({'a': [1]}) patched", "copy.deepcopy", "{'a': [1]}"),
    ("fastcopy.copy([1, 2])", "fastcopy.copy", "[1, 2]"),
]

CHILD = r"""
import sys
sys.path.insert(0, %(root)r)
import copy, fastcopy
fastcopy.patch()
fn, x = %(fn)s, %(x)s
mode = %(mode)r
if mode == "warn_slow":
    fastcopy.configure(warn_slow=60)
elif mode == "profile":
    prof = fastcopy.profile().start()
fn(x)
for _ in range(%(n)d):
    fn(x)
"""


def _instructions(n_calls):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(root, "benchmarks"))
    from callgrind_counts import instructions
    python = os.path.realpath(sys.executable)
    print("fastcopy %s | Python %s | callgrind instructions per call, (N=%d) - (N=0) over N"
          % (fastcopy.__version__, sys.version.split()[0], n_calls))
    for name, fn, x in CASES:
        res = {}
        for mode in ("off", "warn_slow", "profile"):
            base = dict(root=root, fn=fn, x=x, mode=mode)
            one = instructions(CHILD % dict(base, n=0), python)
            many = instructions(CHILD % dict(base, n=n_calls), python)
            res[mode] = (many - one) / n_calls
        print("%-36s off %7.0f | warn_slow %7.0f (%+5.0f) | profile %7.0f (%+5.0f)"
              % (name, res["off"], res["warn_slow"], res["warn_slow"] - res["off"],
                 res["profile"], res["profile"] - res["off"]), flush=True)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--samples", type=int, default=15)
    p.add_argument("--loops", type=int, default=10000)
    p.add_argument("--instructions", action="store_true",
                   help="count instructions under callgrind instead of timing")
    p.add_argument("-n", type=int, default=2000, help="calls per callgrind run (default 2000)")
    args = p.parse_args(argv)
    if args.instructions:
        return _instructions(args.n)
    fastcopy.patch()
    cases = [(name, eval(fn, {"copy": copy, "fastcopy": fastcopy}), eval(x))
             for name, fn, x in CASES]
    prof = fastcopy.profile()
    modes = ("off", "warn_slow", "profile")
    print("fastcopy %s | Python %s | median of %d samples, best of 3 x %d loops each"
          % (fastcopy.__version__, sys.version.split()[0], args.samples, args.loops))
    for name, fn, x in cases:
        times = {m: [] for m in modes}
        for i in range(args.samples):
            for m in modes[i % 3:] + modes[:i % 3]:
                if m == "warn_slow":
                    fastcopy.configure(warn_slow=60)
                elif m == "profile":
                    prof.start()
                times[m].append(_sample(fn, x, args.loops))
                if m == "warn_slow":
                    fastcopy.configure(warn_slow=None)
                elif m == "profile":
                    prof.stop()
        med = {m: statistics.median(v) for m, v in times.items()}
        print("%-36s off %7.0f ns | warn_slow %7.0f ns (%+5.0f) | profile %7.0f ns (%+5.0f)"
              % (name, med["off"] * 1e9, med["warn_slow"] * 1e9,
                 (med["warn_slow"] - med["off"]) * 1e9, med["profile"] * 1e9,
                 (med["profile"] - med["off"]) * 1e9))
    fastcopy.unpatch()
    return 0


if __name__ == "__main__":
    sys.exit(main())
