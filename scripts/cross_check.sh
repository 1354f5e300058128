#!/usr/bin/env bash
# Cross-compile the extension's C sources for the platforms this machine
# cannot run -- macOS arm64 and x86_64, Windows x86_64 (MinGW ABI) -- with
# zig's clang, against CPython's own headers, and link them where the target
# allows.  Any error or warning fails (the flags are setup.py's, with -Werror).
#
#   bash scripts/cross_check.sh            every target
#   bash scripts/cross_check.sh TARGET...  some (aarch64-macos x86_64-macos x86_64-windows-gnu)
#
# Headers: CPython 3.13.5's Include/ (scripts/cpython_source.sh, from Debian's
# python3.13 source package).  pyconfig.h, which configure writes on the
# target itself, is for Windows CPython's own PC/pyconfig.h.in (a complete
# header; the .in only lets the build uncomment Py_GIL_DISABLED), for macOS
# scripts/cross/pyconfig-macos.h (what it holds and why: its comment).
#
# What each target proves:
#   *-macos   src/_fastcopy.c (the unity build) and cuda/_cuda.c compile, once
#             without numpy and once with this machine's numpy headers (their
#             _numpyconfig.h is Linux x86_64's: the LP64 sizes match macOS),
#             and link into bundles with -undefined dynamic_lookup, as
#             setuptools links them on a Mac.
#   x86_64-windows-gnu
#             both compile without numpy (numpy's generated config for Windows
#             is not here: its long is 4 bytes), and link into .pyd files
#             against an import library for python313.dll made from the
#             headers' PyAPI_FUNC/PyAPI_DATA declarations
#             (scripts/cross/windows_def.py): a link error is a symbol the
#             DLL does not export.  MSVC itself (what CPython and cibuildwheel
#             use on Windows) is not checked here: no MSVC headers.
# Output: build/cross/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(aarch64-macos x86_64-macos x86_64-windows-gnu)

python -c "import ziglang" 2>/dev/null || python -m pip install -q ziglang
cpy=$(bash scripts/cpython_source.sh)
zcc=(python -m ziglang cc)
flags=(-std=c11 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
       -fno-strict-aliasing -O2 -Werror)
np_inc=$(python - <<'PY'
import importlib.util, os
spec = importlib.util.find_spec("numpy")
for root in (spec.submodule_search_locations if spec else None) or []:
    inc = os.path.join(root, "_core", "include")
    if os.path.exists(os.path.join(inc, "numpy", "npy_2_compat.h")):
        print(inc)
        break
PY
)
np_macros=(-DFC_HAVE_NUMPY=1 -DNPY_NO_DEPRECATED_API=NPY_1_22_API_VERSION
           -DNPY_TARGET_VERSION=NPY_1_22_API_VERSION)

fail=0
report=()
step() {   # step LABEL OUTPUT COMMAND...: run, record ok/FAIL (no OUTPUT left on FAIL)
    local label=$1 output=$2
    shift 2
    if "$@"; then
        report+=("ok    $label")
    else
        report+=("FAIL  $label")
        rm -f "$output"
        fail=1
    fi
}

for t in "${targets[@]}"; do
    out=build/cross/$t
    rm -rf "$out"
    mkdir -p "$out/config"
    case $t in
        *-windows-*)
            cp "$cpy/PC/pyconfig.h.in" "$out/config/pyconfig.h"
            ext=pyd ;;
        *-macos*)
            cp scripts/cross/pyconfig-macos.h "$out/config/pyconfig.h"
            ext=so ;;
        *) echo "cross_check: unknown target $t" >&2; exit 2 ;;
    esac
    inc=(-I"$out/config" -I"$cpy/Include" -Isrc -Icuda)
    step "$t: compile src/_fastcopy.c" "$out/_fastcopy.o" \
        "${zcc[@]}" -target "$t" "${flags[@]}" "${inc[@]}" -fPIC -c src/_fastcopy.c -o "$out/_fastcopy.o"
    step "$t: compile cuda/_cuda.c" "$out/_cuda.o" \
        "${zcc[@]}" -target "$t" "${flags[@]}" "${inc[@]}" -fPIC -c cuda/_cuda.c -o "$out/_cuda.o"
    if [[ $t == *-macos* && -n $np_inc ]]; then
        # numpy's Linux config says <endian.h>: on macOS that is <machine/endian.h>
        mkdir -p "$out/numpy-shim"
        echo '#include <machine/endian.h>' > "$out/numpy-shim/endian.h"
        step "$t: compile src/_fastcopy.c with numpy" "$out/_fastcopy_np.o" \
            "${zcc[@]}" -target "$t" "${flags[@]}" "${inc[@]}" -I"$out/numpy-shim" \
            -I"$np_inc" "${np_macros[@]}" \
            -fPIC -c src/_fastcopy.c -o "$out/_fastcopy_np.o"
    fi
    case $t in
        *-macos*)
            for m in _fastcopy _cuda; do
                [ -f "$out/$m.o" ] && step "$t: link $m.$ext (-undefined dynamic_lookup)" "$out/$m.$ext" \
                    "${zcc[@]}" -target "$t" -shared -undefined dynamic_lookup \
                    -o "$out/$m.$ext" "$out/$m.o"
            done ;;
        *-windows-*)
            python scripts/cross/windows_def.py "$cpy/Include" python313.dll "$out/python313.def"
            step "$t: import library for python313.dll" "$out/libpython313.a" \
                python -m ziglang dlltool -m i386:x86-64 -d "$out/python313.def" \
                -D python313.dll -l "$out/libpython313.a"
            for m in _fastcopy _cuda; do
                [ -f "$out/$m.o" ] && [ -f "$out/libpython313.a" ] && \
                    step "$t: link $m.$ext against python313.dll" "$out/$m.$ext" \
                    "${zcc[@]}" -target "$t" -shared -o "$out/$m.$ext" "$out/$m.o" \
                    "$out/libpython313.a"
            done ;;
    esac
    # the module's entry point is there and exported
    for m in _fastcopy _cuda; do
        [ -f "$out/$m.$ext" ] && step "$t: $m.$ext exports PyInit_$m" "" \
            python -c "import sys; sys.exit(b'PyInit_$m' not in open('$out/$m.$ext', 'rb').read())"
    done
done

printf '%s\n' "${report[@]}"
if [ $fail -ne 0 ]; then
    echo "cross_check: FAILED" >&2
    exit 1
fi
echo "cross_check: all ok (${targets[*]})"
