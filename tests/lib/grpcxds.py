"""gRPC's own xDS clients and gRPC backends for Python e2e tests and
benchmarks: a bootstrap file naming one coxswain xDS port and a Gateway,
the two client implementations driven by a line protocol (one JSON answer
a command), and backends that answer with their own name.

    boot = grpcxds.bootstrap(tmp, port, "affinity-client", "ns/mesh")
    c = grpcxds.Client("grpc-js", boot, "echo.ns.test")   # or "c-core"
    c.ask("call /svc.A/Call 5")      # {"ok": {backend: n}, "err": {...}}
    c.close()

grpc-js is @grpc/grpc-js-xds from npm (tests/e2e/xds/grpc_client.js,
installed once by mk/npm-xds.sh); c-core is Debian's python3-grpcio
(tests/e2e/xds/grpc_client.py). Their commands are described in those files
(call and wait in both; headers on calls, until, in grpc-js).
"""
import json
import os
import subprocess

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BACKEND = os.path.join(TOP, "tests", "e2e", "xds", "backend.py")
CLIENTS = {
    "grpc-js": ["node", os.path.join(TOP, "tests", "e2e", "xds", "grpc_client.js")],
    "c-core": ["/usr/bin/python3", os.path.join(TOP, "tests", "e2e", "xds", "grpc_client.py")],
}


def node_path():
    """NODE_PATH holding @grpc/grpc-js-xds (mk/npm-xds.sh installs it once)."""
    out = subprocess.run([os.path.join(TOP, "mk", "npm-xds.sh")], stdout=subprocess.PIPE,
                         text=True, timeout=330, check=True).stdout
    return out.strip().splitlines()[-1]


def bootstrap(folder, xds_port, node_id, gateway, zone=None):
    """Writes folder/bootstrap.json: one insecure xDS v3 server on
    127.0.0.1:|xds_port|, a node asking for Gateway |gateway| (ns/name).
    Returns its path."""
    path = os.path.join(folder, "bootstrap.json")
    with open(path, "w") as f:
        json.dump({"xds_servers": [{"server_uri": "127.0.0.1:%d" % xds_port,
                                    "channel_creds": [{"type": "insecure"}],
                                    "server_features": ["xds_v3"]}],
                   "node": {"id": node_id, "cluster": "c",
                            "locality": {"zone": zone} if zone else {},
                            "metadata": {"coxswain.dev/gateway": gateway}}}, f)
    return path


class Client:
    """One client process with one channel to xds:///|target|; its first
    line ({"ready": true}) is read before the constructor returns."""

    def __init__(self, kind, boot, target, env=None, echo=True):
        self.kind, self.echo = kind, echo
        env = dict(os.environ, GRPC_XDS_BOOTSTRAP=boot, **(env or {}))
        if kind == "grpc-js":
            env["NODE_PATH"] = node_path()
        self.proc = subprocess.Popen(CLIENTS[kind] + [target], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline()
        if not line or json.loads(line) != {"ready": True}:
            raise AssertionError("%s client did not start: %r (exit %s)"
                                 % (kind, line, self.proc.poll()))

    def ask(self, cmd):
        """Sends one command; returns its JSON answer (echoed as a TAP
        comment unless echo=False)."""
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError("%s: no answer to %r (client exited: %s)"
                                 % (self.kind, cmd, self.proc.poll()))
        if self.echo:
            print("# %s: %s -> %s" % (self.kind, cmd, line.strip()))
        return json.loads(line)

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            self.proc.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


class Backend:
    """tests/e2e/xds/backend.py: a gRPC server answering every call with
    |name| (or UNAVAILABLE when |fail|). port is 0 when it could not bind
    |host|:|port| (a port another backend's host shares)."""

    def __init__(self, name, host="127.0.0.1", port=0, fail=False):
        self.proc = subprocess.Popen(["/usr/bin/python3", BACKEND, name, host, str(port)]
                                     + (["--fail"] if fail else []),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        self.port = int(line) if line.isdigit() else 0

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
