"""User and system CPU time per copy of large torch objects (issue 15, item 4).

Run from the repository root after an in-place build:

    python benchmarks/bench_kernel.py [--rounds N] [--threads 1,2] [--only NAME]
                                      [--malloc default,mapped,fresh]
                                      [--methods fastcopy,stdlib,clone]

Each case runs in its own process (so one case's heap and glibc's adaptive
mmap threshold do not shape the next), at each torch thread count asked.
In a process the methods take turns, round after round:

  fastcopy   fastcopy.deepcopy(x)
  stdlib     copy.deepcopy(x)
  clone      x.clone() for a tensor; a clone() of every tensor of a dict;
             a clone() of every distinct parameter and buffer of a model
             (no module objects: the bytes torch itself moves)

A round times `inner` copies (each result dropped before the next copy, as
a loop that copies and discards would) and reads resource.getrusage
(RUSAGE_SELF: every thread of the process) and perf_counter around them.
Printed: the medians over rounds of user, system and wall milliseconds per
copy and of the minor page faults per copy (pages the kernel mapped and
zeroed, by a fault or by MADV_POPULATE_WRITE alike), and fastcopy's wall time against the stdlib's (stdlib / fastcopy,
higher is better).  Linux accounts user/system time by sampling ticks and
scales them to the exact total, so a round lasts at least ~0.2 s.

The models are built from small configs (transformers, no weights are
downloaded): GPT2LMHeadModel(n_embd 256, 4 layers, vocab 8000) and
LlamaForCausalLM(hidden 256, intermediate 1024, 4 layers, vocab 8000), and
their state_dict()s.
"""
import argparse
import copy
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(name):
    import torch
    if name == "16 x 1 MiB dict":
        g = torch.Generator().manual_seed(3)
        return {f"w{i}": torch.randn(1 << 18, generator=g) for i in range(16)}
    if name == "128 MiB tensor":
        g = torch.Generator().manual_seed(5)
        return torch.randn(32 << 20, generator=g)
    import transformers
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    if name.startswith("gpt2"):
        cfg = transformers.GPT2Config(n_embd=256, n_layer=4, n_head=4, vocab_size=8000,
                                      n_positions=1024)
        m = transformers.GPT2LMHeadModel(cfg)
    else:
        cfg = transformers.LlamaConfig(hidden_size=256, intermediate_size=1024,
                                       num_hidden_layers=4, num_attention_heads=4,
                                       num_key_value_heads=4, vocab_size=8000,
                                       max_position_embeddings=1024)
        m = transformers.LlamaForCausalLM(cfg)
    m.eval()
    return m.state_dict() if name.endswith("state_dict") else m


# glibc's heap, three ways (GLIBC_TUNABLES of the child processes):
#   default  glibc's adaptive mmap threshold (it grows to the largest size
#            freed, up to 32 MiB) and trim threshold (twice that): whether
#            a copy finds its pages mapped depends on the heap's history
#            (whether freeing the last copy left the top above the trim
#            threshold), and a process tends to stay in one mode or the other
#   mapped   mmap threshold 32 MiB, never trimmed: every allocation under
#            32 MiB reuses pages already mapped (the 128 MiB tensor is
#            still a fresh mmap every time)
#   fresh    mmap threshold fixed at 128 KiB: every allocation above it is
#            a fresh mmap, unmapped when freed, so its pages fault anew
MALLOC = {"default": "",
          "mapped": "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296",
          "fresh": "glibc.malloc.mmap_threshold=131072"}

CASES = ["gpt2 model", "gpt2 state_dict", "llama model", "llama state_dict",
         "16 x 1 MiB dict", "128 MiB tensor"]


def nbytes(x):
    import torch
    if isinstance(x, torch.Tensor):
        return x.untyped_storage().nbytes()
    if isinstance(x, dict):
        seen = {}
        for v in x.values():
            seen[v.untyped_storage().data_ptr()] = v.untyped_storage().nbytes()
        return sum(seen.values())
    return sum({id(p): p.untyped_storage().nbytes()
                for p in list(x.parameters()) + list(x.buffers())}.values())


def cloner(x):
    import torch
    if isinstance(x, torch.Tensor):
        return lambda x: x.clone()
    if isinstance(x, dict):
        return lambda x: {k: v.clone() for k, v in x.items()}
    ts = list({id(t): t.detach() for t in list(x.parameters()) + list(x.buffers())}.values())
    return lambda x: [t.clone() for t in ts]


def child(name, threads, rounds, only):
    import torch
    sys.path.insert(0, ROOT)
    import fastcopy
    torch.set_num_threads(threads)
    x = build(name)
    methods = {"fastcopy": fastcopy.deepcopy, "stdlib": copy.deepcopy, "clone": cloner(x)}
    # warm-up, and the check that fastcopy's result is the stdlib's
    a, b = fastcopy.deepcopy(x), copy.deepcopy(x)
    if isinstance(x, torch.nn.Module):
        sa, sb = a.state_dict(), b.state_dict()
        assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    elif isinstance(x, dict):
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    else:
        assert torch.equal(a, b)
    del a, b
    t0 = time.perf_counter()
    copy.deepcopy(x)
    one = time.perf_counter() - t0
    inner = max(2, int(0.2 / max(one, 1e-6)))
    methods = {m: methods[m] for m in only}
    res = {m: {"user": [], "sys": [], "wall": [], "flt": []} for m in methods}
    gc.collect()
    gc.disable()
    for _ in range(rounds):
        for m, f in methods.items():
            r0 = resource.getrusage(resource.RUSAGE_SELF)
            w0 = time.perf_counter()
            for _ in range(inner):
                y = f(x)
                del y
            w1 = time.perf_counter()
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            res[m]["user"].append((r1.ru_utime - r0.ru_utime) / inner)
            res[m]["sys"].append((r1.ru_stime - r0.ru_stime) / inner)
            res[m]["wall"].append((w1 - w0) / inner)
            res[m]["flt"].append((r1.ru_minflt - r0.ru_minflt) / inner)
    gc.enable()
    out = {m: {k: statistics.median(v) for k, v in d.items()} for m, d in res.items()}
    if "stdlib" in res and "fastcopy" in res:
        out["ratio"] = statistics.median(s / f for s, f in zip(res["stdlib"]["wall"],
                                                               res["fastcopy"]["wall"]))
    out["mb"] = nbytes(x) / 1e6
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    ap.add_argument("--methods", default="fastcopy,stdlib,clone",
                    help="which of fastcopy,stdlib,clone take turns in each process")
    ap.add_argument("--malloc", default="default,mapped,fresh",
                    help="glibc heap settings the cases run under (comma-separated): "
                         "default, mapped, fresh (see the top of the file)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        child(args.child, int(args.threads), args.rounds, args.methods.split(","))
        return 0
    import torch
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, rounds {args.rounds}; ms per copy (median of rounds)")
    ms = args.methods.split(",")
    print(f"{'case':18s} {'malloc':7s} {'MB':>5s} thr | "
          + " | ".join(f"{m + ' user/sys/wall ms, faults':>32s}" for m in ms) + " | std/fc")
    for name, mode, t in [(n, m, t) for m in args.malloc.split(",") for n in CASES
                          for t in args.threads.split(",")]:
        if args.only not in name:
            continue
        if True:
            env = dict(os.environ)
            if MALLOC[mode]:
                env["GLIBC_TUNABLES"] = MALLOC[mode]
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name,
                                "--threads", t, "--rounds", str(args.rounds),
                                "--methods", args.methods],
                               capture_output=True, text=True, env=env)
            if p.returncode != 0:
                print(f"{name}: failed\n{p.stderr}")
                continue
            r = json.loads(p.stdout.strip().splitlines()[-1])
            cols = " | ".join("{:7.2f}{:8.2f}{:8.2f}{:9.0f}".format(r[m]["user"] * 1e3,
                                                                    r[m]["sys"] * 1e3,
                                                                    r[m]["wall"] * 1e3,
                                                                    r[m]["flt"])
                              for m in ms)
            ratio = f"{r['ratio']:5.2f}x" if "ratio" in r else "-"
            print(f"{name:18s} {mode:7s} {r['mb']:5.1f} {t:>3s} | {cols} | {ratio}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
