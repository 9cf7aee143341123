#!/usr/bin/env python3
"""Writes api/crds/*.yaml: the coxswain.dev/v1 CustomResourceDefinitions.

The schemas mirror what translator/xlate_api.c accepts (docs/api.md is the
reference): structural, with types, enums, ranges, required fields and
one-of rules, so `kubectl apply` refuses most mistakes before the translator
sees them. Run it after changing a schema: /usr/bin/python3 api/crds/generate.py
"""
import copy
import os
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
GROUP = "coxswain.dev"

DURATION = {
    "type": "string",
    "pattern": r"^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$",
    "description": "A Go duration: 250ms, 5s, 1m30s.",
}
NAME = {"type": "string", "minLength": 1, "maxLength": 253}
NAMESPACE = {"type": "string", "minLength": 1, "maxLength": 63,
             "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}
PORT = {"type": "integer", "minimum": 1, "maximum": 65535}

LABEL_SELECTOR = {
    "type": "object",
    "description": "A Kubernetes label selector (matchLabels AND matchExpressions).",
    "properties": {
        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
        "matchExpressions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "operator"],
                "properties": {
                    "key": {"type": "string"},
                    "operator": {"type": "string",
                                 "enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                    "values": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
}

REF = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": NAME, "namespace": NAMESPACE},
    "description": "An Upstream by name; namespace defaults to the object's own.",
}

SECRET_REF = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": NAME, "namespace": NAMESPACE},
    "description": "A Secret of type kubernetes.io/tls (tls.crt, tls.key); namespace defaults "
                   "to the object's own. Another namespace's Secret must allow it with the "
                   "annotation coxswain.dev/allow-references-from.",
}

CONFIGMAP_REF = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": NAME, "namespace": NAMESPACE,
        "key": {"type": "string", "minLength": 1, "maxLength": 253,
                "pattern": r"^[-._a-zA-Z0-9]+$", "default": "ca.crt",
                "description": "The data key holding the PEM CA bundle."},
    },
    "description": "A ConfigMap holding a PEM CA bundle; namespace defaults to the object's own "
                   "(another namespace's must allow it with the annotation "
                   "coxswain.dev/allow-references-from).",
}

TLS_VERSION = {"type": "string", "enum": ["TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"]}

GATEWAY_TLS = {
    "type": "object",
    "required": ["certificates"],
    "description": "HTTPS (envoy mode): one filter chain per certificate, chosen by SNI for the "
                   "served domains it covers; the first usable certificate also serves clients "
                   "without SNI. Ignored, with a Warning, in proxyless mode.",
    "properties": {
        "certificates": {
            "type": "array", "minItems": 1, "maxItems": 64,
            "items": {"type": "object", "required": ["secretRef"],
                      "properties": {"secretRef": SECRET_REF}},
        },
        "minVersion": dict(TLS_VERSION, description="Lowest TLS version accepted "
                                                    "(default TLSv1.2)."),
        "maxVersion": dict(TLS_VERSION, description="Highest TLS version (default: Envoy's, "
                                                    "TLSv1.3)."),
        "alpnProtocols": {"type": "array", "minItems": 1, "maxItems": 2,
                          "items": {"type": "string", "enum": ["h2", "http/1.1"]},
                          "description": "ALPN offered to clients (default [h2, http/1.1])."},
        "clientValidation": {
            "type": "object",
            "required": ["caConfigMapRef"],
            "description": "Verify client certificates (mTLS) with this CA bundle.",
            "properties": {
                "caConfigMapRef": CONFIGMAP_REF,
                "optional": {"type": "boolean", "default": False,
                             "description": "Verify a certificate when one is presented, "
                                            "do not require one."},
            },
        },
    },
}

UPSTREAM_TLS = {
    "type": "object",
    "description": "TLS to the endpoints (envoy mode; proxyless Gateways get a Warning). Set "
                   "caConfigMapRef, or insecureSkipVerify: true.",
    "properties": {
        "sni": {"type": "string", "minLength": 1, "maxLength": 253,
                "description": "Server name sent to the backend; also the name its certificate "
                               "must carry unless subjectAltNames is set."},
        "caConfigMapRef": CONFIGMAP_REF,
        "insecureSkipVerify": {"type": "boolean",
                               "description": "Encrypt without verifying the backend's "
                                              "certificate."},
        "subjectAltNames": {"type": "array", "minItems": 1, "maxItems": 64,
                            "items": {"type": "string", "minLength": 1},
                            "description": "DNS names the backend's certificate may carry "
                                           "(any of them; default: sni)."},
        "clientCertificate": {
            "type": "object", "required": ["secretRef"],
            "description": "A client certificate to present (mTLS to the backend).",
            "properties": {"secretRef": SECRET_REF},
        },
        "minVersion": TLS_VERSION,
        "maxVersion": TLS_VERSION,
    },
}

HEADER = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1,
                 "description": "Header name; HTTP/2 pseudo headers such as :method are allowed."},
        "exact": {"type": "string"},
        "prefix": {"type": "string", "minLength": 1},
        "regex": {"type": "string", "minLength": 1, "maxLength": 4096,
                  "description": "RE2 syntax, matched against the whole value."},
        "present": {"type": "boolean", "enum": [True]},
        "invert": {"type": "boolean"},
    },
    "oneOf": [{"required": ["exact"]}, {"required": ["prefix"]}, {"required": ["regex"]},
              {"required": ["present"]},
              {"not": {"anyOf": [{"required": ["exact"]}, {"required": ["prefix"]},
                                 {"required": ["regex"]}, {"required": ["present"]}]}}],
}

MATCH = {
    "type": "object",
    "description": "At most one of prefix, path, regex (none: prefix \"/\"), plus headers.",
    "properties": {
        "prefix": {"type": "string", "pattern": "^/"},
        "path": {"type": "string", "pattern": "^/"},
        "regex": {"type": "string", "minLength": 1, "maxLength": 4096,
                  "description": "RE2 syntax, matched against the whole path."},
        "caseSensitive": {"type": "boolean", "default": True},
        "headers": {"type": "array", "maxItems": 32, "items": HEADER},
    },
    "oneOf": [{"required": ["prefix"]}, {"required": ["path"]}, {"required": ["regex"]},
              {"not": {"anyOf": [{"required": ["prefix"]}, {"required": ["path"]},
                                 {"required": ["regex"]}]}}],
}

ROUTE = {
    "type": "object",
    "description": "A match and exactly one action: upstream, weighted or delegate.",
    "properties": {
        "match": MATCH,
        "upstream": REF,
        "weighted": {
            "type": "array", "minItems": 1, "maxItems": 64,
            "items": {"type": "object", "required": ["upstream"],
                      "properties": {"upstream": REF,
                                     "weight": {"type": "integer", "minimum": 0,
                                                "maximum": 4294967295, "default": 1}}},
            "description": "Traffic split; weights must not sum to 0.",
        },
        "delegate": {
            "type": "object",
            "description": "RouteTables by name or by label selector (in namespace, default "
                           "the owner's); needs a prefix match their routes stay under.",
            "properties": {"name": NAME, "namespace": NAMESPACE, "selector": LABEL_SELECTOR},
            "oneOf": [{"required": ["name"]}, {"required": ["selector"]}],
        },
        "timeout": DURATION,
        "retries": {
            "type": "object",
            "properties": {
                "attempts": {"type": "integer", "minimum": 1, "maximum": 100, "default": 1},
                "on": {"type": "string", "default": "5xx",
                       "description": "Envoy retry conditions, comma-separated "
                                      "(5xx,reset,connect-failure,unavailable,...). In YAML "
                                      "read by kubectl, quote the key: \"on\":"},
            },
        },
        "prefixRewrite": {"type": "string"},
    },
    "oneOf": [{"required": ["upstream"]}, {"required": ["weighted"]}, {"required": ["delegate"]}],
}

ROUTES = {"type": "array", "minItems": 1, "maxItems": 1024, "items": ROUTE}

CONDITION = {
    "type": "object",
    "required": ["type", "status"],
    "properties": {
        "type": {"type": "string"},
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "reason": {"type": "string"},
        "message": {"type": "string", "maxLength": 32768},
        "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
        "lastTransitionTime": {"type": "string", "format": "date-time"},
    },
}

STATUS = {
    "type": "object",
    "description": "Written by the leader replica from the translator's report.",
    "properties": {
        "state": {"type": "string", "enum": ["Accepted", "Warning", "Rejected"]},
        "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
        "conditions": {"type": "array", "items": CONDITION,
                       "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    },
}

SPECS = {
    "Gateway": {
        "plural": "gateways", "short": ["cxgw"],
        "description": "A node group: the proxies that load one set of listeners, routes and "
                       "clusters. Envoy proxies get a socket listener; proxyless gRPC clients "
                       "get one API listener per virtual-host domain.",
        "spec": {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["envoy", "proxyless"], "default": "envoy"},
                "bindAddress": {"type": "string",
                                "description": "IP address of the socket listener (envoy mode; "
                                               "default 0.0.0.0)."},
                "bindPort": dict(PORT, description="Port of the socket listener (envoy mode; "
                                                   "default 8080)."),
                "virtualServiceSelector": LABEL_SELECTOR,
                "virtualServiceNamespaces": {
                    "type": "array", "maxItems": 256,
                    "items": {"type": "string", "pattern": r"^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$"},
                    "description": "Namespaces whose VirtualServices it serves; \"*\" for all. "
                                   "Default: its own namespace.",
                },
                "tls": GATEWAY_TLS,
            },
        },
        "columns": [("Mode", "string", ".spec.mode")],
    },
    "VirtualService": {
        "plural": "virtualservices", "short": ["cxvs"],
        "description": "A virtual host: domains and the routes that serve them.",
        "spec": {
            "type": "object",
            "required": ["domains", "routes"],
            "properties": {
                "domains": {"type": "array", "minItems": 1, "maxItems": 256,
                            "items": {"type": "string", "minLength": 1, "maxLength": 259},
                            "description": "Exact names, \"*\", \"*.suffix\" or \"prefix.*\" "
                                           "(optionally with :port)."},
                "routes": ROUTES,
            },
        },
        "columns": [("Domains", "string", ".spec.domains[*]")],
    },
    "RouteTable": {
        "plural": "routetables", "short": ["cxrt"],
        "description": "Routes a VirtualService (or another RouteTable) delegates a prefix to.",
        "spec": {"type": "object", "required": ["routes"], "properties": {"routes": ROUTES}},
        "columns": [],
    },
    "Upstream": {
        "plural": "upstreams", "short": ["cxup"],
        "description": "Where routes send traffic: a Service's ready endpoints or static hosts.",
        "spec": {
            "type": "object",
            "properties": {
                "kube": {
                    "type": "object",
                    "required": ["service", "port"],
                    "properties": {
                        "service": {"type": "string", "minLength": 1, "maxLength": 63},
                        "namespace": NAMESPACE,
                        "port": {"x-kubernetes-int-or-string": True,
                                 "description": "The Service's port number or name."},
                    },
                },
                "static": {
                    "type": "object",
                    "required": ["hosts"],
                    "properties": {
                        "hosts": {
                            "type": "array", "minItems": 1, "maxItems": 1024,
                            "items": {
                                "type": "object", "required": ["address", "port"],
                                "properties": {
                                    "address": {"type": "string",
                                                "description": "An IP address (EDS needs IP "
                                                               "literals)."},
                                    "port": PORT,
                                    "weight": {"type": "integer", "minimum": 1,
                                               "maximum": 1000000, "default": 1},
                                },
                            },
                        },
                    },
                },
                "lbPolicy": {"type": "string", "default": "RoundRobin",
                             "enum": ["RoundRobin", "LeastRequest", "RingHash", "Random"]},
                "connectTimeout": DURATION,
                "tls": UPSTREAM_TLS,
            },
            "oneOf": [{"required": ["kube"]}, {"required": ["static"]}],
        },
        "columns": [("Service", "string", ".spec.kube.service")],
    },
    "ProxySnapshot": {
        "plural": "proxysnapshots", "short": ["cxsnap"],
        "description": "What the leader replica serves to one node group (a Gateway): "
                       "versions, counts and, while it fits, the snapshot itself.",
        "spec": {
            "type": "object",
            "properties": {
                "gateway": {"type": "string", "description": "The node group, namespace/name."},
                "mode": {"type": "string", "enum": ["envoy", "proxyless"],
                         "description": "The Gateway's mode when it was published."},
                "version": {"type": "string"},
                "versions": {"type": "object", "properties": {
                    k: {"type": "string"} for k in ("listeners", "routes", "clusters", "endpoints")}},
                "counts": {"type": "object", "properties": {
                    k: {"type": "integer", "minimum": 0}
                    for k in ("listeners", "routes", "clusters", "endpoints")}},
                "snapshot": {"type": "string",
                             "description": "gzip+base64 of the snapshot JSON, while it fits."},
                "snapshotBytes": {"type": "integer", "minimum": 0,
                                  "description": "Size of the snapshot JSON before compression "
                                                 "(0 when it was too large to render)."},
                "truncated": {"type": "boolean",
                              "description": "True when the snapshot did not fit and was left out."},
            },
        },
        "columns": [("Gateway", "string", ".spec.gateway"), ("Version", "string", ".spec.version")],
    },
}


def crd(kind, d):
    columns = [{"name": n, "type": t, "jsonPath": p} for n, t, p in d["columns"]]
    if kind != "ProxySnapshot":
        columns.append({"name": "State", "type": "string", "jsonPath": ".status.state"})
    else:
        columns.append({"name": "Truncated", "type": "boolean", "jsonPath": ".spec.truncated"})
    columns.append({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})
    schema = {
        "type": "object",
        "description": d["description"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": copy.deepcopy(d["spec"]),
            "status": copy.deepcopy(STATUS),
        },
    }
    # spec is not required at the top level: an object without one is
    # stored and then reported by the translator ("spec: required"), the way
    # every other mistake is
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{d['plural']}.{GROUP}",
                     "labels": {"app.kubernetes.io/name": "coxswain"}},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": kind, "listKind": kind + "List", "plural": d["plural"],
                      "singular": kind.lower(), "shortNames": d["short"],
                      "categories": ["coxswain"]},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": columns,
                "schema": {"openAPIV3Schema": schema},
            }],
        },
    }


class Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data):
        return True


def main():
    for kind, d in SPECS.items():
        path = os.path.join(HERE, f"{d['plural']}.yaml")
        with open(path, "w") as f:
            f.write("# Generated by api/crds/generate.py; edit that file, not this one.\n")
            yaml.dump(crd(kind, d), f, Dumper=Dumper, sort_keys=False, allow_unicode=True,
                      width=100)
        print(path)


if __name__ == "__main__":
    main()
