#!/usr/bin/env bash
# Runs every test program and ends with one line: "N passed, N failed"
# (", N skipped" only when a case could not run; its reason is printed).
#
# Test programs speak TAP ("ok N - name", "not ok N - name", "# SKIP why"):
#   unit         $BUILD/tests/unit/<module>/test_*        (C, in parallel)
#   integration  $BUILD/tests/integration/**/test_* (C) and
#                tests/integration/**/test_*.{sh,py}      (one at a time)
#   e2e          tests/e2e/**/test_*.{sh,py}, $BUILD/tests/e2e/**/test_*
#   hostile      tests/hostile/**/test_*.py, $BUILD/tests/hostile/**/test_*
#                (hostile inputs against live replicas; tests/hostile/hostilelib.py)
#   suites named in TEST_SUITES (e.g. "image": tests/image/test_*.{sh,py},
#                which need what `make image` built; make test-image)
# A program that dies, times out, or reports fewer cases than it planned
# counts as failed cases, never as passes.
#
# Environment: BUILD (default build), T (only programs whose path contains
# T), JOBS (parallel unit programs, default 2), TEST_TIMEOUT (seconds per
# program, default 600), VALGRIND=1 (run C unit programs under valgrind),
# TEST_LANES (integration/e2e/hostile folders run at once, default 2).
# Each program's TAP goes to $BUILD/test-logs/ ($BUILD/valgrind-logs/ under
# VALGRIND=1).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
export COXSWAIN_TOP="$top" COXSWAIN_BUILD="$BUILD" CXT_DATA_DIR="$top/tests/data"
export PYTHONDONTWRITEBYTECODE=1
JOBS=${JOBS:-2}
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

# run_one KIND PATH: runs one program, writes its TAP to a log and a
# one-line tally "pass fail skip rc seconds" next to it.
run_one() {
    local kind=$1 prog=$2
    local name=${prog#"$BUILD"/}
    name=${name#"$top"/}
    local log="$logdir/$(echo "$name" | tr '/' '_').log"
    local start end rc
    start=$(date +%s.%N)
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
    end=$(date +%s.%N)
    local pass fail skip plan reported
    pass=$(grep -cE '^ok [0-9]+' "$log" | tr -d ' ')
    skip=$(grep -cE '^ok [0-9]+.*# SKIP' "$log" | tr -d ' ')
    fail=$(grep -cE '^not ok [0-9]+' "$log" | tr -d ' ')
    pass=$((pass - skip))
    plan=$(sed -nE 's/^1\.\.([0-9]+).*/\1/p' "$log" | head -n1)
    reported=$((pass + fail + skip))
    if [ -n "$plan" ] && [ "$reported" -lt "$plan" ]; then
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
    printf '%s %s %s %s %.1f\n' "$pass" "$fail" "$skip" "$rc" \
        "$(awk -v a="$start" -v b="$end" 'BEGIN{print b-a}')" >"$log.tally"
}
export -f run_one
export logdir top BUILD TEST_TIMEOUT

report_one() {
    local prog=$1
    local name=${prog#"$BUILD"/}
    name=${name#"$top"/}
    local log="$logdir/$(echo "$name" | tr '/' '_').log"
    local pass fail skip rc secs
    read -r pass fail skip rc secs <"$log.tally"
    if [ "$fail" -gt 0 ]; then
        printf 'FAIL %-60s %3s passed, %s failed (%ss)\n' "$name" "$pass" "$fail" "$secs"
        sed 's/^/    | /' "$log" | tail -n 60
    else
        printf 'ok   %-60s %3s passed (%ss)\n' "$name" "$pass" "$secs"
    fi
    grep -E '^ok [0-9]+.*# SKIP' "$log" | sed 's/^/    skipped: /'
}

# Unit programs in parallel. Then integration, e2e and hostile programs,
# which start servers and wait on clocks more than they compute: those
# whose first lines say "cx-test: exclusive" (they measure latencies that a
# neighbour would disturb) one at a time, the others in TEST_LANES lanes
# (default 2). A lane takes a whole folder at a time, so programs sharing a
# folder's helpers and fixtures never overlap.
TEST_LANES=${TEST_LANES:-2}
awk -F'\t' '$1=="unit"{print $2}' "$logdir/programs" |
    xargs -r -P "$JOBS" -I{} bash -c 'run_one unit "$1"' _ {}
awk -F'\t' '$1=="unit"{print $2}' "$logdir/programs" | while read -r p; do report_one "$p"; done

# source_of PATH: the file that carries a program's marker (a C program's
# source for a binary under $BUILD).
source_of() {
    case "$1" in
    "$BUILD"/*) echo "$top/${1#"$BUILD"/}.c" ;;
    *) echo "$1" ;;
    esac
}
exclusive() {
    head -n 40 "$(source_of "$1")" 2>/dev/null | grep -q 'cx-test: exclusive'
}

: >"$logdir/exclusive"
: >"$logdir/shared"
while IFS=$'\t' read -r kind prog; do
    [ "$kind" = unit ] && continue
    if [ "$TEST_LANES" -gt 1 ] && exclusive "$prog"; then
        printf '%s\t%s\n' "$kind" "$prog" >>"$logdir/exclusive"
    else
        printf '%s\t%s\n' "$kind" "$prog" >>"$logdir/shared"
    fi
done <"$logdir/programs"

# run_folder FILE DIR: runs FILE's programs under DIR one at a time,
# reporting each under a lock (lanes print whole blocks).
run_folder() {
    local list=$1 dir=$2 kind prog
    while IFS=$'\t' read -r kind prog; do
        [ "$(dirname "$prog")" = "$dir" ] || continue
        run_one "$kind" "$prog"
        flock "$logdir/.report.lock" bash -c 'report_one "$1"' _ "$prog"
    done <"$list"
}
export -f run_folder report_one

if [ "$TEST_LANES" -gt 1 ]; then
    awk -F'\t' '{print $2}' "$logdir/shared" | xargs -r -n1 dirname | awk '!seen[$0]++' |
        xargs -r -P "$TEST_LANES" -I{} bash -c 'run_folder "$1" "$2"' _ "$logdir/shared" {}
    while IFS=$'\t' read -r kind prog; do
        run_one "$kind" "$prog"
        report_one "$prog"
    done <"$logdir/exclusive"
else
    while IFS=$'\t' read -r kind prog; do
        run_one "$kind" "$prog"
        report_one "$prog"
    done <"$logdir/shared"
fi

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
line="$total_pass passed, $total_fail failed"
[ "$total_skip" -gt 0 ] && line="$line, $total_skip skipped"
echo "$line"
[ "$total_fail" -eq 0 ]
