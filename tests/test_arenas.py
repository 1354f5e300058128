"""configure(keep_arenas=N): empty object arenas and the memo's big tables kept for reuse
(src/arenas.c).

The setting changes the whole process's allocator, so each test runs in a child interpreter:
copies made with pages that held earlier objects (and a memo index that held an earlier copy's
entries) are compared with the stdlib's, and the cap, trim() and turning it off are checked
through _sysinfo()["arenas"].  Nothing here times anything (docs/scale.md has the numbers).
"""
import os
import sys
import sysconfig

import pytest

from shape import run_python

_FT = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def _run(code, timeout=300):
    p = run_python(code, timeout=timeout)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), (p.returncode, p.stdout[-2000:],
                                                                   p.stderr[-3000:])


_PRELUDE = r"""
import copy, gc, os, sys, sysconfig
import fastcopy
from fastcopy import _fastcopy
sys.path.insert(0, %r)
from shape import assert_same_shape

FT = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
MiB = 1 << 20
# PYTHONMALLOC=malloc (the sanitizer run): objects come from malloc, not from arenas, so only
# the memo's tables are kept, and rounds there are fewer (each costs ~4x under ASan)
MALLOC = os.environ.get("PYTHONMALLOC", "").startswith("malloc")
ROUNDS = 2 if MALLOC else 4

def arenas():
    return _fastcopy._sysinfo()["arenas"]

def records(n, k=0):
    return [{"id": i + k, "name": "n%%d" %% (i + k), "score": i * 0.5, "tags": ["a", str(i)],
             "meta": {"ok": True, "pos": (i, [i + k])}} for i in range(n)]

def check(x, by_shape=False):
    got = fastcopy.deepcopy(x)
    want = copy.deepcopy(x)
    assert got == want
    if by_shape:
        assert_same_shape(want, got, x, x)
    return got
""" % os.path.dirname(os.path.abspath(__file__))


def test_setting_round_trip_and_bad_values():
    _run(_PRELUDE + r"""
assert arenas()["installed"] == 0 and arenas()["limit"] == 0
old = fastcopy.configure(keep_arenas=64 * MiB)
assert old["keep_arenas"] == 0
assert fastcopy.configure()["keep_arenas"] == 64 * MiB
a = arenas()
assert a["limit"] == 64 * MiB and a["installed"] == (0 if FT else 1), a
for bad, exc in ((-1, ValueError), (True, TypeError), (1.5, TypeError), ("1", TypeError)):
    try:
        fastcopy.configure(keep_arenas=bad)
    except exc:
        pass
    else:
        raise AssertionError(bad)
    assert fastcopy.configure()["keep_arenas"] == 64 * MiB
fastcopy.configure(**old)
a = arenas()
assert fastcopy.configure()["keep_arenas"] == 0 and a["limit"] == 0 and a["kept"] == 0, a
# setting another option leaves the cap alone
fastcopy.configure(keep_arenas=8 * MiB)
fastcopy.configure(warn_slow=None)
assert arenas()["limit"] == 8 * MiB
print("ok")
""")


def test_copies_on_reused_arenas_match_the_stdlib():
    _run(_PRELUDE + r"""
fastcopy.configure(keep_arenas=256 * MiB)
gc.disable()
for rnd in range(ROUNDS):
    x = records(30000, rnd)
    y = check(x, by_shape=rnd == ROUNDS - 1)
    del x, y
    a = arenas()
    assert a["kept"] <= a["limit"], a
if not FT:
    a = arenas()
    assert a["reused"] > 0 and a["kept"] > 0, a
gc.enable()
# every kind of small object, made and dropped across collections, on reused pages
class P:
    def __init__(self, i):
        self.i = i
        self.l = [i, str(i)]
class S:
    __slots__ = ("a", "b")
for rnd in range(ROUNDS + 2):
    junk = [[P(i), {i: str(i)}, {i, -i}, (i, float(i)), b"x" * (i % 50)] for i in range(20000)]
    x = []
    for i in range(10000):
        s = S()
        s.a, s.b = i, [i]
        p = P(i)
        x.append((p, s, {"p": p, "set": frozenset({i}), "c": complex(i, 1)}, [p.l, s.b]))
    del junk
    gc.collect()
    got = fastcopy.deepcopy(x)
    want = copy.deepcopy(x)
    assert_same_shape(want, got, x, x)
    del x, got, want
print("ok")
""", timeout=600)


def test_cap_trim_and_off():
    _run(_PRELUDE + r"""
gc.disable()
fastcopy.configure(keep_arenas=512 * MiB)
x = records(60000)
check(x)
a = arenas()
if not FT:
    assert a["kept"] > 8 * MiB, a
# a lower cap hands the surplus back at once
fastcopy.configure(keep_arenas=2 * MiB)
a = arenas()
assert a["kept"] <= 2 * MiB, a
check(x)
assert arenas()["kept"] <= 2 * MiB
# trim() gives back everything kept and says how much
fastcopy.configure(keep_arenas=512 * MiB)
check(x)
kept = arenas()["kept"]
n = fastcopy.trim()
assert n >= kept and arenas()["kept"] == 0, (n, kept)
# off: nothing kept any more, the allocator passes through
fastcopy.configure(keep_arenas=0)
check(x)
y = check(records(50000, 7))
a = arenas()
assert a["kept"] == 0 and a["limit"] == 0, a
assert a["installed"] == (0 if FT else 1)
print("ok")
""", timeout=600)


def test_memo_tables_kept_and_cleared_between_copies():
    # a memo past 2 MiB: every record is referenced twice, so each is indexed; the next copy's
    # index comes from the kept block and must start empty, or it would find the last copy's
    # entries (addresses that may be reused by new sources).  Each record's "meta" is held
    # twice too, so no record is a small tree the walker copies without the entries below it
    # (deepcopy.c, "Small subtrees"): the memo keeps all five a record
    _run(_PRELUDE + r"""
fastcopy.configure(keep_arenas=512 * MiB)
for rnd in range(ROUNDS):
    recs = records(40000, rnd)
    x = [recs, recs[::-1], {"first": recs[0]}, [r["meta"] for r in recs]]
    y = check(x, by_shape=rnd == ROUNDS - 1)
    assert y[0][0] is y[1][-1] is y[2]["first"]
    a = arenas()
    if rnd >= 1:
        assert a["kept_blocks"] > 0, a
    del recs, x, y
# a memo handed in: the entries a hook can read are all there
memo = {}
recs = records(40000, 9)
y = fastcopy.deepcopy([recs, recs], memo)
memo2 = {}
want = copy.deepcopy([recs, recs], memo2)
assert len(memo) == len(memo2)
assert all(memo[id(r)] is y[0][i] for i, r in enumerate(recs))
print("ok")
""", timeout=600)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork()")
def test_fork_with_kept_arenas():
    _run(_PRELUDE + r"""
import os
fastcopy.configure(keep_arenas=128 * MiB)
x = records(20000)
check(x)
check(x)
pid = os.fork()
if pid == 0:
    try:
        check(x)
        check(records(20000, 3))
        fastcopy.trim()
        check(x)
    except BaseException:
        os._exit(1)
    os._exit(0)
_, status = os.waitpid(pid, 0)
assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
check(x)
print("ok")
""")
