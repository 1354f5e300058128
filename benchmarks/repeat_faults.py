"""Copies of the same records made and dropped again and again: CPU time, page faults and
system time per record (getrusage), for fastcopy or the memo-free floor.

    python benchmarks/repeat_faults.py N {fastcopy|floor} [--keep-arenas MIB] [--gc on]

The records are the scale benchmark's (``fastcopy/_scale.py``: ``{id, name, score, tags: [3],
meta: {ok, pos: (i, i+1)}}``), the floor its hand-written copy.  One warm-up copy, then enough
copies for about three million records; each copy is released before the next, as a program
that checkpoints or rolls back does.  The time is the median of the timed copies alone; faults
and system time cover copies and releases (a release hands pymalloc's empty arenas back to the
system, and the next copy faults fresh pages in).  ``--keep-arenas`` sets
``configure(keep_arenas=)`` first (docs/scale.md, "Fresh arenas").  One implementation a
process: run each in its own, on an idle machine.
"""
import argparse
import gc
import resource
import statistics
import time

import fastcopy
from fastcopy import _scale


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("n", type=int)
    p.add_argument("impl", choices=("fastcopy", "floor"))
    p.add_argument("--keep-arenas", type=int, default=0, metavar="MIB")
    p.add_argument("--gc", choices=("off", "on"), default="off")
    args = p.parse_args()
    if args.keep_arenas:
        fastcopy.configure(keep_arenas=args.keep_arenas << 20)
    build, floor, _ = _scale.SHAPES["records"]
    x = build(args.n)
    fn = fastcopy.deepcopy if args.impl == "fastcopy" else floor
    if args.gc == "off":
        gc.disable()
    y = fn(x)
    del y
    reps = max(5, 3_000_000 // args.n)
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    ts = []
    for _ in range(reps):
        t = time.process_time_ns()
        y = fn(x)
        ts.append(time.process_time_ns() - t)
        del y
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    total = reps * args.n
    print("%s N=%d keep_arenas=%d MiB gc %s: %.0f ns a record (median of %d), user %.0f ns, "
          "system %.0f ns, minor faults %.3f a record"
          % (args.impl, args.n, args.keep_arenas, args.gc, statistics.median(ts) / args.n, reps,
             (r1.ru_utime - r0.ru_utime) / total * 1e9, (r1.ru_stime - r0.ru_stime) / total * 1e9,
             (r1.ru_minflt - r0.ru_minflt) / total))


if __name__ == "__main__":
    main()
