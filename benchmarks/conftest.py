"""pytest-benchmark suite for fastcopy: one benchmark group per workload and size.

Workloads come from ``fastcopy._bench`` (shared with ``python -m fastcopy``).  Each group holds the
stdlib (the baseline) and fastcopy, plus copium when it is importable; at the end of the run a
table of "x faster than the stdlib" per group is printed from the same run's medians.
"""
import importlib

import pytest

from fastcopy import _bench

_IMPLS = ("stdlib", "fastcopy", "copium")
_medians = {}          # group -> {impl: median seconds}


def pytest_addoption(parser):
    g = parser.getgroup("fastcopy benchmarks")
    g.addoption("--bench-sizes", default="small,medium,large",
                help="comma-separated payload sizes to run (default: small,medium,large)")
    g.addoption("--buffer-max-size", default=None, metavar="SIZE",
                help="test_buffers: leave out buffers above SIZE (e.g. 64M; default: up to 1G)")


def _sizes(config):
    sizes = [s.strip() for s in config.getoption("--bench-sizes").split(",") if s.strip()]
    bad = [s for s in sizes if s not in _bench.SIZES]
    if bad:
        raise pytest.UsageError("--bench-sizes: unknown size(s) %s; choose from %s"
                                % (", ".join(bad), ", ".join(_bench.SIZES)))
    return sizes


def pytest_generate_tests(metafunc):
    if "workload" not in metafunc.fixturenames:
        return
    kind = "copy" if metafunc.function.__name__ == "test_shallow" else "deepcopy"
    workloads = [w for w in _bench.WORKLOADS if w.kind == kind]
    params = [pytest.param(w, size, impl, id="%s-%s-%s" % (w.name, size, impl))
              for w in workloads for size in _sizes(metafunc.config) for impl in _IMPLS]
    metafunc.parametrize(("workload", "size", "impl"), params)


@pytest.fixture(scope="session", autouse=True)
def _stdlib_unpatched():
    """patch() retargets copy.deepcopy itself: keep the baseline the real stdlib."""
    fastcopy = importlib.import_module("fastcopy")
    was_patched = getattr(fastcopy, "is_patched", lambda: False)()
    if was_patched:
        fastcopy.unpatch()
    yield
    if was_patched:
        fastcopy.patch()


_payloads = {}


@pytest.fixture
def payload(workload, size):
    """(payload, each), built once per workload and size and shared by every implementation."""
    key = (workload.name, size)
    if key not in _payloads:
        _payloads.clear()      # keep one payload alive at a time: large ones are big
        _payloads[key] = workload.build(size)
    return _payloads[key]


@pytest.fixture
def impl_module(impl):
    if impl == "stdlib":
        return None
    if impl == "copium":
        return pytest.importorskip("copium")
    return importlib.import_module("fastcopy")


@pytest.fixture
def run_copy(benchmark, workload, size, impl, impl_module, payload):
    """Benchmark one implementation on the payload; records the median for the summary."""
    impls = _bench.implementations(workload.kind,
                                   impl_module if impl == "fastcopy" else None,
                                   impl_module if impl == "copium" else None,
                                   with_pickle=False)
    fn = impls[impl]
    data, each = payload
    group = "%s[%s]" % (workload.name, size)
    benchmark.group = group
    benchmark.extra_info.update(impl=impl, kind=workload.kind, size=size,
                                size_param=str(workload.sizes[size]))
    if each:
        def op():
            for x in data:
                fn(x)
    else:
        def op():
            fn(data)
    benchmark(op)
    stats = getattr(benchmark, "stats", None)
    if stats is not None:
        _medians.setdefault(group, {})[impl] = stats.stats.median


@pytest.fixture
def bench_medians():
    """{group: {impl: median s}}, printed at the end; test_realistic.py adds its groups here."""
    return _medians


def pytest_terminal_summary(terminalreporter):
    if not _medians:
        return
    tr = terminalreporter
    tr.section("fastcopy: x faster than the stdlib (medians, same run)")
    width = max(len(g) for g in _medians)
    tr.write_line("%-*s  %10s  %9s  %9s" % (width, "group", "stdlib", "fastcopy", "copium"))
    for group, m in _medians.items():
        base = m.get("stdlib")
        cells = []
        for impl in ("fastcopy", "copium"):
            t = m.get(impl)
            cells.append("%.2fx" % (base / t) if base and t else "-")
        tr.write_line("%-*s  %10s  %9s  %9s" % (width, group, _bench.fmt_time(base), *cells))
