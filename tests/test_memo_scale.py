"""Big copies and the memo's proven misses (src/memo.c, "Proven misses").

An object referenced only by the container the walker reads cannot be in the memo, so its
lookup is answered without probing the index and its entry is indexed only when something
probes the index later.  These tests build copies past the index's first size (thousands of
objects) whose singly-referenced objects are met again -- through a hook shown the memo, a hook's
own deepcopy(v, memo), a prefilled dict copy's second reference, a memo shown at the end -- and
compare everything with the stdlib.
"""
import copy
import functools

import pytest

import shape
from shape import Case, assert_equivalent


def _records(n):
    return [{"id": i, "tags": ["a", str(i)], "meta": {"pos": (i, [i]), "l": [i, [i]]}}
            for i in range(n)]


class Grab:
    """A hook that reaches into the already-copied part of the source and deep-copies an
    object nothing else references, with the memo it is shown -- through the implementation
    under test (fastcopy's nested call then works on the outer call's native table)."""

    def __init__(self, holder, key, log, impl=copy):
        self.holder, self.key, self.log, self.impl = holder, key, log, impl

    def __deepcopy__(self, memo):
        inner = self.holder[self.key]
        self.log.append(len(memo))
        return [self.impl.deepcopy(inner, memo), self.impl.deepcopy(self.holder, memo)]


def test_records_match_the_stdlib():
    def scenario(impl):
        src = _records(3000)
        return Case(src, lambda: impl.deepcopy(src))
    assert_equivalent(scenario)


@pytest.mark.parametrize("where", [0, 1500, 2999])
def test_hook_meets_a_singly_referenced_object_again(where):
    for nested in ("stdlib", "same"):
        def scenario(impl):
            src = _records(3000)
            log = []
            inner = copy if nested == "stdlib" else impl
            src.append(Grab(src[where]["meta"], "l", log, inner))
            src.append(Grab(src[where], "tags", log, inner))
            return Case(src, lambda: impl.deepcopy(src), log=log)
        assert_equivalent(scenario)

    def visible(impl):
        src = _records(3000)
        memo = {}
        src.append(Grab(src[where]["meta"], "l", [], impl))
        return Case(src, lambda: impl.deepcopy(src, memo), memo=memo)
    assert_equivalent(visible)


def test_shared_values_in_prefilled_dicts():
    def scenario(impl):
        shared = [1, [2]]
        src = []
        for i in range(2000):
            once = [i]
            src.append({"a": once, "b": once, "s": shared, "t": (once,), "own": [i, [i]]})
        return Case(src, lambda: impl.deepcopy(src))
    assert_equivalent(scenario)


def test_the_memo_seen_after_a_big_copy():
    """A hook placed last is shown every entry, in the stdlib's order, keep-alive list too."""
    class Peek:
        def __init__(self, log, src):
            self.log, self.src = log, src

        def __deepcopy__(self, memo):
            self.log.append(shape.memo_picture(memo, source=self.src[0]))
            return self

    def scenario(impl):
        log, holder = [], [None]
        src = _records(2500) + [Peek(log, holder)]
        holder[0] = src
        return Case(src, lambda: impl.deepcopy(src), log=log)
    assert_equivalent(scenario)


def test_reduce_values_reach_inner_objects():
    """C reduce functions (functools.partial's) hand the walker a second reference to an
    object first met through its only container."""
    def scenario(impl):
        src = []
        for i in range(1500):
            inner = [i, {"k": [i]}]
            p = functools.partial(print, inner)
            src.append((p.args, p, {"inner": inner}))
        return Case(src, lambda: impl.deepcopy(src))
    assert_equivalent(scenario)
