#!/usr/bin/env bash
# The distributions checked as an index and a user would meet them:
#   validate-pyproject   pyproject.toml against PEP 621/639 and setuptools' schema
#   python -m build      the sdist, then a wheel built from that sdist (build's default)
#   the sdist's files    every tracked file under src/, cuda/ and fastcopy/, the build files,
#                        LICENSE and tests/ are in it
#   twine check --strict both: metadata and the README as PyPI renders it
#   check-wheel-contents the wheel: no stray or duplicate files, the license in .dist-info
#   the sdist, built     unpacked outside the checkout, `pip install`ed into a fresh venv, then
#                        scripts/wheel_test.sh's smoke subset from the sdist's own tests/, copied
#                        to a folder of their own (nothing of the checkout importable)
# Tools in build/venv-tools (scripts/tools_venv.sh); output in build/dist_check/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
. scripts/tools_venv.sh
"$TOOLS" -m pip install -q build twine check-wheel-contents "validate-pyproject[all]"
bin=$(dirname "$TOOLS")
work=$root/build/dist_check
rm -rf "$work"
mkdir -p "$work"

echo "--- validate-pyproject"
"$bin/validate-pyproject" pyproject.toml

echo "--- python -m build"
"$TOOLS" -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 \
    || { tail -n 40 "$work/build.log"; exit 1; }
sdist=$(ls "$work"/dist/*.tar.gz)
wheel=$(ls "$work"/dist/*.whl)
echo "$(basename "$sdist") $(basename "$wheel")"

echo "--- the sdist's files"
"$TOOLS" - "$sdist" <<'PY'
import subprocess, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
tracked = subprocess.run(["git", "ls-files", "src", "cuda", "fastcopy", "tests"], check=True,
                         capture_output=True, text=True).stdout.split()
need = set(tracked) | {"setup.py", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"}
missing = sorted(need - names)
stray = sorted(n for n in names if n.endswith((".so", ".pyd", ".o", ".pyc")))
if missing or stray:
    sys.exit("sdist: missing %s; stray %s" % (missing, stray))
print("%d files, every tracked source, header, stub and test among them" % len(names))
PY

echo "--- twine check --strict"
"$bin/twine" check --strict "$sdist" "$wheel"

echo "--- check-wheel-contents"
# W002 (a duplicate file), W003 (a non-module at the top level), W009 (several top-level
# entries): the FASTCOPY_AUTOPATCH start-up hook (setup.py's build_py, docs/patching.md) puts a
# copy of fastcopy/_autopatch.py, a .pth and a .start file at the top of site-packages, by
# design.  Those three and fastcopy/ are checked to be all there is, below.
"$bin/check-wheel-contents" --ignore W002,W003,W009 "$wheel"
"$TOOLS" - "$wheel" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
top = {n.split("/", 1)[0] for n in names if ".dist-info/" not in n}
want = {"fastcopy", "_fastcopy_autopatch.py", "fastcopy-autopatch.pth", "fastcopy-autopatch.start"}
assert top == want, "top-level entries %s, expected %s" % (sorted(top), sorted(want))
meta = [n for n in names if n.endswith(".dist-info/METADATA")][0]
text = zipfile.ZipFile(sys.argv[1]).read(meta).decode()
assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), "no LICENSE in the wheel"
assert "License-Expression: MIT" in text, "no License-Expression in METADATA"
print("LICENSE and License-Expression: MIT in the wheel")
PY

echo "--- the sdist, built and smoke-tested in a fresh venv"
# the smoke subset of scripts/wheel_test.sh (FASTCOPY_WHEEL_SMOKE overrides it there and here)
smoke=${FASTCOPY_WHEEL_SMOKE:-$(sed -n '/^smoke=\${FASTCOPY_WHEEL_SMOKE:-"/,/"}$/p' scripts/wheel_test.sh \
    | sed -e 's/^smoke=\${FASTCOPY_WHEEL_SMOKE:-"//' -e 's/"}$//')}
[ -n "$(echo $smoke)" ] || { echo "no smoke list found in scripts/wheel_test.sh"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$sdist" -C "$tmp"
src=$(ls -d "$tmp"/*/)
python -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q "$src" "pytest>=7" >"$work/sdist_install.log" 2>&1 \
    || { tail -n 40 "$work/sdist_install.log"; exit 1; }
mkdir "$tmp/run"
cp -r "$src/tests" "$tmp/run/tests"
# shellcheck disable=SC2086
(cd "$tmp/run" && env -u PYTHONPATH -u FASTCOPY_SOURCE_ROOT \
    "$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider $smoke)
where=$(cd "$tmp/run" && env -u PYTHONPATH "$tmp/venv/bin/python" -c 'import fastcopy; print(fastcopy.__file__)')
case $where in
    "$tmp/venv/"*) echo "fastcopy from the venv: $where" ;;
    *) echo "fastcopy imported from $where, not from the venv"; exit 1 ;;
esac
echo "dist_check: ok"
