#!/usr/bin/env python3
"""Writes api/crds/*.yaml: the coxswain.dev/v1 CustomResourceDefinitions.

The schemas mirror what translator/xlate_api.c accepts (docs/api.md is the
reference): structural, with types, enums, ranges, required fields and
one-of rules, so `kubectl apply` refuses most mistakes before the translator
sees them. Every property gets its description from api/fields.yaml,
the one source shared with docs/api.md; a property without one there stops
the generator. Run it after changing a schema or a description:

    /usr/bin/python3 api/crds/generate.py            # write api/crds/*.yaml
    /usr/bin/python3 api/crds/generate.py --markdown VirtualService
                                                     # the kind's field table
then deploy/sync-crds.sh to copy them into the chart.
"""
import json
import os
import sys
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
GROUP = "coxswain.dev"

DURATION = {
    "_block": "duration",
    "type": "string",
    "pattern": r"^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$",
}
NAME = {"type": "string", "minLength": 1, "maxLength": 253}
NAMESPACE = {"type": "string", "minLength": 1, "maxLength": 63,
             "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}
PORT = {"type": "integer", "minimum": 1, "maximum": 65535}

LABEL_SELECTOR = {
    "_block": "labelSelector",
    "type": "object",
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
    "_block": "upstreamRef",
    "type": "object",
    "required": ["name"],
    "properties": {"name": NAME, "namespace": NAMESPACE},
}

SECRET_REF = {
    "_block": "secretRef",
    "type": "object",
    "required": ["name"],
    "properties": {"name": NAME, "namespace": NAMESPACE},
}

CONFIGMAP_REF = {
    "_block": "configMapRef",
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": NAME, "namespace": NAMESPACE,
        "key": {"type": "string", "minLength": 1, "maxLength": 253,
                "pattern": r"^[-._a-zA-Z0-9]+$", "default": "ca.crt"},
    },
}

TLS_VERSION = {"type": "string", "enum": ["TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"]}

GATEWAY_TLS = {
    "_block": "gatewayTls",
    "type": "object",
    "required": ["certificates"],
    "properties": {
        "certificates": {
            "type": "array", "minItems": 1, "maxItems": 64,
            "items": {"type": "object", "required": ["secretRef"],
                      "properties": {"secretRef": SECRET_REF}},
        },
        "minVersion": TLS_VERSION,
        "maxVersion": TLS_VERSION,
        "alpnProtocols": {"type": "array", "minItems": 1, "maxItems": 2,
                          "items": {"type": "string", "enum": ["h2", "http/1.1"]}},
        "clientValidation": {
            "type": "object",
            "required": ["caConfigMapRef"],
            "properties": {
                "caConfigMapRef": CONFIGMAP_REF,
                "optional": {"type": "boolean", "default": False},
            },
        },
    },
}

XDS_ACCESS = {
    "type": "object",
    "properties": {
        "serviceAccounts": {
            "type": "array", "maxItems": 64,
            "items": {
                "type": "object", "required": ["namespace", "name"],
                "properties": {
                    "namespace": dict(NAMESPACE),
                    "name": {"type": "string", "minLength": 1, "maxLength": 253,
                             "pattern": r"^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$"},
                },
            },
        },
        "allowUnauthenticated": {"type": "boolean", "default": False},
    },
}

UPSTREAM_TLS = {
    "_block": "upstreamTls",
    "type": "object",
    "properties": {
        "sni": {"type": "string", "minLength": 1, "maxLength": 253},
        "caConfigMapRef": CONFIGMAP_REF,
        "insecureSkipVerify": {"type": "boolean"},
        "subjectAltNames": {"type": "array", "minItems": 1, "maxItems": 64,
                            "items": {"type": "string", "minLength": 1}},
        "clientCertificate": {
            "type": "object", "required": ["secretRef"],
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
        "name": {"type": "string", "minLength": 1},
        "exact": {"type": "string"},
        "prefix": {"type": "string", "minLength": 1},
        "regex": {"type": "string", "minLength": 1, "maxLength": 4096},
        "present": {"type": "boolean", "enum": [True]},
        "invert": {"type": "boolean"},
    },
    "oneOf": [{"required": ["exact"]}, {"required": ["prefix"]}, {"required": ["regex"]},
              {"required": ["present"]},
              {"not": {"anyOf": [{"required": ["exact"]}, {"required": ["prefix"]},
                                 {"required": ["regex"]}, {"required": ["present"]}]}}],
}

QUERY_PARAM = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 1024},
        "exact": {"type": "string"},
        "prefix": {"type": "string", "minLength": 1},
        "regex": {"type": "string", "minLength": 1, "maxLength": 4096},
        "present": {"type": "boolean", "enum": [True]},
        "ignoreCase": {"type": "boolean"},
    },
    "oneOf": [{"required": ["exact"]}, {"required": ["prefix"]}, {"required": ["regex"]},
              {"required": ["present"]},
              {"not": {"anyOf": [{"required": ["exact"]}, {"required": ["prefix"]},
                                 {"required": ["regex"]}, {"required": ["present"]}]}}],
}

# A header name Envoy will add, set or remove: an RFC 7230 token (not a
# ":" pseudo header; "host" is refused by the translator)
HEADER_NAME = {"type": "string", "minLength": 1, "maxLength": 256,
               "pattern": r"^[-!#$%&'*+.^_`|~0-9A-Za-z]+$"}

HEADER_OPS = {
    "_block": "headerOps",
    "type": "object",
    "properties": {
        "set": {"type": "array", "minItems": 1, "maxItems": 32,
                "items": {"type": "object", "required": ["name", "value"],
                          "properties": {"name": HEADER_NAME,
                                         "value": {"type": "string", "maxLength": 16384}}}},
        "add": {"type": "array", "minItems": 1, "maxItems": 32,
                "items": {"type": "object", "required": ["name", "value"],
                          "properties": {"name": HEADER_NAME,
                                         "value": {"type": "string", "maxLength": 16384}}}},
        "remove": {"type": "array", "minItems": 1, "maxItems": 32, "items": HEADER_NAME},
    },
    "anyOf": [{"required": ["set"]}, {"required": ["add"]}, {"required": ["remove"]}],
}

REDIRECT = {
    "type": "object",
    "properties": {
        "scheme": {"type": "string", "enum": ["http", "https"]},
        "host": {"type": "string", "minLength": 1, "maxLength": 253,
                 "pattern": r"^([-.a-zA-Z0-9]+|\[[0-9a-fA-F:.]+\])$"},
        "port": PORT,
        "path": {"type": "string", "pattern": "^/"},
        "prefixRewrite": {"type": "string"},
        "statusCode": {"type": "integer", "enum": [301, 302, 303, 307, 308], "default": 301},
        "stripQuery": {"type": "boolean"},
    },
    "not": {"required": ["path", "prefixRewrite"]},
    "anyOf": [{"required": ["scheme"]}, {"required": ["host"]}, {"required": ["port"]},
              {"required": ["path"]}, {"required": ["prefixRewrite"]}],
}

RATE_LIMIT = {
    "_block": "rateLimit",
    "type": "object",
    "required": ["requests", "per"],
    "properties": {
        "requests": {"type": "integer", "minimum": 1, "maximum": 4294967295},
        "per": {"type": "string", "pattern": DURATION["pattern"]},
        "burst": {"type": "integer", "minimum": 1, "maximum": 4294967295},
    },
}

TOKEN = {"type": "string", "minLength": 1, "maxLength": 256,
         "pattern": r"^[-!#$%&'*+.^_`|~0-9A-Za-z]+$"}

CORS = {
    "type": "object",
    "properties": {
        "allowOrigins": {"type": "array", "minItems": 1, "maxItems": 32,
                         "items": {"type": "string", "minLength": 1, "maxLength": 1024}},
        "allowOriginRegexes": {"type": "array", "minItems": 1, "maxItems": 32,
                               "items": {"type": "string", "minLength": 1, "maxLength": 4096}},
        "allowMethods": {"type": "array", "minItems": 1, "maxItems": 32, "items": TOKEN},
        "allowHeaders": {"type": "array", "minItems": 1, "maxItems": 32, "items": TOKEN},
        "exposeHeaders": {"type": "array", "minItems": 1, "maxItems": 32, "items": TOKEN},
        "maxAge": {"type": "string", "pattern": DURATION["pattern"]},
        "allowCredentials": {"type": "boolean"},
    },
    "anyOf": [{"required": ["allowOrigins"]}, {"required": ["allowOriginRegexes"]}],
}

ACCESS_LOG = {
    "type": "array", "minItems": 1, "maxItems": 4,
    "items": {
        "type": "object", "required": ["path"],
        "properties": {
            "path": {"type": "string", "minLength": 1, "maxLength": 4096, "pattern": "^/"},
            "format": {"type": "string", "minLength": 1, "maxLength": 16384},
            "json": {"type": "object", "maxProperties": 64,
                     "additionalProperties": {"type": "string", "maxLength": 16384}},
        },
        "not": {"required": ["format", "json"]},
    },
}

MATCH = {
    "type": "object",
    "properties": {
        "prefix": {"type": "string", "pattern": "^/"},
        "path": {"type": "string", "pattern": "^/"},
        "regex": {"type": "string", "minLength": 1, "maxLength": 4096},
        "caseSensitive": {"type": "boolean", "default": True},
        "headers": {"type": "array", "maxItems": 32, "items": HEADER},
        "queryParams": {"type": "array", "minItems": 1, "maxItems": 16, "items": QUERY_PARAM},
        "methods": {"type": "array", "minItems": 1, "maxItems": 9,
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string", "enum": ["GET", "HEAD", "POST", "PUT", "DELETE",
                                                         "CONNECT", "OPTIONS", "TRACE",
                                                         "PATCH"]}},
    },
    "oneOf": [{"required": ["prefix"]}, {"required": ["path"]}, {"required": ["regex"]},
              {"not": {"anyOf": [{"required": ["prefix"]}, {"required": ["path"]},
                                 {"required": ["regex"]}]}}],
}

HASH_POLICY = {
    "type": "object",
    "properties": {
        "header": {"type": "string", "minLength": 1, "maxLength": 256,
                   "pattern": r"^:?[-!#$%&'*+.^_`|~0-9A-Za-z]+$"},
        "cookie": {
            "type": "object", "required": ["name"],
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 256,
                         "pattern": r"^[-!#$%&'*+.^_`|~0-9A-Za-z]+$"},
                "ttl": {"type": "string", "pattern": DURATION["pattern"]},
                "path": {"type": "string", "pattern": "^/[^;]*$", "maxLength": 1024},
            },
        },
        "sourceIP": {"type": "boolean", "enum": [True]},
        "queryParameter": {"type": "string", "minLength": 1, "maxLength": 256},
        "terminal": {"type": "boolean", "default": False},
    },
    "oneOf": [{"required": ["header"]}, {"required": ["cookie"]}, {"required": ["sourceIP"]},
              {"required": ["queryParameter"]}],
}

ROUTE = {
    "_block": "route",
    "type": "object",
    "properties": {
        "match": MATCH,
        "upstream": REF,
        "weighted": {
            "type": "array", "minItems": 1, "maxItems": 64,
            "items": {"type": "object", "required": ["upstream"],
                      "properties": {"upstream": REF,
                                     "weight": {"type": "integer", "minimum": 0,
                                                "maximum": 4294967295, "default": 1}}},
        },
        "delegate": {
            "type": "object",
            "properties": {"name": NAME, "namespace": NAMESPACE, "selector": LABEL_SELECTOR},
            "oneOf": [{"required": ["name"]}, {"required": ["selector"]}],
        },
        "timeout": DURATION,
        "retries": {
            "type": "object",
            "properties": {
                "attempts": {"type": "integer", "minimum": 1, "maximum": 100, "default": 1},
                "on": {"type": "string", "default": "5xx"},
            },
        },
        "prefixRewrite": {"type": "string"},
        "hashPolicy": {"type": "array", "minItems": 1, "maxItems": 8, "items": HASH_POLICY},
        "redirect": REDIRECT,
        "requestHeaders": HEADER_OPS,
        "responseHeaders": HEADER_OPS,
        "hostRewrite": {"type": "string", "minLength": 1, "maxLength": 253,
                        "pattern": r"^[^/\s]+$"},
        "autoHostRewrite": {"type": "boolean", "enum": [True]},
        "rateLimit": RATE_LIMIT,
        "regexRewrite": {
            "type": "object", "required": ["pattern", "substitution"],
            "properties": {"pattern": {"type": "string", "minLength": 1, "maxLength": 4096},
                           "substitution": {"type": "string"}},
        },
    },
    "oneOf": [{"required": ["upstream"]}, {"required": ["weighted"]}, {"required": ["delegate"]},
              {"required": ["redirect"]}],
    "allOf": [{"not": {"required": ["hostRewrite", "autoHostRewrite"]}},
              {"not": {"required": ["prefixRewrite", "regexRewrite"]}}],
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
    "_block": "status",
    "type": "object",
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
        "spec": {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["envoy", "proxyless"], "default": "envoy"},
                "bindAddress": {"type": "string"},
                "bindPort": PORT,
                "virtualServiceSelector": LABEL_SELECTOR,
                "virtualServiceNamespaces": {
                    "type": "array", "maxItems": 256,
                    "items": {"type": "string", "pattern": r"^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$"},
                },
                "tls": GATEWAY_TLS,
                "xdsAccess": XDS_ACCESS,
                "accessLog": ACCESS_LOG,
                "listeners": {
                    "type": "array", "minItems": 1, "maxItems": 16,
                    "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object", "required": ["name", "port"],
                        "properties": {
                            "name": {"type": "string", "minLength": 1, "maxLength": 63,
                                     "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
                            "port": PORT,
                            "bindAddress": {"type": "string"},
                            "protocol": {"type": "string", "enum": ["HTTP", "HTTPS"],
                                         "default": "HTTP"},
                            "tls": GATEWAY_TLS,
                        },
                    },
                },
            },
            "not": {"required": ["bindPort", "listeners"]},
        },
        "columns": [("Mode", "string", ".spec.mode")],
    },
    "VirtualService": {
        "plural": "virtualservices", "short": ["cxvs"],
        "spec": {
            "type": "object",
            "required": ["domains", "routes"],
            "properties": {
                "domains": {"type": "array", "minItems": 1, "maxItems": 256,
                            "items": {"type": "string", "minLength": 1, "maxLength": 259}},
                "routes": ROUTES,
                "requireTls": {"type": "boolean", "enum": [True]},
                "cors": CORS,
                "rateLimit": RATE_LIMIT,
                "listeners": {
                    "type": "array", "minItems": 1, "maxItems": 16,
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string", "minLength": 1, "maxLength": 63,
                              "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
                },
            },
        },
        "columns": [("Domains", "string", ".spec.domains[*]")],
    },
    "RouteTable": {
        "plural": "routetables", "short": ["cxrt"],
        "spec": {"type": "object", "required": ["routes"], "properties": {"routes": ROUTES}},
        "columns": [],
    },
    "Upstream": {
        "plural": "upstreams", "short": ["cxup"],
        "spec": {
            "type": "object",
            "properties": {
                "kube": {
                    "type": "object",
                    "required": ["service", "port"],
                    "properties": {
                        "service": {"type": "string", "minLength": 1, "maxLength": 63},
                        "namespace": NAMESPACE,
                        "port": {"x-kubernetes-int-or-string": True},
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
                                    "address": {"type": "string"},
                                    "port": PORT,
                                    "zone": {"type": "string", "minLength": 1,
                                             "maxLength": 253},
                                    "hostname": {"type": "string", "minLength": 1,
                                                 "maxLength": 253,
                                                 "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"},
                                    "weight": {"type": "integer", "minimum": 1,
                                               "maximum": 1000000, "default": 1},
                                },
                            },
                        },
                    },
                },
                "lbPolicy": {"type": "string", "default": "RoundRobin",
                             "enum": ["RoundRobin", "LeastRequest", "RingHash", "Random",
                                      "Maglev"]},
                "ringHash": {
                    "type": "object",
                    "properties": {
                        "minimumRingSize": {"type": "integer", "minimum": 1,
                                            "maximum": 8388608},
                        "maximumRingSize": {"type": "integer", "minimum": 1,
                                            "maximum": 8388608},
                    },
                },
                "connectTimeout": DURATION,
                "localities": {
                    "type": "array", "minItems": 1, "maxItems": 64,
                    "items": {
                        "type": "object", "required": ["zone"],
                        "properties": {
                            "zone": {"type": "string", "minLength": 0, "maxLength": 253},
                            "weight": {"type": "integer", "minimum": 1, "maximum": 1000000},
                            "priority": {"type": "integer", "minimum": 0, "maximum": 127,
                                         "default": 0},
                        },
                    },
                    "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["zone"],
                },
                "outlierDetection": {
                    "type": "object",
                    "properties": dict(
                        [(k, DURATION) for k in ("interval", "baseEjectionTime",
                                                 "maxEjectionTime")]
                        + [(k, {"type": "integer", "minimum": 1, "maximum": 1000000})
                           for k in ("consecutive5xx", "consecutiveGatewayFailure")]
                        + [(k, {"type": "integer", "minimum": 0, "maximum": 100})
                           for k in ("maxEjectionPercent", "enforcingConsecutive5xx",
                                     "enforcingConsecutiveGatewayFailure", "enforcingSuccessRate",
                                     "failurePercentageThreshold",
                                     "enforcingFailurePercentage")]
                        + [(k, {"type": "integer", "minimum": 0, "maximum": 1000000})
                           for k in ("successRateMinimumHosts", "successRateRequestVolume",
                                     "successRateStdevFactor", "failurePercentageMinimumHosts",
                                     "failurePercentageRequestVolume")]),
                },
                "healthChecks": {
                    "type": "array", "minItems": 1, "maxItems": 8,
                    "items": {
                        "type": "object", "required": ["timeout", "interval"],
                        "properties": {
                            "timeout": DURATION,
                            "interval": DURATION,
                            "intervalJitter": DURATION,
                            "unhealthyThreshold": {"type": "integer", "minimum": 1,
                                                   "maximum": 1000, "default": 3},
                            "healthyThreshold": {"type": "integer", "minimum": 1,
                                                 "maximum": 1000, "default": 1},
                            "http": {
                                "type": "object", "required": ["path"],
                                "properties": {
                                    "path": {"type": "string", "minLength": 1,
                                             "maxLength": 1024, "pattern": "^/"},
                                    "host": {"type": "string", "maxLength": 253},
                                    "expectedStatuses": {
                                        "type": "array", "minItems": 1, "maxItems": 16,
                                        "items": {
                                            "type": "object", "required": ["start", "end"],
                                            "properties": {
                                                "start": {"type": "integer", "minimum": 100,
                                                          "maximum": 599},
                                                "end": {"type": "integer", "minimum": 101,
                                                        "maximum": 600},
                                            },
                                        },
                                    },
                                },
                            },
                            "grpc": {
                                "type": "object",
                                "properties": {
                                    "serviceName": {"type": "string", "maxLength": 253},
                                    "authority": {"type": "string", "maxLength": 253},
                                },
                            },
                            "tcp": {"type": "object"},
                        },
                        "oneOf": [{"required": ["http"]}, {"required": ["grpc"]},
                                  {"required": ["tcp"]}],
                    },
                },
                "circuitBreakers": {
                    "type": "object",
                    "properties": {
                        k: {"type": "integer", "minimum": 0, "maximum": 4294967295}
                        for k in ("maxConnections", "maxPendingRequests", "maxRequests",
                                  "maxRetries")},
                },
                "protocol": {"type": "string", "default": "HTTP1", "enum": ["HTTP1", "HTTP2"]},
                "tls": UPSTREAM_TLS,
            },
            "oneOf": [{"required": ["kube"]}, {"required": ["static"]}],
        },
        "columns": [("Service", "string", ".spec.kube.service")],
    },
    "ProxySnapshot": {
        "plural": "proxysnapshots", "short": ["cxsnap"],
        "spec": {
            "type": "object",
            "properties": {
                "gateway": {"type": "string"},
                "mode": {"type": "string", "enum": ["envoy", "proxyless"]},
                "version": {"type": "string"},
                "versions": {"type": "object", "properties": {
                    k: {"type": "string"} for k in ("listeners", "routes", "clusters", "endpoints")}},
                "counts": {"type": "object", "properties": {
                    k: {"type": "integer", "minimum": 0}
                    for k in ("listeners", "routes", "clusters", "endpoints")}},
                "snapshot": {"type": "string"},
                "snapshotBytes": {"type": "integer", "minimum": 0},
                "truncated": {"type": "boolean"},
            },
        },
        "columns": [("Gateway", "string", ".spec.gateway"), ("Version", "string", ".spec.version")],
    },
}


def load_fields():
    with open(os.path.join(HERE, "..", "fields.yaml")) as f:
        return yaml.safe_load(f)


class OutsideFields(Exception):
    pass


def text(t):
    return " ".join(str(t).split())


def describe(schema, fields, block, path, missing):
    """Sets the description of every property under |schema| (a part of
    building block |block| at |path|) from |fields|; a sub-schema marked
    "_block" starts its own block. Undescribed paths go to |missing|. A
    description written in the schemas is refused: fields.yaml is the one
    source."""
    if "description" in schema:
        raise OutsideFields("%s %s: a description outside fields.yaml" % (block, path))
    for key, sub in schema.get("properties", {}).items():
        p = path + "." + key if path else key
        own = sub.pop("_block", None)
        desc = fields.get(block, {}).get(p)
        if desc is None and not path:
            desc = fields["object"].get(p)
        if desc is None and own:
            desc = fields.get(own, {}).get("")
        if desc is None:
            missing.append("%s: %s" % (block, p))
        if own:
            describe(sub, fields, own, "", missing)
        else:
            describe(sub, fields, block, p, missing)
            items = sub.get("items")
            if isinstance(items, dict):
                iown = items.pop("_block", None)
                if iown:
                    describe(items, fields, iown, "", missing)
                    if fields.get(iown, {}).get("") is not None:
                        items["description"] = text(fields[iown][""])
                else:
                    describe(items, fields, block, p + "[]", missing)
        if desc is not None:
            sub["description"] = text(desc)


def crd(kind, d, fields, missing):
    columns = [{"name": n, "type": t, "jsonPath": p} for n, t, p in d["columns"]]
    if kind != "ProxySnapshot":
        columns.append({"name": "State", "type": "string", "jsonPath": ".status.state"})
    else:
        columns.append({"name": "Truncated", "type": "boolean", "jsonPath": ".spec.truncated"})
    columns.append({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})
    schema = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            # a copy without shared parts: each property gets its own description
            "spec": json.loads(json.dumps(d["spec"])),
            "status": json.loads(json.dumps(STATUS)),
        },
    }
    describe(schema, fields, kind, "", missing)
    schema = dict({"type": "object", "description": text(fields["kinds"][kind])}, **schema)
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


def markdown(kind, fields):
    """The field table of |kind| for docs/api.md, from its generated schema."""
    doc = crd(kind, SPECS[kind], fields, [])
    rows = []

    def walk(s, path):
        for key, sub in s.get("properties", {}).items():
            p = path + "." + key if path else key
            if p in ("apiVersion", "kind", "metadata", "status"):
                continue
            rows.append((p, sub.get("description", "")))
            walk(sub, p)
            if isinstance(sub.get("items"), dict):
                walk(sub["items"], p + "[]")

    walk(doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"], "")
    out = ["| field | meaning |", "|---|---|"]
    out += ["| `%s` | %s |" % (p.removeprefix("spec."), d) for p, d in rows if p != "spec"]
    return "\n".join(out)


class Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data):
        return True


def main():
    fields = load_fields()
    if len(sys.argv) == 3 and sys.argv[1] == "--markdown":
        print(markdown(sys.argv[2], fields))
        return 0
    docs = {}
    missing = []
    for kind, d in SPECS.items():
        docs[kind] = crd(kind, d, fields, missing)
    if missing:
        print("api/fields.yaml has no description for:\n  " + "\n  ".join(missing),
              file=sys.stderr)
        return 1
    for kind, d in SPECS.items():
        path = os.path.join(HERE, f"{d['plural']}.yaml")
        with open(path, "w") as f:
            f.write("# Generated by api/crds/generate.py from api/fields.yaml; edit those, not "
                    "this file.\n")
            yaml.dump(docs[kind], f, Dumper=Dumper, sort_keys=False, allow_unicode=True,
                      width=100)
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
