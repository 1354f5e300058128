"""Random object graphs for differential testing of deepcopy implementations.

``build(seed)`` makes a seeded random graph: shared references, cycles through lists, dicts,
instances and (via a mutable) tuples, builtin containers, user classes with ``__dict__``,
``__slots__``, ``__reduce_ex__``, ``__deepcopy__`` (memo idiom), ``__getstate__``/``__setstate__``,
dataclasses, namedtuples, ``collections`` types, enums, bound methods, weakrefs and, when importable,
``fastcopy.cowdict``.

``run_case(seed, impl)`` deep-copies one graph with ``copy.deepcopy`` (the oracle) and with
``impl.deepcopy`` and returns a list of divergences (empty when they agree). ``compare()`` is the
iterative shape comparer: it walks both results in parallel, keeps a bijection between their node
identities, checks that a node is shared with the source in one result exactly when it is in the
other, and compares the memo (entry count, keep-alive list shape, entries keyed by source ids).

Command line (what a failing test prints)::

    python tests/fuzzgraph.py --seed 1234 [--impl fastcopy|copy] [--show]
"""
import collections
import copy
import dataclasses
import enum
import math
import os
import random
import sys
import threading
import types
import weakref

MEMO_MODES = {None if m == "none" else m for m in
              os.environ.get("FASTCOPY_FUZZ_MEMO", "none,empty,seeded").split(",")}

# The implementation under test; hooks of mode "impl" recurse through it (hooks of mode
# "stdlib" always recurse through copy.deepcopy, which mixes the two on one memo).
_impl = copy
CALLS = collections.Counter()

try:  # pragma: no cover - depends on the build
    import fastcopy as _fc
    _cowdict = getattr(_fc, "cowdict", None)
except ImportError:  # pragma: no cover
    _cowdict = None


# ---------------------------------------------------------------------------------------------
# Node classes (module level, so a failing seed reproduces in a fresh process)

class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Perm(enum.IntFlag):
    R = 4
    W = 2


class Plain:
    def meth(self):
        return self


class Slotted:
    __slots__ = ("a", "b", "c")


class SlottedDict(Slotted):
    __slots__ = ("d", "__dict__", "__weakref__")


class Key:
    """Hashable by a stored int (deterministic across copies), equal by identity, and rebuilt
    through ``__getnewargs__`` so that it is hashable before its state is copied."""

    def __new__(cls, k):
        self = object.__new__(cls)
        self.k = k
        return self

    def __getnewargs__(self):
        return (self.k,)

    def __hash__(self):
        return hash(self.k)


class ReduceEx:
    """Custom ``__reduce_ex__``; ``mode`` picks the shape of the reduce value."""

    def __init__(self, mode):
        self.mode = mode
        self.payload = None
        self.items = []
        self.mapping = {}

    def append(self, item):
        self.items.append(item)

    def __setitem__(self, key, value):
        self.mapping[key] = value

    def __reduce_ex__(self, proto):
        CALLS["reduce_ex"] += 1
        m = self.mode
        if m == 0:
            return (_new_reduce_ex, (m,), {"payload": self.payload})
        if m == 1:
            return (_new_reduce_ex, (m,), None, iter(self.items))
        if m == 2:
            return (_new_reduce_ex, (m,), {"payload": self.payload}, iter(self.items),
                    iter(self.mapping.items()))
        if m == 3:
            return "ReduceEx"  # a str: the object itself is returned
        # a 2-tuple state without __setstate__: (dictstate, slotstate)
        return (_new_reduce_ex, (m,), ({"payload": self.payload}, {"extra": self.items}))


def _new_reduce_ex(mode):
    return ReduceEx(mode)


class DeepHook:
    """Custom ``__deepcopy__`` using the memo idiom; ``mode`` picks where it recurses."""

    def __init__(self, mode):
        self.mode = mode
        self.children = []

    def __deepcopy__(self, memo):
        CALLS["deepcopy"] += 1
        if self.mode == 2:
            return self
        new = DeepHook.__new__(DeepHook)
        memo[id(self)] = new
        new.mode = self.mode
        rec = copy.deepcopy if self.mode == 0 else _impl.deepcopy
        new.children = [rec(child, memo) for child in self.children]
        return new


class GetSet:
    """Custom ``__getstate__``/``__setstate__``; ``mode`` picks the state's shape."""

    def __init__(self, mode):
        self.mode = mode
        self.v = None

    def __getstate__(self):
        CALLS["getstate"] += 1
        if self.mode == 0:
            return {"mode": 0, "v": self.v}
        if self.mode == 1:
            return [self.mode, self.v]
        return 0  # falsy but not None: __setstate__ is still called

    def __setstate__(self, state):
        CALLS["setstate"] += 1
        if isinstance(state, dict):
            self.__dict__.update(state)
        elif isinstance(state, list):
            self.mode, self.v = state
        else:
            self.mode, self.v = 2, None


class Raiser:
    """Fails in the middle of a copy: exercises the error paths (cleanup, memo state)."""

    def __deepcopy__(self, memo):
        CALLS["raiser"] += 1
        raise ValueError("Raiser refuses to be copied")


class Mutator:
    """A hostile ``__deepcopy__``: mutates a container of the source graph (possibly the one
    being iterated) or the memo, then copies itself with the memo idiom."""

    OPS = ("append", "pop", "replace", "add", "memo_del")

    def __init__(self, op, target, arg):
        self.op, self.target, self.arg, self.n = op, target, arg, 0

    def __deepcopy__(self, memo):
        CALLS["mutator"] += 1
        self.n += 1
        t, op = self.target, self.op
        if op == "append":
            t.append(self.arg) if isinstance(t, list) else t.__setitem__(("app", self.n), self.arg)
        elif op == "pop":
            if t:
                t.pop() if isinstance(t, list) else t.popitem()
        elif op == "replace":  # no size change: the stdlib's dict loop goes on
            if t:
                if isinstance(t, list):
                    t[0] = self.arg
                else:
                    t[next(iter(t))] = self.arg
        elif op == "add":
            t.append(self.arg) if isinstance(t, list) else t.__setitem__(("add", self.n), self.arg)
        else:
            memo.pop(id(t), None)
        new = Mutator.__new__(Mutator)
        memo[id(self)] = new
        new.op, new.n = op, self.n
        new.target = _impl.deepcopy(t, memo)
        new.arg = _impl.deepcopy(self.arg, memo)
        return new


class ListSub(list):
    pass


class DictSub(dict):
    pass


@dataclasses.dataclass
class DC:
    a: object = None
    b: object = None


@dataclasses.dataclass(frozen=True)
class FrozenDC:
    a: object = None
    b: object = None


if sys.version_info >= (3, 10):
    @dataclasses.dataclass(slots=True)
    class SlotsDC:
        a: object = None
        b: object = None
else:  # pragma: no cover
    SlotsDC = DC

if sys.version_info >= (3, 10):
    @dataclasses.dataclass(frozen=True, slots=True)
    class FrozenSlotsDC:
        """dataclasses' own __getstate__/__setstate__ (a native road in src/hooks.c)."""
        a: object = None
        b: object = None
else:  # pragma: no cover
    FrozenSlotsDC = FrozenDC

# Classes whose hooks a library generates (native roads, src/hooks.c), where installed.
try:
    import attrs as _attrs

    @_attrs.define
    class AttrsRec:
        a: object = None
        b: object = None
except ImportError:  # pragma: no cover - attrs is installed by CI
    AttrsRec = None
try:
    import pydantic as _pydantic
    import typing as _typing

    class PydModel(_pydantic.BaseModel):
        model_config = _pydantic.ConfigDict(arbitrary_types_allowed=True)
        a: _typing.Any = None
        b: _typing.Any = None

    class PydRoot(_pydantic.RootModel[list]):
        model_config = _pydantic.ConfigDict(arbitrary_types_allowed=True)
except ImportError:  # pragma: no cover - pydantic is installed by CI
    PydModel = PydRoot = None

NT = collections.namedtuple("NT", "a b")


def _func():
    return None


def _new_defaultdict():
    return collections.defaultdict(list if random.random() < 0.5 else _func)


# ---------------------------------------------------------------------------------------------
# Generator

MUTABLE_KINDS = ["list", "dict", "set", "bytearray", "plain", "slotted", "slotted_dict", "key",
                 "reduce_ex", "deephook", "getset", "dc", "slots_dc", "odict", "defaultdict",
                 "deque", "counter", "listsub", "dictsub"]
IMMUTABLE_KINDS = ["tuple", "namedtuple", "frozenset", "frozen_dc", "frozen_slots_dc", "method",
                   "weakref", "slice"]
if AttrsRec is not None:
    MUTABLE_KINDS.append("attrs")
if PydModel is not None:
    MUTABLE_KINDS += ["pydantic", "pydantic_root"]
if _cowdict is not None:  # pragma: no cover - depends on the build
    MUTABLE_KINDS.append("cowdict")


class _Builder:
    def __init__(self, rng, size):
        self.rng = rng
        self.size = size
        self.nodes = []       # every container/instance node made (strong refs)
        self.mutables = []    # (kind, node) still to fill
        self.keys = []        # hashable non-atom nodes usable as set members and dict keys
        self.instances = []   # weak-referenceable instances with a .meth

    def atom(self):
        r = self.rng
        c = r.randrange(16)
        if c == 0:
            return r.randrange(-5, 300)
        if c == 1:
            return r.randrange(10**20, 10**21)
        if c == 2:
            return r.choice(["", "a", "fuzz", "x" * r.randrange(40), "\u00e9t\u00e9"])
        if c == 3:
            return r.choice([0.0, -1.5, 1e300, math.inf, math.nan])
        if c == 4:
            return r.choice([None, True, False, Ellipsis, NotImplemented])
        if c == 5:
            return bytes(r.randrange(256) for _ in range(r.randrange(6)))
        if c == 6:
            return complex(r.random(), 1)
        if c == 7:
            return tuple(r.randrange(5) for _ in range(r.randrange(4)))
        if c == 8:
            return frozenset(r.randrange(9) for _ in range(r.randrange(4)))
        if c == 9:
            return r.choice([Color.RED, Color.GREEN, Perm.R, Perm.R | Perm.W])
        if c == 10:
            return r.choice([_func, len, int, Plain, Color])
        if c == 11:
            return range(r.randrange(3), r.randrange(3, 9))
        if c == 12:
            return NT(r.randrange(3), "nt")
        if c == 13:
            return r.randrange(1 << 62)
        if c == 14:
            return ()
        return "s%d" % r.randrange(1000)

    def hashable(self):
        if self.keys and self.rng.random() < 0.4:
            return self.rng.choice(self.keys)
        while True:
            a = self.atom()
            if not (isinstance(a, float) and a != a):
                return a

    def pick(self):
        if self.nodes and self.rng.random() < 0.6:
            return self.rng.choice(self.nodes)
        return self.atom()

    def make_mutable(self, kind):
        r = self.rng
        if kind == "list":
            o = []
        elif kind == "dict":
            o = {}
        elif kind == "set":
            o = set()
        elif kind == "bytearray":
            o = bytearray(r.randrange(256) for _ in range(r.randrange(8)))
        elif kind == "plain":
            o = Plain()
        elif kind == "slotted":
            o = Slotted()
        elif kind == "slotted_dict":
            o = SlottedDict()
        elif kind == "key":
            o = Key(r.randrange(50))
            self.keys.append(o)
        elif kind == "reduce_ex":
            o = ReduceEx(r.randrange(5))
        elif kind == "deephook":
            o = DeepHook(r.choice([0, 0, 1, 1, 2]))
        elif kind == "getset":
            o = GetSet(r.randrange(3))
        elif kind == "dc":
            o = DC()
        elif kind == "slots_dc":
            o = SlotsDC()
        elif kind == "attrs":
            o = AttrsRec()
        elif kind == "pydantic":
            o = PydModel()
        elif kind == "pydantic_root":
            o = PydRoot([])
        elif kind == "odict":
            o = collections.OrderedDict()
        elif kind == "defaultdict":
            o = collections.defaultdict(r.choice([list, _func, None]))
        elif kind == "deque":
            o = collections.deque(maxlen=r.choice([None, None, 3]))
        elif kind == "counter":
            o = collections.Counter()
        elif kind == "listsub":
            o = ListSub()
            o.tag = r.randrange(10)
        elif kind == "dictsub":
            o = DictSub()
            o.tag = r.randrange(10)
        elif kind == "cowdict":  # pragma: no cover - depends on the build
            o = _cowdict()
        else:  # pragma: no cover
            raise AssertionError(kind)
        if isinstance(o, (Plain, SlottedDict, Key, ReduceEx, DeepHook, GetSet, DC)):
            self.instances.append(o)
        self.nodes.append(o)
        self.mutables.append((kind, o))
        return o

    def make_immutable(self, kind):
        r = self.rng
        if kind == "tuple":
            o = tuple(self.pick() for _ in range(r.randrange(5)))
        elif kind == "namedtuple":
            o = NT(self.pick(), self.pick())
        elif kind == "frozenset":
            o = frozenset(self.hashable() for _ in range(r.randrange(5)))
            self.keys.append(o)
        elif kind == "frozen_dc":
            o = FrozenDC(self.pick(), self.pick())
        elif kind == "frozen_slots_dc":
            o = FrozenSlotsDC(self.pick(), self.pick())
        elif kind == "method":
            if not self.instances:
                return None
            o = types.MethodType(_func_method, r.choice(self.instances))
        elif kind == "weakref":
            if not self.instances:
                return None
            o = weakref.ref(r.choice(self.instances))
        elif kind == "slice":
            o = slice(self.pick(), self.pick(), None)
        else:  # pragma: no cover
            raise AssertionError(kind)
        self.nodes.append(o)
        return o

    def fill(self, kind, o):
        r = self.rng
        n = r.randrange(6)
        if kind in ("list", "listsub"):
            o.extend(self.pick() for _ in range(n))
        elif kind == "counter":
            # Counter reduces to (Counter, (dict(self),)): a Counter reachable from its own
            # values recurses forever in the stdlib too, so its values stay atoms.
            for _ in range(n):
                o[self.hashable()] = r.randrange(-3, 10)
        elif kind in ("dict", "dictsub", "odict", "defaultdict", "cowdict"):
            for _ in range(n):
                o[self.hashable()] = self.pick()
        elif kind == "set":
            o.update(self.hashable() for _ in range(n))
        elif kind == "deque":
            o.extend(self.pick() for _ in range(n))
        elif kind in ("plain", "dc"):
            o.a = self.pick()
            if r.random() < 0.5:
                o.b = self.pick()
        elif kind in ("slotted", "slotted_dict"):
            for name in ("a", "b", "c"):
                if r.random() < 0.6:  # unset slots stay unset in the copy
                    setattr(o, name, self.pick())
            if kind == "slotted_dict":
                o.d = self.pick()
                o.extra = self.pick()
        elif kind == "key":
            if r.random() < 0.7:
                o.payload = self.pick()
        elif kind == "reduce_ex":
            o.payload = self.pick()
            o.items.extend(self.pick() for _ in range(n % 3))
            for _ in range(n % 2):
                o.mapping[self.hashable()] = self.pick()
        elif kind == "deephook":
            o.children.extend(self.pick() for _ in range(n))
        elif kind == "getset":
            o.v = self.pick()
        elif kind in ("slots_dc", "attrs", "pydantic"):
            o.a, o.b = self.pick(), self.pick()
        elif kind == "pydantic_root":
            o.root.extend(self.pick() for _ in range(n % 3))

    def build(self):
        r = self.rng
        for _ in range(self.size):
            if r.random() < 0.65:
                self.make_mutable(r.choice(MUTABLE_KINDS))
            else:
                self.make_immutable(r.choice(IMMUTABLE_KINDS))
        for kind, o in list(self.mutables):
            self.fill(kind, o)
        # A few more immutables after filling, so tuples also sit on top of cycles.
        for _ in range(r.randrange(3)):
            self.make_immutable(r.choice(IMMUTABLE_KINDS))
        # Hostile hooks in some graphs (those that have a list or dict to attack).
        targets = [o for k, o in self.mutables if k in ("list", "dict", "listsub", "dictsub")]
        if targets and r.random() < 0.3:
            for _ in range(r.randrange(1, 4)):
                t = r.choice(targets)
                m = Mutator(r.choice(Mutator.OPS), t, self.atom())
                self.nodes.append(m)
                if isinstance(t, list):
                    t.insert(r.randrange(len(t) + 1), m)
                else:
                    t[("mut", r.randrange(99))] = m
        # Rarely, something that makes the whole copy fail half-way.
        if r.random() < 0.04:
            self.nodes.append(Raiser())
        elif r.random() < 0.03:
            self.nodes.append(threading.Lock())  # TypeError: cannot pickle '_thread.lock'
        for kind, o in self.mutables[:2]:
            self.fill(kind, o)
        if r.random() < 0.2 and self.nodes:
            return r.choice(self.nodes)
        return [self.pick() for _ in range(r.randrange(1, 8))]


def _func_method(self):
    return self


def build(seed, size=None):
    """A random graph for ``seed`` (deterministic)."""
    rng = random.Random(seed)
    if size is None:
        size = rng.choice([3, 8, 15, 30, 60, 150])
    return _Builder(rng, size).build()


# ---------------------------------------------------------------------------------------------
# Shape comparer

_IDENTITY_TYPES = (types.FunctionType, types.BuiltinFunctionType, type, weakref.ref,
                   types.CodeType, types.ModuleType, enum.Enum)
_MISSING = object()


def _nan_eq(a, b):
    if isinstance(a, complex):
        return _nan_eq(a.real, b.real) and _nan_eq(a.imag, b.imag)
    return a == b or (a != a and b != b)


def _scalar(x):
    """A comparable value for value-carrying builtins (and their subclasses)."""
    if isinstance(x, (int, str, bytes, bytearray)):
        t = int if isinstance(x, int) else bytes if isinstance(x, (bytes, bytearray)) else str
        return t(x)
    if isinstance(x, (float, complex)):
        return _Float(x)
    if isinstance(x, collections.deque):
        return ("maxlen", x.maxlen)
    return None


class _Float:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, _Float) and _nan_eq(self.v, other.v)

    def __repr__(self):
        return repr(self.v)


def _children(x):
    """Labelled children of ``x``: list of (label, child). Built fresh on every call."""
    out = []
    if isinstance(x, (list, tuple, collections.deque)):
        out.extend(("[%d]" % i, v) for i, v in enumerate(x))
    elif isinstance(x, dict) or (_cowdict is not None and isinstance(x, _cowdict)):
        for i, (k, v) in enumerate(list(x.items())):
            out.append(("key#%d" % i, k))
            out.append(("[%r]" % (k,) if isinstance(k, (int, str)) else "val#%d" % i, v))
        if isinstance(x, collections.defaultdict):
            out.append((".default_factory", x.default_factory))
    elif isinstance(x, (set, frozenset)):
        out.extend(("elem#%d" % i, v) for i, v in enumerate(list(x)))
    elif isinstance(x, types.MethodType):
        out.append((".__func__", x.__func__))
        out.append((".__self__", x.__self__))
    elif isinstance(x, (slice, range)):
        out.extend(((".start", x.start), (".stop", x.stop), (".step", x.step)))
    cls = type(x)
    if cls.__module__ != "builtins" and not isinstance(x, types.MethodType):
        try:
            d = object.__getattribute__(x, "__dict__")
        except AttributeError:
            d = None
        if isinstance(d, dict):
            for k in sorted(d):
                out.append(("." + k, d[k]))
        for klass in cls.__mro__:
            slots = klass.__dict__.get("__slots__", ())
            if isinstance(slots, str):
                slots = (slots,)
            for name in slots:
                if name in ("__dict__", "__weakref__"):
                    continue
                out.append(("." + name, getattr(x, name, _MISSING)))
    return out


class Divergence(Exception):
    pass


def compare(a_root, b_root, src_a, memo_a=None, memo_b=None, src_b=None):
    """Compare two deep copies by shape. Returns a list of divergence strings.

    ``src_a``/``src_b`` map ``id`` -> node for the graph each result was copied from (one graph
    for both when ``src_b`` is None; two identically built graphs when hooks mutate their source).
    a/b nodes are paired by a bijection on identities; a node that is the i-th source node in one
    result must be the i-th source node in the other.
    """
    if src_b is None:
        src_b = src_a
    idx_a = {k: i for i, k in enumerate(src_a)}
    idx_b = idx_a if src_b is src_a else {k: i for i, k in enumerate(src_b)}
    problems = []
    ab, ba = {}, {}
    pins = []  # keeps the nodes whose ids we record alive until we return
    stack = [(a_root, b_root, "root")]
    if memo_a is not None:
        _compare_memos(memo_a, memo_b, src_a, src_b, idx_a, idx_b, stack, problems)
    while stack and len(problems) < 10:
        a, b, path = stack.pop()
        if a is b:
            if ab.setdefault(id(a), id(b)) != id(b) or ba.setdefault(id(b), id(a)) != id(a):
                problems.append("%s: %r is shared in one result, not in the other" % (path, type(a)))
            continue
        if id(a) in ab or id(b) in ba:
            if ab.get(id(a)) != id(b) or ba.get(id(b)) != id(a):
                problems.append("%s: aliasing differs (%s vs %s)" % (path, type(a).__name__,
                                                                     type(b).__name__))
            continue
        ab[id(a)] = id(b)
        ba[id(b)] = id(a)
        pins.append((a, b))
        if type(a) is not type(b):
            problems.append("%s: type %s vs %s" % (path, type(a).__name__, type(b).__name__))
            continue
        ia, ib = idx_a.get(id(a)), idx_b.get(id(b))
        if ia is not None or ib is not None:
            if ia != ib or src_b is src_a:
                problems.append("%s: %s is source node %s in one result, %s in the other"
                                % (path, type(a).__name__, ia, ib))
            continue
        if isinstance(a, _IDENTITY_TYPES):
            problems.append("%s: %s should be shared, got two objects" % (path, type(a).__name__))
            continue
        sa, sb = _scalar(a), _scalar(b)
        if sa != sb:
            problems.append("%s: value %r vs %r" % (path, sa, sb))
            continue
        ca, cb = _children(a), _children(b)
        if [l for l, _ in ca] != [l for l, _ in cb]:
            problems.append("%s: children %s vs %s" % (path, [l for l, _ in ca][:8],
                                                       [l for l, _ in cb][:8]))
            continue
        for (label, va), (_, vb) in zip(reversed(ca), reversed(cb)):
            if va is _MISSING or vb is _MISSING:
                if (va is _MISSING) != (vb is _MISSING):
                    problems.append("%s%s: set in one result, unset in the other" % (path, label))
                continue
            stack.append((va, vb, path + label))
    return problems


def _compare_memos(memo_a, memo_b, src_a, src_b, idx_a, idx_b, stack, problems):
    if len(memo_a) != len(memo_b):
        problems.append("memo: %d entries vs %d" % (len(memo_a), len(memo_b)))
    ka, kb = memo_a.get(id(memo_a)), memo_b.get(id(memo_b))
    if (ka is None) != (kb is None):
        problems.append("memo: keep-alive list present in one memo only")
    elif ka is not None:
        if type(ka) is not type(kb) or len(ka) != len(kb):
            problems.append("memo: keep-alive %s[%d] vs %s[%d]" % (
                type(ka).__name__, len(ka), type(kb).__name__, len(kb)))
        else:
            for i, (ea, eb) in enumerate(zip(ka, kb)):
                if ea is eb:
                    continue
                if idx_a.get(id(ea)) != idx_b.get(id(eb)) or type(ea) is not type(eb):
                    problems.append("memo: keep-alive[%d] is %s vs %s" % (
                        i, type(ea).__name__, type(eb).__name__))
                    break
    for (k, xa), kb_ in zip(src_a.items(), src_b):
        ina, inb = k in memo_a, kb_ in memo_b
        if ina != inb:
            problems.append("memo: source node %s (%s) memoized in one memo only"
                            % (idx_a[k], type(xa).__name__))
        elif ina:
            stack.append((memo_a[k], memo_b[kb_], "memo[id(src[%d])]" % idx_a[k]))


def source_ids(root):
    """ids of every node reachable from ``root`` through ``_children`` (iterative)."""
    seen = {}
    stack = [root]
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen[id(x)] = x
        if isinstance(x, _IDENTITY_TYPES):
            continue
        stack.extend(v for _, v in _children(x) if v is not _MISSING)
    return seen


# ---------------------------------------------------------------------------------------------
# One differential case

def _run(fn, root, memo):
    global _impl
    CALLS.clear()
    try:
        if memo is None:
            res = fn(root)
        else:
            res = fn(root, memo)
        exc = None
    except Exception as e:  # noqa: BLE001 - any exception is part of the behaviour compared
        res, exc = None, e
    return res, exc, dict(CALLS)


def run_case(seed, impl, size=None):
    """Deep-copy graph ``seed`` with copy.deepcopy and impl.deepcopy; return divergences.
    Each implementation copies its own, identically built graph: hostile hooks mutate it."""
    global _impl
    root_a, root_b = build(seed, size), build(seed, size)
    src_a, src_b = source_ids(root_a), source_ids(root_b)
    if len(src_a) != len(src_b):
        return ["generator is not deterministic for seed %d" % seed]
    rng = random.Random(seed ^ 0x5EED)
    memo_mode = rng.choice([None, None, "empty", "seeded"])
    if memo_mode not in MEMO_MODES:  # FASTCOPY_FUZZ_MEMO=none,empty to leave one out
        memo_mode = None
    seed_index = rng.randrange(len(src_a)) if memo_mode == "seeded" else None

    def memo(src):
        if memo_mode is None:
            return None
        m = {}
        if seed_index is not None:
            m[list(src)[seed_index]] = "pre-seeded"
        return m

    memo_a, memo_b = memo(src_a), memo(src_b)
    _impl = copy
    try:
        ra, ea, calls_a = _run(copy.deepcopy, root_a, memo_a)
        _impl = impl
        rb, eb, calls_b = _run(impl.deepcopy, root_b, memo_b)
    finally:
        _impl = copy
    problems = []
    if (ea is None) != (eb is None):
        problems.append("exception: %r vs %r" % (ea, eb))
    elif ea is not None:
        if type(ea) is not type(eb) or str(ea) != str(eb):
            problems.append("exception: %r vs %r" % (ea, eb))
    else:
        problems.extend(compare(ra, rb, src_a, memo_a, memo_b, src_b))
    if calls_a != calls_b:
        problems.append("hook calls: %s vs %s" % (calls_a, calls_b))
    if not problems:
        # Both sources must be left in the same state (hostile hooks mutate them): copy each
        # again with the stdlib and compare those.
        ma, mb = memo(src_a), memo(src_b)
        rc, ec, _ = _run(copy.deepcopy, root_a, ma)
        rd, ed, _ = _run(copy.deepcopy, root_b, mb)
        if (ec is None) != (ed is None):
            problems.append("sources left in different states: re-copy raised %r vs %r"
                            % (ec, ed))
        elif ec is None:
            problems.extend("sources left in different states: " + p
                            for p in compare(rc, rd, src_a, None, None, src_b)[:3])
    return problems


def run_shallow_case(seed, impl, size=None):
    """copy.copy vs impl.copy on every node of graph ``seed``: same type, same exception,
    children shared with the source exactly as in the stdlib's result, same hook calls."""
    root = build(seed, size)
    src = source_ids(root)
    problems = []
    for x in list(src.values()):
        ra, ea, ca = _run(copy.copy, x, None)
        rb, eb, cb = _run(impl.copy, x, None)
        where = "copy(%s)" % type(x).__name__
        if (ea is None) != (eb is None) or (ea is not None and (
                type(ea) is not type(eb) or str(ea) != str(eb))):
            problems.append("%s: exception %r vs %r" % (where, ea, eb))
        elif ea is None:
            if (ra is x) != (rb is x):
                problems.append("%s: returned the original in one result only" % where)
            elif ra is not x:
                # one level: the top nodes are new, their children are the source's own
                inner = dict(src)
                del inner[id(x)]
                problems.extend(where + ": " + p for p in compare(ra, rb, inner))
        if ca != cb:
            problems.append("%s: hook calls %s vs %s" % (where, ca, cb))
        if len(problems) > 5:
            break
    return problems


def repro_command(seed, impl_name="fastcopy", shallow=False):
    if shallow:
        return "python tests/fuzzgraph.py --shallow --seed %d --impl %s --show" % (seed, impl_name)
    return "python tests/fuzzgraph.py --seed %d --impl %s --show" % (seed, impl_name)


def load_impl(name):
    if name == "copy":
        return copy
    import importlib
    return importlib.import_module(name)


def main(argv=None):
    import argparse
    import pprint
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--count", type=int, default=1, help="run seeds seed..seed+count-1")
    p.add_argument("--impl", default="fastcopy")
    p.add_argument("--show", action="store_true", help="print the graph")
    p.add_argument("--shallow", action="store_true", help="compare copy.copy, not deepcopy")
    args = p.parse_args(argv)
    impl = load_impl(args.impl)
    bad = 0
    for seed in range(args.seed, args.seed + args.count):
        if args.show:
            pprint.pprint(build(seed), width=100)
        problems = (run_shallow_case if args.shallow else run_case)(seed, impl)
        if problems:
            bad += 1
            print("seed %d: %d divergence(s)" % (seed, len(problems)))
            for line in problems:
                print("  " + line)
    print("%d/%d seeds diverged" % (bad, args.count))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, ".")
    sys.exit(main())
