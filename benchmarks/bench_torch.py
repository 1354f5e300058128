"""Benchmarks: fastcopy.deepcopy vs copy.deepcopy on torch workloads (CPU).

Run from the repository root after an in-place build:

    python benchmarks/bench_torch.py [--rounds N] [--threads T] [--only NAME] [--clock cpu]

Each case times both implementations in the same process, interleaved,
and reports the median of per-round ratios (copy.deepcopy / fastcopy).
Targets (issue #7): dict of 1,000 small tensors >= 4x, list of 1,000
Parameters >= 2.5x, 6-layer nn.TransformerEncoder >= 3x.  The "eager"
column is fastcopy with configure(torch_defer=False) (each byte copy run at
once instead of together at the end of the call), timed in the same rounds.
"""
import argparse
import copy
import gc
import statistics
import os
import sys
import time

import torch

# the in-place build in the repository root, not an installed copy
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fastcopy  # noqa: E402


def cases():
    """(name, builder, target): each case's object is built just before it is
    timed and dropped after, so objects of other cases do not sit in the
    heap making every garbage collection of this one slower."""
    def small():
        g = torch.Generator().manual_seed(0)
        return {f"t{i}": torch.randn(4, 4, generator=g) for i in range(1000)}

    def params():
        g = torch.Generator().manual_seed(1)
        return [torch.nn.Parameter(torch.randn(4, 4, generator=g)) for _ in range(1000)]

    def encoder():
        torch.manual_seed(2)
        layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                                 batch_first=True)
        return torch.nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False)

    def big():
        g = torch.Generator().manual_seed(3)
        return {f"w{i}": torch.randn(1 << 18, generator=g) for i in range(16)}  # 16 x 1 MiB

    def huge():
        g = torch.Generator().manual_seed(5)
        return torch.randn(32 << 20, generator=g)                            # 128 MiB

    def views():
        g = torch.Generator().manual_seed(4)
        v = [torch.randn(64, 64, generator=g)]
        return v + [v[0][i] for i in range(64)]
    return [
        ("dict of 1,000 small tensors (target 4x)", small, 4.0),
        ("list of 1,000 Parameters (target 2.5x)", params, 2.5),
        ("6-layer nn.TransformerEncoder (target 3x)", encoder, 3.0),
        ("dict of 16 x 1 MiB tensors", big, None),
        ("one 64x64 tensor + 64 row views", views, None),
        ("one 128 MiB tensor", huge, None),
    ]


CLOCK = time.perf_counter


def timeit(f, x, inner):
    t0 = CLOCK()
    for _ in range(inner):
        f(x)
    return (CLOCK() - t0) / inner


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: process CPU time (steadier on a shared machine)")
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"rounds {args.rounds}, clock {args.clock}")
    ok = True
    for name, build, target in cases():
        if args.only not in name:
            continue
        x = build()
        gc.collect()
        fastcopy.deepcopy(x)
        copy.deepcopy(x)
        t_std = timeit(copy.deepcopy, x, 1)
        inner = max(1, int(0.05 / max(t_std, 1e-6)))
        ratios, eratios, ts, tf = [], [], [], []
        for _ in range(args.rounds):
            a = timeit(copy.deepcopy, x, inner)
            b = timeit(fastcopy.deepcopy, x, inner)
            old = fastcopy.configure(torch_defer=False)
            e = timeit(fastcopy.deepcopy, x, inner)
            fastcopy.configure(**old)
            ts.append(a)
            tf.append(b)
            ratios.append(a / b)
            eratios.append(a / e)
        r = statistics.median(ratios)
        verdict = ""
        if target is not None:
            verdict = "ok" if r >= target else "BELOW TARGET"
            ok = ok and r >= target
        print(f"{name:45s} copy {statistics.median(ts) * 1e3:9.3f} ms  "
              f"fastcopy {statistics.median(tf) * 1e3:9.3f} ms  x{r:5.2f} "
              f"(eager x{statistics.median(eratios):5.2f}) {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
