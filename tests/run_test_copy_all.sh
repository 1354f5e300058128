#!/usr/bin/env bash
# Run CPython's own Lib/test/test_copy.py, patched with fastcopy, on every
# pyenv interpreter >= 3.10 (each one checks fastcopy against its own copy.py).
#
#   tests/run_test_copy_all.sh            # from anywhere; works in the repo root
#
# For each interpreter it builds the C core in place (the .so names carry the
# ABI tag, so builds for several versions coexist in fastcopy/), giving
# that interpreter setuptools >= 77 first (scripts/prepare_python.sh), then runs
# tests/test_stdlib_test_copy.py with plain unittest (pytest not needed).
# Exit status: number of interpreters that failed (0 = all good).
set -u
cd "$(dirname "$0")/.." || exit 99
root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
fails=0
for py in "$root"/versions/*/bin/python; do
    [ -x "$py" ] || continue
    ok=$("$py" -c 'import sys; print(int(sys.version_info >= (3, 10)))' 2>/dev/null) || continue
    [ "$ok" = 1 ] || continue
    ver=$("$py" -c 'import platform; print(platform.python_version())')
    echo "=== Python $ver ($py)"
    bash scripts/prepare_python.sh "$py" \
        || { echo "!!! $ver: no setuptools >= 77"; fails=$((fails + 1)); continue; }
    if ! "$py" setup.py -q build_ext --inplace --build-temp "build/temp-$ver" >"build-$ver.log" 2>&1; then
        echo "!!! $ver: build failed (see build-$ver.log)"; fails=$((fails + 1)); continue
    fi
    rm -f "build-$ver.log"
    out=$(FASTCOPY_REQUIRE_CORE=1 "$py" tests/test_stdlib_test_copy.py 2>&1); rc=$?
    printf '%s\n' "$out" | tail -n 4
    if [ "$rc" != 0 ]; then
        printf '%s\n' "$out" | grep -E '^(FAIL|ERROR):' | head -n 20
        echo "!!! $ver: test_copy failed"; fails=$((fails + 1))
    fi
done
echo "interpreters failing: $fails"
exit "$fails"
