"""Domain conflicts decided alike in a cluster and offline (issue 26 item 5).

Two VirtualServices claim one domain on one Gateway: "b-old", created first
in kubesim, and "a-new", created a second later (first in name order). A
replica writes its verdict to the statuses; `coxswain translate` then reads

- the objects as the API server returns them (creationTimestamp set): the
  same winner and the very same message as the replica's status;
- the manifests as written (no creationTimestamp): the rule for objects
  not yet created decides (namespace/name order), and the message says so;
- the live objects plus a manifest not yet applied: the live one keeps the
  domain, the newcomer counting as created after it, and the message says
  so.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))

import objects as O  # noqa: E402
import replicas as R  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

NS = "conflicts"
DOMAIN = "shop.conflicts.example"
t = Tap()
tmp = tempfile.mkdtemp(prefix="translate-conflicts-")


def vs(name, domain=DOMAIN):
    return O.virtual_service(NS, name, [domain], [O.route("/", "backend")])


MANIFESTS = [O.gateway(NS, "gw", mode="envoy"),
             O.upstream_static(NS, "backend", [("10.0.0.1", 80)]),
             vs("b-old"), vs("a-new")]


def translate(objs):
    path = os.path.join(tmp, "in-%d.json" % time.monotonic_ns())
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, f)
    p = subprocess.run([R.coxswain(), "translate", "--reports-only", "-f", path],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode in (0, 1), p.stderr)
    return {r["name"]: r for r in json.loads(p.stdout)["reports"] if r["kind"] == "VirtualService"}


ks = O.start_kubesim()
api = O.Api(ks)
rep = None


def live(kind, name):
    st, o = api.get(kind, NS, name)
    check_eq(st, 200, o)
    return o


def status_of(name):
    st = (live("VirtualService", name).get("status") or {})
    conds = st.get("conditions") or [{}]
    return st.get("state"), conds[0].get("reason"), conds[0].get("message")


def case_cluster_verdict():
    global rep
    O.namespace(api, NS)
    for o in MANIFESTS[:3]:
        st, out = api.create(o)
        check_eq(st, 201, out)
    # creation times are whole seconds: the second object is a second younger
    time.sleep(1.1)
    st, out = api.create(MANIFESTS[3])
    check_eq(st, 201, out)
    rep = R.Replica(ks, "r0", elect=False)
    R.wait_for(lambda: status_of("a-new")[0] == "Rejected", 60, what="a-new's status")
    state, reason, msg = status_of("a-new")
    check_eq(reason, "DomainConflict")
    check("served by VirtualService %s/b-old" % NS in msg, msg)
    check("the oldest keeps it: %s/b-old was created at" % NS in msg, msg)
    check_eq(status_of("b-old")[0], "Accepted")


def case_offline_reads_the_cluster_alike():
    # what the API server returns, creationTimestamp included, status aside
    objs = [live("Gateway", "gw"), live("Upstream", "backend"),
            live("VirtualService", "b-old"), live("VirtualService", "a-new")]
    for o in objs:
        o.pop("status", None)
    reps = translate(objs)
    check_eq(reps["b-old"]["state"], "Accepted")
    check_eq(reps["a-new"]["state"], "Rejected")
    check_eq(reps["a-new"]["reason"], "DomainConflict")
    # the very message the replica wrote
    check_eq(reps["a-new"]["message"], status_of("a-new")[2])


def case_offline_manifests_say_their_rule():
    reps = translate(MANIFESTS)
    # no creation times: namespace/name order, and the message says so
    check_eq(reps["a-new"]["state"], "Accepted")
    check_eq(reps["b-old"]["state"], "Rejected")
    check("neither has a creationTimestamp" in reps["b-old"]["message"], reps["b-old"])
    check("namespace/name order" in reps["b-old"]["message"], reps["b-old"])


def case_offline_newcomer_after_the_cluster():
    objs = [live("Gateway", "gw"), live("Upstream", "backend"), live("VirtualService", "b-old"),
            vs("aaa-planned")]
    reps = translate(objs)
    check_eq(reps["b-old"]["state"], "Accepted")
    check_eq(reps["aaa-planned"]["state"], "Rejected")
    msg = reps["aaa-planned"]["message"]
    check("this one has no creationTimestamp" in msg, msg)
    check("created after every existing object" in msg, msg)


try:
    t.case("the replica: the older VirtualService keeps the domain", case_cluster_verdict)
    t.case("translate of the objects read back: same verdict, same message",
           case_offline_reads_the_cluster_alike)
    t.case("translate of the manifests: name order, said so", case_offline_manifests_say_their_rule)
    t.case("translate of a planned object next to live ones: the live one keeps it",
           case_offline_newcomer_after_the_cluster)
finally:
    if rep:
        rep.stop()
    api.close()
    ks.close()
t.done()
