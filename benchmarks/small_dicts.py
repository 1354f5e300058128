"""Small nested dicts against their floor (issue 51): configs, messages, JSON trees.

For each shape, fastcopy, copium and the stdlib beside the *floor*: a hand-written C copy of
that shape (benchmarks/floor/floor.c: no memo, no dispatch, the same allocations), compiled
here on first use into build/floor/ and never installed.

    python benchmarks/small_dicts.py                     # CPU time, interleaved, medians
    python benchmarks/small_dicts.py --callgrind         # instructions per copy (valgrind)
    python benchmarks/small_dicts.py --callgrind -s pyperf_a -n 2000 --json out.json

Run from the repository root with fastcopy built in place (or PYTHONPATH at another
checkout: the callgrind children see it).  copium's column is left out when it is not
importable.  Every implementation's copy is first checked against copy.deepcopy by shape.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _payload_a():
    from fastcopy import _bench
    return _bench._pyperf_a()


def _chain():
    from fastcopy import _bench
    return _bench._chain(400)


def _memo():
    from fastcopy import _bench
    return _bench._pyperf_data()


def _config():
    from fastcopy import _bench
    return _bench.build_json_config(1000)[0]


def _messages():
    # a chat request as LLM clients build it: role/content dicts, one tool call
    return {"model": "m-1", "temperature": 0.2, "stream": False, "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 2}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "4"},
    ]}


def _rl_step():
    # one environment step as RL loops keep it
    return {"obs": [0.1, -0.2, 0.3, 0.05], "action": 1, "reward": 1.0, "done": False,
            "info": {"lives": 3, "episode": {"r": 21.0, "l": 200}}}


def _rows():
    # issue 49's hook rows: a table of 5,000 small records, past the small road's budgets
    return [{"a": i, "b": "x", "c": [i, 2]} for i in range(5000)]


# name -> (builder, floor function, description)
SHAPES = {
    "pyperf_a": (_payload_a, "tree",
                 "pyperformance's dict a: a 4-int list, a 3-int tuple, a str, a 1-key dict"),
    "chain_400": (_chain, "tree", "a 400-level chain of 2-key dicts"),
    "pyperf_memo": (_memo, "shared", "{'a': (l, l, l), 'b': [l] * 100}, l = [1] * 100"),
    "json_config": (_config, "tree", "a config tree of 1k leaves in dicts and lists"),
    "chat_request": (_messages, "tree", "an LLM chat request: 4 messages, one tool call"),
    "rl_step": (_rl_step, "tree", "an RL step: obs list, reward, done, nested info dict"),
    "rows_5000": (_rows, "tree", "5,000 records {'a': i, 'b': 'x', 'c': [i, 2]} in a list"),
}


def build_floor():
    """The directory holding _floor for the running interpreter (compiled when missing or
    older than floor.c)."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    out_dir = os.path.join(ROOT, "build", "floor", sysconfig.get_config_var("SOABI") or "py")
    out = os.path.join(out_dir, "_floor" + suffix)
    src = os.path.join(HERE, "floor", "floor.c")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        os.makedirs(out_dir, exist_ok=True)
        cc = (sysconfig.get_config_var("CC") or "cc").split()
        subprocess.run(cc + ["-O2", "-shared", "-fPIC", "-Wall", "-Wextra",
                             "-I" + sysconfig.get_paths()["include"], src, "-o", out],
                       check=True)
    return out_dir


def import_floor():
    d = build_floor()
    if d not in sys.path:
        sys.path.insert(0, d)
    import _floor
    return _floor


def implementations(floor_fn):
    import fastcopy
    impls = {"stdlib": copy.deepcopy, "fastcopy": fastcopy.deepcopy}
    try:
        import copium
        impls["copium"] = copium.deepcopy
    except ImportError:
        pass
    impls["floor"] = floor_fn
    return impls


def check(name):
    from fastcopy import _scale
    build, fname, _ = SHAPES[name]
    x = build()
    want = copy.deepcopy(x)
    for impl, fn in implementations(getattr(import_floor(), fname)).items():
        got = fn(x)
        if not _scale._shape_of(want, got) or not _disjoint(x, got):
            raise SystemExit("%s: %s's copy differs from copy.deepcopy's" % (name, impl))


def _disjoint(x, y):
    """No mutable container of the copy is one of the source's."""
    def ids(o):
        acc, todo = set(), [o]
        while todo:
            o = todo.pop()
            if isinstance(o, (dict, list)):
                if id(o) in acc:
                    continue
                acc.add(id(o))
                todo.extend(o.values() if isinstance(o, dict) else o)
            elif isinstance(o, tuple):
                todo.extend(o)
        return acc

    return not (ids(x) & ids(y))


def time_one(name, repeats, target):
    """{impl: median ns per copy} for one shape, in this process."""
    from fastcopy import _bench
    build, fname, desc = SHAPES[name]
    w = _bench.Workload(name, "deepcopy", desc, lambda _k: (build(), False), {"medium": 1})
    r = _bench.run_workload(w, implementations(getattr(import_floor(), fname)),
                            repeats=repeats, target=target, clock="cpu")
    return {k: t * 1e9 for k, t in r.times.items()}


def run_time(names, repeats, target):
    """Each shape in a child process of its own: copium keeps the tables of its biggest copy
    so far, and every later small copy in the process pays for them (2.5x on pyperf_a after
    one chain_400) -- a shape timed after another would measure that, not itself."""
    rows = {}
    for name in names:
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name,
                              "--repeats", str(repeats), "--target", str(target)],
                             check=True, stdout=subprocess.PIPE, text=True).stdout
        rows[name] = json.loads(out.strip().splitlines()[-1])
    return rows, "ns"


CHILD = r"""
import sys, importlib
sys.path[:0] = [%(root)r, %(bench)r, %(floor)r]
import small_dicts
build, fname, _ = small_dicts.SHAPES[%(name)r]
x = build()
if %(impl)r == "floor":
    fn = getattr(importlib.import_module("_floor"), fname)
elif %(impl)r == "stdlib":
    fn = importlib.import_module("copy").deepcopy
else:
    fn = importlib.import_module(%(impl)r).deepcopy
fn(x)
for _ in range(%(n)d):
    fn(x)
"""


def run_callgrind(names, n, impls):
    sys.path.insert(0, HERE)
    from callgrind_counts import instructions
    python = sys.executable   # not its realpath: a venv's packages (copium) come with it
    root = os.path.abspath(os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] or ROOT)
    rows = {}
    for name in names:
        rows[name] = {}
        for impl in impls:
            base = dict(root=root, bench=HERE, floor=build_floor(), name=name, impl=impl)
            one = instructions(CHILD % dict(base, n=0), python)
            many = instructions(CHILD % dict(base, n=n), python)
            rows[name][impl] = (many - one) / n
    return rows, "instructions"


def show(rows, unit):
    impls = [k for k in ("stdlib", "copium", "fastcopy", "floor") if any(k in r for r in
                                                                         rows.values())]
    head = "%-14s" % "shape" + "".join("%14s" % k for k in impls)
    head += "%16s%16s" % ("copium/fastcopy", "fastcopy/floor")
    print("per copy, %s" % unit)
    print(head)
    for name, r in rows.items():
        line = "%-14s" % name + "".join("%14.0f" % r[k] if k in r else "%14s" % "-"
                                        for k in impls)
        cf = ("%15.2fx" % (r["copium"] / r["fastcopy"]) if "copium" in r and "fastcopy" in r
              else "%16s" % "-")
        line += cf + ("%15.2fx" % (r["fastcopy"] / r["floor"]) if "floor" in r and "fastcopy" in r
                      else "%16s" % "-")
        print(line)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-s", "--shape", action="append", choices=sorted(SHAPES),
                   help="repeatable; default: all")
    p.add_argument("--callgrind", action="store_true",
                   help="instructions per copy under valgrind instead of CPU time")
    p.add_argument("-n", type=int, default=1000, help="copies counted under callgrind")
    p.add_argument("--impl", action="append",
                   choices=("stdlib", "copium", "fastcopy", "floor"),
                   help="callgrind: whose copies are counted (default all but the stdlib)")
    p.add_argument("--repeats", type=int, default=21)
    p.add_argument("--target", type=float, default=0.02, help="seconds per timed sample")
    p.add_argument("--json", help="write {shape: {impl: value}} here")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    if args.child:
        check(args.child)
        print(json.dumps(time_one(args.child, args.repeats, args.target)))
        return 0
    names = args.shape or list(SHAPES)
    if args.callgrind:
        for name in names:
            check(name)
        impls = args.impl or ["fastcopy", "floor"] + (
            ["copium"] if "copium" in implementations(None) else [])
        rows, unit = run_callgrind(names, args.n, impls)
    else:
        rows, unit = run_time(names, args.repeats, args.target)
    show(rows, unit)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"python": sys.version, "unit": unit, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
