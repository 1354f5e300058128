"""Builds the C core (src/) into fastcopy._fastcopy.

Switches, by environment variable:
  FASTCOPY_DEBUG=1     asserts on, -O0 -g
  FASTCOPY_SANITIZE=1  AddressSanitizer + UndefinedBehaviorSanitizer
  FASTCOPY_WERROR=1    warnings are errors (CI)
  FASTCOPY_NUMPY=0     build without the numpy fast path even if numpy is there

numpy is optional at build time too: its headers are located without
importing it; without them (or without numpy >= 2.0 headers) the core is
built without the numpy fast path and arrays take their own __deepcopy__.
"""
import glob
import importlib.util
import os

from setuptools import Extension, setup


def _on(name):
    return os.environ.get(name, "") not in ("", "0")


cflags = ["-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter",
          "-Wno-missing-field-initializers", "-fno-strict-aliasing"]
ldflags = []
macros = []
if _on("FASTCOPY_DEBUG") or _on("FASTCOPY_SANITIZE"):
    cflags += ["-O0", "-g3"]
    macros.append(("FC_DEBUG", "1"))
    cflags.append("-UNDEBUG")
else:
    cflags += ["-O2"]
if _on("FASTCOPY_SANITIZE"):
    san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer",
           "-fno-sanitize-recover=undefined"]
    cflags += san
    ldflags += san
if _on("FASTCOPY_WERROR"):
    cflags.append("-Werror")



def _numpy_include():
    """numpy's C headers, found without importing numpy; None when absent.

    Only numpy >= 2.0 headers qualify: built against them with
    NPY_TARGET_VERSION=NPY_1_22_API_VERSION the module runs with any
    numpy >= 1.22 (the C API is imported lazily, at the first array).
    """
    if os.environ.get("FASTCOPY_NUMPY", "1") in ("0", ""):
        return None
    try:
        spec = importlib.util.find_spec("numpy")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        inc = os.path.join(root, "_core", "include")
        if os.path.exists(os.path.join(inc, "numpy", "npy_2_compat.h")):
            return inc
    return None


include_dirs = ["src"]
np_inc = _numpy_include()
if np_inc is not None:
    include_dirs.append(np_inc)
    macros += [("FC_HAVE_NUMPY", "1"),
               ("NPY_NO_DEPRECATED_API", "NPY_1_22_API_VERSION"),
               ("NPY_TARGET_VERSION", "NPY_1_22_API_VERSION")]

core = Extension(
    "fastcopy._fastcopy",
    sources=["src/_fastcopy.c"],
    depends=sorted(glob.glob("src/*.c") + glob.glob("src/*.h")),
    include_dirs=include_dirs,
    define_macros=macros,
    extra_compile_args=cflags,
    extra_link_args=ldflags,
)

setup(ext_modules=[core])
