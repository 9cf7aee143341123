"""The processes the tests start: replicas of `coxswain run` (Replica),
electors of `coxswain elect` (Elector), the official Python client's elector
(PyElector), and what they all share (Process). One implementation for every
test and benchmark that starts a replica.

    from kubesim import KubeSim
    from replicas import Replica, Elector, wait_leader
    ks = KubeSim()
    reps = [Replica(ks, "r%d" % i, lease="2s", renew="1500ms", retry="500ms")
            for i in range(3)]                     # free ports, waits for them
    leader = wait_leader(reps)
    leader.metric("coxswain_translations_total", result="ok")
    rc, took = leader.stop()                       # SIGTERM; SIGKILL after the timeout
    e = Elector(ks, "e1", lease="3s", renew="2s", retry="500ms")
    e.wait("started-leading", timeout=5)           # its "elect: ..." lines
    e.proxy.set_mode("blackhole")                  # cut this elector off (tcpproxy)

Every process writes stdout and stderr to its log file; its stdout lines
"elect: <what> mono=<ns> key=value ..." are also parsed into events. The
binary is $CHAOS_COXSWAIN when set (the chaos run of another build), else
$COXSWAIN_BUILD/bin/coxswain. POD_NAME and POD_NAMESPACE never reach a
child: its identity and namespaces come from its flags. Times are
CLOCK_MONOTONIC nanoseconds (time.monotonic_ns), the clock of the "elect:"
lines and of kubesim's audit log.
"""
import http.client
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time

from tcpproxy import Proxy

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build_dir():
    return os.environ.get("COXSWAIN_BUILD") or os.path.join(TOP, "build")


def coxswain():
    """The coxswain binary every replica runs."""
    return os.environ.get("CHAOS_COXSWAIN") or os.path.join(build_dir(), "bin", "coxswain")


def sanitized():
    """True under the sanitizer or valgrind runs (COXSWAIN_SANITIZE)."""
    return os.environ.get("COXSWAIN_SANITIZE", "0") not in ("", "0")


def mono():
    return time.monotonic_ns()


def has_subcommand(name):
    """True if this coxswain binary knows `coxswain NAME`."""
    try:
        r = subprocess.run([coxswain(), name, "--help"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def wait_for(cond, timeout, step=0.05, what="condition"):
    """Calls cond() until it returns something true, which it returns;
    raises AssertionError after |timeout| seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(step)
    raise AssertionError("timed out after %.1fs waiting for %s (last: %r)" % (timeout, what, last))


def write_kubeconfig(path, port, token=None, ca_file=None):
    """A kubeconfig for http://127.0.0.1:|port| (https:// trusting |ca_file|
    if given), with a bearer |token| if given."""
    user = "{token: %s}" % token if token else "{}"
    scheme = "https" if ca_file else "http"
    ca = "\n    certificate-authority: %s" % ca_file if ca_file else ""
    with open(path, "w") as f:
        f.write("""apiVersion: v1
kind: Config
clusters:
- cluster:
    server: %s://127.0.0.1:%d%s
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
""" % (scheme, port, ca, user))


_SERIES = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """{(name, ((label, value), ...)): float} of every sample (Prometheus text)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SERIES.match(line)
        if not m:
            continue
        labels = tuple(sorted(_LABEL.findall(m.group(3) or "")))
        try:
            out[(m.group(1), labels)] = float(m.group(4))
        except ValueError:
            pass
    return out


_LINE = re.compile(r'^elect: (\S+) mono=(\d+)(.*)$')
_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def parse_line(line):
    """An "elect: <what> mono=<ns> k=v ..." line as {"what", "mono", k: v},
    or None."""
    m = _LINE.match(line.strip())
    if not m:
        return None
    ev = {"what": m.group(1), "mono": int(m.group(2))}
    for k, v in _FIELD.findall(m.group(3)):
        ev[k] = v[1:-1] if v.startswith('"') else v
    return ev


def child_env(extra=None):
    env = dict(os.environ)
    env.pop("POD_NAME", None)
    env.pop("POD_NAMESPACE", None)
    if extra:
        env.update(extra)
    return env


# ---- one process ----------------------------------------------------------------------

class Process:
    """A child process: its log, its events, signals and one way to stop it.

    cmd: the command line; log_path: where stdout and stderr go (appended
    to across restarts); env: extra environment; start: start it now.
    .prefix: a command to run it under (e.g. ["prlimit", "--nofile=64:64"]),
    read at every start.
    """

    def __init__(self, cmd, log_path, env=None, name=None, start=True, prefix=()):
        self.cmd = list(cmd)
        self.prefix = list(prefix)
        self.log_path = log_path
        self.name = name or os.path.basename(self.cmd[0])
        self.env = child_env(env)
        self.proc = None
        self.pid = None
        self.reader = None
        self.cond = threading.Condition()
        self.events = []
        self.started_ns = None
        self.rss = []               # [(mono_ns, kB)] from sample_rss()
        self._reset_state()
        if start:
            self.spawn()

    def _reset_state(self):
        self.expected_exit = False  # set when the test stops or kills it
        self.stopped = False        # SIGSTOPped right now
        self.term_sent = False
        self.exit_code = None
        self.exited_ns = None

    def spawn(self):
        """Starts the process (again, once it has exited) with a fresh list
        of events."""
        with self.cond:
            self.events = []
        self._reset_state()
        log = open(self.log_path, "ab")
        self.started_ns = mono()
        try:
            self.proc = subprocess.Popen(self.prefix + self.cmd, stdout=subprocess.PIPE, stderr=log,
                                         stdin=subprocess.DEVNULL, env=self.env)
        finally:
            log.close()
        self.pid = self.proc.pid
        self.reader = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        self.reader.start()
        return self

    def _read(self, proc):
        with open(self.log_path, "ab") as log:
            for raw in proc.stdout:
                log.write(raw)
                log.flush()
                ev = parse_line(raw.decode(errors="replace"))
                if ev is None:
                    continue
                with self.cond:
                    self.events.append(ev)
                    self.cond.notify_all()
        proc.stdout.close()
        with self.cond:
            self.events.append({"what": "eof", "mono": mono()})
            self.cond.notify_all()

    # -- events ----------------------------------------------------------------
    def wait_event(self, what, timeout=10.0, after=0, pred=None):
        """The first event |what| with mono >= |after| (and pred(ev)), or
        None once |timeout| seconds passed or the output ended without it."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for ev in self.events:
                    if ev["what"] == what and ev["mono"] >= after and (pred is None or pred(ev)):
                        return ev
                    if ev["what"] == "eof":
                        return None
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)

    def wait(self, what, after=0, timeout=10.0, pred=None):
        """wait_event that raises AssertionError instead of returning None."""
        ev = self.wait_event(what, timeout, after, pred)
        if ev is None:
            with self.cond:
                seen = [(e["what"], e["mono"]) for e in self.events[-8:]]
            raise AssertionError("%s: no %s after %d within %.1fs; saw %s" % (
                self.name, what, after, timeout, seen))
        return ev

    def all(self, what=None):
        with self.cond:
            return [e for e in self.events if what is None or e["what"] == what]

    def count(self, what):
        return len(self.all(what))

    def leading(self):
        """True if the last started/stopped-leading line says it leads."""
        state = False
        for e in self.all():
            if e["what"] == "started-leading":
                state = True
            elif e["what"] == "stopped-leading":
                state = False
        return state

    # -- life and death ----------------------------------------------------------
    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def poll(self):
        """The exit status once exited (recording when it was seen), else None."""
        if self.proc is None:
            return None
        rc = self.proc.poll()
        if rc is not None and self.exit_code is None:
            self.exit_code = rc
            self.exited_ns = mono()
        return rc

    def send_signal(self, sig):
        if self.alive():
            self.proc.send_signal(sig)

    def sigstop(self):
        self.stopped = True
        self.send_signal(signal.SIGSTOP)

    def sigcont(self):
        self.send_signal(signal.SIGCONT)
        self.stopped = False

    def send_term(self):
        """One SIGTERM (continued first if stopped: a stopped process sees it
        only once continued), never a second: a process at the end of its
        shutdown has its default handler back."""
        self.expected_exit = True
        if not self.term_sent:
            self.term_sent = True
            self.sigcont()
            self.send_signal(signal.SIGTERM)

    def kill(self, sig=signal.SIGKILL):
        """Sends |sig|; for SIGKILL also waits until the process is gone."""
        if sig != signal.SIGKILL:
            self.send_signal(sig)
            return
        self.expected_exit = True
        self.send_signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait()
            self.stopped = False
            self._finish()

    def _finish(self):
        self.poll()
        if self.reader is not None:
            self.reader.join(5)

    def stop(self, sig=signal.SIGTERM, timeout=10.0):
        """Sends |sig| (SIGTERM through send_term) and waits up to |timeout|
        seconds, then SIGKILL. Returns (exit status, or None if it had to be
        killed; seconds taken). A process that already exited returns its
        status at once."""
        self.expected_exit = True
        t0 = time.monotonic()
        if self.proc is None:
            return None, 0.0
        if self.proc.poll() is None:
            if sig == signal.SIGTERM:
                self.send_term()
            else:
                self.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self._finish()
                return None, time.monotonic() - t0
        self._finish()
        return self.exit_code, time.monotonic() - t0

    # -- what it left ----------------------------------------------------------
    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def log_tail(self, n=30):
        return "".join(self.log().splitlines(keepends=True)[-n:])

    def sample_rss(self):
        """The resident set size in kB now (also appended to .rss), or None."""
        try:
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        kb = int(line.split()[1])
                        self.rss.append((mono(), kb))
                        return kb
        except (OSError, ValueError, TypeError):
            pass
        return None


class _Admin:
    """The admin HTTP server of a replica or elector (admin_port)."""

    admin_port = None

    def http(self, path, method="GET", body=None, timeout=10):
        """(status, body bytes); raises OSError when it cannot connect."""
        c = http.client.HTTPConnection("127.0.0.1", self.admin_port, timeout=timeout)
        try:
            c.request(method, path, body=body)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def try_http(self, path, timeout=3):
        """http() that answers (0, b"") instead of raising."""
        if not self.admin_port:
            return 0, b""
        try:
            return self.http(path, timeout=timeout)
        except (OSError, http.client.HTTPException):
            return 0, b""

    def debug(self, what):
        st, body = self.http("/debug/" + what)
        if st != 200:
            raise AssertionError("%s /debug/%s: %s %s" % (self.name, what, st, body[:200]))
        return body

    def snapshot_group(self, name):
        """The group |name| ("ns/gateway") of the snapshot this replica
        serves (/debug/snapshot), or None."""
        for g in json.loads(self.debug("snapshot"))["snapshot"]["groups"]:
            if g["name"] == name:
                return g
        return None

    def leader_info(self):
        """/debug/leader as a dict; raises when it cannot be read."""
        return json.loads(self.debug("leader"))

    def try_leader_info(self):
        """/debug/leader as a dict, or None."""
        st, body = self.try_http("/debug/leader")
        if st != 200:
            return None
        try:
            return json.loads(body)
        except ValueError:
            return None

    def metrics_text(self):
        st, body = self.http("/metrics")
        assert st == 200, st
        return body.decode()

    def metrics(self):
        return parse_metrics(self.metrics_text())

    def metric(self, name, **labels):
        """Sum of the series of |name| whose labels include |labels|."""
        total = 0.0
        for (n, lab), v in self.metrics().items():
            if n == name and all(dict(lab).get(k) == str(x) for k, x in labels.items()):
                total += v
        return total

    def ready(self):
        try:
            return self.http("/readyz")[0] == 200
        except OSError:
            return False


# ---- coxswain run ------------------------------------------------------------------------

class Replica(Process, _Admin):
    """One `coxswain run` on free ports (xDS and admin, from its ports file).

    ks: the KubeSim (its kubeconfig unless |kubeconfig| is given); name: the
    identity; lease/renew/retry/lock: the election flags; lock_name and
    lock_namespace: --leader-elect-resource-{name,namespace} (None: the
    defaults); namespace: --namespace (None: not given); debounce: --debounce
    (None: the default); elect: --leader-elect; dir: where the log and the
    ports file go (a new temp dir if None); wait: start() waits for the
    ports (raising if it exits or they do not come in 20 s); prefix: a
    command to run it under (.prefix).
    """

    def __init__(self, ks, name, lease="2s", renew="1500ms", retry="500ms", lock="leases",
                 extra=(), env=None, start=True, elect=True, debounce="50ms",
                 namespace="coxswain-system", lock_name=None, lock_namespace=None,
                 kubeconfig=None, dir=None, log_level="info", wait=True, prefix=(),
                 xds_auth="none"):
        self.ks = ks
        self.dir = dir or tempfile.mkdtemp(prefix="replica-%s-" % name)
        os.makedirs(self.dir, exist_ok=True)
        self.kubeconfig = kubeconfig or ks.kubeconfig
        self.ports_file = os.path.join(self.dir, "ports.json")
        self.xds = self.admin = self.xds_port = self.admin_port = None
        args = ["run", "--kubeconfig", self.kubeconfig, "--identity", name,
                "--xds-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
                "--ports-file", self.ports_file,
                "--leader-elect=%s" % ("true" if elect else "false"),
                "--leader-elect-lease-duration", lease, "--leader-elect-renew-deadline", renew,
                "--leader-elect-retry-period", retry, "--leader-elect-resource-lock", lock,
                "--log-level", log_level]
        if namespace is not None:
            args += ["--namespace", namespace]
        if debounce is not None:
            args += ["--debounce", debounce]
        if lock_name is not None:
            args += ["--leader-elect-resource-name", lock_name]
        if lock_namespace is not None:
            args += ["--leader-elect-resource-namespace", lock_namespace]
        if xds_auth is not None:
            args += ["--xds-auth", xds_auth]
        self.args = args + list(extra)
        super().__init__([coxswain()] + self.args, os.path.join(self.dir, "coxswain.log"),
                         env=env, name=name, start=False, prefix=prefix)
        self.identity = name
        if start:
            self.start(wait=wait)

    @property
    def user(self):
        """How kubesim names this replica in its audit log (User-Agent)."""
        return "coxswain/"

    def start(self, timeout=20, wait=True):
        """Starts (again); with |wait|, returns once the ports are known."""
        if os.path.exists(self.ports_file):
            os.unlink(self.ports_file)
        self.xds = self.admin = self.xds_port = self.admin_port = None
        self.spawn()
        if wait:
            wait_for(self._ports, timeout, what="%s to listen" % self.name)
        return self

    def _ports(self):
        if self.proc.poll() is not None:
            raise AssertionError("%s exited with %s:\n%s" % (self.name, self.proc.returncode,
                                                             self.log()[-3000:]))
        return self._read_ports()

    def _read_ports(self):
        try:
            with open(self.ports_file) as f:
                info = json.load(f)
            self.admin = self.admin_port = info["admin"]
            self.xds = self.xds_port = info.get("xds")
            return info
        except (OSError, ValueError, KeyError):
            return None

    def wait_started(self, timeout=20):
        """True once the ports are known; False if it exited or |timeout|
        seconds passed first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            if self._read_ports():
                return True
            time.sleep(0.05)
        return False


def leaders(reps):
    return [r for r in reps if r.alive() and r.leader_info()["leading"]]


def wait_leader(reps, timeout=15):
    """The one replica of |reps| that leads; raises unless exactly one does
    within |timeout| seconds."""
    def one():
        ls = leaders(reps)
        return ls[0] if len(ls) == 1 else None
    return wait_for(one, timeout, what="exactly one leader")


def wait_ready(reps, timeout=20):
    """Until every live replica of |reps| answers /readyz with 200."""
    wait_for(lambda: all(r.ready() for r in reps if r.alive()), timeout, what="replicas ready")


def writers_idle(r):
    li = r.leader_info()
    return li["leading"] and li["status_writer"]["idle"] and li["publisher"]["idle"]


# ---- coxswain elect ----------------------------------------------------------------------

class Elector(Process, _Admin):
    """`coxswain elect`: the elector alone, with guarded test writes.

    ks: the KubeSim; ident: the identity; proxy: talk to kubesim through a
    tcpproxy.Proxy of its own (.proxy), so a test can cut this one elector
    off; kubeconfig: use this one instead of writing one (then no proxy);
    name/namespace: the lock's; write_interval: --test-write-interval (None:
    none); admin: an admin port (.admin_port), waited for; dir: where the
    log and kubeconfig go (ks.dir if None). Returns once it printed its
    identity line (wait=False: at once).
    """

    def __init__(self, ks, ident, lease="3s", renew="2s", retry="500ms", lock="leases",
                 name="coxswain", namespace=None, write_interval="100ms", admin=False, extra=(),
                 proxy=True, kubeconfig=None, dir=None, log_level="debug", env=None, wait=True):
        self.ks = ks
        self.identity = ident
        self.dir = dir or ks.dir
        self.proxy = Proxy(ks.port) if proxy and kubeconfig is None else None
        if kubeconfig is None:
            kubeconfig = os.path.join(self.dir, "kubeconfig-" + ident)
            write_kubeconfig(kubeconfig, self.proxy.port if self.proxy else ks.port)
        self.kubeconfig = kubeconfig
        cmd = [coxswain(), "elect", "--kubeconfig", kubeconfig, "--identity", ident,
               "--leader-elect-lease-duration", lease, "--leader-elect-renew-deadline", renew,
               "--leader-elect-retry-period", retry, "--leader-elect-resource-lock", lock,
               "--leader-elect-resource-name", name, "--log-level", log_level]
        if namespace is not None:
            cmd += ["--leader-elect-resource-namespace", namespace]
        if write_interval:
            cmd += ["--test-write-interval", write_interval]
        self.has_admin = admin
        if admin:
            cmd += ["--admin-listen", "127.0.0.1:0"]
        cmd += list(extra)
        super().__init__(cmd, os.path.join(self.dir, "elect-%s.log" % ident), env=env,
                         name=ident)
        if wait and not self.wait_started(10):
            raise AssertionError("%s did not start:\n%s" % (ident, self.log_tail(20)))

    def wait_started(self, timeout=20):
        """True once the admin port (if asked for) and the identity line
        are known; False if it exited or |timeout| seconds passed first."""
        if self.has_admin:
            ev = self.wait_event("admin", timeout)
            if ev is None:
                return False
            self.admin_port = int(ev["port"])
        return self.wait_event("identity", timeout) is not None

    def stop(self, sig=signal.SIGTERM, timeout=10.0):
        rc = super().stop(sig, timeout)
        if self.proxy:
            self.proxy.close()
        return rc


# ---- the official Python client's elector ----------------------------------------------

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


class PyElector(Process):
    """The official Python client's elector (ConfigMap lock), polling.
    token: a bearer token kubesim maps to a user (Python electors all send
    the same User-Agent, so this is how their requests are told apart)."""

    def __init__(self, ks, ident, lease=3, renew=2, retry=1, name="coxswain", kubeconfig=None,
                 token=None):
        self.ks = ks
        self.identity = ident
        if token:
            kubeconfig = os.path.join(ks.dir, "kubeconfig-" + ident)
            write_kubeconfig(kubeconfig, ks.port, token)
        script = os.path.join(ks.dir, "py_elector.py")
        if not os.path.exists(script):
            with open(script, "w") as f:
                f.write(PY_ELECTOR)
        cmd = ["/usr/bin/python3", script, kubeconfig or ks.kubeconfig, name, "default", ident,
               str(lease), str(renew), str(retry)]
        super().__init__(cmd, os.path.join(ks.dir, "py-%s.log" % ident),
                         env={"PYTHONDONTWRITEBYTECODE": "1"}, name=ident)
        self.wait("identity", timeout=20)
