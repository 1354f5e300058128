"""The pytest plugin (fastcopy/pytest_plugin.py), driven through pytester.

The inner runs are in-process, so each test also checks that the outer interpreter's
``copy`` module is left exactly as it was found.  fastcopy.patch() keeps the stdlib's function
objects and swaps their code, so "patched" is observed by behaviour: a patched copy.deepcopy
runs no Python frame of copy.py's own list copier.
"""
import copy

import pytest

try:
    import fastcopy
except ImportError as exc:  # the C core not built for this interpreter
    pytest.skip(f"fastcopy not importable: {exc}", allow_module_level=True)

pytest_plugins = ("pytester",)

PLUGIN = ("-p", "fastcopy.pytest_plugin")

# written into each inner run as the module probe.py
PROBE = """
import copy, sys

def via_fastcopy(fn=None):
    fn = fn or copy.deepcopy
    seen = set()
    def prof(frame, event, arg):
        if event == "call":
            seen.add(frame.f_code.co_name)
    sys.setprofile(prof)
    try:
        assert fn([[1]]) == [[1]]
    finally:
        sys.setprofile(None)
    return "_deepcopy_list" not in seen
"""

PATCHED = """
import copy
import fastcopy
from probe import via_fastcopy

def test_state():
    assert fastcopy.is_patched()
    assert via_fastcopy()
"""

STDLIB = """
import copy
import fastcopy
from probe import via_fastcopy

def test_state():
    assert not fastcopy.is_patched()
    assert not via_fastcopy()
"""


@pytest.fixture(autouse=True)
def stdlib_restored(monkeypatch):
    # the inner runs load only what they name: faster, and no third-party plugin in the way
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    deep, shallow = copy.deepcopy, copy.copy
    codes = deep.__code__, shallow.__code__
    assert not fastcopy.is_patched()
    yield
    assert copy.deepcopy is deep and copy.copy is shallow
    assert (deep.__code__, shallow.__code__) == codes
    assert not fastcopy.is_patched()


@pytest.fixture
def pytester(pytester):
    pytester.makepyfile(probe=PROBE)
    return pytester


def stdlib_probe(pytester):
    pytester.makepyfile(test_probe=STDLIB)


def test_inert_without_option(pytester):
    stdlib_probe(pytester)
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["fastcopy: inactive*"])


def test_option_patches_for_the_run(pytester):
    pytester.makepyfile(test_probe=PATCHED)
    result = pytester.runpytest(*PLUGIN, "--fastcopy")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["fastcopy: active*patched by this run*"])


def test_ini_enables_and_cli_overrides(pytester):
    pytester.makeini("[pytest]\nfastcopy = true\n")
    pytester.makepyfile(test_probe=PATCHED)
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=1)
    stdlib_probe(pytester)
    result = pytester.runpytest(*PLUGIN, "--no-fastcopy")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["fastcopy: inactive*"])


def test_patched_before_conftest_import(pytester):
    # a conftest's `from copy import deepcopy` binds whatever copy.deepcopy is at import time
    pytester.makeconftest("import fastcopy\nfrom copy import deepcopy as early\n"
                          "PATCHED_AT_IMPORT = fastcopy.is_patched()\n")
    pytester.makepyfile(test_probe="""
from conftest import early, PATCHED_AT_IMPORT
from probe import via_fastcopy

def test_early():
    assert PATCHED_AT_IMPORT
    assert via_fastcopy(early)
""")
    pytester.runpytest(*PLUGIN, "--fastcopy").assert_outcomes(passed=1)


def test_no_fastcopy_marker(pytester):
    pytester.makepyfile(test_probe="""
import fastcopy
import pytest
from probe import via_fastcopy

@pytest.fixture
def fixture_saw():
    return fastcopy.is_patched(), via_fastcopy()

def test_before():
    assert fastcopy.is_patched() and via_fastcopy()

@pytest.mark.no_fastcopy
def test_marked(fixture_saw):
    assert fixture_saw == (False, False)
    assert not fastcopy.is_patched()
    assert not via_fastcopy()

def test_after():
    assert fastcopy.is_patched() and via_fastcopy()
""")
    result = pytester.runpytest(*PLUGIN, "--fastcopy", "--strict-markers", "-p", "no:randomly")
    result.assert_outcomes(passed=3)


def test_marker_registered_when_inactive(pytester):
    pytester.makepyfile(test_probe="""
import pytest

@pytest.mark.no_fastcopy
def test_marked():
    pass
""")
    pytester.runpytest(*PLUGIN, "--strict-markers").assert_outcomes(passed=1)


def test_keeps_a_patch_it_did_not_make(pytester):
    pytester.makepyfile(test_probe=PATCHED)
    fastcopy.patch()
    try:
        result = pytester.runpytest(*PLUGIN, "--fastcopy")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["fastcopy: active*already patched*"])
        assert fastcopy.is_patched()
    finally:
        fastcopy.unpatch()


def test_restored_after_failures(pytester):
    pytester.makepyfile(test_probe="""
def test_fails():
    assert False
""")
    pytester.runpytest(*PLUGIN, "--fastcopy").assert_outcomes(failed=1)


def test_patched_outside_pytest(pytester):
    # FASTCOPY_AUTOPATCH=1 patches before pytest starts: header says so, the marker still works
    pytester.makepyfile(test_probe="""
import fastcopy
import pytest
from probe import via_fastcopy

@pytest.mark.no_fastcopy
def test_marked():
    assert not fastcopy.is_patched() and not via_fastcopy()

def test_plain():
    assert fastcopy.is_patched() and via_fastcopy()
""")
    fastcopy.patch()
    try:
        result = pytester.runpytest(*PLUGIN, "-p", "no:randomly")
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines(["fastcopy: active, patched outside pytest*"])
        assert fastcopy.is_patched()
    finally:
        fastcopy.unpatch()
