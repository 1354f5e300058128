#!/usr/bin/env bash
# Run this test suite on every pyenv interpreter >= 3.10 other than the
# version `python` is (CI runs the README's command with that one).  Uses the in-place
# builds tests/run_test_copy_all.sh leaves in fastcopy/ (builds one if missing).
# Installs pytest into an interpreter that lacks it; numpy and torch are not
# installed, so their tests skip there.
# Exit status: number of interpreters that failed (0 = all good).
set -u
cd "$(dirname "$0")/.." || exit 99
root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
default=$(python -c 'import platform; print(platform.python_version())' 2>/dev/null)
fails=0
for py in "$root"/versions/*/bin/python; do
    [ -x "$py" ] || continue
    ok=$("$py" -c 'import sys; print(int(sys.version_info >= (3, 10)))' 2>/dev/null) || continue
    [ "$ok" = 1 ] || continue
    ver=$("$py" -c 'import platform; print(platform.python_version())')
    [ "$ver" = "$default" ] && continue
    echo "=== suite on Python $ver"
    # what the test extra brings (pytest; setuptools >= 77, which test_autopatch's setup.py
    # build_py needs as much as an in-place build does)
    "$py" -c 'import pytest' 2>/dev/null || "$py" -m pip install -q pytest \
        || { echo "!!! $ver: no pytest"; fails=$((fails + 1)); continue; }
    bash scripts/prepare_python.sh "$py" >/dev/null 2>&1 \
        || { echo "!!! $ver: no setuptools >= 77"; fails=$((fails + 1)); continue; }
    # the libraries with native hook roads (src/hooks.c), at the releases .ci/run pins
    "$py" -m pip install -q "attrs==26.1.0" "pydantic==2.14.4" >/dev/null 2>&1 \
        || echo "($ver: attrs/pydantic not installed: their tests skip)"
    # scikit-learn 1.9.1 needs 3.11+; on 3.10 its tests skip
    "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        && { "$py" -m pip install -q "scikit-learn==1.9.1" >/dev/null 2>&1 \
             || echo "($ver: scikit-learn not installed: its tests skip)"; }
    # scikit-learn brings numpy: a core built before it came lacks the numpy path (setup.py
    # finds numpy's headers at build time), so it is built again, from scratch, with them
    force=
    if PYTHONPATH=. "$py" -c 'import importlib.util, sys, fastcopy
sys.exit(importlib.util.find_spec("numpy") is None or fastcopy.backends()["numpy"]["built"])' \
            2>/dev/null; then
        force=--force
    fi
    if [ -n "$force" ] || ! "$py" -c 'import fastcopy._fastcopy' 2>/dev/null; then
        "$py" setup.py -q build_ext --inplace $force --build-temp "build/temp-$ver" >/dev/null 2>&1 \
            || { echo "!!! $ver: build failed"; fails=$((fails + 1)); continue; }
    fi
    out=$(PYTHONPATH=. "$py" -m pytest -q -p no:cacheprovider tests 2>&1); rc=$?
    printf '%s\n' "$out" | tail -n 2
    if [ "$rc" != 0 ]; then
        echo "!!! $ver: suite failed"
        printf '%s\n' "$out" | grep -E '^(FAILED|ERROR)' | head -n 20
        fails=$((fails + 1))
    fi
done
echo "interpreters failing: $fails"
exit "$fails"
