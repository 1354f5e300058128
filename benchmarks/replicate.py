"""replicate(x, 1000) vs 1000 fastcopy.deepcopy calls on a ~1,000-leaf config (CPU clock, medians).

    python benchmarks/replicate.py
"""
import statistics
import time

import fastcopy
from fastcopy import _bench

cfg = _bench.build_json_config(1000)[0]


def cpu(f):
    t0 = time.process_time()
    f()
    return time.process_time() - t0


loop, rep = [], []
for _ in range(15):
    loop.append(cpu(lambda: [fastcopy.deepcopy(cfg) for _ in range(1000)]))
    rep.append(cpu(lambda: fastcopy.replicate(cfg, 1000)))
lm, rm = statistics.median(loop), statistics.median(rep)
print("1000 x deepcopy %.1f ms, replicate(x, 1000) %.1f ms: %.2fx" % (lm * 1e3, rm * 1e3, lm / rm))
