/*
 * xlate_api_types: the C form of coxswain's resources (group coxswain.dev/v1:
 * Gateway, VirtualService, RouteTable, Upstream) and of the two core kinds
 * the translator reads (v1 Service, discovery.k8s.io/v1 EndpointSlice).
 *
 * Produced by xlate_api_parse() from an object's JSON; every string and
 * array lives in the arena the parse was given, never in the JSON, so a
 * parsed object outlives the cJSON it came from (the translator keeps parsed
 * objects across passes and re-parses only what changed).
 *
 * Field names follow the CRDs in api/crds/ (see docs/api.md).
 */
#ifndef XLATE_API_TYPES_H
#define XLATE_API_TYPES_H

#include "xlate_snapshot_types.h"
#include "xlate_types.h"

#include <stddef.h>
#include <stdint.h>

struct filter_selector;

#define XLATE_GROUP_VERSION "coxswain.dev/v1"

/* Limits on what one object may hold: far above real use, and a bound on
 * the work a hostile or mistaken object can cause. */
#define XLATE_MAX_DOMAINS       256
#define XLATE_MAX_ROUTES        1024
#define XLATE_MAX_HEADERS       32
#define XLATE_MAX_WEIGHTED      64
#define XLATE_MAX_HOSTS         1024
#define XLATE_MAX_NAMESPACES    256
#define XLATE_MAX_ERRORS        16      /* errors kept per object (the rest counted) */
#define XLATE_MAX_DELEGATION    8       /* RouteTable nesting depth */
#define XLATE_MAX_CERTIFICATES  64      /* Gateway spec.tls.certificates */
#define XLATE_MAX_SANS          64      /* Upstream spec.tls.subjectAltNames */
#define XLATE_MAX_HASH          8       /* route hashPolicy entries */
#define XLATE_MAX_RING_SIZE     8388608 /* Envoy's RingHashLbConfig bound (8M) */
#define XLATE_MAX_LOCALITIES    64      /* Upstream spec.localities */
#define XLATE_MAX_PRIORITY      127     /* a locality's priority (Envoy allows 0-128) */
#define XLATE_MAX_HEALTH_CHECKS 8       /* Upstream spec.healthChecks */
#define XLATE_MAX_STATUS_RANGES 16      /* a health check's expectedStatuses */
/* RE2 program sizes of one object's regexes, added up: past it the rest
 * are not compiled and the object is Rejected (RegexProgramSize). Bounds
 * the RE2 work one object costs: ~1,000 regexes at Envoy's default limit. */
#define XLATE_MAX_REGEX_PROGRAM 100000

/* Annotation on a Secret or ConfigMap that lets objects of other namespaces
 * reference it: a comma-separated list of namespaces, or "*". */
#define XLATE_ALLOW_REFS_ANNOTATION "coxswain.dev/allow-references-from"

/* Why an object (or a part of it) is refused: the report's reason. */
enum xl_reason {
    XL_R_NONE = 0,
    XL_R_INVALID_SPEC,          /* InvalidSpec: a field has a wrong type or value */
    XL_R_UNKNOWN_FIELD,         /* UnknownField */
    XL_R_INVALID_REGEX,         /* InvalidRegex: RE2 refuses it */
    XL_R_INVALID_WEIGHTS,       /* InvalidWeights: weights sum to 0 or overflow */
    XL_R_INVALID_PORT,          /* InvalidPort */
    XL_R_INVALID_DOMAIN,        /* InvalidDomain */
    XL_R_UNSUPPORTED_VERSION,   /* UnsupportedVersion: apiVersion not served */
    XL_R_DUPLICATE,             /* DuplicateObject: same kind/namespace/name twice */
    XL_R_DOMAIN_CONFLICT,       /* DomainConflict */
    XL_R_UPSTREAM_NOT_FOUND,    /* UpstreamNotFound */
    XL_R_UPSTREAM_REJECTED,     /* UpstreamRejected */
    XL_R_ROUTE_TABLE_NOT_FOUND, /* RouteTableNotFound */
    XL_R_ROUTE_TABLE_REJECTED,  /* RouteTableRejected */
    XL_R_DELEGATION_CYCLE,      /* DelegationCycle */
    XL_R_PREFIX_VIOLATION,      /* PrefixViolation */
    XL_R_DELEGATION_DEPTH,      /* DelegationTooDeep */
    XL_R_NO_ROUTES,             /* NoValidRoutes: every route was left out */
    XL_R_NOT_SELECTED,          /* NotSelected: no Gateway selects it */
    XL_R_SERVICE_NOT_FOUND,     /* ServiceNotFound */
    XL_R_PORT_NOT_FOUND,        /* ServicePortNotFound */
    XL_R_NO_ENDPOINTS,          /* NoReadyEndpoints */
    XL_R_UNSUPPORTED,           /* UnsupportedByProxyless: ignored by gRPC clients */
    XL_R_REGEX_SIZE,            /* RegexProgramSize: over the program-size limit */
    XL_R_UNKNOWN_KIND,          /* UnknownKind */
    XL_R_SECRET_NOT_FOUND,      /* SecretNotFound */
    XL_R_CONFIG_MAP_NOT_FOUND,  /* ConfigMapNotFound */
    XL_R_REF_NOT_PERMITTED,     /* RefNotPermitted: another namespace's object, not shared */
    XL_R_INVALID_CERTIFICATE,   /* InvalidCertificate: wrong type, missing keys, bad PEM... */
    XL_R_CERT_EXPIRED,          /* CertificateExpired */
    XL_R_CERT_NOT_YET_VALID,    /* CertificateNotYetValid */
    XL_R_DOMAIN_NOT_COVERED,    /* DomainNotCovered: no certificate names the domain */
    XL_R_CERT_UNUSED,           /* CertificateUnused: covers no served domain */
    XL_R_BUDGET,                /* BudgetExceeded: over a struct xlate_limits budget */
    XL_R_HASH_IGNORED,          /* HashPolicyIgnored: the Upstream does not balance by hash */
    XL_R_LISTENER_CONFLICT,     /* ListenerConflict: two listeners on one socket */
    XL_R_LISTENER_NOT_FOUND,    /* ListenerNotFound: no listener of the Gateway serves it */
    XL_R_COUNT,
};

const char *xlate_reason_name(enum xl_reason r);

/* One problem found in an object: "spec.routes[1].match.regex: ...". */
struct xl_error {
    enum xl_reason reason;
    enum xlate_state state; /* XLATE_WARNING or XLATE_REJECTED */
    char *msg;
};

struct xl_errors {
    struct xl_error *items; /* in the arena given to xlate_errors_add; NULL while none */
    size_t n;
    size_t dropped; /* errors beyond XLATE_MAX_ERRORS */
};

struct xl_label {
    char *key, *value;
};

struct xl_meta {
    char *ns, *name;
    char *uid;      /* Gateways, VirtualServices, RouteTables, Upstreams (reports); else NULL */
    char *creation; /* metadata.creationTimestamp (orders domain claims): VirtualServices
                     * only, else NULL */
    int64_t generation;
    struct xl_label *labels; /* sorted by key */
    size_t nlabels;
};

struct xl_ref {
    char *ns, *name;
};

enum xl_path_kind {
    XL_PATH_PREFIX = 0,
    XL_PATH_EXACT = 1,
    XL_PATH_REGEX = 2,
};

enum xl_header_kind {
    XL_HDR_PRESENT = 0,
    XL_HDR_EXACT = 1,
    XL_HDR_PREFIX = 2,
    XL_HDR_REGEX = 3,
};

struct xl_header {
    char *name;
    char *value; /* NULL for present */
    enum xl_header_kind kind;
    int invert;
};

struct xl_match {
    enum xl_path_kind kind;
    char *value;
    /* regex: the literal text every match starts with (xlate_re2.h), what a
     * delegating route's prefix is checked against; "" when none */
    const char *regex_prefix;
    int case_sensitive; /* default 1 */
    int has_case;       /* caseSensitive was written */
    struct xl_header *headers;
    size_t nheaders;
};

enum xl_action_kind {
    XL_ACT_UPSTREAM = 0,
    XL_ACT_WEIGHTED = 1,
    XL_ACT_DELEGATE = 2,
    XL_ACT_REDIRECT = 3, /* ext->redirect (translator/route) */
};

struct xl_weighted {
    struct xl_ref upstream;
    uint32_t weight;
};

struct xl_delegate {
    char *name;                       /* by name, or NULL */
    char *ns;                         /* namespace (defaults to the owner's) */
    struct filter_selector *selector; /* by labels, or NULL (freed with the object) */
};

/* What a hash policy hashes; the numbers are the fields of Envoy's
 * RouteAction.HashPolicy. */
enum xl_hash_kind {
    XL_HASH_HEADER = 1,
    XL_HASH_COOKIE = 2,
    XL_HASH_SOURCE_IP = 3, /* connection_properties.source_ip */
    XL_HASH_QUERY = 5,
};

struct xl_hash_policy {
    enum xl_hash_kind kind;
    char *name;        /* header, cookie or query parameter name; NULL for source IP */
    char *cookie_path; /* or NULL */
    int64_t cookie_ttl_ns;
    int has_ttl; /* a cookie is generated when absent */
    int terminal;
};

struct xl_route {
    struct xl_match match;
    struct xl_hash_policy *hash; /* spec order; inherited by delegated routes without one */
    size_t nhash;
    enum xl_action_kind action;
    int has_retries;
    struct xl_ref upstream;
    struct xl_weighted *weighted;
    size_t nweighted;
    uint64_t weight_sum;
    struct xl_delegate delegate;
    int64_t timeout_ns;
    int has_timeout;
    uint32_t retry_attempts;
    char *retry_on; /* Envoy retry_on list, comma-separated, or NULL */
    char *prefix_rewrite;
    /* redirects, header changes, rewrites, query and method matching
     * (translator/route/xlate_route.h), in the arena; NULL when the route
     * uses none of them, as most do */
    struct xl_route_ext *ext;
};

/* A TLS protocol version; the numbers are Envoy's TlsParameters.TlsProtocol. */
enum xl_tls_version {
    XL_TLS_AUTO = 0,
    XL_TLS_1_0 = 1,
    XL_TLS_1_1 = 2,
    XL_TLS_1_2 = 3,
    XL_TLS_1_3 = 4,
};

/* A reference to a Secret or a ConfigMap (and its key). */
struct xl_obj_ref {
    char *ns, *name;
    char *key; /* ConfigMaps: the data key ("ca.crt" by default) */
};

struct xl_gateway_tls {
    int enabled;              /* spec.tls present */
    struct xl_obj_ref *certs; /* Secrets of type kubernetes.io/tls, in spec order */
    size_t ncerts;
    enum xl_tls_version min_version, max_version;
    char **alpn; /* default h2, http/1.1 */
    size_t nalpn;
    int has_client_ca;
    struct xl_obj_ref client_ca; /* ConfigMap holding the client CA bundle */
    int client_cert_optional;    /* verify when presented, do not require */
};

struct xl_upstream_tls {
    int enabled;
    char *sni; /* or NULL */
    int has_ca;
    struct xl_obj_ref ca; /* ConfigMap holding the CA bundle */
    int insecure_skip_verify;
    char **sans; /* subjectAltNames the server must present (default: sni) */
    size_t nsans;
    int has_client_cert;
    struct xl_obj_ref client_cert; /* Secret, for mTLS to the backend */
    enum xl_tls_version min_version, max_version;
};

/* spec.xdsAccess: ServiceAccounts of other namespaces that may receive the
 * Gateway's configuration, and the opt-in for clients without credentials. */
#define XLATE_MAX_XDS_ACCESS 64
struct xl_gateway_access {
    size_t n;
    struct xlate_sa_ref *sas; /* in the arena */
    int unauthenticated;
};

/* spec.listeners[]: one socket Listener each (envoy mode). */
#define XLATE_MAX_LISTENERS 16
/* certificates one Gateway names in all, spec.tls and every listener's
 * tls together (16 listeners of 64 and spec.tls would be 1,088) */
#define XLATE_MAX_GATEWAY_CERTIFICATES 128
struct xl_listener {
    char *name;    /* a DNS label, unique in the Gateway */
    char *address; /* an IP literal (default: the Gateway's bindAddress) */
    uint32_t port;
    int https;                  /* protocol HTTPS: its own tls, else the Gateway's spec.tls */
    struct xl_gateway_tls *tls; /* its own tls (in the arena), or NULL */
};

/* spec.accessLog[]: a file access log of the Gateway's listeners. */
#define XLATE_MAX_ACCESS_LOGS 4
#define XLATE_MAX_LOG_FIELDS  64
struct xl_access_log {
    char *path;            /* absolute */
    char *text;            /* text format, or NULL */
    struct xl_label *json; /* json format: key -> format, in spec order; or NULL */
    size_t njson;
};

struct xl_gateway {
    enum xlate_gateway_mode mode;
    struct xl_gateway_access access;
    char *bind_address;
    uint32_t bind_port;
    struct filter_selector *vs_selector; /* NULL: every VirtualService */
    char **vs_namespaces;                /* sorted; empty: the Gateway's own */
    size_t n_vs_namespaces;
    int all_namespaces; /* "*" */
    /* spec.tls, in the arena; NULL when absent (most Gateways have none,
     * and the parsed form of every object is as big as the largest kind's) */
    struct xl_gateway_tls *tls;
    /* spec.listeners, in the arena; none: one listener on bindAddress:
     * bindPort, HTTPS when tls is set */
    struct xl_listener *listeners;
    size_t nlisteners;
    struct xl_access_log *logs; /* spec.accessLog, in the arena */
    size_t nlogs;
};

struct xl_virtual_service {
    /* requireTls, cors, rateLimit (translator/route/xlate_route.h), in
     * the arena; NULL when none is set */
    struct xl_vs_ext *ext;
    char **domains;
    size_t ndomains;
    struct xl_route *routes;
    size_t nroutes;
    /* what domain claims order and compare by, found at the decode:
     * metadata.creationTimestamp in Unix seconds when readable (none when
     * absent: a manifest not yet applied), and a hash of it and domains */
    int64_t created;
    int has_created;
    uint64_t claim_hash;
};

struct xl_route_table {
    struct xl_route *routes;
    size_t nroutes;
};

enum xl_lb_policy {
    XL_LB_ROUND_ROBIN = 0,
    XL_LB_LEAST_REQUEST = 1,
    XL_LB_RING_HASH = 2,
    XL_LB_RANDOM = 3,
    XL_LB_MAGLEV = 4,
};

struct xl_static_host {
    char *address; /* an IP literal */
    uint32_t port;
    uint32_t weight; /* default 1 */
    char *zone;      /* its locality's zone; "" when none */
    char *hostname;  /* Endpoint.hostname (auto host rewrite), or NULL */
};

/* spec.localities[]: a zone's weight and priority (ClusterLoadAssignment
 * LocalityLbEndpoints load_balancing_weight and priority). */
struct xl_locality {
    char *zone;        /* "" names the endpoints without a zone */
    uint32_t weight;   /* 0: the sum of its endpoints' weights */
    uint32_t priority; /* 0 first */
};

/* Envoy's OutlierDetection fields (outlier_detection.proto) by field
 * number: UInt32Values in u32[], Durations in dur_ns[]; bit n of |set|
 * says field n was written. */
#define XL_OD_FIELDS 22
struct xl_outlier {
    uint32_t set;
    uint32_t u32[XL_OD_FIELDS];
    int64_t dur_ns[XL_OD_FIELDS];
};

enum xl_hc_kind {
    XL_HC_HTTP = 8,  /* HealthCheck.http_health_check */
    XL_HC_TCP = 9,   /* tcp_health_check */
    XL_HC_GRPC = 11, /* grpc_health_check */
};

struct xl_status_range {
    uint32_t start, end; /* [start, end), within [100, 600) */
};

/* One spec.healthChecks[] entry (Envoy's core.v3.HealthCheck). */
struct xl_health_check {
    enum xl_hc_kind kind;
    int64_t timeout_ns, interval_ns, jitter_ns; /* jitter: 0 when not set */
    uint32_t unhealthy_threshold, healthy_threshold;
    char *path, *host;                /* http: path (required), host (or NULL) */
    struct xl_status_range *statuses; /* http: expected statuses (none: Envoy's 200) */
    size_t nstatuses;
    char *service, *authority; /* grpc: both optional (NULL) */
};

/* spec.circuitBreakers: Thresholds of the DEFAULT priority by field
 * number (circuit_breaker.proto: 2 max_connections ... 5 max_retries). */
#define XL_CB_FIELDS 6
struct xl_circuit_breakers {
    uint32_t set; /* bit n: field n was written */
    uint32_t max[XL_CB_FIELDS];
};

enum xl_upstream_protocol {
    XL_PROTO_HTTP1 = 0, /* Envoy's default: nothing written */
    XL_PROTO_HTTP2 = 1, /* HttpProtocolOptions.explicit_http_config.http2_protocol_options */
};

/* What an Upstream says about its Cluster beyond balancing and TLS: read it
 * through xlate_cluster_opts_of (most Upstreams have none of it, and the
 * parsed form of every object is as big as the largest kind's). */
struct xl_cluster_opts {
    struct xl_locality *localities; /* spec order, zones unique */
    size_t nlocalities;
    struct xl_outlier *outlier; /* or NULL */
    struct xl_health_check *hcs;
    size_t nhcs;
    struct xl_circuit_breakers *cb; /* or NULL */
    enum xl_upstream_protocol protocol;
};

struct xl_upstream {
    int is_kube;
    char *kube_service, *kube_ns;
    char *kube_key;       /* "kube_ns/kube_service" (NULL: none, or longer than any name) */
    uint32_t kube_port;   /* Service port number, or 0 when named */
    char *kube_port_name; /* Service port name, or NULL */
    struct xl_static_host *hosts;
    size_t nhosts;
    enum xl_lb_policy lb;
    uint32_t ring_min, ring_max; /* ringHash sizes; 0: not set (Envoy's defaults) */
    int64_t connect_timeout_ns;
    int has_connect_timeout;
    struct xl_upstream_tls *tls;  /* like xl_gateway.tls: xlate_upstream_tls_of */
    struct xl_cluster_opts *opts; /* or NULL: xlate_cluster_opts_of */
};

struct xl_service_port {
    char *name; /* "" when unnamed */
    uint32_t port;
};

struct xl_service {
    struct xl_service_port *ports;
    size_t nports;
};

/* 32 bytes, as before hostname came: one per endpoint of every slice */
struct xl_slice_endpoint {
    char **addresses;
    uint32_t naddresses; /* Kubernetes allows 100 */
    int ready;           /* conditions.ready, absent counts as ready */
    char *zone;          /* "" when absent */
    char *hostname;      /* a DNS-1123 subdomain, or NULL (absent or not one) */
};

struct xl_endpoint_slice {
    char *service; /* label kubernetes.io/service-name, or NULL */
    /* "namespace/service", what the translator indexes it under; NULL
     * without a service (or one longer than any name) */
    char *svc_key;
    int ip_family; /* 4, 6, or 0 for FQDN (unusable for EDS) */
    struct xl_service_port *ports;
    size_t nports;
    struct xl_slice_endpoint *endpoints;
    size_t nendpoints;
};

/* What the leaf certificate of a chain says (xlate_tls.c). */
struct xl_cert_info {
    size_t nchain; /* certificates in the PEM chain */
    char **dns;    /* DNS subjectAltNames, lower case */
    size_t ndns;
    char *cn;                      /* subject commonName, lower case, or NULL */
    int64_t not_before, not_after; /* Unix seconds */
};

enum xl_secret_state {
    XL_SECRET_OK = 0,
    XL_SECRET_WRONG_TYPE = 1,
    XL_SECRET_MISSING = 2, /* tls.crt or tls.key missing or empty */
    XL_SECRET_BAD_PEM = 3, /* not base64, no certificate, unreadable key */
    XL_SECRET_KEY_MISMATCH = 4,
};

/* A Secret (core/v1): what a TLS certificate needs. */
struct xl_secret {
    char *type;
    enum xl_secret_state state;
    char *problem; /* why it is unusable, no field path ("tls.key is missing or empty") */
    uint8_t *crt;  /* tls.crt, decoded (PEM) */
    size_t crtlen;
    uint8_t *key; /* tls.key, decoded (PEM); wiped when the object is released */
    size_t keylen;
    struct xl_cert_info cert; /* when the chain parsed */
    char *allow_from;         /* XLATE_ALLOW_REFS_ANNOTATION, or NULL */
};

/* A ConfigMap (core/v1): its string data. */
struct xl_config_map {
    struct xl_label *data; /* key -> value, sorted by key */
    size_t ndata;
    char *allow_from; /* XLATE_ALLOW_REFS_ANNOTATION, or NULL */
};

/* One parsed input object. */
struct xl_object {
    enum xlate_kind kind;
    struct xl_meta meta;
    struct xl_errors errors; /* found by parsing; any REJECTED one rejects it */
    union {
        struct xl_gateway gw;
        struct xl_virtual_service vs;
        struct xl_route_table rt;
        struct xl_upstream up;
        struct xl_service svc;
        struct xl_endpoint_slice eps;
        struct xl_secret secret;
        struct xl_config_map cm;
    } u;
};

#endif
