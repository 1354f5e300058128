"""Builds the C core (src/) into fastcopy._fastcopy.

Switches, by environment variable:
  FASTCOPY_DEBUG=1     asserts on, -O0 -g
  FASTCOPY_SANITIZE=1  AddressSanitizer + UndefinedBehaviorSanitizer
  FASTCOPY_WERROR=1    warnings are errors (CI)
  FASTCOPY_CUDA=0      build fastcopy._cuda without the CUDA-header ABI check
  FASTCOPY_CUDA=1      require the CUDA headers for that check (fail if absent)

fastcopy._cuda (cuda/*.c) is plain C and always builds: it dlopen()s the
driver at run time.  When cuda.h is found ($CUDA_HOME/include or
/usr/local/cuda/include) cuda/abi_check.c is compiled in too, proving the
hand-declared driver ABI against the real headers at compile time.
"""
import glob
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

core = Extension(
    "fastcopy._fastcopy",
    sources=["src/_fastcopy.c"],
    depends=sorted(glob.glob("src/*.c") + glob.glob("src/*.h")),
    include_dirs=["src"],
    define_macros=macros,
    extra_compile_args=cflags,
    extra_link_args=ldflags,
)



def _cuda_extension():
    sources = ["cuda/_cuda.c"]
    include_dirs = ["cuda"]
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
        depends=sorted(glob.glob("cuda/*.h")),
        include_dirs=include_dirs,
        define_macros=cuda_macros,
        extra_compile_args=cflags,
        extra_link_args=ldflags,
        libraries=["dl"],
    )


setup(ext_modules=[core, _cuda_extension()])
