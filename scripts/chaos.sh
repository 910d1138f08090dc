#!/usr/bin/env bash
# The long chaos run of the sync engine (Tests/chaos; the CI run in scripts/test.sh is the short one).
#
#   scripts/chaos.sh [pytest args...]
#
# Runs Tests/chaos with, by default, 2000 SIGKILLs of a crash host (CHAOS_KILLS), 1000 more on an
# encrypted store (CHAOS_ENC_KILLS), 1000 SIGKILLs during key changes (CHAOS_REKEY_KILLS), 1000 fault rounds
# with 3 clients (CHAOS_ROUNDS, CHAOS_CLIENTS) and 100 in-flight edit trials, CHAOS_RUNS times (default 1), each
# with a fresh random seed unless CHAOS_SEED is set; every run prints its seed and its counts and
# writes them to build/chaos/summary-<seed>.json. Stops at the first failing run (rerun it with
# CHAOS_SEED=<seed>). Needs the dev server (built here unless SKIP_BUILD=1) and the syncstore Python
# package installed in .venv (scripts/test.sh does it: pip install ./bindings/python, which takes
# build/lib/libsyncstore.so.1); SYNCSTORE_LIB, when set, overrides the packaged library.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
    swift build --product syncstore-devserver
fi
export SYNCSTORE_DEVSERVER="${SYNCSTORE_DEVSERVER:-$PWD/.build/debug/syncstore-devserver}"
export CHAOS_KILLS="${CHAOS_KILLS:-2000}"
export CHAOS_ENC_KILLS="${CHAOS_ENC_KILLS:-1000}"
export CHAOS_REKEY_KILLS="${CHAOS_REKEY_KILLS:-1000}"
export CHAOS_ROUNDS="${CHAOS_ROUNDS:-1000}"
export CHAOS_CLIENTS="${CHAOS_CLIENTS:-3}"
export CHAOS_INFLIGHT_TRIALS="${CHAOS_INFLIGHT_TRIALS:-100}"
export CHAOS_CALLBACK_RUNS="${CHAOS_CALLBACK_RUNS:-300}"
.venv/bin/python -c "import syncstore" || { echo "install the package first: .venv/bin/pip install ./bindings/python"; exit 1; }
mkdir -p build/chaos
runs="${CHAOS_RUNS:-1}"
fixed_seed="${CHAOS_SEED:-}"
for ((run = 1; run <= runs; run++)); do
    seed="${fixed_seed:-$(python3 -c 'import random; print(random.SystemRandom().randrange(1, 2**31))')}"
    echo "== chaos run $run/$runs: CHAOS_SEED=$seed kills=$CHAOS_KILLS encrypted=$CHAOS_ENC_KILLS rekey=$CHAOS_REKEY_KILLS rounds=$CHAOS_ROUNDS clients=$CHAOS_CLIENTS"
    CHAOS_SEED="$seed" CHAOS_SUMMARY="build/chaos/summary-$seed.json" \
        .venv/bin/python -m pytest -q -s Tests/chaos "$@" || { echo "chaos run failed: rerun with CHAOS_SEED=$seed"; exit 1; }
done
