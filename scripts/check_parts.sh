#!/usr/bin/env bash
# Every C part stands on its own: each src/*.c (and cuda/*.c) compiles alone
# with only the headers it includes, with no implicit declarations and no
# function used but never defined (a static prototype with no body).  The
# unity file, which defines FC_UNITY, is compiled the same way.  Run by CI;
# usage: scripts/check_parts.sh [python]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python}
INC=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
NP=$("$PY" - <<'P' 2>/dev/null || true
import importlib.util, os
s = importlib.util.find_spec("numpy")
for r in (s.submodule_search_locations if s else []):
    i = os.path.join(r, "_core", "include")
    if os.path.exists(os.path.join(i, "numpy", "npy_2_compat.h")):
        print(i)
P
)
flags=(-fsyntax-only -std=c11 -Wall -Wextra -Wno-unused-parameter
       -Wno-missing-field-initializers -Werror -Werror=implicit-function-declaration
       -Isrc -Icuda "-I$INC")
variants=("")
if [ -n "$NP" ]; then
    variants+=("-DFC_HAVE_NUMPY=1 -DNPY_NO_DEPRECATED_API=NPY_1_22_API_VERSION -DNPY_TARGET_VERSION=NPY_1_22_API_VERSION -I$NP")
fi
fail=0
for v in "${variants[@]}"; do
    for f in src/*.c cuda/_cuda.c; do
        # shellcheck disable=SC2086
        if ! out=$(gcc "${flags[@]}" $v "$f" 2>&1); then
            echo "check_parts: $f does not compile on its own${v:+ (numpy)}:"
            echo "$out" | head -20
            fail=1
        fi
    done
done
[ "$fail" = 0 ] && echo "check_parts: every part compiles on its own ($(ls src/*.c cuda/_cuda.c | wc -l) files, ${#variants[@]} configurations)"
exit "$fail"
