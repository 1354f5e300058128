"""numpy benchmarks: fastcopy.deepcopy vs copy.deepcopy, ratios in one process.

    python benchmarks/bench_numpy.py [--repeat N] [--mib M] [--threads T]

Each case alternates the two implementations (so drift in machine load hits
both alike) and reports medians.  Bandwidth is bytes copied per second
(read + write not double-counted), next to the machine's own limit measured
the same way: np.copyto into a buffer whose pages are already faulted.
"""
import argparse
import copy
import gc
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fastcopy  # noqa: E402


def timeit(fn, number):
    gc.collect()
    t = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t) / number


def pair(name, std, fast, number, repeat, nbytes=None):
    ts, tf = [], []
    std()
    fast()
    for _ in range(repeat):
        ts.append(timeit(std, number))
        tf.append(timeit(fast, number))
    ms, mf = statistics.median(ts), statistics.median(tf)
    line = "%-44s copy %9.3f ms  fastcopy %9.3f ms  x%.2f" % (name, ms * 1e3, mf * 1e3, ms / mf)
    if nbytes:
        line += "   (%.1f / %.1f GB/s)" % (nbytes / ms / 1e9, nbytes / mf / 1e9)
    print(line, flush=True)
    return ms / mf


def single(name, fn, number, repeat, nbytes):
    fn()
    m = statistics.median(timeit(fn, number) for _ in range(repeat))
    print("%-44s %9.3f ms   %.1f GB/s" % (name, m * 1e3, nbytes / m / 1e9), flush=True)
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--mib", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0, help="numpy_threads (0: default)")
    args = ap.parse_args()
    r = args.repeat
    old = fastcopy.configure(numpy_threads=args.threads)
    info = fastcopy.backends()["numpy"]
    print("python %s, numpy %s, %d CPUs usable, fastcopy threads=%d (min %d bytes)"
          % (sys.version.split()[0], np.__version__, len(os.sched_getaffinity(0)),
             info["threads"], info["parallel_min_bytes"]))

    # 1. many small arrays: per-array overhead
    d = {"k%d" % i: np.random.default_rng(i).random(100) for i in range(1000)}
    pair("dict of 1000 x float64[100]", lambda: copy.deepcopy(d),
         lambda: fastcopy.deepcopy(d), 20, r)
    lst = [np.arange(10, dtype="i4") for _ in range(1000)]
    pair("list of 1000 x int32[10]", lambda: copy.deepcopy(lst),
         lambda: fastcopy.deepcopy(lst), 20, r)
    objs = np.empty(10000, dtype=object)
    objs[:] = [[i, str(i)] for i in range(10000)]
    pair("object[10000] of small lists", lambda: copy.deepcopy(objs),
         lambda: fastcopy.deepcopy(objs), 5, r)

    # 2. one big array, one-shot (fresh pages every time)
    n = args.mib << 20
    big = np.random.default_rng(0).integers(0, 255, n, dtype="u1").view("f8")
    pair("one %d MiB float64 array" % args.mib, lambda: copy.deepcopy(big),
         lambda: fastcopy.deepcopy(big), 3, r, n)
    fastcopy.configure(numpy_threads=1)
    pair("  same, numpy_threads=1", lambda: copy.deepcopy(big),
         lambda: fastcopy.deepcopy(big), 3, r, n)
    fastcopy.configure(numpy_threads=args.threads)
    fbig = np.asfortranarray(big.reshape(1024, -1))
    pair("one %d MiB float64 array, F order" % args.mib, lambda: copy.deepcopy(fbig),
         lambda: fastcopy.deepcopy(fbig), 3, r, n)

    # 3. copy-and-drop loop: the pool keeps faulted pages
    fastcopy.configure(numpy_pool=True, numpy_pool_max_bytes=4 * n)
    pair("copy+drop %d MiB, pool on" % args.mib, lambda: copy.deepcopy(big),
         lambda: fastcopy.deepcopy(big), 3, r, n)
    fastcopy.configure(numpy_threads=1)
    pair("  same, numpy_threads=1", lambda: copy.deepcopy(big),
         lambda: fastcopy.deepcopy(big), 3, r, n)
    fastcopy.configure(numpy_threads=args.threads, numpy_pool=False)
    fastcopy.trim()

    # 4. the machine's limits, measured the same way
    dst = np.empty_like(big)
    dst[...] = 1
    single("limit: np.copyto into faulted pages", lambda: np.copyto(dst, big), 3, r, n)
    single("limit: np.empty_like + copyto (fresh)",
           lambda: np.copyto(np.empty_like(big), big), 3, r, n)
    fastcopy.configure(**old)


if __name__ == "__main__":
    main()
