"""Print the code fingerprints by which src/hooks.c recognises library hooks, for the running
interpreter and the installed libraries: the values its tables (fc_dc_known, fc_at_known,
fc_pd_known, fc_pr_known, fc_pc_known, fc_sk_known) hold once a release's code has been read
and verified to do what the native road does.  Run with each CPython (the extension built in place for it):

    python scripts/hook_fingerprints.py
"""
import sys

sys.path.insert(0, ".")
import fastcopy._fastcopy as core  # noqa: E402


def show(label, fn):
    fp = core._code_fingerprint(fn)
    print("%-44s 3.%d  %s" % (label, sys.version_info[1], "none" if fp is None else "0x%016xull" % fp))


import dataclasses  # noqa: E402

show("dataclasses._dataclass_getstate", dataclasses._dataclass_getstate)
show("dataclasses._dataclass_setstate", dataclasses._dataclass_setstate)
show("dataclasses.fields", dataclasses.fields)
try:
    import attr
    import attr._make as m
except ImportError:
    print("attrs not installed")
else:
    codes = {c.co_name: c for c in m._ClassBuilder._make_getstate_setstate.__code__.co_consts
             if hasattr(c, "co_name")}
    show("attrs %s slots_getstate" % attr.__version__, codes["slots_getstate"])
    show("attrs %s slots_setstate" % attr.__version__, codes["slots_setstate"])
try:
    import pydantic
except ImportError:
    print("pydantic not installed")
else:
    show("pydantic %s BaseModel.__deepcopy__" % pydantic.VERSION, pydantic.BaseModel.__deepcopy__)
    import pydantic.root_model
    show("pydantic %s RootModel.__deepcopy__" % pydantic.VERSION,
         pydantic.root_model.RootModel.__deepcopy__)
    show("pydantic %s BaseModel.__copy__" % pydantic.VERSION, pydantic.BaseModel.__copy__)
    show("pydantic %s RootModel.__copy__" % pydantic.VERSION,
         pydantic.root_model.RootModel.__copy__)
try:
    import sklearn
    import sklearn.base
except ImportError:
    print("scikit-learn not installed")
else:
    show("scikit-learn %s BaseEstimator.__getstate__" % sklearn.__version__,
         sklearn.base.BaseEstimator.__getstate__)
    show("scikit-learn %s BaseEstimator.__setstate__" % sklearn.__version__,
         sklearn.base.BaseEstimator.__setstate__)
