"""`make run` survives its own demo. mk/run.sh runs on free ports in a temp
dir; once it follows leadership, the test does what it tells an operator to
do: runs the printed `kill -9` of the leader, then the printed RPC command.
Asserts: the follow loop lives on and reports the exit and the new leader,
the printed RPC command still succeeds (100 RPCs answered by both backends,
through the xDS Service in front of whichever replicas are alive), the
printed kubectl short name works, and Ctrl-C stops everything."""
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import replicas as R  # noqa: E402
from tap import Tap, SkipCase, check  # noqa: E402

SLOW = 3.0 if R.sanitized() else 1.0


def port_free(p):
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", p))
        return True
    except OSError:
        return False
    finally:
        s.close()


def listening(p):
    """Whether a socket listens on TCP port |p| (any address, IPv4 or 6)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            # local_address is ADDR:PORT in hex; state 0A is LISTEN.
            if len(cols) > 3 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == p:
                return True
    return False


def ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def pick_ports():
    """XDS_PORT and ADMIN_PORT bases whose 3 ports each, and XDS_PORT + 10,
    are free (run.sh needs fixed numbers, tests never use fixed ports).
    Below the ephemeral range: another program's outgoing connection can
    take a port in it at any moment."""
    top = max(ephemeral_low() - 200, 10200)
    for _ in range(200):
        x = random.randrange(10000, top)
        a = x + 100
        ports = [x, x + 1, x + 2, x + 10, a, a + 1, a + 2]
        if all(port_free(p) for p in ports):
            return x, a
    raise AssertionError("no free ports")


class Demo:
    def __init__(self):
        self.xds, self.admin = pick_ports()
        self.dir = os.path.join(R.build_dir(), "test-make-run-%d" % os.getpid())
        env = dict(os.environ)
        for k in ("KUBECONFIG", "POD_NAMESPACE", "POD_NAME"):
            env.pop(k, None)
        env.update({"BUILD": R.build_dir(), "RUN_DIR": self.dir, "XDS_PORT": str(self.xds),
                    "ADMIN_PORT": str(self.admin), "LEASE": "3s", "RENEW": "2s",
                    "RETRY": "500ms"})
        self.lines = []
        self.cv = threading.Condition()
        self.proc = subprocess.Popen(["bash", os.path.join(TOP, "mk", "run.sh")], cwd=TOP,
                                     env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cv:
                self.lines.append(re.sub(r"\x1b\[[0-9;]*m", "", line.rstrip("\n")))
                self.cv.notify_all()
        with self.cv:
            self.cv.notify_all()

    def wait_line(self, pattern, timeout, after=0):
        """The first line matching |pattern| from index |after| on."""
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                for i in range(after, len(self.lines)):
                    if re.search(pattern, self.lines[i]):
                        return i, self.lines[i]
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError("no line matching %r; output:\n%s" % (
                        pattern, "\n".join(self.lines[-60:])))
                self.cv.wait(min(left, 0.5))

    def printed(self, pattern):
        """The command of the printed hint matching |pattern|, without its
        comment."""
        for ln in self.lines:
            if re.search(pattern, ln):
                return ln.split("#", 1)[0].strip()
        raise AssertionError("no hint matching %r" % pattern)

    def stop(self):
        """Ctrl-C: SIGINT to the whole process group, as a terminal sends it."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                return self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                return None
        return self.proc.returncode


def sh(cmd, timeout=60, env=None):
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=TOP)


def main():
    t = Tap()
    if subprocess.run(["bash", "-c", "command -v kubectl"], capture_output=True).returncode:
        t.case("make run", lambda: (_ for _ in ()).throw(SkipCase("kubectl is not installed")))
        t.done()
    demo = Demo()
    state = {}

    def started():
        demo.wait_line(r"Following leadership here", 120 * SLOW)
        i, ln = demo.wait_line(r"100 RPCs via xds:///greeter now:", 60 * SLOW)
        check("greeter-a" in ln and "greeter-b" in ln, ln)
        state["kill"] = demo.printed(r"^\s*kill -9 ")
        state["rpc"] = demo.printed(r"GRPC_XDS_BOOTSTRAP=.*call\.py")
        state["export"] = demo.printed(r"^\s*export KUBECONFIG=")
        check("leader-pid" in state["kill"], state["kill"])

    def kill_leader():
        pidfile_cmd = re.search(r"\$\((.*)\)", state["kill"]).group(1)
        r = sh(pidfile_cmd)
        check(r.returncode == 0 and r.stdout.strip().isdigit(), "leader-pid: %r %r" % (
            r.stdout, r.stderr))
        pid = int(r.stdout)
        n0 = len(demo.lines)
        r = sh(state["kill"])
        check(r.returncode == 0, r.stderr)
        # The follow loop notices the exit and the new leader, and goes on.
        demo.wait_line(r"replica-\d exited", 20 * SLOW, after=n0)
        demo.wait_line(r"leader: replica-\d -> replica-\d", 30 * SLOW, after=n0)
        check(demo.proc.poll() is None, "run.sh died:\n" + "\n".join(demo.lines[-30:]))
        try:
            os.kill(pid, 0)
            check(False, "the leader (pid %d) is still alive" % pid)
        except ProcessLookupError:
            pass

    def rpc_after_kill():
        r = sh(state["rpc"], timeout=90 * SLOW)
        check(r.returncode == 0, "the printed RPC command failed after the leader was killed:\n"
              "%s\n%s" % (r.stdout[-2000:], r.stderr[-2000:]))
        counts = dict(re.findall(r"'(greeter-[ab])': (\d+)", r.stdout))
        check(set(counts) == {"greeter-a", "greeter-b"} and
              sum(int(v) for v in counts.values()) == 100, r.stdout)

    def short_names():
        r = sh(state["export"] + "; kubectl get cxvs greeter -o name")
        check(r.returncode == 0 and "greeter" in r.stdout, r.stdout + r.stderr)

    def ctrl_c():
        rc = demo.stop()
        # 130: the shell's status for an exit on SIGINT.
        check(rc == 130, "run.sh exit status %s:\n%s" % (rc, "\n".join(demo.lines[-20:])))
        check(any("stopped; state kept" in ln for ln in demo.lines), "\n".join(demo.lines[-10:]))
        left = [f for f in os.listdir(demo.dir) if f.endswith(".pid")]
        check(not left, "pid files left: %s" % left)
        for p in (demo.xds, demo.xds + 1, demo.xds + 2, demo.xds + 10, demo.admin):
            check(not listening(p), "port %d still listened on" % p)

    try:
        t.case("the demo starts and prints its commands (RPCs answered by both backends)",
               started)
        t.case("the printed kill -9 of the leader: the follow loop lives on, a standby leads",
               kill_leader)
        t.case("the printed RPC command still succeeds through the xDS Service", rpc_after_kill)
        t.case("the printed kubectl short name (cxvs) works", short_names)
        t.case("Ctrl-C stops everything", ctrl_c)
    finally:
        if demo.proc.poll() is None:
            demo.stop()
        subprocess.run(["rm", "-rf", demo.dir])
    t.done()


if __name__ == "__main__":
    main()
