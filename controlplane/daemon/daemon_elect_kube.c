#include "daemon_elect_kube.h"

#include "kube_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Calls and watches still open on a connection, so close() can free the
 * wrappers of those kube_client_free() cancels without a callback (the
 * leader election Events are never waited for). */
struct pending {
    struct pending *prev, *next;
};

struct election_kube_conn {
    struct kube_client *kc;
    struct pending open; /* list head */
};

struct election_kube_call {
    struct pending link; /* first: a pending is a call or a watch */
    struct election_kube_conn *conn;
    struct kube_call *call;
    election_kube_done_fn cb;
    void *user_data;
};

struct election_kube_watch {
    struct pending link;
    struct election_kube_conn *conn;
    struct kube_watch *w;
    struct election_kube_watch_handlers h;
    void *user_data;
};

static const struct kube_resource res_leases = {"coordination.k8s.io", "v1", "leases", "Lease", 1};
static const struct kube_resource res_configmaps = {"", "v1", "configmaps", "ConfigMap", 1};
static const struct kube_resource res_events = {"", "v1", "events", "Event", 1};

static const struct kube_resource *resource(enum election_kube_res r)
{
    switch (r) {
    case ELECTION_RES_LEASES:
        return &res_leases;
    case ELECTION_RES_CONFIGMAPS:
        return &res_configmaps;
    case ELECTION_RES_EVENTS:
        return &res_events;
    }
    return NULL;
}

static void link_add(struct election_kube_conn *c, struct pending *p)
{
    p->prev = &c->open;
    p->next = c->open.next;
    c->open.next->prev = p;
    c->open.next = p;
}

static void link_del(struct pending *p)
{
    p->prev->next = p->next;
    p->next->prev = p->prev;
    p->prev = p->next = p;
}

enum election_err_class daemon_elect_kube_class(enum kube_err_code code, int http_status)
{
    switch (code) {
    case KUBE_OK:
        return ELECTION_ERR_NONE;
    case KUBE_E_TRANSPORT:
        return ELECTION_ERR_TRANSPORT;
    case KUBE_E_TIMEOUT:
        return ELECTION_ERR_TIMEOUT;
    case KUBE_E_CANCELLED:
        return ELECTION_ERR_CANCELLED;
    case KUBE_E_DECODE:
        return ELECTION_ERR_DECODE;
    case KUBE_E_BAD_REQUEST:
    case KUBE_E_METHOD:
    case KUBE_E_UNSUPPORTED:
        return ELECTION_ERR_BAD_REQUEST;
    case KUBE_E_UNAUTHORIZED:
        return ELECTION_ERR_UNAUTHORIZED;
    case KUBE_E_FORBIDDEN:
        return ELECTION_ERR_FORBIDDEN;
    case KUBE_E_NOT_FOUND:
        return ELECTION_ERR_NOT_FOUND;
    case KUBE_E_CONFLICT:
        return ELECTION_ERR_CONFLICT;
    case KUBE_E_ALREADY_EXISTS:
        return ELECTION_ERR_EXISTS;
    case KUBE_E_EXPIRED:
        return ELECTION_ERR_EXPIRED;
    case KUBE_E_INVALID:
        return ELECTION_ERR_INVALID;
    case KUBE_E_TOO_MANY:
        return ELECTION_ERR_THROTTLED;
    case KUBE_E_INTERNAL:
    case KUBE_E_UNAVAILABLE:
    case KUBE_E_SERVER_TIMEOUT:
        return ELECTION_ERR_SERVER;
    case KUBE_E_OTHER:
        break;
    }
    return http_status >= 500 && http_status < 600 ? ELECTION_ERR_SERVER : ELECTION_ERR_OTHER;
}

static void fill(struct election_kube_result *out, const struct kube_error *e, int http_status)
{
    memset(out, 0, sizeof(*out));
    out->cls = daemon_elect_kube_class(e->code, http_status ? http_status : e->http_status);
    out->http_status = http_status ? http_status : e->http_status;
    out->retry_after_ns = e->retry_after_ms < 0 ? -1 : e->retry_after_ms * 1000000;
    snprintf(out->reason, sizeof(out->reason), "%s", e->reason);
    snprintf(out->message, sizeof(out->message), "%s", e->message);
}

/* ---- connection ------------------------------------------------------------ */

static struct election_kube_conn *ek_open(void *impl, struct event_base *base, const char *identity,
                                          const char *component, char *err, size_t errlen)
{
    const struct kube_config *cfg = impl;
    struct election_kube_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->open.prev = c->open.next = &c->open;
    /* The elector's client may take the request limit's reserve: renewals
     * never wait behind a flood of other requests. The elector says each
     * failure itself (election_report.c): the client only counts them. */
    struct kube_client_opts ko = {.identity = identity,
                                  .component = component,
                                  .max_attempts = 1,
                                  .priority = 1,
                                  .caller_reports = 1};
    c->kc = kube_client_new(base, cfg, &ko, err, errlen);
    if (!c->kc) {
        free(c);
        return NULL;
    }
    return c;
}

static void ek_close(struct election_kube_conn *c)
{
    if (!c)
        return;
    kube_client_free(c->kc); /* cancels what is open, without callbacks */
    while (c->open.next != &c->open) {
        struct pending *p = c->open.next;
        link_del(p);
        free(p); /* the link is the first member of a call or a watch */
    }
    free(c);
}

/* ---- calls ---------------------------------------------------------------- */

static void on_done(struct kube_result *r, void *arg)
{
    struct election_kube_call *x = arg;
    struct election_kube_result out;
    fill(&out, &r->err, r->http_status);
    out.object = r->object;
    r->object = NULL;
    out.sent_mono_ns = r->sent_mono_ns;
    out.done_mono_ns = r->done_mono_ns;
    link_del(&x->link);
    election_kube_done_fn cb = x->cb;
    void *ud = x->user_data;
    free(x);
    cb(&out, ud);
    cJSON_Delete(out.object);
}

static struct election_kube_call *new_call(struct election_kube_conn *c, election_kube_done_fn cb,
                                           void *user_data)
{
    struct election_kube_call *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->conn = c;
    x->cb = cb;
    x->user_data = user_data;
    return x;
}

/* Files |x| under its connection once kube_client took the request, or
 * frees it. */
static struct election_kube_call *started(struct election_kube_call *x, struct kube_call *call)
{
    if (!call) {
        free(x);
        return NULL;
    }
    x->call = call;
    link_add(x->conn, &x->link);
    return x;
}

static struct kube_req_opts one_attempt(int64_t timeout_ms)
{
    return (struct kube_req_opts){
        .timeout_ms = timeout_ms, .deadline_ms = timeout_ms, .max_attempts = 1};
}

static struct election_kube_call *ek_get(struct election_kube_conn *c, enum election_kube_res res,
                                         const char *ns, const char *name, int64_t timeout_ms,
                                         election_kube_done_fn cb, void *user_data)
{
    struct election_kube_call *x = new_call(c, cb, user_data);
    if (!x)
        return NULL;
    struct kube_req_opts o = one_attempt(timeout_ms);
    return started(x, kube_get(c->kc, resource(res), ns, name, &o, on_done, x));
}

static struct election_kube_call *ek_create(struct election_kube_conn *c,
                                            enum election_kube_res res, const char *ns,
                                            const cJSON *obj, int64_t timeout_ms,
                                            election_kube_done_fn cb, void *user_data)
{
    struct election_kube_call *x = new_call(c, cb, user_data);
    if (!x)
        return NULL;
    struct kube_req_opts o = one_attempt(timeout_ms);
    return started(x, kube_create(c->kc, resource(res), ns, obj, &o, on_done, x));
}

static struct election_kube_call *ek_update(struct election_kube_conn *c,
                                            enum election_kube_res res, const char *ns,
                                            const cJSON *obj, int64_t timeout_ms,
                                            election_kube_done_fn cb, void *user_data)
{
    struct election_kube_call *x = new_call(c, cb, user_data);
    if (!x)
        return NULL;
    struct kube_req_opts o = one_attempt(timeout_ms);
    return started(x, kube_update(c->kc, resource(res), ns, obj, 0, &o, on_done, x));
}

static struct election_kube_call *ek_list(struct election_kube_conn *c, enum election_kube_res res,
                                          const char *ns, const char *field_selector,
                                          int64_t timeout_ms, election_kube_done_fn cb,
                                          void *user_data)
{
    struct election_kube_call *x = new_call(c, cb, user_data);
    if (!x)
        return NULL;
    struct kube_list_opts lo = {.field_selector = field_selector};
    struct kube_req_opts o = {.timeout_ms = timeout_ms, .max_attempts = 1};
    return started(x, kube_list(c->kc, resource(res), ns, &lo, &o, on_done, x));
}

static void ek_cancel(struct election_kube_call *x)
{
    if (!x)
        return;
    kube_call_cancel(x->call);
    link_del(&x->link);
    free(x);
}

/* ---- watches -------------------------------------------------------------- */

static void on_watch_event(void *arg, enum kube_event_type type, cJSON *obj)
{
    struct election_kube_watch *x = arg;
    enum election_watch_ev t;
    switch (type) {
    case KUBE_EV_ADDED:
        t = ELECTION_WATCH_ADDED;
        break;
    case KUBE_EV_MODIFIED:
        t = ELECTION_WATCH_MODIFIED;
        break;
    case KUBE_EV_DELETED:
        t = ELECTION_WATCH_DELETED;
        break;
    case KUBE_EV_BOOKMARK:
        t = ELECTION_WATCH_BOOKMARK;
        break;
    default:
        cJSON_Delete(obj); /* never delivered: an ERROR ends the watch */
        return;
    }
    /* Nothing of |x| is touched after this: the handler may stop the watch. */
    x->h.on_event(x->user_data, t, obj);
}

static void on_watch_end(void *arg, const struct kube_error *err)
{
    struct election_kube_watch *x = arg;
    struct election_kube_result out;
    fill(&out, err, err->http_status);
    link_del(&x->link);
    void (*end)(void *, const struct election_kube_result *) = x->h.on_end;
    void *ud = x->user_data;
    free(x);
    end(ud, &out);
}

static struct election_kube_watch *
ek_watch(struct election_kube_conn *c, enum election_kube_res res, const char *ns,
         const char *field_selector, const char *rv, int64_t stall_ms,
         const struct election_kube_watch_handlers *h, void *user_data)
{
    struct election_kube_watch *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->conn = c;
    x->h = *h;
    x->user_data = user_data;
    struct kube_watch_opts wo = {
        .resource_version = rv,
        .field_selector = field_selector,
        .allow_bookmarks = 1,
        .stall_ms = stall_ms,
        /* The lock moves every retryPeriod while held: silence longer than
         * stall_ms is a stalled stream even over HTTP/2. */
        .stall_any_protocol = 1,
    };
    static const struct kube_watch_handlers kh = {on_watch_event, on_watch_end};
    x->w = kube_watch_start(c->kc, resource(res), ns, &wo, &kh, x);
    if (!x->w) {
        free(x);
        return NULL;
    }
    link_add(c, &x->link);
    return x;
}

static void ek_watch_stop(struct election_kube_watch *x)
{
    if (!x)
        return;
    kube_watch_stop(x->w);
    link_del(&x->link);
    free(x);
}

static const struct election_kube_ops ops = {
    .open = ek_open,
    .close = ek_close,
    .get = ek_get,
    .create = ek_create,
    .update = ek_update,
    .list = ek_list,
    .watch = ek_watch,
    .cancel = ek_cancel,
    .watch_stop = ek_watch_stop,
};

void daemon_elect_kube(struct election_kube *out, const struct kube_config *cfg)
{
    out->ops = &ops;
    out->impl = (void *)cfg;
}
