"""End to end: locality weights and priority failover by zone (an
Upstream's spec.localities over a Service's EndpointSlice zones), proven
with both of gRPC's own xDS clients routing real RPCs to real backends
(tests/e2e/xds/backend.py) through `coxswain run` on kubesim:
@grpc/grpc-js-xds 1.14 (npm) and gRPC C-core 1.51.1 (Debian's
python3-grpcio). RoundRobin within a zone: C-core 1.51.1 crashes in its
ring-hash picker (grpc/grpc#31766).

- zone-a (weight 3) and zone-b (weight 1) share priority 0: about three
  calls in four reach zone-a's backend, the rest zone-b's, none the
  failover zone-c (priority 1);
- every endpoint of zone-a and zone-b turns unready (one EndpointSlice
  update): after the one push that follows, every call reaches zone-c
  (the translator renumbers priorities, so zone-c is now priority 0), and
  no further push was needed;
- the endpoints turn ready again: traffic returns to zone-a and zone-b.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "lib"))
import grpcxds  # noqa: E402
import objects as O  # noqa: E402
import replicas as R  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

NS = "zones"
TARGET = "echo.zones.test"
PATH = "/svc.Zones/Call"
CALLS = 400

t = Tap()
tmp = tempfile.mkdtemp(prefix="locality-")
ks = api = rep = None
backends, clients = [], {}


def start_backend(name, host, port=0):
    backends.append(grpcxds.Backend(name, host, port))
    return backends[-1].port


def ask(which, cmd):
    return clients[which].ask(cmd)


def slice_ab(ready):
    """zone-a's and zone-b's backends: one slice (one update flips both)."""
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"namespace": NS, "name": "echo-ab",
                         "labels": {"kubernetes.io/service-name": "echo"}},
            "addressType": "IPv4", "ports": [{"name": "grpc", "port": state["port_ab"]}],
            "endpoints": [{"addresses": ["127.0.0.1"], "zone": "zone-a",
                           "conditions": {"ready": ready}},
                          {"addresses": ["127.0.0.2"], "zone": "zone-b",
                           "conditions": {"ready": ready}}]}


def group():
    return rep.snapshot_group(NS + "/mesh")


def eds_version():
    g = group()
    return g and g["endpoints"]["version"]


state = {}


def setup():
    global ks, api, rep
    grpcxds.node_path()
    # a and b share a port (one slice), on 127.0.0.1 and 127.0.0.2
    for _ in range(5):
        pa = start_backend("a", "127.0.0.1")
        pb = start_backend("b", "127.0.0.2", pa)
        if pa and pb:
            break
    check(pa and pb, "could not bind a and b on one port")
    state["port_ab"] = pa
    pc = start_backend("c", "127.0.0.3")
    check(pc, "backend c did not start")
    ks = O.start_kubesim()
    api = O.Api(ks)
    O.namespace(api, "coxswain-system")
    O.namespace(api, NS)
    up = O.upstream_kube(NS, "echo", "echo", "grpc")
    up["spec"]["lbPolicy"] = "RoundRobin"
    up["spec"]["localities"] = [{"zone": "zone-a", "weight": 3},
                                {"zone": "zone-b", "weight": 1},
                                {"zone": "zone-c", "priority": 1}]
    sc = O.endpoint_slice(NS, "echo-c", "echo", "grpc", pc, ["127.0.0.3"])
    sc["endpoints"][0]["zone"] = "zone-c"
    for o in (O.gateway(NS, "mesh"), up, O.service(NS, "echo", [("grpc", 50051)]),
              slice_ab(True), sc,
              O.virtual_service(NS, "echo", [TARGET], [O.route("/", "echo")])):
        st, out = api.create(o)
        check_eq(st, 201, "create %s: %s" % (o["kind"], out))
    rep = R.Replica(ks, "r0", extra=["--watch-namespaces=%s,coxswain-system" % NS])
    R.wait_ready([rep], 30)
    R.wait_for(lambda: eds_version() is not None, 20, what="the group")
    boot = grpcxds.bootstrap(tmp, rep.xds_port, "locality-client", NS + "/mesh")
    for kind in ("grpc-js", "c-core"):
        clients[kind] = grpcxds.Client(kind, boot, TARGET)


def calls(which, n=CALLS):
    out = ask(which, "call %s %d" % (PATH, n))
    check_eq(out["err"], {}, "%s: calls failed: %s" % (which, out))
    return out["ok"]


def wait_only(which, backend, secs=30):
    """Calls until |backend| answers."""
    return ask(which, "wait %s %s %d" % (PATH, backend, secs))["found"]


def case_split_by_zone_weight():
    for which in clients:
        if which == "c-core":
            check(ask(which, "wait %s a 30" % PATH)["found"], "c-core never reached a")
        else:
            check(ask(which, "until %s 30" % PATH)["ok"], "grpc-js: no call succeeded")
        ok = calls(which)
        share = ok.get("a", 0) / float(CALLS)
        check_eq(ok.get("c", 0), 0, "%s: the failover zone got traffic: %s" % (which, ok))
        check_eq(ok.get("a", 0) + ok.get("b", 0), CALLS, "%s: %s" % (which, ok))
        # 3:1 -> 0.75; 400 calls at p=0.75 have a standard deviation of
        # about 0.022: 0.62-0.88 is six of them, and 1:1 (0.5) or
        # endpoint-count weighting (0.5) are far outside
        check(0.62 <= share <= 0.88, "%s: zone-a's share %.3f, want ~0.75: %s"
              % (which, share, ok))


def case_failover_within_one_push():
    before = eds_version()
    st, out = api.request("PUT", O.obj_path("EndpointSlice", NS, "echo-ab"), slice_ab(False))
    check_eq(st, 200, out)
    clusters = group()["clusters"]["version"]
    R.wait_for(lambda: eds_version() != before, 20, what="the push after the update")
    pushed = eds_version()
    # what was pushed: zone-c alone, renumbered to priority 0 (the
    # Cluster is untouched: an EDS push alone)
    g = group()
    check_eq(g["clusters"]["version"], clusters, "the Cluster changed")
    cla = g["endpoints"]["resources"][0]
    check_eq([(loc["locality"].get("zone"), loc.get("priority", 0),
               loc["loadBalancingWeight"]) for loc in cla["endpoints"]], [("zone-c", 0, 1)])
    for which in clients:
        check(wait_only(which, "c"), "%s never moved to zone-c" % which)
        ok = calls(which, 100)
        check_eq(ok, {"c": 100}, "%s: after the failover" % which)
    check_eq(eds_version(), pushed, "a second push was needed")
    # the Upstream stays Accepted with its one zone-c endpoint
    st, o = api.get("Upstream", NS, "echo")
    check_eq(st, 200, o)
    check_eq((o.get("status") or {}).get("state"), "Accepted", o.get("status"))


def case_recovery():
    st, out = api.request("PUT", O.obj_path("EndpointSlice", NS, "echo-ab"), slice_ab(True))
    check_eq(st, 200, out)
    for which in clients:
        R.wait_for(lambda: "c" not in calls(which, 20), 30, step=0.2,
                   what="%s back on zone-a and zone-b" % which)
        ok = calls(which)
        check_eq(ok.get("c", 0), 0, "%s: %s" % (which, ok))
        check(ok.get("a", 0) > ok.get("b", 0), "%s: the weights are gone: %s" % (which, ok))


try:
    t.case("setup: kubesim, a replica, backends in three zones, both gRPC clients", setup)
    t.case("traffic splits 3:1 by zone weight, none to the failover zone",
           case_split_by_zone_weight)
    t.case("every endpoint of priority 0 unready: all traffic to zone-c after one push",
           case_failover_within_one_push)
    t.case("the endpoints ready again: traffic back on zone-a and zone-b", case_recovery)
finally:
    for c in clients.values():
        c.close()
    if rep:
        rep.stop()
    for b in backends:
        b.close()
    if api:
        api.close()
    if ks:
        ks.close()
t.done()
