#!/usr/bin/env bash
# The translator's RE2 syntax checker against the real RE2 (libre2, the one
# gRPC links on Debian): same accept/refuse verdict on a corpus of regexes
# and on random ones built from RE2 syntax pieces. Prints TAP.
set -uo pipefail
top=${COXSWAIN_TOP:-$(cd "$(dirname "$0")/../../.." && pwd)}
build=${COXSWAIN_BUILD:-$top/build}
echo "1..1"
if ! command -v g++ >/dev/null || [ ! -f /usr/include/re2/re2.h ]; then
    echo "ok 1 - xlate_re2 agrees with libre2 # SKIP g++ or libre2-dev missing (make deps)"
    exit 0
fi
bin="$build/tests/integration/translator/re2diff"
mkdir -p "$(dirname "$bin")"
san=()
[ "${COXSWAIN_SANITIZE:-0}" = 1 ] && san=(-fsanitize=address,undefined)
if ! gcc -std=c11 -O1 "${san[@]}" -c "$top/translator/xlate_re2.c" -o "$bin.o" 2>"$bin.log" ||
    ! g++ -std=c++17 -O1 "${san[@]}" -I"$top/translator" "$top/tests/integration/translator/re2diff.cc" \
        "$bin.o" -lre2 -o "$bin" 2>>"$bin.log"; then
    sed 's/^/# /' "$bin.log"
    echo "not ok 1 - xlate_re2 agrees with libre2 (build failed)"
    exit 1
fi
n=200000
[ "${COXSWAIN_SANITIZE:-0}" != 0 ] && n=30000
# the corpus: every regex of the translator's tests and goldens
corpus=$(mktemp)
trap 'rm -f "$corpus"' EXIT
{
    grep -ohE 'regex: "[^"]*"' "$top"/tests/data/translator/*/input.yaml | sed 's/^regex: "//; s/"$//'
    grep -ohE '^        "[^"]*",$' "$top/tests/unit/translator/test_xlate_re2.c" | sed 's/^ *"//; s/",$//' | sed 's/\\\\/\\/g'
    grep -ohE 'BAD\("[^"]*"' "$top/tests/unit/translator/test_xlate_re2.c" | sed 's/^BAD("//; s/"$//' | sed 's/\\\\/\\/g'
} >"$corpus"
out=$("$bin" "$n" <"$corpus")
rc=$?
echo "$out" | sed 's/^#*/#/'
if [ $rc -eq 0 ]; then
    echo "ok 1 - xlate_re2 agrees with libre2"
else
    echo "not ok 1 - xlate_re2 agrees with libre2"
fi
