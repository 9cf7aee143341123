"""Every command docs/operations.md tells operators to type is accounted
for, and the ones a machine without a cluster can run, run as written.

The inventory (COMMANDS) maps each command of the guide (code blocks and
inline code) to where it runs: in this file, in another test that reads it
from the guide (the Helm lifecycle, the image tests), or nowhere with the
reason (it needs a container engine, a kubelet or a controller kubesim does
not have). A command the inventory does not know, or an entry no command
matches any more, fails the first case.

Run here, with only placeholders filled in (<name>, <pod>, the example
namespace and object, localhost:18080 -> the replica's admin port): install
from deploy/manifests, then with a replica of `coxswain run` on the chart's
flags: who leads (Lease jsonpath and yaml, Events, /debug/leader, the
metric, kubectl auth can-i), why a status says what it says, how to read a
ProxySnapshot and compare its version with the replica's; the HA profile's
install path from an empty cluster (namespaces, openssl certificates,
Secrets, PriorityClass, helm install -f ci/ha-values.yaml) with a replica
serving xDS over the mutual TLS it sets up; and the lock change through
helm upgrade --set leaderElection.resourceLock=leases."""
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

import yaml

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.environ.get("COXSWAIN_BUILD", os.path.join(TOP, "build"))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "helm"))
sys.path.insert(0, os.path.join(TOP, "tests", "hostile"))

import chartrun as cr  # noqa: E402
import grpc  # noqa: E402
from hostilelib import ADS_PATH, LDS, ads_request, node  # noqa: E402
import contract  # noqa: E402
import helmlib as h  # noqa: E402
from kubesim import KubeSim  # noqa: E402
from tap import SkipCase, Tap, check, check_eq  # noqa: E402

t = Tap()
DOC = open(h.GUIDE).read()
NS = h.NAMESPACE
SANITIZED = os.environ.get("COXSWAIN_SANITIZE", "0") != "0"
WAIT = 30.0 if SANITIZED else 10.0
HELM_LIFECYCLE = "tests/integration/helm/test_chart_lifecycle.py"
IMAGE_TESTS = "tests/image/test_image.py"

# (pattern, where): where is "here", a test file that runs the command
# (taken from the guide by that same pattern), or "not run: <why>".
COMMANDS = [
    (r"^helm install coxswain deploy/helm/coxswain -n coxswain-system --create-namespace$",
     HELM_LIFECYCLE),
    (r"^kubectl apply --server-side -f deploy/manifests/crds\.yaml$", "here"),
    (r"^kubectl apply -f deploy/manifests/coxswain\.yaml$", "here"),
    # the HA profile's install path
    (r"^kubectl create namespace (coxswain-system|gateways|team-a|team-b)$", "here"),
    (r"^openssl req -x509 ", "here"),
    (r"^kubectl -n coxswain-system create secret (tls|generic) ", "here"),
    (r"^kubectl create priorityclass coxswain-critical ", "here"),
    (r"^helm install coxswain deploy/helm/coxswain -n coxswain-system -f "
     r"deploy/helm/coxswain/ci/ha-values\.yaml$", "here"),
    # the image
    (r"^make image$", "run by make test-image, whose prerequisite it is (tests/image)"),
    (r"^podman load -i build/image/", IMAGE_TESTS),
    (r"^docker load -i build/image/", "not run: needs a Docker engine (tests/image loads the "
                                      "same archive into containers-storage instead)"),
    (r"^kind load image-archive ", "not run: needs a kind cluster (the archive is the one "
                                   "tests/image loads)"),
    (r"^skopeo copy oci-archive:", IMAGE_TESTS),
    (r"^helm install coxswain deploy/helm/coxswain -n coxswain-system --create-namespace "
     r"--set image\.repository=", IMAGE_TESTS),
    (r"^docker build -f deploy/Dockerfile ", "not run: needs a Docker engine "
                                             "(tests/integration/helm/test_dockerfile.py checks "
                                             "the Dockerfile without one)"),
    # names of commands in running text, whose full form is in a code block
    (r"^(podman load|docker load|kind load image-archive|skopeo copy|coxswain run|"
     r"coxswain handover)$",
     "a name in the text, not a command line"),
    # upgrade, lock change, rollback
    (r"^helm upgrade coxswain deploy/helm/coxswain -n coxswain-system -f my-values\.yaml$",
     HELM_LIFECYCLE),
    (r"^kubectl -n coxswain-system scale deployment coxswain --replicas=0$",
     "not run: needs the deployment controller to stop the pods (kubesim runs no "
     "controllers and serves no scale subresource); the replicas are stopped by hand here"),
    (r"^helm upgrade coxswain deploy/helm/coxswain -n coxswain-system "
     r"--set leaderElection\.resourceLock=leases$", "here"),
    (r"^helm rollback coxswain <REVISION> -n coxswain-system$", HELM_LIFECYCLE),
    (r"^kubectl -n coxswain-system rollout status deployment/coxswain$",
     "not run: needs the deployment controller and kubelets to report rollout status"),
    (r"^kubectl -n coxswain-system get lease coxswain -o jsonpath=", "here"),
    (r"^kubectl -n coxswain-system get proxysnapshots$", "here"),
    # uninstall
    (r"^helm uninstall coxswain -n coxswain-system$", HELM_LIFECYCLE),
    (r"^kubectl -n coxswain-system delete lease coxswain$", HELM_LIFECYCLE),
    (r"^kubectl -n coxswain-system delete proxysnapshots --all$", HELM_LIFECYCLE),
    (r"^kubectl delete -f deploy/manifests/crds\.yaml$", HELM_LIFECYCLE),
    (r"^kubectl delete namespace coxswain-system$", HELM_LIFECYCLE),
    # troubleshooting
    (r"^kubectl -n coxswain-system get lease coxswain -o yaml$", "here"),
    (r"^kubectl -n coxswain-system port-forward pod/<pod> 18080 &$",
     "not run: needs a pod and its kubelet; the replica's admin port is reached directly"),
    (r"^curl -s localhost:18080/debug/leader$", "here"),
    (r"^curl -s localhost:18080/metrics \| grep leader_election_master_status$", "here"),
    (r"^kubectl -n coxswain-system get events --field-selector involvedObject\.name=coxswain$",
     "here"),
    (r"^kubectl auth can-i (update leases/coxswain|create leases) ", "here"),
    (r"^kubectl -n team-a get virtualservice checkout -o jsonpath='\{\.status\}' \| jq \.$",
     "here"),
    (r"^kubectl -n team-a get events --field-selector involvedObject\.name=checkout$", "here"),
    (r"^curl -s localhost:18080/debug/snapshot$", "here"),
    (r"^kubectl -n coxswain-system get proxysnapshot <name> -o yaml$", "here"),
    (r"^kubectl -n coxswain-system get proxysnapshot <name> -o jsonpath='\{\.spec\.snapshot\}'",
     "here"),
    (r"^kubectl -n coxswain-system get proxysnapshot <name> -o jsonpath='\{\.spec\.gateway\}",
     "here"),
    (r"^curl -s localhost:18080/metrics \| grep coxswain_snapshot_version_info$", "here"),
    (r"^coxswain translate -f manifests/ --now ", "here"),
    (r"^kubectl exec -n coxswain-system deploy/coxswain -- coxswain handover --(to <identity>|any)$",
     "not run: kubectl exec needs a kubelet; tests/integration/election/test_handover.py runs "
     "coxswain handover --to and --any on both lock kinds"),
    (r"^kubectl -n coxswain-system get endpoints coxswain-xds$",
     "not run: its answer depends on ready pods behind the Service, and kubesim runs no pods"),
]


def guide_commands():
    return h.guide_commands()


def doc_command(pattern):
    return h.guide_command(pattern)


def case_inventory():
    cmds = guide_commands()
    check(len(cmds) > 30, cmds)
    used = set()
    for c in cmds:
        hits = [i for i, (pat, _) in enumerate(COMMANDS) if re.search(pat, c)]
        check_eq(len(hits), 1, "guide command %r matches %d inventory entries" % (c, len(hits)))
        used.update(hits)
    stale = [COMMANDS[i][0] for i in range(len(COMMANDS)) if i not in used]
    check_eq(stale, [], "inventory entries no guide command matches")
    # a command run elsewhere is taken from the guide by that test, by the
    # same pattern
    for pat, where in COMMANDS:
        if where.startswith("tests/"):
            src = open(os.path.join(TOP, where)).read()
            check(pat in src, "%s does not take %r from the guide" % (where, pat))
        elif where not in ("here",):
            check(where.startswith(("not run: ", "run by make test-image", "a name in the text")),
                  where)
    print("# %d guide commands: %d run here, %d by other tests, %d not run (with the reason)"
          % (len(cmds), sum(1 for c in cmds for p, w in COMMANDS if re.search(p, c) and
                            w == "here"),
             sum(1 for c in cmds for p, w in COMMANDS if re.search(p, c) and
                 (w.startswith("tests/") or w.startswith("run by"))),
             sum(1 for c in cmds for p, w in COMMANDS if re.search(p, c) and
                 w.startswith("not run"))))


class Env:
    ks = None
    rep = None
    tmp = None


E = Env()


def sh(cmd, check_rc=True, cwd=None, kubeconfig=None):
    env = dict(os.environ, KUBECONFIG=kubeconfig or E.ks.kubeconfig,
               HELM_CACHE_HOME=os.path.join(BUILD, "helm-home", "cache"),
               HELM_CONFIG_HOME=os.path.join(BUILD, "helm-home", "config"),
               HELM_DATA_HOME=os.path.join(BUILD, "helm-home", "data"))
    if cmd.startswith("helm "):
        cmd = h.helm_binary() + cmd[4:]
    p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True,
                       env=env, timeout=60, cwd=cwd or TOP)
    if check_rc:
        check_eq(p.returncode, 0, "%s\n%s" % (cmd, p.stderr))
    return p.stdout


def admin_port(cmd):
    return cmd.replace("localhost:18080", "127.0.0.1:%d" % E.rep.admin_port)


def wait(fn, timeout=None):
    end = time.monotonic() + (timeout or WAIT)
    while time.monotonic() < end:
        try:
            v = fn()
            if v:
                return v
        except Exception:  # noqa: BLE001 - not there yet
            pass
        time.sleep(0.1)
    return None


def case_install_from_manifests():
    E.ks = KubeSim()
    E.tmp = tempfile.mkdtemp(prefix="cx-ops-")
    for pat in (r"^kubectl apply --server-side -f deploy/manifests/crds\.yaml$",
                r"^kubectl apply -f deploy/manifests/coxswain\.yaml$"):
        out = sh(doc_command(pat))
        check("created" in out or "serverside-applied" in out, out)
    sh("kubectl apply -f %s" % os.path.join(TOP, "examples"))
    # the manifests' Deployment, with a short lease so the test is quick
    docs = h.load_yaml_docs(os.path.join(TOP, "deploy", "manifests", "coxswain.yaml"))
    dep = cr.deployment(docs)
    # the xDS certificate the guide has the operator create (any CA)
    cr.ensure_tls_secret(E.ks, "coxswain-xds-tls", NS)
    E.rep = cr.ChartReplica(E.ks, dep, "coxswain-0", kubeconfig=E.ks.kubeconfig,
                            extra=["--leader-elect-lease-duration=2s",
                                   "--leader-elect-renew-deadline=1500ms",
                                   "--leader-elect-retry-period=500ms"])
    check(wait(lambda: E.rep.identity), "the replica did not start")


def need():
    if E.rep is None:
        raise SkipCase("no replica running (see the install case)")


def case_who_leads():
    need()
    cmd = doc_command(r"^kubectl -n coxswain-system get lease coxswain -o jsonpath=")
    holder = wait(lambda: sh(cmd).strip())
    check_eq(holder, E.rep.identity)
    out = sh(doc_command(r"^kubectl -n coxswain-system get lease coxswain -o yaml$"))
    check("holderIdentity: %s" % E.rep.identity in out, out)
    leader = json.loads(sh(admin_port(doc_command(r"^curl -s localhost:18080/debug/leader$"))))
    check_eq(leader["leader"], E.rep.identity)
    metric = sh(admin_port(doc_command(r"\| grep leader_election_master_status$")))
    check(re.search(r'^leader_election_master_status\{name="coxswain"\} 1$', metric, re.M),
          metric)
    events = wait(lambda: "coxswain." in sh(doc_command(
        r"get events --field-selector involvedObject\.name=coxswain$")) and "ok")
    check(events, "no Event about the lock")


def case_auth_can_i():
    # with RBAC enforced: the chart's own objects, installed by the admin
    ks = cr.rbac_kubesim()
    try:
        p = h.helm("install", "coxswain", h.CHART, "-n", NS, "--create-namespace",
                   kubeconfig=ks.kubeconfig)
        check_eq(p.returncode, 0, p.stderr)
        cmds = [c for c in guide_commands() if c.startswith("kubectl auth can-i")]
        check_eq(len(cmds), 2, cmds)
        for c in cmds:
            check_eq(sh(c, kubeconfig=ks.kubeconfig).strip(), "yes", c)
        # and it can say no: the chart grants no delete on the lock
        p = subprocess.run(["bash", "-c", cmds[0].replace("can-i update", "can-i delete")],
                           capture_output=True, text=True,
                           env=dict(os.environ, KUBECONFIG=ks.kubeconfig))
        check_eq((p.returncode, p.stdout.strip()), (1, "no"), p.stderr)
    finally:
        ks.close()


def example_vs():
    return [d for d in h.load_yaml_docs(os.path.join(TOP, "examples", "virtualservices.yaml"))
            if d["kind"] == "VirtualService"][0]


def case_why_a_status():
    need()
    vs = example_vs()
    ns, name = vs["metadata"]["namespace"], vs["metadata"]["name"]

    def fill(cmd):
        return cmd.replace("-n team-a", "-n " + ns).replace("checkout", name)
    cmd = fill(doc_command(r"get virtualservice checkout -o jsonpath='\{\.status\}' \| jq \.$"))
    status = wait(lambda: json.loads(sh(cmd)))
    check(status and status.get("state") in ("Accepted", "Rejected", "Warning"), status)
    acc = [c for c in status["conditions"] if c["type"] == "Accepted"]
    check_eq(len(acc), 1)
    check(acc[0].get("message") is not None and acc[0].get("observedGeneration"), acc[0])
    # the Events command runs (kubesim lists none for the object: fine)
    sh(fill(doc_command(r"get events --field-selector involvedObject\.name=checkout$")))
    snap = json.loads(sh(admin_port(doc_command(r"^curl -s localhost:18080/debug/snapshot$"))))
    check(snap.get("version") and snap.get("reports"), list(snap))


def case_read_a_proxysnapshot():
    need()
    names = wait(lambda: sh("kubectl -n %s get proxysnapshots -o name" % NS).split())
    check(names, "no ProxySnapshot")
    listing = sh(doc_command(r"^kubectl -n coxswain-system get proxysnapshots$"))
    check(names[0].split("/")[-1] in listing, listing)
    metrics = sh(admin_port(doc_command(r"\| grep coxswain_snapshot_version_info$")))
    for full in names:
        name = full.split("/")[-1]
        ps = yaml.safe_load(sh(doc_command(r"get proxysnapshot <name> -o yaml$")
                               .replace("<name>", name)))
        check_eq(ps["kind"], "ProxySnapshot")
        snap = json.loads(sh(doc_command(r"jsonpath='\{\.spec\.snapshot\}'")
                             .replace("<name>", name)))
        check(isinstance(snap, dict) and snap, "decoded snapshot: %r" % snap)
        check(ps["spec"]["version"] in json.dumps(snap), "the decoded snapshot names its version")
        # the guide's comparison: the ProxySnapshot's version is the one the
        # replica serves that Gateway
        gw, ver = sh(doc_command(r"jsonpath='\{\.spec\.gateway\}").replace("<name>", name)).split()
        check_eq(ver, ps["spec"]["version"])
        check(re.search(r'^coxswain_snapshot_version_info\{gateway="%s",version="%s"\} 1$'
                        % (re.escape(gw), re.escape(ver)), metrics, re.M),
              "%s %s not in:\n%s" % (gw, ver, metrics))


def case_translate_offline():
    # the guide's check before applying, on the examples as "manifests/"
    cmd = doc_command(r"^coxswain translate -f manifests/ --now ")
    exe = os.path.join(BUILD, "bin", "coxswain")
    # no cluster needed: nothing reads a kubeconfig
    out = json.loads(sh(cmd.replace("coxswain ", exe + " ", 1).replace("manifests/", "examples/"),
                        kubeconfig=os.devnull))
    check(out["snapshot"] and out["reports"], list(out))
    check(all(r["state"] != "Rejected" for r in out["reports"]), out["reports"])


def stop_manifest_replica():
    if E.rep is not None and E.rep.alive():
        E.rep.stop()
    if E.ks is not None:
        E.ks.close()
    E.rep = E.ks = None


def ha_block():
    """The code block of the guide's "The HA profile" section."""
    sec = DOC.split("### The HA profile", 1)[1]
    block = sec.split("```sh\n", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    return [ln.strip() for ln in block.splitlines() if ln.strip() and
            not ln.strip().startswith("#")]


def ha_files_dir(ks, tmp):
    """The Secrets the HA Deployment mounts, as files (what the kubelet
    would mount): {mount path: local dir}."""
    out = {}
    for secret, mount in (("coxswain-xds-tls", "/etc/coxswain/xds-tls"),
                          ("coxswain-xds-client-ca", "/etc/coxswain/xds-client-ca")):
        s = json.loads(sh("kubectl -n %s get secret %s -o json" % (NS, secret),
                          kubeconfig=ks.kubeconfig))
        d = os.path.join(tmp, secret)
        os.makedirs(d)
        import base64
        for k, v in s["data"].items():
            with open(os.path.join(d, k), "wb") as f:
                f.write(base64.b64decode(v))
        out[mount] = d
    return out


def tls_handshake(port, cafile, cert=None, key=None):
    """True if a TLS handshake with the xDS port completes (ALPN h2)."""
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = False
    ctx.set_alpn_protocols(["h2"])
    if cert:
        ctx.load_cert_chain(cert, key)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        try:
            with ctx.wrap_socket(raw) as s:
                s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
                s.settimeout(3)
                data = s.recv(9)  # the server's SETTINGS frame, or an alert
                return len(data) == 9
        except (ssl.SSLError, OSError):
            return False


def ads_without_credentials(port, cafile):
    """One ADS stream over TLS with neither a client certificate nor a
    token: (status code, details)."""
    creds = grpc.ssl_channel_credentials(root_certificates=open(cafile, "rb").read())
    ch = grpc.secure_channel("127.0.0.1:%d" % port, creds, options=[
        ("grpc.ssl_target_name_override", "coxswain-xds.coxswain-system.svc")])
    try:
        req = ads_request(LDS, node_bytes=node("ha-proxy", gateway="default/edge"))
        c = ch.stream_stream(ADS_PATH)(iter([req]), timeout=10)
        for _ in c:
            return grpc.StatusCode.OK, "a response"
        return grpc.StatusCode.OK, "closed without a status"
    except grpc.RpcError as e:
        return e.code(), e.details() or ""
    finally:
        ch.close()


def case_ha_install_as_written():
    stop_manifest_replica()
    ks = cr.rbac_kubesim()
    tmp = tempfile.mkdtemp(prefix="cx-ha-")
    rep = None
    try:
        # the Prometheus operator's CRDs: installed with the operator
        ks_crds = [{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": "%s.monitoring.coreos.com" % p},
                    "spec": {"group": "monitoring.coreos.com", "scope": "Namespaced",
                             "names": {"plural": p, "singular": k.lower(), "kind": k},
                             "versions": [{"name": "v1", "served": True, "storage": True,
                                           "schema": {"openAPIV3Schema": {
                                               "type": "object",
                                               "x-kubernetes-preserve-unknown-fields": True}}}]}}
                   for p, k in (("servicemonitors", "ServiceMonitor"),
                                ("prometheusrules", "PrometheusRule"))]
        p = subprocess.run(["kubectl", "--kubeconfig", ks.kubeconfig, "apply", "-f", "-"],
                           input=yaml.safe_dump_all(ks_crds), capture_output=True, text=True)
        check_eq(p.returncode, 0, p.stderr)
        # the guide's block, line by line, in an empty directory (the
        # certificates are written there); the chart path from the checkout
        lines = ha_block()
        check(any(ln.startswith("helm install") for ln in lines), lines)
        for ln in lines:
            sh(ln.replace("deploy/helm/coxswain", h.CHART), cwd=tmp, kubeconfig=ks.kubeconfig)
        st = json.loads(sh("helm status coxswain -n %s -o json" % NS, kubeconfig=ks.kubeconfig))
        check_eq(st["info"]["status"], "deployed")
        docs = [d for d in yaml.safe_load_all(sh("helm get manifest coxswain -n %s" % NS,
                                                 kubeconfig=ks.kubeconfig)) if d]
        check_eq(sorted({d["kind"] for d in docs}),
                 sorted({d["kind"] for d in h.render(values=[h.HA_VALUES]).docs}))
        dep = cr.deployment(docs)
        pod = dep["spec"]["template"]["spec"]
        check_eq(pod["priorityClassName"], "coxswain-critical")
        sh("kubectl get priorityclass coxswain-critical", kubeconfig=ks.kubeconfig)
        # a replica of it, with the Secrets' files where the pod mounts them
        files = ha_files_dir(ks, tmp)
        ctr = dep["spec"]["template"]["spec"]["containers"][0]
        local = json.loads(json.dumps(dep))
        args = []
        for a in ctr["args"]:
            for mount, d in files.items():
                a = a.replace(mount, d)
            args.append(a)
        local["spec"]["template"]["spec"]["containers"][0]["args"] = args
        rep = cr.ChartReplica(ks, local, "coxswain-ha-0")
        check(wait(rep.ready, 3 * WAIT), "HA replica not ready:\n" + rep.log_tail())
        check(wait(lambda: json.loads(sh("kubectl -n %s get lease coxswain -o json" % NS,
                                         kubeconfig=ks.kubeconfig))["spec"]
                   .get("holderIdentity") == rep.identity), "the HA replica does not lead")
        # xDS over mutual TLS: a client certificate signed by the guide's CA
        # gets through, none does not
        ca = os.path.join(tmp, "ca.crt")
        subprocess.run(["openssl", "req", "-x509", "-CA", ca, "-CAkey",
                        os.path.join(tmp, "ca.key"), "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=proxy",
                        "-keyout", os.path.join(tmp, "proxy.key"),
                        "-out", os.path.join(tmp, "proxy.crt")],
                       capture_output=True, check=True)
        check(tls_handshake(rep.xds_port, ca, os.path.join(tmp, "proxy.crt"),
                            os.path.join(tmp, "proxy.key")), "mTLS with a client certificate")
        # without one the handshake completes (a ServiceAccount token is the
        # other credential), but the stream is refused
        code, details = ads_without_credentials(rep.xds_port, ca)
        check_eq(code, grpc.StatusCode.UNAUTHENTICATED, details)
        check("SPIFFE client certificate" in details, details)
    finally:
        if rep is not None and rep.alive():
            rep.stop()
        ks.close()
        shutil.rmtree(tmp, ignore_errors=True)


def case_lock_change_through_helm_upgrade():
    """A release on the legacy ConfigMap lock moves to a Lease as the guide
    says: the replicas stop (scale to 0: done by hand, no controller here),
    the guide's helm upgrade, and a replica of the new Deployment elects on
    the Lease."""
    ks = cr.rbac_kubesim()
    reps = []
    try:
        p = h.helm("install", "coxswain", h.CHART, "-n", NS, "--create-namespace",
                   "--set", "leaderElection.resourceLock=configmaps", kubeconfig=ks.kubeconfig)
        check_eq(p.returncode, 0, p.stderr)

        def dep():
            return cr.deployment([d for d in yaml.safe_load_all(
                sh("helm get manifest coxswain -n %s" % NS, kubeconfig=ks.kubeconfig)) if d])
        cr.ensure_tls_secret(ks, "coxswain-xds-tls", NS)
        old = cr.ChartReplica(ks, dep(), "coxswain-old-0")
        reps.append(old)
        check(wait(lambda: json.loads(sh("kubectl -n %s get configmap coxswain -o json" % NS,
                                         kubeconfig=ks.kubeconfig))["metadata"]
                   .get("annotations", {}).get("control-plane.alpha.kubernetes.io/leader")),
              "no ConfigMap lock record")
        old.stop()
        out = sh(doc_command(r"--set leaderElection\.resourceLock=leases$")
                 .replace("deploy/helm/coxswain", h.CHART), kubeconfig=ks.kubeconfig)
        check("has been upgraded" in out, out)
        new_dep = dep()
        check("--leader-elect-resource-lock=leases" in
              new_dep["spec"]["template"]["spec"]["containers"][0]["args"])
        stored = json.loads(sh("kubectl -n %s get deployment coxswain -o json" % NS,
                               kubeconfig=ks.kubeconfig))
        check_eq(stored["spec"]["replicas"], 3)
        new = cr.ChartReplica(ks, new_dep, "coxswain-new-0")
        reps.append(new)
        holder = wait(lambda: json.loads(sh("kubectl -n %s get lease coxswain -o json" % NS,
                                            kubeconfig=ks.kubeconfig))["spec"]
                      .get("holderIdentity"), 3 * WAIT)
        check_eq(holder, new.identity)
        # the RBAC moved with it: the Role names the Lease now, and no write
        # of the new replica was refused
        refused = [a for a in ks.audit() if a["user"] == cr.sa_user() and
                   a["code"] in (401, 403)]
        check_eq(refused, [])
    finally:
        for r in reps:
            if r.alive():
                r.stop()
        ks.close()


t.case("every command of the guide is run here, by another test, or excused with a reason",
       case_inventory)
if contract.daemon_help_flags(BUILD) is None:
    t.case("the guide's commands", lambda: (_ for _ in ()).throw(
        SkipCase("`coxswain run` has not landed yet")))
else:
    try:
        t.case("install from deploy/manifests as the guide says; a replica runs",
               case_install_from_manifests)
        t.case("who leads: Lease jsonpath and yaml, /debug/leader, the metric, Events",
               case_who_leads)
        t.case("kubectl auth can-i (RBAC from the chart): yes for the lock, no beyond",
               case_auth_can_i)
        t.case("why a status says so: jsonpath .status | jq, Events, /debug/snapshot",
               case_why_a_status)
        t.case("read a ProxySnapshot; its version is the one the replica serves the Gateway",
               case_read_a_proxysnapshot)
    finally:
        stop_manifest_replica()
    t.case("coxswain translate -f ... --now, offline, as the TLS section says",
           case_translate_offline)
    t.case("the HA profile installs as written on an empty cluster; a replica serves mTLS xDS",
           case_ha_install_as_written)
    t.case("lock change: the guide's helm upgrade moves a ConfigMap lock to a Lease",
           case_lock_change_through_helm_upgrade)
t.done()
