"""Hostile delta xDS clients (DeltaAggregatedResources) against a live
replica (tests/hostile/hostilelib.py): the delta method shares the SotW
stream's decoding bounds, name limits, memory budget and NACK handling
(controlplane/xds/xds_sub.c); each case shows that it does, on the wire.
After each, the harness asserts the replica is alive, its peak RSS stayed
under the stated bound and a legitimate proxy is still served.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostilelib as H  # noqa: E402
from hostilelib import check, check_eq  # noqa: E402

t = H.Tap()
w = None


def delta(reqs, **kw):
    return H.grpc_call(w.replica.xds, reqs, path=H.DELTA_PATH, **kw)


def legit_node(node_id):
    return H.node(node_id, gateway=H.LEGIT_GW)


def nested_value(depth):
    """google.protobuf.Value nesting |depth| ListValues, outside-in."""
    sizes = [0]
    for _ in range(depth):
        lv = 1 + len(H.varint(sizes[-1])) + sizes[-1]
        sizes.append(1 + len(H.varint(lv)) + lv)
    parts = []
    for i in range(depth, 0, -1):
        inner = sizes[i - 1]
        lv = 1 + len(H.varint(inner)) + inner
        parts.append(b"\x32" + H.varint(lv) + b"\x0a" + H.varint(inner))
    return b"".join(parts)


def budget_given_back():
    H.cxd.wait_for(lambda: w.metric("coxswain_xds_memory_budget_used_bytes") < (1 << 20), 10,
                   what="the memory budget given back")


def case_nesting():
    """The 155 KB node whose metadata nests 20,000 ListValues, as a delta
    request: refused on the wire like a SotW one, naming the limit."""
    md = H.ld(1, H.ld(1, "deep") + H.ld(2, nested_value(20000)))
    req = H.delta_request(H.CDS, sub=["*"], node_bytes=H.node("deep", metadata=md))
    check(140000 < len(req) < 170000, "request is %d bytes" % len(req))
    with w.attack("delta-nesting-20000", rss_mb=80):
        before = w.metric("coxswain_xds_refused_total", reason="decode_bounds")
        code, details, _ = delta([req], wait_close=True)
        check_eq(code, "INVALID_ARGUMENT", details)
        check("nest" in details and "32" in details, "message names the limit: %r" % details)
        check(w.metric("coxswain_xds_refused_total", reason="decode_bounds") >= before + 1,
              "counted")


def case_too_many_names():
    """100,000 names subscribed in one request, in reverse order, then
    unsubscribed in one request: each list is sorted and merged once (one
    insertion per name moved the whole array each time: seconds of the main
    loop); the stream keeps working. 100,001 names, in one request or two:
    RESOURCE_EXHAUSTED naming the limit, the names given back."""
    names = ["n%06d" % i for i in range(100001)]
    rev = names[:100000][::-1]
    with w.attack("delta-too-many-names", rss_mb=120):
        before = w.metric("coxswain_xds_refused_total", reason="names")
        code, details, resps = delta(
            [H.delta_request(H.EDS, sub=rev, node_bytes=legit_node("m0")),
             H.delta_request(H.EDS, nonce="1"),
             H.delta_request(H.EDS, unsub=rev),
             H.delta_request(H.EDS, sub=["after"])], want=2, timeout=30)
        check_eq(code, "OK", details)
        _, _, _, removed = H.delta_response_info(resps[0])
        check_eq(len(removed), 100000, "100,000 names said absent")
        _, _, _, removed = H.delta_response_info(resps[-1])
        check_eq(removed, ["after"], "after unsubscribing them, only the new name")
        code, details, _ = delta([H.delta_request(H.EDS, sub=names, node_bytes=legit_node("m1"))],
                                 wait_close=True, timeout=30)
        check_eq(code, "RESOURCE_EXHAUSTED", details)
        check("100000" in details, "message names the limit: %r" % details)
        code, details, _ = delta([H.delta_request(H.EDS, sub=names[:50000],
                                                  node_bytes=legit_node("m2")),
                                  H.delta_request(H.EDS, sub=names[50000:])],
                                 wait_close=True, timeout=30)
        check_eq(code, "RESOURCE_EXHAUSTED", details)
        check(w.metric("coxswain_xds_refused_total", reason="names") >= before + 2, "counted")
    budget_given_back()


def case_initial_versions_flood():
    """A wildcard CDS stream claiming to hold 100,000 Clusters that do not
    exist (initial_resource_versions, three elements each): refused before
    decoding by the element bound, naming it. 60,000 claims decode: they
    are charged to the memory budget, answered with their removal, and
    every byte comes back when the stream goes."""
    with w.attack("delta-initial-versions-flood", rss_mb=160):
        held = [("x%09d" % i, "0" * 16) for i in range(100000)]
        req = H.delta_request(H.CDS, sub=["*"], initial=held, node_bytes=legit_node("claims"))
        check(len(req) < (4 << 20), "request is %d bytes" % len(req))
        code, details, _ = delta([req], wait_close=True, timeout=10)
        check_eq(code, "INVALID_ARGUMENT", details)
        check("200000" in details, "message names the limit: %r" % details)
        held = held[:60000]
        req = H.delta_request(H.CDS, sub=["*"], initial=held, node_bytes=legit_node("claims"))
        code, details, resps = delta([req], timeout=10)
        check_eq(code, "OK", details)
        _, _, res, removed = H.delta_response_info(resps[0])
        check_eq(len(removed), 60000, "every claimed Cluster said removed")
        check(not any(n.startswith("x") for n, _ in res), "none of them sent")
    budget_given_back()


def case_nack_flood():
    """A delta stream NACKs one response 2,000 times with control characters
    in the text: counted once, no raw ESC or forged line in the log."""
    esc = "line\n2026-01-01T00:00:00Z error daemon: forged\x1b[2J" + "A" * 900
    with w.attack("delta-nack-flood", rss_mb=80):
        first = H.delta_request(H.LDS, sub=["*"], node_bytes=legit_node("delta-nacker"))
        code, details, resps = delta([first])
        check_eq(code, "OK", details)
        _, nonce, res, _ = H.delta_response_info(resps[0])
        check(any(n == H.LEGIT_LISTENER for n, _ in res), "listeners %r" % res)
        before = w.metric("coxswain_xds_nacks_total")
        nack = H.delta_request(H.LDS, nonce=nonce, error=(3, esc))
        delta([first] + [nack] * 2000, want=2, timeout=1.5)
        after = w.metric("coxswain_xds_nacks_total")
        check(after - before <= 1, "NACKs counted %d" % (after - before))
        log = w.replica.log()
        check("\x1b" not in log, "no raw ESC in the log")
        check("\nforged" not in log and "\n2026-01-01T00:00:00Z error" not in log,
              "no forged line in the log")
        text = json.dumps(w.status("Gateway", "legit"))
        check("\\u001b" not in text, "no ESC in the status: %s" % text[:300])


def case_subscription_churn():
    """One stream subscribes 500 new names and unsubscribes the previous
    500, 400 times (200,000 names through one stream), then ACKs the first
    response: the next response speaks of the last 500 names only (the
    others are forgotten); the budget comes back when the stream goes."""
    reqs, prev = [], []
    for r in range(400):
        cur = ["churn-%d-%d-%s" % (r, i, "y" * 100) for i in range(500)]
        reqs.append(H.delta_request(H.EDS, sub=cur, unsub=prev,
                                    node_bytes=legit_node("churner") if r == 0 else None))
        prev = cur
    reqs.append(H.delta_request(H.EDS, nonce="1"))  # nonces count from 1 on each stream
    # 150 MB (600 under ASan, whose quarantine keeps up to 256 MB of the
    # churned names' freed memory resident)
    with w.attack("delta-subscription-churn", rss_mb=150):
        code, details, resps = delta(reqs, want=2, timeout=30)
        check_eq(code, "OK", details)
        check_eq(len(resps), 2)
        _, _, res, removed = H.delta_response_info(resps[1])
        check(not res, "no such Endpoints exist: %r" % res[:3])
        check_eq(sorted(removed), sorted(prev), "said absent: the last 500 names only")
    budget_given_back()


def setup():
    global w
    w = H.World()


t.case("setup", setup)
for name, fn in (("delta: 20,000 ListValues in node.metadata", case_nesting),
                 ("delta: 100,001 subscribed names", case_too_many_names),
                 ("delta: 100,000 claimed initial versions", case_initial_versions_flood),
                 ("delta: NACK flood", case_nack_flood),
                 ("delta: subscription churn", case_subscription_churn)):
    if w is not None:
        t.case(name, fn)
if w is not None:
    w.close()
t.done()
