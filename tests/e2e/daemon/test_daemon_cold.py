"""End to end: cold standbys (--standby cold), three replicas on kubesim.

- A cold standby holds one watch (its elector's, on the lock), makes no
  other request, serves no xDS (its port refuses connections) and is not
  ready (/readyz says why); kubesim's open watches are the leader's plus
  one per standby.
- The leader serves xDS; when it loses the lock (its elector partitioned
  away from the API) its ADS stream ends with UNAVAILABLE, its port closes,
  it stops being ready, and another replica takes over and serves.
- SIGTERM of the leader: a VirtualService edited while nobody leads gets
  its status written by the new leader, which lists, translates, serves
  and reconciles; its takeover phases are in coxswain_takeover_seconds.
"""
import json
import os
import socket
import sys
import threading
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), "tests", "lib"))
from audit import user_agent  # noqa: E402
import objects  # noqa: E402
import replicas  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

NS = "app"
SLACK = 3 if replicas.sanitized() else 1
ADS = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
LDS = "type.googleapis.com/envoy.config.listener.v3.Listener"


def note(fmt, *args):
    print("# " + (fmt % args), flush=True)


def _varint(n):
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def _field(num, b):
    return _varint(num << 3 | 2) + _varint(len(b)) + b


class AdsStream:
    """One raw ADS stream (wildcard LDS of Gateway app/gw) in a thread:
    .first is set once a response came, .code/.details once it ended."""

    def __init__(self, port):
        node = _field(1, b"cold-e2e") + _field(2, ("%s/gw" % NS).encode())
        self.req = _field(2, node) + _field(4, LDS.encode())
        self.first = threading.Event()
        self.ended = threading.Event()
        self.code = self.details = None
        self.stop = threading.Event()
        self.ch = grpc.insecure_channel("127.0.0.1:%d" % port)
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _reqs(self):
        yield self.req
        self.stop.wait(60)

    def _run(self):
        try:
            call = self.ch.stream_stream(ADS)(self._reqs(), timeout=60)
            for _ in call:
                self.first.set()
        except grpc.RpcError as e:
            self.code, self.details = e.code().name, e.details()
        self.ended.set()

    def close(self):
        self.stop.set()
        self.ch.close()


def refused(port):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", port))
        return False
    except ConnectionRefusedError:
        return True
    finally:
        s.close()


def informers(r):
    """The informers a replica made (their series stay once made)."""
    return sum(1 for (n, _), _v in r.metrics().items() if n == "coxswain_informer_synced")


def main():
    t = Tap()
    ks = objects.start_kubesim(["--bookmark-interval", "2s"], **objects.AS_1_28)
    api = objects.Api(ks)
    reps = []
    try:
        objects.namespace(api, "coxswain-system")
        objects.namespace(api, NS)
        api.create(objects.gateway(NS, "gw"))
        api.create(objects.upstream_static(NS, "up", [("10.0.0.1", 80)]))
        api.create(objects.virtual_service(NS, "vs", ["a.test"], [objects.route("/", "up")]))
        for i in range(3):
            reps.append(replicas.Replica(ks, "c%d" % i, extra=["--standby=cold"]))
        lead = replicas.wait_leader(reps, timeout=15 * SLACK)
        replicas.wait_for(lead.ready, 20 * SLACK, what="the leader ready")
        standbys = [r for r in reps if r is not lead]

        def standbys_are_cold():
            for r in standbys:
                check(not r.ready(), "%s is ready" % r.name)
                st, body = r.http("/readyz?verbose")
                check(st != 200 and b"cold standby" in body, "%s /readyz: %s %r" % (
                    r.name, st, body[:200]))
                check(refused(r.xds_port), "%s serves xDS" % r.name)
                check_eq(informers(r), 0, "%s informers" % r.name)
            # Watches: the leader's informers and elector, one per standby.
            want = informers(lead) + 1 + len(standbys)
            got = None
            deadline = time.monotonic() + 5 * SLACK
            while time.monotonic() < deadline:
                got = ks.admin("GET", "/state")["watches"]
                if got == want:
                    break
                time.sleep(0.1)
            note("open watches %s: leader %d informers + its elector + %d standbys", got,
                 informers(lead), len(standbys))
            check_eq(got, want, "open watches")
            # Standbys send nothing but their elector's watch.
            ks.admin("DELETE", "/counters")
            time.sleep(2.0)
            for r in standbys:
                n = sum(c["count"] for c in ks.counters() if c["user"].endswith(
                    "replica/" + r.name))
                check_eq(n, 0, "%s requests in 2 s" % r.name)
        t.case("cold standbys: the lock's watch only, not ready, no xDS", standbys_are_cold)

        def loss_sends_proxies_away():
            nonlocal lead
            old = lead
            s = AdsStream(old.xds_port)
            try:
                check(s.first.wait(10 * SLACK), "no LDS response from the leader")
                ks.partition(user_agent(old.name))
                check(s.ended.wait(10 * SLACK), "the stream did not end")
                check_eq(s.code, "UNAVAILABLE")
                note("stream ended: %s %s", s.code, s.details)
            finally:
                s.close()
            new = replicas.wait_for(
                lambda: next((r for r in replicas.leaders(reps) if r is not old), None),
                15 * SLACK, what="a new leader")
            replicas.wait_for(new.ready, 20 * SLACK, what="the new leader ready")
            check(refused(old.xds_port), "the old leader still serves xDS")
            check(not old.ready(), "the old leader is still ready")
            s2 = AdsStream(new.xds_port)
            try:
                check(s2.first.wait(10 * SLACK), "no LDS response from the new leader")
            finally:
                s2.close()
            ks.heal()
            lead = new
            # The old leader's informers are gone: the watches are the new
            # leader's plus one per standby again.
            want = informers(new) + 1 + 2
            got = None
            deadline = time.monotonic() + 10 * SLACK
            while time.monotonic() < deadline:
                got = ks.admin("GET", "/state")["watches"]
                if got == want:
                    break
                time.sleep(0.1)
            check_eq(got, want, "open watches after the move")
        t.case("losing the lock: UNAVAILABLE to the proxies, port closed, another serves",
               loss_sends_proxies_away)

        def sigterm_takeover():
            nonlocal lead
            old = lead
            old.send_term()
            st, vs = api.patch("VirtualService", NS, "vs",
                               {"spec": {"domains": ["a.test", "b.test"]}})
            check_eq(st, 200)
            gen = vs["metadata"]["generation"]
            t0 = time.monotonic()
            new = replicas.wait_for(
                lambda: next((r for r in replicas.leaders([r for r in reps if r is not old])),
                             None), 15 * SLACK, what="a new leader")

            def status_done():
                st, o = api.get("VirtualService", NS, "vs")
                return st == 200 and (o.get("status") or {}).get("observedGeneration") == gen
            replicas.wait_for(status_done, 20 * SLACK, what="the edit's status")
            note("status of the edit written %.2f s after SIGTERM", time.monotonic() - t0)
            writes = [a for a in ks.audit() if a.get("resource") == "virtualservices" and
                      a.get("subresource") == "status" and a.get("name") == "vs" and
                      200 <= a.get("code", 0) < 300]
            check(writes and writes[-1]["user"].endswith("replica/" + new.name),
                  "last status write by %s" % (writes[-1]["user"] if writes else None))
            phases = {dict(l)["phase"]: v for (n, l), v in new.metrics().items()
                      if n == "coxswain_takeover_seconds"}
            note("takeover phases of %s: %s", new.name, json.dumps(phases))
            check(0 < phases.get("synced", 0) <= phases.get("snapshot", 0) <=
                  phases.get("serving", 0), "phases %s" % phases)
            replicas.wait_for(new.ready, 10 * SLACK, what="the new leader ready")
            lead = new
        t.case("SIGTERM: the new cold leader lists, serves and writes the status of an edit made "
               "meanwhile", sigterm_takeover)

        def clean_exits():
            # Every replica went through standby, leading and standby again
            # (or SIGTERM): exit 0, so the sanitizers found nothing.
            for r in reps:
                st, _secs = r.stop()
                check_eq(st, 0, "%s exit status" % r.name)
        t.case("every replica exits cleanly", clean_exits)
    finally:
        for r in reps:
            r.stop()
        ks.close()
    t.done()


main()
