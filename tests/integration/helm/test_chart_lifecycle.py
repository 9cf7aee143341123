"""The chart's whole life with the real Helm 3 against kubesim with TLS and
RBAC enforced (the replicas hold only the chart's service-account token):

install (the guide's command) -> a replica started with the installed
Deployment's args and env leads, serves (REST-JSON xDS) and writes
statuses and ProxySnapshots with no 401/403 -> upgrade with changed values
(a rolling update: a replica of the new Deployment takes over on the old
one's SIGTERM; the Lease is the same object, never two leaders) ->
rollback (the same, back to revision 1's Deployment) -> uninstall leaves
none of the release's objects; the CRDs stay, as Helm leaves them, and so
do the Lease, the ProxySnapshots and the Events (not the release's: the
daemon wrote them; docs/operations.md, "Uninstall"), which the guide's
commands then remove. Every helm and kubectl command is the guide's own."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import yaml

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "helm"))

import chartrun as cr  # noqa: E402
import helmlib as h  # noqa: E402
from replicas import sanitized, wait_for  # noqa: E402
from tap import SkipCase, Tap, check, check_eq  # noqa: E402

t = Tap()
NS = h.NAMESPACE
WAIT = 60.0 if sanitized() else 20.0


def guide(pattern):
    """The first command of docs/operations.md that matches."""
    return h.guide_command(pattern)


class Env:
    ks = None
    reps = []
    leaders_seen = []
    install_seq = 0
    uninstall_seq = None


E = Env()


def kubectl(*args):
    p = subprocess.run(["kubectl", "--kubeconfig", E.ks.kubeconfig, "--request-timeout=20s"] +
                       list(args), capture_output=True, text=True, timeout=60)
    return p


def kget(*args):
    p = kubectl("get", "-o", "json", *args)
    check_eq(p.returncode, 0, p.stderr)
    return json.loads(p.stdout)


def helm(*args):
    p = h.helm(*args, kubeconfig=E.ks.kubeconfig)
    check_eq(p.returncode, 0, "helm %s:\n%s" % (" ".join(args), p.stderr))
    return p.stdout


def helm_cmd(line, cwd=None):
    """A helm command line of the guide, run with the test's kubeconfig
    (relative files from |cwd|)."""
    argv = line.split()
    check_eq(argv[0], "helm")
    args = [a.replace("deploy/helm/coxswain", h.CHART) for a in argv[1:]]
    if cwd:
        args = [os.path.join(cwd, a) if os.path.exists(os.path.join(cwd, a)) else a
                for a in args]
    return helm(*args)


def kubectl_cmd(line):
    """A kubectl command line of the guide, run from the checkout as the
    admin."""
    p = subprocess.run(["bash", "-o", "pipefail", "-c", line], capture_output=True, text=True,
                       cwd=TOP, timeout=60, env=dict(os.environ, KUBECONFIG=E.ks.kubeconfig))
    check_eq(p.returncode, 0, "%s\n%s" % (line, p.stderr))
    return p.stdout


def manifest_docs():
    return [d for d in yaml.safe_load_all(helm("get", "manifest", "coxswain", "-n", NS)) if d]


def lease():
    return kget("-n", NS, "lease", "coxswain")


def leading(reps):
    out = []
    for r in reps:
        if r.alive():
            li = r.try_leader_info()
            if li and li.get("leading"):
                out.append(r.identity)
    return out


class LeaderWatch:
    """Samples every replica's /debug/leader every 20 ms in the background:
    the most leaders seen at once."""

    def __init__(self):
        self.max = 0
        self.stop = False
        self.th = threading.Thread(target=self.run, daemon=True)
        self.th.start()

    def run(self):
        while not self.stop:
            self.max = max(self.max, len(leading(list(E.reps))))
            time.sleep(0.02)

    def done(self):
        self.stop = True
        self.th.join(5)
        return self.max


def sa_refusals(since=0):
    return [(a["verb"], a["resource"], a["name"], a["code"]) for a in E.ks.audit(since)
            if a["user"] == cr.sa_user() and a["code"] in (401, 403)]


def last_seq():
    a = E.ks.audit()
    return a[-1]["seq"] if a else 0


def start_replica(pod):
    dep = cr.deployment(manifest_docs())
    cr.ensure_tls_secret(E.ks, "coxswain-xds-tls", NS)  # xDS over TLS by default
    r = cr.ChartReplica(E.ks, dep, pod)
    E.reps.append(r)
    wait_for(r.ready, WAIT, what="%s ready:\n%s" % (pod, r.log_tail()))
    return r


def rest_listeners(r, gateway):
    body = json.dumps({"node": {"id": "lifecycle", "metadata": {"coxswain.dev/gateway": gateway}},
                       "resource_names": []})
    st, out = r.http("/v3/discovery:listeners", method="POST", body=body)
    check_eq(st, 200, out[:300])
    return json.loads(out)


def wait_statuses(since_gen=True):
    """Every example VirtualService and Gateway has a status for its
    current generation."""
    def done():
        for res in ("virtualservices", "gateways"):
            for o in kget("-n", "default", res)["items"]:
                conds = (o.get("status") or {}).get("conditions") or []
                acc = [c for c in conds if c["type"] == "Accepted"]
                if not acc or acc[0].get("observedGeneration") != o["metadata"]["generation"]:
                    return False
        return True
    wait_for(done, WAIT, what="statuses written")


# ---- the cases ---------------------------------------------------------------

def case_install():
    E.ks = cr.rbac_kubesim()
    cmd = guide(r"^helm install coxswain deploy/helm/coxswain -n coxswain-system --create-namespace$")
    out = helm_cmd(cmd)
    check("STATUS: deployed" in out, out)
    st = json.loads(helm("status", "coxswain", "-n", NS, "-o", "json"))
    check_eq((st["info"]["status"], st["version"]), ("deployed", 1))
    # the CRDs came with it (crds/), and every object of the manifest exists
    crds = {c["metadata"]["name"] for c in kget("crd")["items"]}
    check({"gateways.coxswain.dev", "virtualservices.coxswain.dev", "routetables.coxswain.dev",
           "upstreams.coxswain.dev", "proxysnapshots.coxswain.dev"} <= crds, crds)
    docs = manifest_docs()
    check_eq(sorted(d["kind"] for d in docs), h.render().kinds())
    for d in docs:
        p = kubectl("get", d["kind"].lower(), d["metadata"]["name"],
                    *(["-n", d["metadata"]["namespace"]] if "namespace" in d["metadata"] else []))
        check_eq(p.returncode, 0, "%s/%s: %s" % (d["kind"], d["metadata"]["name"], p.stderr))
    p = kubectl("apply", "-f", os.path.join(TOP, "examples"))
    check_eq(p.returncode, 0, p.stderr)


def need():
    if E.ks is None or not E.reps:
        raise SkipCase("an earlier step failed")


def case_replica_leads_serves_writes():
    if E.ks is None:
        raise SkipCase("install failed")
    E.install_seq = 0
    r = start_replica("coxswain-6d4cf9c7b-a1")
    check(r.identity.startswith("coxswain-6d4cf9c7b-a1_"), r.identity)
    wait_for(lambda: lease()["spec"].get("holderIdentity") == r.identity, WAIT,
             what="the Lease held by %s" % r.identity)
    # serves: the examples' Gateways have listeners over REST-JSON xDS
    gws = kget("-n", "default", "gateways")["items"]
    check(gws, "no Gateway in examples/")
    gw = "default/" + gws[0]["metadata"]["name"]
    resp = wait_for(lambda: rest_listeners(r, gw).get("resources"), WAIT,
                    what="listeners for " + gw)
    check(resp, "no listener served for %s" % gw)
    # writes: statuses and ProxySnapshots, as the service account
    wait_statuses()
    snaps = wait_for(lambda: kget("-n", NS, "proxysnapshots")["items"], WAIT,
                     what="a ProxySnapshot")
    check(snaps, "no ProxySnapshot")
    writes = [a for a in E.ks.audit() if a["user"] == cr.sa_user()]
    check({(a["resource"], a["subresource"]) for a in writes} >=
          {("leases", ""), ("virtualservices", "status"), ("proxysnapshots", "")},
          sorted({(a["resource"], a["subresource"]) for a in writes}))
    check_eq(sa_refusals(), [])


def rolling_update(old, pod):
    """A replica of the current Deployment starts, becomes ready, then the
    old one gets SIGTERM: the new one leads, never two at once."""
    lease_before = lease()
    watch = LeaderWatch()
    new = start_replica(pod)
    rc, took = old.stop()
    check_eq(rc, 0, old.log_tail())
    E.reps.remove(old)
    wait_for(lambda: lease()["spec"].get("holderIdentity") == new.identity, WAIT,
             what="the Lease taken over by %s" % new.identity)
    wait_for(lambda: leading([new]), WAIT, what="%s leading" % new.identity)
    most = watch.done()
    check_eq(most, 1, "leaders at once during the handover")
    after = lease()
    # the same Lease object: the chart never owns it, Helm never replaced it
    check_eq(after["metadata"]["uid"], lease_before["metadata"]["uid"])
    check_eq(after["spec"]["leaseTransitions"], lease_before["spec"]["leaseTransitions"] + 1)
    return new


def case_upgrade():
    need()
    old = E.reps[-1]
    # the guide's command, with my-values.yaml changing two values
    tmp = tempfile.mkdtemp(prefix="cx-upgrade-")
    with open(os.path.join(tmp, "my-values.yaml"), "w") as f:
        f.write("statusWriter:\n  qps: 30\nlog:\n  level: debug\n")
    out = helm_cmd(guide(r"^helm upgrade coxswain deploy/helm/coxswain -n coxswain-system -f my-values\.yaml$"), cwd=tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    check("has been upgraded" in out, out)
    dep = cr.deployment(manifest_docs())
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    check("--status-qps=30" in args and "--log-level=debug" in args, args)
    new = rolling_update(old, "coxswain-7f9b8d6c5-b2")
    check("--status-qps=30" in new.args)
    # the new leader writes: a changed VirtualService gets its status
    p = kubectl("-n", "default", "annotate", "virtualservices", "--all", "lifecycle=upgrade",
                "--overwrite")
    check_eq(p.returncode, 0, p.stderr)
    p = kubectl("-n", "default", "label", "virtualservices", "--all", "step=upgrade",
                "--overwrite")
    check_eq(p.returncode, 0, p.stderr)
    wait_statuses()
    check_eq(sa_refusals(), [])


def case_rollback():
    need()
    old = E.reps[-1]
    out = helm_cmd(guide(r"^helm rollback coxswain <REVISION> -n coxswain-system$")
                   .replace("<REVISION>", "1"))
    check("Rollback was a success" in out, out)
    hist = json.loads(helm("history", "coxswain", "-n", NS, "-o", "json"))
    check_eq([(x["revision"], x["status"]) for x in hist],
             [(1, "superseded"), (2, "superseded"), (3, "deployed")])
    check_eq(hist[-1]["description"], "Rollback to 1")
    dep = cr.deployment(manifest_docs())
    check_eq(dep["spec"]["template"]["spec"]["containers"][0]["args"],
             h.render().container()["args"])
    stored = kget("-n", NS, "deployment", "coxswain")
    check_eq(stored["spec"]["template"]["spec"]["containers"][0]["args"],
             h.render().container()["args"])
    rolling_update(old, "coxswain-6d4cf9c7b-c3")
    check_eq(sa_refusals(), [])


def case_uninstall():
    need()
    docs = manifest_docs()
    check(docs, "no manifest")
    holder = lease()["spec"]["holderIdentity"]
    E.uninstall_seq = last_seq()
    cmd = guide(r"^helm uninstall coxswain -n coxswain-system$")
    out = helm_cmd(cmd)
    check('release "coxswain" uninstalled' in out, out)
    # none of the release's objects is left
    for d in docs:
        p = kubectl("get", d["kind"].lower(), d["metadata"]["name"],
                    *(["-n", d["metadata"]["namespace"]] if "namespace" in d["metadata"] else []))
        check(p.returncode != 0 and "NotFound" in p.stderr,
              "%s/%s survived the uninstall" % (d["kind"], d["metadata"]["name"]))
    check_eq(kget("-n", NS, "secrets", "-l", "owner=helm")["items"], [])
    p = h.helm("status", "coxswain", "-n", NS, kubeconfig=E.ks.kubeconfig)
    check(p.returncode != 0 and "release: not found" in p.stderr, p.stderr)
    # the pods go after their Deployment; this one's RBAC is already gone,
    # so it cannot release the lease, and still exits in time
    for r in list(E.reps):
        rc, took = r.stop(timeout=15)
        check_eq(rc, 0, r.log_tail())
        E.reps.remove(r)
    # what stays (docs/operations.md, "Uninstall"): the CRDs, the Lease (held
    # by the last leader until it expires), the ProxySnapshots and Events
    crds = {c["metadata"]["name"] for c in kget("crd")["items"]}
    check("virtualservices.coxswain.dev" in crds, crds)
    check_eq(lease()["spec"]["holderIdentity"], holder)
    check(kget("-n", NS, "proxysnapshots")["items"], "ProxySnapshots")
    check(kget("-n", NS, "events")["items"], "Events")
    # before the uninstall, nothing the service account asked was refused
    check_eq([x for x in E.ks.audit() if x["seq"] <= E.uninstall_seq and
              x["user"] == cr.sa_user() and x["code"] in (401, 403)], [])
    # the guide's commands remove the rest
    for pat in (r"^kubectl -n coxswain-system delete lease coxswain$",
                r"^kubectl -n coxswain-system delete proxysnapshots --all$",
                r"^kubectl delete -f deploy/manifests/crds\.yaml$",
                r"^kubectl delete namespace coxswain-system$"):
        kubectl_cmd(guide(pat))
    check(not [c for c in kget("crd")["items"] if c["spec"]["group"] == "coxswain.dev"],
          "coxswain CRDs left")
    p = kubectl("get", "namespace", NS)
    check(p.returncode != 0 and "NotFound" in p.stderr, p.stderr)


try:
    t.case("helm install (the guide's command): CRDs and every object of the release",
           case_install)
    t.case("a replica with the Deployment's args, env and the SA token leads, serves, writes",
           case_replica_leads_serves_writes)
    t.case("helm upgrade: rolling update, the same Lease, never two leaders", case_upgrade)
    t.case("helm rollback: revision 1's Deployment back, rolling update again", case_rollback)
    t.case("helm uninstall: no release object left; CRDs, Lease, snapshots, Events stay",
           case_uninstall)
finally:
    for r in E.reps:
        if r.alive():
            r.kill()
    if E.ks is not None:
        E.ks.close()
t.done()
