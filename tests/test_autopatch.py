"""FASTCOPY_AUTOPATCH=1: the .pth/.start start-up hook installed by setup.py's build_py.

Nothing is installed: setup.py's build_py writes into a temporary folder, the start-up files are
copied into a temporary site dir, and fresh interpreters started with -S process that dir with
``site.addsitedir`` (exactly what site.py does for site-packages at start-up).
"""
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

import source_tree

# the folder holding the fastcopy under test (the checkout, or site-packages under a wheel)
ROOT = source_tree.PACKAGE_ROOT or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START_FILES = ("_fastcopy_autopatch.py", "fastcopy-autopatch.pth", "fastcopy-autopatch.start")
PEP829 = sys.version_info >= (3, 15)


def _require_setuptools():
    """setup.py needs setuptools >= 77 (the PEP 639 license fields in pyproject.toml).  The test
    extra brings it (README: ``pip install -e ".[test]"``); without it this is a setup error that
    says so, not a skip: the start-up files can be built on every supported CPython."""
    try:
        import setuptools
    except ImportError:
        pytest.fail("setuptools is not installed: install the test extra "
                    "(python -m pip install -e \".[test]\") or 'setuptools>=77'", pytrace=False)
    major = int(setuptools.__version__.split(".")[0])
    if major < 77:
        pytest.fail(f"setuptools {setuptools.__version__} cannot read pyproject.toml's PEP 639 "
                    "license fields: install the test extra or 'setuptools>=77'", pytrace=False)


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory):
    """A site dir holding exactly what build_py puts at the top of site-packages:
    built from the checkout, or, when the fastcopy under test is installed, the
    installed files themselves."""
    installed = not source_tree.FROM_SOURCE and ROOT is not None \
        and all(os.path.exists(os.path.join(ROOT, n)) for n in START_FILES)
    if source_tree.SOURCE_ROOT is not None and not installed:
        _require_setuptools()
        build = tmp_path_factory.mktemp("build")
        # egg_info -e keeps setuptools' metadata out of the source tree too
        proc = subprocess.run([sys.executable, "setup.py", "-q", "egg_info", "-e", str(build),
                               "build_py", "-d", str(build)],
                              cwd=source_tree.SOURCE_ROOT, capture_output=True, text=True)
        if proc.returncode:
            pytest.fail(f"setup.py build_py failed ({proc.returncode}):\n{proc.stderr[-3000:]}",
                        pytrace=False)
    elif installed:
        build = pathlib.Path(ROOT)
    else:
        pytest.skip("no checkout to build the start-up files from, and none installed")
    site = tmp_path_factory.mktemp("site")
    for name in START_FILES:
        shutil.copy(build / name, site / name)
    return site


@pytest.fixture
def core():
    """The tests that patch need the C core built for this interpreter."""
    try:
        import fastcopy
    except ImportError as exc:
        pytest.skip(f"fastcopy not importable: {exc}")
    return fastcopy


def run(site_dir, code, value=None, pythonpath=ROOT):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FASTCOPY_", "PYTHON"))}
    if value is not None:
        env["FASTCOPY_AUTOPATCH"] = value
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    prog = f"import site, sys\nsite.addsitedir({str(site_dir)!r})\n" + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-S", "-c", prog], env=env, cwd=str(site_dir),
                          capture_output=True, text=True, timeout=60)


def test_build_py_ships_the_start_files(site_dir):
    pth = (site_dir / "fastcopy-autopatch.pth").read_text(encoding="utf-8-sig").splitlines()
    start = (site_dir / "fastcopy-autopatch.start").read_text(encoding="utf-8-sig").splitlines()
    assert len(pth) == 1 and pth[0].startswith("import ")
    assert start == ["_fastcopy_autopatch:run"]
    with open(os.path.join(ROOT, "fastcopy", "_autopatch.py"), encoding="utf-8") as f:
        assert (site_dir / "_fastcopy_autopatch.py").read_text(encoding="utf-8") == f.read()


@pytest.mark.parametrize("value", [None, "", "0", "true", "yes", " 1"])
def test_off_imports_nothing(site_dir, value):
    proc = run(site_dir, """
        import copy
        # the .pth tests the variable before importing anything; a .start entry point cannot
        assert ("_fastcopy_autopatch" in sys.modules) == (sys.version_info >= (3, 15))
        assert "fastcopy" not in sys.modules
        assert not [m for m in sys.modules if m.startswith("fastcopy.")]
        assert "_fastcopy_deepcopy" not in copy.deepcopy.__code__.co_names
    """, value)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_on_patches(site_dir, core):
    proc = run(site_dir, """
        import copy, fastcopy
        assert fastcopy.is_patched()
        seen = set()
        sys.setprofile(lambda frame, event, arg: seen.add(frame.f_code.co_name))
        print(copy.deepcopy([1, [2]]))
        sys.setprofile(None)
        assert "_deepcopy_list" not in seen, seen  # no frame of copy.py's own list copier
    """, "1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[1, [2]]"


def test_on_without_fastcopy_warns_and_starts(site_dir):
    # fastcopy not importable: one line on stderr, the interpreter still runs the program
    proc = run(site_dir, "print('ran')\n", "1", pythonpath=None)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ran"
    if "fastcopy" not in proc.stderr:
        pytest.skip("fastcopy is importable without the source tree")
    assert proc.stderr.count("\n") == 1


def test_start_entry_point_resolves(site_dir, core):
    # what PEP 829's site.py does with each line of a .start file: pkgutil.resolve_name, call
    proc = run(site_dir, """
        import pkgutil
        fn = pkgutil.resolve_name("_fastcopy_autopatch:run")
        assert callable(fn) and fn.__module__ == "_fastcopy_autopatch"
        import fastcopy
        fastcopy.unpatch()
        fn()
        assert fastcopy.is_patched()
    """, "1")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(not PEP829, reason="PEP 829 .start files are read by Python 3.15+")
def test_pep829_runs_the_hook_once(site_dir, core):
    proc = run(site_dir, """
        import _fastcopy_autopatch, fastcopy
        assert fastcopy.is_patched()
    """, "1")
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr  # the .start file silences the .pth import line
