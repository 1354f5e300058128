"""The scale benchmark under pytest-benchmark: ``python -m pytest benchmarks --benchmark-only -k
test_scale``.

Shapes come from ``fastcopy._scale`` (shared with ``python -m fastcopy --scale``, which also
measures 1,000,000 items, a full collection after the copy and peak memory).  One group per shape
and N, ``scale:<shape>[N]``, holding the memo-free floor, the stdlib (the baseline), fastcopy and
copium; each copy is compared with the stdlib's before it is timed.  N is 10,000 and 100,000
here (bigger N belongs to ``--scale``: one round is seconds).
"""
import importlib

import pytest

from fastcopy import _scale

_SIZES = (10_000, 100_000)
_IMPLS = ("floor", "stdlib", "fastcopy", "copium")
_data = {}


def _payload(shape, n):
    if _data.get("key") != (shape, n):
        _data.clear()
        build, floor, _ = _scale.SHAPES[shape]
        data = build(n)
        _data.update(key=(shape, n), data=data, expected=_scale._impls(["stdlib"])["stdlib"](data))
    return _data


@pytest.mark.parametrize("shape,n,impl", [
    pytest.param(s, n, i, id="%s-%d-%s" % (s, n, i))
    for s in _scale.SHAPES for n in _SIZES for i in _IMPLS])
def test_scale(benchmark, shape, n, impl):
    st = _payload(shape, n)
    if impl == "floor":
        fn = _scale.SHAPES[shape][1]
    elif impl == "copium":
        try:
            fn = importlib.import_module("copium").deepcopy
        except ImportError:
            pytest.skip("copium is not installed")
    else:
        fn = _scale._impls([impl])[impl]
    if impl != "floor":
        assert _scale._shape_of(st["expected"], fn(st["data"])), "copy differs from the stdlib's"
    benchmark.group = "scale:%s[%d]" % (shape, n)
    benchmark.extra_info["items"] = n
    benchmark.pedantic(fn, args=(st["data"],), rounds=3 if n >= 100_000 else 5, iterations=1)
