"""End to end: TLS on three replicas of `coxswain run` on kubesim.

- An HTTPS Gateway (certificate from a kubernetes.io/tls Secret) and an
  Upstream with TLS (CA from a ConfigMap, client certificate from a Secret):
  every replica serves the same listener, which names its certificate by
  SDS ("secret:app/www"); REST-JSON of the SDS Secret shows the chain and
  "[redacted]" for the key; over ADS (gRPC) the listener and the cluster
  carry no key and no PEM, and the SDS Secrets they name carry the real
  keys (what Envoy needs).
- Rotation: the Secret gets a new certificate and key -> a new snapshot
  version on every replica, the new certificate in the SDS Secret within
  one debounce window (plus the time to poll), only that Secret rebuilt;
  the Listener keeps its version (Envoy does not drain it).
- Only referenced Secrets and ConfigMaps reach the translator: changes to
  others cost no translation (filter reason "unreferenced"); a reference
  that appears later brings the Secret in, and its removal takes it out.
- Only the watched namespaces, only kubernetes.io/tls: a TLS Secret
  elsewhere, even one that allows the reference, and an Opaque Secret, even
  named by a Gateway, are never read (the Gateway reports them not found),
  and changes to Secrets and ConfigMaps there never reach the
  replicas (no out-of-scope-namespace drop, ordered before a barrier event).
- Redaction: the test private keys (PEM lines, the whole PEM, its base64 as
  stored in Secrets, JSON-escaped) appear on no output surface: the logs of
  every replica (debug level), /debug/snapshot, /debug/config,
  /debug/leader, /metrics, REST-JSON of every type, the ProxySnapshots in
  kubesim (decoded), the objects' statuses, `coxswain translate` (while
  `translate --show-secrets` does show them: the search works).
"""
import base64
import gzip
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "lib"))
import objects  # noqa: E402
import replicas  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

import grpc  # noqa: E402

NS = "app"
DEBOUNCE = 0.3
DATA = os.path.join(replicas.TOP, "tests", "data", "tls")
SAN = replicas.sanitized()

t = Tap()
ks = api = None
reps = []
state = {}


def read(name):
    with open(os.path.join(DATA, name), "rb") as f:
        return f.read()


def b64(name):
    return base64.b64encode(read(name)).decode()


def secret(name, crt, key, ns=NS, labels=None):
    md = {"namespace": ns, "name": name}
    if labels:
        md["labels"] = labels
    return {"apiVersion": "v1", "kind": "Secret", "metadata": md, "type": "kubernetes.io/tls",
            "data": {"tls.crt": b64(crt), "tls.key": b64(key)}}


def configmap(name, data, ns=NS):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": ns, "name": name},
            "data": data}


def tls_gateway(name, secrets, port=8443):
    gw = objects.gateway(NS, name, mode="envoy")
    gw["spec"]["bindPort"] = port
    gw["spec"]["tls"] = {"certificates": [{"secretRef": {"name": s}} for s in secrets]}
    return gw


def rest(r, type_, gateway="%s/gw" % NS):
    body = json.dumps({"node": {"id": "t", "metadata": {"coxswain.dev/gateway": gateway}}})
    st, out = r.http("/v3/discovery:" + type_, method="POST", body=body)
    check_eq(st, 200, "%s REST %s" % (r.name, type_))
    return out


def rest_secret(r, name, gateway="%s/gw" % NS):
    """The SDS Secret |name| from REST-JSON (proto field names)."""
    body = json.dumps({"node": {"id": "t", "metadata": {"coxswain.dev/gateway": gateway}},
                       "resource_names": [name]})
    st, out = r.http("/v3/discovery:secrets", method="POST", body=body)
    check_eq(st, 200, "%s REST secrets" % r.name)
    res = json.loads(out)["resources"]
    check_eq([x["name"] for x in res], [name], "%s: the Secret asked for" % r.name)
    return res[0] if res else {}


def sds_name(ctc):
    return ctc["tls_certificate_sds_secret_configs"][0]["name"]


def listener_chain(r):
    """The certificate chain of the first SNI filter chain (through the SDS
    Secret it names), from REST-JSON."""
    doc = json.loads(rest(r, "listeners"))
    res = doc["resources"][0]
    fc = res["filter_chains"][0]
    ctc = fc["transport_socket"]["typed_config"]["common_tls_context"]
    check("tls_certificates" not in ctc, "no certificate inline in the Listener")
    cert = rest_secret(r, sds_name(ctc))["tls_certificate"]
    return cert["certificate_chain"]["inline_string"], cert["private_key"], fc


# ---- ADS over gRPC (raw protobuf: no generated code needed) ----------------------

def _varint(n):
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def _field(num, b):
    return _varint(num << 3 | 2) + _varint(len(b)) + b


ADS = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"


def ads_fetch(port, type_url, gateway="%s/gw" % NS, names=()):
    """The first DiscoveryResponse (bytes) for |type_url| (wildcard, or
    |names|)."""
    node = _field(1, b"tls-e2e") + _field(2, gateway.encode())  # id, cluster
    req = _field(2, node) + b"".join(_field(3, n.encode()) for n in names) + \
        _field(4, type_url.encode())
    got = threading.Event()

    def reqs():
        yield req
        got.wait(10)

    ch = grpc.insecure_channel("127.0.0.1:%d" % port)
    try:
        call = ch.stream_stream(ADS)(reqs(), timeout=10)
        resp = next(call)
        got.set()
        call.cancel()
        return resp
    finally:
        got.set()
        ch.close()


LDS = "type.googleapis.com/envoy.config.listener.v3.Listener"
CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
SDS = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"


def setup():
    global ks, api, reps
    ks = objects.start_kubesim(["--bookmark-interval", "2s"])
    api = objects.Api(ks)
    objects.namespace(api, "coxswain-system")
    objects.namespace(api, NS)
    objs = [
        secret("www", "www.crt", "www.key"),
        secret("client", "client.crt", "client.key"),
        secret("spare", "shop.crt", "shop.key"),  # referenced by nothing (yet)
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": NS, "name": "opaque"},
         "type": "Opaque", "data": {"tls.key": b64("www.key")}},  # never watched
        configmap("backend-ca", {"ca.crt": read("ca.crt").decode()}),
        configmap("unrelated", {"x": "1"}),
        tls_gateway("gw", ["www"]),
        objects.virtual_service(NS, "www", ["www.example.com", "example.com"],
                            [objects.route("/", "backend")]),
        {"apiVersion": "coxswain.dev/v1", "kind": "Upstream",
         "metadata": {"namespace": NS, "name": "backend"},
         "spec": {"static": {"hosts": [{"address": "10.0.0.7", "port": 8443}]},
                  "tls": {"sni": "backend.internal", "caConfigMapRef": {"name": "backend-ca"},
                          "clientCertificate": {"secretRef": {"name": "client"}}}}},
    ]
    for o in objs:
        st, out = api.create(o)
        check_eq(st, 201, "create %s %s: %s" % (o["kind"], o["metadata"]["name"], out))
    reps = [replicas.Replica(ks, "r%d" % i, debounce="%dms" % (DEBOUNCE * 1000),
                        extra=["--log-level", "debug", "--watch-namespaces=%s,coxswain-system" % NS])
            for i in range(3)]
    replicas.wait_ready(reps, 30)
    leader = replicas.wait_leader(reps, 20)
    replicas.wait_for(lambda: replicas.writers_idle(leader), 20, what="leader's writers idle")
    ok, stuck = objects.status_converged(api, NS)
    check(ok, str(stuck[:3]))


def case_served_everywhere():
    for kind, name in (("Gateway", "gw"), ("Upstream", "backend"), ("VirtualService", "www")):
        st, o = api.get(kind, NS, name)
        check_eq(o["status"]["state"], "Accepted", "%s %s: %s" % (kind, name, o["status"]))
    www = read("www.crt").decode()
    for r in reps:
        chain, key, fc = listener_chain(r)
        check_eq(chain, www, "%s: the chain of Secret www" % r.name)
        check_eq(key, {"inline_bytes": "[redacted]"}, "%s: the key is redacted" % r.name)
        check_eq(sorted(fc["filter_chain_match"]["server_names"]),
                 ["example.com", "www.example.com"])
        # only the two referenced Secrets and the one ConfigMap are stored
        check_eq(r.metric("coxswain_store_objects", kind="Secret"), 2, r.name)
        check_eq(r.metric("coxswain_store_objects", kind="ConfigMap"), 1, r.name)
        # notAfter of the certificates in use (2124-01-01), for alerts
        for s in ("www", "client"):
            check_eq(r.metric("coxswain_tls_certificate_expiry_timestamp_seconds",
                              secret="%s/%s" % (NS, s)), 4859740800.0, "%s %s" % (r.name, s))
        check_eq(r.metric("coxswain_tls_certificate_expiry_timestamp_seconds",
                          secret="%s/spare" % NS), 0, "unreferenced: no series")
    docs = [r.debug("snapshot") for r in reps]
    check(docs[0] == docs[1] == docs[2], "identical /debug/snapshot on every replica")
    # over ADS (a standby): no key, no PEM in the Listener and the Cluster;
    # the real keys, for Envoy, in the SDS Secrets they name
    standby = [r for r in reps if not r.leader_info()["leading"]][0]
    lds = ads_fetch(standby.xds, LDS)
    check(b"secret:app/www" in lds and b"-----BEGIN" not in lds,
          "the listener over ADS names its certificate, holds none")
    cds = ads_fetch(standby.xds, CDS)
    check(b"secret:app/client" in cds and b"configmap:app/backend-ca/ca.crt" in cds and
          b"-----BEGIN" not in cds, "the cluster names its client certificate and CA")
    sds = ads_fetch(standby.xds, SDS, names=["secret:app/www", "secret:app/client",
                                              "configmap:app/backend-ca/ca.crt"])
    check(read("www.key") in sds and read("client.key") in sds and read("ca.crt") in sds,
          "the SDS Secrets over ADS carry the keys and the CA")
    state["version"] = json.loads(docs[0])["version"]
    g = json.loads(docs[0])["snapshot"]["groups"][0]
    state["lds"], state["sds"] = g["listeners"]["version"], g["secrets"]["version"]


def translations(r):
    return r.metric("coxswain_translations_total")


def case_rotation():
    before = {r.name: translations(r) for r in reps}
    new = read("www-rotated.crt").decode()
    t0 = time.monotonic()
    st, out = api.patch("Secret", NS, "www", {"data": {"tls.crt": b64("www-rotated.crt"),
                                                       "tls.key": b64("www-rotated.key")}})
    check_eq(st, 200, str(out))
    seen = {}

    def rotated():
        for r in reps:
            if r.name not in seen and listener_chain(r)[0] == new:
                seen[r.name] = time.monotonic() - t0
        return len(seen) == len(reps)
    replicas.wait_for(rotated, 10, step=0.01, what="the rotated certificate on every replica")
    worst = max(seen.values())
    print("# rotation: new certificate in the SDS Secret after %s (debounce %.0f ms)" % (
        ", ".join("%s %.0f ms" % (n, v * 1000) for n, v in sorted(seen.items())),
        DEBOUNCE * 1000))
    # one debounce window, plus the translation and our polling; generous
    # under sanitizers and on a loaded machine
    check(worst < DEBOUNCE + (3.0 if SAN else 1.0), "worst %.3f s" % worst)
    docs = [json.loads(r.debug("snapshot")) for r in reps]
    versions = {d["version"] for d in docs}
    check_eq(len(versions), 1, "one version on every replica")
    check(state["version"] not in versions, "a new snapshot version")
    for d in docs:
        g = d["snapshot"]["groups"][0]
        check_eq(g["listeners"]["version"], state["lds"], "the Listener's version stays")
        check(g["secrets"]["version"] != state["sds"], "the Secrets' version changes")
    standby = [r for r in reps if not r.leader_info()["leading"]][0]
    sds = ads_fetch(standby.xds, SDS, names=["secret:app/www"])
    check(read("www-rotated.key") in sds and read("www.key") not in sds,
          "the rotated key over ADS, the old one gone")
    for r in reps:
        n = translations(r) - before[r.name]
        check(1 <= n <= 2, "%s: %d translations for one rotation" % (r.name, n))
        if n == 1:  # the pass that rotated is the last one: its counts
            check_eq(r.metric("coxswain_translation_resources", outcome="built"), 1,
                     "%s: only the SDS Secret rebuilt" % r.name)


def case_unreferenced_cost_nothing():
    time.sleep(DEBOUNCE * 2)
    before = {r.name: (translations(r), r.metric("coxswain_filter_events_total",
                                                reason="unreferenced")) for r in reps}
    for i in range(5):
        check_eq(api.patch("ConfigMap", NS, "unrelated", {"data": {"x": str(i + 2)}})[0], 200)
        check_eq(api.patch("Secret", NS, "spare", {"metadata": {"labels": {"n": str(i)}}})[0],
                 200)
    check_eq(api.patch("Secret", NS, "opaque", {"metadata": {"labels": {"n": "1"}}})[0], 200)

    def counted():
        return all(r.metric("coxswain_filter_events_total", reason="unreferenced") -
                   before[r.name][1] >= 10 for r in reps)
    replicas.wait_for(counted, 10, what="10 unreferenced events on every replica")
    time.sleep(DEBOUNCE * 3)
    for r in reps:
        check_eq(translations(r) - before[r.name][0], 0, "%s translations" % r.name)
        # the Opaque Secret never left the API server (field selector)
        check_eq(r.metric("coxswain_filter_events_total", kind="Secret",
                          reason="field-selector-mismatch"), 0, r.name)


def case_reference_brings_it_in():
    st, _ = api.create(tls_gateway("gw2", ["spare"], port=9443))
    check_eq(st, 201)
    replicas.wait_for(lambda: all(r.metric("coxswain_store_objects", kind="Secret") == 3
                             for r in reps), 10, what="Secret spare stored on every replica")
    doc = json.loads(rest(reps[1], "listeners", gateway="%s/gw2" % NS))
    name = sds_name(doc["resources"][0]["default_filter_chain"]["transport_socket"][
        "typed_config"]["common_tls_context"])
    check_eq(name, "secret:%s/spare" % NS)
    check_eq(rest_secret(reps[1], name, gateway="%s/gw2" % NS)["tls_certificate"][
        "certificate_chain"]["inline_string"], read("shop.crt").decode())
    check_eq(reps[2].metric("coxswain_tls_certificate_expiry_timestamp_seconds",
                            secret="%s/spare" % NS), 4859740800.0)
    check_eq(api.delete("Gateway", NS, "gw2")[0], 200)
    replicas.wait_for(lambda: all(r.metric("coxswain_store_objects", kind="Secret") == 2
                             for r in reps), 10, what="Secret spare out of every store")
    for r in reps:
        check_eq(r.metric("coxswain_tls_certificate_expiry_timestamp_seconds",
                          secret="%s/spare" % NS), 0, "%s: its series hidden" % r.name)


def case_watched_namespaces_only():
    def drops(r, kind, reason):
        return r.metric("coxswain_filter_events_total", kind=kind, reason=reason)

    before = {r.name: {k: drops(r, k, "unreferenced") for k in ("Secret", "ConfigMap")}
              for r in reps}
    objects.namespace(api, "elsewhere")
    shared = secret("shared", "shop.crt", "shop.key", ns="elsewhere")
    shared["metadata"]["annotations"] = {"coxswain.dev/allow-references-from": NS}
    check_eq(api.create(shared)[0], 201, "Secret elsewhere/shared")
    check_eq(api.create(configmap("ca", {"ca.crt": read("ca.crt").decode()}, ns="elsewhere"))[0],
             201, "ConfigMap elsewhere/ca")
    gw3 = tls_gateway("gw3", [], port=9444)
    gw3["spec"]["tls"]["certificates"] = [{"secretRef": {"name": "shared",
                                                         "namespace": "elsewhere"}},
                                          {"secretRef": {"name": "opaque"}}]
    check_eq(api.create(gw3)[0], 201, "Gateway gw3")
    try:
        def accepted_condition():
            st, o = api.get("Gateway", NS, "gw3")
            for c in (o.get("status") or {}).get("conditions", []) if st == 200 else []:
                if c["type"] == "Accepted" and c["reason"] != "Pending":
                    return dict(c, state=o["status"]["state"])
            return None
        # even allowed, a Secret outside the watched namespaces is never
        # read; nor is an Opaque one, even named (the field selector)
        c = replicas.wait_for(accepted_condition, 10, what="gw3's Accepted condition")
        check_eq((c["state"], c["reason"]), ("Rejected", "SecretNotFound"), str(c))
        check("Secret elsewhere/shared not found" in c["message"] and
              "Secret %s/opaque not found" % NS in c["message"], c["message"])
        # Changes there, then in a watched namespace (a barrier: had the
        # replicas watched the whole cluster, one stream per kind would have
        # brought the first before the second, and the filters would have
        # dropped it as out-of-scope-namespace).
        check_eq(api.patch("Secret", "elsewhere", "shared",
                           {"metadata": {"labels": {"n": "1"}}})[0], 200)
        check_eq(api.patch("ConfigMap", "elsewhere", "ca", {"data": {"x": "1"}})[0], 200)
        check_eq(api.patch("Secret", NS, "spare", {"metadata": {"labels": {"n": "b"}}})[0], 200)
        check_eq(api.patch("ConfigMap", NS, "unrelated", {"data": {"x": "b"}})[0], 200)
        replicas.wait_for(lambda: all(drops(r, k, "unreferenced") > before[r.name][k]
                                 for r in reps for k in ("Secret", "ConfigMap")), 10,
                     what="the barrier events on every replica")
        for r in reps:
            for k in ("Secret", "ConfigMap"):
                check_eq(drops(r, k, "out-of-scope-namespace"), 0,
                         "%s: no %s from outside the watched namespaces" % (r.name, k))
            check_eq(r.metric("coxswain_store_objects", kind="Secret"), 2,
                     "%s: not stored" % r.name)
    finally:
        check_eq(api.delete("Gateway", NS, "gw3")[0], 200)


# ---- redaction ------------------------------------------------------------------------

def key_forms(name):
    pem = read(name)
    forms = {pem, base64.b64encode(pem), json.dumps(pem.decode()).encode()[1:-1]}
    for line in pem.decode().splitlines():
        if len(line) >= 40 and not line.startswith("-----"):
            forms.add(line.encode())
    return forms


KEYS = ["www.key", "www-rotated.key", "client.key", "shop.key"]


def leaks(label, data, found):
    for k in KEYS:
        for f in key_forms(k):
            if f in data:
                found.append("%s holds %s (%r...)" % (label, k, f[:24]))
                break


def case_redaction():
    found = []
    surfaces = {}
    for r in reps:
        for what in ("snapshot", "config", "leader"):
            surfaces["%s /debug/%s" % (r.name, what)] = r.debug(what)
        surfaces["%s /metrics" % r.name] = r.metrics_text().encode()
        for ty in ("listeners", "routes", "clusters", "endpoints"):
            surfaces["%s REST %s" % (r.name, ty)] = rest(r, ty)
        surfaces["%s REST secrets" % r.name] = json.dumps(
            rest_secret(r, "secret:%s/www" % NS)).encode()
    for r in reps:
        rc, _ = r.stop()  # logs complete (shutdown lines too); leaks fail it under ASan
        check_eq(rc, 0, "%s exit status" % r.name)
    for r in reps:
        surfaces["%s log" % r.name] = r.log().encode()
        check(b"www" in surfaces["%s log" % r.name], "%s logged something" % r.name)
    snaps = api.list("ProxySnapshot", "coxswain-system")
    check(snaps, "ProxySnapshots were published")
    for p in snaps:
        raw = json.dumps(p).encode()
        doc = gzip.decompress(base64.b64decode(p["spec"]["snapshot"]))
        check(b"[redacted]" in doc and read("www-rotated.crt").decode().encode()[30:60] in
              doc.replace(b"\\n", b"\n"), "ProxySnapshot %s holds the Secrets" %
              p["metadata"]["name"])
        surfaces["ProxySnapshot %s" % p["metadata"]["name"]] = raw + doc
    for kind in ("Gateway", "VirtualService", "Upstream"):
        for o in api.list(kind, NS):
            surfaces["status of %s %s" % (kind, o["metadata"]["name"])] = \
                json.dumps(o.get("status")).encode()
    # coxswain translate of the same objects, read back from kubesim
    objs = []
    for kind in ("Gateway", "VirtualService", "Upstream", "Secret", "ConfigMap"):
        objs += [dict(o, apiVersion="v1" if kind in ("Secret", "ConfigMap")
                      else "coxswain.dev/v1", kind=kind) for o in api.list(kind, NS)]
    path = os.path.join(reps[0].dir, "objects.json")
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, f)
    p = subprocess.run([replicas.coxswain(), "translate", "-f", path], capture_output=True, timeout=60)
    check_eq(p.returncode, 0, p.stderr.decode())
    check(b"BEGIN CERTIFICATE" in p.stdout, "translate shows the certificates")
    surfaces["coxswain translate"] = p.stdout + p.stderr
    for label, data in surfaces.items():
        leaks(label, data, found)
    check(not found, "private keys found:\n  " + "\n  ".join(found))
    print("# searched %d surfaces (%d bytes) for %d keys in %d forms each" % (
        len(surfaces), sum(len(v) for v in surfaces.values()), len(KEYS),
        len(key_forms("www.key"))))
    # the search would have found them: --show-secrets shows the keys
    p = subprocess.run([replicas.coxswain(), "translate", "--show-secrets", "-f", path],
                       capture_output=True, timeout=60)
    shown = []
    leaks("translate --show-secrets", p.stdout, shown)
    check(len(shown) >= 1, "--show-secrets shows the keys: %s" % shown)


try:
    setup()
    t.case("HTTPS Gateway and TLS Upstream: served alike everywhere, keys only over ADS",
           case_served_everywhere)
    t.case("Secret rotation: new certificate in the Listener within one debounce window",
           case_rotation)
    t.case("unreferenced Secrets and ConfigMaps: zero translations", case_unreferenced_cost_nothing)
    t.case("a new reference brings a Secret into the store, its removal takes it out",
           case_reference_brings_it_in)
    t.case("Secrets and ConfigMaps read only in the watched namespaces",
           case_watched_namespaces_only)
    t.case("redaction: no private key on any output surface", case_redaction)
finally:
    for r in reps:
        r.kill()
    if ks:
        ks.close()
t.done()
