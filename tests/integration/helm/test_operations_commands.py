"""The commands docs/operations.md tells operators to type work, as
written: install from deploy/manifests with kubectl, then - with a replica
of `coxswain run` running with the chart's flags - who leads (Lease
jsonpath, -o yaml, Events, /debug/leader, the leader metric), why a status
says what it says (jq over .status), and how to read a ProxySnapshot
(jsonpath | base64 -d | gunzip | jq). Commands are taken from the guide's
text; only placeholders (<name>, <pod>, the example namespace and object,
the admin port) are filled in."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.environ.get("COXSWAIN_BUILD", os.path.join(TOP, "build"))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "helm"))

import contract  # noqa: E402
import helmlib as h  # noqa: E402
from kubesim import KubeSim  # noqa: E402
from tap import SkipCase, Tap, check, check_eq  # noqa: E402

t = Tap()
DOC = open(os.path.join(TOP, "docs", "operations.md")).read()
NS = h.NAMESPACE
SANITIZED = os.environ.get("COXSWAIN_SANITIZE", "0") != "0"
WAIT = 30.0 if SANITIZED else 10.0


def doc_command(pattern):
    """The first command line of the guide (inside a code block or inline
    code) that matches pattern, with backslash continuations joined."""
    text = DOC.replace("\\\n", " ")
    for line in text.splitlines():
        for cmd in [line.strip()] + re.findall(r"`([^`]+)`", line):
            if re.search(pattern, cmd) and (cmd.startswith("kubectl") or
                                            cmd.startswith("curl")):
                return re.sub(r"\s+#.*$", "", cmd).strip()
    raise AssertionError("the guide has no command matching %r" % pattern)


class Env:
    ks = None
    proc = None
    ports = None
    tmp = None


E = Env()


def sh(cmd, check_rc=True):
    env = dict(os.environ, KUBECONFIG=E.ks.kubeconfig)
    p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True,
                       env=env, timeout=60)
    if check_rc:
        check_eq(p.returncode, 0, "%s\n%s" % (cmd, p.stderr))
    return p.stdout


def admin_port(cmd):
    return cmd.replace("localhost:18080", "127.0.0.1:%d" % E.ports["admin"])


def wait(fn):
    end = time.monotonic() + WAIT
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
    for pat in (r"apply --server-side -f deploy/manifests/crds\.yaml",
                r"apply -f deploy/manifests/coxswain\.yaml"):
        out = sh("cd %s && %s" % (TOP, doc_command(pat)))
        check("created" in out or "serverside-applied" in out, out)
    sh("kubectl apply -f %s" % os.path.join(TOP, "examples"))
    r = h.render(sets={"leaderElection.leaseDuration": "2s",
                       "leaderElection.renewDeadline": "1500ms",
                       "leaderElection.retryPeriod": "500ms"})
    args = []
    for a in r.container()["args"]:
        if a.startswith(("--xds-listen=", "--admin-listen=")):
            a = a.split("=")[0] + "=127.0.0.1:0"
        args.append(a)
    ports = os.path.join(E.tmp, "ports.json")
    log = open(os.path.join(E.tmp, "coxswain.log"), "wb")
    E.proc = subprocess.Popen([os.path.join(BUILD, "bin", "coxswain")] + args +
                              ["--kubeconfig", E.ks.kubeconfig, "--ports-file", ports],
                              stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                              env=dict(os.environ, POD_NAME="coxswain-0", POD_NAMESPACE=NS))
    log.close()
    E.ports = wait(lambda: json.load(open(ports)))
    check(E.ports, "the replica did not start")


def need():
    if E.ports is None:
        raise SkipCase("no replica running (see the first case)")


def case_who_leads():
    need()
    cmd = doc_command(r"get lease coxswain -o jsonpath='\{\.spec\.holderIdentity\}")
    holder = wait(lambda: sh(cmd).strip())
    check_eq(holder, E.ports["identity"])
    out = sh(doc_command(r"get lease coxswain -o yaml"))
    check("holderIdentity: %s" % E.ports["identity"] in out, out)
    leader = json.loads(sh(admin_port(doc_command(r"/debug/leader"))))
    check_eq(leader["leader"], E.ports["identity"])
    metric = sh(admin_port(doc_command(r"/metrics \| grep leader_election_master_status")))
    check(re.search(r'^leader_election_master_status\{name="coxswain"\} 1$', metric, re.M),
          metric)
    events = wait(lambda: "coxswain." in sh(doc_command(
        r"get events --field-selector involvedObject.name=coxswain")) and "ok")
    check(events, "no Event about the lock")


def case_why_a_status():
    need()
    vs = [d for d in h.load_yaml_docs(os.path.join(TOP, "examples", "virtualservices.yaml"))
          if d["kind"] == "VirtualService"][0]
    cmd = doc_command(r"get virtualservice checkout -o jsonpath='\{\.status\}' \| jq \.")
    cmd = cmd.replace("-n team-a", "-n " + vs["metadata"]["namespace"]).replace(
        "checkout", vs["metadata"]["name"])
    status = wait(lambda: json.loads(sh(cmd)))
    check(status and status.get("state") in ("Accepted", "Rejected", "Warning"), status)
    acc = [c for c in status["conditions"] if c["type"] == "Accepted"]
    check_eq(len(acc), 1)
    check(acc[0].get("message") is not None and acc[0].get("observedGeneration"), acc[0])


def case_read_a_proxysnapshot():
    need()
    names = wait(lambda: sh("kubectl -n %s get proxysnapshots -o name" % NS).split())
    check(names, "no ProxySnapshot")
    listing = sh(doc_command(r"get proxysnapshots$"))
    check(names[0].split("/")[-1] in listing, listing)
    name = names[0].split("/")[-1]
    ps = json.loads(sh("kubectl -n %s get proxysnapshot %s -o json" % (NS, name)))
    cmd = doc_command(r"jsonpath='\{\.spec\.snapshot\}'.*base64 -d \| gunzip \| jq").replace(
        "<name>", name)
    snap = json.loads(sh(cmd))
    check(isinstance(snap, dict) and snap, "decoded snapshot: %r" % snap)
    check(ps["spec"]["version"] in json.dumps(snap), "the decoded snapshot names its version")
    dbg = sh(admin_port(doc_command(r"/debug/snapshot \| jq \.version")))
    check(dbg.strip().strip('"'), "no version on /debug/snapshot")


def cleanup():
    if E.proc is not None and E.proc.poll() is None:
        E.proc.terminate()
        E.proc.wait(10)
    if E.ks is not None:
        E.ks.close()


if contract.daemon_help_flags(BUILD) is None:
    t.case("the guide's commands", lambda: (_ for _ in ()).throw(
        SkipCase("`coxswain run` has not landed yet")))
else:
    try:
        t.case("install from deploy/manifests as the guide says; a replica runs",
               case_install_from_manifests)
        t.case("who leads: Lease jsonpath and yaml, /debug/leader, the metric, Events",
               case_who_leads)
        t.case("why a status says so: jsonpath .status | jq", case_why_a_status)
        t.case("read a ProxySnapshot: jsonpath | base64 -d | gunzip | jq", case_read_a_proxysnapshot)
    finally:
        cleanup()
t.done()
