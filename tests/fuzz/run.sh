#!/usr/bin/env bash
# Runs every fuzz target for FUZZ_SECONDS (default 20) from its seed corpus
# under tests/fuzz/corpus/<target>/ (new inputs go to a scratch copy, so the
# committed corpus only changes by hand). Fails on the first crash.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
FUZZ_BUILD=${FUZZ_BUILD:-build/fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
cd "$top"
status=0
for bin in "$FUZZ_BUILD"/fuzz/fuzz_*; do
    [ -x "$bin" ] || continue
    name=$(basename "$bin")
    work="$FUZZ_BUILD/corpus/$name"
    mkdir -p "$work" "$FUZZ_BUILD/artifacts"
    if [ -d "tests/fuzz/corpus/$name" ]; then
        cp -n "tests/fuzz/corpus/$name"/* "$work"/ 2>/dev/null || true
    fi
    dict=()
    [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
    echo "fuzz: $name for ${FUZZ_SECONDS}s"
    if ! "$bin" -max_total_time="$FUZZ_SECONDS" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$FUZZ_BUILD/artifacts/$name-" "${dict[@]}" "$work" \
        >"$FUZZ_BUILD/$name.log" 2>&1; then
        echo "fuzz: $name FAILED; see $FUZZ_BUILD/$name.log and $FUZZ_BUILD/artifacts/" >&2
        tail -n 40 "$FUZZ_BUILD/$name.log" >&2
        status=1
    else
        grep -E '^#[0-9]+.*DONE' "$FUZZ_BUILD/$name.log" | tail -n1 || true
    fi
done
exit $status
