/*
 * An Upstream's cluster options written into its Cluster (xlate_cluster.h),
 * back to front with cx_wire: each message's fields last to first. Field
 * numbers are Envoy's (cluster.proto, outlier_detection.proto,
 * circuit_breaker.proto, health_check.proto, http_protocol_options.proto);
 * test_xlate_encode proves the bytes are protobuf-c's for the .proto subset
 * and test_cluster_api checks the subset against Envoy's numbers and types.
 */
#include "xlate_cluster.h"

#include <stdio.h>
#include <string.h>

enum {
    COMMON_LB_LOCALITY_WEIGHTED = 3, /* CommonLbConfig.locality_weighted_lb_config */
    MAP_KEY = 1,
    MAP_VALUE = 2,
    ANY_TYPE_URL = 1,
    ANY_VALUE = 2,
    HPO_EXPLICIT_HTTP_CONFIG = 3, /* HttpProtocolOptions.explicit_http_config */
    EXPLICIT_HTTP2 = 2,           /* ExplicitHttpConfig.http2_protocol_options */
    CB_THRESHOLDS = 1,            /* CircuitBreakers.thresholds */
    CB_MAX_REQUESTS = 4,          /* Thresholds.max_requests */
    HC_TIMEOUT = 1,
    HC_INTERVAL = 2,
    HC_INTERVAL_JITTER = 3,
    HC_UNHEALTHY_THRESHOLD = 4,
    HC_HEALTHY_THRESHOLD = 5,
    HTTP_HC_HOST = 1,
    HTTP_HC_PATH = 2,
    HTTP_HC_EXPECTED_STATUSES = 9,
    GRPC_HC_SERVICE_NAME = 1,
    GRPC_HC_AUTHORITY = 2,
    RANGE_START = 1, /* type.v3.Int64Range */
    RANGE_END = 2,
};

static int od_is_duration(int field)
{
    return field == XL_OD_INTERVAL || field == XL_OD_BASE_EJECTION_TIME ||
           field == XL_OD_MAX_EJECTION_TIME;
}

void xlate_cluster_encode_high(struct cx_wire *w, const struct xl_cluster_opts *o,
                               enum xlate_gateway_mode mode)
{
    if (mode != XLATE_MODE_ENVOY)
        return;
    if (o->protocol == XL_PROTO_HTTP2) {
        /* typed_extension_protocol_options: a map<string, Any> entry */
        size_t entry = cx_wire_mark(w), any = entry, hpo = entry, explicit = entry;
        cx_wire_bytes(w, EXPLICIT_HTTP2, NULL, 0); /* http2_protocol_options: {} */
        cx_wire_close(w, HPO_EXPLICIT_HTTP_CONFIG, explicit);
        cx_wire_close(w, ANY_VALUE, hpo);
        cx_wire_str(w, ANY_TYPE_URL, XL_TYPE_URL_HTTP_PROTOCOL_OPTIONS);
        cx_wire_close(w, MAP_VALUE, any);
        cx_wire_str(w, MAP_KEY, XL_HTTP_PROTOCOL_OPTIONS_KEY);
        cx_wire_close(w, XL_CLUSTER_TYPED_EXTENSION_PROTOCOL_OPTIONS, entry);
    }
    if (o->nlocalities) {
        size_t c = cx_wire_mark(w);
        cx_wire_bytes(w, COMMON_LB_LOCALITY_WEIGHTED, NULL, 0); /* {} */
        cx_wire_close(w, XL_CLUSTER_COMMON_LB_CONFIG, c);
    }
}

static void enc_outlier(struct cx_wire *w, const struct xl_outlier *od)
{
    size_t m = cx_wire_mark(w);
    for (int f = XL_OD_FIELDS - 1; f > 0; f--) {
        if (!(od->set & (UINT32_C(1) << f)))
            continue;
        if (od_is_duration(f))
            cx_wire_duration(w, (uint32_t)f, od->dur_ns[f]);
        else
            cx_wire_wrapped(w, (uint32_t)f, od->u32[f]);
    }
    cx_wire_close(w, XL_CLUSTER_OUTLIER_DETECTION, m);
}

static void enc_circuit_breakers(struct cx_wire *w, const struct xl_circuit_breakers *cb,
                                 enum xlate_gateway_mode mode)
{
    /* gRPC reads max_requests alone (gRFC A32) */
    uint32_t set = mode == XLATE_MODE_ENVOY ? cb->set : cb->set & (UINT32_C(1) << CB_MAX_REQUESTS);
    if (!set)
        return;
    size_t m = cx_wire_mark(w), t = m;
    for (int f = XL_CB_FIELDS - 1; f > 0; f--)
        if (set & (UINT32_C(1) << f))
            cx_wire_wrapped(w, (uint32_t)f, cb->max[f]);
    /* priority DEFAULT (0): left out */
    cx_wire_close(w, CB_THRESHOLDS, t);
    cx_wire_close(w, XL_CLUSTER_CIRCUIT_BREAKERS, m);
}

static void enc_health_check(struct cx_wire *w, const struct xl_health_check *h)
{
    size_t m = cx_wire_mark(w), k = m;
    switch (h->kind) {
    case XL_HC_HTTP:
        for (size_t i = h->nstatuses; i-- > 0;) {
            size_t r = cx_wire_mark(w);
            cx_wire_uint(w, RANGE_END, h->statuses[i].end);
            cx_wire_uint(w, RANGE_START, h->statuses[i].start);
            cx_wire_close(w, HTTP_HC_EXPECTED_STATUSES, r);
        }
        cx_wire_str3(w, HTTP_HC_PATH, h->path);
        if (h->host)
            cx_wire_str3(w, HTTP_HC_HOST, h->host);
        break;
    case XL_HC_GRPC:
        if (h->authority)
            cx_wire_str3(w, GRPC_HC_AUTHORITY, h->authority);
        if (h->service)
            cx_wire_str3(w, GRPC_HC_SERVICE_NAME, h->service);
        break;
    case XL_HC_TCP:
        break; /* connect only */
    }
    cx_wire_close(w, (uint32_t)h->kind, k); /* the oneof member, even when empty */
    cx_wire_wrapped(w, HC_HEALTHY_THRESHOLD, h->healthy_threshold);
    cx_wire_wrapped(w, HC_UNHEALTHY_THRESHOLD, h->unhealthy_threshold);
    if (h->jitter_ns > 0)
        cx_wire_duration(w, HC_INTERVAL_JITTER, h->jitter_ns);
    cx_wire_duration(w, HC_INTERVAL, h->interval_ns);
    cx_wire_duration(w, HC_TIMEOUT, h->timeout_ns);
    cx_wire_close(w, XL_CLUSTER_HEALTH_CHECKS, m);
}

void xlate_cluster_encode_mid(struct cx_wire *w, const struct xl_cluster_opts *o,
                              enum xlate_gateway_mode mode)
{
    if (o->outlier)
        enc_outlier(w, o->outlier);
    if (o->cb)
        enc_circuit_breakers(w, o->cb, mode);
    if (mode == XLATE_MODE_ENVOY)
        for (size_t i = o->nhcs; i-- > 0;)
            enc_health_check(w, &o->hcs[i]);
}

int xlate_cluster_proxyless_ignored(const struct xl_cluster_opts *o, char *buf, size_t n)
{
    static const uint32_t od_envoy_only =
        (UINT32_C(1) << XL_OD_CONSECUTIVE_5XX) | (UINT32_C(1) << XL_OD_ENFORCING_CONSECUTIVE_5XX) |
        (UINT32_C(1) << XL_OD_CONSECUTIVE_GATEWAY_FAILURE) |
        (UINT32_C(1) << XL_OD_ENFORCING_CONSECUTIVE_GATEWAY_FAILURE);
    int hc = o->nhcs > 0;
    int cb = o->cb && (o->cb->set & ~(UINT32_C(1) << CB_MAX_REQUESTS));
    int od = o->outlier && (o->outlier->set & od_envoy_only);
    if (!hc && !cb && !od)
        return 0;
    snprintf(buf, n, "%s%s%s%s%s not applied for proxyless Gateways (gRPC clients take %s)",
             hc ? "spec.healthChecks" : "", hc && (cb || od) ? ", " : "",
             cb ? "spec.circuitBreakers other than maxRequests" : "", cb && od ? ", " : "",
             od ? "spec.outlierDetection's consecutive-failure fields" : "",
             "no active health checks from xDS, maxRequests alone of the circuit breakers "
             "(gRFC A32) and success-rate and failure-percentage ejection alone (gRFC A50)");
    return 1;
}
