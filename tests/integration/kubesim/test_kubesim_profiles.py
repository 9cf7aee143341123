"""kubesim's release profiles (--emulate): /version, the WatchList feature
gate (422 with kube-apiserver's Status, or streaming lists with the gate),
bookmarks as the watch cache sends them (only once the resource moved past
the watch, with the resource's resourceVersion; etcd progress notifications
for quiet ones), and the event window bounded by time as well as count.
"""
import queue
import subprocess
import threading
import time

from ksutil import KubeSim, Tap, check, check_eq, cm
from kubesim import binary

t = Tap()
CMS = "/api/v1/namespaces/default/configmaps"
STREAM = "?watch=1&allowWatchBookmarks=true&sendInitialEvents=true" \
         "&resourceVersionMatch=NotOlderThan"


def versions_and_flags():
    for prof, minor, git in (("1.28", "28", "v1.28.15"), ("1.31", "31", "v1.31.2")):
        with KubeSim(profile=prof) as ks:
            st, v = ks.request("GET", "/version")
            check_eq((v["major"], v["minor"], v["gitVersion"]), ("1", minor, git))
            st, doc = ks.request("GET", "/openapi/v3/api/v1")
            check_eq(doc["info"]["version"], git)
    # the default is the oldest supported release
    with KubeSim(args=["--feature-gates", "WatchList=false"]) as ks:
        st, v = ks.request("GET", "/version")
        check_eq(v["minor"], "28")
    for bad in (["--emulate", "1.27"], ["--emulate", "2.0"], ["--feature-gates", "Nope=true"],
                ["--feature-gates", "WatchList=yes"], ["--bookmarks", "sometimes"]):
        p = subprocess.run([binary()] + bad, capture_output=True, text=True, timeout=10)
        check_eq(p.returncode, 2, bad)


def watchlist_gate():
    with KubeSim(profile="1.28") as ks:
        st, s = ks.request("GET", CMS + STREAM)
        check_eq(st, 422)
        check_eq(s, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                     "message": 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: '
                                'Forbidden: sendInitialEvents is forbidden for watch unless the '
                                'WatchList feature gate is enabled',
                     "reason": "Invalid",
                     "details": {"group": "meta.k8s.io", "kind": "ListOptions",
                                 "causes": [{"reason": "FieldValueForbidden",
                                             "message": "Forbidden: sendInitialEvents is "
                                                        "forbidden for watch unless the "
                                                        "WatchList feature gate is enabled",
                                             "field": "sendInitialEvents"}]},
                     "code": 422})
        # both errors when resourceVersionMatch is wrong too
        st, s = ks.request("GET", CMS + "?watch=1&sendInitialEvents=true")
        check_eq([c["field"] for c in s["details"]["causes"]],
                 ["resourceVersionMatch", "sendInitialEvents"])
        # list+watch, what clients fall back to, works
        st, lst = ks.request("GET", CMS)
        check_eq(st, 200)
        w = ks.watch(CMS + "?watch=1&allowWatchBookmarks=true&resourceVersion=" +
                     lst["metadata"]["resourceVersion"])
        check_eq(w.status, 200)
        w.close()
    with KubeSim(profile="1.30", args=["--feature-gates", "WatchList=true"]) as ks:
        ks.request("POST", CMS, cm("a"))
        w = ks.watch(CMS + STREAM)
        check_eq(w.status, 200)
        ev = w.next()
        check_eq((ev["type"], ev["object"]["metadata"]["name"]), ("ADDED", "a"))
        ev = w.next()
        check_eq(ev["object"]["metadata"]["annotations"], {"k8s.io/initial-events-end": "true"})
        w.close()


def start_reader(w):
    """Reads |w|'s events on a thread into w.q (None at the end)."""
    w.q = queue.Queue()

    def run():
        try:
            for ev in w:
                w.q.put(ev)
        except Exception:  # noqa: BLE001 - the stream was closed under the reader
            pass
        w.q.put(None)

    threading.Thread(target=run, daemon=True).start()
    return w


def next_event(w, within):
    """The next event, or None when none came within |within| seconds (or
    the stream ended)."""
    if not hasattr(w, "q"):
        start_reader(w)
    try:
        return w.q.get(timeout=within)
    except queue.Empty:
        return None


def realistic_bookmarks():
    with KubeSim(profile="1.28", args=["--bookmark-interval", "300ms"]) as ks:
        ks.request("POST", CMS, cm("a"))
        st, lst = ks.request("GET", CMS)
        rv = lst["metadata"]["resourceVersion"]
        w = ks.watch(CMS + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv)
        # a quiet resource: no bookmark, however many intervals pass, even
        # while another resource moves
        t0 = time.monotonic()
        ks.request("POST", "/api/v1/namespaces/default/secrets",
                   {"metadata": {"name": "s"}, "type": "Opaque"})
        check_eq(next_event(w, 1.5), None)
        check(time.monotonic() - t0 >= 1.4)
        # once it moved past the watch: its event, then bookmarks at its RV
        st, b = ks.request("POST", CMS, cm("b"))
        brv = b["metadata"]["resourceVersion"]
        ev = next_event(w, 2)
        check_eq((ev["type"], ev["object"]["metadata"]["resourceVersion"]), ("ADDED", brv))
        ks.request("POST", "/api/v1/namespaces/default/secrets",
                   {"metadata": {"name": "s2"}, "type": "Opaque"})
        ev = next_event(w, 2)
        check_eq(ev["type"], "BOOKMARK")
        check_eq(ev["object"]["metadata"]["resourceVersion"], brv,
                 "the resource's own RV, not the secret's")
        ev = next_event(w, 2)
        check_eq((ev["type"], ev["object"]["metadata"]["resourceVersion"]), ("BOOKMARK", brv))
        w.close()
        # a watch that started at the latest RV of the resource gets none
        w = ks.watch(CMS + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + brv)
        check_eq(next_event(w, 1.2), None)
        w.close()
        # the pre-deadline bookmark also needs the resource to have moved
        w = ks.watch(CMS + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=3"
                     "&resourceVersion=" + brv)
        t0 = time.monotonic()
        check_eq(next_event(w, 5), None, "the stream ends without a bookmark")
        check(2.5 < time.monotonic() - t0 < 4.5, "ended at the timeout")
        w.close()


def progress_notify():
    with KubeSim(profile="1.28", args=["--bookmark-interval", "300ms",
                                       "--progress-notify-interval", "1s"]) as ks:
        st, lst = ks.request("GET", CMS)
        rv = int(lst["metadata"]["resourceVersion"])
        w = ks.watch(CMS + "?watch=1&allowWatchBookmarks=true&resourceVersion=%d" % rv)
        st, sec = ks.request("POST", "/api/v1/namespaces/default/secrets",
                             {"metadata": {"name": "s"}, "type": "Opaque"})
        ev = next_event(w, 3)
        check_eq(ev["type"], "BOOKMARK", "after a progress notification")
        check_eq(ev["object"]["metadata"]["resourceVersion"],
                 sec["metadata"]["resourceVersion"], "the revision etcd notified")
        w.close()


def window_by_time():
    # 4 s: the 150 creations must all be younger than the window when the
    # idle check runs (a loaded machine makes them slow)
    with KubeSim(profile="1.28", args=["--event-window-time", "4s"]) as ks:
        st, lst = ks.request("GET", CMS)
        rv0 = lst["metadata"]["resourceVersion"]
        t0 = time.monotonic()
        for i in range(150):
            ks.request("POST", CMS, cm("c%d" % i))
        check(time.monotonic() - t0 < 4, "150 creations within the window")
        # an idle window keeps everything
        time.sleep(4.3)
        w = ks.watch(CMS + "?watch=1&resourceVersion=" + rv0)
        check_eq(w.next()["object"]["metadata"]["name"], "c0")
        w.close()
        # the next event drops what is older than 4 s, down to 100 events
        ks.request("POST", CMS, cm("late"))
        w = ks.watch(CMS + "?watch=1&resourceVersion=" + rv0)
        ev = w.next()
        check_eq((ev["type"], ev["object"]["code"]), ("ERROR", 410))
        w.close()
        st, lst = ks.request("GET", CMS)
        rv = int(lst["metadata"]["resourceVersion"])
        w = ks.watch(CMS + "?watch=1&resourceVersion=%d" % (rv - 100))
        check_eq(w.next()["object"]["metadata"]["name"], "c51", "the last 100 stay")
        w.close()
    # by count only (window time 0): everything in the count stays
    with KubeSim(profile="1.28", args=["--event-window-time", "0"]) as ks:
        st, lst = ks.request("GET", CMS)
        rv0 = lst["metadata"]["resourceVersion"]
        for i in range(150):
            ks.request("POST", CMS, cm("c%d" % i))
        time.sleep(1.1)
        ks.request("POST", CMS, cm("late"))
        w = ks.watch(CMS + "?watch=1&resourceVersion=" + rv0)
        check_eq(w.next()["object"]["metadata"]["name"], "c0")
        w.close()


def harness_default_is_compat():
    """Without a profile the harness keeps the suites' kubesim."""
    with KubeSim(args=["--bookmark-interval", "300ms"]) as ks:
        w = ks.watch(CMS + STREAM)
        check_eq(w.status, 200)
        ev = w.next()
        check_eq(ev["type"], "BOOKMARK")
        ev = next_event(w, 2)
        check_eq(ev["type"], "BOOKMARK", "periodic bookmarks on a quiet resource")
        w.close()


cases = [versions_and_flags, watchlist_gate, realistic_bookmarks, progress_notify,
         window_by_time, harness_default_is_compat]
for c in cases:
    t.case(c.__name__, c)
t.done()
