#include "kube_informer.h"

#include "cx_json.h"
#include "cx_log.h"
#include "cx_metrics.h"
#include "cx_time.h"
#include "kube_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RV_MAX 128
/* A watch that stayed open this long was healthy: the backoff starts over,
 * and a clean end or a 410 after it is followed at once. A shorter one is
 * a failure whatever its ending, so a server that ends every watch at once
 * (or answers every watch with 410) is met with a growing backoff. */
#define HEALTHY_WATCH_NS (5 * CX_NS_PER_S)
/* A watch event may wrap an object of up to max_object bytes. */
#define EVENT_ENVELOPE ((size_t)64 << 10)
/* A refused object is said at most this often per informer. */
#define REFUSED_LOG_NS (60 * CX_NS_PER_S)
/* What a metadata informer asks for (client-go's metadata informers ask
 * the same); plain JSON stays acceptable, and what comes whole anyway is
 * cut down to its metadata on arrival. */
#define ACCEPT_META_LIST \
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
#define ACCEPT_META        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
#define INITIAL_EVENTS_END "k8s.io/initial-events-end"

enum inf_state {
    INF_IDLE = 0,
    INF_LISTING = 1,   /* paged list in progress */
    INF_STREAMING = 2, /* streaming list: initial events not finished */
    INF_WATCHING = 3,
    INF_WAITING = 4, /* backoff before the next step */
};

enum inf_next {
    NEXT_INITIAL = 0, /* list or streaming list */
    NEXT_WATCH = 1,   /* watch from rv */
};

struct inf_metrics {
    struct cx_series *events[KUBE_EV_COUNT];
    struct cx_series *relists;
    struct cx_series *restarts;
    struct cx_series *last_event;
    struct cx_series *objects;
    struct cx_series *synced;
    struct cx_series *refused;
};

struct kube_informer {
    struct kube_client *c;
    const struct kube_resource *res;
    char *ns, *label_selector, *field_selector, *name;
    char *api_version; /* "v1" or "group/version", set on list items */
    long page_size;
    int watch_timeout_s;
    int64_t stall_ms;
    int64_t request_timeout_ms;
    enum kube_streaming streaming;
    int streaming_refused; /* AUTO and the server said no */
    int trim;              /* kube_informer_opts.trim */
    int metadata_only;     /* kube_informer_opts.metadata_only */
    size_t max_object;
    size_t max_page_bytes;
    void *(*decode)(void *, const struct kube_obj *, const cJSON *, const struct kube_rec_ops **);
    int64_t refused_logged_ns;
    uint64_t refused_unlogged;
    struct kube_informer_handlers h;
    void *user_data;

    struct kube_cache *cache;
    struct kube_cache *fresh; /* objects of the list in progress */
    char *continue_token;
    char rv[RV_MAX];
    enum inf_state state;
    int started;
    int synced;
    int watch_had_events;
    int64_t watch_started_ns;
    int expired_streak; /* 410s since the last healthy watch: the first is routine */
    uint64_t watches_started;
    struct kube_error last_err; /* the last failure, until the next success */
    char last_verb[16];
    struct kube_call *call;
    struct kube_watch *watch;
    struct event *timer;
    enum inf_next next;
    struct kube_backoff backoff;
    struct kube_informer_stats stats;
    struct inf_metrics m;
};

static void begin_initial(struct kube_informer *inf);
static void start_watch(struct kube_informer *inf);
static void on_timer(evutil_socket_t fd, short what, void *arg);

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

static void set_rv(struct kube_informer *inf, const char *rv)
{
    if (rv && *rv && strlen(rv) < sizeof(inf->rv))
        snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
}

static void setup_metrics(struct kube_informer *inf)
{
    struct cx_metric *ev =
        cx_counter("coxswain_informer_events_total", "Watch events received by informers, by type.",
                   "resource,type");
    struct cx_metric *rl =
        cx_counter("coxswain_informer_relists_total",
                   "Re-lists after the first sync (410 Expired, restarts).", "resource");
    struct cx_metric *wr = cx_counter("coxswain_informer_watch_restarts_total",
                                      "Watches started after the first one.", "resource");
    struct cx_metric *le = cx_gauge("coxswain_informer_last_event_timestamp_seconds",
                                    "Wall time of the last watch event.", "resource");
    struct cx_metric *ob =
        cx_gauge("coxswain_informer_objects", "Objects in the informer cache.", "resource");
    struct cx_metric *sy =
        cx_gauge("coxswain_informer_synced",
                 "1 once the informer's cache holds the server's state.", "resource");
    struct cx_metric *rf =
        cx_counter("coxswain_informer_objects_refused_total",
                   "Objects over the size cap per object, treated as absent.", "resource");
    for (int t = 0; t < KUBE_EV_COUNT; t++) {
        static const char *const names[KUBE_EV_COUNT] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK",
                                                         "ERROR"};
        inf->m.events[t] = ev ? cx_metric_with(ev, inf->name, names[t]) : NULL;
    }
    inf->m.relists = rl ? cx_metric_with(rl, inf->name) : NULL;
    inf->m.restarts = wr ? cx_metric_with(wr, inf->name) : NULL;
    inf->m.last_event = le ? cx_metric_with(le, inf->name) : NULL;
    inf->m.objects = ob ? cx_metric_with(ob, inf->name) : NULL;
    inf->m.synced = sy ? cx_metric_with(sy, inf->name) : NULL;
    inf->m.refused = rf ? cx_metric_with(rf, inf->name) : NULL;
}

static void m_inc(struct cx_series *s)
{
    if (s)
        cx_series_inc(s);
}

static void m_set(struct cx_series *s, double v)
{
    if (s)
        cx_series_set(s, v);
}

struct kube_informer *kube_informer_new(struct kube_client *c, const struct kube_informer_opts *o,
                                        const struct kube_informer_handlers *h, void *user_data)
{
    if (!c || !o || !o->res || !o->res->plural || !o->res->version)
        return NULL;
    struct kube_informer *inf = calloc(1, sizeof(*inf));
    if (!inf)
        return NULL;
    inf->c = c;
    inf->res = o->res;
    inf->ns = dup_or_null(o->ns);
    inf->label_selector = dup_or_null(o->label_selector);
    inf->field_selector = dup_or_null(o->field_selector);
    inf->name = strdup(o->name && *o->name ? o->name : o->res->plural);
    size_t avl = strlen(o->res->version) + (o->res->group ? strlen(o->res->group) : 0) + 2;
    inf->api_version = malloc(avl);
    if (inf->api_version) {
        if (o->res->group && *o->res->group)
            snprintf(inf->api_version, avl, "%s/%s", o->res->group, o->res->version);
        else
            snprintf(inf->api_version, avl, "%s", o->res->version);
    }
    inf->page_size = o->page_size > 0 ? o->page_size : (o->page_size < 0 ? 0 : 500);
    inf->watch_timeout_s = o->watch_timeout_s > 0 ? o->watch_timeout_s : 300;
    inf->stall_ms = o->stall_ms > 0 ? o->stall_ms : 90000;
    inf->request_timeout_ms = o->request_timeout_ms > 0 ? o->request_timeout_ms : 60000;
    inf->streaming = o->streaming;
    inf->trim = o->trim;
    inf->metadata_only = o->metadata_only;
    inf->decode = o->decode;
    inf->max_object = o->max_object ? o->max_object : KUBE_OBJECT_MAX;
    inf->max_page_bytes = o->max_page_bytes ? o->max_page_bytes : KUBE_INFORMER_PAGE_MAX;
    inf->backoff.base_ms = o->backoff_base_ms > 0 ? o->backoff_base_ms : 100;
    inf->backoff.max_ms = o->backoff_max_ms > 0 ? o->backoff_max_ms : 5000;
    if (h)
        inf->h = *h;
    inf->user_data = user_data;
    inf->cache = kube_cache_new();
    inf->timer = evtimer_new(kube_client_base(c), on_timer, inf);
    if (!inf->name || !inf->api_version || !inf->cache || !inf->timer ||
        (o->ns && *o->ns && !inf->ns) ||
        (o->label_selector && *o->label_selector && !inf->label_selector) ||
        (o->field_selector && *o->field_selector && !inf->field_selector))
        goto fail;
    for (const char *const *l = o->label_indexes; l && *l; l++)
        if (kube_cache_index_label(inf->cache, *l) != 0)
            goto fail;
    setup_metrics(inf);
    return inf;
fail:
    kube_informer_free(inf);
    return NULL;
}

void kube_informer_free(struct kube_informer *inf)
{
    if (!inf)
        return;
    kube_call_cancel(inf->call);
    inf->call = NULL;
    kube_watch_stop(inf->watch);
    inf->watch = NULL;
    if (inf->timer)
        event_free(inf->timer);
    kube_cache_free(inf->fresh);
    kube_cache_free(inf->cache);
    free(inf->continue_token);
    free(inf->ns);
    free(inf->label_selector);
    free(inf->field_selector);
    free(inf->name);
    free(inf->api_version);
    free(inf);
}

int kube_informer_synced(const struct kube_informer *inf)
{
    return inf->synced;
}

struct kube_cache *kube_informer_cache(const struct kube_informer *inf)
{
    return inf->cache;
}

const char *kube_informer_resource_version(const struct kube_informer *inf)
{
    return inf->rv;
}

void kube_informer_stats(const struct kube_informer *inf, struct kube_informer_stats *out)
{
    *out = inf->stats;
}

/* ---- scheduling ------------------------------------------------------------------ */

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct kube_informer *inf = arg;
    (void)fd;
    (void)what;
    if (inf->next == NEXT_WATCH)
        start_watch(inf);
    else
        begin_initial(inf);
}

/* Runs |next| after |delay_ms| (0: on the next loop turn, never inline, so
 * a failure path cannot recurse). */
static void schedule(struct kube_informer *inf, enum inf_next next, int64_t delay_ms)
{
    inf->state = INF_WAITING;
    inf->next = next;
    struct timeval tv = {.tv_sec = delay_ms / 1000, .tv_usec = (delay_ms % 1000) * 1000};
    evtimer_add(inf->timer, &tv);
}

static void schedule_backoff(struct kube_informer *inf, enum inf_next next,
                             const struct kube_error *e)
{
    int64_t d = kube_backoff_next(&inf->backoff);
    /* The server asked for a pause (429 / 5xx Retry-After): honour it. */
    if (e && e->retry_after_ms > d)
        d = e->retry_after_ms > 30000 ? 30000 : e->retry_after_ms;
    schedule(inf, next, d);
}

/* Keeps |e| as the informer's last failure (what /readyz says). */
static void note_failure(struct kube_informer *inf, const char *verb, const struct kube_error *e)
{
    inf->last_err = *e;
    snprintf(inf->last_verb, sizeof(inf->last_verb), "%s", verb);
}

static void note_success(struct kube_informer *inf)
{
    inf->last_err.code = KUBE_OK;
    inf->last_verb[0] = '\0';
}

const struct kube_error *kube_informer_last_error(const struct kube_informer *inf,
                                                  const char **verb)
{
    if (inf->last_err.code == KUBE_OK)
        return NULL;
    if (verb)
        *verb = inf->last_verb;
    return &inf->last_err;
}

/* A 410 after a healthy watch is routine (compaction moved past our RV):
 * the client logs it at debug level. Another before a watch stays up is
 * not, and is logged as the failure it is. */
static uint32_t expected_410(const struct kube_informer *inf)
{
    return inf->expired_streak == 0 ? KUBE_QUIET(KUBE_E_EXPIRED) : 0;
}

/* ---- applying changes ------------------------------------------------------------- */

static void note_objects(struct kube_informer *inf)
{
    m_set(inf->m.objects, (double)kube_cache_len(inf->cache));
}

/* Stores |o| (taking the caller's reference) and tells the handlers.
 * Drops it when the cache already holds that exact resourceVersion: the
 * same change seen twice (a resumed watch, a list racing a watch). */
static void apply_upsert(struct kube_informer *inf, struct kube_obj *o)
{
    struct kube_obj *cur = kube_cache_get(inf->cache, o->key);
    if (cur && *o->rv && strcmp(cur->rv, o->rv) == 0) {
        inf->stats.duplicates++;
        kube_obj_unref(o);
        return;
    }
    kube_obj_ref(o); /* ours for the handler call */
    struct kube_obj *old = kube_cache_put(inf->cache, o);
    if (old == o) { /* out of memory: not stored */
        kube_obj_unref(o);
        kube_obj_unref(o);
        return;
    }
    if (old) {
        inf->stats.updates++;
        if (inf->h.on_update)
            inf->h.on_update(inf->user_data, old, o);
        kube_obj_unref(old);
    } else {
        inf->stats.adds++;
        if (inf->h.on_add)
            inf->h.on_add(inf->user_data, o);
    }
    kube_obj_unref(o);
}

/* Removes |key|; |final| (may be NULL, reference taken over) is the
 * object's last state as the server reported it. */
static void apply_delete(struct kube_informer *inf, const char *key, struct kube_obj *final)
{
    struct kube_obj *old = kube_cache_remove(inf->cache, key);
    if (old) {
        inf->stats.deletes++;
        if (inf->h.on_delete)
            inf->h.on_delete(inf->user_data, final ? final : old);
        kube_obj_unref(old);
    }
    kube_obj_unref(final);
}

/* Says (at most once a minute, with a count) that an object was refused. */
static void note_refused(struct kube_informer *inf, const cJSON *obj, size_t size)
{
    inf->stats.refused++;
    m_inc(inf->m.refused);
    inf->refused_unlogged++;
    int64_t now = cx_mono_ns();
    if (inf->refused_logged_ns && now - inf->refused_logged_ns < REFUSED_LOG_NS)
        return;
    const char *ns = cx_json_path_str(obj, "metadata", "namespace", NULL);
    const char *name = cx_json_path_str(obj, "metadata", "name", NULL);
    cx_warn("informer",
            "%s: %s%s%s is over %zu bytes (the cap on one object), treated as absent "
            "(%llu refused since the last such line)",
            inf->name, ns ? ns : "", ns ? "/" : "", name ? name : "(no name)",
            size > inf->max_object ? inf->max_object : size,
            (unsigned long long)inf->refused_unlogged);
    inf->refused_logged_ns = now;
    inf->refused_unlogged = 0;
}

/* Makes an arriving object what the cache keeps: bookkeeping trimmed, cut
 * to its metadata for a metadata informer, kind/apiVersion filled in (list
 * items carry neither; watch objects do, so consumers see one shape).
 * Returns 0, or -1 when it is over the cap on one object: the caller treats
 * it as absent. */
static int admit(struct kube_informer *inf, cJSON *obj)
{
    size_t size = 0;
    if (kube_obj_admit(obj, inf->metadata_only, inf->trim, inf->max_object, inf->res->kind,
                       inf->api_version, &size) != 0) {
        note_refused(inf, obj, size);
        return -1;
    }
    return 0;
}

/* The object the cache keeps for |json| (admitted; taken over on
 * success): decoded into the owner's form when the owner asked for that. */
static struct kube_obj *keep_obj(struct kube_informer *inf, cJSON *json)
{
    struct kube_obj *o = kube_obj_new(json);
    if (o && inf->decode) {
        const struct kube_rec_ops *ops = NULL;
        void *rec = inf->decode(inf->user_data, o, json, &ops);
        if (rec)
            kube_obj_keep_rec(o, rec, ops);
    }
    return o;
}

static void put_fresh(struct kube_informer *inf, cJSON *json)
{
    if (admit(inf, json) != 0) {
        cJSON_Delete(json); /* absent from the fresh list: a cached copy goes */
        return;
    }
    struct kube_obj *o = keep_obj(inf, json);
    if (!o) {
        cJSON_Delete(json);
        return;
    }
    struct kube_obj *old = kube_cache_put(inf->fresh, o);
    if (old == o)
        kube_obj_unref(o);
    else
        kube_obj_unref(old);
}

/* The list (or the streaming list's initial events) is complete: make the
 * cache equal to it, telling the handlers only what really changed. */
static void apply_fresh(struct kube_informer *inf)
{
    size_t nf = 0, nc = 0;
    struct kube_obj **fl = kube_cache_list(inf->fresh, &nf);
    struct kube_obj **cl = kube_cache_list(inf->cache, &nc);
    struct kube_cache *fresh = inf->fresh;
    inf->fresh = NULL;
    /* Deletions first, then additions and updates, each in key order. */
    for (size_t i = 0; i < nc; i++)
        if (!kube_cache_get(fresh, cl[i]->key))
            apply_delete(inf, cl[i]->key, NULL);
    for (size_t i = 0; i < nf; i++) {
        struct kube_obj *cur = kube_cache_get(inf->cache, fl[i]->key);
        if (cur && *cur->rv && strcmp(cur->rv, fl[i]->rv) == 0)
            continue; /* unchanged: keep the cached object, say nothing */
        apply_upsert(inf, kube_obj_ref(fl[i]));
    }
    kube_cache_list_free(fl, nf);
    kube_cache_list_free(cl, nc);
    kube_cache_free(fresh);
    note_objects(inf);
    note_success(inf);
    if (!inf->synced) {
        inf->synced = 1;
        m_set(inf->m.synced, 1);
        if (inf->h.on_synced)
            inf->h.on_synced(inf->user_data);
    }
}

/* ---- list ------------------------------------------------------------------------ */

static void list_page(struct kube_informer *inf);

/* A page was over max_page_bytes: ask for pages half as long (large
 * objects), down to one object a page. */
static void shrink_pages(struct kube_informer *inf)
{
    long before = inf->page_size;
    inf->page_size = before > 1 ? before / 2 : before == 0 ? 250 : 1;
    if (inf->page_size != before)
        cx_warn("informer", "%s: a list page was over %zu bytes: %ld objects a page from now on",
                inf->name, inf->max_page_bytes, inf->page_size);
}

static void on_list_page(struct kube_result *r, void *ud)
{
    struct kube_informer *inf = ud;
    inf->call = NULL;
    if (r->err.code != KUBE_OK) {
        /* An expired continue token (the list outlived the server's
         * window) starts the list over, after the backoff like any other
         * failure: a server that expires every token is not a loop. */
        if (r->err.code != KUBE_E_EXPIRED || !inf->continue_token)
            note_failure(inf, "list", &r->err);
        if (r->err.code == KUBE_E_EXPIRED)
            inf->expired_streak++;
        if (r->err.code == KUBE_E_DECODE && strcmp(r->err.reason, KUBE_REASON_TOO_LARGE) == 0)
            shrink_pages(inf);
        schedule_backoff(inf, NEXT_INITIAL, &r->err);
        return;
    }
    inf->stats.pages++;
    cJSON *items = cJSON_GetObjectItemCaseSensitive(r->object, "items");
    cJSON *it;
    while (cJSON_IsArray(items) && (it = cJSON_DetachItemFromArray(items, 0)))
        put_fresh(inf, it);
    const char *cont = cx_json_path_str(r->object, "metadata", "continue", NULL);
    free(inf->continue_token);
    inf->continue_token = cont && *cont ? strdup(cont) : NULL;
    if (inf->continue_token) {
        list_page(inf);
        return;
    }
    const char *rv = cx_json_path_str(r->object, "metadata", "resourceVersion", NULL);
    if (!rv || !*rv) {
        schedule_backoff(inf, NEXT_INITIAL, NULL);
        return;
    }
    set_rv(inf, rv);
    apply_fresh(inf);
    start_watch(inf);
}

static void list_page(struct kube_informer *inf)
{
    struct kube_list_opts lo = {
        .label_selector = inf->label_selector,
        .field_selector = inf->field_selector,
        .limit = inf->page_size,
        .continue_token = inf->continue_token,
    };
    struct kube_req_opts ro = {.timeout_ms = inf->request_timeout_ms,
                               .quiet = expected_410(inf),
                               .max_response = inf->max_page_bytes,
                               .accept = inf->metadata_only ? ACCEPT_META_LIST : NULL};
    inf->state = INF_LISTING;
    inf->call = kube_list(inf->c, inf->res, inf->ns, &lo, &ro, on_list_page, inf);
    if (!inf->call)
        schedule_backoff(inf, NEXT_INITIAL, NULL);
}

/* ---- watch ------------------------------------------------------------------------ */

static int is_initial_end(const cJSON *obj)
{
    const char *v = cx_json_path_str(obj, "metadata", "annotations", INITIAL_EVENTS_END, NULL);
    return v && strcmp(v, "true") == 0;
}

/* The streaming list a server refused (every 1.28-1.31 cluster, WatchList
 * off) was the informer's first watch request: the list + watch replacing it
 * is not a restart. */
static void not_a_restart(struct kube_informer *inf)
{
    if (inf->watches_started == 1)
        inf->watches_started = 0;
}

static void on_watch_event(void *ud, enum kube_event_type type, cJSON *obj)
{
    struct kube_informer *inf = ud;
    inf->stats.events[type]++;
    m_inc(inf->m.events[type]);
    inf->stats.last_event_wall_ns = cx_wall_ns();
    m_set(inf->m.last_event, (double)inf->stats.last_event_wall_ns / 1e9);
    inf->watch_had_events = 1;
    /* A copy: |obj| may be refused and freed before the RV is kept. */
    char rv[RV_MAX] = "";
    const char *orv = cx_json_path_str(obj, "metadata", "resourceVersion", NULL);
    if (orv && strlen(orv) < sizeof(rv))
        memcpy(rv, orv, strlen(orv) + 1);

    if (inf->state == INF_STREAMING) {
        if (type == KUBE_EV_BOOKMARK) {
            if (is_initial_end(obj)) {
                set_rv(inf, rv);
                cJSON_Delete(obj);
                inf->state = INF_WATCHING;
                inf->stats.streaming_used = 1;
                apply_fresh(inf);
                return;
            }
            if (inf->streaming == KUBE_STREAMING_AUTO) {
                /* A bookmark before the initial-events-end one: this
                 * server does not do streaming lists. */
                cJSON_Delete(obj);
                inf->streaming_refused = 1;
                not_a_restart(inf);
                kube_watch_stop(inf->watch);
                inf->watch = NULL;
                schedule(inf, NEXT_INITIAL, 0);
                return;
            }
            cJSON_Delete(obj);
            return;
        }
        if (type == KUBE_EV_DELETED) {
            struct kube_obj *o = kube_obj_new(obj);
            if (o) {
                kube_obj_unref(kube_cache_remove(inf->fresh, o->key));
                kube_obj_unref(o);
            } else {
                cJSON_Delete(obj);
            }
        } else {
            put_fresh(inf, obj);
        }
        set_rv(inf, rv);
        return;
    }

    set_rv(inf, rv);
    if (type == KUBE_EV_BOOKMARK) {
        cJSON_Delete(obj);
        return;
    }
    if (admit(inf, obj) != 0) {
        /* Over the cap now: whatever the cache held of it is no longer
         * the object, which is treated as absent. */
        char key[400];
        const char *ns = cx_json_path_str(obj, "metadata", "namespace", NULL);
        const char *name = cx_json_path_str(obj, "metadata", "name", NULL);
        if (name && kube_obj_key(ns ? ns : "", name, key, sizeof(key)) == 0)
            apply_delete(inf, key, NULL);
        cJSON_Delete(obj);
        note_objects(inf);
        return;
    }
    struct kube_obj *o = type == KUBE_EV_DELETED ? kube_obj_new(obj) : keep_obj(inf, obj);
    if (!o) {
        cJSON_Delete(obj);
        return;
    }
    if (type == KUBE_EV_DELETED)
        apply_delete(inf, o->key, o);
    else
        apply_upsert(inf, o);
    note_objects(inf);
}

static void on_watch_end(void *ud, const struct kube_error *err)
{
    struct kube_informer *inf = ud;
    inf->watch = NULL;
    int streaming = inf->state == INF_STREAMING;
    int healthy = cx_mono_ns() - inf->watch_started_ns >= HEALTHY_WATCH_NS;
    if (healthy) {
        kube_backoff_reset(&inf->backoff);
        inf->expired_streak = 0;
    }
    if (streaming) {
        kube_cache_free(inf->fresh);
        inf->fresh = NULL;
    }
    if (err->code == KUBE_E_DECODE && strcmp(err->reason, KUBE_REASON_TOO_LARGE) == 0) {
        /* An event over the cap: resuming would meet it again. A list
         * (which refuses the object) and a watch from its RV get past it. */
        inf->stats.watch_errors++;
        note_failure(inf, "watch", err);
        inf->rv[0] = '\0';
        schedule_backoff(inf, NEXT_INITIAL, err);
        return;
    }
    if (err->code == KUBE_E_EXPIRED) {
        /* Our resourceVersion left the server's window: list again. */
        inf->expired_streak++;
        if (inf->synced) {
            inf->stats.relists++;
            m_inc(inf->m.relists);
        }
        inf->rv[0] = '\0';
        if (healthy)
            schedule(inf, NEXT_INITIAL, 0);
        else
            schedule_backoff(inf, NEXT_INITIAL, err);
        return;
    }
    if (streaming) {
        enum kube_err_code c = err->code;
        if (inf->streaming == KUBE_STREAMING_AUTO &&
            (c == KUBE_E_BAD_REQUEST || c == KUBE_E_INVALID || c == KUBE_E_UNSUPPORTED ||
             c == KUBE_E_METHOD || c == KUBE_E_TIMEOUT || c == KUBE_OK)) {
            /* Refused, or ended/stalled without the initial-events-end
             * bookmark: fall back to list + watch (once: the refusal
             * sticks). */
            inf->streaming_refused = 1;
            not_a_restart(inf);
            schedule(inf, NEXT_INITIAL, 0);
            return;
        }
        inf->stats.watch_errors++;
        note_failure(inf, "watch", err);
        schedule_backoff(inf, NEXT_INITIAL, err);
        return;
    }
    if (err->code == KUBE_OK && healthy) {
        /* timeoutSeconds ran out, or the server closed cleanly: resume. */
        schedule(inf, NEXT_WATCH, 0);
        return;
    }
    if (err->code != KUBE_OK) {
        inf->stats.watch_errors++;
        note_failure(inf, "watch", err);
    }
    schedule_backoff(inf, NEXT_WATCH, err);
}

static const struct kube_watch_handlers watch_handlers = {on_watch_event, on_watch_end};

static void start_watch(struct kube_informer *inf)
{
    struct kube_watch_opts o = {
        .resource_version = inf->rv,
        .label_selector = inf->label_selector,
        .field_selector = inf->field_selector,
        .timeout_seconds = inf->watch_timeout_s,
        .allow_bookmarks = 1,
        .stall_ms = inf->stall_ms,
        .quiet = expected_410(inf),
        .accept = inf->metadata_only ? ACCEPT_META : NULL,
        .max_event = inf->max_object + EVENT_ENVELOPE,
    };
    if (inf->watches_started++ > 0) {
        inf->stats.watch_restarts++;
        m_inc(inf->m.restarts);
    }
    inf->state = INF_WATCHING;
    inf->watch_had_events = 0;
    inf->watch_started_ns = cx_mono_ns();
    inf->watch = kube_watch_start(inf->c, inf->res, inf->ns, &o, &watch_handlers, inf);
    if (!inf->watch)
        schedule_backoff(inf, NEXT_WATCH, NULL);
}

static void begin_initial(struct kube_informer *inf)
{
    inf->stats.lists++;
    kube_cache_free(inf->fresh);
    inf->fresh = kube_cache_new();
    free(inf->continue_token);
    inf->continue_token = NULL;
    if (!inf->fresh) {
        schedule_backoff(inf, NEXT_INITIAL, NULL);
        return;
    }
    int stream = inf->streaming == KUBE_STREAMING_ON ||
                 (inf->streaming == KUBE_STREAMING_AUTO && !inf->streaming_refused);
    if (!stream) {
        inf->stats.streaming_used = 0;
        list_page(inf);
        return;
    }
    struct kube_watch_opts o = {
        .label_selector = inf->label_selector,
        .field_selector = inf->field_selector,
        .timeout_seconds = inf->watch_timeout_s,
        .allow_bookmarks = 1,
        .send_initial_events = 1,
        .stall_ms = inf->stall_ms,
        /* A server without streaming lists says so with one of these. */
        .quiet = inf->streaming == KUBE_STREAMING_AUTO
                     ? expected_410(inf) | KUBE_QUIET(KUBE_E_BAD_REQUEST) |
                           KUBE_QUIET(KUBE_E_INVALID) | KUBE_QUIET(KUBE_E_UNSUPPORTED) |
                           KUBE_QUIET(KUBE_E_METHOD)
                     : expected_410(inf),
        .accept = inf->metadata_only ? ACCEPT_META : NULL,
        .max_event = inf->max_object + EVENT_ENVELOPE,
    };
    if (inf->watches_started++ > 0) {
        inf->stats.watch_restarts++;
        m_inc(inf->m.restarts);
    }
    inf->state = INF_STREAMING;
    inf->watch_had_events = 0;
    inf->watch_started_ns = cx_mono_ns();
    inf->watch = kube_watch_start(inf->c, inf->res, inf->ns, &o, &watch_handlers, inf);
    if (!inf->watch)
        schedule_backoff(inf, NEXT_INITIAL, NULL);
}

int kube_informer_start(struct kube_informer *inf)
{
    if (inf->started)
        return -1;
    inf->started = 1;
    begin_initial(inf);
    return 0;
}
