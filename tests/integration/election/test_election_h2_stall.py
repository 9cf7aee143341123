# cx-test: exclusive (measures latencies a neighbouring test would disturb)
"""The lock's watch stream stalls on a live HTTP/2 connection.

kubesim emulates 1.28 over h2; two `coxswain elect` processes with the peer
channel (lease 3 s, renew 2 s, retry 500 ms). The standby's watch of the
Lease is ended (kubesim's end-watches) and the watch it opens next is
stalled (kubesim's `stall`: the stream starts and then sends nothing,
while the connection's other streams and its health checks are answered).

Over HTTP/2 the kube client does not take silence for a stall (a quiet
resource gets nothing from a real server), and the elector's watch has no
timeoutSeconds: such a stream was kept for good, the standby's view of
the lock froze (no renewal, no release seen), and a proof of death then
named an old version of the lock (409: the takeover waited for the
lease). The lock moves every retryPeriod while held, so the elector's
watch ends after two leases without a byte (at least 10 s) whatever the
protocol: the standby watches again, and the leader's kill -9 is then a
takeover by proof of death within a second.
"""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), "tests", "lib"))
import replicas  # noqa: E402
from kubesim import KubeSim  # noqa: E402
from replicas import Elector  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

SLOW = 3.0 if replicas.sanitized() else 1.0
LEASE = ("3s", "2s", "500ms")
STALL_S = 10.0   # max(2 x lease, 10 s)
PEER = ["--leader-elect-peer-listen", "127.0.0.1:0"]


def note(fmt, *args):
    print("# " + (fmt % args), flush=True)


def elector(ks, name):
    return Elector(ks, name, lease=LEASE[0], renew=LEASE[1], retry=LEASE[2], admin=True,
                   extra=PEER, kubeconfig=ks.kubeconfig, write_interval=None,
                   env={"POD_IP": ""})


def watches_of(ks, ident):
    """{user: count} of Lease watches by |ident|'s clients."""
    out = {}
    for c in ks.admin("GET", "/counters")["counters"]:
        if c["verb"] == "watch" and c["resource"] == "leases" and \
                c["user"].endswith("replica/" + ident):
            out[c["user"]] = out.get(c["user"], 0) + c["count"]
    return out


def takeovers(e, cause):
    for line in e.http("/metrics")[1].decode().splitlines():
        if line.startswith("coxswain_leader_election_takeovers_total{") and \
                'cause="%s"' % cause in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def main():
    t = Tap()
    ks = KubeSim(tls=True, profile="1.28")
    els = []
    try:
        a = elector(ks, "sa")
        els.append(a)
        a.wait("started-leading", timeout=15 * SLOW)
        b = elector(ks, "sb")
        els.append(b)
        replicas.wait_for(lambda: json.loads(a.debug("leader"))["peer"]["accepted"] >= 1,
                          10 * SLOW, what="sb's peer connection to sa")
        replicas.wait_for(lambda: watches_of(ks, "sb"), 10 * SLOW, what="sb's lock watch")
        conns = [c for c in ks.admin("GET", "/h2/connections")["connections"]
                 if c["user"].endswith("replica/sb")]
        user = next(iter(watches_of(ks, "sb")))
        state = {}

        def stalled():
            check(conns, "sb talks HTTP/2: %r" % ks.admin("GET", "/h2/connections"))
            rule = ks.admin("POST", "/faults", {"user": user, "verb": "watch",
                                                "resource": "leases", "action": "stall",
                                                "count": 1})["id"]
            before = watches_of(ks, "sb")[user]
            ks.admin("POST", "/end-watches", {"user": user, "resource": "leases"})

            def hit():
                for r in ks.admin("GET", "/faults")["faults"]:
                    if r["id"] == rule and r["hits"] == 1:
                        return True
                return False
            replicas.wait_for(hit, 10 * SLOW, step=0.02, what="the stalled watch")
            t0 = time.monotonic()
            # the leader renews every 500 ms meanwhile: none of it reaches sb
            replicas.wait_for(lambda: watches_of(ks, "sb")[user] >= before + 2,
                              (STALL_S + 15) * SLOW, step=0.05,
                              what="sb's watch after the stalled one")
            took = time.monotonic() - t0
            note("the stalled lock watch ended after %.1f s (two leases, at least 10 s)", took)
            check(took >= STALL_S - 0.5, "ended after %.1f s: before the stall timer" % took)
            check(took <= STALL_S + 5 * SLOW, "ended after %.1f s" % took)
            for ln in b.log().splitlines():
                if "watch" in ln and "leases" in ln:
                    note("sb: %s", ln[:200])
            check("watch stalled" in b.log(), b.log_tail(10))
            check(a.leading() and not b.leading(), "roles changed")
            state["ok"] = True
        t.case("a stalled lock watch on a live HTTP/2 connection ends after two leases "
               "without a byte and is opened again", stalled)

        def proof_after():
            if not state.get("ok"):
                raise AssertionError("the stall case failed")
            time.sleep(1.0)   # a renewal or two over the new watch
            t0 = time.monotonic_ns()
            a.send_signal(signal.SIGKILL)
            got = b.wait("started-leading", after=t0, timeout=15 * SLOW)
            ms = (got["mono"] - t0) / 1e6
            note("kill -9 of the leader after the stall: sb leads after %.0f ms", ms)
            check(ms < 1000 * SLOW, "took %.0f ms" % ms)
            check_eq(takeovers(b, "proof-of-death"), 1.0, "takeovers by proof of death")
        t.case("then the standby's view is current: kill -9 of the leader is a takeover by "
               "proof of death within a second", proof_after)
    finally:
        for e in els:
            e.stop()
        ks.close()
    t.done()


if __name__ == "__main__":
    main()
