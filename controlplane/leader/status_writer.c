#include "status_writer.h"

#include "store_obj.h"

#include "cx_json.h"
#include "cx_log.h"
#include "cx_metrics.h"
#include "cx_ratelimit.h"
#include "cx_time.h"
#include "leader_queue.h"
#include "store_kinds.h"
#include "cx_map.h"
#include "xlate.h"
#include "xlate_snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Objects checked per main-loop turn: a full pass over 50k objects must not
 * hold the loop (and the xDS server) for long. */
#define SW_CHECKS_PER_TURN 256
/* After a 409, wait this long for the informer before checking anyway. */
#define SW_CONFLICT_WAIT_NS (2 * CX_NS_PER_S)
/* Retry delays after other failures: doubling from the first to the cap. */
#define SW_RETRY_FIRST_NS (500 * CX_NS_PER_MS)
#define SW_RETRY_MAX_NS   (30 * CX_NS_PER_S)
/* When the guard refuses while we believe we lead (renewal late, margin),
 * try again after this long. */
#define SW_REFUSED_WAIT_NS (100 * CX_NS_PER_MS)
/* Extra conditions per object (a Gateway's XdsAccepted). */
#define SW_MAX_EXTRA 4
/* Key: "Kind/namespace/name". */
#define SW_KEY_MAX 400

/* ---- report index: "Kind/ns/name" -> report, per snapshot ------------------ */

struct sw_index {
    struct xlate_snapshot *snap; /* one reference */
    struct cx_map map;           /* key -> struct xlate_report * */
    char *keys;                  /* every key, back to back */
};

static void index_free(struct sw_index *ix)
{
    if (!ix)
        return;
    cx_map_free(&ix->map);
    free(ix->keys);
    xlate_snapshot_unref(ix->snap);
    free(ix);
}

static int make_key(char *out, size_t n, const char *kind, const char *ns, const char *name)
{
    int w = snprintf(out, n, "%s/%s/%s", kind, ns ? ns : "", name ? name : "");
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

static struct sw_index *index_new(struct xlate_snapshot *snap)
{
    struct sw_index *ix = calloc(1, sizeof(*ix));
    if (!ix)
        return NULL;
    ix->snap = xlate_snapshot_ref(snap);
    size_t total = 1;
    for (size_t i = 0; i < snap->nreports; i++) {
        const struct xlate_report *r = &snap->reports[i];
        total += strlen(r->kind) + strlen(r->namespace ? r->namespace : "") + strlen(r->name) + 3;
    }
    ix->keys = malloc(total);
    if (!ix->keys)
        goto fail;
    size_t off = 0;
    for (size_t i = 0; i < snap->nreports; i++) {
        struct xlate_report *r = &snap->reports[i];
        if (!store_kind_has_status(store_kind_from_name(r->kind)))
            continue;
        char *k = ix->keys + off;
        if (make_key(k, total - off, r->kind, r->namespace, r->name) != 0)
            goto fail;
        off += strlen(k) + 1;
        if (cx_map_puts(&ix->map, k, r, NULL) != 0)
            goto fail;
    }
    return ix;
fail:
    index_free(ix);
    return NULL;
}

static int str_eq(const char *a, const char *b)
{
    if (!a || !b)
        return (a ? *a : 0) == (b ? *b : 0);
    return strcmp(a, b) == 0;
}

static int report_same(const struct xlate_report *a, const struct xlate_report *b)
{
    return a->state == b->state && a->generation == b->generation && str_eq(a->uid, b->uid) &&
           str_eq(a->reason, b->reason) && str_eq(a->message, b->message);
}

/* ---- items: one per object the writer is busy with ----------------------------- */

struct sw_item {
    struct leader_item li; /* key: key; parked until a retry time (after a
                            * 409, an informer change queues it sooner) */
    struct status_writer *w;
    enum xlate_kind kind;
    unsigned deferred : 1;    /* waits for the next snapshot */
    unsigned backing_off : 1; /* parked after a failure: changes do not cut it short */
    int fails;                /* consecutive failures (retry backoff) */
    struct kube_call *call;
    struct leader_guard_presend presend; /* the last-moment guard check */
    int64_t sent_ns;
    cJSON *sending; /* the status being written */
    char *sent_rv;  /* the informer's resourceVersion when we wrote */
    /* Our last successful write, until the informer shows it. */
    cJSON *written;
    char *rv_before; /* the informer's RV the write was based on */
    char *rv_after;  /* the RV the write produced */
    const char *ns;
    const char *name;
    const char *objkey; /* "ns/name" */
    char key[];         /* "Kind/ns/name", then ns, then name */
};

struct status_writer {
    struct event_base *base;
    struct status_writer_opts o;
    struct cx_ratelimit rl;
    struct leader_queue q; /* of struct sw_item */

    int leading;
    uint64_t term;
    int want_pass; /* a full pass once a snapshot exists */
    struct sw_index *ix;
    /* A full pass walks the reports of pass_snap with a cursor, a chunk per
     * loop turn, and allocates an item only for an object that needs a
     * write (or must wait): 50k up-to-date objects cost no allocation and
     * never hold the loop. Reports are looked up in the current index. */
    struct xlate_snapshot *pass_snap;
    size_t pass_next;

    struct sw_item **deferred;
    size_t ndeferred, capdeferred;

    struct status_writer_stats st;
    uint64_t rng; /* jitter of retry delays */
    struct {
        struct cx_metric *writes;
        struct cx_series *duration;
        struct cx_series *c_up, *c_write, *c_deferred, *c_missing;
        struct cx_series *queue;
    } m;
};

static void pass_end(struct status_writer *w);

/* The item that embeds |l|. */
static inline struct sw_item *item_of(const struct leader_item *l)
{
    return cx_container_of(l, struct sw_item, li);
}

static void note_queue(struct status_writer *w)
{
    if (w->m.queue)
        cx_series_set(w->m.queue, (double)(w->q.nqueued + w->q.nparked + w->ndeferred));
}

static struct sw_item *item_get(struct status_writer *w, enum xlate_kind kind, const char *ns,
                                const char *name)
{
    char key[SW_KEY_MAX];
    if (make_key(key, sizeof(key), xlate_kind_name(kind), ns, name) != 0)
        return NULL;
    struct leader_item *l = leader_queue_find(&w->q, key);
    if (l)
        return item_of(l);
    size_t kl = strlen(key), nl = strlen(ns ? ns : ""), ml = strlen(name);
    struct sw_item *it = calloc(1, sizeof(*it) + kl + 1 + nl + 1 + ml + 1 + nl + 1 + ml + 1);
    if (!it)
        return NULL;
    it->w = w;
    it->kind = kind;
    memcpy(it->key, key, kl + 1);
    char *p = it->key + kl + 1;
    memcpy(p, ns ? ns : "", nl + 1);
    it->ns = p;
    p += nl + 1;
    memcpy(p, name, ml + 1);
    it->name = p;
    p += ml + 1;
    memcpy(p, it->ns, nl);
    p[nl] = '/';
    memcpy(p + nl + 1, name, ml + 1);
    it->objkey = p;
    it->li.key = it->key;
    if (leader_queue_add(&w->q, &it->li) != 0) {
        free(it);
        return NULL;
    }
    return it;
}

static void clear_written(struct sw_item *it)
{
    cJSON_Delete(it->written);
    it->written = NULL;
    free(it->rv_before);
    free(it->rv_after);
    it->rv_before = it->rv_after = NULL;
}

static void item_destroy(struct sw_item *it)
{
    if (it->call)
        kube_call_cancel(it->call);
    cJSON_Delete(it->sending);
    free(it->sent_rv);
    clear_written(it);
    free(it);
}

static void enqueue(struct status_writer *w, struct sw_item *it)
{
    /* Waiting out a failure's backoff: the retry at due time checks the
     * object afresh (level-triggered), so nothing is lost by not writing
     * earlier, and a failing server is not hammered by every change. */
    if (it->li.parked && it->backing_off && it->li.due_ns > cx_mono_ns())
        return;
    it->backing_off = 0;
    leader_queue_push(&w->q, &it->li);
}

static void park(struct status_writer *w, struct sw_item *it, int64_t delay_ns)
{
    it->backing_off = 0;
    leader_queue_park(&w->q, &it->li, delay_ns);
}

/* Parks |it| after its |fails|th failure in a row: backoff with jitter,
 * or the server's Retry-After when longer. */
static int64_t park_failed(struct status_writer *w, struct sw_item *it, int64_t retry_after_ms)
{
    int64_t d = kube_backoff_nth_ns(it->fails, SW_RETRY_FIRST_NS, SW_RETRY_MAX_NS, &w->rng);
    if (retry_after_ms > 0 && retry_after_ms * CX_NS_PER_MS > d)
        d = (retry_after_ms < 30000 ? retry_after_ms : 30000) * CX_NS_PER_MS;
    if (w->leading) {
        leader_queue_park(&w->q, &it->li, d);
        it->backing_off = 1;
    }
    return d;
}

static void defer_item(struct status_writer *w, struct sw_item *it)
{
    if (it->deferred)
        return;
    if (w->ndeferred == w->capdeferred) {
        size_t nc = w->capdeferred ? w->capdeferred * 2 : 64;
        struct sw_item **nd = realloc(w->deferred, nc * sizeof(*nd));
        if (!nd) {
            park(w, it, SW_RETRY_FIRST_NS); /* no memory: check again later */
            return;
        }
        w->deferred = nd;
        w->capdeferred = nc;
    }
    it->deferred = 1;
    w->deferred[w->ndeferred++] = it;
}

/* Queues |kind| ns/name for a check (leading only). */
static void want_check(struct status_writer *w, enum xlate_kind kind, const char *ns,
                       const char *name)
{
    if (!w->leading || !store_kind_has_status(kind))
        return;
    struct sw_item *it = item_get(w, kind, ns, name);
    if (!it) {
        cx_error("status", "out of memory queueing %s %s/%s", xlate_kind_name(kind), ns, name);
        return;
    }
    enqueue(w, it);
    leader_queue_schedule(&w->q, 0);
}

/* ---- writing ----------------------------------------------------------------------- */

static const char *result_name(enum kube_err_code c)
{
    switch (c) {
    case KUBE_OK:
        return "ok";
    case KUBE_E_CONFLICT:
        return "conflict";
    case KUBE_E_NOT_FOUND:
        return "not_found";
    case KUBE_E_CANCELLED:
        return "cancelled";
    case KUBE_E_TIMEOUT:
    case KUBE_E_TRANSPORT:
    case KUBE_E_SERVER_TIMEOUT:
        return "timeout";
    case KUBE_E_INVALID:
    case KUBE_E_BAD_REQUEST:
        return "invalid";
    case KUBE_E_FORBIDDEN:
    case KUBE_E_UNAUTHORIZED:
        return "forbidden";
    default:
        return "error";
    }
}

static void count_write(struct status_writer *w, enum xlate_kind kind, const char *result)
{
    if (w->m.writes)
        cx_metric_inc(w->m.writes, xlate_kind_name(kind), result);
}

static void on_written(struct kube_result *r, void *arg)
{
    struct sw_item *it = arg;
    struct status_writer *w = it->w;
    it->call = NULL;
    if (w->m.duration)
        cx_series_observe(w->m.duration, (double)(cx_mono_ns() - it->sent_ns) / 1e9);
    cJSON *sent = it->sending;
    it->sending = NULL;
    char *sent_rv = it->sent_rv;
    it->sent_rv = NULL;
    int refused =
        r->err.code == KUBE_E_CANCELLED && strcmp(r->err.reason, "RefusedBeforeSend") == 0;
    if (refused)
        w->st.refused++;
    count_write(w, it->kind, refused ? "refused" : result_name(r->err.code));
    switch (r->err.code) {
    case KUBE_OK: {
        w->st.writes_ok++;
        it->fails = 0;
        const char *rv = cx_json_path_str(r->object, "metadata", "resourceVersion", NULL);
        clear_written(it);
        if (rv && sent_rv) {
            it->written = sent;
            sent = NULL;
            it->rv_before = sent_rv;
            sent_rv = NULL;
            it->rv_after = strdup(rv);
            if (!it->rv_after)
                clear_written(it);
        }
        cx_debug("status", "wrote %s %s (rv %s)", xlate_kind_name(it->kind), it->objkey,
                 rv ? rv : "?");
        break;
    }
    case KUBE_E_CONFLICT:
        /* Our cache is behind: wait for the informer to bring the newer
         * object (object_changed unparks it), or check again in 1-2 s
         * (longer after repeated conflicts). */
        w->st.conflicts++;
        it->fails++;
        cx_debug("status", "conflict writing %s %s; waiting for the informer",
                 xlate_kind_name(it->kind), it->objkey);
        park(w, it, kube_backoff_nth_ns(it->fails, SW_CONFLICT_WAIT_NS, SW_RETRY_MAX_NS, &w->rng));
        break;
    case KUBE_E_NOT_FOUND:
        /* Deleted meanwhile (its delete event ends the story: the check at
         * due time finds nothing to write), or a 404 for another reason (a
         * proxy in front, the CRD's status subresource missing): then the
         * status would stay stale for good, so check again later. */
        it->fails++;
        cx_debug("status", "writing the status of %s %s: not found; checking again later",
                 xlate_kind_name(it->kind), it->objkey);
        park_failed(w, it, -1);
        break;
    default: {
        w->st.failures++;
        it->fails++;
        int64_t d = park_failed(w, it, r->err.retry_after_ms);
        cx_warn("status", "writing the status of %s %s failed (%s: %s); retrying in %lld ms",
                xlate_kind_name(it->kind), it->objkey, result_name(r->err.code), r->err.message,
                (long long)(d / CX_NS_PER_MS));
        break;
    }
    }
    cJSON_Delete(sent);
    free(sent_rv);
    leader_queue_write_done(&w->q, &it->li);
}

/* Sends |status| for |it| with |rv| as the precondition. Returns 0 when
 * sent, 1 when the guard refused (nothing sent), -1 on error. */
static int send_write(struct status_writer *w, struct sw_item *it, cJSON *status, const char *rv)
{
    int64_t timeout_ns = 0;
    uint64_t term = 0;
    if (!w->o.guard.allow || !w->o.guard.allow(w->o.guard.arg, &timeout_ns, &term) ||
        term != w->term) {
        w->st.refused++;
        count_write(w, it->kind, "refused");
        return 1;
    }
    cJSON *patch = cJSON_CreateObject();
    cJSON *md = patch ? cJSON_AddObjectToObject(patch, "metadata") : NULL;
    if (!md || !cJSON_AddStringToObject(md, "resourceVersion", rv) ||
        !cJSON_AddItemReferenceToObject(patch, "status", status)) {
        cJSON_Delete(patch);
        return -1;
    }
    char *body = cJSON_PrintUnformatted(patch);
    cJSON_Delete(patch); /* the reference item does not free |status| */
    if (!body)
        return -1;
    int64_t ms = leader_guard_timeout_ms(timeout_ns);
    it->presend = (struct leader_guard_presend){.g = &w->o.guard, .term = term};
    struct kube_req_opts ro = {.timeout_ms = ms,
                               .deadline_ms = ms,
                               /* One attempt: this writer owns the retry
                                * (backoff with jitter, Retry-After), and two
                                * nested retry loops multiply requests. */
                               .max_attempts = 1,
                               .presend = leader_guard_presend,
                               .presend_end = leader_guard_presend_end,
                               .presend_arg = &it->presend};
    it->sent_rv = strdup(rv);
    it->sending = status;
    it->sent_ns = cx_mono_ns();
    it->call = kube_patch(w->o.kc, store_kind_resource(it->kind), it->ns, it->name,
                          KUBE_PATCH_MERGE, body, 1, &ro, on_written, it);
    free(body);
    if (!it->call || !it->sent_rv) {
        if (it->call)
            kube_call_cancel(it->call);
        it->call = NULL;
        it->sending = NULL;
        free(it->sent_rv);
        it->sent_rv = NULL;
        return -1;
    }
    leader_queue_sent(&w->q, &it->li);
    w->st.writes++;
    return 0;
}

/* check()'s returns: the status tree it parsed goes first. */
#define CHECK_RETURN(v)     \
    do {                    \
        cJSON_Delete(held); \
        return (v);         \
    } while (0)

/* The queue's check: compares one object and, if needed, writes it. */
static enum leader_check check(void *user, struct leader_item *l, int64_t *wait_ns)
{
    struct status_writer *w = user;
    struct sw_item *it = item_of(l);
    w->st.checks++;
    struct kube_obj *obj = w->o.lookup(w->o.user, it->kind, it->objkey);
    struct xlate_report *rep = w->ix ? cx_map_gets(&w->ix->map, it->key) : NULL;
    if (!obj || !rep) {
        clear_written(it);
        cx_series_inc(w->m.c_missing);
        return LEADER_CHECK_DONE;
    }
    cJSON *held = NULL; /* the object's status, when it is the one compared */
    const cJSON *cur = NULL;
    const char *rv = obj->rv;
    if (it->written && it->rv_before && strcmp(obj->rv, it->rv_before) == 0) {
        cur = it->written; /* the informer has not shown our write yet */
        rv = it->rv_after;
    } else {
        if (it->written)
            clear_written(it);
        cur = held = store_obj_status(obj);
    }
    int64_t g = store_kube_generation(obj);
    int other = rep->uid && *rep->uid && *obj->uid && strcmp(rep->uid, obj->uid) != 0;
    if (g > rep->generation || other) {
        /* The store has (or will have) a newer object than this report:
         * its translation is on the way, and the next snapshot re-queues
         * it. Without one pending, write what we know (a generation the
         * filters found insignificant), unless the report is about an
         * object that no longer exists. */
        if (w->o.translation_pending && w->o.translation_pending(w->o.user)) {
            w->st.deferred++;
            cx_series_inc(w->m.c_deferred);
            defer_item(w, it);
            CHECK_RETURN(LEADER_CHECK_DONE);
        }
        if (other) {
            cx_series_inc(w->m.c_missing);
            CHECK_RETURN(LEADER_CHECK_DONE);
        }
    }
    struct status_condition extra[SW_MAX_EXTRA];
    size_t nextra = 0;
    if (it->kind == XLATE_KIND_GATEWAY && w->o.gateway_conditions)
        nextra = w->o.gateway_conditions(w->o.user, it->objkey, extra, SW_MAX_EXTRA);
    cJSON *desired = status_desired(rep, extra, nextra, cur, cx_wall_ns());
    if (!desired) {
        park(w, it, SW_RETRY_FIRST_NS);
        CHECK_RETURN(LEADER_CHECK_DONE);
    }
    if (status_up_to_date(desired, cur)) {
        w->st.up_to_date++;
        cx_series_inc(w->m.c_up);
        cJSON_Delete(desired);
        CHECK_RETURN(LEADER_CHECK_DONE);
    }
    int64_t wait = cx_ratelimit_take(&w->rl, cx_mono_ns());
    if (wait > 0) {
        cJSON_Delete(desired);
        *wait_ns = wait;
        CHECK_RETURN(LEADER_CHECK_LATER);
    }
    cx_series_inc(w->m.c_write);
    int rc = send_write(w, it, desired, rv);
    if (rc == 0)
        CHECK_RETURN(LEADER_CHECK_DONE); /* |desired| now belongs to the item */
    cJSON_Delete(desired);
    if (rc == 1) {
        *wait_ns = SW_REFUSED_WAIT_NS;
        CHECK_RETURN(LEADER_CHECK_LATER);
    }
    park(w, it, SW_RETRY_FIRST_NS);
    CHECK_RETURN(LEADER_CHECK_DONE);
}
#undef CHECK_RETURN

/* The full pass's next report: 0 when it needs nothing (up to date, gone,
 * not ours), else the item to check through the queue (created, queued). */
static struct sw_item *pass_step(struct status_writer *w, const struct xlate_report *r)
{
    enum xlate_kind kind = store_kind_from_name(r->kind);
    if (!store_kind_has_status(kind))
        return NULL;
    char key[SW_KEY_MAX], objkey[SW_KEY_MAX];
    if (make_key(key, sizeof(key), r->kind, r->namespace, r->name) != 0 ||
        kube_obj_key(r->namespace, r->name, objkey, sizeof(objkey)) != 0)
        return NULL;
    struct leader_item *l = leader_queue_find(&w->q, key);
    struct sw_item *it = l ? item_of(l) : NULL;
    if (!it) {
        /* The cheap comparison first: no item unless something is to do. */
        w->st.checks++;
        struct kube_obj *obj = w->o.lookup(w->o.user, kind, objkey);
        const struct xlate_report *cur_rep = cx_map_gets(&w->ix->map, key);
        if (!obj || !cur_rep) {
            cx_series_inc(w->m.c_missing);
            return NULL;
        }
        int64_t g = store_kube_generation(obj);
        if (g == cur_rep->generation) {
            cJSON *cur = store_obj_status(obj);
            struct status_condition extra[SW_MAX_EXTRA];
            size_t nextra = 0;
            if (kind == XLATE_KIND_GATEWAY && w->o.gateway_conditions)
                nextra = w->o.gateway_conditions(w->o.user, objkey, extra, SW_MAX_EXTRA);
            cJSON *desired = status_desired(cur_rep, extra, nextra, cur, cx_wall_ns());
            int up = desired && status_up_to_date(desired, cur);
            cJSON_Delete(desired);
            cJSON_Delete(cur);
            if (up) {
                w->st.up_to_date++;
                cx_series_inc(w->m.c_up);
                return NULL;
            }
        }
        w->st.checks--; /* counted again by check() */
        it = item_get(w, kind, r->namespace, r->name);
        if (!it) {
            cx_error("status", "out of memory checking %s %s", r->kind, objkey);
            return NULL;
        }
    }
    enqueue(w, it);
    return it;
}

/* The queue is empty: advance the full pass, if one is running. */
static int q_idle(void *user)
{
    struct status_writer *w = user;
    if (!w->pass_snap)
        return 0;
    if (w->pass_next >= w->pass_snap->nreports) {
        pass_end(w);
        return 0;
    }
    pass_step(w, &w->pass_snap->reports[w->pass_next++]);
    return 1;
}

static int q_ready(void *user)
{
    const struct status_writer *w = user;
    return w->leading && w->ix;
}

static int q_busy(void *user, const struct leader_item *l)
{
    (void)user;
    const struct sw_item *it = item_of(l);
    return it->deferred || it->written;
}

static void q_destroy(void *user, struct leader_item *l)
{
    (void)user;
    item_destroy(item_of(l));
}

static void q_pumped(void *user)
{
    note_queue(user);
}

static const struct leader_queue_ops queue_ops = {
    .ready = q_ready,
    .check = check,
    .idle = q_idle,
    .busy = q_busy,
    .destroy = q_destroy,
    .pumped = q_pumped,
};

/* ---- public ---------------------------------------------------------------------- */

struct status_writer *status_writer_new(struct event_base *base, const struct status_writer_opts *o)
{
    struct status_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->base = base;
    w->o = *o;
    cx_ratelimit_init(&w->rl, o->qps, o->burst < 1 ? 1 : o->burst, cx_mono_ns());
    size_t max = o->max_inflight > 0 ? (size_t)o->max_inflight : 4;
    if (leader_queue_init(&w->q, base, &queue_ops, w, max, SW_CHECKS_PER_TURN) != 0) {
        status_writer_free(w);
        return NULL;
    }
    w->m.writes = cx_counter("coxswain_status_writes_total",
                             "Status writes by kind and result (ok, conflict, not_found, timeout, "
                             "invalid, forbidden, error, cancelled, refused by the write guard).",
                             "kind,result");
    struct cx_metric *d =
        cx_histogram("coxswain_status_write_duration_seconds", "Latency of status writes.", NULL,
                     cx_metric_latency_buckets, cx_metric_latency_nbuckets);
    struct cx_metric *c =
        cx_counter("coxswain_status_checks_total",
                   "Objects whose status the leader compared, by outcome.", "outcome");
    struct cx_metric *q = cx_gauge("coxswain_status_queue_length",
                                   "Objects waiting for a status check or write.", NULL);
    w->m.duration = d ? cx_metric_with(d) : NULL;
    w->m.c_up = c ? cx_metric_with(c, "up_to_date") : NULL;
    w->m.c_write = c ? cx_metric_with(c, "write") : NULL;
    w->m.c_deferred = c ? cx_metric_with(c, "deferred") : NULL;
    w->m.c_missing = c ? cx_metric_with(c, "no_object_or_report") : NULL;
    w->m.queue = q ? cx_metric_with(q) : NULL;
    return w;
}

void status_writer_free(struct status_writer *w)
{
    if (!w)
        return;
    leader_queue_free(&w->q);
    free(w->deferred);
    pass_end(w);
    index_free(w->ix);
    free(w);
}

static void full_pass(struct status_writer *w)
{
    w->want_pass = 0;
    w->st.passes++;
    xlate_snapshot_unref(w->pass_snap);
    w->pass_snap = xlate_snapshot_ref(w->ix->snap);
    w->pass_next = 0;
    cx_info("status", "reconciling the status of every object (%zu reports, term %llu)",
            w->pass_snap->nreports, (unsigned long long)w->term);
    leader_queue_schedule(&w->q, 0);
}

static void pass_end(struct status_writer *w)
{
    xlate_snapshot_unref(w->pass_snap);
    w->pass_snap = NULL;
    w->pass_next = 0;
}

int status_writer_set_snapshot(struct status_writer *w, struct xlate_snapshot *snap)
{
    struct sw_index *ix = index_new(snap);
    if (!ix) {
        /* Keep the old index; a full pass on the next snapshot catches up. */
        w->want_pass = w->leading;
        return -1;
    }
    struct sw_index *old = w->ix;
    w->ix = ix;
    if (w->leading) {
        /* Deferred objects wait for exactly this. */
        size_t nd = w->ndeferred;
        w->ndeferred = 0;
        for (size_t i = 0; i < nd; i++) {
            struct sw_item *it = w->deferred[i];
            it->deferred = 0;
            enqueue(w, it);
        }
        if (w->want_pass || !old) {
            full_pass(w);
        } else if (old->snap->reports != snap->reports || old->snap->nreports != snap->nreports) {
            for (size_t i = 0; i < snap->nreports; i++) {
                const struct xlate_report *r = &snap->reports[i];
                enum xlate_kind k = store_kind_from_name(r->kind);
                if (!store_kind_has_status(k))
                    continue;
                char key[SW_KEY_MAX];
                if (make_key(key, sizeof(key), r->kind, r->namespace, r->name) != 0)
                    continue;
                const struct xlate_report *o = cx_map_gets(&old->map, key);
                if (!o || !report_same(o, r))
                    want_check(w, k, r->namespace, r->name);
            }
        }
        leader_queue_schedule(&w->q, 0);
    }
    index_free(old);
    note_queue(w);
    return 0;
}

void status_writer_start(struct status_writer *w, uint64_t term)
{
    w->leading = 1;
    w->term = term;
    w->want_pass = 1;
    if (w->ix)
        full_pass(w);
    leader_queue_schedule(&w->q, 0);
}

static void drop_item(void *user, struct leader_item *l)
{
    struct status_writer *w = user;
    struct sw_item *it = item_of(l);
    if (it->call) {
        kube_call_cancel(it->call);
        it->call = NULL;
        w->st.cancelled++;
        count_write(w, it->kind, "cancelled");
    }
    item_destroy(it);
}

void status_writer_stop(struct status_writer *w)
{
    if (!w->leading && !leader_queue_len(&w->q))
        return;
    w->leading = 0;
    w->want_pass = 0;
    pass_end(w);
    leader_queue_clear(&w->q, drop_item);
    w->ndeferred = 0;
    note_queue(w);
}

void status_writer_object_changed(struct status_writer *w, enum xlate_kind kind, const char *key)
{
    if (!w->leading)
        return;
    const char *slash = strchr(key, '/');
    if (!slash)
        return;
    char ns[256];
    size_t nl = (size_t)(slash - key);
    if (nl >= sizeof(ns))
        return;
    memcpy(ns, key, nl);
    ns[nl] = '\0';
    want_check(w, kind, ns, slash + 1);
}

void status_writer_recheck_gateway(struct status_writer *w, const char *group)
{
    status_writer_object_changed(w, XLATE_KIND_GATEWAY, group);
}

void status_writer_stats(const struct status_writer *w, struct status_writer_stats *out)
{
    *out = w->st;
    out->queued = w->q.nqueued + w->q.nparked + w->ndeferred;
    out->inflight = w->q.ninflight;
    out->leading = w->leading;
}

int status_writer_idle(const struct status_writer *w)
{
    return w->leading && w->ix && !w->want_pass && !w->pass_snap && !w->q.nqueued &&
           !w->q.ninflight && !w->q.nparked && !w->ndeferred;
}
