"""Least privilege, proven with the daemon: `coxswain run` replicas, started
with the flags the chart renders and the chart's service account token,
against kubesim authorizing from the chart's own RBAC objects.

1. With the chart's RBAC the whole scenario works: a leader is elected
   (Lease created and renewed, an Event recorded), every example object gets
   its status, a ProxySnapshot is published per Gateway, the standby finds
   it consistent, an edit is followed, a deleted Gateway's snapshot is
   deleted — and nothing is ever refused (403).
2. Every permission the chart grants is used: kubesim's request counters
   for the service account cover each granted (verb, resource) pair, and
   every request it made was granted.
3. Removing any single rule breaks the scenario: one named case per rule,
   each asserting which checks fail without it.
"""
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import yaml

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.environ.get("COXSWAIN_BUILD", os.path.join(TOP, "build"))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "helm"))

import contract  # noqa: E402
import helmlib as h  # noqa: E402
from kubesim import KubeSim  # noqa: E402
from tap import SkipCase, Tap, check, check_eq  # noqa: E402

t = Tap()
NS = h.NAMESPACE
ADMIN = "admin-token"
SA_TOKEN = "coxswain-sa-token"
SA_USER = "system:serviceaccount:%s:coxswain" % NS
COXSWAIN = os.path.join(BUILD, "bin", "coxswain")
SANITIZED = os.environ.get("COXSWAIN_SANITIZE", "0") != "0"
# Fast election timings (the chart validates them like any other values).
FAST = {"leaderElection.leaseDuration": "2s", "leaderElection.renewDeadline": "1500ms",
        "leaderElection.retryPeriod": "500ms", "debounce": "20ms"}
DEADLINE = 20.0 if SANITIZED else 6.0


def examples():
    docs = []
    for f in sorted(os.listdir(os.path.join(TOP, "examples"))):
        if f.endswith(".yaml"):
            docs += h.load_yaml_docs(os.path.join(TOP, "examples", f))
    return docs


def crds():
    files = sorted(f for f in os.listdir(os.path.join(h.CHART, "crds")) if f.endswith(".yaml"))
    return [d for f in files for d in h.load_yaml_docs(os.path.join(h.CHART, "crds", f))]


class Cluster:
    """kubesim authorizing from RBAC; the admin token is in system:masters,
    the generated kubeconfig carries the service account's token."""

    def __init__(self):
        self.ks = KubeSim(allow_all=False,
                          tokens={ADMIN: ("admin", ["system:masters"]), SA_TOKEN: SA_USER},
                          args=["--kubeconfig-token", SA_TOKEN])
        self.plural = {}

    def close(self):
        self.ks.close()

    def req(self, method, path, body=None, ctype=None):
        return self.ks.request(method, path, body=body, token=ADMIN, ctype=ctype)

    def base(self, api_version):
        return "/api/v1" if api_version == "v1" else "/apis/" + api_version

    def path(self, d, name=True):
        av, kind = d["apiVersion"], d["kind"]
        if (av, kind) not in self.plural:
            st, disc = self.req("GET", self.base(av))
            check_eq(st, 200, "discovery of %s" % av)
            for r in disc["resources"]:
                if "/" not in r["name"]:
                    self.plural[(av, r["kind"])] = (r["name"], r["namespaced"])
        plural, namespaced = self.plural[(av, kind)]
        ns = d["metadata"].get("namespace") if namespaced else None
        p = self.base(av) + ("/namespaces/" + ns if ns else "") + "/" + plural
        return p + "/" + d["metadata"]["name"] if name else p

    def create(self, d):
        st, body = self.req("POST", self.path(d, name=False), d)
        check(st == 201, "creating %s/%s: %s %s" % (d["kind"], d["metadata"]["name"], st, body))
        return body

    def get(self, d):
        return self.req("GET", self.path(d))

    def list(self, api_version, plural, ns):
        st, body = self.req("GET", "%s/namespaces/%s/%s" % (self.base(api_version), ns, plural))
        check_eq(st, 200, plural)
        return body["items"]


class Replica:
    def __init__(self, cluster, args, index, workdir):
        self.ports_file = os.path.join(workdir, "ports-%d.json" % index)
        self.log_path = os.path.join(workdir, "coxswain-%d.log" % index)
        cmd = [COXSWAIN] + args + ["--kubeconfig", cluster.ks.kubeconfig,
                                   "--ports-file", self.ports_file]
        env = dict(os.environ, POD_NAME="coxswain-%d" % index, POD_NAMESPACE=NS)
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                         env=env)
        self.ports = None

    def ready(self):
        if self.ports is None and os.path.exists(self.ports_file):
            try:
                with open(self.ports_file) as f:
                    self.ports = json.load(f)
            except ValueError:
                return False
        return self.ports is not None

    def admin(self, path):
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", self.ports["admin"], timeout=5)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read().decode(errors="replace")
        finally:
            c.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()


_XDS_TLS = {}


def xds_tls_dir():
    """The xDS certificate the pod mounts at /etc/coxswain/xds-tls (TLS is on
    by default), as local files: a self-signed one."""
    if "dir" not in _XDS_TLS:
        d = tempfile.mkdtemp(prefix="lp-xds-tls-")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj",
                        "/CN=coxswain-xds", "-keyout", os.path.join(d, "tls.key"),
                        "-out", os.path.join(d, "tls.crt")],
                       check=True, capture_output=True, timeout=30)
        _XDS_TLS["dir"] = d
    return _XDS_TLS["dir"]


def daemon_args(rendered):
    """The container args the chart renders, with loopback listeners on
    free ports and the mounted xDS certificate as local files (everything
    else exactly as rendered)."""
    args = []
    for a in rendered.container()["args"]:
        if "=/etc/coxswain/xds-tls/" in a:
            a = a.replace("=/etc/coxswain/xds-tls/", "=" + xds_tls_dir() + "/")
        if a.startswith("--xds-listen="):
            a = "--xds-listen=127.0.0.1:0"
        elif a.startswith("--admin-listen="):
            a = "--admin-listen=127.0.0.1:0"
        elif a.startswith("--leader-elect-peer-listen="):
            a = "--leader-elect-peer-listen=127.0.0.1:0"
        elif a.startswith("--log-format="):
            a = "--log-format=text"
        args.append(a)
    return args


def poll(checks, budget):
    """Polls every check (name -> fn returning truthy when satisfied) until
    all pass or the budget is spent; returns {name: True or None}."""
    done = {}
    end = time.monotonic() + budget
    while True:
        for name, fn in checks.items():
            if name in done:
                continue
            try:
                if fn():
                    done[name] = True
            except Exception:  # noqa: BLE001 - not there yet
                pass
        if len(done) == len(checks) or time.monotonic() > end:
            return {n: done.get(n) for n in checks}
        time.sleep(0.1)


CHECKS = ["leader elected", "election event", "statuses written", "snapshots published",
          "standby consistent", "edit followed", "snapshot deleted with its gateway",
          "nothing refused"]
REASONS = {
    "leader elected": "no replica holds the lock",
    "election event": "no Event about the lock",
    "statuses written": "not every input has a current status",
    "snapshots published": "a Gateway has no ProxySnapshot",
    "standby consistent": "the standby does not report consistent snapshots",
    "edit followed": "the status did not follow an edit",
    "snapshot deleted with its gateway": "a deleted Gateway's ProxySnapshot stayed",
}


class _Stop(Exception):
    pass


WATCHED = ["gateways", "virtualservices", "routetables", "upstreams", "services",
           "endpointslices", "secrets", "configmaps", "leases", "proxysnapshots"]


def scenario(rbac_docs, replicas=2, budget=DEADLINE, refuse_streaming=False, sets=None,
             stop_early=False):
    """Runs the scenario in three phases (steady state, an edit, a Gateway
    deletion), each polled until it passes or its budget is spent. Returns
    ({check: True or the reason it failed}, the service account's
    requests {(verb, resource[/sub])}, the replicas' logs)."""
    values = dict(FAST, **(sets or {}))
    r = h.render(sets=values)
    check(r.ok, r.err)
    res = {}
    cl = Cluster()
    reps = []
    tmp = tempfile.mkdtemp(prefix="cx-lp-")
    try:
        if refuse_streaming:
            # the first watches end at once without the initial-events-end
            # bookmark, as on a server without streaming lists: the
            # informers fall back to list + watch, the election to polling
            for res_ in WATCHED:
                st, b = cl.ks.request("POST", "/_sim/faults", body={
                    "user": SA_USER, "verb": "watch", "resource": res_,
                    "action": "end-watch", "count": replicas})
                check(st in (200, 201), "fault rule: %s %s" % (st, b))
        for n in sorted({NS} | {d["metadata"]["namespace"] for d in examples()
                                if d["metadata"].get("namespace")} - {"default"}):
            cl.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}})
        if values.get("namespaceSelector"):
            k, _, v = values["namespaceSelector"].partition("=")
            for n in {d["metadata"].get("namespace") for d in examples()} - {None}:
                st, b = cl.req("PATCH", "/api/v1/namespaces/" + n,
                               {"metadata": {"labels": {k: v}}},
                               ctype="application/merge-patch+json")
                check_eq(st, 200, str(b))
        for d in crds():
            cl.create(d)
        for d in r.docs:
            if d["kind"] == "ServiceAccount":
                cl.create(d)
        for d in rbac_docs:
            cl.create(d)
        objs = [d for d in examples() if d["kind"] != "Namespace"]
        for d in objs:
            cl.create(d)
        args = daemon_args(r)
        reps = [Replica(cl, args, i, tmp) for i in range(replicas)]
        start = poll({"started": lambda: all(x.ready() for x in reps) or
                      any(x.proc.poll() is not None for x in reps)}, budget)
        if not start["started"] or not all(x.ready() for x in reps):
            raise _Stop("replicas did not start")
        ids = {x.ports["identity"]: x for x in reps}
        cm_lock = values.get("leaderElection.resourceLock") == "configmaps"
        lock = {"apiVersion": "v1" if cm_lock else "coordination.k8s.io/v1",
                "kind": "ConfigMap" if cm_lock else "Lease",
                "metadata": {"name": "coxswain", "namespace": NS}}
        inputs = [d for d in objs if d["apiVersion"].startswith("coxswain.dev/")]
        gws = ["%s/%s" % (d["metadata"]["namespace"], d["metadata"]["name"])
               for d in objs if d["kind"] == "Gateway"]

        def holder():
            st, b = cl.get(lock)
            if st != 200:
                return None
            if cm_lock:
                rec = json.loads(b["metadata"]["annotations"][
                    "control-plane.alpha.kubernetes.io/leader"])
            else:
                rec = b["spec"]
            return rec.get("holderIdentity") in ids and rec["holderIdentity"]

        def event():
            return any(e.get("involvedObject", {}).get("name") == "coxswain"
                       for e in cl.list("v1", "events", NS))

        def current(d, gen=None):
            st, b = cl.get(d)
            conds = (b.get("status") or {}).get("conditions") or []
            g = b["metadata"].get("generation")
            return st == 200 and conds and (gen is None or g == gen) and \
                all(c.get("observedGeneration") == g for c in conds)

        def snapshots():
            got = {p["spec"].get("gateway"): p for p in
                   cl.list("coxswain.dev/v1", "proxysnapshots", NS)}
            return all(g in got and got[g]["spec"].get("version") for g in gws)

        def consistent():
            h_ = holder()
            standby = [x for i, x in ids.items() if i != h_]
            if not h_ or not standby:
                return not standby and h_
            _, m = standby[0].admin("/metrics")
            vals = re.findall(r'^coxswain_snapshot_consistent\{gateway="([^"]+)"\} (\S+)$',
                              m, re.M)
            return len(vals) >= len(gws) and all(v == "1" for _, v in vals)

        res.update(poll({
            "leader elected": holder,
            "election event": event,
            "statuses written": lambda: all(current(d) for d in inputs),
            "snapshots published": snapshots,
            "standby consistent": consistent,
        }, budget))

        if stop_early and any(v is not True for v in res.values()):
            raise _Stop(None)  # a removal run: phase one already shows what broke
        vs = [d for d in inputs if d["kind"] == "VirtualService"][0]
        _, cur = cl.get(vs)
        gen = cur["metadata"].get("generation", 0) + 1
        cl.req("PATCH", cl.path(vs), {"spec": {"domains": vs["spec"]["domains"] +
                                               ["edit.example"]}},
               ctype="application/merge-patch+json")
        res.update(poll({"edit followed": lambda: current(vs, gen)}, budget / 2))

        gw = [d for d in objs if d["kind"] == "Gateway"][-1]
        gname = "%s/%s" % (gw["metadata"]["namespace"], gw["metadata"]["name"])
        had = any(p["spec"].get("gateway") == gname
                  for p in cl.list("coxswain.dev/v1", "proxysnapshots", NS))
        cl.req("DELETE", cl.path(gw))
        res.update(poll({"snapshot deleted with its gateway": lambda: had and not any(
            p["spec"].get("gateway") == gname
            for p in cl.list("coxswain.dev/v1", "proxysnapshots", NS))}, budget / 2))
    except _Stop as e:
        if e.args[0]:
            res["started"] = e.args[0]
    finally:
        for x in reps:
            x.stop()
        logs = [x.log() for x in reps]
        _, counters = cl.ks.request("GET", "/_sim/counters")
        audit = cl.ks.audit()
        cl.close()
    res = {k: (True if v is True else REASONS.get(k, v)) for k, v in res.items()}
    refused = [line for lg in logs for line in lg.splitlines()
               if re.search(r"\b403\b|forbidden", line, re.I)]
    refused += ["audit: %s %s/%s %s" % (a["verb"], a["resource"], a["subresource"], a["code"])
                for a in audit if a["user"] == SA_USER and a["code"] == 403]
    res["nothing refused"] = not refused or "refused: " + " | ".join(refused[:3])
    # reads from the counters (they name no subresource), writes from the
    # audit log (which does)
    used = {(c["verb"], c["resource"]) for c in counters["counters"]
            if c["user"] == SA_USER and c["verb"] in ("get", "list", "watch")}
    used |= {(a["verb"], a["resource"] + ("/" + a["subresource"] if a["subresource"] else ""))
             for a in audit if a["user"] == SA_USER}
    return res, used, logs


def rbac_objects(r):
    return [d for d in r.docs if d["kind"] in ("Role", "ClusterRole", "RoleBinding",
                                                "ClusterRoleBinding")]


def need_daemon():
    if contract.daemon_help_flags(BUILD) is None:
        raise SkipCase("`coxswain run` has not landed yet")
    if not os.path.isdir(os.path.join(h.CHART, "crds")):
        raise SkipCase("the chart has no CRDs yet (api/crds has not landed)")


STATE = {}


def case_full_scenario(refuse_streaming):
    need_daemon()
    r = h.render(sets=FAST)
    res, used, logs = scenario(rbac_objects(r), refuse_streaming=refuse_streaming)
    STATE.setdefault("used", set()).update(used)
    STATE.setdefault("runs", 0)
    STATE["runs"] += 1
    bad = {k: v for k, v in res.items() if v is not True}
    check(not bad, "with the chart's RBAC: %s\n%s" % (bad, "\n".join(lg[-3000:] for lg in logs)))
    check_eq(sorted(res), sorted(CHECKS))
    print("# requests made: %s" % sorted(used))


VARIANT = {"watchNamespaces": ["default"], "namespaceSelector": "coxswain=on",
           "leaderElection.resourceLock": "configmaps"}


def case_variant_scenario():
    need_daemon()
    r = h.render(sets=dict(FAST, **VARIANT))
    res, used, logs = scenario(rbac_objects(r), sets=VARIANT)
    bad = {k: v for k, v in res.items() if v is not True}
    check(not bad, "with the chart's RBAC: %s\n%s" % (bad, "\n".join(lg[-3000:] for lg in logs)))
    print("# requests made: %s" % sorted(used))
    granted = {(a[4], a[2]) for a in contract.expected_permissions(
        NS, "coxswain", lock="configmaps", watch_namespaces=["default"],
        namespace_selector=True, reviews=False)}
    check(not (used - granted), "requests the chart does not grant: %s" % sorted(used - granted))
    # list is only exercised when streaming lists are refused (first runs)
    missing = {p for p in granted - used if p[0] != "list"}
    check(not missing, "granted but never used: %s" % sorted(missing))


def case_every_permission_used():
    need_daemon()
    check(STATE.get("runs") == 2, "the full scenarios did not both run")
    used = STATE["used"]
    # (no proxy or operator authenticates in these scenarios: the reviews
    # are exercised under RBAC by tests/e2e/xds/test_xds_auth.py)
    granted = {(a[4], a[2]) for a in contract.expected_permissions(NS, "coxswain",
                                                                   reviews=False)}
    check(not (used - granted), "requests the chart does not grant: %s" % sorted(used - granted))
    check(not (granted - used), "granted but never used: %s" % sorted(granted - used))


def rules_of(r):
    out = []
    for d in rbac_objects(r):
        if d["kind"] not in ("Role", "ClusterRole"):
            continue
        for i, rule in enumerate(d["rules"]):
            out.append((d, i, rule))
    return out


def describe(d, rule):
    names = rule.get("resourceNames")
    return "%s %s: %s %s%s" % (d["kind"], d["metadata"]["name"], ",".join(rule["verbs"]),
                               ",".join(rule["resources"]),
                               " [%s]" % ",".join(names) if names else "")


RESULTS = {}


def removal_jobs(sets, only=None):
    r = h.render(sets=dict(FAST, **sets))
    base = rbac_objects(r)
    jobs = []
    for d, i, rule in rules_of(r):
        name = describe(d, rule)
        if only is not None and not only(rule):
            continue
        docs = copy.deepcopy(base)
        for x in docs:
            if x["kind"] == d["kind"] and x["metadata"]["name"] == d["metadata"]["name"]:
                del x["rules"][i]
        jobs.append((name, docs, rule["resources"][0], sets))
    return jobs


def run_removals():
    """Every single-rule removal scenario, all at once (they mostly wait)."""
    jobs = removal_jobs({})
    # the variant's own rules: Namespaces, and the ConfigMap lock
    jobs += removal_jobs(VARIANT, only=lambda rule: rule["resources"][0] in
                         ("namespaces", "configmaps"))
    sem = threading.Semaphore(6 if SANITIZED else 16)

    def one(name, docs, _first, sets):
        with sem:
            try:
                # one replica suffices to see what breaks (the standby's
                # consistency check is covered by the full runs)
                RESULTS[name] = scenario(docs, replicas=1, sets=sets, stop_early=True)[0]
            except Exception as e:  # noqa: BLE001
                RESULTS[name] = {"error": repr(e)}
    threads = [threading.Thread(target=one, args=j) for j in jobs]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return [(j[0], j[2]) for j in jobs]


# The check that must fail without a rule, by the rule's first resource.
SYMPTOM = {
    "gateways": "statuses written", "gateways/status": "statuses written",
    "services": "statuses written", "endpointslices": "statuses written",
    "secrets": "statuses written",
    "namespaces": "statuses written",
    "leases": "leader elected", "configmaps": "leader elected",
    "proxysnapshots": "snapshots published", "events": "election event",
}


def case_removal(name, first_resource):
    res = RESULTS[name]
    failed = {k: v for k, v in res.items() if v is not True}
    print("# without it: %s" % "; ".join("%s (%s)" % (k, v) for k, v in sorted(failed.items())))
    check(failed, "the scenario still passes without this rule: it is not needed")
    want = SYMPTOM[first_resource]
    check(want in failed, "expected %r to fail" % want)


t.case("chart RBAC + chart flags: election, statuses, snapshots, events, nothing refused",
       case_full_scenario, False)
t.case("the same when the server refuses streaming lists (list + watch, lock polling)",
       case_full_scenario, True)
t.case("every granted (verb, resource) is used, every request made is granted",
       case_every_permission_used)
t.case("watched namespaces + namespace selector + configmaps lock: works, uses its grants",
       case_variant_scenario)
try:
    need_daemon()
    names = run_removals()
except SkipCase as e:
    names = []
    t.case("removing any single rule breaks the scenario", lambda: (_ for _ in ()).throw(e))
for n, first in names:
    t.case("without rule %s: %s fails" % (n, SYMPTOM[first]), case_removal, n, first)
t.done()
