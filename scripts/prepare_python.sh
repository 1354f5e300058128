#!/usr/bin/env bash
# Prepare one of the machine's own interpreters (not a venv) for an in-place build of this
# checkout: `PY setup.py build_ext --inplace`, which tests/run_test_copy_all.sh and
# tests/run_suite_all.sh run on every pyenv CPython.  Such a build uses the interpreter's own
# setuptools, and pyproject.toml's PEP 639 license fields need setuptools >= 77: CPython 3.10/3.11
# come with 65.x, 3.12+ with none.  (pip's isolated builds -- the README's `pip install -e .`,
# scripts/wheel_test.sh -- fetch their own and need nothing here; a venv gets it from the test
# extra.)
#
#   scripts/prepare_python.sh PYTHON
set -euo pipefail
py=${1:?usage: prepare_python.sh PYTHON}
if ! "$py" -c 'import setuptools, sys
sys.exit(int(setuptools.__version__.split(".")[0]) < 77)' 2>/dev/null; then
    "$py" -m pip install -q "setuptools>=77"
fi
