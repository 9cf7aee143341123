#!/usr/bin/env python3
"""End to end: delta xDS (DeltaAggregatedResources) from `coxswain run`,
two replicas on kubesim, the configuration translated from real objects.

A Gateway with 50 Upstreams (one route each on one VirtualService). A delta
client (grpcio carrying hand-encoded DeltaDiscoveryRequests) subscribed to
the Gateway's Clusters on replica A gets 50 resources; after one Upstream's
connectTimeout changes, exactly that Cluster; after one Upstream is taken
off the routes and deleted, its removal and nothing else. It then
reconnects to replica B with initial_resource_versions set to what it
holds: B sends nothing (versions are content hashes, equal on every
replica) until the next change, which arrives alone.

Beside it (two replicas at hand): a replica is not dumpable by default (a
core would hold private keys and tokens), one started with
--allow-core-dumps is; both as the kernel says (coxswain_process_dumpable).
"""
import json
import os
import queue
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "hostile"))

import grpc  # noqa: E402

from hostilelib import CDS, DELTA_PATH, delta_request, delta_response_info, node  # noqa: E402
from objects import Api, gateway, namespace, route, start_kubesim  # noqa: E402
from objects import upstream_static, virtual_service  # noqa: E402
from replicas import Replica, sanitized, wait_for, wait_ready  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

NS = "delta"
GW = NS + "/gw"
N = 50
SLOW = 4 if sanitized() else 1
QUIET_S = 1.5 * SLOW  # no response within this: nothing was sent


def upstream(i, timeout=None):
    u = upstream_static(NS, "u%02d" % i, [("127.0.0.1", 20000 + i)])
    if timeout:
        u["spec"]["connectTimeout"] = timeout
    return u


def routes(skip=()):
    return [route("/u%02d/" % i, "u%02d" % i) for i in range(N) if i not in skip]


class DeltaStream:
    """One DeltaAggregatedResources call: requests from a queue, responses
    (parsed with delta_response_info) into another."""

    def __init__(self, port):
        self.ch = grpc.insecure_channel("127.0.0.1:%d" % port)
        self.reqs = queue.Queue()
        self.resps = queue.Queue()
        self.call = self.ch.stream_stream(DELTA_PATH)(iter(self.reqs.get, None))
        self.th = threading.Thread(target=self._read, daemon=True)
        self.th.start()

    def _read(self):
        try:
            for r in self.call:
                self.resps.put(delta_response_info(r))
        except grpc.RpcError as e:
            self.resps.put(e)

    def send(self, req):
        self.reqs.put(req)

    def next(self, timeout):
        """The next response (version, nonce, [(name, version)], [removed]),
        or None if none came within |timeout|."""
        try:
            r = self.resps.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(r, Exception):
            raise AssertionError("stream ended: %s" % r)
        return r

    def ack(self, nonce):
        self.send(delta_request(CDS, nonce=nonce))

    def close(self):
        self.reqs.put(None)
        self.call.cancel()
        self.ch.close()


def main():
    t = Tap()
    st = {}

    def case_setup():
        st["ks"] = ks = start_kubesim()
        st["api"] = api = Api(ks)
        namespace(api, "coxswain-system")
        namespace(api, NS)
        for o in [gateway(NS, "gw")] + [upstream(i) for i in range(N)] + [
                virtual_service(NS, "vs", ["delta.example"], routes())]:
            code, out = api.create(o)
            check_eq(code, 201, "create %s: %s" % (o["metadata"]["name"], out))
        st["a"] = Replica(ks, "rep-a")
        st["b"] = Replica(ks, "rep-b", extra=["--allow-core-dumps"])
        wait_ready([st["a"], st["b"]], 30 * SLOW)

    def case_fifty_then_one_then_removal():
        d = st["d"] = DeltaStream(st["a"].xds)
        d.send(delta_request(CDS, sub=["*"], node_bytes=node("proxy-1", gateway=GW)))
        # the replica may answer before it has translated every object:
        # wait until the client holds the Gateway's 50 Clusters
        held = {}
        deadline = time.monotonic() + 20 * SLOW
        while len(held) < N and time.monotonic() < deadline:
            r = d.next(deadline - time.monotonic())
            if r is None:
                break
            _, nonce, res, removed = r
            held.update(res)
            for n in removed:
                held.pop(n, None)
            d.ack(nonce)
        check_eq(len(held), N, "Clusters held: %s" % sorted(held))
        (u07,) = [n for n in held if "u07" in n]
        (u33,) = [n for n in held if "u33" in n]
        check(d.next(QUIET_S) is None, "nothing more while nothing changes")

        code, out = st["api"].patch("Upstream", NS, "u07", {"spec": {"connectTimeout": "7s"}})
        check_eq(code, 200, out)
        r = d.next(10 * SLOW)
        check(r is not None, "the change arrived")
        _, nonce, res, removed = r
        check_eq([n for n, _ in res], [u07], "exactly the Cluster that changed")
        check_eq(removed, [])
        check(res[0][1] != held[u07], "a new version")
        held[u07] = res[0][1]
        d.ack(nonce)
        check(d.next(QUIET_S) is None, "nothing else")

        # u33 leaves the routes, then goes: its removal, nothing sent
        code, out = st["api"].patch("VirtualService", NS, "vs", {"spec": {"routes": routes({33})}})
        check_eq(code, 200, out)
        code, out = st["api"].delete("Upstream", NS, "u33")
        check(code in (200, 202), "delete: %s %s" % (code, out))
        sent, gone = [], []
        deadline = time.monotonic() + 10 * SLOW
        while u33 not in gone and time.monotonic() < deadline:
            r = d.next(deadline - time.monotonic())
            if r is None:
                break
            st["version"], nonce, res, removed = r
            sent += [n for n, _ in res]
            gone += removed
            d.ack(nonce)
        r = d.next(QUIET_S)
        while r is not None:  # anything straggling counts too
            st["version"] = r[0]
            sent += [n for n, _ in r[2]]
            gone += r[3]
            d.ack(r[1])
            r = d.next(QUIET_S)
        check_eq(gone, [u33], "the removal of the deleted one")
        check_eq(sent, [], "nothing sent")
        del held[u33]
        st["held"] = held

    def case_reconnect_to_other_replica():
        held = st["held"]
        st["d"].close()
        b = st["b"]
        # B has translated the same objects into the same set (REST
        # discovery's version_info is the set's version, as delta's
        # system_version_info)
        body = json.dumps({"node": {"id": "probe", "metadata": {"coxswain.dev/gateway": GW}}})

        def b_version():
            code, out = b.http("/v3/discovery:clusters", method="POST", body=body)
            return code == 200 and json.loads(out).get("version_info") == st["version"]

        wait_for(b_version, 10 * SLOW, what="replica B at version %s" % st["version"])
        pushes_before = b.metric("coxswain_xds_pushes_total", type="CDS")
        d = st["d2"] = DeltaStream(b.xds)
        d.send(delta_request(CDS, sub=["*"], initial=sorted(held.items()),
                             node_bytes=node("proxy-1", gateway=GW)))
        r = d.next(3 * QUIET_S)
        check(r is None, "nothing resent: %r" % (r,))
        check_eq(b.metric("coxswain_xds_pushes_total", type="CDS"), pushes_before,
                 "no CDS push on replica B")
        code, out = st["api"].patch("Upstream", NS, "u08", {"spec": {"connectTimeout": "8s"}})
        check_eq(code, 200, out)
        r = d.next(10 * SLOW)
        check(r is not None, "the next change arrived")
        _, _, res, removed = r
        check_eq(len(res), 1, "one Cluster: %r" % res)
        check("u08" in res[0][0], res[0][0])
        check_eq(removed, [])
        check_eq(b.metric("coxswain_xds_pushes_total", type="CDS"), pushes_before + 1,
                 "the one CDS push counted on replica B")
        d.close()

    def case_core_dumps():
        check_eq(st["a"].metric("coxswain_process_dumpable"), 0, "default: not dumpable")
        check_eq(st["b"].metric("coxswain_process_dumpable"), 1, "--allow-core-dumps")
        check("core dumps allowed" in st["b"].log(), "B warns that it may dump core")
        check("core dumps allowed" not in st["a"].log(), "A does not")

    def case_teardown():
        for k in ("a", "b"):
            if k in st:
                st[k].stop()
        if "api" in st:
            st["api"].close()
        if "ks" in st:
            st["ks"].close()

    t.case("setup: kubesim, a Gateway with 50 Upstreams, two replicas", case_setup)
    if "b" in st:
        t.case("delta: 50 Clusters, then the one that changed, then a removal",
               case_fifty_then_one_then_removal)
        if "held" in st:
            t.case("delta: reconnect to the other replica resends nothing",
                   case_reconnect_to_other_replica)
        t.case("process not dumpable unless --allow-core-dumps", case_core_dumps)
    t.case("teardown", case_teardown)
    t.done()


if __name__ == "__main__":
    main()
