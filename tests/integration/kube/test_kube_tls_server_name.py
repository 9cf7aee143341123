"""kubeconfig `tls-server-name` is applied: the server's certificate is
verified for that name (and it goes out as SNI) while the connection still
goes to the server's address. kubesim serves HTTPS with a certificate for
127.0.0.1, ::1 and localhost; the client reaches it as 127.0.0.2, which the
certificate does not name. `coxswain kube-watch --exit-on-sync` (the kube
client and an informer) syncs with tls-server-name localhost, and fails
verification without it or with a name the certificate lacks, saying so in
its log."""
import base64
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import replicas as R  # noqa: E402
from kubesim import KubeSim  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402


def kubeconfig(path, port, ca_pem, server_name):
    cluster = {"server": "https://127.0.0.2:%d" % port,
               "certificate-authority-data": base64.b64encode(ca_pem).decode()}
    if server_name:
        cluster["tls-server-name"] = server_name
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                   "clusters": [{"name": "c", "cluster": cluster}],
                   "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                   "users": [{"name": "u", "user": {}}]}, f)


def watch(kc, timeout):
    """Runs kube-watch on Namespaces until synced; (exit status or None on
    timeout, output)."""
    try:
        r = subprocess.run([R.coxswain(), "kube-watch", "--kubeconfig", kc, "--resource",
                            "namespaces", "--cluster-scoped", "--exit-on-sync", "--quiet"],
                           capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"") + (e.stderr or b"")
        return None, out.decode(errors="replace") if isinstance(out, bytes) else out


def main():
    t = Tap()
    slow = 3 if R.sanitized() else 1
    ks = KubeSim(tls=True, args=["--listen", "0.0.0.0:0"])
    try:
        with open(ks.ca_file, "rb") as f:
            ca = f.read()

        def case_applied():
            kc = os.path.join(ks.dir, "sn.kubeconfig")
            kubeconfig(kc, ks.port, ca, "localhost")
            rc, out = watch(kc, 20 * slow)
            check_eq(rc, 0, out[-2000:])

        def case_without_it():
            kc = os.path.join(ks.dir, "plain.kubeconfig")
            kubeconfig(kc, ks.port, ca, None)
            rc, out = watch(kc, 3 * slow)
            check(rc != 0, "synced against a certificate without 127.0.0.2:\n" + out[-2000:])
            check("kube: " in out and "failed: transport" in out, out[-2000:])

        def case_wrong_name():
            kc = os.path.join(ks.dir, "wrong.kubeconfig")
            kubeconfig(kc, ks.port, ca, "wrong.example")
            rc, out = watch(kc, 3 * slow)
            check(rc != 0, "synced with a name the certificate lacks:\n" + out[-2000:])
            check("failed: transport" in out, out[-2000:])

        t.case("tls-server-name localhost: verified for that name, connected to 127.0.0.2",
               case_applied)
        t.case("without it: 127.0.0.2 is not in the certificate, refused and logged",
               case_without_it)
        t.case("a name the certificate lacks: refused", case_wrong_name)
    finally:
        ks.close()
    t.done()


if __name__ == "__main__":
    main()
