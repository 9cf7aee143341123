#!/usr/bin/env python3
"""A quiet soak: the daemon's informers against kubesim emulating 1.28
(WatchList off, bookmarks only once a resource moved, HTTP/2 over TLS), with
nothing changing for SOAK_SECONDS (default 600).

A real 1.28-1.31 cluster sends a quiet resource's watchers no bookmark
(unless etcd progress notifications are on), so an informer must not take
the silence for a stalled watch: each watch should end only when its
timeoutSeconds (the daemon's 300 s) runs out. The soak counts, per informer,
the watch restarts (coxswain_informer_watch_restarts_total), the re-lists,
and the watch requests kubesim served to the daemon, and passes when no
informer restarted more than once per timeoutSeconds window.

    make soak                     # or: bench/soak_informers.py
    SOAK_SECONDS=120 make soak    # shorter

Prints one JSON object (the numbers) and exits 1 on a failed bound.
"""
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
import objects as O  # noqa: E402
import replicas as R  # noqa: E402

WATCH_TIMEOUT_S = 300  # kube_informer.c's default timeoutSeconds


def restarts(rep, name):
    out = {}
    for (metric, labels), v in rep.metrics().items():
        if metric == name:
            out[dict(labels).get("resource", "")] = v
    return out


def main():
    seconds = float(os.environ.get("SOAK_SECONDS", "600"))
    ks = O.start_kubesim(**O.AS_1_28)
    rep = None
    try:
        api = O.Api(ks)
        for n in ("app", "coxswain-system"):
            O.namespace(api, n)
        for o in (O.gateway("app", "gw"), O.upstream_static("app", "up", [("10.0.0.1", 8080)]),
                  O.virtual_service("app", "vs", ["app.example"], [O.route("/", "up")])):
            st, out = api.create(o)
            if st != 201:
                raise SystemExit("create %s: %s %s" % (o["kind"], st, out))
        # Default informer timings: no --kube-api-* or stall flags.
        rep = R.Replica(ks, "soak", lease="15s", renew="10s", retry="2s")
        R.wait_for(rep.ready, 60, what="the replica ready")
        R.wait_for(lambda: O.status_converged(api, "app")[0], 60, what="statuses")
        time.sleep(5)  # the writes of the start settle
        r0 = restarts(rep, "coxswain_informer_watch_restarts_total")
        l0 = restarts(rep, "coxswain_informer_relists_total")
        c0 = {(c["user"], c["verb"], c["resource"]): c["count"] for c in ks.counters()}
        t0 = time.monotonic()
        time.sleep(seconds)
        took = time.monotonic() - t0
        r1 = restarts(rep, "coxswain_informer_watch_restarts_total")
        l1 = restarts(rep, "coxswain_informer_relists_total")
        c1 = {(c["user"], c["verb"], c["resource"]): c["count"] for c in ks.counters()}
        windows = math.ceil(took / WATCH_TIMEOUT_S)
        per = {res: {"restarts": int(r1.get(res, 0) - r0.get(res, 0)),
                     "relists": int(l1.get(res, 0) - l0.get(res, 0))} for res in r1}
        watches = {}
        for (user, verb, res), n in c1.items():
            if verb == "watch" and user.startswith("coxswain"):
                watches[res] = watches.get(res, 0) + n - c0.get((user, verb, res), 0)
        worst = max((v["restarts"] for v in per.values()), default=0)
        ok = worst <= windows and all(v["relists"] == 0 for v in per.values())
        print(json.dumps({"seconds": round(took, 1), "timeoutSeconds": WATCH_TIMEOUT_S,
                          "windows": windows, "max_restarts_per_informer": worst,
                          "informers": per, "watch_requests_served": watches,
                          "kubesim": "1.28, WatchList off, realistic bookmarks, HTTP/2",
                          "pass": ok}, indent=1, sort_keys=True))
        return 0 if ok else 1
    finally:
        if rep:
            rep.stop()
        ks.close()


if __name__ == "__main__":
    sys.exit(main())
