"""Helpers for the daemon's end-to-end tests and benchmarks: kubesim with the
coxswain.dev CRDs, replicas of `coxswain run` on free ports, their metrics and
debug pages, and the audit-log analysis that proves who wrote what.

    ks = start_kubesim()                      # KubeSim with CRDs applied
    reps = [Replica(ks, "r%d" % i, lease="2s", renew="1500ms", retry="500ms")
            for i in range(3)]
    leader = wait_leader(reps)
    r.metric("coxswain_translations_total", result="ok")
    r.debug("snapshot")                       # /debug/snapshot body (bytes)

Times are CLOCK_MONOTONIC nanoseconds (time.monotonic_ns), the clock of
kubesim's audit log (mono_ns).
"""
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))

from kubesim import KubeSim  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GROUP = "/apis/coxswain.dev/v1"


def build_dir():
    return os.environ.get("COXSWAIN_BUILD") or os.path.join(TOP, "build")


def coxswain():
    return os.path.join(build_dir(), "bin", "coxswain")


def sanitized():
    return os.environ.get("COXSWAIN_SANITIZE", "0") not in ("", "0")


def mono():
    return time.monotonic_ns()


def crd_files():
    """The CRDs (api/crds/*.yaml)."""
    d = os.path.join(TOP, "api", "crds")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".yaml"))


def yaml_docs(path):
    """Documents of a YAML file (kubectl-style), via PyYAML (python3-yaml)."""
    import yaml
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def wait_for(cond, timeout, step=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(step)
    raise AssertionError("timed out after %.1fs waiting for %s (last: %r)" % (timeout, what, last))


def start_kubesim(args=(), state=False):
    ks = KubeSim(args=list(args), state=state)
    for path in crd_files():
        for doc in yaml_docs(path):
            if doc.get("kind") != "CustomResourceDefinition":
                continue
            st, out = ks.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                 doc)
            if st != 201:
                raise AssertionError("CRD %s: %s %s" % (doc["metadata"]["name"], st, out))
    wait_for(lambda: ks.request("GET", GROUP + "/proxysnapshots")[0] == 200, 5, what="CRDs served")
    return ks


# ---- objects -----------------------------------------------------------------------

PLURAL = {"Gateway": "gateways", "VirtualService": "virtualservices", "RouteTable": "routetables",
          "Upstream": "upstreams", "ProxySnapshot": "proxysnapshots"}


def obj_path(kind, ns, name=None, sub=None):
    if kind in PLURAL:
        p = "%s/namespaces/%s/%s" % (GROUP, ns, PLURAL[kind])
    elif kind == "Service":
        p = "/api/v1/namespaces/%s/services" % ns
    elif kind == "EndpointSlice":
        p = "/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices" % ns
    elif kind in ("Secret", "ConfigMap"):
        p = "/api/v1/namespaces/%s/%s" % (ns, kind.lower() + "s")
    elif kind == "Namespace":
        return "/api/v1/namespaces" + ("/" + name if name else "")
    else:
        raise ValueError(kind)
    if name:
        p += "/" + name
    if sub:
        p += "/" + sub
    return p


class Api:
    """A keep-alive HTTP/1.1 client to kubesim (fast bursts of writes)."""

    def __init__(self, ks):
        self.ks = ks
        self.conn = None

    def _conn(self):
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.ks.port, timeout=30)
        return self.conn

    def request(self, method, path, body=None, ctype="application/json"):
        data = None if body is None else (body if isinstance(body, (bytes, str))
                                          else json.dumps(body))
        if isinstance(data, str):
            data = data.encode()
        hdrs = {"Content-Type": ctype} if data is not None else {}
        for attempt in range(2):
            try:
                c = self._conn()
                c.request(method, path, body=data, headers=hdrs)
                r = c.getresponse()
                payload = r.read()
                break
            except (http.client.HTTPException, OSError):
                self.close()
                if attempt:
                    raise
        try:
            return r.status, json.loads(payload)
        except ValueError:
            return r.status, payload.decode(errors="replace")

    def create(self, obj):
        md = obj["metadata"]
        return self.request("POST", obj_path(obj["kind"], md.get("namespace"), None), obj)

    def get(self, kind, ns, name):
        return self.request("GET", obj_path(kind, ns, name))

    def list(self, kind, ns):
        st, out = self.request("GET", obj_path(kind, ns))
        return out.get("items", []) if st == 200 else []

    def patch(self, kind, ns, name, patch, sub=None):
        return self.request("PATCH", obj_path(kind, ns, name, sub), patch,
                            "application/merge-patch+json")

    def delete(self, kind, ns, name):
        return self.request("DELETE", obj_path(kind, ns, name))

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def namespace(api, name, labels=None):
    md = {"name": name}
    if labels:
        md["labels"] = labels
    st, out = api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": md})
    assert st == 201, (st, out)


def gateway(ns, name, mode="proxyless", selector=None):
    spec = {"mode": mode}
    if selector:
        spec["virtualServiceSelector"] = {"matchLabels": selector}
    return {"apiVersion": "coxswain.dev/v1", "kind": "Gateway",
            "metadata": {"namespace": ns, "name": name}, "spec": spec}


def upstream_static(ns, name, hosts):
    return {"apiVersion": "coxswain.dev/v1", "kind": "Upstream",
            "metadata": {"namespace": ns, "name": name},
            "spec": {"static": {"hosts": [{"address": a, "port": p} for a, p in hosts]}}}


def upstream_kube(ns, name, service, port):
    return {"apiVersion": "coxswain.dev/v1", "kind": "Upstream",
            "metadata": {"namespace": ns, "name": name},
            "spec": {"kube": {"service": service, "port": port}}}


def virtual_service(ns, name, domains, routes, labels=None):
    md = {"namespace": ns, "name": name}
    if labels:
        md["labels"] = labels
    return {"apiVersion": "coxswain.dev/v1", "kind": "VirtualService", "metadata": md,
            "spec": {"domains": domains, "routes": routes}}


def route(prefix, upstream, **extra):
    r = {"match": {"prefix": prefix}, "upstream": {"name": upstream}}
    r.update(extra)
    return r


def service(ns, name, ports):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": ns, "name": name},
            "spec": {"ports": [{"name": n, "port": p} for n, p in ports]}}


def endpoint_slice(ns, name, svc, port_name, port, addresses):
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"namespace": ns, "name": name,
                         "labels": {"kubernetes.io/service-name": svc}},
            "addressType": "IPv4", "ports": [{"name": port_name, "port": port}],
            "endpoints": [{"addresses": [a], "conditions": {"ready": True}} for a in addresses]}


# ---- replicas ------------------------------------------------------------------------


class Replica:
    """One `coxswain run` process on free ports, its log in a temp dir."""

    def __init__(self, ks, name, lease="2s", renew="1500ms", retry="500ms", lock="leases",
                 extra=(), env=None, start=True, elect=True, debounce="50ms"):
        self.ks = ks
        self.name = name
        self.dir = tempfile.mkdtemp(prefix="cxd-%s-" % name)
        self.ports_file = os.path.join(self.dir, "ports.json")
        self.log_path = os.path.join(self.dir, "coxswain.log")
        self.args = ["run", "--kubeconfig", ks.kubeconfig, "--namespace", "coxswain-system",
                     "--identity", name, "--xds-listen", "127.0.0.1:0",
                     "--admin-listen", "127.0.0.1:0", "--ports-file", self.ports_file,
                     "--debounce", debounce, "--leader-elect=%s" % ("true" if elect else "false"),
                     "--leader-elect-lease-duration", lease,
                     "--leader-elect-renew-deadline", renew,
                     "--leader-elect-retry-period", retry,
                     "--leader-elect-resource-lock", lock, "--log-level", "info"] + list(extra)
        self.env = dict(os.environ)
        self.env.pop("POD_NAMESPACE", None)
        if env:
            self.env.update(env)
        self.proc = None
        self.admin = self.xds = None
        self.prefix = []  # a command to run coxswain under (e.g. prlimit ...)
        if start:
            self.start()

    @property
    def user(self):
        """How kubesim names this replica in its audit log (User-Agent)."""
        return "coxswain/"

    def start(self, timeout=20):
        if os.path.exists(self.ports_file):
            os.unlink(self.ports_file)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.prefix + [coxswain()] + self.args, stdout=log, stderr=log,
                                     stdin=subprocess.DEVNULL, env=self.env)
        log.close()
        self.started_ns = mono()
        info = wait_for(self._ports, timeout, what="%s to listen" % self.name)
        self.admin, self.xds = info["admin"], info["xds"]
        return self

    def _ports(self):
        if self.proc.poll() is not None:
            raise AssertionError("%s exited with %s:\n%s" % (self.name, self.proc.returncode,
                                                             self.log()[-3000:]))
        try:
            with open(self.ports_file) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig=signal.SIGKILL):
        if self.alive():
            self.proc.send_signal(sig)
        if sig == signal.SIGKILL and self.proc is not None:
            self.proc.wait()

    def stop(self, timeout=10):
        """SIGTERM; returns (exit status, seconds it took)."""
        if not self.alive():
            return (self.proc.returncode if self.proc else None), 0.0
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        return rc, time.monotonic() - t0

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def http(self, path, method="GET", body=None, timeout=10):
        c = http.client.HTTPConnection("127.0.0.1", self.admin, timeout=timeout)
        try:
            c.request(method, path, body=body)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def debug(self, what):
        st, body = self.http("/debug/" + what)
        if st != 200:
            raise AssertionError("%s /debug/%s: %s %s" % (self.name, what, st, body[:200]))
        return body

    def leader_info(self):
        return json.loads(self.debug("leader"))

    def metrics_text(self):
        st, body = self.http("/metrics")
        assert st == 200, st
        return body.decode()

    def metrics(self):
        return parse_metrics(self.metrics_text())

    def metric(self, name, **labels):
        """Sum of the series of |name| whose labels include |labels|."""
        total = 0.0
        for (n, lab), v in self.metrics().items():
            if n == name and all(dict(lab).get(k) == str(x) for k, x in labels.items()):
                total += v
        return total

    def ready(self):
        try:
            return self.http("/readyz")[0] == 200
        except OSError:
            return False


_SERIES = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """{(name, ((label, value), ...)): float} of every sample."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SERIES.match(line)
        if not m:
            continue
        labels = tuple(sorted(_LABEL.findall(m.group(3) or "")))
        try:
            out[(m.group(1), labels)] = float(m.group(4))
        except ValueError:
            pass
    return out


def leaders(reps):
    return [r for r in reps if r.alive() and r.leader_info()["leading"]]


def wait_leader(reps, timeout=15):
    def one():
        ls = leaders(reps)
        return ls[0] if len(ls) == 1 else None
    return wait_for(one, timeout, what="exactly one leader")


def wait_ready(reps, timeout=20):
    wait_for(lambda: all(r.ready() for r in reps if r.alive()), timeout, what="replicas ready")


def writers_idle(r):
    li = r.leader_info()
    return li["leading"] and li["status_writer"]["idle"] and li["publisher"]["idle"]


# ---- statuses ------------------------------------------------------------------------

def status_converged(api, ns, kinds=("Gateway", "VirtualService", "RouteTable", "Upstream")):
    """(True, []) when every object's status.observedGeneration equals its
    metadata.generation and it has a state; else (False, [stuck objects])."""
    stuck = []
    for k in kinds:
        for o in api.list(k, ns):
            st = o.get("status") or {}
            gen = o["metadata"].get("generation")
            if st.get("observedGeneration") != gen or not st.get("state"):
                stuck.append("%s %s: generation %s, status %s" % (
                    k, o["metadata"]["name"], gen, json.dumps(st)[:200]))
    return (not stuck), stuck


# ---- audit analysis --------------------------------------------------------------------

def identity_of(user):
    """The replica identity in a User-Agent "coxswain/<v> (linux) replica/<id>"."""
    m = re.search(r"replica/(\S+)", user or "")
    return m.group(1) if m else None


def lease_timeline(ks, ns, name, audit):
    """[(mono_ns, rv, holder)] of every successful write of the Lease, from
    kubesim's watch history (holders) joined with its audit log (times)."""
    path = "/apis/coordination.k8s.io/v1/namespaces/%s/leases?watch=1&resourceVersion=1" \
           "&timeoutSeconds=1&fieldSelector=metadata.name%%3D%s" % (ns, name)
    holders = {}
    w = ks.watch(path, timeout=10)
    try:
        for ev in w:
            o = ev.get("object", {})
            rv = o.get("metadata", {}).get("resourceVersion")
            if rv:
                holders[int(rv)] = (o.get("spec") or {}).get("holderIdentity") or ""
    finally:
        w.close()
    out = []
    for a in audit:
        if a.get("resource") == "leases" and a.get("name") == name and a.get("code") in (200, 201) \
                and a.get("resourceVersion"):
            rv = int(a["resourceVersion"])
            if rv in holders:
                out.append((a["mono_ns"], rv, holders[rv]))
    out.sort()
    return out


def configmap_lock_timeline(ks, ns, name, audit):
    """The same for a ConfigMap lock (holder in the leader annotation)."""
    path = "/api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=1&timeoutSeconds=1" \
           "&fieldSelector=metadata.name%%3D%s" % (ns, name)
    holders = {}
    w = ks.watch(path, timeout=10)
    try:
        for ev in w:
            o = ev.get("object", {})
            md = o.get("metadata", {})
            rec = (md.get("annotations") or {}).get("control-plane.alpha.kubernetes.io/leader")
            try:
                holder = json.loads(rec).get("holderIdentity", "") if rec else ""
            except ValueError:
                holder = "?"
            if md.get("resourceVersion"):
                holders[int(md["resourceVersion"])] = holder
    finally:
        w.close()
    out = []
    for a in audit:
        if a.get("resource") == "configmaps" and a.get("name") == name and \
                a.get("code") in (200, 201) and a.get("resourceVersion"):
            rv = int(a["resourceVersion"])
            if rv in holders:
                out.append((a["mono_ns"], rv, holders[rv]))
    out.sort()
    return out


def holder_at(timeline, t):
    h = ""
    for mono_ns, _, holder in timeline:
        if mono_ns > t:
            break
        h = holder
    return h


def leader_only_writes(audit, timeline, resources=("virtualservices", "gateways", "routetables",
                                                    "upstreams", "proxysnapshots")):
    """Every write (any outcome) to |resources| by a coxswain replica, and
    those whose writer did not hold the lock at that moment."""
    writes, bad = [], []
    for a in audit:
        if a.get("resource") not in resources:
            continue
        who = identity_of(a.get("user"))
        if who is None:
            continue  # the test's own writes
        writes.append(a)
        if holder_at(timeline, a["mono_ns"]) != who:
            bad.append(a)
    return writes, bad
