# cx-test: quiet (a 30 s soak of three replicas renewing a lock: about 1 s of CPU in all)
"""The election's lock never leaves the API server, whatever the watch scope.

Three `coxswain run` replicas share one ConfigMap lock (renewed by the
leader every 500 ms) and watch ConfigMaps in the three scopes there are:
every namespace, a namespace list that includes the lock's namespace, and
a namespace selector that matches it. For 30 s (10 s under sanitizers) no
replica's ConfigMap informers receive a single event (per-informer
coxswain_informer_events_total), and no lock event reaches a filter
(excluded-lock stays 0) while the lock is renewed ~60 times; then a real
edit of a ConfigMap in the lock's namespace and one elsewhere arrives at
every replica. The every-namespace replica runs two ConfigMap informers:
every namespace but the lock's, and the lock's namespace without the lock.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), "tests", "lib"))
import objects  # noqa: E402
import replicas  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

LOCK_NS = "coxswain-system"
SOAK_S = 10 if replicas.sanitized() else 30


def note(fmt, *args):
    print("# " + (fmt % args), flush=True)


def cm_events(rep):
    """{informer: events} of the replica's ConfigMap informers (bookmarks
    carry no object: not counted)."""
    out = {}
    for (name, labels), v in rep.metrics().items():
        lab = dict(labels)
        if name == "coxswain_informer_events_total" and lab.get("resource", "").startswith(
                "configmaps") and lab.get("type") != "BOOKMARK":
            out[lab["resource"]] = out.get(lab["resource"], 0) + v
    return out


def lock_renewals(ks, since):
    return [a for a in ks.audit(since) if a.get("resource") == "configmaps" and
            a.get("name") == "coxswain" and a.get("verb") == "update" and
            200 <= a.get("code", 0) < 300]


def main():
    t = Tap()
    ks = objects.start_kubesim(**objects.AS_1_28)
    api = objects.Api(ks)
    reps = []
    try:
        objects.namespace(api, LOCK_NS, {"team": "gw"})
        objects.namespace(api, "app", {"team": "gw"})
        objects.namespace(api, "other")
        for ns, name in ((LOCK_NS, "cm-sys"), ("app", "cm-app"), ("other", "cm-other")):
            st, _ = api.create({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": name, "namespace": ns},
                                "data": {"v": "0"}})
            check_eq(st, 201)
        scopes = {"all": [],
                  "list": ["--watch-namespaces=app,%s" % LOCK_NS],
                  "selector": ["--watch-namespace-selector=team=gw"]}
        for name, extra in scopes.items():
            reps.append(replicas.Replica(ks, name, lock="configmaps", lock_name="coxswain",
                                         lock_namespace=LOCK_NS, extra=extra))
        replicas.wait_ready(reps)
        replicas.wait_leader(reps)

        def soak():
            # The informers as the scopes imply.
            got = {r.name: sorted(cm_events(r)) for r in reps}
            note("ConfigMap informers: %s", got)
            check_eq(got["all"], ["configmaps", "configmaps/" + LOCK_NS])
            check_eq(got["list"], ["configmaps/app", "configmaps/" + LOCK_NS])
            check_eq(got["selector"], ["configmaps", "configmaps/" + LOCK_NS])
            seq = max([a["seq"] for a in ks.audit()] + [0])
            before = {r.name: cm_events(r) for r in reps}
            excl = {r.name: r.metric("coxswain_filter_events_total", kind="ConfigMap",
                                     reason="excluded-lock") for r in reps}
            time.sleep(SOAK_S)
            renewals = len(lock_renewals(ks, seq))
            note("lock renewals in %d s: %d", SOAK_S, renewals)
            check(renewals >= SOAK_S, "the lock was renewed only %d times" % renewals)
            for r in reps:
                after = cm_events(r)
                delta = {k: after.get(k, 0) - before[r.name].get(k, 0) for k in after}
                note("%s: ConfigMap events in %d s: %s", r.name, SOAK_S, delta)
                check(all(v == 0 for v in delta.values()),
                      "%s received ConfigMap events: %s" % (r.name, delta))
                check_eq(r.metric("coxswain_filter_events_total", kind="ConfigMap",
                                  reason="excluded-lock"), excl[r.name],
                         "%s: lock events reached the filter" % r.name)
        t.case("the lock renewed every 500 ms for %d s: 0 ConfigMap events at any replica "
               "(every namespace, a list, a selector)" % SOAK_S, soak)

        def real_edit():
            before = {r.name: cm_events(r) for r in reps}
            for ns, name in ((LOCK_NS, "cm-sys"), ("app", "cm-app")):
                st, _ = api.patch("ConfigMap", ns, name, {"data": {"v": "1"}})
                check_eq(st, 200)
            deadline = time.monotonic() + 10
            missing = None
            while time.monotonic() < deadline:
                missing = {}
                for r in reps:
                    after = cm_events(r)
                    got = sum(after.values()) - sum(before[r.name].values())
                    if got < 2:
                        missing[r.name] = got
                if not missing:
                    break
                time.sleep(0.1)
            check(not missing, "edits not delivered: %s" % missing)
            # The lock namespace's edit came through its own informer.
            for r in reps:
                after = cm_events(r)
                k = "configmaps/" + LOCK_NS
                check(after.get(k, 0) > before[r.name].get(k, 0), "%s: %s got nothing" % (
                    r.name, k))
        t.case("a real edit in the lock's namespace and in another still arrives", real_edit)
    finally:
        for r in reps:
            r.stop()
        ks.close()
    t.done()


main()
