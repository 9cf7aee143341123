# cx-test: exclusive (measures latencies a neighbouring test would disturb)
"""`coxswain handover` against real `coxswain elect` processes on kubesim,
for both lock kinds (3s / 2s / 500ms): --to a standby moves the lock to it
within about a retry period with no guarded write of the old leader after
the new one acquired; --any moves it to a standby other than the old
leader, twice in a row (the "any" request is consumed by the taker); --to
an identity nobody runs fails with a clear error while someone else leads;
--to the leader is a no-op; flag errors exit 2.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), "tests", "lib"))
import replicas  # noqa: E402
from audit import writes_by  # noqa: E402
from kubesim import KubeSim  # noqa: E402
from replicas import Elector, coxswain  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

SLACK = 3 if replicas.sanitized() else 1
RETRY_S = 0.5


def note(fmt, *args):
    print("# " + (fmt % args), flush=True)


def leader_of(electors, timeout=8.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        leading = [e for e in electors if e.alive() and e.leading()]
        if len(leading) == 1:
            return leading[0]
        time.sleep(0.02)
    raise AssertionError("no single leader: %s" % [(e.name, e.leading()) for e in electors])


def handover(ks, lock, name, *args):
    t0 = time.monotonic()
    r = subprocess.run([coxswain(), "handover", "--kubeconfig", ks.kubeconfig,
                        "--leader-elect-resource-lock", lock, "--leader-elect-resource-name",
                        name, "--timeout", "10s"] + list(args),
                       capture_output=True, text=True, timeout=60)
    note("handover %s: rc=%d %.0f ms out=%r err=%r", " ".join(args), r.returncode,
         (time.monotonic() - t0) * 1000, r.stdout.strip(), r.stderr.strip())
    return r


def record(ks, lock, name):
    """The lock's record as the API server holds it (spec or annotation)."""
    if lock == "leases":
        st, o = ks.request("GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/" + name)
        return o.get("spec") or {}
    st, o = ks.request("GET", "/api/v1/namespaces/default/configmaps/" + name)
    ann = (o.get("metadata") or {}).get("annotations") or {}
    return json.loads(ann.get("control-plane.alpha.kubernetes.io/leader", "{}"))


def first_write_after(audit, lock, name, ident, after):
    res = "leases" if lock == "leases" else "configmaps"
    for a in audit:
        if a.get("resource") == res and a.get("name") == name and a.get("verb") == "update" and \
                200 <= a.get("code", 0) < 300 and a["mono_ns"] >= after and \
                a.get("user", "").endswith("replica/" + ident):
            return a["mono_ns"]
    return None


def run_kind(t, ks, lock):
    name = "ho-" + lock
    electors = [Elector(ks, "%s-%d" % (lock[0], i), lock=lock, name=name) for i in range(3)]
    try:
        def to_standby():
            old = leader_of(electors)
            target = [e for e in electors if e is not old][0]
            time.sleep(0.3)
            sent = time.monotonic_ns()
            r = handover(ks, lock, name, "--to", target.name)
            check_eq(r.returncode, 0, "exit status")
            check("handover: %s leads (was %s)" % (target.name, old.name) in r.stdout, r.stdout)
            got = target.wait("started-leading", after=sent, timeout=5)
            ms = (got["mono"] - sent) / 1e6
            note("%s: --to %s led after %.0f ms", lock, target.name, ms)
            check(ms < (RETRY_S * 1000 + 500) * SLACK, "handover took %.0f ms" % ms)
            old.wait("stopped-leading", after=sent, timeout=3)
            time.sleep(1.2)  # no flapping back once the released record's second is over
            check(old.alive() and not old.leading(), "the old leader leads again or exited")
            check(target.leading(), "the named replica lost the lock")
            check_eq(record(ks, lock, name).get("holderIdentity"), target.name, "holder")
            audit = ks.audit()
            acq = first_write_after(audit, lock, name, target.name, sent)
            check(acq is not None, "no write by %s in the audit log" % target.name)
            late = [a for a in writes_by(audit, old.name) if a["mono_ns"] >= acq]
            check(not late, "%s wrote after %s acquired: %s" % (old.name, target.name, late[:2]))
        t.case("%s: handover --to a standby: it leads within a retry period, no overlap" % lock,
               to_standby)

        def any_twice():
            for round_ in range(2):
                old = leader_of(electors)
                time.sleep(0.3)
                sent = time.monotonic_ns()
                r = handover(ks, lock, name, "--any")
                check_eq(r.returncode, 0, "exit status (round %d)" % round_)
                new = leader_of([e for e in electors if e is not old], timeout=5)
                got = new.wait("started-leading", after=sent, timeout=5)
                ms = (got["mono"] - sent) / 1e6
                note("%s: --any round %d: %s -> %s after %.0f ms", lock, round_, old.name,
                     new.name, ms)
                # the released lock goes at once to a standby, not after a second
                check(ms < (RETRY_S * 1000 + 500) * SLACK, "handover took %.0f ms" % ms)
                check("handover: %s leads (was %s)" % (new.name, old.name) in r.stdout, r.stdout)
                time.sleep(0.5)
                rec = record(ks, lock, name)
                check_eq(rec.get("holderIdentity"), new.name, "holder")
                check(rec.get("preferredHolder", "") != "*",
                      "the any-request stayed in the record: %s" % rec)
        t.case("%s: handover --any twice: a standby leads each time, the request is consumed"
               % lock, any_twice)

        def not_a_candidate():
            old = leader_of(electors)
            r = handover(ks, lock, name, "--to", "nobody_00000000")
            check_eq(r.returncode, 1, "exit status")
            check("nobody_00000000 did not come for the lock: not a live candidate" in r.stderr,
                  r.stderr)
            new = leader_of(electors, timeout=5)
            # after the released record's second any replica may take it,
            # the old leader too
            note("%s: after the no-show %s leads (was %s)", lock, new.name, old.name)
            time.sleep(1.5)
            check_eq(sum(1 for e in electors if e.leading()), 1, "leaders")
            check(new.leading(), "the new leader handed over again (to the absent one?)")
        t.case("%s: handover --to an identity nobody runs: clear error, someone leads" % lock,
               not_a_candidate)

        def to_leader_and_usage():
            lead = leader_of(electors)
            r = handover(ks, lock, name, "--to", lead.name)
            check_eq(r.returncode, 0, "exit status")
            check_eq(r.stdout.strip(), "handover: %s leads already" % lead.name, "output")
            time.sleep(1.0)
            check(lead.leading(), "the leader stepped down")
            for bad in ([], ["--any", "--to", "x"], ["--to", "*"]):
                r = handover(ks, lock, name, *bad)
                check_eq(r.returncode, 2, "exit status of %s" % bad)
        t.case("%s: handover --to the leader is a no-op; flag errors exit 2" % lock,
               to_leader_and_usage)
    finally:
        for e in electors:
            e.stop()


def main():
    t = Tap()
    ks = KubeSim()
    try:
        for lock in ("leases", "configmaps"):
            run_kind(t, ks, lock)
    finally:
        ks.close()
    t.done()


if __name__ == "__main__":
    main()
