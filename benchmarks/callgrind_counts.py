"""Instructions per copy for the `python -m fastcopy` workloads, under callgrind.

Each workload runs in its own valgrind process twice -- with one copy and with 1 + N copies
after the payload is built and copied once to warm up -- and the difference divided by N is
the cost of one copy.  Instruction counts are stable on noisy shared machines, where timings
are not.  Run from the repository root, against whatever `fastcopy` imports:

    python benchmarks/callgrind_counts.py                    # every deepcopy workload
    python benchmarks/callgrind_counts.py -w nested -w json_config -n 20
    PYTHONPATH=/other/checkout python benchmarks/callgrind_counts.py --json out.json
    python benchmarks/callgrind_counts.py --own -w copy_list --copy    # fastcopy's code only

PYTHONHASHSEED=0 is set for the children.  Needs valgrind.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

CHILD = r"""
import sys
sys.path.insert(0, %(root)r)
import fastcopy
from fastcopy import _bench
w = _bench.get(%(name)r)
payload, each = w.build(%(size)r)
fn = fastcopy.copy if w.kind == "copy" else fastcopy.deepcopy
items = payload if each else [payload]
def once():
    for x in items:
        fn(x)
once()
for _ in range(%(n)d):
    once()
"""


def _own(out):
    """Instructions in fastcopy's own functions (the _fastcopy extension) only."""
    ann = subprocess.run(["callgrind_annotate", "--threshold=100", out], check=True,
                         capture_output=True, text=True).stdout
    total = 0
    for line in ann.splitlines():
        m = re.match(r"\s*([\d,]+) .*\[[^]]*_fastcopy\.[^]]*\]\s*$", line)
        if m:
            total += int(m.group(1).replace(",", ""))
    return total


def instructions(code, python, own=False):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        env = dict(os.environ, PYTHONHASHSEED="0")
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, python,
                        "-c", code], env=env, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        if own:
            return _own(out)
        with open(out) as f:
            for line in f:
                m = re.match(r"summary:\s+(\d+)", line) or re.match(r"totals:\s+(\d+)", line)
                if m:
                    return int(m.group(1))
    raise RuntimeError("no callgrind summary")


def main(argv=None):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    from fastcopy import _bench
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-w", "--workload", action="append", help="name (repeatable); default: all")
    p.add_argument("-n", type=int, default=10, help="timed copies per workload (default 10)")
    p.add_argument("--size", default=None)
    p.add_argument("--copy", action="store_true", help="also the copy.copy workloads")
    p.add_argument("--json", help="write {workload: instructions per copy} here")
    p.add_argument("--own", action="store_true",
                   help="count only the instructions of fastcopy's own functions (the "
                        "_fastcopy extension, via callgrind_annotate): the interpreter's "
                        "allocation and collection noise, up to 10%% of a whole-process count "
                        "between two builds, stays out")
    args = p.parse_args(argv)
    python = os.path.realpath(sys.executable)
    names = args.workload or [w.name for w in _bench.select(None, include_copy=args.copy)]
    out = {}
    for name in names:
        base = dict(root=os.path.abspath(os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
                                         or root), name=name, size=args.size)
        one = instructions(CHILD % dict(base, n=0), python, args.own)
        many = instructions(CHILD % dict(base, n=args.n), python, args.own)
        out[name] = (many - one) / args.n
        print("%-24s %14.0f instructions per copy" % (name, out[name]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
