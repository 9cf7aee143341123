"""Helpers for the election integration tests and bench/bench_election.py.

    ks = KubeSim(...)                         # tests/lib/kubesim.py
    e = Elector(ks, "e1", lease="3s", renew="2s", retry="500ms")
    e.wait("started-leading", timeout=5)      # parsed "elect: ..." lines
    e.proxy.set_mode("blackhole")             # partition this elector only
    py = PyElector(ks, "py1", lease=3, renew=2, retry=1)   # the Python client

Every elector talks to kubesim through its own TCP proxy, so a test can cut
one replica off (blackhole: connections go silent, new ones hang) or take
the whole API away (refuse: everything closed, new connections dropped)
without touching kubesim. Times are CLOCK_MONOTONIC nanoseconds, the clock
of `coxswain elect`'s lines, of Python's time.monotonic_ns() and of
kubesim's audit log (mono_ns).
"""
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))


def build_dir():
    return os.environ.get("COXSWAIN_BUILD") or os.path.join(TOP, "build")


def coxswain():
    return os.path.join(build_dir(), "bin", "coxswain")


def sanitized():
    return os.environ.get("COXSWAIN_SANITIZE", "0") not in ("", "0")


def mono():
    return time.monotonic_ns()


class Proxy:
    """A TCP forwarder on 127.0.0.1 with three modes: pass, blackhole, refuse."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.mode = "pass"
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(256)
        self.lsock.setblocking(False)
        self.port = self.lsock.getsockname()[1]
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.lsock, selectors.EVENT_READ, None)
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.sel.register(self.wake_r, selectors.EVENT_READ, "wake")
        self.peer = {}      # socket -> its peer socket (None: blackholed)
        self.clients = set()
        self.lock = threading.Lock()
        self.pending = []   # mode changes for the loop thread
        self.running = True
        self.connections = 0
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def set_mode(self, mode, upstream_port=None):
        assert mode in ("pass", "blackhole", "refuse")
        with self.lock:
            self.pending.append((mode, upstream_port))
        self.wake_w.send(b"x")
        # Wait until the loop applied it, so the caller can timestamp it.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with self.lock:
                if not self.pending:
                    return
            time.sleep(0.001)

    def close(self):
        self.running = False
        self.wake_w.send(b"x")
        self.thread.join(5)
        for s in list(self.peer):
            self._drop(s)
        self.lsock.close()

    def _drop(self, s):
        self.clients.discard(s)
        p = self.peer.pop(s, None)
        try:
            self.sel.unregister(s)
        except (KeyError, ValueError):
            pass
        s.close()
        if p is not None and p in self.peer:
            self._drop(p)

    def _apply(self, mode, port):
        if port is not None:
            self.upstream_port = port
        if mode == self.mode:
            return
        old, self.mode = self.mode, mode
        if mode == "refuse" or old == "blackhole":
            # Down: every connection goes. Healed from a blackhole: the
            # silent connections are dead, close them as a router would not
            # but a real client eventually notices.
            for s in list(self.peer):
                self._drop(s)
        elif mode == "blackhole":
            # Silence: keep the client sockets, cut the upstream ones.
            for c in [x for x in self.peer if x in self.clients]:
                up = self.peer.get(c)
                if up is not None:
                    self.peer[c] = None
                    self.peer.pop(up, None)
                    try:
                        self.sel.unregister(up)
                    except (KeyError, ValueError):
                        pass
                    up.close()

    def _loop(self):
        while self.running:
            for key, _ in self.sel.select(0.5):
                if key.data == "wake":
                    try:
                        self.wake_r.recv(4096)
                    except BlockingIOError:
                        pass
                    with self.lock:
                        todo, self.pending = self.pending, []
                    for mode, port in todo:
                        self._apply(mode, port)
                    continue
                s = key.fileobj
                if s is self.lsock:
                    self._accept()
                    continue
                self._forward(s)
        for s in list(self.peer):
            self._drop(s)

    def _accept(self):
        try:
            c, _ = self.lsock.accept()
        except BlockingIOError:
            return
        if self.mode == "refuse":
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            c.close()
            return
        self.connections += 1
        self.clients.add(c)
        if self.mode == "blackhole":
            self.peer[c] = None
            self.sel.register(c, selectors.EVENT_READ, "client")
            return
        try:
            up = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=2)
        except OSError:
            c.close()
            return
        up.setblocking(False)
        c.setblocking(False)
        self.peer[c] = up
        self.peer[up] = c
        self.sel.register(c, selectors.EVENT_READ, "client")
        self.sel.register(up, selectors.EVENT_READ, "upstream")

    def _forward(self, s):
        try:
            data = s.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._drop(s)
            return
        p = self.peer.get(s)
        if p is None:
            return  # blackholed: the bytes vanish
        try:
            p.setblocking(True)
            p.sendall(data)
            p.setblocking(False)
        except OSError:
            self._drop(s)


LINE = re.compile(r'^elect: (\S+) mono=(\d+)(.*)$')
FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def parse_line(line):
    m = LINE.match(line.strip())
    if not m:
        return None
    ev = {"what": m.group(1), "mono": int(m.group(2))}
    for k, v in FIELD.findall(m.group(3)):
        ev[k] = v[1:-1] if v.startswith('"') else v
    return ev


class _Process:
    """A child whose stdout "elect: ..." lines are collected by a thread."""

    def __init__(self, cmd, log_path, env=None):
        self.log_path = log_path
        self.events = []
        self.cond = threading.Condition()
        self.log = open(log_path, "ab")
        e = dict(os.environ)
        if env:
            e.update(env)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log,
                                     stdin=subprocess.DEVNULL, env=e)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace")
            ev = parse_line(line)
            if ev is None:
                continue
            with self.cond:
                self.events.append(ev)
                self.cond.notify_all()
        with self.cond:
            self.events.append({"what": "eof", "mono": mono()})
            self.cond.notify_all()

    def wait(self, what, after=0, timeout=10.0, pred=None):
        """The first event |what| with mono >= |after| (and pred(ev)); raises
        AssertionError after |timeout| seconds."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for ev in self.events:
                    if ev["what"] == what and ev["mono"] >= after and (pred is None or pred(ev)):
                        return ev
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("%s: no %s after %d within %.1fs; saw %s" % (
                        self.name, what, after, timeout,
                        [(e["what"], e["mono"]) for e in self.events[-8:]]))
                self.cond.wait(left)

    def all(self, what=None):
        with self.cond:
            return [e for e in self.events if what is None or e["what"] == what]

    def leading(self):
        """True if the last started/stopped line says we lead."""
        state = False
        with self.cond:
            for e in self.events:
                if e["what"] == "started-leading":
                    state = True
                elif e["what"] == "stopped-leading":
                    state = False
        return state

    def alive(self):
        return self.proc.poll() is None

    def send(self, sig):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=10):
        """Sends |sig| and waits; returns the exit status."""
        if self.proc.poll() is None:
            if sig == signal.SIGTERM:
                # A stopped process only sees SIGTERM once continued.
                self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(5)
        self.log.close()
        return self.proc.returncode

    def logtext(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""


def write_kubeconfig(path, port, token=None):
    user = "{token: %s}" % token if token else "{}"
    with open(path, "w") as f:
        f.write("""apiVersion: v1
kind: Config
clusters:
- cluster:
    server: http://127.0.0.1:%d
  name: kubesim
contexts:
- context:
    cluster: kubesim
    namespace: default
    user: kubesim
  name: kubesim
current-context: kubesim
users:
- name: kubesim
  user: %s
""" % (port, user))


class Elector(_Process):
    """`coxswain elect` behind its own proxy."""

    def __init__(self, ks, ident, lease="3s", renew="2s", retry="500ms", lock="leases",
                 name="coxswain", write_interval="100ms", admin=False, extra=(), proxy=True,
                 token=None):
        self.name = ident
        self.ks = ks
        self.proxy = Proxy(ks.port) if proxy else None
        self.kubeconfig = os.path.join(ks.dir, "kubeconfig-" + ident)
        write_kubeconfig(self.kubeconfig, self.proxy.port if proxy else ks.port, token=token)
        cmd = [coxswain(), "elect", "--kubeconfig", self.kubeconfig, "--identity", ident,
               "--leader-elect-lease-duration", lease, "--leader-elect-renew-deadline", renew,
               "--leader-elect-retry-period", retry, "--leader-elect-resource-lock", lock,
               "--leader-elect-resource-name", name, "--log-level", "debug"]
        if write_interval:
            cmd += ["--test-write-interval", write_interval]
        if admin:
            cmd += ["--admin-listen", "127.0.0.1:0"]
        cmd += list(extra)
        super().__init__(cmd, os.path.join(ks.dir, "elect-%s.log" % ident))
        self.admin_port = None
        if admin:
            self.admin_port = int(self.wait("admin", timeout=10)["port"])
        self.wait("identity", timeout=10)

    def stop(self, sig=signal.SIGTERM, timeout=10):
        rc = super().stop(sig, timeout)
        if self.proxy:
            self.proxy.close()
        return rc

    def http(self, path):
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", self.admin_port, timeout=5)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read().decode(errors="replace")
        finally:
            c.close()


PY_ELECTOR = r'''
import logging, sys, threading, time
logging.disable(logging.CRITICAL)
from kubernetes import config
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.configmaplock import ConfigMapLock
kubeconfig, name, ns, ident, lease, renew, retry = sys.argv[1:8]
config.load_kube_config(config_file=kubeconfig)

def say(what, rest=""):
    print("elect: %s mono=%d %s" % (what, time.monotonic_ns(), rest), flush=True)

def started():
    say("started-leading", "term=0")
    while True:          # the leader's work; returning would end nothing
        time.sleep(3600)

def stopped():
    say("stopped-leading", 'reason="renew failed"')

say("identity", 'identity="%s"' % ident)
cfg = electionconfig.Config(ConfigMapLock(name, ns, ident), int(lease), int(renew), int(retry),
                            started, stopped)
leaderelection.LeaderElection(cfg).run()
say("exit")
'''


class PyElector(_Process):
    """The official Python client's elector (ConfigMap lock), polling."""

    def __init__(self, ks, ident, lease=3, renew=2, retry=1, name="coxswain", kubeconfig=None,
                 token=None):
        self.name = ident
        if token:
            # A bearer token kubesim maps to a user: Python electors all send
            # the same User-Agent, so this is how their requests are told apart.
            kubeconfig = os.path.join(ks.dir, "kubeconfig-" + ident)
            write_kubeconfig(kubeconfig, ks.port, token)
        script = os.path.join(ks.dir, "py_elector.py")
        if not os.path.exists(script):
            with open(script, "w") as f:
                f.write(PY_ELECTOR)
        cmd = ["/usr/bin/python3", script, kubeconfig or ks.kubeconfig, name, "default", ident,
               str(lease), str(renew), str(retry)]
        super().__init__(cmd, os.path.join(ks.dir, "py-%s.log" % ident),
                         env={"PYTHONDONTWRITEBYTECODE": "1"})
        self.wait("identity", timeout=20)


def lease_holder(ks, name="coxswain"):
    st, obj = ks.get("leases", name, namespace="default", group="coordination.k8s.io")
    if st != 200:
        return None, None
    return obj.get("spec", {}).get("holderIdentity"), obj


_VERSION = []


def user_agent(ident, product="coxswain-election"):
    """The User-Agent (kubesim's user under --allow-all) of a replica's
    elector (coxswain-election) or test writer (coxswain-writer)."""
    if not _VERSION:
        out = subprocess.run([coxswain(), "version"], capture_output=True, text=True).stdout
        _VERSION.append(out.split()[-1])
    return "%s/%s (linux) replica/%s" % (product, _VERSION[0], ident)


ALLOWED = re.compile(r"test write seq=(\d+) term=(\d+) allowed at mono=(\d+)")


def writes_issued(elector):
    """(mono, seq) of every guarded test write |elector| sent, from its debug
    log (the time the guard said yes)."""
    return [(int(m.group(3)), int(m.group(1))) for m in ALLOWED.finditer(elector.logtext())]


def writes_by(audit, ident, product="coxswain-writer", resource="configmaps"):
    """Committed writes (2xx) of |ident|'s |product| on |resource|."""
    out = []
    for a in audit:
        u = a.get("user", "")
        if (u.startswith(product + "/") and u.endswith("replica/" + ident) and
                a.get("resource") == resource and 200 <= a.get("code", 0) < 300):
            out.append(a)
    return out


def acquisitions(audit, name="coxswain", resource="leases"):
    """(mono_ns, identity) of every committed lock write that changed the
    holder, from the audit log and the lock's history as kubesim saw it."""
    out = []
    for a in audit:
        if a.get("resource") != resource or a.get("name") != name:
            continue
        if not (200 <= a.get("code", 0) < 300) or a.get("verb") not in ("create", "update"):
            continue
        u = a.get("user", "")
        ident = u.rsplit("replica/", 1)[1] if "replica/" in u else u
        out.append((a["mono_ns"], ident, a))
    return out
