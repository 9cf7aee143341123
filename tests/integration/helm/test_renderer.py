"""The chart renderer (tests/helm/render) behaves like Helm 3's engine in
the ways our chart and its tests depend on. Each expectation below is
Helm's documented or source-level behaviour, checked on a fixture chart
(tests/helm/fixtures/quirks)."""
import os
import subprocess
import sys
import tempfile

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "helm"))

import helmlib as h  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

t = Tap()
FIX = os.path.join(TOP, "tests", "helm", "fixtures", "quirks")


def rq(values_text=None, sets=None, extra=(), name="rel", namespace="ns1"):
    return h.render(values_text=values_text, sets=sets, extra=extra, name=name,
                    namespace=namespace, chart=FIX)


BASE = rq(extra=["--include-crds"])


def data():
    return BASE.get("Deployment", "rel")["data"]


def case_numbers_are_float64():
    # Helm parses values through JSON: every number is a float64, so a
    # large integer prints in exponent form unless converted with int.
    d = data()
    check_eq(d["bigRaw"], "1e+06")
    check_eq(d["bigInt"], "1000000")
    check_eq(d["smallKind"], "float64")
    check_eq(d["ratio"], "0.5")


def case_missing_values_empty():
    check_eq(data()["missing"], "")
    check_eq(data()["missingNested"], "")
    check("<no value>" not in BASE.out)


def case_builtin_objects():
    d = data()
    check_eq(d["release"], "rel/ns1/Helm/true/1")
    check_eq(d["chart"], "quirks/1.2.3/9.9")
    check_eq(d["kube"], "v1.30.0/1/30")
    check_eq(d["hasPolicy"], "true")
    check_eq(d["hasMonitoring"], "false")
    check_eq(d["template"], "quirks/templates/a-deployment.yaml in quirks/templates")
    r = rq(extra=["--kube-version", "v1.28.7", "--api-versions", "monitoring.coreos.com/v1"])
    check(r.ok, r.err)
    dd = r.get("Deployment", "rel")["data"]
    check_eq(dd["kube"], "v1.28.7/1/28")
    check_eq(dd["hasMonitoring"], "true")


def case_helm_functions():
    d = data()
    check_eq(d["include"], "hi you")
    check_eq(d["tpl"], "name=rel text=hello")
    check_eq(d["lookup"], "0")  # helm template: lookup finds nothing
    # toYaml sorts keys and leaves no trailing newline
    check_eq(d["yaml"], "deeper:\n  a: 1\n  b: 2\ndrop: dropped\nkeep: kept\n")
    check_eq(d["json"], '["b","a"]')
    check_eq(d["fromYaml"], "2")
    check_eq(d["fromYamlErr"], "true")
    check_eq(d["sprig"], "HELLO-a,b-true")


def case_env_functions_removed():
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "templates"))
        with open(os.path.join(tmp, "Chart.yaml"), "w") as f:
            f.write("apiVersion: v2\nname: envy\nversion: 0.1.0\n")
        with open(os.path.join(tmp, "templates", "x.yaml"), "w") as f:
            f.write('v: {{ env "HOME" }}\n')
        r = h.render(chart=tmp)
        check(not r.ok, "env must not be available")
        check('function "env" not defined' in r.err, r.err)


def case_values_coalescing():
    # a later file wins, maps merge deeply, null deletes a default
    r = rq(values_text="nested:\n  drop: null\n  deeper:\n    b: 20\ntext: bye\n")
    check(r.ok, r.err)
    d = r.get("Deployment", "rel")["data"]
    check_eq(d["hasDrop"], "false")
    check_eq(d["deeperB"], "20")
    check_eq(d["yaml"], "deeper:\n  a: 1\n  b: 20\nkeep: kept\n")
    check_eq(d["tpl"], "name=rel text=bye")
    r = rq(values_text="text: first\n", sets={"text": "second"})
    check_eq(r.get("Deployment", "rel")["data"]["tpl"], "name=rel text=second")


def case_partials_notes_and_empty_files():
    check("ShouldNotRender" not in BASE.out, "files starting with _ are partials")
    check("notes are not part" not in BASE.out)
    check("empty.yaml" not in BASE.out, "whitespace-only output is dropped")
    check("# only a comment" in BASE.out, "Helm keeps comment-only documents")


def case_install_order_and_sources():
    sources = [b.splitlines()[0] for b in BASE.out.split("---\n")[1:]]
    check_eq(sources, ["# Source: quirks/crds/thing.yaml"] +
             ["# Source: quirks/templates/z-service.yaml"] * 2 +
             ["# Source: quirks/templates/a-deployment.yaml"] +
             ["# Source: quirks/templates/z-service.yaml"] * 2)
    order = [d["kind"] for d in BASE.docs]
    # CRDs first (--include-crds), then ServiceAccount < Service < Deployment
    # by Helm's InstallOrder although the files sort the other way; unknown
    # kinds last
    check_eq(order, ["CustomResourceDefinition", "ServiceAccount", "Service", "Deployment",
                     "Widget"])
    check("README" not in BASE.out, "only YAML/JSON files in crds/ are CRDs")
    r = rq()
    check("CustomResourceDefinition" not in r.out, "CRDs only with --include-crds")
    r = rq(extra=["--show-only", "templates/z-service.yaml"])
    check(r.ok, r.err)
    check_eq([d["kind"] for d in r.docs], ["ServiceAccount", "Service", "Widget"])


def case_required_and_errors():
    r = rq(sets={"needIt": {"other": 1}})
    check(not r.ok)
    check_eq(r.err.strip(),
             "Error: execution error at (quirks/templates/required.yaml:5:11): "
             "needIt.name is required")
    r = rq(sets={"needIt": {"name": ""}})
    check(not r.ok and "needIt.name is required" in r.err, "empty string is missing too")
    r = rq(sets={"needIt": {"name": "cm"}})
    check(r.ok, r.err)
    check_eq(r.get("ConfigMap", "cm")["kind"], "ConfigMap")


def case_kube_version_constraint():
    r = rq(extra=["--kube-version", "v1.24.3"])
    check(not r.ok)
    check("chart requires kubeVersion: >=1.25.0-0 which is incompatible with Kubernetes v1.24.3"
          in r.err, r.err)
    # the coxswain chart supports the Kubernetes versions it claims
    check(h.render(extra=["--kube-version", "v1.21.0"]).ok)
    check(not h.render(extra=["--kube-version", "v1.20.15"]).ok)


def case_schema_error_format():
    r = h.render(sets={"replicaCount": "3", "log": {"format": "xml", "level": "info"}})
    check(not r.ok)
    lines = r.err.strip().splitlines()
    check_eq(lines[0], "Error: values don't meet the specifications of the schema(s) in the "
                       "following chart(s):")
    check_eq(lines[1], "coxswain:")
    check_eq(sorted(lines[2:]), [
        '- log.format: log.format must be one of the following: "json", "text"',
        "- replicaCount: Invalid type. Expected: integer, given: string"])


def case_bad_flags():
    p = subprocess.run([h.renderer(), "--bogus", FIX], capture_output=True, text=True)
    check(p.returncode != 0 and "unknown flag: --bogus" in p.stderr, p.stderr)
    p = subprocess.run([h.renderer()], capture_output=True, text=True)
    check(p.returncode != 0 and "chart directory is required" in p.stderr, p.stderr)


t.case("numbers are float64 as in Helm (1e+06 unless int)", case_numbers_are_float64)
t.case("missing values render empty, never <no value>", case_missing_values_empty)
t.case(".Release, .Chart, .Capabilities, .Template", case_builtin_objects)
t.case("include, tpl, lookup, toYaml, toJson, fromYaml, sprig", case_helm_functions)
t.case("env and expandenv are not available", case_env_functions_removed)
t.case("values: later wins, deep merge, null deletes", case_values_coalescing)
t.case("partials, NOTES.txt and empty output are not manifests", case_partials_notes_and_empty_files)
t.case("install order, CRDs first, --show-only", case_install_order_and_sources)
t.case("required and Helm's execution error format", case_required_and_errors)
t.case("Chart.yaml kubeVersion is enforced", case_kube_version_constraint)
t.case("schema errors in Helm's format", case_schema_error_format)
t.case("unknown flags and missing chart are refused", case_bad_flags)
t.done()
