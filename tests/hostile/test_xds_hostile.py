"""Hostile xDS clients against a live replica (tests/hostile/hostilelib.py).

Each case attacks the replica's xDS port without credentials (what anyone
who reaches the port can do), then the harness asserts the replica is
alive, its peak RSS stayed under the stated bound and a legitimate proxy of
another Gateway is still served.
"""
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostilelib as H  # noqa: E402
from hostilelib import check, check_eq  # noqa: E402

t = H.Tap()
w = None


def nested_list_values(depth):
    """google.protobuf.Value nesting |depth| ListValues (Value.list_value 6,
    ListValue.values 1), built outside-in without quadratic copying."""
    sizes = [0]
    for _ in range(depth):
        lv = 1 + len(H.varint(sizes[-1])) + sizes[-1]   # ListValue{values: inner}
        sizes.append(1 + len(H.varint(lv)) + lv)        # Value{list_value: ...}
    parts = []
    for i in range(depth, 0, -1):
        inner = sizes[i - 1]
        lv = 1 + len(H.varint(inner)) + inner
        parts.append(b"\x32" + H.varint(lv) + b"\x0a" + H.varint(inner))
    return b"".join(parts)


def nested_request(depth):
    value = nested_list_values(depth)
    md = H.ld(1, H.ld(1, "deep") + H.ld(2, value))     # Struct{fields: {"deep": value}}
    return H.ads_request(H.LDS, node_bytes=H.node("deep", metadata=md))


def case_nesting_20000():
    """The 155 KB request whose node.metadata nests 20,000 ListValues: it
    ran protobuf-c's recursive decoder off the stack."""
    req = nested_request(20000)
    check(140000 < len(req) < 170000, "request is %d bytes" % len(req))
    with w.attack("nesting-20000", rss_mb=80):
        code, details, _ = H.grpc_call(w.replica.xds, [req], wait_close=True)
        check_eq(code, "INVALID_ARGUMENT", details)
        check("nest" in details and "32" in details, "message names the limit: %r" % details)


def case_nesting_limit_edges():
    """Depth 32 (node.metadata's own levels included) is served; one more
    level is refused; the refusal ends that stream only."""
    with w.attack("nesting-edges", rss_mb=80):
        ok_req = nested_request(12)
        code, details, resps = H.grpc_call(w.replica.xds, [ok_req])
        check_eq(code, "OK", "modest nesting is served: %s" % details)
        code, details, _ = H.grpc_call(w.replica.xds, [nested_request(64)], wait_close=True)
        check_eq(code, "INVALID_ARGUMENT", details)


def case_nesting_many_streams():
    """Twenty connections send the deep request at once."""
    req = nested_request(20000)
    codes = []

    def one():
        codes.append(H.grpc_call(w.replica.xds, [req], wait_close=True)[0])

    with w.attack("nesting-parallel", rss_mb=100):
        ths = [threading.Thread(target=one) for _ in range(20)]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        check_eq(sorted(set(codes)), ["INVALID_ARGUMENT"])


def case_junk_message():
    with w.attack("junk-message", rss_mb=80):
        code, details, _ = H.grpc_call(w.replica.xds, [b"\xff" * 64], wait_close=True)
        check_eq(code, "INVALID_ARGUMENT", details)


def case_huge_declared_length():
    """A message prefix declaring 4 GiB: refused before any of it is held."""
    with w.attack("huge-declared-length", rss_mb=80):
        c = H.RawH2(w.replica.xds)
        try:
            c.headers(1, H.grpc_headers())
            c.data(1, H.grpc_frame(b"", declared=0xFFFFFFFF) + b"x" * 1000)
            frames = c.read_frames(3, until=lambda f: f is not None and H.stream_ended([f], 1))
            check(H.stream_ended(frames, 1), "stream 1 ended by the server")
        finally:
            c.close()


def case_compressed_and_bad_flag():
    with w.attack("compressed-flag", rss_mb=80):
        for flag in (1, 7):
            c = H.RawH2(w.replica.xds)
            try:
                c.headers(1, H.grpc_headers())
                c.data(1, H.grpc_frame(b"abc", flag=flag))
                frames = c.read_frames(3, until=lambda f: f is not None and
                                       H.stream_ended([f], 1))
                check(H.stream_ended(frames, 1), "flag %d: stream ended" % flag)
            finally:
                c.close()


def case_not_http2():
    """Bytes that are not an HTTP/2 preface: the connection is closed."""
    with w.attack("not-http2", rss_mb=80):
        c = H.RawH2(w.replica.xds, preface=False)
        try:
            try:
                c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"\x00" * 4096)
            except OSError:
                pass  # reset while we were still writing: closed as well
            check(c.closed_by_peer(5), "connection closed")
        finally:
            c.close()


def fill_partial(c, streams, per_stream, wait=1.0):
    """Opens |streams| calls on |c|, each sending |per_stream| bytes of a
    message declared 4 MiB - 1 long (never completed). Returns how many
    calls the server ended (budget refusals)."""
    chunk = b"\x00" * 16000
    for i in range(streams):
        sid = 1 + 2 * i
        c.headers(sid, H.grpc_headers())
        c.data(sid, H.grpc_frame(b"", declared=(4 << 20) - 1))
        sent = 0
        try:
            while sent < per_stream:
                c.data(sid, chunk)
                sent += len(chunk)
        except OSError:
            break
    frames = c.read_frames(wait, until=lambda f: f is None)
    return sum(1 for i in range(streams) if H.stream_ended(frames, 1 + 2 * i))


def case_partial_messages_one_connection():
    """One connection, 20 streams, each sending 3.9 MB of a 4 MB message it
    never completes (78 MB held without a budget): a connection may take a
    quarter of the budget (16 MiB), the rest is refused."""
    with w.attack("partial-messages-one-connection", rss_mb=64):
        c = H.RawH2(w.replica.xds, timeout=20)
        try:
            ended = fill_partial(c, 20, 3900000)
            check(ended >= 16, "%d of 20 calls refused" % ended)
        finally:
            c.close()


def case_partial_messages_many_connections():
    """Eight connections, twelve calls each, every call declaring 4 MiB and
    sending 100 KB: the budget is charged with the declared length, so the
    calls past 64 MiB in all are refused though little was sent."""
    conns = []
    with w.attack("partial-messages-many-connections", rss_mb=140):
        try:
            for _ in range(8):
                c = H.RawH2(w.replica.xds, timeout=20)
                conns.append(c)
                fill_partial(c, 12, 100000, wait=0.2)
            used = w.metric("coxswain_xds_memory_budget_used_bytes")
            check((48 << 20) <= used <= 64 << 20, "budget used %d" % used)
            refused = w.metric("coxswain_xds_refused_total", reason="memory_budget")
            check(refused >= 80, "refusals counted: %d" % refused)
        finally:
            for c in conns:
                c.close()
    cxd_wait(lambda: w.metric("coxswain_xds_memory_budget_used_bytes") < (1 << 20), 5,
             "budget given back")


def case_nack_flood():
    """A stream NACKs one response 2,000 times with control characters in
    the text: counted once, logged at most a burst of lines, escaped; many
    streams NACKing: the Gateway's status carries no control character."""
    esc = "line\n2026-01-01T00:00:00Z error daemon: forged\x1b[2J" + "A" * 900
    with w.attack("nack-flood", rss_mb=80):
        first = H.ads_request(H.LDS, node_bytes=H.node("nacker", gateway=H.LEGIT_GW))
        code, details, resps = H.grpc_call(w.replica.xds, [first])
        check_eq(code, "OK", details)
        version, nonce, _ = H.response_info(resps[0])
        before = w.metric("coxswain_xds_nacks_total")
        nack = H.ads_request(H.LDS, version=version, nonce=nonce, error=(3, esc))
        H.grpc_call(w.replica.xds, [first] + [nack] * 2000, want=2, timeout=1.5)
        after = w.metric("coxswain_xds_nacks_total")
        check(after - before <= 1, "NACKs counted %d" % (after - before))
        log = w.replica.log()
        check("\x1b" not in log, "no raw ESC in the log")
        check("\nforged" not in log and "\n2026-01-01T00:00:00Z error" not in log,
              "no forged line in the log")
        check(log.count("NACK from node") <= 3, "NACK lines: %d" % log.count("NACK from node"))
    with w.attack("nack-flood-streams", rss_mb=80):
        for i in range(10):
            first = H.ads_request(H.LDS, node_bytes=H.node("nacker-%d" % i, gateway=H.LEGIT_GW))
            code, _, resps = H.grpc_call(w.replica.xds, [first])
            check_eq(code, "OK")
            version, nonce, _ = H.response_info(resps[0])
            H.grpc_call(w.replica.xds, [first, H.ads_request(H.LDS, version=version, nonce=nonce,
                                                            error=(3, esc))], want=2,
                        timeout=0.3)
        text = json.dumps(w.status("Gateway", "legit"))
        check("\\u001b" not in text, "no ESC in the status: %s" % text[:300])


def case_junk_groups():
    """3,000 streams, each naming a node group no Gateway has: at most
    1,000 such groups are tracked at once, they go with their streams, and
    the legitimate Gateway's proxies are admitted throughout."""
    conns = []
    with w.attack("junk-groups", rss_mb=120):
        try:
            for ci in range(30):
                c = H.RawH2(w.replica.xds, timeout=10)
                conns.append(c)
                for i in range(100):
                    sid = 1 + 2 * i
                    req = H.ads_request(H.CDS, node_bytes=H.node("j", cluster="junk-%d-%d" % (ci, i)))
                    c.headers(sid, H.grpc_headers())
                    c.data(sid, H.grpc_frame(req))
            for c in conns:
                c.read_frames(0.05)
            groups = w.metric("coxswain_xds_node_groups")
            check(groups <= 1001, "groups tracked: %d" % groups)
            check(w.metric("coxswain_xds_refused_total", reason="groups") >= 1900, "refused")
            check(H.LEGIT_LISTENER in H.legit_listeners(w.replica.xds), "legit while full")
        finally:
            for c in conns:
                c.close()
    cxd_wait(lambda: w.metric("coxswain_xds_node_groups") <= 1, 10, "junk groups evicted")


def case_idle_connections_closed():
    """Connections that finish the HTTP/2 preface but never open a stream
    are closed after --xds-idle-connection-timeout (1 s here)."""
    conns = []
    with w.attack("idle-connections", rss_mb=80):
        before = w.metric("coxswain_xds_idle_connections_closed_total")
        try:
            for _ in range(50):
                conns.append(H.RawH2(w.replica.xds))
            t0 = time.monotonic()
            closed = sum(1 for c in conns if c.closed_by_peer(4 - (time.monotonic() - t0)))
            check_eq(closed, 50, "idle connections closed")
        finally:
            for c in conns:
                c.close()
        cxd_wait(lambda: w.metric("coxswain_xds_idle_connections_closed_total") - before >= 50, 3,
                 "counted")


def case_out_of_descriptors():
    """A replica allowed 64 descriptors gets 150 connections: accept()
    fails with EMFILE; the server pauses accepting instead of spinning
    (CPU stays low) and serves again once descriptors are back."""
    w2 = H.World(extra=["--xds-idle-connection-timeout", "1s"],
                 prefix=["prlimit", "--nofile=64:64"], share_kubesim=w)
    socks = []
    try:
        with w2.attack("out-of-descriptors", rss_mb=80):
            for _ in range(150):
                try:
                    socks.append(socket.create_connection(("127.0.0.1", w2.replica.xds),
                                                          timeout=2))
                except OSError:
                    break
            cpu0 = w2.cpu_seconds()
            time.sleep(1.0)
            used = w2.cpu_seconds() - cpu0
            check(used < 0.5, "CPU while out of descriptors: %.2f s in 1 s" % used)
            check(w2.metric("coxswain_xds_accept_backoffs_total") >= 1, "backoff counted")
            for s in socks:
                s.close()
            socks = []
            time.sleep(1.2)  # the pause ends; the queued connections are taken and go
    finally:
        for s in socks:
            s.close()
        w2.close()


def cxd_wait(cond, timeout, what):
    H.cxd.wait_for(cond, timeout, what=what)


def case_stream_storm():
    """Streams opened and reset as fast as possible on one connection."""
    with w.attack("stream-storm", rss_mb=80):
        c = H.RawH2(w.replica.xds)
        try:
            for i in range(2000):
                sid = 1 + 2 * i
                c.headers(sid, H.grpc_headers())
                c.send(H.RawH2.frame(H.RST_STREAM, 0, sid, b"\x00\x00\x00\x08"))
            c.read_frames(1)
        except OSError:
            pass  # the server may close a connection that floods it
        finally:
            c.close()


def case_connection_flood():
    """Hundreds of idle TCP connections that never speak."""
    socks = []
    with w.attack("connection-flood", rss_mb=100):
        try:
            for _ in range(300):
                try:
                    socks.append(socket.create_connection(("127.0.0.1", w.replica.xds), timeout=2))
                except OSError:
                    break
            time.sleep(0.2)
        finally:
            for s in socks:
                s.close()


def setup():
    global w
    w = H.World(extra=["--xds-idle-connection-timeout", "1s"])


t.case("setup", setup)
for name, fn in (("nesting: 20,000 ListValues in node.metadata", case_nesting_20000),
                 ("nesting: limit edges", case_nesting_limit_edges),
                 ("nesting: 20 connections at once", case_nesting_many_streams),
                 ("junk bytes as a DiscoveryRequest", case_junk_message),
                 ("4 GiB declared message length", case_huge_declared_length),
                 ("compressed and unknown message flags", case_compressed_and_bad_flag),
                 ("not HTTP/2 at all", case_not_http2),
                 ("partial messages: one connection, 20 streams",
                  case_partial_messages_one_connection),
                 ("partial messages: eight connections", case_partial_messages_many_connections),
                 ("NACK flood", case_nack_flood),
                 ("3,000 junk node groups", case_junk_groups),
                 ("idle connections closed", case_idle_connections_closed),
                 ("out of file descriptors", case_out_of_descriptors),
                 ("stream storm (open + reset)", case_stream_storm),
                 ("idle connection flood", case_connection_flood)):
    if w is not None:
        t.case(name, fn)
if w is not None:
    w.close()
t.done()
