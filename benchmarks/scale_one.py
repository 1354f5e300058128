"""One cell of the scale benchmark for one implementation: it and the memo-free floor at one N,
interleaved in this process, exactly as ``python -m fastcopy --scale`` times each implementation
above 1M items (``_scale.measure_one``, the split child), without the other implementations'
children, which take most of a 10M run's half hour a shape::

    python benchmarks/scale_one.py N [--keep-arenas MIB] [--gc on] [--shape S ...] [--impl I]

Prints a JSON line per shape: ns per item (CPU time, median of the rounds) and the full
collection's cost after the copy, for the implementation (fastcopy unless --impl names copium,
the stdlib, or the msgspec or orjson round trip of ``--scale --serializers``) and the floor,
and their ratio.  Run each big shape in its own process (10M records hold ~16 GiB at the
peak: source, copy and the floor's copy that checks it).
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import fastcopy  # noqa: E402
from fastcopy import _scale  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("n", type=int)
    p.add_argument("--keep-arenas", type=int, default=0, metavar="MIB")
    p.add_argument("--gc", choices=("off", "on"), default="off")
    p.add_argument("--shape", action="append", choices=sorted(_scale.SHAPES))
    p.add_argument("--impl", default="fastcopy",
                   choices=("fastcopy", "copium", "stdlib") + _scale.SERIALIZERS)
    args = p.parse_args(argv)
    fastcopy.configure(keep_arenas=args.keep_arenas << 20)
    for shape in args.shape or list(_scale.SHAPES):
        t = time.time()
        r = _scale.measure_one(shape, args.n, args.impl, args.gc == "on")
        r.update(shape=shape, n=args.n, keep_arenas_mib=args.keep_arenas, gc=args.gc,
                 ratio=round(r[args.impl]["ns"] / r["floor"]["ns"], 3),
                 wall_s=round(time.time() - t, 1))
        print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
