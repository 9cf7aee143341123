"""kubesim: fault injection (one case per rule action), partitions, the
audit log and the request counters of the /_sim/ admin API.

Requests are attributed by User-Agent here (kubesim runs with --allow-all
and no tokens), which is how per-replica counting works without tokens.
"""
import http.client
import json
import os
import select
import socket
import threading
import time

from ksutil import KubeSim, Tap, check, check_eq, cm

t = Tap()
audit_file = None
ks = KubeSim(args=["--too-new-wait", "0s"])
NS = "/api/v1/namespaces/default/configmaps"


def req(method, path, ua="tester", body=None, timeout=10, ctype="application/json"):
    """(status, headers, body text, seconds) for one request as user |ua|."""
    c = http.client.HTTPConnection("127.0.0.1", ks.port, timeout=timeout)
    hdrs = {"User-Agent": ua}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        hdrs["Content-Type"] = ctype
    t0 = time.monotonic()
    try:
        c.request(method, path, body=data, headers=hdrs)
        r = c.getresponse()
        txt = r.read().decode()
        return r.status, dict(r.getheaders()), txt, time.monotonic() - t0
    finally:
        c.close()


def setup():
    st, _, _, _ = req("POST", NS, body=cm("f1", {"a": "1"}))
    check_eq(st, 201)


def delay_rule():
    rule = ks.add_fault(user="slow", verb="get", resource="configmaps", name="f1", action="delay",
                        delay_ms=400, count=1)
    st, _, _, took = req("GET", NS + "/f1", ua="slow")
    check_eq(st, 200)
    check(took >= 0.38, "delayed %.3fs" % took)
    st, _, _, took = req("GET", NS + "/f1", ua="slow")
    check(took < 0.3, "count=1: second request not delayed (%.3fs)" % took)
    st, _, _, took = req("GET", NS + "/f1", ua="other")
    check(took < 0.3, "other users unaffected")
    faults = ks.admin("GET", "/faults")["faults"]
    mine = [f for f in faults if f["id"] == rule["id"]][0]
    check_eq((mine["hits"], mine["remaining"]), (1, 0))
    ks.clear_faults()


def fail_500_503_429():
    ks.add_fault(user="f", verb="list", action="fail", code=500, count=1)
    st, h, txt, _ = req("GET", NS, ua="f")
    check_eq(st, 500)
    o = json.loads(txt)
    check_eq((o["kind"], o["reason"], o["code"]), ("Status", "InternalError", 500))
    ks.add_fault(user="f", verb="list", action="fail", code=503, retry_after=2, count=1)
    st, h, txt, _ = req("GET", NS, ua="f")
    check_eq(st, 503)
    check_eq(h.get("Retry-After"), "2")
    check_eq(json.loads(txt)["reason"], "ServiceUnavailable")
    ks.add_fault(user="f", verb="update", resource="configmaps", action="fail", code=429, count=1)
    _, cur = ks.request("GET", NS + "/f1")
    st, h, txt, _ = req("PUT", NS + "/f1", ua="f", body=cur)
    check_eq(st, 429)
    check_eq(h.get("Retry-After"), "1")
    check(h.get("Content-Type", "").startswith("text/plain"))
    check_eq(txt.strip(), "Too many requests, please try again later.")
    st, _, _, _ = req("PUT", NS + "/f1", ua="f", body=cur)
    check_eq(st, 200, "count exhausted: the write goes through")
    ks.clear_faults()


def probability():
    ks.add_fault(user="p", verb="get", action="fail", code=503, probability=0.5)
    fails = 0
    n = 200
    for _ in range(n):
        st, _, _, _ = req("GET", NS + "/f1", ua="p")
        fails += st == 503
    check(50 < fails < 150, "about half fail: %d/%d" % (fails, n))
    ks.clear_faults()


def hang_rule():
    ks.add_fault(user="h", action="hang")
    t0 = time.monotonic()
    try:
        req("GET", NS + "/f1", ua="h", timeout=0.5)
        check(False, "expected a timeout")
    except (socket.timeout, TimeoutError):
        pass
    check(time.monotonic() - t0 >= 0.45)
    # the server stays responsive for others
    st, _, _, _ = req("GET", NS + "/f1", ua="x")
    check_eq(st, 200)
    ks.clear_faults()


def close_rule():
    ks.add_fault(user="c", verb="get", action="close", count=1)
    try:
        req("GET", NS + "/f1", ua="c", timeout=5)
        check(False, "expected the connection to be closed")
    except (http.client.RemoteDisconnected, ConnectionResetError, http.client.BadStatusLine):
        pass
    st, _, _, _ = req("GET", NS + "/f1", ua="c")
    check_eq(st, 200)
    ks.clear_faults()


def end_watch_rule_and_admin():
    ks.add_fault(user="w", verb="watch", action="end-watch", count=1)
    t0 = time.monotonic()
    st, _, txt, took = req("GET", NS + "?watch=1", ua="w")
    check_eq((st, txt), (200, ""), "the watch ends at once with no event")
    c = http.client.HTTPConnection("127.0.0.1", ks.port, timeout=5)
    c.request("GET", NS + "?watch=1&resourceVersion=0", headers={"User-Agent": "w"})
    r = c.getresponse()
    first = r.readline()
    check(b'"ADDED"' in first)
    out = ks.admin("POST", "/end-watches", {"user": "w"})
    check_eq(out["ended"], 1)
    rest = r.read()  # returns once the stream ended cleanly
    check_eq(rest, b"")
    c.close()
    ks.clear_faults()


def partition_and_heal():
    _, lst = ks.request("GET", NS)
    rv = lst["metadata"]["resourceVersion"]
    # a watch of the user, open before the partition
    wc = http.client.HTTPConnection("127.0.0.1", ks.port, timeout=10)
    wc.request("GET", NS + "?watch=1&resourceVersion=" + rv, headers={"User-Agent": "replica-b"})
    wr = wc.getresponse()
    ks.partition("replica-b")
    result = {}

    def blocked():
        result["r"] = req("GET", NS + "/f1", ua="replica-b", timeout=10)
    th = threading.Thread(target=blocked)
    th.start()
    time.sleep(0.3)
    check(th.is_alive(), "requests of a partitioned user hang")
    st, _, _, _ = req("GET", "/version", ua="replica-a")
    check_eq(st, 200, "others are served")
    for v in ("p1", "p2"):
        _, cur = ks.request("GET", NS + "/f1")
        cur["data"] = {"a": v}
        ks.request("PUT", NS + "/f1", cur)
    ready, _, _ = select.select([wc.sock], [], [], 0.3)
    check_eq(ready, [], "no events reach a partitioned watcher")
    ks.heal("replica-b")
    th.join(5)
    check(not th.is_alive())
    check_eq(result["r"][0], 200, "the parked request completes after the heal")
    evs = [json.loads(wr.readline()) for _ in range(2)]
    check_eq([e["object"]["data"]["a"] for e in evs], ["p1", "p2"], "missed events delivered in order")
    wc.close()


def audit_log():
    before = ks.audit()
    seq0 = before[-1]["seq"] if before else 0
    st, _, txt, _ = req("POST", NS, ua="writer-1", body=cm("aud", {"x": "1"}))
    created = json.loads(txt)
    _, cur = ks.request("GET", NS + "/aud")
    stale = json.loads(json.dumps(cur))
    cur["data"] = {"x": "2"}
    st, _, txt, _ = req("PUT", NS + "/aud", ua="writer-2", body=cur)
    updated = json.loads(txt)
    stale["data"] = {"x": "3"}
    st, _, _, _ = req("PUT", NS + "/aud", ua="writer-1", body=stale)
    check_eq(st, 409)
    st, _, _, _ = req("PUT", NS + "/aud", ua="writer-2", body=updated)  # no-op
    st, _, _, _ = req("DELETE", NS + "/aud", ua="writer-1")
    lines = ks.audit(since=seq0)
    got = [(l["user"], l["verb"], l["resource"], l["namespace"], l["name"], l["code"], l["resourceVersion"]) for l in lines]
    rv_c = created["metadata"]["resourceVersion"]
    rv_u = updated["metadata"]["resourceVersion"]
    check_eq(got[:4], [
        ("writer-1", "create", "configmaps", "default", "aud", 201, rv_c),
        ("writer-2", "update", "configmaps", "default", "aud", 200, rv_u),
        ("writer-1", "update", "configmaps", "default", "aud", 409, ""),
        ("writer-2", "update", "configmaps", "default", "aud", 200, rv_u),
    ])
    check_eq(got[4][:6], ("writer-1", "delete", "configmaps", "default", "aud", 200))
    check_eq(int(got[4][6]), int(rv_u) + 1, "the delete's RV")
    monos = [l["mono_ns"] for l in lines]
    check_eq(monos, sorted(monos), "monotonic times in order")
    seqs = [l["seq"] for l in lines]
    check_eq(seqs, list(range(seq0 + 1, seq0 + 1 + len(lines))))
    check(all(l["time"].endswith("Z") and len(l["time"]) == 27 for l in lines))
    check(not any(l["verb"] in ("get", "list", "watch") for l in ks.audit()), "reads are not audited")


def counters():
    ks.admin("DELETE", "/counters")
    for _ in range(3):
        req("GET", NS + "/f1", ua="count-a")
    req("GET", NS, ua="count-b")
    req("GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases", ua="count-b")
    cs = {(c["user"], c["verb"], c["resource"]): c["count"] for c in ks.counters()}
    check_eq(cs.get(("count-a", "get", "configmaps")), 3)
    check_eq(cs.get(("count-b", "list", "configmaps")), 1)
    check_eq(cs.get(("count-b", "list", "leases")), 1)


def audit_file_and_anonymous_user():
    path = os.path.join(ks.dir, "audit.jsonl")
    with KubeSim(args=["--audit-file", path, "--anonymous-user", "fixed-user"]) as k2:
        k2.request("POST", NS, cm("af"), headers={"User-Agent": "ignored"})
        mem = k2.audit()
        k2.stop()
        with open(path) as f:
            disk = [json.loads(l) for l in f if l.strip()]
        check_eq(disk, mem)
        check_eq(mem[0]["user"], "fixed-user", "--anonymous-user overrides the User-Agent")


def admin_is_loopback_only_and_404():
    st, _, _, _ = req("GET", "/_sim/nope")
    check_eq(st, 404)
    st, _, _, _ = req("POST", "/_sim/faults", body={"action": "explode"})
    check_eq(st, 400)


cases = [setup, delay_rule, fail_500_503_429, probability, hang_rule, close_rule,
         end_watch_rule_and_admin, partition_and_heal, audit_log, counters,
         audit_file_and_anonymous_user, admin_is_loopback_only_and_404]
try:
    for c in cases:
        t.case(c.__name__, c)
    # a hung request is still parked: shutdown must release it cleanly
    ks.add_fault(user="late", action="hang")
    hung = http.client.HTTPConnection("127.0.0.1", ks.port, timeout=5)
    hung.request("GET", NS, headers={"User-Agent": "late"})
    time.sleep(0.1)
    rc = ks.stop()
    hung.close()
    t.case("clean shutdown with parked requests", lambda: check_eq(rc, 0, ks.log()))
finally:
    ks.close()
t.done()
