"""Finalizer fuzz: deep copies while garbage collections run user code that changes the source.

On 3.10 and 3.11 a collection can start inside any allocation the copier makes (``PyList_New``,
``PyDict_Copy``, ``PyTuple_New``, ...); on 3.12+ it starts at the next eval-breaker check, that is
inside the next piece of Python code a hook runs.  Its finalizers (``__del__``) and weakref
callbacks are user code.  Here they mutate, shrink, clear or free parts of the graph being copied.

Each case takes a random graph from ``fuzzgraph.build(seed)`` and adds *bombs*: cyclic garbage
whose ``__del__`` (or a weakref callback on it) runs one random action against a container of the
graph -- clear, pop, append, insert, replace a slice (freeing the items only it held), delete or
add a key, replace a value, drop or set attributes -- and, now and then, plants the next bomb, so
that later collections of the same copy fire too.  Two modes:

``random``
    ``gc.set_threshold(t)`` with t swept low; the bombs go off wherever the collector runs.
    Where the outcome is not defined (a bomb went off mid-copy) the copy must still be
    consistent: no crash, no ``SystemError``, every object of the result of a type that the
    graph or a bomb made.  When no bomb went off, the result must be the stdlib's, by shape.

``hook``
    The collector is off; ``Collector`` nodes placed in the graph call ``gc.collect()`` from
    their ``__deepcopy__``, so the bombs go off at the same step for both implementations, and
    the outcome (result shape, memo, exception) is compared with ``copy.deepcopy`` exactly.

Command line (the test runs this in a child process, so a crash is a failed test)::

    python tests/finalizer_fuzz.py --mode random --seeds 0:200 --thresholds 1,2,5,20
    python tests/finalizer_fuzz.py --mode hook --seeds 0:200
"""
import argparse
import copy
import gc
import os
import random
import sys
import weakref

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzzgraph  # noqa: E402

try:  # numpy arrays and torch tensors in the graphs, where installed
    import fuzz_buffers
except ImportError:  # pragma: no cover - the module comes with the buffer tests
    fuzz_buffers = None


class Bomb:
    """Cyclic garbage; its finalizer runs one action against the source."""

    armed = False      # only while the copy under test runs
    fired = 0
    chain = []         # actions left to plant as later bombs

    def __init__(self, action):
        self.action = action
        self.me = self

    def __del__(self):
        if not Bomb.armed:
            return
        Bomb.fired += 1
        try:
            self.action()
        except Exception:  # noqa: BLE001 - a failing action is just one that did nothing
            pass
        if Bomb.chain:
            plant(Bomb.chain.pop())


class _Cell:
    pass


_WEAK = []  # weakrefs must outlive their referents for the callbacks to run


def plant(action, weak=False):
    """Make one bomb (unreachable at once)."""
    if not weak:
        Bomb(action)
        return
    cell = _Cell()
    cell.me = cell

    def callback(_ref, action=action):
        if Bomb.armed:
            Bomb.fired += 1
            try:
                action()
            except Exception:  # noqa: BLE001
                pass
    _WEAK.append(weakref.ref(cell, callback))


class Collector:
    """A ``__deepcopy__`` that runs a collection: bombs go off at a defined step."""

    def __deepcopy__(self, memo):
        gc.collect()
        new = Collector()
        memo[id(self)] = new
        return new


class Fresh:
    """Objects that bombs put into the source (their own type, so the result check knows)."""

    def __init__(self, n):
        self.n = n


def _fresh(rng, n):
    k = rng.randrange(5)
    if k == 0:
        return Fresh(n)
    if k == 1:
        return [Fresh(n), "fresh-%d" % n]
    if k == 2:
        return {"fresh": n, "l": [n]}
    if k == 3:
        return ("fresh", [n])
    return "fresh-%d" % n


_INSTANCES = tuple(getattr(fuzzgraph, n) for n in (
    "Plain", "SlottedDict", "ReduceEx", "DeepHook", "GetSet", "DC", "Mutator"))


def _targets(root):
    out = []
    for o in fuzzgraph.source_ids(root).values():
        if isinstance(o, (list, dict, set)) or (
                isinstance(o, _INSTANCES) and isinstance(getattr(o, "__dict__", None), dict)):
            out.append(o)
    return out


def _action(rng, targets, counter):
    """One random mutation of one target, as a closure (its random choices made now, so the
    two identically built graphs of the hook mode get identical actions)."""
    ti = rng.randrange(len(targets))
    t = targets[ti]
    n = next(counter)
    pick = rng.random()
    val = _fresh(rng, n)
    if isinstance(t, list):
        ops = [lambda: t.clear(), lambda: t.pop(), lambda: t.append(val),
               lambda: t.insert(0, val), lambda: t.__delitem__(slice(len(t) // 2, None)),
               lambda: t.__setitem__(slice(None), [_fresh(random.Random(n), n)
                                                   for _ in range(3)]),
               lambda: t.reverse(), lambda: t.extend([val] * 5)]
    elif isinstance(t, dict):
        def replace_first():
            if t:
                t[next(iter(t))] = val

        def delete_some():
            for k in list(t)[: max(1, len(t) // 2)]:
                del t[k]
        ops = [lambda: t.clear(), lambda: t.popitem(), lambda: t.__setitem__(("bomb", n), val),
               replace_first, delete_some, lambda: t.update({("u", n, i): i for i in range(9)})]
    elif isinstance(t, set):
        ops = [lambda: t.clear(), lambda: t.add(("bomb", n)), lambda: t.pop()]
    else:
        d = t.__dict__

        def drop_attr():
            if d:
                del d[next(iter(d))]
        ops = [lambda: d.clear(), lambda: setattr(t, "bomb%d" % n, val), drop_attr,
               lambda: d.update({"b%d" % i: _fresh(random.Random(i), i) for i in range(6)})]
    op = ops[int(pick * len(ops))]
    if rng.random() < 0.1:
        # a finalizer that copies part of the source itself (re-entrancy)
        impl = _IMPL[0]

        def op(op=op, t=t):
            op()
            impl.deepcopy(t)
    return op


_IMPL = [copy]


def _counter():
    n = 0
    while True:
        n += 1
        yield n


def _arm(rng, root, mode, n_bombs):
    targets = _targets(root)
    if not targets:
        return
    counter = _counter()
    actions = [_action(rng, targets, counter) for _ in range(n_bombs)]
    weak = [rng.random() < 0.3 for _ in actions]
    if mode == "hook":
        for _ in range(rng.randrange(1, 4)):
            t = targets[rng.randrange(len(targets))]
            c = Collector()
            if isinstance(t, list):
                t.insert(rng.randrange(len(t) + 1), c)
            elif isinstance(t, dict):
                t[("gc", next(counter))] = c
    first = max(1, len(actions) // 2)
    Bomb.chain = actions[first:]
    for a, w in zip(actions[:first], weak):
        plant(a, w)


def _build(seed, mode, impl):
    rng = random.Random(seed * 1000003 + 17)
    gc.disable()
    root = fuzzgraph.build(seed)
    if fuzz_buffers is not None and rng.random() < 0.25:
        frag, mutate = fuzz_buffers.fragment(rng)
        root = [root, frag]
        extra = [mutate]
    else:
        extra = []
    _IMPL[0] = impl
    fuzzgraph._impl = impl     # fuzzgraph's hooks recurse through the copier under test
    _arm(rng, root, mode, rng.randrange(1, 7))
    for m in extra:
        Bomb.chain.append(m)
    return root, rng


def _copy(impl, root, memo_mode):
    memo = {} if memo_mode == "dict" else None
    Bomb.fired = 0
    Bomb.armed = True
    try:
        res = impl.deepcopy(root) if memo is None else impl.deepcopy(root, memo)
        exc = None
    except Exception as e:  # noqa: BLE001 - compared or checked below
        res, exc = None, e
    finally:
        Bomb.armed = False
    return res, exc, memo, Bomb.fired


def _disarm():
    Bomb.armed = False
    Bomb.chain = []
    gc.collect()
    del _WEAK[:]


def _bad_exception(exc):
    if exc is None:
        return None
    if isinstance(exc, (SystemError, MemoryError)) or "fastcopy:" in str(exc):
        return "%s: %s" % (type(exc).__name__, exc)
    return None


def _types_ok(res, allowed):
    for o in fuzzgraph.source_ids(res).values():
        if type(o) not in allowed:
            return "result holds a %s, a type neither the graph nor a bomb made" % type(o)
    return None


def case_random(seed, threshold, memo_mode, impl):
    root, rng = _build(seed, "random", impl)
    allowed = {type(o) for o in fuzzgraph.source_ids(root).values()}
    allowed |= {Fresh, list, dict, tuple, str, int, Collector, set, type(None)}
    old = gc.get_threshold()
    gc.set_threshold(threshold, 1, 1)
    gc.enable()
    try:
        res, exc, memo, fired = _copy(impl, root, memo_mode)
    finally:
        gc.disable()
        gc.set_threshold(*old)
    problems = []
    bad = _bad_exception(exc)
    if bad:
        problems.append(bad)
    if exc is None:
        bad = _types_ok(res, allowed | {type(o) for o in fuzzgraph.source_ids(root).values()})
        if bad:
            problems.append(bad)
    if not fired and not problems:
        # nothing went off: the outcome is defined, and it is the stdlib's
        _disarm()
        root_s, _ = _build(seed, "random", copy)
        Bomb.chain = []
        rs, es, ms, _ = _copy(copy, root_s, memo_mode)
        fuzzgraph._impl = impl
        if (exc is None) != (es is None) or (exc is not None and type(exc) is not type(es)):
            problems.append("no bomb fired, yet exception %r vs stdlib %r" % (exc, es))
        elif exc is None:
            src_s, src_f = fuzzgraph.source_ids(root_s), fuzzgraph.source_ids(root)
            if len(src_s) == len(src_f):
                problems.extend(fuzzgraph.compare(rs, res, src_s, ms, memo, src_f)[:4])
        del rs, root_s
    del res, memo
    _disarm()
    STATS["fired"] += bool(fired)
    return problems


STATS = {"fired": 0}


def case_hook(seed, memo_mode, impl):
    problems = []
    outcomes = []
    for which in (copy, impl):
        root, _ = _build(seed, "hook", which)
        src = fuzzgraph.source_ids(root)
        res, exc, memo, fired = _copy(which, root, memo_mode)
        outcomes.append((root, src, res, exc, memo, fired))
        STATS["fired"] += bool(fired) and which is impl
        Bomb.chain = []
        _disarm()
    (_, src_a, ra, ea, ma, fa), (_, src_b, rb, eb, mb, fb) = outcomes
    bad = _bad_exception(eb)
    if bad:
        problems.append(bad)
    if fa != fb:
        problems.append("bombs fired: stdlib %d, impl %d" % (fa, fb))
    if (ea is None) != (eb is None) or (ea is not None and (
            type(ea) is not type(eb) or str(ea) != str(eb))):
        problems.append("exception: stdlib %r, impl %r" % (ea, eb))
    elif ea is None and len(src_a) == len(src_b):
        problems.extend(fuzzgraph.compare(ra, rb, src_a, ma, mb, src_b)[:4])
    return problems


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=("random", "hook"), default="random")
    p.add_argument("--seeds", default="0:100", help="first:end")
    p.add_argument("--thresholds", default="1,2,5,20")
    p.add_argument("--memo", default="none,dict")
    p.add_argument("--impl", default="fastcopy")
    args = p.parse_args(argv)
    impl = fuzzgraph.load_impl(args.impl)
    fuzzgraph._impl = impl
    # the cases make every collection a full one: the start-up heap out of their way
    if fuzz_buffers is not None:
        fuzz_buffers.freeze_imports()
    else:
        gc.collect()
        gc.freeze()
    lo, hi = (int(v) for v in args.seeds.split(":"))
    memos = args.memo.split(",")
    thresholds = [int(t) for t in args.thresholds.split(",")]
    failures = total = 0
    for seed in range(lo, hi):
        for memo_mode in memos:
            runs = thresholds if args.mode == "random" else [None]
            for t in runs:
                where = "seed %d memo=%s threshold=%s" % (seed, memo_mode, t)
                sys.stderr.write(where + "\n")   # the last line names the case that crashed
                sys.stderr.flush()
                total += 1
                if args.mode == "random":
                    problems = case_random(seed, t, memo_mode, impl)
                else:
                    problems = case_hook(seed, memo_mode, impl)
                if problems:
                    failures += 1
                    if failures <= 10:
                        print("FAIL %s (mode %s):" % (where, args.mode))
                        for line in problems:
                            print("    " + line)
    gc.enable()
    print("finalizer fuzz: %d of %d cases failed, bombs went off mid-copy in %d (mode %s, "
          "python %s)" % (failures, total, STATS["fired"], args.mode, sys.version.split()[0]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
