"""Canary: the installed releases of the libraries whose copy hooks have native roads
(src/hooks.c) are recognised, hook by hook.

A library's hook takes the native road only while its code's fingerprint is listed for this
CPython.  A new release that changes a hook silently sends its users down the Python road (slower,
never wrong), so CI installs each library's newest release and runs this file with
FASTCOPY_HOOK_CANARY=1: an unlisted hook then fails, naming the function and its fingerprint, so
that its code gets read before it is listed (docs/hooks.md, "Which releases take the native
road").  CI's runs with pinned older releases (scripts/hook_releases.sh) set it too.  Elsewhere an
unlisted hook is a skip, with the same words: a user's older or newer release is not a failure.
"""
import copy
import os
import sys
import sysconfig

import pytest

import shape

fastcopy = shape.fastcopy_module()
pytestmark = pytest.mark.skipif(fastcopy is None, reason="fastcopy's C core is not built")

STRICT = os.environ.get("FASTCOPY_HOOK_CANARY") == "1"
FT = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def _core():
    import fastcopy._fastcopy as core
    return core


def _unlisted(hooks):
    """[(label, fingerprint)] of the (label, function or code, table, column) not listed."""
    core = _core()
    known = core._known_fingerprints()
    out = []
    for label, fn, table, col in hooks:
        fp = core._code_fingerprint(fn)
        if fp is None or not any(fps[col] == fp for _v, fps in known[table]):
            out.append((label, fp))
    return out


def _verdict(lib, version, hooks):
    missing = _unlisted(hooks)
    if not missing:
        return
    msg = ("%s %s on CPython %d.%d: hook code not listed in src/hooks.c, so it takes the Python "
           "road: %s.  Read the new code (python scripts/hook_fingerprints.py --releases "
           "%s==%s groups it with the releases it equals), and list it only if the native road "
           "does what it does." % (
               lib, version, sys.version_info[0], sys.version_info[1],
               ", ".join("%s (fingerprint %s)" % (lab, "none" if fp is None else "0x%016x" % fp)
                         for lab, fp in missing), lib, version))
    if STRICT:
        pytest.fail(msg)
    pytest.skip(msg)


def test_dataclasses_hooks_listed():
    import dataclasses
    _verdict("dataclasses", "%d.%d" % sys.version_info[:2], [
        ("_dataclass_getstate", dataclasses._dataclass_getstate, "dc", 0),
        ("_dataclass_setstate", dataclasses._dataclass_setstate, "dc", 1),
        ("fields", dataclasses.fields, "dc", 2)])


def test_attrs_hooks_listed():
    attr = pytest.importorskip("attr")
    import attr._make as m
    codes = {c.co_name: c for c in m._ClassBuilder._make_getstate_setstate.__code__.co_consts
             if hasattr(c, "co_name")}
    _verdict("attrs", attr.__version__, [
        ("attr._make slots_getstate", codes.get("slots_getstate"), "at", 0),
        ("attr._make slots_setstate", codes.get("slots_setstate"), "at", 1)])
    # the two as a pair (one release's), as the capture reads them
    core = _core()
    pair = (core._code_fingerprint(codes["slots_getstate"]),
            core._code_fingerprint(codes["slots_setstate"]))
    assert any(tuple(fps) == pair for _v, fps in core._known_fingerprints()["at"])
    if FT:
        return
    @attr.define
    class A:
        x: list
    src = [A([1]), A([2])]
    names, res = shape.python_calls(lambda: fastcopy.deepcopy(src))
    assert "slots_getstate" not in names and "slots_setstate" not in names, names
    assert shape.shape(res, src) == shape.shape(copy.deepcopy(src), src)


def test_pydantic_hooks_listed():
    pydantic = pytest.importorskip("pydantic")
    if not pydantic.VERSION.startswith("2."):
        pytest.skip("pydantic %s: no native road before 2" % pydantic.VERSION)
    import pydantic.root_model as rm
    _verdict("pydantic", pydantic.VERSION, [
        ("BaseModel.__deepcopy__", pydantic.BaseModel.__deepcopy__, "pd", 0),
        ("RootModel.__deepcopy__", rm.RootModel.__deepcopy__, "pr", 0),
        ("BaseModel.__copy__", pydantic.BaseModel.__copy__, "pc", 0),
        ("RootModel.__copy__", rm.RootModel.__copy__, "pc", 1)])
    if FT:
        return

    class M(pydantic.BaseModel):
        a: list

    class R(pydantic.RootModel[list]):
        pass
    src = [M(a=[1]), R([2, [3]])]
    for fn, hook in ((fastcopy.deepcopy, "__deepcopy__"), (fastcopy.copy, "__copy__")):
        fn(src[0])
        for x in src:
            names, res = shape.python_calls(lambda: fn(x))
            assert hook not in names, (type(x).__name__, names)


def test_sklearn_hooks_listed():
    sklearn = pytest.importorskip("sklearn")
    import sklearn.base
    be = sklearn.base.BaseEstimator
    _verdict("scikit-learn", sklearn.__version__, [
        ("BaseEstimator.__getstate__", be.__getstate__, "sk", 0),
        ("BaseEstimator.__setstate__", be.__setstate__, "sk", 1)])
    if FT:
        return

    class E(be):
        def __init__(self, a=None):
            self.a = a
    src = [E([1]), E({"k": [2]})]
    names, res = shape.python_calls(lambda: fastcopy.deepcopy(src))
    assert "__getstate__" not in names and "__setstate__" not in names, names
    assert shape.shape(res, src) == shape.shape(copy.deepcopy(src), src)
