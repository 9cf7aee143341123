"""kubesim: bearer tokens (401), RBAC authorization (403 with kube-apiserver's
messages; roles, cluster roles, bindings for users, groups and service
accounts; resourceNames; subresources), token rotation (SIGHUP and admin
API), and HTTPS with the generated CA (Python client and kubectl).
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from ksutil import KubeSim, Tap, check, check_eq, cm, golden, raw

t = Tap()
ADMIN = "admin-token"
TOKENS = {
    ADMIN: ("kube-admin", ["system:masters"]),
    "reader-token": "system:serviceaccount:team:reader",
    "writer-token": ("alice", ["writers"]),
    "nobody-token": "nobody",
}
ks = KubeSim(allow_all=False, tokens=TOKENS)


def as_admin(method, path, body=None, **kw):
    return ks.request(method, path, body, token=ADMIN, **kw)


def rbac_setup():
    # the bootstrap policy exists, as on a cluster: cluster-admin for system:masters
    st, crb = as_admin("GET", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/cluster-admin")
    check_eq(st, 200)
    check_eq(crb["subjects"], [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}])
    st, err = ks.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                         {"metadata": {"name": "x"}, "rules": []}, token="nobody-token")
    check_eq(st, 403)
    check_eq(err["message"], 'clusterroles.rbac.authorization.k8s.io is forbidden: User "nobody" cannot create resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope')
    st, _ = as_admin("POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
    check_eq(st, 201)
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    check_eq(as_admin("POST", rbac + "/namespaces/team/roles", {
        "metadata": {"name": "reader"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
                  {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["lock"],
                   "verbs": ["get", "update", "watch", "list"]}]})[0], 201)
    check_eq(as_admin("POST", rbac + "/namespaces/team/rolebindings", {
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "team"}]})[0], 201)
    check_eq(as_admin("POST", rbac + "/clusterroles", {
        "metadata": {"name": "cm-writer"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "update", "get"]},
                  {"apiGroups": [""], "resources": ["services/status"], "verbs": ["update", "patch"]}]})[0], 201)
    check_eq(as_admin("POST", rbac + "/clusterrolebindings", {
        "metadata": {"name": "writers"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cm-writer"},
        "subjects": [{"kind": "Group", "name": "writers"}]})[0], 201)
    check_eq(as_admin("POST", "/api/v1/namespaces/team/configmaps", cm("c", ns="team"))[0], 201)
    check_eq(as_admin("POST", "/apis/coordination.k8s.io/v1/namespaces/team/leases", {
        "metadata": {"name": "lock"}, "spec": {"holderIdentity": "x", "leaseDurationSeconds": 5}})[0], 201)
    check_eq(as_admin("POST", "/apis/coordination.k8s.io/v1/namespaces/team/leases", {
        "metadata": {"name": "other"}, "spec": {"holderIdentity": "x", "leaseDurationSeconds": 5}})[0], 201)


def unauthorized_golden():
    st, txt = raw(ks, "GET", "/api/v1/namespaces", headers={"Authorization": "Bearer wrong"})
    check_eq(st, 401)
    golden("status_401.json", txt)
    st, _ = ks.request("GET", "/api/v1/namespaces", headers={"Authorization": "bearer " + ADMIN})
    check_eq(st, 200, "the scheme is case-insensitive")


def anonymous_is_forbidden():
    st, err = ks.request("GET", "/api/v1/namespaces/team/configmaps")
    check_eq(st, 403)
    check_eq(err["message"], 'configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "team"')
    st, _ = ks.request("GET", "/version")
    check_eq(st, 200, "non-resource URLs stay readable")


def role_binding_for_service_account():
    tok = "reader-token"
    check_eq(ks.request("GET", "/api/v1/namespaces/team/configmaps/c", token=tok)[0], 200)
    check_eq(ks.request("GET", "/api/v1/namespaces/team/configmaps", token=tok)[0], 200)
    st, txt = raw(ks, "GET", "/api/v1/namespaces/default/configmaps/x", headers={"Authorization": "Bearer " + tok})
    check_eq(st, 403)
    golden("status_403.json", txt)
    st, err = ks.request("POST", "/api/v1/namespaces/team/configmaps", cm("new", ns="team"), token=tok)
    check_eq(st, 403)
    check_eq(err["message"], 'configmaps is forbidden: User "system:serviceaccount:team:reader" cannot create resource "configmaps" in API group "" in the namespace "team"')
    w = ks.watch("/api/v1/namespaces/team/configmaps?watch=1&timeoutSeconds=1")
    check_eq(w.status, 403, "anonymous watch refused")
    w.close()


def resource_names():
    tok = "reader-token"
    L = "/apis/coordination.k8s.io/v1/namespaces/team/leases"
    st, lease = ks.request("GET", L + "/lock", token=tok)
    check_eq(st, 200)
    lease["spec"]["holderIdentity"] = "reader"
    check_eq(ks.request("PUT", L + "/lock", lease, token=tok)[0], 200)
    st, err = ks.request("GET", L + "/other", token=tok)
    check_eq(st, 403)
    check_eq(err["message"], 'leases.coordination.k8s.io "other" is forbidden: User "system:serviceaccount:team:reader" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "team"')
    check_eq(err["details"], {"name": "other", "group": "coordination.k8s.io", "kind": "leases"})
    check_eq(ks.request("GET", L, token=tok)[0], 403, "listing all leases is not granted")
    st, lst = ks.request("GET", L + "?fieldSelector=metadata.name%3Dlock", token=tok)
    check_eq(st, 200, "a list of the one named object is")


def cluster_role_for_group_and_subresource():
    tok = "writer-token"
    check_eq(ks.request("POST", "/api/v1/namespaces/default/configmaps", cm("by-alice"), token=tok)[0], 201)
    check_eq(ks.request("DELETE", "/api/v1/namespaces/default/configmaps/by-alice", token=tok)[0], 403)
    svc = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    check_eq(as_admin("POST", "/api/v1/namespaces/default/services", svc)[0], 201)
    st, _ = ks.request("PATCH", "/api/v1/namespaces/default/services/s/status",
                       {"status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}}, token=tok,
                       ctype="application/merge-patch+json")
    check_eq(st, 200, "services/status granted")
    st, err = ks.request("PATCH", "/api/v1/namespaces/default/services/s", {"metadata": {"labels": {"a": "b"}}},
                         token=tok, ctype="application/merge-patch+json")
    check_eq(st, 403, "the main resource is not")
    check(err["message"].endswith('cannot patch resource "services" in API group "" in the namespace "default"'), err["message"])
    st, err = ks.request("GET", "/api/v1/namespaces/default/services/s/status", token=tok)
    check_eq(st, 403)
    check(' cannot get resource "services/status" ' in err["message"], err["message"])


def token_rotation():
    check_eq(ks.request("GET", "/api/v1/namespaces/team/configmaps/c", token="reader-token")[0], 200)
    ks.write_tokens({ADMIN: ("kube-admin", ["system:masters"]), "reader-token-2": "system:serviceaccount:team:reader"})
    ks.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and ks.request("GET", "/version", token="reader-token")[0] != 401:
        time.sleep(0.02)
    check_eq(ks.request("GET", "/api/v1/namespaces/team/configmaps/c", token="reader-token")[0], 401)
    check_eq(ks.request("GET", "/api/v1/namespaces/team/configmaps/c", token="reader-token-2")[0], 200)
    ks.admin("POST", "/tokens", {"tokens": {ADMIN: {"user": "kube-admin", "groups": ["system:masters"]},
                                            "reader-token-3": "system:serviceaccount:team:reader"}})
    check_eq(ks.request("GET", "/api/v1/namespaces/team/configmaps/c", token="reader-token-2")[0], 401)
    check_eq(ks.request("GET", "/api/v1/namespaces/team/configmaps/c", token="reader-token-3")[0], 200)
    out = ks.admin("POST", "/tokens/reload")
    check_eq(out["tokens"], 2, "the file again")
    check_eq(ks.request("GET", "/api/v1/namespaces/team/configmaps/c", token="reader-token-2")[0], 200)


def audit_names_token_users():
    lines = [l for l in ks.audit() if l["verb"] == "create" and l["resource"] == "configmaps"]
    check_eq(lines[-1]["user"], "alice")


def https_with_generated_ca():
    with KubeSim(tls=True) as k2:
        with open(k2.kubeconfig) as f:
            kc = f.read()
        check("server: https://127.0.0.1:%d" % k2.port in kc)
        check("certificate-authority-data: " in kc)
        st, ns = k2.request("GET", "/api/v1/namespaces")
        check_eq(st, 200)
        from kubernetes import client, config
        c = config.new_client_from_config(config_file=k2.kubeconfig)
        names = [n.metadata.name for n in client.CoreV1Api(c).list_namespace().items]
        check("default" in names)
        kubectl = shutil.which("kubectl")
        if kubectl:
            home = tempfile.mkdtemp()
            try:
                p = subprocess.run([kubectl, "get", "ns", "-o", "json"], capture_output=True, text=True,
                                   env=dict(os.environ, KUBECONFIG=k2.kubeconfig, HOME=home), timeout=30)
            finally:
                shutil.rmtree(home, ignore_errors=True)
            check_eq(p.returncode, 0, p.stderr)
            check("kube-system" in p.stdout)
        import http.client
        plain = http.client.HTTPConnection("127.0.0.1", k2.port, timeout=5)
        try:
            plain.request("GET", "/version")
            r = plain.getresponse()
            check(r.status != 200, "plain HTTP is not served on the TLS port")
        except (http.client.HTTPException, OSError):
            pass
        finally:
            plain.close()
        check_eq(k2.stop(), 0)


try:
    for c in [rbac_setup, unauthorized_golden, anonymous_is_forbidden, role_binding_for_service_account,
              resource_names, cluster_role_for_group_and_subresource, token_rotation,
              audit_names_token_users, https_with_generated_ca]:
        t.case(c.__name__, c)
finally:
    rc = ks.close()
t.case("clean shutdown", lambda: check_eq(rc, 0))
t.done()
