/*
 * ks_http: request entry point, path routing, replies and Status objects.
 */
#include "ks_http.h"
#include "ks_h2.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cx_buf.h"
#include "cx_json.h"
#include "cx_log.h"
#include "cx_time.h"
#include "ks_admin.h"
#include "ks_auth.h"
#include "ks_fault.h"
#include "ks_selector.h"

const char *ks_verb_name(enum ks_verb v)
{
    switch (v) {
    case KS_V_GET:
        return "get";
    case KS_V_LIST:
        return "list";
    case KS_V_WATCH:
        return "watch";
    case KS_V_CREATE:
        return "create";
    case KS_V_UPDATE:
        return "update";
    case KS_V_PATCH:
        return "patch";
    case KS_V_DELETE:
        return "delete";
    case KS_V_DELETECOLLECTION:
        return "deletecollection";
    default:
        return "";
    }
}

bool ks_verb_is_write(enum ks_verb v)
{
    return v == KS_V_CREATE || v == KS_V_UPDATE || v == KS_V_PATCH || v == KS_V_DELETE ||
           v == KS_V_DELETECOLLECTION;
}

const char *ks_q(struct ks_req *r, const char *k)
{
    for (size_t i = 0; i < r->nq; i++)
        if (strcmp(r->qp[i].k, k) == 0)
            return r->qp[i].v;
    return NULL;
}

static const char *phrase(int code)
{
    switch (code) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 406:
        return "Not Acceptable";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 413:
        return "Request Entity Too Large";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "Status";
    }
}

static void common_headers(struct ks_req *r, const char *ctype)
{
    if (ctype)
        ks_req_add_header(r, "Content-Type", ctype);
    ks_req_add_header(r, "Cache-Control", "no-cache, private");
    ks_req_add_header(r, "Audit-Id", r->audit_id);
}

void ks_reply_evbuf(struct ks_req *r, int code, struct evbuffer *buf, const char *ctype)
{
    if (r->replied)
        return;
    r->replied = true;
    r->code = code;
    common_headers(r, ctype);
    ks_req_send(r, code, phrase(code), buf);
}

void ks_reply_json(struct ks_req *r, int code, const char *json, size_t len)
{
    struct evbuffer *b = evbuffer_new();
    if (b)
        evbuffer_add(b, json, len);
    ks_reply_evbuf(r, code, b, "application/json");
    if (b)
        evbuffer_free(b);
}

void ks_reply_text(struct ks_req *r, int code, const char *ctype, const char *text)
{
    struct evbuffer *b = evbuffer_new();
    if (b)
        evbuffer_add(b, text, strlen(text));
    ks_reply_evbuf(r, code, b, ctype);
    if (b)
        evbuffer_free(b);
}

void ks_reply_status(struct ks_req *r, int code, const char *reason, const char *message,
                     const struct ks_details *d, const char *list_continue)
{
    struct cx_buf b;
    cx_buf_init(&b, 1 << 20);
    int rc = cx_buf_puts(&b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{");
    if (list_continue) {
        rc |= cx_buf_puts(&b, "\"continue\":");
        rc |= cx_json_escape(&b, list_continue);
    }
    rc |=
        cx_buf_printf(&b, "},\"status\":\"%s\"", code >= 200 && code < 300 ? "Success" : "Failure");
    if (message && *message) {
        rc |= cx_buf_puts(&b, ",\"message\":");
        rc |= cx_json_escape(&b, message);
    }
    if (reason && *reason)
        rc |= cx_buf_printf(&b, ",\"reason\":\"%s\"", reason);
    if (d &&
        (d->present || d->name || d->group || d->kind || d->uid || d->ncauses || d->retry_after)) {
        rc |= cx_buf_puts(&b, ",\"details\":{");
        const char *sep = "";
        const char *keys[] = {"name", "group", "kind", "uid"};
        const char *vals[] = {d->name, d->group, d->kind, d->uid};
        for (int i = 0; i < 4; i++) {
            if (vals[i] && *vals[i]) {
                rc |= cx_buf_printf(&b, "%s\"%s\":", sep, keys[i]);
                rc |= cx_json_escape(&b, vals[i]);
                sep = ",";
            }
        }
        if (d->ncauses) {
            rc |= cx_buf_printf(&b, "%s\"causes\":[", sep);
            for (size_t i = 0; i < d->ncauses; i++) {
                const struct ks_cause *c = &d->causes[i];
                rc |= cx_buf_puts(&b, i ? ",{" : "{");
                const char *csep = "";
                if (c->reason && *c->reason) {
                    rc |= cx_buf_printf(&b, "\"reason\":\"%s\"", c->reason);
                    csep = ",";
                }
                if (c->message && *c->message) {
                    rc |= cx_buf_printf(&b, "%s\"message\":", csep);
                    rc |= cx_json_escape(&b, c->message);
                    csep = ",";
                }
                if (c->field && *c->field) {
                    rc |= cx_buf_printf(&b, "%s\"field\":", csep);
                    rc |= cx_json_escape(&b, c->field);
                }
                rc |= cx_buf_puts(&b, "}");
            }
            rc |= cx_buf_puts(&b, "]");
            sep = ",";
        }
        if (d->retry_after)
            rc |= cx_buf_printf(&b, "%s\"retryAfterSeconds\":%d", sep, d->retry_after);
        rc |= cx_buf_puts(&b, "}");
    }
    if (code >= 300 || code < 200)
        rc |= cx_buf_printf(&b, ",\"code\":%d", code);
    rc |= cx_buf_puts(&b, "}");
    if (rc) {
        cx_buf_free(&b);
        ks_reply_text(r, 500, "text/plain", "out of memory");
        return;
    }
    if (d && d->retry_after) {
        char ra[16];
        snprintf(ra, sizeof(ra), "%d", d->retry_after);
        ks_req_add_header(r, "Retry-After", ra);
    }
    ks_reply_json(r, code, b.data, b.len);
    cx_buf_free(&b);
}

void ks_qualified_resource(const struct ks_rtype *rt, char *out, size_t n)
{
    if (*rt->group)
        snprintf(out, n, "%s.%s", rt->plural, rt->group);
    else
        snprintf(out, n, "%s", rt->plural);
}

void ks_err_not_found(struct ks_req *r, const struct ks_rtype *rt, const char *name)
{
    char qr[320], msg[1024];
    ks_qualified_resource(rt, qr, sizeof(qr));
    snprintf(msg, sizeof(msg), "%s \"%s\" not found", qr, name);
    struct ks_details d = {.name = name, .group = rt->group, .kind = rt->plural};
    ks_reply_status(r, 404, "NotFound", msg, &d, NULL);
}

void ks_err_already_exists(struct ks_req *r, const struct ks_rtype *rt, const char *name)
{
    char qr[320], msg[1024];
    ks_qualified_resource(rt, qr, sizeof(qr));
    snprintf(msg, sizeof(msg), "%s \"%s\" already exists", qr, name);
    struct ks_details d = {.name = name, .group = rt->group, .kind = rt->plural};
    ks_reply_status(r, 409, "AlreadyExists", msg, &d, NULL);
}

void ks_err_conflict(struct ks_req *r, const struct ks_rtype *rt, const char *name, const char *why)
{
    char qr[320];
    ks_qualified_resource(rt, qr, sizeof(qr));
    struct cx_buf b;
    cx_buf_init(&b, 1 << 16);
    if (cx_buf_printf(&b, "Operation cannot be fulfilled on %s \"%s\": %s", qr, name, why) != 0) {
        cx_buf_free(&b);
        ks_err_internal(r, "out of memory");
        return;
    }
    struct ks_details d = {.name = name, .group = rt->group, .kind = rt->plural};
    ks_reply_status(r, 409, "Conflict", b.data, &d, NULL);
    cx_buf_free(&b);
}

void ks_ferr_add(struct ks_ferrs *fe, const char *type, const char *field, const char *fmt, ...)
{
    if (fe->n >= sizeof(fe->e) / sizeof(fe->e[0]))
        return;
    struct ks_ferr *e = &fe->e[fe->n];
    struct cx_buf b;
    cx_buf_init(&b, 1 << 16);
    va_list ap;
    va_start(ap, fmt);
    int rc = cx_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (rc != 0) {
        cx_buf_free(&b);
        return;
    }
    e->type = type;
    snprintf(e->field, sizeof(e->field), "%s", field);
    e->body = cx_buf_steal(&b, NULL);
    cx_buf_free(&b);
    if (e->body)
        fe->n++;
}

void ks_ferr_invalid_str(struct ks_ferrs *fe, const char *field, const char *value,
                         const char *detail)
{
    struct cx_buf b;
    cx_buf_init(&b, 1 << 16);
    ks_go_quote(&b, value);
    ks_ferr_add(fe, "FieldValueInvalid", field, "Invalid value: %s: %s", b.data ? b.data : "\"\"",
                detail);
    cx_buf_free(&b);
}

void ks_ferrs_free(struct ks_ferrs *fe)
{
    for (size_t i = 0; i < fe->n; i++) {
        free(fe->e[i].body);
        fe->e[i].body = NULL;
    }
    fe->n = 0;
}

void ks_err_invalid_kind(struct ks_req *r, const char *group, const char *kind, const char *name,
                         struct ks_ferrs *fe)
{
    struct cx_buf b;
    cx_buf_init(&b, 1 << 20);
    int rc;
    if (*group)
        rc = cx_buf_printf(&b, "%s.%s \"%s\" is invalid", kind, group, name);
    else
        rc = cx_buf_printf(&b, "%s \"%s\" is invalid", kind, name);
    if (fe->n)
        rc |= cx_buf_puts(&b, fe->n > 1 ? ": [" : ": ");
    struct ks_cause causes[16];
    for (size_t i = 0; i < fe->n; i++) {
        if (i)
            rc |= cx_buf_puts(&b, ", ");
        if (fe->e[i].field[0])
            rc |= cx_buf_printf(&b, "%s: %s", fe->e[i].field, fe->e[i].body);
        else
            rc |= cx_buf_printf(&b, "<nil>: %s", fe->e[i].body);
        causes[i].reason = fe->e[i].type;
        causes[i].message = fe->e[i].body;
        causes[i].field = fe->e[i].field;
    }
    if (fe->n > 1)
        rc |= cx_buf_puts(&b, "]");
    struct ks_details d = {
        .name = name, .group = group, .kind = kind, .causes = causes, .ncauses = fe->n};
    if (rc == 0)
        ks_reply_status(r, 422, "Invalid", b.data, &d, NULL);
    else
        ks_err_internal(r, "out of memory");
    cx_buf_free(&b);
    ks_ferrs_free(fe);
}

void ks_err_invalid(struct ks_req *r, const struct ks_rtype *rt, const char *name,
                    struct ks_ferrs *fe)
{
    ks_err_invalid_kind(r, rt->group, rt->kind, name, fe);
}

void ks_err_bad_request(struct ks_req *r, const char *fmt, ...)
{
    struct cx_buf b;
    cx_buf_init(&b, 1 << 16);
    va_list ap;
    va_start(ap, fmt);
    int rc = cx_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    ks_reply_status(r, 400, "BadRequest", rc == 0 ? b.data : "bad request", NULL, NULL);
    cx_buf_free(&b);
}

void ks_err_internal(struct ks_req *r, const char *msg)
{
    char m[1024];
    snprintf(m, sizeof(m), "Internal error occurred: %s", msg);
    struct ks_cause c = {.message = msg};
    struct ks_details d = {.causes = &c, .ncauses = 1};
    ks_reply_status(r, 500, "InternalError", m, &d, NULL);
}

void ks_err_generic_not_found(struct ks_req *r)
{
    struct ks_details d = {.present = true};
    ks_reply_status(r, 404, "NotFound", "the server could not find the requested resource", &d,
                    NULL);
}

void ks_err_method(struct ks_req *r)
{
    struct ks_details d = {.present = true};
    ks_reply_status(r, 405, "MethodNotAllowed",
                    "the server does not allow this method on the requested resource", &d, NULL);
}

/* ---- request parsing --------------------------------------------------- */

static int parse_query(struct ks_req *r, const char *q)
{
    if (!q || !*q)
        return 0;
    char *dup = strdup(q), *save = NULL;
    if (!dup)
        return -1;
    for (char *tok = strtok_r(dup, "&", &save); tok; tok = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(tok, '=');
        if (eq)
            *eq = '\0';
        char *k = evhttp_uridecode(tok, 1, NULL);
        char *v = evhttp_uridecode(eq ? eq + 1 : "", 1, NULL);
        struct ks_qparam *np = realloc(r->qp, (r->nq + 1) * sizeof(*np));
        if (!k || !v || !np) {
            free(k);
            free(v);
            if (np)
                r->qp = np;
            free(dup);
            return -1;
        }
        r->qp = np;
        r->qp[r->nq].k = k;
        r->qp[r->nq].v = v;
        r->nq++;
    }
    free(dup);
    return 0;
}

void ks_req_free(struct ks_req *r)
{
    if (!r)
        return;
    if (r->park_ev)
        event_free(r->park_ev);
    if (r->h2)
        ks_h2_detach(r->h2);
    free(r->path);
    for (size_t i = 0; i < r->nq; i++) {
        free(r->qp[i].k);
        free(r->qp[i].v);
    }
    free(r->qp);
    for (size_t i = 0; i < r->ngroups; i++)
        free(r->groups[i]);
    free(r->groups);
    free(r->ns);
    free(r->name);
    free(r->sub);
    free(r->body);
    cJSON_Delete(r->mutate);
    if (r->inject)
        evbuffer_free(r->inject);
    free(r);
}

void ks_req_done(struct ks_req *r)
{
    if (!r->is_admin)
        ks_admin_record(r->s, r);
    ks_req_free(r);
}

static void new_audit_id(char out[40])
{
    unsigned char u[16];
    if (RAND_bytes(u, sizeof(u)) != 1)
        memset(u, 0x42, sizeof(u));
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    snprintf(out, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
             u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
}

/* Splits |path| into at most |max| segments (pointers into |path|, which is
 * modified). Empty segments are dropped. */
static int split_path(char *path, char **segs, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(path, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (n == max)
            return -1;
        segs[n++] = t;
    }
    return n;
}

static char *xdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Routes /api/v1/... and /apis/<g>/<v>/...: sets rt, ns, name, sub, verb.
 * Replies (404/405) and returns -1 when the path names nothing. */
static int route_resource(struct ks_req *r, const char *group, const char *version, char **segs,
                          int n)
{
    bool watch_path = false;
    if (n > 0 && strcmp(segs[0], "watch") == 0) {
        watch_path = true;
        segs++;
        n--;
    }
    const char *plural = NULL, *ns = NULL, *name = NULL, *sub = NULL;
    struct ks_rtype *nsrt = ks_rtype_find(r->s, "", "v1", "namespaces");
    if (n >= 3 && strcmp(segs[0], "namespaces") == 0 &&
        !(n == 3 && *group == '\0' &&
          (strcmp(segs[2], "status") == 0 || strcmp(segs[2], "finalize") == 0))) {
        ns = segs[1];
        plural = segs[2];
        name = n > 3 ? segs[3] : NULL;
        sub = n > 4 ? segs[4] : NULL;
        if (n > 5) {
            ks_err_generic_not_found(r);
            return -1;
        }
    } else if (n >= 1 && n <= 3) {
        plural = segs[0];
        name = n > 1 ? segs[1] : NULL;
        sub = n > 2 ? segs[2] : NULL;
    } else {
        ks_err_generic_not_found(r);
        return -1;
    }
    (void)nsrt;
    struct ks_rtype *rt = ks_rtype_find(r->s, group, version, plural);
    if (!rt || (ns && !rt->namespaced) || (!ns && name && rt->namespaced)) {
        ks_err_generic_not_found(r);
        return -1;
    }
    if (sub && !(strcmp(sub, "status") == 0 && rt->has_status) &&
        !(strcmp(sub, "finalize") == 0 && rt->id == KS_K_NAMESPACE)) {
        ks_err_generic_not_found(r);
        return -1;
    }
    r->rt = rt;
    r->ns = xdup(ns);
    r->name = xdup(name);
    r->sub = xdup(sub);
    const char *w = ks_q(r, "watch");
    bool watch = watch_path || (w && (strcmp(w, "1") == 0 || strcasecmp(w, "true") == 0));
    switch (r->method) {
    case EVHTTP_REQ_GET:
    case EVHTTP_REQ_HEAD:
        r->verb = name ? (watch ? KS_V_WATCH : KS_V_GET) : (watch ? KS_V_WATCH : KS_V_LIST);
        if (name && watch) {
            /* A watch of one object: list-watch with a name field selector. */
            r->verb = KS_V_WATCH;
        }
        break;
    case EVHTTP_REQ_POST:
        r->verb = name ? KS_V_NONE : KS_V_CREATE;
        break;
    case EVHTTP_REQ_PUT:
        r->verb = name ? KS_V_UPDATE : KS_V_NONE;
        break;
    case EVHTTP_REQ_PATCH:
        r->verb = name ? KS_V_PATCH : KS_V_NONE;
        break;
    case EVHTTP_REQ_DELETE:
        r->verb = name ? KS_V_DELETE : KS_V_DELETECOLLECTION;
        break;
    default:
        r->verb = KS_V_NONE;
    }
    if (r->verb == KS_V_NONE ||
        (sub && r->verb != KS_V_GET && r->verb != KS_V_UPDATE && r->verb != KS_V_PATCH)) {
        ks_err_method(r);
        return -1;
    }
    return 0;
}

static void read_body(struct ks_req *r, struct evbuffer *in)
{
    size_t n = in ? evbuffer_get_length(in) : 0;
    r->body = malloc(n + 1);
    if (!r->body)
        return;
    if (n)
        evbuffer_remove(in, r->body, n);
    r->body[n] = '\0';
    r->body_len = n;
}

void ks_http_discovery_cont(struct ks_req *r)
{
    ks_discovery_dispatch(r);
}

/* Discovery and other non-resource paths; a partitioned user hangs here too. */
static void discovery(struct ks_req *r)
{
    if (ks_fault_partitioned(r->s, r->user) &&
        ks_park(r->s, r, -1, ks_http_discovery_cont, NULL) == 0)
        return;
    ks_discovery_dispatch(r);
}

void ks_http_handle(struct evhttp_request *req, void *arg)
{
    struct ks_server *s = arg;
    struct ks_req *r = calloc(1, sizeof(*r));
    if (!r) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    r->s = s;
    r->req = req;
    r->method = evhttp_request_get_command(req);
    r->start_mono_ns = cx_mono_ns();
    /* No Nagle, as Go's net/http: a reply written in two pieces must not
     * wait for the client's delayed ACK (40 ms). */
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
    if (bev) {
        int one = 1;
        (void)setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    ks_http_serve(r, uri ? evhttp_uri_get_path(uri) : NULL, uri ? evhttp_uri_get_query(uri) : NULL,
                  evhttp_request_get_input_buffer(req));
}

void ks_http_serve(struct ks_req *r, const char *rawpath, const char *query, struct evbuffer *in)
{
    struct ks_server *s = r->s;
    new_audit_id(r->audit_id);
    r->path = evhttp_uridecode(rawpath && *rawpath ? rawpath : "/", 0, NULL);
    if (!r->path || parse_query(r, query) != 0) {
        ks_err_internal(r, "out of memory");
        goto done;
    }
    read_body(r, in);
    if (!r->body) {
        ks_err_internal(r, "out of memory");
        goto done;
    }

    if (strncmp(r->path, "/_sim/", 6) == 0 || strcmp(r->path, "/_sim") == 0) {
        r->is_admin = true;
        ks_admin_dispatch(r);
        goto done;
    }

    /* Authentication first: a bad token is 401 whatever the path. */
    if (ks_admin_identify(s, r) != 0 || ks_auth_impersonate(s, r) != 0)
        goto done;
    if (r->h2)
        ks_h2_note_user(r->h2, r->user);

    char *copy = strdup(r->path);
    char *segs[16];
    int n = copy ? split_path(copy, segs, 16) : -1;
    if (n < 0) {
        free(copy);
        ks_err_generic_not_found(r);
        goto done;
    }
    if (n >= 1 && strcmp(segs[0], "api") == 0 && n >= 2) {
        if (strcmp(segs[1], "v1") != 0 || n == 2) {
            free(copy);
            discovery(r);
            goto done;
        }
        if (route_resource(r, "", "v1", segs + 2, n - 2) != 0) {
            free(copy);
            goto done;
        }
    } else if (n >= 1 && strcmp(segs[0], "apis") == 0 && n >= 4) {
        char *g = segs[1], *v = segs[2];
        if (route_resource(r, g, v, segs + 3, n - 3) != 0) {
            free(copy);
            goto done;
        }
    } else {
        free(copy);
        discovery(r);
        goto done;
    }
    free(copy);
    /* Faults and authorization see the resolved verb and resource. */
    if (ks_admin_intercept(s, r) != 0)
        goto done;
    ks_api_dispatch(r);
done:
    if (r->parked)
        return;
    if (!r->replied)
        ks_err_internal(r, "request was not answered");
    ks_req_done(r);
}
