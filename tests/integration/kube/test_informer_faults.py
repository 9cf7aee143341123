"""Informers against kubesim under faults. Every case ends with the same
proof: the informer's cache (key -> resourceVersion, from `coxswain
kube-watch`'s dump) equals a fresh list from the server, and the change log
has every object's resourceVersions strictly increasing (order per object
kept, no change reported twice).

Cases: a watch dropped mid-stream; compaction (410) during churn; 500s and
429 Retry-After bursts; a partition then heal (30 s, ~5 s under
COXSWAIN_SANITIZE); kubesim restarted with --state; 10,000 changes in a
burst; token rotation. kubesim serves them as a 1.28 cluster does (WatchList
off: the informer lists then watches; bookmarks only once a resource moved;
HTTP/2 over TLS); the TLS case runs the streaming-list path (WatchList on,
over HTTP/1.1). A kubesim without a needed admin feature makes that case
SKIP with the reason (never a silent pass)."""
import http.client
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))
from tap import Tap, check, check_eq, SkipCase  # noqa: E402
try:
    from kubesim import KubeSim, binary as kubesim_binary  # noqa: E402
except ImportError:  # kubesim's launcher has not landed
    KubeSim = None

TOP = os.environ.get("COXSWAIN_TOP") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
BUILD = os.environ.get("COXSWAIN_BUILD") or os.path.join(TOP, "build")
COXSWAIN = os.path.join(BUILD, "bin", "coxswain")
SANITIZE = os.environ.get("COXSWAIN_SANITIZE", "0") not in ("", "0")
SLOW = 3.0 if SANITIZE else 1.0
NS = "churn"
USER = "informer"
TOKEN = "tok-informer-1"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write_kubeconfig(path, port, token_file, ca_file):
    with open(path, "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                "clusters:\n- name: t\n  cluster:\n    server: https://127.0.0.1:%d\n"
                "    certificate-authority: %s\n"
                "contexts:\n- name: t\n  context: {cluster: t, user: u, namespace: %s}\n"
                "users:\n- name: u\n  user:\n    tokenFile: %s\n"
                % (port, ca_file, NS, token_file))


def write_file(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class Sim:
    """kubesim with a token for the informer's user, on a port picked free
    (kept across restarts), plus a kubeconfig whose token comes from a
    file (so it can rotate)."""

    def __init__(self, state=False, extra=()):
        self.port = free_port()
        self.ks = KubeSim(args=["--listen", "127.0.0.1:%d" % self.port,
                                "--bookmark-interval", "1s"] + list(extra),
                          tokens={TOKEN: USER}, state=state, profile="1.28", tls=True)
        self.token_file = os.path.join(self.ks.dir, "token")
        write_file(self.token_file, TOKEN + "\n")
        self.kubeconfig = os.path.join(self.ks.dir, "informer.kubeconfig")
        write_kubeconfig(self.kubeconfig, self.ks.port, self.token_file, self.ks.ca_file)
        self.conn = None
        st, _ = self.ks.create("namespaces", {"metadata": {"name": NS}})
        check(st in (200, 201, 409), "create namespace: %s" % st)

    def close(self):
        if self.conn:
            self.conn.close()
        self.ks.close()

    # A persistent connection for the churn (kubesim.request reconnects
    # every time, too slow for 10,000 writes).
    def req(self, method, path, body=None):
        for attempt in range(3):
            try:
                if self.conn is None:
                    self.conn = self.ks.connection(30)
                hdrs = {}
                data = None
                if body is not None:
                    data = json.dumps(body).encode()
                    hdrs["Content-Type"] = "application/json"
                self.conn.request(method, path, body=data, headers=hdrs)
                resp = self.conn.getresponse()
                payload = resp.read()
                return resp.status, payload
            except (OSError, http.client.HTTPException):
                if self.conn:
                    self.conn.close()
                self.conn = None
                time.sleep(0.05)
        raise AssertionError("request %s %s failed 3 times" % (method, path))

    def put_cm(self, name, value):
        path = "/api/v1/namespaces/%s/configmaps" % NS
        body = {"metadata": {"name": name, "namespace": NS}, "data": {"v": str(value)}}
        st, _ = self.req("PUT", path + "/" + name, body)
        if st == 404:
            st, _ = self.req("POST", path, body)
        return st

    def delete_cm(self, name):
        st, _ = self.req("DELETE", "/api/v1/namespaces/%s/configmaps/%s" % (NS, name))
        return st

    def fresh_list(self):
        """key -> RV of every ConfigMap in NS, paging like kubectl."""
        out, cont = {}, None
        while True:
            q = "?limit=250" + ("&continue=" + cont if cont else "")
            st, body = self.req("GET", "/api/v1/namespaces/%s/configmaps%s" % (NS, q))
            check_eq(st, 200, "fresh list")
            doc = json.loads(body)
            for it in doc["items"]:
                md = it["metadata"]
                out["%s/%s" % (md["namespace"], md["name"])] = md["resourceVersion"]
            cont = doc["metadata"].get("continue")
            if not cont:
                return out

    def admin(self, method, path, body=None, feature=None):
        """Admin call; a 404 means this kubesim lacks the feature: SKIP."""
        st, out = self.ks.request(method, "/_sim" + path, body)
        if st == 404 and feature:
            raise SkipCase("kubesim has no %s (/_sim%s) yet" % (feature, path))
        check(st < 300, "admin %s %s: %s %s" % (method, path, st, out))
        return out

    def fault(self, **rule):
        return self.admin("POST", "/faults", rule, feature="fault injection")

    def end_watches(self):
        self.admin("POST", "/end-watches", {"user": USER}, feature="end-watches")


class Informer:
    """`coxswain kube-watch` on ConfigMaps of NS; collects its JSON lines."""

    def __init__(self, sim, *args):
        self.proc = subprocess.Popen(
            [COXSWAIN, "kube-watch", "--kubeconfig", sim.kubeconfig, "--resource", "configmaps",
             "--kind", "ConfigMap", "--namespace", NS, "--identity", "itest"] + list(args),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            bufsize=1)
        self.lines = queue.Queue()
        self.events = []  # add/update/delete, in order
        self.synced = threading.Event()
        self.dumps = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.stderr = []
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            ev = json.loads(line)
            kind = ev["event"]
            if kind in ("add", "update", "delete"):
                self.events.append(ev)
            elif kind == "synced":
                self.synced.set()
            elif kind == "dump":
                self.dumps.put(ev)

    def _read_err(self):
        for line in self.proc.stderr:
            self.stderr.append(line)

    def wait_synced(self, timeout=20):
        check(self.synced.wait(timeout * SLOW), "informer did not sync")

    def dump(self):
        self.proc.stdin.write("dump\n")
        self.proc.stdin.flush()
        return self.dumps.get(timeout=20 * SLOW)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
            except OSError:
                pass
            try:
                rc = self.proc.wait(20 * SLOW)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait()
            check_eq(rc, 0, "kube-watch exit status (stderr: %s)" % "".join(self.stderr[-20:]))


def check_converges(sim, inf, timeout=30):
    """The cache equals a fresh list (retrying while events are in flight),
    and the change log is ordered and free of duplicates."""
    deadline = time.monotonic() + timeout * SLOW
    while True:
        want = sim.fresh_list()
        d = inf.dump()
        if d["objects"] == want:
            break
        if time.monotonic() > deadline:
            missing = {k: v for k, v in want.items() if d["objects"].get(k) != v}
            extra = {k: v for k, v in d["objects"].items() if k not in want}
            raise AssertionError("cache != fresh list after %ss: %d differ (e.g. %s), %d extra "
                                 "(e.g. %s); stats %s" % (timeout, len(missing),
                                                          list(missing.items())[:3], len(extra),
                                                          list(extra.items())[:3], d["stats"]))
        time.sleep(0.1)
    check(d["synced"], "synced")
    last = {}
    for ev in inf.events:
        key, rv = ev["key"], int(ev["rv"])
        if key in last:
            # A deletion found by a re-list carries the last state the
            # informer knew (its RV); every other change moves forward.
            if ev["event"] == "delete":
                check(rv >= last[key], "%s: delete at RV %d after %d" % (key, rv, last[key]))
            else:
                check(rv > last[key], "%s: RV %d reported after %d (%s)" % (key, rv, last[key], ev))
        if ev["event"] == "update":
            check_eq(int(ev["old_rv"]), last.get(key), "%s: update's old RV" % key)
        last[key] = rv
    return d


class Churn:
    """Background writer: updates/creates/deletes ConfigMaps c0..c(n-1)."""

    def __init__(self, sim, n=40, delay=0.002):
        self.sim, self.n, self.delay = sim, n, delay
        self.stop_ev = threading.Event()
        self.writes = 0
        self.error = None
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        # Its own connection: the main thread lists concurrently.
        own = Sim.__new__(Sim)
        own.ks, own.conn = self.sim.ks, None
        i = 0
        try:
            while not self.stop_ev.is_set():
                name = "c%d" % (i % self.n)
                if i % 7 == 3:
                    own.delete_cm(name)
                else:
                    own.put_cm(name, i)
                self.writes += 1
                i += 1
                time.sleep(self.delay)
        except Exception as e:  # reported by stop()
            self.error = e
        finally:
            if own.conn:
                own.conn.close()

    def stop(self):
        self.stop_ev.set()
        self.t.join(30)
        if self.error:
            raise self.error


def with_sim(fn, state=False, extra=()):
    def run():
        sim = Sim(state=state, extra=extra)
        inf = None
        try:
            for i in range(20):
                sim.put_cm("seed%d" % i, i)
            inf = Informer(sim, "--stall", str(int(3000 * SLOW)), "--watch-timeout", "30")
            inf.wait_synced()
            fn(sim, inf)
        finally:
            if inf:
                inf.close()
            sim.close()
    return run


def wait_writes(churn, n, timeout=30.0):
    """Lets the churn make |n| writes (0.3 s on an idle machine; longer under
    sanitizers on a loaded one), so that every watch period sees writes."""
    deadline = time.monotonic() + timeout
    while churn.writes < n and churn.error is None and time.monotonic() < deadline:
        time.sleep(0.02)


def case_watch_dropped(sim, inf):
    churn = Churn(sim)
    for n in (20, 40, 60):  # the informer re-watches, then writes come
        time.sleep(0.3)
        wait_writes(churn, n)
        if n < 60:
            sim.end_watches()
    churn.stop()
    d = check_converges(sim, inf)
    st = d["stats"]
    check(st["watch_restarts"] >= 2, "watch restarted: %s" % st)
    check_eq(st["relists"], 0, "resumed from the last RV, no re-list")
    check(churn.writes > 50, "churn made writes")


def case_compaction(sim, inf):
    churn = Churn(sim)
    time.sleep(0.2)
    # Hold the next watch back, end the current one, compact: the informer
    # resumes from an RV the server no longer has and must re-list.
    sim.fault(user=USER, verb="watch", action="delay", delay_ms=300, count=1)
    sim.end_watches()
    time.sleep(0.05)
    sim.admin("POST", "/compact", feature="compaction")
    time.sleep(0.6)
    churn.stop()
    d = check_converges(sim, inf)
    check(d["stats"]["relists"] >= 1, "410 led to a re-list: %s" % d["stats"])


def case_errors_and_429(sim, inf):
    churn = Churn(sim)
    sim.fault(user=USER, verb="watch", action="fail", code=500, count=3)
    sim.fault(user=USER, verb="list", action="fail", code=500, count=3)
    sim.fault(user=USER, verb="watch", action="fail", code=429, retry_after=1, count=2)
    sim.end_watches()
    time.sleep(0.5)
    sim.fault(user=USER, action="fail", code=503, count=3)
    sim.end_watches()
    time.sleep(1.0)
    churn.stop()
    d = check_converges(sim, inf)
    check(d["stats"]["watch_errors"] >= 3, "the faults were seen: %s" % d["stats"])


def case_partition(sim, inf):
    length = 5.0 if SANITIZE else 30.0
    sim.admin("POST", "/partitions", {"user": USER}, feature="partitions")
    sim.end_watches()
    churn = Churn(sim, delay=0.01)
    t0 = time.monotonic()
    time.sleep(1.0)
    early = len(inf.events)
    time.sleep(length - 1.0)
    # Cut off: nothing of the churn reached the informer during the cut.
    check_eq(len(inf.events), early, "events during the partition")
    churn.stop()
    sim.admin("DELETE", "/partitions?user=" + USER)
    healed = time.monotonic()
    d = check_converges(sim, inf, timeout=30)
    took = time.monotonic() - healed
    check(took < 15 * SLOW, "converged %.1fs after heal" % took)
    check(healed - t0 >= length, "partition lasted")
    sys.stdout.write("# partition %.0fs: converged %.2fs after heal, stats %s\n"
                     % (length, took, d["stats"]))


def case_restart_with_state(sim, inf):
    for i in range(30):
        sim.put_cm("r%d" % i, i)
    if sim.conn:
        sim.conn.close()
        sim.conn = None
    sim.ks.restart()
    check_eq(sim.ks.port, sim.port, "kubesim came back on its port")
    for i in range(0, 30, 3):
        sim.put_cm("r%d" % i, "after")
    sim.delete_cm("r1")
    d = check_converges(sim, inf, timeout=30)
    sys.stdout.write("# restart: stats %s\n" % d["stats"])


def case_burst(sim, inf):
    total = 10000
    threads, per = 4, 10000 // 4
    errors = []

    def writer(t):
        own = Sim.__new__(Sim)
        own.ks, own.conn = sim.ks, None
        try:
            for i in range(per):
                st = own.put_cm("b%d-%d" % (t, i % 50), i)
                if st not in (200, 201):
                    errors.append(st)
        finally:
            if own.conn:
                own.conn.close()
    before = len(inf.events)
    t0 = time.monotonic()
    ws = [threading.Thread(target=writer, args=(t,)) for t in range(threads)]
    for w in ws:
        w.start()
    for w in ws:
        w.join()
    wrote = time.monotonic() - t0
    check_eq(errors, [], "burst writes")
    d = check_converges(sim, inf, timeout=60)
    seen = len(inf.events) - before
    took = time.monotonic() - t0
    if d["stats"]["relists"] == 0:
        check_eq(seen, total, "every change reported once")
    sys.stdout.write("# burst: %d changes written in %.2fs, all seen after %.2fs; stats %s\n"
                     % (total, wrote, took, d["stats"]))


def case_token_rotation(sim, inf):
    new = "tok-informer-2"
    # The server switches to the new token only; the file rotates too.
    sim.ks.write_tokens({new: USER})
    sim.ks.proc.send_signal(signal.SIGHUP)
    write_file(sim.token_file, new + "\n")
    time.sleep(0.3)
    sim.end_watches()  # the next watch request meets the new token set
    churn = Churn(sim, delay=0.01)
    time.sleep(0.5)
    churn.stop()
    d = check_converges(sim, inf, timeout=40)
    check(d["stats"]["token_reads"] >= 2, "token file re-read: %s" % d["stats"])
    # Proof the old token is really dead on the server.
    st, _ = sim.ks.request("GET", "/api/v1/namespaces/%s/configmaps" % NS, token=TOKEN)
    check_eq(st, 401, "old token refused")


def case_tls():
    """HTTPS with the kubeconfig's CA: verified and synced; the same server
    with a CA that did not sign it: refused (verification is on). The one
    case with the WatchList gate on: the informer's streaming list, over
    HTTP/1.1."""
    with KubeSim(tls=True, args=["--no-http2"]) as ks:
        ks.create("namespaces", {"metadata": {"name": NS}})
        for i in range(5):
            st, _ = ks.create("configmaps", {"metadata": {"name": "t%d" % i}}, namespace=NS)
            check(st in (200, 201), "create over TLS: %s" % st)
        kc = open(ks.kubeconfig).read()
        check("https://" in kc, "an https kubeconfig")
        sim = Sim.__new__(Sim)
        sim.ks, sim.conn, sim.kubeconfig = ks, None, ks.kubeconfig
        inf = Informer(sim)
        try:
            inf.wait_synced()
            d = inf.dump()
            check_eq(len(d["objects"]), 5, "objects over TLS")
            check_eq(d["stats"]["streaming"], True, "a streaming list (WatchList on)")
        finally:
            inf.close()
        # A CA of our own making: the server's certificate does not verify.
        bad_ca = os.path.join(ks.dir, "other-ca.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        os.path.join(ks.dir, "other-ca.key"), "-out", bad_ca, "-days", "1",
                        "-subj", "/CN=not-kubesim"], check=True, capture_output=True)
        bad = os.path.join(ks.dir, "bad.kubeconfig")
        with open(bad, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: t\nclusters:\n- name: t\n"
                    "  cluster:\n    server: https://127.0.0.1:%d\n"
                    "    certificate-authority: %s\ncontexts:\n- name: t\n"
                    "  context: {cluster: t, user: u}\nusers:\n- name: u\n  user: {}\n"
                    % (ks.port, bad_ca))
        sim.kubeconfig = bad
        inf = Informer(sim)
        try:
            check(not inf.synced.wait(2.0 * SLOW), "synced against an unverified server")
            d = inf.dump()
            check(not d["synced"] and d["stats"]["lists"] >= 1, "kept trying: %s" % d["stats"])
        finally:
            inf.close()


CASES = [
    ("watch dropped mid-stream resumes from the last RV", case_watch_dropped, False),
    ("compaction during churn: 410, re-list, diff", case_compaction, False),
    ("500s and 429 Retry-After bursts", case_errors_and_429, False),
    ("partition then heal", case_partition, False),
    ("kubesim restarted with --state", case_restart_with_state, True),
    ("10,000 changes in a burst", case_burst, False),
    ("token rotation", case_token_rotation, False),
]


def main():
    t = Tap()
    missing = None
    if KubeSim is None:
        missing = "tests/lib/kubesim.py has not landed"
    elif not os.path.exists(kubesim_binary()):
        missing = "kubesim is not built"
    elif not os.path.exists(COXSWAIN):
        missing = "coxswain is not built"
    for name, fn, state in CASES:
        if missing:
            t.case(name, lambda: (_ for _ in ()).throw(SkipCase(missing)))
        else:
            t.case(name, with_sim(fn, state=state))
    if missing:
        t.case("TLS verified with the kubeconfig's CA", lambda: (_ for _ in ()).throw(
            SkipCase(missing)))
    else:
        t.case("TLS verified with the kubeconfig's CA", case_tls)
    t.done()


if __name__ == "__main__":
    main()
