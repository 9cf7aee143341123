#!/usr/bin/env bash
# `make bench`: runs every benchmark program, collects their JSON into
# bench/results/<date>.json and regenerates docs/benchmarks.md.
#
# A benchmark is build/bin/bench_* (C, from bench/bench_*.c) or
# bench/bench_*.{sh,py}. It prints one JSON object on stdout (anything else
# goes to stderr):
#   {"benchmark": "filters", "title": "...", "notes": "...",
#    "rows": [{"case": "...", "p50_ms": 1.2, "baseline_p50_ms": 3.4,
#              "ratio": 0.35, ...}, ...]}
# Each row is one line of the table bench/report.py writes; every row names
# its baseline, measured in the same run on the same machine.
# BENCH=substring runs only matching benchmarks.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
BUILD=${BUILD:-build}
export COXSWAIN_TOP="$top" COXSWAIN_BUILD="$top/$BUILD"
stamp=$(date -u +%Y-%m-%d)
out="bench/results/$stamp.json"
mkdir -p bench/results
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
n=0
shopt -s nullglob
for b in "$BUILD"/bin/bench_* bench/bench_*.sh bench/bench_*.py; do
    name=$(basename "$b")
    name=${name%.*}
    [ -n "${BENCH:-}" ] && [[ "$name" != *"$BENCH"* ]] && continue
    echo "bench: $name" >&2
    case "$b" in
    *.py) cmd=(/usr/bin/python3 "$b") ;;
    *.sh) cmd=(bash "$b") ;;
    *) cmd=("$b") ;;
    esac
    if "${cmd[@]}" >"$tmp/$name.json"; then
        n=$((n + 1))
    else
        echo "bench: $name failed" >&2
        status=1
        rm -f "$tmp/$name.json"
    fi
done
if [ $n -eq 0 ]; then
    echo "bench: no benchmark ran" >&2
    exit 1
fi
/usr/bin/python3 bench/report.py --results "$out" --markdown docs/benchmarks.md "$tmp"/*.json
echo "bench: wrote $out and docs/benchmarks.md" >&2
exit $status
