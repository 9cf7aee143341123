/*
 * ks_admin: identity, audit, counters, parked requests and the /_sim/ API.
 */
#include "ks_admin.h"
#include "ks_h2.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cx_json.h"
#include "cx_log.h"
#include "cx_time.h"
#include "ks_api.h"
#include "ks_fault.h"
#include "ks_auth.h"
#include "ks_tls.h"

struct counter {
    char *key; /* "user\tverb\tresource" */
    uint64_t n;
    struct counter *next;
};

#define AUDIT_MAX_LINES 1000000 /* kept in memory; older lines are dropped */

struct ks_admin {
    /* audit: JSON lines */
    char **lines;
    size_t nlines, cap, first_seq; /* seq of lines[0] */
    uint64_t next_seq;
    FILE *audit_file;
    /* counters */
    struct counter *counters[256];
    struct ks_fault_state *faults;
};

int ks_admin_init(struct ks_server *s)
{
    struct ks_admin *a = calloc(1, sizeof(*a));
    if (!a)
        return -1;
    a->next_seq = 1;
    a->first_seq = 1;
    if (s->cfg.audit_file) {
        a->audit_file = fopen(s->cfg.audit_file, "a");
        if (!a->audit_file) {
            free(a);
            return -1;
        }
        setvbuf(a->audit_file, NULL, _IOLBF, 0);
    }
    a->faults = ks_fault_new();
    if (!a->faults) {
        if (a->audit_file)
            fclose(a->audit_file);
        free(a);
        return -1;
    }
    s->admin = a;
    return 0;
}

void ks_admin_free(struct ks_server *s)
{
    struct ks_admin *a = s->admin;
    if (!a)
        return;
    for (size_t i = 0; i < a->nlines; i++)
        free(a->lines[i]);
    free(a->lines);
    if (a->audit_file)
        fclose(a->audit_file);
    for (int i = 0; i < 256; i++) {
        struct counter *c = a->counters[i];
        while (c) {
            struct counter *n = c->next;
            free(c->key);
            free(c);
            c = n;
        }
    }
    ks_fault_free(a->faults);
    free(a);
    s->admin = NULL;
}

/* ---- identity ------------------------------------------------------------ */

int ks_admin_identify(struct ks_server *s, struct ks_req *r)
{
    const char *auth = ks_req_header(r, "Authorization");
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0) {
        const char *tok = auth + 7;
        while (*tok == ' ')
            tok++;
        if (ks_auth_token_user(s, tok, r) == 0)
            return 0;
        /* An unknown token is 401, except with --allow-all and no tokens at
         * all (then tokens are ignored, as if no authenticator was set). */
        if (!s->cfg.allow_all || ks_auth_has_tokens(s)) {
            ks_reply_status(r, 401, "Unauthorized", "Unauthorized", NULL, NULL);
            return -1;
        }
    }
    if (!s->cfg.allow_all) {
        /* Anonymous: RBAC decides (403 unless something grants it). */
        snprintf(r->user, sizeof(r->user), "system:anonymous");
        char **g = calloc(1, sizeof(*g));
        if (g && (g[0] = strdup("system:unauthenticated")) != NULL) {
            r->groups = g;
            r->ngroups = 1;
        } else {
            free(g);
        }
        return 0;
    }
    /* --allow-all without a known token: --anonymous-user if given, else
     * the User-Agent (so replicas can be told apart), else
     * system:anonymous. */
    const char *ua = ks_req_header(r, "User-Agent");
    if (s->cfg.anonymous_user)
        snprintf(r->user, sizeof(r->user), "%s", s->cfg.anonymous_user);
    else if (ua && *ua)
        snprintf(r->user, sizeof(r->user), "%s", ua);
    else
        snprintf(r->user, sizeof(r->user), "system:anonymous");
    return 0;
}

/* ---- counters and audit ------------------------------------------------- */

static void count(struct ks_server *s, const char *user, const char *verb, const char *resource)
{
    struct ks_admin *a = s->admin;
    char key[1024];
    snprintf(key, sizeof(key), "%s\t%s\t%s", user, verb, resource);
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = key; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    struct counter **pp = &a->counters[h & 255];
    for (struct counter *c = *pp; c; c = c->next)
        if (strcmp(c->key, key) == 0) {
            c->n++;
            return;
        }
    struct counter *c = calloc(1, sizeof(*c));
    if (!c)
        return;
    c->key = strdup(key);
    if (!c->key) {
        free(c);
        return;
    }
    c->n = 1;
    c->next = *pp;
    *pp = c;
}

static void audit_line(struct ks_server *s, struct ks_req *r)
{
    struct ks_admin *a = s->admin;
    struct cx_buf b;
    cx_buf_init(&b, 1 << 16);
    char wall[CX_TIME_MICRO_LEN];
    cx_time_format_micro(cx_wall_ns(), wall, sizeof(wall));
    int rc = cx_buf_printf(&b, "{\"seq\":%llu,\"mono_ns\":%lld,\"time\":\"%s\",\"user\":",
                           (unsigned long long)a->next_seq, (long long)cx_mono_ns(), wall);
    rc |= cx_json_escape(&b, r->user);
    rc |= cx_buf_printf(&b, ",\"verb\":\"%s\",\"group\":", ks_verb_name(r->verb));
    rc |= cx_json_escape(&b, r->rt ? r->rt->group : "");
    rc |= cx_buf_puts(&b, ",\"resource\":");
    rc |= cx_json_escape(&b, r->rt ? r->rt->plural : "");
    rc |= cx_buf_puts(&b, ",\"subresource\":");
    rc |= cx_json_escape(&b, r->sub ? r->sub : "");
    rc |= cx_buf_puts(&b, ",\"namespace\":");
    rc |= cx_json_escape(&b, r->ns ? r->ns : "");
    rc |= cx_buf_puts(&b, ",\"name\":");
    rc |= cx_json_escape(&b, r->name ? r->name : "");
    rc |= cx_buf_printf(&b, ",\"code\":%d,\"resourceVersion\":\"", r->code);
    if (r->result_rv)
        rc |= cx_buf_printf(&b, "%llu", (unsigned long long)r->result_rv);
    rc |= cx_buf_printf(&b, "\",\"dryRun\":%s,\"protocol\":\"%s\"}", r->dry_run ? "true" : "false",
                        r->was_h2 ? "HTTP/2.0" : "HTTP/1.1");
    if (rc) {
        cx_buf_free(&b);
        return;
    }
    a->next_seq++;
    if (a->audit_file)
        fprintf(a->audit_file, "%s\n", b.data);
    if (a->nlines == AUDIT_MAX_LINES) {
        free(a->lines[0]);
        memmove(a->lines, a->lines + 1, (a->nlines - 1) * sizeof(*a->lines));
        a->nlines--;
        a->first_seq++;
    }
    if (a->nlines == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 256;
        char **nl = realloc(a->lines, nc * sizeof(*nl));
        if (!nl) {
            cx_buf_free(&b);
            return;
        }
        a->lines = nl;
        a->cap = nc;
    }
    a->lines[a->nlines++] = cx_buf_steal(&b, NULL);
    cx_buf_free(&b);
}

void ks_admin_record(struct ks_server *s, struct ks_req *r)
{
    if (!s->admin)
        return;
    if (ks_verb_is_write(r->verb) && r->rt)
        audit_line(s, r);
}

void ks_admin_watch_started(struct ks_server *s, struct ks_req *r)
{
    (void)s;
    (void)r;
}

/* ---- parked requests ---------------------------------------------------- */

static void unpark(struct ks_req *r)
{
    TAILQ_REMOVE(&r->s->parked, r, park_link);
    if (r->park_ev) {
        event_free(r->park_ev);
        r->park_ev = NULL;
    }
    ks_req_on_close(r, NULL, NULL);
    r->parked = false;
}

/* Runs a parked request's continuation, then finishes it unless it parked
 * again (a watch, another delay). */
static void resume(struct ks_req *r, void (*cont)(struct ks_req *))
{
    unpark(r);
    cont(r);
    if (r->parked)
        return;
    if (!r->replied)
        ks_err_internal(r, "request was not answered");
    ks_req_done(r);
}

static void on_park_close(struct ks_req *r, void *arg)
{
    (void)arg;
    unpark(r);
    ks_req_gone(r);
    r->replied = true;
    r->code = 499;
    ks_req_done(r);
}

struct ks_park_info {
    int kind; /* 0 too-new, 1 delay, 2 hang/partition */
    uint64_t want;
    int64_t until_ms;
};

static void too_new_cont(struct ks_req *r)
{
    struct ks_park_info *pi = r->park_data;
    if (r->s->rv >= pi->want) {
        free(pi);
        r->park_data = NULL;
        ks_api_dispatch(r);
        return;
    }
    uint64_t want = pi->want;
    free(pi);
    r->park_data = NULL;
    char msg[256];
    snprintf(msg, sizeof(msg), "Timeout: Too large resource version: %llu, current: %llu",
             (unsigned long long)want, (unsigned long long)r->s->rv);
    struct ks_cause c = {.reason = "ResourceVersionTooLarge",
                         .message = "Too large resource version"};
    struct ks_details d = {.causes = &c, .ncauses = 1, .retry_after = 1};
    ks_reply_status(r, 504, "Timeout", msg, &d, NULL);
}

static void on_park_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct ks_req *r = arg;
    if (r->park_free)
        resume(r, (void (*)(struct ks_req *))r->park_free);
}

/* Parks |r|: |cont| runs when the timer fires (or is activated). */
int ks_park(struct ks_server *s, struct ks_req *r, int64_t ms, void (*cont)(struct ks_req *),
            void *data)
{
    r->park_ev = evtimer_new(s->base, on_park_timer, r);
    if (!r->park_ev || (!r->h2 && !(r->req && evhttp_request_get_connection(r->req))))
        return -1;
    r->park_free = (void (*)(struct ks_req *))cont;
    r->park_data = data;
    r->parked = true;
    TAILQ_INSERT_TAIL(&s->parked, r, park_link);
    ks_req_on_close(r, on_park_close, NULL);
    if (ms >= 0) {
        struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
        event_add(r->park_ev, &tv);
    }
    return 0;
}

void ks_unpark_now(struct ks_req *r)
{
    event_active(r->park_ev, EV_TIMEOUT, 0);
}

struct ks_fault_state *ks_admin_faults(struct ks_server *s)
{
    return s->admin->faults;
}

void ks_admin_wake(struct ks_server *s, void (*cont)(struct ks_req *))
{
    struct ks_req *r;
    TAILQ_FOREACH(r, &s->parked, park_link)
    {
        /* cppcheck-suppress uninitvar ; every parked request has park_free set by ks_park */
        if (r->park_free == (void (*)(struct ks_req *))cont && !ks_fault_partitioned(s, r->user))
            event_active(r->park_ev, EV_TIMEOUT, 0);
    }
}

bool ks_admin_park_too_new(struct ks_server *s, struct ks_req *r, uint64_t want)
{
    if (s->cfg.too_new_wait_ms <= 0)
        return false;
    struct ks_park_info *pi = calloc(1, sizeof(*pi));
    if (!pi)
        return false;
    pi->kind = 0;
    pi->want = want;
    if (ks_park(s, r, s->cfg.too_new_wait_ms, too_new_cont, pi) != 0) {
        free(pi);
        return false;
    }
    return true;
}

void ks_admin_on_commit(struct ks_server *s)
{
    struct ks_req *r;
    TAILQ_FOREACH(r, &s->parked, park_link)
    {
        struct ks_park_info *pi = r->park_data;
        /* cppcheck-suppress uninitvar ; set by ks_park for every parked request */
        if (r->park_free == (void (*)(struct ks_req *))too_new_cont && pi && s->rv >= pi->want)
            event_active(r->park_ev, EV_TIMEOUT, 0);
    }
}

void ks_admin_release_all(struct ks_server *s)
{
    struct ks_req *r;
    while ((r = TAILQ_FIRST(&s->parked)) != NULL) {
        unpark(r);
        if (r->park_free != (void (*)(struct ks_req *))too_new_cont || !r->park_data)
            ks_fault_park_data_free(r);
        else {
            free(r->park_data);
            r->park_data = NULL;
        }
        ks_reply_status(r, 503, "ServiceUnavailable", "the server is shutting down", NULL, NULL);
        ks_req_done(r);
    }
}

/* ---- intercept: counters, authorization, faults ------------------------ */

int ks_admin_intercept(struct ks_server *s, struct ks_req *r)
{
    count(s, r->user, ks_verb_name(r->verb), r->rt ? r->rt->plural : "");
    if (ks_auth_authorize(s, r) != 0)
        return -1;
    return ks_fault_intercept(s, r);
}

/* ---- /_sim/ API ------------------------------------------------------------ */

static bool loopback_peer(struct ks_req *r)
{
    const char *addr = ks_req_peer(r);
    if (!addr)
        return false;
    struct in_addr a4;
    if (inet_pton(AF_INET, addr, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    return strcmp(addr, "::1") == 0 || strncmp(addr, "::ffff:127.", 11) == 0;
}

static void admin_audit(struct ks_req *r)
{
    struct ks_admin *a = r->s->admin;
    const char *since = ks_q(r, "since");
    uint64_t from = 0;
    if (since)
        (void)ks_parse_rv(since, &from);
    struct evbuffer *b = evbuffer_new();
    if (!b) {
        ks_err_internal(r, "out of memory");
        return;
    }
    for (size_t i = 0; i < a->nlines; i++) {
        if (a->first_seq + i <= from)
            continue;
        evbuffer_add(b, a->lines[i], strlen(a->lines[i]));
        evbuffer_add(b, "\n", 1);
    }
    ks_reply_evbuf(r, 200, b, "application/x-ndjson");
    evbuffer_free(b);
}

static void admin_counters(struct ks_req *r)
{
    struct ks_admin *a = r->s->admin;
    struct cx_buf b;
    cx_buf_init(&b, 1 << 24);
    int rc = cx_buf_puts(&b, "{\"counters\":[");
    bool first = true;
    for (int i = 0; i < 256; i++)
        for (struct counter *c = a->counters[i]; c; c = c->next) {
            char *k = strdup(c->key);
            if (!k)
                continue;
            char *t1 = strchr(k, '\t');
            char *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
            if (t1 && t2) {
                *t1 = *t2 = 0;
                rc |= cx_buf_puts(&b, first ? "{\"user\":" : ",{\"user\":");
                rc |= cx_json_escape(&b, k);
                rc |= cx_buf_puts(&b, ",\"verb\":");
                rc |= cx_json_escape(&b, t1 + 1);
                rc |= cx_buf_puts(&b, ",\"resource\":");
                rc |= cx_json_escape(&b, t2 + 1);
                rc |= cx_buf_printf(&b, ",\"count\":%llu}", (unsigned long long)c->n);
                first = false;
            }
            free(k);
        }
    rc |= cx_buf_puts(&b, "]}");
    if (rc == 0)
        ks_reply_json(r, 200, b.data, b.len);
    else
        ks_err_internal(r, "out of memory");
    cx_buf_free(&b);
}

static void admin_reset_counters(struct ks_server *s)
{
    struct ks_admin *a = s->admin;
    for (int i = 0; i < 256; i++) {
        struct counter *c = a->counters[i];
        while (c) {
            struct counter *n = c->next;
            free(c->key);
            free(c);
            c = n;
        }
        a->counters[i] = NULL;
    }
}

void ks_admin_dispatch(struct ks_req *r)
{
    struct ks_server *s = r->s;
    if (!loopback_peer(r)) {
        ks_reply_status(r, 403, "Forbidden", "the admin API is served on loopback only", NULL,
                        NULL);
        return;
    }
    const char *p = r->path + 5; /* after "/_sim" */
    bool get = r->method == EVHTTP_REQ_GET, post = r->method == EVHTTP_REQ_POST;
    if (strcmp(p, "/audit") == 0 && get) {
        admin_audit(r);
    } else if (strcmp(p, "/counters") == 0 && get) {
        admin_counters(r);
    } else if (strcmp(p, "/counters") == 0 && r->method == EVHTTP_REQ_DELETE) {
        admin_reset_counters(s);
        ks_reply_json(r, 200, "{}", 2);
    } else if (strcmp(p, "/compact") == 0 && post) {
        ks_store_compact(s);
        char buf[64];
        int n =
            snprintf(buf, sizeof(buf), "{\"resourceVersion\":\"%llu\"}", (unsigned long long)s->rv);
        ks_reply_json(r, 200, buf, (size_t)n);
    } else if (strcmp(p, "/state") == 0 && get) {
        char buf[128];
        int n = snprintf(buf, sizeof(buf), "{\"resourceVersion\":\"%llu\",\"watches\":%zu}",
                         (unsigned long long)s->rv, ks_watch_count(s));
        ks_reply_json(r, 200, buf, (size_t)n);
    } else if (ks_fault_admin(r, p) == 0 || ks_auth_admin(r, p) == 0 || ks_h2_admin(r, p) == 0) {
        /* answered by the fault or auth module */
    } else {
        ks_err_generic_not_found(r);
    }
}
