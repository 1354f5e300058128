"""The buffer size sweep under pytest-benchmark: ``python -m pytest benchmarks --benchmark-only
-k test_buffers``.

The same cases as ``python -m fastcopy --buffers`` (``fastcopy._buffers``): numpy float64 arrays
and torch float32 tensors, 1 KiB to 1 GiB, at 1 and 2 threads; in each group
``buffers:<lib>-<size>-<threads>t`` the library's own ``copy.deepcopy`` (``own``),
``fastcopy.deepcopy`` and the limit (``np.copyto`` of the same bytes into already-mapped pages;
with 2 threads from 1 MiB, a half each).  ``extra_info`` holds the minor page faults and the
system seconds per copy (getrusage) over the timed rounds.  ``--buffer-max-size 64M`` leaves out
the bigger sizes.  Here each benchmark runs to completion in turn; the CLI interleaves them.
"""
import copy
import resource

import pytest

from fastcopy import _buffers

_IMPLS = ("own", "fastcopy", "limit")
_PARAMS = [pytest.param(lib, size, t, impl,
                        id="%s-%s-%dt-%s" % (lib, _buffers.fmt_size(size).replace(" ", ""), t,
                                             impl))
           for lib in ("numpy", "torch") for size in _buffers.SIZES for t in (1, 2)
           for impl in _IMPLS]
_state = {}             # one (lib, size)'s source, its byte view and a mapped destination


def _case(lib, size):
    key = (lib, size)
    if key not in _state:
        _state.clear()
        np = pytest.importorskip("numpy")
        x, xb = _buffers._source(lib, size)
        dst = np.empty_like(xb)
        dst[:] = 1
        _state[key] = (x, xb, dst)
    return _state[key]


@pytest.fixture(scope="module")
def half():
    np = pytest.importorskip("numpy")
    h = _buffers._Half(np)
    yield h
    h.close()


@pytest.mark.parametrize(("lib", "size", "threads", "impl"), _PARAMS)
def test_buffers(benchmark, request, half, lib, size, threads, impl):
    cap = request.config.getoption("--buffer-max-size")
    if cap and size > _buffers.parse_size(cap):
        pytest.skip("above --buffer-max-size")
    pytest.importorskip("numpy")
    if lib == "torch":
        torch = pytest.importorskip("torch")
    fastcopy = pytest.importorskip("fastcopy")
    import numpy as np
    x, xb, dst = _case(lib, size)
    old = fastcopy.configure()
    old_torch = torch.get_num_threads() if lib == "torch" else None
    _buffers._set_threads(lib, fastcopy, threads)
    if impl == "own":
        def op():
            copy.deepcopy(x)
    elif impl == "fastcopy":
        def op():
            fastcopy.deepcopy(x)
    elif threads > 1 and size >= _buffers.MiB:
        def op():
            half.copy(dst, xb)
    else:
        def op():
            np.copyto(dst, xb)
    benchmark.group = "buffers:%s-%s-%dt" % (lib, _buffers.fmt_size(size).replace(" ", ""),
                                             threads)
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    try:
        benchmark(op)
    finally:
        fastcopy.configure(**old)
        if old_torch is not None:
            torch.set_num_threads(old_torch)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    stats = getattr(benchmark, "stats", None)
    calls = max(1, getattr(getattr(stats, "stats", None), "rounds", 1)
                * max(1, getattr(stats, "iterations", 1) if stats else 1))
    benchmark.extra_info.update(lib=lib, size=size, threads=threads, impl=impl,
                                faults_per_copy=(r1.ru_minflt - r0.ru_minflt) / calls,
                                sys_s_per_copy=(r1.ru_stime - r0.ru_stime) / calls)
