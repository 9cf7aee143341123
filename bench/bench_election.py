"""Leader election: graceful handover and crash failover, ours (`coxswain
elect`) against the official Python client's elector (kubernetes
.leaderelection, ConfigMap lock, polling), with the same durations on the
same kubesim in the same run; API requests per minute of the leader and of
each standby from kubesim's counters; zero stale guarded writes through
SIGSTOP chaos rounds, from kubesim's audit log.

Prints one JSON object (bench/run.sh). ROUNDS=n changes the 20 rounds.
Durations: lease 3 s, renew 2 s, retry 1 s (the Python client takes whole
seconds only, and needs renew > 1.2 x retry); these fleets run with the
peer channel off (lease only), as the Python client does.

Proof of death (docs/election.md): at a 15 s lease (renew 10 s, retry 2 s),
kill -9 of the leader ROUNDS times with the peer channel on, beside the
same ROUNDS with it off (--leader-elect-peer=false: the lease decides) in
the same run.
"""
import json
import os
import signal
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
from audit import acquisitions, writes_by  # noqa: E402
from kubesim import KubeSim  # noqa: E402
from replicas import Elector, PyElector, mono  # noqa: E402

MS = 1000000
ROUNDS = int(os.environ.get("ROUNDS", "20"))
LEASE, RENEW, RETRY = 3, 2, 1
OURS = dict(lease="%ds" % LEASE, renew="%ds" % RENEW, retry="%ds" % RETRY, proxy=False,
            extra=["--leader-elect-peer=false"])
LONG = ("15s", "10s", "2s")  # the proof-of-death rows' lease, renew deadline, retry period


def log(fmt, *a):
    print(fmt % a, file=sys.stderr, flush=True)


def pct(xs, p):
    """Nearest-rank percentile."""
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def leader(group, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lead = [e for e in group if e.alive() and e.leading()]
        if len(lead) == 1:
            return lead[0]
        time.sleep(0.01)
    raise RuntimeError("no single leader among %s" % [e.name for e in group])


class Fleet:
    """Three electors of one kind; replaces the ones a round ends."""

    def __init__(self, ks, kind, lock, name, write_interval=None):
        self.ks, self.kind, self.lock, self.name = ks, kind, lock, name
        self.write_interval = write_interval
        self.n = 0
        self.group = []
        for _ in range(3):
            self.add()

    def add(self):
        self.n += 1
        ident = "%s-%s-%d" % (self.kind, self.lock[:2], self.n)
        if self.kind == "py":
            e = PyElector(self.ks, ident, LEASE, RENEW, RETRY, name=self.name,
                          token="tok-" + ident)
        else:
            e = Elector(self.ks, ident, lock=self.lock, name=self.name,
                        write_interval=self.write_interval, **OURS)
        self.group.append(e)
        return e

    def settle(self):
        # Every standby has seen the leader renew at least once.
        time.sleep(RETRY * 1.5)

    def stop(self):
        for e in self.group:
            e.stop(signal.SIGKILL)
        self.group = []


def rounds(fleet, sig, n):
    """Sends |sig| to the leader |n| times; returns the ms from the signal to
    the next leader's started-leading line."""
    out = []
    leader(fleet.group)
    fleet.settle()
    for i in range(n):
        old = leader(fleet.group)
        # Land at a random phase of the renew period.
        time.sleep((i * 0.37) % RETRY)
        sent = mono()
        old.send_signal(sig)
        others = [e for e in fleet.group if e is not old]
        new = leader(others, timeout=LEASE * 3 + 5)
        got = new.wait("started-leading", after=sent, timeout=LEASE * 3 + 5)
        out.append((got["mono"] - sent) / MS)
        old.stop(signal.SIGKILL)
        fleet.group.remove(old)
        fleet.add()
        fleet.settle()
    return out


def crash_long_lease(ks, peer, n):
    """kill -9 of the leader |n| times at a 15 s lease, three electors, the
    peer channel on or off; returns the ms from the signal to the next
    leader's started-leading line, and the takeover causes."""
    tag = "pd" if peer else "lo"
    extra = ["--leader-elect-peer-listen", "127.0.0.1:0"] if peer else \
        ["--leader-elect-peer=false"]
    made = [0]

    def add():
        made[0] += 1
        return Elector(ks, "%s-%d" % (tag, made[0]), lease=LONG[0], renew=LONG[1],
                       retry=LONG[2], name="bench-" + tag, proxy=False, admin=True,
                       write_interval=None, extra=extra)

    group = [add() for _ in range(3)]
    out, causes = [], {}
    try:
        for i in range(n):
            old = leader(group, timeout=40)
            others = [e for e in group if e is not old]
            if peer:  # every standby holds its connection to the leader
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and \
                        old.leader_info()["peer"]["accepted"] < len(others):
                    time.sleep(0.05)
            # Land at a varying phase of the renew period.
            time.sleep(0.5 + (i * 0.37) % 2.0)
            sent = mono()
            old.send_signal(signal.SIGKILL)
            new = leader(others, timeout=40)
            got = new.wait("started-leading", after=sent, timeout=40)
            out.append((got["mono"] - sent) / MS)
            for line in new.http("/metrics")[1].decode().splitlines():
                if line.startswith("coxswain_leader_election_takeovers_total{") and \
                        float(line.rsplit(" ", 1)[1]) > 0:
                    c = line.split('cause="', 1)[1].split('"', 1)[0]
                    causes[c] = causes.get(c, 0) + 1
            old.stop(signal.SIGKILL)
            group.remove(old)
            group.append(add())
            log("  15 s lease, peer channel %s: round %d %.0f ms", "on" if peer else "off", i,
                out[-1])
    finally:
        for e in group:
            e.stop(signal.SIGKILL)
    return out, causes


def per_minute(ks, fleet, seconds):
    """API requests per minute of each elector over |seconds| of steady state."""
    leader(fleet.group)
    fleet.settle()
    ks.admin("DELETE", "/counters")
    time.sleep(seconds)
    lead = leader(fleet.group)
    counts = {e.name: 0 for e in fleet.group}
    for c in ks.counters():
        u = c["user"]
        who = None
        if u.startswith("coxswain-election/") and "replica/" in u:
            who = u.rsplit("replica/", 1)[1]
        elif u in counts:
            who = u
        if who in counts:
            counts[who] += c["count"]
    scale = 60.0 / seconds
    lrate = counts[lead.name] * scale
    srates = [counts[e.name] * scale for e in fleet.group if e is not lead]
    return lrate, srates


def chaos(ks, n):
    """SIGSTOP the leader beyond the lease, SIGCONT: count guarded writes of
    the old leader committed after the new one acquired (must be 0)."""
    fleet = Fleet(ks, "ours", "leases", "chaos", write_interval="50ms")
    stale = writes = 0
    for i in range(n):
        old = leader(fleet.group)
        time.sleep(0.3 + (i * 0.13) % 0.5)
        old.send_signal(signal.SIGSTOP)
        stopped = mono()
        new = leader([e for e in fleet.group if e is not old], timeout=10)
        new.wait("started-leading", after=stopped)
        time.sleep(0.5)
        old.send_signal(signal.SIGCONT)
        old.wait("stopped-leading", after=stopped, timeout=5)
        time.sleep(0.3)
        audit = ks.audit()
        acq = min(a[0] for a in acquisitions(audit, name="chaos")
                  if a[1] == new.name and a[0] >= stopped)
        mine = writes_by(audit, old.name)
        writes += len(mine)
        stale += sum(1 for a in mine if a["mono_ns"] >= acq)
        if not old.alive():
            raise RuntimeError("%s exited after SIGCONT" % old.name)
    fleet.stop()
    return stale, writes


def main():
    # Tokens let kubesim tell the Python electors apart (same User-Agent).
    tokens = {"tok-py-co-%d" % i: "py-co-%d" % i for i in range(1, 4 * ROUNDS + 10)}
    ks = KubeSim(args=["--event-window", "100000"], tokens=tokens)
    res = {}
    try:
        for kind, lock in (("ours", "leases"), ("ours", "configmaps"), ("py", "configmaps")):
            name = "bench-%s-%s" % (kind, lock)
            log("bench_election: %s on %s", kind, lock)
            fleet = Fleet(ks, kind, lock, name)
            lrate, srates = per_minute(ks, fleet, 20)
            graceful = rounds(fleet, signal.SIGTERM, ROUNDS)
            crash = rounds(fleet, signal.SIGKILL, ROUNDS)
            fleet.stop()
            res[(kind, lock)] = dict(graceful=graceful, crash=crash, lrate=lrate, srates=srates)
            log("  graceful p50 %.1f p99 %.1f ms; crash p50 %.0f p99 %.0f ms; "
                "leader %.0f req/min, standbys %s req/min", pct(graceful, 50),
                pct(graceful, 99), pct(crash, 50), pct(crash, 99), lrate,
                ["%.0f" % x for x in srates])
        stale, writes = chaos(ks, max(5, ROUNDS // 2))
        log("  chaos: %d stale of %d guarded writes", stale, writes)
        proof, proof_causes = crash_long_lease(ks, True, ROUNDS)
        lease_only, lease_causes = crash_long_lease(ks, False, ROUNDS)
        log("  kill -9 at a 15 s lease: proof of death p50 %.0f p99 %.0f ms %s; lease only "
            "p50 %.0f p99 %.0f ms %s", pct(proof, 50), pct(proof, 99), proof_causes,
            pct(lease_only, 50), pct(lease_only, 99), lease_causes)
    finally:
        ks.close()

    py = res[("py", "configmaps")]
    rows = []
    for lock in ("leases", "configmaps"):
        o = res[("ours", lock)]
        for what, key, target in (("graceful handover (SIGTERM -> new leader)", "graceful",
                                   "p99 <= 200 ms"),
                                  ("crash failover (kill -9 -> new leader)", "crash",
                                   "<= lease + 500 ms = %d ms" % (LEASE * 1000 + 500))):
            p50, p99 = pct(o[key], 50), pct(o[key], 99)
            b50, b99 = pct(py[key], 50), pct(py[key], 99)
            met = p99 <= 200 if key == "graceful" else max(o[key]) <= LEASE * 1000 + 500
            rows.append({"case": what, "lock": lock, "rounds": len(o[key]),
                         "p50_ms": round(p50, 1), "p99_ms": round(p99, 1),
                         "baseline_p50_ms": round(b50, 1), "baseline_p99_ms": round(b99, 1),
                         "ratio": round(p99 / b99, 4), "target": target,
                         "met": "yes" if met else "NO"})
        rows.append({"case": "API requests/min, leader", "lock": lock,
                     "value": round(o["lrate"], 1), "baseline": round(py["lrate"], 1),
                     "ratio": round(o["lrate"] / py["lrate"], 3) if py["lrate"] else 0,
                     "target": "renewals only (60/min at 1 s)",
                     "met": "yes" if o["lrate"] <= 62 else "NO"})
        rows.append({"case": "API requests/min, each standby (max)", "lock": lock,
                     "value": round(max(o["srates"]), 1),
                     "baseline": round(max(py["srates"]), 1),
                     "ratio": round(max(o["srates"]) / max(py["srates"]), 3)
                     if max(py["srates"]) else 0,
                     "target": "0 (the watch only)",
                     "met": "yes" if max(o["srates"]) == 0 else "NO"})
    p99 = pct(proof, 99)
    rows.append({"case": "crash failover at a 15 s lease (kill -9 -> new leader), proof of death",
                 "lock": "leases", "rounds": len(proof), "p50_ms": round(pct(proof, 50), 1),
                 "p99_ms": round(p99, 1), "max_ms": round(max(proof), 1),
                 "baseline": "the same with --leader-elect-peer=false (lease only)",
                 "baseline_p50_ms": round(pct(lease_only, 50), 1),
                 "baseline_p99_ms": round(pct(lease_only, 99), 1),
                 "ratio": round(p99 / pct(lease_only, 99), 4),
                 "causes": ", ".join("%s %d" % kv for kv in sorted(proof_causes.items())),
                 "baseline_causes": ", ".join("%s %d" % kv for kv in sorted(lease_causes.items())),
                 "target": "p99 <= 1000 ms", "met": "yes" if p99 <= 1000 else "NO"})
    rows.append({"case": "stale guarded writes in SIGSTOP chaos rounds", "lock": "leases",
                 "rounds": max(5, ROUNDS // 2), "value": stale, "baseline": "n/a (no guard)",
                 "target": "0 of %d guarded writes" % writes, "met": "yes" if stale == 0 else "NO"})
    doc = {
        "benchmark": "election",
        "title": "Leader election: handover, failover, API load (coxswain elect vs the "
                 "Python client's elector)",
        "notes": ("Three electors of each kind on one kubesim, lease %ds / renew %ds / retry "
                  "%ds for both (the Python client takes whole seconds only). Baseline: "
                  "kubernetes.leaderelection from Debian's python3-kubernetes (ConfigMap "
                  "lock, polls every retry period, never releases). Times run from the "
                  "signal to the new leader's own 'started leading' (CLOCK_MONOTONIC on "
                  "both sides); the signal lands at a varying phase of the renew period. "
                  "Requests per minute from kubesim's per-user counters over 20 s of steady "
                  "state, the watch's long-running request not counted. Chaos rounds: the "
                  "leader writes through the guard every 50 ms, is SIGSTOPped until another "
                  "replica leads, then continued; stale = its writes that kubesim committed "
                  "after the new leader's acquisition. The 3 s fleets run with the peer "
                  "channel off (lease only, like the Python client). Proof of death: three "
                  "`coxswain elect` at lease 15 s / renew 10 s / retry 2 s, the peer channel "
                  "on loopback, kill -9 of the leader once every standby holds its peer "
                  "connection; baseline: the same rounds with --leader-elect-peer=false in "
                  "the same run; causes from coxswain_leader_election_takeovers_total of "
                  "the new leader." % (LEASE, RENEW, RETRY)),
        "rows": rows,
    }
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
