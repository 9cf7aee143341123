#!/usr/bin/env bash
# Keeps the chart's CRDs (deploy/helm/coxswain/crds/) identical to the
# source of truth, api/crds/*.yaml.
#
#   deploy/sync-crds.sh           copy api/crds over the chart's crds/
#   deploy/sync-crds.sh --check   exit 1 (listing the files) if they differ
#
# CRDS_SRC and CRDS_DST override the two directories (tests use them).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
src=${CRDS_SRC:-$top/api/crds}
dst=${CRDS_DST:-$top/deploy/helm/coxswain/crds}
mode=sync
case "${1:-}" in
--check) mode=check ;;
"") ;;
*)
    echo "usage: $0 [--check]" >&2
    exit 2
    ;;
esac

if [ ! -d "$src" ]; then
    echo "sync-crds: $src does not exist (the CRDs have not landed yet)" >&2
    exit 1
fi
shopt -s nullglob
src_files=("$src"/*.yaml)
if [ ${#src_files[@]} -eq 0 ]; then
    echo "sync-crds: no *.yaml in $src" >&2
    exit 1
fi

drift=()
for f in "${src_files[@]}"; do
    b=$(basename "$f")
    if ! cmp -s "$f" "$dst/$b"; then
        drift+=("$b")
    fi
done
for f in "$dst"/*; do
    b=$(basename "$f")
    [ -e "$src/$b" ] || drift+=("$b (not in $src)")
done

if [ "$mode" = check ]; then
    if [ ${#drift[@]} -gt 0 ]; then
        echo "sync-crds: the chart's CRDs differ from $src: ${drift[*]}" >&2
        echo "sync-crds: run deploy/sync-crds.sh (then deploy/gen-manifests.sh)" >&2
        exit 1
    fi
    exit 0
fi
mkdir -p "$dst"
for f in "$dst"/*; do
    [ -e "$src/$(basename "$f")" ] || rm -f "$f"
done
cp -f "${src_files[@]}" "$dst"/
echo "sync-crds: ${#src_files[@]} CRD file(s) copied to $dst" >&2
