#!/usr/bin/env python3
"""End to end: who may receive which Gateway over xDS, and who may read the
admin server's debug paths, with real gRPC stacks against `coxswain run` on
kubesim (TokenReview and SubjectAccessReview from its token file and RBAC).

Replica "plain" serves h2c with default flags (authentication required):
ServiceAccount tokens in `authorization: Bearer` (Python grpcio call
metadata, @grpc/grpc-js Metadata), clients without credentials, unknown,
expired and wrong-audience tokens, another namespace's ServiceAccount,
spec.xdsAccess (listed, "*", removed while a stream is open,
allowUnauthenticated), NACKs of refused clients, a TokenReview outage. Its
admin server trusts no peer (--admin-trust-loopback=false), so the
SubjectAccessReview path is what loopback test clients meet.

Replica "tls" serves xDS over TLS with a client CA: SPIFFE client
certificates (grpcio secure channel, grpc-js createSsl), a certificate
without a SPIFFE SAN, one from another CA, another namespace's, and a token
over TLS without a certificate.

Replica "open" runs with --xds-auth none: anyone is served, /readyz?verbose
says so.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "hostile"))

import grpc  # noqa: E402
import grpcxds  # noqa: E402

from hostilelib import LDS, ads_request, node, response_info  # noqa: E402
from kubesim import KubeSim  # noqa: E402
from objects import GROUP, apply_crds, gateway, route, upstream_static, virtual_service  # noqa: E402
from replicas import Replica, parse_metrics, wait_for, wait_ready  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

ADS_PATH = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
NOW = int(time.time())


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def jwt(sub, exp, aud):
    """A token shaped like a projected ServiceAccount token (kubesim knows
    it from its token file; coxswain reads its exp to bound the cache)."""
    h = b64url(json.dumps({"alg": "RS256", "kid": "test"}).encode())
    p = b64url(json.dumps({"sub": sub, "exp": exp, "aud": aud,
                           "iss": "https://kubernetes.default.svc"}).encode())
    return "%s.%s.%s" % (h, p, b64url(os.urandom(16)))


def sa_token(ns, name, aud=("coxswain",), exp=NOW + 3600):
    user = "system:serviceaccount:%s:%s" % (ns, name)
    tok = jwt(user, exp, list(aud))
    return tok, {"user": user, "audiences": list(aud), "expires": exp}


TOKENS = {"replica-token": ("coxswain-replica", ["system:masters"]),
          "admin-token": ("admin", ["system:masters"]),
          "viewer-token": "viewer",
          "nobody-token": "nobody"}
TOK = {}
for key, args in {"a": ("team-a", "edge"), "a2": ("team-a", "other"), "b": ("team-b", "edge"),
                  "b2": ("team-b", "other"), "c": ("team-c", "anyone"),
                  "expired": ("team-a", "edge", ("coxswain",), NOW - 60),
                  "wrongaud": ("team-a", "edge", ("vault",)),
                  "fresh": ("team-a", "late"), "fresh2": ("team-a", "later")}.items():
    tok, entry = sa_token(*args)
    TOK[key] = tok
    TOKENS[tok] = entry
TOK["unknown"] = jwt("system:serviceaccount:team-a:edge", NOW + 3600, ["coxswain"])


# ---- certificates -------------------------------------------------------------------

def openssl(*args, stdin=None):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True, input=stdin,
                   timeout=30)


def make_certs(d):
    def key(name):
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-out", os.path.join(d, name + ".key"))

    def ca(name):
        key(name)
        openssl("req", "-x509", "-new", "-key", os.path.join(d, name + ".key"), "-subj",
                "/CN=" + name, "-days", "2", "-out", os.path.join(d, name + ".crt"))

    def leaf(name, ca_name, ext):
        key(name)
        csr = os.path.join(d, name + ".csr")
        openssl("req", "-new", "-key", os.path.join(d, name + ".key"), "-subj", "/CN=" + name,
                "-out", csr)
        extf = os.path.join(d, name + ".ext")
        with open(extf, "w") as f:
            f.write(ext)
        openssl("x509", "-req", "-in", csr, "-CA", os.path.join(d, ca_name + ".crt"),
                "-CAkey", os.path.join(d, ca_name + ".key"), "-CAcreateserial", "-days", "2",
                "-extfile", extf, "-out", os.path.join(d, name + ".crt"))

    ca("ca")
    ca("other-ca")
    leaf("server", "ca", "subjectAltName=DNS:coxswain.test\nextendedKeyUsage=serverAuth\n")
    client = "extendedKeyUsage=clientAuth\n"
    leaf("spiffe-a", "ca", client + "subjectAltName=URI:spiffe://cluster.local/ns/team-a/sa/edge\n")
    leaf("spiffe-b", "ca", client + "subjectAltName=URI:spiffe://cluster.local/ns/team-b/sa/edge\n")
    leaf("spiffe-otherdomain", "ca",
         client + "subjectAltName=URI:spiffe://example.org/ns/team-a/sa/edge\n")
    leaf("nosan", "ca", client)
    leaf("foreign", "other-ca",
         client + "subjectAltName=URI:spiffe://cluster.local/ns/team-a/sa/edge\n")
    return {n: os.path.join(d, n) for n in ("ca", "server", "spiffe-a", "spiffe-b",
                                           "spiffe-otherdomain", "nosan", "foreign")}


# ---- raw ADS calls -----------------------------------------------------------------

def lds(gw, node_id="auth-proxy", **kw):
    return ads_request(LDS, node_bytes=node(node_id, gateway=gw), **kw)


def call(port, reqs, token=None, tls=None, timeout=8.0, keep=None):
    """One ADS stream with grpcio: sends |reqs|, returns (code, details,
    [responses]) after the first response ("OK") or the server's status.
    |tls|: (ca, client cert prefix or None). |keep|: a dict that receives
    the open call instead of cancelling it (keep["stop"]() ends it)."""
    if tls:
        ca, client = tls
        rd = lambda p: open(p, "rb").read()  # noqa: E731
        creds = grpc.ssl_channel_credentials(
            root_certificates=rd(ca + ".crt"),
            private_key=rd(client + ".key") if client else None,
            certificate_chain=rd(client + ".crt") if client else None)
        ch = grpc.secure_channel("127.0.0.1:%d" % port, creds,
                                 options=[("grpc.ssl_target_name_override", "coxswain.test")])
    else:
        ch = grpc.insecure_channel("127.0.0.1:%d" % port)
    done = threading.Event()
    queue = list(reqs)
    cond = threading.Condition()

    def gen():
        while True:
            with cond:
                while not queue and not done.is_set():
                    cond.wait(0.1)
                if done.is_set() and not queue:
                    return
                r = queue.pop(0)
            yield r

    md = [("authorization", "Bearer " + token)] if token else None
    c = ch.stream_stream(ADS_PATH)(gen(), timeout=timeout if keep is None else 60, metadata=md)
    out = []
    try:
        for resp in c:
            out.append(resp)
            if keep is not None:
                def send(r):
                    with cond:
                        queue.append(r)
                        cond.notify()

                def stop():
                    done.set()
                    c.cancel()
                    ch.close()
                keep.update(call=c, responses=out, send=send, stop=stop)
                return "OK", "", out
            done.set()
            c.cancel()
            return "OK", "", out
        return "OK", "", out
    except grpc.RpcError as e:
        return e.code().name, e.details() or "", out
    finally:
        if keep is None or "call" not in keep:
            done.set()
            ch.close()


def served(port, gw, **kw):
    code, details, resps = call(port, [lds(gw)], **kw)
    check_eq(code, "OK", "served (%s)" % details)
    check(resps, "a response")
    return response_info(resps[0])[2] if resps else []


def refused(port, gw, code, *needles, **kw):
    got, details, resps = call(port, [lds(gw)], **kw)
    check_eq(got, code, "status (details %r)" % details)
    check_eq(resps, [], "nothing served")
    for n in needles:
        check(n in details, "%r in the message %r" % (n, details))
    return details


# ---- grpc-js --------------------------------------------------------------------------

def js_call(port, req, token=None, tls=None):
    args = {"port": port, "request": base64.b64encode(req).decode()}
    if token:
        args["token"] = token
    if tls:
        ca, client = tls
        args["tls"] = {"ca": ca + ".crt", "servername": "coxswain.test"}
        if client:
            args["tls"].update(key=client + ".key", cert=client + ".crt")
    env = dict(os.environ, NODE_PATH=grpcxds.node_path())
    p = subprocess.run(["node", os.path.join(HERE, "ads_call.js"), json.dumps(args)], env=env,
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError("ads_call.js: %s" % p.stderr[-2000:])
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return r["code"], r["details"], [base64.b64decode(x) for x in r["responses"]]


# ---- the world -------------------------------------------------------------------------

class World:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="xds-auth-")
        self.certs = make_certs(self.dir)
        self.ks = KubeSim(allow_all=False, tokens=TOKENS, kubeconfig_token="replica-token")
        apply_crds(self.req)
        for ns in ("coxswain-system", "team-a", "team-b", "team-c", "team-open"):
            self.ok(self.req("POST", "/api/v1/namespaces",
                             {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
        objs = [gateway("team-a", "gw"),
                upstream_static("team-a", "backend", [("127.0.0.1", 50051)]),
                virtual_service("team-a", "a", ["a.example"], [route("/", "backend")]),
                gateway("team-open", "gw"),
                upstream_static("team-open", "backend", [("127.0.0.1", 50051)]),
                virtual_service("team-open", "o", ["open.example"], [route("/", "backend")])]
        objs[3]["spec"]["xdsAccess"] = {"allowUnauthenticated": True}
        for o in objs:
            self.create(o)
        # the viewer may get /debug/*; nobody may not
        self.ok(self.req("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "coxswain-debug"},
            "rules": [{"nonResourceURLs": ["/debug/*", "/v3/discovery:*"], "verbs": ["get"]}]}))
        self.ok(self.req("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "coxswain-debug-viewer"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "coxswain-debug"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io",
                          "name": "viewer"}]}))
        c = self.certs
        self.plain = Replica(self.ks, "plain", elect=False, xds_auth=None,
                             extra=["--admin-trust-loopback=false"])
        self.tls = Replica(self.ks, "tls", elect=False, xds_auth=None, extra=[
            "--xds-tls-cert-file", c["server"] + ".crt", "--xds-tls-key-file",
            c["server"] + ".key", "--xds-tls-client-ca-file", c["ca"] + ".crt"])
        self.open = Replica(self.ks, "open", elect=False)  # --xds-auth none
        self.reps = [self.plain, self.tls, self.open]
        wait_ready(self.reps, 30)

    def req(self, method, path, body=None):
        return self.ks.request(method, path, body, token="admin-token")

    @staticmethod
    def ok(res):
        if res[0] not in (200, 201):
            raise AssertionError("kubesim: %s %s" % res)
        return res[1]

    def create(self, o):
        ns = o["metadata"]["namespace"]
        plural = {"Gateway": "gateways", "Upstream": "upstreams",
                  "VirtualService": "virtualservices"}[o["kind"]]
        return self.ok(self.req("POST", "%s/namespaces/%s/%s" % (GROUP, ns, plural), o))

    def patch_gateway(self, ns, name, spec_patch):
        path = "%s/namespaces/%s/gateways/%s" % (GROUP, ns, name)
        st, out = self.ks.request("PATCH", path, {"spec": spec_patch}, token="admin-token",
                                  ctype="application/merge-patch+json")
        if st != 200:
            raise AssertionError("patch: %s %s" % (st, out))

    def gateway_status(self, ns, name):
        out = self.ok(self.req("GET", "%s/namespaces/%s/gateways/%s" % (GROUP, ns, name)))
        return out.get("status") or {}

    def close(self):
        for r in self.reps:
            r.stop()
        self.ks.close()


def refused_count(rep, reason):
    return rep.metric("coxswain_xds_auth_refused_total", reason=reason)


def main():
    t = Tap()
    w = World()
    P, T = w.plain.xds, w.tls.xds
    c = w.certs

    def case_token_own_namespace():
        names = served(P, "team-a/gw", token=TOK["a"])
        check_eq(names, ["a.example"], "the Gateway's Listener")
        check_eq(served(P, "team-a/gw", token=TOK["a2"]), ["a.example"],
                 "any ServiceAccount of the namespace")
        check(w.plain.metric("coxswain_xds_auth_streams_total", method="token") >= 2,
              "admitted streams counted by method")

    def case_no_credentials():
        before = refused_count(w.plain, "no_credentials")
        refused(P, "team-a/gw", "UNAUTHENTICATED", "unauthenticated client", "team-a/gw",
                "authorization: Bearer", "SPIFFE")
        check_eq(refused_count(w.plain, "no_credentials"), before + 1, "counted")

    def case_bad_tokens():
        before = refused_count(w.plain, "invalid_token")
        refused(P, "team-a/gw", "UNAUTHENTICATED", "TokenReview", "invalid bearer token",
                token=TOK["unknown"])
        refused(P, "team-a/gw", "UNAUTHENTICATED", "expired", token=TOK["expired"])
        refused(P, "team-a/gw", "UNAUTHENTICATED", "audience", token=TOK["wrongaud"])
        # a user that is not a ServiceAccount (the admin's own token)
        refused(P, "team-a/gw", "UNAUTHENTICATED", "not to a ServiceAccount",
                token="admin-token")
        check_eq(refused_count(w.plain, "invalid_token"), before + 4, "counted")

    def case_other_namespace():
        before = refused_count(w.plain, "permission_denied")
        refused(P, "team-a/gw", "PERMISSION_DENIED", "ServiceAccount team-b/edge (token)",
                "Gateway \"team-a/gw\"", token=TOK["b"])
        # a group the snapshot does not have: the namespace still decides
        refused(P, "team-a/nonexistent", "PERMISSION_DENIED", "team-b/edge", token=TOK["b"])
        check_eq(refused_count(w.plain, "permission_denied"), before + 2, "counted")

    def case_xds_access_lists():
        w.patch_gateway("team-a", "gw", {"xdsAccess": {"serviceAccounts": [
            {"namespace": "team-b", "name": "edge"}, {"namespace": "team-c", "name": "*"}]}})
        wait_for(lambda: call(P, [lds("team-a/gw")], token=TOK["b"])[0] == "OK", 15,
                 what="team-b/edge allowed by spec.xdsAccess")
        check_eq(served(P, "team-a/gw", token=TOK["c"]), ["a.example"], "\"*\" of team-c")
        refused(P, "team-a/gw", "PERMISSION_DENIED", "team-b/other", token=TOK["b2"])
        # removed while team-b/edge holds a stream: the stream ends
        keep = {}
        code, _, resps = call(P, [lds("team-a/gw")], token=TOK["b"], keep=keep)
        check_eq(code, "OK", "stream open")
        try:
            w.patch_gateway("team-a", "gw", {"xdsAccess": None})
            ended = {}

            def wait_end():
                try:
                    for _ in keep["call"]:
                        pass
                    ended["code"] = "OK"
                except grpc.RpcError as e:
                    ended["code"], ended["details"] = e.code().name, e.details()
            th = threading.Thread(target=wait_end, daemon=True)
            th.start()
            th.join(15)
            check_eq(ended.get("code"), "PERMISSION_DENIED", "the open stream ended")
            check("team-b/edge" in ended.get("details", ""), "names who: %r" % ended)
        finally:
            keep["stop"]()
        refused(P, "team-a/gw", "PERMISSION_DENIED", token=TOK["b"])

    def case_allow_unauthenticated():
        check_eq(served(P, "team-open/gw"), ["open.example"], "no credentials, opted in")
        check_eq(served(P, "team-open/gw", token=TOK["b"]), ["open.example"],
                 "another namespace's ServiceAccount too")
        check(w.plain.metric("coxswain_xds_auth_streams_total", method="none") >= 1, "counted")

    def case_refused_nack_not_on_status():
        # a legitimate proxy NACKs: its text reaches the Gateway's status ...
        keep = {}
        code, _, resps = call(P, [lds("team-a/gw", node_id="legit")], token=TOK["a"], keep=keep)
        check_eq(code, "OK", "legitimate stream")
        version, nonce, _ = response_info(resps[0])
        keep["send"](lds("team-a/gw", node_id="legit", version=version, nonce=nonce,
                         error=(3, "legit-nack-text")))
        # ... a refused client's NACK, sent with its first request, does not
        code, details, _ = call(P, [lds("team-a/gw", node_id="evil", version=version,
                                        nonce=nonce, error=(3, "evil-nack-text"))],
                                token=TOK["b"])
        check_eq(code, "PERMISSION_DENIED", "refused")
        code, details, _ = call(P, [lds("team-a/gw", node_id="evil2", version=version,
                                        nonce=nonce, error=(3, "evil-nack-text"))])
        check_eq(code, "UNAUTHENTICATED", "refused")

        def conds():
            return json.dumps(w.gateway_status("team-a", "gw").get("conditions", []))
        wait_for(lambda: "legit-nack-text" in conds(), 20, what="the legitimate NACK on status")
        check("evil-nack-text" not in conds(), "no refused client's NACK: %s" % conds())
        check_eq(w.plain.metric("coxswain_xds_nacks_total", group="team-a/gw", type="LDS"), 1,
                 "one NACK counted")
        keep["stop"]()

    def case_tokenreview_outage():
        # a stream established before the outage, and a token reviewed before it
        keep = {}
        code, _, resps = call(P, [lds("team-a/gw", node_id="held")], token=TOK["a"], keep=keep)
        check_eq(code, "OK", "established stream")
        try:
            st, rule = w.ks.request("POST", "/_sim/faults", {
                "verb": "create", "resource": "tokenreviews", "action": "fail", "code": 503})
            check(st in (200, 201), "fault rule %s %s" % (st, rule))
            before = refused_count(w.plain, "token_review_unavailable")
            refused(P, "team-a/gw", "UNAVAILABLE", "cannot check the token", "retry",
                    token=TOK["fresh"])
            check_eq(refused_count(w.plain, "token_review_unavailable"), before + 1, "counted")
            # never cached: it fails again, and never opens
            refused(P, "team-a/gw", "UNAVAILABLE", token=TOK["fresh"])
            # a token reviewed before the outage is still remembered
            check_eq(served(P, "team-a/gw", token=TOK["a"]), ["a.example"], "cached token")
            # the established stream keeps being served: a change reaches it
            version, nonce, _ = response_info(resps[0])
            keep["send"](lds("team-a/gw", node_id="held", version=version, nonce=nonce))
            w.create(virtual_service("team-a", "a-more", ["more.example"],
                                     [route("/", "backend")]))
            got = next(keep["call"])
            check_eq(sorted(response_info(got)[2]), ["a.example", "more.example"],
                     "the change pushed to the established stream")
        finally:
            keep["stop"]()
            w.ks.request("DELETE", "/_sim/faults")
        check_eq(served(P, "team-a/gw", token=TOK["fresh"]), ["a.example", "more.example"],
                 "reviews work again")
        check(w.plain.metric("coxswain_xds_token_reviews_total", outcome="unavailable") >= 2,
              "unavailable reviews counted")
        check(w.plain.metric("coxswain_xds_token_cache_hits_total") >= 1, "cache hits counted")

    def case_grpc_js():
        code, d, resps = js_call(P, lds("team-a/gw"), token=TOK["a"])
        check_eq(code, "OK", "token in grpc-js Metadata (%s)" % d)
        check_eq(response_info(resps[0])[2] if resps else [], ["a.example", "more.example"],
                 "Listeners")
        code, d, _ = js_call(P, lds("team-a/gw"))
        check_eq(code, "UNAUTHENTICATED", "no credentials")
        check("unauthenticated client" in d, d)
        code, d, _ = js_call(P, lds("team-a/gw"), token=TOK["b"])
        check_eq(code, "PERMISSION_DENIED", "another namespace")
        code, d, resps = js_call(T, lds("team-a/gw"), tls=(c["ca"], c["spiffe-a"]))
        check_eq(code, "OK", "SPIFFE certificate with createSsl (%s)" % d)
        code, d, _ = js_call(T, lds("team-a/gw"), tls=(c["ca"], c["nosan"]))
        check_eq(code, "UNAUTHENTICATED", "certificate without SPIFFE ID")

    def case_mtls():
        check_eq(served(T, "team-a/gw", tls=(c["ca"], c["spiffe-a"])),
                 ["a.example", "more.example"], "SPIFFE ID of team-a/edge")
        check(w.tls.metric("coxswain_xds_auth_streams_total", method="certificate") >= 1,
              "counted")
        refused(T, "team-a/gw", "PERMISSION_DENIED", "ServiceAccount team-b/edge (client "
                "certificate)", tls=(c["ca"], c["spiffe-b"]))
        before = refused_count(w.tls, "invalid_certificate")
        refused(T, "team-a/gw", "UNAUTHENTICATED", "no URI SAN", tls=(c["ca"], c["nosan"]))
        refused(T, "team-a/gw", "UNAUTHENTICATED", "spiffe://example.org",
                tls=(c["ca"], c["spiffe-otherdomain"]))
        check_eq(refused_count(w.tls, "invalid_certificate"), before + 2, "counted")
        code, details, resps = call(T, [lds("team-a/gw")], tls=(c["ca"], c["foreign"]))
        check_eq(code, "UNAVAILABLE", "another CA: the handshake fails (%s)" % details)
        check_eq(resps, [], "nothing served")
        # a token over TLS, without a certificate
        check_eq(served(T, "team-a/gw", token=TOK["a"], tls=(c["ca"], None)),
                 ["a.example", "more.example"], "token over TLS")
        refused(T, "team-a/gw", "UNAUTHENTICATED", tls=(c["ca"], None))

    def case_admin():
        port = w.plain.admin
        for path in ("/metrics", "/healthz", "/readyz"):
            st, _ = w.plain.http(path)
            check_eq(st, 200, "%s stays open" % path)
        st, body = w.plain.http("/debug/snapshot")
        check_eq(st, 401, "no token: %s" % body)

        def get(path, token, method="GET", body=None):
            import http.client
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
            hdrs = {"Authorization": "Bearer " + token}
            conn.request(method, path, body=body, headers=hdrs)
            r = conn.getresponse()
            out = r.read().decode(errors="replace")
            conn.close()
            return r.status, out
        st, body = get("/debug/snapshot", "nobody-token")
        check_eq(st, 403, "authenticated, not allowed")
        check("nobody" in body and "/debug/snapshot" in body, body)
        st, body = get("/debug/snapshot", "bogus-token")
        check_eq(st, 403, "unknown token")
        st, body = get("/debug/snapshot", "viewer-token")
        check_eq(st, 200, "SubjectAccessReview allows the viewer: %s" % body[:200])
        st, body = get("/v3/discovery:listeners", "viewer-token", "POST",
                       json.dumps({"node": {"id": "x", "metadata": {
                           "coxswain.dev/gateway": "team-a/gw"}}}))
        check_eq(st, 200, "REST discovery for the viewer")
        check("a.example" in body, body[:300])
        st, _ = get("/v3/discovery:listeners", "nobody-token", "POST", "{}")
        check_eq(st, 403, "REST discovery for nobody")
        m = parse_metrics(w.plain.http("/metrics")[1].decode())
        refused_admin = {dict(lab).get("reason"): v for (n, lab), v in m.items()
                         if n == "coxswain_admin_auth_refused_total"}
        check(refused_admin.get("no_token", 0) >= 1 and refused_admin.get("denied", 0) >= 3,
              "admin refusals counted %r" % refused_admin)
        # the replicas of the other tests trust loopback peers
        st, _ = w.open.http("/debug/snapshot")
        check_eq(st, 200, "loopback trusted by default")

    def case_auth_none():
        check_eq(served(w.open.xds, "team-a/gw"), ["a.example", "more.example"],
                 "--xds-auth none serves anyone")
        st, body = w.open.http("/readyz?verbose")
        body = body.decode()
        check_eq(st, 200, "ready")
        check("xds-authentication ok (warning: --xds-auth none" in body, body)
        st, body = w.plain.http("/readyz?verbose")
        check("[+]xds-authentication ok\n" in body.decode(), body)
        check("--xds-auth none" in w.open.log(), "warned at start")

    try:
        t.case("ServiceAccount token of the Gateway's namespace: served (grpcio metadata)",
               case_token_own_namespace)
        t.case("no credentials: UNAUTHENTICATED, nothing served", case_no_credentials)
        t.case("unknown, expired, wrong-audience, non-ServiceAccount tokens: UNAUTHENTICATED",
               case_bad_tokens)
        t.case("ServiceAccount of another namespace: PERMISSION_DENIED naming who and what",
               case_other_namespace)
        t.case("spec.xdsAccess: listed, \"*\", removed while streaming", case_xds_access_lists)
        t.case("allowUnauthenticated serves clients without credentials",
               case_allow_unauthenticated)
        t.case("NACKs of refused clients never reach the Gateway's status",
               case_refused_nack_not_on_status)
        t.case("TokenReview outage: new streams UNAVAILABLE, established ones served",
               case_tokenreview_outage)
        t.case("@grpc/grpc-js: token metadata, no credentials, SPIFFE certificate", case_grpc_js)
        t.case("mTLS: SPIFFE certificates, no SAN, other trust domain, other CA, token over TLS",
               case_mtls)
        t.case("admin: /debug and REST need SubjectAccessReview; metrics and probes open",
               case_admin)
        t.case("--xds-auth none: served to anyone, warned on /readyz and at start",
               case_auth_none)
    finally:
        w.close()
    t.done()


if __name__ == "__main__":
    main()
