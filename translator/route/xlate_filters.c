/*
 * HTTP filters a VirtualService or a route configures through
 * typed_per_filter_config: CORS (envoy.filters.http.cors, CorsPolicy) and
 * local rate limiting (envoy.filters.http.local_ratelimit, LocalRateLimit
 * with a token bucket), and the Gateway's access logs (HttpConnectionManager
 * access_log, envoy.access_loggers.file). Parsed against Envoy's
 * validation rules (cors.proto, local_rate_limit.proto, token_bucket.proto,
 * file.proto); the per-filter configurations are written back to front
 * into a VirtualHost or Route (common/cx_wire), the access logs into the
 * HttpConnectionManager that xlate_encode.c builds.
 */
#include "xlate_route.h"

#include <stdio.h>
#include <string.h>

/* ---- parse ------------------------------------------------------------------ */

/* A comma-joined list of |v|'s strings (at most |max|), each passing
 * |ok|; NULL when absent or refused. */
static char *joined(struct pctx *p, const cJSON *v, const char *key, int max,
                    int (*ok)(const char *), const char *what)
{
    const cJSON *arr = arr_v(p, v, key, 0, max);
    if (!arr)
        return NULL;
    if (!cx_json_count(arr)) {
        REJECT_AT(p, key, XL_R_INVALID_SPEC, "must not be empty (leave it out)");
        return NULL;
    }
    size_t len = 0, i = 0;
    const cJSON *e;
    int bad = 0;
    cJSON_ArrayForEach(e, arr)
    {
        size_t o = xlate_path_push(p, ".%s", key);
        size_t o2 = xlate_path_push(p, "[%zu]", i++);
        (void)o2;
        if (!cJSON_IsString(e) || !ok(e->valuestring)) {
            REJECT(p, XL_R_INVALID_SPEC, "must be %s", what);
            bad = 1;
        } else {
            len += strlen(e->valuestring) + 1;
        }
        pop(p, o);
    }
    if (bad)
        return NULL;
    char *out = palloc(p, len + 1);
    if (!out)
        return NULL;
    size_t n = 0;
    cJSON_ArrayForEach(e, arr)
    {
        size_t l = strlen(e->valuestring);
        if (n)
            out[n++] = ',';
        memcpy(out + n, e->valuestring, l);
        n += l;
    }
    out[n] = '\0';
    return out;
}

static int token_ok(const char *s)
{
    return xlate_header_name_ok(s) && s[0] != ':';
}

static int origin_ok(const char *s)
{
    return s[0] && !xlate_has_ctl(s) && !strchr(s, ' ') && !strchr(s, ',');
}

static void parse_cors(struct pctx *p, const cJSON *v, struct xl_cors *c)
{
    static const char *const allowed[] = {"allowOrigins",     "allowOriginRegexes",
                                          "allowMethods",     "allowHeaders",
                                          "exposeHeaders",    "maxAge",
                                          "allowCredentials", NULL};
    enum { F_ORIGINS, F_REGEXES, F_METHODS, F_HEADERS, F_EXPOSE, F_MAX_AGE, F_CREDS };
    const cJSON *f[7];
    xlate_fields(p, v, allowed, f);
    const cJSON *lists[2] = {arr_v(p, f[F_ORIGINS], "allowOrigins", 0, XLATE_MAX_CORS),
                             arr_v(p, f[F_REGEXES], "allowOriginRegexes", 0, XLATE_MAX_CORS)};
    const char *keys[2] = {"allowOrigins", "allowOriginRegexes"};
    size_t n = (lists[0] ? cx_json_count(lists[0]) : 0) + (lists[1] ? cx_json_count(lists[1]) : 0);
    if (!n && !f[F_ORIGINS] && !f[F_REGEXES])
        REJECT(p, XL_R_INVALID_SPEC,
               "allowOrigins or allowOriginRegexes must list at least one origin (\"*\" for any)");
    c->origins = n ? palloc(p, n * sizeof(*c->origins)) : NULL;
    if (n && !c->origins)
        return;
    for (int k = 0; k < 2; k++) {
        if (!lists[k])
            continue;
        if (!cx_json_count(lists[k]))
            REJECT_AT(p, keys[k], XL_R_INVALID_SPEC, "must not be empty (leave it out)");
        size_t i = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, lists[k])
        {
            size_t o = xlate_path_push(p, ".%s", keys[k]);
            size_t o2 = xlate_path_push(p, "[%zu]", i++);
            (void)o2;
            struct xl_origin *og = &c->origins[c->norigins];
            if (!cJSON_IsString(e)) {
                REJECT(p, XL_R_INVALID_SPEC, "must be a string, got %s", jtype(e));
            } else if (k == 0 && !origin_ok(e->valuestring)) {
                REJECT(p, XL_R_INVALID_SPEC,
                       "\"%s\" is not an origin (scheme://host[:port], or \"*\")", e->valuestring);
            } else {
                og->regex = k == 1;
                og->value = pstrdup(p, e->valuestring);
                if (og->regex)
                    (void)xlate_check_regex(p, og->value);
                c->norigins++;
            }
            pop(p, o);
        }
    }
    c->methods = joined(p, f[F_METHODS], "allowMethods", XLATE_MAX_CORS, token_ok,
                        "an HTTP method (a token such as GET)");
    c->headers = joined(p, f[F_HEADERS], "allowHeaders", XLATE_MAX_CORS, token_ok, "a header name");
    c->expose = joined(p, f[F_EXPOSE], "exposeHeaders", XLATE_MAX_CORS, token_ok, "a header name");
    int64_t age = 0;
    if (duration_v(p, f[F_MAX_AGE], "maxAge", &age) == 1) {
        if (age < 0 || age % CX_NS_PER_S)
            REJECT_AT(p, "maxAge", XL_R_INVALID_SPEC,
                      "must be whole seconds (access-control-max-age counts seconds)");
        c->max_age_s = age / CX_NS_PER_S;
        c->has_max_age = 1;
    }
    int creds = 0;
    if (bool_v(p, f[F_CREDS], "allowCredentials", &creds) == 1)
        c->credentials = creds ? 1 : 2;
}

/* {requests, per, burst}: a token bucket of burst (default requests)
 * tokens, refilled with requests tokens every per. */
static void parse_rate_limit(struct pctx *p, const cJSON *v, struct xl_rate_limit *rl)
{
    static const char *const allowed[] = {"requests", "per", "burst", NULL};
    const cJSON *f[3];
    xlate_fields(p, v, allowed, f);
    uint64_t req = 0, burst = 0;
    if (uint_v(p, f[0], "requests", 1, 1, UINT32_MAX, XL_R_INVALID_SPEC, &req) == 1)
        rl->requests = (uint32_t)req;
    if (!f[1])
        REJECT_AT(p, "per", XL_R_INVALID_SPEC, "required (a duration, e.g. 1s or 1m)");
    if (duration_v(p, f[1], "per", &rl->per_ns) == 1 && rl->per_ns < 50 * CX_NS_PER_MS)
        REJECT_AT(p, "per", XL_R_INVALID_SPEC,
                  "must be at least 50ms (Envoy's local rate limit refills no faster)");
    rl->burst = rl->requests;
    if (uint_v(p, f[2], "burst", 0, 1, UINT32_MAX, XL_R_INVALID_SPEC, &burst) == 1) {
        rl->burst = (uint32_t)burst;
        if (rl->requests && burst < rl->requests)
            REJECT_AT(p, "burst", XL_R_INVALID_SPEC,
                      "must be at least requests (%u): the bucket holds at most burst tokens",
                      (unsigned)rl->requests);
    }
}

struct xl_rate_limit *xlate_parse_rate_limit(struct pctx *p, const cJSON *v)
{
    const cJSON *o = obj_v(p, v, "rateLimit", 0);
    if (!o)
        return NULL;
    struct xl_rate_limit *rl = palloc(p, sizeof(*rl));
    if (!rl)
        return NULL;
    memset(rl, 0, sizeof(*rl));
    size_t d = push_lit(p, ".rateLimit");
    parse_rate_limit(p, o, rl);
    pop(p, d);
    return rl;
}

void xlate_parse_vs_filters(struct pctx *p, const cJSON *cors, const cJSON *rate_limit,
                            struct xl_vs_ext *x)
{
    const cJSON *c = obj_v(p, cors, "cors", 0);
    if (c && (x->cors = palloc(p, sizeof(*x->cors)))) {
        memset(x->cors, 0, sizeof(*x->cors));
        size_t o = push_lit(p, ".cors");
        parse_cors(p, c, x->cors);
        pop(p, o);
    }
    x->rl = xlate_parse_rate_limit(p, rate_limit);
}

/* ---- access logs -------------------------------------------------------------- */

/* A text format: Envoy's command operators, no control characters but
 * newlines (one is added at the end when missing: Envoy writes each entry
 * as formatted). */
static char *log_text(struct pctx *p, const char *s)
{
    const char *why = xlate_format_problem(s);
    for (const char *c = s; !why && *c; c++)
        if (((unsigned char)*c < 0x20 && *c != '\n' && *c != '\t') || *c == 0x7f)
            why = "must not contain control characters other than newlines and tabs";
    if (!why && !*s)
        why = "must not be empty (leave it out for Envoy's default format)";
    if (why) {
        REJECT_AT(p, "format", XL_R_INVALID_SPEC, "%s", why);
        return NULL;
    }
    size_t n = strlen(s);
    char *out = palloc(p, n + 2);
    if (!out)
        return NULL;
    memcpy(out, s, n);
    if (s[n - 1] != '\n')
        out[n++] = '\n';
    out[n] = '\0';
    return out;
}

static void parse_log_json(struct pctx *p, const cJSON *v, struct xl_access_log *l)
{
    if (!cJSON_IsObject(v)) {
        REJECT_AT(p, "json", XL_R_INVALID_SPEC, "must be an object, got %s", jtype(v));
        return;
    }
    size_t n = cx_json_count(v);
    if (!n || n > XLATE_MAX_LOG_FIELDS) {
        REJECT_AT(p, "json", XL_R_INVALID_SPEC, "must have 1-%d keys, got %zu",
                  XLATE_MAX_LOG_FIELDS, n);
        return;
    }
    if (!(l->json = palloc(p, n * sizeof(*l->json))))
        return;
    const cJSON *e;
    cJSON_ArrayForEach(e, v)
    {
        size_t o = xlate_path_push(p, ".json.%s", e->string);
        const char *why = NULL;
        if (!e->string[0] || xlate_has_ctl(e->string))
            why = "keys must be non-empty, without control characters";
        else if (!cJSON_IsString(e))
            why = "must be a string (a format such as %RESPONSE_CODE%)";
        else if (xlate_has_ctl(e->valuestring))
            why = "must not contain control characters";
        else
            why = xlate_format_problem(e->valuestring);
        if (why) {
            REJECT(p, XL_R_INVALID_SPEC, "%s", why);
        } else {
            l->json[l->njson].key = pstrdup(p, e->string);
            l->json[l->njson++].value = pstrdup(p, e->valuestring);
        }
        pop(p, o);
    }
}

void xlate_parse_access_logs(struct pctx *p, const cJSON *v, struct xl_gateway *g)
{
    const cJSON *arr = arr_v(p, v, "accessLog", 0, XLATE_MAX_ACCESS_LOGS);
    if (!arr)
        return;
    size_t n = cx_json_count(arr);
    if (!n) {
        REJECT_AT(p, "accessLog", XL_R_INVALID_SPEC, "must not be empty (leave it out)");
        return;
    }
    if (g->mode == XLATE_MODE_PROXYLESS) {
        size_t o = push_lit(p, ".accessLog");
        WARN(p, XL_R_UNSUPPORTED, "ignored in proxyless mode (gRPC clients write no access log)");
        pop(p, o);
        return;
    }
    if (!(g->logs = palloc(p, n * sizeof(*g->logs))))
        return;
    memset(g->logs, 0, n * sizeof(*g->logs));
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        struct xl_access_log *l = &g->logs[i];
        size_t o = xlate_path_push(p, ".accessLog[%zu]", i++);
        if (!cJSON_IsObject(e)) {
            REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(e));
            pop(p, o);
            continue;
        }
        static const char *const allowed[] = {"path", "format", "json", NULL};
        const cJSON *f[3];
        xlate_fields(p, e, allowed, f);
        if (str_v(p, f[0], "path", 1, &l->path) == 1 &&
            (l->path[0] != '/' || xlate_has_ctl(l->path) || strlen(l->path) > 4096))
            REJECT_AT(p, "path", XL_R_INVALID_SPEC,
                      "must be an absolute file path (such as /dev/stdout), at most 4096 bytes");
        if (f[1] && f[2]) {
            REJECT(p, XL_R_INVALID_SPEC, "format and json are mutually exclusive");
        } else if (f[1]) {
            const char *t = NULL;
            if (str_ref_v(p, f[1], "format", 0, &t) == 1)
                l->text = log_text(p, t);
        } else if (f[2]) {
            parse_log_json(p, f[2], l);
        }
        pop(p, o);
    }
    g->nlogs = i;
}

/* ---- encoding --------------------------------------------------------------- */

/* RuntimeFractionalPercent {default_value: {numerator: 100}} (denominator
 * HUNDRED, 0, left out) as field |field|. */
static void enc_all_percent(struct cx_wire *w, uint32_t field)
{
    size_t m = cx_wire_mark(w), m2 = m;
    cx_wire_uint(w, 1, 100); /* numerator */
    cx_wire_close(w, 1, m2); /* default_value */
    cx_wire_close(w, field, m);
}

/* One typed_per_filter_config entry {key, value: Any{type_url, value}}
 * whose Any value was written since |mark|. */
static void close_entry(struct cx_wire *w, uint32_t field, size_t mark, const char *type_url,
                        const char *filter)
{
    cx_wire_close(w, 2, mark);   /* Any.value */
    cx_wire_str(w, 1, type_url); /* Any.type_url */
    cx_wire_close(w, 2, mark);   /* entry value */
    cx_wire_str(w, 1, filter);   /* entry key */
    cx_wire_close(w, field, mark);
}

static void enc_rate_limit(struct cx_wire *w, uint32_t field, const struct xl_rate_limit *rl)
{
    size_t mark = cx_wire_mark(w);
    enc_all_percent(w, 5); /* filter_enforced: 100% (default 0%) */
    enc_all_percent(w, 4); /* filter_enabled: 100% (default 0%) */
    size_t tb = cx_wire_mark(w);
    cx_wire_duration(w, 3, rl->per_ns);                /* fill_interval */
    cx_wire_wrapped(w, 2, rl->requests);               /* tokens_per_fill */
    cx_wire_uint(w, 1, rl->burst);                     /* max_tokens */
    cx_wire_close(w, 3, tb);                           /* token_bucket */
    cx_wire_str(w, 1, XL_LOCAL_RATELIMIT_STAT_PREFIX); /* stat_prefix */
    close_entry(w, field, mark, XL_TYPE_URL_LOCAL_RATELIMIT, XL_LOCAL_RATELIMIT_FILTER_NAME);
}

static void enc_cors(struct cx_wire *w, uint32_t field, const struct xl_cors *c)
{
    size_t mark = cx_wire_mark(w);
    if (c->credentials)
        cx_wire_wrapped(w, 6, c->credentials == 1); /* allow_credentials */
    if (c->has_max_age) {
        char age[24];
        snprintf(age, sizeof(age), "%lld", (long long)c->max_age_s);
        cx_wire_str(w, 5, age); /* max_age */
    }
    cx_wire_str3(w, 4, c->expose);  /* expose_headers */
    cx_wire_str3(w, 3, c->headers); /* allow_headers */
    cx_wire_str3(w, 2, c->methods); /* allow_methods */
    for (size_t i = c->norigins; i-- > 0;) {
        size_t m = cx_wire_mark(w);
        if (c->origins[i].regex)
            xlate_enc_regex(w, 5, c->origins[i].value); /* safe_regex */
        else
            cx_wire_str(w, 1, c->origins[i].value); /* exact */
        cx_wire_close(w, 1, m);                     /* allow_origin_string_match */
    }
    close_entry(w, field, mark, XL_TYPE_URL_CORS_POLICY, XL_CORS_FILTER_NAME);
}

void xlate_enc_filter_configs(struct cx_wire *w, uint32_t field, const struct xl_cors *cors,
                              const struct xl_rate_limit *rl)
{
    /* map entries in key order: envoy.filters.http.cors first */
    if (rl)
        enc_rate_limit(w, field, rl);
    if (cors)
        enc_cors(w, field, cors);
}
