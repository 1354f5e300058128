"""patch()/unpatch(): the stdlib's own function objects reach fastcopy (through their vectorcall,
with no Python frame), keep the stdlib's signature and errors, and are restored exactly."""
import copy
import inspect
import sys
import sysconfig
from copy import deepcopy as early_deepcopy, copy as early_copy

import pytest

from conftest import needs_fastcopy

pytestmark = needs_fastcopy

STD_DEEPCOPY_CODE = copy.deepcopy.__code__
STD_COPY_CODE = copy.copy.__code__
STD_DEFAULTS = copy.deepcopy.__defaults__

# the running copy.deepcopy's own parameters: (x, memo=None, _nil=[]) through 3.14, no _nil
# from 3.15
HAS_NIL = "_nil" in inspect.signature(copy.deepcopy).parameters


class Counted:
    """Counts how often each implementation's walk reaches it: fastcopy's native
    path never calls __reduce_ex__ for it, the stdlib always does."""

    calls = 0

    def __deepcopy__(self, memo):
        Counted.calls += 1
        return self


def _through_fastcopy(fn):
    # a fastcopy-only effect: a 1,000,000-deep list copies (the stdlib's recursion fails)
    deep = []
    for _ in range(100000):
        deep = [deep]
    try:
        fn(deep)
    except RecursionError:
        return False
    return True


def test_patch_reaches_early_references(fc):
    with fc.patched():
        assert _through_fastcopy(early_deepcopy)
        assert _through_fastcopy(copy.deepcopy)
        assert early_deepcopy is copy.deepcopy
        for _ in range(2000):          # long enough for the interpreter to specialize calls
            early_deepcopy([1])
        assert _through_fastcopy(early_deepcopy)
    assert not _through_fastcopy(early_deepcopy)
    assert copy.deepcopy.__code__ is STD_DEEPCOPY_CODE
    assert copy.copy.__code__ is STD_COPY_CODE
    assert copy.deepcopy.__defaults__ is STD_DEFAULTS
    assert not hasattr(copy, "_fastcopy_deepcopy")


@pytest.mark.parametrize("call", [
    lambda f: f(),
    lambda f: f(1, {}, [], 4),
    lambda f: f(1, share=None),
    lambda f: f(1, memo={}, memo2={}),
    lambda f: f(x=[1], memo=None),
    lambda f: f([1], None, []),
    lambda f: f([1], x=2),
])
def test_patched_deepcopy_signature(fc, call):
    _same_outcome_patched(fc, lambda: call(copy.deepcopy))


@pytest.mark.parametrize("call", [
    lambda f: f(), lambda f: f(1, 2), lambda f: f(x=[1]), lambda f: f([1], deep=["a"]),
])
def test_patched_copy_signature(fc, call):
    _same_outcome_patched(fc, lambda: call(copy.copy))


def _same_outcome_patched(fc, run):
    """run() gives the same result or TypeError message unpatched and patched."""
    def outcome():
        try:
            return ("ok", run())
        except TypeError as e:
            return ("TypeError", str(e))
    std = outcome()
    with fc.patched():
        got = outcome()
    assert got == std


def test_code_replaced_by_someone_else_wins(fc):
    # another patcher that sets copy.deepcopy.__code__ after us gets its code run (a code with
    # the stdlib's own parameters: 3.15 has no _nil)
    if HAS_NIL:
        def other(x, memo=None, _nil=[]):
            return "other"
    else:
        def other(x, memo=None):
            return "other"
    with fc.patched():
        mine = copy.deepcopy.__code__
        copy.deepcopy.__code__ = other.__code__
        try:
            assert copy.deepcopy([1]) == "other"
            assert early_deepcopy([1]) == "other"
        finally:
            copy.deepcopy.__code__ = mine
        assert _through_fastcopy(copy.deepcopy)
    assert copy.deepcopy([1]) == [1]


def test_nil_and_memo_pass_through(fc):
    x = [1]
    nil = object()
    with fc.patched():
        if HAS_NIL:
            assert copy.deepcopy(x, {id(x): nil}, nil) == [1]
        else:
            with pytest.raises(TypeError, match="positional argument"):
                copy.deepcopy(x, {id(x): nil}, nil)
        assert copy.deepcopy(x, {id(x): "hit"}) == "hit"
        memo = {}
        y = copy.deepcopy(x, memo=memo)
        assert memo[id(x)] is y and memo[id(memo)] == [x]


@pytest.mark.skipif(bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                    reason="the vectorcall patch is for GIL builds only (module.c): "
                           "a function's vectorcall field is not swapped under other threads")
def test_vectorcall_skips_the_trampoline(fc):
    import fastcopy._fastcopy as core
    assert core._patch_vectorcall(copy.deepcopy, copy.copy, False) is True
    with fc.patched():
        # no frame of copy.py between the caller and fastcopy: a hook sees its caller's frame
        seen = []

        class Hook:
            def __deepcopy__(self, memo):
                f = sys._getframe(1)
                seen.append(f.f_code.co_name)
                return self
        copy.deepcopy(Hook())
        copy.deepcopy(Hook(), memo={})
    if (3, 11) <= sys.version_info < (3, 12):
        # 3.11 pushes the trampoline's frame for calls from Python code, whatever the
        # function's vectorcall says; from C (here: map) the vectorcall is used
        assert seen == ["deepcopy", "deepcopy"], seen
        seen.clear()
        with fc.patched():
            list(map(copy.deepcopy, [Hook()]))
    assert seen and all(name != "deepcopy" for name in seen), seen


def test_patched_copy_in_a_finalizer_at_interpreter_exit():
    # the patched functions keep the module alive: a copy made by a finalizer during
    # interpreter teardown still works (no freed module state, no crash)
    from shape import run_python
    r = run_python(
        "import fastcopy, copy, sys\n"
        "fastcopy.patch()\n"
        "class D:\n"
        "    def __del__(self):\n"
        "        copy.deepcopy([1, {'a': [2]}]); copy.copy([3])\n"
        "d = D(); d.me = d\n"
        "sys.modules['__main__'].keep = d\n"
        "print('ok')\n")
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "ok"
