#!/usr/bin/env bash
# The library-hook tests with pinned older releases (.ci/run): each native road has variants for
# the releases users pin (src/hooks.c, docs/hooks.md), and each variant runs its tests here, in a
# venv of its own (build/venv-hooks-3.X), against the stdlib:
#   3.10  pydantic 2.11.7 (BaseModel's 2.7-2.13 hook), attrs 23.2.0 (23.x's), scikit-learn 1.7.2
#         (the last release for 3.10)
#   3.12  pydantic 2.6.4 (2.5-2.6's hook, and RootModel.__copy__ before 2.13), attrs 22.2.0
#   3.13  pydantic 2.13.4, attrs 24.2.0
# With FASTCOPY_HOOK_CANARY=1, tests/test_hook_canary.py fails for any hook these releases have
# that src/hooks.c does not list.  The C core is the in-place build for each interpreter
# (reused from tests/run_test_copy_all.sh's when it is there).
# Exit status: the number of runs that failed.
set -u
cd "$(dirname "$0")/.." || exit 99
root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
matrix=(
    "3.10|pydantic==2.11.7 attrs==23.2.0 scikit-learn==1.7.2"
    "3.12|pydantic==2.6.4 attrs==22.2.0"
    "3.13|pydantic==2.13.4 attrs==24.2.0"
)
fails=0
for row in "${matrix[@]}"; do
    minor=${row%%|*}
    pins=${row#*|}
    py=""
    for cand in "$root"/versions/"$minor".*/bin/python; do
        case "$cand" in *t/bin/python) continue ;; esac
        [ -x "$cand" ] && py=$cand
    done
    if [ -z "$py" ]; then
        echo "!!! no CPython $minor under $root"
        fails=$((fails + 1))
        continue
    fi
    ver=$("$py" -c 'import platform; print(platform.python_version())')
    echo "=== hook tests on CPython $ver with $pins"
    venv=build/venv-hooks-$minor
    rm -rf "$venv"
    # shellcheck disable=SC2086
    if ! { "$py" -m venv "$venv" \
           && "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null \
           && "$venv/bin/python" -m pip install -q "pytest>=7" "setuptools>=77" $pins \
           && "$venv/bin/python" setup.py -q build_ext --inplace --build-temp "build/temp-$ver" \
               >/dev/null; }; then
        echo "!!! $ver: could not set up $pins"
        fails=$((fails + 1))
        continue
    fi
    "$venv/bin/python" -m pip list 2>/dev/null | grep -i -E '^(pydantic|attrs|scikit-learn) '
    if ! FASTCOPY_HOOK_CANARY=1 "$venv/bin/python" -m pytest -q -p no:cacheprovider \
            tests/test_hook_canary.py tests/test_hooks_native.py tests/test_memo_shown.py \
            tests/test_fuzz.py tests/test_values.py; then
        echo "!!! $ver with $pins: failed"
        fails=$((fails + 1))
    fi
done
exit "$fails"
