"""fastcopy: exact, fast drop-in replacements for copy.deepcopy and copy.copy.

``fastcopy.deepcopy(x, memo=None)`` and ``fastcopy.copy(x)`` give the same
results as the stdlib's functions on the running interpreter (types, values,
aliasing, memo contents, hook calls, errors), computed in C.
``fastcopy.patch()`` makes ``copy.deepcopy`` / ``copy.copy`` use them.

PYTEST_DONT_REWRITE
"""
import contextlib as _contextlib
import copy as _copy
import sys as _sys



def _installed_elsewhere():
    """The spec of an installed fastcopy with its C core, when this package is
    the unbuilt folder of a source checkout that shadows it on sys.path (''
    under `python -m`, a PYTHONPATH): `pip install .` then pytest in the
    checkout.  None otherwise."""
    import importlib.machinery
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    if not (os.path.isfile(os.path.join(root, "setup.py"))
            and os.path.isfile(os.path.join(root, "src", "_fastcopy.c"))):
        return None
    real = os.path.realpath
    paths = [p for p in _sys.path if real(p or os.getcwd()) != real(root)]
    spec = importlib.machinery.PathFinder.find_spec(__name__, paths)
    locs = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locs or real(locs[0]) == real(here):
        return None
    try:
        names = os.listdir(locs[0])
    except OSError:
        return None
    if not any(n.startswith("_fastcopy.") and n.endswith((".so", ".pyd")) for n in names):
        return None
    return spec


try:
    from . import _fastcopy
except ImportError as _e:  # never a silent slow fallback
    _spec = _installed_elsewhere()
    if _spec is None:
        raise ImportError(
            "fastcopy's C extension (fastcopy._fastcopy) is not built or not "
            "importable: install with `python -m pip install -e .` or build in "
            "place with `python setup.py build_ext --inplace` (%s)" % (_e,)) from _e
    # The installed package takes this one's place: the import system hands
    # out what sys.modules holds once this file has run, and the relative
    # imports below resolve to the installed modules (tests/source_tree.py).
    import importlib.util as _ilu
    _mod = _ilu.module_from_spec(_spec)
    _sys.modules[__name__] = _mod
    try:
        _spec.loader.exec_module(_mod)
    except BaseException:
        del _sys.modules[__name__]
        raise
    from . import _fastcopy
from ._fastcopy import (configure, copy, cowdict, deepcopy, replicate, trim)
from ._snapshot import snapshot
# the C core compares stdlib methods with these functions' code (src/plan.c, fc_func_is): they
# must exist before the first copy, which compiles nothing
from . import _reference  # noqa: F401

# The profiler (fastcopy/_profile.py) is imported at first use, not with fastcopy: every module
# imported here is live for the whole program, and each one makes the collector's full passes
# longer (measured: ~5% more instructions per small deepcopy when _profile came with fastcopy).
# configure(warn_slow=...) imports it from C when it is first switched on.
_LAZY = {"profile", "CopySite", "SlowCopyWarning"}


def __getattr__(name):
    if name in _LAZY:
        from . import _profile
        value = getattr(_profile, name)
        globals()[name] = value
        return value
    raise AttributeError("module %r has no attribute %r" % (__name__, name))

__all__ = ["Error", "error", "copy", "cowdict", "deepcopy", "replicate", "snapshot", "patch", "unpatch",
           "patched", "is_patched", "configure", "trim", "backends", "profile", "CopySite",
           "SlowCopyWarning"]
__version__ = "0.1.0"

#: The very class ``copy.Error``: ``except copy.Error`` catches fastcopy's errors.
Error = _copy.Error
error = Error

if _sys.version_info >= (3, 13):
    #: ``copy.replace`` itself: it only looks up ``__replace__`` and calls it.
    replace = _copy.replace
    __all__.append("replace")

# --------------------------------------------------------------------------
# Patching
#
# patch() retargets the stdlib's own function objects: their __code__
# becomes a one-line trampoline into fastcopy.  copy.deepcopy stays the same
# object (same __module__, __name__, __defaults__, signature), so code that
# did `from copy import deepcopy` before patch(), and the stdlib's internal
# `deepcopy=deepcopy` default arguments, reach fastcopy too.  The
# functions' vectorcall goes straight into C as well (src/module.c), so a
# patched call costs about what fastcopy.deepcopy does -- except on 3.11,
# whose interpreter runs a Python function's code for calls from Python
# without looking at its vectorcall, so there the frame stays.  unpatch()
# restores the original vectorcall and code objects exactly.
# --------------------------------------------------------------------------

_STD_DEEPCOPY = _copy.deepcopy
_STD_COPY = _copy.copy
_STD_DEEPCOPY_CODE = _STD_DEEPCOPY.__code__
_STD_COPY_CODE = _STD_COPY.__code__
_G_DEEP = "_fastcopy_deepcopy"
_G_COPY = "_fastcopy_copy"


def _trampolines():
    # Their names (_G_DEEP, _G_COPY) are looked up in the copy module, where
    # patch() puts them.  A real file, so tracebacks show a real line.
    from . import _trampoline
    # the running copy.py's own signature: (x, memo=None, _nil=[]) through 3.14, (x, memo=None)
    # from 3.15
    has_nil = "_nil" in _STD_DEEPCOPY_CODE.co_varnames[:_STD_DEEPCOPY_CODE.co_argcount]
    deep = _trampoline.deepcopy.__code__
    if not has_nil:
        # named as the function it becomes the code of, for tracebacks
        deep = _trampoline.deepcopy_no_nil.__code__.replace(co_name="deepcopy",
                                                           co_qualname="deepcopy")
    return deep, _trampoline.copy.__code__


_TRAMP_DEEPCOPY, _TRAMP_COPY = _trampolines()
_patched = False


def is_patched():
    """True while copy.deepcopy / copy.copy are fastcopy's."""
    return _patched


def patch():
    """Make copy.deepcopy and copy.copy use fastcopy (idempotent).

    The stdlib's function objects themselves are redirected, so references
    taken before patch() reach fastcopy too.
    """
    global _patched
    if _patched:
        return
    setattr(_copy, _G_DEEP, deepcopy)
    setattr(_copy, _G_COPY, copy)
    _STD_DEEPCOPY.__code__ = _TRAMP_DEEPCOPY
    _STD_COPY.__code__ = _TRAMP_COPY
    # calls skip the trampoline's frame (module.c, "patch()")
    _fastcopy._patch_vectorcall(_STD_DEEPCOPY, _STD_COPY, True)
    _patched = True


def unpatch():
    """Restore the stdlib's copy.deepcopy and copy.copy exactly (idempotent)."""
    global _patched
    if not _patched:
        return
    _fastcopy._patch_vectorcall(_STD_DEEPCOPY, _STD_COPY, False)
    _STD_DEEPCOPY.__code__ = _STD_DEEPCOPY_CODE
    _STD_COPY.__code__ = _STD_COPY_CODE
    for name in (_G_DEEP, _G_COPY):
        _copy.__dict__.pop(name, None)
    _patched = False


@_contextlib.contextmanager
def patched():
    """``with fastcopy.patched():`` -- patch for the block, then restore
    whatever was in place before (nesting is fine)."""
    was = _patched
    patch()
    try:
        yield
    finally:
        if not was:
            unpatch()


def backends():
    """What the buffer backends see and do: numpy (version, native path,
    threads, pool), torch (version, when imported) and CUDA (driver found or
    why not).  Imports nothing."""
    info = _fastcopy.backends()   # one entry per backend in the C registry
    torch = _sys.modules.get("torch")
    from ._snapshot import _cuda_backend_info
    cuda = info["cuda"]
    cuda.update(_cuda_backend_info())   # what the driver says
    # CUDA tensors copied natively: switched on, torch's path is ours, and
    # both ends present
    cuda["tensors"] = bool(
        info["torch"]["cuda"] and info["torch"]["native"] and cuda.get("available")
        and hasattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream"))
    return info
