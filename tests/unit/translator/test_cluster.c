/* translator/cluster: an Upstream's localities and cluster options, parsed
 * (Envoy's validation rules as boundary cases), grouped (priorities without
 * gaps) and encoded (the bytes are protobuf-c's for the .proto subset, and
 * the subset's field numbers and types are Envoy's). */
#include "cxtest.h"
#include "xlate_api.h"
#include "xlate_cluster.h"
#include "xlate_encode.h"

#include "envoy/config/cluster/v3/circuit_breaker.pb-c.h"
#include "envoy/config/cluster/v3/cluster.pb-c.h"
#include "envoy/config/cluster/v3/outlier_detection.pb-c.h"
#include "envoy/config/core/v3/health_check.pb-c.h"
#include "envoy/config/endpoint/v3/endpoint.pb-c.h"
#include "envoy/extensions/upstreams/http/v3/http_protocol_options.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef Envoy__Config__Cluster__V3__Cluster Cluster;

/* ---- the .proto subset against Envoy's API --------------------------------
 * Numbers, types and labels as envoyproxy/envoy's api/ declares them
 * (cluster.proto, outlier_detection.proto, circuit_breaker.proto,
 * health_check.proto, endpoint_components.proto,
 * http_protocol_options.proto). A renumbered or retyped field in the subset
 * would make every encoder agree with a wrong schema: this table is the
 * independent copy. */
static const struct envoy_field {
    const ProtobufCMessageDescriptor *msg;
    const char *name;
    unsigned number;
    ProtobufCType type;
    ProtobufCLabel label; /* NONE: a proto3 singular field */
    const char *msg_type; /* a message field's type, or NULL */
} envoy_fields[] = {
#define C &envoy__config__cluster__v3__cluster__descriptor
    {C, "health_checks", 8, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_REPEATED,
     "envoy.config.core.v3.HealthCheck"},
    {C, "circuit_breakers", 10, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE,
     "envoy.config.cluster.v3.CircuitBreakers"},
    {C, "outlier_detection", 19, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE,
     "envoy.config.cluster.v3.OutlierDetection"},
    {C, "common_lb_config", 27, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE,
     "envoy.config.cluster.v3.Cluster.CommonLbConfig"},
    {C, "typed_extension_protocol_options", 36, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_REPEATED,
     "envoy.config.cluster.v3.Cluster.TypedExtensionProtocolOptionsEntry"},
#undef C
    {&envoy__config__cluster__v3__cluster__common_lb_config__descriptor,
     "locality_weighted_lb_config", 3, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE,
     "envoy.config.cluster.v3.Cluster.CommonLbConfig.LocalityWeightedLbConfig"},
#define O   &envoy__config__cluster__v3__outlier_detection__descriptor
#define U32 PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE, "google.protobuf.UInt32Value"
#define DUR PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE, "google.protobuf.Duration"
    {O, "consecutive_5xx", 1, U32},
    {O, "interval", 2, DUR},
    {O, "base_ejection_time", 3, DUR},
    {O, "max_ejection_percent", 4, U32},
    {O, "enforcing_consecutive_5xx", 5, U32},
    {O, "enforcing_success_rate", 6, U32},
    {O, "success_rate_minimum_hosts", 7, U32},
    {O, "success_rate_request_volume", 8, U32},
    {O, "success_rate_stdev_factor", 9, U32},
    {O, "consecutive_gateway_failure", 10, U32},
    {O, "enforcing_consecutive_gateway_failure", 11, U32},
    {O, "failure_percentage_threshold", 16, U32},
    {O, "enforcing_failure_percentage", 17, U32},
    {O, "failure_percentage_minimum_hosts", 19, U32},
    {O, "failure_percentage_request_volume", 20, U32},
    {O, "max_ejection_time", 21, DUR},
#undef O
#define T &envoy__config__cluster__v3__circuit_breakers__thresholds__descriptor
    {&envoy__config__cluster__v3__circuit_breakers__descriptor, "thresholds", 1,
     PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_REPEATED,
     "envoy.config.cluster.v3.CircuitBreakers.Thresholds"},
    {T, "priority", 1, PROTOBUF_C_TYPE_ENUM, PROTOBUF_C_LABEL_NONE, NULL},
    {T, "max_connections", 2, U32},
    {T, "max_pending_requests", 3, U32},
    {T, "max_requests", 4, U32},
    {T, "max_retries", 5, U32},
#undef T
#define H &envoy__config__core__v3__health_check__descriptor
    {H, "timeout", 1, DUR},
    {H, "interval", 2, DUR},
    {H, "interval_jitter", 3, DUR},
    {H, "unhealthy_threshold", 4, U32},
    {H, "healthy_threshold", 5, U32},
    {H, "http_health_check", 8, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE,
     "envoy.config.core.v3.HealthCheck.HttpHealthCheck"},
    {H, "tcp_health_check", 9, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE,
     "envoy.config.core.v3.HealthCheck.TcpHealthCheck"},
    {H, "grpc_health_check", 11, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE,
     "envoy.config.core.v3.HealthCheck.GrpcHealthCheck"},
#undef H
#define HH &envoy__config__core__v3__health_check__http_health_check__descriptor
    {HH, "host", 1, PROTOBUF_C_TYPE_STRING, PROTOBUF_C_LABEL_NONE, NULL},
    {HH, "path", 2, PROTOBUF_C_TYPE_STRING, PROTOBUF_C_LABEL_NONE, NULL},
    {HH, "expected_statuses", 9, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_REPEATED,
     "envoy.type.v3.Int64Range"},
#undef HH
    {&envoy__config__core__v3__health_check__grpc_health_check__descriptor, "service_name", 1,
     PROTOBUF_C_TYPE_STRING, PROTOBUF_C_LABEL_NONE, NULL},
    {&envoy__config__core__v3__health_check__grpc_health_check__descriptor, "authority", 2,
     PROTOBUF_C_TYPE_STRING, PROTOBUF_C_LABEL_NONE, NULL},
    {&envoy__config__endpoint__v3__locality_lb_endpoints__descriptor, "load_balancing_weight", 3,
     U32},
    {&envoy__config__endpoint__v3__locality_lb_endpoints__descriptor, "priority", 5,
     PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_LABEL_NONE, NULL},
    {&envoy__extensions__upstreams__http__v3__http_protocol_options__descriptor,
     "explicit_http_config", 3, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE,
     "envoy.extensions.upstreams.http.v3.HttpProtocolOptions.ExplicitHttpConfig"},
    {&envoy__extensions__upstreams__http__v3__http_protocol_options__explicit_http_config__descriptor,
     "http2_protocol_options", 2, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE,
     "envoy.config.core.v3.Http2ProtocolOptions"},
#undef U32
#undef DUR
};

static void test_subset_matches_envoy(void)
{
    for (size_t i = 0; i < sizeof(envoy_fields) / sizeof(envoy_fields[0]); i++) {
        const struct envoy_field *e = &envoy_fields[i];
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field_by_name(e->msg, e->name);
        if (!f) {
            cxt_fail(__FILE__, __LINE__, 0, "%s.%s missing from the subset", e->msg->name, e->name);
            continue;
        }
        if (f->id != e->number || f->type != e->type || f->label != e->label)
            cxt_fail(__FILE__, __LINE__, 0, "%s.%s: number %u type %d label %d, Envoy's %u %d %d",
                     e->msg->name, e->name, f->id, f->type, f->label, e->number, e->type, e->label);
        if (e->msg_type) {
            const ProtobufCMessageDescriptor *d = f->descriptor;
            CHECK_STR_EQ(d ? d->name : "(none)", e->msg_type);
        }
    }
    /* the protocol option map's key and the Any's type */
    CHECK_STR_EQ(XL_TYPE_URL_HTTP_PROTOCOL_OPTIONS,
                 "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions");
}

/* ---- parse: Envoy's ranges, at their edges -------------------------------- */

struct parsed {
    struct xl_arena a;
    struct xl_object o;
    cJSON *json;
};

#define UP(extra)                                                                             \
    "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Upstream\",\"metadata\":{\"name\":\"u\"," \
    "\"namespace\":\"ns\"},\"spec\":{\"static\":{\"hosts\":[{\"address\":\"10.0.0.1\","       \
    "\"port\":80}]}," extra "}}"

static const char *parse_err(struct parsed *p, const char *json)
{
    memset(p, 0, sizeof(*p));
    p->json = cJSON_Parse(json);
    if (!p->json)
        cxt_fail(__FILE__, __LINE__, 1, "bad test JSON: %s", json);
    if (xlate_api_parse(XLATE_KIND_UPSTREAM, p->json, NULL, &p->a, &p->o) != 0)
        cxt_fail(__FILE__, __LINE__, 1, "parse ran out of memory");
    return p->o.errors.n ? p->o.errors.items[0].msg : NULL;
}

static void done(struct parsed *p)
{
    xlate_object_release(&p->o);
    xlate_arena_free(&p->a);
    cJSON_Delete(p->json);
}

static void test_parse_bounds(void)
{
    static const struct {
        const char *json;
        const char *err; /* NULL: accepted */
    } cases[] = {
        {UP("\"outlierDetection\":{\"maxEjectionPercent\":100}"), NULL},
        {UP("\"outlierDetection\":{\"maxEjectionPercent\":101}"),
         "spec.outlierDetection.maxEjectionPercent: must be between 0 and 100, got 101"},
        {UP("\"outlierDetection\":{\"enforcingFailurePercentage\":0}"), NULL},
        {UP("\"outlierDetection\":{\"interval\":\"1ns\"}"), NULL},
        {UP("\"outlierDetection\":{\"interval\":\"0s\"}"),
         "spec.outlierDetection.interval: must be greater than 0"},
        {UP("\"outlierDetection\":{\"maxEjectionTime\":\"0s\"}"),
         "spec.outlierDetection.maxEjectionTime: must be greater than 0"},
        {UP("\"outlierDetection\":{\"consecutive5xx\":0}"),
         "spec.outlierDetection.consecutive5xx: must be between 1 and 1000000, got 0"},
        {UP("\"localities\":[{\"zone\":\"\",\"priority\":127}]"), NULL},
        {UP("\"localities\":[{\"zone\":\"a\",\"priority\":128}]"),
         "spec.localities[0].priority: must be between 0 and 127, got 128"},
        {UP("\"localities\":[{\"zone\":\"a\",\"weight\":0}]"),
         "spec.localities[0].weight: must be between 1 and 1000000, got 0"},
        {UP("\"localities\":[]"), "spec.localities: must not be empty"},
        {UP("\"circuitBreakers\":{\"maxRequests\":0}"), NULL},
        {UP("\"circuitBreakers\":{\"maxConnections\":4294967296}"),
         "spec.circuitBreakers.maxConnections: must be between 0 and 4294967295, got 4294967296"},
        /* HealthCheck: timeout and interval required and > 0, thresholds
         * required by Envoy (defaults 3 and 1 written), one kind */
        {UP("\"healthChecks\":[{\"timeout\":\"1s\",\"interval\":\"1s\",\"tcp\":{}}]"), NULL},
        {UP("\"healthChecks\":[{\"timeout\":\"1s\",\"tcp\":{}}]"),
         "spec.healthChecks[0].interval: required"},
        {UP("\"healthChecks\":[{\"timeout\":\"1s\",\"interval\":\"1s\",\"http\":{}}]"),
         "spec.healthChecks[0].http.path: required"},
        {UP("\"healthChecks\":[{\"timeout\":\"1s\",\"interval\":\"1s\",\"http\":{\"path\":"
            "\"/\",\"expectedStatuses\":[{\"start\":599,\"end\":600}]}}]"),
         NULL},
        {UP("\"healthChecks\":[{\"timeout\":\"1s\",\"interval\":\"1s\",\"http\":{\"path\":"
            "\"/\",\"expectedStatuses\":[{\"start\":200,\"end\":601}]}}]"),
         "spec.healthChecks[0].http.expectedStatuses[0].end: must be between 101 and 600, got "
         "601"},
        {UP("\"healthChecks\":[{\"timeout\":\"1s\",\"interval\":\"1s\",\"grpc\":{\"authority\":"
            "\"a\\nb\"}}]"),
         "spec.healthChecks[0].grpc.authority: must not hold control characters"},
        {UP("\"protocol\":\"HTTP2\""), NULL},
        {UP("\"protocol\":\"h2\""), "spec.protocol: must be HTTP1 or HTTP2, got \"h2\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct parsed p;
        const char *err = parse_err(&p, cases[i].json);
        if (!cases[i].err != !err || (err && strcmp(err, cases[i].err) != 0))
            cxt_fail(__FILE__, __LINE__, 0, "case %zu: want %s, got %s", i,
                     cases[i].err ? cases[i].err : "(accepted)", err ? err : "(accepted)");
        if (!err && i == 13) { /* the defaults Envoy requires be written */
            const struct xl_cluster_opts *o = xlate_cluster_opts_of(&p.o.u.up);
            REQUIRE_INT_EQ(o->nhcs, 1);
            CHECK_INT_EQ(o->hcs[0].unhealthy_threshold, 3);
            CHECK_INT_EQ(o->hcs[0].healthy_threshold, 1);
            CHECK_INT_EQ(o->hcs[0].kind, XL_HC_TCP);
        }
        done(&p);
    }
    /* an Upstream without any of it has no options at all */
    struct parsed p;
    CHECK(parse_err(&p, UP("\"lbPolicy\":\"RoundRobin\"")) == NULL);
    CHECK(p.o.u.up.opts == NULL);
    CHECK_INT_EQ(xlate_cluster_opts_of(&p.o.u.up)->nlocalities, 0);
    done(&p);
}

/* ---- localities: weights, priorities renumbered without gaps --------------- */

static void test_localities(void)
{
    struct xl_locality listed[] = {
        {"a", 3, 0},
        {"b", 0, 0}, /* weight: its endpoints' sum */
        {"c", 0, 5},
    };
    struct xl_cluster_opts o = {.localities = listed, .nlocalities = 3};
    /* sorted by zone: a has none (all unready), b two, c one, d one
     * (unlisted: after c) and "" one (unlisted too) */
    struct xl_lb_endpoint eps[] = {
        {"10.0.0.9", 80, 1, "", NULL},  {"10.0.0.1", 80, 2, "b", NULL},
        {"10.0.0.2", 80, 5, "b", NULL}, {"10.0.0.3", 80, 1, "c", NULL},
        {"10.0.0.4", 80, 1, "d", NULL},
    };
    struct xl_cla_locality *locs = NULL;
    size_t n = 0;
    REQUIRE_INT_EQ(xlate_localities(&o, eps, 5, &locs, &n), 0);
    REQUIRE_INT_EQ(n, 4);
    /* (priority, zone): b at 0; c at 5 -> 1; "" and d at 6 -> 2 */
    CHECK_STR_EQ(locs[0].zone, "b");
    CHECK_INT_EQ(locs[0].priority, 0);
    CHECK_INT_EQ(locs[0].weight, 7);
    CHECK_INT_EQ(locs[0].n, 2);
    CHECK_STR_EQ(locs[1].zone, "c");
    CHECK_INT_EQ(locs[1].priority, 1);
    CHECK_STR_EQ(locs[2].zone, "");
    CHECK_INT_EQ(locs[2].priority, 2);
    CHECK_STR_EQ(locs[3].zone, "d");
    CHECK_INT_EQ(locs[3].priority, 2);
    free(locs);
    /* once a's endpoint is ready, a takes its weight 3 at priority 0 */
    struct xl_lb_endpoint eps2[] = {{"10.0.0.8", 80, 1, "a", NULL}, {"10.0.0.1", 80, 2, "b", NULL}};
    REQUIRE_INT_EQ(xlate_localities(&o, eps2, 2, &locs, &n), 0);
    REQUIRE_INT_EQ(n, 2);
    CHECK_STR_EQ(locs[0].zone, "a");
    CHECK_INT_EQ(locs[0].weight, 3);
    CHECK_INT_EQ(locs[0].priority, 0);
    CHECK_INT_EQ(locs[1].weight, 2);
    CHECK_INT_EQ(locs[1].priority, 0);
    free(locs);
    REQUIRE_INT_EQ(xlate_localities(&o, NULL, 0, &locs, &n), 0);
    CHECK_INT_EQ(n, 0);
    CHECK(locs == NULL);
}

static int repacks_the_same(const ProtobufCMessage *m, const uint8_t *b, size_t len)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *again = malloc(n ? n : 1);
    protobuf_c_message_pack(m, again);
    int same = n == len && memcmp(again, b, len) == 0;
    free(again);
    return same;
}

static void test_cla_priorities_bytes(void)
{
    struct xl_lb_endpoint eps[] = {{"10.0.0.1", 80, 1, "a", NULL}, {"10.0.0.2", 81, 4, "b", NULL}};
    struct xl_cla_locality locs[] = {{"a", &eps[0], 1, 3, 0}, {"b", &eps[1], 1, 1, 1}};
    uint8_t *b = NULL;
    size_t len = 0;
    REQUIRE_INT_EQ(xlate_encode_cla_localities("ns/up", locs, 2, &b, &len), 0);
    Envoy__Config__Endpoint__V3__ClusterLoadAssignment *c =
        envoy__config__endpoint__v3__cluster_load_assignment__unpack(NULL, len, b);
    REQUIRE(c);
    REQUIRE_INT_EQ(c->n_endpoints, 2);
    CHECK_STR_EQ(c->endpoints[0]->locality->zone, "a");
    CHECK_INT_EQ(c->endpoints[0]->load_balancing_weight->value, 3);
    CHECK_INT_EQ(c->endpoints[0]->priority, 0);
    CHECK_STR_EQ(c->endpoints[1]->locality->zone, "b");
    CHECK_INT_EQ(c->endpoints[1]->load_balancing_weight->value, 1);
    CHECK_INT_EQ(c->endpoints[1]->priority, 1);
    CHECK_INT_EQ(c->endpoints[1]->lb_endpoints[0]->load_balancing_weight->value, 4);
    CHECK(repacks_the_same(&c->base, b, len));
    protobuf_c_message_free_unpacked(&c->base, NULL);
    free(b);
}

/* ---- the Cluster's options, both modes ------------------------------------ */

static void test_cluster_options_bytes(void)
{
    struct xl_locality loc = {"a", 2, 0};
    struct xl_outlier od = {0};
    od.set = (1u << XL_OD_INTERVAL) | (1u << XL_OD_MAX_EJECTION_PERCENT) |
             (1u << XL_OD_ENFORCING_FAILURE_PERCENTAGE) | (1u << XL_OD_CONSECUTIVE_5XX) |
             (1u << XL_OD_MAX_EJECTION_TIME) | (1u << XL_OD_FAILURE_PERCENTAGE_THRESHOLD);
    od.dur_ns[XL_OD_INTERVAL] = 1500000000;
    od.u32[XL_OD_MAX_EJECTION_PERCENT] = 100;
    od.u32[XL_OD_ENFORCING_FAILURE_PERCENTAGE] = 100;
    od.u32[XL_OD_CONSECUTIVE_5XX] = 7;
    od.dur_ns[XL_OD_MAX_EJECTION_TIME] = 60000000000;
    od.u32[XL_OD_FAILURE_PERCENTAGE_THRESHOLD] = 0; /* present, value 0 */
    struct xl_status_range st[] = {{200, 300}, {404, 405}};
    struct xl_health_check hcs[] = {
        {.kind = XL_HC_HTTP,
         .timeout_ns = 1000000000,
         .interval_ns = 5000000000,
         .unhealthy_threshold = 3,
         .healthy_threshold = 1,
         .path = "/healthz",
         .host = "h",
         .statuses = st,
         .nstatuses = 2},
        {.kind = XL_HC_TCP,
         .timeout_ns = 1000000000,
         .interval_ns = 2000000000,
         .jitter_ns = 250000000,
         .unhealthy_threshold = 2,
         .healthy_threshold = 2},
        {.kind = XL_HC_GRPC,
         .timeout_ns = 500000000,
         .interval_ns = 1000000000,
         .unhealthy_threshold = 1,
         .healthy_threshold = 1,
         .service = "svc"},
    };
    struct xl_circuit_breakers cb = {.set = (1u << 2) | (1u << 4) | (1u << 5)};
    cb.max[2] = 10;
    cb.max[4] = 0;
    cb.max[5] = 3;
    struct xl_cluster_opts o = {.localities = &loc,
                                .nlocalities = 1,
                                .outlier = &od,
                                .hcs = hcs,
                                .nhcs = 3,
                                .cb = &cb,
                                .protocol = XL_PROTO_HTTP2};
    for (int mode = 0; mode < 2; mode++) {
        struct xl_cluster_enc c = {.lb = XL_LB_RING_HASH,
                                   .ring_min = 64,
                                   .opts = &o,
                                   .mode = (enum xlate_gateway_mode)mode,
                                   .has_connect_timeout = 1,
                                   .connect_timeout_ns = 250000000};
        uint8_t *b = NULL;
        size_t len = 0;
        REQUIRE_INT_EQ(xlate_encode_cluster_ex("ns/u", &c, &b, &len), 0);
        Cluster *cl = envoy__config__cluster__v3__cluster__unpack(NULL, len, b);
        REQUIRE(cl);
        int envoy = mode == XLATE_MODE_ENVOY;
        /* outlier detection in both modes (gRFC A50) */
        REQUIRE(cl->outlier_detection);
        const Envoy__Config__Cluster__V3__OutlierDetection *d = cl->outlier_detection;
        REQUIRE(d->interval);
        CHECK_INT_EQ(d->interval->seconds, 1);
        CHECK_INT_EQ(d->interval->nanos, 500000000);
        REQUIRE(d->max_ejection_percent && d->enforcing_failure_percentage && d->consecutive_5xx);
        CHECK_INT_EQ(d->max_ejection_percent->value, 100);
        CHECK_INT_EQ(d->consecutive_5xx->value, 7);
        REQUIRE(d->failure_percentage_threshold);
        CHECK_INT_EQ(d->failure_percentage_threshold->value, 0);
        REQUIRE(d->max_ejection_time);
        CHECK_INT_EQ(d->max_ejection_time->seconds, 60);
        CHECK(d->base_ejection_time == NULL && d->success_rate_stdev_factor == NULL);
        /* circuit breakers: Envoy all, gRPC max_requests alone (A32) */
        REQUIRE(cl->circuit_breakers);
        REQUIRE_INT_EQ(cl->circuit_breakers->n_thresholds, 1);
        const Envoy__Config__Cluster__V3__CircuitBreakers__Thresholds *t =
            cl->circuit_breakers->thresholds[0];
        CHECK_INT_EQ(t->priority, ENVOY__CONFIG__CORE__V3__ROUTING_PRIORITY__DEFAULT);
        REQUIRE(t->max_requests);
        CHECK_INT_EQ(t->max_requests->value, 0);
        CHECK(!t->max_connections == !envoy);
        CHECK(!t->max_retries == !envoy);
        CHECK(t->max_pending_requests == NULL);
        /* health checks, common_lb_config, protocol options: Envoy only */
        CHECK_INT_EQ(cl->n_health_checks, envoy ? 3 : 0);
        if (envoy && cl->n_health_checks == 3) {
            const Envoy__Config__Core__V3__HealthCheck *h = cl->health_checks[0];
            CHECK_INT_EQ(h->health_checker_case,
                         ENVOY__CONFIG__CORE__V3__HEALTH_CHECK__HEALTH_CHECKER_HTTP_HEALTH_CHECK);
            REQUIRE(h->timeout && h->interval && h->unhealthy_threshold && h->healthy_threshold);
            CHECK_INT_EQ(h->timeout->seconds, 1);
            CHECK_INT_EQ(h->interval->seconds, 5);
            CHECK_INT_EQ(h->unhealthy_threshold->value, 3);
            CHECK_INT_EQ(h->healthy_threshold->value, 1);
            CHECK_STR_EQ(h->http_health_check->path, "/healthz");
            CHECK_STR_EQ(h->http_health_check->host, "h");
            REQUIRE_INT_EQ(h->http_health_check->n_expected_statuses, 2);
            CHECK_INT_EQ(h->http_health_check->expected_statuses[1]->start, 404);
            CHECK_INT_EQ(h->http_health_check->expected_statuses[1]->end, 405);
            CHECK_INT_EQ(cl->health_checks[1]->health_checker_case,
                         ENVOY__CONFIG__CORE__V3__HEALTH_CHECK__HEALTH_CHECKER_TCP_HEALTH_CHECK);
            REQUIRE(cl->health_checks[1]->interval_jitter);
            CHECK_INT_EQ(cl->health_checks[1]->interval_jitter->nanos, 250000000);
            CHECK_INT_EQ(cl->health_checks[2]->health_checker_case,
                         ENVOY__CONFIG__CORE__V3__HEALTH_CHECK__HEALTH_CHECKER_GRPC_HEALTH_CHECK);
            CHECK_STR_EQ(cl->health_checks[2]->grpc_health_check->service_name, "svc");
        }
        CHECK(!cl->common_lb_config == !envoy);
        if (cl->common_lb_config)
            CHECK(cl->common_lb_config->locality_weighted_lb_config != NULL);
        CHECK_INT_EQ(cl->n_typed_extension_protocol_options, envoy ? 1 : 0);
        if (cl->n_typed_extension_protocol_options == 1) {
            const Envoy__Config__Cluster__V3__Cluster__TypedExtensionProtocolOptionsEntry *e =
                cl->typed_extension_protocol_options[0];
            CHECK_STR_EQ(e->key, XL_HTTP_PROTOCOL_OPTIONS_KEY);
            REQUIRE(e->value);
            CHECK_STR_EQ(e->value->type_url, XL_TYPE_URL_HTTP_PROTOCOL_OPTIONS);
            Envoy__Extensions__Upstreams__Http__V3__HttpProtocolOptions *hpo =
                envoy__extensions__upstreams__http__v3__http_protocol_options__unpack(
                    NULL, e->value->value.len, e->value->value.data);
            REQUIRE(hpo);
            CHECK_INT_EQ(
                hpo->upstream_protocol_options_case,
                ENVOY__EXTENSIONS__UPSTREAMS__HTTP__V3__HTTP_PROTOCOL_OPTIONS__UPSTREAM_PROTOCOL_OPTIONS_EXPLICIT_HTTP_CONFIG);
            REQUIRE(hpo->explicit_http_config);
            CHECK_INT_EQ(
                hpo->explicit_http_config->protocol_config_case,
                ENVOY__EXTENSIONS__UPSTREAMS__HTTP__V3__HTTP_PROTOCOL_OPTIONS__EXPLICIT_HTTP_CONFIG__PROTOCOL_CONFIG_HTTP2_PROTOCOL_OPTIONS);
            protobuf_c_message_free_unpacked(&hpo->base, NULL);
        }
        /* what was there before stays */
        REQUIRE(cl->ring_hash_lb_config && cl->ring_hash_lb_config->minimum_ring_size);
        CHECK_INT_EQ(cl->ring_hash_lb_config->minimum_ring_size->value, 64);
        CHECK_STR_EQ(cl->name, "ns/u");
        CHECK(repacks_the_same(&cl->base, b, len));
        protobuf_c_message_free_unpacked(&cl->base, NULL);
        free(b);
    }
}

static const struct cxt_case cases[] = {
    {"the .proto subset's fields have Envoy's numbers, types and labels",
     test_subset_matches_envoy},
    {"parse: Envoy's ranges and required fields at their edges", test_parse_bounds},
    {"localities: weights, unlisted zones last, priorities without gaps", test_localities},
    {"a ClusterLoadAssignment with weights and priorities is protobuf-c's bytes",
     test_cla_priorities_bytes},
    {"cluster options in both modes: what each gets, protobuf-c's bytes",
     test_cluster_options_bytes},
};

CXT_MAIN(cases)
