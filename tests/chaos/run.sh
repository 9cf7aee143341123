#!/usr/bin/env bash
# `make chaos`: tests/chaos/chaos.py with its artifacts kept in
# $BUILD/chaos/<time>-<seed>/ (audit log, every replica's log, summary.json),
# then the "Chaos" section of docs/benchmarks.md updated from the run
# (CHAOS_REPORT=0 leaves the docs alone). Environment: CHAOS_SECONDS
# (default 600), CHAOS_SEED, CHAOS_MODE (auto|elect|run), CHAOS_STRICT.
# Exit status: chaos.py's (0 no violation, 1 violations, 2 harness failure).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
export COXSWAIN_TOP="$top" COXSWAIN_BUILD="$BUILD" PYTHONDONTWRITEBYTECODE=1
seed=${CHAOS_SEED:-$(/usr/bin/python3 -c 'import random; print(random.SystemRandom().randrange(1, 2**31))')}
out="$BUILD/chaos/$(date -u +%Y%m%dT%H%M%S)-$seed"
mkdir -p "$out"
/usr/bin/python3 tests/chaos/chaos.py --seed "$seed" --out "$out" --json "$out/summary.json" \
    --bench-json "$out/bench.json"
rc=$?
if [ "${CHAOS_REPORT:-1}" = 1 ] && [ -s "$out/bench.json" ] && [ $rc -ne 2 ]; then
    /usr/bin/python3 bench/report.py --results "bench/results/$(date -u +%Y-%m-%d).json" \
        --markdown docs/benchmarks.md --plots docs/plots "$out/bench.json" &&
        echo "chaos: updated the Chaos section of docs/benchmarks.md" >&2
fi
echo "chaos: artifacts in $out" >&2
exit $rc
