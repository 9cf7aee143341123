#include "kube_report.h"

#include "cx_hash.h"
#include "cx_log.h"
#include "cx_metrics.h"
#include "kube_error.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- request info ------------------------------------------------------------ */

static void copy_seg(char *dst, size_t cap, const char *s, size_t n)
{
    /* Percent-decoding: names are DNS-like, so only what curl escaped. */
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        if (s[i] == '%' && i + 2 < n) {
            char hex[3] = {s[i + 1], s[i + 2], 0};
            char *end = NULL;
            long v = strtol(hex, &end, 16);
            if (end == hex + 2 && v > 0) {
                dst[o++] = (char)v;
                i += 2;
                continue;
            }
        }
        dst[o++] = s[i];
    }
    dst[o] = '\0';
}

/* The value of |key| in the query |q| (after '?'), or NULL; *len set. */
static const char *query_value(const char *q, const char *key, size_t *len)
{
    size_t kl = strlen(key);
    while (q && *q) {
        const char *amp = strchr(q, '&');
        size_t seglen = amp ? (size_t)(amp - q) : strlen(q);
        if (seglen > kl && strncmp(q, key, kl) == 0 && q[kl] == '=') {
            *len = seglen - kl - 1;
            return q + kl + 1;
        }
        q = amp ? amp + 1 : NULL;
    }
    return NULL;
}

#define MAX_PARTS 10

void kube_reqinfo_parse(struct kube_reqinfo *ri, const char *method, const char *path_query)
{
    memset(ri, 0, sizeof(*ri));
    if (!path_query || !method)
        return;
    const char *q = strchr(path_query, '?');
    size_t plen = q ? (size_t)(q - path_query) : strlen(path_query);
    /* Split the path into segments. */
    const char *seg[MAX_PARTS];
    size_t segl[MAX_PARTS];
    size_t n = 0;
    for (size_t i = 0; i < plen && n < MAX_PARTS;) {
        while (i < plen && path_query[i] == '/')
            i++;
        size_t st = i;
        while (i < plen && path_query[i] != '/')
            i++;
        if (i > st) {
            seg[n] = path_query + st;
            segl[n] = i - st;
            n++;
        }
    }
    size_t p = 0;
    if (n >= 2 && segl[0] == 3 && strncmp(seg[0], "api", 3) == 0)
        p = 2; /* /api/v1 */
    else if (n >= 3 && segl[0] == 4 && strncmp(seg[0], "apis", 4) == 0)
        p = 3; /* /apis/group/version */
    else
        return; /* not a resource path */
    const char *part[MAX_PARTS];
    size_t partl[MAX_PARTS];
    size_t np = 0;
    for (size_t i = p; i < n; i++, np++) {
        part[np] = seg[i];
        partl[np] = segl[i];
    }
    size_t cur = 0;
    if (np >= 2 && partl[0] == 10 && strncmp(part[0], "namespaces", 10) == 0) {
        copy_seg(ri->ns, sizeof(ri->ns), part[1], partl[1]);
        /* /namespaces/x/status and /finalize are the Namespace's own
         * subresources; anything else after the name is a resource in it. */
        int ns_sub = np > 2 && ((partl[2] == 6 && strncmp(part[2], "status", 6) == 0) ||
                                (partl[2] == 8 && strncmp(part[2], "finalize", 8) == 0));
        if (np > 2 && !ns_sub)
            cur = 2;
    }
    size_t rest = np - cur;
    char resource[96] = "", sub[32] = "";
    if (rest >= 1)
        copy_seg(resource, sizeof(resource), part[cur], partl[cur]);
    if (rest >= 2)
        copy_seg(ri->name, sizeof(ri->name), part[cur + 1], partl[cur + 1]);
    if (rest >= 3)
        copy_seg(sub, sizeof(sub), part[cur + 2], partl[cur + 2]);
    if (*sub)
        snprintf(ri->resource, sizeof(ri->resource), "%s/%s", resource, sub);
    else
        snprintf(ri->resource, sizeof(ri->resource), "%s", resource);
    if (strcmp(resource, "namespaces") == 0 && cur == 0)
        ri->ns[0] = '\0'; /* a Namespace is cluster-scoped; its name is the object */

    size_t vl = 0;
    const char *w = q ? query_value(q + 1, "watch", &vl) : NULL;
    int watch = w && ((vl == 1 && *w == '1') || (vl == 4 && strncmp(w, "true", 4) == 0));
    const char *verb;
    if (strcmp(method, "GET") == 0)
        verb = watch ? "watch" : (*ri->name ? "get" : "list");
    else if (strcmp(method, "POST") == 0)
        verb = "create";
    else if (strcmp(method, "PUT") == 0)
        verb = "update";
    else if (strcmp(method, "PATCH") == 0)
        verb = "patch";
    else if (strcmp(method, "DELETE") == 0)
        verb = *ri->name ? "delete" : "deletecollection";
    else
        verb = "";
    snprintf(ri->verb, sizeof(ri->verb), "%s", verb);
    if (!*ri->name && q) {
        /* A list or watch of one object by field selector names it. */
        const char *fs = query_value(q + 1, "fieldSelector", &vl);
        static const char pre[] = "metadata.name%3D";
        if (fs && vl > sizeof(pre) - 1 && strncmp(fs, pre, sizeof(pre) - 1) == 0) {
            size_t nl = vl - (sizeof(pre) - 1);
            const char *nm = fs + sizeof(pre) - 1;
            const char *comma = memchr(nm, '%', nl); /* "%2C": a second requirement */
            if (!comma)
                copy_seg(ri->name, sizeof(ri->name), nm, nl);
        }
    }
}

const char *kube_reqinfo_object(const struct kube_reqinfo *ri, char *out, size_t n)
{
    if (*ri->name && *ri->ns)
        snprintf(out, n, "%s/%s", ri->ns, ri->name);
    else if (*ri->name)
        snprintf(out, n, "%s", ri->name);
    else if (*ri->ns)
        snprintf(out, n, "in namespace %s", ri->ns);
    else
        snprintf(out, n, "in all namespaces");
    return out;
}

/* ---- decisions ------------------------------------------------------------------- */

static uint64_t hash_str(uint64_t h, const char *s)
{
    h = cx_fnv64(h, s, strlen(s));
    return cx_fnv64(h, "\0", 1);
}

static uint64_t object_hash(const struct kube_reqinfo *ri)
{
    uint64_t h = CX_FNV64_INIT;
    h = hash_str(h, ri->verb);
    h = hash_str(h, ri->resource);
    h = hash_str(h, ri->ns);
    h = hash_str(h, ri->name);
    return h ? h : 1;
}

static uint64_t error_hash(uint64_t obj, const struct kube_error *e)
{
    uint64_t h = obj;
    int code = (int)e->code;
    h = cx_fnv64(h, &code, sizeof(code));
    h = cx_fnv64(h, &e->http_status, sizeof(e->http_status));
    h = hash_str(h, e->reason);
    /* A server's message names what is wrong and is stable; a transport
     * error's text carries timings that change every time. */
    if (e->http_status)
        h = hash_str(h, e->message);
    return h ? h : 1;
}

void kube_report_init(struct kube_report *r, const char *client, int64_t now_ns)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->client, sizeof(r->client), "%s", client && *client ? client : "coxswain");
    cx_ratelimit_init(&r->lines, KUBE_REPORT_LINES_QPS, KUBE_REPORT_LINES_BURST, now_ns);
}

static struct kube_report_slot *slot_find(struct kube_report *r, uint64_t key)
{
    for (size_t i = 0; i < KUBE_REPORT_SLOTS; i++)
        if (r->slots[i].key == key)
            return &r->slots[i];
    return NULL;
}

/* A free slot, else the one seen longest ago. */
static struct kube_report_slot *slot_take(struct kube_report *r)
{
    struct kube_report_slot *old = &r->slots[0];
    for (size_t i = 0; i < KUBE_REPORT_SLOTS; i++) {
        if (!r->slots[i].key) {
            r->used++;
            return &r->slots[i];
        }
        if (r->slots[i].last_ns < old->last_ns)
            old = &r->slots[i];
    }
    return old;
}

/* Whether the per-client bucket lets a line out now. */
static int line_allowed(struct kube_report *r, struct kube_report_line *l, int64_t now_ns)
{
    if (cx_ratelimit_take(&r->lines, now_ns) != 0) {
        r->held_back++;
        l->action = KUBE_REPORT_NONE;
        return 0;
    }
    l->held_back = r->held_back;
    r->held_back = 0;
    return 1;
}

struct kube_report_line kube_report_note(struct kube_report *r, const struct kube_reqinfo *ri,
                                         const struct kube_error *e, int64_t now_ns)
{
    struct kube_report_line l = {.action = KUBE_REPORT_NONE};
    uint64_t obj = object_hash(ri);
    if (e->code == KUBE_OK) {
        if (!r->used)
            return l;
        uint64_t failures = 0;
        int logged = 0;
        for (size_t i = 0; i < KUBE_REPORT_SLOTS; i++) {
            struct kube_report_slot *s = &r->slots[i];
            if (!s->key || s->obj != obj)
                continue;
            failures += s->seen;
            logged |= s->logged_ns != 0;
            memset(s, 0, sizeof(*s));
            r->used--;
        }
        if (failures && logged && line_allowed(r, &l, now_ns)) {
            l.action = KUBE_REPORT_RECOVERED;
            l.repeats = failures;
        }
        return l;
    }
    uint64_t key = error_hash(obj, e);
    struct kube_report_slot *s = slot_find(r, key);
    if (!s) {
        s = slot_take(r);
        memset(s, 0, sizeof(*s));
        s->key = key;
        s->obj = obj;
    }
    s->seen++;
    s->since_logged++;
    s->last_ns = now_ns;
    enum kube_report_action a = KUBE_REPORT_NONE;
    if (!s->logged_ns)
        a = KUBE_REPORT_FIRST;
    else if (now_ns - s->logged_ns >= KUBE_REPORT_REPEAT_NS)
        a = KUBE_REPORT_REPEAT;
    if (a != KUBE_REPORT_NONE && line_allowed(r, &l, now_ns)) {
        l.action = a;
        l.repeats = s->since_logged;
        s->since_logged = 0;
        s->logged_ns = now_ns ? now_ns : 1;
    }
    return l;
}

/* ---- logging and counting -------------------------------------------------------- */

static pthread_once_t metrics_once = PTHREAD_ONCE_INIT;
static struct cx_metric *m_requests, *m_errors;

static void metrics_init_once(void)
{
    m_requests = cx_counter("coxswain_kube_requests_total",
                            "HTTP requests sent to the Kubernetes API (every attempt, watches "
                            "included), by client, verb and resource.",
                            "client,verb,resource");
    m_errors = cx_counter("coxswain_kube_request_errors_total",
                          "Kubernetes API requests that failed, by client, verb, resource and "
                          "error class (forbidden, not_found, conflict, transport, ...).",
                          "client,verb,resource,class");
}

void kube_report_metrics_init(void)
{
    pthread_once(&metrics_once, metrics_init_once);
}

void kube_report_sent(struct kube_report *r, const struct kube_reqinfo *ri)
{
    kube_report_metrics_init();
    if (m_requests)
        cx_metric_inc(m_requests, r->client, *ri->verb ? ri->verb : "other",
                      *ri->resource ? ri->resource : "other");
}

void kube_report_attempt(struct kube_report *r, const struct kube_reqinfo *ri,
                         const struct kube_error *e, int quiet, int64_t now_ns)
{
    kube_report_metrics_init();
    const char *verb = *ri->verb ? ri->verb : "other";
    const char *res = *ri->resource ? ri->resource : "other";
    if (e->code != KUBE_OK && m_errors)
        cx_metric_inc(m_errors, r->client, verb, res, kube_error_name(e->code));
    /* An outcome the caller expects (a 410 on a watch) is no news: it
     * neither takes the line budget nor counts as a failure to recover
     * from. */
    if (quiet && e->code != KUBE_OK && !cx_log_enabled(CX_LOG_DEBUG))
        return;
    struct kube_report_line l = {.action = KUBE_REPORT_FIRST};
    if (!quiet || e->code == KUBE_OK)
        l = kube_report_note(r, ri, e, now_ns);
    if (l.action == KUBE_REPORT_NONE)
        return;
    char obj[400];
    kube_reqinfo_object(ri, obj, sizeof(obj));
    char tail[160] = "";
    if (l.held_back)
        snprintf(tail, sizeof(tail), "; %llu other API error lines held back",
                 (unsigned long long)l.held_back);
    if (l.action == KUBE_REPORT_RECOVERED) {
        cx_info("kube", "%s %s %s succeeds again after %llu failed attempt%s (client %s)%s", verb,
                res, obj, (unsigned long long)l.repeats, l.repeats == 1 ? "" : "s", r->client,
                tail);
        return;
    }
    char what[128];
    if (e->http_status)
        snprintf(what, sizeof(what), "HTTP %d%s%s", e->http_status, *e->reason ? " " : "",
                 e->reason);
    else
        snprintf(what, sizeof(what), "%s", kube_error_name(e->code));
    char again[96] = "";
    if (l.action == KUBE_REPORT_REPEAT)
        snprintf(again, sizeof(again), "; %llu times since the last such line",
                 (unsigned long long)l.repeats);
    if (quiet) {
        cx_debug("kube", "%s %s %s: %s: %s (client %s; expected by the caller)", verb, res, obj,
                 what, *e->message ? e->message : "(no message)", r->client);
        return;
    }
    cx_warn("kube", "%s %s %s failed: %s: %s (client %s; repeats logged every %d s%s)%s", verb, res,
            obj, what, *e->message ? e->message : "(no message)", r->client,
            (int)(KUBE_REPORT_REPEAT_NS / 1000000000), again, tail);
}
