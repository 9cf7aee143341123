"""kubesim against the real kubectl (the one on the machine), unmodified,
through the kubeconfig kubesim writes: apply, get -o json, get -l, get -w,
label, patch, delete --wait, CRDs then custom resources, leases.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

from ksutil import KubeSim, Tap, check, check_eq, kubectl_binary

t = Tap()
KUBECTL = kubectl_binary()  # kubesim emulates 1.28
ks = KubeSim()
tmp = tempfile.mkdtemp(prefix="kubesim-kubectl-")
env = dict(os.environ, KUBECONFIG=ks.kubeconfig, HOME=tmp)


def kubectl(*args, check_rc=True, stdin=None, timeout=30):
    p = subprocess.run([KUBECTL] + list(args), env=env, input=stdin, capture_output=True,
                       text=True, timeout=timeout)
    if check_rc and p.returncode != 0:
        raise AssertionError("kubectl %s failed (%d):\n%s%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
    return p


def write(name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


CM = """apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  labels:
    app: demo
data:
  mode: "%s"
"""


def apply_configmap():
    p = kubectl("apply", "-f", write("cm.yaml", CM % "a"))
    check_eq(p.stdout.strip(), "configmap/app-config created")
    p = kubectl("apply", "-f", write("cm.yaml", CM % "a"))
    check_eq(p.stdout.strip(), "configmap/app-config unchanged")
    p = kubectl("apply", "-f", write("cm.yaml", CM % "b"))
    check_eq(p.stdout.strip(), "configmap/app-config configured")
    st, o = ks.get("configmaps", "app-config", "default")
    check_eq(o["data"], {"mode": "b"})
    check("kubectl.kubernetes.io/last-applied-configuration" in o["metadata"]["annotations"])


def get_json_and_selector():
    o = json.loads(kubectl("get", "configmap", "app-config", "-o", "json").stdout)
    check_eq(o["kind"], "ConfigMap")
    check_eq(o["data"]["mode"], "b")
    lst = json.loads(kubectl("get", "cm", "-l", "app=demo", "-o", "json").stdout)
    check_eq([i["metadata"]["name"] for i in lst["items"]], ["app-config"])
    lst = json.loads(kubectl("get", "cm", "-l", "app!=demo", "-o", "json").stdout)
    check_eq(lst["items"], [])
    out = kubectl("get", "cm", "-l", "app=demo").stdout
    check("app-config" in out and "NAME" in out, out)
    p = kubectl("get", "cm", "-l", "app in (", check_rc=False)
    check(p.returncode != 0, "bad selector refused")


def label_and_patch():
    p = kubectl("label", "cm", "app-config", "tier=web")
    check_eq(p.stdout.strip(), "configmap/app-config labeled")
    lst = json.loads(kubectl("get", "cm", "-l", "tier=web", "-o", "json").stdout)
    check_eq(len(lst["items"]), 1)
    kubectl("label", "cm", "app-config", "tier-")
    check_eq(json.loads(kubectl("get", "cm", "-l", "tier", "-o", "json").stdout)["items"], [])
    p = kubectl("patch", "cm", "app-config", "-p", '{"data":{"extra":"1"}}')
    check_eq(p.stdout.strip(), "configmap/app-config patched")
    p = kubectl("patch", "cm", "app-config", "--type", "merge", "-p", '{"data":{"extra":null}}')
    p = kubectl("patch", "cm", "app-config", "--type", "json", "-p",
                '[{"op":"add","path":"/data/j","value":"2"}]')
    o = json.loads(kubectl("get", "cm", "app-config", "-o", "json").stdout)
    check_eq(o["data"], {"mode": "b", "j": "2"})
    p = kubectl("patch", "cm", "app-config", "-p", '{"data":{"j":"2"}}')
    check_eq(p.stdout.strip(), "configmap/app-config patched (no change)")


def get_watch():
    proc = subprocess.Popen([KUBECTL, "get", "cm", "app-config", "-w", "-o", "json",
                             "--request-timeout=3s"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    kubectl("patch", "cm", "app-config", "-p", '{"data":{"w":"1"}}')
    out, err = proc.communicate(timeout=20)
    dec = json.JSONDecoder()
    objs, i = [], 0
    while i < len(out):
        while i < len(out) and out[i].isspace():
            i += 1
        if i >= len(out):
            break
        o, i = dec.raw_decode(out, i)
        objs.append(o)
    check(len(objs) >= 2, "initial object then the update: %r %s" % (out[:200], err))
    check_eq(objs[-1]["data"].get("w"), "1")


def delete_wait():
    p = kubectl("delete", "cm", "app-config", "--wait=true", timeout=30)
    check_eq(p.stdout.strip(), 'configmap "app-config" deleted')
    p = kubectl("get", "cm", "app-config", check_rc=False)
    check(p.returncode != 0 and "NotFound" in p.stderr, p.stderr)


CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.kubesim.test
spec:
  group: kubesim.test
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    shortNames: [wd]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer
              color:
                type: string
                default: blue
          status:
            type: object
            properties:
              phase:
                type: string
"""

WIDGET = """apiVersion: kubesim.test/v1
kind: Widget
metadata:
  name: w1
spec:
  size: %d
  unknownField: dropped
"""


def crd_then_custom_resources():
    p = kubectl("apply", "-f", write("crd.yaml", CRD))
    check_eq(p.stdout.strip(), "customresourcedefinition.apiextensions.k8s.io/widgets.kubesim.test created")
    kubectl("wait", "--for=condition=established", "--timeout=10s", "crd/widgets.kubesim.test")
    crd = json.loads(kubectl("get", "crd", "widgets.kubesim.test", "-o", "json").stdout)
    conds = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    check_eq(conds, {"NamesAccepted": "True", "Established": "True"})
    p = kubectl("apply", "-f", write("w.yaml", WIDGET % 1))
    check_eq(p.stdout.strip(), "widget.kubesim.test/w1 created")
    o = json.loads(kubectl("get", "widget", "w1", "-o", "json").stdout)
    check_eq(o["spec"], {"size": 1, "color": "blue"}, "pruned and defaulted")
    check_eq(o["metadata"]["generation"], 1)
    p = kubectl("apply", "-f", write("w.yaml", WIDGET % 2))
    check_eq(p.stdout.strip(), "widget.kubesim.test/w1 configured")
    o = json.loads(kubectl("get", "wd", "w1", "-o", "json").stdout)
    check_eq(o["metadata"]["generation"], 2, "spec change bumps generation")
    p = kubectl("patch", "widget", "w1", "--subresource=status", "--type=merge", "-p",
                '{"status":{"phase":"Ready"},"spec":{"size":99}}')
    o = json.loads(kubectl("get", "widget", "w1", "-o", "json").stdout)
    check_eq(o["status"], {"phase": "Ready"})
    check_eq(o["spec"]["size"], 2, "/status ignores spec")
    check_eq(o["metadata"]["generation"], 2, "/status leaves generation alone")
    p = kubectl("patch", "widget", "w1", "-p", '{"spec":{"size":3}}', check_rc=False)
    print("# kubectl on a strategic patch of a CR: " + p.stderr.strip())
    check(p.returncode != 0 and "application/strategic-merge-patch+json" in p.stderr,
          "strategic merge patch on a custom resource is refused: %s" % p.stderr)
    out = kubectl("get", "widgets").stdout
    check("w1" in out, out)
    p = kubectl("delete", "widget", "w1", "--wait=true")
    check_eq(p.stdout.strip(), 'widget.kubesim.test "w1" deleted')
    kubectl("delete", "crd", "widgets.kubesim.test")
    p = kubectl("get", "widgets", check_rc=False)
    check(p.returncode != 0, "no longer served")


LEASE = """apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: leader
spec:
  holderIdentity: replica-a
  leaseDurationSeconds: 15
  renewTime: "2025-01-01T00:00:00.000000Z"
"""


def leases():
    kubectl("apply", "-f", write("lease.yaml", LEASE))
    out = kubectl("get", "lease").stdout
    check("leader" in out, out)
    o = json.loads(kubectl("get", "lease", "leader", "-o", "json").stdout)
    check_eq(o["spec"]["holderIdentity"], "replica-a")
    p = kubectl("apply", "-f", write("bad.yaml", LEASE.replace("15", "0")), check_rc=False)
    check(p.returncode != 0 and "must be greater than 0" in p.stderr, p.stderr)


def typed_generators_protobuf():
    # kubectl's generators send protobuf bodies; kubesim decodes these kinds
    for args, out in [
            (["create", "namespace", "gen"], "namespace/gen created"),
            (["create", "configmap", "gc", "-n", "gen", "--from-literal=k=v"], "configmap/gc created"),
            (["create", "secret", "generic", "gs", "-n", "gen", "--from-literal=a=b"], "secret/gs created"),
            (["create", "serviceaccount", "gsa", "-n", "gen"], "serviceaccount/gsa created"),
            (["create", "role", "gr", "-n", "gen", "--verb=get,list", "--resource=configmaps", "--resource-name=gc"],
             "role.rbac.authorization.k8s.io/gr created"),
            (["create", "rolebinding", "grb", "-n", "gen", "--role=gr", "--serviceaccount=gen:gsa"],
             "rolebinding.rbac.authorization.k8s.io/grb created")]:
        check_eq(kubectl(*args).stdout.strip(), out)
    check_eq(json.loads(kubectl("get", "cm", "gc", "-n", "gen", "-o", "json").stdout)["data"], {"k": "v"})
    check_eq(json.loads(kubectl("get", "secret", "gs", "-n", "gen", "-o", "json").stdout)["data"], {"a": "Yg=="})
    role = json.loads(kubectl("get", "role", "gr", "-n", "gen", "-o", "json").stdout)
    check_eq(role["rules"], [{"apiGroups": [""], "resourceNames": ["gc"], "resources": ["configmaps"],
                              "verbs": ["get", "list"]}])
    rb = json.loads(kubectl("get", "rolebinding", "grb", "-n", "gen", "-o", "json").stdout)
    check_eq(rb["subjects"], [{"kind": "ServiceAccount", "name": "gsa", "namespace": "gen"}])
    check_eq(rb["roleRef"], {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "gr"})


def discovery_commands():
    out = kubectl("api-resources").stdout
    for r in ("configmaps", "leases", "endpointslices", "customresourcedefinitions"):
        check(r in out, r)
    out = kubectl("version", "-o", "json").stdout
    check_eq(json.loads(out)["serverVersion"]["minor"], "28", "the default release")


try:
    if not KUBECTL:
        t.case("kubectl present", lambda: check(False, "kubectl not on PATH"))
    else:
        for c in [apply_configmap, get_json_and_selector, label_and_patch, get_watch, delete_wait,
                  crd_then_custom_resources, leases, typed_generators_protobuf, discovery_commands]:
            t.case(c.__name__, c)
finally:
    rc = ks.close()
    shutil.rmtree(tmp, ignore_errors=True)
t.case("clean shutdown", lambda: check_eq(rc, 0))
t.done()
