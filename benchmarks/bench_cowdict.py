"""Benchmarks for fastcopy.cowdict (not a test: nothing here asserts a timing).

    python benchmarks/bench_cowdict.py [--n 1000000]

Prints, for an N-entry cowdict of atomic values:
  copy / copy.copy / deepcopy time          target < 20 us
  new memory for 100 deep copies            target < 10 MB
  lookup time relative to dict              target <= 1.3x
  first write after a copy vs dict.copy()   target <= 1.5x
"""
import argparse
import copy
import gc
import os
import sys
import timeit
import tracemalloc

# run from a checkout: the in-place build at the repository root
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import fastcopy
from fastcopy import cowdict


def best(stmt, number, repeat=7):
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number


def ratio(a, b, number, repeat=25):
    """best(a) / best(b), measured interleaved so that load on a shared
    machine hits both sides alike."""
    ta, tb = [], []
    for _ in range(repeat):
        ta.append(timeit.timeit(a, number=number))
        tb.append(timeit.timeit(b, number=number))
    return min(ta) / min(tb)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    n = ap.parse_args().n
    src = {f"key{i}": (i if i % 3 else f"v{i}") for i in range(n)}
    cd = cowdict(src)
    rows = []

    def row(name, value, unit, target):
        rows.append((name, value, unit, target))
        print(f"{name:<44} {value:>12.3f} {unit:<4} (target {target})")

    row("cd.copy()", best(cd.copy, 1000) * 1e6, "us", "< 20 us")
    row("copy.copy(cd)", best(lambda: copy.copy(cd), 1000) * 1e6, "us", "< 20 us")
    row("copy.deepcopy(cd)", best(lambda: copy.deepcopy(cd), 1000) * 1e6, "us", "< 20 us")
    row("fastcopy.deepcopy(cd)", best(lambda: fastcopy.deepcopy(cd), 1000) * 1e6, "us", "< 20 us")
    row("copy.deepcopy(dict) for reference", best(lambda: copy.deepcopy(src), 1, 1) * 1e6,
        "us", "-")

    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    keep = [copy.deepcopy(cd) for _ in range(100)]
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    row("new memory, 100 deep copies", (after - before) / 1e6, "MB", "< 10 MB")
    del keep

    keys = list(src)[:: max(1, n // 10000)]

    def lookups(m):
        def run():
            for k in keys:
                m[k]
        return run

    row("lookup cowdict / dict", ratio(lookups(cd), lookups(src), 10), "x", "<= 1.3x")

    def get_calls(m):
        def run():
            for k in keys:
                m.get(k)
        return run

    row("get() cowdict / dict", ratio(get_calls(cd), get_calls(src), 10), "x", "<= 1.3x")

    def first_write():
        c = cd.copy()
        c["key1"] = -1

    row("dict.copy() of the same size", best(src.copy, 3, 5) * 1e3, "ms", "-")
    row("first write after cd.copy()", best(first_write, 3, 5) * 1e3, "ms", "-")
    row("first write / dict.copy()", ratio(first_write, src.copy, 1, 9), "x", "<= 1.5x")

    c = cd.copy()
    c["key1"] = -1
    row("second write after a copy", best(lambda: c.__setitem__("key2", -2), 100000) * 1e9,
        "ns", "-")
    row("dict write", best(lambda: src.__setitem__("key2", -2), 100000) * 1e9, "ns", "-")
    return rows


if __name__ == "__main__":
    main()
