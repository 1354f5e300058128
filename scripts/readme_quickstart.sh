#!/usr/bin/env bash
# The README's quick start, literally, as a new user runs it: the two commands of README.md's first
# ```sh block (the main job, then the tests), read from the README itself so that the text and
# this check cannot drift apart, run in this checkout inside a fresh venv made for the purpose
# with nothing installed into it beforehand, and without this shell's FASTCOPY_* and PYTHON*
# variables (CI's FASTCOPY_WERROR included: a user has none of them).
#
#   scripts/readme_quickstart.sh                  # the oldest and the newest pyenv CPython >= 3.10
#   scripts/readme_quickstart.sh PYTHON [...]     # these interpreters
#
# Each venv lives in a temporary folder and is removed afterwards, so a later run starts from
# nothing again.  Exit status: the number of interpreters on which a command failed.
set -u
cd "$(dirname "$0")/.." || exit 99

# the first ```sh block's non-empty lines, each less its trailing comment
mapfile -t cmds < <(awk '/^```sh$/ {inside = 1; next} inside && /^```/ {exit}
                         inside && NF {sub(/[ \t]+#.*$/, ""); print}' README.md)
if [ "${#cmds[@]}" != 2 ]; then
    echo "readme_quickstart: expected two commands in README.md's first sh block, found ${#cmds[@]}" >&2
    exit 99
fi

pythons=("$@")
if [ "${#pythons[@]}" = 0 ]; then
    root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
    mapfile -t pythons < <(for py in "$root"/versions/*/bin/python; do
        "$py" -c 'import sys
if sys.version_info >= (3, 10) and sys.implementation.name == "cpython":
    print("%d %d %s" % (sys.version_info[0], sys.version_info[1], sys.executable))' 2>/dev/null
    done | sort -n -k1,1 -k2,2 | awk '{print $3}' | sed -n '1p;$p' | uniq)
fi

fails=0
for py in "${pythons[@]}"; do
    ver=$("$py" -c 'import platform; print(platform.python_version())') || { fails=$((fails + 1)); continue; }
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/fastcopy-readme.XXXXXX")
    "$py" -m venv "$tmp/venv" || { echo "!!! $ver: no venv"; fails=$((fails + 1)); rm -rf "$tmp"; continue; }
    for cmd in "${cmds[@]}"; do
        echo "=== Python $ver, fresh venv: $cmd"
        start=$SECONDS
        # a login-like environment: the venv activated, nothing of ours exported
        env -u PYTHONPATH -u PYTHONHOME -u FASTCOPY_WERROR -u FASTCOPY_SANITIZE \
            -u FASTCOPY_REQUIRE_CORE -u FASTCOPY_AUTOPATCH -u VIRTUAL_ENV \
            bash -c '. "$1/bin/activate" && eval "$2"' sh "$tmp/venv" "$cmd" >"$tmp/out" 2>&1
        rc=$?
        tail -n 3 "$tmp/out"
        echo "    (exit $rc, $((SECONDS - start)) s)"
        if [ "$rc" != 0 ]; then
            grep -E '^(FAILED|ERROR)|rror' "$tmp/out" | head -n 30
            echo "!!! $ver: the README's command failed: $cmd"
            fails=$((fails + 1))
            break
        fi
    done
    rm -rf "$tmp"
done
echo "readme_quickstart: interpreters failing: $fails"
exit "$fails"
