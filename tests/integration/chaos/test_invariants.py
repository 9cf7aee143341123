"""The invariant checker (tests/lib/invariants.py) on synthetic audit logs:
it must pass a clean history and catch every kind of violation -- an
overlap of terms, a write after the lease expired, a premature takeover, a
write sent after the guard closed -- without inventing any when the lock's
history has gaps.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))
from invariants import (LeadershipChecker, LockHistory, LockSpec, check_audit,  # noqa: E402
                        default_writer_of, guarded_daemon_writes, guarded_elect_writes,
                        rss_verdict, snapshot_mismatches, statuses_converged)
from tap import Tap, check, check_eq  # noqa: E402

S = 10 ** 9
MS = 10 ** 6
LOCK = LockSpec("leases", "default", "coxswain")
GUARDED = guarded_elect_writes("coxswain-elect-test")


class Log:
    """Builds an audit log and the lock's history together."""

    def __init__(self, lock=LOCK):
        self.lock = lock
        self.audit = []
        self.history = LockHistory(lock)
        self.rv = 100
        self.sent = {}

    def _entry(self, t, user, verb, resource, name, code=200, sub=""):
        self.rv += 1
        a = {"seq": len(self.audit) + 1, "mono_ns": int(t), "user": user, "verb": verb,
             "group": "", "resource": resource, "subresource": sub, "namespace": "default",
             "name": name, "code": code,
             "resourceVersion": str(self.rv) if 200 <= code < 300 else ""}
        self.audit.append(a)
        return a

    def lease(self, t, user, holder=None, dur_s=3, code=200, record=True, verb="update"):
        """A lock write by |user| naming |holder| (default: itself)."""
        holder = user if holder is None else holder
        a = self._entry(t, user, verb, self.lock.resource, self.lock.name, code)
        if record and 200 <= code < 300:
            if self.lock.resource == "leases":
                obj = {"metadata": {"resourceVersion": a["resourceVersion"]},
                       "spec": {"holderIdentity": holder, "leaseDurationSeconds": dur_s}}
            else:
                obj = {"metadata": {"resourceVersion": a["resourceVersion"], "annotations": {
                    "control-plane.alpha.kubernetes.io/leader":
                        '{"holderIdentity":"%s","leaseDurationSeconds":"%d"}' % (holder, dur_s)}}}
            self.history.add_object(obj)
        return a

    def renewals(self, user, t0, t1, every=0.5 * S):
        t = t0
        while t <= t1:
            self.lease(t, user)
            t += every

    def write(self, t, user, code=200, sent=None):
        a = self._entry(t, user, "patch", "configmaps", "coxswain-elect-test", code)
        if sent is not None:
            self.sent[a["resourceVersion"]] = sent
        return a

    def other(self, t, user):
        return self._entry(t, user, "create", "events", "x")

    def sent_of(self, a):
        return self.sent.get(a.get("resourceVersion"))

    def check(self, **kw):
        kw.setdefault("guarded", GUARDED)
        kw.setdefault("lease_ns", 3 * S)
        return check_audit(self.audit, self.lock, self.history, **kw)


def kinds(c):
    return sorted(v.kind for v in c.violations)


def clean_history():
    log = Log()
    log.lease(0, "a", verb="create")
    log.renewals("a", 0.5 * S, 5 * S)
    for i in range(1, 40):
        log.write(i * 0.12 * S, "a")
    log.other(5.1 * S, "a")
    log.lease(5.2 * S, "a", holder="")              # release
    log.lease(5.201 * S, "b")                       # taken at once: legal
    log.renewals("b", 5.7 * S, 9 * S)
    log.write(6 * S, "b")
    log.write(8.9 * S, "b")
    log.lease(10 * S, "c", code=409)                # a failed attempt: ignored
    log.write(10.5 * S, "c", code=409)              # a refused write: ignored
    c = log.check()
    check_eq(kinds(c), [], "violations in a clean history")
    check_eq([t.holder for t in c.terms], ["a", "b"])
    check_eq(c.terms[0].end_reason, "released")
    check_eq(c.terms[0].guarded_writes, 39)
    check_eq(c.terms[1].guarded_writes, 2)
    check_eq(c.counts["releases"], 1)
    check_eq(c.counts["lock_write_failures"], 1)
    check_eq(c.counts["guarded_write_failures"], 1)
    check_eq(c.counts["other_writes"], 1)
    check_eq(c.summary()["violations"], {})
    check_eq(c.holder_at_end(), "b")


def overlap():
    # a renews until 2 s; b takes over legally at 5.5 s (after 2 + 3);
    # a's write at 6 s lands in b's term.
    log = Log()
    log.lease(0, "a")
    log.renewals("a", 0.5 * S, 2 * S)
    log.write(1 * S, "a")
    log.lease(5.5 * S, "b")
    log.write(5.8 * S, "b")
    log.write(6 * S, "a")
    c = log.check()
    check_eq(kinds(c), ["write-outside-term"])
    v = c.violations[0]
    check_eq(v.mono_ns, 6 * S)
    check("while b held the lock" in v.detail, v.detail)
    check_eq(v.entry["user"], "a")
    check_eq(c.terms[0].end_reason, "expired")
    check_eq(c.terms[0].end_ns, 5 * S)


def after_expiry():
    # Nobody takes over, but a writes 3.1 s after its last renewal.
    log = Log()
    log.lease(0, "a")
    log.renewals("a", 0.5 * S, 2 * S)
    log.write(4.9 * S, "a")          # within 2 + 3: fine
    log.write(5.1 * S, "a")          # past it
    c = log.check()
    check_eq(kinds(c), ["write-after-expiry"])
    check("0.100 s after its lease expired" in c.violations[0].detail, c.violations[0].detail)
    # The same holder renewing after expiry starts a new term; writes in it are fine.
    log.lease(6 * S, "a")
    log.write(6.1 * S, "a")
    c = log.check()
    check_eq(kinds(c), ["write-after-expiry"])
    check_eq([t.holder for t in c.terms], ["a", "a"])


def premature_takeover():
    log = Log()
    log.lease(0, "a")
    log.renewals("a", 0.5 * S, 2 * S)
    log.lease(4 * S, "b")            # a's lease runs until 5 s
    c = log.check()
    check_eq(kinds(c), ["premature-takeover"])
    check("1.000 s before that lease expired" in c.violations[0].detail, c.violations[0].detail)


def takeover_from_a_killed_holder():
    # Proof of death: a takeover before the lease ran out is fine once the
    # holder's process was killed, never while it lived (paused, cut off).
    log = Log()
    log.lease(0, "a")
    log.renewals("a", 0.5 * S, 2 * S)
    log.lease(2.1 * S, "b")          # a killed at 2.05 s, its lease runs until 5 s
    log.renewals("b", 2.6 * S, 4 * S)
    log.lease(4.2 * S, "c")          # b killed only at 4.3 s: premature
    killed = {"a": int(2.05 * S), "b": int(4.3 * S)}
    c = log.check(dead_at=killed.get)
    check_eq(kinds(c), ["premature-takeover"])
    check("c took the lock from b" in c.violations[0].detail, c.violations[0].detail)
    check_eq(c.counts["dead_takeovers"], 1)
    check_eq(kinds(log.check()), ["premature-takeover", "premature-takeover"])


def writes_with_send_times():
    log = Log()
    log.lease(0, "a")
    log.renewals("a", 0.5 * S, 2 * S)
    log.write(1 * S, "a", sent=0.99 * S)             # fine
    log.write(3.9 * S, "a", sent=3.8 * S)            # guard closed at 2 + 2 s: fine (3.8 < 4)
    log.write(4.5 * S, "a", sent=4.2 * S)            # sent after the guard closed
    log.lease(5.5 * S, "b")
    log.write(6 * S, "a", sent=3.9 * S)              # sent inside, landed in b's term: late
    log.write(6.1 * S, "a", sent=5.6 * S)            # sent while b held it
    log.write(6.2 * S, "b", sent=5.9 * S)
    c = log.check(renew_ns=2 * S, sent_of=log.sent_of)
    check_eq(kinds(c), ["guard-breach", "sent-outside-term"])
    check_eq(len(c.late), 1)
    check("landed 1.000 s after its term ended" in c.late[0].detail, c.late[0].detail)
    check_eq(c.summary()["late_deliveries"], 1)
    check_eq(c.summary()["max_late_ms"], 1000.0)
    check_eq(c.counts["guarded_sent_known"], 6)
    # Without send times the late one is an overlap like any other.
    c = log.check()
    check_eq(kinds(c), ["write-outside-term", "write-outside-term"])  # 4.5 s landed in time


def late_after_release():
    # a releases at 2 s with a write in flight (sent 1.9 s), b takes over at
    # once and writes; a's write lands after that: late, after a release.
    log = Log()
    log.lease(0, "a")
    log.renewals("a", 0.5 * S, 1.5 * S)
    log.lease(2 * S, "a", holder="")
    log.lease(2.01 * S, "b")
    log.write(2.05 * S, "b", sent=2.04 * S)
    log.write(2.3 * S, "a", sent=1.9 * S)
    c = log.check(renew_ns=2 * S, sent_of=log.sent_of)
    check_eq(kinds(c), [])
    check_eq([v.after for v in c.late], ["released"])
    check_eq(c.summary()["late_after"], {"released": 1})
    check("(released), while b held the lock" in c.late[0].detail, c.late[0].detail)


def excused_late_write():
    log = Log()
    log.lease(0, "a")
    log.renewals("a", 0.5 * S, 2 * S)
    log.lease(5.5 * S, "b")
    log.write(7 * S, "a")

    def excuse(a):
        return "held by the partition of a" if a["user"] == "a" else None
    c = log.check(excuse=excuse)
    check_eq(kinds(c), [])
    check_eq(len(c.late), 1)
    check("send time unknown" in c.late[0].detail, c.late[0].detail)
    check_eq(kinds(log.check(excuse=lambda a: None)), ["write-outside-term"])


def gaps_in_history_invent_nothing():
    # The observer missed every version: holders are inferred from writers,
    # a missed release looks like a renewal, and the takeover right after
    # it must not be called premature.
    log = Log()
    log.lease(0, "a", record=False)
    log.renewals("a", 0.5 * S, 2 * S)
    log.lease(2.1 * S, "a", holder="", record=False)   # release, unseen
    log.lease(2.2 * S, "b", record=False)
    log.write(2.3 * S, "b")
    empty = LockHistory(LOCK)
    c = check_audit(log.audit, LOCK, empty, GUARDED, 3 * S)
    check_eq(kinds(c), [])
    check_eq(c.counts["lock_writes_inferred"], 7)
    check_eq([t.holder for t in c.terms], ["a", "b"])
    # ... but an overlap is still caught from the writers alone.
    log.write(2.4 * S, "a")
    c = check_audit(log.audit, LOCK, empty, GUARDED, 3 * S)
    check_eq(kinds(c), ["write-outside-term"])
    # Only the release was missed (the observer's watch was down just then):
    # the term's start was seen, its last write was not, and the takeover
    # right after is no premature one.
    log = Log()
    log.lease(0, "a")
    log.renewals("a", 0.5 * S, 2 * S)
    log.lease(2.1 * S, "a", holder="", record=False)   # release, unseen
    log.lease(2.101 * S, "b")
    log.write(2.3 * S, "b")
    c = log.check()
    check_eq(kinds(c), [])
    check_eq([t.holder for t in c.terms], ["a", "b"])
    # the same takeover after a renewal that was seen is premature
    log = Log()
    log.lease(0, "a")
    log.renewals("a", 0.5 * S, 2 * S)
    log.lease(2.1 * S, "a")
    log.lease(2.101 * S, "b")
    check_eq(kinds(log.check()), ["premature-takeover"])


def foreign_and_configmap_lock():
    lock = LockSpec("configmaps", "default", "coxswain")
    log = Log(lock)
    log.lease(0, "a")
    log.lease(0.5 * S, "a", holder="b")      # a names b: electors never do that
    c = log.check()
    check_eq(kinds(c), ["foreign-lock-write"])
    # the ConfigMap record's string leaseDurationSeconds is read
    log = Log(lock)
    log.lease(0, "a", dur_s=7)
    log.write(6.5 * S, "a")
    c = log.check()
    check_eq(kinds(c), [])
    check_eq(c.terms[0].duration_ns, 7 * S)


def streaming_equals_one_shot():
    log = Log()
    log.lease(0, "a")
    log.renewals("a", 0.5 * S, 2 * S)
    log.lease(5.5 * S, "b")
    log.write(6 * S, "a")
    c = LeadershipChecker(LOCK, log.history, GUARDED, 3 * S)
    for i in range(0, len(log.audit), 2):
        c.feed(log.audit[i:i + 2])
    c.finish()
    check_eq(kinds(c), kinds(log.check()))
    check_eq(c.terms[-1].end_reason, "open")


def writers_and_predicates():
    check_eq(default_writer_of("coxswain/0.1 (linux) replica/r1-2"), "r1-2")
    check_eq(default_writer_of("r0-1"), "r0-1")
    check_eq(default_writer_of(""), None)
    g = guarded_daemon_writes()
    check(g({"resource": "virtualservices", "subresource": "status"}), "status write")
    check(not g({"resource": "virtualservices", "subresource": ""}), "spec write")
    check(g({"resource": "proxysnapshots", "subresource": ""}), "snapshot write")
    check(not GUARDED({"resource": "configmaps", "name": "other"}), "other ConfigMap")


def rss():
    # warm-up then flat (with noise): fine
    flat = [(i * S, 10000 + min(i, 30) * 100 + (i % 3) * 50) for i in range(300)]
    ok, detail = rss_verdict(flat)
    check(ok, detail)
    # a leak of 10 KB/s (600 KB/min) keeps climbing: caught
    leak = [(i * S, 10000 + i * 10 + (i % 3) * 50) for i in range(300)]
    ok, detail = rss_verdict(leak)
    check(not ok, "a steady climb must fail: " + detail)
    check("+600 KB/min" in detail, detail)
    short = [(i * S, 10000 + i * 6000) for i in range(60)]
    check(rss_verdict(short)[0], "too short to judge")
    check(not rss_verdict(flat, cap_kb=5000)[0], "over the cap")


def convergence_helpers():
    objs = [{"kind": "VirtualService", "metadata": {"namespace": "n", "name": "a", "generation": 3},
             "status": {"observedGeneration": 3}},
            {"kind": "VirtualService", "metadata": {"namespace": "n", "name": "b", "generation": 4},
             "status": {"observedGeneration": 3}},
            {"kind": "Gateway", "metadata": {"namespace": "n", "name": "g", "generation": 1}}]
    stuck = statuses_converged(objs)
    check_eq(len(stuck), 2)
    check("VirtualService n/b" in stuck[0], stuck)
    check_eq(snapshot_mismatches({"gw": "v1"}, {"r1": {"gw": "v1"}, "r2": {"gw": "v0"}}),
             [("r2", "gw", "v0", "v1")])


def main():
    t = Tap()
    t.case("clean history: two terms, a release, no violation", clean_history)
    t.case("overlap: a write in another replica's term is caught", overlap)
    t.case("write after the writer's lease expired is caught", after_expiry)
    t.case("takeover before the lease expired is caught", premature_takeover)
    t.case("takeover from a killed holder is proof of death, from a live one premature",
           takeover_from_a_killed_holder)
    t.case("send times: guard breach, sent outside term, late delivery", writes_with_send_times)
    t.case("late delivery after a release is told apart", late_after_release)
    t.case("excused late write (held by an injected fault)", excused_late_write)
    t.case("gaps in the lock history invent no violation", gaps_in_history_invent_nothing)
    t.case("foreign lock write; ConfigMap lock record", foreign_and_configmap_lock)
    t.case("streaming feed equals one-shot", streaming_equals_one_shot)
    t.case("writer identities and guarded-write predicates", writers_and_predicates)
    t.case("RSS verdicts", rss)
    t.case("status convergence and snapshot helpers", convergence_helpers)
    t.done()


if __name__ == "__main__":
    main()
