"""What the real Helm 3 (v3.17.1, installed by mk/deps.sh) and the chart's
install path need from kubesim, found by running them: Helm's release
storage deletes Secrets through client-go's typed client, whose DELETE body
is a protobuf DeleteOptions; the release commands a user types (install
--wait=false, get, history, upgrade --install, rollback, uninstall,
uninstall --keep-history) work end to end on a small chart, with TLS and
RBAC on; and the PriorityClass the HA profile names can be created with
`kubectl create priorityclass` (a protobuf body) and read back."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "helm"))

from ksutil import KubeSim, Tap, check, check_eq  # noqa: E402
import helmlib  # noqa: E402

t = Tap()


def pb_varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def pb_field(num, payload):
    """A length-delimited field (strings, bytes, messages)."""
    if isinstance(payload, str):
        payload = payload.encode()
    return pb_varint(num << 3 | 2) + pb_varint(len(payload)) + payload


def k8s_envelope(kind, raw, api_version="v1"):
    """"k8s\\0" + runtime.Unknown{typeMeta, raw, contentEncoding, contentType},
    every field present as client-go writes them."""
    return b"k8s\0" + pb_field(1, pb_field(1, api_version) + pb_field(2, kind)) + \
        pb_field(2, raw) + pb_field(3, b"") + pb_field(4, b"")


# The exact bytes Helm 3.17.1 sends to delete a release Secret (captured
# with strace): DeleteOptions with every field empty.
HELM_DELETE_BODY = b"k8s\0\n\x13\n\x02v1\x12\rDeleteOptions\x12\x00\x1a\x00\"\x00"
PB = "application/vnd.kubernetes.protobuf"


def secret(ks, name):
    st, body = ks.create("secrets", {"apiVersion": "v1", "kind": "Secret",
                                     "metadata": {"name": name}, "data": {"a": "Yg=="}},
                         namespace="default")
    check_eq(st, 201, str(body))
    return body


class Sim(KubeSim):
    """kubesim that must exit 0 on SIGTERM (under ASan: no leak)."""

    def __exit__(self, *exc):
        rc = self.close()
        if exc[0] is None:
            check_eq(rc, 0, "kubesim exit status:\n" + self.log()[-2000:])


def case_protobuf_delete_options():
    check_eq(k8s_envelope("DeleteOptions", b""), HELM_DELETE_BODY)
    with Sim() as ks:
        secret(ks, "one")
        st, body = ks.request("DELETE", "/api/v1/namespaces/default/secrets/one",
                              HELM_DELETE_BODY, ctype=PB)
        check_eq(st, 200, str(body))
        check_eq((body["kind"], body["status"]), ("Status", "Success"))
        check_eq(ks.get("secrets", "one", namespace="default")[0], 404)


def case_protobuf_delete_preconditions():
    with Sim() as ks:
        uid = secret(ks, "two")["metadata"]["uid"]
        wrong = k8s_envelope("DeleteOptions", pb_field(2, pb_field(1, "not-" + uid)))
        st, body = ks.request("DELETE", "/api/v1/namespaces/default/secrets/two", wrong,
                              ctype=PB)
        check_eq(st, 409, str(body))
        check("Precondition failed: UID in precondition: not-%s" % uid in body["message"],
              body)
        right = k8s_envelope("DeleteOptions", pb_field(2, pb_field(1, uid)))
        st, body = ks.request("DELETE", "/api/v1/namespaces/default/secrets/two", right,
                              ctype=PB)
        check_eq(st, 200, str(body))


def case_protobuf_delete_malformed():
    with Sim() as ks:
        secret(ks, "three")
        for bad in (b"k8s\0\xff\xff", b"not protobuf"):
            st, body = ks.request("DELETE", "/api/v1/namespaces/default/secrets/three", bad,
                                  ctype=PB)
            check_eq(st, 400, str(body))
            check_eq(body["reason"], "BadRequest")
            check("DeleteOptions" in body["message"], body)
        check_eq(ks.get("secrets", "three", namespace="default")[0], 200)


CHART_YAML = "apiVersion: v2\nname: tiny\nversion: 0.1.0\n"
TEMPLATE = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
data:
  count: {{ .Values.count | quote }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-svc
spec:
  ports:
    - name: http
      port: {{ .Values.port }}
"""


def case_helm_release_commands():
    tmp = tempfile.mkdtemp(prefix="ks-helm-")
    chart = os.path.join(tmp, "tiny")
    os.makedirs(os.path.join(chart, "templates"))
    with open(os.path.join(chart, "Chart.yaml"), "w") as f:
        f.write(CHART_YAML)
    with open(os.path.join(chart, "values.yaml"), "w") as f:
        f.write("count: 1\nport: 80\n")
    with open(os.path.join(chart, "templates", "all.yaml"), "w") as f:
        f.write(TEMPLATE)
    ks = KubeSim(tls=True, allow_all=False, kubeconfig_token="adm",
                 tokens={"adm": ("admin", ["system:masters"])})
    rc = None
    try:
        def helm(*args):
            p = helmlib.helm(*args, "-n", "default", kubeconfig=ks.kubeconfig)
            check_eq(p.returncode, 0, "helm %s: %s" % (" ".join(args), p.stderr))
            return p.stdout

        def cm():
            st, body = ks.get("configmaps", "r1-cm", namespace="default", token="adm")
            return body["data"]["count"] if st == 200 else st

        helm("install", "r1", chart, "--wait=false")
        check_eq(cm(), "1")
        check("count: 1" in helm("get", "all", "r1"))
        helm("upgrade", "--install", "r1", chart, "--set", "count=2")
        check_eq(cm(), "2")
        check_eq(helm("get", "values", "r1", "-o", "json").strip(), '{"count":2}')
        helm("rollback", "r1", "1")
        check_eq(cm(), "1")
        hist = helm("history", "r1", "-o", "json")
        check('"revision":3' in hist and "Rollback to 1" in hist, hist)
        # uninstall: the objects and the release records go
        helm("uninstall", "r1")
        check_eq(cm(), 404)
        check_eq(ks.get("services", "r1-svc", namespace="default", token="adm")[0], 404)
        st, body = ks.request("GET", "/api/v1/namespaces/default/secrets?labelSelector=owner%3Dhelm",
                              token="adm")
        check_eq((st, body["items"]), (200, []))
        # upgrade --install of an absent release installs it; --keep-history
        # keeps its record, marked uninstalled
        helm("upgrade", "--install", "r2", chart, "--set", "port=81")
        helm("uninstall", "r2", "--keep-history")
        check_eq(ks.get("services", "r2-svc", namespace="default", token="adm")[0], 404)
        hist = helm("history", "r2", "-o", "json")
        check('"status":"uninstalled"' in hist, hist)
        check("r2" in helm("list", "--uninstalled", "-q"))
    finally:
        rc = ks.close()
        shutil.rmtree(tmp, ignore_errors=True)
    check_eq(rc, 0, "kubesim exit status")


def case_priorityclass():
    with Sim() as ks:
        def kubectl(*args):
            return subprocess.run(["kubectl", "--kubeconfig", ks.kubeconfig] + list(args),
                                  capture_output=True, text=True, timeout=60)
        p = kubectl("create", "priorityclass", "coxswain-critical", "--value=1000000000",
                    "--description=coxswain control plane")
        check_eq(p.returncode, 0, p.stderr)
        p = kubectl("get", "pc", "coxswain-critical", "-o", "json")
        check_eq(p.returncode, 0, p.stderr)
        pc = json.loads(p.stdout)
        check_eq((pc["apiVersion"], pc["kind"], pc["value"], pc["description"]),
                 ("scheduling.k8s.io/v1", "PriorityClass", 1000000000, "coxswain control plane"))
        check("namespace" not in pc["metadata"], pc["metadata"])
        # negative values (int32 on the wire, sign-extended) survive
        p = kubectl("create", "priorityclass", "low", "--value=-5")
        check_eq(p.returncode, 0, p.stderr)
        st, body = ks.get("priorityclasses", "low", group="scheduling.k8s.io", version="v1")
        check_eq((st, body.get("value")), (200, -5))


t.case("DELETE with Helm's protobuf DeleteOptions body", case_protobuf_delete_options)
t.case("protobuf DeleteOptions preconditions are honoured", case_protobuf_delete_preconditions)
t.case("a malformed protobuf DeleteOptions is a 400 that names it",
       case_protobuf_delete_malformed)
t.case("helm install --wait=false, get, upgrade --install, rollback, history, uninstall, "
       "uninstall --keep-history (TLS, RBAC)", case_helm_release_commands)
t.case("kubectl create priorityclass (protobuf), get pc", case_priorityclass)
t.done()
