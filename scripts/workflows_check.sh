#!/usr/bin/env bash
# The GitHub Actions workflows (.github/workflows/) checked here, where they cannot run:
# zizmor's security audits offline (unpinned or mutable action refs, credentials persisted by
# checkout, excessive permissions, template injection, ...) and the workflows validated against
# the GitHub workflow JSON schema (check-jsonschema's vendored copy).  Any finding fails.
# The tools are pinned so that a new release's audits arrive with a deliberate bump, not in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/tools_venv.sh
"$TOOLS" -m pip install -q "zizmor==1.32.0" "check-jsonschema==0.39.0"
"$(dirname "$TOOLS")/zizmor" --offline .github/workflows
"$(dirname "$TOOLS")/check-jsonschema" --builtin-schema vendor.github-workflows .github/workflows/*.yml
