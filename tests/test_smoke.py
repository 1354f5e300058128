"""Smoke tests of the core; the full behavioural suite lives beside this file."""
import copy
import sys

import pytest

import fastcopy


def test_error_is_copy_error():
    assert fastcopy.Error is copy.Error
    assert fastcopy.error is copy.Error


def test_basic_equivalence():
    x = {"a": [1, 2, (3, [4])], "b": (1, 2), "s": "x"}
    x["self"] = x
    y = fastcopy.deepcopy(x)
    assert y["self"] is y
    assert y["b"] is x["b"]
    assert y["a"] is not x["a"] and y["a"][2] is not x["a"][2]


@pytest.mark.thread_unsafe(reason='global state: patches the copy module in and out')
def test_patch_roundtrip():
    from copy import deepcopy as early
    code = copy.deepcopy.__code__
    with fastcopy.patched():
        assert fastcopy.is_patched()
        assert copy.deepcopy.__code__ is not code
        x = []
        for _ in range(5000):
            x = [x]
        early(x)          # would raise RecursionError in the stdlib
    assert not fastcopy.is_patched()
    assert copy.deepcopy.__code__ is code


@pytest.mark.skipif(sys.version_info < (3, 13), reason="copy.replace is 3.13+")
def test_replace_is_stdlib():
    assert fastcopy.replace is copy.replace
