/*
 * ks_fault: fault injection rules and partitions.
 *
 * A rule matches requests by user, verb, resource (plural, or
 * "plural/subresource"), namespace and name (each optional), fires with a
 * probability and at most |count| times, and then delays, fails
 * (500/503/429/...), hangs, closes the connection, or ends the watch.
 * A partitioned user's requests hang until healed; its open watches stop
 * receiving events and get the missed ones when healed (TCP delivering late).
 */
#include "ks_fault.h"

#include <event2/bufferevent.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cx_json.h"
#include "cx_log.h"
#include "cx_time.h"
#include "ks_admin.h"
#include "ks_hostile.h"

enum fault_action {
    FA_DELAY = 1,
    FA_FAIL,
    FA_HANG,
    FA_CLOSE,
    FA_END_WATCH,
    FA_HUGE_BODY,
    FA_DEEP_JSON,
    FA_MUTATE,
    FA_RESPOND,
    FA_BLACKHOLE,
    FA_GOAWAY,
    FA_RESET,
    FA_STALL,
};

struct rule {
    uint64_t id;
    char *user, *verb, *resource, *ns, *name;
    enum fault_action action;
    int code;
    int retry_after;
    int64_t delay_ms;
    double probability; /* 0..1 */
    long remaining;     /* -1: unlimited */
    uint64_t hits;
    uint64_t size;   /* huge-body: bytes; deep-json: nesting depth */
    cJSON *mutation; /* mutate: {"path":..,"value":..} or {"path":..,"delete":true} */
    char *body;      /* respond: the body, verbatim */
    char *ctype;     /* respond: its Content-Type */
    bool end;        /* respond on a watch: end the stream after the body */
    struct rule *next;
};

struct partition {
    char *user;
    struct partition *next;
};

struct ks_fault_state {
    struct rule *rules;
    uint64_t next_id;
    struct partition *parts;
    uint64_t rng;
};

struct ks_fault_state *ks_fault_new(void)
{
    struct ks_fault_state *f = calloc(1, sizeof(*f));
    if (f) {
        f->next_id = 1;
        f->rng = (uint64_t)cx_mono_ns() | 1;
    }
    return f;
}

static void rule_free(struct rule *r)
{
    free(r->user);
    free(r->verb);
    free(r->resource);
    free(r->ns);
    free(r->name);
    cJSON_Delete(r->mutation);
    free(r->body);
    free(r->ctype);
    free(r);
}

static void parts_clear(struct ks_fault_state *f, const char *user)
{
    struct partition **pp = &f->parts;
    while (*pp) {
        if (!user || strcmp((*pp)->user, user) == 0) {
            struct partition *d = *pp;
            *pp = d->next;
            free(d->user);
            free(d);
        } else {
            pp = &(*pp)->next;
        }
    }
}

void ks_fault_free(struct ks_fault_state *f)
{
    if (!f)
        return;
    struct rule *r = f->rules;
    while (r) {
        struct rule *n = r->next;
        rule_free(r);
        r = n;
    }
    parts_clear(f, NULL);
    free(f);
}

static struct ks_fault_state *state(struct ks_server *s)
{
    return s->admin ? ks_admin_faults(s) : NULL;
}

bool ks_fault_partitioned(struct ks_server *s, const char *user)
{
    struct ks_fault_state *f = state(s);
    for (struct partition *p = f ? f->parts : NULL; p; p = p->next)
        if (strcmp(p->user, user) == 0)
            return true;
    return false;
}

static double rnd(struct ks_fault_state *f)
{
    uint64_t x = f->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    f->rng = x;
    return (double)(x >> 11) / (double)(UINT64_C(1) << 53);
}

static bool field_ok(const char *want, const char *have)
{
    return !want || !*want || strcmp(want, have ? have : "") == 0;
}

static bool rule_matches(const struct rule *ru, const struct ks_req *r)
{
    char res[300];
    if (r->rt && r->sub)
        snprintf(res, sizeof(res), "%s/%s", r->rt->plural, r->sub);
    else
        snprintf(res, sizeof(res), "%s", r->rt ? r->rt->plural : "");
    bool res_ok = !ru->resource || !*ru->resource || strcmp(ru->resource, res) == 0 ||
                  (r->rt && strcmp(ru->resource, r->rt->plural) == 0 && !r->sub);
    return field_ok(ru->user, r->user) && field_ok(ru->verb, ks_verb_name(r->verb)) && res_ok &&
           field_ok(ru->ns, r->ns) && field_ok(ru->name, r->name);
}

/* ---- parked continuations ------------------------------------------------ */

static void delay_cont(struct ks_req *r)
{
    /* The delay is over: the request goes on (to authorization, which ran
     * before the faults, then the API). */
    ks_api_dispatch(r);
}

static void partition_cont(struct ks_req *r)
{
    /* Healed: continue with the fault rules, then the API. */
    if (ks_fault_intercept(r->s, r) == 0)
        ks_api_dispatch(r);
}

static void hang_cont(struct ks_req *r)
{
    (void)r; /* never resumed by a timer; only by close or shutdown */
}

void ks_fault_park_data_free(struct ks_req *r)
{
    free(r->park_data);
    r->park_data = NULL;
}

static void close_connection(struct ks_req *r)
{
    /* Park first so that our close callback frees the request when the
     * transport notices the dead socket; then cut it. */
    if (ks_park(r->s, r, -1, hang_cont, NULL) != 0) {
        ks_reply_status(r, 500, "InternalError", "injected close failed", NULL, NULL);
        return;
    }
    if (ks_req_close_conn(r) != 0)
        ks_unpark_now(r); /* hang_cont answers nothing: the dispatcher's 500 */
}

/* The request's connection goes silent: nothing is read or written any
 * more and it is not closed (after |ms| it is, if > 0). The request hangs
 * on it. */
static void blackhole(struct ks_req *r, int64_t ms)
{
    if (ks_park(r->s, r, -1, hang_cont, NULL) != 0) {
        ks_reply_status(r, 500, "InternalError", "injected blackhole failed", NULL, NULL);
        return;
    }
    if (ks_req_blackhole(r, ms) != 0)
        ks_unpark_now(r);
}

static void fail(struct ks_req *r, const struct rule *ru)
{
    char ra[16];
    int code = ru->code ? ru->code : 500;
    if (ru->retry_after > 0) {
        snprintf(ra, sizeof(ra), "%d", ru->retry_after);
        ks_req_add_header(r, "Retry-After", ra);
    }
    struct ks_details d = {.retry_after = 0};
    switch (code) {
    case 429:
        /* The max-in-flight filter's answer: plain text. */
        if (ru->retry_after <= 0)
            ks_req_add_header(r, "Retry-After", "1");
        ks_reply_text(r, 429, "text/plain; charset=utf-8",
                      "Too many requests, please try again later.\n");
        break;
    case 503:
        ks_reply_status(r, 503, "ServiceUnavailable",
                        "the server is currently unable to handle the request", NULL, NULL);
        break;
    case 500: {
        struct ks_cause c = {.message = "injected fault"};
        d.causes = &c;
        d.ncauses = 1;
        ks_reply_status(r, 500, "InternalError", "Internal error occurred: injected fault", &d,
                        NULL);
        break;
    }
    case 504:
        ks_reply_status(r, 504, "Timeout",
                        "the server was unable to return a response in the time allotted", NULL,
                        NULL);
        break;
    default: {
        char msg[128];
        snprintf(msg, sizeof(msg), "injected fault (%d)", code);
        ks_reply_status(r, code, "", msg, NULL, NULL);
    }
    }
}

int ks_fault_intercept(struct ks_server *s, struct ks_req *r)
{
    struct ks_fault_state *f = state(s);
    if (!f)
        return 0;
    if (ks_fault_partitioned(s, r->user)) {
        if (ks_park(s, r, -1, partition_cont, NULL) == 0)
            return -1;
        ks_reply_status(r, 503, "ServiceUnavailable", "partitioned", NULL, NULL);
        return -1;
    }
    for (struct rule *ru = f->rules; ru; ru = ru->next) {
        if (ru->remaining == 0 || !rule_matches(ru, r))
            continue;
        if (ru->probability < 1.0 && rnd(f) >= ru->probability)
            continue;
        if (ru->remaining > 0)
            ru->remaining--;
        ru->hits++;
        cx_debug(KS_LOG, "fault %llu fires on %s %s by %s", (unsigned long long)ru->id,
                 ks_verb_name(r->verb), r->rt ? r->rt->plural : "", r->user);
        switch (ru->action) {
        case FA_DELAY:
            if (ks_park(s, r, ru->delay_ms, delay_cont, NULL) != 0)
                ks_err_internal(r, "cannot delay");
            return -1;
        case FA_FAIL:
            fail(r, ru);
            return -1;
        case FA_HANG:
            if (ks_park(s, r, -1, hang_cont, NULL) != 0)
                ks_err_internal(r, "cannot hang");
            return -1;
        case FA_CLOSE:
            close_connection(r);
            return -1;
        case FA_END_WATCH:
            if (r->verb == KS_V_WATCH) {
                /* The watch starts, then ends at once (a clean close). */
                r->end_watch_now = true;
            }
            return 0;
        case FA_HUGE_BODY:
            ks_hostile_reply(r, KS_HOSTILE_HUGE, ru->size ? ru->size : (uint64_t)64 << 20);
            return -1;
        case FA_DEEP_JSON:
            ks_hostile_reply(r, KS_HOSTILE_DEEP, ru->size ? ru->size : 100000);
            return -1;
        case FA_MUTATE:
            /* Served as usual, each object mutated (ks_form.c). */
            cJSON_Delete(r->mutate);
            r->mutate = cJSON_Duplicate(ru->mutation, 1);
            return 0;
        case FA_RESPOND:
            ks_hostile_respond(r, ru->code ? ru->code : 200, ru->ctype, ru->body, ru->end);
            return -1;
        case FA_BLACKHOLE:
            blackhole(r, ru->delay_ms);
            return -1;
        case FA_GOAWAY:
            /* Served; then the connection goes away (what kube-apiserver's
             * --goaway-chance filter does). */
            ks_req_goaway(r);
            return 0;
        case FA_RESET:
            if (r->verb == KS_V_WATCH && ru->delay_ms > 0) {
                /* The watch runs, then its stream is reset. */
                r->reset_code = (uint32_t)ru->code;
                r->reset_after_ms = ru->delay_ms;
                return 0;
            }
            r->replied = true; /* nothing is answered: the stream is reset */
            r->code = 0;
            if (ks_req_reset(r, (uint32_t)ru->code) != 0)
                ks_err_internal(r, "cannot reset");
            return -1;
        case FA_STALL:
            if (r->verb == KS_V_WATCH) {
                /* The stream starts (200) and then sends nothing, while the
                 * connection's other streams flow. */
                r->stalled = true;
                return 0;
            }
            if (ks_park(s, r, -1, hang_cont, NULL) != 0)
                ks_err_internal(r, "cannot stall");
            return -1;
        }
    }
    return 0;
}

/* ---- admin ---------------------------------------------------------------- */

static char *jdup(const cJSON *o, const char *k)
{
    const char *v = cx_json_str(o, k);
    return v && *v ? strdup(v) : NULL;
}

static int rule_json(struct cx_buf *b, const struct rule *ru)
{
    static const char *names[] = {"",          "delay",     "fail",      "hang",   "close",
                                  "end-watch", "huge-body", "deep-json", "mutate", "respond",
                                  "blackhole", "goaway",    "reset",     "stall"};
    int rc = cx_buf_printf(b, "{\"id\":%llu,\"action\":\"%s\"", (unsigned long long)ru->id,
                           names[ru->action]);
    const char *keys[] = {"user", "verb", "resource", "namespace", "name"};
    const char *vals[] = {ru->user, ru->verb, ru->resource, ru->ns, ru->name};
    for (int i = 0; i < 5; i++)
        if (vals[i]) {
            rc |= cx_buf_printf(b, ",\"%s\":", keys[i]);
            rc |= cx_json_escape(b, vals[i]);
        }
    rc |= cx_buf_printf(b,
                        ",\"code\":%d,\"retry_after\":%d,\"delay_ms\":%lld,\"probability\":%g,"
                        "\"remaining\":%ld,\"hits\":%llu",
                        ru->code, ru->retry_after, (long long)ru->delay_ms, ru->probability,
                        ru->remaining, (unsigned long long)ru->hits);
    if (ru->action == FA_HUGE_BODY)
        rc |= cx_buf_printf(b, ",\"bytes\":%llu", (unsigned long long)ru->size);
    if (ru->action == FA_DEEP_JSON)
        rc |= cx_buf_printf(b, ",\"depth\":%llu", (unsigned long long)ru->size);
    if (ru->mutation) {
        rc |= cx_buf_puts(b, ",\"mutation\":");
        rc |= cx_json_canonical(ru->mutation, b);
    }
    if (ru->action == FA_RESPOND)
        rc |= cx_buf_printf(b, ",\"end\":%s", ru->end ? "true" : "false");
    rc |= cx_buf_puts(b, "}");
    return rc;
}

static void add_rule(struct ks_req *r, struct ks_fault_state *f)
{
    cJSON *j = cx_json_parse(r->body, r->body_len);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        ks_err_bad_request(r, "a fault rule is a JSON object");
        return;
    }
    const char *act = cx_json_str(j, "action");
    enum fault_action a = 0;
    if (act && strcmp(act, "delay") == 0)
        a = FA_DELAY;
    else if (act && strcmp(act, "fail") == 0)
        a = FA_FAIL;
    else if (act && strcmp(act, "hang") == 0)
        a = FA_HANG;
    else if (act && strcmp(act, "close") == 0)
        a = FA_CLOSE;
    else if (act && (strcmp(act, "end-watch") == 0 || strcmp(act, "end-watches") == 0))
        a = FA_END_WATCH;
    else if (act && strcmp(act, "huge-body") == 0)
        a = FA_HUGE_BODY;
    else if (act && strcmp(act, "deep-json") == 0)
        a = FA_DEEP_JSON;
    else if (act && strcmp(act, "mutate") == 0)
        a = FA_MUTATE;
    else if (act && strcmp(act, "respond") == 0)
        a = FA_RESPOND;
    else if (act && strcmp(act, "blackhole") == 0)
        a = FA_BLACKHOLE;
    else if (act && strcmp(act, "goaway") == 0)
        a = FA_GOAWAY;
    else if (act && strcmp(act, "reset") == 0)
        a = FA_RESET;
    else if (act && strcmp(act, "stall") == 0)
        a = FA_STALL;
    if (!a) {
        cJSON_Delete(j);
        ks_err_bad_request(r, "action must be delay, fail, hang, close, end-watch, huge-body, "
                              "deep-json, mutate, respond, blackhole, goaway, reset or stall");
        return;
    }
    const char *mpath = cx_json_str(j, "path");
    if (a == FA_MUTATE && (!mpath || !*mpath ||
                           (!cJSON_GetObjectItemCaseSensitive(j, "value") &&
                            !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "delete"))))) {
        cJSON_Delete(j);
        ks_err_bad_request(r, "mutate needs a path and a value (or \"delete\": true)");
        return;
    }
    struct rule *ru = calloc(1, sizeof(*ru));
    if (!ru) {
        cJSON_Delete(j);
        ks_err_internal(r, "out of memory");
        return;
    }
    ru->action = a;
    ru->user = jdup(j, "user");
    ru->verb = jdup(j, "verb");
    ru->resource = jdup(j, "resource");
    ru->ns = jdup(j, "namespace");
    ru->name = jdup(j, "name");
    const cJSON *v;
    ru->code =
        (v = cJSON_GetObjectItemCaseSensitive(j, "code")) && cJSON_IsNumber(v) ? v->valueint : 500;
    ru->retry_after = (v = cJSON_GetObjectItemCaseSensitive(j, "retry_after")) && cJSON_IsNumber(v)
                          ? v->valueint
                          : 0;
    ru->delay_ms = (v = cJSON_GetObjectItemCaseSensitive(j, "delay_ms")) && cJSON_IsNumber(v)
                       ? (int64_t)v->valuedouble
                       : 0;
    ru->probability = (v = cJSON_GetObjectItemCaseSensitive(j, "probability")) && cJSON_IsNumber(v)
                          ? v->valuedouble
                          : 1.0;
    ru->remaining = (v = cJSON_GetObjectItemCaseSensitive(j, "count")) && cJSON_IsNumber(v) &&
                            v->valuedouble > 0
                        ? (long)v->valuedouble
                        : -1;
    /* Sizes: at most 64 GiB of padding, 100M levels of nesting. */
    const char *sk = a == FA_HUGE_BODY ? "bytes" : "depth";
    if ((v = cJSON_GetObjectItemCaseSensitive(j, sk)) && cJSON_IsNumber(v) && v->valuedouble > 0)
        ru->size = v->valuedouble > (a == FA_HUGE_BODY ? 68719476736.0 : 1e8)
                       ? (uint64_t)(a == FA_HUGE_BODY ? 68719476736.0 : 1e8)
                       : (uint64_t)v->valuedouble;
    if (a == FA_MUTATE) {
        ru->mutation = cJSON_CreateObject();
        if (ru->mutation) {
            cJSON_AddStringToObject(ru->mutation, "path", mpath);
            const cJSON *mv = cJSON_GetObjectItemCaseSensitive(j, "value");
            if (mv)
                cJSON_AddItemToObject(ru->mutation, "value", cJSON_Duplicate(mv, 1));
            else
                cJSON_AddTrueToObject(ru->mutation, "delete");
        }
    }
    if (a == FA_RESET && !cJSON_GetObjectItemCaseSensitive(j, "code"))
        ru->code = 2; /* INTERNAL_ERROR, what Go's server resets a failed handler's stream with */
    if (a == FA_RESPOND) {
        ru->body = jdup(j, "body");
        ru->ctype = jdup(j, "content_type");
        ru->end = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "end"));
        if (!cJSON_GetObjectItemCaseSensitive(j, "code"))
            ru->code = 200;
    }
    cJSON_Delete(j);
    ru->id = f->next_id++;
    struct rule **pp = &f->rules;
    while (*pp)
        pp = &(*pp)->next;
    *pp = ru;
    struct cx_buf b;
    cx_buf_init(&b, 1 << 16);
    if (rule_json(&b, ru) == 0)
        ks_reply_json(r, 201, b.data, b.len);
    else
        ks_err_internal(r, "out of memory");
    cx_buf_free(&b);
}

static void list_rules(struct ks_req *r, struct ks_fault_state *f)
{
    struct cx_buf b;
    cx_buf_init(&b, 1 << 20);
    int rc = cx_buf_puts(&b, "{\"faults\":[");
    for (struct rule *ru = f->rules; ru; ru = ru->next) {
        if (ru != f->rules)
            rc |= cx_buf_puts(&b, ",");
        rc |= rule_json(&b, ru);
    }
    rc |= cx_buf_puts(&b, "],\"partitions\":[");
    for (struct partition *p = f->parts; p; p = p->next) {
        if (p != f->parts)
            rc |= cx_buf_puts(&b, ",");
        rc |= cx_json_escape(&b, p->user);
    }
    rc |= cx_buf_puts(&b, "]}");
    if (rc == 0)
        ks_reply_json(r, 200, b.data, b.len);
    else
        ks_err_internal(r, "out of memory");
    cx_buf_free(&b);
}

/* Wakes parked requests of healed users (all parked partition requests
 * whose user is no longer partitioned). */
static void wake_healed(struct ks_server *s)
{
    ks_admin_wake(s, partition_cont);
    ks_admin_wake(s, ks_http_discovery_cont);
    ks_watch_heal(s);
}

int ks_fault_admin(struct ks_req *r, const char *path)
{
    struct ks_server *s = r->s;
    struct ks_fault_state *f = state(s);
    if (!f)
        return -1;
    if (strcmp(path, "/faults") == 0) {
        if (r->method == EVHTTP_REQ_POST)
            add_rule(r, f);
        else if (r->method == EVHTTP_REQ_GET)
            list_rules(r, f);
        else if (r->method == EVHTTP_REQ_DELETE) {
            struct rule *ru = f->rules;
            while (ru) {
                struct rule *n = ru->next;
                rule_free(ru);
                ru = n;
            }
            f->rules = NULL;
            ks_reply_json(r, 200, "{}", 2);
        } else
            ks_err_method(r);
        return 0;
    }
    if (strncmp(path, "/faults/", 8) == 0 && r->method == EVHTTP_REQ_DELETE) {
        uint64_t id = strtoull(path + 8, NULL, 10);
        struct rule **pp = &f->rules;
        while (*pp && (*pp)->id != id)
            pp = &(*pp)->next;
        if (!*pp) {
            ks_err_generic_not_found(r);
            return 0;
        }
        struct rule *d = *pp;
        *pp = d->next;
        rule_free(d);
        ks_reply_json(r, 200, "{}", 2);
        return 0;
    }
    if (strcmp(path, "/partitions") == 0) {
        if (r->method == EVHTTP_REQ_POST) {
            cJSON *j = cx_json_parse(r->body, r->body_len);
            const char *u = cx_json_str(j, "user");
            if (!u || !*u) {
                cJSON_Delete(j);
                ks_err_bad_request(r, "partition needs a user");
                return 0;
            }
            if (!ks_fault_partitioned(s, u)) {
                struct partition *p = calloc(1, sizeof(*p));
                if (p)
                    p->user = strdup(u);
                if (p && p->user) {
                    p->next = f->parts;
                    f->parts = p;
                } else {
                    free(p);
                }
            }
            cJSON_Delete(j);
            ks_reply_json(r, 201, "{}", 2);
        } else if (r->method == EVHTTP_REQ_DELETE) {
            const char *u = ks_q(r, "user");
            parts_clear(f, u && *u ? u : NULL);
            ks_reply_json(r, 200, "{}", 2);
            wake_healed(s);
        } else if (r->method == EVHTTP_REQ_GET) {
            list_rules(r, f);
        } else {
            ks_err_method(r);
        }
        return 0;
    }
    if (strcmp(path, "/end-watches") == 0 && r->method == EVHTTP_REQ_POST) {
        cJSON *j = r->body_len ? cx_json_parse(r->body, r->body_len) : NULL;
        const char *u = cx_json_str(j, "user");
        const char *res = cx_json_str(j, "resource");
        size_t before = ks_watch_count(s);
        ks_watch_end_all(s, u && *u ? u : NULL, res && *res ? res : NULL);
        char buf[64];
        int n = snprintf(buf, sizeof(buf), "{\"ended\":%zu}", before - ks_watch_count(s));
        cJSON_Delete(j);
        ks_reply_json(r, 200, buf, (size_t)n);
        return 0;
    }
    return -1;
}
