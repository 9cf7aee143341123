# cx-test: exclusive (measures latencies a neighbouring test would disturb)
"""The leader's HTTP/2 connections to the API server are blackholed: its
packets vanish (no FIN, no RST), new connections it opens vanish the same
way, while the standby's connections flow. kubesim emulates 1.28 over h2
(chaoslib.Cluster: TLS, ALPN h2, WatchList off); the blackhole is
kubesim's own (a `blackhole` fault rule on the leader's user, so every
connection it sends a request on goes silent, plus POST
/_sim/h2/blackhole for the connections already open).

- The leader cannot renew: its guard closes at its last renewal's send +
  renewDeadline, it steps down, and the standby takes over once the lease
  has run out (by lease expiry: the old leader is alive and its peer
  listener open, so there is no proof of death; a takeover before the
  lease would be a premature-takeover).
- The blackhole lifts right after the takeover, before the old leader's
  client has given up on its dead connection: what was waiting on it
  (status writes of VirtualServices that kept changing, renewals, the
  lock's GET) moves to a new connection that works. Nothing of it may
  land: kubesim's audit log shows no guarded write (status, ProxySnapshot)
  of the old leader stamped after its lease ended, and the invariant
  checker finds no violation in the whole log.
- The old leader recovers as a standby without crashing: its dead
  connections are closed by the health check (log, metric, both clients),
  it follows the new holder, is ready, and the statuses converge (written
  by the new leader).

Two rounds (one under sanitizers), the roles swapping.
"""
import json
import os
import random
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import chaoslib  # noqa: E402
import replicas  # noqa: E402
from audit import AuditTail  # noqa: E402
from chaoslib import Cluster, LockObserver, Writer, start_replica  # noqa: E402
from invariants import (LeadershipChecker, LockSpec, guarded_daemon_writes,  # noqa: E402
                        statuses_converged)
from objects import GROUP  # noqa: E402
from replicas import mono  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

SAN = replicas.sanitized()
SLOW = 3.0 if SAN else 1.0
ROUNDS = 1 if SAN else 2
TIMINGS = ("4s", "3s", "1s")
LEASE_NS, RENEW_NS = 4 * 10 ** 9, 3 * 10 ** 9
# The health check: a connection silent for READ_IDLE gets a probe; one
# unanswered for PING gives the connection up. PING is longer than the
# lease, so the blackhole lifts (right after the takeover) while the old
# leader still waits on its dead connection: what waits there moves to a
# working one.
READ_IDLE, PING = "1s", "%dms" % int(6000 * SLOW)
LOCK = LockSpec("leases", "default", "coxswain")
GUARDED = guarded_daemon_writes()
ABANDON = "did not answer a health check"


def writer_of(user):
    return user if user and user[:1] == "r" and "-" in user else None


class Scenario:
    def __init__(self):
        self.out = tempfile.mkdtemp(prefix="chaos-h2-blackhole-")
        self.reps = []
        self.rounds = []
        self.cl = Cluster(self.out)
        self.obs = LockObserver(self.cl, LOCK)
        self.obs.start()
        self.writer = None

    def setup(self):
        self.writer = Writer(self.cl, random.Random(11), count=10, rate=10.0)
        self.writer.setup()
        flags = ["--leader-elect-peer-listen", "127.0.0.1:0",
                 "--kube-api-read-idle-timeout", READ_IDLE, "--kube-api-ping-timeout", PING]
        for slot in ("r0", "r1"):
            self.reps.append(start_replica(self.cl, slot, 1, "run", TIMINGS, self.out,
                                           extra=flags))
        for r in self.reps:
            if not r.wait_started(40 if SAN else 15):
                raise RuntimeError("%s not ready:\n%s" % (r.identity, r.log_tail()))

    def start_writer(self, n):
        """VirtualServices keep changing (10 patches/s): the leader always
        has status writes to make."""
        w = Writer(self.cl, random.Random(11 + n), count=10, rate=10.0)
        w.deleted = set(self.writer.deleted)
        self.writer = w
        w.start()

    def stop_writer(self):
        self.writer.stop()
        self.writer.join(10)

    def holder(self):
        try:
            st, obj = self.cl.request("GET", "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s"
                                      % (LOCK.namespace, LOCK.name), timeout=5)
        except OSError:
            return None
        return (obj.get("spec") or {}).get("holderIdentity") if st == 200 else None

    def wait_for(self, pred, timeout, step=0.05):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = pred()
            if v:
                return v
            time.sleep(step)
        return None

    def h2_conns(self, user):
        st, out = self.cl.admin("GET", "/h2/connections")
        return [c for c in (out.get("connections", []) if st == 200 else [])
                if c.get("user") == user]

    def converged(self):
        st, out = self.cl.request("GET", "%s/namespaces/%s/virtualservices" % (
            GROUP, self.writer.ns), timeout=5)
        if st != 200:
            return None
        stuck = statuses_converged(out.get("items", []))
        return not stuck

    def round(self, n):
        ids = [r.identity for r in self.reps]
        lead = self.wait_for(lambda: self.holder() if self.holder() in ids else None,
                             30 * SLOW)
        if not lead:
            raise RuntimeError("no leader")
        leader = next(r for r in self.reps if r.identity == lead)
        standby = next(r for r in self.reps if r.identity != lead)
        # Both warm, statuses written, the leader's connections over h2.
        if not self.wait_for(self.converged, 20 * SLOW, 0.2):
            raise RuntimeError("statuses never converged before the round")
        if not self.wait_for(lambda: self.h2_conns(lead), 10 * SLOW):
            raise RuntimeError("%s has no HTTP/2 connection: %s" % (
                lead, self.cl.admin("GET", "/h2/connections")))
        self.start_writer(n)
        time.sleep(1.0)
        rd = {"leader": lead, "standby": standby.identity,
              "abandoned_before": {
                  c: leader.metric("coxswain_kube_connections_abandoned_total", client=c)
                  for c in ("coxswain", "coxswain-election")},
              "leader_pid": leader.pid}
        # Its new connections vanish too (any request it sends), and the
        # open ones go silent now.
        st, rule = self.cl.admin("POST", "/faults", {"user": lead, "action": "blackhole"})
        if st not in (200, 201):
            raise RuntimeError("fault rule: %s %s" % (st, rule))
        st, out = self.cl.admin("POST", "/h2/blackhole", {"user": lead})
        rd["blackhole_ns"] = t0 = mono()
        rd["blackholed_conns"] = out.get("connections") if st == 200 else None
        moved = self.wait_for(lambda: (lambda h: h if h and h != lead else None)(self.holder()),
                              15 * SLOW, 0.02)
        rd["takeover_ms"] = (mono() - t0) / 1e6 if moved else None
        rd["moved_to"] = moved
        # Lift it while the old leader still waits on its dead connection.
        time.sleep(0.3)
        self.cl.admin("DELETE", "/faults/%s" % rule["id"])
        rd["lifted_ns"] = mono()
        rd["abandoned_at_lift"] = {
            c: leader.metric("coxswain_kube_connections_abandoned_total", client=c)
            for c in ("coxswain", "coxswain-election")}
        rd["lifted_ms"] = (rd["lifted_ns"] - t0) / 1e6
        # Recovery: the old leader's dead connections closed by its health
        # check, it follows the new holder, ready again.

        def recovered():
            info = leader.try_leader_info() or {}
            e = info.get("election") if isinstance(info.get("election"), dict) else info
            # both clients (the elector's and the informers') gave their
            # dead connections up and work again
            return (e.get("role") == "standby" and e.get("holder") == moved and
                    e.get("watch") == "up" and leader.ready() and
                    all(leader.metric("coxswain_kube_connections_abandoned_total", client=c) >
                        rd["abandoned_before"].get(c, 0)
                        for c in ("coxswain", "coxswain-election")) and e)
        e = self.wait_for(recovered, 45 * SLOW, 0.2)
        rd["recovered_ms"] = (mono() - rd["lifted_ns"]) / 1e6 if e else None
        rd["old_leader_alive"] = leader.alive()
        rd["guard_refused"] = (e or {}).get("writesRefused")
        rd["abandoned"] = {
            c: leader.metric("coxswain_kube_connections_abandoned_total", client=c)
            for c in ("coxswain", "coxswain-election")}
        rd["stepdown_logged"] = "renew deadline passed" in leader.log()
        rd["takeover_cause"] = {
            c: standby.metric("coxswain_leader_election_takeovers_total", cause=c)
            for c in ("lease-expiry", "proof-of-death")}
        # The new leader writes what changed meanwhile.
        self.stop_writer()
        rd["converged"] = bool(self.wait_for(self.converged, 30 * SLOW, 0.2))
        self.rounds.append(rd)
        print("# round %d: %s" % (n, json.dumps(rd)))

    def close(self):
        if self.writer and self.writer.is_alive():
            self.stop_writer()
        chk = LeadershipChecker(LOCK, self.obs.history, GUARDED, LEASE_NS, writer_of,
                                renew_ns=RENEW_NS)
        audit = AuditTail(self.cl.audit_path).read()
        chk.feed(audit)
        chk.finish()
        for r in self.reps:
            rc = r.stop(timeout=10.0)
            r.final_rc = rc
        self.obs.stop()
        self.cl.close()
        return chk, audit


def lease_end_of(audit, ident, before_ns):
    """The end of |ident|'s lease as the standby could first take it: its
    last successful lock write before |before_ns| + the lease."""
    last = None
    for a in audit:
        if (LOCK.matches(a) and a.get("verb") in ("create", "update") and
                200 <= a.get("code", 0) < 300 and a.get("user") == ident and
                a["mono_ns"] < before_ns):
            last = a["mono_ns"]
    return last + LEASE_NS if last is not None else None


def next_term_of(audit, ident, after_ns):
    """When |ident| next took the lock after |after_ns| (a write of the lock
    by it that made it the holder again), or None."""
    for a in audit:
        if (LOCK.matches(a) and a.get("verb") in ("create", "update") and
                200 <= a.get("code", 0) < 300 and a.get("user") == ident and
                a["mono_ns"] > after_ns):
            return a["mono_ns"]
    return None


def main():
    t = Tap()
    sc = {}

    def run():
        s = Scenario()
        sc["s"] = s
        try:
            s.setup()
            for n in range(ROUNDS):
                s.round(n)
        finally:
            sc["chk"], sc["audit"] = s.close()
        check_eq(len(s.rounds), ROUNDS)

    def took_over():
        for rd in sc["s"].rounds:
            check(rd["blackholed_conns"] and rd["blackholed_conns"] >= 2,
                  "the leader's connections (elector's and main) blackholed: %s" % rd)
            check_eq(rd["moved_to"], rd["standby"], "the lock moved to the standby")
            if rd["takeover_ms"] is not None:
                # the leader renewed at most a retry period before the
                # blackhole: the lease ends 3-4 s after it
                check(rd["takeover_ms"] >= 2900, "taken over %.0f ms after the blackhole: "
                      "before the lease" % rd["takeover_ms"])
            check(rd["takeover_cause"]["lease-expiry"] >= 1 and
                  rd["takeover_cause"]["proof-of-death"] == 0,
                  "takeover by lease expiry, not proof of death: %s" % rd["takeover_cause"])
            check(rd["stepdown_logged"], "the old leader's step-down (renew deadline passed)")
            # the scenario: what waited on the dead connections moved to a
            # working one (the blackhole lifted before they were given up)
            check_eq(rd["abandoned_at_lift"], rd["abandoned_before"],
                     "connections given up before the blackhole lifted")

    def nothing_after_lease():
        audit = sc["audit"]
        for rd in sc["s"].rounds:
            old = rd["leader"]
            end = lease_end_of(audit, old, rd["blackhole_ns"] + LEASE_NS)
            check(end is not None, "no lock write of %s before the blackhole" % old)
            if end is None:
                continue
            # until it leads again (the next round swaps the roles)
            again = next_term_of(audit, old, end) or float("inf")
            late = ["%s %s/%s/%s %s at +%.0f ms" % (a["verb"], a["resource"], a["subresource"],
                                                    a["name"], a["code"],
                                                    (a["mono_ns"] - end) / 1e6)
                    for a in audit if a.get("user") == old and GUARDED(a) and
                    end < a["mono_ns"] < again]
            print("# %s: lease ended %.0f ms after the blackhole; %d guarded writes of it "
                  "landed after that, before it led again" % (
                      old, (end - rd["blackhole_ns"]) / 1e6, len(late)))
            check_eq(late, [], "guarded requests of %s that reached the API server after its "
                     "lease ended" % old)
            # and its lock writes after the lease: none that name it
            # its next lock write is a new term, taken after the other's
            # lease (the checker proves that), never a renewal of the old one
            check(again > rd["lifted_ns"], "%s wrote the lock %.0f ms after its lease ended, "
                  "before the blackhole lifted" % (old, (again - end) / 1e6))
        chk = sc["chk"]
        check_eq([v.detail for v in chk.violations], [], "leadership violations")
        check(len(chk.terms) >= ROUNDS + 1, "terms: %d" % len(chk.terms))
        print("# checker: %s" % json.dumps(chk.summary()))

    def recovered():
        for rd in sc["s"].rounds:
            check(rd["old_leader_alive"], "the old leader exited: %s" % rd)
            check(rd["recovered_ms"] is not None,
                  "the old leader did not come back as a ready standby: %s" % rd)
            check(all(rd["abandoned"][c] > rd["abandoned_before"][c] for c in rd["abandoned"]),
                  "dead connections closed by both clients: %s" % rd)
            check(rd["converged"], "statuses did not converge after round %s" % rd)
        for r in sc["s"].reps:
            rc = getattr(r, "final_rc", (None,))[0]
            check_eq(rc, 0, "%s exit status at SIGTERM:\n%s" % (r.identity, r.log_tail(20)))
            check("AddressSanitizer" not in r.log() and "runtime error" not in r.log(),
                  r.log_tail(30))

    t.case("%d rounds: the leader's HTTP/2 connections blackholed (kubesim 1.28 over h2), "
           "lifted after the takeover" % ROUNDS, run)
    t.case("the standby took over after the lease (lease expiry, no proof of death); the old "
           "leader stepped down", took_over)
    t.case("audit: no guarded write of the old leader stamped after its lease ended; the "
           "invariant checker finds no violation", nothing_after_lease)
    t.case("the old leader recovers as a ready standby without crashing; statuses converge",
           recovered)
    if "s" in sc:
        if t.failed:
            print("# artifacts kept in " + sc["s"].out)
        else:
            shutil.rmtree(sc["s"].out, ignore_errors=True)
    t.done()


if __name__ == "__main__":
    main()
