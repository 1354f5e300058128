"""The stubs (fastcopy/__init__.pyi) under mypy: snippets that must pass, one that must fail.

The mypy tests are skipped when mypy is not installed; mypy only reads the snippets, it never
runs them.  test_runtime_names_are_typed needs no mypy.  test_stubtest_clean runs
``python -m mypy.stubtest fastcopy``: the stubs against the imported package.
"""
import ast
import os
import re
import subprocess
import sys
import textwrap

import pytest

import source_tree

# the folder holding the fastcopy under test: the checkout, or site-packages
ROOT = source_tree.PACKAGE_ROOT or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GOOD = """
import sys
import copy as std
from typing import Any
from typing_extensions import assert_type
import fastcopy
from fastcopy import cowdict

xs: list[int] = [1, 2]
reveal_type(fastcopy.deepcopy(xs))
assert_type(fastcopy.deepcopy(xs), list[int])
assert_type(fastcopy.deepcopy(xs, {}), list[int])
assert_type(fastcopy.deepcopy(xs, None, share=int), list[int])
assert_type(fastcopy.deepcopy({"a": (1, "b")}, share=(int, str)), dict[str, tuple[int, str]])
assert_type(fastcopy.deepcopy(xs, share=lambda o: isinstance(o, bytes)), list[int])
assert_type(fastcopy.copy(xs), list[int])
assert_type(fastcopy.copy({"a": [1]}, deep=["a"]), dict[str, list[int]])
assert_type(fastcopy.copy({"a": [1]}, deep="a"), dict[str, list[int]])
assert_type(fastcopy.copy({"a": [1]}, deep=("a", 0)), dict[str, list[int]])
assert_type(fastcopy.copy({"a": [1]}, deep=[("a", 0), "a"]), dict[str, list[int]])
assert_type(fastcopy.replicate(xs, 3), list[list[int]])
assert_type(fastcopy.replicate(xs, 3, share=None), list[list[int]])

# a drop-in: assignable to the stdlib's own signatures
deep: Any = std.deepcopy
deep = fastcopy.deepcopy
memo: dict[int, Any] = {}
fastcopy.deepcopy(xs, memo)

try:
    pass
except fastcopy.Error as e:
    assert_type(e, std.Error)

fastcopy.patch()
fastcopy.unpatch()
assert_type(fastcopy.is_patched(), bool)
with fastcopy.patched():
    pass

d: cowdict[str, int] = cowdict(a=1)
assert_type(d["a"], int)
d["b"] = 2
del d["a"]
assert_type(d.copy(), cowdict[str, int])
assert_type(cowdict({1: "x"}), cowdict[int, str])
assert_type(cowdict([(1.5, b"x")]), cowdict[float, bytes])
assert_type(len(d), int)
assert_type(cowdict.fromkeys(["a"], 0), cowdict[str, int])
assert_type(d | {"z": 1.5}, cowdict[str, int | float])
d |= {"c": 3}
assert_type(list(reversed(d)), list[str])
for k in d:
    assert_type(k, str)

old = fastcopy.configure(numpy_threads=2, numpy_pool=True, torch_defer=None)
assert_type(old["numpy_threads"], int)
assert_type(old["numpy_pool"], bool)
fastcopy.configure(**old)
assert_type(fastcopy.trim(), int)
assert_type(fastcopy.backends(), dict[str, Any])
assert_type(fastcopy.snapshot(xs), list[int])
assert_type(fastcopy.snapshot(xs, device="cuda:0", pin_memory=False), list[int])

with fastcopy.profile() as prof:
    fastcopy.deepcopy(xs)
assert_type(prof.report(top=3, sort="bytes"), str)
assert_type(prof.sites()[0].mean_s, float)
assert_type(prof.sites(sort="calls")[0].hint, str | None)
assert_type(prof.to_json(indent=1), str)

@fastcopy.profile(patch=False)
def step(a: int) -> str:
    return ""
assert_type(step(1), str)
assert_type(fastcopy.SlowCopyWarning("slow").seconds, float)

if sys.version_info >= (3, 13):
    import dataclasses

    @dataclasses.dataclass
    class P:
        x: int

    assert_type(fastcopy.replace(P(1), x=2), P)
"""

BAD = """
import fastcopy
from fastcopy import cowdict

xs: list[int] = fastcopy.deepcopy([1])
s: str = fastcopy.deepcopy(1)          # E: int is not str
fastcopy.copy(xs, True)                # E: deep is keyword-only
fastcopy.copy(xs, deep=3)              # E: a path is a str or a tuple
fastcopy.replicate(xs)                 # E: n is required
fastcopy.replicate(xs, "3")            # E: n is an int
d: cowdict[str, int] = cowdict()
d["a"] = "b"                           # E: value type
fastcopy.deepcopy(xs, share=3)         # E: not a type / predicate
fastcopy.snapshot(xs, "cpu")           # E: device is keyword-only
fastcopy.no_such_function()            # E: not exported
fastcopy.configure(numpy_threads="4")  # E: an int
fastcopy.configure(no_such_option=1)   # E: every keyword is named
fastcopy.configure(None)               # E: keywords only
class Sub(cowdict[str, int]): ...      # E: cowdict is final
"""


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory):
    pytest.importorskip("mypy")
    tmp = tmp_path_factory.mktemp("typing")
    (tmp / "good.py").write_text(textwrap.dedent(GOOD))
    (tmp / "bad.py").write_text(textwrap.dedent(BAD))
    env = dict(os.environ)
    if source_tree.FROM_SOURCE:     # an installed package is found through its py.typed
        env["MYPYPATH"] = ROOT
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--show-error-codes",
         "--cache-dir", str(tmp / ".mypy_cache"), "good.py", "bad.py"],
        cwd=str(tmp), env=env, capture_output=True, text=True, timeout=300)
    assert "error: Cannot find implementation or library stub" not in proc.stdout, proc.stdout
    return proc.stdout + proc.stderr


def lines_of(output, name):
    return [ln for ln in output.splitlines() if ln.startswith(name + ":")]


def test_good_snippets_pass(mypy_output):
    out = lines_of(mypy_output, "good.py")
    notes = [ln for ln in out if "note:" in ln]
    errors = [ln for ln in out if "error:" in ln]
    assert errors == [], "\n".join(errors)
    assert any(re.search(r'Revealed type is "(builtins\.)?list\[(builtins\.)?int\]"', n) for n in notes), out


def test_stubs_are_clean(mypy_output):
    # errors inside fastcopy/__init__.pyi itself (mypy --strict checks it as it reads it)
    stray = [ln for ln in mypy_output.splitlines() if ln and not ln.startswith(("good.py:", "bad.py:"))]
    assert stray == []


def test_bad_snippets_fail(mypy_output):
    expected = [i for i, ln in enumerate(textwrap.dedent(BAD).splitlines(), 1) if "# E:" in ln]
    got = sorted({int(ln.split(":")[1]) for ln in lines_of(mypy_output, "bad.py")
                  if "error:" in ln})
    assert got == expected, mypy_output


def stub_names():
    with open(os.path.join(ROOT, "fastcopy", "__init__.pyi"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname for a in node.names if a.asname == a.name)
    return names


def test_runtime_names_are_typed():
    # every public name the package exports at run time has a stub (stubtest checks the converse)
    try:
        import fastcopy
    except ImportError as exc:
        pytest.skip(f"fastcopy not importable: {exc}")
    missing = sorted(set(fastcopy.__all__) - stub_names())
    assert missing == []


def test_stubtest_clean(tmp_path):
    # stubtest imports the package and compares every name, signature, default and class flag
    # with the stubs, the submodules (their own stubs) included
    pytest.importorskip("mypy.stubtest")
    try:
        import fastcopy
    except ImportError as exc:
        pytest.skip(f"fastcopy not importable: {exc}")
    where = os.path.dirname(os.path.dirname(os.path.abspath(fastcopy.__file__)))
    path = os.pathsep.join(p for p in (where, os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, PYTHONPATH=path)
    # a checkout's stubs are found through MYPYPATH; an installed wheel's through site-packages,
    # which mypy refuses to see in MYPYPATH
    import site
    installed = {os.path.realpath(p) for p in site.getsitepackages() + [site.getusersitepackages()]}
    if os.path.realpath(where) not in installed:
        env["MYPYPATH"] = where
    # run from tmp_path: stubtest keeps mypy's cache in the working directory
    proc = subprocess.run([sys.executable, "-m", "mypy.stubtest", "--concise", "fastcopy"],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
