#!/usr/bin/env bash
# Installs gRPC's JavaScript xDS client, the pinned @grpc/grpc-js and
# @grpc/grpc-js-xds from npm, into DIR (default build/npm-xds) once; the
# e2e tests run it with NODE_PATH=DIR/node_modules.
#
# `make test` runs it before the tests, and the tests run it again (a no-op
# then) when started by hand. Runs can share DIR (make test and make test
# SANITIZE=1, the tests of one run in two lanes): the install goes into a
# fresh sibling directory that is renamed to DIR only when complete (with
# DIR/.installed naming the packages), so no reader ever sees a partial
# install and a complete one is never written again.
#
#   mk/npm-xds.sh [DIR]     prints DIR/node_modules
set -euo pipefail
PKGS=(@grpc/grpc-js@1.14.7 @grpc/grpc-js-xds@1.14.1)
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$top/build/npm-xds}
complete() { [ "$(cat "$1/.installed" 2>/dev/null)" = "${PKGS[*]}" ]; }
if ! complete "$dir"; then
    mkdir -p "$(dirname "$dir")"
    tmp=$(mktemp -d "$dir.new.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    chmod 755 "$tmp"
    (cd "$tmp" && timeout 300 npm install --no-audit --no-fund --loglevel=error --prefix . \
        "${PKGS[@]}" >&2)
    echo "${PKGS[*]}" >"$tmp/.installed"
    # an install without .installed (older checkouts, other versions) is
    # set aside first; if another run renamed its own install into place
    # meanwhile, that one is complete too and this one is dropped
    if [ -e "$dir" ] && ! complete "$dir"; then
        old=$(mktemp -d "$dir.old.XXXXXX")
        mv -T "$dir" "$old/d" 2>/dev/null || true
        rm -rf "$old"
    fi
    mv -T "$tmp" "$dir" 2>/dev/null || complete "$dir"
fi
echo "$dir/node_modules"
