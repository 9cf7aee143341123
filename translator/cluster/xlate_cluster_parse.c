/*
 * Parsing of an Upstream's cluster options (xlate_cluster.h): localities,
 * outlier detection, health checks, circuit breakers, protocol. The ranges
 * are Envoy's (validate.rules of outlier_detection.proto, health_check.proto,
 * circuit_breaker.proto, endpoint_components.proto) or narrower; api/crds
 * holds the same bounds, so kubectl refuses what the translator would.
 */
#include "xlate_cluster.h"

#include "xlate_api_parse.h"

#include <string.h>

const struct xl_cluster_opts *xlate_cluster_opts_of(const struct xl_upstream *u)
{
    static const struct xl_cluster_opts none;
    return u->opts ? u->opts : &none;
}

static struct xl_cluster_opts *opts(struct pctx *p, struct xl_upstream *u)
{
    if (!u->opts)
        u->opts = palloc(p, sizeof(*u->opts));
    if (u->opts && !p->oom)
        return u->opts;
    return NULL;
}

/* A zone name: at most 253 bytes, no control character. */
static int zone_ok(struct pctx *p, const char *zone, const char *key)
{
    if (strlen(zone) > 253) {
        REJECT_AT(p, key, XL_R_INVALID_SPEC, "at most 253 characters");
        return 0;
    }
    if (xlate_has_ctl(zone)) {
        REJECT_AT(p, key, XL_R_INVALID_SPEC, "must not hold control characters");
        return 0;
    }
    return 1;
}

static void parse_localities(struct pctx *p, const cJSON *v, struct xl_upstream *u)
{
    const cJSON *arr = arr_v(p, v, "localities", 1, XLATE_MAX_LOCALITIES);
    struct xl_cluster_opts *o = arr ? opts(p, u) : NULL;
    if (!o)
        return;
    o->localities = palloc(p, cx_json_count(arr) * sizeof(*o->localities));
    if (!o->localities)
        return;
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        size_t at = xlate_path_push(p, ".localities[%zu]", i++);
        if (!cJSON_IsObject(it)) {
            REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(it));
            pop(p, at);
            continue;
        }
        static const char *const allowed[] = {"zone", "weight", "priority", NULL};
        xlate_check_fields(p, it, allowed);
        struct xl_locality l = {0};
        const char *zone = NULL;
        int ok = str_ref_v(p, get(it, "zone"), "zone", 0, &zone) == 1;
        if (!ok && !get(it, "zone"))
            REJECT_AT(p, "zone", XL_R_INVALID_SPEC, "required (\"\" names endpoints without one)");
        ok = ok && zone_ok(p, zone, "zone");
        uint64_t w = 0, prio = 0;
        get_uint(p, it, "weight", 0, 1, 1000000, XL_R_INVALID_SPEC, &w);
        get_uint(p, it, "priority", 0, 0, XLATE_MAX_PRIORITY, XL_R_INVALID_SPEC, &prio);
        for (size_t k = 0; ok && k < o->nlocalities; k++)
            if (strcmp(o->localities[k].zone, zone) == 0) {
                REJECT_AT(p, "zone", XL_R_INVALID_SPEC, "zone \"%s\" is listed twice", zone);
                ok = 0;
            }
        if (ok) {
            l.zone = pstrdup(p, zone);
            l.weight = (uint32_t)w;
            l.priority = (uint32_t)prio;
            o->localities[o->nlocalities++] = l;
        }
        pop(p, at);
    }
}

/* spec.outlierDetection: Envoy's fields by name and number. */
static const struct od_field {
    const char *name;
    int field;
    int is_duration;
    uint32_t lo, hi;
} od_fields[] = {
    {"consecutive5xx", XL_OD_CONSECUTIVE_5XX, 0, 1, 1000000},
    {"interval", XL_OD_INTERVAL, 1, 0, 0},
    {"baseEjectionTime", XL_OD_BASE_EJECTION_TIME, 1, 0, 0},
    {"maxEjectionPercent", XL_OD_MAX_EJECTION_PERCENT, 0, 0, 100},
    {"enforcingConsecutive5xx", XL_OD_ENFORCING_CONSECUTIVE_5XX, 0, 0, 100},
    {"enforcingSuccessRate", XL_OD_ENFORCING_SUCCESS_RATE, 0, 0, 100},
    {"successRateMinimumHosts", XL_OD_SUCCESS_RATE_MINIMUM_HOSTS, 0, 0, 1000000},
    {"successRateRequestVolume", XL_OD_SUCCESS_RATE_REQUEST_VOLUME, 0, 0, 1000000},
    {"successRateStdevFactor", XL_OD_SUCCESS_RATE_STDEV_FACTOR, 0, 0, 1000000},
    {"consecutiveGatewayFailure", XL_OD_CONSECUTIVE_GATEWAY_FAILURE, 0, 1, 1000000},
    {"enforcingConsecutiveGatewayFailure", XL_OD_ENFORCING_CONSECUTIVE_GATEWAY_FAILURE, 0, 0, 100},
    {"failurePercentageThreshold", XL_OD_FAILURE_PERCENTAGE_THRESHOLD, 0, 0, 100},
    {"enforcingFailurePercentage", XL_OD_ENFORCING_FAILURE_PERCENTAGE, 0, 0, 100},
    {"failurePercentageMinimumHosts", XL_OD_FAILURE_PERCENTAGE_MINIMUM_HOSTS, 0, 0, 1000000},
    {"failurePercentageRequestVolume", XL_OD_FAILURE_PERCENTAGE_REQUEST_VOLUME, 0, 0, 1000000},
    {"maxEjectionTime", XL_OD_MAX_EJECTION_TIME, 1, 0, 0},
};
#define N_OD (sizeof(od_fields) / sizeof(od_fields[0]))

static void parse_outlier(struct pctx *p, const cJSON *v, struct xl_upstream *u)
{
    const cJSON *od = obj_v(p, v, "outlierDetection", 0);
    struct xl_cluster_opts *o = od ? opts(p, u) : NULL;
    if (!o || !(o->outlier = palloc(p, sizeof(*o->outlier))))
        return;
    size_t at = push_lit(p, ".outlierDetection");
    const char *allowed[N_OD + 1];
    for (size_t i = 0; i < N_OD; i++)
        allowed[i] = od_fields[i].name;
    allowed[N_OD] = NULL;
    const cJSON *f[N_OD];
    xlate_fields(p, od, allowed, f);
    struct xl_outlier *x = o->outlier;
    for (size_t i = 0; i < N_OD; i++) {
        const struct od_field *d = &od_fields[i];
        if (d->is_duration) {
            int64_t ns = 0;
            if (duration_v(p, f[i], d->name, &ns) != 1)
                continue;
            if (ns <= 0) {
                REJECT_AT(p, d->name, XL_R_INVALID_SPEC, "must be greater than 0");
                continue;
            }
            x->dur_ns[d->field] = ns;
        } else {
            uint64_t n = 0;
            if (uint_v(p, f[i], d->name, 0, d->lo, d->hi, XL_R_INVALID_SPEC, &n) != 1)
                continue;
            x->u32[d->field] = (uint32_t)n;
        }
        x->set |= UINT32_C(1) << d->field;
    }
    pop(p, at);
}

static void parse_statuses(struct pctx *p, const cJSON *http, struct xl_health_check *h)
{
    const cJSON *arr = get_arr(p, http, "expectedStatuses", 1, XLATE_MAX_STATUS_RANGES);
    if (!arr)
        return;
    h->statuses = palloc(p, cx_json_count(arr) * sizeof(*h->statuses));
    if (!h->statuses)
        return;
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        size_t at = xlate_path_push(p, ".expectedStatuses[%zu]", i++);
        if (!cJSON_IsObject(it)) {
            REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(it));
            pop(p, at);
            continue;
        }
        static const char *const allowed[] = {"start", "end", NULL};
        xlate_check_fields(p, it, allowed);
        uint64_t s = 0, e = 0;
        int hs = get_uint(p, it, "start", 1, 100, 599, XL_R_INVALID_SPEC, &s) == 1;
        int he = get_uint(p, it, "end", 1, 101, 600, XL_R_INVALID_SPEC, &e) == 1;
        if (hs && he && s >= e)
            REJECT(p, XL_R_INVALID_SPEC,
                   "start (%llu) must be below end (%llu): the range [start, end) is half-open",
                   (unsigned long long)s, (unsigned long long)e);
        else if (hs && he)
            h->statuses[h->nstatuses++] = (struct xl_status_range){(uint32_t)s, (uint32_t)e};
        pop(p, at);
    }
}

/* An optional header value (host, authority, gRPC service): no control
 * characters (Envoy's HTTP_HEADER_VALUE rule). */
static void header_value(struct pctx *p, const cJSON *obj, const char *key, char **out)
{
    if (get_str(p, obj, key, 0, out) == 1 && xlate_has_ctl(*out)) {
        REJECT_AT(p, key, XL_R_INVALID_SPEC, "must not hold control characters");
        *out = NULL;
    }
}

static void parse_health_check(struct pctx *p, const cJSON *it, struct xl_health_check *h)
{
    static const char *const allowed[] = {"timeout",
                                          "interval",
                                          "intervalJitter",
                                          "unhealthyThreshold",
                                          "healthyThreshold",
                                          "http",
                                          "grpc",
                                          "tcp",
                                          NULL};
    const cJSON *f[8];
    xlate_fields(p, it, allowed, f);
    const char *const durs[] = {"timeout", "interval"};
    int64_t *dst[] = {&h->timeout_ns, &h->interval_ns};
    for (int i = 0; i < 2; i++) {
        int rc = duration_v(p, f[i], durs[i], dst[i]);
        if (rc == 0)
            REJECT_AT(p, durs[i], XL_R_INVALID_SPEC, "required");
        else if (rc == 1 && *dst[i] <= 0)
            REJECT_AT(p, durs[i], XL_R_INVALID_SPEC, "must be greater than 0");
    }
    duration_v(p, f[2], "intervalJitter", &h->jitter_ns);
    uint64_t un = 3, hl = 1;
    uint_v(p, f[3], "unhealthyThreshold", 0, 1, 1000, XL_R_INVALID_SPEC, &un);
    uint_v(p, f[4], "healthyThreshold", 0, 1, 1000, XL_R_INVALID_SPEC, &hl);
    h->unhealthy_threshold = (uint32_t)un;
    h->healthy_threshold = (uint32_t)hl;
    int kinds = !!f[5] + !!f[6] + !!f[7];
    if (kinds != 1) {
        REJECT(p, XL_R_INVALID_SPEC, "exactly one of http, grpc or tcp is required, got %d", kinds);
        return;
    }
    if (f[5]) {
        h->kind = XL_HC_HTTP;
        const cJSON *http = obj_v(p, f[5], "http", 1);
        if (!http)
            return;
        size_t at = push_lit(p, ".http");
        static const char *const hallowed[] = {"path", "host", "expectedStatuses", NULL};
        xlate_check_fields(p, http, hallowed);
        if (get_str(p, http, "path", 1, &h->path) == 1 &&
            (h->path[0] != '/' || xlate_has_ctl(h->path))) {
            REJECT_AT(p, "path", XL_R_INVALID_SPEC,
                      "\"%s\" must start with \"/\" and hold no control characters", h->path);
            h->path = NULL;
        }
        header_value(p, http, "host", &h->host);
        if (get(http, "expectedStatuses"))
            parse_statuses(p, http, h);
        pop(p, at);
    } else if (f[6]) {
        h->kind = XL_HC_GRPC;
        const cJSON *g = obj_v(p, f[6], "grpc", 1);
        if (!g)
            return;
        size_t at = push_lit(p, ".grpc");
        static const char *const gallowed[] = {"serviceName", "authority", NULL};
        xlate_check_fields(p, g, gallowed);
        header_value(p, g, "serviceName", &h->service);
        header_value(p, g, "authority", &h->authority);
        pop(p, at);
    } else {
        h->kind = XL_HC_TCP;
        const cJSON *t = obj_v(p, f[7], "tcp", 1);
        if (!t)
            return;
        size_t at = push_lit(p, ".tcp");
        static const char *const tallowed[] = {NULL};
        xlate_check_fields(p, t, tallowed); /* connect only: no payloads */
        pop(p, at);
    }
}

static void parse_health_checks(struct pctx *p, const cJSON *v, struct xl_upstream *u)
{
    const cJSON *arr = arr_v(p, v, "healthChecks", 1, XLATE_MAX_HEALTH_CHECKS);
    struct xl_cluster_opts *o = arr ? opts(p, u) : NULL;
    if (!o || !(o->hcs = palloc(p, cx_json_count(arr) * sizeof(*o->hcs))))
        return;
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        size_t at = xlate_path_push(p, ".healthChecks[%zu]", i++);
        if (!cJSON_IsObject(it))
            REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(it));
        else
            parse_health_check(p, it, &o->hcs[o->nhcs++]);
        pop(p, at);
    }
}

static void parse_circuit_breakers(struct pctx *p, const cJSON *v, struct xl_upstream *u)
{
    const cJSON *cb = obj_v(p, v, "circuitBreakers", 0);
    struct xl_cluster_opts *o = cb ? opts(p, u) : NULL;
    if (!o || !(o->cb = palloc(p, sizeof(*o->cb))))
        return;
    size_t at = push_lit(p, ".circuitBreakers");
    /* Thresholds fields 2-5, UInt32Values */
    static const char *const allowed[] = {"maxConnections", "maxPendingRequests", "maxRequests",
                                          "maxRetries", NULL};
    const cJSON *f[4];
    xlate_fields(p, cb, allowed, f);
    for (int i = 0; i < 4; i++) {
        uint64_t n = 0;
        if (uint_v(p, f[i], allowed[i], 0, 0, UINT32_MAX, XL_R_INVALID_SPEC, &n) != 1)
            continue;
        o->cb->max[i + 2] = (uint32_t)n;
        o->cb->set |= UINT32_C(1) << (i + 2);
    }
    pop(p, at);
}

void xlate_parse_cluster_opts(struct pctx *p, const cJSON *spec, struct xl_upstream *u)
{
    const cJSON *v;
    if ((v = get(spec, "localities")))
        parse_localities(p, v, u);
    if ((v = get(spec, "outlierDetection")))
        parse_outlier(p, v, u);
    if ((v = get(spec, "healthChecks")))
        parse_health_checks(p, v, u);
    if ((v = get(spec, "circuitBreakers")))
        parse_circuit_breakers(p, v, u);
    char *proto = NULL;
    if (get_str(p, spec, "protocol", 0, &proto) == 1) {
        if (strcmp(proto, "HTTP2") == 0) {
            struct xl_cluster_opts *o = opts(p, u);
            if (o)
                o->protocol = XL_PROTO_HTTP2;
        } else if (strcmp(proto, "HTTP1") != 0) {
            REJECT_AT(p, "protocol", XL_R_INVALID_SPEC, "must be HTTP1 or HTTP2, got \"%s\"",
                      proto);
        }
    }
}
