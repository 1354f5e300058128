"""The code fingerprints by which src/hooks.c recognises library hooks, and which releases of
each library its tables cover on the running CPython.

    python scripts/hook_fingerprints.py
        the hooks of the installed libraries (and dataclasses): fingerprint, and whether the
        extension built in place for this interpreter lists it (and as which variant)

    python scripts/hook_fingerprints.py --releases [--json FILE] [LIB==VERSION ...]
        each release of RELEASES below (or those named), read straight from its wheel: the
        wheel is downloaded once (pip download, into build/hook-wheels), the
        module's source compiled with this interpreter -- as importing it would, nothing of it
        run -- and the hooks' code objects found by name and fingerprinted.  Prints, per hook,
        the releases that share each fingerprint; --json saves them for --markdown.

    python scripts/hook_fingerprints.py --markdown A.json B.json ...
        the table of docs/hooks.md ("Which releases take the native road") from the --json files
        of several interpreters: release by CPython, whether its hooks are listed.

    python scripts/hook_fingerprints.py --c-table A.json B.json ...
        the rows for src/hooks.c's tables: one per distinct code and CPython, with the releases
        it covers (paste them only after reading that code: a listed fingerprint is a promise
        that the native road does what that code does).

scripts/hook_table.sh runs --releases with every CPython here (3.14 and 3.15 in the chroot) and
prints the markdown.  The extension must be built in place for the running interpreter.
"""
import argparse
import functools
import json
import os
import subprocess
import sys
import warnings
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import fastcopy._fastcopy as core  # noqa: E402

# The releases whose hooks are read: every minor release line still installed in the wild,
# at its last patch release.
RELEASES = {
    "pydantic": ["2.5.3", "2.6.4", "2.7.4", "2.8.2", "2.9.2", "2.10.6", "2.11.7", "2.12.5",
                 "2.13.4", "2.14.4"],
    "attrs": ["22.1.0", "22.2.0", "23.1.0", "23.2.0", "24.1.0", "24.2.0", "24.3.0", "25.1.0",
              "25.3.0", "25.4.0", "26.1.0"],
    "scikit-learn": ["1.3.2", "1.4.2", "1.5.2", "1.6.1", "1.7.2", "1.8.0", "1.9.1"],
}

# hook label -> (distribution, file in the wheel, path of code names from the module's code,
# src/hooks.c table, column in that table)
HOOKS = [
    ("BaseModel.__deepcopy__", "pydantic", "pydantic/main.py", ("BaseModel", "__deepcopy__"),
     "pd", 0),
    ("RootModel.__deepcopy__", "pydantic", "pydantic/root_model.py",
     ("RootModel", "__deepcopy__"), "pr", 0),
    ("BaseModel.__copy__", "pydantic", "pydantic/main.py", ("BaseModel", "__copy__"), "pc", 0),
    ("RootModel.__copy__", "pydantic", "pydantic/root_model.py", ("RootModel", "__copy__"),
     "pc", 1),
    ("slots_getstate", "attrs", "attr/_make.py",
     ("_ClassBuilder", "_make_getstate_setstate", "slots_getstate"), "at", 0),
    ("slots_setstate", "attrs", "attr/_make.py",
     ("_ClassBuilder", "_make_getstate_setstate", "slots_setstate"), "at", 1),
    ("BaseEstimator.__getstate__", "scikit-learn", "sklearn/base.py",
     ("BaseEstimator", "__getstate__"), "sk", 0),
    ("BaseEstimator.__setstate__", "scikit-learn", "sklearn/base.py",
     ("BaseEstimator", "__setstate__"), "sk", 1),
]

# in the checkout, so that the chroot of scripts/sid_chroot.sh (3.14, 3.15) reads the same wheels
CACHE = os.environ.get("FASTCOPY_HOOK_WHEELS") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "build", "hook-wheels")
MINOR = sys.version_info[1]


@functools.lru_cache(maxsize=None)
def _tables():
    return core._known_fingerprints()


def known(table, col, fp):
    """The variant src/hooks.c lists fp as (0 the newest), for this CPython and that table's
    column, or None."""
    for variant, fps in _tables().get(table, ()):
        if col < len(fps) and fps[col] == fp:
            return variant
    return None


def fmt(fp):
    return "none" if fp is None else "0x%016x" % fp


# ---- installed libraries --------------------------------------------------------------------

def show(label, fn, table, col):
    fp = core._code_fingerprint(fn)
    v = known(table, col, fp) if fp is not None else None
    print("%-48s 3.%d  %s  %s" % (label, MINOR, fmt(fp),
                                  "not listed" if v is None else "listed (variant %d)" % v))


def installed():
    import dataclasses
    show("dataclasses._dataclass_getstate", dataclasses._dataclass_getstate, "dc", 0)
    show("dataclasses._dataclass_setstate", dataclasses._dataclass_setstate, "dc", 1)
    show("dataclasses.fields", dataclasses.fields, "dc", 2)
    try:
        import attr
        import attr._make as m
    except ImportError:
        print("attrs not installed")
    else:
        codes = {c.co_name: c for c in m._ClassBuilder._make_getstate_setstate.__code__.co_consts
                 if hasattr(c, "co_name")}
        show("attrs %s slots_getstate" % attr.__version__, codes["slots_getstate"], "at", 0)
        show("attrs %s slots_setstate" % attr.__version__, codes["slots_setstate"], "at", 1)
    try:
        import pydantic
        import pydantic.root_model as rm
    except ImportError:
        print("pydantic not installed")
    else:
        v = pydantic.VERSION
        show("pydantic %s BaseModel.__deepcopy__" % v, pydantic.BaseModel.__deepcopy__, "pd", 0)
        show("pydantic %s RootModel.__deepcopy__" % v, rm.RootModel.__deepcopy__, "pr", 0)
        show("pydantic %s BaseModel.__copy__" % v, pydantic.BaseModel.__copy__, "pc", 0)
        show("pydantic %s RootModel.__copy__" % v, rm.RootModel.__copy__, "pc", 1)
    try:
        import sklearn
        import sklearn.base
    except ImportError:
        print("scikit-learn not installed")
    else:
        be = sklearn.base.BaseEstimator
        show("scikit-learn %s BaseEstimator.__getstate__" % sklearn.__version__,
             be.__getstate__, "sk", 0)
        show("scikit-learn %s BaseEstimator.__setstate__" % sklearn.__version__,
             be.__setstate__, "sk", 1)


# ---- releases, from their wheels -------------------------------------------------------------

PLATFORMS = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_27_x86_64",
             "manylinux_2_28_x86_64"]


def wheel(dist, version):
    """The path of a wheel of dist==version in the cache, downloaded if missing: a pure one, or
    any CPython's manylinux one (only its Python source is read)."""
    os.makedirs(CACHE, exist_ok=True)
    stem = dist.replace("-", "_") + "-" + version + "-"
    for name in sorted(os.listdir(CACHE)):
        if name.startswith(stem) and name.endswith(".whl"):
            return os.path.join(CACHE, name)
    base = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary",
            ":all:", "-d", CACHE, "%s==%s" % (dist, version)]
    tries = [[]] + [["--implementation", "cp", "--python-version", pv]
                    + [a for p in PLATFORMS for a in ("--platform", p)]
                    for pv in ("3.12", "3.11", "3.10", "3.13", "3.9")]
    for extra in tries:
        r = subprocess.run(base + extra, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        if r.returncode == 0:
            for name in sorted(os.listdir(CACHE)):
                if name.startswith(stem) and name.endswith(".whl"):
                    return os.path.join(CACHE, name)
    raise SystemExit("no wheel of %s==%s could be downloaded:\n%s" % (dist, version, r.stdout))


def requires_python(zf):
    """The wheel's Requires-Python specifier, or ''."""
    for name in zf.namelist():
        if name.endswith(".dist-info/METADATA"):
            for line in zf.read(name).decode("utf-8", "replace").splitlines():
                if line.startswith("Requires-Python:"):
                    return line.split(":", 1)[1].strip()
                if not line:
                    break
    return ""


def supports(spec, minor):
    """Does Requires-Python `spec` admit 3.minor?  (packaging comes with pytest and pip.)"""
    from packaging.specifiers import SpecifierSet
    return SpecifierSet(spec).contains("3.%d" % minor)


def find_code(code, path):
    """The code object reached from code by the names in path (class bodies and functions
    alike), or None; two of one name on the way: ValueError."""
    for name in path:
        found = [c for c in code.co_consts if hasattr(c, "co_code") and c.co_name == name]
        if not found:
            return None
        if len(found) > 1:
            raise ValueError("%d code objects named %s" % (len(found), name))
        code = found[0]
    return code


def releases(wanted):
    todo = []
    for dist, versions in RELEASES.items():
        for v in versions:
            if not wanted or "%s==%s" % (dist, v) in wanted:
                todo.append((dist, v))
    out = {"minor": MINOR, "python": sys.version.split()[0], "releases": []}
    for dist, version in todo:
        path = wheel(dist, version)
        with zipfile.ZipFile(path) as zf:
            rec = {"dist": dist, "version": version, "requires_python": requires_python(zf),
                   "hooks": {}}
            modules = {}
            for label, d, fname, names, table, col in HOOKS:
                if d != dist:
                    continue
                if fname not in modules:
                    src = zf.read(fname)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        try:
                            modules[fname] = compile(src, fname, "exec", dont_inherit=True)
                        except SyntaxError as e:
                            modules[fname] = e
                mod = modules[fname]
                if isinstance(mod, SyntaxError):
                    rec["hooks"][label] = {"fp": None, "variant": None, "error": str(mod)}
                    continue
                code = find_code(mod, names)
                fp = None if code is None else core._code_fingerprint(code)
                rec["hooks"][label] = {"fp": fp, "variant": known(table, col, fp) if fp else None,
                                       "table": table, "col": col}
        rec["supported"] = supports(rec["requires_python"], MINOR)
        out["releases"].append(rec)
    return out


def print_releases(out):
    print("CPython %s: the hooks' fingerprints, from each release's wheel" % out["python"])
    for label, dist, *_ in HOOKS:
        groups = {}
        for rec in out["releases"]:
            if rec["dist"] == dist and label in rec["hooks"]:
                h = rec["hooks"][label]
                groups.setdefault((h["fp"], h["variant"]), []).append(rec["version"])
        print("  %s %s" % (dist, label))
        for (fp, variant), vs in groups.items():
            print("    %s  %-22s %s" % (fmt(fp), "not listed" if variant is None
                                        else "listed (variant %d)" % variant, " ".join(vs)))


# ---- tables from several interpreters --------------------------------------------------------

def load(files):
    runs = []
    for f in files:
        with open(f) as fh:
            runs.append(json.load(fh))
    runs.sort(key=lambda r: r["minor"])
    return runs


def markdown(files):
    runs = load(files)
    print("| library | release | " + " | ".join("3.%d" % r["minor"] for r in runs) + " |")
    print("|---|---|" + "---|" * len(runs))
    by = {}
    for r in runs:
        for rec in r["releases"]:
            by.setdefault((rec["dist"], rec["version"]), {})[r["minor"]] = rec
    for dist, versions in RELEASES.items():
        for v in versions:
            cells = []
            for r in runs:
                rec = by.get((dist, v), {}).get(r["minor"])
                if rec is None:
                    cells.append("?")
                    continue
                hooks = rec["hooks"]
                native = [lab for lab, h in hooks.items() if h["variant"] is not None]
                if not rec["supported"]:
                    cell = "not supported"
                elif len(native) == len(hooks):
                    cell = "native"
                elif not native:
                    cell = "Python"
                else:
                    cell = "native: " + ", ".join("`%s`" % n for n in native)
                cells.append(cell)
            print("| %s | %s | %s |" % (dist, v, " | ".join(cells)))


def c_table(files):
    runs = load(files)
    for label, dist, _f, _n, table, col in HOOKS:
        print("/* %s %s (table %s, column %d) */" % (dist, label, table, col))
        for r in runs:
            groups = {}
            for rec in r["releases"]:
                if rec["dist"] == dist and label in rec["hooks"]:
                    groups.setdefault(rec["hooks"][label]["fp"], []).append(rec["version"])
            for fp, vs in groups.items():
                print("    {%d, 0x%016xull},    /* %s */" % (r["minor"], fp or 0,
                                                           ", ".join(vs)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--releases", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--c-table", action="store_true")
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    if a.markdown:
        markdown(a.args)
    elif a.c_table:
        c_table(a.args)
    elif a.releases:
        out = releases(set(a.args))
        print_releases(out)
        if a.json:
            with open(a.json, "w") as fh:
                json.dump(out, fh, indent=1)
    else:
        installed()


if __name__ == "__main__":
    main()
