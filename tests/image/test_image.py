"""The OCI image `make image` builds (deploy/image/build.sh), taken apart
and run without a container engine: its layout, archives and digest are
consistent; its config runs `coxswain run` as the chart's non-root user
with the OCI labels; its root filesystem holds the binary, the Debian
packages that ship the libraries the binary links, and nothing to run a
shell, install packages or compile; inside it (chroot, a read-only root
as the chart's readOnlyRootFilesystem makes it, as user 65532) `coxswain
version` and `coxswain translate -f` work and a replica with the chart's
arguments, configured in-cluster from a mounted service-account token,
becomes ready and leads against kubesim with TLS and RBAC; rebuilding from
the same binary and packages gives the same digest; and deploy/Dockerfile
installs the same packages.

Run by `make test-image` (in .ci/run), which builds the image first:
COXSWAIN_IMAGE is that build directory (build/image)."""
import glob
import gzip
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

import yaml

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("COXSWAIN_BUILD", os.path.join(TOP, "build"))
IMAGE = os.environ.get("COXSWAIN_IMAGE", os.path.join(TOP, "build", "image"))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))

from kubesim import KubeSim  # noqa: E402
sys.path.insert(0, os.path.join(TOP, "tests", "helm"))
from chartrun import mount_secrets  # noqa: E402
from helmlib import guide_commands, helm_binary  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

t = Tap()
UID = 65532
# Size bounds (docs/operations.md states them): the compressed layers a
# node pulls, and the unpacked root filesystem.
MAX_PULL_BYTES = 16 * 1024 * 1024
MAX_ROOTFS_BYTES = 40 * 1024 * 1024
NS = "coxswain-system"
ADMIN_TOKEN = "image-admin"
SA_TOKEN = "image-sa"
SA_USER = "system:serviceaccount:%s:coxswain" % NS
BINARY = os.path.join(IMAGE, "bin", "coxswain")
WAIT = 30.0


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 120)
    return subprocess.run(cmd, **kw)


def version():
    return run([BINARY, "version"]).stdout.split()[1]


TAG = version()
LAYOUT = os.path.join(IMAGE, "oci")


def blob(digest):
    algo, _, hexd = digest.partition(":")
    return os.path.join(LAYOUT, "blobs", algo, hexd)


def read_blob(digest):
    with open(blob(digest), "rb") as f:
        return f.read()


def manifest_desc():
    idx = json.load(open(os.path.join(LAYOUT, "index.json")))
    tagged = [m for m in idx["manifests"]
              if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == TAG]
    check_eq(len(tagged), 1, "manifests tagged %s in index.json" % TAG)
    return tagged[0]


def manifest():
    return json.loads(read_blob(manifest_desc()["digest"]))


def config():
    return json.loads(read_blob(manifest()["config"]["digest"]))


class Unpacked:
    dir = None
    rootfs = None


U = Unpacked()


def unpack():
    """The image's layers applied in order into a temporary root
    filesystem (umoci unpack, as a runtime would), once."""
    if U.rootfs is None:
        U.dir = tempfile.mkdtemp(prefix="cx-image-")
        bundle = os.path.join(U.dir, "bundle")
        p = run(["umoci", "unpack", "--image", "%s:%s" % (LAYOUT, TAG), bundle])
        check_eq(p.returncode, 0, p.stderr)
        U.rootfs = os.path.join(bundle, "rootfs")
    return U.rootfs


def in_image(args, binds=(), env=None, user=UID, popen=False, stdout=None):
    """Runs args inside the image's root filesystem as a container runtime
    would: own mount and PID namespaces, the root read-only, /proc, a
    writable /tmp (the chart's emptyDir) and /run (tmpfs), host folders
    bound under those (host path -> path in the image), as user:user, with
    only env in the environment."""
    root = unpack()
    script = ["set -e", "r=%s" % shlex.quote(root),
              'mount --bind "$r" "$r"', 'mount -o remount,bind,ro "$r"',
              'mount -t proc proc "$r/proc"',
              'mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"',
              'mount -t tmpfs -o mode=755 tmpfs "$r/run"']
    for host, inside in binds:
        # the root is read-only: mount points live in the tmpfs mounts
        check(inside.startswith(("/tmp/", "/run/")), inside)
        script += ['mkdir -p "$r%s"' % inside,
                   'mount --bind %s "$r%s"' % (shlex.quote(host), inside)]
    envs = " ".join(shlex.quote("%s=%s" % kv) for kv in sorted((env or {}).items()))
    script.append("exec env -i %s \"$(command -v chroot)\" --userspec=%d:%d \"$r\" %s" % (
        envs, user, user, " ".join(shlex.quote(a) for a in args)))
    cmd = ["unshare", "--mount", "--pid", "--fork", "--kill-child=SIGTERM", "bash", "-c",
           "\n".join(script)]
    if popen:
        return subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    return run(cmd)


# ---- the layout, the archives, the digest -----------------------------------

def case_layout_and_digest():
    desc = manifest_desc()
    digest = open(os.path.join(IMAGE, "digest")).read().strip()
    check_eq(desc["digest"], digest, "build/image/digest vs index.json")
    check(re.fullmatch(r"sha256:[0-9a-f]{64}", digest), digest)
    # every blob is what its name says (content addressing)
    m = manifest()
    descs = [desc, m["config"]] + m["layers"]
    for d in descs:
        data = read_blob(d["digest"])
        check_eq("sha256:" + hashlib.sha256(data).hexdigest(), d["digest"])
        check_eq(len(data), d["size"], d["digest"])
    check_eq([x["mediaType"] for x in m["layers"]],
             ["application/vnd.oci.image.layer.v1.tar+gzip"] * 2)
    # diff_ids are the uncompressed layers
    check_eq(config()["rootfs"]["diff_ids"],
             ["sha256:" + hashlib.sha256(gzip.decompress(read_blob(x["digest"]))).hexdigest()
              for x in m["layers"]])


def case_archives():
    oci_tar = os.path.join(IMAGE, "coxswain-%s.oci.tar" % TAG)
    docker_tar = os.path.join(IMAGE, "coxswain-%s.docker.tar" % TAG)
    digest = manifest_desc()["digest"]
    # oci-archive: the same manifest, so the same digest once pushed
    p = run(["skopeo", "inspect", "--raw", "oci-archive:%s" % oci_tar])
    check_eq(p.returncode, 0, p.stderr)
    check_eq("sha256:" + hashlib.sha256(p.stdout.encode()).hexdigest(), digest)
    with tarfile.open(oci_tar) as tf:
        idx = json.load(tf.extractfile("index.json"))
    # the name a kubelet resolves the chart's "coxswain:TAG" to
    ref = "docker.io/library/coxswain:%s" % TAG
    check_eq(idx["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"], ref)
    # docker-archive: what `docker load` reads (manifest.json, RepoTags)
    with tarfile.open(docker_tar) as tf:
        dm = json.load(tf.extractfile("manifest.json"))
        check_eq(len(dm), 1)
        check_eq(dm[0]["RepoTags"], [ref])
        check_eq(len(dm[0]["Layers"]), 2)
        dcfg = json.load(tf.extractfile(dm[0]["Config"]))
    check_eq(dcfg["config"]["Entrypoint"], ["/usr/local/bin/coxswain"])
    check_eq(dcfg["rootfs"]["diff_ids"], config()["rootfs"]["diff_ids"])


def doc_commands(pattern):
    """The command lines of docs/operations.md that match pattern."""
    out = [c for c in guide_commands() if re.search(pattern, c)]
    check(out, "the guide has no command matching %r" % pattern)
    return out


def storage_load(archive, store):
    """What `podman load` does: the archive into a containers-storage
    store (vfs driver, so no kernel overlay is needed); returns the
    stored image's config."""
    ref = "containers-storage:[vfs@%s/root+%s/run]docker.io/library/coxswain:%s" % (
        store, store, TAG)
    p = run(["skopeo", "--insecure-policy", "copy", "--quiet", archive, ref])
    check_eq(p.returncode, 0, p.stderr)
    p = run(["skopeo", "inspect", "--config", ref])
    check_eq(p.returncode, 0, p.stderr)
    return json.loads(p.stdout)


def case_archives_load():
    """The guide's load commands need an engine (docker, podman, kind);
    their archives are loaded here into containers-storage, podman's store,
    by the same library podman uses."""
    loads = doc_commands(r"^podman load -i build/image/") + \
        doc_commands(r"^(docker load -i|kind load image-archive) build/image/")
    archives = sorted({re.search(r"(build/image/\S+\.tar)", c).group(1) for c in loads})
    check_eq(archives, ["build/image/coxswain-%s.docker.tar" % TAG,
                        "build/image/coxswain-%s.oci.tar" % TAG])
    for a in archives:
        kind = "docker-archive" if a.endswith(".docker.tar") else "oci-archive"
        with tempfile.TemporaryDirectory() as store:
            cfg = storage_load("%s:%s" % (kind, os.path.join(IMAGE, os.path.basename(a))), store)
            check_eq(cfg["rootfs"]["diff_ids"], config()["rootfs"]["diff_ids"], a)
            check_eq(cfg["config"]["User"], "%d:%d" % (UID, UID), a)


def case_registry_push_and_digest():
    """The guide's skopeo copy into a registry (Debian's docker-registry on
    a free port, plain HTTP): the registry serves the image under the
    digest make image printed, so pinning by that digest pulls it."""
    cmd = doc_commands(r"^skopeo copy oci-archive:")
    check_eq(len(cmd), 1, cmd)
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "config.yml")
        with open(conf, "w") as f:
            f.write("version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n"
                    "    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:0\n" % tmp)
        log = open(os.path.join(tmp, "registry.log"), "w+")
        reg = subprocess.Popen(["docker-registry", "serve", conf], stdout=log, stderr=log,
                               stdin=subprocess.DEVNULL)
        try:
            addr = wait(lambda: re.search(r"listening on (127\.0\.0\.1:\d+)",
                                          open(log.name).read()).group(1), 20)
            check(addr, "the registry did not start: " + open(log.name).read())
            # the guide's command: the registry's name and plain HTTP filled in
            c = cmd[0].replace("registry.example.com", addr) + " --dest-tls-verify=false"
            p = run(shlex.split(c.replace("skopeo ", "skopeo --insecure-policy ", 1)), cwd=TOP)
            check_eq(p.returncode, 0, p.stderr)
            digest = open(os.path.join(IMAGE, "digest")).read().strip()
            p = run(["skopeo", "inspect", "--tls-verify=false",
                     "docker://%s/coxswain:%s" % (addr, TAG)])
            check_eq(p.returncode, 0, p.stderr)
            check_eq(json.loads(p.stdout)["Digest"], digest)
            # the guide's pinned install: the Deployment references the
            # image by the digest make image printed, which the registry
            # serves
            pin = doc_commands(r"^helm install coxswain deploy/helm/coxswain -n coxswain-system --create-namespace --set image\.repository=")
            check_eq(len(pin), 1, pin)
            with KubeSim() as ks:
                cmd = pin[0].replace("registry.example.com", addr).replace(
                    "build/image/digest", os.path.join(IMAGE, "digest")).replace(
                    "deploy/helm/coxswain", os.path.join(TOP, "deploy", "helm", "coxswain"))
                cmd = cmd.replace("helm ", helm_binary() + " ", 1)
                p = run(["bash", "-c", cmd + " --kubeconfig " + ks.kubeconfig], cwd=TOP)
                check_eq(p.returncode, 0, p.stderr)
                st, dep = ks.get("deployments", "coxswain", namespace="coxswain-system",
                                 group="apps", version="v1")
                check_eq(st, 200, dep)
                image = dep["spec"]["template"]["spec"]["containers"][0]["image"]
                check_eq(image, "%s/coxswain@%s" % (addr, digest))
            p = run(["skopeo", "inspect", "--tls-verify=false", "--config", "docker://" + image])
            check_eq(p.returncode, 0, p.stderr)
            check_eq(json.loads(p.stdout)["rootfs"]["diff_ids"], config()["rootfs"]["diff_ids"])
        finally:
            reg.terminate()
            reg.wait(10)
            log.close()


def case_config():
    c = config()
    cc = c["config"]
    check_eq(cc["User"], "%d:%d" % (UID, UID))
    check_eq(cc["Entrypoint"], ["/usr/local/bin/coxswain"])
    check_eq(cc["Cmd"], ["run"])
    check_eq(sorted(cc["ExposedPorts"]), ["18000/tcp", "18080/tcp"])
    check_eq(sorted(cc["Env"]), ["GLIBC_TUNABLES=glibc.malloc.hugetlb=1",
                                 "PATH=/usr/local/bin:/usr/bin:/bin"])
    check_eq((c["os"], c["architecture"]),
             ("linux", run(["dpkg", "--print-architecture"]).stdout.strip()))
    labels = cc["Labels"]
    chart = yaml.safe_load(open(os.path.join(TOP, "deploy", "helm", "coxswain", "Chart.yaml")))
    check_eq(labels["org.opencontainers.image.version"], TAG)
    check_eq(TAG, chart["appVersion"], "the chart's default image tag is the image's tag")
    head = run(["git", "-C", TOP, "rev-parse", "HEAD"]).stdout.strip()
    check(labels["org.opencontainers.image.revision"] in (head, head + "-dirty"),
          labels["org.opencontainers.image.revision"])
    check(labels["org.opencontainers.image.source"], "no source label")
    check_eq(labels["org.opencontainers.image.title"], "coxswain")
    # every timestamp is the last commit's (SOURCE_DATE_EPOCH)
    epoch = int(run(["git", "-C", TOP, "log", "-1", "--format=%ct"]).stdout)
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
    check_eq(c["created"], created)
    check_eq({h["created"] for h in c["history"]}, {created})
    check_eq(labels["org.opencontainers.image.created"], created)


# ---- what is inside ---------------------------------------------------------

def walk(root):
    for d, dirs, files in os.walk(root):
        for n in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            yield os.path.join(d, n)


def case_contents_minimal():
    root = unpack()
    rel = {os.path.relpath(p, root): p for p in walk(root)}
    # the only programs are coxswain and the dynamic loader (libc.so.6 is
    # executable too); everything else that is executable is a library
    exe = sorted(r for r, p in rel.items() if os.path.isfile(p) and not os.path.islink(p)
                 and os.stat(p).st_mode & 0o111)
    programs = [r for r in exe if not re.search(r"\.so(\.[0-9.]+)?$", r)]
    check_eq(programs, ["usr/local/bin/coxswain"])
    # no shell, no package manager, no compiler or build tool
    names = {os.path.basename(r) for r in rel}
    for bad in ("sh", "bash", "dash", "busybox", "dpkg", "apt", "apt-get", "perl", "python3",
                "awk", "mawk", "openssl", "gcc", "cc", "c++", "g++", "cpp", "ld", "as", "make",
                "pkg-config", "ar", "strip", "update-ca-certificates"):
        check(bad not in names, "%s is in the image" % bad)
    check(not any(r.startswith("usr/include/") for r in rel), "headers in the image")
    check(not any(r.endswith((".a", ".h", ".o")) for r in rel), "build artefacts in the image")
    check(not os.path.exists(os.path.join(root, "var/lib/dpkg/status")),
          "a dpkg database (the image is not meant to be managed with dpkg)")
    # the user: passwd and group know 65532, root cannot log in
    passwd = open(os.path.join(root, "etc/passwd")).read().splitlines()
    check_eq(passwd, ["root:x:0:0:root:/root:/usr/sbin/nologin",
                      "coxswain:x:%d:%d:coxswain:/nonexistent:/usr/sbin/nologin" % (UID, UID)])
    check("coxswain:x:%d:" % UID in open(os.path.join(root, "etc/group")).read())
    # what it must have: the CA bundle, the distribution's identity, the
    # kubelet's mount point, a sticky /tmp
    bundle = open(os.path.join(root, "etc/ssl/certs/ca-certificates.crt")).read()
    check(bundle.count("BEGIN CERTIFICATE") > 100, "CA bundle")
    check("VERSION_CODENAME=bookworm" in open(os.path.join(root, "etc/os-release")).read())
    check_eq(os.readlink(os.path.join(root, "var/run")), "/run")
    check_eq(os.stat(os.path.join(root, "tmp")).st_mode & 0o7777, 0o1777)
    check(not os.path.exists(os.path.join(root, "etc/hostname")), "the build host's hostname")
    check(not os.path.exists(os.path.join(root, "etc/resolv.conf")), "the build host's resolver")
    check_eq(os.listdir(os.path.join(root, "dev")), [])


def case_size_bounds():
    pulled = sum(x["size"] for x in manifest()["layers"])
    unpacked = sum(os.lstat(p).st_size for p in walk(unpack()))
    print("# image: %.1f MiB compressed, %.1f MiB unpacked" % (pulled / 2**20, unpacked / 2**20))
    check(pulled < MAX_PULL_BYTES, "compressed layers: %d bytes" % pulled)
    check(unpacked < MAX_ROOTFS_BYTES, "root filesystem: %d bytes" % unpacked)


def derived_packages(binary):
    p = run([os.path.join(TOP, "deploy", "image", "build.sh"), "--binary", binary,
             "--print-packages"])
    check_eq(p.returncode, 0, p.stderr)
    return p.stdout.split()


def dockerfile_runtime_packages():
    text = open(os.path.join(TOP, "deploy", "Dockerfile")).read().replace("\\\n", " ")
    stage = text.split("\nFROM ")[-1]
    pkgs = []
    for m in re.finditer(r"apt-get install([^&]*)", stage):
        pkgs += [w for w in shlex.split(m.group(1)) if not w.startswith("-")]
    return pkgs


def case_packages():
    root = unpack()
    status = sorted(os.listdir(os.path.join(root, "var/lib/dpkg/status.d")))
    listed = [line.split()[0] for line in open(os.path.join(IMAGE, "packages.txt"))]
    check_eq(status, listed)
    derived = derived_packages(BINARY)
    check("libcurl4" in derived and "libc6" in derived, derived)
    missing = set(derived + ["base-files", "netbase", "ca-certificates"]) - set(status)
    check(not missing, "derived packages not in the image: %s" % sorted(missing))
    for gone in ("debconf", "openssl", "mawk", "perl-base"):
        check(gone not in status, "%s (only for maintainer scripts) is in the image" % gone)
    # each status file is a dpkg control paragraph for the version listed
    for line in open(os.path.join(IMAGE, "packages.txt")):
        name, ver = line.split()
        st = open(os.path.join(root, "var/lib/dpkg/status.d", name)).read()
        check(st.startswith("Package: %s\nStatus: install ok installed\n" % name), st[:80])
        check("\nVersion: %s\n" % ver in st, name)
    # the Dockerfile's runtime stage installs the same packages (libc6
    # comes with debian:bookworm-slim)
    check_eq(sorted(dockerfile_runtime_packages()),
             sorted(set(derived) - {"libc6"} | {"ca-certificates"}))
    # every library the binary needs is found inside the image, by the
    # image's own loader
    p = in_image(["/lib64/ld-linux-x86-64.so.2", "--list", "/usr/local/bin/coxswain"])
    check_eq(p.returncode, 0, p.stdout + p.stderr)
    check("not found" not in p.stdout, p.stdout)
    for lib in re.findall(r"\(NEEDED\)\s+Shared library: \[(\S+)\]",
                          run(["readelf", "-d", BINARY]).stdout):
        check(re.search(r"^\s*%s => /" % re.escape(lib), p.stdout, re.M), lib)


# ---- running it -------------------------------------------------------------

def case_version_as_non_root():
    p = in_image(["/usr/local/bin/coxswain", "version"])
    check_eq(p.returncode, 0, p.stderr)
    check_eq(p.stdout.strip(), "coxswain %s" % TAG)
    # the entrypoint with "version" instead of the default cmd; the user is
    # the config's
    p = in_image(config()["config"]["Entrypoint"] + ["version"])
    check_eq(p.stdout.strip(), "coxswain %s" % TAG)
    p = in_image(["/usr/local/bin/coxswain", "version"], user=UID)
    check_eq(p.returncode, 0)


def case_translate_examples():
    with tempfile.TemporaryDirectory() as tmp:
        ex = os.path.join(tmp, "examples")
        shutil.copytree(os.path.join(TOP, "examples"), ex)
        files = sorted(glob.glob(os.path.join(ex, "*.yaml")))
        check(len(files) >= 5, files)
        args = []
        for f in files:
            args += ["-f", "/tmp/examples/" + os.path.basename(f)]
        inside = in_image(["/usr/local/bin/coxswain", "translate"] + args,
                          binds=[(ex, "/tmp/examples")])
        outside = run([BINARY, "translate"] + [a.replace("/tmp/examples", ex) for a in args])
        check_eq(inside.returncode, outside.returncode, inside.stderr)
        check_eq(inside.returncode, 0, inside.stdout[-2000:])
        got = json.loads(inside.stdout)
        check_eq(got, json.loads(outside.stdout))
        check(got["snapshot"] and got["reports"], "an empty translation")
        check(all(r["state"] in ("Accepted", "Warning") for r in got["reports"]),
              [r for r in got["reports"] if r["state"] == "Rejected"])


def kubectl(ks, *args):
    return run(["kubectl", "--kubeconfig", ks.kubeconfig, "--request-timeout=20s"] + list(args))


def deployment():
    docs = yaml.safe_load_all(open(os.path.join(TOP, "deploy", "manifests", "coxswain.yaml")))
    deps = [d for d in docs if d and d["kind"] == "Deployment"]
    check_eq(len(deps), 1)
    return deps[0]


def find_pid(marker):
    """The pid of the process whose command line contains marker."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cl = f.read().split(b"\0")
        except OSError:
            continue
        if cl and cl[0].endswith(b"coxswain") and marker.encode() in cl:
            return int(d)
    return None


def wait(fn, timeout=WAIT):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            v = fn()
            if v:
                return v
        except Exception:  # noqa: BLE001 - not there yet
            pass
        time.sleep(0.1)
    return None


def case_replica_leads_in_cluster():
    """The Deployment's container, as a kubelet would start it from this
    image: its args and env, the service-account token, CA and namespace
    mounted at /var/run/secrets/kubernetes.io/serviceaccount,
    KUBERNETES_SERVICE_HOST/PORT; kubesim speaks TLS and authorizes from
    the chart's RBAC objects only."""
    dep = deployment()
    ctr = dep["spec"]["template"]["spec"]["containers"][0]
    check_eq(ctr["image"], "coxswain:%s" % TAG, "the manifests deploy the image built here")
    ks = KubeSim(tls=True, allow_all=False, kubeconfig_token=ADMIN_TOKEN,
                 tokens={ADMIN_TOKEN: ("admin", ["system:masters"]), SA_TOKEN: SA_USER})
    tmp = tempfile.mkdtemp(prefix="cx-image-run-")
    proc = pid = None
    try:
        for f in ("crds.yaml", "coxswain.yaml"):
            p = kubectl(ks, "apply", "-f", os.path.join(TOP, "deploy", "manifests", f))
            check_eq(p.returncode, 0, p.stderr)
        p = kubectl(ks, "apply", "-f", os.path.join(TOP, "examples"))
        check_eq(p.returncode, 0, p.stderr)
        # the xDS server certificate Secret, as operations.md has the operator create it
        crt, key = os.path.join(tmp, "xds.crt"), os.path.join(tmp, "xds.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj",
                        "/CN=coxswain-xds", "-keyout", key, "-out", crt],
                       check=True, capture_output=True)
        p = kubectl(ks, "-n", NS, "create", "secret", "tls", "coxswain-xds-tls",
                    "--cert=" + crt, "--key=" + key)
        check_eq(p.returncode, 0, p.stderr)
        # the pod's Secret volumes, as the kubelet mounts them (readable by 65532)
        mounts = mount_secrets(ks, dep["spec"]["template"]["spec"], NS, tmp, token=ADMIN_TOKEN)
        check_eq(sorted(mounts), ["/etc/coxswain/xds-tls"])
        for root, _, files in os.walk(os.path.join(tmp, "mounts")):
            os.chmod(root, 0o755)
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
        sa = os.path.join(tmp, "serviceaccount")
        os.makedirs(sa)
        for name, text in (("token", SA_TOKEN), ("namespace", NS),
                           ("ca.crt", open(ks.ca_file).read())):
            with open(os.path.join(sa, name), "w") as f:
                f.write(text)
        os.chmod(tmp, 0o755)
        out = os.path.join(tmp, "out")
        os.makedirs(out)
        os.chmod(out, 0o777)
        args = []
        for a in ctr["args"]:
            if a.startswith(("--xds-listen=", "--admin-listen=", "--leader-elect-peer-listen=")):
                a = a.split("=")[0] + "=127.0.0.1:0"  # tests never use fixed ports
            for path in mounts:  # the image's root is read-only: mounts go under /run
                a = a.replace("=" + path + "/", "=/run" + path + "/")
            args.append(a)
        # a path unique to this run: how the process is found from outside
        inside_out = "/tmp/" + os.path.basename(tmp)
        args += ["--ports-file", inside_out + "/ports.json"]
        env = {"POD_NAME": "coxswain-image-0", "POD_NAMESPACE": NS, "POD_IP": "127.0.0.1",
               "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(ks.port)}
        check_eq(sorted(e["name"] for e in ctr["env"]), ["POD_IP", "POD_NAME", "POD_NAMESPACE"])
        log = open(os.path.join(tmp, "coxswain.log"), "wb")
        proc = in_image(["/usr/local/bin/coxswain"] + args, env=env, popen=True, stdout=log,
                        binds=[(sa, "/run/secrets/kubernetes.io/serviceaccount"),
                               (out, inside_out)] + [(d, "/run" + m) for m, d in mounts.items()])
        log.close()
        ports = wait(lambda: json.load(open(os.path.join(out, "ports.json"))))
        logtext = lambda: open(os.path.join(tmp, "coxswain.log"), errors="replace").read()  # noqa
        check(ports, "the replica did not start:\n" + logtext()[-3000:])
        # it runs as 65532, not root
        pid = wait(lambda: find_pid(inside_out + "/ports.json"))
        check(pid, "no coxswain process")
        st = open("/proc/%d/status" % pid).read()
        check(re.search(r"^Uid:\s+%d\s+%d\s+%d\s+%d$" % ((UID,) * 4), st, re.M), st)
        # ready, leading, writing statuses through the API with its token
        import urllib.request

        def get(path):
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (ports["admin"], path),
                                        timeout=5) as r:
                return r.status, r.read().decode()
        check(wait(lambda: get("/readyz")[0] == 200), "never ready:\n" + logtext()[-3000:])
        holder = wait(lambda: kubectl(ks, "-n", NS, "get", "lease", "coxswain", "-o",
                                      "jsonpath={.spec.holderIdentity}").stdout.strip())
        check_eq(holder, ports["identity"])
        check_eq(json.loads(get("/debug/leader")[1])["leader"], ports["identity"])
        status = wait(lambda: json.loads(kubectl(
            ks, "-n", "default", "get", "gateways", "-o", "json").stdout)["items"][0].get("status"))
        check(status and status.get("state") in ("Accepted", "Warning"), status)
        sa_writes = [a for a in ks.audit() if a["user"] == SA_USER]
        check(sa_writes, "no write by the service account")
        check_eq([a for a in sa_writes if a["code"] in (401, 403)], [])
        # SIGTERM (what the kubelet sends) releases the lease and exits 0
        os.kill(pid, signal.SIGTERM)
        t0 = time.monotonic()
        try:
            rc = proc.wait(15)
            print("# exited %.1f s after SIGTERM" % (time.monotonic() - t0))
        except subprocess.TimeoutExpired:
            rc = "still running 15 s after SIGTERM"
        check_eq(rc, 0, logtext()[-3000:])
        proc = None
        check_eq(kubectl(ks, "-n", NS, "get", "lease", "coxswain", "-o",
                         "jsonpath={.spec.holderIdentity}").stdout.strip(), "")
    finally:
        if proc is not None and proc.poll() is None:
            # the replica is its PID namespace's init: killing it ends the
            # namespace (unshare's --kill-child does not survive chroot's
            # change of user)
            if pid:
                os.kill(pid, signal.SIGKILL)
            proc.kill()
            proc.wait()
        ks.close()
        shutil.rmtree(tmp, ignore_errors=True)


def case_reproducible():
    """The same binary and the same Debian packages give the same image,
    byte for byte (the downloaded packages are whatever the mirror serves
    now, as for the image under test)."""
    with tempfile.TemporaryDirectory() as out:
        p = run([os.path.join(TOP, "deploy", "image", "build.sh"), "--binary", BINARY,
                 "--out", out], timeout=900)
        check_eq(p.returncode, 0, p.stderr[-3000:])
        again = p.stdout.strip()
        if again != manifest_desc()["digest"]:
            # say what differs before failing
            diff = run(["diff", os.path.join(IMAGE, "packages.txt"),
                        os.path.join(out, "packages.txt")]).stdout
            check_eq(again, manifest_desc()["digest"], "rebuilt digest; packages diff:\n" + diff)


try:
    t.case("OCI layout: tagged manifest, content-addressed blobs, the printed digest",
           case_layout_and_digest)
    t.case("oci-archive (same digest) and docker-archive (docker load) tarballs", case_archives)
    t.case("the guide's load commands: both archives load into podman's store",
           case_archives_load)
    t.case("the guide's skopeo copy to a registry and pinned helm install: the printed digest",
           case_registry_push_and_digest)
    t.case("config: user 65532, entrypoint coxswain run, ports, OCI labels, one timestamp",
           case_config)
    t.case("no shell, package manager, compiler or build tool; passwd, CA bundle, os-release",
           case_contents_minimal)
    t.case("size under its bounds", case_size_bounds)
    t.case("packages follow the binary's links (ldd, dpkg -S); the Dockerfile's are the same",
           case_packages)
    t.case("coxswain version inside the image as user 65532", case_version_as_non_root)
    t.case("coxswain translate -f examples inside the image = the build's output",
           case_translate_examples)
    t.case("a replica from the image, in-cluster config, TLS and RBAC: ready, leads, "
           "writes statuses, releases on SIGTERM", case_replica_leads_in_cluster)
    t.case("rebuilt from the same inputs: the same digest", case_reproducible)
finally:
    if U.dir:
        shutil.rmtree(U.dir, ignore_errors=True)
t.done()
