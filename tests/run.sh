#!/usr/bin/env bash
# Runs every test program and ends with one line: "N passed, N failed"
# (", N skipped" only when a case could not run; its reason is printed).
#
# Test programs speak TAP ("ok N - name", "not ok N - name", "# SKIP why"):
#   unit         $BUILD/tests/unit/<module>/test_*        (C, in parallel)
#   integration  $BUILD/tests/integration/**/test_* (C) and
#                tests/integration/**/test_*.{sh,py}      (a folder at a time)
#   e2e          tests/e2e/**/test_*.{sh,py}, $BUILD/tests/e2e/**/test_*
#   hostile      tests/hostile/**/test_*.py, $BUILD/tests/hostile/**/test_*
#                (hostile inputs against live replicas; tests/hostile/hostilelib.py)
#   suites named in TEST_SUITES (e.g. "image": tests/image/test_*.{sh,py},
#                which need what `make image` built; make test-image)
# A program that dies, times out, or reports fewer cases than it planned
# counts as failed cases, never as passes.
#
# Environment: BUILD (default build), T (only programs whose path contains
# T), TEST_LANES (programs run at once, default 2; JOBS is its other name),
# TEST_TIMEOUT (seconds per program, default 600), VALGRIND=1 (run C unit
# programs under valgrind).
# Each program's TAP goes to $BUILD/test-logs/ ($BUILD/valgrind-logs/ under
# VALGRIND=1).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
export COXSWAIN_TOP="$top" COXSWAIN_BUILD="$BUILD" CXT_DATA_DIR="$top/tests/data"
export PYTHONDONTWRITEBYTECODE=1
TEST_LANES=${TEST_LANES:-${JOBS:-2}}
TEST_TIMEOUT=${TEST_TIMEOUT:-600}
filter=${T:-}
# make valgrind runs on the plain build beside make test SANITIZE=1 (.ci/run),
# and may run beside make test: its logs go apart, as the runner empties
# its log dir first
logdir="$BUILD/test-logs"
[ "${VALGRIND:-0}" = 1 ] && logdir="$BUILD/valgrind-logs"
rm -rf "$logdir"
mkdir -p "$logdir"

collect() {
    local kind=$1
    shift
    local f
    for f in "$@"; do
        [ -e "$f" ] || continue
        # match the filter against the path inside the checkout or build
        # dir, not the absolute path (whose worktree name could match)
        local rel=${f#"$BUILD"/}
        rel=${rel#"$top"/}
        [ -n "$filter" ] && [[ "/$rel" != *"$filter"* ]] && continue
        printf '%s\t%s\n' "$kind" "$f"
    done
}

shopt -s globstar nullglob
{
    collect unit "$BUILD"/tests/unit/**/test_*
    collect integration "$BUILD"/tests/integration/**/test_* tests/integration/**/test_*.sh \
        tests/integration/**/test_*.py
    collect e2e "$BUILD"/tests/e2e/**/test_* tests/e2e/**/test_*.sh tests/e2e/**/test_*.py
    collect hostile "$BUILD"/tests/hostile/**/test_* tests/hostile/**/test_*.py
    for suite in ${TEST_SUITES:-}; do
        collect "$suite" tests/"$suite"/test_*.sh tests/"$suite"/test_*.py
    done
} | grep -vE '\.(d|o)$' >"$logdir/programs"

# log_of PATH: the log of a program (its path inside the checkout or build
# dir, slashes made underscores).
log_of() {
    local name=${1#"$BUILD"/}
    name=${name#"$top"/}
    echo "$logdir/${name//\//_}.log"
}

# run_one KIND PATH: runs one program, writes its TAP to a log and a
# one-line tally "pass fail skip rc seconds" next to it.
run_one() {
    local kind=$1 prog=$2
    local log
    log=$(log_of "$prog")
    local start=$EPOCHREALTIME rc
    local -a cmd
    case "$prog" in
    *.py) cmd=(/usr/bin/python3 "$prog") ;;
    *.sh) cmd=(bash "$prog") ;;
    *)
        if [ "${VALGRIND:-0}" = 1 ] && [ "$kind" = unit ]; then
            cmd=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
                --track-origins=yes --suppressions="$top/tests/valgrind.supp" "$prog")
        else
            cmd=("$prog")
        fi
        ;;
    esac
    timeout -k 10 "$TEST_TIMEOUT" "${cmd[@]}" >"$log" 2>&1 </dev/null
    rc=$?
    local end=$EPOCHREALTIME
    local pass fail skip plan reported
    # one pass over the log: "ok N" lines (those with "# SKIP" are skips),
    # "not ok N" lines, the first plan line, the seconds taken
    read -r pass fail skip plan secs < <(awk -v a="$start" -v b="$end" '
        /^ok [0-9]+/ { if ($0 ~ /# SKIP/) s++; else p++ }
        /^not ok [0-9]+/ { f++ }
        plan == "" && match($0, /^1\.\.[0-9]+/) { plan = substr($0, 4, RLENGTH - 3) }
        END { printf "%d %d %d %s %.1f\n", p, f, s, plan == "" ? "-" : plan, b - a }' "$log")
    reported=$((pass + fail + skip))
    if [ "$plan" != - ] && [ "$reported" -lt "$plan" ]; then
        fail=$((fail + plan - reported))
        echo "# runner: planned $plan cases, saw $reported" >>"$log"
    fi
    if [ $rc -ne 0 ] && [ "$fail" -eq 0 ]; then
        fail=1
        if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
            echo "# runner: timed out after ${TEST_TIMEOUT}s" >>"$log"
        else
            echo "# runner: exited with status $rc" >>"$log"
        fi
    fi
    echo "$pass $fail $skip $rc $secs" >"$log.tally"
}
export -f run_one log_of
export logdir top BUILD TEST_TIMEOUT

report_one() {
    local prog=$1
    local name=${prog#"$BUILD"/}
    name=${name#"$top"/}
    local log
    log=$(log_of "$prog")
    local pass fail skip rc secs
    read -r pass fail skip rc secs <"$log.tally"
    if [ "$fail" -gt 0 ]; then
        printf 'FAIL %-60s %3s passed, %s failed (%ss)\n' "$name" "$pass" "$fail" "$secs"
        sed 's/^/    | /' "$log" | tail -n 60
    else
        printf 'ok   %-60s %3s passed (%ss)\n' "$name" "$pass" "$secs"
    fi
    [ "$skip" -gt 0 ] && grep -E '^ok [0-9]+.*# SKIP' "$log" | sed 's/^/    skipped: /'
    return 0
}

# Unit, integration, e2e and hostile programs run in TEST_LANES lanes
# (default 2), longest first, so that no long program starts last while the
# other lane idles. A unit program is a job of its own; the others (which
# start servers and wait on clocks more than they compute) go by folder: a
# lane takes a whole folder at a time, so programs sharing a folder's
# helpers and fixtures never overlap. Those whose first lines say
# "cx-test: exclusive" (they measure latencies that a neighbour would
# disturb) run one at a time after the lanes. Those that say "cx-test:
# quiet" spend a fixed time mostly waiting, with next to no CPU (a soak of
# idle replicas): they run one at a time beside the exclusive ones, where
# they disturb nothing and the lane would idle (in the lanes instead when
# an exclusive program shares their folder). TEST_LANES=1 runs everything
# one at a time, in order.
#
# How long a program takes comes from tests/durations ("seconds path" lines,
# path as in the report); a program not listed counts as 5 s. The order is
# all it changes. Each run writes its own measures to $logdir/durations:
# after adding long programs, copy a full run's file over tests/durations.

# source_of PATH: the file that carries a program's marker (a C program's
# source for a binary under $BUILD).
source_of() {
    case "$1" in
    "$BUILD"/*) echo "$top/${1#"$BUILD"/}.c" ;;
    *) echo "$1" ;;
    esac
}
# marker PATH: "exclusive", "quiet" or nothing
marker() {
    head -n 40 "$(source_of "$1")" 2>/dev/null | grep -m1 -oE 'cx-test: (exclusive|quiet)' |
        cut -d' ' -f2
}

: >"$logdir/exclusive"
: >"$logdir/quiet"
: >"$logdir/shared"
while IFS=$'\t' read -r kind prog; do
    m=
    [ "$TEST_LANES" -gt 1 ] && [ "$kind" != unit ] && m=$(marker "$prog")
    printf '%s\t%s\n' "$kind" "$prog" >>"$logdir/${m:-shared}"
done <"$logdir/programs"
# a quiet program never overlaps an exclusive one of its folder
while IFS=$'\t' read -r kind prog; do
    if grep -qF "${prog%/*}/" "$logdir/exclusive"; then
        printf '%s\t%s\n' "$kind" "$prog" >>"$logdir/shared"
    else
        printf '%s\t%s\n' "$kind" "$prog"
    fi
done <"$logdir/quiet" >"$logdir/quiet.tmp"
mv "$logdir/quiet.tmp" "$logdir/quiet"

durations=$top/tests/durations
[ -r "$durations" ] || durations=/dev/null
# The lanes' jobs, longest first: "seconds<TAB>unit<TAB>PATH" for a unit
# program, "seconds<TAB>folder<TAB>DIR" for a folder (its programs' sum).
awk -F'\t' -v top="$top/" -v build="$BUILD/" '
    FILENAME == ARGV[1] { if ($0 !~ /^#/ && split($0, w, " ") == 2) secs[w[2]] = w[1]; next }
    {
        name = $2
        if (index(name, build) == 1) name = substr(name, length(build) + 1)
        else if (index(name, top) == 1) name = substr(name, length(top) + 1)
        s = (name in secs) ? secs[name] : 5
        if ($1 == "unit") { job = "unit\t" $2 }
        else { dir = $2; sub(/\/[^\/]*$/, "", dir); job = "folder\t" dir }
        if (!(job in total)) order[n++] = job
        total[job] += s
    }
    END { for (i = 0; i < n; i++) printf "%s\t%d\t%s\n", total[order[i]], i, order[i] }
' "$durations" "$logdir/shared" | sort -t$'\t' -k1,1gr -k2,2n |
    cut -f3- >"$logdir/jobs"

# run_list FILE: runs FILE's programs one at a time.
run_list() {
    local kind prog
    while IFS=$'\t' read -r kind prog; do
        run_one "$kind" "$prog"
        flock "$logdir/.report.lock" bash -c 'report_one "$1"' _ "$prog"
    done <"$1"
}

# run_folder FILE DIR: runs FILE's programs under DIR one at a time.
run_folder() {
    local list=$1 dir=$2 kind prog
    while IFS=$'\t' read -r kind prog; do
        [ "$kind" != unit ] && [ "${prog%/*}" = "$dir" ] || continue
        run_one "$kind" "$prog"
        flock "$logdir/.report.lock" bash -c 'report_one "$1"' _ "$prog"
    done <"$list"
}
# run_job unit PATH | run_job folder DIR, reporting each program under a
# lock (lanes print whole blocks).
run_job() {
    if [ "$1" = unit ]; then
        run_one unit "$2"
        flock "$logdir/.report.lock" bash -c 'report_one "$1"' _ "$2"
    else
        run_folder "$logdir/shared" "$2"
    fi
}
export -f run_folder run_job report_one

if [ "$TEST_LANES" -gt 1 ]; then
    tr '\t' '\n' <"$logdir/jobs" |
        xargs -r -d '\n' -n2 -P "$TEST_LANES" bash -c 'run_job "$1" "$2"' _
    run_list "$logdir/quiet" &
    run_list "$logdir/exclusive"
    wait
else
    while IFS=$'\t' read -r kind prog; do
        run_one "$kind" "$prog"
        report_one "$prog"
    done <"$logdir/shared"
fi

# this run's measures, in tests/durations' form; a program that did not
# run (the lanes never reached it) fails
while IFS=$'\t' read -r _ prog; do
    name=${prog#"$BUILD"/}
    name=${name#"$top"/}
    log=$(log_of "$prog")
    if ! [ -e "$log.tally" ]; then
        echo "# runner: never ran" >>"$log"
        echo "0 1 0 - 0" >"$log.tally"
        report_one "$prog" >&2
        continue
    fi
    read -r _ _ _ _ secs <"$log.tally"
    echo "$secs $name"
done <"$logdir/programs" | sort -k1,1gr >"$logdir/durations"

total_pass=0 total_fail=0 total_skip=0 programs=0
for t in "$logdir"/*.tally; do
    [ -e "$t" ] || continue
    read -r pass fail skip _ _ <"$t"
    total_pass=$((total_pass + pass))
    total_fail=$((total_fail + fail))
    total_skip=$((total_skip + skip))
    programs=$((programs + 1))
done
if [ $programs -eq 0 ]; then
    echo "no test programs found${filter:+ matching '$filter'}" >&2
    total_fail=1
fi
# the failed cases again, each with the lines just before it (a Python
# case's exception, a C check's message), last where a reader of a long,
# cut output still sees them
if [ "$total_fail" -gt 0 ]; then
    echo "failed cases:"
    for t in "$logdir"/*.tally; do
        read -r _ fail _ _ _ <"$t"
        [ "$fail" -gt 0 ] || continue
        echo "  ${t##*/}" | sed 's/\.log\.tally$//'
        grep -B3 -E '^not ok [0-9]+|^# runner:' "${t%.tally}" | head -n 24 | sed 's/^/    | /'
    done
fi
line="$total_pass passed, $total_fail failed"
[ "$total_skip" -gt 0 ] && line="$line, $total_skip skipped"
echo "$line"
[ "$total_fail" -eq 0 ]
