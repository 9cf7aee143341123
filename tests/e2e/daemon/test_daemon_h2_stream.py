"""One watch stream of a shared HTTP/2 connection fails while the others
flow: a replica on kubesim emulating 1.28 over h2 (objects.AS_1_28: TLS,
ALPN h2, WatchList off, bookmarks only when a resource moved), every
informer's watch multiplexed over one connection.

- RST_STREAM: the VirtualServices watch is ended (kubesim's end-watches)
  and each of the next watches of VirtualServices is reset
  (RST_STREAM INTERNAL_ERROR) 300 ms after it starts, five times in a row.
  The informer resumes from its resourceVersion each time, after a growing
  backoff: exactly 6 watch requests for VirtualServices, 0 lists, 0
  re-lists; no other
  informer restarts; the connection stays (nothing abandoned, one
  connection); the replica stays ready, an Upstream changed meanwhile is
  written at once, the VirtualService changed meanwhile once the watch is
  back.
- Stall: the VirtualServices watch resumes into a stream that sends
  nothing (not even bookmarks) while the connection's other streams flow.
  Over HTTP/2 silence is not a stall (a 1.28 server sends a quiet resource
  nothing), so the stream is ended by its timeoutSeconds
  (--kube-api-watch-timeout) and resumed from its resourceVersion: one more
  watch, 0 lists, 0 re-lists; the change made during the stall arrives
  then; the Upstream changed during the stall is written at once; the
  replica stays ready throughout.

Counts come from kubesim (/_sim/counters: requests by user, verb and
resource; fault rule hits) and from the replica's metrics.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), "tests", "lib"))
import objects as O  # noqa: E402
import replicas as R  # noqa: E402
from audit import user_agent  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

SLOW = 3.0 if R.sanitized() else 1.0
NS = "app"
WATCH_TIMEOUT_S = 12
RESETS = 5
RESET_AFTER_MS = 300
IDENT = "h2s"


class World:
    ks = api = rep = user = None


W = World()


def counters():
    """{(verb, resource): count} of the replica's main client."""
    out = {}
    for c in W.ks.admin("GET", "/counters")["counters"]:
        if c["user"] == W.user:
            out[(c["verb"], c["resource"])] = out.get((c["verb"], c["resource"]), 0) + c["count"]
    return out


def delta(after, before):
    keys = set(after) | set(before)
    return {k: after.get(k, 0) - before.get(k, 0) for k in keys if after.get(k, 0) !=
            before.get(k, 0)}


def by_resource(name):
    """{resource label: value} of an informer metric."""
    out = {}
    for (n, labels), v in W.rep.metrics().items():
        if n == name:
            out[dict(labels).get("resource")] = v
    return out


def vs_key(d):
    return [k for k in d if k and k.startswith("virtualservices")]


def h2_conns():
    return [c for c in W.ks.admin("GET", "/h2/connections")["connections"]
            if c["user"] == W.user]


def rule_hits(rid):
    for r in W.ks.admin("GET", "/faults")["faults"]:
        if r["id"] == rid:
            return r["hits"]
    return None


def status_of(kind, name):
    st, o = W.api.get(kind, NS, name)
    if st != 200:
        return None, None
    return o["metadata"].get("generation"), (o.get("status") or {}).get("observedGeneration")


def written(kind, name):
    gen, obs = status_of(kind, name)
    return gen is not None and gen == obs


class ReadyWatch(threading.Thread):
    """Polls /readyz every 100 ms; counts the answers that were not 200."""

    def __init__(self):
        super().__init__(daemon=True)
        self.running = True
        self.polls = 0
        self.not_ready = 0

    def run(self):
        while self.running:
            self.polls += 1
            if not W.rep.ready():
                self.not_ready += 1
            time.sleep(0.1)

    def stop(self):
        self.running = False
        self.join(5)


def snapshot():
    return {"counters": counters(), "restarts": by_resource("coxswain_informer_watch_restarts_total"),
            "relists": by_resource("coxswain_informer_relists_total"),
            "abandoned": W.rep.metric("coxswain_kube_connections_abandoned_total",
                                      client="coxswain"),
            "t": time.monotonic()}


def others_bounded(before, after, what):
    """Every informer but VirtualServices': no list, no re-list, and no
    watch restart beyond its own timeoutSeconds resumptions."""
    secs = after["t"] - before["t"]
    allowed = int(secs / WATCH_TIMEOUT_S) + 1
    d = delta(after["counters"], before["counters"])
    for (verb, res), n in d.items():
        if res == "virtualservices" or verb != "watch":
            continue
        check(n <= allowed, "%s: %d watches of %s in %.1f s (timeout %d s)" % (
            what, n, res, secs, WATCH_TIMEOUT_S))
    for res, v in after["restarts"].items():
        if res and not res.startswith("virtualservices"):
            check(v - before["restarts"].get(res, 0) <= allowed, "%s: restarts of %s" % (what, res))
    for res, v in after["relists"].items():
        check_eq(v - before["relists"].get(res, 0), 0, "%s: re-lists of %s" % (what, res))
    lists = {k: n for k, n in d.items() if k[0] == "list"}
    check_eq(lists, {}, "%s: lists" % what)


def setup():
    W.ks = O.start_kubesim([], **O.AS_1_28)
    W.api = O.Api(W.ks)
    for n in (NS, "coxswain-system"):
        O.namespace(W.api, n)
    for o in [O.gateway(NS, "gw"), O.upstream_static(NS, "up", [("10.0.0.1", 80)]),
              O.upstream_static(NS, "up2", [("10.0.0.2", 80)])] + [
            O.virtual_service(NS, "vs%d" % i, ["vs%d.test" % i], [O.route("/", "up")])
            for i in range(5)]:
        st, out = W.api.create(o)
        check(st == 201, "create %s: %s %s" % (o["kind"], st, out))
    W.rep = R.Replica(W.ks, IDENT, extra=[
        "--kube-api-watch-timeout", "%ds" % WATCH_TIMEOUT_S,
        "--kube-api-read-idle-timeout", "3s", "--kube-api-ping-timeout", "%ds" % int(5 * SLOW)])
    W.user = user_agent(IDENT, "coxswain")
    R.wait_for(W.rep.ready, 30 * SLOW, what="ready")
    R.wait_for(lambda: O.status_converged(W.api, NS)[0], 30 * SLOW, what="statuses")
    conns = h2_conns()
    check_eq(len(conns), 1, "one HTTP/2 connection for every informer: %r" % conns)


def patch_vs(name, prefix):
    st, out = W.api.patch("VirtualService", NS, name,
                          {"spec": {"routes": [O.route(prefix, "up")]}})
    check(st == 200, "patch %s: %s %s" % (name, st, out))


def patch_up(name, port):
    st, out = W.api.patch("Upstream", NS, name,
                          {"spec": {"static": {"hosts": [{"address": "10.0.0.2", "port": port}]}}})
    check(st == 200, "patch %s: %s %s" % (name, st, out))


def case_reset():
    before = snapshot()
    conn_before = h2_conns()
    rid = W.ks.admin("POST", "/faults", {"user": W.user, "verb": "watch",
                                         "resource": "virtualservices", "action": "reset",
                                         "delay_ms": RESET_AFTER_MS, "count": RESETS})["id"]
    rw = ReadyWatch()
    rw.start()
    try:
        t0 = time.monotonic()
        W.ks.admin("POST", "/end-watches", {"user": W.user, "resource": "virtualservices"})
        hits = [0]
        times = []

        def poll():
            h = rule_hits(rid)
            if h is not None and h > hits[0]:
                times.extend([time.monotonic()] * (h - hits[0]))
                hits[0] = h
            return h == RESETS
        patch_vs("vs1", "/during-reset")
        patch_up("up2", 81)
        t_up = time.monotonic()
        R.wait_for(lambda: written("Upstream", "up2"), 5 * SLOW, step=0.05,
                   what="the Upstream changed during the resets written")
        up_ms = (time.monotonic() - t_up) * 1000
        R.wait_for(poll, 20 * SLOW, step=0.02, what="%d resets" % RESETS)
        # (each reset watch ran 300 ms: the change may come through one)
        R.wait_for(lambda: written("VirtualService", "vs1"), 15 * SLOW, step=0.05,
                   what="the VirtualService changed during the resets written")
        # the watch after the last reset holds, and carries a new change
        R.wait_for(lambda: counters().get(("watch", "virtualservices"), 0) -
                   before["counters"].get(("watch", "virtualservices"), 0) >= RESETS + 1,
                   10 * SLOW, step=0.02, what="the watch after the last reset")
        held_at = time.monotonic()
        took = held_at - t0
        patch_vs("vs3", "/after-reset")
        t_vs = time.monotonic()
        R.wait_for(lambda: written("VirtualService", "vs3"), 5 * SLOW, step=0.05,
                   what="a change over the watch that held")
        vs_ms = (time.monotonic() - t_vs) * 1000
        time.sleep(2.0)   # a hot loop would show now
    finally:
        rw.stop()
    after = snapshot()
    d = delta(after["counters"], before["counters"])
    gaps = [round((b - a) * 1000) for a, b in zip(times, times[1:])]
    print("# reset x%d: the watch held %.1f s after the first reset; a change then written "
          "after %.0f ms; an Upstream changed during the resets after %.0f ms; gaps between "
          "reset watches %s ms; requests %s" % (RESETS, took, vs_ms, up_ms, gaps,
                                               sorted(d.items())))
    check_eq(d.get(("watch", "virtualservices"), 0), RESETS + 1,
             "watches of VirtualServices (the resumed one, %d reset, the one that held)" % RESETS)
    check_eq(d.get(("list", "virtualservices"), 0), 0, "lists of VirtualServices")
    vk = vs_key(after["restarts"])
    check_eq(sum(after["restarts"][k] - before["restarts"].get(k, 0) for k in vk), RESETS + 1,
             "watch restarts of VirtualServices")
    others_bounded(before, after, "reset")
    # The informer's backoff: 100 ms doubling, each in (d/2, d]. From the
    # first reset watch to the one that held: 5 x 300 ms of streams + 5
    # waits of at least 50+100+200+400+800 ms: over 3050 ms (a hot loop:
    # 1500; polling the hits makes it look up to ~100 ms shorter). The
    # whole recovery is bounded by `took` above.
    span = (held_at - times[0]) * 1000
    print("# first reset watch to the one that held: %.0f ms" % span)
    check(span >= 2900, "span %.0f ms: no backoff between reset watches" % span)
    # the waits grow: 300 ms + 100..200 ms at first, + 800..1600 ms last
    check(len(gaps) == RESETS - 1 and gaps[-1] > gaps[0] + 300, "backoff grows: %s" % gaps)
    check(took < 15 * SLOW, "back after %.1f s" % took)
    check_eq(after["abandoned"] - before["abandoned"], 0, "connections abandoned")
    conns = h2_conns()
    check_eq([c["peer"] for c in conns], [c["peer"] for c in conn_before],
             "the same single connection carries it all")
    check_eq(rw.not_ready, 0, "/readyz not 200 in %d polls" % rw.polls)
    total = sum(n for n in d.values())
    check(total <= 30, "%d requests in %.1f s: %s" % (total, took + 2, sorted(d.items())))


def case_stall():
    before = snapshot()
    rid = W.ks.admin("POST", "/faults", {"user": W.user, "verb": "watch",
                                         "resource": "virtualservices", "action": "stall",
                                         "count": 1})["id"]
    rw = ReadyWatch()
    rw.start()
    try:
        W.ks.admin("POST", "/end-watches", {"user": W.user, "resource": "virtualservices"})
        R.wait_for(lambda: rule_hits(rid) == 1, 5 * SLOW, step=0.02, what="the stalled watch")
        t0 = time.monotonic()
        patch_vs("vs2", "/during-stall")
        patch_up("up2", 82)
        R.wait_for(lambda: written("Upstream", "up2"), 5 * SLOW, step=0.05,
                   what="the Upstream changed during the stall written")
        up_ms = (time.monotonic() - t0) * 1000
        time.sleep(2.0)
        check(not written("VirtualService", "vs2"),
              "the change reached the replica through a stalled stream?")
        R.wait_for(lambda: written("VirtualService", "vs2"), (WATCH_TIMEOUT_S + 10) * SLOW,
                   step=0.1, what="the VirtualService changed during the stall written")
        took = time.monotonic() - t0
        time.sleep(1.0)
    finally:
        rw.stop()
    after = snapshot()
    d = delta(after["counters"], before["counters"])
    print("# stall: the VirtualService changed during it written after %.1f s (watch timeout "
          "%d s); the Upstream after %.0f ms; requests %s" % (took, WATCH_TIMEOUT_S, up_ms,
                                                              sorted(d.items())))
    check(took <= WATCH_TIMEOUT_S + 3 * SLOW, "the stalled stream ended after %.1f s" % took)
    # the resumed (stalled) one and the one after it; at most one more if
    # the stall outlived a second timeout on a slow machine
    check(2 <= d.get(("watch", "virtualservices"), 0) <= 3, "watches of VirtualServices: %s" % d)
    check_eq(d.get(("list", "virtualservices"), 0), 0, "lists of VirtualServices")
    others_bounded(before, after, "stall")
    check_eq(after["abandoned"] - before["abandoned"], 0, "connections abandoned")
    check_eq(len(h2_conns()), 1, "one connection")
    check_eq(rw.not_ready, 0, "/readyz not 200 in %d polls" % rw.polls)
    check(sum(d.values()) <= 30, "requests: %s" % sorted(d.items()))


def main():
    t = Tap()
    try:
        t.case("a replica on kubesim 1.28 over HTTP/2: ready, every watch on one connection",
               setup)
        t.case("RST_STREAM on the VirtualServices watch x%d: only it restarts, with backoff, "
               "no re-list; ready throughout; converges" % RESETS, case_reset)
        t.case("a stalled VirtualServices stream while the others flow: ended at its "
               "timeoutSeconds, resumed without a re-list; ready throughout; converges",
               case_stall)
    finally:
        if W.rep:
            rc, _ = W.rep.stop()
            t.case("the replica exits cleanly", lambda: check_eq(rc, 0, W.rep.log_tail(20)))
        if W.ks:
            W.ks.close()
    t.done()


if __name__ == "__main__":
    main()
