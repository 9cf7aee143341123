"""The chart renders (default and HA values) into the objects an HA
deployment needs, wired to each other correctly, with exactly the RBAC
coxswain uses."""
import json
import os
import sys

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "helm"))

import contract  # noqa: E402
import helmlib as h  # noqa: E402
from tap import SkipCase, Tap, check, check_eq  # noqa: E402

t = Tap()
D = h.render()
HA = h.render(values=[h.HA_VALUES])
NS = h.NAMESPACE

NAMESPACED = {"PodDisruptionBudget", "ServiceAccount", "Role", "RoleBinding", "Service",
              "Deployment", "ServiceMonitor", "PrometheusRule"}


def sel_matches(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def case_default_objects():
    check(D.ok, D.err)
    check_eq(D.kinds(), sorted(["PodDisruptionBudget", "ServiceAccount", "ClusterRole",
                                "ClusterRoleBinding", "ClusterRoleBinding", "Role",
                                "RoleBinding", "Service",
                                "Service", "Deployment"]))
    for d in D.docs:
        check(d.get("apiVersion") and d["metadata"].get("name"), "incomplete object %r" % d)
        ns = d["metadata"].get("namespace")
        if d["kind"] in NAMESPACED:
            check_eq(ns, NS, "%s/%s namespace" % (d["kind"], d["metadata"]["name"]))
        else:
            check(ns is None, "cluster-scoped %s has a namespace" % d["kind"])
        labels = d["metadata"]["labels"]
        check_eq(labels["app.kubernetes.io/instance"], h.RELEASE)
        check_eq(labels["helm.sh/chart"], "coxswain-0.1.0")


def case_helm_template_layout():
    # Like `helm template`: "---" then "# Source: <chart>/templates/<file>",
    # objects in Helm's install order (ServiceAccount before RBAC before
    # Service before Deployment).
    blocks = D.out.split("---\n")[1:]
    check_eq(len(blocks), len(D.docs))
    for b in blocks:
        first = b.splitlines()[0]
        check(first.startswith("# Source: coxswain/templates/") and first.endswith(".yaml"), first)
    order = [d["kind"] for d in D.docs]
    for a, b in (("ServiceAccount", "ClusterRole"), ("ClusterRole", "Role"),
                 ("RoleBinding", "Service"), ("Service", "Deployment")):
        check(order.index(a) < order.index(b), "%s must precede %s: %s" % (a, b, order))


def case_deployment_wiring():
    dep = D.deployment()
    spec = dep["spec"]
    check_eq(spec["replicas"], 3)
    tmpl = spec["template"]
    check(sel_matches(spec["selector"]["matchLabels"], tmpl["metadata"]["labels"]),
          "selector does not select the pod template")
    check_eq(tmpl["spec"]["serviceAccountName"], D.all("ServiceAccount")[0]["metadata"]["name"])
    check_eq(spec["strategy"]["rollingUpdate"], {"maxSurge": 1, "maxUnavailable": 0})
    check_eq(D.container()["image"], "coxswain:0.1.0-dev")
    check(tmpl["spec"]["terminationGracePeriodSeconds"] > 5, "daemon needs 5 s to release")


def case_default_flags():
    check_eq(D.container()["args"][0], "run")
    check_eq(D.args(), {
        "--namespace": NS,
        "--xds-listen": "0.0.0.0:18000",
        "--admin-listen": "0.0.0.0:18080",
        "--xds-token-audience": "coxswain",
        "--xds-spiffe-trust-domain": "cluster.local",
        "--xds-tls-cert-file": "/etc/coxswain/xds-tls/tls.crt",
        "--xds-tls-key-file": "/etc/coxswain/xds-tls/tls.key",
        "--leader-elect": "true",
        "--leader-elect-lease-duration": "15s",
        "--leader-elect-renew-deadline": "10s",
        "--leader-elect-retry-period": "2s",
        "--leader-elect-resource-lock": "leases",
        "--leader-elect-resource-name": "coxswain",
        "--leader-elect-resource-namespace": NS,
        "--standby": "warm",
        "--leader-elect-peer": "true",
        "--leader-elect-peer-listen": "0.0.0.0:18090",
        "--debounce": "100ms",
        "--max-routes-per-virtual-service": "4096",
        "--max-delegations-per-virtual-service": "1024",
        "--max-routes-per-gateway": "500000",
        "--max-resources-per-gateway": "250000",
        "--max-resource-bytes": "67108864",
        "--max-regex-program-size": "100",
        "--status-qps": "20",
        "--status-burst": "50",
        "--log-format": "json",
        "--log-level": "info",
    })


def case_standby_value():
    r = h.render(sets={"leaderElection.standby": "cold"})
    check(r.ok, r.err)
    check_eq(r.args().get("--standby"), "cold")
    bad = h.render(sets={"leaderElection.standby": "lukewarm"})
    check(not bad.ok, "leaderElection.standby=lukewarm was accepted")


def case_flags_in_daemon_contract():
    for r in (D, HA, h.render(sets={"namespaceSelector": "gw=on", "labelSelector": "a=b",
                                    "watchNamespaces": ["x"], "defaultGateway": "x/gw"})):
        check(r.ok, r.err)
        unknown = set(r.args()) - contract.DAEMON_FLAGS
        check(not unknown, "flags the daemon does not define: %s" % sorted(unknown))


def case_flags_known_to_daemon_binary():
    have = contract.daemon_help_flags(h.BUILD)
    if have is None:
        raise SkipCase("`coxswain run` has not landed yet; flags checked against the "
                       "issue-9 contract only")
    for r in (D, HA):
        unknown = set(r.args()) - have
        check(not unknown, "`coxswain run --help` does not list %s" % sorted(unknown))


def case_downward_api_env():
    env = {e["name"]: e for e in D.container()["env"]}
    check_eq(env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.name")
    check_eq(env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.namespace")
    # the leader advertises its pod IP for the peer channel
    check_eq(env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"], "status.podIP")


def case_peer_channel():
    """Proof of death: the port is open on every replica, kept out of mesh
    sidecars both ways (ports the values already exclude kept), and one
    value turns it all off."""
    c = D.container()
    check_eq({p["name"]: p["containerPort"] for p in c["ports"]}["tcp-peer"], 18090)
    ann = D.deployment()["spec"]["template"]["metadata"]["annotations"]
    for k in ("traffic.sidecar.istio.io/excludeInboundPorts",
              "traffic.sidecar.istio.io/excludeOutboundPorts",
              "config.linkerd.io/skip-inbound-ports", "config.linkerd.io/skip-outbound-ports"):
        check_eq(ann.get(k), "18090", k)
    r = h.render(sets={"leaderElection.peer.port": 19001, "leaderElection.peer.listenAddress": "[::]"},
                 values_text='podAnnotations: {"config.linkerd.io/skip-inbound-ports": "4190", '
                             '"team": "gw"}\n')
    check(r.ok, r.err)
    check_eq(r.args()["--leader-elect-peer-listen"], "[::]:19001")
    ann = r.deployment()["spec"]["template"]["metadata"]["annotations"]
    check_eq(ann["config.linkerd.io/skip-inbound-ports"], "4190,19001")
    check_eq(ann["traffic.sidecar.istio.io/excludeInboundPorts"], "19001")
    check_eq(ann["team"], "gw")
    off = h.render(sets={"leaderElection.peer.enabled": False})
    check(off.ok, off.err)
    check_eq(off.args()["--leader-elect-peer"], "false")
    check("--leader-elect-peer-listen" not in off.args(), off.args())
    check("tcp-peer" not in [p["name"] for p in off.container()["ports"]])
    check("POD_IP" not in [e["name"] for e in off.container()["env"]])
    check(not (off.deployment()["spec"]["template"]["metadata"].get("annotations") or {}),
          "mesh annotations without the peer channel")
    clash = h.render(sets={"leaderElection.peer.port": 18080})
    check(not clash.ok and "leaderElection.peer.port (18080) must differ" in clash.err, clash.err)
    bad = h.render(set_strings={"leaderElection.peer.listenAddress": "10.0.0.1"})
    check(not bad.ok, "a concrete listen address was accepted")


def case_probes_on_admin_port():
    c = D.container()
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    check_eq(ports, {"grpc-xds": 18000, "http-admin": 18080, "tcp-peer": 18090})
    check_eq(c["livenessProbe"]["httpGet"], {"path": "/healthz", "port": "http-admin"})
    check_eq(c["readinessProbe"]["httpGet"], {"path": "/readyz", "port": "http-admin"})
    off = h.render(sets={"livenessProbe.enabled": False, "readinessProbe.enabled": False})
    check(off.ok, off.err)
    check("livenessProbe" not in off.container() and "readinessProbe" not in off.container())


def case_security_context():
    pod = D.deployment()["spec"]["template"]["spec"]["securityContext"]
    check_eq(pod["runAsNonRoot"], True)
    check(pod["runAsUser"] > 0, "runAsUser must not be root")
    check_eq(pod["seccompProfile"], {"type": "RuntimeDefault"})
    c = D.container()["securityContext"]
    check_eq(c["readOnlyRootFilesystem"], True)
    check_eq(c["allowPrivilegeEscalation"], False)
    check_eq(c["capabilities"], {"drop": ["ALL"]})
    check_eq(c["runAsNonRoot"], True)
    check_eq(c["seccompProfile"], {"type": "RuntimeDefault"})
    # read-only root: the only writable path is a bounded emptyDir on /tmp
    mounts = {m["mountPath"]: m["name"] for m in D.container()["volumeMounts"]}
    # /tmp, and the xDS certificate (TLS by default), read-only
    check_eq(mounts, {"/tmp": "tmp", "/etc/coxswain/xds-tls": "xds-tls"})


def case_spread_and_disruption_budget():
    spec = D.deployment()["spec"]["template"]["spec"]
    pod_labels = D.deployment()["spec"]["template"]["metadata"]["labels"]
    tsc = {c["topologyKey"]: c for c in spec["topologySpreadConstraints"]}
    check_eq(sorted(tsc), ["kubernetes.io/hostname", "topology.kubernetes.io/zone"])
    for c in tsc.values():
        check(sel_matches(c["labelSelector"]["matchLabels"], pod_labels), "spread selector")
        check_eq(c["whenUnsatisfiable"], "ScheduleAnyway")
    pref = spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    check_eq(pref[0]["podAffinityTerm"]["topologyKey"], "kubernetes.io/hostname")
    check(sel_matches(pref[0]["podAffinityTerm"]["labelSelector"]["matchLabels"], pod_labels))
    pdb = D.all("PodDisruptionBudget")[0]
    check_eq(pdb["spec"]["minAvailable"], 1)
    check(sel_matches(pdb["spec"]["selector"]["matchLabels"], pod_labels), "PDB selects pods")
    # alternatives: maxUnavailable, explicit constraints, no anti-affinity
    alt = h.render(sets={"podDisruptionBudget.minAvailable": None,
                         "podDisruptionBudget.maxUnavailable": "34%",
                         "podAntiAffinity": "none",
                         "topologySpreadConstraints": [{"maxSkew": 2, "topologyKey": "rack",
                                                        "whenUnsatisfiable": "DoNotSchedule"}]})
    check(alt.ok, alt.err)
    check_eq(alt.all("PodDisruptionBudget")[0]["spec"].get("maxUnavailable"), "34%")
    check("minAvailable" not in alt.all("PodDisruptionBudget")[0]["spec"])
    aspec = alt.deployment()["spec"]["template"]["spec"]
    check("affinity" not in aspec, "podAntiAffinity none")
    check_eq([c["topologyKey"] for c in aspec["topologySpreadConstraints"]], ["rack"])
    off = h.render(sets={"podDisruptionBudget.enabled": False, "topologySpread.enabled": False})
    check(off.ok, off.err)
    check_eq(off.all("PodDisruptionBudget"), [])
    check("topologySpreadConstraints" not in off.deployment()["spec"]["template"]["spec"])


def case_services_select_pods():
    pod = D.deployment()["spec"]["template"]
    cports = {p["name"] for p in pod["spec"]["containers"][0]["ports"]}
    svcs = {s["metadata"]["name"]: s for s in D.all("Service")}
    check_eq(sorted(svcs), ["coxswain-admin", "coxswain-xds"])
    for s in svcs.values():
        check(sel_matches(s["spec"]["selector"], pod["metadata"]["labels"]), "service selector")
        for p in s["spec"]["ports"]:
            check(p["targetPort"] in cports, "targetPort %s" % p["targetPort"])
    check_eq(svcs["coxswain-xds"]["spec"]["ports"][0]["port"], 18000)
    check_eq(svcs["coxswain-xds"]["spec"]["ports"][0]["appProtocol"], "grpc")
    check_eq(svcs["coxswain-admin"]["spec"]["ports"][0]["port"], 18080)
    moved = h.render(sets={"xds.port": 9000, "admin.port": 9001})
    check(moved.ok, moved.err)
    check_eq(moved.args()["--xds-listen"], "0.0.0.0:9000")
    check_eq(moved.args()["--admin-listen"], "0.0.0.0:9001")
    check_eq(moved.get("Service", "coxswain-xds")["spec"]["ports"][0]["port"], 9000)


def check_rbac(r, **kw):
    check(r.ok, r.err)
    sa = r.deployment()["spec"]["template"]["spec"]["serviceAccountName"]
    got = contract.granted_permissions(r.docs, sa, NS)
    want = contract.expected_permissions(NS, **kw)
    check(not (got - want), "granted but not needed: %s" % sorted(got - want))
    check(not (want - got), "needed but not granted: %s" % sorted(want - got))


def case_rbac_exact_default():
    check_rbac(D, lock_name="coxswain")
    # The lock rule is restricted to the lock's name; create (which cannot
    # be) is a separate rule granting nothing else.
    role = D.get("Role", "coxswain", NS)
    lease_rules = [r for r in role["rules"] if r["resources"] == ["leases"]]
    check_eq(len(lease_rules), 2)
    named = [r for r in lease_rules if r.get("resourceNames")]
    unnamed = [r for r in lease_rules if not r.get("resourceNames")]
    check_eq(named[0]["resourceNames"], ["coxswain"])
    check("create" not in named[0]["verbs"], "create cannot be restricted by resourceNames")
    check_eq(unnamed[0]["verbs"], ["create"])


def case_rbac_exact_watch_namespaces():
    # HA values watch three namespaces: one RoleBinding each, no
    # cluster-wide read of Secrets or anything else.
    check_rbac(HA, lock_name="coxswain", watch_namespaces=["gateways", "team-a", "team-b"])
    # the one cluster-wide binding: the built-in reviewer role
    check_eq([b["roleRef"]["name"] for b in HA.all("ClusterRoleBinding")],
             ["system:auth-delegator"])
    check_eq(sorted(rb["metadata"]["namespace"] for rb in HA.all("RoleBinding")
                    if rb["roleRef"]["kind"] == "ClusterRole"), ["gateways", "team-a", "team-b"])


def case_rbac_exact_configmap_lock_and_selectors():
    r = h.render(sets={"leaderElection.resourceLock": "configmaps",
                       "namespaceSelector": "coxswain=on"})
    check_rbac(r, lock_name="coxswain", lock="configmaps", namespace_selector=True)
    check_eq(r.args()["--leader-elect-resource-lock"], "configmaps")
    check_eq(r.args()["--namespace-selector"], "coxswain=on")
    check(not any(rule["resources"] == ["leases"] for role in r.all("Role")
                  for rule in role["rules"]), "no Lease access in configmaps mode")


def case_rbac_single_replica_without_election():
    r = h.render(sets={"leaderElection.enabled": False, "replicaCount": 1,
                       "podDisruptionBudget.enabled": False})
    check_rbac(r, lock_name="coxswain", leader_elect=False)
    check_eq(r.args()["--leader-elect"], "false")
    check("--leader-elect-lease-duration" not in r.args())


def case_rbac_tls_inputs():
    # on by default: Secrets and ConfigMaps, list + watch, no get, in the
    # inputs' scope (one rule)
    rules = [rule for role in D.all("ClusterRole") for rule in role["rules"]
             if "secrets" in rule["resources"]]
    check_eq(len(rules), 1)
    check_eq(rules[0]["resources"], ["secrets", "configmaps"])
    check_eq(rules[0]["verbs"], ["list", "watch"])
    check("--tls-inputs" not in D.args(), "the daemon's default (true) is not repeated")
    # off: no such permission, and the daemon does not watch them
    r = h.render(sets={"tlsInputs.enabled": False})
    check_rbac(r, lock_name="coxswain", tls_inputs=False)
    check_eq(r.args()["--tls-inputs"], "false")
    check(not any("secrets" in rule["resources"] for role in r.all("ClusterRole")
                  for rule in role["rules"]), "no Secret access without tlsInputs")


def case_rbac_and_serviceaccount_optional():
    r = h.render(sets={"rbac.create": False, "serviceAccount.create": False,
                       "serviceAccount.name": "gw-controller"})
    check(r.ok, r.err)
    check_eq([k for k in r.kinds() if "Role" in k or k == "ServiceAccount"], [])
    check_eq(r.deployment()["spec"]["template"]["spec"]["serviceAccountName"], "gw-controller")
    r = h.render(sets={"serviceAccount.name": "gw-controller"})
    check(r.ok, r.err)
    check_eq(r.all("ServiceAccount")[0]["metadata"]["name"], "gw-controller")
    for b in r.all("RoleBinding") + r.all("ClusterRoleBinding"):
        check_eq(b["subjects"], [{"kind": "ServiceAccount", "name": "gw-controller",
                                  "namespace": NS}])


def case_names_and_image():
    r = h.render(name="edge")
    check(r.ok, r.err)
    check_eq(r.deployment()["metadata"]["name"], "edge-coxswain")
    check_eq(r.args()["--leader-elect-resource-name"], "edge-coxswain")
    check_eq(r.get("Role", "edge-coxswain", NS)["rules"][0]["resourceNames"], ["edge-coxswain"])
    r = h.render(name="coxswain-prod", sets={"image.tag": "1.2.3", "image.repository": "reg/cx"})
    check_eq(r.deployment()["metadata"]["name"], "coxswain-prod")
    check_eq(r.container()["image"], "reg/cx:1.2.3")
    r = h.render(sets={"fullnameOverride": "gw", "leaderElection.resourceName": "gw-lock"})
    check_eq(r.deployment()["metadata"]["name"], "gw")
    check_eq(r.args()["--leader-elect-resource-name"], "gw-lock")
    check_rbac(r, lock_name="gw-lock")


def case_translator_limits():
    # the budgets reach the daemon's flags, also large ones (no float
    # rendering such as 6.7108864e+07)
    r = h.render(sets={"translatorLimits.regexProgramSize": 1000,
                       "translatorLimits.resourceBytes": 134217728,
                       "translatorLimits.routesPerGateway": 2000000})
    check(r.ok, r.err)
    a = r.args()
    check_eq((a["--max-regex-program-size"], a["--max-resource-bytes"],
              a["--max-routes-per-gateway"]), ("1000", "134217728", "2000000"))
    check_eq(a["--max-routes-per-virtual-service"], "4096")


def case_ha_values():
    check(HA.ok, HA.err)
    spec = HA.deployment()["spec"]
    check_eq(spec["replicas"], 5)
    a = HA.args()
    check_eq((a["--leader-elect-lease-duration"], a["--leader-elect-renew-deadline"],
              a["--leader-elect-retry-period"]), ("10s", "6s", "2s"))
    check_eq(a["--watch-namespaces"], "gateways,team-a,team-b")
    check_eq(a["--label-selector"], "coxswain.dev/managed=true")
    check_eq(a["--default-gateway"], "gateways/public")
    check_eq((a["--status-qps"], a["--status-burst"]), ("50", "100"))
    # no lock change against the defaults: switching to this profile in a
    # rolling update keeps one lock, hence one leader
    for flag in ("--leader-elect-resource-lock", "--leader-elect-resource-name",
                 "--leader-elect-resource-namespace"):
        check_eq(a[flag], D.args()[flag], flag)
    # a tag users can build (make image), no made-up digest
    check_eq(HA.container()["image"], "coxswain:0.1.0-dev")
    pod = spec["template"]["spec"]
    check_eq(pod["priorityClassName"], "coxswain-critical")
    req = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    check_eq(req[0]["topologyKey"], "kubernetes.io/hostname")
    check_eq({c["whenUnsatisfiable"] for c in pod["topologySpreadConstraints"]}, {"DoNotSchedule"})
    check_eq(HA.all("PodDisruptionBudget")[0]["spec"]["minAvailable"], 3)


def case_ha_xds_tls():
    a = HA.args()
    check_eq(a["--xds-tls-cert-file"], "/etc/coxswain/xds-tls/tls.crt")
    check_eq(a["--xds-tls-key-file"], "/etc/coxswain/xds-tls/tls.key")
    check_eq(a["--xds-tls-client-ca-file"], "/etc/coxswain/xds-client-ca/ca.crt")
    pod = HA.deployment()["spec"]["template"]["spec"]
    vols = {v["name"]: v for v in pod["volumes"]}
    check_eq(vols["xds-tls"]["secret"]["secretName"], "coxswain-xds-tls")
    check_eq(vols["xds-client-ca"]["secret"]["secretName"], "coxswain-xds-client-ca")
    mounts = {m["name"]: m for m in HA.container()["volumeMounts"]}
    for name in ("xds-tls", "xds-client-ca"):
        check_eq(mounts[name]["readOnly"], True)
        check(a["--xds-tls-cert-file" if name == "xds-tls" else "--xds-tls-client-ca-file"]
              .startswith(mounts[name]["mountPath"] + "/"), "flag points into the mount")
    # without caSecretName the server Secret's ca.crt is used
    r = h.render(sets={"xds.tls.enabled": True, "xds.tls.secretName": "srv",
                       "xds.tls.clientAuth.enabled": True})
    check(r.ok, r.err)
    vols = {v["name"]: v for v in r.deployment()["spec"]["template"]["spec"]["volumes"]}
    check_eq(vols["xds-client-ca"]["secret"]["secretName"], "srv")
    # TLS is on by default: the certificate from <fullname>-xds-tls, which
    # the operator creates (or cert-manager writes); no client CA
    a = D.args()
    check_eq(a.get("--xds-tls-cert-file"), "/etc/coxswain/xds-tls/tls.crt", "TLS by default")
    check("--xds-tls-client-ca-file" not in a, "no client CA by default")
    vols = {v["name"]: v for v in D.deployment()["spec"]["template"]["spec"]["volumes"]}
    check_eq(vols["xds-tls"]["secret"]["secretName"], "coxswain-xds-tls")
    r = h.render(sets={"xds.tls.enabled": False})
    check(r.ok, r.err)
    check("--xds-tls-cert-file" not in r.args(), "xds.tls.enabled=false: plaintext")


def case_xds_tls_cert_manager():
    """xds.tls.certManager: a Certificate for the xDS Service's names, issued
    into the Secret the Deployment mounts (default <fullname>-xds-tls)."""
    check_eq(D.all("Certificate"), [])
    r = h.render(sets={"xds.tls.enabled": True, "xds.tls.certManager.enabled": True,
                       "xds.tls.certManager.issuerRef.name": "cluster-ca",
                       "xds.tls.certManager.issuerRef.kind": "ClusterIssuer",
                       "xds.tls.clientAuth.enabled": True})
    check(r.ok, r.err)
    certs = r.all("Certificate")
    check_eq(len(certs), 1)
    c = certs[0]
    check_eq(c["apiVersion"], "cert-manager.io/v1")
    check_eq(c["metadata"].get("namespace", NS), NS)
    check_eq(c["spec"]["secretName"], "coxswain-xds-tls")
    check_eq(c["spec"]["dnsNames"], ["coxswain-xds", "coxswain-xds.%s" % NS,
                                     "coxswain-xds.%s.svc" % NS])
    check_eq(c["spec"]["issuerRef"], {"name": "cluster-ca", "kind": "ClusterIssuer",
                                      "group": "cert-manager.io"})
    check_eq(c["spec"]["usages"], ["server auth"])
    # the Service the proxies dial carries one of those names
    check("coxswain-xds" in [svc["metadata"]["name"] for svc in r.all("Service")])
    vols = {v["name"]: v for v in r.deployment()["spec"]["template"]["spec"]["volumes"]}
    check_eq(vols["xds-tls"]["secret"]["secretName"], "coxswain-xds-tls")
    check_eq(vols["xds-client-ca"]["secret"]["secretName"], "coxswain-xds-tls")
    # a named Secret wins
    r = h.render(sets={"xds.tls.enabled": True, "xds.tls.secretName": "mine",
                       "xds.tls.certManager.enabled": True,
                       "xds.tls.certManager.issuerRef.name": "ca"})
    check(r.ok, r.err)
    check_eq(r.all("Certificate")[0]["spec"]["secretName"], "mine")
    vols = {v["name"]: v for v in r.deployment()["spec"]["template"]["spec"]["volumes"]}
    check_eq(vols["xds-tls"]["secret"]["secretName"], "mine")


def case_ha_monitoring():
    sm = HA.all("ServiceMonitor")
    check_eq(len(sm), 1)
    sm = sm[0]
    check_eq(sm["metadata"]["labels"]["release"], "prometheus")
    admin = HA.get("Service", "coxswain-admin", NS)
    xds = HA.get("Service", "coxswain-xds", NS)
    check(sel_matches(sm["spec"]["selector"]["matchLabels"], admin["metadata"]["labels"]),
          "ServiceMonitor selects the admin Service")
    check(not sel_matches(sm["spec"]["selector"]["matchLabels"], xds["metadata"]["labels"]),
          "ServiceMonitor must not scrape the xDS Service")
    check_eq(sm["spec"]["endpoints"][0]["port"], admin["spec"]["ports"][0]["name"])
    check_eq(sm["spec"]["endpoints"][0]["path"], "/metrics")
    check_eq(len(HA.all("PrometheusRule")), 1)
    check_eq(D.all("ServiceMonitor") + D.all("PrometheusRule"), [])


def case_grafana_dashboard():
    check_eq(D.all("ConfigMap"), [])  # off by default
    r = h.render(name="edge", namespace="gw-system",
                 sets={"metrics.grafanaDashboard.enabled": True,
                       "metrics.grafanaDashboard.annotations": {"grafana_folder": "Gateways"}})
    check(r.ok, r.err)
    cm = r.get("ConfigMap", "edge-coxswain-dashboard", "gw-system")
    check_eq(cm["metadata"]["labels"]["grafana_dashboard"], "1")
    check_eq(cm["metadata"]["labels"]["app.kubernetes.io/instance"], "edge")
    check_eq(cm["metadata"]["annotations"], {"grafana_folder": "Gateways"})
    check_eq(list(cm["data"]), ["coxswain.json"])
    dash = json.loads(cm["data"]["coxswain.json"])
    check_eq(dash["title"], "coxswain (edge-coxswain)")
    check(len(dash["uid"]) <= 40, dash["uid"])  # Grafana's limit
    check(dash["uid"] != json.loads(h.render(sets={"metrics.grafanaDashboard.enabled": True})
                                    .get("ConfigMap", "coxswain-dashboard")["data"]
                                    ["coxswain.json"])["uid"], "one uid per release")
    check_eq([v["name"] for v in dash["templating"]["list"]], ["datasource"])
    ids = [p["id"] for p in dash["panels"]]
    check_eq(len(ids), len(set(ids)))
    sel = 'namespace="gw-system",job="edge-coxswain-admin"'
    for p in dash["panels"]:
        check_eq(p["datasource"]["uid"], "${datasource}")
        check(p["targets"], p["title"])
        for t_ in p["targets"]:
            # every query selects this release's targets, and only them
            check(sel in t_["expr"], "%s: %s" % (p["title"], t_["expr"]))
            check("COXSWAIN_" not in t_["expr"], t_["expr"])
    # labels can be replaced for another sidecar setup
    r = h.render(sets={"metrics.grafanaDashboard.enabled": True,
                       "metrics.grafanaDashboard.labels": {"dashboards": "gw"}})
    check_eq(r.get("ConfigMap", "coxswain-dashboard")["metadata"]["labels"].get("dashboards"),
             "gw")


def case_extra_args_env_annotations():
    r = h.render(sets={"extraArgs": ["--identity=x"], "extraEnv": [{"name": "A", "value": "1"}],
                       "podAnnotations": {"a": "b"}, "podLabels": {"team": "edge"},
                       "nodeSelector": {"pool": "cp"},
                       "tolerations": [{"key": "cp", "operator": "Exists"}]})
    check(r.ok, r.err)
    check_eq(r.container()["args"][-1], "--identity=x")
    check({"name": "A", "value": "1"} in r.container()["env"])
    pod = r.deployment()["spec"]["template"]
    ann = {k: v for k, v in pod["metadata"]["annotations"].items()
           if not k.startswith(("traffic.sidecar.istio.io/", "config.linkerd.io/"))}
    check_eq(ann, {"a": "b"})  # beside the peer port's mesh exclusions
    check_eq(pod["metadata"]["labels"]["team"], "edge")
    check_eq(pod["spec"]["nodeSelector"], {"pool": "cp"})
    check_eq(pod["spec"]["tolerations"], [{"key": "cp", "operator": "Exists"}])
    # podLabels never leak into the selector (it is immutable)
    check("team" not in r.deployment()["spec"]["selector"]["matchLabels"])


CASES = [
    ("default values render the HA object set", case_default_objects),
    ("output has helm template's layout and install order", case_helm_template_layout),
    ("Deployment selects its pods and uses the service account", case_deployment_wiring),
    ("default flags of coxswain run", case_default_flags),
    ("leaderElection.standby: --standby warm or cold, nothing else", case_standby_value),
    ("every rendered flag is in the daemon's flag contract", case_flags_in_daemon_contract),
    ("every rendered flag is listed by coxswain run --help", case_flags_known_to_daemon_binary),
    ("POD_NAME and POD_NAMESPACE from the downward API", case_downward_api_env),
    ("probes: /healthz liveness, /readyz readiness on the admin port", case_probes_on_admin_port),
    ("security context: non-root, read-only root, drop ALL, seccomp", case_security_context),
    ("spread over nodes and zones, PDB minAvailable 1", case_spread_and_disruption_budget),
    ("Services select the pods on named ports", case_services_select_pods),
    ("RBAC default: exactly the needed permissions; lock by name", case_rbac_exact_default),
    ("RBAC watchNamespaces: RoleBindings only in those namespaces", case_rbac_exact_watch_namespaces),
    ("RBAC configmaps lock + namespace selector: exact", case_rbac_exact_configmap_lock_and_selectors),
    ("RBAC single replica without election: no lock access", case_rbac_single_replica_without_election),
    ("RBAC tlsInputs: Secrets/ConfigMaps list+watch, none when disabled", case_rbac_tls_inputs),
    ("rbac.create / serviceAccount.create off; custom SA name", case_rbac_and_serviceaccount_optional),
    ("names, lock name and image follow release and overrides", case_names_and_image),
    ("translatorLimits reach the --max-* flags", case_translator_limits),
    ("HA values: 5 replicas, tuned lease, hard spread, PDB 3", case_ha_values),
    ("HA values: xDS TLS with client CA mounted read-only", case_ha_xds_tls),
    ("xds.tls.certManager: a Certificate into the mounted Secret", case_xds_tls_cert_manager),
    ("HA values: ServiceMonitor scrapes admin only; PrometheusRule", case_ha_monitoring),
    ("Grafana dashboard ConfigMap: sidecar label, release selector, uid", case_grafana_dashboard),
    ("extraArgs, extraEnv, pod annotations/labels, scheduling", case_extra_args_env_annotations),
    ("the peer channel: port, POD_IP, mesh exclusions, off switch, port clash",
     case_peer_channel),
]
for name, fn in CASES:
    t.case(name, fn)
t.done()
