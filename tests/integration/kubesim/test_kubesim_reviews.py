"""kubesim: the review APIs with RBAC on: TokenReview from the token file
(audiences, expiry), SubjectAccessReview / LocalSubjectAccessReview /
SelfSubjectAccessReview from RBAC (resources and non-resource URLs), the
rules review, SelfSubjectReview; with raw requests and the official Python
client.
"""
import os
import shutil
import subprocess
import tempfile
import time

from ksutil import KubeSim, Tap, check, check_eq

t = Tap()
PAST = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))
FUTURE_UNIX = int(time.time()) + 3600
TOKENS = """admin-tok,admin,admin-uid,system:masters
reviewer-tok,system:serviceaccount:coxswain-system:coxswain,sa-uid-1
plain-tok,alice,alice-uid,"team-a,team-b"
proxy-tok,system:serviceaccount:team-a:envoy,sa-uid-2,,"aud=coxswain-xds,other",exp=%d
expired-tok,system:serviceaccount:team-a:envoy,sa-uid-2,,aud=coxswain-xds,exp=%s
nobody-tok,nobody
""" % (FUTURE_UNIX, PAST)

ks = KubeSim(allow_all=False, tokens={}, tls=True)  # kubectl sends tokens over TLS only
with open(ks.tokens_file, "w") as f:
    f.write(TOKENS)
ks.admin("POST", "/tokens/reload")
RBAC = "/apis/rbac.authorization.k8s.io/v1"
TR = "/apis/authentication.k8s.io/v1/tokenreviews"
SAR = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


def admin(method, path, body=None):
    st, out = ks.request(method, path, body, token="admin-tok")
    check(st < 300, "%s %s: %s %s" % (method, path, st, out))
    return out


def review(token, spec, path=TR, kind="TokenReview", group="authentication.k8s.io"):
    return ks.request("POST", path, {"apiVersion": group + "/v1", "kind": kind, "spec": spec},
                      token=token)


def setup():
    admin("POST", "/api/v1/namespaces", {"metadata": {"name": "team-a"}})
    admin("POST", "/api/v1/namespaces", {"metadata": {"name": "coxswain-system"}})
    # the xDS server reviews tokens and access, as system:auth-delegator allows
    admin("POST", RBAC + "/clusterrolebindings", {
        "metadata": {"name": "coxswain-auth-delegator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "system:auth-delegator"},
        "subjects": [{"kind": "ServiceAccount", "name": "coxswain",
                      "namespace": "coxswain-system"}]})
    # alice may read leases in team-a; the metrics reader may get /debug/*
    admin("POST", RBAC + "/namespaces/team-a/roles", {
        "metadata": {"name": "lease-reader"},
        "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                   "verbs": ["get", "list"]},
                  {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cfg"],
                   "verbs": ["get"]}]})
    admin("POST", RBAC + "/namespaces/team-a/rolebindings", {
        "metadata": {"name": "alice-leases"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "lease-reader"},
        "subjects": [{"kind": "User", "name": "alice"},
                     {"kind": "ServiceAccount", "name": "envoy"}]})
    admin("POST", RBAC + "/clusterroles", {
        "metadata": {"name": "debug-reader"},
        "rules": [{"nonResourceURLs": ["/debug/*", "/v3/discovery:clusters"],
                   "verbs": ["get"]}]})
    admin("POST", RBAC + "/clusterrolebindings", {
        "metadata": {"name": "debug-readers"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "debug-reader"},
        "subjects": [{"kind": "Group", "name": "team-b"}]})


def token_review():
    # nobody may review tokens without the right
    st, s = review("nobody-tok", {"token": "plain-tok"})
    check_eq(st, 403)
    check_eq(s["message"], 'tokenreviews.authentication.k8s.io is forbidden: User "nobody" '
             'cannot create resource "tokenreviews" in API group "authentication.k8s.io" at '
             'the cluster scope')
    # an audience-agnostic static token: valid for whatever is asked
    st, tr = review("reviewer-tok", {"token": "plain-tok", "audiences": ["coxswain-xds"]})
    check_eq(st, 201)
    check_eq((tr["kind"], tr["apiVersion"]), ("TokenReview", "authentication.k8s.io/v1"))
    check_eq(tr["metadata"], {"creationTimestamp": None})
    check_eq(tr["spec"]["token"], "plain-tok", "the spec is echoed")
    check_eq(tr["status"], {"authenticated": True, "audiences": ["coxswain-xds"],
                            "user": {"username": "alice", "uid": "alice-uid",
                                     "groups": ["team-a", "team-b", "system:authenticated"]}})
    # no audiences asked: the API's own
    st, tr = review("reviewer-tok", {"token": "plain-tok"})
    check_eq(tr["status"]["audiences"], ["https://kubernetes.default.svc.cluster.local"])
    # a projected ServiceAccount token bound to audiences
    st, tr = review("reviewer-tok", {"token": "proxy-tok", "audiences": ["coxswain-xds"]})
    check_eq(tr["status"]["authenticated"], True)
    check_eq(tr["status"]["audiences"], ["coxswain-xds"])
    check_eq(tr["status"]["user"], {
        "username": "system:serviceaccount:team-a:envoy", "uid": "sa-uid-2",
        "groups": ["system:serviceaccounts", "system:serviceaccounts:team-a",
                   "system:authenticated"]})
    st, tr = review("reviewer-tok", {"token": "proxy-tok", "audiences": ["payments"]})
    check_eq(st, 201)
    check_eq(tr["status"], {"user": {}, "error": '[invalid bearer token, token audiences '
                            '["coxswain-xds" "other"] is invalid for the target audiences '
                            '["payments"]]'})
    st, tr = review("reviewer-tok", {"token": "expired-tok", "audiences": ["coxswain-xds"]})
    check_eq(tr["status"], {"user": {}, "error": "[invalid bearer token, service account "
                            "token has expired]"})
    st, tr = review("reviewer-tok", {"token": "who-knows"})
    check_eq(tr["status"], {"user": {}, "error": "invalid bearer token"})
    st, s = review("reviewer-tok", {"token": ""})
    check_eq((st, s["message"]), (400, "token is required for TokenReview in authentication"))
    # create is the only verb
    st, s = ks.request("GET", TR, token="admin-tok")
    check_eq((st, s["reason"]), (405, "MethodNotAllowed"))
    st, disc = ks.request("GET", "/apis/authentication.k8s.io/v1", token="admin-tok")
    tr_res = [r for r in disc["resources"] if r["name"] == "tokenreviews"][0]
    check_eq((tr_res["verbs"], tr_res["namespaced"], tr_res["kind"]),
             (["create"], False, "TokenReview"))


def bearer_audiences_and_expiry():
    # a token bound to other audiences cannot call the API; nor an expired one
    st, _ = ks.request("GET", "/api/v1/namespaces/team-a/configmaps", token="proxy-tok")
    check_eq(st, 401)
    st, _ = ks.request("GET", "/api/v1/namespaces/team-a/configmaps", token="expired-tok")
    check_eq(st, 401)
    # ... unless the API's audiences include one of its own
    proxy = {"user": "system:serviceaccount:team-a:envoy", "uid": "sa-uid-2",
             "audiences": ["coxswain-xds", "other"], "expires": FUTURE_UNIX}
    with KubeSim(allow_all=False, tokens={"proxy-tok": proxy},
                 args=["--api-audiences", "https://kubernetes.default.svc,coxswain-xds"]) as k2:
        st, s = k2.request("GET", "/api/v1/namespaces/team-a/configmaps", token="proxy-tok")
        check_eq(st, 403, s)
        check("system:serviceaccount:team-a:envoy" in s["message"], s)
    # the admin API takes audiences and expiries too
    with KubeSim(allow_all=False) as k3:
        k3.admin("POST", "/tokens", {"tokens": {
            "rev": {"user": "r", "groups": ["system:masters"]},
            "t1": {"user": "u1", "uid": "x", "audiences": ["a"], "expires": FUTURE_UNIX},
            "t2": {"user": "u2", "expires": PAST}}})
        st, tr = k3.request("POST", TR, {"apiVersion": "authentication.k8s.io/v1",
                                         "kind": "TokenReview",
                                         "spec": {"token": "t1", "audiences": ["a"]}},
                            token="rev")
        check_eq((tr["status"]["authenticated"], tr["status"]["user"]["uid"]), (True, "x"))
        st, tr = k3.request("POST", TR, {"apiVersion": "authentication.k8s.io/v1",
                                         "kind": "TokenReview", "spec": {"token": "t2"}},
                            token="rev")
        check("expired" in tr["status"]["error"], tr)


def sar(token, spec, path=SAR, kind="SubjectAccessReview"):
    return review(token, spec, path=path, kind=kind, group="authorization.k8s.io")


def subject_access_review():
    st, r = sar("reviewer-tok", {"user": "alice", "resourceAttributes": {
        "namespace": "team-a", "verb": "get", "group": "coordination.k8s.io",
        "resource": "leases", "name": "lock"}})
    check_eq(st, 201)
    check_eq(r["status"], {"allowed": True, "reason": 'RBAC: allowed by RoleBinding '
                           '"alice-leases/team-a" of Role "lease-reader" to User "alice"'})
    check_eq(r["metadata"], {"creationTimestamp": None})
    # the ServiceAccount subject of the same binding (namespace defaulted)
    st, r = sar("reviewer-tok", {"user": "system:serviceaccount:team-a:envoy",
                                 "groups": ["system:serviceaccounts"],
                                 "resourceAttributes": {"namespace": "team-a", "verb": "list",
                                                        "group": "coordination.k8s.io",
                                                        "resource": "leases"}})
    check_eq(r["status"]["reason"], 'RBAC: allowed by RoleBinding "alice-leases/team-a" of Role '
             '"lease-reader" to ServiceAccount "envoy/team-a"')
    # denied: another verb, another namespace, resourceNames without a name
    for ra in ({"namespace": "team-a", "verb": "update", "group": "coordination.k8s.io",
                "resource": "leases"},
               {"namespace": "default", "verb": "get", "group": "coordination.k8s.io",
                "resource": "leases"},
               {"namespace": "team-a", "verb": "get", "resource": "configmaps"}):
        st, r = sar("reviewer-tok", {"user": "alice", "resourceAttributes": ra})
        check_eq(r["status"], {"allowed": False}, ra)
    st, r = sar("reviewer-tok", {"user": "alice", "resourceAttributes": {
        "namespace": "team-a", "verb": "get", "resource": "configmaps", "name": "cfg"}})
    check_eq(r["status"]["allowed"], True)
    # non-resource URLs, by group, with a prefix rule
    st, r = sar("reviewer-tok", {"user": "alice", "groups": ["team-b"],
                                 "nonResourceAttributes": {"path": "/debug/snapshot",
                                                           "verb": "get"}})
    check_eq(r["status"], {"allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding '
                           '"debug-readers" of ClusterRole "debug-reader" to Group "team-b"'})
    st, r = sar("reviewer-tok", {"user": "alice", "groups": ["team-b"],
                                 "nonResourceAttributes": {"path": "/v3/discovery:clusters",
                                                           "verb": "get"}})
    check_eq(r["status"]["allowed"], True)
    st, r = sar("reviewer-tok", {"user": "alice", "groups": ["team-b"],
                                 "nonResourceAttributes": {"path": "/v3/discovery:listeners",
                                                           "verb": "get"}})
    check_eq(r["status"], {"allowed": False})
    st, r = sar("reviewer-tok", {"user": "alice", "groups": ["team-a"],
                                 "nonResourceAttributes": {"path": "/debug/snapshot",
                                                           "verb": "get"}})
    check_eq(r["status"], {"allowed": False})
    # the bootstrap policy: health for everyone, everything for system:masters
    st, r = sar("reviewer-tok", {"user": "system:anonymous",
                                 "groups": ["system:unauthenticated"],
                                 "nonResourceAttributes": {"path": "/healthz", "verb": "get"}})
    check_eq(r["status"]["reason"], 'RBAC: allowed by ClusterRoleBinding '
             '"system:public-info-viewer" of ClusterRole "system:public-info-viewer" to Group '
             '"system:unauthenticated"')
    st, r = sar("reviewer-tok", {"user": "root", "groups": ["system:masters"],
                                 "resourceAttributes": {"verb": "delete", "resource": "nodes"}})
    check_eq(r["status"], {"allowed": True}, "the privileged group gives no reason")
    # who may ask
    st, s = sar("plain-tok", {"user": "x", "nonResourceAttributes": {"path": "/", "verb": "get"}})
    check_eq(st, 403)


def validation():
    st, s = sar("reviewer-tok", {"user": "alice"})
    check_eq(st, 422)
    check_eq(s["message"], '.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
             'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes '
             'must be specified')
    check_eq(s["details"]["group"], "authorization.k8s.io")
    st, s = sar("reviewer-tok", {"resourceAttributes": {"verb": "get"},
                                 "nonResourceAttributes": {"path": "/x", "verb": "get"}})
    check_eq(s["message"], '.authorization.k8s.io "" is invalid: [spec.nonResourceAttributes: '
             'Invalid value: authorization.NonResourceAttributes{Path:"/x", Verb:"get"}: cannot '
             'be specified in combination with resourceAttributes, spec.user: Invalid value: '
             '"": at least one of user or group must be specified]')
    check_eq([c["field"] for c in s["details"]["causes"]],
             ["spec.nonResourceAttributes", "spec.user"])


def local_and_self_reviews():
    lsar = "/apis/authorization.k8s.io/v1/namespaces/team-a/localsubjectaccessreviews"
    # system:auth-delegator grants subject access reviews, not local ones
    st, s = sar("reviewer-tok", {"user": "alice", "resourceAttributes": {
        "namespace": "team-a", "verb": "get", "resource": "leases"}}, path=lsar,
        kind="LocalSubjectAccessReview")
    check_eq(st, 403)
    check_eq(s["message"], 'localsubjectaccessreviews.authorization.k8s.io is forbidden: User '
             '"system:serviceaccount:coxswain-system:coxswain" cannot create resource '
             '"localsubjectaccessreviews" in API group "authorization.k8s.io" in the namespace '
             '"team-a"')
    st, r = sar("admin-tok", {"user": "alice", "resourceAttributes": {
        "namespace": "team-a", "verb": "get", "group": "coordination.k8s.io",
        "resource": "leases"}}, path=lsar, kind="LocalSubjectAccessReview")
    check_eq((st, r["status"]["allowed"], r["metadata"]["namespace"]), (201, True, "team-a"))
    st, s = sar("admin-tok", {"user": "alice", "resourceAttributes": {
        "namespace": "default", "verb": "get", "resource": "leases"}}, path=lsar,
        kind="LocalSubjectAccessReview")
    check_eq((st, s["message"]), (400, "spec.resourceAttributes.namespace must match namespace: "
                                       "team-a"))
    # any authenticated user may ask about itself (system:basic-user)
    st, r = sar("plain-tok", {"resourceAttributes": {"namespace": "team-a", "verb": "list",
                                                     "group": "coordination.k8s.io",
                                                     "resource": "leases"}},
                path=SSAR, kind="SelfSubjectAccessReview")
    check_eq((st, r["status"]["allowed"]), (201, True))
    st, r = sar("plain-tok", {"nonResourceAttributes": {"path": "/debug/x", "verb": "get"}},
                path=SSAR, kind="SelfSubjectAccessReview")
    check_eq(r["status"]["allowed"], True, "alice is in team-b")
    st, r = sar("nobody-tok", {"resourceAttributes": {"verb": "get", "resource": "pods"}},
                path=SSAR, kind="SelfSubjectAccessReview")
    check_eq((st, r["status"]), (201, {"allowed": False}))
    st, _ = ks.request("POST", SSAR, {"apiVersion": "authorization.k8s.io/v1",
                                      "kind": "SelfSubjectAccessReview",
                                      "spec": {"resourceAttributes": {"verb": "get"}}})
    check_eq(st, 403, "anonymous may not ask")
    # the rules review lists what RBAC gives
    st, r = sar("plain-tok", {"namespace": "team-a"},
                path="/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                kind="SelfSubjectRulesReview")
    check_eq(st, 201)
    res = r["status"]["resourceRules"]
    check({"verbs": ["get", "list"], "apiGroups": ["coordination.k8s.io"],
           "resources": ["leases"]} in res, res)
    check({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"],
           "resourceNames": ["cfg"]} in res, res)
    check({"verbs": ["get"], "nonResourceURLs": ["/debug/*", "/v3/discovery:clusters"]}
          in r["status"]["nonResourceRules"], r["status"]["nonResourceRules"])
    check_eq(r["status"]["incomplete"], False)
    # kubectl auth whoami's SelfSubjectReview
    st, r = review("plain-tok", {}, path="/apis/authentication.k8s.io/v1/selfsubjectreviews",
                   kind="SelfSubjectReview")
    check_eq(r["status"]["userInfo"], {"username": "alice", "uid": "alice-uid",
                                       "groups": ["team-a", "team-b", "system:authenticated"]})


def python_client():
    from kubernetes import client
    cfg = client.Configuration()
    cfg.host = "https://127.0.0.1:%d" % ks.port
    cfg.ssl_ca_cert = ks.ca_file
    cfg.api_key = {"authorization": "Bearer reviewer-tok"}
    api = client.ApiClient(cfg)
    tr = client.AuthenticationV1Api(api).create_token_review(client.V1TokenReview(
        spec=client.V1TokenReviewSpec(token="proxy-tok", audiences=["coxswain-xds"])))
    check_eq((tr.status.authenticated, tr.status.user.username, tr.status.audiences),
             (True, "system:serviceaccount:team-a:envoy", ["coxswain-xds"]))
    r = client.AuthorizationV1Api(api).create_subject_access_review(
        client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
            user="alice", groups=["team-b"],
            non_resource_attributes=client.V1NonResourceAttributes(path="/debug/pprof",
                                                                   verb="get"))))
    check_eq(r.status.allowed, True)
    check("debug-readers" in r.status.reason, r.status.reason)


def kubectl(token, *args):
    env = dict(os.environ, KUBECONFIG=ks.kubeconfig, HOME=tempfile.gettempdir())
    return subprocess.run([shutil.which("kubectl"), "--token", token] + list(args), env=env,
                          capture_output=True, text=True, timeout=30)


def with_kubectl():
    """kubectl auth can-i (SelfSubjectAccessReview, with impersonation as the
    operations guide does it), can-i --list and whoami."""
    sa = "system:serviceaccount:coxswain-system:coxswain"
    p = kubectl("admin-tok", "auth", "can-i", "update", "leases/coxswain", "-n",
                "coxswain-system", "--as=" + sa)
    check_eq((p.returncode, p.stdout.strip()), (1, "no"), p.stderr)
    admin("POST", RBAC + "/namespaces/coxswain-system/roles", {
        "metadata": {"name": "coxswain-leader"},
        "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                   "resourceNames": ["coxswain"], "verbs": ["get", "update"]},
                  {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                   "verbs": ["create"]}]})
    admin("POST", RBAC + "/namespaces/coxswain-system/rolebindings", {
        "metadata": {"name": "coxswain-leader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "coxswain-leader"},
        "subjects": [{"kind": "ServiceAccount", "name": "coxswain",
                      "namespace": "coxswain-system"}]})
    p = kubectl("admin-tok", "auth", "can-i", "update", "leases/coxswain", "-n",
                "coxswain-system", "--as=" + sa)
    check_eq((p.returncode, p.stdout.strip()), (0, "yes"), p.stderr)
    p = kubectl("admin-tok", "auth", "can-i", "update", "leases/other", "-n",
                "coxswain-system", "--as=" + sa)
    check_eq(p.stdout.strip(), "no")
    p = kubectl("admin-tok", "auth", "can-i", "create", "leases", "-n", "coxswain-system",
                "--as=" + sa)
    check_eq(p.stdout.strip(), "yes")
    # non-resource URLs, a user with a group
    p = kubectl("admin-tok", "auth", "can-i", "get", "/debug/snapshot", "--as=alice",
                "--as-group=team-b")
    check_eq(p.stdout.strip(), "yes", p.stderr)
    p = kubectl("admin-tok", "auth", "can-i", "get", "/debug/snapshot", "--as=alice")
    check_eq(p.stdout.strip(), "no", p.stderr)
    # as oneself; impersonating needs the right to
    p = kubectl("plain-tok", "auth", "can-i", "list", "leases", "-n", "team-a")
    check_eq(p.stdout.strip(), "yes", p.stderr)
    p = kubectl("plain-tok", "auth", "can-i", "list", "leases", "-n", "team-a", "--as=bob")
    check(p.returncode != 0, p.stdout)
    check('users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API '
          'group "" at the cluster scope' in p.stderr, p.stderr)
    p = kubectl("plain-tok", "auth", "can-i", "--list", "-n", "team-a")
    check_eq(p.returncode, 0, p.stderr)
    rows = [l.split() for l in p.stdout.splitlines()]
    check(["leases.coordination.k8s.io", "[]", "[]", "[get", "list]"] in rows, p.stdout)
    check(["configmaps", "[]", "[cfg]", "[get]"] in rows, p.stdout)
    p = kubectl("plain-tok", "auth", "whoami", "-o", "json")
    check_eq(p.returncode, 0, p.stderr)
    import json
    who = json.loads(p.stdout)
    check_eq((who["kind"], who["status"]["userInfo"]["username"]), ("SelfSubjectReview", "alice"))
    # impersonating a ServiceAccount gives it its groups
    p = kubectl("admin-tok", "auth", "whoami", "-o", "json", "--as=" + sa)
    who = json.loads(p.stdout)
    check_eq(who["status"]["userInfo"]["groups"],
             ["system:serviceaccounts", "system:serviceaccounts:coxswain-system",
              "system:authenticated"])


cases = [setup, token_review, bearer_audiences_and_expiry, subject_access_review, validation,
         local_and_self_reviews, python_client, with_kubectl]
try:
    for c in cases:
        t.case(c.__name__, c)
    rc = ks.stop()
    t.case("clean shutdown", lambda: check_eq(rc, 0, ks.log()))
finally:
    ks.close()
t.done()
