"""Instructions per copy for the `python -m fastcopy` workloads, under callgrind.

Each workload runs in its own valgrind process twice -- with one copy and with 1 + N copies
after the payload is built and copied once to warm up -- and the difference divided by N is
the cost of one copy.  Instruction counts are stable on noisy shared machines, where timings
are not.  Run from the repository root, against whatever `fastcopy` imports:

    python benchmarks/callgrind_counts.py                    # every deepcopy workload
    python benchmarks/callgrind_counts.py -w nested -w json_config -n 20
    PYTHONPATH=/other/checkout python benchmarks/callgrind_counts.py --json out.json

To compare two builds, run both through PYTHONPATH (this checkout too): the variable is seen by
the children, and a different search path changed some realistic rows' counts by up to 15%.
    python benchmarks/callgrind_counts.py --own -w copy_list --copy    # fastcopy's code only
    python benchmarks/callgrind_counts.py -w nested --impl copium      # the peer, same count
    python benchmarks/callgrind_counts.py --realistic -w set_records -n 5 --impl fastcopy
    python benchmarks/callgrind_counts.py --realistic -w pydantic_orders -n 5 --patched

--realistic takes the workloads of `python -m fastcopy --realistic` (fastcopy/_realistic.py,
its libraries installed), timed as that suite times them; --patched runs copy.deepcopy with
the implementation patched in.  PYTHONHASHSEED=0 is set for the children, and the BLAS pools
get one thread (their spinning threads are counted otherwise).  Needs valgrind.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

CHILD = r"""
import sys, copy, importlib
sys.path.insert(0, %(root)r)
import fastcopy
from fastcopy import _bench
w = _bench.get(%(name)r)
payload, each = w.build(%(size)r)
impl = {"fastcopy": fastcopy, "stdlib": copy}.get(%(impl)r) or importlib.import_module(%(impl)r)
if %(patched)r:
    fastcopy.patch() if %(impl)r == "fastcopy" else importlib.import_module("copium.patch").enable()
    impl = copy
fn = impl.copy if w.kind == "copy" else impl.deepcopy
items = payload if each else [payload]
def once():
    for x in items:
        fn(x)
once()
for _ in range(%(n)d):
    once()
"""

REALISTIC_CHILD = r"""
import sys, importlib
sys.path.insert(0, %(root)r)
import fastcopy
from fastcopy import _realistic
w = _realistic.get(%(name)r)
payload = w.build()
mode = "patched" if %(patched)r or w.call is not None else "direct"   # call(): patched only
copium = importlib.import_module("copium") if %(impl)r == "copium" else None
name = {"stdlib": "stdlib", "fastcopy": "fastcopy", "copium": "copium"}[%(impl)r]
if mode == "patched" and name != "stdlib":
    name += "_patched"
series = {i.name: i for i in _realistic.build_impls(w, payload, fastcopy, copium, (mode,))}
op = series[name]
op.enter()
op.op()
for _ in range(%(n)d):
    op.op()
op.leave()
"""


def _own(out):
    """Instructions in fastcopy's own functions (the _fastcopy extension) only, read from the
    callgrind output itself: every self cost of a function whose object (`ob=`) is the
    extension, inlined code from other files (`fi=`/`fe=`: memo.c or a header inlined into
    the walker) included.  callgrind_annotate names the object of a file:function pair only
    for the function's own file, so summing its lines that name the extension left inlined
    code out -- a share that moves with the build's debug-line attribution, not its code."""
    names = {}
    npos = 1
    obj = ""
    own = False
    skip = False
    total = 0
    with open(out) as f:
        for line in f:
            c = line[:1]
            if c and (c.isdigit() or c in "+-*"):
                if skip:            # the inclusive cost of the call just named
                    skip = False
                elif own:
                    cols = line.split()
                    if len(cols) > npos:
                        total += int(cols[npos])
                continue
            key, _, val = line.rstrip("\n").partition("=")
            if key == "positions" or line.startswith("positions:"):
                npos = len(line.split(":", 1)[1].split())
            elif key in ("ob", "fn"):
                m = re.match(r"\((\d+)\)(?: (.*))?$", val)
                if m:
                    name = names.setdefault((key, m.group(1)), m.group(2))
                else:
                    name = val
                if key == "ob":
                    obj = name or ""
                own = re.search(r"_fastcopy\.[^/]*$", obj) is not None
            elif key == "cob" or key == "cfn":
                m = re.match(r"\((\d+)\) (.*)$", val)
                if m:
                    names.setdefault((key[1:], m.group(1)), m.group(2))
            elif key == "calls":
                skip = True
    return total


def instructions(code, python, own=False):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        env = dict(os.environ, PYTHONHASHSEED="0")
        for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
            env.setdefault(var, "1")
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
    p.add_argument("--impl", choices=("fastcopy", "copium", "stdlib"), default="fastcopy",
                   help="whose copy is counted (default fastcopy)")
    p.add_argument("--patched", action="store_true",
                   help="count copy.deepcopy with --impl patched in (fastcopy or copium)")
    p.add_argument("--realistic", action="store_true",
                   help="the realistic suite's workloads (python -m fastcopy --realistic)")
    args = p.parse_args(argv)
    if args.patched and args.impl == "stdlib":
        p.error("--patched needs --impl fastcopy or copium")
    if args.own and args.impl != "fastcopy":
        p.error("--own counts fastcopy's own functions: --impl fastcopy")
    python = sys.executable   # a venv's own path: its realpath would lose the venv's packages
    if args.realistic:
        from fastcopy import _realistic
        names = args.workload or [w.name for w in _realistic.WORKLOADS]
        child = REALISTIC_CHILD
    else:
        names = args.workload or [w.name for w in _bench.select(None, include_copy=args.copy)]
        child = CHILD
    out = {}
    for name in names:
        base = dict(root=os.path.abspath(os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
                                         or root), name=name, size=args.size,
                    impl=args.impl, patched=args.patched)
        one = instructions(child % dict(base, n=0), python, args.own)
        many = instructions(child % dict(base, n=args.n), python, args.own)
        out[name] = (many - one) / args.n
        print("%-24s %14.0f instructions per copy" % (name, out[name]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
