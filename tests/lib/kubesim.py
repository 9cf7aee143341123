"""Start and drive build/bin/kubesim from Python tests.

    from kubesim import KubeSim
    with KubeSim() as ks:                  # free port, temp dir, --allow-all
        status, body = ks.request("GET", "/api/v1/namespaces")
        ks.kubeconfig                      # for kubectl / kubernetes.config
        ks.create("configmaps", {...}, namespace="default")
        ks.audit()                         # list of dicts (admin API)
        ks.restart()                       # SIGTERM, then start again (--state)

The binary is $COXSWAIN_BUILD/bin/kubesim (set by tests/run.sh), else
build/bin/kubesim under the checkout. Under COXSWAIN_SANITIZE=1 the ASan
build is used automatically through COXSWAIN_BUILD.
"""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse

_TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def binary():
    build = os.environ.get("COXSWAIN_BUILD") or os.path.join(_TOP, "build")
    return os.path.join(build, "bin", "kubesim")


# What KubeSim passes unless a profile is asked (see command()).
COMPAT_ARGS = ["--feature-gates", "WatchList=true", "--bookmarks", "periodic",
               "--event-window-time", "0"]


def kubectl_binary(minor=28):
    """The kubectl to run against kubesim emulating 1.|minor| (the default
    1.28). The kubectl on this machine (the Google Cloud SDK's) is a
    dispatcher: each call starts it, it asks the server's /version, then
    runs kubectl.1.<minor> beside it, about 0.3 s a call (of 0.8) more than
    running that release directly, which this returns when it exists
    (else the kubectl on PATH, or None)."""
    k = shutil.which("kubectl")
    if not k:
        return None
    direct = os.path.join(os.path.dirname(os.path.realpath(k)), "kubectl.1.%d" % minor)
    return direct if os.access(direct, os.X_OK) else k


class KubeSimError(Exception):
    pass


class KubeSim:
    """One kubesim process on 127.0.0.1 and a free port.

    args: extra command-line flags. allow_all: pass --allow-all. state:
    True keeps the store in <dir>/state.json across restart(). tls: HTTPS
    with the generated CA (ca_file). tokens: dict token -> user or
    (user, [groups]) written to a --tokens file. kubeconfig_token: the token
    the written kubeconfig carries. profile: "1.28" ... "1.31" emulates that
    kube-apiserver release (WatchList off, bookmarks only when the resource
    moved, a 75 s event window); without it, kubesim runs with COMPAT_ARGS.
    The process writes its port, kubeconfig and logs into a temp dir
    removed by close().
    """

    def __init__(self, args=(), allow_all=True, state=False, tls=False, tokens=None,
                 env=None, start=True, keep_dir=False, kubeconfig_token=None, profile=None):
        self.dir = tempfile.mkdtemp(prefix="kubesim-")
        self.args = list(args)
        if profile:
            self.args = ["--emulate", profile] + self.args
        self.allow_all = allow_all
        self.tls = tls
        self.state = os.path.join(self.dir, "state.json") if state else None
        self.tokens_file = None
        if tokens is not None:
            self.tokens_file = os.path.join(self.dir, "tokens.csv")
            self.write_tokens(tokens)
        self.env = env
        self.keep_dir = keep_dir
        self.kubeconfig_token = kubeconfig_token
        self.proc = None
        self.port = None
        self.log_path = os.path.join(self.dir, "kubesim.log")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        if start:
            self.start()

    # -- lifecycle ---------------------------------------------------------
    def write_tokens(self, tokens):
        """tokens: dict token -> user, token -> (user, [groups]), or token ->
        {"user", "uid", "groups", "audiences", "expires"} (expires: Unix
        seconds or RFC 3339): a projected ServiceAccount token bound to
        audiences, valid until then."""
        with open(self.tokens_file, "w") as f:
            for tok, who in tokens.items():
                if isinstance(who, dict):
                    cols = [tok, who["user"], who.get("uid", who["user"]),
                            '"%s"' % ",".join(who.get("groups", []))]
                    if who.get("audiences"):
                        cols.append('"aud=%s"' % ",".join(who["audiences"]))
                    if who.get("expires") is not None:
                        cols.append("exp=%s" % who["expires"])
                    f.write(",".join(cols) + "\n")
                elif isinstance(who, (tuple, list)):
                    user, groups = who[0], list(who[1])
                    f.write(",".join([tok, user, user] + groups) + "\n")
                else:
                    f.write("%s,%s\n" % (tok, who))

    def command(self):
        port_file = os.path.join(self.dir, "port")
        cmd = [binary(), "--listen", "127.0.0.1:0", "--port-file", port_file,
               "--kubeconfig", self.kubeconfig, "--state-dir", self.dir]
        if self.allow_all:
            cmd.append("--allow-all")
        if self.tls:
            cmd.append("--tls")
        if self.state:
            cmd += ["--state", self.state]
        if self.tokens_file:
            cmd += ["--tokens", self.tokens_file]
        if self.kubeconfig_token:
            cmd += ["--kubeconfig-token", self.kubeconfig_token]
        if "--emulate" not in self.args:
            # kubesim as the suites were written for: the WatchList gate on, a
            # bookmark every interval, a window by count. A suite moves to a
            # release's behaviour with KubeSim(profile="1.28") (or args
            # ["--emulate", "1.28"]).
            cmd += COMPAT_ARGS
        return cmd + self.args

    def start(self, timeout=10.0):
        port_file = os.path.join(self.dir, "port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        log = open(self.log_path, "ab")
        env = dict(os.environ)
        if self.env:
            env.update(self.env)
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=log,
                                     stdin=subprocess.DEVNULL, env=env)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise KubeSimError("kubesim exited with %s:\n%s" % (self.proc.returncode, self.log()))
            try:
                with open(port_file) as f:
                    txt = f.read().strip()
                if txt:
                    self.port = int(txt)
                    break
            except FileNotFoundError:
                pass
            time.sleep(0.01)
        else:
            self.stop()
            raise KubeSimError("kubesim did not start in %.0fs:\n%s" % (timeout, self.log()))
        # Ready once /readyz answers.
        while time.monotonic() < deadline:
            try:
                st, _ = self.request("GET", "/readyz")
                if st == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.01)
        raise KubeSimError("kubesim not ready:\n" + self.log())

    def stop(self, sig=signal.SIGTERM, timeout=20.0):
        """Stops the process; returns its exit status (0 for a clean exit)."""
        rc = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(sig)
                try:
                    rc = self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    rc = self.proc.wait()
            else:
                rc = self.proc.returncode
            self.proc = None
        return rc

    def restart(self):
        rc = self.stop()
        if rc != 0:
            raise KubeSimError("kubesim exited with %s on SIGTERM:\n%s" % (rc, self.log()))
        return self.start()

    def close(self):
        rc = self.stop()
        if not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    @property
    def ca_file(self):
        return os.path.join(self.dir, "ca.crt")

    # -- HTTP ----------------------------------------------------------------
    def connection(self, timeout=30):
        if self.tls:
            import ssl
            ctx = ssl.create_default_context(cafile=self.ca_file)
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=ctx)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, token=None, ctype=None,
                timeout=30, raw=False):
        """Returns (status, parsed JSON or text). |body| may be a dict."""
        hdrs = dict(headers or {})
        if token:
            hdrs["Authorization"] = "Bearer " + token
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            if isinstance(data, str):
                data = data.encode()
            hdrs.setdefault("Content-Type", ctype or "application/json")
        conn = self.connection(timeout)
        try:
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            payload = resp.read()
            self.last_headers = dict(resp.getheaders())
        finally:
            conn.close()
        if raw:
            return resp.status, payload
        text = payload.decode(errors="replace")
        try:
            return resp.status, json.loads(text)
        except ValueError:
            return resp.status, text

    def path(self, resource, namespace=None, name=None, group="", version="v1", sub=None,
             query=None):
        base = "/api/v1" if not group else "/apis/%s/%s" % (group, version)
        p = base
        if namespace:
            p += "/namespaces/" + namespace
        p += "/" + resource
        if name:
            p += "/" + name
        if sub:
            p += "/" + sub
        if query:
            p += "?" + urllib.parse.urlencode(query)
        return p

    def create(self, resource, obj, namespace=None, group="", version="v1", **kw):
        return self.request("POST", self.path(resource, namespace, group=group, version=version),
                            obj, **kw)

    def get(self, resource, name, namespace=None, group="", version="v1", **kw):
        return self.request("GET", self.path(resource, namespace, name, group, version), **kw)

    def watch(self, path, timeout=10, headers=None):
        """Opens a watch; returns a Watch object yielding parsed events."""
        return Watch(self, path, timeout, headers)

    # -- admin API -----------------------------------------------------------
    def admin(self, method, path, body=None):
        st, out = self.request(method, "/_sim" + path, body)
        if st >= 300:
            raise KubeSimError("admin %s %s: %s %s" % (method, path, st, out))
        return out

    def audit(self, since=0):
        st, out = self.request("GET", "/_sim/audit?since=%d" % since)
        if st != 200:
            raise KubeSimError("audit: %s" % st)
        if isinstance(out, dict):
            return [out]
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def counters(self):
        return self.admin("GET", "/counters")["counters"]

    def compact(self):
        return self.admin("POST", "/compact")

    def add_fault(self, **rule):
        """rule: user, verb, resource, name, action (delay|fail|hang|close|
        end-watches), code, delay_ms, retry_after, probability, count."""
        return self.admin("POST", "/faults", rule)

    def clear_faults(self):
        return self.admin("DELETE", "/faults")

    def partition(self, user):
        return self.admin("POST", "/partitions", {"user": user})

    def heal(self, user=None):
        return self.admin("DELETE", "/partitions" + ("?user=" + urllib.parse.quote(user) if user else ""))


class Watch:
    """A raw watch stream: iterate events (dicts); .raw keeps the bytes."""

    def __init__(self, ks, path, timeout, headers=None):
        self.conn = ks.connection(timeout)
        self.conn.request("GET", path, headers=dict(headers or {}))
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = dict(self.resp.getheaders())
        self.raw = b""
        self._buf = b""

    def next(self):
        """Next event as a dict, or None at the end of the stream."""
        while b"\n" not in self._buf:
            chunk = self.resp.read1(65536) if hasattr(self.resp, "read1") else self.resp.read(1)
            if not chunk:
                return None
            self.raw += chunk
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def __iter__(self):
        while True:
            ev = self.next()
            if ev is None:
                return
            yield ev

    def close(self):
        # shutdown first: a thread blocked reading the stream returns at
        # once (close alone left it blocked until the server ended the
        # watch, up to its timeoutSeconds)
        if self.conn.sock is not None:
            try:
                self.conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.conn.close()
