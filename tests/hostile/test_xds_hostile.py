"""Hostile xDS clients against a live replica (tests/hostile/hostilelib.py).

Each case attacks the replica's xDS port without credentials (what anyone
who reaches the port can do), then the harness asserts the replica is
alive, its peak RSS stayed under the stated bound and a legitimate proxy of
another Gateway is still served.
"""
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


def case_partial_messages_many_streams():
    """One connection, 100 streams, each holding a partly sent 4 MB message:
    the server must not buffer 400 MB for it."""
    with w.attack("partial-messages", rss_mb=120):
        c = H.RawH2(w.replica.xds)
        try:
            chunk = b"\x00" * 16000
            for i in range(100):
                sid = 1 + 2 * i
                c.headers(sid, H.grpc_headers())
                c.data(sid, H.grpc_frame(b"", declared=(4 << 20) - 1) + chunk)
            c.read_frames(1)
        finally:
            c.close()


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
    w = H.World()


t.case("setup", setup)
for name, fn in (("nesting: 20,000 ListValues in node.metadata", case_nesting_20000),
                 ("nesting: limit edges", case_nesting_limit_edges),
                 ("nesting: 20 connections at once", case_nesting_many_streams),
                 ("junk bytes as a DiscoveryRequest", case_junk_message),
                 ("4 GiB declared message length", case_huge_declared_length),
                 ("compressed and unknown message flags", case_compressed_and_bad_flag),
                 ("not HTTP/2 at all", case_not_http2),
                 ("100 streams with partial messages", case_partial_messages_many_streams),
                 ("stream storm (open + reset)", case_stream_storm),
                 ("idle connection flood", case_connection_flood)):
    if w is not None:
        t.case(name, fn)
if w is not None:
    w.close()
t.done()
