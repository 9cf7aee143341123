#!/usr/bin/env bash
# Builds the coxswain OCI image without a container engine, from Debian
# tools only: mmdebstrap (the runtime root filesystem), tar (reproducible
# layers), umoci (the OCI image layout) and skopeo (archives for docker,
# podman and containerd). `make image` runs it after building the binary.
#
#   deploy/image/build.sh --binary build/image/bin/coxswain --out build/image
#   deploy/image/build.sh --binary PATH --print-packages
#
# What the image holds:
#   layer 1  the Debian bookworm packages that ship the shared libraries
#            the binary links (NEEDED, resolved with ldd, owners from dpkg
#            -S: derived, not a hand-kept list, so a new -l in the
#            Makefile reaches the image by itself), their
#            dependencies, base-files (/etc/os-release), netbase and the CA
#            bundle of ca-certificates; only extracted, never configured,
#            so no shell, no dpkg and no apt come with them. The packages
#            whose only use is running maintainer scripts (DROP below) are
#            taken out again. /etc/passwd and /etc/group name the user
#            coxswain (65532), the chart's runAsUser.
#   layer 2  /usr/local/bin/coxswain (stripped)
#   config   entrypoint coxswain, cmd run, user 65532:65532, ports 18000
#            and 18080, OCI labels (title, version, revision, source, ...)
#
# Reproducible as far as Debian allows: every timestamp is
# SOURCE_DATE_EPOCH (default: the last commit's time), layers are tar
# archives sorted by name with numeric owners and no atime/ctime, and the
# same binary and the same package versions give the same digest. The
# package versions are whatever the mirror serves that day; pin them with a
# snapshot.debian.org mirror (IMAGE_MIRRORS).
#
# Outputs in --out: oci/ (OCI image layout, tag = the version),
# coxswain-VERSION.oci.tar (oci-archive: `podman load`, `skopeo copy`),
# coxswain-VERSION.docker.tar (docker-archive: `docker load`, `ctr import`,
# `kind load image-archive`), both named docker.io/library/coxswain:VERSION,
# packages.txt (name version of every package in the image) and
# digest (the manifest digest, sha256:...), which is also printed last.
#
# Environment: SOURCE_DATE_EPOCH, IMAGE_NAME (default coxswain),
# IMAGE_TAG (default: the binary's version), IMAGE_SOURCE (the
# org.opencontainers.image.source label; default: git's origin URL),
# IMAGE_MIRRORS (apt source lines, separated by "|"), IMAGE_SUITE
# (default bookworm), IMAGE_DEBS (a directory that keeps the downloaded
# .debs between runs; default none).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
here="$top/deploy/image"

binary="" out="" print_packages=0
while [ $# -gt 0 ]; do
    case "$1" in
    --binary) binary=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --print-packages) print_packages=1; shift ;;
    *)
        echo "usage: $0 --binary PATH (--out DIR | --print-packages)" >&2
        exit 2
        ;;
    esac
done
[ -n "$binary" ] || { echo "image: --binary is required" >&2; exit 2; }
[ -x "$binary" ] || { echo "image: $binary is not an executable (run make image)" >&2; exit 1; }

# The packages that only serve maintainer scripts, which an extracted,
# never configured root filesystem does not run: ca-certificates' postinst
# (openssl rehash, debconf questions), base-files' postinst (awk).
DROP=(debconf openssl mawk perl-base)
# Not libraries of the binary, but what any image needs: /etc/os-release
# (scanners identify the distribution by it), /etc/services and
# /etc/protocols, and the CA bundle for API servers with a public CA.
EXTRA=(base-files netbase ca-certificates)

# runtime_packages: one line per Debian package that ships a shared
# library the binary links (its ELF NEEDED entries, resolved by the dynamic
# loader as `ldd` shows), from this machine's dpkg database: the image is
# built from the Debian release the binary was built on. apt brings their
# own dependencies.
runtime_packages() {
    local ldd_out needed lib path paths=() cands=() owners
    ldd_out=$(ldd "$binary")
    if grep -q "not found" <<<"$ldd_out"; then
        echo "image: ldd cannot resolve every library of $binary:" >&2
        grep "not found" <<<"$ldd_out" >&2
        return 1
    fi
    needed=$(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
    [ -n "$needed" ] || { echo "image: $binary links no shared library" >&2; return 1; }
    for lib in $needed; do
        # "libfoo.so.1 => /lib/x86_64-linux-gnu/libfoo.so.1 (0x...)"
        path=$(awk -v l="$lib" '$1 == l && $2 == "=>" {print $3}' <<<"$ldd_out")
        [ -n "$path" ] || { echo "image: ldd does not resolve $lib" >&2; return 1; }
        path=$(readlink -f "$path")
        paths+=("$path")
        # usrmerge: /usr/lib/x/libfoo.so may be registered as /lib/x/...
        cands+=("$path" "${path#/usr}" "/usr${path#/usr}")
    done
    # one dpkg -S for all (it reads the whole database on every call)
    owners=$(dpkg -S "${cands[@]}" 2>/dev/null || true)
    for path in "${paths[@]}"; do
        awk -v a="$path" -v b="${path#/usr}" -v c="/usr${path#/usr}" '
            { i = index($0, ": "); f = substr($0, i + 2); p = substr($0, 1, i - 1) }
            f == a || f == b || f == c { sub(/:.*/, "", p); print p; found = 1; exit }
            END { if (!found) exit 1 }' <<<"$owners" ||
            { echo "image: no Debian package owns $path" >&2; return 1; }
    done | LC_ALL=C sort -u
}

if [ $print_packages -eq 1 ]; then
    runtime_packages
    exit 0
fi
[ -n "$out" ] || { echo "image: --out is required" >&2; exit 2; }
if [ "$(id -u)" -ne 0 ]; then
    echo "image: mmdebstrap writes a root-owned filesystem: run make image as root" >&2
    exit 1
fi
for tool in mmdebstrap umoci skopeo tar strip readelf; do
    command -v "$tool" >/dev/null || { echo "image: $tool is missing (make deps-image)" >&2; exit 1; }
done

mapfile -t libpkgs < <(runtime_packages)
version=$("$binary" version | awk '{print $2}')
[ -n "$version" ] || { echo "image: $binary version printed no version" >&2; exit 1; }
name=${IMAGE_NAME:-coxswain}
tag=${IMAGE_TAG:-$version}
suite=${IMAGE_SUITE:-bookworm}
revision=$(git -C "$top" rev-parse HEAD 2>/dev/null || echo unknown)
if [ "$revision" != unknown ] && [ -n "$(git -C "$top" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    revision="$revision-dirty"
fi
source_url=${IMAGE_SOURCE:-$(git -C "$top" remote get-url origin 2>/dev/null || echo unknown)}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$top" log -1 --format=%ct 2>/dev/null || echo 0)}
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
IFS='|' read -r -a mirrors <<<"${IMAGE_MIRRORS:-deb http://deb.debian.org/debian $suite main|deb http://deb.debian.org/debian $suite-updates main|deb http://deb.debian.org/debian-security $suite-security main}"

mkdir -p "$out"
out=$(cd "$out" && pwd)
work="$out/work"
rm -rf "$work" "$out/oci"
mkdir -p "$work/debs"
root="$work/rootfs"

# ---- layer 1: the Debian runtime ------------------------------------------
include=$(printf '%s,' "${libpkgs[@]}" "${EXTRA[@]}")
hooks=(--extract-hook="cp \"\$1\"/var/cache/apt/archives/*.deb '$work/debs/'")
if [ -n "${IMAGE_DEBS:-}" ]; then
    mkdir -p "$IMAGE_DEBS"
    hooks=(--setup-hook="mkdir -p \"\$1\"/var/cache/apt/archives && cp '$IMAGE_DEBS'/*.deb \"\$1\"/var/cache/apt/archives/ 2>/dev/null || true"
        "${hooks[@]}" --extract-hook="cp \"\$1\"/var/cache/apt/archives/*.deb '$IMAGE_DEBS/'")
fi
echo "image: mmdebstrap $suite: ${include%,}" >&2
mmdebstrap --quiet --variant=extract --mode=root --include="${include%,}" "${hooks[@]}" \
    "$suite" "$root" "${mirrors[@]}"

# Which .deb is which package (and its control paragraph), and what each
# puts where.
declare -A deb_of=()
for deb in "$work"/debs/*.deb; do
    dpkg-deb -f "$deb" >"$deb.control"
    deb_of[$(sed -n 's/^Package: //p' "$deb.control")]=$deb
done
for p in "${DROP[@]}"; do
    [ -n "${deb_of[$p]:-}" ] || continue
    # the package's files and links; then its directories, deepest first,
    # when nothing else is left in them
    dpkg-deb --fsys-tarfile "${deb_of[$p]}" | tar -t | sed 's|^\./||; s|/$||' |
        LC_ALL=C sort -r | while read -r f; do
        [ -n "$f" ] || continue
        if [ -d "$root/$f" ] && [ ! -L "$root/$f" ]; then
            rmdir "$root/$f" 2>/dev/null || true
        else
            rm -f "$root/$f"
        fi
    done
    unset "deb_of[$p]"
done

# The CA bundle update-ca-certificates would write (every certificate
# ca-certificates ships, in name order).
mkdir -p "$root/etc/ssl/certs"
find "$root/usr/share/ca-certificates" -name '*.crt' -print0 | LC_ALL=C sort -z |
    xargs -0 cat >"$root/etc/ssl/certs/ca-certificates.crt"
[ -s "$root/etc/ssl/certs/ca-certificates.crt" ] || { echo "image: empty CA bundle" >&2; exit 1; }

# What the image holds, for scanners (the distroless layout: one control
# paragraph per package in /var/lib/dpkg/status.d) and for packages.txt.
rm -rf "$root/var/lib/dpkg"
mkdir -p "$root/var/lib/dpkg/status.d"
: >"$work/packages.txt"
for p in $(printf '%s\n' "${!deb_of[@]}" | LC_ALL=C sort); do
    control="${deb_of[$p]}.control"
    # dpkg's status layout: Package, then Status, then the rest
    {
        grep '^Package: ' "$control"
        echo "Status: install ok installed"
        grep -v '^Package: ' "$control"
    } >"$root/var/lib/dpkg/status.d/$p"
    echo "$p $(sed -n 's/^Version: //p' "$control")" >>"$work/packages.txt"
done

# What an extracted root filesystem carries but an image must not: the
# host's /etc/hostname and /etc/resolv.conf (the kubelet provides its own),
# device nodes, apt's and dpkg's state, caches, logs, documentation other
# than the copyright files, translations, and glibc's iconv modules
# (coxswain converts no character sets).
rm -rf "$root"/dev/* "$root/etc/hostname" "$root/etc/resolv.conf" "$root"/var/cache/* \
    "$root"/var/log/* "$root/var/lib/apt" "$root/etc/apt" "$root/etc/dpkg/dpkg.cfg.d" \
    "$root"/usr/share/{man,info,locale,lintian,bash-completion,pixmaps,perl5,debconf} \
    "$root/usr/sbin/update-ca-certificates" "$root/etc/ca-certificates/update.d" \
    "$root/etc/update-motd.d" \
    "$root"/usr/lib/*/gconv
find "$root/usr/share/doc" -mindepth 1 -not -type d -not -name copyright -delete
find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete

# The user the chart runs as (runAsUser 65532), and name resolution from
# files first, as the kubelet's /etc/hosts expects.
install -d -m 0755 "$root/etc"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\ncoxswain:x:65532:65532:coxswain:/nonexistent:/usr/sbin/nologin\n' \
    >"$root/etc/passwd"
printf 'root:x:0:\ncoxswain:x:65532:\n' >"$root/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n' \
    >"$root/etc/nsswitch.conf"
chmod 0644 "$root/etc/passwd" "$root/etc/group" "$root/etc/nsswitch.conf"
install -d -m 1777 "$root/tmp"
# /var/run and /var/lock as base-files' postinst makes them (the kubelet
# mounts the service account under /var/run/secrets)
rm -rf "$root/var/run" "$root/var/lock"
ln -s /run "$root/var/run"
ln -s /run/lock "$root/var/lock"

# layer_tar DIR OUT: a tar of DIR's contents that depends only on the
# files: sorted names, numeric root ownership as on disk, every mtime
# clamped to SOURCE_DATE_EPOCH, no atime/ctime, a fixed PAX header name.
layer_tar() {
    tar --create --file "$2" --directory "$1" --sort=name --format=posix \
        --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
        --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime --numeric-owner --no-acls --no-xattrs \
        --no-selinux .
}
layer_tar "$root" "$work/base.tar"

# ---- layer 2: the binary ---------------------------------------------------
app="$work/app"
install -d -m 0755 "$app/usr" "$app/usr/local" "$app/usr/local/bin"
strip --strip-unneeded -o "$app/usr/local/bin/coxswain" "$binary"
chmod 0755 "$app/usr/local/bin/coxswain"
chown -R 0:0 "$app"
layer_tar "$app" "$work/app.tar"

# ---- the OCI image ---------------------------------------------------------
image="$out/oci:$tag"
hist=(--history.created "$created" --history.author coxswain)
umoci init --layout "$out/oci"
umoci new --image "$image"
umoci raw add-layer --image "$image" "${hist[@]}" \
    --history.created_by "deploy/image/build.sh: Debian $suite runtime (${#deb_of[@]} packages)" \
    "$work/base.tar"
umoci raw add-layer --image "$image" "${hist[@]}" \
    --history.created_by "deploy/image/build.sh: coxswain $version" "$work/app.tar"
umoci config --image "$image" "${hist[@]}" --history.created_by "deploy/image/build.sh: config" \
    --created "$created" --author coxswain --os linux \
    --architecture "$(dpkg --print-architecture)" \
    --config.user 65532:65532 --config.workingdir / \
    --config.entrypoint /usr/local/bin/coxswain --config.cmd run \
    --config.exposedports 18000/tcp --config.exposedports 18080/tcp \
    --config.env PATH=/usr/local/bin:/usr/bin:/bin \
    --config.env GLIBC_TUNABLES=glibc.malloc.hugetlb=1 \
    --config.label org.opencontainers.image.title=coxswain \
    --config.label "org.opencontainers.image.description=Highly available xDS control plane for Envoy-style gateways" \
    --config.label "org.opencontainers.image.version=$version" \
    --config.label "org.opencontainers.image.revision=$revision" \
    --config.label "org.opencontainers.image.source=$source_url" \
    --config.label "org.opencontainers.image.created=$created" \
    --config.label "org.opencontainers.image.base.name=debian:$suite" \
    --manifest.annotation "org.opencontainers.image.version=$version" \
    --manifest.annotation "org.opencontainers.image.revision=$revision" \
    --manifest.annotation "org.opencontainers.image.created=$created"
# umoci keeps no garbage, but a second config write leaves the first blob
umoci gc --layout "$out/oci"

digest=$(python3 - "$out/oci/index.json" "$tag" <<'EOF'
import json, sys
idx = json.load(open(sys.argv[1]))
for m in idx["manifests"]:
    if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == sys.argv[2]:
        print(m["digest"])
        break
else:
    sys.exit("image: no manifest tagged %s in %s" % (sys.argv[2], sys.argv[1]))
EOF
)

# The archives carry the name a kubelet resolves "coxswain:TAG" to
# (docker.io/library/coxswain:TAG), so that an image loaded into a node's
# containerd (kind load image-archive, ctr import) or podman is found by
# the chart's default image reference.
ref="$name:$tag"
case "${name%%/*}" in
*.* | *:* | localhost) ;;                   # a registry host
*) [[ $name == */* ]] && ref="docker.io/$ref" || ref="docker.io/library/$ref" ;;
esac
base=${name##*/}
rm -f "$out/$base-$tag.oci.tar" "$out/$base-$tag.docker.tar"
skopeo --insecure-policy copy --quiet "oci:$out/oci:$tag" "oci-archive:$out/$base-$tag.oci.tar:$ref"
skopeo --insecure-policy copy --quiet "oci:$out/oci:$tag" "docker-archive:$out/$base-$tag.docker.tar:$ref"
touch -d "@$SOURCE_DATE_EPOCH" "$out/$base-$tag.oci.tar" "$out/$base-$tag.docker.tar"

cp "$work/packages.txt" "$out/packages.txt"
echo "$digest" >"$out/digest"
rm -rf "$work"
size=$(du -sb "$out/oci/blobs" | cut -f1)
echo "image: $ref  $((size / 1024 / 1024)) MiB compressed, ${#deb_of[@]} packages" >&2
echo "image: $out/oci (OCI layout), $out/$base-$tag.oci.tar, $out/$base-$tag.docker.tar" >&2
echo "$digest"
