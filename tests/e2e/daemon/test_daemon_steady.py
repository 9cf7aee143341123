# cx-test: quiet (a 60 s soak of three idle replicas: about 1 s of CPU in all)
"""End to end: three replicas with the ConfigMap lock (client-go's legacy
lock, renewed every 2 s by changing an annotation) in steady state.

The lock's namespace is also a namespace whose ConfigMaps the translator
reads (TLS, issue 12): an Upstream's CA bundle lives next to the lock. The
lock is excluded at the API server (the ConfigMap watch of that namespace
carries metadata.name!=<lock>): no renewal reaches an informer, and the
filter's excluded-lock (the safety net) never fires.

For SOAK_SECONDS (60 s in `make test`, 10 s under COXSWAIN_SANITIZE; set
SOAK_SECONDS=300 for the issue's five minutes) after the replicas settled:
- 0 translations on every replica, and the filters never let an event of the
  lock (or anything else) through; no replica received a renewal (0
  ConfigMap watch events, 0 excluded-lock), with the CA ConfigMap stored
  beside the lock;
- 0 status or ProxySnapshot writes;
- lock writes only by the leader, one per retry period (within tolerance);
- standbys make no API requests at all (they hold their watches open).
Numbers are printed for docs/benchmarks.md.
"""
import os
import time
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), "tests", "lib"))
from audit import identity_of  # noqa: E402
import objects  # noqa: E402
import replicas  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

SOAK = float(os.environ.get("SOAK_SECONDS") or (10 if replicas.sanitized() else 60))
RETRY = 2.0
NS = "app"

t = Tap()
ks = api = None
reps = []
state = {}


def setup():
    global ks, api, reps
    ks = objects.start_kubesim(["--bookmark-interval", "5s"], **objects.AS_1_28)
    api = objects.Api(ks)
    objects.namespace(api, "coxswain-system")
    objects.namespace(api, NS)
    api.create(objects.gateway(NS, "gw"))
    api.create(objects.upstream_static(NS, "up", [("10.0.0.1", 80)]))
    for i in range(20):
        api.create(objects.virtual_service(NS, "vs%d" % i, ["vs%d.test" % i],
                                       [objects.route("/", "up")]))
    # a CA bundle in the lock's namespace, read by an Upstream of NS
    with open(os.path.join(replicas.TOP, "tests", "data", "tls", "ca.crt")) as f:
        ca = f.read()
    st, out = api.create({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"namespace": "coxswain-system", "name": "backend-ca",
                                       "annotations": {
                                           "coxswain.dev/allow-references-from": NS}},
                          "data": {"ca.crt": ca}})
    check_eq(st, 201, str(out))
    api.create({"apiVersion": "coxswain.dev/v1", "kind": "Upstream",
                "metadata": {"namespace": NS, "name": "secure"},
                "spec": {"static": {"hosts": [{"address": "10.0.0.2", "port": 443}]},
                         "tls": {"sni": "backend.internal",
                                 "caConfigMapRef": {"name": "backend-ca",
                                                    "namespace": "coxswain-system"}}}})
    api.create(objects.virtual_service(NS, "secure", ["secure.test"], [objects.route("/", "secure")]))
    # The lock lives in a namespace the replicas also watch for inputs (one
    # informer per watched namespace).
    reps = [replicas.Replica(ks, "r%d" % i, lock="configmaps", lease="15s", renew="10s",
                        retry="2s", extra=["--watch-namespaces=app,coxswain-system"])
            for i in range(3)]
    replicas.wait_ready(reps, 30)
    leader = replicas.wait_leader(reps, 20)
    replicas.wait_for(lambda: replicas.writers_idle(leader), 20, what="idle")
    ok, stuck = objects.status_converged(api, NS)
    check(ok, str(stuck[:3]))
    time.sleep(1)  # let the last own writes come back through the informers
    state["leader"] = leader


def steady_state():
    leader = state["leader"]
    before = {r.name: r.metrics() for r in reps}
    ks.admin("DELETE", "/counters")
    seq0 = max([a["seq"] for a in ks.audit()] or [0])
    t0 = replicas.mono()
    time.sleep(SOAK)
    t1 = replicas.mono()
    after = {r.name: r.metrics() for r in reps}
    audit = [a for a in ks.audit(seq0) if a["seq"] > seq0]
    counters = ks.counters()

    def delta(name, key):
        return sum(v for (n, l), v in after[name].items() if n == key) - \
            sum(v for (n, l), v in before[name].items() if n == key)

    def passed(name):
        return sum(v for (n, l), v in after[name].items()
                   if n == "coxswain_filter_events_total" and ("verdict", "pass") in l) - \
            sum(v for (n, l), v in before[name].items()
                if n == "coxswain_filter_events_total" and ("verdict", "pass") in l)

    def lock_drops(name):
        key = ("coxswain_filter_events_total",
               (("kind", "ConfigMap"), ("reason", "excluded-lock"), ("verdict", "drop")))
        return after[name].get(key, 0) - before[name].get(key, 0)

    def cm_events(name):
        return sum(v - before[name].get((n, l), 0) for (n, l), v in after[name].items()
                   if n == "coxswain_informer_events_total" and
                   dict(l).get("resource", "").startswith("configmaps") and
                   dict(l).get("type") != "BOOKMARK")

    for r in reps:
        check_eq(delta(r.name, "coxswain_translations_total"), 0, "%s translations" % r.name)
        check_eq(passed(r.name), 0, "%s events passed by the filters" % r.name)
        check_eq(delta(r.name, "coxswain_status_writes_total"), 0, "%s status writes" % r.name)
        # no renewal left the API server: none reached an informer or the filter
        check_eq(cm_events(r.name), 0, "%s: ConfigMap watch events" % r.name)
        check_eq(lock_drops(r.name), 0, "%s: lock renewals that reached the filter" % r.name)
        check_eq(r.metric("coxswain_store_objects", kind="ConfigMap"), 1,
                 "%s: the CA ConfigMap beside the lock is stored" % r.name)
    writes = [a for a in audit if a["verb"] in ("create", "update", "patch", "delete")]
    lock_writes = [a for a in writes if a["resource"] == "configmaps" and a["name"] == "coxswain"]
    other = [a for a in writes if a not in lock_writes and a["resource"] != "events"]
    check_eq(len(other), 0, "writes other than the lock's: %s" % other[:3])
    who = {identity_of(a["user"]) for a in lock_writes}
    check_eq(who, {leader.name}, "lock writers")
    secs = (t1 - t0) / 1e9
    expect = secs / RETRY
    check(expect * 0.8 <= len(lock_writes) <= expect * 1.1 + 1,
          "%d lock writes in %.0f s, expected about %.0f" % (len(lock_writes), secs, expect))
    gaps = [(b["mono_ns"] - a["mono_ns"]) / 1e9 for a, b in zip(lock_writes, lock_writes[1:])]
    if gaps:
        check(min(gaps) > RETRY * 0.7, "shortest gap between renewals %.2f s" % min(gaps))
    # Standbys: no request but watches during the soak (their watches stay
    # open; a request is counted when it starts, and informers renew their
    # watches every 5 minutes).
    per_user, watches = {}, {}
    for c in counters:
        who = identity_of(c["user"]) or c["user"]
        if c["verb"] == "watch":
            watches[who] = watches.get(who, 0) + c["count"]
        else:
            per_user[who] = per_user.get(who, 0) + c["count"]
    for r in reps:
        if r is not leader:
            check_eq(per_user.get(r.name, 0), 0, "%s requests other than watches" % r.name)
            check(watches.get(r.name, 0) <= 12 * (1 + int(secs // 290)),
                  "%s started %d watches" % (r.name, watches.get(r.name, 0)))
    ev = [a for a in audit if a["resource"] == "events"]
    print("# steady state %.0f s (ConfigMap lock, retry %.0f s): translations 0/0/0, status "
          "writes 0, lock writes %d by %s (mean gap %.2f s), lock events received "
          "%s, standby requests %s (+ watches %s), events %d" %
          (secs, RETRY, len(lock_writes), leader.name,
           sum(gaps) / len(gaps) if gaps else 0.0, [int(cm_events(r.name)) for r in reps],
           [per_user.get(r.name, 0) for r in reps if r is not leader],
           [watches.get(r.name, 0) for r in reps if r is not leader], len(ev)))


def teardown():
    for r in reps:
        rc, _ = r.stop()
        check_eq(rc, 0, "%s exit" % r.name)
    if ks:
        ks.close()


t.case("three replicas with a ConfigMap lock settle", setup)
t.case("steady state: 0 translations, 0 status writes, lock writes by the leader only",
       steady_state)
t.case("teardown", teardown)
if t.failed:
    for r in reps:
        print("# --- %s ---" % r.name)
        for line in r.log().splitlines()[-30:]:
            print("# " + line)
t.done()
