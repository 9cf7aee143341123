"""Shared harness of the hostile-input suite (tests/hostile/test_*.py).

Every case attacks a live replica the way an outsider or a tenant could and
then asserts three things: the replica is alive, its memory stayed under a
stated bound while the attack ran, and a legitimate proxy is still served.

    from hostilelib import World, Tap
    w = World()                                  # kubesim + CRDs + one replica
    t = Tap()
    def case_x():
        with w.attack("x", rss_mb=80):           # samples RSS while it runs
            ...                                  # send whatever you like
        # on leaving: alive? peak RSS under 80 MB (scaled under sanitizers)?
        # the legitimate Gateway's Listener still served over ADS?
    t.case("x", case_x)
    w.close(); t.done()

The world holds one legitimate proxyless Gateway (LEGIT_GW, "hostile/legit")
with one VirtualService (domain LEGIT_LISTENER) on a static Upstream; a case
may add objects with w.api (cxd.Api) and read statuses with w.status().
w.replica is a cxd.Replica (admin/xds ports, metrics, log, debug pages);
w.ks the KubeSim (fault injection for API-response cases).

Raw access for cases the real clients cannot express:
    ads_request(...)      a DiscoveryRequest's bytes (hand-encoded protobuf)
    grpc_call(port, reqs) sends raw request messages with grpcio, returns
                          (status code name, details, responses)
    RawH2(port)           HTTP/2 frames by hand (bad lengths, slow senders)

With HOSTILE_RESULTS=file set (bench/run.sh sets it), every attack appends
one JSON line {"program", "case", "ok", "crashed", "peak_rss_kb",
"bound_kb", "seconds"} to that file: the hostile row of docs/benchmarks.md.
"""
import json
import os
import socket
import struct
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "e2e", "daemon"))

import cxd  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402,F401

import grpc  # noqa: E402

NS = "hostile"
LEGIT_GW = NS + "/legit"
LEGIT_LISTENER = "legit.hostile.example"

LDS = "type.googleapis.com/envoy.config.listener.v3.Listener"
RDS = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
EDS = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
ADS_PATH = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
DELTA_PATH = "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"


def slowdown():
    """Memory and time factor of this run: sanitizers and valgrind cost more."""
    s = os.environ.get("COXSWAIN_SANITIZE", "0")
    return 1 if s in ("", "0") else 4


# ---- protobuf by hand (only what the cases need) ----------------------------------

def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def ld(num, b):
    """A length-delimited field."""
    if isinstance(b, str):
        b = b.encode()
    return varint(num << 3 | 2) + varint(len(b)) + b


def vi(num, n):
    """A varint field."""
    return varint(num << 3) + varint(n)


def pb_fields(buf):
    """[(field number, wire type, value)] of one message level; value is an
    int (varint/fixed) or bytes (length-delimited). Raises ValueError."""
    out, i = [], 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _read_varint(buf, i)
        elif wt == 2:
            n, i = _read_varint(buf, i)
            if i + n > len(buf):
                raise ValueError("truncated")
            v, i = bytes(buf[i:i + n]), i + n
        elif wt == 1:
            v, i = struct.unpack_from("<Q", buf, i)[0], i + 8
        elif wt == 5:
            v, i = struct.unpack_from("<I", buf, i)[0], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        out.append((num, wt, v))
    return out


def _read_varint(buf, i):
    n = shift = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def node(node_id="hostile", gateway=None, cluster=None, metadata=b""):
    """core.v3.Node: id 1, cluster 2, metadata 3 (Struct bytes, raw)."""
    md = metadata
    if gateway is not None:
        # Struct{fields 1: map entry {key 1, value 2: Value{string_value 3}}}
        md += ld(1, ld(1, "coxswain.dev/gateway") + ld(2, ld(3, gateway)))
    out = ld(1, node_id)
    if cluster:
        out += ld(2, cluster)
    if md:
        out += ld(3, md)
    return out


def ads_request(type_url, names=(), version="", nonce="", node_bytes=None, error=None):
    """A DiscoveryRequest: version_info 1, node 2, resource_names 3,
    type_url 4, response_nonce 5, error_detail 6 (google.rpc.Status)."""
    out = b""
    if version:
        out += ld(1, version)
    if node_bytes is not None:
        out += ld(2, node_bytes)
    for n in names:
        out += ld(3, n)
    out += ld(4, type_url)
    if nonce:
        out += ld(5, nonce)
    if error is not None:
        code, msg = error
        out += ld(6, vi(1, code) + ld(2, msg))
    return out


def delta_request(type_url, sub=(), unsub=(), initial=(), nonce="", node_bytes=None, error=None):
    """A DeltaDiscoveryRequest: node 1, type_url 2, resource_names_subscribe
    3, resource_names_unsubscribe 4, initial_resource_versions 5 (map
    entries: key 1, value 2), response_nonce 6, error_detail 7."""
    out = b""
    if node_bytes is not None:
        out += ld(1, node_bytes)
    out += ld(2, type_url)
    out += b"".join(ld(3, n) for n in sub)
    out += b"".join(ld(4, n) for n in unsub)
    out += b"".join(ld(5, ld(1, k) + ld(2, v)) for k, v in initial)
    if nonce:
        out += ld(6, nonce)
    if error is not None:
        code, msg = error
        out += ld(7, vi(1, code) + ld(2, msg))
    return out


def delta_response_info(resp):
    """(system version, nonce, [(name, version)], [removed names]) of a
    DeltaDiscoveryResponse."""
    version = nonce = ""
    res, removed = [], []
    for num, wt, v in pb_fields(resp):
        if num == 1 and wt == 2:
            version = v.decode()
        elif num == 5 and wt == 2:
            nonce = v.decode()
        elif num == 6 and wt == 2:
            removed.append(v.decode())
        elif num == 2 and wt == 2:
            f = {rn: rv for rn, rwt, rv in pb_fields(v) if rwt == 2}
            res.append((f.get(3, b"").decode(), f.get(1, b"").decode()))
    return version, nonce, res, removed


def response_info(resp):
    """(version, nonce, [resource names]) of a DiscoveryResponse; the name is
    field 1 of every resource type we serve."""
    version = nonce = ""
    names = []
    for num, wt, v in pb_fields(resp):
        if num == 1 and wt == 2:
            version = v.decode()
        elif num == 5 and wt == 2:
            nonce = v.decode()
        elif num == 2 and wt == 2:
            for anum, awt, av in pb_fields(v):
                if anum == 2 and awt == 2:
                    for rnum, rwt, rv in pb_fields(av):
                        if rnum == 1 and rwt == 2:
                            names.append(rv.decode())
                            break
    return version, nonce, names


# ---- gRPC with raw messages ------------------------------------------------------

def grpc_call(port, reqs, timeout=5.0, want=1, metadata=None, wait_close=False, path=ADS_PATH):
    """Opens one ADS stream (|path|: DELTA_PATH for delta), sends the raw messages |reqs| (bytes each), reads
    up to |want| responses. Returns (code name, details, [response bytes]):
    "OK" with the responses when |want| arrived and the call is still open
    (it is then cancelled), else the status the server ended the call with.
    With |wait_close|, waits for the server to end the call."""
    done = threading.Event()

    def gen():
        for r in reqs:
            yield r
        done.wait(timeout)

    ch = grpc.insecure_channel("127.0.0.1:%d" % port)
    out = []
    try:
        call = ch.stream_stream(path)(gen(), timeout=timeout, metadata=metadata)
        try:
            for resp in call:
                out.append(resp)
                if len(out) >= want and not wait_close:
                    done.set()
                    call.cancel()
                    return "OK", "", out
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.CANCELLED and len(out) >= want:
                return "OK", "", out
            return e.code().name, e.details() or "", out
        return "OK", "", out
    finally:
        done.set()
        ch.close()


def legit_listeners(port, timeout=5.0):
    """Listener names served to a well-behaved proxy of LEGIT_GW (wildcard LDS)."""
    req = ads_request(LDS, node_bytes=node("legit-proxy", gateway=LEGIT_GW))
    code, details, resps = grpc_call(port, [req], timeout=timeout)
    if code != "OK" or not resps:
        raise AssertionError("legitimate proxy not served: %s %s" % (code, details))
    return response_info(resps[0])[2]


# ---- HTTP/2 by hand ---------------------------------------------------------------

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0, 1, 3, 4, 6, 7, 8
END_STREAM, END_HEADERS = 0x1, 0x4


def _hpack_int(n, prefix_bits, first=0):
    lim = (1 << prefix_bits) - 1
    if n < lim:
        return bytes([first | n])
    out = bytearray([first | lim])
    n -= lim
    while n >= 128:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def hpack_literal(headers):
    """Header block of literal fields without indexing, no Huffman."""
    out = b""
    for k, v in headers:
        k = k.encode() if isinstance(k, str) else k
        v = v.encode() if isinstance(v, str) else v
        out += b"\x00" + _hpack_int(len(k), 7) + k + _hpack_int(len(v), 7) + v
    return out


def grpc_headers(path=ADS_PATH, extra=()):
    return [(":method", "POST"), (":scheme", "http"), (":path", path),
            (":authority", "hostile"), ("content-type", "application/grpc"),
            ("te", "trailers")] + list(extra)


class RawH2:
    """A client connection writing HTTP/2 frames by hand."""

    def __init__(self, port, preface=True, timeout=5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        if preface:
            self.send(H2_PREFACE + self.frame(SETTINGS, 0, 0, b""))

    @staticmethod
    def frame(ftype, flags, stream, payload):
        n = len(payload)
        return struct.pack(">BHBBI", n >> 16, n & 0xFFFF, ftype, flags, stream) + payload

    def send(self, b):
        self.sock.sendall(b)

    def headers(self, stream, headers, end_stream=False):
        self.send(self.frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), stream,
                             hpack_literal(headers)))

    def data(self, stream, payload, end_stream=False):
        self.send(self.frame(DATA, END_STREAM if end_stream else 0, stream, payload))

    def read_frames(self, timeout=2.0, until=None):
        """Frames [(type, flags, stream, payload)] read until |until(frame)|
        is true, the peer closes (then None is appended) or |timeout|."""
        out = []
        deadline = time.monotonic() + timeout
        while True:
            while len(self.buf) >= 9:
                n = self.buf[0] << 16 | self.buf[1] << 8 | self.buf[2]
                if len(self.buf) < 9 + n:
                    break
                ftype, flags = self.buf[3], self.buf[4]
                stream = struct.unpack(">I", self.buf[5:9])[0] & 0x7FFFFFFF
                f = (ftype, flags, stream, self.buf[9:9 + n])
                self.buf = self.buf[9 + n:]
                out.append(f)
                if ftype == SETTINGS and not flags & 1:
                    try:
                        self.send(self.frame(SETTINGS, 1, 0, b""))
                    except OSError:
                        pass  # the peer closed: reading tells the rest
                if until and until(f):
                    return out
            left = deadline - time.monotonic()
            if left <= 0:
                return out
            self.sock.settimeout(left)
            try:
                b = self.sock.recv(65536)
            except socket.timeout:
                return out
            except OSError:
                b = b""
            if not b:
                out.append(None)
                return out
            self.buf += b

    def closed_by_peer(self, timeout=2.0):
        frames = self.read_frames(timeout, until=lambda f: f is None)
        return bool(frames) and frames[-1] is None

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def stream_ended(frames, stream):
    """True if the server ended |stream|: HEADERS with END_STREAM or RST_STREAM."""
    for f in frames:
        if f is None:
            continue
        ftype, flags, sid, _ = f
        if sid == stream and (ftype == RST_STREAM or (ftype == HEADERS and flags & END_STREAM)):
            return True
    return False


def grpc_frame(msg, declared=None, flag=0):
    """A gRPC length-prefixed message (|declared| overrides the length)."""
    return struct.pack(">BI", flag, len(msg) if declared is None else declared) + msg


# ---- memory -----------------------------------------------------------------------

def proc_status_kb(pid, key):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class RssWatch:
    """Samples a process's VmRSS every |step| seconds in a thread."""

    def __init__(self, pid, step=0.02):
        self.pid = pid
        self.step = step
        self.peak_kb = proc_status_kb(pid, "VmRSS")
        self.stop = threading.Event()
        self.th = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.is_set():
            self.peak_kb = max(self.peak_kb, proc_status_kb(self.pid, "VmRSS"))
            self.stop.wait(self.step)

    def __enter__(self):
        self.th.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.th.join()
        self.peak_kb = max(self.peak_kb, proc_status_kb(self.pid, "VmRSS"))


# ---- the world --------------------------------------------------------------------

class World:
    """kubesim with the CRDs, namespace NS with the legitimate Gateway, and
    one replica (no election: it writes statuses itself). |extra| are more
    flags for `coxswain run`."""

    def __init__(self, extra=(), kubesim_args=(), program=None, prefix=(), share_kubesim=None):
        self.program = program or os.path.basename(sys.argv[0])
        self.owns_kubesim = share_kubesim is None
        if share_kubesim is not None:
            # a second replica on the same objects (another World's)
            self.ks, self.api = share_kubesim.ks, cxd.Api(share_kubesim.ks)
            name = "hostile-%d" % id(self)
        else:
            self.ks = cxd.start_kubesim(list(kubesim_args))
            self.api = cxd.Api(self.ks)
            name = "hostile-0"
            self._create_world()
        self.replica = cxd.Replica(self.ks, name, elect=False, extra=list(extra), start=False)
        self.replica.prefix = list(prefix)
        self.replica.start()
        cxd.wait_ready([self.replica], 30)
        cxd.wait_for(lambda: LEGIT_LISTENER in legit_listeners(self.replica.xds), 20,
                     what="the legitimate listener served")

    def _create_world(self):
        cxd.namespace(self.api, "coxswain-system")
        cxd.namespace(self.api, NS)
        for o in (
            cxd.gateway(NS, "legit"),
            cxd.upstream_static(NS, "legit-backend", [("127.0.0.1", 50051)]),
            cxd.virtual_service(NS, "legit", [LEGIT_LISTENER], [cxd.route("/", "legit-backend")]),
        ):
            st, out = self.api.create(o)
            if st != 201:
                raise AssertionError("create %s: %s %s" % (o["kind"], st, out))

    def metric(self, name, **labels):
        return self.replica.metric(name, **labels)

    def cpu_seconds(self):
        """User + system CPU of the replica so far (from /proc)."""
        with open("/proc/%d/stat" % self.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    @property
    def pid(self):
        return self.replica.proc.pid

    def rss_kb(self):
        return proc_status_kb(self.pid, "VmRSS")

    def status(self, kind, name, ns=NS):
        st, o = self.api.get(kind, ns, name)
        return (o.get("status") or {}) if st == 200 else None

    def assert_healthy(self, rss_bound_kb=None, peak_kb=None):
        r = self.replica
        if not r.alive():
            raise AssertionError("replica died (exit %s); log tail:\n%s"
                                 % (r.proc.returncode, r.log()[-3000:]))
        if rss_bound_kb is not None and peak_kb is not None and peak_kb > rss_bound_kb:
            raise AssertionError("peak RSS %d KB over the bound %d KB" % (peak_kb, rss_bound_kb))
        names = legit_listeners(r.xds)
        check(LEGIT_LISTENER in names, "legitimate proxy served %r" % names)
        st, _ = r.http("/healthz")
        check_eq(st, 200, "/healthz")

    def attack(self, name, rss_mb):
        """Context manager around one attack: RSS sampled, health asserted
        after, one result line recorded."""
        return _Attack(self, name, rss_mb * 1024 * slowdown())

    def close(self):
        try:
            if self.replica:
                self.replica.stop()
        finally:
            self.api.close()
            if self.owns_kubesim:
                self.ks.close()


class _Attack:
    def __init__(self, world, name, bound_kb):
        self.w, self.name, self.bound_kb = world, name, bound_kb

    def __enter__(self):
        self.t0 = time.monotonic()
        self.watch = RssWatch(self.w.pid).__enter__()
        return self

    def __exit__(self, etype, exc, tb):
        self.watch.__exit__(etype, exc, tb)
        ok, crashed = False, not self.w.replica.alive()
        try:
            if etype is None:
                self.w.assert_healthy(self.bound_kb, self.watch.peak_kb)
                ok = True
        finally:
            _record(self.w.program, self.name, ok, crashed, self.watch.peak_kb, self.bound_kb,
                    time.monotonic() - self.t0)
        return False


def _record(program, case, ok, crashed, peak_kb, bound_kb, seconds):
    path = os.environ.get("HOSTILE_RESULTS")
    if not path:
        return
    line = json.dumps({"program": program, "case": case, "ok": ok, "crashed": crashed,
                       "peak_rss_kb": peak_kb, "bound_kb": bound_kb,
                       "seconds": round(seconds, 3)})
    with open(path, "a") as f:
        f.write(line + "\n")
