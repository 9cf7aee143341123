"""The machinery of the chaos test (tests/chaos/chaos.py): kubesim that can
be restarted on the same port, replicas with their own kubesim users (the
processes themselves: replicas.py), the lock observer and the VirtualService
writer. The audit tail is audit.AuditTail.

Every replica incarnation gets its own bearer token whose kubesim user is
its identity ("r1-3": slot r1, third start), so the audit log names exactly
which process wrote, and a partition of that user cuts that process off.
Times are CLOCK_MONOTONIC nanoseconds (time.monotonic_ns), the clock of
kubesim's audit log and of `coxswain elect`'s lines.
"""
import http.client
import json
import os
import re
import secrets
import threading
import time
import urllib.parse

from kubesim import KubeSim, KubeSimError
from invariants import LockHistory
from objects import GROUP, apply_crds
import replicas


def parse_duration_ns(s):
    """Go-style durations as our flags take them: 3s, 500ms, 1m, 1.5s."""
    total = 0.0
    units = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}
    pos = 0
    for m in re.finditer(r"([0-9.]+)(ns|us|ms|s|m|h)", s):
        if m.start() != pos:
            raise ValueError("bad duration %r" % s)
        total += float(m.group(1)) * units[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise ValueError("bad duration %r" % s)
    return int(total)


# ---- kubesim -----------------------------------------------------------------------

class Cluster:
    """kubesim with --state (restarts keep the store), --audit-file (the log
    survives restarts), a token per user, and the same port after restarts
    (so replicas' kubeconfigs stay valid)."""

    def __init__(self, outdir, extra_args=()):
        self.outdir = outdir
        self.audit_path = os.path.join(outdir, "audit.jsonl")
        self.tokens = {}
        self.driver_tokens = {}
        for user in ("chaos-writer", "chaos-observer", "chaos-driver"):
            tok = secrets.token_hex(12)
            self.tokens[tok] = user
            self.driver_tokens[user] = tok
        args = ["--audit-file", self.audit_path, "--bookmark-interval", "1s",
                "--log-level", "warn"] + list(extra_args)
        # As a 1.28 cluster serves it (objects.AS_1_28): WatchList off,
        # realistic bookmarks, HTTP/2 over TLS (the certificate survives
        # restarts, as a real API server's does).
        self.ks = KubeSim(args=args, state=True, tokens=self.tokens, profile="1.28", tls=True)
        self.port = self.ks.port
        # Later starts bind the same port (kubesim's last --listen wins).
        self.ks.args += ["--listen", "127.0.0.1:%d" % self.port]
        self.incarnation = 1
        self.restarts = 0
        self.lock = threading.Lock()

    @property
    def dir(self):
        return self.ks.dir

    def token(self, user):
        return self.driver_tokens[user]

    def add_token(self, token, user):
        """Adds a token to the file; a running kubesim re-reads it, a
        stopped one reads it when it starts again."""
        with self.lock:
            self.tokens[token] = user
            self.ks.write_tokens(self.tokens)
        deadline = time.monotonic() + 10
        while self.alive():
            try:
                st, out = self.ks.request("POST", "/_sim/tokens/reload", timeout=5)
                if st == 200:
                    return
            except OSError as e:
                st, out = 0, e
            if time.monotonic() > deadline:
                raise KubeSimError("tokens reload: %s %s" % (st, out))
            time.sleep(0.05)

    def alive(self):
        return self.ks.proc is not None and self.ks.proc.poll() is None

    def stop(self):
        """SIGTERM (kubesim saves its state); returns its exit status."""
        with self.lock:
            self.incarnation += 1
        return self.ks.stop()

    def start(self, attempts=50):
        """Starts again on the same port (retried while the port is busy)."""
        last = None
        for _ in range(attempts):
            try:
                self.ks.start()
                self.restarts += 1
                return
            except KubeSimError as e:
                last = e
                self.ks.stop()
                time.sleep(0.1)
        raise KubeSimError("kubesim did not come back on port %d: %s" % (self.port, last))

    def admin(self, method, path, body=None, ok=(200, 201)):
        """An admin call; returns (status, body) and never raises on an
        HTTP status (faults may race a restart)."""
        try:
            return self.ks.request(method, "/_sim" + path, body, timeout=10)
        except OSError as e:
            return 0, str(e)

    def request(self, method, path, body=None, user="chaos-driver", ctype=None, timeout=10):
        return self.ks.request(method, path, body, token=self.token(user), ctype=ctype,
                               timeout=timeout)

    def close(self):
        """Stops kubesim; its log goes to <outdir>/kubesim.log."""
        self.ks.stop()
        with open(os.path.join(self.outdir, "kubesim.log"), "w") as f:
            f.write(self.ks.log())
        return self.ks.close()


# ---- replicas ----------------------------------------------------------------------

def start_replica(cluster, slot, incarnation, mode, timings, outdir, lock_name="coxswain",
                  lock_ns="default", write_interval="100ms", extra=()):
    """Starts incarnation |incarnation| of |slot|: `coxswain elect` (mode
    "elect") or `coxswain run` (mode "run"), a replicas.Elector or
    replicas.Replica that does not wait for its start (wait_started does).
    Its identity ("r1-3") is also its kubesim user: a token of its own,
    added to |cluster|, is in its kubeconfig (.token). timings: (lease,
    renew, retry) flag values."""
    identity = "%s-%d" % (slot, incarnation)
    rdir = os.path.join(outdir, identity)
    os.makedirs(rdir, exist_ok=True)
    token = secrets.token_hex(12)
    cluster.add_token(token, identity)
    kubeconfig = os.path.join(rdir, "kubeconfig")
    replicas.write_kubeconfig(kubeconfig, cluster.port, token, ca_file=cluster.ks.ca_file)
    lease, renew, retry = timings
    if mode == "elect":
        r = replicas.Elector(cluster.ks, identity, lease, renew, retry, lock="leases",
                             name=lock_name, namespace=lock_ns, write_interval=write_interval,
                             admin=True, extra=extra, kubeconfig=kubeconfig, dir=rdir,
                             log_level="info", wait=False)
    else:
        r = replicas.Replica(cluster.ks, identity, lease, renew, retry, lock="leases",
                             extra=extra, debounce=None, namespace=lock_ns, lock_name=lock_name,
                             lock_namespace=lock_ns, kubeconfig=kubeconfig, dir=rdir,
                             wait=False)
    r.slot, r.mode, r.token = slot, mode, token
    return r


# ---- observers ---------------------------------------------------------------------------

class Observer(threading.Thread):
    """Watches one object as user chaos-observer and hands every version to
    record(obj). Survives watch ends, 410s (re-GET) and kubesim restarts."""

    def __init__(self, cluster, coll, name, record):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.coll = coll          # e.g. /api/v1/namespaces/default/configmaps
        self.name = name
        self.record = record
        self.running = True
        self.rv = "0"
        self.reconnects = 0
        self.resyncs = 0

    def _get(self):
        try:
            st, obj = self.cluster.request("GET", "%s/%s" % (self.coll, self.name),
                                           user="chaos-observer", timeout=5)
        except OSError:
            return False
        if st == 200:
            self.record(obj)
            self.rv = obj["metadata"]["resourceVersion"]
            return True
        if st == 404:
            self.rv = "0"
            return True
        return False

    def run(self):
        while self.running:
            q = urllib.parse.urlencode({
                "watch": "1", "allowWatchBookmarks": "true", "resourceVersion": self.rv,
                "fieldSelector": "metadata.name=" + self.name, "timeoutSeconds": "60"})
            conn = None
            try:
                conn = self.cluster.ks.connection(5)
                conn.request("GET", self.coll + "?" + q, headers={
                    "Authorization": "Bearer " + self.cluster.token("chaos-observer")})
                resp = conn.getresponse()
                if resp.status != 200:
                    resp.read()
                    raise OSError("watch: HTTP %d" % resp.status)
                buf = b""
                while self.running:
                    chunk = resp.read1(65536)
                    if not chunk:
                        break
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        if not line.strip():
                            continue
                        ev = json.loads(line)
                        if ev.get("type") == "ERROR":
                            raise OSError("watch ERROR %s" % ev.get("object", {}).get("code"))
                        obj = ev.get("object") or {}
                        if ev.get("type") in ("ADDED", "MODIFIED"):
                            self.record(obj)
                        rv = obj.get("metadata", {}).get("resourceVersion")
                        if rv:
                            self.rv = rv
            except (OSError, ValueError, http.client.HTTPException):
                # Gone (410), kubesim restarting, a dropped watch: read the
                # object again, then watch from there.
                self.resyncs += 1
                deadline = time.monotonic() + 2
                while self.running and not self._get() and time.monotonic() < deadline:
                    time.sleep(0.05)
            finally:
                if conn is not None:
                    conn.close()
            self.reconnects += 1
            if self.running:
                time.sleep(0.02)

    def replay_window(self):
        """Records what kubesim still holds of the object's history (its
        event window, from resourceVersion 1)."""
        q = urllib.parse.urlencode({"watch": "1", "resourceVersion": "1", "timeoutSeconds": "1",
                                    "fieldSelector": "metadata.name=" + self.name})
        try:
            w = self.cluster.ks.watch(self.coll + "?" + q, timeout=10)
        except OSError:
            return 0
        n = 0
        try:
            for ev in w:
                if ev.get("type") == "ERROR":
                    break
                if ev.get("type") in ("ADDED", "MODIFIED"):
                    self.record(ev.get("object") or {})
                n += 1
        except (OSError, ValueError):
            pass
        finally:
            w.close()
        return n

    def stop(self):
        self.running = False


def lock_collection(lock):
    base = "/api/v1" if lock.resource == "configmaps" else "/apis/coordination.k8s.io/v1"
    return "%s/namespaces/%s/%s" % (base, lock.namespace, lock.resource)


class LockObserver(Observer):
    """The lock object's versions, into a LockHistory (.history)."""

    def __init__(self, cluster, lock):
        self.history = LockHistory(lock)
        super().__init__(cluster, lock_collection(lock), lock.name, self.history.add_object)


class SendTimes(Observer):
    """The versions of `coxswain elect`'s test ConfigMap: each guarded patch
    carries data.writer and data.mono (its send time, CLOCK_MONOTONIC), so
    resourceVersion -> (writer, mono) tells when a landed write was sent."""

    def __init__(self, cluster, namespace, name):
        self.by_rv = {}
        super().__init__(cluster, "/api/v1/namespaces/%s/configmaps" % namespace, name,
                         self._add)

    def _add(self, obj):
        md = obj.get("metadata") or {}
        data = obj.get("data") or {}
        try:
            self.by_rv[str(md["resourceVersion"])] = (data["writer"], int(data["mono"]))
        except (KeyError, ValueError, TypeError):
            pass

    def sent_of(self, writer_of):
        def f(a):
            rec = self.by_rv.get(str(a.get("resourceVersion")))
            if rec and rec[0] == writer_of(a.get("user")):
                return rec[1]
            return None
        return f


# ---- the VirtualService writer -------------------------------------------------------

def vs_path(ns, name=None, sub=None):
    p = "%s/namespaces/%s/virtualservices" % (GROUP, ns)
    if name:
        p += "/" + name
    if sub:
        p += "/" + sub
    return p


class Writer(threading.Thread):
    """Keeps changing VirtualServices (user chaos-writer): merge patches of
    a route's prefix and timeout, now and then a delete and re-create.
    Errors (faults, restarts) are counted and retried later."""

    def __init__(self, cluster, rng, ns="chaos", count=20, rate=5.0):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.rng = rng
        self.ns = ns
        self.count = count
        self.period = 1.0 / rate
        self.running = True
        self.ok = 0
        self.failed = 0
        self.deleted = set()
        self.conn = None

    def setup(self):
        c = self.cluster
        apply_crds(c.request, ok=(201, 409), timeout=10)
        st, out = c.request("POST", "/api/v1/namespaces",
                            {"apiVersion": "v1", "kind": "Namespace",
                             "metadata": {"name": self.ns}})
        if st not in (201, 409):
            raise KubeSimError("namespace: %s %s" % (st, out))
        objs = [{"apiVersion": "coxswain.dev/v1", "kind": "Gateway",
                 "metadata": {"namespace": self.ns, "name": "edge"},
                 "spec": {"mode": "proxyless"}},
                {"apiVersion": "coxswain.dev/v1", "kind": "Upstream",
                 "metadata": {"namespace": self.ns, "name": "backend"},
                 "spec": {"static": {"hosts": [{"address": "127.0.0.1", "port": 9}]}}}]
        for o in objs:
            plural = {"Gateway": "gateways", "Upstream": "upstreams"}[o["kind"]]
            st, out = c.request("POST", "%s/namespaces/%s/%s" % (GROUP, self.ns, plural), o)
            if st not in (201, 409):
                raise KubeSimError("%s: %s %s" % (o["kind"], st, out))
        for i in range(self.count):
            st, out = c.request("POST", vs_path(self.ns), self.vs(i, 0))
            if st not in (201, 409):
                raise KubeSimError("VirtualService: %s %s" % (st, out))

    def vs(self, i, k):
        return {"apiVersion": "coxswain.dev/v1", "kind": "VirtualService",
                "metadata": {"namespace": self.ns, "name": "vs-%d" % i},
                "spec": {"domains": ["vs-%d.chaos.test" % i],
                         "routes": [{"match": {"prefix": "/v%d" % k},
                                     "upstream": {"name": "backend"}}]}}

    def _request(self, method, path, body, ctype="application/json"):
        if self.conn is None:
            self.conn = self.cluster.ks.connection(5)
        data = json.dumps(body).encode() if body is not None else None
        hdrs = {"Authorization": "Bearer " + self.cluster.token("chaos-writer")}
        if data is not None:
            hdrs["Content-Type"] = ctype
        try:
            self.conn.request(method, path, body=data, headers=hdrs)
            r = self.conn.getresponse()
            r.read()
            return r.status
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = None
            return 0

    def step(self):
        i = self.rng.randrange(self.count)
        k = self.rng.randrange(1000000)
        name = "vs-%d" % i
        if name in self.deleted:
            st = self._request("POST", vs_path(self.ns), self.vs(i, k))
            if st in (201, 409):
                self.deleted.discard(name)
        elif self.rng.random() < 0.05:
            st = self._request("DELETE", vs_path(self.ns, name), None)
            if st in (200, 404):
                self.deleted.add(name)
        else:
            patch = {"spec": {"routes": [{"match": {"prefix": "/v%d" % k},
                                          "upstream": {"name": "backend"},
                                          "timeout": "%ds" % (1 + k % 30)}]}}
            st = self._request("PATCH", vs_path(self.ns, name), patch,
                               "application/merge-patch+json")
        if 200 <= st < 300:
            self.ok += 1
        else:
            self.failed += 1

    def run(self):
        nxt = time.monotonic()
        while self.running:
            self.step()
            nxt += self.period
            delay = nxt - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                nxt = time.monotonic()

    def stop(self):
        self.running = False


# ---- names that moved to replicas.py and audit.py, kept while tests move over -------
# (the old Replica(...) of this module: start_replica with its old method names)

from audit import AuditTail  # noqa: E402,F401
from replicas import has_subcommand, mono, parse_metrics, sanitized  # noqa: E402,F401


def Replica(cluster, slot, incarnation, mode, timings, outdir, **kw):
    r = start_replica(cluster, slot, incarnation, mode, timings, outdir, **kw)
    r.wait_ready = r.wait_started
    r.kill9 = r.kill
    r.terminate = lambda timeout=5.0: r.stop(timeout=timeout)
    r.leader_info = r.try_leader_info
    r.http = lambda path, timeout=3: r.try_http(path, timeout)
    return r
