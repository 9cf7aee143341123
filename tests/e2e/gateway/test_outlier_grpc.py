"""End to end: outlier detection (an Upstream's spec.outlierDetection, the
Cluster's outlier_detection) proven with both of gRPC's own xDS clients,
which implement it per gRFC A50: @grpc/grpc-js-xds 1.14 (on by default)
and gRPC C-core 1.51.1 (Debian's python3-grpcio, the
outlier_detection_experimental policy). Three real backends behind a
static Upstream through `coxswain run` on kubesim; one answers every call
UNAVAILABLE.

- through an Upstream without outlierDetection the failing backend keeps
  taking its share: calls keep failing, seconds apart (the control:
  nothing else ejects it);
- through an Upstream over the same backends with failure-percentage
  ejection, the failing backend is ejected after an interval: every call
  then succeeds, on the two good backends.

The detecting Upstream has its outlierDetection from the start:
grpc-js-xds 1.14.1 ignores an update that adds outlier_detection to a
Cluster it already holds (its resource comparison walks only the old
value's keys, and the no-op config has none), so a Cluster that gains
detection later reaches grpc-js clients only when they next subscribe to
it. C-core 1.51.1 applies such an update (checked by hand while writing
this test); docs/api.md says so.
"""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "lib"))
import grpcxds  # noqa: E402
import objects as O  # noqa: E402
import replicas as R  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

NS = "outlier"
TARGET = "echo.outlier.test"
PLAIN = "/svc.Plain/Call"
DETECT = "/svc.Detect/Call"
DETECTION = {"interval": "1s", "baseEjectionTime": "60s", "maxEjectionPercent": 50,
             "failurePercentageThreshold": 50, "enforcingFailurePercentage": 100,
             "failurePercentageMinimumHosts": 3, "failurePercentageRequestVolume": 5,
             "enforcingSuccessRate": 0}

t = Tap()
tmp = tempfile.mkdtemp(prefix="outlier-")
ks = api = rep = None
backends, clients, ports = [], {}, []


def start_backend(name, fail=False):
    backends.append(grpcxds.Backend(name, fail=fail))
    check(backends[-1].port, "backend %s did not start" % name)
    return backends[-1].port


def ask(which, cmd):
    return clients[which].ask(cmd)


def group():
    return rep.snapshot_group(NS + "/mesh")


def setup():
    global ks, api, rep
    grpcxds.node_path()
    for name in ("good1", "good2"):
        ports.append(start_backend(name))
    ports.append(start_backend("bad", fail=True))
    ks = O.start_kubesim()
    api = O.Api(ks)
    O.namespace(api, "coxswain-system")
    O.namespace(api, NS)
    plain = O.upstream_static(NS, "plain", [("127.0.0.1", p) for p in ports])
    detect = O.upstream_static(NS, "detect", [("127.0.0.1", p) for p in ports])
    detect["spec"]["outlierDetection"] = DETECTION
    for o in (O.gateway(NS, "mesh"), plain, detect,
              O.virtual_service(NS, "echo", [TARGET], [O.route("/svc.Plain/", "plain"),
                                                       O.route("/svc.Detect/", "detect")])):
        st, out = api.create(o)
        check_eq(st, 201, "create %s: %s" % (o["kind"], out))
    rep = R.Replica(ks, "r0", extra=["--watch-namespaces=%s,coxswain-system" % NS])
    R.wait_ready([rep], 30)
    R.wait_for(lambda: group() is not None, 20, what="the group")
    boot = grpcxds.bootstrap(tmp, rep.xds_port, "outlier-client", NS + "/mesh")
    for kind in ("grpc-js", "c-core"):
        clients[kind] = grpcxds.Client(kind, boot, TARGET)


def first_call(which, path):
    if which == "c-core":
        check(ask(which, "wait %s good1 30" % path)["found"], "c-core: no call succeeded")
    else:
        check(ask(which, "until %s 30" % path)["ok"], "grpc-js: no call succeeded")


def case_without_detection_failures_persist():
    for which in clients:
        first_call(which, PLAIN)
    # two batches, 3 s apart: the failing backend keeps failing calls
    for batch in range(2):
        for which in clients:
            out = ask(which, "call %s 30" % PLAIN)
            check(sum(out["err"].values()) >= 3, "%s: the failing backend took no calls: %s"
                  % (which, out))
            check_eq(set(out["ok"]) - {"good1", "good2"}, set(), which)
        if batch == 0:
            time.sleep(3)


def case_detection_ejects_the_failing_backend():
    clusters = json.dumps(group()["clusters"]["resources"])
    check("outlierDetection" in clusters, "no outlier_detection served")
    for which in clients:
        first_call(which, DETECT)
        # keep calling: each interval (1 s) counts the requests; once the
        # failing backend has 5 with >= 50% failed it is ejected
        deadline, clean, failed = time.monotonic() + 30, False, 0
        while time.monotonic() < deadline and not clean:
            out = ask(which, "call %s 30" % DETECT)
            clean = not out["err"]
            failed += sum(out["err"].values())
        check(failed > 0, "%s: the failing backend was never called" % which)
        check(clean, "%s: calls still fail 30 s after the start" % which)
        out = ask(which, "call %s 60" % DETECT)
        check_eq(out["err"], {}, "%s: after the ejection" % which)
        check_eq(set(out["ok"]), {"good1", "good2"}, "%s: %s" % (which, out))
        # the control still fails: the detection is the Upstream's
        out = ask(which, "call %s 30" % PLAIN)
        check(out["err"], "%s: the Upstream without detection stopped failing: %s"
              % (which, out))


try:
    t.case("setup: kubesim, a replica, two good backends and a failing one, both clients",
           setup)
    t.case("without outlierDetection the failing backend keeps failing calls",
           case_without_detection_failures_persist)
    t.case("with failure-percentage ejection the failing backend is ejected (gRFC A50)",
           case_detection_ejects_the_failing_backend)
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
