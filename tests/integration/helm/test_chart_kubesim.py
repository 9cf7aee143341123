"""The chart against an API server (kubesim): the real kubectl applies the
rendered output (default values, HA values, and the plain manifests), a
second apply changes nothing, and — with kubesim authorizing from the
chart's own RBAC objects and the service account's bearer token — every
permission coxswain needs is granted, each one by exactly one rule (taking
it away turns that request into 403), and nearby requests it does not need
are refused.

That the daemon works with nothing more is proven end to end by
test_chart_least_privilege.py and test_chart_lifecycle.py (replicas under
the chart's service account through install, upgrade, rollback and
uninstall with the real Helm).

The RBAC cases need a kubesim with tokens and RBAC; with an older one they
are reported as skipped, with the reason."""
import copy
import glob
import http.client
import json
import os
import subprocess
import sys
import urllib.parse

import yaml

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "helm"))

import contract  # noqa: E402
import helmlib as h  # noqa: E402
from kubesim import KubeSim  # noqa: E402
from tap import SkipCase, Tap, check, check_eq  # noqa: E402

t = Tap()
NS = h.NAMESPACE
ADMIN_TOKEN = "admin-token"
SA_TOKEN = "sa-token"
SA_USER = "system:serviceaccount:%s:coxswain" % NS
VERSIONS = {"": "v1", "coxswain.dev": "v1", "coordination.k8s.io": "v1",
            "discovery.k8s.io": "v1", "rbac.authorization.k8s.io": "v1"}
KINDS = {"gateways": "Gateway", "virtualservices": "VirtualService", "routetables": "RouteTable",
         "upstreams": "Upstream", "proxysnapshots": "ProxySnapshot"}


def crd_doc(group, plural, kind, status=True):
    v = {"name": "v1", "served": True, "storage": True,
         "schema": {"openAPIV3Schema": {"type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True}}}
    if status:
        v["subresources"] = {"status": {}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (plural, group)},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                               "listKind": kind + "List"},
                     "versions": [v]}}


def coxswain_crds():
    """The chart's CRDs once api/crds has landed; until then minimal ones of
    the same group, names and scope (enough for RBAC and apply checks)."""
    files = sorted(glob.glob(os.path.join(h.CHART, "crds", "*.yaml")))
    if files:
        return [d for f in files for d in h.load_yaml_docs(f)]
    return [crd_doc("coxswain.dev", p, k, status=(p != "proxysnapshots"))
            for p, k in KINDS.items()]


# The Prometheus operator's CRDs, as a cluster with it has them (minimal).
MONITORING_CRDS = [crd_doc("monitoring.coreos.com", "servicemonitors", "ServiceMonitor", False),
                   crd_doc("monitoring.coreos.com", "prometheusrules", "PrometheusRule", False)]


def kubectl(ks, *args, stdin=None):
    return subprocess.run(["kubectl", "--kubeconfig", ks.kubeconfig, "--request-timeout=20s"] +
                          list(args), input=stdin, capture_output=True, text=True, timeout=60)


def apply_docs(ks, docs):
    return kubectl(ks, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))


def namespace_doc(name):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def collection_path(d):
    group, _, version = d["apiVersion"].rpartition("/")
    base = "/api/v1" if not group else "/apis/%s/%s" % (group, version)
    plural = {"PodDisruptionBudget": "poddisruptionbudgets", "ServiceAccount": "serviceaccounts",
              "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
              "Role": "roles", "RoleBinding": "rolebindings", "Service": "services",
              "Deployment": "deployments", "Namespace": "namespaces",
              "ServiceMonitor": "servicemonitors", "PrometheusRule": "prometheusrules",
              "CustomResourceDefinition": "customresourcedefinitions",
              "ConfigMap": "configmaps"}[d["kind"]]
    ns = d["metadata"].get("namespace")
    return base + ("/namespaces/%s" % ns if ns else "") + "/" + plural


def stored(ks, d, token=None):
    return ks.request("GET", collection_path(d) + "/" + d["metadata"]["name"], token=token)


def subset(want, got, where):
    """want is contained in got (the server may add defaults)."""
    if isinstance(want, dict):
        check(isinstance(got, dict), "%s: %r is not a map" % (where, got))
        for k, v in want.items():
            check(k in got, "%s.%s missing from the stored object" % (where, k))
            subset(v, got[k], where + "." + k)
    elif isinstance(want, list):
        check(isinstance(got, list) and len(got) == len(want), "%s: %r vs %r" % (where, want, got))
        for i, (a, b) in enumerate(zip(want, got)):
            subset(a, b, "%s[%d]" % (where, i))
    else:
        check_eq(got, want, where)


def check_applied(ks, docs, token=None):
    for d in docs:
        st, body = stored(ks, d, token)
        what = "%s/%s" % (d["kind"], d["metadata"]["name"])
        check_eq(st, 200, "%s not stored: %s" % (what, body))
        subset({k: v for k, v in d.items() if k not in ("apiVersion", "kind")}, body, what)


def write_rvs(ks, since):
    return [(a["resource"], a["name"], a["code"], a["resourceVersion"])
            for a in ks.audit() if a["seq"] > since]


def last_seq(ks):
    a = ks.audit()
    return a[-1]["seq"] if a else 0


def case_apply_default():
    r = h.render()
    check(r.ok, r.err)
    with KubeSim() as ks:
        p = apply_docs(ks, [namespace_doc(NS)] + r.docs)
        check_eq(p.returncode, 0, p.stderr)
        check_eq(p.stdout.count(" created"), len(r.docs) + 1, p.stdout)
        check_applied(ks, r.docs)
        # a second apply writes nothing new: every write is a no-op (same RV)
        before = {a["resourceVersion"] for a in ks.audit()}
        seq = last_seq(ks)
        p = apply_docs(ks, [namespace_doc(NS)] + r.docs)
        check_eq(p.returncode, 0, p.stderr)
        for res, name, code, rv in write_rvs(ks, seq):
            check_eq(code, 200, "%s/%s" % (res, name))
            check(rv in before, "second apply changed %s/%s (rv %s)" % (res, name, rv))


def case_apply_ha():
    r = h.render(values=[h.HA_VALUES])
    check(r.ok, r.err)
    with KubeSim() as ks:
        pre = [namespace_doc(n) for n in (NS, "gateways", "team-a", "team-b")] + MONITORING_CRDS
        p = apply_docs(ks, pre)
        check_eq(p.returncode, 0, p.stderr)
        p = apply_docs(ks, r.docs)
        check_eq(p.returncode, 0, p.stderr)
        check_applied(ks, r.docs)
        check_eq(sorted(d["kind"] for d in r.docs if d["kind"] in ("ServiceMonitor",
                                                                    "PrometheusRule")),
                 ["PrometheusRule", "ServiceMonitor"])


def case_apply_plain_manifests():
    with KubeSim() as ks:
        crds = os.path.join(TOP, "deploy", "manifests", "crds.yaml")
        if h.load_yaml_docs(crds):
            p = kubectl(ks, "apply", "-f", crds)
            check_eq(p.returncode, 0, p.stderr)
        p = kubectl(ks, "apply", "-f", os.path.join(TOP, "deploy", "manifests", "coxswain.yaml"))
        check_eq(p.returncode, 0, p.stderr)
        docs = h.load_yaml_docs(os.path.join(TOP, "deploy", "manifests", "coxswain.yaml"))
        check_applied(ks, docs)
        p = kubectl(ks, "-n", NS, "get", "deployment,pdb,sa,role,rolebinding,service", "-o",
                    "name")
        check_eq(p.returncode, 0, p.stderr)
        check_eq(len(p.stdout.split()), 7, p.stdout)


# ---- RBAC under an RBAC authorizer -----------------------------------------

def rbac_kubesim():
    """kubesim authorizing from RBAC with an admin (system:masters) and the
    chart's service account token; SkipCase if this kubesim has no RBAC."""
    try:
        ks = KubeSim(allow_all=False,
                     tokens={ADMIN_TOKEN: ("admin", ["system:masters"]), SA_TOKEN: SA_USER})
    except Exception as e:  # an old kubesim refuses --tokens
        if "tokens" in str(e):
            raise SkipCase("this kubesim has no tokens/RBAC yet (kubesim issue 3)")
        raise
    st, _ = ks.request("GET", "/api/v1/namespaces", token=SA_TOKEN)
    if st != 403:
        ks.close()
        raise SkipCase("this kubesim does not authorize from RBAC (got %s)" % st)
    return ks


def base_path(group):
    return "/api/v1" if group == "" else "/apis/%s/%s" % (group, VERSIONS[group])


def status_of(ks, method, path, body=None, token=SA_TOKEN):
    """Status code only; a watch is closed as soon as its headers arrive."""
    conn = ks.connection(20)
    hdrs = {"Authorization": "Bearer " + token}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        hdrs["Content-Type"] = ("application/merge-patch+json" if method == "PATCH"
                                else "application/json")
    try:
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        code = resp.status
        if "watch=" not in path:
            resp.read()
        return code
    finally:
        conn.close()


def obj_body(group, resource, ns, name):
    res = resource.split("/")[0]
    kind = KINDS.get(res) or {"services": "Service", "endpointslices": "EndpointSlice",
                              "secrets": "Secret", "configmaps": "ConfigMap",
                              "leases": "Lease", "events": "Event",
                              "namespaces": "Namespace"}[res]
    d = {"apiVersion": (group + "/" if group else "") + VERSIONS[group], "kind": kind,
         "metadata": {"name": name}}
    if ns:
        d["metadata"]["namespace"] = ns
    if res == "services":
        d["spec"] = {"ports": [{"name": "http", "port": 80}]}
    if res == "endpointslices":
        d["addressType"] = "IPv4"
        d["endpoints"] = []
    if res == "leases":
        d["spec"] = {"holderIdentity": "x", "leaseDurationSeconds": 15}
    if res == "events":
        d["involvedObject"] = {"kind": "Lease", "name": "coxswain", "namespace": ns}
        d["reason"] = "Test"
    return d


def seed(ks, ns, group, resource, name):
    """Creates the object as admin so get/update/patch/delete can act on it.
    Returns its current JSON."""
    res = resource.split("/")[0]
    base = base_path(group) + ("/namespaces/%s" % ns if ns else "") + "/" + res
    st, cur = ks.request("GET", base + "/" + name, token=ADMIN_TOKEN)
    if st == 404:
        st, cur = ks.request("POST", base, body=obj_body(group, res, ns, name),
                             token=ADMIN_TOKEN)
        check(st == 201, "seeding %s %s/%s: %s %s" % (res, ns, name, st, cur))
    return cur


def request_for(ks, atom, obj_ns):
    """Performs the request that needs exactly this permission atom as the
    service account; returns the status code."""
    scope, group, resource, name, verb = atom
    ns = obj_ns if scope == "cluster" else scope
    res, _, sub = resource.partition("/")
    if res == "namespaces":  # cluster-scoped
        ns = None
    coll = base_path(group) + ("/namespaces/%s" % ns if ns else "") + "/" + res
    cluster_coll = base_path(group) + "/" + res
    target = name or "probe"
    if verb in ("list", "watch"):
        q = {"fieldSelector": "metadata.name=" + name} if name else {}
        if verb == "watch":
            q.update({"watch": "1", "timeoutSeconds": "1"})
        path = (cluster_coll if scope == "cluster" else coll)
        return status_of(ks, "GET", path + ("?" + urllib.parse.urlencode(q) if q else ""))
    if verb == "create":
        if sub:
            raise AssertionError("create on a subresource")
        target = name or "created-%d" % (abs(hash(atom)) % 100000)
        return status_of(ks, "POST", coll, obj_body(group, res, ns, target))
    cur = seed(ks, ns, group, resource, target)
    path = coll + "/" + target + ("/" + sub if sub else "")
    if verb == "get":
        return status_of(ks, "GET", path)
    if verb == "update":
        return status_of(ks, "PUT", path, cur)
    if verb == "patch":
        return status_of(ks, "PATCH", path, {"metadata": {"annotations": {"probe": "1"}}})
    if verb == "delete":
        return status_of(ks, "DELETE", path)
    raise AssertionError(verb)


def without(docs, atom):
    """The RBAC objects with one permission atom taken away: the verb is
    removed from every rule that grants it (a rule is split so that its
    other resources and names keep the verb)."""
    scope, group, resource, name, verb = atom
    out = []
    for d in docs:
        if d["kind"] not in ("Role", "ClusterRole"):
            continue
        d = copy.deepcopy(d)
        rules = []
        for rule in d.get("rules") or []:
            names = rule.get("resourceNames") or [""]
            if group in rule["apiGroups"] and resource in rule["resources"] and \
                    name in names and verb in rule["verbs"]:
                rest = dict(rule)
                rest["verbs"] = [v for v in rule["verbs"] if v != verb]
                if rest["verbs"]:
                    rules.append(rest)
                others = [r for r in rule["resources"] if r != resource]
                if others:
                    rules.append(dict(rule, resources=others))
                other_names = [n for n in names if n != name and n]
                if other_names:
                    rules.append(dict(rule, resources=[resource], resourceNames=other_names))
            else:
                rules.append(rule)
        d["rules"] = rules
        out.append(d)
    return out


def install(ks, r):
    """As the admin (system:masters): namespaces, CRDs, then the chart.
    (Plain requests: kubectl sends no bearer token over http, and kubesim's
    https costs ~45 ms a request, too slow for a few hundred of them.)"""
    docs = [namespace_doc(n) for n in
            sorted({NS, "default", "team-a", "gateways", "team-b"})] + coxswain_crds() + \
        MONITORING_CRDS + r.docs
    for d in docs:
        st, body = ks.request("POST", collection_path(d), body=d, token=ADMIN_TOKEN)
        check(st in (201, 409), "creating %s/%s: %s %s" % (d["kind"], d["metadata"]["name"],
                                                            st, body))


def put_roles(ks, roles):
    for d in roles:
        ns = d["metadata"].get("namespace")
        path = "/apis/rbac.authorization.k8s.io/v1" + ("/namespaces/%s" % ns if ns else "") + \
            "/%s/%s" % ("roles" if d["kind"] == "Role" else "clusterroles", d["metadata"]["name"])
        st, cur = ks.request("GET", path, token=ADMIN_TOKEN)
        check_eq(st, 200, path)
        body = dict(d)
        body["metadata"] = dict(d["metadata"], resourceVersion=cur["metadata"]["resourceVersion"])
        st, res = ks.request("PUT", path, body=body, token=ADMIN_TOKEN)
        check_eq(st, 200, "%s: %s" % (path, res))


def rbac_effective(r, want, obj_ns):
    """Every atom is allowed; with it taken away, its request is 403."""
    ks = rbac_kubesim()
    try:
        install(ks, r)
        roles = [d for d in r.docs if d["kind"] in ("Role", "ClusterRole")]
        for atom in sorted(want):
            code = request_for(ks, atom, obj_ns)
            check(code not in (401, 403), "%s refused (%d) with the chart's RBAC" % (atom, code))
        for atom in sorted(want):
            put_roles(ks, without(roles, atom))
            code = request_for(ks, atom, obj_ns)
            check_eq(code, 403, "%s still allowed without its rule" % (atom,))
            put_roles(ks, roles)
    finally:
        ks.close()


def case_rbac_each_rule_effective_default():
    r = h.render()
    check(r.ok, r.err)
    # (the reviews come from the built-in system:auth-delegator, not from
    # the chart's roles: the render tests check its binding)
    rbac_effective(r, contract.expected_permissions(NS, "coxswain", reviews=False), "team-a")


def case_rbac_each_rule_effective_variants():
    r = h.render(values=[h.HA_VALUES], sets={"leaderElection.resourceLock": "configmaps",
                                             "namespaceSelector": "gw=on"})
    check(r.ok, r.err)
    want = contract.expected_permissions(NS, "coxswain", lock="configmaps",
                                         watch_namespaces=["gateways", "team-a", "team-b"],
                                         namespace_selector=True, reviews=False)
    # (the release namespace is not watched, so the lock's ConfigMap rule is
    # the only one covering it)
    rbac_effective(r, want, "team-a")


def case_rbac_refuses_what_is_not_needed():
    r = h.render(values=[h.HA_VALUES])
    check(r.ok, r.err)
    ks = rbac_kubesim()
    try:
        install(ks, r)
        lock = "coxswain"
        refused = [
            # the lock: other names, patch/delete, other namespaces, unnamed lists
            (NS, "coordination.k8s.io", "leases", "other", "get"),
            (NS, "coordination.k8s.io", "leases", "other", "update"),
            (NS, "coordination.k8s.io", "leases", lock, "patch"),
            (NS, "coordination.k8s.io", "leases", lock, "delete"),
            (NS, "coordination.k8s.io", "leases", "", "list"),
            ("default", "coordination.k8s.io", "leases", "", "create"),
            # inputs: never written (only their status), never outside the
            # watched namespaces, no cluster-wide lists when scoped
            ("team-a", "coxswain.dev", "virtualservices", "", "create"),
            ("team-a", "coxswain.dev", "virtualservices", "probe", "update"),
            ("team-a", "coxswain.dev", "gateways", "probe", "delete"),
            ("team-a", "coxswain.dev", "gateways", "probe", "get"),
            ("team-a", "coxswain.dev", "gateways/status", "probe", "update"),
            ("team-a", "", "services", "probe", "get"),
            ("default", "coxswain.dev", "gateways", "", "list"),
            ("default", "coxswain.dev", "gateways/status", "probe", "update"),
            # Secrets and ConfigMaps: listed and watched (spec.tls) only in
            # the watched namespaces, never read one by one, never written
            ("default", "", "secrets", "", "list"),
            ("default", "", "configmaps", "", "watch"),
            ("team-a", "", "secrets", "probe", "get"),
            ("team-a", "", "secrets", "probe", "update"),
            ("team-a", "", "secrets", "", "create"),
            ("team-a", "", "configmaps", "probe", "get"),
            ("team-a", "", "configmaps", "probe", "update"),
            ("team-a", "", "services", "probe", "patch"),
            ("team-a", "discovery.k8s.io", "endpointslices", "probe", "delete"),
            # own namespace: snapshots and events only there
            ("team-a", "coxswain.dev", "proxysnapshots", "", "create"),
            (NS, "coxswain.dev", "proxysnapshots", "probe", "patch"),
            ("default", "", "events", "", "create"),
            (NS, "", "events", "probe", "patch"),
            (NS, "", "events", "probe", "delete"),
            (NS, "", "secrets", "", "list"),
            (NS, "", "configmaps", "", "create"),
            # namespaces only with a namespace selector
            ("cluster", "", "namespaces", "", "list"),
            ("cluster", "", "secrets", "", "list"),
            # RBAC itself
            (NS, "rbac.authorization.k8s.io", "roles", "coxswain", "update"),
        ]
        for atom in refused:
            if atom[3] and atom[4] in ("get", "update", "patch", "delete"):
                ns = atom[0] if atom[0] != "cluster" else "team-a"
                seed(ks, ns, atom[1], atom[2], atom[3])
            code = request_for(ks, atom, "team-a")
            check_eq(code, 403, "%s" % (atom,))
    finally:
        ks.close()


t.case("kubectl apply: default render accepted; second apply changes nothing",
       case_apply_default)
t.case("kubectl apply: HA render (watched namespaces, ServiceMonitor, PrometheusRule)",
       case_apply_ha)
t.case("kubectl apply: deploy/manifests", case_apply_plain_manifests)
t.case("RBAC (default): every needed permission granted, each by one rule",
       case_rbac_each_rule_effective_default)
t.case("RBAC (watched namespaces, configmaps lock, namespace selector): same",
       case_rbac_each_rule_effective_variants)
t.case("RBAC refuses Secrets, writes to inputs, other names, other namespaces",
       case_rbac_refuses_what_is_not_needed)
t.done()
