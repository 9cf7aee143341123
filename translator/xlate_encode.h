/*
 * xlate_encode: builds and serialises the Envoy xDS messages the translator
 * emits (protobuf-c, api/proto): virtual hosts, route configurations
 * assembled from already-encoded virtual hosts, socket and API listeners,
 * EDS clusters and cluster load assignments.
 *
 * Every function returns malloc'ed bytes the caller owns. Route
 * configurations are concatenations of encoded virtual hosts (protobuf
 * allows a repeated message field to be written element by element), so a
 * changed VirtualService re-encodes only its own virtual host.
 *
 * What gRPC's xDS client requires (reference/xds.md) is built in: the router
 * filter last, RDS through ADS, EDS through ADS, a locality message and a
 * positive weight on every locality, weights summing to total_weight.
 *
 * Pure; thread-safe.
 */
#ifndef XLATE_ENCODE_H
#define XLATE_ENCODE_H

#include "xlate_api_types.h"

#include <stddef.h>
#include <stdint.h>

#define XL_HCM_FILTER_NAME    "envoy.filters.network.http_connection_manager"
#define XL_ROUTER_FILTER_NAME "envoy.filters.http.router"
#define XL_TYPE_URL_HCM                                                                \
    "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3." \
    "HttpConnectionManager"
#define XL_TYPE_URL_ROUTER    "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
#define XL_TLS_SOCKET_NAME    "envoy.transport_sockets.tls"
#define XL_TLS_INSPECTOR_NAME "envoy.filters.listener.tls_inspector"
#define XL_TYPE_URL_DOWNSTREAM_TLS \
    "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"
#define XL_TYPE_URL_UPSTREAM_TLS \
    "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
#define XL_TYPE_URL_TLS_INSPECTOR \
    "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"

struct xl_redirect;
struct xl_vs_ext;
struct xl_header_ops;
struct xl_query;

struct xl_cluster_weight {
    const char *cluster;
    uint32_t weight; /* > 0 */
};

/* A route after delegation and reference resolution. */
struct xl_rroute {
    enum xl_path_kind kind;
    const char *path; /* prefix, exact path or regex */
    int case_sensitive;
    const struct xl_header *const *headers; /* parents' headers first */
    size_t nheaders;
    const char *cluster; /* single upstream, or NULL */
    const struct xl_cluster_weight *wc;
    size_t nwc;
    uint32_t total_weight;
    int64_t timeout_ns;
    int has_timeout;
    uint32_t retry_attempts;
    const char *retry_on;
    int has_retries;
    const char *prefix_rewrite;
    const struct xl_hash_policy *const *hash; /* RouteAction.hash_policy, in order */
    size_t nhash;
    /* translator/route/xlate_route.h */
    const struct xl_redirect *redirect; /* Route.redirect instead of a RouteAction, or NULL */
    const struct xl_header_ops *req_headers, *resp_headers; /* or NULL */
    const char *host_rewrite;                               /* or NULL */
    int auto_host_rewrite;
    const char *regex_pattern, *regex_subst; /* regex_rewrite, or NULL */
    const struct xl_query *const *query;     /* RouteMatch.query_parameters, parents' first */
    const struct xl_rate_limit *rate_limit;  /* Route.typed_per_filter_config, or NULL */
    size_t nquery;
};

/* One VirtualHost, at most |max_bytes| long (0: no cap). Returns 0, -1
 * (memory) or -2: it would pass |max_bytes| (nothing larger was
 * allocated). */
__attribute__((warn_unused_result)) int
xlate_encode_vhost(const char *name, char *const *domains, size_t ndomains,
                   const struct xl_rroute *routes, size_t nroutes, enum xlate_gateway_mode mode,
                   size_t max_bytes, uint8_t **out, size_t *len);
/* xlate_encode_vhost with the VirtualService's host-wide settings |x|
 * (require_tls, per-filter configurations; NULL: none). */
__attribute__((warn_unused_result)) int
xlate_encode_vhost_ex(const char *name, char *const *domains, size_t ndomains,
                      const struct xl_rroute *routes, size_t nroutes, const struct xl_vs_ext *x,
                      enum xlate_gateway_mode mode, size_t max_bytes, uint8_t **out, size_t *len);

struct xl_bytes {
    const uint8_t *data;
    size_t len;
};

/* A RouteConfiguration named |name| holding the encoded virtual hosts in
 * order. Byte-identical to encoding the whole message at once. *out is
 * from xlate_big_alloc with |big_flags| (xlate_resource_new_big; else
 * xlate_big_free). */
__attribute__((warn_unused_result)) int xlate_encode_route_config(const char *name,
                                                                  const struct xl_bytes *vhosts,
                                                                  size_t n, unsigned big_flags,
                                                                  uint8_t **out, size_t *len);

/* What the HttpConnectionManager of a socket listener carries besides RDS
 * and the router: the CORS and local rate limit filters (no-ops until a
 * VirtualHost or Route configures them) and the Gateway's access logs. */
struct xl_hcm_opts {
    int envoy_filters;
    const struct xl_access_log *logs;
    size_t nlogs;
};

/* xlate_encode_listener_envoy with |o| (NULL: neither filters nor logs). */
__attribute__((warn_unused_result)) int
xlate_encode_listener_envoy_ex(const char *name, const char *address, uint32_t port,
                               const char *rc_name, const char *stat_prefix,
                               const struct xl_hcm_opts *o, uint8_t **out, size_t *len);

/* Envoy mode: a socket Listener on address:port whose one filter chain is an
 * HttpConnectionManager using RDS (ADS) for |rc_name|, router filter last. */
__attribute__((warn_unused_result)) int
xlate_encode_listener_envoy(const char *name, const char *address, uint32_t port,
                            const char *rc_name, const char *stat_prefix, uint8_t **out,
                            size_t *len);

/* TLS material never goes inline into a Listener or a Cluster: their TLS
 * contexts name SDS Secrets (SdsSecretConfig, sds_config ADS), which the
 * same stream serves as resources of type XDS_SECRET. A new certificate
 * changes the Secret, not the Listener or Cluster naming it. */

/* The SDS Secret holding the certificate and key of Secret |ns|/|name|:
 * "secret:<ns>/<name>" into |out|. */
void xlate_sds_cert_name(const char *ns, const char *name, char *out, size_t cap);
/* The SDS Secret holding the CA bundle under |key| of ConfigMap
 * |ns|/|name|: "configmap:<ns>/<name>/<key>" into |out|. */
void xlate_sds_ca_name(const char *ns, const char *name, const char *key, char *out, size_t cap);
#define XL_SDS_NAME_MAX 600

/* A Secret resource named |name| whose tls_certificate holds |chain| and
 * |key| (PEM; the key is written as inline_bytes, which debug renderings
 * redact). */
__attribute__((warn_unused_result)) int
xlate_encode_secret_cert(const char *name, const uint8_t *chain, size_t chainlen,
                         const uint8_t *key, size_t keylen, uint8_t **out, size_t *len);
/* A Secret resource named |name| whose validation_context holds the CA
 * bundle |pem| as trusted_ca. */
__attribute__((warn_unused_result)) int xlate_encode_secret_ca(const char *name, const char *pem,
                                                               size_t pemlen, uint8_t **out,
                                                               size_t *len);

/* One filter chain of a TLS listener: the certificate of SDS Secret
 * |secret| for the clients asking (SNI) for one of |server_names|. */
struct xl_tls_chain {
    const char *name; /* the filter chain's name: the Secret, "namespace/name" */
    char *const *server_names;
    size_t nserver_names;
    const char *secret; /* SDS name (xlate_sds_cert_name) */
};

/* What every filter chain of a TLS listener shares. */
struct xl_downstream_tls {
    enum xl_tls_version min_version, max_version; /* XL_TLS_AUTO: Envoy's default */
    char *const *alpn;
    size_t nalpn;
    const char *client_ca; /* SDS name of the CA bundle verifying clients, or NULL */
    int require_client_cert;
};

/* Envoy mode with TLS: like xlate_encode_listener_envoy, plus the TLS
 * inspector listener filter, one filter chain per entry of |chains|
 * (filter_chain_match.server_names, a DownstreamTlsContext transport
 * socket, the same HttpConnectionManager) and |dflt| as the
 * default_filter_chain (clients without SNI, or asking for a name no chain
 * lists). */
__attribute__((warn_unused_result)) int xlate_encode_listener_envoy_tls(
    const char *name, const char *address, uint32_t port, const char *rc_name,
    const char *stat_prefix, const struct xl_downstream_tls *tls, const struct xl_tls_chain *chains,
    size_t nchains, const struct xl_tls_chain *dflt, const struct xl_hcm_opts *o, uint8_t **out,
    size_t *len);

/* Proxyless mode: an API Listener named |name| (the gRPC target) whose
 * api_listener is an HttpConnectionManager using RDS (ADS) for |rc_name|. */
__attribute__((warn_unused_result)) int xlate_encode_listener_api(const char *name,
                                                                  const char *rc_name,
                                                                  const char *stat_prefix,
                                                                  uint8_t **out, size_t *len);

/* An EDS Cluster (eds_config ADS, no service_name: the EDS name is |name|). */
__attribute__((warn_unused_result)) int xlate_encode_cluster(const char *name, enum xl_lb_policy lb,
                                                             int64_t connect_timeout_ns,
                                                             int has_connect_timeout, uint8_t **out,
                                                             size_t *len);

/* TLS to a cluster's endpoints (an UpstreamTlsContext transport socket). */
struct xl_upstream_tls_enc {
    const char *sni;   /* or NULL */
    const char *ca;    /* SDS name of the CA bundle verifying the server, or NULL (no
                        * verification) */
    char *const *sans; /* DNS names the server certificate must carry (any of): an
                        * inline default_validation_context combined with |ca|'s */
    size_t nsans;
    const char *client; /* SDS name of the client certificate (mTLS), or NULL */
    enum xl_tls_version min_version, max_version;
};

/* xlate_encode_cluster with a TLS transport socket when |tls| is not NULL. */
__attribute__((warn_unused_result)) int
xlate_encode_cluster_tls(const char *name, enum xl_lb_policy lb, int64_t connect_timeout_ns,
                         int has_connect_timeout, const struct xl_upstream_tls_enc *tls,
                         uint8_t **out, size_t *len);

/* Everything an EDS Cluster carries besides its name. */
struct xl_cluster_enc {
    enum xl_lb_policy lb;
    uint32_t ring_min, ring_max; /* ring_hash_lb_config sizes (RING_HASH); 0: not written */
    int64_t connect_timeout_ns;
    int has_connect_timeout;
    const struct xl_upstream_tls_enc *tls; /* or NULL */
    const struct xl_cluster_opts *opts;    /* or NULL (cluster/xlate_cluster.h) */
    enum xlate_gateway_mode mode;          /* which of opts apply */
};

/* The EDS Cluster |name| as |c| says (the two above are this). */
__attribute__((warn_unused_result)) int xlate_encode_cluster_ex(const char *name,
                                                                const struct xl_cluster_enc *c,
                                                                uint8_t **out, size_t *len);

struct xl_lb_endpoint {
    const char *address; /* IP literal */
    uint32_t port;
    uint32_t weight; /* >= 1 */
    const char *zone;
    const char *hostname; /* Endpoint.hostname, or NULL */
};

/* A ClusterLoadAssignment. |eps| must be sorted by zone, then address and
 * port, without duplicates; each zone becomes one locality (weight = the
 * sum of its endpoints' weights), priority 0, endpoints HEALTHY. */
__attribute__((warn_unused_result)) int xlate_encode_cla(const char *name,
                                                         const struct xl_lb_endpoint *eps, size_t n,
                                                         uint8_t **out, size_t *len);

#endif
