"""Hostile clients of the admin HTTP server (tests/hostile/hostilelib.py):
oversized headers and bodies, slow senders, idle connection floods, huge
REST discovery requests, deep JSON, /debug/snapshot in a crowd. After
each: the replica is alive, under its RSS bound, and a legitimate proxy is
served (over ADS) while /healthz answers.
"""
import http.client
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostilelib as H  # noqa: E402
import replicas as R  # noqa: E402
from hostilelib import check, check_eq  # noqa: E402

t = H.Tap()
w = None
TIMEOUT_S = 2  # --admin-timeout in this world
DEADLINE_S = 4  # --admin-request-deadline
MAX_CONNS = 64  # --admin-max-connections


def raw(data, read=True, timeout=5):
    """Sends |data| on a new admin connection; returns what came back."""
    s = socket.create_connection(("127.0.0.1", w.replica.admin), timeout=timeout)
    try:
        try:
            s.sendall(data)
        except OSError:
            pass  # refused while we were still writing
        out = b""
        while read:
            try:
                b = s.recv(65536)
            except OSError:
                break
            if not b:
                break
            out += b
        return out
    finally:
        s.close()


def status_of(resp):
    try:
        return int(resp.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None


def rest(body, what="clusters"):
    c = http.client.HTTPConnection("127.0.0.1", w.replica.admin, timeout=10)
    try:
        c.request("POST", "/v3/discovery:" + what, body=body)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def case_huge_headers():
    """A 100 KB header: refused (the cap is 8 KB), nothing kept."""
    with w.attack("admin-huge-headers", rss_mb=80):
        resp = raw(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n")
        check(status_of(resp) in (None, 400, 413, 431), "answer: %r" % resp[:80])
        resp = raw(b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-h: v\r\n" * 5000 + b"\r\n")
        check(status_of(resp) in (None, 400, 413, 431), "many headers: %r" % resp[:80])


def case_huge_body():
    """A 20 MB body to REST discovery: refused at 1 MiB."""
    with w.attack("admin-huge-body", rss_mb=80):
        head = (b"POST /v3/discovery:clusters HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                % (20 << 20))
        resp = raw(head + b"{" * (2 << 20))
        check(status_of(resp) in (None, 400, 413), "answer: %r" % resp[:80])


def case_slowloris():
    """200 connections that send half a request line and headers, then
    nothing: each is closed after --admin-timeout of silence (or pushed out
    by newer ones past --admin-max-connections)."""
    socks = []
    with w.attack("admin-slowloris", rss_mb=80):
        try:
            for _ in range(200):
                s = socket.create_connection(("127.0.0.1", w.replica.admin), timeout=5)
                s.sendall(b"GET /metrics HTTP/1.1\r\nX-a: aaaa")
                socks.append(s)
            st, _ = w.replica.http("/healthz")
            check_eq(st, 200, "healthz meanwhile")
            time.sleep(TIMEOUT_S + 1.5)
            closed = 0
            for s in socks:
                s.settimeout(0.05)
                try:
                    if s.recv(1024) == b"":
                        closed += 1
                except socket.timeout:
                    pass
                except OSError:
                    closed += 1
            check_eq(closed, 200, "silent connections closed after %d s" % TIMEOUT_S)
        finally:
            for s in socks:
                s.close()


def closed_by_server(s):
    s.settimeout(0.05)
    try:
        return s.recv(1024) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def case_trickler():
    """20 clients each send one byte of their request headers every 0.5 s,
    inside --admin-timeout: evhttp's read timeout never fires, the request
    deadline closes them all; probes are answered meanwhile."""
    socks, stop = [], threading.Event()

    def trickle(s):
        try:
            s.sendall(b"GET /metrics HTTP/1.1\r\n")
            while not stop.is_set():
                s.sendall(b"X")
                stop.wait(0.5)
        except OSError:
            pass

    with w.attack("admin-trickler", rss_mb=80):
        before = w.metric("coxswain_admin_connections_closed_total", reason="deadline")
        ths = []
        try:
            for _ in range(20):
                s = socket.create_connection(("127.0.0.1", w.replica.admin), timeout=5)
                socks.append(s)
                th = threading.Thread(target=trickle, args=(s,), daemon=True)
                th.start()
                ths.append(th)
            t0 = time.monotonic()
            while time.monotonic() - t0 < DEADLINE_S + 3:
                st, _ = w.replica.http("/healthz")
                check_eq(st, 200, "healthz meanwhile")
                time.sleep(0.5)
            closed = sum(1 for s in socks if closed_by_server(s))
            check_eq(closed, 20, "tricklers closed past the %d s deadline" % DEADLINE_S)
            check(w.metric("coxswain_admin_connections_closed_total", reason="deadline")
                  >= before + 20, "counted")
        finally:
            stop.set()
            for s in socks:
                s.close()
            for th in ths:
                th.join(2)


def case_connection_cap():
    """300 half-sent requests against a cap of 64 connections: the replica
    soon holds no more than the cap (a cut connection's descriptor goes when
    evhttp has let go of it), the oldest unanswered ones are pushed out, and
    every probe is served. The newest connections are still open when the
    cap is seen to hold: it was the cap, not --admin-timeout, that closed
    the others."""
    socks = []
    with w.attack("admin-connection-cap", rss_mb=80):
        before = w.metric("coxswain_admin_connections_closed_total", reason="evicted")
        fds_before = len(os.listdir("/proc/%d/fd" % w.pid))
        try:
            for i in range(300):
                s = socket.create_connection(("127.0.0.1", w.replica.admin), timeout=5)
                s.sendall(b"GET /metrics HTTP/1.1\r\nX-a: a")
                socks.append(s)
                if i % 50 == 49:
                    st, _ = w.replica.http("/healthz")
                    check_eq(st, 200, "healthz at %d connections" % (i + 1))
            last_sent = time.monotonic()

            def held():
                fds = len(os.listdir("/proc/%d/fd" % w.pid)) - fds_before
                gauge = w.metric("coxswain_admin_connections")
                evicted = w.metric("coxswain_admin_connections_closed_total",
                                   reason="evicted") - before
                ok = (fds <= MAX_CONNS + 8 and gauge <= MAX_CONNS + 1
                      and evicted >= 300 - MAX_CONNS - 2)
                return (fds, gauge, evicted) if ok else None

            # The descriptors of cut connections go within milliseconds; the
            # one-second sweep is the backstop. Wait for it, no longer than
            # the newest connections' --admin-timeout allows.
            try:
                R.wait_for(held, TIMEOUT_S - 0.3, what="the cap to hold")
            except AssertionError as e:
                check(False, "%s; descriptors %d more than before, gauge %s, evicted %s (cap %d)"
                      % (e, len(os.listdir("/proc/%d/fd" % w.pid)) - fds_before,
                         w.metric("coxswain_admin_connections"),
                         w.metric("coxswain_admin_connections_closed_total", reason="evicted")
                         - before, MAX_CONNS))
            waited = time.monotonic() - last_sent
            newest_open = sum(1 for s in socks[-32:] if not closed_by_server(s))
            check(waited < TIMEOUT_S, "the cap held %.2f s after the last connection" % waited)
            check_eq(newest_open, 32, "the 32 newest connections still open (not timed out)")
            closed = sum(1 for s in socks[:200] if closed_by_server(s))
            check_eq(closed, 200, "the oldest were pushed out")
        finally:
            for s in socks:
                s.close()


def case_idle_connection_flood():
    """500 connections that never send anything: closed after the timeout,
    /healthz answered meanwhile."""
    socks = []
    with w.attack("admin-idle-flood", rss_mb=80):
        try:
            for _ in range(500):
                socks.append(socket.create_connection(("127.0.0.1", w.replica.admin), timeout=5))
            st, _ = w.replica.http("/healthz")
            check_eq(st, 200, "healthz during the flood")
            time.sleep(TIMEOUT_S + 1.5)
            alive = 0
            for s in socks:
                s.settimeout(0.01)
                try:
                    if s.recv(1) != b"":
                        alive += 1
                except socket.timeout:
                    alive += 1
                except OSError:
                    pass
            check_eq(alive, 0, "idle connections left open")
        finally:
            for s in socks:
                s.close()


def case_rest_many_names():
    """REST discovery with 100,000 names: answered at once (each name looked
    up in the sorted set), and 100,001 names is a 400."""
    names = ["n%d" % i for i in range(99999)]
    with w.attack("admin-rest-many-names", rss_mb=120):
        body = json.dumps({"node": {"id": "x", "metadata": {"coxswain.dev/gateway": H.LEGIT_GW}},
                           "resource_names": names + [H.LEGIT_LISTENER]})
        t0 = time.monotonic()
        st, out = rest(body, "listeners")
        dt = time.monotonic() - t0
        check_eq(st, 200, repr(out[:200]))
        got = [r["name"] for r in json.loads(out)["resources"]]
        check_eq(got, [H.LEGIT_LISTENER])
        check(dt < 2 * H.slowdown(), "answered in %.2f s" % dt)
        st, out = rest(json.dumps({"resource_names": names + ["a", "b"]}))
        check_eq(st, 400, repr(out[:200]))
        check(b"too many" in out, repr(out[:200]))


def case_rest_deep_json():
    """JSON nested 100,000 levels deep: a 400, no deep recursion."""
    with w.attack("admin-rest-deep-json", rss_mb=80):
        st, out = rest(b'{"node":' + b"[" * 100000 + b"]" * 100000 + b"}")
        check_eq(st, 400, repr(out[:200]))


def case_snapshot_crowd():
    """50 clients ask for /debug/snapshot at once: all answered with the
    same document; /healthz answers meanwhile."""
    results = []

    def one():
        try:
            results.append(w.replica.http("/debug/snapshot"))
        except OSError as e:
            results.append((None, str(e)))

    with w.attack("admin-snapshot-crowd", rss_mb=100):
        ths = [threading.Thread(target=one) for _ in range(50)]
        for th in ths:
            th.start()
        st, _ = w.replica.http("/healthz")
        for th in ths:
            th.join()
        check_eq(st, 200)
        codes = sorted(set(r[0] for r in results))
        check(set(codes) <= {200, 503}, "codes %r" % codes)
        bodies = set(r[1] for r in results if r[0] == 200)
        check_eq(len(bodies), 1, "one document")
        doc = json.loads(bodies.pop())
        check(H.LEGIT_GW in json.dumps(doc["snapshot"]), "the legitimate Gateway in it")


def setup():
    global w
    w = H.World(extra=["--admin-timeout", "%ds" % TIMEOUT_S,
                       "--admin-request-deadline", "%ds" % DEADLINE_S,
                       "--admin-max-connections", str(MAX_CONNS)])


t.case("setup", setup)
for name, fn in (("100 KB header and 5,000 headers", case_huge_headers),
                 ("20 MB body", case_huge_body),
                 ("slowloris: 200 half-sent requests", case_slowloris),
                 ("500 idle connections", case_idle_connection_flood),
                 ("tricklers: a byte per 0.5 s", case_trickler),
                 ("300 half-sent requests over a cap of 64", case_connection_cap),
                 ("REST discovery with 100,000 names", case_rest_many_names),
                 ("REST discovery with deep JSON", case_rest_deep_json),
                 ("/debug/snapshot crowd", case_snapshot_crowd)):
    if w is not None:
        t.case(name, fn)
if w is not None:
    w.close()
t.done()
