"""Benchmark workloads and the timing runner shared by ``python -m fastcopy`` and ``benchmarks/``.

Nothing here imports fastcopy: the caller passes the implementations to time, so this module can
be imported (for ``--list``, ``--help`` and the pytest-benchmark suite) before the C core is built.

A workload builds a payload for a size (``small``/``medium``/``large``).  One *op* is either
``fn(payload)`` or, for workloads whose payload is a sequence of separate arguments
(``each=True``), ``for x in payload: fn(x)``.  Every size is built fresh, deterministically, from
classes defined at module level so the ``pickle`` round trip can time them too.

Timing: one process; for each workload every implementation is calibrated to a number of loops
per sample, then the samples are taken round-robin (the order rotates every repeat) so that drift
on a busy machine hits every implementation alike; the reported time is the median per op, and
the ratio is ``stdlib median / impl median`` from the same run.
"""
import copy as _copy
import dataclasses
import datetime
import enum
import fnmatch
import gc
import itertools
import pickle
import statistics
import sys
import time
from collections import namedtuple

__all__ = ["Workload", "WORKLOADS", "SIZES", "CLOCKS", "IMPL_LABELS", "Result", "get", "select",
           "implementations", "run_workload", "fmt_time", "geomean", "python_info", "cpu_model"]

SIZES = ("small", "medium", "large")


# ---------------------------------------------------------------------------------------------
# Payload classes (module level: picklable, and shared by every size)
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass
class PyperfA:
    """pyperformance bm_deepcopy's ``A``: plain (not slots, not frozen) dataclass."""
    string: str
    lst: list
    boolean: bool


class PyperfC:
    """pyperformance bm_deepcopy's ``C``: ``__reduce__`` with empty args, so ``__init__`` runs."""

    def __init__(self):
        self.a = 1
        self.b = 2

    def __reduce__(self):
        return (PyperfC, (), self.__dict__)

    def __setstate__(self, state):
        self.__dict__.update(state)


class Plain:
    def __init__(self, ident, name, score, tags):
        self.ident = ident
        self.name = name
        self.score = score
        self.tags = tags


@dataclasses.dataclass
class Record:
    ident: int
    name: str
    score: float
    tags: list


class Slotted:
    __slots__ = ("ident", "name", "score", "tags")

    def __init__(self, ident, name, score, tags):
        self.ident = ident
        self.name = name
        self.score = score
        self.tags = tags


class Status(enum.Enum):
    NEW = 1
    ACTIVE = 2
    DONE = 3


Entry = namedtuple("Entry", "ident day status")


# ---------------------------------------------------------------------------------------------
# Builders: each takes the size parameter and returns (payload, each)
# ---------------------------------------------------------------------------------------------

def _pyperf_a():
    return {"list": [1, 2, 3, 43], "t": (1, 2, 3), "str": "hello", "subdict": {"a": True}}


def _pyperf_dcs():
    # pyperformance mutates one A in place before each of its 30 copies (string, lst[0], boolean);
    # the same 30 values are built up front so that only deepcopy calls are timed, as there.
    return [PyperfA(s, [kk, 2, 3], b)
            for s in ("red", "blue", "green") for kk in range(5) for b in (True, False)]


def _pyperf_data():
    a = [1] * 100
    return {"a": (a, a, a), "b": [a] * 100}


def build_pyperf_deepcopy(k):
    if k == 1:
        a = _pyperf_a()
        return [a] * 30 + _pyperf_dcs(), True
    return [[_pyperf_a(), PyperfA("hello", [1, 2, 3], True)] for _ in range(k)], False


def build_pyperf_reduce(k):
    if k == 1:
        return PyperfC(), False
    return [PyperfC() for _ in range(k)], False


def build_pyperf_memo(k):
    if k == 1:
        return _pyperf_data(), False
    return [_pyperf_data() for _ in range(k)], False


def build_json_config(leaves):
    # one service has 10 leaves
    services = {}
    for i in range(max(1, leaves // 10)):
        services["service-%d" % i] = {
            "name": "svc%d" % i,
            "port": 8000 + i,
            "enabled": i % 3 != 0,
            "ratio": i / 7.0,
            "owner": None,
            "tags": ["tier-%d" % (i % 4), "zone-%d" % (i % 3)],
            "limits": {"cpu": 0.5 + i % 4, "memory": 256 * (1 + i % 8)},
            "retries": i % 5,
        }
    return {"version": 3, "services": services}, False


def build_small_tuples(n):
    return [(i, i * 0.5, "t") for i in range(n)], False


def build_dict_int_str(n):
    return {i: str(i) for i in range(n)}, False


def build_list_floats(n):
    return [i * 0.25 for i in range(n)], False


def _fields(i):
    return (i, "item-%d" % i, i * 0.5, ["a%d" % (i % 10), "b"])


def build_objects(n):
    return [Plain(*_fields(i)) for i in range(n)], False


def build_dataclasses(n):
    return [Record(*_fields(i)) for i in range(n)], False


def build_slots(n):
    return [Slotted(*_fields(i)) for i in range(n)], False


def build_namedtuples(n):
    day0 = datetime.date(2024, 1, 1)
    statuses = list(Status)
    return [Entry(i, day0 + datetime.timedelta(days=i % 3650), statuses[i % 3])
            for i in range(n)], False


def build_optimizer_state(nparams):
    # the shape of torch.optim.Adam's state_dict(), with Python lists standing in for tensors
    state = {i: {"step": 100 + i, "exp_avg": [0.001 * j for j in range(100)],
                 "exp_avg_sq": [0.0001 * j for j in range(100)]}
             for i in range(nparams)}
    groups = [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0,
               "amsgrad": False, "params": list(range(nparams))}]
    return {"state": state, "param_groups": groups}, False


def _chain(depth):
    node = {"level": depth, "leaf": [depth]}
    for i in range(depth - 1, 0, -1):
        node = {"level": i, "child": node}
    return node


def build_nested(spec):
    # Depth stays <= 400 so the stdlib's 2 frames per dict level fit the default recursion
    # limit (SEMANTICS.md 1.8: 498 levels) even under pytest; "large" adds breadth instead.
    depth, width = spec
    if width == 1:
        return _chain(depth), False
    return [_chain(depth) for _ in range(width)], False


def build_shared_refs(n):
    # n references to n // 10 shared lists and n // 10 shared dicts
    pool = [[i, "s%d" % i] for i in range(max(1, n // 10))]
    dpool = [{"id": i, "ref": pool[i]} for i in range(len(pool))]
    rows = [(pool[(i * 7919) % len(pool)], dpool[(i * 104729) % len(dpool)]) for i in range(n)]
    return {"pool": pool, "dicts": dpool, "rows": rows}, False


def build_copy_objects(n):
    return [Plain(*_fields(i)) for i in range(n)], True


def build_copy_dataclasses(n):
    return [Record(*_fields(i)) for i in range(n)], True


def build_copy_list(n):
    return [[i, i] for i in range(n)], False


def build_copy_dict(n):
    return {"k%d" % i: [i] for i in range(n)}, False


# ---------------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------------

class Workload:
    __slots__ = ("name", "kind", "description", "builder", "sizes", "reference")

    def __init__(self, name, kind, description, builder, sizes, reference="medium"):
        self.name = name
        self.kind = kind                # "deepcopy" or "copy"
        self.description = description
        self.builder = builder
        self.sizes = sizes              # size name -> builder parameter
        self.reference = reference      # the size the issue names; the CLI's default

    def build(self, size=None):
        """(payload, each) for ``size`` (default: the reference size)."""
        return self.builder(self.sizes[size or self.reference])

    def __repr__(self):
        return "<Workload %s (%s)>" % (self.name, self.kind)


def library_version(mod):
    """A module's version for report headers: __version__, else its distribution's."""
    v = getattr(mod, "__version__", None)
    if v is None:
        try:
            from importlib.metadata import version
            v = version(mod.__name__)
        except Exception:                               # noqa: BLE001 - informational only
            v = "?"
    return v


def _w(*args, **kw):
    return Workload(*args, **kw)


WORKLOADS = [
    _w("pyperf_deepcopy", "deepcopy",
       "pyperformance deepcopy: 30 copies of a small dict + 30 of a dataclass (60 calls/op); "
       "medium/large: one call on a list of 10/100 (dict, dataclass) pairs",
       build_pyperf_deepcopy, {"small": 1, "medium": 10, "large": 100}, reference="small"),
    _w("pyperf_deepcopy_reduce", "deepcopy",
       "pyperformance deepcopy_reduce: an object with __reduce__/__setstate__; "
       "medium/large: a list of 10/100",
       build_pyperf_reduce, {"small": 1, "medium": 10, "large": 100}, reference="small"),
    _w("pyperf_deepcopy_memo", "deepcopy",
       "pyperformance deepcopy_memo: {'a': (A, A, A), 'b': [A] * 100}, A = [1] * 100; "
       "medium/large: a list of 10/100",
       build_pyperf_memo, {"small": 1, "medium": 10, "large": 100}, reference="small"),
    _w("json_config", "deepcopy", "JSON-like nested config, N leaves",
       build_json_config, {"small": 100, "medium": 1000, "large": 10000}),
    _w("small_tuples", "deepcopy", "list of N (int, float, str) tuples",
       build_small_tuples, {"small": 1000, "medium": 10000, "large": 100000}),
    _w("dict_int_str", "deepcopy", "dict of N int -> str",
       build_dict_int_str, {"small": 10000, "medium": 100000, "large": 1000000}),
    _w("list_floats", "deepcopy", "list of N floats",
       build_list_floats, {"small": 10000, "medium": 100000, "large": 1000000}),
    _w("objects", "deepcopy", "list of N plain objects with __dict__ (4 attrs, one a list)",
       build_objects, {"small": 100, "medium": 1000, "large": 10000}),
    _w("dataclasses", "deepcopy", "list of N dataclass instances (4 fields, one a list)",
       build_dataclasses, {"small": 100, "medium": 1000, "large": 10000}),
    _w("slots_objects", "deepcopy", "list of N __slots__ objects (4 slots, one a list)",
       build_slots, {"small": 100, "medium": 1000, "large": 10000}),
    _w("namedtuples", "deepcopy", "list of N namedtuples of (int, datetime.date, Enum)",
       build_namedtuples, {"small": 100, "medium": 1000, "large": 10000}),
    _w("optimizer_state", "deepcopy",
       "Adam-like state_dict: N params x 2 lists of 100 floats + param_groups",
       build_optimizer_state, {"small": 10, "medium": 100, "large": 1000}),
    _w("nested", "deepcopy", "dicts nested DEPTH levels deep (x WIDTH chains)",
       build_nested, {"small": (100, 1), "medium": (400, 1), "large": (400, 10)}),
    _w("shared_refs", "deepcopy", "N tuples referencing N/10 shared lists and N/10 shared dicts",
       build_shared_refs, {"small": 1000, "medium": 10000, "large": 100000}),
    _w("copy_objects", "copy", "copy.copy of each of N plain objects",
       build_copy_objects, {"small": 100, "medium": 1000, "large": 10000}),
    _w("copy_dataclasses", "copy", "copy.copy of each of N dataclass instances",
       build_copy_dataclasses, {"small": 100, "medium": 1000, "large": 10000}),
    _w("copy_list", "copy", "copy.copy of a list of N lists",
       build_copy_list, {"small": 10, "medium": 1000, "large": 100000}),
    _w("copy_dict", "copy", "copy.copy of a dict of N str -> list",
       build_copy_dict, {"small": 10, "medium": 1000, "large": 100000}),
]

_BY_NAME = {w.name: w for w in WORKLOADS}


def get(name):
    return _BY_NAME[name]


def select(patterns=None, include_copy=False):
    """Workloads matching any glob in ``patterns`` (all kinds), in registry order.

    Without patterns: every deepcopy workload, plus the copy workloads if ``include_copy``.
    Raises ``KeyError`` naming a pattern that matches nothing.
    """
    if not patterns:
        return [w for w in WORKLOADS if include_copy or w.kind == "deepcopy"]
    return select_glob(WORKLOADS, patterns)


def select_glob(workloads, patterns):
    """The workloads (objects with .name) matching any glob, in their order.
    Raises ``KeyError`` naming a pattern that matches nothing."""
    chosen = set()
    for pat in patterns:
        hits = [w.name for w in workloads if fnmatch.fnmatchcase(w.name, pat)]
        if not hits:
            raise KeyError(pat)
        chosen.update(hits)
    return [w for w in workloads if w.name in chosen]


# ---------------------------------------------------------------------------------------------
# Implementations
# ---------------------------------------------------------------------------------------------

IMPL_LABELS = {
    "deepcopy": {"stdlib": "copy.deepcopy", "fastcopy": "fastcopy", "copium": "copium",
                 "pickle": "pickle"},
    "copy": {"stdlib": "copy.copy", "fastcopy": "fastcopy", "copium": "copium"},
}


def _pickle_roundtrip(x, _dumps=pickle.dumps, _loads=pickle.loads):
    return _loads(_dumps(x, 5))


def implementations(kind, fastcopy_module, copium_module=None, with_pickle=True):
    """Ordered {impl name: callable} for a workload kind; "stdlib" first (the baseline)."""
    attr = "deepcopy" if kind == "deepcopy" else "copy"
    impls = {"stdlib": getattr(_copy, attr)}
    if fastcopy_module is not None:
        impls["fastcopy"] = getattr(fastcopy_module, attr)
    if copium_module is not None:
        impls["copium"] = getattr(copium_module, attr)
    if kind == "deepcopy" and with_pickle:
        impls["pickle"] = _pickle_roundtrip
    return impls


# ---------------------------------------------------------------------------------------------
# Runner
# ---------------------------------------------------------------------------------------------

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def _timer(fn, payload, each, loops, _perf=time.perf_counter, _rep=itertools.repeat):
    """Seconds for ``loops`` ops, read from the clock ``_perf``."""
    if each:
        t0 = _perf()
        for _ in _rep(None, loops):
            for x in payload:
                fn(x)
        return _perf() - t0
    t0 = _perf()
    for _ in _rep(None, loops):
        fn(payload)
    return _perf() - t0


def _calibrate(fn, payload, each, target, clock):
    """Loops per sample so that one sample takes about ``target`` seconds."""
    loops = 1
    while True:
        t = _timer(fn, payload, each, loops, clock)
        if t >= target / 4 or loops >= 10 ** 7:
            break
        loops *= 10
    return max(1, int(round(loops * target / max(t, 1e-9))))


class Result:
    __slots__ = ("workload", "size", "labels", "times", "samples", "loops", "errors",
                 "calls_per_op")
    # declared for type checkers (stubtest reads this module as its own stub): slots alone
    # are invisible to them
    workload: Workload
    size: str
    labels: dict[str, str]
    times: dict[str, float]
    samples: dict[str, list[float]]
    loops: dict[str, int]
    errors: dict[str, str]
    calls_per_op: int

    def ratio(self, impl):
        """How many times faster than the stdlib (None if either is missing)."""
        base, t = self.times.get("stdlib"), self.times.get(impl)
        if not base or not t:
            return None
        return base / t

    def as_dict(self):
        w = self.workload
        return {
            "workload": w.name, "kind": w.kind, "size": self.size,
            "size_param": w.sizes[self.size], "description": w.description,
            "calls_per_op": self.calls_per_op,
            "labels": dict(self.labels),
            "times": dict(self.times),
            "ratios": {k: self.ratio(k) for k in self.times if k != "stdlib"},
            "min": {k: min(v) for k, v in self.samples.items()},
            "samples": {k: list(v) for k, v in self.samples.items()},
            "loops": dict(self.loops),
            "errors": dict(self.errors),
        }


def run_workload(workload, impls, size=None, repeats=11, target=0.01, collect=True,
                 clock="wall", progress=None):
    """Time every implementation on one workload; return a :class:`Result`.

    ``impls`` is {name: callable} (see :func:`implementations`).  ``collect=False`` switches the
    cyclic GC off while sampling (as timeit does); the default leaves it on, as pyperformance
    does, because real programs pay for the collections their copies trigger.
    ``clock``: "wall" (``time.perf_counter``, as pyperf and timeit) or "cpu"
    (``time.process_time``: excludes time the process waits for a CPU, so it is steadier on a
    shared machine, but it also leaves out any time spent waiting on a device).
    ``progress(msg)`` is called before each phase.  An implementation that raises is recorded
    in ``errors`` and left out of the samples.
    """
    size = size or workload.reference
    timer = CLOCKS[clock]
    payload, each = workload.build(size)
    res = Result()
    res.workload, res.size = workload, size
    res.labels = {k: IMPL_LABELS[workload.kind].get(k, k) for k in impls}
    res.calls_per_op = len(payload) if each else 1
    res.times, res.samples, res.loops, res.errors = {}, {}, {}, {}

    live = {}
    gc.collect()
    gc_was_enabled = gc.isenabled()
    if not collect:
        gc.disable()
    try:
        for name, fn in impls.items():
            if progress:
                progress("%s[%s]: calibrating %s" % (workload.name, size, name))
            try:
                _timer(fn, payload, each, 1, timer)     # warm-up, and surfaces errors
                res.loops[name] = _calibrate(fn, payload, each, target, timer)
            except Exception as exc:                    # noqa: BLE001 - reported, not hidden
                res.errors[name] = "%s: %s" % (type(exc).__name__, exc)
                continue
            live[name] = fn
            res.samples[name] = []
        names = list(live)
        for r in range(repeats):
            if progress:
                progress("%s[%s]: repeat %d/%d" % (workload.name, size, r + 1, repeats))
            shift = r % len(names) if names else 0
            for name in names[shift:] + names[:shift]:
                loops = res.loops[name]
                res.samples[name].append(_timer(live[name], payload, each, loops, timer) / loops)
    finally:
        if gc_was_enabled:
            gc.enable()
    for name, s in res.samples.items():
        res.times[name] = statistics.median(s)
    return res


def fmt_time(t):
    """Seconds as a short human string ("12.3 us"); "-" for None."""
    if t is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return "%.4g %s" % (t / scale, unit)
    return "%.4g ns" % (t / 1e-9)


def geomean(values):
    vals = [v for v in values if v]
    if not vals:
        return None
    return statistics.geometric_mean(vals)


def python_info():
    import platform
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
    }


def cpu_model():
    """The processor's model name ("Intel(R) Xeon(R) ..."), or None where it cannot be read."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("model name", "Model", "cpu model")) and ":" in line:
                    return " ".join(line.split(":", 1)[1].split()) or None
    except OSError:
        pass
    import platform
    return platform.processor() or None
