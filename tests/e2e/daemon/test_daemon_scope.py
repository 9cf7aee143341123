"""End to end: one replica (--leader-elect=false) with the Helm chart's scope
flags and TLS on xDS.

- --namespace-selector (the chart's spelling of --watch-namespace-selector):
  only Gateways of labelled namespaces are served; labelling a namespace
  brings its objects in, unlabelling takes them out (the Namespace informer
  re-decides the objects of that namespace), and statuses follow.
- --label-selector (every coxswain.dev kind without its own) and the
  coxswain.dev/ignore label keep objects out.
- --xds-tls-cert-file/--xds-tls-key-file: xDS speaks TLS with ALPN h2;
  /debug/config shows the flags with the key file redacted.
"""
import json
import os
import socket
import ssl
import subprocess
import tempfile
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), "tests", "lib"))
import objects  # noqa: E402
import replicas  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

t = Tap()
ks = api = rep = None
tmp = tempfile.mkdtemp(prefix="cxd-scope-")


def groups():
    snap = json.loads(rep.debug("snapshot"))
    return sorted(g["name"] for g in snap["snapshot"]["groups"])


def hosts():
    return json.dumps(json.loads(rep.debug("snapshot"))["snapshot"])


def make_certs():
    ca_key, ca = os.path.join(tmp, "ca.key"), os.path.join(tmp, "ca.crt")
    key, csr, crt = (os.path.join(tmp, n) for n in ("srv.key", "srv.csr", "srv.crt"))
    ext = os.path.join(tmp, "ext.cnf")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run = lambda *a: subprocess.run(a, check=True, capture_output=True)  # noqa: E731
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
        "-days", "2", "-subj", "/CN=test-ca")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
        "-subj", "/CN=127.0.0.1")
    run("openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
        "-out", crt, "-days", "2", "-extfile", ext)
    return ca, crt, key


def setup():
    global ks, api, rep
    ks = objects.start_kubesim(**objects.AS_1_28)
    api = objects.Api(ks)
    objects.namespace(api, "coxswain-system")
    objects.namespace(api, "a", {"team": "gw"})
    objects.namespace(api, "b")
    objects.namespace(api, "c", {"team": "gw"})
    for ns in ("a", "b", "c"):
        api.create(objects.gateway(ns, "gw"))
        api.create(objects.upstream_static(ns, "up", [("10.0.0.1", 80)]))
        api.create(objects.virtual_service(ns, "vs", ["%s.test" % ns], [objects.route("/", "up")]))
    api.create(objects.virtual_service("a", "hidden", ["hidden.test"], [objects.route("/", "up")],
                                   labels={"tier": "hidden"}))
    api.create(objects.virtual_service("a", "ignored", ["ignored.test"], [objects.route("/", "up")],
                                   labels={"coxswain.dev/ignore": "true"}))
    ca, crt, key = make_certs()
    rep = replicas.Replica(ks, "solo", elect=False,
                      extra=["--namespace-selector=team=gw", "--label-selector=tier!=hidden",
                             "--xds-tls-cert-file=" + crt, "--xds-tls-key-file=" + key])
    rep.ca = ca
    replicas.wait_ready([rep])


def selectors_scope_the_snapshot():
    replicas.wait_for(lambda: groups() == ["a/gw", "c/gw"], 10, what="a and c served")
    h = hosts()
    check("a.test" in h and "c.test" in h, h[:200])
    check("hidden.test" not in h, "label selector")
    check("ignored.test" not in h, "ignore label")
    check(rep.metric("coxswain_filter_events_total", reason="out-of-scope-namespace") >= 3)
    # The label selector and the ignore label are pushed down: those objects
    # never leave the API server (the informer holds a/vs, b/vs, c/vs).
    check_eq(rep.metric("coxswain_informer_objects", resource="virtualservices"), 3)
    # Statuses: written for what is in scope only.
    replicas.wait_for(lambda: (api.get("VirtualService", "a", "vs")[1].get("status") or {})
                 .get("state") == "Accepted", 10, what="a/vs status")
    check_eq(api.get("VirtualService", "b", "vs")[1].get("status"), None, "b/vs untouched")
    check_eq(api.get("VirtualService", "a", "hidden")[1].get("status"), None, "hidden untouched")


def namespace_labels_move_objects():
    st, _ = api.patch("Namespace", None, "b", {"metadata": {"labels": {"team": "gw"}}})
    check_eq(st, 200)
    replicas.wait_for(lambda: groups() == ["a/gw", "b/gw", "c/gw"], 10, what="b joins")
    replicas.wait_for(lambda: (api.get("VirtualService", "b", "vs")[1].get("status") or {})
                 .get("state") == "Accepted", 10, what="b/vs status written")
    st, _ = api.patch("Namespace", None, "c", {"metadata": {"labels": {"team": None}}})
    check_eq(st, 200)
    replicas.wait_for(lambda: groups() == ["a/gw", "b/gw"], 10, what="c leaves")
    check("c.test" not in hosts())
    # Its ProxySnapshot goes too.
    replicas.wait_for(lambda: api.get("ProxySnapshot", "coxswain-system", "c.gw")[0] == 404, 10,
                 what="c.gw ProxySnapshot deleted")
    check_eq(api.get("ProxySnapshot", "coxswain-system", "b.gw")[0], 200)


def xds_tls_and_config():
    ctx = ssl.create_default_context(cafile=rep.ca)
    ctx.set_alpn_protocols(["h2"])
    with socket.create_connection(("127.0.0.1", rep.xds), timeout=5) as s:
        with ctx.wrap_socket(s, server_hostname="127.0.0.1") as tls:
            check_eq(tls.selected_alpn_protocol(), "h2")
    cfg = json.loads(rep.debug("config"))
    check_eq(cfg["namespace-selector"], "team=gw")
    check_eq(cfg["leader-elect"], False)
    check("srv.key" not in json.dumps(cfg), "key file redacted")
    check(cfg["xds-tls-cert-file"].endswith("srv.crt"))


def teardown():
    rc, took = rep.stop()
    check_eq(rc, 0)
    check(took < 5.0)
    ks.close()


t.case("setup: namespaces a, b, c (a and c labelled), one replica with selectors and TLS", setup)
t.case("namespace and label selectors, ignore label: only a and c served", selectors_scope_the_snapshot)
t.case("labelling b brings it in; unlabelling c takes it out", namespace_labels_move_objects)
t.case("xDS over TLS (ALPN h2); /debug/config redacts the key file", xds_tls_and_config)
t.case("teardown", teardown)
if t.failed and rep:
    for line in rep.log().splitlines()[-40:]:
        print("# " + line)
t.done()
