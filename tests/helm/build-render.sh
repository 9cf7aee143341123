#!/usr/bin/env bash
# Builds the Helm-compatible chart renderer (tests/helm/render) into
# $BUILD/helm/render and prints its path. Offline: GOPATH mode over Debian's
# Go packages in /usr/share/gocode (golang-go, golang-github-masterminds-
# sprig-dev, golang-github-ghodss-yaml-dev, golang-github-xeipuuv-
# gojsonschema-dev). Go's build cache lives in $BUILD/helm/gocache, so a
# rebuild with nothing changed takes well under a second.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${COXSWAIN_BUILD:-${BUILD:-$top/build}}
case "$build" in /*) ;; *) build="$top/$build" ;; esac
out="$build/helm/render"
mkdir -p "$build/helm"
if ! command -v go >/dev/null 2>&1; then
    echo "build-render: go is missing (Debian package golang-go; run make deps)" >&2
    exit 1
fi
# One build at a time: two tests (or a test and gen-manifests) may race.
exec 9>"$build/helm/.build.lock"
flock 9
cd "$top"
GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= GOCACHE="$build/helm/gocache" \
    GOTOOLCHAIN=local CGO_ENABLED=0 go build -o "$out.tmp" ./tests/helm/render
mv -f "$out.tmp" "$out"
echo "$out"
