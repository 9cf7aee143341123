"""Kubernetes objects for the tests: the coxswain.dev CRDs applied to a
kubesim, builders of Gateways, VirtualServices, Upstreams, Services and
EndpointSlices, a keep-alive client for fast bursts of writes, and whether
every status converged.

    ks = start_kubesim()                      # KubeSim with the CRDs served
    api = Api(ks)
    namespace(api, "app")
    api.create(virtual_service("app", "vs", ["vs.test"], [route("/", "up")]))
    ok, stuck = status_converged(api, "app")
"""
import http.client
import json
import os

from kubesim import KubeSim
from replicas import TOP, wait_for

GROUP = "/apis/coxswain.dev/v1"


def crd_files():
    """The CRDs (api/crds/*.yaml)."""
    d = os.path.join(TOP, "api", "crds")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".yaml"))


def yaml_docs(path):
    """Documents of a YAML file (kubectl-style), via PyYAML (python3-yaml)."""
    import yaml
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def crd_docs():
    """The coxswain.dev CustomResourceDefinitions of api/crds/*.yaml."""
    return [d for path in crd_files() for d in yaml_docs(path)
            if d.get("kind") == "CustomResourceDefinition"]


def apply_crds(request, ok=(201,), timeout=5):
    """POSTs every CRD through request(method, path, body) -> (status, body),
    accepting the statuses in |ok|, and waits until they are served."""
    for doc in crd_docs():
        st, out = request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", doc)
        if st not in ok:
            raise AssertionError("CRD %s: %s %s" % (doc["metadata"]["name"], st, out))
    wait_for(lambda: request("GET", GROUP + "/proxysnapshots", None)[0] == 200, timeout,
             what="CRDs served")


# How a 1.28 cluster serves the daemon: WatchList off (streaming lists are
# 422, informers list then watch), bookmarks only when a resource moved,
# HTTP/2 over TLS. The daemon suites run so: start_kubesim(**AS_1_28).
AS_1_28 = {"profile": "1.28", "tls": True}


def start_kubesim(args=(), state=False, profile=None, tls=False):
    """A KubeSim (tests/lib/kubesim.py) with the CRDs served."""
    ks = KubeSim(args=list(args), state=state, profile=profile, tls=tls)
    apply_crds(ks.request)
    return ks


# ---- objects -----------------------------------------------------------------------

PLURAL = {"Gateway": "gateways", "VirtualService": "virtualservices", "RouteTable": "routetables",
          "Upstream": "upstreams", "ProxySnapshot": "proxysnapshots"}


def obj_path(kind, ns, name=None, sub=None):
    if kind in PLURAL:
        p = "%s/namespaces/%s/%s" % (GROUP, ns, PLURAL[kind])
    elif kind == "Service":
        p = "/api/v1/namespaces/%s/services" % ns
    elif kind == "EndpointSlice":
        p = "/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices" % ns
    elif kind in ("Secret", "ConfigMap"):
        p = "/api/v1/namespaces/%s/%s" % (ns, kind.lower() + "s")
    elif kind == "Namespace":
        return "/api/v1/namespaces" + ("/" + name if name else "")
    else:
        raise ValueError(kind)
    if name:
        p += "/" + name
    if sub:
        p += "/" + sub
    return p


class Api:
    """A keep-alive HTTP/1.1 client to kubesim (fast bursts of writes), over
    TLS when kubesim serves it."""

    def __init__(self, ks):
        self.ks = ks
        self.conn = None

    def _conn(self):
        if self.conn is None:
            self.conn = self.ks.connection(30)
        return self.conn

    def request(self, method, path, body=None, ctype="application/json"):
        data = None if body is None else (body if isinstance(body, (bytes, str))
                                          else json.dumps(body))
        if isinstance(data, str):
            data = data.encode()
        hdrs = {"Content-Type": ctype} if data is not None else {}
        for attempt in range(2):
            try:
                c = self._conn()
                c.request(method, path, body=data, headers=hdrs)
                r = c.getresponse()
                payload = r.read()
                break
            except (http.client.HTTPException, OSError):
                self.close()
                if attempt:
                    raise
        try:
            return r.status, json.loads(payload)
        except ValueError:
            return r.status, payload.decode(errors="replace")

    def create(self, obj):
        md = obj["metadata"]
        return self.request("POST", obj_path(obj["kind"], md.get("namespace"), None), obj)

    def get(self, kind, ns, name):
        return self.request("GET", obj_path(kind, ns, name))

    def list(self, kind, ns):
        st, out = self.request("GET", obj_path(kind, ns))
        return out.get("items", []) if st == 200 else []

    def patch(self, kind, ns, name, patch, sub=None):
        return self.request("PATCH", obj_path(kind, ns, name, sub), patch,
                            "application/merge-patch+json")

    def delete(self, kind, ns, name):
        return self.request("DELETE", obj_path(kind, ns, name))

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def namespace(api, name, labels=None):
    md = {"name": name}
    if labels:
        md["labels"] = labels
    st, out = api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": md})
    assert st == 201, (st, out)


def gateway(ns, name, mode="proxyless", selector=None):
    spec = {"mode": mode}
    if selector:
        spec["virtualServiceSelector"] = {"matchLabels": selector}
    return {"apiVersion": "coxswain.dev/v1", "kind": "Gateway",
            "metadata": {"namespace": ns, "name": name}, "spec": spec}


def upstream_static(ns, name, hosts):
    return {"apiVersion": "coxswain.dev/v1", "kind": "Upstream",
            "metadata": {"namespace": ns, "name": name},
            "spec": {"static": {"hosts": [{"address": a, "port": p} for a, p in hosts]}}}


def upstream_kube(ns, name, service, port):
    return {"apiVersion": "coxswain.dev/v1", "kind": "Upstream",
            "metadata": {"namespace": ns, "name": name},
            "spec": {"kube": {"service": service, "port": port}}}


def virtual_service(ns, name, domains, routes, labels=None):
    md = {"namespace": ns, "name": name}
    if labels:
        md["labels"] = labels
    return {"apiVersion": "coxswain.dev/v1", "kind": "VirtualService", "metadata": md,
            "spec": {"domains": domains, "routes": routes}}


def route(prefix, upstream, **extra):
    r = {"match": {"prefix": prefix}, "upstream": {"name": upstream}}
    r.update(extra)
    return r


def service(ns, name, ports):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": ns, "name": name},
            "spec": {"ports": [{"name": n, "port": p} for n, p in ports]}}


def endpoint_slice(ns, name, svc, port_name, port, addresses):
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"namespace": ns, "name": name,
                         "labels": {"kubernetes.io/service-name": svc}},
            "addressType": "IPv4", "ports": [{"name": port_name, "port": port}],
            "endpoints": [{"addresses": [a], "conditions": {"ready": True}} for a in addresses]}


# ---- statuses ------------------------------------------------------------------------

def status_converged(api, ns, kinds=("Gateway", "VirtualService", "RouteTable", "Upstream")):
    """(True, []) when every object's status.observedGeneration equals its
    metadata.generation and it has a state; else (False, [stuck objects])."""
    stuck = []
    for k in kinds:
        for o in api.list(k, ns):
            st = o.get("status") or {}
            gen = o["metadata"].get("generation")
            if st.get("observedGeneration") != gen or not st.get("state"):
                stuck.append("%s %s: generation %s, status %s" % (
                    k, o["metadata"]["name"], gen, json.dumps(st)[:200]))
    return (not stuck), stuck
