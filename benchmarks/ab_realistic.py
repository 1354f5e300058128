"""Two builds of the C core in one process, timed on realistic workloads and single tensors.

ab_builds.py does this for the scale benchmark's shapes; this one takes the workloads of
`python -m fastcopy --realistic` (fastcopy/_realistic.py, each one's deepcopy of its payload)
and, with --tensor SIZE, one plain float32 torch tensor of SIZE bytes (the buffer sweep's
torch row), with `np.copyto` of the same bytes into a destination that is already mapped
beside it (the limit of docs/buffers-sweep.md).  The builds are loaded side by side and
interleaved round by round; CPU time per copy, medians:

    python setup.py build_ext --build-lib /tmp/before      # at the commit to compare with
    python setup.py build_ext --inplace                    # the change
    python benchmarks/ab_realistic.py /tmp/before/fastcopy/_fastcopy.*.so \\
        fastcopy/_fastcopy.*.so -w torch_state_dict -w torch_cnn --tensor 1K --tensor 1M

Run from the repository root, with the machine otherwise idle.  torch runs on one thread.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ab_builds import load  # noqa: E402


def size_arg(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper()
    return int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)


def per_copy(fn, x, budget):
    """CPU seconds per fn(x), over a sample of about `budget` seconds."""
    n, t = 1, 0.0
    while True:
        t0 = time.process_time()
        for _ in range(n):
            fn(x)
        t = time.process_time() - t0
        if t >= budget:
            return t / n
        n *= 2 if t < budget / 8 else 1 + int(budget / max(t, 1e-9))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("-w", "--workload", action="append", default=[])
    ap.add_argument("--tensor", action="append", type=size_arg, default=[])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--sample", type=float, default=0.05, help="seconds per sample")
    args = ap.parse_args(argv)

    import numpy as np
    import torch
    from fastcopy import _realistic
    torch.set_num_threads(1)
    builds = [("before", load(args.before)), ("after", load(args.after))]
    cases = []
    for name in args.workload:
        cases.append((name, _realistic.get(name).build(), None))
    for n in args.tensor:
        x = torch.randn(n // 4)
        a = x.numpy()
        dst = np.empty_like(a)
        cases.append(("tensor %d B" % n, x, lambda _x, a=a, dst=dst: np.copyto(dst, a)))
    print("%-22s %12s %12s %8s %12s" % ("case", "before us", "after us", "b/a", "limit us"))
    for name, x, limit in cases:
        times = {k: [] for k in ("before", "after", "limit")}
        for r in range(args.rounds):
            for k, mod in builds if r % 2 == 0 else builds[::-1]:
                times[k].append(per_copy(mod.deepcopy, x, args.sample))
            if limit is not None:
                times["limit"].append(per_copy(limit, x, args.sample))
        med = {k: statistics.median(v) * 1e6 for k, v in times.items() if v}
        print("%-22s %12.2f %12.2f %7.3fx %12s" % (
            name, med["before"], med["after"], med["before"] / med["after"],
            "%.2f" % med["limit"] if "limit" in med else "-"), flush=True)


if __name__ == "__main__":
    main()
