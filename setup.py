"""Builds the C core (src/) into fastcopy._fastcopy.

Switches, by environment variable:
  FASTCOPY_DEBUG=1     asserts on, -O0 -g
  FASTCOPY_SANITIZE=1  AddressSanitizer + UndefinedBehaviorSanitizer
  FASTCOPY_WERROR=1    warnings are errors (CI)
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

setup(ext_modules=[core])
