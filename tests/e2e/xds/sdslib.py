"""What the SDS end-to-end tests (test_xds_sds.py,
test_xds_sds_listeners.py) share: TLS Secrets from tests/data/tls, ADS
requests for a Gateway's node, the Any resources of a response, and a
kubesim world that requires tokens, with a replica on default flags
(--xds-auth required) serving it.
"""
import base64
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "hostile"))

from hostilelib import ads_request, node, pb_fields  # noqa: E402
from kubesim import KubeSim  # noqa: E402
from objects import GROUP, apply_crds  # noqa: E402
from replicas import Replica, wait_ready  # noqa: E402

SDS = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
DATA = os.path.join(TOP, "tests", "data", "tls")
# kubesim's tokens besides the ServiceAccounts' (test_xds_auth.sa_token)
TOKENS = {"replica-token": ("coxswain-replica", ["system:masters"]),
          "admin-token": ("admin", ["system:masters"])}


def read(name):
    with open(os.path.join(DATA, name), "rb") as f:
        return f.read()


def tls_secret(ns, name, crt, key):
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": ns, "name": name},
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": base64.b64encode(read(crt)).decode(),
                     "tls.key": base64.b64encode(read(key)).decode()}}


def req(type_url, gw, names=(), node_id="sds-proxy", **kw):
    return ads_request(type_url, names=names, node_bytes=node(node_id, gateway=gw), **kw)


def any_resources(resp):
    """[(type_url, value bytes)] of a DiscoveryResponse's Any resources."""
    out = []
    for num, wt, v in pb_fields(resp):
        if num == 2 and wt == 2:
            f = {n: x for n, _, x in pb_fields(v)}
            out.append((f.get(1, b"").decode(), f.get(2, b"")))
    return out


class World:
    """kubesim requiring |tokens|, with the CRDs and |namespaces|; fill it
    with secret()/create(), then serve() starts the replica."""

    def __init__(self, tokens, namespaces):
        self.rep = None
        self.ks = KubeSim(allow_all=False, tokens=tokens, kubeconfig_token="replica-token")
        apply_crds(self.req)
        for ns in namespaces:
            self.ok(self.req("POST", "/api/v1/namespaces",
                             {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))

    def secret(self, ns, name, crt, key):
        self.ok(self.req("POST", "/api/v1/namespaces/%s/secrets" % ns,
                         tls_secret(ns, name, crt, key)))

    def create(self, objs):
        """Gateways, Upstreams and VirtualServices."""
        for o in objs:
            plural = {"Gateway": "gateways", "Upstream": "upstreams",
                      "VirtualService": "virtualservices"}[o["kind"]]
            self.ok(self.req("POST", "%s/namespaces/%s/%s" % (
                GROUP, o["metadata"]["namespace"], plural), o))

    def serve(self, name):
        # default flags: --xds-auth required
        self.rep = Replica(self.ks, name, elect=False, xds_auth=None, debounce="100ms")
        wait_ready([self.rep], 30)

    def req(self, method, path, body=None, **kw):
        return self.ks.request(method, path, body, token="admin-token", **kw)

    @staticmethod
    def ok(res):
        if res[0] not in (200, 201):
            raise AssertionError("kubesim: %s %s" % res)
        return res[1]

    def pushes(self, short):
        return self.rep.metric("coxswain_xds_pushes_total", type=short)

    def close(self):
        if self.rep:
            self.rep.stop()
        self.ks.close()
