"""The pytest plugin (fastcopy/pytest_plugin.py), driven through pytester.

The inner runs are in-process, so each test also checks that the outer interpreter's
``copy`` module is left exactly as it was found.
"""
import copy

import pytest

fastcopy = pytest.importorskip("fastcopy")

pytest_plugins = ("pytester",)

PLUGIN = ("-p", "fastcopy.pytest_plugin")

PATCHED = """
import copy
import fastcopy

def test_state():
    assert copy.deepcopy is fastcopy.deepcopy
    assert copy.copy is fastcopy.copy
"""


@pytest.fixture(autouse=True)
def stdlib_restored(monkeypatch):
    # the inner runs load only what they name: faster, and no third-party plugin in the way
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    deep, shallow = copy.deepcopy, copy.copy
    assert not fastcopy.is_patched()
    yield
    assert copy.deepcopy is deep and copy.copy is shallow
    assert not fastcopy.is_patched()


def stdlib_probe(pytester):
    pytester.makepyfile(test_probe="""
import copy

def test_state():
    assert copy.deepcopy.__module__ == "copy"
    assert copy.copy.__module__ == "copy"
""")


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
    pytester.makeconftest("from copy import deepcopy as early\n")
    pytester.makepyfile(test_probe="""
import fastcopy
from conftest import early

def test_early():
    assert early is fastcopy.deepcopy
""")
    pytester.runpytest(*PLUGIN, "--fastcopy").assert_outcomes(passed=1)


def test_no_fastcopy_marker(pytester):
    pytester.makepyfile(test_probe="""
import copy
import fastcopy
import pytest

@pytest.fixture
def seen():
    return copy.deepcopy

def test_before():
    assert copy.deepcopy is fastcopy.deepcopy

@pytest.mark.no_fastcopy
def test_marked(seen):
    assert seen.__module__ == "copy"
    assert copy.deepcopy.__module__ == "copy"
    assert copy.copy.__module__ == "copy"
    assert not fastcopy.is_patched()

def test_after():
    assert copy.deepcopy is fastcopy.deepcopy
    assert copy.copy is fastcopy.copy
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
