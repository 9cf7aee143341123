"""End to end: session affinity by header (a route's hashPolicy over a
RingHash Upstream), proven with gRPC's own xDS client @grpc/grpc-js-xds
(npm, 1.14) routing real RPCs to three real gRPC backends (Debian
python3-grpcio servers), through two replicas of `coxswain run` on kubesim.
(gRPC C-core 1.51.1, Debian's python3-grpcio client, crashes in its
ring-hash picker, grpc/grpc#31766, fixed in 1.52: it cannot take part.)

- the same x-user value always reaches the same backend, and different
  values spread over the backends (the hash, not one sticky backend, is
  what decides);
- calls without the header are spread (gRPC draws a random hash when no
  policy yields one): the header is what pins a user;
- across a replica failover: both replicas serve byte-identical resources
  for the Gateway; the replica the client talks to is killed (-9), the
  client's xDS stream moves to the other one (a forwarder, as a Service
  would), a route added afterwards reaches the client, proving it now
  reads the survivor, and every user still reaches the same backend.
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
from tcpproxy import Proxy  # noqa: E402

NS = "affinity"
TARGET = "echo.affinity.test"
USERS = ["user-%02d" % i for i in range(12)]

t = Tap()
tmp = tempfile.mkdtemp(prefix="affinity-")
ks = api = proxy = client = None
reps, backends = [], []


def ask(cmd):
    return client.ask(cmd)


def vs(routes):
    return O.virtual_service(NS, "echo", [TARGET], routes)


def hashed(prefix):
    return O.route(prefix, "echo", hashPolicy=[{"header": "x-user"}])


def mapping(path):
    """user -> the one backend its calls reached (checks there is one)."""
    m = {}
    for u in USERS:
        out = ask("call %s 6 x-user=%s" % (path, u))
        check_eq(out["err"], {}, "calls of %s failed" % u)
        check_eq(len(out["ok"]), 1, "%s reached several backends: %s" % (u, out["ok"]))
        m[u] = next(iter(out["ok"]))
    return m


def group_of(r):
    return r.snapshot_group(NS + "/mesh")


def setup():
    global ks, api, proxy, client
    grpcxds.node_path()
    backends.extend(grpcxds.Backend(name) for name in ("b1", "b2", "b3"))
    ports = [b.port for b in backends]
    ks = O.start_kubesim()
    api = O.Api(ks)
    O.namespace(api, "coxswain-system")
    O.namespace(api, NS)
    up = O.upstream_static(NS, "echo", [("127.0.0.1", p) for p in ports])
    up["spec"]["lbPolicy"] = "RingHash"
    up["spec"]["ringHash"] = {"minimumRingSize": 1024, "maximumRingSize": 4096}
    for o in (O.gateway(NS, "mesh"), up, vs([hashed("/svc.A/")])):
        st, out = api.create(o)
        check_eq(st, 201, "create %s: %s" % (o["kind"], out))
    for i in range(2):
        reps.append(R.Replica(ks, "r%d" % i, extra=["--watch-namespaces=%s,coxswain-system" % NS]))
    R.wait_ready(reps, 30)
    R.wait_for(lambda: all(group_of(r) for r in reps), 20, what="the group on both replicas")
    proxy = Proxy(reps[0].xds_port)
    boot = grpcxds.bootstrap(tmp, proxy.port, "affinity-client", NS + "/mesh")
    client = grpcxds.Client("grpc-js", boot, TARGET)


state = {}


def case_same_user_same_backend():
    out = ask("until /svc.A/Call 30 x-user=warmup")
    check(out["ok"], "no call succeeded: %s" % out)
    state["before"] = m = mapping("/svc.A/Call")
    # twelve users over three backends: the hash spreads them
    check(len(set(m.values())) >= 2, "every user on one backend: %s" % m)


def case_no_header_spreads():
    out = ask("call /svc.A/Call 40")
    check_eq(out["err"], {})
    check(len(out["ok"]) >= 2, "40 calls without x-user reached one backend: %s" % out["ok"])


def case_failover_keeps_affinity():
    g0, g1 = group_of(reps[0]), group_of(reps[1])
    check(g0 is not None and g0 == g1, "the replicas serve different resources")
    out = ask("call /svc.B/Call 1 x-user=user-00")
    check_eq(out["ok"], {}, "/svc.B/ has no route yet")
    # the client's replica dies; its xDS stream goes to the survivor
    reps[0].kill()
    proxy.set_mode("refuse")
    proxy.set_mode("pass", upstream_port=reps[1].xds_port)
    st, o = api.get("VirtualService", NS, "echo")
    check_eq(st, 200, o)
    o["spec"]["routes"].append(hashed("/svc.B/"))
    st, out = api.request("PUT", O.obj_path("VirtualService", NS, "echo"), o)
    check_eq(st, 200, out)
    out = ask("until /svc.B/Call 30 x-user=user-00")
    check(out["ok"], "the route added after the failover never reached the client: %s" % out)
    after = mapping("/svc.A/Call")
    check_eq(after, state["before"], "users moved after the failover")
    # the new route hashes the same way over the same ring
    check_eq(mapping("/svc.B/Call"), state["before"], "the new route maps users differently")


try:
    t.case("setup: kubesim, two replicas, three backends, the client", setup)
    t.case("the same x-user always reaches the same backend", case_same_user_same_backend)
    t.case("without the header calls spread over the backends", case_no_header_spreads)
    t.case("a replica failover keeps every user on its backend", case_failover_keeps_affinity)
finally:
    if client:
        client.close()
    for r in reps:
        r.stop()
    if proxy:
        proxy.close()
    for b in backends:
        b.close()
    if api:
        api.close()
    if ks:
        ks.close()
t.done()
