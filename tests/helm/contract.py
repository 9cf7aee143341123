"""What the chart must agree with: the daemon's flags and the exact set of
API permissions coxswain needs. The RBAC tests compare the rendered Roles
and ClusterRoles with this table, so a rule added to the chart without a
reason here fails a test, and so does a missing one; and
test_chart_least_privilege.py checks this table against every request the
daemon makes (informers list+watch or stream, never get; statuses are merge
patches; ProxySnapshots are created, updated, deleted and watched; the lock
is read, watched, polled, created and updated by name; Events are created;
Secrets and ConfigMaps are listed and watched, for spec.tls, where the
inputs are, unless tlsInputs.enabled is false)."""
import os
import re
import subprocess

# `coxswain run` flags (the contract of issue 9; checked against
# `coxswain run --help` once the daemon exists).
DAEMON_FLAGS = {
    "--config", "--kubeconfig", "--namespace", "--identity", "--watch-namespaces",
    "--namespace-selector", "--label-selector", "--xds-listen", "--xds-tls-cert-file",
    "--xds-tls-key-file", "--xds-tls-client-ca-file", "--admin-listen",
    "--default-gateway", "--debounce", "--status-qps", "--status-burst",
    "--leader-elect", "--leader-elect-lease-duration", "--leader-elect-renew-deadline",
    "--leader-elect-retry-period", "--leader-elect-resource-lock",
    "--leader-elect-resource-name", "--leader-elect-resource-namespace",
    "--log-format", "--log-level", "--tls-inputs", "--standby",
    # the peer liveness channel, proof of death (issue 20)
    "--leader-elect-peer", "--leader-elect-peer-listen", "--leader-elect-peer-advertise",
    # the translator's budgets (issue 17)
    "--max-routes-per-virtual-service", "--max-delegations-per-virtual-service",
    "--max-routes-per-gateway", "--max-resources-per-gateway", "--max-resource-bytes",
    "--max-regex-program-size",
    # authentication of xDS clients (issue 18)
    "--xds-auth", "--xds-token-audience", "--xds-spiffe-trust-domain",
}

# Kubernetes' built-in ClusterRoles the chart binds, with their rules (the
# chart does not render them): TokenReview for proxies' tokens,
# SubjectAccessReview for the admin server's /debug/* and /v3/discovery:*.
BUILTIN_CLUSTER_ROLES = {
    "system:auth-delegator": [
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"],
         "verbs": ["create"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"],
         "verbs": ["create"]},
    ],
}
REVIEW_PERMISSIONS = {
    ("cluster", "authentication.k8s.io", "tokenreviews", "", "create"),
    ("cluster", "authorization.k8s.io", "subjectaccessreviews", "", "create"),
}

INPUT_KINDS = ["gateways", "virtualservices", "routetables", "upstreams"]


def daemon_help_flags(build):
    """The flags `coxswain run --help` lists, or None while the daemon has
    not landed (the binary has no `run` subcommand yet)."""
    exe = os.path.join(build, "bin", "coxswain")
    if not os.path.exists(exe):
        return None
    p = subprocess.run([exe, "run", "--help"], capture_output=True, text=True, timeout=10)
    text = p.stdout + p.stderr
    if "unknown command" in text:
        return None
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", text))


def expected_permissions(release_ns, lock_name, lock="leases", watch_namespaces=(),
                         namespace_selector=False, leader_elect=True, tls_inputs=True,
                         reviews=True):
    """The permission atoms coxswain needs, as a set of tuples
    (scope, apiGroup, resource, resourceName or "", verb) where scope is
    "cluster" or a namespace. Nothing more, nothing less. |reviews|: with
    TokenReview and SubjectAccessReview (the built-in system:auth-delegator)."""
    want = set(REVIEW_PERMISSIONS) if reviews else set()
    scopes = list(watch_namespaces) or ["cluster"]
    for scope in scopes:
        for r in INPUT_KINDS:
            for v in ("list", "watch"):
                want.add((scope, "coxswain.dev", r, "", v))
            want.add((scope, "coxswain.dev", r + "/status", "", "patch"))
        for g, r in (("", "services"), ("discovery.k8s.io", "endpointslices")):
            for v in ("list", "watch"):
                want.add((scope, g, r, "", v))
        for r in ("secrets", "configmaps") if tls_inputs else ():
            for v in ("list", "watch"):
                want.add((scope, "", r, "", v))
    if namespace_selector:
        for v in ("list", "watch"):
            want.add(("cluster", "", "namespaces", "", v))
    if leader_elect:
        g, r = ("", "configmaps") if lock == "configmaps" else ("coordination.k8s.io", "leases")
        for v in ("get", "list", "watch", "update"):
            want.add((release_ns, g, r, lock_name, v))
        want.add((release_ns, g, r, "", "create"))
    for v in ("list", "watch", "create", "update", "delete"):
        want.add((release_ns, "coxswain.dev", "proxysnapshots", "", v))
    want.add((release_ns, "", "events", "", "create"))
    return want


def granted_permissions(docs, sa_name, sa_namespace):
    """Expands the rendered RBAC objects bound to the service account into
    permission atoms (same shape as expected_permissions). Raises if a
    binding refers to a role that is not rendered, or a rule uses '*'."""
    roles = {}
    for d in docs:
        if d["kind"] in ("Role", "ClusterRole"):
            key = (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])
            roles[key] = d.get("rules") or []
    for name, rules in BUILTIN_CLUSTER_ROLES.items():
        roles.setdefault(("ClusterRole", "", name), rules)
    got = set()
    for d in docs:
        if d["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        subj = d.get("subjects") or []
        if not any(s.get("kind") == "ServiceAccount" and s.get("name") == sa_name and
                   s.get("namespace") == sa_namespace for s in subj):
            continue
        ref = d["roleRef"]
        ns = d["metadata"].get("namespace", "")
        if ref["kind"] == "Role":
            key = ("Role", ns, ref["name"])
        else:
            key = ("ClusterRole", "", ref["name"])
        if key not in roles:
            raise AssertionError("%s %s refers to %s, which the chart does not render" %
                                 (d["kind"], d["metadata"]["name"], key))
        scope = "cluster" if d["kind"] == "ClusterRoleBinding" else ns
        for rule in roles[key]:
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                if "*" in (rule.get(field) or []):
                    raise AssertionError("wildcard in %s of %s" % (field, key))
            if rule.get("nonResourceURLs"):
                raise AssertionError("nonResourceURLs in %s" % (key,))
            names = rule.get("resourceNames") or [""]
            for g in rule["apiGroups"]:
                for r in rule["resources"]:
                    for n in names:
                        for v in rule["verbs"]:
                            got.add((scope, g, r, n, v))
    return got
