#!/usr/bin/env bash
# Long differential fuzz run of fastcopy.deepcopy against copy.deepcopy.
#
#   scripts/fuzz_long.sh [N] [FIRST_SEED]
#
# N defaults to 100000 graphs; FIRST_SEED defaults to a random one, printed so a failing run
# can be repeated exactly. A failing seed prints its own reproduction command
# (python tests/fuzzgraph.py --seed S --impl fastcopy --show).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
N=${1:-100000}
SEED=${2:-$(( (RANDOM << 15 | RANDOM) ))}
echo "fuzz_long.sh: N=$N FIRST_SEED=$SEED python=$("$PYTHON" -c 'import sys; print(sys.version.split()[0])')"
echo "repeat with: scripts/fuzz_long.sh $N $SEED"
start=$(date +%s)
FASTCOPY_FUZZ_N=$N FASTCOPY_FUZZ_SEED=$SEED FASTCOPY_THREAD_ROUNDS=${FASTCOPY_THREAD_ROUNDS:-200} \
    "$PYTHON" -m pytest -q -p no:cacheprovider tests/test_fuzz.py tests/test_threads.py "${@:3}"
echo "fuzz_long.sh: $(( $(date +%s) - start )) s"
