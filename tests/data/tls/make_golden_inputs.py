#!/usr/bin/env python3
"""Writes the input.yaml of the TLS golden cases (tests/data/translator/tls_*)
from the templates below, with the test certificates of this directory
(gen.sh) filled in: {b64:www.crt} is the file base64-encoded (Secret data),
{pem:ca.crt} the file as a YAML block (ConfigMap data). Run it after gen.sh;
then COXSWAIN_GOLDEN_UPDATE=1 build/tests/unit/translator/test_xlate_golden
writes the expected outputs (review them)."""
import base64
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "translator")


def fill(text):
    def b64(m):
        with open(os.path.join(HERE, m.group(1)), "rb") as f:
            return base64.b64encode(f.read()).decode()

    def pem(m):
        indent = " " * int(m.group(1))
        with open(os.path.join(HERE, m.group(2))) as f:
            body = f.read()
        return "|\n" + "".join(indent + line + "\n" for line in body.splitlines()).rstrip("\n")
    text = re.sub(r"\{b64:([\w.-]+)\}", b64, text)
    return re.sub(r"\{pem(\d+):([\w.-]+)\}", pem, text)


def secret(name, crt, key, ns="default", extra=""):
    data = ""
    if crt:
        data += "  tls.crt: {b64:%s}\n" % crt
    if key:
        data += "  tls.key: {b64:%s}\n" % key
    return ("apiVersion: v1\nkind: Secret\nmetadata: {name: %s, namespace: %s%s}\n"
            "type: kubernetes.io/tls\ndata:\n%s" % (name, ns, extra, data or "  {}\n"))


def ca_map(name, file="ca.crt", key="ca.crt", ns="default"):
    return ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\n"
            "data:\n  %s: {pem4:%s}\n" % (name, ns, key, file))


def vs(name, domains, upstream="web", created="2024-01-01T00:00:00Z", ns="default"):
    return ("apiVersion: coxswain.dev/v1\nkind: VirtualService\n"
            "metadata: {name: %s, namespace: %s, creationTimestamp: \"%s\"}\n"
            "spec:\n  domains: [%s]\n  routes:\n  - upstream: {name: %s}\n"
            % (name, ns, created, ", ".join("'%s'" % d for d in domains), upstream))


WEB = ("apiVersion: coxswain.dev/v1\nkind: Upstream\nmetadata: {name: web, namespace: default}\n"
       "spec:\n  static:\n    hosts: [{address: 10.0.0.1, port: 8080}]\n")


def gateway(name, tls, mode="envoy", port=8443, ns="default"):
    return ("apiVersion: coxswain.dev/v1\nkind: Gateway\nmetadata: {name: %s, namespace: %s}\n"
            "spec:\n  mode: %s\n%s  tls:\n%s" % (
                name, ns, mode, "  bindPort: %d\n" % port if mode == "envoy" else "", tls))


CASES = {
    # two certificates chosen by SNI; a domain neither covers; a catch-all
    "tls_sni_two_certs": [
        gateway("gw", "    certificates:\n    - secretRef: {name: www}\n"
                "    - secretRef: {name: shop}\n"),
        secret("www", "www.crt", "www.key"),
        secret("shop", "shop.crt", "shop.key"),
        vs("www", ["www.example.com", "example.com:8443"]),
        vs("shop", ["a.shop.example.com", "*.shop.example.com"]),
        vs("api", ["api.example.com", "www.shop.example.com:8443"]),
        vs("fallback", ["*"]),
        WEB,
    ],
    # client certificates verified with a CA from a ConfigMap; versions, ALPN
    "tls_client_validation": [
        gateway("gw", "    certificates:\n    - secretRef: {name: www}\n"
                "    minVersion: TLSv1.3\n    alpnProtocols: [http/1.1]\n"
                "    clientValidation:\n      caConfigMapRef: {name: clients}\n"),
        gateway("optional", "    certificates:\n    - secretRef: {name: www}\n"
                "    clientValidation:\n      caConfigMapRef: {name: clients, key: bundle.pem}\n"
                "      optional: true\n", port=9443),
        secret("www", "www.crt", "www.key"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: clients, namespace: default}\n"
        "data:\n  ca.crt: {pem4:ca.crt}\n  bundle.pem: {pem4:chain.crt}\n",
        vs("www", ["www.example.com"]),
        WEB,
    ],
    # upstream TLS: CA from a ConfigMap, SNI (its name is verified), explicit
    # subjectAltNames, no verification at all; a proxyless Gateway ignores it
    "tls_upstream_ca_sni": [
        "apiVersion: coxswain.dev/v1\nkind: Gateway\nmetadata: {name: gw, namespace: default}\n"
        "spec: {bindPort: 8080}\n",
        "apiVersion: coxswain.dev/v1\nkind: Gateway\nmetadata: {name: mesh, namespace: default}\n"
        "spec: {mode: proxyless}\n",
        ca_map("backend-ca"),
        vs("app", ["app.example.com"], upstream="backend"),
        vs("legacy", ["legacy.example.com"], upstream="legacy"),
        "apiVersion: coxswain.dev/v1\nkind: Upstream\nmetadata: {name: backend, namespace: default}\n"
        "spec:\n  static:\n    hosts: [{address: 10.0.0.7, port: 8443}]\n"
        "  tls:\n    sni: backend.internal\n    caConfigMapRef: {name: backend-ca}\n"
        "    minVersion: TLSv1.2\n",
        "apiVersion: coxswain.dev/v1\nkind: Upstream\nmetadata: {name: legacy, namespace: default}\n"
        "spec:\n  static:\n    hosts: [{address: 10.0.0.8, port: 443}]\n"
        "  tls:\n    sni: legacy.internal\n    insecureSkipVerify: true\n",
        "apiVersion: coxswain.dev/v1\nkind: Upstream\nmetadata: {name: pinned, namespace: default}\n"
        "spec:\n  static:\n    hosts: [{address: 10.0.0.9, port: 443}]\n"
        "  tls:\n    caConfigMapRef: {name: backend-ca}\n"
        "    subjectAltNames: [backend.internal, backend-2.internal]\n",
        vs("pinned", ["pinned.example.com"], upstream="pinned"),
    ],
    # mTLS to a backend: a client certificate from a Secret
    "tls_upstream_mtls": [
        "apiVersion: coxswain.dev/v1\nkind: Gateway\nmetadata: {name: gw, namespace: default}\n"
        "spec: {bindPort: 8080}\n",
        ca_map("backend-ca"),
        secret("client", "client.crt", "client.key"),
        vs("app", ["app.example.com"], upstream="backend"),
        "apiVersion: coxswain.dev/v1\nkind: Upstream\nmetadata: {name: backend, namespace: default}\n"
        "spec:\n  static:\n    hosts: [{address: 10.0.0.7, port: 8443}]\n"
        "  tls:\n    sni: backend.internal\n    caConfigMapRef: {name: backend-ca}\n"
        "    clientCertificate: {secretRef: {name: client}}\n",
    ],
    # a missing Secret or ConfigMap: the Gateway with nothing usable is
    # rejected, the one with another certificate warns; the Upstream is
    # rejected and its route left out
    "tls_reject_missing_refs": [
        gateway("gone", "    certificates:\n    - secretRef: {name: nope}\n"),
        gateway("partly", "    certificates:\n    - secretRef: {name: nope}\n"
                "    - secretRef: {name: www}\n", port=9443),
        gateway("noca", "    certificates:\n    - secretRef: {name: www}\n"
                "    clientValidation:\n      caConfigMapRef: {name: nope-ca}\n", port=7443),
        secret("www", "www.crt", "www.key"),
        vs("www", ["www.example.com"], upstream="backend"),
        vs("web", ["web.example.com"]),
        WEB,
        "apiVersion: coxswain.dev/v1\nkind: Upstream\nmetadata: {name: backend, namespace: default}\n"
        "spec:\n  static:\n    hosts: [{address: 10.0.0.7, port: 8443}]\n"
        "  tls:\n    sni: backend.internal\n    caConfigMapRef: {name: nope-ca}\n"
        "    clientCertificate: {secretRef: {name: nope-client}}\n",
    ],
    # Secrets without tls.crt, without tls.key, of the wrong type
    "tls_reject_missing_keys": [
        gateway("gw", "    certificates:\n    - secretRef: {name: nokey}\n"
                "    - secretRef: {name: nocrt}\n    - secretRef: {name: opaque}\n"
                "    - secretRef: {name: empty}\n    - secretRef: {name: www}\n"),
        secret("nokey", "www.crt", None),
        secret("nocrt", None, "www.key"),
        secret("empty", None, None),
        "apiVersion: v1\nkind: Secret\nmetadata: {name: opaque, namespace: default}\n"
        "type: Opaque\ndata:\n  tls.crt: {b64:www.crt}\n  tls.key: {b64:www.key}\n",
        secret("www", "www.crt", "www.key"),
        vs("www", ["www.example.com"]),
        WEB,
    ],
    # PEM that does not parse: garbage, not base64, a key in tls.crt, a
    # certificate where the key should be
    "tls_reject_bad_pem": [
        gateway("gw", "    certificates:\n    - secretRef: {name: garbage}\n"
                "    - secretRef: {name: notbase64}\n    - secretRef: {name: combined}\n"
                "    - secretRef: {name: crtaskey}\n    - secretRef: {name: truncated}\n"),
        "apiVersion: v1\nkind: Secret\nmetadata: {name: garbage, namespace: default}\n"
        "type: kubernetes.io/tls\nstringData:\n  tls.crt: hello\n  tls.key: world\n",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: notbase64, namespace: default}\n"
        "type: kubernetes.io/tls\ndata:\n  tls.crt: '!!!'\n  tls.key: {b64:www.key}\n",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: combined, namespace: default}\n"
        "type: kubernetes.io/tls\nstringData:\n  tls.crt: {pem4:www.key}\n  tls.key: {pem4:www.key}\n",
        secret("crtaskey", "www.crt", "www.crt"),
        "apiVersion: v1\nkind: Secret\nmetadata: {name: truncated, namespace: default}\n"
        "type: kubernetes.io/tls\nstringData:\n"
        "  tls.crt: \"-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\\n\"\n"
        "  tls.key: {pem4:www.key}\n",
        vs("www", ["www.example.com"]),
        WEB,
    ],
    # a key that does not belong to the certificate
    "tls_reject_key_mismatch": [
        gateway("gw", "    certificates:\n    - secretRef: {name: mismatch}\n"),
        secret("mismatch", "www.crt", "other.key"),
        vs("www", ["www.example.com"]),
        WEB,
    ],
    # expired and not-yet-valid certificates: served, with Warnings
    "tls_validity": [
        gateway("gw", "    certificates:\n    - secretRef: {name: www}\n"
                "    - secretRef: {name: expired}\n    - secretRef: {name: future}\n"),
        secret("www", "chain.crt", "www.key"),
        secret("expired", "expired.crt", "expired.key"),
        secret("future", "future.crt", "future.key"),
        vs("www", ["www.example.com"]),
        vs("old", ["old.example.com"]),
        vs("future", ["future.example.com"]),
        WEB,
        "apiVersion: coxswain.dev/v1\nkind: Upstream\nmetadata: {name: backend, namespace: default}\n"
        "spec:\n  static:\n    hosts: [{address: 10.0.0.7, port: 8443}]\n"
        "  tls:\n    sni: backend.internal\n    caConfigMapRef: {name: backend-ca}\n"
        "    clientCertificate: {secretRef: {name: expired}}\n",
        ca_map("backend-ca"),
        vs("app", ["app.example.com"], upstream="backend"),
    ],
    # another namespace's Secret: refused unless it says so
    "tls_cross_namespace": [
        gateway("gw", "    certificates:\n    - secretRef: {name: www, namespace: certs}\n"
                "    - secretRef: {name: shop, namespace: certs}\n", ns="edge"),
        secret("www", "www.crt", "www.key", ns="certs"),
        secret("shop", "shop.crt", "shop.key", ns="certs",
               extra=", annotations: {coxswain.dev/allow-references-from: 'team-a, edge'}"),
        vs("shop", ["x.shop.example.com"], ns="edge"),
        "apiVersion: coxswain.dev/v1\nkind: Upstream\nmetadata: {name: web, namespace: edge}\n"
        "spec:\n  static:\n    hosts: [{address: 10.0.0.1, port: 8080}]\n",
    ],
    # proxyless Gateways ignore spec.tls (gRPC uses certificate providers)
    "tls_proxyless": [
        gateway("mesh", "    certificates:\n    - secretRef: {name: www}\n", mode="proxyless"),
        secret("www", "www.crt", "www.key"),
        vs("greeter", ["greeter"]),
        WEB,
    ],
    # a CA bundle that is not one: no such key, garbage, a private key in it
    "tls_reject_bad_ca": [
        gateway("nokey", "    certificates:\n    - secretRef: {name: www}\n"
                "    clientValidation:\n      caConfigMapRef: {name: cas, key: missing.crt}\n"),
        gateway("garbage", "    certificates:\n    - secretRef: {name: www}\n"
                "    clientValidation:\n      caConfigMapRef: {name: cas, key: garbage.crt}\n",
                port=9443),
        secret("www", "www.crt", "www.key"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cas, namespace: default}\n"
        "data:\n  garbage.crt: not a certificate\n  key.pem: {pem4:ca.key}\n",
        vs("www", ["www.example.com"], upstream="backend"),
        "apiVersion: coxswain.dev/v1\nkind: Upstream\nmetadata: {name: backend, namespace: default}\n"
        "spec:\n  static:\n    hosts: [{address: 10.0.0.7, port: 8443}]\n"
        "  tls:\n    sni: backend.internal\n    caConfigMapRef: {name: cas, key: key.pem}\n",
    ],
    # listeners with their own certificates: a public HTTPS listener (two
    # certificates by SNI), an internal one (its own certificate, TLS 1.3,
    # client certificates required), plain HTTP; a Gateway whose spec.tls
    # serves one listener while another has its own (a Secret shared from
    # another namespace); one naming another namespace's Secret it may not
    "tls_listener_certs": [
        "apiVersion: coxswain.dev/v1\nkind: Gateway\nmetadata: {name: edge, namespace: default}\n"
        "spec:\n  listeners:\n"
        "  - name: public\n    port: 8443\n    protocol: HTTPS\n    tls:\n"
        "      certificates:\n      - secretRef: {name: www}\n      - secretRef: {name: shop}\n"
        "  - name: internal\n    port: 9443\n    bindAddress: 127.0.0.1\n    protocol: HTTPS\n"
        "    tls:\n      certificates:\n      - secretRef: {name: backend}\n"
        "      - secretRef: {name: www}\n      minVersion: TLSv1.3\n      alpnProtocols: [h2]\n"
        "      clientValidation:\n        caConfigMapRef: {name: clients}\n"
        "  - {name: http, port: 8080}\n",
        secret("www", "www.crt", "www.key"),
        secret("shop", "shop.crt", "shop.key"),
        secret("backend", "backend.crt", "backend.key"),
        secret("shared", "shop.crt", "shop.key",
               extra=", annotations: {coxswain.dev/allow-references-from: other}"),
        ca_map("clients"),
        "apiVersion: coxswain.dev/v1\nkind: VirtualService\n"
        "metadata: {name: www, namespace: default, creationTimestamp: \"2024-01-01T00:00:00Z\"}\n"
        "spec:\n  domains: ['www.example.com']\n  listeners: [public, http]\n"
        "  routes:\n  - upstream: {name: web}\n",
        "apiVersion: coxswain.dev/v1\nkind: VirtualService\n"
        "metadata: {name: shop, namespace: default, creationTimestamp: \"2024-01-01T00:00:00Z\"}\n"
        "spec:\n  domains: ['a.shop.example.com']\n  listeners: [public]\n"
        "  routes:\n  - upstream: {name: web}\n",
        "apiVersion: coxswain.dev/v1\nkind: VirtualService\n"
        "metadata: {name: admin, namespace: default, creationTimestamp: \"2024-01-01T00:00:00Z\"}\n"
        "spec:\n  domains: ['backend.internal']\n  listeners: [internal]\n"
        "  routes:\n  - upstream: {name: web}\n",
        vs("api", ["api.example.com"]),
        WEB,
        "apiVersion: coxswain.dev/v1\nkind: Gateway\nmetadata: {name: mixed, namespace: other}\n"
        "spec:\n  tls:\n    certificates:\n    - secretRef: {name: www}\n  listeners:\n"
        "  - {name: a, port: 8443, protocol: HTTPS}\n"
        "  - name: b\n    port: 9443\n    protocol: HTTPS\n    tls:\n      certificates:\n"
        "      - secretRef: {name: shared, namespace: default}\n      - secretRef: {name: www}\n",
        "apiVersion: coxswain.dev/v1\nkind: Gateway\nmetadata: {name: denied, namespace: other}\n"
        "spec:\n  listeners:\n"
        "  - name: a\n    port: 8443\n    protocol: HTTPS\n    tls:\n      certificates:\n"
        "      - secretRef: {name: www, namespace: default}\n",
        secret("www", "www.crt", "www.key", ns="other"),
        vs("site", ["www.example.com", "b.shop.example.com"], ns="other", upstream="web"),
        "apiVersion: coxswain.dev/v1\nkind: Upstream\nmetadata: {name: web, namespace: other}\n"
        "spec:\n  static:\n    hosts: [{address: 10.0.0.2, port: 8080}]\n",
    ],
    # listeners[].tls mistakes: refused by the API
    "tls_listener_invalid": [
        "apiVersion: coxswain.dev/v1\nkind: Gateway\nmetadata: {name: plain, namespace: default}\n"
        "spec:\n  listeners:\n"
        "  - name: a\n    port: 8080\n    tls: {certificates: [{secretRef: {name: www}}]}\n",
        "apiVersion: coxswain.dev/v1\nkind: Gateway\nmetadata: {name: unused, namespace: default}\n"
        "spec:\n  tls: {certificates: [{secretRef: {name: www}}]}\n  listeners:\n"
        "  - name: a\n    port: 8443\n    protocol: HTTPS\n"
        "    tls: {certificates: [{secretRef: {name: www}}]}\n"
        "  - {name: b, port: 8080}\n",
        "apiVersion: coxswain.dev/v1\nkind: Gateway\nmetadata: {name: neither, namespace: default}\n"
        "spec:\n  listeners:\n  - {name: a, port: 8443, protocol: HTTPS}\n",
        "apiVersion: coxswain.dev/v1\nkind: Gateway\nmetadata: {name: bad, namespace: default}\n"
        "spec:\n  listeners:\n"
        "  - name: a\n    port: 8443\n    protocol: HTTPS\n"
        "    tls: {certificates: [], minVersion: TLSv1.9, ciphers: [x]}\n"
        "  - name: b\n    port: 9443\n    protocol: HTTPS\n    tls: [www]\n",
        "apiVersion: coxswain.dev/v1\nkind: Gateway\nmetadata: {name: mesh, namespace: default}\n"
        "spec:\n  mode: proxyless\n  listeners:\n"
        "  - name: a\n    port: 8443\n    protocol: HTTPS\n"
        "    tls: {certificates: [{secretRef: {name: www}}]}\n",
        secret("www", "www.crt", "www.key"),
        vs("www", ["www.example.com"]),
        WEB,
    ],
    # spec.tls mistakes: the API refuses them before any Secret is read
    "tls_invalid_spec": [
        gateway("gw", "    certificates:\n    - secretRef: {name: www}\n"
                "    - secretRef: {name: www, namespace: default}\n"
                "    - secretRef: {name: Bad_Name}\n"
                "    minVersion: 1.2\n    maxVersion: TLSv1.1\n"
                "    alpnProtocols: [h3]\n    clientValidation: {optional: true}\n"
                "    ciphers: [x]\n"),
        gateway("empty", "    certificates: []\n", port=9443),
        secret("www", "www.crt", "www.key"),
        vs("www", ["www.example.com"]),
        WEB,
        "apiVersion: coxswain.dev/v1\nkind: Upstream\nmetadata: {name: both, namespace: default}\n"
        "spec:\n  static:\n    hosts: [{address: 10.0.0.7, port: 8443}]\n"
        "  tls:\n    sni: 'backend.internal:443'\n    caConfigMapRef: {name: ca, key: 'a/b'}\n"
        "    insecureSkipVerify: true\n    minVersion: TLSv1.3\n    maxVersion: TLSv1.2\n",
        "apiVersion: coxswain.dev/v1\nkind: Upstream\nmetadata: {name: neither, namespace: default}\n"
        "spec:\n  static:\n    hosts: [{address: 10.0.0.8, port: 8443}]\n"
        "  tls: {sni: backend.internal}\n",
        "apiVersion: coxswain.dev/v1\nkind: Upstream\nmetadata: {name: nosni, namespace: default}\n"
        "spec:\n  static:\n    hosts: [{address: 10.0.0.9, port: 8443}]\n"
        "  tls: {caConfigMapRef: {name: ca}}\n",
        ca_map("ca"),
    ],
}


def main():
    for name, docs in sorted(CASES.items()):
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        text = "# Generated by tests/data/tls/make_golden_inputs.py (test-only keys).\n" + \
            "---\n".join(fill(doc) for doc in docs)
        with open(os.path.join(d, "input.yaml"), "w") as f:
            f.write(text)
        print(d)


if __name__ == "__main__":
    main()
