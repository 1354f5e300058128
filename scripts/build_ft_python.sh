#!/usr/bin/env bash
# Build a free-threaded CPython 3.13.5 (--disable-gil) and print its python.
#
#   scripts/build_ft_python.sh
#
# Source: Debian trixie's python3.13 source package, fetched and unpacked once
# by scripts/cpython_source.sh (shared with scripts/cross_check.sh).  The build
# is out of tree, so that source tree stays pristine for the other users.
# Install prefix: ${FASTCOPY_CACHE:-~/.cache/fastcopy}/python3.13t, built only
# when its interpreter is missing, or lacks the test modules (_testcapi: the
# allocation-failure tests need it; an older cache built with
# --disable-test-modules is rebuilt).  CI calls this every run.  pip comes from
# the ensurepip wheel shipped in the source; pytest and pytest-run-parallel are
# installed from PyPI, and numpy as a free-threaded (cp313t) wheel only, so that
# the numpy path (native copies, threads, the pool and its allocation-failure
# sweeps) runs free-threaded: the newest release that has one (2.4.6 here, in
# 4 s; numpy 2.5 ships no cp313t wheel, and its sdist build takes 5 minutes on
# 2 cores), never an sdist.  Without a wheel the numpy tests skip.  About 8-10
# minutes on 2 cores (see docs/free-threading.md).
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${FASTCOPY_CACHE:-$HOME/.cache/fastcopy}
prefix=$cache/python3.13t
py=$prefix/bin/python3.13t
if [ ! -x "$py" ] || ! "$py" -c 'import sys, sysconfig, ssl, _testcapi
sys.exit(0 if sysconfig.get_config_var("Py_GIL_DISABLED") else 1)' 2>/dev/null; then
    src=$(bash scripts/cpython_source.sh python3.13 3.13.5-2+deb13u5 trixie)
    build=$cache/build-python3.13t
    rm -rf "$build" "$prefix"
    mkdir -p "$build"
    start=$(date +%s)
    echo "build_ft_python: configuring $src (--disable-gil) into $prefix" >&2
    (cd "$build" && "$src/configure" -q --prefix="$prefix" --disable-gil \
        --with-ensurepip=install >&2)
    (cd "$build" && make -s -j"${FASTCOPY_JOBS:-2}" >&2 && make -s install >&2)
    rm -rf "$build"
    echo "build_ft_python: built in $(( $(date +%s) - start ))s" >&2
fi
if ! "$py" -c 'import pytest, pytest_run_parallel' 2>/dev/null; then
    "$py" -m pip install -q pytest pytest-run-parallel setuptools >&2
fi
if ! "$py" -c 'import numpy' 2>/dev/null; then
    "$py" -m pip install -q --only-binary=numpy numpy >&2 \
        || echo "build_ft_python: no free-threaded numpy wheel; the numpy tests will skip" >&2
fi
echo "$py"
