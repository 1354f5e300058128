"""Scaling across threads: N threads deep-copy structures of their own, at once.

    python benchmarks/bench_threads.py [-w WORKLOAD ...] [-t 1,2] [-s SECONDS] [--size S]

For each workload (fastcopy._bench's registry; default json_config, objects, nested,
dict_int_str) and each thread count, every thread builds its own payload and deep-copies it
in a loop for SECONDS; the report gives the copies per second of all threads together (wall
clock), the speed-up over one thread, the CPU seconds the threads used (thread_time), the
copies per CPU second and its ratio to one thread's ("eff").  On a machine whose cores are
busy with other work the wall-clock speed-up is capped by the CPU the threads got (CPU time <
threads x wall time); "eff" is what the threads cost each other (locks, shared cache lines,
the allocator): with N free cores the speed-up is about N x eff.  Then the single-thread
ratio stdlib time / fastcopy time on this interpreter, the figure docs/free-threading.md
compares between a free-threaded build (3.13t, PYTHON_GIL=0) and the GIL build of the same
version.  On a GIL build the threads take turns: expect a speed-up of about 1.
"""
import argparse
import copy
import os
import sys
import sysconfig
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fastcopy  # noqa: E402
from fastcopy import _bench  # noqa: E402

DEFAULT = ["json_config", "objects", "nested", "dict_int_str"]


def _build(w, size):
    payload, each = w.build(size)
    return payload if each else [payload]


def run_loop(make_items, nthreads, seconds, fn):
    """Each of nthreads threads builds its own items (make_items(i)), copies them once to warm
    up, then with fn in a loop for `seconds`, all at once.  (copies per second in all, CPU
    seconds of all threads, wall seconds)."""
    barrier = threading.Barrier(nthreads + 1)
    counts = [0] * nthreads
    cpu = [0.0] * nthreads
    stop = threading.Event()

    def worker(i):
        items = make_items(i)
        for x in items:            # warm up: plans, the memo's spare tables
            fn(x)
        barrier.wait()
        c0 = time.thread_time()
        n = 0
        while not stop.is_set():
            for x in items:
                fn(x)
            n += 1
        cpu[i] = time.thread_time() - c0
        counts[i] = n

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(nthreads)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return sum(counts) / wall, sum(cpu), wall


def run_threads(w, size, nthreads, seconds, fn):
    """run_loop for a workload of fastcopy._bench: every thread its own payload."""
    return run_loop(lambda i: _build(w, size), nthreads, seconds, fn)


def single_ratio(w, size, seconds):
    """stdlib seconds per op / fastcopy seconds per op, one thread, best of 3."""
    items = _build(w, size)

    def per_op(fn):
        best = None
        for _ in range(3):
            n = 0
            t0 = time.perf_counter()
            while True:
                for x in items:
                    fn(x)
                n += 1
                dt = time.perf_counter() - t0
                if dt >= seconds / 3:
                    break
            best = dt / n if best is None else min(best, dt / n)
        return best
    return per_op(copy.deepcopy) / per_op(fastcopy.deepcopy)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-w", "--workload", action="append", help="repeatable; default: %s"
                   % ", ".join(DEFAULT))
    p.add_argument("-t", "--threads", default="1,2", help="thread counts (default 1,2)")
    p.add_argument("-s", "--seconds", type=float, default=2.0, help="per measurement")
    p.add_argument("--size", default="small", help="workload size (default small)")
    p.add_argument("--no-ratio", action="store_true", help="skip the stdlib ratio")
    a = p.parse_args(argv)
    counts = [int(t) for t in a.threads.split(",")]
    ft = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
    print("Python %s, free-threaded build: %s, GIL enabled: %s, %d CPUs"
          % (sys.version.split()[0], ft, gil, os.cpu_count()))
    print("%-14s %7s %12s %8s %9s %8s %12s %6s" % ("workload", "threads", "copies/s", "speedup",
                                                   "cpu s", "wall s", "copies/cpu-s", "eff"))
    for name in a.workload or DEFAULT:
        w = _bench.get(name)
        base = base_cpu = None
        for n in counts:
            rate, cpu, wall = run_threads(w, a.size, n, a.seconds, fastcopy.deepcopy)
            per_cpu = rate * wall / cpu if cpu else 0.0
            base = rate if base is None else base
            base_cpu = per_cpu if base_cpu is None else base_cpu
            print("%-14s %7d %12.1f %7.2fx %9.2f %8.2f %12.1f %5.2f"
                  % (name, n, rate, rate / base, cpu, wall, per_cpu, per_cpu / base_cpu))
        if not a.no_ratio:
            print("%-14s stdlib/fastcopy, one thread: %.2fx"
                  % (name, single_ratio(w, a.size, a.seconds)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
