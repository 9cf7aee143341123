#!/usr/bin/env bash
# `make bench`: runs every benchmark, one at a time, in a fixed order, each
# under a timeout; collects their JSON into bench/results/<date>.json and
# regenerates docs/benchmarks.md (tables, plots in docs/plots/*.svg) and the
# README's "At a glance" block. A benchmark that fails or times out is
# reported (in the output and in docs/benchmarks.md) and the others still
# run; the exit status is then 1.
#
# A benchmark is build/bin/bench_* (C, from bench/bench_*.c) or
# bench/bench_*.{sh,py}. It prints one JSON object on stdout; progress and
# anything else go to stderr (shown, and kept in $BUILD/bench-logs/NAME.log):
#
#   {"benchmark": "filters",                 # the section's key (required)
#    "title": "Filter layer: ...",            # the section's heading
#    "notes": "what was measured, how; targets",
#    "rows": [{"case": "...", "p50_ms": 1.2, "p99_ms": 3.0,
#              "baseline": "what the baseline is",
#              "baseline_p50_ms": 3.4, "ratio": 0.35, ...}, ...],
#    "glance": [{"metric": "...", "value": "12 ms p99",     # optional: the
#                "baseline": "0.4x client-go"}],          # headline(s)
#    "plots": [...]}                          # optional, see below
#
# Each row is one line of the section's table (columns: case, pNN_*, then
# baseline*, ratio, the rest); every row names its baseline, measured in the
# same run on the same machine. report.py fills "ratio" from p50_ms /
# baseline_p50_ms when a row has both and no ratio. "glance" entries go to
# the "At a glance" tables (docs/benchmarks.md and README.md); without
# them the first row stands for the benchmark.
#
# Plot data (the extension of the format; drawn with gnuplot into
# docs/plots/<benchmark>-<name>.svg):
#
#   "plots": [{"name": "scaling",             # [A-Za-z0-9_-]+, unique per benchmark
#              "title": "Translation time against N",
#              "xlabel": "VirtualServices", "ylabel": "ms",
#              "logx": true, "logy": false,   # optional
#              "style": "linespoints",        # lines | linespoints | points | steps
#                                             # | boxes | intervals
#              "series": [{"label": "full translation (p50)",
#                          "points": [[1000, 11.5], [10000, 120.3]]},
#                         {"label": "baseline: parse", "points": [...]}]}]
#
# A point is [x, y]; with style "intervals" it is [x_from, x_to, y]: a bar
# from x_from to x_to at height y -- timelines (who led when, when a fault
# was active, the phases of a failover). Optional: "xtics"/"ytics", lists
# of [position, "label"] (categories: bars of a "boxes" plot, the rows of a
# timeline; without ytics an intervals plot labels each row by its series),
# "boxwidth" (boxes, in x units, default 0.8).
# Benchmarks that print no plots get the ones report.py derives from their
# rows (translator: time against N; xds: latency against streams;
# election: handover and failover against the Python elector; takeover:
# failover timelines).
#
# Environment: BENCH=substring (only matching benchmarks; the other
# sections keep their last results), BENCH_TIMEOUT (seconds per benchmark,
# default 1800), BENCH_TIMEOUT_<name> (one benchmark's, e.g.
# BENCH_TIMEOUT_takeover=3600), BUILD (default build). For tests of this
# driver: BENCH_PATHS (the benchmark programs, instead of the search),
# BENCH_RESULTS (results directory), BENCH_DOC (the markdown file; plots go
# next to it in plots/), BENCH_README (empty: leave the README alone).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
BUILD=${BUILD:-build}
export COXSWAIN_TOP="$top" COXSWAIN_BUILD="$top/$BUILD"
export PYTHONDONTWRITEBYTECODE=1
TIMEOUT=${BENCH_TIMEOUT:-1800}
stamp=$(date -u +%Y-%m-%d)
results=${BENCH_RESULTS:-bench/results}
doc=${BENCH_DOC:-docs/benchmarks.md}
readme_file=${BENCH_README-README.md}
out="$results/$stamp.json"
logdir="$BUILD/bench-logs"
mkdir -p "$results" "$logdir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The run order: the API server and the client side first, then the pure
# modules, then what combines them. Benchmarks not named here run last, in
# name order.
ORDER=(kubesim informer filters translator xds election takeover latency)

shopt -s nullglob
declare -A path_of=()
if [ -n "${BENCH_PATHS:-}" ]; then
    read -r -a candidates <<<"$BENCH_PATHS"
else
    candidates=("$BUILD"/bin/bench_* bench/bench_*.sh bench/bench_*.py)
fi
for b in "${candidates[@]}"; do
    case "$b" in *.d | *.o) continue ;; esac
    name=$(basename "$b")
    name=${name#bench_}
    name=${name%.*}
    path_of[$name]=$b
done
names=()
for n in "${ORDER[@]}"; do
    [ -n "${path_of[$n]:-}" ] && names+=("$n")
done
for n in $(printf '%s\n' "${!path_of[@]}" | sort); do
    [[ " ${ORDER[*]} " == *" $n "* ]] || names+=("$n")
done
selected=()
for n in "${names[@]}"; do
    [ -n "${BENCH:-}" ] && [[ "$n" != *"$BENCH"* ]] && continue
    selected+=("$n")
done
if [ ${#selected[@]} -eq 0 ]; then
    echo "bench: no benchmark matches${BENCH:+ BENCH=$BENCH}" >&2
    exit 1
fi

status=0
ok=0
failed=()
suite_start=$(date +%s.%N)
i=0
for name in "${selected[@]}"; do
    i=$((i + 1))
    b=${path_of[$name]}
    case "$b" in
    *.py) cmd=(/usr/bin/python3 "$b") ;;
    *.sh) cmd=(bash "$b") ;;
    *) cmd=("$b") ;;
    esac
    var="BENCH_TIMEOUT_${name//[^A-Za-z0-9_]/_}"
    limit=${!var:-$TIMEOUT}
    echo "bench: [$i/${#selected[@]}] $name (timeout ${limit}s) ..." >&2
    start=$(date +%s.%N)
    timeout -k 10 "$limit" "${cmd[@]}" >"$tmp/$name.out" 2> >(tee "$logdir/$name.log" >&2) </dev/null
    rc=$?
    end=$(date +%s.%N)
    secs=$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f", b-a}')
    why=""
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        why="timed out after ${limit} s"
    elif [ $rc -ne 0 ]; then
        why="exited with status $rc"
    elif ! /usr/bin/python3 - "$tmp/$name.out" "$name" "$secs" >"$tmp/$name.json" <<'EOF'; then
import json, sys
path, name, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
with open(path) as f:
    b = json.load(f)
if not isinstance(b, dict) or b.get("benchmark") != name:
    sys.exit("prints benchmark %r, expected %r" % (b.get("benchmark") if isinstance(b, dict) else b, name))
b["wall_s"] = secs
json.dump(b, sys.stdout)
EOF
        why="printed no valid JSON object named \"$name\" on stdout"
    fi
    if [ -n "$why" ]; then
        echo "bench: $name FAILED ($why) after ${secs}s; log: $logdir/$name.log" >&2
        failed+=("$name")
        status=1
        /usr/bin/python3 -c '
import json, sys
name, why, log = sys.argv[1:4]
try:
    tail = "".join(open(log, errors="replace").readlines()[-15:])
except OSError:
    tail = ""
json.dump({"benchmark": name, "failed": why, "log_tail": tail}, sys.stdout)
' "$name" "$why" "$logdir/$name.log" >"$tmp/$name.json"
    else
        ok=$((ok + 1))
        echo "bench: $name ok in ${secs}s" >&2
    fi
done
suite_end=$(date +%s.%N)
wall=$(awk -v a="$suite_start" -v b="$suite_end" 'BEGIN{printf "%.1f", b-a}')
files=()
for name in "${selected[@]}"; do
    [ -s "$tmp/$name.json" ] && files+=("$tmp/$name.json")
done
extra=()
# The README's table and the suite's wall time only from a whole run.
if [ -z "${BENCH:-}" ]; then
    [ -n "$readme_file" ] && extra+=(--readme "$readme_file")
    extra+=(--wall-s "$wall")
fi
if ! /usr/bin/python3 bench/report.py --results "$out" --markdown "$doc" \
    --plots "$(dirname "$doc")/plots" "${extra[@]}" "${files[@]}"; then
    status=1
fi
echo "bench: $ok of ${#selected[@]} benchmarks ok in ${wall}s${failed:+; failed: ${failed[*]}}" >&2
echo "bench: wrote $out, $doc, $(dirname "$doc")/plots/" >&2
exit $status
