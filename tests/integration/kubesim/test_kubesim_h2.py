"""kubesim over HTTP/2, frame by frame (the python3-h2 state machine as the
client), and the faults only HTTP/2 has.

kube-apiserver (Go's net/http) answers ALPN "h2" on TLS and every client
built on Go or on libcurl with nghttp2 then multiplexes its requests and
watches over one connection. kubesim with --tls does the same; clients
offering only http/1.1 (the official Python client) get HTTP/1.1.

- ALPN: h2 preferred, http/1.1 when that is all the client offers,
  --no-http2 offers http/1.1 only; kubectl and the Python client work.
- One connection carries a watch and other requests at once; response
  headers are lowercase with content-length; a body over 3 MiB is 413.
- Faults (rules of /_sim/faults, and /_sim/h2/ for whole connections):
  stall (a watch's stream sends nothing while another watch on the same
  connection flows), reset (RST_STREAM at once, or on a running watch
  after delay_ms), goaway (the request is answered, then GOAWAY with its
  stream as the last one; the connection ends when its streams do),
  blackhole (nothing read or written, the connection left open: PINGs go
  unanswered while a new connection works; closed after delay_ms).
"""
import json
import os
import socket
import ssl
import subprocess
import time

import h2.config
import h2.connection
import h2.events

from ksutil import KubeSim, Tap, check, check_eq

t = Tap()
ks = KubeSim(tls=True)
CM = "/api/v1/namespaces/default/configmaps"


class Conn:
    """One TLS connection speaking HTTP/2 through python3-h2."""

    def __init__(self, ua="h2-tester", alpn=("h2", "http/1.1"), port=None, cafile=None):
        ctx = ssl.create_default_context(cafile=cafile or ks.ca_file)
        ctx.set_alpn_protocols(list(alpn))
        raw = socket.create_connection(("127.0.0.1", port or ks.port), timeout=10)
        self.sock = ctx.wrap_socket(raw, server_hostname="localhost")
        self.alpn = self.sock.selected_alpn_protocol()
        self.ua = ua
        self.events = []
        self.closed = False
        self.raw = b""  # what arrived after a GOAWAY (python3-h2 stops decoding then)
        if self.alpn != "h2":
            return
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.h2.initiate_connection()
        self.flush()

    def flush(self):
        data = self.h2.data_to_send()
        if data:
            self.sock.sendall(data)

    def request(self, method, path, body=None, headers=()):
        sid = self.h2.get_next_available_stream_id()
        hdrs = [(":method", method), (":path", path), (":scheme", "https"),
                (":authority", "127.0.0.1:%d" % ks.port), ("user-agent", self.ua)]
        hdrs += list(headers)
        if body is not None:
            data = json.dumps(body).encode() if not isinstance(body, bytes) else body
            hdrs.append(("content-type", "application/json"))
            self.h2.send_headers(sid, hdrs)
            # Within the peer's windows: small bodies in one go.
            while data:
                n = min(len(data), self.h2.local_flow_control_window(sid),
                        self.h2.max_outbound_frame_size)
                if n <= 0:
                    self.pump(0.5)
                    continue
                self.h2.send_data(sid, data[:n])
                data = data[n:]
                self.flush()
            self.h2.end_stream(sid)
        else:
            self.h2.send_headers(sid, hdrs, end_stream=True)
        self.flush()
        return sid

    def pump(self, timeout):
        """Reads what arrives within |timeout|; returns the new events."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1 << 16)
        except (socket.timeout, TimeoutError):
            return []
        except (ssl.SSLError, OSError):
            data = b""
        if not data:
            self.closed = True
            return []
        if self.goaway():
            self.raw += data
            return []
        evs = self.h2.receive_data(data)
        for e in evs:
            if isinstance(e, h2.events.DataReceived):
                self.h2.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
        self.flush()
        self.events += evs
        return evs

    def wait(self, pred, timeout=10.0):
        """Pumps until pred(events) is true; returns it (None at timeout)."""
        end = time.monotonic() + timeout
        while True:
            got = pred(self.events)
            if got or self.closed or time.monotonic() > end:
                return got
            self.pump(min(0.2, max(0.01, end - time.monotonic())))

    def response(self, sid, timeout=10.0):
        """(status, headers dict, body bytes) once the stream ended."""
        def done(evs):
            return any(isinstance(e, h2.events.StreamEnded) and e.stream_id == sid for e in evs)
        check(self.wait(done, timeout), "stream %d ended" % sid)
        return self.parts(sid)

    def parts(self, sid):
        status, hdrs, body = None, {}, b""
        for e in self.events:
            if getattr(e, "stream_id", None) != sid:
                continue
            if isinstance(e, h2.events.ResponseReceived):
                hdrs = {k.decode(): v.decode() for k, v in e.headers}
                status = int(hdrs[":status"])
            elif isinstance(e, h2.events.DataReceived):
                body += e.data
        return status, hdrs, body

    def reset_of(self, sid):
        for e in self.events:
            if isinstance(e, h2.events.StreamReset) and e.stream_id == sid:
                return e
        return None

    def goaway(self):
        for e in self.events:
            if isinstance(e, h2.events.ConnectionTerminated):
                return e
        return None

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def cm(name, ns="default", data=None):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns}, "data": data or {"k": "v"}}


def lines(body):
    return [json.loads(x) for x in body.decode().splitlines() if x.strip()]


def alpn():
    c = Conn()
    check_eq(c.alpn, "h2", "h2 preferred")
    c.close()
    c = Conn(alpn=("http/1.1",))
    check_eq(c.alpn, "http/1.1", "http/1.1 when that is all the client offers")
    c.close()
    with KubeSim(tls=True, args=["--no-http2"]) as k2:
        c = Conn(port=k2.port, cafile=k2.ca_file)
        check_eq(c.alpn, "http/1.1", "--no-http2")
        c.close()
        st, _ = k2.request("GET", "/version")
        check_eq(st, 200)


def basics():
    c = Conn()
    sid = c.request("GET", "/version")
    st, hdrs, body = c.response(sid)
    check_eq(st, 200)
    check_eq(json.loads(body)["gitVersion"], "v1.28.15")
    check_eq(hdrs.get("content-length"), str(len(body)), "content-length")
    check_eq(hdrs.get("content-type"), "application/json")
    check(all(k == k.lower() for k in hdrs), "lowercase header names: %s" % list(hdrs))
    check("audit-id" in hdrs, "audit-id")
    sid = c.request("POST", CM, cm("h2-a"))
    st, _, body = c.response(sid)
    check_eq(st, 201, body)
    check_eq(json.loads(body)["metadata"]["name"], "h2-a")
    sid = c.request("GET", CM + "/missing")
    st, _, body = c.response(sid)
    check_eq((st, json.loads(body)["reason"]), (404, "NotFound"))
    big = json.dumps(cm("h2-big", data={"x": "a" * (3 << 20)})).encode()
    sid = c.request("PUT", CM + "/h2-big", big)
    st, _, body = c.response(sid, 30)
    check_eq(st, 413, "a body over 3 MiB")
    c.close()


def multiplexed_watch():
    c = Conn(ua="mux")
    w = c.request("GET", CM + "?watch=1&resourceVersion=0")
    check(c.wait(lambda evs: any(isinstance(e, h2.events.DataReceived) and e.stream_id == w
                                 for e in evs)), "initial ADDED on the watch")
    g = c.request("POST", CM, cm("h2-mux"))
    st, _, _ = c.response(g)
    check_eq(st, 201, "a create on the watch's connection")

    def seen(evs):
        return any(ev["object"]["metadata"]["name"] == "h2-mux"
                   for ev in lines(c.parts(w)[2]))
    check(c.wait(seen), "the watch on the same connection saw it")
    conns = ks.admin("GET", "/h2/connections")["connections"]
    mine = [x for x in conns if x["user"] == "mux"]
    check_eq(len(mine), 1, "one connection")
    check_eq(mine[0]["streams"], 1, "the watch is its open stream")
    check(mine[0]["streamsTotal"] >= 2, "both requests on it")
    c.close()


def stall():
    ks.request("POST", "/api/v1/namespaces", {"metadata": {"name": "stalled"}})
    ks.request("POST", "/api/v1/namespaces", {"metadata": {"name": "flowing"}})
    ks.add_fault(user="st", verb="watch", resource="configmaps", namespace="stalled",
                 action="stall", count=1)
    c = Conn(ua="st")
    a = c.request("GET", "/api/v1/namespaces/stalled/configmaps?watch=1")
    b = c.request("GET", "/api/v1/namespaces/flowing/configmaps?watch=1")
    check(c.wait(lambda evs: c.parts(a)[0] and c.parts(b)[0]), "both watches started")
    check_eq((c.parts(a)[0], c.parts(b)[0]), (200, 200))
    ks.create("configmaps", cm("x", "stalled"), namespace="stalled")
    ks.create("configmaps", cm("y", "flowing"), namespace="flowing")
    check(c.wait(lambda evs: lines(c.parts(b)[2])), "the other watch flows")
    c.pump(0.5)
    check_eq(c.parts(a)[2], b"", "the stalled stream sends nothing")
    check(not c.reset_of(a), "and is not reset")
    ks.clear_faults()
    c.close()


def reset():
    ks.add_fault(user="rs", verb="get", resource="configmaps", name="h2-a", action="reset",
                 count=1)
    c = Conn(ua="rs")
    a = c.request("GET", CM + "/h2-a")
    b = c.request("GET", CM + "/h2-a")
    st, _, _ = c.response(b)
    check_eq(st, 200, "the other stream is answered")
    check(c.wait(lambda evs: c.reset_of(a)), "RST_STREAM")
    check_eq(c.reset_of(a).error_code, 2, "INTERNAL_ERROR")
    check_eq(c.parts(a)[0], None, "no response on the reset stream")
    # A running watch reset after a while: events first, then RST_STREAM.
    ks.add_fault(user="rs", verb="watch", resource="configmaps", action="reset", code=8,
                 delay_ms=700, count=1)
    w = c.request("GET", CM + "?watch=1&resourceVersion=0")
    check(c.wait(lambda evs: lines(c.parts(w)[2])), "the watch delivered events")
    t0 = time.monotonic()
    check(c.wait(lambda evs: c.reset_of(w), 5), "then its stream was reset")
    check_eq(c.reset_of(w).error_code, 8, "CANCEL, as asked")
    check(time.monotonic() - t0 < 3, "after delay_ms")
    sid = c.request("GET", "/version")
    check_eq(c.response(sid)[0], 200, "the connection lives on")
    ks.clear_faults()
    c.close()


def goaway():
    c = Conn(ua="ga")
    w = c.request("GET", CM + "?watch=1&resourceVersion=0")
    check(c.wait(lambda evs: lines(c.parts(w)[2])), "a watch runs")
    ks.add_fault(user="ga", verb="get", resource="configmaps", name="h2-a", action="goaway",
                 count=1)
    g = c.request("GET", CM + "/h2-a")
    st, _, _ = c.response(g)
    check_eq(st, 200, "the request is answered")
    check(c.wait(lambda evs: c.goaway()), "GOAWAY")
    ga = c.goaway()
    check_eq((ga.error_code, ga.last_stream_id), (0, g), "NO_ERROR, the answered stream last")
    ks.create("configmaps", cm("h2-after-goaway"), namespace="default")

    # python3-h2 closes its state machine on GOAWAY: the watch's DATA
    # frames are read raw from here on.
    check(c.wait(lambda evs: b"h2-after-goaway" in c.raw),
          "the open watch still flows after GOAWAY")
    check(not c.closed, "the connection stays while a stream is open")
    # Admin GOAWAY of every connection of a user.
    d = Conn(ua="ga2")
    sid = d.request("GET", "/version")
    d.response(sid)
    check_eq(ks.admin("POST", "/h2/goaway", {"user": "ga2"})["connections"], 1)
    check(d.wait(lambda evs: d.goaway()), "GOAWAY by the admin API")
    check(d.wait(lambda evs: d.closed, 5), "closed: it had no open stream")
    ks.clear_faults()
    c.close()
    d.close()


def ping_acked(c, timeout):
    c.h2.ping(b"12345678")
    c.flush()
    return c.wait(lambda evs: any(isinstance(e, h2.events.PingAckReceived) for e in evs), timeout)


def blackhole():
    c = Conn(ua="bh")
    check(ping_acked(c, 5), "a live connection answers PING")
    c.events.clear()
    ks.add_fault(user="bh", verb="get", resource="configmaps", name="h2-a", action="blackhole",
                 count=1)
    a = c.request("GET", CM + "/h2-a")
    c.pump(0.3)
    check(not ping_acked(c, 1.5), "a blackholed connection answers no PING")
    check_eq(c.parts(a)[0], None, "nor the request")
    check(not c.closed, "and is not closed")
    conns = [x for x in ks.admin("GET", "/h2/connections")["connections"] if x["user"] == "bh"]
    check_eq([x["blackholed"] for x in conns], [True])
    d = Conn(ua="bh")
    sid = d.request("GET", CM + "/h2-a")
    check_eq(d.response(sid)[0], 200, "a new connection works")
    # By the admin API, closed after ms.
    check_eq(ks.admin("POST", "/h2/blackhole", {"user": "bh", "ms": 800})["connections"], 1,
             "the live connection of that user (the silent one counts no more)")
    check(not ping_acked(d, 0.5), "silent")
    check(d.wait(lambda evs: d.closed, 5), "closed after ms")
    c.close()
    d.close()


def clients():
    env = dict(os.environ, KUBECONFIG=ks.kubeconfig)
    p = subprocess.run(["kubectl", "create", "configmap", "h2-kubectl", "--from-literal=a=b"],
                       env=env, capture_output=True, text=True, timeout=120)
    check_eq(p.returncode, 0, p.stderr)
    p = subprocess.run(["kubectl", "get", "configmap", "h2-kubectl", "-o", "name"], env=env,
                       capture_output=True, text=True, timeout=120)
    check_eq((p.returncode, p.stdout.strip()), (0, "configmap/h2-kubectl"), p.stderr)
    writes = [a for a in ks.audit() if a["name"] == "h2-kubectl"]
    check_eq([(a["verb"], a["protocol"]) for a in writes], [("create", "HTTP/2.0")],
             "kubectl spoke HTTP/2")
    from kubernetes import client, config
    api = client.CoreV1Api(config.new_client_from_config(config_file=ks.kubeconfig))
    got = api.read_namespaced_config_map("h2-kubectl", "default")
    check_eq(got.metadata.name, "h2-kubectl")
    api.create_namespaced_config_map("default", {"metadata": {"name": "h2-py"}})
    writes = [a for a in ks.audit() if a["name"] == "h2-py"]
    check_eq([(a["verb"], a["protocol"]) for a in writes], [("create", "HTTP/1.1")],
             "the Python client over TLS (HTTP/1.1)")


def restart_keeps_certificate():
    with KubeSim(tls=True) as k2:
        with open(k2.ca_file) as f:
            ca = f.read()
        k2.restart()
        with open(k2.ca_file) as f:
            check_eq(f.read(), ca, "the CA file")
        c = Conn(port=k2.port, cafile=k2.ca_file)  # verifies against the old CA
        sid = c.request("GET", "/version")
        check_eq(c.response(sid)[0], 200)
        c.close()


t.case("ALPN: h2 preferred, http/1.1 for clients offering only it, --no-http2", alpn)
t.case("a restart serves the certificate already in --state-dir", restart_keeps_certificate)
t.case("requests over HTTP/2: lowercase headers, content-length, 413", basics)
t.case("a watch and other requests multiplexed on one connection", multiplexed_watch)
t.case("stall: one watch's stream sends nothing while another flows", stall)
t.case("reset: RST_STREAM at once, or on a running watch after delay_ms", reset)
t.case("goaway: answered, GOAWAY naming the last stream, open streams finish", goaway)
t.case("blackhole: no PING ACK, no answer, not closed; a new connection works", blackhole)
t.case("kubectl over HTTP/2, the Python client over HTTP/1.1", clients)
# Open, blackholed and GOAWAY'd connections at exit: all freed (ASan checks
# leaks under COXSWAIN_SANITIZE).
live = Conn(ua="at-exit")
wsid = live.request("GET", CM + "?watch=1")
live.pump(0.5)
ks.admin("POST", "/h2/blackhole", {"user": "at-exit"})
log = ks.log
rc = ks.stop()
t.case("clean shutdown with HTTP/2 connections open", lambda: check_eq(rc, 0, log()[-3000:]))
live.close()
ks.close()
t.done()
