"""Builds the C core (src/) into fastcopy._fastcopy.

Switches, by environment variable:
  FASTCOPY_DEBUG=1     asserts on, -O0 -g
  FASTCOPY_SANITIZE=1  AddressSanitizer + UndefinedBehaviorSanitizer
  FASTCOPY_WERROR=1    warnings are errors (CI)
  FASTCOPY_NUMPY=0     build without the numpy fast path even if numpy is there
  FASTCOPY_CUDA=0      build fastcopy._cuda without the CUDA-header ABI check
  FASTCOPY_CUDA=1      require the CUDA headers for that check (fail if absent)
  FASTCOPY_UNITY=0     compile each src/*.c as its own translation unit, linked
                       with LTO, instead of the unity file src/_fastcopy.c
                       (the default: it measured faster, docs/performance.md)

numpy is optional at build time too: its headers are located without
importing it; without them (or without numpy >= 2.0 headers) the core is
built without the numpy fast path and arrays take their own __deepcopy__.

fastcopy._cuda (cuda/*.c) is plain C and always builds: it loads the
driver at run time (src/platform.h: dlopen, LoadLibrary).  When cuda.h is
found ($CUDA_HOME/include or /usr/local/cuda/include) cuda/abi_check.c is
compiled in too, proving the hand-declared driver ABI against the real
headers at compile time.
"""
import glob
import importlib.util
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py


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


include_dirs = ["src", "cuda"]
core_macros = list(macros)
np_inc = _numpy_include()
if np_inc is not None:
    include_dirs.append(np_inc)
    core_macros += [("FC_HAVE_NUMPY", "1"),
                    ("NPY_NO_DEPRECATED_API", "NPY_1_22_API_VERSION"),
                    ("NPY_TARGET_VERSION", "NPY_1_22_API_VERSION")]

if os.environ.get("FASTCOPY_UNITY", "1") in ("0", ""):
    core_sources = sorted(f for f in glob.glob("src/*.c") if not f.endswith("_fastcopy.c"))
    core_cflags = cflags + ["-flto"]
    core_ldflags = ldflags + ["-flto", "-O2"]
else:
    core_sources = ["src/_fastcopy.c"]
    core_cflags, core_ldflags = cflags, ldflags

core = Extension(
    "fastcopy._fastcopy",
    sources=core_sources,
    depends=sorted(glob.glob("src/*.c") + glob.glob("src/*.h") + ["cuda/fc_cuda_capi.h"]),
    include_dirs=include_dirs,
    define_macros=core_macros,
    extra_compile_args=core_cflags,
    extra_link_args=core_ldflags,
)

# FASTCOPY_AUTOPATCH=1 start-up hook (docs/patching.md): these land at the top of site-packages.
AUTOPATCH_FILES = {
    "_fastcopy_autopatch.py": None,  # a copy of fastcopy/_autopatch.py
    # the check is inline so that an unset variable costs no module import (docs/patching.md)
    "fastcopy-autopatch.pth": 'import os; os.environ.get("FASTCOPY_AUTOPATCH") == "1"'
                              ' and __import__("_fastcopy_autopatch").run()\n',
    "fastcopy-autopatch.start": "_fastcopy_autopatch:run\n",  # PEP 829, Python 3.15+
}


class build_py_autopatch(build_py):
    def run(self):
        super().run()
        for name, text in AUTOPATCH_FILES.items():
            dest = os.path.join(self.build_lib, name)
            if text is None:
                self.copy_file(os.path.join("fastcopy", "_autopatch.py"), dest)
            elif not self.dry_run:
                with open(dest, "w", encoding="utf-8") as f:
                    f.write(text)

    def get_outputs(self, include_bytecode=1):
        return super().get_outputs(include_bytecode) + [
            os.path.join(self.build_lib, name) for name in AUTOPATCH_FILES]

def _cuda_extension():
    sources = ["cuda/_cuda.c"]
    include_dirs = ["cuda", "src"]          # src/platform.h
    cuda_macros = list(macros)
    want = os.environ.get("FASTCOPY_CUDA", "")
    if want != "0":
        homes = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""),
                 "/usr/local/cuda"]
        inc = next((os.path.join(h, "include") for h in homes
                    if h and os.path.isfile(os.path.join(h, "include", "cuda.h"))), None)
        if inc is not None:
            sources.append("cuda/abi_check.c")
            include_dirs.append(inc)
            cuda_macros.append(("FC_CUDA_ABI_CHECKED", "1"))
        elif want == "1":
            raise SystemExit("FASTCOPY_CUDA=1 but no cuda.h under $CUDA_HOME/include "
                             "or /usr/local/cuda/include")
    return Extension(
        "fastcopy._cuda",
        sources=sources,
        depends=sorted(glob.glob("cuda/*.h") + ["src/platform.h"]),
        include_dirs=include_dirs,
        define_macros=cuda_macros,
        extra_compile_args=cflags,
        extra_link_args=ldflags,
        # dlopen is in libdl before glibc 2.34 (the manylinux images have 2.17-2.28)
        libraries=["dl"] if sys.platform.startswith("linux") else [],
    )


class build_ext_flags(build_ext):
    """The gcc/clang flags above, or their MSVC equivalents under cl.exe."""

    MSVC = {"-std=c11": "/std:c11", "-O2": "/O2", "-O0": "/Od", "-g3": "/Zi",
            "-Werror": "/WX", "-UNDEBUG": "/UNDEBUG"}

    def build_extensions(self):
        if self.compiler.compiler_type == "msvc":
            for ext in self.extensions:
                ext.extra_compile_args = [self.MSVC[f] for f in ext.extra_compile_args
                                          if f in self.MSVC]
                ext.extra_link_args = []
        super().build_extensions()


setup(ext_modules=[core, _cuda_extension()],
      cmdclass={"build_py": build_py_autopatch, "build_ext": build_ext_flags})
