"""The chart as the real Helm 3 sees it: `helm lint --strict` passes with
the default values and with every values file in ci/; `helm template`
renders every values file into a deployment that holds the chart's
promises whatever the values (a schema-valid render, RBAC no wider than
the contract, a PDB that allows a drain, anti-affinity or spread, probes on
the admin port, only flags the daemon knows, a non-root read-only
container); and the Kubernetes versions Chart.yaml claims are the ones
Helm accepts."""
import glob
import os
import sys

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "helm"))

import contract  # noqa: E402
import helmlib as h  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

t = Tap()
CI_FILES = sorted(glob.glob(os.path.join(h.CHART, "ci", "*.yaml")))


def case_helm_version():
    p = h.helm("version", "--template", "{{.Version}}")
    check_eq((p.returncode, p.stdout.strip()), (0, h.HELM_VERSION), p.stderr)


def lint(*values):
    args = ["lint", "--strict", h.CHART, "--namespace", h.NAMESPACE]
    for v in values:
        args += ["--values", v]
    p = h.helm(*args)
    check_eq(p.returncode, 0, p.stdout + p.stderr)
    check("1 chart(s) linted, 0 chart(s) failed" in p.stdout, p.stdout)
    check("[WARNING]" not in p.stdout and "[ERROR]" not in p.stdout, p.stdout)


def case_lint_default():
    check(CI_FILES, "no values file in ci/")
    lint()


def case_lint_ci_files():
    for f in CI_FILES:
        lint(f)


def case_lint_fails_on_a_broken_chart():
    # lint is not a formality: a schema violation is an error
    p = h.helm("lint", "--strict", h.CHART, "--set", "replicaCount=0")
    check(p.returncode != 0 and "replicaCount" in p.stdout + p.stderr, p.stdout + p.stderr)
    # a rule of _validate.tpl (fail) is only [INFO] in lint mode, by Helm's
    # design; helm template (and install) refuse it
    p = h.helm("lint", "--strict", h.CHART, "--set", "leaderElection.renewDeadline=20s")
    check("must be less than leaderElection.leaseDuration" in p.stdout + p.stderr,
          p.stdout + p.stderr)
    r = h.render(set_strings={"leaderElection.renewDeadline": "20s"})
    check(not r.ok and "must be less than leaderElection.leaseDuration" in r.err, r.err)


def pod_spec(r):
    return r.deployment()["spec"]["template"]["spec"]


def holds_promises(r, where):
    check(r.ok, "%s: %s" % (where, r.err))
    dep = r.deployment()
    replicas = dep["spec"]["replicas"]
    ctr = r.container()
    args = r.args()
    # only flags `coxswain run` defines
    unknown = set(args) - contract.DAEMON_FLAGS
    check(not unknown, "%s: flags the daemon does not define: %s" % (where, sorted(unknown)))
    # probes on the admin port, the port the admin server listens on
    admin = {p["name"]: p["containerPort"] for p in ctr["ports"]}["http-admin"]
    check(args["--admin-listen"].endswith(":%d" % admin), where)
    check_eq((ctr["livenessProbe"]["httpGet"]["path"], ctr["livenessProbe"]["httpGet"]["port"]),
             ("/healthz", "http-admin"), where)
    check_eq((ctr["readinessProbe"]["httpGet"]["path"], ctr["readinessProbe"]["httpGet"]["port"]),
             ("/readyz", "http-admin"), where)
    # non-root, read-only, nothing to escalate
    sc = ctr["securityContext"]
    check(sc["runAsNonRoot"] and sc["readOnlyRootFilesystem"] and
          not sc["allowPrivilegeEscalation"] and sc["capabilities"]["drop"] == ["ALL"], where)
    check_eq(pod_spec(r)["securityContext"]["runAsUser"], 65532, where)
    # several replicas: spread over nodes, a PDB that lets a node drain,
    # leader election on
    if replicas > 1:
        check_eq(args["--leader-elect"], "true", where)
        aff = pod_spec(r).get("affinity", {}).get("podAntiAffinity")
        spread = pod_spec(r).get("topologySpreadConstraints", [])
        check(aff or any(c["topologyKey"] == "kubernetes.io/hostname" for c in spread),
              "%s: nothing spreads the replicas over nodes" % where)
        pdbs = r.all("PodDisruptionBudget")
        check_eq(len(pdbs), 1, where)
        m = pdbs[0]["spec"].get("minAvailable")
        if isinstance(m, int):
            check(m < replicas, "%s: PDB minAvailable %d of %d replicas" % (where, m, replicas))
    # RBAC no wider than the contract for these values
    want = contract.expected_permissions(
        h.NAMESPACE, args.get("--leader-elect-resource-name", ""),
        lock=args.get("--leader-elect-resource-lock", "leases"),
        watch_namespaces=[x for x in args.get("--watch-namespaces", "").split(",") if x],
        namespace_selector="--namespace-selector" in args,
        tls_inputs=args.get("--tls-inputs", "true") != "false",
        leader_elect=args.get("--leader-elect") == "true")
    got = contract.granted_permissions(r.docs, pod_spec(r)["serviceAccountName"], h.NAMESPACE)
    check_eq(sorted(got - want), [], "%s: RBAC grants more than the contract" % where)
    check_eq(sorted(want - got), [], "%s: RBAC lacks" % where)


def case_template_every_values_file():
    holds_promises(h.render(), "default values")
    for f in CI_FILES:
        holds_promises(h.render(values=[f]), os.path.relpath(f, h.CHART))


def case_kube_versions():
    # Chart.yaml: kubeVersion ">=1.21.0-0"
    check(h.render(extra=["--kube-version", "v1.21.0"]).ok)
    r = h.render(extra=["--kube-version", "v1.20.15"])
    check(not r.ok and "chart requires kubeVersion: >=1.21.0-0 which is incompatible with "
          "Kubernetes v1.20.15" in r.err, r.err)


t.case("helm is the pinned v3.17.1", case_helm_version)
t.case("helm lint --strict: default values", case_lint_default)
t.case("helm lint --strict: every values file in ci/", case_lint_ci_files)
t.case("helm lint fails on a schema violation; template on a rule violation",
       case_lint_fails_on_a_broken_chart)
t.case("helm template: every values file keeps the chart's promises",
       case_template_every_values_file)
t.case("the Kubernetes versions Chart.yaml claims", case_kube_versions)
t.done()
