"""Compare copy results by shape, and run one scenario under two implementations.

A result's *shape* is a flat list of tokens from an iterative walk (so a
1,000,000-deep structure is fine): for every node its type, its value for
value-like types, and its place in the aliasing pattern: whether it *is* a
node of the source (and which one, by walk order), whether it was already met
in the result (and which one), or whether it is new.  Two results of the same
scenario run on two freshly built sources compare equal exactly when they
agree on types, values and aliasing, both internally and with their source.

``observe(impl, scenario)`` runs a scenario and records everything a caller
could see: outcome (shape, or exception type and message), the hook log, the
memo (keys, values and keep-alive list, as labels), and the source afterwards.
``assert_equivalent(scenario)`` runs it under ``copy`` and ``fastcopy`` and
compares the two pictures; the stdlib run always happens, the comparison is
skipped when the fastcopy core is not built.
"""
import copy as _stdcopy
import enum
import functools
import gc
import os
import subprocess
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_VALUE_TYPES = (int, float, complex, str, bytes, bool, type(None), range,
                type(Ellipsis), type(NotImplemented), bytearray)
# identity-only leaves: never descended into
_OPAQUE_TYPES = (type, types.FunctionType, types.BuiltinFunctionType,
                 types.CodeType, types.ModuleType, property, enum.Enum)

_MISSING = object()


# exact builtin containers: not value-like, no __dict__, no slots (the walk's common nodes,
# answered without the general checks below)
_PLAIN_CONTAINERS = frozenset((list, tuple, dict, set, frozenset))
_VALUE_SET = frozenset(_VALUE_TYPES)


def _value_repr(o):
    t = type(o)
    if t in _PLAIN_CONTAINERS:
        return None
    if t is float and o != o:
        return "nan"
    if t in _VALUE_SET:
        return repr(o)
    if isinstance(o, float) and o != o:
        return "nan"
    # subclasses of value types: compare the base value, not a custom repr
    for base in _VALUE_TYPES:
        if isinstance(o, base) and base is not bool:
            try:
                return repr(base(o))
            except Exception:  # pragma: no cover - exotic subclasses
                return "<%s>" % base.__name__
    return None


def _slot_names(cls):
    names = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        if isinstance(slots, str):
            slots = (slots,)
        for name in slots:
            if name in ("__dict__", "__weakref__"):
                continue
            if name.startswith("__") and not name.endswith("__"):
                name = "_%s%s" % (klass.__name__.lstrip("_"), name)
            names.append(name)
    return names


def _set_key(o):
    r = _value_repr(o)
    return (type(o).__name__, r if r is not None else "")


def children(o):
    """(kind, [child objects]) for one node, without running user hooks
    except a type's own iteration.  Order is deterministic."""
    t = type(o)
    if t is list or t is tuple:
        return list(o)
    if t is dict:
        kids = []
        for k, v in list(dict.items(o)):
            kids.append(k)
            kids.append(v)
        return kids
    if t in _VALUE_SET:
        return []
    if isinstance(o, _OPAQUE_TYPES):
        kids = []
    elif isinstance(o, (list, tuple)):
        kids = list(list.__iter__(o) if isinstance(o, list) else tuple.__iter__(o))
    elif isinstance(o, dict):
        kids = []
        for k, v in list(dict.items(o)):
            kids.append(k)
            kids.append(v)
    elif isinstance(o, (set, frozenset)):
        kids = sorted(o, key=_set_key)
    elif isinstance(o, types.MethodType):
        kids = [o.__func__, o.__self__]
    elif isinstance(o, slice):
        kids = [o.start, o.stop, o.step]
    else:
        kids = []
    # instance state: __dict__ and slots, for any non-opaque type
    if not isinstance(o, _OPAQUE_TYPES) and t not in _VALUE_TYPES:
        try:
            d = object.__getattribute__(o, "__dict__")
        except Exception:
            d = _MISSING
        if isinstance(d, dict) and not isinstance(o, type):
            kids.append(d)
        for name in _slot_names(t):
            try:
                kids.append(object.__getattribute__(o, name))
            except AttributeError:
                kids.append(_MISSING)
    return kids


def _without_gc(fn):
    """Run a walk with the cyclic collector paused: a walk of a big result allocates
    millions of tokens, and every collection it would trigger traverses the whole heap
    (the test's sources and results included) -- most of a big test's time otherwise."""
    @functools.wraps(fn)
    def walk(*args, **kwargs):
        was = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was:
                gc.enable()
    return walk


@_without_gc
def number(root):
    """id -> walk index for every node reachable from root (iterative)."""
    seen = {}
    keep = []  # keep nodes alive so ids stay unique during the walk
    stack = [root]
    while stack:
        o = stack.pop()
        if o is _MISSING or id(o) in seen:
            continue
        seen[id(o)] = len(seen)
        keep.append(o)
        kids = children(o)
        stack.extend(reversed(kids))
    return seen, keep


@_without_gc
def shape(result, source=_MISSING):
    """Token list describing result's types, values and aliasing."""
    src_ids, _keep_src = number(source) if source is not _MISSING else ({}, [])
    out = []
    mine = {}
    stack = [result]
    keep = []
    while stack:
        o = stack.pop()
        if o is _MISSING:
            out.append(("unset",))
            continue
        i = id(o)
        if i in src_ids:
            out.append(("src", src_ids[i], type(o).__name__))
            continue
        if i in mine:
            out.append(("ref", mine[i]))
            continue
        mine[i] = len(mine)
        keep.append(o)
        kids = children(o)
        out.append(("new", type(o).__qualname__, _value_repr(o), len(kids)))
        stack.extend(reversed(kids))
    return out


def _first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def assert_same_shape(a, b, src_a=_MISSING, src_b=_MISSING, what="result"):
    sa = shape(a, src_a)
    sb = shape(b, src_b)
    if sa != sb:
        i = _first_diff(sa, sb)
        raise AssertionError(
            "%s shapes differ at token %d (len %d vs %d):\n  stdlib:   %r\n  fastcopy: %r"
            % (what, i, len(sa), len(sb), sa[max(0, i - 2):i + 3], sb[max(0, i - 2):i + 3]))


# ---------------------------------------------------------------------------
# Scenarios run under both implementations

class Case:
    """What a scenario builds: a source, a call that copies it, an optional
    memo to inspect afterwards, and a log list that hooks append to."""

    def __init__(self, source, call, memo=None, log=None):
        self.source = source
        self.call = call
        self.memo = memo
        self.log = log if log is not None else []


def _label_map(result, source, keepalive):
    labels = {}
    if keepalive is not None:
        for pos, o in enumerate(keepalive):
            labels.setdefault(id(o), ("kept", pos, type(o).__name__))
    if source is not _MISSING:
        ids, _ = number(source)
        for i, n in ids.items():
            labels[i] = ("src", n)
    if result is not _MISSING:
        ids, _ = number(result)
        for i, n in ids.items():
            labels.setdefault(i, ("res", n))
    return labels


@_without_gc
def memo_picture(memo, result=_MISSING, source=_MISSING):
    """Keys, values and keep-alive list of a memo, as labels relative to the
    source (keys, keep-alive) and to the result (values)."""
    if memo is None:
        return None
    try:
        items = list(memo.items())
    except Exception as e:  # non-mapping memo
        return ("unlistable", type(memo).__name__, type(e).__name__)
    keepalive = None
    for k, v in items:
        if k == id(memo):
            keepalive = v
    labels = _label_map(result, source, keepalive if isinstance(keepalive, list) else None)

    def lab(o):
        if o is memo:
            return ("memo",)
        if id(o) in labels:
            return labels[id(o)]
        r = _value_repr(o)
        return ("other", type(o).__name__, r)

    def labkey(k):
        if k == id(memo):
            return ("id(memo)",)
        if isinstance(k, int) and k in labels:
            return ("id-of",) + labels[k]
        return ("key", type(k).__name__, repr(k) if not isinstance(k, int) or k < 10 ** 6 else "big")

    pic = []
    for k, v in items:
        if k == id(memo):
            if isinstance(v, list):
                pic.append((("id(memo)",), ("keepalive", tuple(lab(o) for o in v))))
            else:
                pic.append((("id(memo)",), lab(v)))
        else:
            pic.append((labkey(k), lab(v)))
    return (type(memo).__name__, pic)


def observe(impl, scenario):
    case = scenario(impl)
    result = _MISSING
    try:
        result = case.call()
    except BaseException as e:  # noqa: B902 - RecursionError etc. are outcomes too
        outcome = ("raise", type(e).__name__, str(e))
    else:
        outcome = ("ok", shape(result, case.source))
    return {
        "outcome": outcome,
        "log": list(case.log),
        "memo": memo_picture(case.memo, result, case.source),
        "source_after": shape(case.source),
    }


def both_memo_modes(build):
    """Scenarios for assert_equivalent from build() -> (source, log): one with a fresh memo
    (native), one with a caller's dict memo."""
    def native(impl):
        x, log = build()
        return Case(x, lambda: impl.deepcopy(x), log=log)

    def visible(impl):
        x, log = build()
        memo = {}
        return Case(x, lambda: impl.deepcopy(x, memo), memo=memo, log=log)
    return [native, visible]


def python_calls(fn):
    """The names of the Python functions called while fn() runs (sys.setprofile), and
    fn's result: what a white-box test of a native road looks at."""
    names = []

    def prof(frame, event, arg):
        if event == "call":
            names.append(frame.f_code.co_name)
    sys.setprofile(prof)
    try:
        result = fn()
    finally:
        sys.setprofile(None)
    return names, result


def fastcopy_module():
    """The fastcopy package if its C core is built, else None."""
    try:
        import fastcopy._fastcopy  # noqa: F401
        import fastcopy
    except ImportError:
        return None
    return fastcopy


COMPARISON_SKIPPED = []


def assert_equivalent(scenario, fc=_MISSING):
    """Run scenario under copy and fastcopy; everything observable must match.
    Returns the stdlib picture (for extra assertions by the caller)."""
    std = observe(_stdcopy, scenario)
    if fc is _MISSING:
        fc = fastcopy_module()
    if fc is None:
        # conftest turns a passing test into a skip afterwards, so the
        # caller's own assertions on the stdlib picture still run now
        COMPARISON_SKIPPED.append(scenario)
        return std
    got = observe(fc, scenario)
    for key in ("outcome", "log", "memo", "source_after"):
        if std[key] != got[key]:
            if key == "outcome" and std[key][0] == got[key][0] == "ok":
                a, b = std[key][1], got[key][1]
                i = _first_diff(a, b)
                raise AssertionError(
                    "result shapes differ at token %d (len %d vs %d):\n  stdlib:   %r\n  fastcopy: %r"
                    % (i, len(a), len(b), a[max(0, i - 2):i + 3], b[max(0, i - 2):i + 3]))
            raise AssertionError("%s differs:\n  stdlib:   %r\n  fastcopy: %r" % (key, std[key], got[key]))
    return std


def run_python(code, timeout=120, env=None):
    """Run code in a fresh interpreter that imports the fastcopy under test
    (source_tree), so that a crash is a failed test, not a dead test run;
    env: variables set for it on top of ours.  Returns CompletedProcess."""
    import source_tree
    child_env = source_tree.subprocess_env()
    child_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code], cwd=source_tree.RUN_CWD,
                          env=child_env, capture_output=True, text=True, timeout=timeout)


# glibc's ways of handing a copy its big blocks (GLIBC_TUNABLES): its adaptive
# thresholds; a fresh mmap for every block from 128 KiB; a heap never trimmed,
# whose freed pages stay mapped for the next copy
MALLOC_REGIMES = {
    "adaptive": "",
    "fresh-mmaps": "glibc.malloc.mmap_threshold=131072",
    "mapped-heap": "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296",
}


def run_python_under_malloc(code, regime, timeout=300):
    """run_python(code) with glibc's allocator set up as MALLOC_REGIMES[regime]; asserts
    that the child exited 0 and printed "ok" last."""
    tunables = MALLOC_REGIMES[regime]
    p = run_python(code, timeout=timeout, env={"GLIBC_TUNABLES": tunables} if tunables else None)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), (p.returncode, p.stderr[-3000:])
