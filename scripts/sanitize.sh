#!/usr/bin/env bash
# Build the C core with AddressSanitizer + UndefinedBehaviorSanitizer (FASTCOPY_SANITIZE=1) in a
# temporary copy of the working tree and run the test suite against it.
# Exits non-zero when a test fails or when a sanitizer report appears in the output.
#
#   scripts/sanitize.sh                         # whole suite (less the lint, typing and docs files)
#   scripts/sanitize.sh tests/test_fuzz.py -k random   # pytest arguments select a subset
#   PYTHON=~/.pyenv/versions/3.12.1/bin/python scripts/sanitize.sh
#   KEEP=1 scripts/sanitize.sh                  # keep the temp tree (path printed)
#
# ASAN_OPTIONS has detect_leaks=0: CPython's own allocations are never freed at exit, by design.
# PYTHONMALLOC=malloc routes the object allocator through malloc, so ASan sees every object.
# Not detect_stack_use_after_return: its fake stack frames move the address of a local off the
# thread's stack, and the core's stack-headroom check then reports RecursionError everywhere.
# EXTRA_ASAN_OPTIONS=... appends options.
set -euo pipefail

PYTHON=${PYTHON:-python}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if [ ! -f src/_fastcopy.c ]; then
    echo "sanitize.sh: src/_fastcopy.c not found: nothing to build" >&2
    exit 2
fi
LIBASAN=$(gcc -print-file-name=libasan.so)
if [ ! -e "$LIBASAN" ]; then
    echo "sanitize.sh: gcc has no libasan.so ($LIBASAN)" >&2
    exit 2
fi

# Third-party C++ extensions (matplotlib's ft2font, torch) throw C++ exceptions: ASan's
# __cxa_throw interceptor needs libstdc++ loaded with it, not dlopen'ed later.
PRELOAD="$LIBASAN"
LIBSTDCXX=$(gcc -print-file-name=libstdc++.so)
if [ -e "$LIBSTDCXX" ]; then
    PRELOAD="$PRELOAD $LIBSTDCXX"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/fastcopy-san.XXXXXX")
if [ -z "${KEEP:-}" ]; then
    trap 'rm -rf "$TMP"' EXIT
else
    echo "sanitize.sh: tree kept in $TMP"
fi
# tracked and untracked-but-not-ignored files: what `git status` would show, no build output
git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
    | tar --null -T - -cf - | tar -xf - -C "$TMP"
cd "$TMP"

# The whole suite less the files that check text and tools, not the core's memory: the C lint,
# mypy and stubtest (test_typing), the docs site and its links.  They run unsanitized in CI.
WHOLE=(tests --ignore=tests/test_lint.py --ignore=tests/test_typing.py
       --ignore=tests/test_docs.py --ignore=tests/test_docs_refs.py)

start=$(date +%s)
FASTCOPY_SANITIZE=1 "$PYTHON" setup.py -q build_ext --inplace >build.log 2>&1 || {
    cat build.log >&2; echo "sanitize.sh: build failed" >&2; exit 2; }
built=$(date +%s)

# Reports go to files (log_path), one per process: pytest's fd capture would otherwise swallow
# the report of a process that the sanitizer stops, and test subprocesses report there too.
REPORTS="$TMP/reports"
mkdir -p "$REPORTS"
set +e
LD_PRELOAD="$PRELOAD" \
ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:strict_string_checks=1:check_initialization_order=1${EXTRA_ASAN_OPTIONS:+:$EXTRA_ASAN_OPTIONS}:log_path=$REPORTS/asan" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$REPORTS/ubsan" \
PYTHONMALLOC=malloc PYTHONFAULTHANDLER=1 \
    "$PYTHON" -m pytest -q -p no:cacheprovider "${@:-${WHOLE[@]}}"
rc=$?
set -e
end=$(date +%s)

reports=$(find "$REPORTS" -type f | wc -l)
echo "sanitize.sh: build $((built - start)) s, tests $((end - built)) s, pytest rc=$rc, sanitizer reports: $reports"
if [ "$reports" != "0" ]; then
    for f in "$REPORTS"/*; do echo "== $f"; head -150 "$f"; done >&2
    exit 1
fi
exit "$rc"
