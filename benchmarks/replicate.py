"""replicate(x, n) against [fastcopy.deepcopy(x) for _ in range(n)], by shape and n.

    python benchmarks/replicate.py                  # CPU time (medians), loop / replicate
    python benchmarks/replicate.py --instructions   # instructions per call (callgrind)
    python benchmarks/replicate.py --shapes config200 json --ns 2 10
    python benchmarks/replicate.py --instructions --tape --shapes refs wide_refs --ns 3 10

Time: both roads are timed in one process, alternately, on the CPU clock (time.process_time),
the median of --repeat rounds; each round runs each road for at least --min-ms.  The ratio
column is loop / replicate: above 1.00 replicate is faster.

Instructions: each (shape, n, road) runs in a fresh interpreter under valgrind --tool=callgrind,
once with R calls after a warm-up call and once with none; the difference divided by R is one
call's cost, startup and set-up cancelled out (R = max(2, 1000 // n), so every row makes about
1,000 copies and collections triggered along the way average out).  Needs valgrind.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import fastcopy

NS = (1, 2, 3, 4, 10, 100, 1000)


class Point:
    """A plain instance: a tape cannot hold it (replicate makes n deep copies)."""

    def __init__(self, x, y):
        self.x, self.y = x, y


def _json(n):
    return {"users": [{"id": i, "name": "u%d" % i, "tags": ["a", "b", "c"],
                       "scores": [i, i + 1, i + 2], "meta": {"x": i, "y": [1, 2]}}
                      for i in range(n)], "version": 3}


def shapes():
    sh = [1, 2, 3]
    shd = {"k": [4, 5]}
    return {
        # 200 keys, each a small dict of atomic values
        "config200": {"key%d" % i: {"a": i, "b": float(i), "c": "v%d" % i} for i in range(200)},
        # 900 ints, floats and strs in one list
        "flat_list": [v for i in range(300) for v in (i, i * 0.5, "s%d" % i)],
        # JSON-like: 50 records with lists and a nested dict
        "json": _json(50),
        # the same with an instance last, which no tape holds (found late)
        "json_late": dict(_json(50), zz=Point(1, 2)),
        # config200 whose last dict has a tuple key (a key whose hash is not
        # the interpreter's own code: no tape holds it)
        "keys_late": dict({"key%d" % i: {"a": i, "b": float(i), "c": "v%d" % i}
                           for i in range(199)}, last={(1, 2): 3}),
        # 300 tuples of atomic values (deepcopy returns each tuple itself)
        "tuples": [(i, "s%d" % i, float(i)) for i in range(300)],
        # 300 tuples holding a list each (every tuple is copied)
        "tuples_mut": [(i, [i]) for i in range(300)],
        # second references without containers: 5,000 references to one list
        # (a tape costs more per reference than a walk's memo hit: fc_tape_pays)
        "refs": [[1, 2]] * 5000,
        # 500 lists of 10 references to one list
        "wide_refs": (lambda sh: [[sh] * 10 for _ in range(500)])([1, 2]),
        # shared references: one list and one dict met many times
        "shared": {"a": [sh, sh, shd], "b": {"x": sh, "y": shd, "z": [shd, (sh, 1)]},
                   "c": [{"p": sh, "q": i} for i in range(100)]},
    }


def roads(x, n):
    dc = fastcopy.deepcopy
    return (lambda: [dc(x) for _ in range(n)]), (lambda: fastcopy.replicate(x, n))


def cpu_ms(f, min_ms):
    k, t = 0, 0.0
    t0 = time.process_time()
    while True:
        f()
        k += 1
        t = time.process_time() - t0
        if t * 1e3 >= min_ms:
            return t * 1e3 / k


def time_table(names, ns, repeat, min_ms):
    S = shapes()
    print("| shape | n | loop (ms) | replicate (ms) | loop / replicate |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        for n in ns:
            loop, rep = roads(S[name], n)
            L, R = [], []
            for _ in range(repeat):
                L.append(cpu_ms(loop, min_ms))
                R.append(cpu_ms(rep, min_ms))
            lm, rm = statistics.median(L), statistics.median(R)
            print("| %s | %d | %.3f | %.3f | %.2fx |" % (name, n, lm, rm, lm / rm), flush=True)


def one(name, n, road, reps):
    loop, rep = roads(shapes()[name], n)
    if road == "tape":
        # tests' switch: a tape wherever the source allows, from n = 2
        from fastcopy import _fastcopy
        _fastcopy._replicate_road("tape")
    f = loop if road == "loop" else rep
    f()
    for _ in range(reps):
        f()


def instructions(name, n, road, reps):
    def run(k):
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
               os.path.realpath(sys.executable), os.path.abspath(__file__),
               "--one", name, str(n), road, str(k)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
        return int(re.search(r"Collected : (\d+)", out).group(1))
    return (run(reps) - run(0)) // reps


def instruction_table(names, ns, tape=False):
    if tape:
        print("| shape | n | loop | replicate | loop / replicate | a tape forced | loop / tape |")
        print("|---|---:|---:|---:|---:|---:|---:|")
    else:
        print("| shape | n | loop (instructions) | replicate (instructions) | loop / replicate |")
        print("|---|---:|---:|---:|---:|")
    for name in names:
        for n in ns:
            reps = max(2, 1000 // n)
            lo = instructions(name, n, "loop", reps)
            re_ = instructions(name, n, "replicate", reps)
            row = "| %s | %d | %s | %s | %.2fx |" % (name, n, format(lo, ","), format(re_, ","),
                                                     lo / re_)
            if tape:
                ta = instructions(name, n, "tape", reps)
                row += " %s | %.2fx |" % (format(ta, ","), lo / ta)
            print(row, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--instructions", action="store_true")
    ap.add_argument("--shapes", nargs="+", default=list(shapes()))
    ap.add_argument("--ns", nargs="+", type=int, default=list(NS))
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--min-ms", type=float, default=20.0)
    ap.add_argument("--tape", action="store_true",
                    help="with --instructions: also replicate with a tape forced wherever the "
                         "source allows (what the cost model in src/select.c decides against)")
    ap.add_argument("--one", nargs=4, metavar=("SHAPE", "N", "ROAD", "REPS"))
    a = ap.parse_args()
    if a.one:
        one(a.one[0], int(a.one[1]), a.one[2], int(a.one[3]))
    elif a.instructions:
        instruction_table(a.shapes, a.ns, a.tape)
    else:
        time_table(a.shapes, a.ns, a.repeat, a.min_ms)


if __name__ == "__main__":
    main()
