#!/usr/bin/env bash
# The docs site built the strict way (what CI runs): the `docs` extra of pyproject.toml (MkDocs,
# Material, mkdocstrings) installed into build/venv-tools, then `mkdocs build --strict` into
# build/site.  mkdocs.yml's `validation:` makes a link to a missing page or file, a #fragment that
# is none of the target's anchors, and a missing image warnings; --strict makes them fatal.
# (Not -q: a quiet build does not count its warnings.)  The API reference is read from the stub
# and the sources: the C core need not be built.  tests/test_docs*.py find this venv too.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/tools_venv.sh
"$TOOLS" -m pip install -q 'tomli; python_version < "3.11"'
"$TOOLS" - <<'PY' | xargs "$TOOLS" -m pip install -q
try:
    import tomllib
except ImportError:
    import tomli as tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["optional-dependencies"]["docs"]))
PY
"$TOOLS" -m mkdocs build --strict --site-dir build/site
