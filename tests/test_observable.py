"""Nothing observable that the stdlib's copy would not do: audit events and warnings.

Each natively handled type (the stdlib's value types, numpy scalars, Enum members, re.Pattern,
namedtuples, plain and slotted instances, dataclasses, sets, numpy arrays) is copied for the
first time in a fresh interpreter, by the stdlib's function in one and by fastcopy's in another,
each object on its own and then all of them together.  Recorded per copy, in order: the audit
events raised (``sys.addaudithook``) and the warnings shown; each worker runs twice, once
recording warnings (``always``) and once with warnings as errors, where the outcome of each copy
(the original itself, a new object, or an exception) is recorded too.  Both records must be
equal, except ``builtins.id``, which the stdlib's ``id(x)`` raises per object and fastcopy, which
calls no ``id()``, does not (docs/semantics.md, "Deliberate differences").

Deciding a native road must not compile or run code (fastcopy compares the stdlib's methods with
the code objects of fastcopy/_reference.py), nor make objects that warn (numpy 2.5 warns about a
timedelta64 without a unit).  So, after the first copies under warnings-as-errors, a second copy
of each natively handled object must take its road, no hook called (fastcopy's profiler counts
them) -- a warning turned into an error while a road was decided would have lost it silently.
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import source_tree  # noqa: E402


# ---------------------------------------------------------------------------------------------
# worker side (a fresh interpreter per record)

def _objects():
    """(name, object) pairs, built before the audit hook is installed."""
    import collections
    import dataclasses
    import datetime
    import decimal
    import enum
    import fractions
    import re
    import uuid

    class Color(enum.Enum):
        RED = 1

    class Level(enum.IntEnum):
        LOW = 1

    class Perm(enum.Flag):
        R = 1
        W = 2

    Point = collections.namedtuple("Point", "x y")

    class Plain:
        def __init__(self):
            self.a = [1, "a"]

    class Slotted:
        __slots__ = ("a", "b")

        def __init__(self):
            self.a = [1]
            self.b = "b"

    @dataclasses.dataclass
    class DC:
        x: int
        y: list

    objs = [
        ("list", [1, "a", [2.5]]), ("dict", {"k": [1], 2: "v"}), ("tuple", (1, [2])),
        ("set", {1, "a", (2, 3)}), ("frozenset", frozenset({1, "a"})),
        ("bytearray", bytearray(b"xyz")),
        ("Decimal", decimal.Decimal("1.5")), ("Fraction", fractions.Fraction(1, 3)),
        ("UUID", uuid.UUID(int=5)),
        ("UUID_safe", uuid.UUID(int=6, is_safe=uuid.SafeUUID.safe)),
        ("date", datetime.date(2020, 1, 2)), ("timedelta", datetime.timedelta(1, 2, 3)),
        ("datetime", datetime.datetime(2020, 1, 2, 3, 4, 5)),
        ("datetime_tz", datetime.datetime(2020, 1, 2, tzinfo=datetime.timezone.utc)),
        ("time", datetime.time(1, 2, 3)),
        ("timezone", datetime.timezone(datetime.timedelta(hours=1), "X")),
        ("timezone_utc", datetime.timezone.utc),
        ("Enum", Color.RED), ("IntEnum", Level.LOW), ("Flag", Perm.R | Perm.W),
        ("Pattern", re.compile(r"a+b")), ("OrderedDict", collections.OrderedDict(a=[1])),
        ("namedtuple", Point(1, [2])), ("plain", Plain()), ("slotted", Slotted()),
        ("dataclass", DC(1, [2])),
    ]
    if sys.version_info >= (3, 10):
        @dataclasses.dataclass(frozen=True, slots=True)
        class Frozen:
            x: int
            y: tuple
        objs.append(("dataclass_frozen_slots", Frozen(1, (2,))))
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None:
        objs += [
            ("np.float64", np.float64(1.5)), ("np.int32", np.int32(3)),
            ("np.bool_", np.bool_(True)), ("np.complex128", np.complex128(1j)),
            ("np.str_", np.str_("s")), ("np.bytes_", np.bytes_(b"b")),
            ("np.datetime64", np.datetime64("2020-01-02")),
            ("np.timedelta64", np.timedelta64(5, "D")),
            ("np.ndarray", np.arange(6.0)), ("np.object_array", np.array([[1], "a"], dtype=object)),
        ]
    objs.append(("all", [o for _, o in objs]))
    return objs


# the objects whose second deep copy takes a native road: no hook called
NATIVE = {"Decimal", "Fraction", "UUID", "UUID_safe", "date", "timedelta", "datetime",
          "datetime_tz", "time", "timezone", "timezone_utc", "np.float64", "np.int32",
          "np.bool_", "np.complex128", "np.str_", "np.bytes_", "np.datetime64",
          "np.timedelta64", "set", "frozenset", "plain", "slotted", "namedtuple"}
if sys.version_info >= (3, 11):
    NATIVE |= {"Enum", "IntEnum", "Flag"}      # enum.Enum.__deepcopy__: `return self`


def _outcome(x, call):
    try:
        y = call(x)
    except BaseException as e:  # noqa: BLE001
        return "raised %s: %s" % (type(e).__name__, e)
    return "itself" if y is x else "new %s" % type(y).__name__


def _record(impl_name, func, warn_mode):
    import warnings
    if impl_name == "fastcopy":
        import fastcopy as impl
    else:
        import copy as impl
    call = getattr(impl, func)
    objs = _objects()
    current = []

    def hook(event, args):
        if event != "builtins.id":
            current.append(event)

    out = []
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter(warn_mode)
        sys.addaudithook(hook)
        for name, x in objs:
            del current[:]
            n = len(shown)
            outcome = _outcome(x, call)
            events = list(current)
            out.append([name, events,
                        ["%s: %s" % (w.category.__name__, w.message) for w in shown[n:]],
                        outcome if warn_mode == "error" else None])
        roads = _roads(call, objs) if impl_name == "fastcopy" and func == "deepcopy" else {}
    return {"records": out, "roads": roads}


def _roads(call, objs):
    """The natively handled objects whose second copy still went through the stdlib's road
    (a hook: __deepcopy__, a reduce), as fastcopy's profiler counts them."""
    import fastcopy
    slow = {}
    for name, x in objs:
        if name in NATIVE:
            with fastcopy.profile(patch=False) as prof:
                call(x)
            hooks = sum(s.hooks for s in prof.sites())
            if hooks:
                slow[name] = hooks
    return slow


def _worker(argv):
    if source_tree.FROM_SOURCE:
        sys.path.insert(0, source_tree.SOURCE_ROOT)
    result = _record(argv[0], argv[1], argv[2])
    sys.stdout.write("\nRESULT " + json.dumps(result) + "\n")


# ---------------------------------------------------------------------------------------------
# test side

def _have_fastcopy():
    try:
        import fastcopy  # noqa: F401
    except ImportError:
        return False
    return True


def _run_worker(*args):
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker"] + list(args),
                          cwd=source_tree.RUN_CWD, env=source_tree.subprocess_env(),
                          capture_output=True, text=True, timeout=300)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise AssertionError("worker %s failed (rc=%s):\n%s\n%s"
                         % (args, proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))


@unittest.skipUnless(_have_fastcopy(), "needs fastcopy's C core")
class FirstCopies(unittest.TestCase):
    def _compare(self, func, warn_mode):
        std = _run_worker("copy", func, warn_mode)
        fc = _run_worker("fastcopy", func, warn_mode)
        for s, f in zip(std["records"], fc["records"]):
            self.assertEqual(f, s, "%s of %s (warnings: %s): fastcopy %r, stdlib %r"
                             % (func, s[0], warn_mode, f[1:], s[1:]))
        self.assertEqual(len(fc["records"]), len(std["records"]))
        return fc

    def test_deepcopy_warnings_shown(self):
        self._compare("deepcopy", "always")

    def test_deepcopy_warnings_as_errors(self):
        fc = self._compare("deepcopy", "error")
        # every road decided under warnings-as-errors: nothing lost to a swallowed warning
        self.assertEqual(fc["roads"], {})

    def test_copy_warnings_shown(self):
        self._compare("copy", "always")

    def test_copy_warnings_as_errors(self):
        self._compare("copy", "error")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _worker(sys.argv[2:])
    else:
        unittest.main()
