"""Which fastcopy the suite tests, and where the source tree is, if anywhere.

The suite runs in three settings:

- in a checkout with the core built in place (``setup.py build_ext --inplace``)
  or installed editable: fastcopy is the checkout's own folder;
- from a copy of tests/ outside any checkout, against an installed wheel
  (scripts/wheel_test.sh): fastcopy is the installed package, and the tests
  that read the sources (test_lint, test_autopatch's build step) skip, or
  find them through $FASTCOPY_SOURCE_ROOT;
- in a checkout after ``pip install .`` with nothing built in place: the
  checkout's fastcopy/ folder, which sys.path reaches through '' (``python -m
  pytest``) or PYTHONPATH, has no compiled core and would shadow the installed
  package.  When an installed fastcopy with a core exists, the checkout is
  taken off sys.path here (conftest imports this module before fastcopy) and
  off its sub-processes' paths (``subprocess_env``, ``RUN_CWD``); otherwise
  the fastcopy tests skip and say how to build.  (pytest imports the
  fastcopy plugin before any conftest: fastcopy/__init__.py itself hands
  over to the installed package in that case, and this module then finds
  fastcopy already imported from site-packages.)

SOURCE_ROOT    the checkout (holds setup.py, src/, fastcopy/), or None
PACKAGE_ROOT   the folder that holds the fastcopy package the suite imports
FROM_SOURCE    that package is the checkout's folder
SHADOWED       the checkout's unbuilt folder was taken off sys.path
"""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _is_source(d):
    return bool(d) and os.path.isfile(os.path.join(d, "setup.py")) \
        and os.path.isdir(os.path.join(d, "src")) \
        and os.path.isfile(os.path.join(d, "fastcopy", "__init__.py"))


def _same(entry, d):
    return os.path.realpath(entry or os.getcwd()) == os.path.realpath(d)


def _has_core(pkgdir):
    try:
        names = os.listdir(pkgdir)
    except OSError:
        return False
    return any(n.startswith("_fastcopy.") and n.endswith((".so", ".pyd")) for n in names)


def _package_dir():
    spec = importlib.util.find_spec("fastcopy")
    locs = list(spec.submodule_search_locations or []) if spec is not None else []
    return locs[0] if locs else None


_env_root = os.environ.get("FASTCOPY_SOURCE_ROOT", "")
if _env_root:
    SOURCE_ROOT = os.path.abspath(_env_root)
elif _is_source(os.path.dirname(HERE)):
    SOURCE_ROOT = os.path.dirname(HERE)
else:
    SOURCE_ROOT = None

SHADOWED = False
if SOURCE_ROOT is not None and "fastcopy" not in sys.modules \
        and not _has_core(os.path.join(SOURCE_ROOT, "fastcopy")):
    _saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if not _same(p, SOURCE_ROOT)]
    _other = _package_dir()
    if _other is not None and _has_core(_other):
        SHADOWED = True
    else:
        sys.path[:] = _saved

_pkg = _package_dir() if "fastcopy" not in sys.modules else \
    os.path.dirname(os.path.abspath(sys.modules["fastcopy"].__file__))
PACKAGE_ROOT = os.path.dirname(_pkg) if _pkg else None
FROM_SOURCE = SOURCE_ROOT is not None and not SHADOWED \
    and (PACKAGE_ROOT is None or _same(PACKAGE_ROOT, SOURCE_ROOT))
# a sub-process's working directory: '' on its sys.path must find the same fastcopy
RUN_CWD = SOURCE_ROOT if FROM_SOURCE else HERE


def subprocess_env(env=None):
    """os.environ (or env), with PYTHONPATH set so that a fresh interpreter
    imports the fastcopy this process tests."""
    env = dict(os.environ if env is None else env)
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
             if p and not (SOURCE_ROOT is not None and not FROM_SOURCE
                           and _same(p, SOURCE_ROOT))]
    if FROM_SOURCE:
        parts.insert(0, SOURCE_ROOT)
    if parts:
        env["PYTHONPATH"] = os.pathsep.join(parts)
    else:
        env.pop("PYTHONPATH", None)
    return env
