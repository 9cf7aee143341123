"""kubesim: what the operations guide asks of a cluster: OpenAPI v3 with the
CRDs' schemas (kubectl explain), Endpoints of Services (kubectl get
endpoints), and the CRDs' descriptions, every field of which comes from
api/fields.yaml through api/crds/generate.py.
"""
import glob
import os
import shutil
import subprocess
import tempfile

import yaml

from ksutil import TOP, KubeSim, Tap, check, check_eq, kubectl_binary

t = Tap()
ks = KubeSim()
KUBECTL = kubectl_binary()  # kubesim emulates 1.28
tmp = tempfile.mkdtemp(prefix="kubesim-openapi-")
env = dict(os.environ, KUBECONFIG=ks.kubeconfig, HOME=tmp)
CRDS = sorted(glob.glob(os.path.join(TOP, "api", "crds", "*.yaml")))


def kubectl(*args, check_rc=True, stdin=None):
    p = subprocess.run([KUBECTL] + list(args), env=env, capture_output=True, text=True,
                       timeout=60, input=stdin)
    if check_rc and p.returncode != 0:
        raise AssertionError("kubectl %s failed (%d):\n%s%s" % (" ".join(args), p.returncode,
                                                               p.stdout, p.stderr))
    return p


def every_field_described():
    """Each property of each CRD, at any depth, carries a description."""
    check_eq(len(CRDS), 5)
    for path in CRDS:
        doc = yaml.safe_load(open(path))
        sch = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        bare = []

        def walk(s, p):
            for k, v in s.get("properties", {}).items():
                q = p + "." + k if p else k
                if not v.get("description"):
                    bare.append(q)
                walk(v, q)
            if isinstance(s.get("items"), dict):
                walk(s["items"], p + "[]")

        walk(sch, "")
        check(sch.get("description"), path)
        check_eq(bare, [], os.path.basename(path))


def generated_files_are_current():
    """api/crds/*.yaml are what generate.py writes from api/fields.yaml, and
    the chart's copies equal them."""
    out = tempfile.mkdtemp(prefix="crds-", dir=tmp)
    gen = os.path.join(out, "generate.py")
    shutil.copy(os.path.join(TOP, "api", "crds", "generate.py"), gen)
    shutil.copy(os.path.join(TOP, "api", "fields.yaml"), os.path.join(tmp, "fields.yaml"))
    p = subprocess.run(["/usr/bin/python3", gen], capture_output=True, text=True)
    check_eq(p.returncode, 0, p.stderr)
    for path in CRDS:
        with open(path) as a, open(os.path.join(out, os.path.basename(path))) as b:
            check(a.read() == b.read(), "%s is not what generate.py writes" % path)
        chart = os.path.join(TOP, "deploy", "helm", "coxswain", "crds", os.path.basename(path))
        with open(path) as a, open(chart) as b:
            check(a.read() == b.read(), "%s differs from the chart's copy" % path)
    # a field without a description stops the generator
    with open(os.path.join(tmp, "fields.yaml")) as f:
        fields = yaml.safe_load(f)
    del fields["route"]["prefixRewrite"]
    with open(os.path.join(tmp, "fields.yaml"), "w") as f:
        yaml.safe_dump(fields, f)
    p = subprocess.run(["/usr/bin/python3", gen], capture_output=True, text=True)
    check_eq(p.returncode, 1)
    check("route: prefixRewrite" in p.stderr, p.stderr)


def apply_crds():
    kubectl("apply", "-f", os.path.join(TOP, "api", "crds"))
    kubectl("wait", "--for=condition=established", "crd", "--all", "--timeout=20s")


def openapi_documents():
    st, idx = ks.request("GET", "/openapi/v3")
    url = idx["paths"]["apis/coxswain.dev/v1"]["serverRelativeURL"]
    check(url.startswith("/openapi/v3/apis/coxswain.dev/v1?hash="), url)
    st, doc = ks.request("GET", url)
    schemas = doc["components"]["schemas"]
    vs = schemas["dev.coxswain.v1.VirtualService"]
    check_eq(vs["x-kubernetes-group-version-kind"],
             [{"group": "coxswain.dev", "kind": "VirtualService", "version": "v1"}])
    check_eq(vs["properties"]["metadata"]["allOf"],
             [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}])
    check("description" in vs["properties"]["spec"]["properties"]["routes"])
    lst = schemas["dev.coxswain.v1.VirtualServiceList"]
    check_eq(lst["properties"]["items"]["items"],
             {"$ref": "#/components/schemas/dev.coxswain.v1.VirtualService"})
    check("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas)
    # the PATCH operations that tell kubectl the server validates fields
    check("/apis/coxswain.dev/v1/namespaces/{namespace}/virtualservices/{name}" in doc["paths"])
    # the index's hash follows the document: a schema change changes it
    st, crd = ks.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                "routetables.coxswain.dev")
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "description"] = "changed"
    st, _ = ks.request("PUT", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                              "routetables.coxswain.dev", crd)
    check_eq(st, 200)
    st, idx2 = ks.request("GET", "/openapi/v3")
    check(idx2["paths"]["apis/coxswain.dev/v1"]["serverRelativeURL"] != url)
    check_eq(idx2["paths"]["api/v1"], idx["paths"]["api/v1"])
    kubectl("apply", "-f", os.path.join(TOP, "api", "crds", "routetables.yaml"))


def kubectl_explain():
    out = kubectl("explain", "virtualservices.coxswain.dev.spec").stdout
    check("KIND:       VirtualService" in out, out)
    check("routes\t<[]Object> -required-" in out, out)
    check("1-1024 routes, tried in order." in out, out)
    out = kubectl("explain", "cxvs.spec.routes.match.prefix").stdout
    check('The path prefix, starting with "/"' in out, out)
    out = kubectl("explain", "upstreams.spec.tls", "--recursive").stdout
    check("caConfigMapRef\t<Object>" in out and "key\t<string>" in out, out)
    out = kubectl("explain", "gateways").stdout
    check("A node group: the proxies" in out, out)
    out = kubectl("explain", "proxysnapshots.spec.truncated").stdout
    check("true when the snapshot did not fit" in out, out)


def endpoints_of_services():
    svc = """apiVersion: v1
kind: Service
metadata: {name: xds, namespace: default, labels: {app: cx}}
spec:
  selector: {app: cx}
  ports: [{name: grpc, port: 18000}]
"""
    kubectl("apply", "-f", "-", stdin=svc)
    out = kubectl("get", "endpoints", "xds").stdout.splitlines()
    check_eq(out[0].split(), ["NAME", "ENDPOINTS", "AGE"])
    check_eq(out[1].split()[:2], ["xds", "<none>"], "no ready replica: empty")
    slices = """apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: xds-a, namespace: default, labels: {kubernetes.io/service-name: xds}}
addressType: IPv4
ports: [{name: grpc, port: 18000, protocol: TCP}]
endpoints:
- addresses: [10.0.0.3]
- addresses: [10.0.0.1]
  conditions: {ready: true}
- addresses: [10.0.0.2]
  conditions: {ready: false}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: xds-b, namespace: default, labels: {kubernetes.io/service-name: xds}}
addressType: IPv4
ports: [{name: grpc, port: 18000, protocol: TCP}]
endpoints:
- addresses: [10.0.1.1, 10.0.1.2]
"""
    kubectl("apply", "-f", "-", stdin=slices)
    out = kubectl("get", "ep", "xds").stdout.splitlines()
    check_eq(out[1].split()[:5], ["xds", "10.0.0.1:18000,10.0.0.3:18000,10.0.1.1:18000", "+",
                                  "1", "more..."])
    st, ep = ks.get("endpoints", "xds", "default")
    check_eq(ep["metadata"]["labels"], {"app": "cx"})
    check_eq(ep["subsets"], [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.3"},
                                            {"ip": "10.0.1.1"}, {"ip": "10.0.1.2"}],
                              "notReadyAddresses": [{"ip": "10.0.0.2"}],
                              "ports": [{"name": "grpc", "port": 18000, "protocol": "TCP"}]}])
    # a watch sees the controller's updates
    rv = ep["metadata"]["resourceVersion"]
    w = ks.watch("/api/v1/namespaces/default/endpoints?watch=1&resourceVersion=" + rv)
    kubectl("delete", "endpointslice", "xds-b")
    ev = w.next()
    check_eq(ev["type"], "MODIFIED")
    check_eq(len(ev["object"]["subsets"][0]["addresses"]), 2)
    kubectl("delete", "service", "xds")
    ev = w.next()
    check_eq((ev["type"], ev["object"]["metadata"]["name"]), ("DELETED", "xds"))
    w.close()
    # a Service without a selector: its Endpoints are the client's
    kubectl("apply", "-f", "-", stdin="""apiVersion: v1
kind: Service
metadata: {name: manual, namespace: default}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: manual, namespace: default}
subsets:
- addresses: [{ip: 192.0.2.7}]
  ports: [{port: 80}]
""")
    out = kubectl("get", "ep", "manual").stdout.splitlines()
    check_eq(out[1].split()[:2], ["manual", "192.0.2.7:80"])


cases = [every_field_described, generated_files_are_current, apply_crds, openapi_documents,
         kubectl_explain, endpoints_of_services]
try:
    for c in cases:
        t.case(c.__name__, c)
    rc = ks.stop()
    t.case("clean shutdown", lambda: check_eq(rc, 0, ks.log()))
finally:
    ks.close()
    shutil.rmtree(tmp, ignore_errors=True)
t.done()
