#!/usr/bin/env bash
# CI's CPython 3.14 and 3.15 steps, each in the chroot of scripts/sid_chroot.sh (Debian unstable's
# interpreters), in that chroot's own venv for the version:
#   1. the test dependencies: pytest, setuptools >= 77, numpy (before the build: setup.py compiles
#      the numpy path only when numpy's headers are there), and the libraries with native hook
#      roads at the releases .ci/run pins (attrs, pydantic, scikit-learn);
#   2. the C core built in place with FASTCOPY_WERROR=1 (warnings are errors);
#   3. the interpreter's own Lib/test/test_copy.py with fastcopy patched in;
#   4. the whole suite;
#   5. a manylinux wheel (scripts/wheel_test.sh: pip wheel, auditwheel repair, a fresh venv, the
#      smoke subset from a copy of tests/).  Built against Debian unstable's glibc, it is tagged
#      manylinux_2_34 (pthread's symbols moved into libc in 2.34); the wheels published for users
#      come from cibuildwheel's manylinux_2_28 image (.github/workflows/release.yml).
# torch is not installed there: the one torch wheel this machine has is CPython 3.11's, and any
# other torch from the index is a CUDA build of several GB; its tests skip, saying so.
#
#   scripts/sid_suite.sh [3.14 3.15]
# Exit status: the number of versions that failed.
set -u
cd "$(dirname "$0")/.." || exit 99
versions=("$@")
[ "${#versions[@]}" = 0 ] && versions=(3.14 3.15)
bash scripts/sid_chroot.sh >/dev/null || exit 99
fails=0
for v in "${versions[@]}"; do
    echo "=== CPython $v (scripts/sid_chroot.sh)"
    # shellcheck disable=SC2016
    if ! FASTCOPY_WERROR=1 bash scripts/sid_chroot.sh run "$v" sh -c '
        set -e
        python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
        python -m pip install -q "pytest>=7" "setuptools>=77" numpy
        python -m pip install -q "attrs==26.1.0" "pydantic==2.14.4" "scikit-learn==1.9.1" \
            || echo "($0: attrs/pydantic/scikit-learn not installed: their tests skip)"
        python -c "import platform; print(\"python\", platform.python_version())"
        python setup.py -q build_ext --inplace --build-temp "build/temp-$0"
        FASTCOPY_REQUIRE_CORE=1 python tests/test_stdlib_test_copy.py >/tmp/test_copy.log 2>&1 \
            || { cat /tmp/test_copy.log; exit 1; }
        tail -n 3 /tmp/test_copy.log
        python -m pytest -q -p no:cacheprovider tests
        FASTCOPY_WHEEL_FULL=none bash scripts/wheel_test.sh "$(command -v python)"' "$v"; then
        echo "!!! CPython $v failed"
        fails=$((fails + 1))
    fi
done
echo "sid_suite: versions failing: $fails"
exit "$fails"
