#!/usr/bin/env bash
# The table of docs/hooks.md ("Which releases take the native road"): for every CPython here
# (pyenv's 3.10-3.13, and 3.14 and 3.15 in the chroot of scripts/sid_chroot.sh), the extension
# built in place for it, then `scripts/hook_fingerprints.py --releases` reads each library
# release's hooks from its wheel and says whether src/hooks.c lists them.  Prints the markdown
# (and, with --c-table, the rows for src/hooks.c's tables instead).  Needs PyPI (pip download);
# the wheels are kept in build/hook-wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/hook-fp
mkdir -p "$out"
rm -f "$out"/*.json
root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
for py in "$root"/versions/3.1[0-3]*/bin/python; do
    [ -x "$py" ] || continue
    case "$py" in *t/bin/python) continue ;; esac
    minor=$("$py" -c 'import sys; print(sys.version_info[1])')
    bash scripts/prepare_python.sh "$py" >/dev/null
    "$py" setup.py -q build_ext --inplace --build-temp "build/t3$minor" >/dev/null
    "$py" scripts/hook_fingerprints.py --releases --json "$out/3.$minor.json" >/dev/null
done
for v in 3.14 3.15; do
    # shellcheck disable=SC2016
    bash scripts/sid_chroot.sh run "$v" sh -c '
        python setup.py -q build_ext --inplace --build-temp "build/temp-$0" >/dev/null
        python scripts/hook_fingerprints.py --releases --json "build/hook-fp/$0.json" >/dev/null
    ' "$v"
done
if [ "${1:-}" = --c-table ]; then
    python scripts/hook_fingerprints.py --c-table "$out"/*.json
else
    python scripts/hook_fingerprints.py --markdown "$out"/*.json
fi
