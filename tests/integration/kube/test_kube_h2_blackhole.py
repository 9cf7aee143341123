# cx-test: exclusive (measures latencies a neighbouring test would disturb)
"""HTTP/2 to the API server survives a connection that goes silent.

kube-apiserver speaks HTTP/2 and libcurl multiplexes every request and watch
of a client over one connection, so one dead connection (a load balancer
failing over, a NAT entry dropped) holds all of them. kubesim (--tls)
answers ALPN h2 as kube-apiserver does, and its blackhole fault
(POST /_sim/h2/blackhole) silences open HTTP/2 connections without closing
them (nothing read, nothing written) while new connections work.

- A quiet watch over HTTP/2 stays up, though kubesim (emulating 1.28)
  sends it no bookmark and it hears nothing for longer than its stall
  timer: its connection gets health checks (GET /livez on the same
  connection, one connection in all) and nothing is abandoned or restarted.
- Blackholed: the health check goes unanswered, the connection is closed
  (log line, metric), the watch resumes on a new connection and a change
  made after the blackhole arrives within read-idle + ping-timeout + slack.
- Two replicas (leader and standby, elector and main client each)
  blackholed at once: each client closes its dead connections, the leader
  renews (or a new one takes over; none writes after its lease), a change
  made after the blackhole gets its status written, all within 45 s.
"""
import calendar
import json
import os
import queue
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

SLOW = 3.0 if R.sanitized() else 1.0
IDLE_MS = 2000
# Long enough that a loaded machine answers every check of a live
# connection in time (2 s was not, under a load average of 20).
PING_MS = int(5000 * SLOW)
NS = "h2"
# Shorter than the quiet case: over HTTP/2 a watch without a byte for this
# long is not ended (a 1.28 server sends a quiet resource no bookmark).
STALL_MS = 2000
BOUND_S = 45.0  # the bound for everything to flow again
ABANDON = "did not answer a health check"


class KubeWatch:
    """`coxswain kube-watch` on ConfigMaps of NS: its lines, timestamped."""

    def __init__(self, kc, logdir):
        self.log_path = os.path.join(logdir, "kube-watch.log")
        self.errf = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [R.coxswain(), "kube-watch", "--kubeconfig", kc, "--resource", "configmaps",
             "--namespace", NS, "--identity", "h2", "--read-idle", str(IDLE_MS),
             "--ping-timeout", str(PING_MS), "--stall", str(STALL_MS), "--watch-timeout", "3600"],
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


def h2_conns(ks, user=None):
    """kubesim's HTTP/2 connections (of |user|'s latest request, if given)."""
    cs = ks.admin("GET", "/h2/connections")["connections"]
    return [c for c in cs if user is None or c["user"].startswith(user)]


def main():
    t = Tap()
    ks = KubeSim(tls=True, profile="1.28")
    kw = None
    try:
        kc = ks.kubeconfig
        st, out = ks.create("namespaces", {"metadata": {"name": NS}})
        check(st == 201, "namespace: %s %s" % (st, out))
        put_cm(ks, "before")
        kw = KubeWatch(kc, ks.dir)
        kw.wait(lambda e: e.get("event") == "synced", 20 * SLOW, "synced")

        def case_quiet():
            # Quiet (no events, no bookmarks) for four read-idle periods.
            time.sleep(4 * IDLE_MS / 1000.0 + 1)
            conns = h2_conns(ks, "coxswain/")
            check_eq(len(conns), 1, "one HTTP/2 connection (the checks share the watch's): %r"
                     % h2_conns(ks))
            # The list, the watch and at least two probes, one stream each.
            check(conns[0]["streamsTotal"] >= 4, "health checks on the idle connection: %r"
                  % conns)
            d = kw.dump()["stats"]
            check_eq(d["watch_restarts"], 0, "watch restarts while quiet")
            check_eq(d["conns_abandoned"], 0, "connections abandoned while quiet")
            check(d["probes"] >= 2, "probes counted: %r" % d)
            check(ABANDON not in kw.log(), kw.log()[-2000:])
            put_cm(ks, "quiet-ok")
            kw.wait(lambda e: e.get("event") == "add" and e.get("key") == NS + "/quiet-ok",
                    10 * SLOW, "a change over the checked connection")

        def case_frozen():
            check_eq(ks.admin("POST", "/h2/blackhole", {"user": "coxswain/", "ms": 120000})
                     ["connections"], 0, "by exact user only")
            user = h2_conns(ks, "coxswain/")[0]["user"]
            check_eq(ks.admin("POST", "/h2/blackhole", {"user": user, "ms": 120000})
                     ["connections"], 1, "the watch's connection blackholed")
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
            conns = h2_conns(ks, "coxswain/")
            check_eq(sorted(c["blackholed"] for c in conns), [False, True],
                     "connections (the dead one and its replacement): %r" % conns)
            d = kw.dump()["stats"]
            check_eq(d["conns_abandoned"], 1, "connections abandoned")
            check(d["watch_restarts"] >= 1, "the watch resumed: %r" % d)

        t.case("a quiet watch over HTTP/2: its connection checked, nothing restarted",
               case_quiet)
        t.case("a blackholed connection: closed after an unanswered check, the watch resumes",
               case_frozen)
        kw.close()
        kw = None
        case_replicas(t, ks)
    finally:
        if kw:
            kw.close()
        ks.close()
    t.done()


def lease(ks, name="coxswain", ns="coxswain-system"):
    st, out = ks.get("leases", name, namespace=ns, group="coordination.k8s.io")
    return out.get("spec", {}) if st == 200 else {}


def case_replicas(t, ks):
    O.apply_crds(ks.request)
    api = O.Api(ks)
    for n in ("app", "coxswain-system"):
        O.namespace(api, n)
    for o in (O.gateway("app", "gw"), O.upstream_static("app", "up", [("10.0.0.1", 8080)]),
              O.virtual_service("app", "vs", ["app.example"], [O.route("/", "up")])):
        st, out = api.create(o)
        check(st == 201, "create %s: %s %s" % (o["kind"], st, out))
    flags = ["--kube-api-read-idle-timeout", "%dms" % IDLE_MS,
             "--kube-api-ping-timeout", "%dms" % PING_MS, "--watch-namespaces", "app"]
    reps = []
    try:
        reps = [R.Replica(ks, n, extra=flags, lease="4s", renew="3s",
                          retry="1s") for n in ("h2a", "h2b")]
        R.wait_for(lambda: all(r.ready() for r in reps), 40 * SLOW, what="replicas ready")
        R.wait_leader(reps, 15 * SLOW)
        R.wait_for(lambda: O.status_converged(api, "app")[0], 30 * SLOW, what="statuses")

        def case():
            before = {r.name: r.log().count(ABANDON) for r in reps}
            n = ks.admin("POST", "/h2/blackhole", {"ms": 120000})["connections"]
            # Each replica: the elector's client and the main one.
            check(n >= 4, "the replicas' connections blackholed: %d %r" % (n, h2_conns(ks)))
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

        t.case("leader and standby blackholed: connections closed, lease renewed, statuses "
               "flow within 45 s", case)
    finally:
        for r in reps:
            r.stop()


if __name__ == "__main__":
    main()
