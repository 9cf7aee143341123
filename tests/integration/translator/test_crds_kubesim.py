"""The CRDs (api/crds) and examples/ through a real kubectl into kubesim,
then back out and through `coxswain translate`:

- the CRDs are accepted and become Established;
- the examples apply; printer columns show State and Age;
- the API server's structural validation refuses what the schemas forbid;
- objects read back (with the server's defaults filled in) translate with
  every report Accepted, exactly like the files themselves.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))

from kubesim import KubeSim  # noqa: E402
from tap import SkipCase, Tap, check, check_eq  # noqa: E402

t = Tap()
KUBECTL = shutil.which("kubectl")
BUILD = os.environ.get("COXSWAIN_BUILD") or os.path.join(TOP, "build")
COXSWAIN = os.path.join(BUILD, "bin", "coxswain")
CRDS = os.path.join(TOP, "api", "crds")
EXAMPLES = os.path.join(TOP, "examples")
tmp = tempfile.mkdtemp(prefix="xlate-crds-")
ks = KubeSim()
env = dict(os.environ, KUBECONFIG=ks.kubeconfig, HOME=tmp)


def kubectl(*args, check_rc=True, stdin=None, timeout=60):
    p = subprocess.run([KUBECTL] + list(args), env=env, input=stdin, capture_output=True,
                       text=True, timeout=timeout)
    if check_rc and p.returncode != 0:
        raise AssertionError("kubectl %s failed (%d):\n%s%s" %
                             (" ".join(args), p.returncode, p.stdout, p.stderr))
    return p


def translate(*paths):
    args = [COXSWAIN, "translate", "--reports-only"]
    for p in paths:
        args += ["-f", p]
    p = subprocess.run(args, capture_output=True, text=True, timeout=60)
    return p.returncode, (json.loads(p.stdout) if p.stdout.strip() else None), p.stderr


def case_crds_established():
    kubectl("apply", "-f", CRDS)
    for name in ("gateways", "virtualservices", "routetables", "upstreams", "proxysnapshots"):
        kubectl("wait", "--for=condition=Established", "--timeout=30s",
                "crd/%s.coxswain.dev" % name)


def case_examples_apply_and_columns():
    kubectl("apply", "-f", EXAMPLES)
    out = kubectl("get", "virtualservices", "-n", "default").stdout
    check("echo" in out and "greeter" in out, out)
    # the printer columns as the server stores them (kubesim does not render
    # server-side tables, so kubectl shows NAME AGE there)
    for name in ("gateways", "virtualservices", "routetables", "upstreams"):
        crd = json.loads(kubectl("get", "crd/%s.coxswain.dev" % name, "-o", "json").stdout)
        cols = crd["spec"]["versions"][0]["additionalPrinterColumns"]
        check_eq([(c["name"], c["jsonPath"]) for c in cols][-2:],
                 [("State", ".status.state"), ("Age", ".metadata.creationTimestamp")])
        check_eq(crd["spec"]["versions"][0]["subresources"], {"status": {}})
    # short names and the category
    out = kubectl("get", "coxswain", "-n", "default", "-o", "name").stdout
    for n in ("gateway.coxswain.dev/edge", "virtualservice.coxswain.dev/echo",
              "routetable.coxswain.dev/api", "upstream.coxswain.dev/echo-static"):
        check(n in out, out)
    check_eq(kubectl("get", "cxup", "-n", "default", "-o", "name").returncode, 0)


def bad(name, spec):
    return json.dumps({"apiVersion": "coxswain.dev/v1", "kind": "VirtualService",
                       "metadata": {"name": name, "namespace": "default"}, "spec": spec})


def case_schema_refuses():
    # a required field missing
    p = kubectl("apply", "-f", "-", stdin=bad("no-domains", {"routes": [{"upstream": {"name": "x"}}]}),
                check_rc=False)
    check(p.returncode != 0 and "domains" in p.stderr, p.stderr)
    # a wrong type
    p = kubectl("apply", "-f", "-", stdin=bad("bad-type", {"domains": "x", "routes": []}),
                check_rc=False)
    check(p.returncode != 0, p.stdout + p.stderr)
    # an enum
    gw = {"apiVersion": "coxswain.dev/v1", "kind": "Gateway",
          "metadata": {"name": "bad-mode", "namespace": "default"}, "spec": {"mode": "sidecar"}}
    p = kubectl("apply", "-f", "-", stdin=json.dumps(gw), check_rc=False)
    check(p.returncode != 0 and "mode" in p.stderr, p.stderr)
    # a missing required field deeper down
    up = {"apiVersion": "coxswain.dev/v1", "kind": "Upstream",
          "metadata": {"name": "bad-host", "namespace": "default"},
          "spec": {"static": {"hosts": [{"port": 80}]}}}
    p = kubectl("apply", "-f", "-", stdin=json.dumps(up), check_rc=False)
    check(p.returncode != 0 and "address" in p.stderr, p.stderr)
    # hash policies: sourceIP only true, a cookie needs its name, the
    # list a list; the ring sizes are integers; Maglev is a policy
    route = {"upstream": {"name": "x"}}
    for hp, word in (([{"sourceIP": False}], "sourceIP"), ([{"cookie": {"ttl": "1h"}}], "name"),
                     ({"header": "x-user"}, "hashPolicy")):
        p = kubectl("apply", "-f", "-", check_rc=False,
                    stdin=bad("bad-hash", {"domains": ["h.example.com"],
                                           "routes": [dict(route, hashPolicy=hp)]}))
        check(p.returncode != 0 and word in p.stderr, "%s: %s" % (hp, p.stderr))
    up["metadata"]["name"] = "ring"
    up["spec"] = {"static": {"hosts": [{"address": "10.0.0.1", "port": 80}]},
                  "lbPolicy": "RingHash", "ringHash": {"minimumRingSize": "big"}}
    p = kubectl("apply", "-f", "-", stdin=json.dumps(up), check_rc=False)
    check(p.returncode != 0 and "minimumRingSize" in p.stderr, p.stderr)
    up["spec"]["ringHash"] = {"minimumRingSize": 1024}
    up["spec"]["lbPolicy"] = "Maglev"
    p = kubectl("apply", "-f", "-", stdin=json.dumps(up), check_rc=False)
    check_eq(p.returncode, 0, p.stderr)  # stored; the translator rejects it (needs RingHash)
    kubectl("delete", "upstream", "ring", "-n", "default")
    # cluster options (issue 22): each refused by the schema, naming the field
    up["metadata"]["name"] = "cluster-opts"
    base = {"static": {"hosts": [{"address": "10.0.0.1", "port": 80, "zone": "a"}]}}
    for extra, word in (
            ({"outlierDetection": {"maxEjectionPercent": 101}}, "maxEjectionPercent"),
            ({"outlierDetection": {"interval": "soon"}}, "interval"),
            ({"healthChecks": [{"timeout": "1s", "interval": "5s", "tcp": {},
                                "http": {"path": "/h"}}]}, "healthChecks"),
            ({"healthChecks": [{"interval": "5s", "tcp": {}}]}, "timeout"),
            ({"healthChecks": [{"timeout": "1s", "interval": "5s",
                                "http": {"path": "health"}}]}, "path"),
            ({"localities": [{"zone": "a", "priority": 128}]}, "priority"),
            ({"localities": [{"zone": "a"}, {"zone": "a", "weight": 2}]}, "localities"),
            ({"localities": [{"weight": 2}]}, "zone"),
            ({"circuitBreakers": {"maxRequests": -1}}, "maxRequests"),
            ({"protocol": "HTTP3"}, "protocol")):
        up["spec"] = dict(base, **extra)
        p = kubectl("apply", "-f", "-", stdin=json.dumps(up), check_rc=False)
        check(p.returncode != 0 and word in p.stderr, "%s: %s" % (extra, p.stderr))
    up["spec"] = dict(base, localities=[{"zone": "a", "weight": 3}, {"zone": "", "priority": 1}],
                      outlierDetection={"interval": "1s", "enforcingFailurePercentage": 100},
                      healthChecks=[{"timeout": "1s", "interval": "5s",
                                     "grpc": {"serviceName": "svc"}}],
                      circuitBreakers={"maxRequests": 100}, protocol="HTTP2")
    p = kubectl("apply", "-f", "-", stdin=json.dumps(up), check_rc=False)
    check_eq(p.returncode, 0, p.stderr)
    stored = json.loads(kubectl("get", "upstream", "cluster-opts", "-n", "default", "-o",
                                "json").stdout)["spec"]
    # defaults filled in by the schema
    check_eq(stored["localities"][0]["priority"], 0)
    check_eq(stored["healthChecks"][0]["unhealthyThreshold"], 3)
    kubectl("delete", "upstream", "cluster-opts", "-n", "default")
    # (ranges such as port <= 65535 are enforced by a real API server; kubesim
    # checks types, required fields and enums)


def case_read_back_translates_the_same():
    rc, files, err = translate(EXAMPLES)
    check_eq(rc, 0, err)
    # secrets: the TLS Gateways of examples/secure.yaml and partners.yaml
    # read their certificates; configmaps: partners.yaml's client CA
    out = kubectl("get",
                  "gateways,virtualservices,routetables,upstreams,services,endpointslices,secrets,"
                  "configmaps", "-n", "default", "-o", "json").stdout
    path = os.path.join(tmp, "read-back.json")
    with open(path, "w") as f:
        f.write(out)
    rc, back, err = translate(path)
    names = {(x["kind"], x["name"]) for x in files["reports"]}
    summary = lambda r: [(x["kind"], x["name"], x["state"], x["message"]) for x in r["reports"]
                         if (x["kind"], x["name"]) in names]
    # the server filled defaults (weight, caseSensitive, retries...) and
    # metadata (uid, generation): same verdicts, no warnings
    check_eq(summary(back), summary(files))
    check(all(x["state"] == "Accepted" for x in back["reports"]
              if (x["kind"], x["name"]) in names), back)


def case_translate_exit_codes():
    path = os.path.join(tmp, "bad.yaml")
    with open(path, "w") as f:
        f.write("apiVersion: coxswain.dev/v1\nkind: VirtualService\nmetadata: {name: v}\n"
                "spec:\n  domains: [a.example.com]\n  routes:\n  - match: {regex: '(?=x)'}\n"
                "    upstream: {name: u}\n")
    rc, out, err = translate(path)
    check_eq(rc, 1, err)
    check_eq(out["reports"][0]["reason"], "InvalidRegex")
    check("1 rejected" in err, err)
    p = subprocess.run([COXSWAIN, "translate", "-f", os.path.join(tmp, "missing.yaml")],
                       capture_output=True, text=True, timeout=30)
    check_eq(p.returncode, 2)
    check("missing.yaml" in p.stderr, p.stderr)
    p = subprocess.run([COXSWAIN, "translate"], capture_output=True, text=True, timeout=30)
    check_eq(p.returncode, 2)
    with open(path, "w") as f:
        f.write("a: [unclosed\n")
    p = subprocess.run([COXSWAIN, "translate", "-f", path], capture_output=True, text=True,
                       timeout=30)
    check_eq(p.returncode, 2)
    check("line" in p.stderr, p.stderr)


if KUBECTL is None:
    t.case("kubectl present", lambda: (_ for _ in ()).throw(SkipCase("no kubectl")))
else:
    try:
        t.case("CRDs apply and become Established", case_crds_established)
        t.case("examples apply; State and Age columns; short names, category",
               case_examples_apply_and_columns)
        t.case("structural validation refuses bad objects", case_schema_refuses)
        t.case("objects read back translate like the files, all Accepted",
               case_read_back_translates_the_same)
        t.case("coxswain translate exit codes: 1 rejected, 2 usage/read/parse", case_translate_exit_codes)
    finally:
        ks.stop()
        shutil.rmtree(tmp, ignore_errors=True)
t.done()
