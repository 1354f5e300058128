"""Benchmarks: fastcopy.deepcopy vs copy.deepcopy on torch workloads (CPU).

Run from the repository root after an in-place build:

    python benchmarks/bench_torch.py [--rounds N] [--threads T] [--only NAME]

Each case times both implementations in the same process, interleaved,
and reports the median of per-round ratios (copy.deepcopy / fastcopy).
Targets (issue #7): dict of 1,000 small tensors >= 4x, list of 1,000
Parameters >= 2.5x, 6-layer nn.TransformerEncoder >= 3x.  The "eager"
column is fastcopy with configure(torch_defer=False) (each byte copy run at
once instead of together at the end of the call), timed in the same rounds.
"""
import argparse
import copy
import statistics
import os
import sys
import time

import torch

# the in-place build in the repository root, not an installed copy
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fastcopy  # noqa: E402


def cases():
    g = torch.Generator().manual_seed(0)
    small = {f"t{i}": torch.randn(4, 4, generator=g) for i in range(1000)}
    params = [torch.nn.Parameter(torch.randn(4, 4, generator=g)) for _ in range(1000)]
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                             batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False)
    big = {f"w{i}": torch.randn(1 << 18, generator=g) for i in range(16)}  # 16 x 1 MiB
    views = [torch.randn(64, 64, generator=g)]
    views += [views[0][i] for i in range(64)]
    return [
        ("dict of 1,000 small tensors (target 4x)", small, 4.0),
        ("list of 1,000 Parameters (target 2.5x)", params, 2.5),
        ("6-layer nn.TransformerEncoder (target 3x)", enc, 3.0),
        ("dict of 16 x 1 MiB tensors", big, None),
        ("one 64x64 tensor + 64 row views", views, None),
    ]


def timeit(f, x, inner):
    t0 = time.perf_counter()
    for _ in range(inner):
        f(x)
    return (time.perf_counter() - t0) / inner


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"rounds {args.rounds}")
    ok = True
    for name, x, target in cases():
        if args.only not in name:
            continue
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
