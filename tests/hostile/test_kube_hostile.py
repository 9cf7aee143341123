"""A hostile or broken API server, and a tenant's large objects, against a
live replica (tests/hostile/hostilelib.py). kubesim's fault rules answer the
replica's informers with huge bodies, deeply nested JSON, wrong types and
garbage; a tenant fills a namespace with a hundred 1 MB ConfigMaps. After
each case: the replica is alive, its RSS stayed under the stated bound, and
the legitimate proxy is still served.

The caps at work (docs/kube-client.md, docs/security.md): one object
(KUBE_OBJECT_MAX, 3 MiB), one list page (32 MiB, then pages of half the
size), one watch event (the object cap + 64 KiB: a larger one ends the watch
and a list gets past it), one read of a referenced object (the object
cap), cJSON's nesting limit, and Secrets and ConfigMaps
held as metadata unless a Gateway or Upstream references them.
"""
import base64
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostilelib as H  # noqa: E402
from hostilelib import check, check_eq  # noqa: E402

t = H.Tap()
w = None
UA = None


def user_agent():
    for c in w.ks.counters():
        if c["user"].startswith("coxswain/") and c["user"].endswith("replica/hostile-0"):
            return c["user"]
    raise AssertionError("the replica's User-Agent is not in kubesim's counters")


def restart_informers(relist):
    """Makes the replica's informers watch again (and, with |relist|, list
    again: the event window is compacted, so a resumed watch gets 410)."""
    if relist:
        w.ks.compact()
    w.ks.admin("POST", "/end-watches", {"user": UA})


def fault(**rule):
    rule["user"] = UA
    return w.ks.add_fault(**rule)


def counts(verb, resource):
    return sum(c["count"] for c in w.ks.counters()
               if c["user"] == UA and c["verb"] == verb and c["resource"] == resource)


def wait_requests(verb, resource, n, timeout=20):
    before = counts(verb, resource)
    H.cxd.wait_for(lambda: counts(verb, resource) >= before + n, timeout * H.slowdown(),
                   what="%d more %s %s" % (n, verb, resource))


def objects_seen(resource):
    return w.replica.metric("coxswain_informer_objects", resource=resource)


def make(resource, name):
    """Creates one object of |resource| in the hostile namespace."""
    md = {"namespace": H.NS, "name": name}
    body = {
        "configmaps": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md,
                       "data": {"k": "v"}},
        "secrets": {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                    "metadata": md, "data": {"tls.crt": "", "tls.key": ""}},
        "services": {"apiVersion": "v1", "kind": "Service", "metadata": md,
                     "spec": {"ports": [{"port": 80}]}},
        "endpointslices": {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                           "metadata": md, "addressType": "IPv4", "endpoints": []},
        "upstreams": H.cxd.upstream_static(H.NS, name, [("127.0.0.1", 1)]),
    }[resource]
    st, out = w.api.create(body)
    check_eq(st, 201, "create %s %s: %s" % (resource, name, str(out)[:200]))


def working_again(*resources):
    """Faults gone, watches restarted: each informer of |resources| sees a
    new object of its kind (it lists and watches normally again)."""
    w.ks.clear_faults()
    restart_informers(relist=True)
    for r in resources:
        before = objects_seen(r)
        make(r, "after-%s-%d" % (r, int(time.monotonic() * 1000)))
        H.cxd.wait_for(lambda: objects_seen(r) >= before + 1, 30 * H.slowdown(),
                       what="%s informer working again" % r)


def case_huge_watch_event():
    # A 16 MiB event opening each watch (kubesim serves streaming lists:
    # the initial sync is a watch too): over the event cap, the watch ends
    # and the informer lists again instead of resuming into it.
    with w.attack("kube: 16 MiB watch events", rss_mb=60):
        fault(verb="watch", resource="upstreams", action="huge-body", bytes=16 << 20, count=4)
        restart_informers(relist=False)
        wait_requests("watch", "upstreams", 3)
        time.sleep(1)
    working_again("upstreams")
    check("watch event larger than the cap" in w.replica.log(), "the cut is not in the log")


def case_deep_json():
    with w.attack("kube: 100,000 levels of JSON in watches", rss_mb=60):
        fault(verb="watch", resource="services", action="deep-json", depth=100000)
        restart_informers(relist=True)
        wait_requests("watch", "services", 3)
        time.sleep(1)
    working_again("services")


def case_wrong_types():
    w.ks.clear_faults()
    # Wrong types in real objects: a number for a name, a string for the
    # labels, an array for the metadata, a number for a resourceVersion, on
    # kinds the legitimate proxy does not need. Such objects are dropped (or
    # fail their kind's own checks); nothing else is.
    with w.attack("kube: wrong types in watched objects", rss_mb=60):
        fault(verb="watch", resource="endpointslices", action="mutate", path="metadata.name",
              value=42)
        fault(verb="watch", resource="services", action="mutate", path="metadata.labels",
              value="not-a-map")
        fault(verb="watch", resource="configmaps", action="mutate", path="metadata",
              value=[1, 2])
        fault(verb="watch", resource="secrets", action="mutate",
              path="metadata.resourceVersion", value=7)
        restart_informers(relist=True)
        # objects that arrive meanwhile, mangled on the way (an informer
        # whose initial-events bookmark was mangled waits for its stall
        # timer: the server never said its list was complete)
        for r in ("endpointslices", "services", "configmaps", "secrets"):
            make(r, "mangled")
        time.sleep(2)
    working_again("endpointslices", "services", "configmaps", "secrets")


def case_garbage_body():
    with w.attack("kube: watches answered with non-JSON", rss_mb=60):
        fault(verb="watch", resource="secrets", action="respond", code=200,
              body="<html>not json</html>\n")
        restart_informers(relist=False)
        wait_requests("watch", "secrets", 3)
    working_again("secrets")


def configmap(name, nbytes):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"namespace": H.NS, "name": name},
            "data": {"blob": "x" * nbytes}}


def case_hundred_1mb_configmaps():
    # A tenant with create rights on ConfigMaps: 100 of ~1 MB each. The
    # replica holds their metadata only (a full copy only for what a
    # Gateway or Upstream references): its memory barely moves.
    base = w.rss_kb()
    with w.attack("kube: a tenant's 100 ConfigMaps of 1 MB", rss_mb=base // 1024 + 40):
        for i in range(100):
            st, out = w.api.create(configmap("big%d" % i, 1000 * 1000 - 200))
            check_eq(st, 201, "create big%d: %s" % (i, str(out)[:200]))
        for i in range(0, 100, 10):  # and changes of some of them
            st, _ = w.api.patch("ConfigMap", H.NS, "big%d" % i, {"data": {"k": "v"}})
            check_eq(st, 200)
        H.cxd.wait_for(lambda: w.replica.metric("coxswain_informer_objects",
                                                resource="configmaps") >= 100,
                       20 * H.slowdown(), what="the 100 ConfigMaps seen")
        time.sleep(0.5)
    grew = w.rss_kb() - base
    check(grew < 30 * 1024 * H.slowdown(), "RSS grew by %d KB for metadata" % grew)


def secret(name, cert_pem):
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"namespace": H.NS, "name": name},
            "data": {"tls.crt": base64.b64encode(cert_pem).decode(),
                     "tls.key": base64.b64encode(b"not a key").decode()}}


def case_huge_referenced_secret():
    # A Gateway references a Secret; reading it whole (a list of that one
    # name) meets a 96 MiB answer: cut at the object cap, retried with
    # backoff; the Gateway says the Secret is missing; the rest is served.
    with w.attack("kube: a 96 MiB answer for a referenced Secret", rss_mb=60):
        st, _ = w.api.create(secret("huge", b"-----BEGIN CERTIFICATE-----\n"))
        check_eq(st, 201)
        fault(verb="list", resource="secrets", action="huge-body", bytes=96 << 20)
        gw = H.cxd.gateway(H.NS, "tls-huge")
        gw["spec"]["tls"] = {"certificates": [{"secretRef": {"name": "huge"}}]}
        st, _ = w.api.create(gw)
        check_eq(st, 201)
        wait_requests("list", "secrets", 2)
        time.sleep(1)
    check("list secrets hostile/huge failed: decode: response larger than" in w.replica.log(),
          "no line for the cut read")
    w.ks.clear_faults()
    check_eq(w.api.delete("Gateway", H.NS, "tls-huge")[0], 200)


def case_status_numbers_and_controls():
    # Error answers whose numbers no integer holds (code 1e300, a
    # retryAfterSeconds of -1e300 or minus infinity: casting them was
    # undefined behaviour; a huge positive one is a 30 s pause, in the unit
    # tests) and whose message carries a terminal escape and a forged
    # log line: as an HTTP 500 for one informer's watch and as a watch
    # ERROR event for another's. The informers back off and recover; the
    # message is logged escaped.
    forged = "boom \x1b[31m red\n2026-01-01T00:00:00Z error forged line"
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired",
              "code": 1e300, "message": forged, "details": {"retryAfterSeconds": -1e300}}
    body = json.dumps(status)
    # -1e999 is JSON for minus infinity (cJSON reads it as -inf)
    event = json.dumps({"type": "ERROR", "object": dict(
        status, reason="InternalError",
        details={"retryAfterSeconds": -1e300})}).replace("-1e+300}}", "-1e999}}") + "\n"
    with w.attack("kube: absurd numbers and escapes in Status answers", rss_mb=60):
        fault(verb="watch", resource="endpointslices", action="respond", code=500,
              content_type="application/json", body=body, count=2)
        fault(verb="watch", resource="services", action="respond", code=200, body=event,
              end=True, count=2)
        before = {r: counts("watch", r) for r in ("endpointslices", "services")}
        restart_informers(relist=False)
        for r in ("endpointslices", "services"):
            H.cxd.wait_for(lambda: counts("watch", r) >= before[r] + 3, 20 * H.slowdown(),
                           what="%s watched again after two faulted answers" % r)
    working_again("endpointslices", "services")
    log = w.replica.log()
    check("boom" in log, "the server's message is not in the log")
    check("\x1b" not in log, "a raw ESC in the log")
    check("\n2026-01-01T00:00:00Z error forged" not in log, "a forged log line")


def case_retry_after_a_day():
    # The API server tells the read of a referenced Secret to come back in
    # a day (503, Retry-After: 86400). The read is tried again at the
    # backoff's ceiling (30 s) at the latest, not a day later: a Gateway
    # would have gone without its certificate for a day after the server
    # recovered.
    with w.attack("kube: Retry-After of a day on a referenced Secret", rss_mb=60):
        st, _ = w.api.create(secret("ra-day", b"-----BEGIN CERTIFICATE-----\n"))
        check_eq(st, 201)
        before = counts("list", "secrets")
        fault(verb="list", resource="secrets", action="fail", code=503, retry_after=86400,
              count=1)
        gw = H.cxd.gateway(H.NS, "tls-ra-day")
        gw["spec"]["tls"] = {"certificates": [{"secretRef": {"name": "ra-day"}}]}
        st, _ = w.api.create(gw)
        check_eq(st, 201)
        H.cxd.wait_for(lambda: counts("list", "secrets") >= before + 1, 20 * H.slowdown(),
                       what="the refused read")
        t0 = time.monotonic()
        H.cxd.wait_for(lambda: counts("list", "secrets") >= before + 2, 45 * H.slowdown(),
                       what="the read tried again within the 30 s ceiling")
        waited = time.monotonic() - t0
    check(waited < 45 * H.slowdown(), "the read came back after %.1f s" % waited)
    w.ks.clear_faults()
    check_eq(w.api.delete("Gateway", H.NS, "tls-ra-day")[0], 200)


def setup():
    global w, UA
    w = H.World()
    UA = user_agent()


t.case("setup", setup)
for name, fn in (("16 MiB watch events", case_huge_watch_event),
                 ("deep JSON in watches", case_deep_json),
                 ("wrong types in objects", case_wrong_types),
                 ("non-JSON watch streams", case_garbage_body),
                 ("a tenant's hundred 1 MB ConfigMaps", case_hundred_1mb_configmaps),
                 ("a huge answer for a referenced Secret", case_huge_referenced_secret),
                 ("absurd numbers and escapes in Status answers",
                  case_status_numbers_and_controls),
                 ("Retry-After of a day on a referenced Secret", case_retry_after_a_day)):
    if w is not None:
        t.case(name, fn)
if w is not None:
    w.close()
t.done()
