"""The realistic suite under pytest-benchmark: ``python -m pytest benchmarks --benchmark-only``.

Workloads come from ``fastcopy._realistic`` (shared with ``python -m fastcopy --realistic``, which
runs each workload in its own process; here they share the pytest process).  One benchmark group
per workload and mode, ``realistic:<workload>[direct|patched]``, holding the stdlib (the
baseline, unpatched), fastcopy and copium; ids read ``test_realistic[<workload>-<mode>-<impl>]``:

    python -m pytest benchmarks --benchmark-only -k test_realistic
    python -m pytest benchmarks --benchmark-only -k "test_realistic and (pydantic or sets)"

A workload whose library is not installed is skipped with the reason.  Before an implementation
is timed its copy is checked against the stdlib's (``fastcopy._realistic.compare``): a copy with a
different shape fails the test instead of being timed.  copium is tried with its native memo
first and timed with its dict memo where a hook rejects the native one (``extra_info`` says
which).
"""
import copy as _copy
import gc
import importlib

import pytest

from fastcopy import _realistic

_IMPLS = ("stdlib", "fastcopy", "copium")
_PARAMS = [pytest.param(w, mode, impl, id="%s-%s-%s" % (w.name, mode, impl))
           for w in _realistic.WORKLOADS for mode in w.modes for impl in _IMPLS]

_state = {}            # one workload's payload, stdlib copy and copium memo mode at a time


def _prepared(w):
    if _state.get("name") != w.name:
        _state.clear()
        need = _realistic.missing(w)
        if need:
            pytest.skip("%s needs %s, which is not installed" % (w.name, need))
        payload = w.build()
        _state.update(name=w.name, payload=payload,
                      expected=w.call(payload) if w.call else _copy.deepcopy(payload))
    return _state


def _copium_memo(copium, w, impl, st):
    """Native memo unless this workload's hooks reject it (decided once per workload)."""
    if "copium_memo" not in st:
        _realistic._copium_memo(copium, "native")
        try:
            impl.enter()
            try:
                impl.op()
            finally:
                impl.leave()
            st["copium_memo"] = "native"
        except Exception as exc:                        # noqa: BLE001 - the documented fallback
            st["copium_memo"] = "dict"
            st["copium_native_error"] = "%s: %s" % (type(exc).__name__, exc)
    _realistic._copium_memo(copium, st["copium_memo"])
    return st["copium_memo"]


@pytest.mark.parametrize(("rworkload", "mode", "impl"), _PARAMS)
def test_realistic(benchmark, bench_medians, rworkload, mode, impl):
    w = rworkload
    st = _prepared(w)
    fastcopy = importlib.import_module("fastcopy")
    copium = pytest.importorskip("copium") if impl == "copium" else None
    impls = _realistic.build_impls(w, st["payload"], fastcopy if impl == "fastcopy" else None,
                                   copium, modes=(mode,))
    chosen = impls[0] if impl == "stdlib" else impls[1]
    group = "realistic:%s[%s]" % (w.name, mode)
    benchmark.group = group
    benchmark.extra_info.update(workload=w.name, mode=mode, impl=impl, label=chosen.label)
    saved = _realistic._copium_config(copium) if copium is not None else None
    try:
        if copium is not None:
            benchmark.extra_info["copium_memo"] = _copium_memo(copium, w, chosen, st)
        if impl != "stdlib":
            chosen.enter()
            try:
                got = chosen.op()
            finally:
                chosen.leave()
            try:
                _realistic.compare(st["expected"], got, st["payload"])
            except _realistic.Mismatch as exc:
                pytest.fail("%s on %s [%s]: result differs from the stdlib's: %s"
                            % (impl, w.name, mode, exc))
            del got
        # as in the CLI's children: full collections scan what the copies allocate, not the
        # pytest process's heap
        gc.collect()
        gc.freeze()
        chosen.enter()
        try:
            benchmark(chosen.op)
        finally:
            chosen.leave()
            gc.unfreeze()
    finally:
        if saved is not None:
            copium.config.apply(**saved)
    stats = getattr(benchmark, "stats", None)
    if stats is not None:
        bench_medians.setdefault(group, {})[impl] = stats.stats.median
