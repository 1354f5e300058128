"""Native roads for library hooks (src/hooks.c): frozen slotted dataclasses' state hooks.

Each road must do observably what the Python hook does -- results, memo contents as hooks see
them, exceptions and messages -- and step aside (the Python road) for anything it does not
recognise exactly: a subclass's own hook, a patched global, a field that is no plain slot.
The stdlib is the oracle throughout (shape.assert_equivalent), with a fresh memo and with a
caller's memo, and a hook (Peek) inside the copied data pictures the memo mid-copy.
"""
import copy
import dataclasses
import sys
import typing

import pytest

import shape
from shape import Case, assert_equivalent, both_memo_modes, python_calls

pytestmark = pytest.mark.skipif(sys.version_info < (3, 10), reason="slots=True needs 3.10")

import sysconfig  # noqa: E402

# white-box tests that a native road was taken: free-threaded builds take none of them (the
# verified state is not shared between threads); their results are still compared everywhere
white_box = pytest.mark.skipif(bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                               reason="free-threaded builds run library hooks as Python")


class Peek:
    def __init__(self, log, src):
        self.log, self.src = log, src

    def __deepcopy__(self, memo):
        self.log.append((len(memo), shape.memo_picture(memo, source=self.src[0])))
        return self


@dataclasses.dataclass(frozen=True, slots=True)
class Point:
    x: typing.Any
    y: typing.Any


@dataclasses.dataclass(frozen=True, slots=True)
class Rec:
    id: int
    name: str
    tags: tuple
    pos: Point
    meta: dict
    extra: typing.ClassVar[int] = 5
    init_only: dataclasses.InitVar[int] = 0


@dataclasses.dataclass(frozen=True, slots=True)
class SubRec(Rec):
    more: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True, slots=True)
class OwnState(Rec):
    def __getstate__(self):
        return [self.id, self.name, self.tags, self.pos, {"own": True}]


def _recs(log=None, holder=None):
    shared = [1, [2]]
    out = [Rec(i, "r%d" % i, ("a", i), Point(i, shared), {"s": shared, "l": [i]})
           for i in range(3)]
    out.append(SubRec(9, "sub", (), Point([0], None), {}, more=[shared, {"k": 1}]))
    if log is not None:
        out.append(Rec(7, "peek", (), Point(Peek(log, holder), shared), {"after": [3]}))
    out.append(out[0])
    return out


def _check(build_list):
    def build():
        log, holder = [], [None]
        src = build_list(log, holder)
        holder[0] = src
        return src, log
    for sc in both_memo_modes(build):
        assert_equivalent(sc)


def test_frozen_slotted_records():
    _check(lambda log, holder: _recs(log, holder))


def test_values_shared_with_the_rest():
    def build(log, holder):
        recs = _recs(log, holder)
        return [recs[0].meta, recs, recs[0].pos, recs[0].pos.y, (recs[1],)]
    _check(build)


def test_self_reference_through_a_field():
    def build(log, holder):
        r = Rec(1, "me", (), Point(0, 0), {})
        object.__setattr__(r, "meta", {"me": r, "peek": Peek(log, holder)})
        return [r, r.meta]
    _check(build)


def test_own_getstate_takes_the_python_road():
    def build(log, holder):
        return [OwnState(1, "o", (), Point(1, 2), {"a": [1]}), _recs()]
    _check(build)


def test_unset_field_raises_the_stdlibs_error():
    def scenario(impl):
        r = Rec.__new__(Rec)
        object.__setattr__(r, "id", 1)
        return Case(r, lambda: impl.deepcopy([r]))
    std = assert_equivalent(scenario)
    assert std["outcome"][0] == "raise" and std["outcome"][1] == "AttributeError"


def test_a_field_that_is_a_property():
    @dataclasses.dataclass(frozen=True, slots=True)
    class P:
        a: int
        b: list

    class Q(P):
        __slots__ = ()
        calls = []

        @property
        def b(self):
            Q.calls.append(1)
            return ["prop"]

    def scenario(impl):
        q = Q.__new__(Q)
        object.__setattr__(q, "a", 1)
        return Case(q, lambda: impl.deepcopy([q, P(2, [3])]))
    # Q's b is a property: read through getattr (the hook's road), never written by setstate
    # (object.__setattr__ on a read-only property raises, as in the stdlib)
    assert_equivalent(scenario)


def test_fields_changed_after_the_class_was_made():
    @dataclasses.dataclass(frozen=True, slots=True)
    class C:
        a: list
        b: list

    fields = C.__dataclass_fields__

    # built once per implementation; the copy reads __dataclass_fields__ as it is then
    def run(impl):
        saved = dict(fields)
        del fields["b"]
        try:
            x = C([1], [2])
            y = impl.deepcopy(x)
            return y.a, getattr(y, "b", "unset")
        finally:
            fields.clear()
            fields.update(saved)
    import fastcopy
    assert run(copy) == run(fastcopy) == ([1], "unset")


def test_patched_module_global_takes_the_python_road(monkeypatch):
    import fastcopy
    calls = []
    real = dataclasses.fields

    def counting(x):
        calls.append(type(x).__name__)
        return real(x)
    src = _recs()
    monkeypatch.setattr(dataclasses, "fields", counting)
    a = copy.deepcopy(src)
    n_std = len(calls)
    del calls[:]
    b = fastcopy.deepcopy(src)
    assert len(calls) == n_std > 0
    assert shape.shape(a, src) == shape.shape(b, src)


def test_replaced_hook_code_takes_the_python_road():
    import fastcopy
    src = _recs()
    gs = dataclasses._dataclass_getstate
    saved = gs.__code__

    def other(self):
        # runs with dataclasses' globals, where `fields` is defined
        return [getattr(self, f.name) for f in fields(self)][:-1] + ["changed"]  # noqa: F821
    gs.__code__ = other.__code__
    try:
        a, b = copy.deepcopy(src), fastcopy.deepcopy(src)
    finally:
        gs.__code__ = saved
    assert b[0].meta == "changed"
    assert shape.shape(a, src) == shape.shape(b, src)


@white_box
def test_native_road_runs_no_python_hook():
    import fastcopy
    src = _recs()
    fastcopy.deepcopy(src)
    names, res = python_calls(lambda: fastcopy.deepcopy(src))
    assert "_dataclass_getstate" not in names and "_dataclass_setstate" not in names
    std_names, _ = python_calls(lambda: copy.deepcopy(src))
    assert "_dataclass_getstate" in std_names
    assert shape.shape(res, src) == shape.shape(copy.deepcopy(src), src)


def test_memo_after_the_copy():
    def scenario(impl):
        src = _recs()
        memo = {}
        return Case(src, lambda: impl.deepcopy(src, memo), memo=memo)
    assert_equivalent(scenario)

    # the fresh-memo road, its memo shown at the end by a hook placed last
    def build(log, holder):
        return _recs() + [Peek(log, holder)]
    _check(build)


# ---------------------------------------------------------------------------------------------
# attrs: the slotted classes' generated __getstate__ / __setstate__
# ---------------------------------------------------------------------------------------------

try:
    import attrs
except ImportError:  # pragma: no cover - attrs is installed by CI
    attrs = None

needs_attrs = pytest.mark.skipif(attrs is None, reason="needs attrs")

if attrs is not None:
    @attrs.define
    class APoint:
        x: typing.Any
        y: typing.Any

    @attrs.define
    class ARec:
        id: int
        tags: list
        pos: APoint
        meta: dict = attrs.field(factory=dict)

    @attrs.define(weakref_slot=True)
    class AWeak:
        a: typing.Any

    @attrs.frozen(cache_hash=True)
    class AFrozen:
        a: typing.Any
        b: tuple = ()

    @attrs.define
    class ASub(ARec):
        more: typing.Any = None

    class AExtra(APoint):
        """A plain subclass with a slot of its own: it does not travel in the state."""
        __slots__ = ("extra",)

    @attrs.define
    class AOwnState(ARec):
        def __setstate__(self, state):
            object.__setattr__(self, "id", -1)
            object.__setattr__(self, "tags", state["tags"])
            object.__setattr__(self, "pos", state["pos"])
            object.__setattr__(self, "meta", {"own": True})


def _attrs_data(log=None, holder=None):
    shared = [1, [2]]
    out = [ARec(i, ["t", shared], APoint(i, shared), {"s": shared}) for i in range(3)]
    out += [AWeak([0]), AFrozen([1], (shared,)), ASub(5, [], APoint(None, None), more=[shared])]
    e = AExtra([7], 8)
    e.extra = "not copied"
    out.append(e)
    fz = AFrozen(("k", 1), (2,))
    hash(fz)                                  # fills the hash cache: reset to None in copies
    out.append(fz)
    if log is not None:
        out.append(ARec(9, [Peek(log, holder)], APoint(1, 2), {"after": [3]}))
    out.append(out[0])
    return out


@needs_attrs
def test_attrs_records():
    _check(lambda log, holder: _attrs_data(log, holder))


@needs_attrs
def test_attrs_self_reference():
    def build(log, holder):
        r = ARec(1, [], APoint(0, 0))
        r.meta = {"me": r, "peek": Peek(log, holder)}
        r.tags.append(r)
        return [r, r.tags]
    _check(build)


@needs_attrs
def test_attrs_subclass_with_its_own_setstate():
    def build(log, holder):
        return [AOwnState(1, [2], APoint(3, [4]), {"m": 5}), _attrs_data()]
    _check(build)


@needs_attrs
def test_attrs_unset_field():
    def scenario(impl):
        r = ARec.__new__(ARec)
        r.id = 1
        return Case(r, lambda: impl.deepcopy([r]))
    std = assert_equivalent(scenario)
    assert std["outcome"][:2] == ("raise", "AttributeError")


@needs_attrs
def test_attrs_closure_changed():
    # the field names live in the hooks' closure: read on every copy, as the hook reads them
    import fastcopy

    @attrs.define
    class C:
        a: list
        b: list
    cell = C.__getstate__.__closure__[0]
    saved = cell.cell_contents
    try:
        cell.cell_contents = ("a",)
        x = C([1], [2])
        a, b = copy.deepcopy(x), fastcopy.deepcopy(x)
    finally:
        cell.cell_contents = saved
    assert (a.a, getattr(a, "b", "unset")) == (b.a, getattr(b, "b", "unset")) == ([1], "unset")


@needs_attrs
def test_attrs_patched_global_takes_the_python_road(monkeypatch):
    import attr._make
    import fastcopy
    calls = []
    real = object.__setattr__

    class Counting:
        def __get__(self, obj, tp=None):
            def bound(name, value):
                calls.append(name)
                real(obj, name, value)
            return bound
    # spelled _obj_setattr before attrs 24.1
    name = "_OBJ_SETATTR" if hasattr(attr._make, "_OBJ_SETATTR") else "_obj_setattr"
    monkeypatch.setattr(attr._make, name, Counting())
    src = _attrs_data()
    a = copy.deepcopy(src)
    n_std = len(calls)
    del calls[:]
    b = fastcopy.deepcopy(src)
    assert len(calls) == n_std > 0
    assert shape.shape(a, src) == shape.shape(b, src)


@white_box
@needs_attrs
def test_attrs_native_road_runs_no_python_hook():
    import fastcopy
    src = _attrs_data()
    fastcopy.deepcopy(src)
    names, res = python_calls(lambda: fastcopy.deepcopy(src))
    assert "slots_getstate" not in names and "slots_setstate" not in names
    assert "slots_getstate" in python_calls(lambda: copy.deepcopy(src))[0]
    assert shape.shape(res, src) == shape.shape(copy.deepcopy(src), src)


# ---------------------------------------------------------------------------------------------
# pydantic v2: BaseModel.__deepcopy__ (the releases whose code fingerprint hooks.c knows)
# ---------------------------------------------------------------------------------------------

try:
    import pydantic
except ImportError:  # pragma: no cover - pydantic is installed by CI
    pydantic = None

needs_pydantic = pytest.mark.skipif(pydantic is None, reason="needs pydantic")

if pydantic is not None:
    class PInner(pydantic.BaseModel):
        v: list
        tag: str = "t"

    class POuter(pydantic.BaseModel):
        id: int
        inner: PInner
        items: list
        meta: dict = {}
        any: typing.Any = None

    class PPrivate(pydantic.BaseModel):
        a: list
        _cache: dict = pydantic.PrivateAttr(default_factory=dict)
        _unset: typing.Any = pydantic.PrivateAttr()

    class PExtra(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="allow")
        a: int

    class PFrozen(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(frozen=True)
        a: tuple
        b: typing.Any = None

    class PRoot(pydantic.RootModel[list]):
        pass

    class POwnHook(POuter):
        def __deepcopy__(self, memo=None):
            new = super().__deepcopy__(memo)
            object.__setattr__(new, "meta", {"own": True})
            return new


def _pyd_data(log=None, holder=None):
    shared = [1, [2]]
    inner = PInner(v=shared)
    out = [POuter(id=i, inner=inner, items=[shared, {"k": [i]}], meta={"s": shared})
           for i in range(3)]
    pp = PPrivate(a=[shared])
    pp._cache["x"] = [shared]
    out += [pp, PExtra(a=1, extra_list=[shared], extra_model=inner), PFrozen(a=(shared,)),
            PRoot([shared, inner]), POwnHook(id=9, inner=inner, items=[])]
    if log is not None:
        out.append(POuter(id=7, inner=PInner(v=[Peek(log, holder)]), items=[shared],
                          any=Peek(log, holder)))
    out.append(out[0])
    return out


@needs_pydantic
def test_pydantic_models():
    _check(lambda log, holder: _pyd_data(log, holder))


@needs_pydantic
def test_pydantic_patched():
    import fastcopy
    with fastcopy.patched():
        _check(lambda log, holder: _pyd_data(log, holder))


@needs_pydantic
def test_pydantic_self_reference():
    def build(log, holder):
        m = POuter(id=1, inner=PInner(v=[]), items=[])
        m.items.append(m)
        m.inner.v.append(m)
        m.meta["peek"] = Peek(log, holder)
        return [m, m.items]
    _check(build)


@needs_pydantic
def test_pydantic_instance_shadows_the_hook():
    def build(log, holder):
        m = POuter(id=1, inner=PInner(v=[1]), items=[])
        m.__dict__["__deepcopy__"] = lambda memo: "own"
        return [m, POuter(id=2, inner=PInner(v=[2]), items=[])]
    _check(build)


@needs_pydantic
def test_pydantic_unset_private_goes_through_getattr():
    def scenario(impl):
        m = PPrivate(a=[1])
        object.__delattr__(m, "__pydantic_private__")
        return Case(m, lambda: impl.deepcopy([m]))
    assert_equivalent(scenario)


@needs_pydantic
def test_pydantic_patched_global_takes_the_python_road(monkeypatch):
    import pydantic.main
    import fastcopy
    calls = []
    real = pydantic.main.deepcopy

    def counting(x, memo=None):
        calls.append(type(x).__name__)
        return real(x, memo)
    monkeypatch.setattr(pydantic.main, "deepcopy", counting)
    src = _pyd_data()
    a = copy.deepcopy(src)
    n_std = len(calls)
    del calls[:]
    b = fastcopy.deepcopy(src)
    assert len(calls) == n_std > 0
    assert shape.shape(a, src) == shape.shape(b, src)


@white_box
@needs_pydantic
def test_pydantic_native_road_runs_no_python_hook():
    import fastcopy
    src = [m for m in _pyd_data() if not isinstance(m, POwnHook)]
    assert any(isinstance(m, PRoot) for m in src)
    fastcopy.deepcopy(src)
    names, res = python_calls(lambda: fastcopy.deepcopy(src))
    assert "__deepcopy__" not in names
    assert "__deepcopy__" in python_calls(lambda: copy.deepcopy(src))[0]
    assert shape.shape(res, src) == shape.shape(copy.deepcopy(src), src)
    # a subclass's override runs as Python
    names, _ = python_calls(lambda: fastcopy.deepcopy(_pyd_data()))
    assert "__deepcopy__" in names


@needs_pydantic
def test_pydantic_root_models():
    """RootModel's own hook: the root copied through the memo, the fields set copied; the
    class attributes extra and private untouched (never set on the copy)."""
    class PRootOwn(pydantic.RootModel[list]):
        def __deepcopy__(self, memo=None):
            new = super().__deepcopy__(memo)
            new.root.append("own")
            return new

    class PRootDict(pydantic.RootModel[typing.Dict[str, typing.Any]]):
        pass

    def build(log, holder):
        shared = [1, [2]]
        inner = PInner(v=shared)
        r = PRoot([shared, inner])
        d = PRootDict({"a": shared, "r": r, "peek": Peek(log, holder)})
        selfref = PRoot([])
        selfref.root.append(selfref)
        return [r, d, PRootOwn([shared]), selfref, r.root, inner, PRoot([])]
    _check(build)
    with __import__("fastcopy").patched():
        _check(build)


@needs_pydantic
def test_pydantic_root_patched_global_takes_the_python_road(monkeypatch):
    import pydantic.root_model
    import fastcopy
    calls = []
    real = pydantic.root_model.copy

    def counting(x):
        calls.append(type(x).__name__)
        return real(x)
    monkeypatch.setattr(pydantic.root_model, "copy", counting)
    src = [PRoot([[1], {"a": 2}]), PRoot([])]
    a = copy.deepcopy(src)
    n_std = len(calls)
    del calls[:]
    b = fastcopy.deepcopy(src)
    assert len(calls) == n_std == 2
    assert shape.shape(a, src) == shape.shape(b, src)


# ---------------------------------------------------------------------------------------------
# pydantic: BaseModel.__copy__ / RootModel.__copy__ (copy.copy)
# ---------------------------------------------------------------------------------------------

def _shallow_cases(build):
    """assert_equivalent scenarios: copy.copy of every item of build(), then of the list."""
    def scenario(impl):
        src = build()
        return Case(src, lambda: [impl.copy(m) for m in src])
    return scenario


@needs_pydantic
def test_pydantic_shallow_copy():
    assert_equivalent(_shallow_cases(_pyd_data))
    import fastcopy
    with fastcopy.patched():
        assert_equivalent(_shallow_cases(_pyd_data))


@needs_pydantic
def test_pydantic_shallow_copy_overrides():
    class OwnCopy(POuter):
        def __copy__(self):
            return "own"

    class RootOwnCopy(PRoot):
        def __copy__(self):
            new = super().__copy__()
            new.root.append("own")
            return new
    assert_equivalent(_shallow_cases(lambda: [OwnCopy(id=1, inner=PInner(v=[]), items=[]),
                                              RootOwnCopy([1, [2]]), PRoot([[3]])]))


@needs_pydantic
def test_pydantic_shallow_copy_errors_and_unset():
    def unset_private():
        m = PPrivate(a=[1])
        object.__delattr__(m, "__pydantic_private__")
        return [m]

    def rootless():
        r = PRoot([1])
        del r.__dict__["root"]
        return [r]

    def unset_fields_set():
        m = PInner(v=[1])
        object.__delattr__(m, "__pydantic_fields_set__")
        return [m]
    for build in (unset_private, rootless, unset_fields_set):
        assert_equivalent(_shallow_cases(build))


@needs_pydantic
def test_pydantic_shallow_copy_patched_global(monkeypatch):
    import pydantic.main
    import fastcopy
    calls = []
    real = pydantic.main.copy

    def counting(x):
        calls.append(type(x).__name__)
        return real(x)
    monkeypatch.setattr(pydantic.main, "copy", counting)
    src = [POuter(id=1, inner=PInner(v=[]), items=[[1]]), PInner(v=[2])]
    a = [copy.copy(m) for m in src]
    n_std = len(calls)
    del calls[:]
    b = [fastcopy.copy(m) for m in src]
    assert len(calls) == n_std > 0
    assert shape.shape(a, src) == shape.shape(b, src)


@white_box
@needs_pydantic
def test_pydantic_shallow_copy_runs_no_python_hook():
    import fastcopy
    src = _pyd_data()
    [fastcopy.copy(m) for m in src]
    names, res = python_calls(lambda: [fastcopy.copy(m) for m in src])
    assert "__copy__" not in names
    assert "__copy__" in python_calls(lambda: [copy.copy(m) for m in src])[0]
    assert shape.shape(res, src) == shape.shape([copy.copy(m) for m in src], src)


# ---------------------------------------------------------------------------------------------
# A caller's dict as the memo (FC_MEMO_DICT): the roads write each step into it as the stdlib does
# ---------------------------------------------------------------------------------------------

def _all_hook_data(log=None, holder=None):
    out = _recs(log, holder)
    if attrs is not None:
        out += _attrs_data(log, holder)
    if pydantic is not None:
        out += _pyd_data(log, holder)
    return out


def _seeded(seed):
    """Scenarios with a caller's memo that holds seed(src) -> {key: value} from the start."""
    def scenario(impl):
        src = _all_hook_data()
        memo = dict(seed(src))
        return Case(src, lambda: impl.deepcopy(src, memo), memo=memo)
    return scenario


def test_caller_memo_with_the_roads():
    assert_equivalent(_seeded(lambda src: {}))
    # entries of an earlier copy with the same memo, as model_copy(update=...) leaves them
    assert_equivalent(_seeded(lambda src: {id(src[0]): "seeded-first", id(src[1].pos): "pos"}))


def test_caller_memo_seeded_with_a_class():
    """_reconstruct deep-copies (cls,) through the memo: a seeded class changes the result
    (dataclass and attrs roads step aside); pydantic's hook never copies its class."""
    class Fake:
        pass

    def seed(src):
        out = {id(Rec): Fake, id(Point): Fake}
        if attrs is not None:
            out[id(ARec)] = Fake
        if pydantic is not None:
            out[id(POuter)] = Fake
        return out
    assert_equivalent(_seeded(seed))


@needs_pydantic
def test_caller_memo_seeded_with_none():
    """deepcopy(self.__pydantic_extra__, memo) looks None up too: a seeded entry is used."""
    assert_equivalent(_seeded(lambda src: {id(None): "not-none", id(True): "t"}))


@needs_pydantic
def test_pydantic_model_copy_deep():
    """model_copy(deep=True) hands the hook's own fresh dict to deepcopy (patched in)."""
    import fastcopy

    def scenario(impl):
        src = _pyd_data()

        def call():
            if impl is copy:
                return [m.model_copy(deep=True) for m in src]
            with fastcopy.patched():
                return [m.model_copy(deep=True) for m in src]
        return Case(src, call)
    assert_equivalent(scenario)


def _pyd_release():
    return tuple(int(p) for p in pydantic.VERSION.split(".")[:2])


@needs_pydantic
def test_pydantic_models_met_again_through_their_dict():
    """A model reached again through its own fields: 2.14's hook has stored memo[id(self)] and
    the copy is found; 2.5-2.13's stores nothing until deepcopy() does after it, so the model is
    copied a second time, that copy sharing the first's (memoized) __dict__ copy -- and the
    outer store replaces the inner one.  RootModel's alike."""
    def build(log, holder):
        m = POuter(id=1, inner=PInner(v=[]), items=[], meta={"peek": Peek(log, holder)})
        m.items.append(m)
        m.inner.v.append([m, m.inner])
        r = PRoot([1])
        r.root.append(r)
        r.root.append({"m": m, "peek": Peek(log, holder)})
        return [m, r, m.inner, r.root]
    _check(build)


@needs_pydantic
def test_pydantic_hook_mid_copy_writes_the_memo_and_frees_the_source():
    """A field's own __deepcopy__, run while its model is being copied, copies the model again
    through the memo, then stores a sentinel under the model's id, empties the model's last
    field and replaces it (freeing the list): the memo and results as the stdlib's, whether the
    model's hook stored itself first (2.14) or leaves the store to deepcopy() after it
    (2.5-2.13, which then overwrites the hook's entries), in a child process."""
    code = '''
import copy, sys
sys.path.insert(0, %r)
import pydantic, fastcopy
from shape import Case, assert_equivalent, both_memo_modes

class Meddler:
    def __init__(self, holder):
        self.holder = holder
    def __deepcopy__(self, memo):
        m = self.holder.pop()
        again = copy.deepcopy(m, memo)
        memo[id(m)] = "sentinel"
        src = object.__getattribute__(m, "__dict__")
        src["tail"].clear()
        src["tail"] = ["new"]       # the old list freed; the dict's size unchanged
        return ("meddled", again is m, type(again).__name__)

class M(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)
    head: list
    hook: object = None
    tail: list = []

class R(pydantic.RootModel[list]):
    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)

def build():
    holder = []
    m = M(head=[1, [2]], tail=[[3], [4]])
    m.hook = Meddler(holder)
    holder.append(m)
    holder2 = []
    r = R([[5], None])
    r.root[1] = Meddler(holder2)
    holder2.append(r)
    return [m, r], []

for sc in both_memo_modes(build):
    assert_equivalent(sc)
print("ok")
''' % __import__("os").path.dirname(__import__("os").path.abspath(__file__))
    proc = shape.run_python(code)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr


@needs_pydantic
def test_pydantic_private_values_met_again():
    """__pydantic_private__ is copied as a fresh dict each time: a private value that is the model
    itself recurses without end in 2.5-2.13 (RecursionError, as the stdlib's); through a list it
    stops at the second level, the list being memoized."""
    def through_list(log, holder):
        m = PPrivate(a=[1])
        m._cache["me"] = [m, Peek(log, holder)]
        return [m, m._cache]
    _check(through_list)

    def direct(impl):
        m = PPrivate(a=[2])
        m._cache["me"] = m
        object.__setattr__(m, "__pydantic_private__", {"_cache": m, "_unset": 1})
        return Case(m, lambda: impl.deepcopy(m))
    if _pyd_release() >= (2, 14):
        assert_equivalent(direct)
    else:
        # the same error; how many levels ran before it is the recursion limit's business
        # (docs/semantics.md): the model levels count towards it one each here
        outs = [shape.observe(impl, direct)["outcome"][:2] for impl in (copy, shape.fastcopy_module())]
        assert outs[0] == outs[1] == ("raise", "RecursionError")


@white_box
def test_caller_memo_runs_no_python_hook():
    import fastcopy
    src = [r for r in _all_hook_data() if not isinstance(r, OwnState)]
    if pydantic is not None:
        src = [m for m in src if not isinstance(m, POwnHook)]
    if attrs is not None:
        src = [m for m in src if not isinstance(m, AOwnState)]
    fastcopy.deepcopy(src, {})
    names, res = python_calls(lambda: fastcopy.deepcopy(src, {}))
    for hook in ("_dataclass_getstate", "_dataclass_setstate", "slots_getstate",
                 "slots_setstate", "__deepcopy__"):
        assert hook not in names
    memo_fc, memo_std = {}, {}
    assert shape.shape(fastcopy.deepcopy(src, memo_fc), src) == \
        shape.shape(copy.deepcopy(src, memo_std), src)
    assert len(memo_fc) == len(memo_std)


# ---------------------------------------------------------------------------------------------
# scikit-learn: BaseEstimator.__getstate__ / __setstate__
# ---------------------------------------------------------------------------------------------

try:
    import sklearn.base
except ImportError:  # pragma: no cover - scikit-learn is installed by CI
    sklearn = None

needs_sklearn = pytest.mark.skipif(sklearn is None, reason="needs scikit-learn")

if sklearn is not None:
    class OutsideEstimator(sklearn.base.BaseEstimator):
        """Defined outside sklearn: its state is the live __dict__, no _sklearn_version."""

        def __init__(self, alpha=1.0, parts=None):
            self.alpha = alpha
            self.parts = parts

    class SetstateMixin:
        def __setstate__(self, state):
            state = dict(state, restored=True)
            self.__dict__.update(state)

    class WithMixin(sklearn.base.BaseEstimator, SetstateMixin):
        def __init__(self, a=None):
            self.a = a

    class Empty(sklearn.base.BaseEstimator):
        pass


def _sk_data(log=None, holder=None):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    import numpy as np
    rng = np.random.RandomState(0)
    X, y = rng.randn(40, 3), np.arange(40) % 2
    pipe = Pipeline([("s", StandardScaler()), ("m", LogisticRegression())]).fit(X, y)
    shared = [1, [2]]
    out = [pipe, OutsideEstimator(parts=[shared, {"k": shared}]), WithMixin(a=[shared]), Empty(),
           OutsideEstimator(parts=pipe)]
    if log is not None:
        out.append(OutsideEstimator(alpha=2.0, parts=[Peek(log, holder), shared]))
    out.append(out[1])
    return out


@needs_sklearn
def test_sklearn_estimators():
    _check(lambda log, holder: _sk_data(log, holder))


@needs_sklearn
def test_sklearn_instance_attribute_shadows():
    def build(log, holder):
        a = OutsideEstimator(parts=[1])
        a.__dict__["__slots__"] = ("x",)            # the hook raises its TypeError
        return [a]
    def scenario(impl):
        src, log = build(None, None), []
        return Case(src, lambda: impl.deepcopy(src), log=log)
    std = assert_equivalent(scenario)
    assert std["outcome"][:2] == ("raise", "TypeError")


@needs_sklearn
def test_sklearn_version_key_in_an_outside_estimator():
    def build(log, holder):
        a = OutsideEstimator(parts=[1])
        a._sklearn_version = "0.1"                  # kept: not a sklearn.* class
        return [a, Peek(log, holder)]
    _check(build)


@white_box
@needs_sklearn
def test_sklearn_native_road_runs_no_python_hook():
    import fastcopy
    src = [e for e in _sk_data() if not isinstance(e, WithMixin)]
    fastcopy.deepcopy(src)
    names, res = python_calls(lambda: fastcopy.deepcopy(src))
    assert "__getstate__" not in names and "__setstate__" not in names
    assert "__getstate__" in python_calls(lambda: copy.deepcopy(src))[0]
    # a mixin's __setstate__ after BaseEstimator: super() would find it, the Python road runs
    names, _ = python_calls(lambda: fastcopy.deepcopy(WithMixin(a=[1])))
    assert "__setstate__" in names


@needs_pydantic
def test_pydantic_getattr_mutates_the_source_mid_copy():
    """An unset __pydantic_private__ read through a model's own __getattr__ that empties and
    drops a field of the source while the road runs: deepcopy and copy as the stdlib's, in a
    child process (user code frees what the copy was reading)."""
    code = '''
import copy, sys, typing
sys.path.insert(0, %r)
import pydantic, fastcopy
from shape import Case, assert_equivalent

class Hostile(pydantic.BaseModel):
    a: list
    _p: typing.Any = pydantic.PrivateAttr(default=None)
    def __getattr__(self, name):
        if name == "__pydantic_private__":
            src = object.__getattribute__(self, "__dict__")
            src["a"].clear()
            src.pop("a", None)
            return {"_p": [1, 2]}
        return super().__getattr__(name)

def make():
    m = Hostile(a=[[1], [2]])
    object.__delattr__(m, "__pydantic_private__")
    return m

for op in ("deepcopy", "copy"):
    def scenario(impl, op=op):
        m = make()
        return Case([m], lambda: [getattr(impl, op)(m), m.__dict__])
    assert_equivalent(scenario)
print("ok")
''' % __import__("os").path.dirname(__import__("os").path.abspath(__file__))
    proc = shape.run_python(code)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr
