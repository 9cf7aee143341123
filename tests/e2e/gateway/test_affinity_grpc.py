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
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "lib"))
import objects as O  # noqa: E402
import replicas as R  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402
from tcpproxy import Proxy  # noqa: E402

NS = "affinity"
TARGET = "echo.affinity.test"
USERS = ["user-%02d" % i for i in range(12)]
HERE = os.path.dirname(os.path.abspath(__file__))
BACKEND = os.path.join(R.TOP, "tests", "e2e", "xds", "backend.py")
# where tests/e2e/xds installs the pinned @grpc/grpc-js-xds (shared)
NPM = os.path.join(R.TOP, "build", "npm-xds")
NPM_PKGS = ["@grpc/grpc-js@1.14.7", "@grpc/grpc-js-xds@1.14.1"]

t = Tap()
tmp = tempfile.mkdtemp(prefix="affinity-")
ks = api = proxy = client = None
reps, backends, ports = [], [], []


def start_backend(name):
    p = subprocess.Popen(["/usr/bin/python3", BACKEND, name], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    backends.append(p)
    return int(p.stdout.readline())


def ask(cmd, timeout=60):
    client.stdin.write(cmd + "\n")
    client.stdin.flush()
    line = client.stdout.readline()
    check(line, "no answer to %r (client exited: %s)" % (cmd, client.poll()))
    out = json.loads(line)
    print("# %s -> %s" % (cmd, line.strip()))
    return out


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
    doc = json.loads(r.debug("snapshot"))
    for g in doc["snapshot"]["groups"]:
        if g["name"] == NS + "/mesh":
            return g
    return None


def npm_ready():
    """@grpc/grpc-js-xds in build/npm-xds, installed once (as
    tests/e2e/xds/test_xds_grpc.c does, same versions)."""
    probe = os.path.join(NPM, "node_modules", "@grpc", "grpc-js-xds", "package.json")
    if not os.path.exists(probe):
        os.makedirs(NPM, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
                        "--prefix", "."] + NPM_PKGS, cwd=NPM, timeout=300, check=True)
    return os.path.join(NPM, "node_modules")


def setup():
    global ks, api, proxy, client
    node_path = npm_ready()
    for name in ("b1", "b2", "b3"):
        ports.append(start_backend(name))
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
    boot = os.path.join(tmp, "bootstrap.json")
    with open(boot, "w") as f:
        json.dump({"xds_servers": [{"server_uri": "127.0.0.1:%d" % proxy.port,
                                    "channel_creds": [{"type": "insecure"}],
                                    "server_features": ["xds_v3"]}],
                   "node": {"id": "affinity-client", "cluster": "c", "locality": {},
                            "metadata": {"coxswain.dev/gateway": NS + "/mesh"}}}, f)
    env = dict(os.environ, GRPC_XDS_BOOTSTRAP=boot, NODE_PATH=node_path)
    client = subprocess.Popen(["node", os.path.join(HERE, "affinity_client.js"), TARGET],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    check_eq(json.loads(client.stdout.readline()), {"ready": True})


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
    out = ask("until /svc.B/Call 30 x-user=user-00", timeout=90)
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
        try:
            client.stdin.write("quit\n")
            client.stdin.flush()
            client.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            client.kill()
    for r in reps:
        r.stop()
    if proxy:
        proxy.close()
    for p in backends:
        p.stdin.close()
        p.wait(10)
    if api:
        api.close()
    if ks:
        ks.close()
t.done()
