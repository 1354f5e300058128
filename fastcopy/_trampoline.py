"""The code ``patch()`` gives the stdlib's ``copy.deepcopy`` and ``copy.copy`` (see
fastcopy/__init__.py, "Patching").

Only these functions' ``__code__`` is used, and it runs with the copy module's globals, where
``patch()`` puts ``_fastcopy_deepcopy`` / ``_fastcopy_copy``.  The code lives in this file, not in
a string compiled under copy.py's name, so that a traceback through a patched call points at the
line that made it.  The signatures are the stdlib's.
"""
# mypy: ignore-errors
# (the two names are the copy module's globals, undefined here)


def deepcopy(x, memo=None, _nil=[]):
    return _fastcopy_deepcopy(x, memo, _nil)


# 3.15's copy.deepcopy has no _nil parameter (its memo is read with `d in memo`): the code
# given to it must have its signature
def deepcopy_no_nil(x, memo=None):
    return _fastcopy_deepcopy(x, memo)


def copy(x):
    return _fastcopy_copy(x)
