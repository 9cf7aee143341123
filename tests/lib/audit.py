"""What kubesim's audit log tells about the replicas: who wrote what and
when, who held the lock at each moment, and whether only the holder wrote.
Pure analysis of audit entries (kubesim.audit(), AuditTail) plus the lock's
history read back from kubesim. Proofs of the election's safety from the
same data: invariants.py.
"""
import json
import re
import subprocess
import threading

from replicas import coxswain


def identity_of(user):
    """The replica identity in a User-Agent "coxswain/<v> (linux) replica/<id>"."""
    m = re.search(r"replica/(\S+)", user or "")
    return m.group(1) if m else None


class LeaseHolders:
    """The holder of every version of one Lease, recorded as it happens by a
    watch kept open from the start of a test: kubesim's event window, like
    kube-apiserver's watch cache, forgets events older than 75 s, so a long
    test cannot read its lock's history back at the end. .holders: {rv:
    holderIdentity}. close() stops the watch."""

    def __init__(self, ks, ns, name):
        self.ks, self.ns, self.name = ks, ns, name
        self.holders = {}
        self.errors = []
        self._stop = threading.Event()
        self._watch = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        rv = "0"
        while not self._stop.is_set():
            path = ("/apis/coordination.k8s.io/v1/namespaces/%s/leases?watch=1"
                    "&resourceVersion=%s&timeoutSeconds=30&fieldSelector=metadata.name%%3D%s"
                    % (self.ns, rv, self.name))
            try:
                self._watch = self.ks.watch(path, timeout=40)
                for ev in self._watch:
                    o = ev.get("object", {})
                    if ev.get("type") == "ERROR":
                        self.errors.append(o)  # 410: lost versions; start over
                        rv = "0"
                        break
                    v = o.get("metadata", {}).get("resourceVersion")
                    if v and ev.get("type") != "BOOKMARK":
                        self.holders[int(v)] = (o.get("spec") or {}).get("holderIdentity") or ""
                    if v:
                        rv = v
            except Exception as e:  # noqa: BLE001 - kubesim closed or restarting
                if self._stop.wait(0.2):
                    return
                self.errors.append(str(e))

    def close(self):
        self._stop.set()
        if self._watch is not None:
            self._watch.close()
        self._thread.join(5)


def lease_timeline(ks, ns, name, audit, holders=None):
    """[(mono_ns, rv, holder)] of every successful write of the Lease, from
    the Lease's versions (|holders|, a LeaseHolders' record; else kubesim's
    watch history, which keeps only recent events) joined with its audit log
    (times)."""
    if holders is None:
        holders = {}
        path = "/apis/coordination.k8s.io/v1/namespaces/%s/leases?watch=1&resourceVersion=1" \
               "&timeoutSeconds=1&fieldSelector=metadata.name%%3D%s" % (ns, name)
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


def lease_holder(ks, name="coxswain"):
    st, obj = ks.get("leases", name, namespace="default", group="coordination.k8s.io")
    if st != 200:
        return None, None
    return obj.get("spec", {}).get("holderIdentity"), obj


_VERSION = []


def user_agent(ident, product="coxswain-election"):
    """The User-Agent (kubesim's user under --allow-all) of a replica's
    elector (coxswain-election) or test writer (coxswain-writer)."""
    if not _VERSION:
        out = subprocess.run([coxswain(), "version"], capture_output=True, text=True).stdout
        _VERSION.append(out.split()[-1])
    return "%s/%s (linux) replica/%s" % (product, _VERSION[0], ident)


ALLOWED = re.compile(r"test write seq=(\d+) term=(\d+) allowed at mono=(\d+)")


def writes_issued(elector):
    """(mono, seq) of every guarded test write |elector| sent, from its debug
    log (the time the guard said yes)."""
    return [(int(m.group(3)), int(m.group(1))) for m in ALLOWED.finditer(elector.log())]


def writes_by(audit, ident, product="coxswain-writer", resource="configmaps"):
    """Committed writes (2xx) of |ident|'s |product| on |resource|."""
    out = []
    for a in audit:
        u = a.get("user", "")
        if (u.startswith(product + "/") and u.endswith("replica/" + ident) and
                a.get("resource") == resource and 200 <= a.get("code", 0) < 300):
            out.append(a)
    return out


def acquisitions(audit, name="coxswain", resource="leases"):
    """(mono_ns, identity) of every committed lock write that changed the
    holder, from the audit log and the lock's history as kubesim saw it."""
    out = []
    for a in audit:
        if a.get("resource") != resource or a.get("name") != name:
            continue
        if not (200 <= a.get("code", 0) < 300) or a.get("verb") not in ("create", "update"):
            continue
        u = a.get("user", "")
        ident = u.rsplit("replica/", 1)[1] if "replica/" in u else u
        out.append((a["mono_ns"], ident, a))
    return out


class AuditTail:
    """Reads kubesim's --audit-file incrementally (whole lines only)."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.partial = b""

    def read(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()
        out = []
        for line in lines:
            if line.strip():
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out
