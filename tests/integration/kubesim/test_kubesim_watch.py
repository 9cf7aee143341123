"""kubesim: watch framing and semantics, paging, event window.

Framing golden: one JSON object per line, chunked, Content-Type
application/json. Semantics: synthetic ADDED for RV ""/"0", events strictly
after RV=N, selector transitions, bookmarks (interval and before the
deadline), streaming lists, 410 for RVs older than the window, compaction,
paging with continue tokens and their expiry.
"""
import http.client
import json
import threading
import time

from ksutil import KubeSim, Tap, check, check_eq, cm, golden, normalize

# A short bookmark interval and a small window so the tests stay fast.
ks = KubeSim(args=["--bookmark-interval", "300ms", "--event-window", "50", "--too-new-wait", "1s"])
t = Tap()
NS = "/api/v1/namespaces/default/configmaps"


def rv_of(o):
    return int(o["metadata"]["resourceVersion"])


def put(name, data=None, labels=None):
    st, cur = ks.request("GET", NS + "/" + name)
    if st == 404:
        st, o = ks.request("POST", NS, cm(name, data or {}, labels))
        check_eq(st, 201)
        return o
    cur["data"] = data or {}
    if labels is not None:
        cur["metadata"]["labels"] = labels
    st, o = ks.request("PUT", NS + "/" + name, cur)
    check_eq(st, 200)
    return o


def events(path, n, timeout=5):
    """Reads up to n events (or until the stream ends)."""
    w = ks.watch(path, timeout)
    out = []
    while len(out) < n:
        ev = w.next()
        if ev is None:
            break
        out.append(ev)
    w.close()
    return out


def framing_golden():
    a = put("frame-a", {"x": "1"})
    w = ks.watch(NS + "?watch=1&resourceVersion=%d&timeoutSeconds=1" % rv_of(a))
    check_eq(w.status, 200)
    check_eq(w.headers.get("Content-Type"), "application/json")
    check_eq(w.headers.get("Transfer-Encoding"), "chunked")
    put("frame-a", {"x": "2"})
    ks.request("DELETE", NS + "/frame-a")
    evs = list(w)
    w.close()
    check_eq([e["type"] for e in evs], ["MODIFIED", "DELETED"])
    text = w.raw.decode()
    check(text.endswith("\n") and text.count("\n") == 2, "one line per event")
    # RVs are stable within the test; mask them relative to the first.
    base = rv_of(a)
    text = text.replace('"resourceVersion":"%d"' % (base + 1), '"resourceVersion":"<rv+1>"')
    text = text.replace('"resourceVersion":"%d"' % (base + 2), '"resourceVersion":"<rv+2>"')
    golden("watch_framing.jsonl", text)
    deleted = evs[1]["object"]
    check_eq(rv_of(deleted), base + 2, "DELETED carries the deletion RV")
    check_eq(deleted["data"], {"x": "2"}, "DELETED carries the last state")


def synthetic_added():
    put("syn-1")
    put("syn-2")
    st, lst = ks.request("GET", NS)
    for rv in ("", "0"):
        q = "?watch=true&timeoutSeconds=5" + ("&resourceVersion=" + rv if rv else "")
        evs = events(NS + q, len(lst["items"]))
        names = [e["object"]["metadata"]["name"] for e in evs if e["type"] == "ADDED"]
        check("syn-1" in names and "syn-2" in names, "rv=%r: %s" % (rv, names))
        check(all(e["type"] == "ADDED" for e in evs), "only ADDED for an idle stream")


def strictly_after_n():
    a = put("after", {"v": "1"})
    b = put("after", {"v": "2"})
    c = put("after", {"v": "3"})
    evs = events(NS + "?watch=1&fieldSelector=metadata.name%%3Dafter&resourceVersion=%d&timeoutSeconds=5" % rv_of(a), 2)
    check_eq([rv_of(e["object"]) for e in evs], [rv_of(b), rv_of(c)])
    check_eq([e["type"] for e in evs], ["MODIFIED", "MODIFIED"])


def selector_transitions():
    put("tr", {"v": "0"}, {"app": "no"})
    st, lst = ks.request("GET", NS)
    w = ks.watch(NS + "?watch=1&labelSelector=app%%3Dyes&resourceVersion=%s&timeoutSeconds=2" % lst["metadata"]["resourceVersion"])
    put("tr", {"v": "1"}, {"app": "yes"})   # starts matching -> ADDED
    put("tr", {"v": "2"}, {"app": "yes"})   # MODIFIED
    last = put("tr", {"v": "3"}, {"app": "no"})    # stops matching -> DELETED
    put("tr", {"v": "4"}, {"app": "no"})    # invisible
    evs = []
    for _ in range(3):
        evs.append(w.next())
    w.close()
    check_eq([e["type"] for e in evs], ["ADDED", "MODIFIED", "DELETED"])
    gone = evs[2]["object"]
    check_eq(gone["data"], {"v": "2"}, "DELETED shows the old object")
    check_eq(gone["metadata"]["labels"], {"app": "yes"})
    check_eq(rv_of(gone), rv_of(last), "with the new RV")


def bookmarks():
    a = put("bm")
    t0 = time.monotonic()
    evs = events(NS + "?watch=1&allowWatchBookmarks=true&resourceVersion=%d&timeoutSeconds=3" % rv_of(a), 50, timeout=10)
    took = time.monotonic() - t0
    bms = [e for e in evs if e["type"] == "BOOKMARK"]
    check(len(bms) >= 3, "bookmarks every 300ms: %d in %.1fs" % (len(bms), took))
    check(2.5 < took < 6, "stream ended at timeoutSeconds: %.2f" % took)
    b = bms[0]["object"]
    check_eq(b["kind"], "ConfigMap")
    check_eq(b["apiVersion"], "v1")
    check(rv_of(b) >= rv_of(a))
    # no bookmarks unless asked
    evs = events(NS + "?watch=1&resourceVersion=%d&timeoutSeconds=1" % rv_of(a), 50)
    check_eq([e for e in evs if e["type"] == "BOOKMARK"], [])


def bookmark_before_deadline():
    # Interval is long here (a second server), so the only bookmark is the
    # one 2 s before the deadline.
    with KubeSim(args=["--bookmark-interval", "1h"]) as k2:
        st, lst = k2.request("GET", NS)
        t0 = time.monotonic()
        w = k2.watch(NS + "?watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=3" % lst["metadata"]["resourceVersion"], 10)
        ev = w.next()
        at = time.monotonic() - t0
        end = w.next()
        w.close()
        check_eq(ev["type"], "BOOKMARK")
        check(0.7 < at < 2.0, "bookmark ~1s after start (deadline - 2s): %.2f" % at)
        check(end is None, "stream ends after")


def streaming_list():
    put("sl-1")
    put("sl-2")
    w = ks.watch(NS + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=2")
    evs = []
    while True:
        ev = w.next()
        evs.append(ev)
        if ev["type"] == "BOOKMARK":
            break
    later = put("sl-3")
    nxt = w.next()
    while nxt["type"] == "BOOKMARK":
        nxt = w.next()
    w.close()
    check(all(e["type"] == "ADDED" for e in evs[:-1]))
    names = [e["object"]["metadata"]["name"] for e in evs[:-1]]
    check("sl-1" in names and "sl-2" in names)
    check_eq(evs[-1]["object"]["metadata"].get("annotations"), {"k8s.io/initial-events-end": "true"})
    check_eq(nxt["type"], "ADDED")
    check_eq(rv_of(nxt["object"]), rv_of(later))
    st, err = ks.request("GET", NS + "?watch=1&sendInitialEvents=true")
    check_eq(st, 422, "sendInitialEvents needs resourceVersionMatch=NotOlderThan")


def too_old_rv_gets_410_event():
    first = put("old-0")
    for i in range(60):  # window is 50 events
        put("old-%d" % (i % 5), {"i": str(i)})
    w = ks.watch(NS + "?watch=1&resourceVersion=%d" % rv_of(first))
    check_eq(w.status, 200, "HTTP 200, then the error as an event")
    ev = w.next()
    end = w.next()
    w.close()
    check_eq(ev["type"], "ERROR")
    st = ev["object"]
    check_eq((st["kind"], st["status"], st["reason"], st["code"]), ("Status", "Failure", "Expired", 410))
    check(st["message"].startswith("too old resource version: %d (" % rv_of(first)), st["message"])
    check(end is None, "stream ends after the error")
    golden("watch_410.jsonl", normalize(w.raw.decode()).replace(str(rv_of(first)), "<rv>").replace(
        st["message"].split("(")[1].rstrip(")"), "<oldest>"))


def compaction():
    a = put("comp")
    put("comp", {"x": "1"})
    ks.compact()
    ev = events(NS + "?watch=1&resourceVersion=%d" % rv_of(a), 2)
    check_eq(ev[0]["type"], "ERROR")
    check_eq(ev[0]["object"]["code"], 410)
    # a watch from the compaction RV itself still works
    st, lst = ks.request("GET", NS)
    ev = events(NS + "?watch=1&timeoutSeconds=1&resourceVersion=" + lst["metadata"]["resourceVersion"], 1)
    check_eq(ev, [])


def too_new_watch_waits_then_serves():
    st, lst = ks.request("GET", NS)
    want = int(lst["metadata"]["resourceVersion"]) + 1
    result = {}

    def run():
        result["evs"] = events(NS + "?watch=1&timeoutSeconds=1&resourceVersion=%d" % want, 1, timeout=10)
    th = threading.Thread(target=run)
    th.start()
    time.sleep(0.2)
    put("arrives")  # RV want
    put("arrives", {"y": "1"})  # want+1: the first event after want
    th.join()
    evs = result["evs"]
    check_eq(len(evs), 1)
    check_eq(rv_of(evs[0]["object"]), want + 1)
    t0 = time.monotonic()
    st, err = ks.request("GET", NS + "?resourceVersion=%d" % (want + 1000))
    check_eq(st, 504)
    check(0.8 < time.monotonic() - t0 < 3, "waited --too-new-wait")


def paging():
    for i in range(12):
        ks.request("POST", "/api/v1/namespaces/kube-public/configmaps", cm("pg-%02d" % i, ns="kube-public"))
    path = "/api/v1/namespaces/kube-public/configmaps?limit=5"
    st, p1 = ks.request("GET", path)
    check_eq(len(p1["items"]), 5)
    check_eq(p1["metadata"]["remainingItemCount"], 7)
    tok = p1["metadata"]["continue"]
    # a change after page 1 is not visible on later pages (pinned RV)
    st, ch = ks.request("GET", "/api/v1/namespaces/kube-public/configmaps/pg-07")
    ch["data"] = {"changed": "yes"}
    ks.request("PUT", "/api/v1/namespaces/kube-public/configmaps/pg-07", ch)
    ks.request("DELETE", "/api/v1/namespaces/kube-public/configmaps/pg-08")
    ks.request("POST", "/api/v1/namespaces/kube-public/configmaps", cm("pg-05a", ns="kube-public"))
    st, p2 = ks.request("GET", path + "&continue=" + tok)
    check_eq(st, 200)
    names = [i["metadata"]["name"] for i in p2["items"]]
    check_eq(names, ["pg-05", "pg-06", "pg-07", "pg-08", "pg-09"], "consistent snapshot")
    check_eq(p2["items"][2].get("data"), None, "pg-07 as of page 1")
    check_eq(p2["metadata"]["resourceVersion"], p1["metadata"]["resourceVersion"])
    st, p3 = ks.request("GET", path + "&continue=" + p2["metadata"]["continue"])
    check_eq([i["metadata"]["name"] for i in p3["items"]], ["pg-10", "pg-11"])
    check("continue" not in p3["metadata"])
    st, err = ks.request("GET", path + "&continue=" + tok + "&resourceVersion=5")
    check_eq(st, 400)
    st, err = ks.request("GET", path + "&continue=garbage")
    check_eq(st, 400)
    # resourceVersion=0 is served from the cache: limit is not honoured
    st, all0 = ks.request("GET", path + "&resourceVersion=0")
    check(len(all0["items"]) == 12 and "continue" not in all0["metadata"])


def expired_continue_token():
    st, p1 = ks.request("GET", "/api/v1/namespaces/kube-public/configmaps?limit=3")
    put("bump")  # history after page 1, then compaction drops it
    ks.compact()
    st, err = ks.request("GET", "/api/v1/namespaces/kube-public/configmaps?limit=3&continue=" + p1["metadata"]["continue"])
    check_eq(st, 410)
    check_eq(err["reason"], "Expired")
    fresh = err["metadata"].get("continue")
    check(fresh, "a fresh (inconsistent) token is offered")
    st, rest = ks.request("GET", "/api/v1/namespaces/kube-public/configmaps?limit=100&continue=" + fresh)
    check_eq(st, 200)
    check_eq(rest["items"][0]["metadata"]["name"], p1["items"][-1]["metadata"]["name"][:-2] + "%02d" % (int(p1["items"][-1]["metadata"]["name"][-2:]) + 1))


def exact_rv_list():
    a = put("ex", {"v": "1"})
    put("ex", {"v": "2"})
    st, old = ks.request("GET", NS + "?resourceVersion=%d&resourceVersionMatch=Exact&fieldSelector=metadata.name%%3Dex" % rv_of(a))
    check_eq(st, 200)
    check_eq(old["items"][0]["data"], {"v": "1"})
    check_eq(old["metadata"]["resourceVersion"], str(rv_of(a)))
    ks.compact()
    st, err = ks.request("GET", NS + "?resourceVersion=%d&resourceVersionMatch=Exact" % rv_of(a))
    check_eq(st, 410)
    check_eq(err["message"], "The resourceVersion for the provided list is too old.")


def client_disconnect_frees_watch():
    before = ks.admin("GET", "/state")["watches"]
    conns = []
    for _ in range(5):
        c = http.client.HTTPConnection("127.0.0.1", ks.port, timeout=5)
        c.request("GET", NS + "?watch=1")
        c.getresponse()
        conns.append(c)
    time.sleep(0.1)
    check_eq(ks.admin("GET", "/state")["watches"], before + 5)
    for c in conns:
        c.close()
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and ks.admin("GET", "/state")["watches"] != before:
        time.sleep(0.02)
    check_eq(ks.admin("GET", "/state")["watches"], before)
    put("after-close")  # fan-out after the close must not touch freed watchers


def single_object_watch_path():
    a = put("one")
    w = ks.watch(NS + "/one?watch=1&resourceVersion=%d&timeoutSeconds=1" % rv_of(a))
    put("other")
    put("one", {"k": "v"})
    evs = list(w)
    w.close()
    check_eq([e["object"]["metadata"]["name"] for e in evs], ["one"])


def slow_consumer_is_disconnected():
    with KubeSim(args=["--max-watch-buffer", "200000"]) as k2:
        st, lst = k2.request("GET", NS)
        c = http.client.HTTPConnection("127.0.0.1", k2.port, timeout=5)
        c.request("GET", NS + "?watch=1&resourceVersion=" + lst["metadata"]["resourceVersion"])
        r = c.getresponse()  # never read from again: the socket buffers fill up
        check_eq(k2.admin("GET", "/state")["watches"], 1)
        big = "x" * 60000
        for i in range(200):
            st, _ = k2.request("POST", NS, cm("big-%d" % i, {"v": big}))
            check_eq(st, 201)
            if k2.admin("GET", "/state")["watches"] == 0:
                break
        check_eq(k2.admin("GET", "/state")["watches"], 0, "the lagging watcher was ended")
        c.close()
        check_eq(k2.stop(), 0)


cases = [framing_golden, synthetic_added, strictly_after_n, selector_transitions, bookmarks,
         bookmark_before_deadline, streaming_list, too_old_rv_gets_410_event, compaction,
         too_new_watch_waits_then_serves, paging, expired_continue_token, exact_rv_list,
         client_disconnect_frees_watch, single_object_watch_path, slow_consumer_is_disconnected]
try:
    for c in cases:
        t.case(c.__name__, c)
    w = ks.watch(NS + "?watch=1")  # open watch during shutdown must not leak
    rc = ks.stop()
    w.close()
    t.case("clean shutdown with an open watch", lambda: check_eq(rc, 0, ks.log()))
finally:
    ks.close()
t.done()
