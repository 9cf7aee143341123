/*
 * xlate_cluster: what an Upstream says about its Cluster and its endpoints'
 * localities beyond balancing and TLS (issue 22): zone weights and priority
 * failover (spec.localities, emitted as ClusterLoadAssignment
 * LocalityLbEndpoints load_balancing_weight and priority), outlier
 * detection, active health checks, circuit breakers and the HTTP protocol
 * to the endpoints (HTTP/2 for gRPC backends).
 *
 * xlate_cluster_parse.c reads the fields into struct xl_cluster_opts (in
 * the parse's arena, so they live in the object's record);
 * xlate_cluster_encode.c writes them into a Cluster being encoded back to
 * front (cx_wire); xlate_locality.c groups endpoints into localities.
 *
 * Pure; thread-safe; called by the translator's parse and encode steps.
 */
#ifndef XLATE_CLUSTER_H
#define XLATE_CLUSTER_H

#include "xlate_api_types.h"
#include "xlate_encode.h"

#include "cx_wire.h"

#include <stddef.h>
#include <stdint.h>

struct pctx;
struct cJSON;

/* Outlier detection field numbers (envoy.config.cluster.v3.OutlierDetection). */
enum {
    XL_OD_CONSECUTIVE_5XX = 1,
    XL_OD_INTERVAL = 2,
    XL_OD_BASE_EJECTION_TIME = 3,
    XL_OD_MAX_EJECTION_PERCENT = 4,
    XL_OD_ENFORCING_CONSECUTIVE_5XX = 5,
    XL_OD_ENFORCING_SUCCESS_RATE = 6,
    XL_OD_SUCCESS_RATE_MINIMUM_HOSTS = 7,
    XL_OD_SUCCESS_RATE_REQUEST_VOLUME = 8,
    XL_OD_SUCCESS_RATE_STDEV_FACTOR = 9,
    XL_OD_CONSECUTIVE_GATEWAY_FAILURE = 10,
    XL_OD_ENFORCING_CONSECUTIVE_GATEWAY_FAILURE = 11,
    XL_OD_FAILURE_PERCENTAGE_THRESHOLD = 16,
    XL_OD_ENFORCING_FAILURE_PERCENTAGE = 17,
    XL_OD_FAILURE_PERCENTAGE_MINIMUM_HOSTS = 19,
    XL_OD_FAILURE_PERCENTAGE_REQUEST_VOLUME = 20,
    XL_OD_MAX_EJECTION_TIME = 21,
};

/* Cluster fields this module writes (envoy.config.cluster.v3.Cluster). */
enum {
    XL_CLUSTER_HEALTH_CHECKS = 8,
    XL_CLUSTER_CIRCUIT_BREAKERS = 10,
    XL_CLUSTER_OUTLIER_DETECTION = 19,
    XL_CLUSTER_COMMON_LB_CONFIG = 27,
    XL_CLUSTER_TYPED_EXTENSION_PROTOCOL_OPTIONS = 36,
};

#define XL_HTTP_PROTOCOL_OPTIONS_KEY      "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
#define XL_TYPE_URL_HTTP_PROTOCOL_OPTIONS "type.googleapis.com/" XL_HTTP_PROTOCOL_OPTIONS_KEY

/* The Upstream's options, or an all-empty set when it has none. */
const struct xl_cluster_opts *xlate_cluster_opts_of(const struct xl_upstream *u);

/* Parses spec.localities, spec.outlierDetection, spec.healthChecks,
 * spec.circuitBreakers and spec.protocol of an Upstream's |spec| into
 * u->opts (left NULL when none is written). Refuses, with the field's
 * path (InvalidSpec): values out of Envoy's ranges, a zone listed twice,
 * health checks with no or several kinds, missing timeout or interval, an
 * HTTP path not starting with "/", status ranges outside [100, 600) or
 * empty. */
void xlate_parse_cluster_opts(struct pctx *p, const struct cJSON *spec, struct xl_upstream *u);

/* Write |o|'s Cluster fields into |w|, back to front: _high the fields
 * numbered above 24 (common_lb_config 27, typed_extension_protocol_options
 * 36), to be called before transport_socket (24) is written; _mid those
 * between 6 and 23 (health_checks 8, circuit_breakers 10,
 * outlier_detection 19), after ring_hash_lb_config (23) and before
 * lb_policy (6). Envoy mode gets them all; proxyless mode only what gRPC
 * reads (outlier detection, gRFC A50; circuit breakers' max_requests, gRFC
 * A32): health checks and the HTTP protocol are Envoy's alone (gRPC speaks
 * HTTP/2 and takes no active checks from xDS). With spec.localities, Envoy
 * mode also gets common_lb_config.locality_weighted_lb_config: without it
 * Envoy ignores locality weights (gRPC always honours them). */
void xlate_cluster_encode_high(struct cx_wire *w, const struct xl_cluster_opts *o,
                               enum xlate_gateway_mode mode);
void xlate_cluster_encode_mid(struct cx_wire *w, const struct xl_cluster_opts *o,
                              enum xlate_gateway_mode mode);

/* What of |o| proxyless Gateways leave out (health checks, circuit breakers
 * but maxRequests, outlier detection's consecutive-failure fields): writes
 * a report message into |buf| and returns 1, or returns 0 when nothing is
 * left out. */
int xlate_cluster_proxyless_ignored(const struct xl_cluster_opts *o, char *buf, size_t n);

/* One locality of a ClusterLoadAssignment: its endpoints (a run of the
 * sorted endpoint array), weight and priority. */
struct xl_cla_locality {
    const char *zone;
    const struct xl_lb_endpoint *eps;
    size_t n;
    uint32_t weight;   /* >= 1 */
    uint32_t priority; /* priorities present run 0..k-1 without a gap */
};

/* Groups |eps| (sorted by zone) into localities as |o|'s spec.localities
 * say: a listed zone takes its weight (or its endpoints' sum) and
 * priority; zones not listed come after every listed one (priority: the
 * highest listed + 1) with their endpoints' sum as weight. Priorities are
 * then renumbered 0..k-1 over the zones that have endpoints, so a priority
 * whose zones lost every ready endpoint hands over to the next (Envoy and
 * gRPC both refuse a gap). Sorted by (priority, zone). |*out| is malloc'ed
 * (NULL when n is 0). Returns 0 or -1 (memory). */
__attribute__((warn_unused_result)) int xlate_localities(const struct xl_cluster_opts *o,
                                                         const struct xl_lb_endpoint *eps, size_t n,
                                                         struct xl_cla_locality **out,
                                                         size_t *nout);

/* A ClusterLoadAssignment of |locs| in order (endpoints HEALTHY, as
 * xlate_encode_cla writes them). */
__attribute__((warn_unused_result)) int
xlate_encode_cla_localities(const char *name, const struct xl_cla_locality *locs, size_t n,
                            uint8_t **out, size_t *len);

#endif
