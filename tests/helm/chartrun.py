"""Running what the chart deploys, without a kubelet: replicas of `coxswain
run` with exactly the container args and env of a rendered or installed
Deployment (only the listen addresses moved to free loopback ports, and
the API server reached through a kubeconfig with the service account's
token instead of the in-cluster files), against kubesim with TLS and RBAC.

    import chartrun as cr
    ks = cr.rbac_kubesim()                       # TLS, admin + SA tokens
    dep = cr.deployment(manifest_docs)           # the Deployment object
    cr.create_tls_secret(ks, "coxswain-xds-tls") # the xDS certificate it mounts
    r = cr.ChartReplica(ks, dep, "coxswain-0")   # POD_NAME coxswain-0
    r.identity                                   # <pod>_<8 hex>, from its ports file
"""
import base64
import os
import subprocess
import tempfile

from kubesim import KubeSim
from replicas import Process, Replica, coxswain

NAMESPACE = "coxswain-system"
ADMIN_TOKEN = "chart-admin"
SA_TOKEN = "chart-sa"


def sa_user(namespace=NAMESPACE, name="coxswain"):
    return "system:serviceaccount:%s:%s" % (namespace, name)


def rbac_kubesim(namespace=NAMESPACE, sa="coxswain", extra_tokens=None):
    """kubesim over TLS authorizing from RBAC objects only, as a 1.28
    cluster serves it (HTTP/2, WatchList off, bookmarks only once a resource
    moved): its kubeconfig is the admin's (system:masters); SA_TOKEN is the
    chart's service account (sa_kubeconfig() writes a kubeconfig for it)."""
    tokens = {ADMIN_TOKEN: ("admin", ["system:masters"]), SA_TOKEN: sa_user(namespace, sa)}
    tokens.update(extra_tokens or {})
    return KubeSim(tls=True, allow_all=False, kubeconfig_token=ADMIN_TOKEN, tokens=tokens,
                   profile="1.28")


def sa_kubeconfig(ks, token=SA_TOKEN, path=None):
    """A kubeconfig for kubesim's https URL, its CA and |token|."""
    path = path or os.path.join(ks.dir, "sa-%s.kubeconfig" % token)
    with open(path, "w") as f:
        f.write("""apiVersion: v1
kind: Config
clusters:
- cluster:
    server: %s
    certificate-authority: %s
  name: kubesim
contexts:
- context:
    cluster: kubesim
    user: sa
  name: sa
current-context: sa
users:
- name: sa
  user:
    token: %s
""" % (ks.url, ks.ca_file, token))
    return path


def create_tls_secret(ks, name, namespace=NAMESPACE, dns="coxswain-xds.coxswain-system.svc"):
    """A kubernetes.io/tls Secret |name| with a fresh self-signed P-256
    certificate for |dns| (what the operator creates before installing,
    docs/operations.md). Returns the certificate's path (the proxies' CA)."""
    d = tempfile.mkdtemp(prefix="xds-tls-")
    crt, key = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=" + dns,
                    "-addext", "subjectAltName=DNS:" + dns, "-keyout", key, "-out", crt],
                   check=True, capture_output=True, timeout=30)
    data = {}
    for k, path in (("tls.crt", crt), ("tls.key", key)):
        with open(path, "rb") as f:
            data[k] = base64.b64encode(f.read()).decode()
    st, out = ks.request("POST", "/api/v1/namespaces/%s/secrets" % namespace, {
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"namespace": namespace, "name": name}, "data": data}, token=ADMIN_TOKEN)
    assert st == 201, "create Secret %s: %s %s" % (name, st, out)
    return crt


def ensure_tls_secret(ks, name="coxswain-xds-tls", namespace=NAMESPACE):
    """create_tls_secret unless Secret |name| exists already."""
    st, _ = ks.request("GET", "/api/v1/namespaces/%s/secrets/%s" % (namespace, name),
                       token=ADMIN_TOKEN)
    if st != 200:
        create_tls_secret(ks, name, namespace)


def mount_secrets(ks, pod_spec, namespace, into, token=None):
    """The pod's Secret volumes as the kubelet mounts them: each Secret read
    from kubesim (as the admin, or with |token|) and written under |into|. Returns {mount
    path: local dir}. A missing Secret fails, as the pod would not start."""
    vols = {v["name"]: v["secret"] for v in pod_spec.get("volumes") or [] if "secret" in v}
    out = {}
    for m in pod_spec["containers"][0].get("volumeMounts") or []:
        sec = vols.get(m["name"])
        if sec is None:
            continue
        st, obj = ks.request("GET", "/api/v1/namespaces/%s/secrets/%s" % (
            namespace, sec["secretName"]), token=token or ADMIN_TOKEN)
        if st != 200:
            raise AssertionError("Secret %s/%s (volume %s) not found: the kubelet would not "
                                 "start the pod" % (namespace, sec["secretName"], m["name"]))
        d = os.path.join(into, "mounts", m["name"])
        os.makedirs(d, exist_ok=True)
        items = sec.get("items") or [{"key": k, "path": k} for k in obj.get("data", {})]
        for it in items:
            with open(os.path.join(d, it["path"]), "wb") as f:
                f.write(base64.b64decode(obj["data"][it["key"]]))
        out[m["mountPath"]] = d
    return out


def deployment(docs):
    deps = [d for d in docs if d and d.get("kind") == "Deployment"]
    assert len(deps) == 1, "want one Deployment, got %d" % len(deps)
    return deps[0]


def container_env(container, pod_name, namespace):
    """The container's env as the kubelet resolves it (downward API
    metadata.name / metadata.namespace / status.podIP, literal values).
    The pod's IP is loopback: every listener moves to 127.0.0.1."""
    env = {}
    for e in container.get("env") or []:
        if "value" in e:
            env[e["name"]] = e["value"]
            continue
        path = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        if path == "metadata.name":
            env[e["name"]] = pod_name
        elif path == "metadata.namespace":
            env[e["name"]] = namespace
        elif path == "status.podIP":
            env[e["name"]] = "127.0.0.1"
        else:
            raise AssertionError("cannot resolve env %r outside a cluster" % e)
    return env


class ChartReplica(Replica):
    """`coxswain run` with a Deployment's container args and env.

    ks: the KubeSim; dep: the Deployment (dict); pod: the pod name it runs
    as (POD_NAME); kubeconfig: default the service account's; extra: more
    flags appended (a test's own, e.g. --ports-file is always added).
    Starts at once and waits for its ports unless start=False."""

    def __init__(self, ks, dep, pod, kubeconfig=None, extra=(), start=True, dir=None):
        self.ks = ks
        self.dep = dep
        self.pod = pod
        self.namespace = dep["metadata"]["namespace"]
        self.dir = dir or tempfile.mkdtemp(prefix="chart-%s-" % pod)
        self.kubeconfig = kubeconfig or sa_kubeconfig(ks)
        self.ports_file = os.path.join(self.dir, "ports.json")
        self.xds = self.admin = self.xds_port = self.admin_port = None
        ctr = dep["spec"]["template"]["spec"]["containers"][0]
        mounts = mount_secrets(ks, dep["spec"]["template"]["spec"], self.namespace, self.dir)
        args = []
        for a in ctr["args"]:
            if a.startswith(("--xds-listen=", "--admin-listen=", "--leader-elect-peer-listen=")):
                a = a.split("=", 1)[0] + "=127.0.0.1:0"  # tests never use fixed ports
            for path, d in mounts.items():  # files where the pod mounts them
                a = a.replace("=" + path + "/", "=" + d + "/")
            args.append(a)
        self.chart_args = list(ctr["args"])
        self.args = args + ["--kubeconfig", self.kubeconfig, "--ports-file", self.ports_file] + \
            list(extra)
        Process.__init__(self, [coxswain()] + self.args, os.path.join(self.dir, "coxswain.log"),
                         env=container_env(ctr, pod, self.namespace), name=pod, start=False)
        self.identity = None
        if start:
            self.start()

    def _read_ports(self):
        info = Replica._read_ports(self)
        if info:
            self.identity = info.get("identity")
        return info
