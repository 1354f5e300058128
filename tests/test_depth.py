"""Deep structures (SEMANTICS.md 1.8).

fastcopy must deep-copy 1,000,000-level nesting with the default recursion
limit, in the main thread and in a thread with a 256 KiB stack (the stdlib
cannot: it raises RecursionError near 500 levels).  Each case runs in a fresh
interpreter so a C-stack overflow is a failed test, not a dead test run.
Results are checked by an iterative walk, never ==/repr.
"""
import json
import subprocess
import sys

import pytest

from shape import run_python

N = 1_000_000
N_INSTANCE = 200_000  # ~800x the stdlib's limit; 1M instances take too long for the suite

_DEPTH_SCRIPT = r"""
import sys, threading, json
if %(impl)r == "fastcopy":
    import fastcopy
else:
    import copy as fastcopy

N = %(n)d
KIND = %(kind)r
IN_THREAD = %(thread)r

class Node:
    pass

class SNode:
    __slots__ = ("next",)

def build():
    if KIND == "list":
        x = [0]
        for _ in range(N):
            x = [x]
    elif KIND == "dict":
        x = [0]
        for _ in range(N):
            x = {"k": x}
    elif KIND == "tuple":
        x = [0]                      # a mutable leaf: no tuple is returned as-is
        for _ in range(N):
            x = (x,)
    elif KIND == "instance":
        x = [0]
        for _ in range(N):
            n = Node()
            n.next = x
            x = n
    elif KIND == "mixed":
        x = [0]
        for i in range(N):
            r = i %% 4
            x = [x] if r == 0 else {"k": x} if r == 1 else (x, 1) if r == 2 else x
            if r == 3:
                n = Node(); n.next = x; x = n
    return x

def step(o):
    t = type(o)
    if t is list:
        return o[0]
    if t is dict:
        return o["k"]
    if t is tuple:
        return o[0]
    return o.next

def verify(src, dst):
    depth = 0
    while not (type(src) is list and len(src) == 1 and src[0] == 0 and type(src[0]) is int):
        if type(dst) is not type(src) or dst is src:
            return "node %%d: %%s vs %%s (same=%%s)" %% (depth, type(src).__name__, type(dst).__name__, dst is src)
        if type(src) is tuple and len(dst) != len(src):
            return "tuple length at %%d" %% depth
        if type(src) is Node and list(vars(dst)) != ["next"]:
            return "instance dict at %%d" %% depth
        src, dst = step(src), step(dst)
        depth += 1
    if not (type(dst) is list and dst == [0] and dst is not src):
        return "leaf %%r" %% (dst,)
    return "ok %%d" %% depth

out = {}
# Deep structures are freed by the main thread: CPython 3.13.0 itself
# segfaults freeing a 100k-nested list on a 256 KiB thread stack.
KEEP = []
def work():
    try:
        src = build()
        KEEP.append(src)
        memo = {}
        dst = fastcopy.deepcopy(src, memo)
        KEEP.append(dst)
        out["memo_len"] = len(memo)
        del memo
        out["result"] = verify(src, dst)
    except BaseException as e:
        out["result"] = "raised %%s: %%s" %% (type(e).__name__, str(e)[:200])

if IN_THREAD:
    old = threading.stack_size()
    threading.stack_size(256 * 1024)
    try:
        t = threading.Thread(target=work)
        t.start()
        t.join()
    finally:
        threading.stack_size(old)
    assert threading.stack_size() == old
else:
    work()
print(json.dumps(out))
"""


@pytest.mark.parametrize("thread", [False, True], ids=["main", "thread-256k"])
@pytest.mark.parametrize("kind", ["list", "dict", "tuple", "instance"])
def test_million_deep(fc, kind, thread):
    n = N_INSTANCE if kind == "instance" else N
    proc = run_python(_DEPTH_SCRIPT % {"n": n, "kind": kind, "thread": thread, "impl": "fastcopy"}, timeout=180)
    assert proc.returncode == 0, "interpreter died (rc %d): %s" % (proc.returncode, proc.stderr[-2000:])
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["result"] == "ok %d" % n, out
    assert out["memo_len"] == _memo_len(kind, n), out


def _memo_len(kind, n):
    # one entry per copied node + the leaf list + the keep-alive list (tuples
    # are memoized too: each holds a new child); instances also memoize
    # their state dict
    return (2 * n if kind == "instance" else n) + 2


@pytest.mark.parametrize("kind", ["list", "dict", "tuple", "instance", "mixed"])
def test_depth_script_sanity_on_stdlib(kind):
    """The same script, shallow enough for the stdlib: checks the checker."""
    proc = run_python(_DEPTH_SCRIPT % {"n": 40, "kind": kind, "thread": False, "impl": "copy"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["result"] == "ok 40", out
    if kind != "mixed":
        assert out["memo_len"] == _memo_len(kind, 40), out


def test_mixed_deep_in_thread(fc):
    proc = run_python(_DEPTH_SCRIPT % {"n": 100_000, "kind": "mixed", "thread": True, "impl": "fastcopy"}, timeout=120)
    assert proc.returncode == 0, "interpreter died (rc %d): %s" % (proc.returncode, proc.stderr[-2000:])
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["result"] == "ok 100000", out


def test_stdlib_deep_limit_reference():
    """The stdlib cannot copy much beyond ~500 levels at the default limit."""
    x = [0]
    for _ in range(3000):
        x = [x]
    import copy
    with pytest.raises(RecursionError):
        copy.deepcopy(x)


_HOOK_SCRIPT = r"""
import json, os, resource, sys
import copy
if "libasan" not in os.environ.get("LD_PRELOAD", ""):  # ASan needs its shadow mapping
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # an unbounded copy must not eat the machine
if %(impl)r == "fastcopy":
    import fastcopy as m
else:
    m = copy

class DeepSelf:
    def __deepcopy__(self, memo):
        return m.deepcopy(DeepSelf(), memo)

class DeepNoMemo:
    def __deepcopy__(self, memo):
        return m.deepcopy(self)          # identity never memoized: recurses forever

class CopySelf:
    def __copy__(self):
        return m.copy(self)

class ReduceArgs:
    def __reduce__(self):
        return (ReduceArgs, (ReduceArgs(),))
    def __init__(self, *a):
        pass

class StateForever:
    def __getstate__(self):
        return {"child": StateForever()}

class SetstateForever:
    def __reduce__(self):
        return (SetstateForever, (), 1)
    def __setstate__(self, st):
        m.deepcopy(SetstateForever())

class ReduceExForever:
    def __reduce_ex__(self, p):
        return m.deepcopy(ReduceExForever())

fns = {"deepcopy-new": lambda: m.deepcopy(DeepSelf()),
       "deepcopy-self-nomemo": lambda: m.deepcopy([DeepNoMemo()]),
       "copy-self": lambda: m.copy(CopySelf()),
       "reduce-args": lambda: m.deepcopy(ReduceArgs()),
       "getstate": lambda: m.deepcopy(StateForever()),
       "setstate": lambda: m.deepcopy(SetstateForever()),
       "reduce_ex": lambda: m.deepcopy(ReduceExForever())}
try:
    fns[%(case)r]()
    out = "no error"
except RecursionError as e:
    out = "RecursionError" if str(e).startswith("maximum recursion depth exceeded") else "RecursionError: " + str(e)
except BaseException as e:
    out = "%%s: %%s" %% (type(e).__name__, e)
assert m.deepcopy([[1]]) == [[1]]  # the interpreter still works after unwinding
print(json.dumps(out))
"""

HOOK_CASES = ["deepcopy-new", "deepcopy-self-nomemo", "copy-self", "reduce-args",
              "getstate", "setstate", "reduce_ex"]


@pytest.mark.parametrize("case", HOOK_CASES)
def test_recursing_hooks_raise_recursion_error(impl, case):
    name = "copy" if impl.__name__ == "copy" else "fastcopy"
    try:
        proc = run_python(_HOOK_SCRIPT % {"impl": name, "case": case}, timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail("%s: no RecursionError within 10 s (the stdlib raises at once): "
                    "the copy recursed without bound" % case)
    assert proc.returncode == 0, "interpreter died (rc %d): %s" % (proc.returncode, proc.stderr[-2000:])
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == "RecursionError", (case, out)


def test_recursion_limit_restored_after_error(impl):
    class R:
        def __deepcopy__(self, memo):
            return impl.deepcopy(R(), memo)
    before = sys.getrecursionlimit()
    for _ in range(2):
        with pytest.raises(RecursionError):
            impl.deepcopy(R())
    assert sys.getrecursionlimit() == before
    # and ordinary nesting still works right after
    x = [0]
    for _ in range(100):
        x = [x]
    y = impl.deepcopy(x)
    for _ in range(100):
        y = y[0]
    assert y == [0]
