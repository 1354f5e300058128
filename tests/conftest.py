"""Shared fixtures: every behavioural test runs against the stdlib (the
oracle) and against fastcopy; the fastcopy side is skipped, with the reason,
until the C core can be imported."""
import copy
import os
import sys

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:  # `import shape` works whether or not tests/ is a package
    sys.path.insert(0, _HERE)

import source_tree  # noqa: E402  (before fastcopy: it may take an unbuilt checkout off sys.path)

ROOT = os.path.dirname(_HERE)

try:
    import fastcopy._fastcopy  # noqa: F401
    import fastcopy
    FASTCOPY = fastcopy
    FASTCOPY_MISSING = None
except ImportError as e:
    FASTCOPY = None
    FASTCOPY_MISSING = "fastcopy._fastcopy cannot be imported (%s); build with " \
                       "`python setup.py build_ext --inplace`, or install fastcopy-ml " \
                       "(a wheel, `pip install .`)" % e

needs_fastcopy = pytest.mark.skipif(FASTCOPY is None, reason=str(FASTCOPY_MISSING))


@pytest.fixture(params=["copy", pytest.param("fastcopy", marks=needs_fastcopy)])
def impl(request):
    """The module under test: `copy` or `fastcopy` (same call signatures)."""
    return copy if request.param == "copy" else FASTCOPY


@pytest.fixture
def fc():
    if FASTCOPY is None:
        pytest.skip(FASTCOPY_MISSING)
    return FASTCOPY




@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A test that passed on the stdlib side but could not compare with
    fastcopy (core not built) is reported as skipped, not passed."""
    import shape
    del shape.COMPARISON_SKIPPED[:]
    res = yield
    if shape.COMPARISON_SKIPPED:
        del shape.COMPARISON_SKIPPED[:]
        pytest.skip("fastcopy._fastcopy not built: stdlib side ran, comparison skipped")
    return res


def pytest_configure(config):
    # pytest-run-parallel's marker (tests that change global state: copy's and copyreg's
    # tables, the patch, shared counters), declared here too for runs without the plugin
    config.addinivalue_line("markers", "thread_unsafe(reason): not run in several threads "
                            "at once by pytest-run-parallel")
