# cx-test: exclusive (measures latencies a neighbouring test would disturb)
"""HTTP/2 to the API server survives a connection that goes silent.

kube-apiserver speaks HTTP/2 and libcurl multiplexes every request and watch
of a client over one connection, so one dead connection (a load balancer
failing over, a NAT entry dropped) holds all of them. Here kubesim (HTTPS)
sits behind nghttpx, which answers ALPN h2 as kube-apiserver does, and
tests/lib/tcpproxy.py sits between the client and nghttpx: its "freeze"
mode silences every open connection without closing it while new ones pass.

- A quiet watch over HTTP/2 stays up: its connection gets health checks
  (GET /livez on the same connection, one connection in all) and nothing is
  abandoned or restarted.
- Frozen: the health check goes unanswered, the connection is closed (log
  line, metric), the watch resumes on a new connection and a change made
  after the freeze arrives within read-idle + ping-timeout + slack.
- Two replicas (leader and standby, elector and main client each) frozen at
  once: each client closes its dead connection, a leader renews again, and a
  change made after the freeze gets its status written, all within 45 s.
"""
import base64
import calendar
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import objects as O  # noqa: E402
import replicas as R  # noqa: E402
from kubesim import KubeSim  # noqa: E402
from tap import Tap, check, check_eq, SkipCase  # noqa: E402
from tcpproxy import Proxy  # noqa: E402

SLOW = 3.0 if R.sanitized() else 1.0
IDLE_MS = 2000
# Long enough that a loaded machine answers every check of a live
# connection in time (2 s was not, under a load average of 20).
PING_MS = int(5000 * SLOW)
NS = "h2"
BOUND_S = 45.0  # the bound for everything to flow again
ABANDON = "did not answer a health check"


class Front:
    """nghttpx: TLS with kubesim's certificate, ALPN h2 (and http/1.1), on a
    Unix socket; kubesim (HTTPS) behind it."""

    def __init__(self, ks):
        self.dir = ks.dir
        self.sock = os.path.join(ks.dir, "h2.sock")
        self.access = os.path.join(ks.dir, "nghttpx-access.log")
        self.errlog = os.path.join(ks.dir, "nghttpx-error.log")
        cmd = [shutil.which("nghttpx") or "/usr/sbin/nghttpx", "--conf=/dev/null",
               "--frontend=unix:" + self.sock,
               "--backend=127.0.0.1,%d;;tls;sni=localhost" % ks.port,
               "--cacert=" + ks.ca_file, "--workers=1", "--no-ocsp",
               "--backend-read-timeout=1h", "--frontend-read-timeout=1h",
               "--frontend-http2-read-timeout=1h", "--backend-keep-alive-timeout=1h",
               "--backend-connections-per-host=64",
               "--accesslog-file=" + self.access,
               '--accesslog-format=$request $status "$http_user_agent"',
               "--errorlog-file=" + self.errlog,
               os.path.join(ks.dir, "server.key"), os.path.join(ks.dir, "server.crt")]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        R.wait_for(lambda: os.path.exists(self.sock) or self.proc.poll() is not None, 10,
                   what="nghttpx listening")
        check(self.proc.poll() is None, "nghttpx exited: %s" % self.errors())

    def errors(self):
        try:
            with open(self.errlog) as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def raw(self):
        try:
            with open(self.access) as f:
                return f.read()
        except OSError:
            return ""

    def requests(self, agent_prefix):
        """[(request line, status)] nghttpx served to that User-Agent."""
        out = []
        try:
            with open(self.access) as f:
                for ln in f:
                    req, _, rest = ln.rstrip("\n").partition(" HTTP/")
                    parts = rest.split(" ", 2)
                    if len(parts) == 3 and parts[2].strip('"').startswith(agent_prefix):
                        out.append((req + " HTTP/" + parts[0], parts[1]))
        except OSError:
            pass
        return out

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def kubeconfig(path, port, ca_pem):
    cluster = {"server": "https://127.0.0.1:%d" % port,
               "certificate-authority-data": base64.b64encode(ca_pem).decode()}
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                   "clusters": [{"name": "c", "cluster": cluster}],
                   "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u",
                                                          "namespace": NS}}],
                   "users": [{"name": "u", "user": {}}]}, f)


class KubeWatch:
    """`coxswain kube-watch` on ConfigMaps of NS: its lines, timestamped."""

    def __init__(self, kc, logdir):
        self.log_path = os.path.join(logdir, "kube-watch.log")
        self.errf = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [R.coxswain(), "kube-watch", "--kubeconfig", kc, "--resource", "configmaps",
             "--namespace", NS, "--identity", "h2", "--read-idle", str(IDLE_MS),
             "--ping-timeout", str(PING_MS), "--stall", "3600000", "--watch-timeout", "3600"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errf, text=True,
            env=R.child_env({"COXSWAIN_LOG_LEVEL": "debug"}))
        self.lines = queue.Queue()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for ln in self.proc.stdout:
            try:
                self.lines.put((time.monotonic(), json.loads(ln)))
            except ValueError:
                pass

    def wait(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("timed out after %.1fs waiting for %s; log:\n%s" %
                                     (timeout, what, self.log()[-3000:]))
            try:
                t, ev = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if pred(ev):
                return t, ev

    def dump(self):
        self.proc.stdin.write("dump\n")
        self.proc.stdin.flush()
        return self.wait(lambda e: e.get("event") == "dump", 10 * SLOW, "dump")[1]

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            self.proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.errf.close()


def put_cm(ks, name):
    st, out = ks.create("configmaps", {"metadata": {"name": name}, "data": {"k": name}},
                        namespace=NS)
    check(st == 201, "create configmap %s: %s %s" % (name, st, out))


class TlsApi(O.Api):
    """objects.Api over kubesim's HTTPS."""

    def _conn(self):
        if self.conn is None:
            self.conn = self.ks.connection()
        return self.conn


def main():
    t = Tap()
    if not shutil.which("nghttpx") and not os.path.exists("/usr/sbin/nghttpx"):
        t.case("nghttpx present (mk/deps.sh: nghttp2-proxy)",
               lambda: check(False, "nghttpx missing"))
        t.done()
    ks = KubeSim(tls=True, args=["--bookmark-interval", "1h"])
    front = proxy = kw = None
    try:
        front = Front(ks)
        proxy = Proxy(front.sock)
        with open(ks.ca_file, "rb") as f:
            ca = f.read()
        kc = os.path.join(ks.dir, "h2.kubeconfig")
        kubeconfig(kc, proxy.port, ca)
        st, out = ks.create("namespaces", {"metadata": {"name": NS}})
        check(st == 201, "namespace: %s %s" % (st, out))
        put_cm(ks, "before")
        kw = KubeWatch(kc, ks.dir)
        kw.wait(lambda e: e.get("event") == "synced", 20 * SLOW, "synced")

        def case_quiet():
            # Quiet (no events, no bookmarks) for four read-idle periods.
            time.sleep(4 * IDLE_MS / 1000.0 + 1)
            # (nghttpx logs a request when it ends: the watch is still open)
            reqs = front.requests("coxswain/")
            check(reqs and all(r.endswith("HTTP/2") for r, _ in reqs),
                  "the client speaks HTTP/2 to nghttpx: %r\n%s" % (reqs[:5], front.raw()[-1500:]))
            probes = [r for r in reqs if r[0].startswith("GET /livez")]
            check(len(probes) >= 2, "health checks on the idle connection: %r" % probes)
            check(all(s == "200" for _, s in probes), "answered: %r" % probes)
            check_eq(proxy.connections, 1, "connections (the checks share the watch's)")
            d = kw.dump()["stats"]
            check_eq(d["watch_restarts"], 0, "watch restarts while quiet")
            check_eq(d["conns_abandoned"], 0, "connections abandoned while quiet")
            check(d["probes"] >= 2, "probes counted: %r" % d)
            check(ABANDON not in kw.log(), kw.log()[-2000:])
            put_cm(ks, "quiet-ok")
            kw.wait(lambda e: e.get("event") == "add" and e.get("key") == NS + "/quiet-ok",
                    10 * SLOW, "a change over the checked connection")

        def case_frozen():
            proxy.set_mode("freeze")
            t0 = time.monotonic()
            put_cm(ks, "after-freeze")
            t1, _ = kw.wait(lambda e: e.get("event") == "add" and
                            e.get("key") == NS + "/after-freeze",
                            BOUND_S * SLOW, "the change made after the freeze")
            took = t1 - t0
            print("# the change arrived %.1f s after the freeze" % took)
            bound = (IDLE_MS + PING_MS) / 1000.0 + 5 * SLOW
            check(took <= bound, "arrived after %.1f s, over %.1f s" % (took, bound))
            check(took >= PING_MS / 1000.0 - 0.3,
                  "arrived after %.1f s: before the health check could time out" % took)
            log = kw.log()
            check(ABANDON in log and "client coxswain" in log, log[-2000:])
            check_eq(proxy.connections, 2, "connections (the dead one and its replacement)")
            d = kw.dump()["stats"]
            check_eq(d["conns_abandoned"], 1, "connections abandoned")
            check(d["watch_restarts"] >= 1, "the watch resumed: %r" % d)

        t.case("a quiet watch over HTTP/2: its connection checked, nothing restarted",
               case_quiet)
        t.case("a frozen connection: closed after an unanswered check, the watch resumes",
               case_frozen)
        kw.close()
        kw = None
        proxy.set_mode("pass")
        case_replicas(t, ks, front, kc)
    finally:
        if kw:
            kw.close()
        if proxy:
            proxy.close()
        if front:
            front.close()
        ks.close()
    t.done()


def lease(ks, name="coxswain", ns="coxswain-system"):
    st, out = ks.get("leases", name, namespace=ns, group="coordination.k8s.io")
    return out.get("spec", {}) if st == 200 else {}


def case_replicas(t, ks, front, kc_unused):
    O.apply_crds(ks.request)
    api = TlsApi(ks)
    for n in ("app", "coxswain-system"):
        O.namespace(api, n)
    for o in (O.gateway("app", "gw"), O.upstream_static("app", "up", [("10.0.0.1", 8080)]),
              O.virtual_service("app", "vs", ["app.example"], [O.route("/", "up")])):
        st, out = api.create(o)
        check(st == 201, "create %s: %s %s" % (o["kind"], st, out))
    proxy = Proxy(front.sock)
    with open(ks.ca_file, "rb") as f:
        ca = f.read()
    kc = os.path.join(ks.dir, "replicas.kubeconfig")
    kubeconfig(kc, proxy.port, ca)
    flags = ["--kube-api-read-idle-timeout", "%dms" % IDLE_MS,
             "--kube-api-ping-timeout", "%dms" % PING_MS, "--watch-namespaces", "app"]
    reps = []
    try:
        reps = [R.Replica(ks, n, kubeconfig=kc, extra=flags, lease="4s", renew="3s",
                          retry="1s") for n in ("h2a", "h2b")]
        R.wait_for(lambda: all(r.ready() for r in reps), 40 * SLOW, what="replicas ready")
        R.wait_leader(reps, 15 * SLOW)
        R.wait_for(lambda: O.status_converged(api, "app")[0], 30 * SLOW, what="statuses")

        def case():
            before = {r.name: r.log().count(ABANDON) for r in reps}
            proxy.set_mode("freeze")
            t0 = time.monotonic()
            frozen_at = time.time()
            st, out = api.patch("VirtualService", "app", "vs",
                                {"spec": {"routes": [O.route("/v2", "up")]}})
            check(st == 200, "patch vs: %s %s" % (st, out))

            def renewed():
                sp = lease(ks)
                rt = sp.get("renewTime")
                if not rt:
                    return False
                # renewTime is RFC 3339 with microseconds, UTC
                ts = calendar.timegm(time.strptime(rt[:19], "%Y-%m-%dT%H:%M:%S"))
                return ts > frozen_at + (IDLE_MS + PING_MS) / 1000.0 and sp.get("holderIdentity")

            R.wait_for(renewed, BOUND_S * SLOW, step=0.2, what="a lease renewed after the freeze")
            R.wait_for(lambda: O.status_converged(api, "app")[0], BOUND_S * SLOW - (
                time.monotonic() - t0), what="the status of the change written")
            took = time.monotonic() - t0
            print("# lease renewed and status written %.1f s after the freeze" % took)
            check(took <= BOUND_S * SLOW, "flowing again after %.1f s" % took)
            for r in reps:
                lines = [ln for ln in r.log().splitlines() if ABANDON in ln]
                check(len(lines) > before[r.name], "%s closed nothing:\n%s" %
                      (r.name, r.log_tail(30)))
                check(any("client coxswain-election" in ln for ln in lines),
                      "%s: the elector's connection:\n%s" % (r.name, "\n".join(lines)))
                check(r.metric("coxswain_kube_connections_abandoned_total",
                               client="coxswain-election") >= 1, "%s: metric" % r.name)
            check(any(r.ready() for r in reps), "ready again")

        t.case("leader and standby frozen: connections closed, lease renewed, statuses flow "
               "within 45 s", case)
    finally:
        for r in reps:
            r.stop()
        proxy.close()


if __name__ == "__main__":
    main()
