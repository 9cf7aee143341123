#include "daemon_fetch.h"

#include "cx_json.h"
#include "cx_map.h"
#include "cx_time.h"
#include "kube_error.h"
#include "store_kinds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_FIRST_NS (500 * CX_NS_PER_MS)
#define RETRY_MAX_NS   (30 * CX_NS_PER_S)
/* A list of one object: the object and a small envelope. */
#define READ_MAX (KUBE_OBJECT_MAX + ((size_t)16 << 10))

struct entry {
    struct daemon_fetch *f;
    enum xlate_kind kind;
    struct kube_call *call;
    struct event *retry;
    int dirty;  /* changed while being read: read again after */
    int fails;  /* failed reads in a row */
    int queued; /* counted in pending (a read in flight) */
    struct kube_obj *full;
    char *name; /* into key */
    char key[]; /* "ns/name", then NUL, then the name */
};

struct daemon_fetch {
    struct kube_client *kc;
    daemon_fetch_feed_fn feed;
    void (*idle)(void *user);
    void *user;
    struct cx_map map[2]; /* by kind (Secret, ConfigMap): key -> entry */
    size_t pending;
    uint64_t rng;
    struct daemon_fetch_stats st;
};

static int slot(enum xlate_kind kind)
{
    return kind == XLATE_KIND_SECRET ? 0 : 1;
}

struct daemon_fetch *daemon_fetch_new(struct kube_client *kc, daemon_fetch_feed_fn feed,
                                      void (*idle)(void *user), void *user)
{
    struct daemon_fetch *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->kc = kc;
    f->feed = feed;
    f->idle = idle;
    f->user = user;
    return f;
}

static void set_busy(struct entry *e, int busy)
{
    if (busy == e->queued)
        return;
    e->queued = busy;
    if (busy) {
        e->f->pending++;
        return;
    }
    if (--e->f->pending == 0 && e->f->idle)
        e->f->idle(e->f->user);
}

static void entry_free(struct entry *e)
{
    kube_call_cancel(e->call);
    e->call = NULL;
    if (e->retry)
        event_free(e->retry);
    kube_obj_unref(e->full);
    free(e);
}

void daemon_fetch_free(struct daemon_fetch *f)
{
    if (!f)
        return;
    for (int k = 0; k < 2; k++) {
        const struct cx_map_slot *s;
        for (size_t i = 0; cx_map_next(&f->map[k], &i, &s);)
            entry_free(s->val);
        cx_map_free(&f->map[k]);
    }
    free(f);
}

static struct entry *find(const struct daemon_fetch *f, enum xlate_kind kind, const char *key)
{
    return cx_map_gets(&f->map[slot(kind)], key);
}

static struct entry *entry_new(struct daemon_fetch *f, enum xlate_kind kind, const char *key)
{
    const char *slash = strchr(key, '/');
    if (!slash || !slash[1])
        return NULL;
    size_t n = strlen(key);
    struct entry *e = calloc(1, sizeof(*e) + 2 * n + 2);
    if (!e)
        return NULL;
    e->f = f;
    e->kind = kind;
    memcpy(e->key, key, n + 1);
    e->name = e->key + n + 1;
    memcpy(e->name, slash + 1, n - (size_t)(slash + 1 - key) + 1);
    if (cx_map_puts(&f->map[slot(kind)], e->key, e, NULL) != 0) {
        free(e);
        return NULL;
    }
    return e;
}

static void entry_drop(struct entry *e)
{
    cx_map_dels(&e->f->map[slot(e->kind)], e->key);
    int busy = e->queued;
    struct daemon_fetch *f = e->f;
    entry_free(e);
    if (busy && --f->pending == 0 && f->idle)
        f->idle(f->user);
}

/* Replaces the whole copy by |o| (taken; NULL: gone), feeding the change. */
static void set_full(struct entry *e, struct kube_obj *o)
{
    struct kube_obj *old = e->full;
    e->full = o;
    if (o)
        e->f->feed(e->f->user, e->kind, old ? FILTER_EV_MODIFIED : FILTER_EV_ADDED, o);
    else if (old)
        e->f->feed(e->f->user, e->kind, FILTER_EV_DELETED, old);
    kube_obj_unref(old);
}

static void read_now(struct entry *e);

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    read_now(arg);
}

static void on_read(struct kube_result *r, void *arg)
{
    struct entry *e = arg;
    e->call = NULL;
    e->f->st.reads++;
    if (r->err.code != KUBE_OK) {
        /* Said by the client (verb, object, the server's words); here only
         * the retry, which the next change also triggers. */
        e->f->st.failures++;
        e->fails++;
        int64_t d = kube_backoff_nth_ns(e->fails, RETRY_FIRST_NS, RETRY_MAX_NS, &e->f->rng);
        /* The server's Retry-After, up to the backoff's ceiling: a day
         * would leave a referenced Secret unread for a day after the
         * server recovered. */
        if (r->err.retry_after_ms > 0 && r->err.retry_after_ms * CX_NS_PER_MS > d)
            d = r->err.retry_after_ms < RETRY_MAX_NS / CX_NS_PER_MS
                    ? r->err.retry_after_ms * CX_NS_PER_MS
                    : RETRY_MAX_NS;
        struct timeval tv = {.tv_sec = (time_t)(d / CX_NS_PER_S),
                             .tv_usec = (suseconds_t)((d % CX_NS_PER_S) / 1000)};
        if (!e->retry)
            e->retry = evtimer_new(kube_client_base(e->f->kc), on_retry, e);
        e->dirty = 0;
        if (e->retry)
            evtimer_add(e->retry, &tv);
        set_busy(e, 0); /* a retry is not a read in flight */
        return;
    }
    e->fails = 0;
    cJSON *items = cJSON_GetObjectItemCaseSensitive(r->object, "items");
    cJSON *item = cJSON_IsArray(items) ? cJSON_DetachItemFromArray(items, 0) : NULL;
    struct kube_obj *o = NULL;
    if (item) {
        kube_obj_trim(item);
        const struct kube_resource *res = store_kind_resource(e->kind);
        if (!cJSON_GetObjectItemCaseSensitive(item, "kind"))
            cJSON_AddStringToObject(item, "kind", res->kind);
        if (!cJSON_GetObjectItemCaseSensitive(item, "apiVersion"))
            cJSON_AddStringToObject(item, "apiVersion", res->version);
        const char *name = cx_json_path_str(item, "metadata", "name", NULL);
        if (name && strcmp(name, e->name) == 0)
            o = kube_obj_new(item);
        if (!o)
            cJSON_Delete(item);
    }
    set_full(e, o); /* no item: deleted between the change and the read */
    if (e->dirty) {
        e->dirty = 0;
        read_now(e);
        return;
    }
    set_busy(e, 0);
}

/* Lists the one object by name (the list verb the informers have). */
static void read_now(struct entry *e)
{
    if (e->call) {
        e->dirty = 1;
        return;
    }
    if (e->retry)
        evtimer_del(e->retry);
    char fs[400];
    snprintf(fs, sizeof(fs), "metadata.name=%s", e->name);
    char ns[256];
    size_t nslen = (size_t)(strchr(e->key, '/') - e->key);
    snprintf(ns, sizeof(ns), "%.*s", (int)nslen, e->key);
    struct kube_list_opts lo = {.field_selector = fs};
    /* One attempt: on_read owns the retry (backoff, Retry-After up to its
     * ceiling), and two nested retry loops multiply the waits. */
    struct kube_req_opts ro = {.max_response = READ_MAX, .max_attempts = 1};
    set_busy(e, 1);
    e->call = kube_list(e->f->kc, store_kind_resource(e->kind), ns, &lo, &ro, on_read, e);
    if (!e->call) {
        struct kube_result r = {0};
        kube_error_set(&r.err, KUBE_E_TRANSPORT, "cannot start the read");
        on_read(&r, e);
    }
}

void daemon_fetch_ref(struct daemon_fetch *f, enum xlate_kind kind, const char *key, int referenced,
                      int present)
{
    struct entry *e = find(f, kind, key);
    if (!referenced) {
        if (!e)
            return;
        /* Fed once more: unreferenced now, the filters take it out. */
        struct kube_obj *full = e->full;
        e->full = NULL;
        if (full)
            f->feed(f->user, kind, FILTER_EV_MODIFIED, full);
        kube_obj_unref(full);
        entry_drop(e);
        return;
    }
    if (!e && !(e = entry_new(f, kind, key)))
        return;
    if (present)
        read_now(e);
}

void daemon_fetch_changed(struct daemon_fetch *f, enum xlate_kind kind, const char *key, int gone)
{
    struct entry *e = find(f, kind, key);
    if (!e)
        return; /* not referenced: never read */
    if (!gone) {
        read_now(e);
        return;
    }
    kube_call_cancel(e->call);
    e->call = NULL;
    e->dirty = 0;
    if (e->retry)
        evtimer_del(e->retry);
    set_full(e, NULL);
    set_busy(e, 0);
}

struct kube_obj *daemon_fetch_get(const struct daemon_fetch *f, enum xlate_kind kind,
                                  const char *key)
{
    struct entry *e = find(f, kind, key);
    return e ? e->full : NULL;
}

void daemon_fetch_foreach_ns(const struct daemon_fetch *f, enum xlate_kind kind, const char *ns,
                             void (*fn)(void *ctx, struct kube_obj *o), void *ctx)
{
    size_t n = strlen(ns);
    const struct cx_map_slot *s;
    for (size_t i = 0; cx_map_next(&f->map[slot(kind)], &i, &s);) {
        struct entry *e = s->val;
        if (e->full && strncmp(e->key, ns, n) == 0 && e->key[n] == '/')
            fn(ctx, e->full);
    }
}

size_t daemon_fetch_pending(const struct daemon_fetch *f)
{
    return f->pending;
}

void daemon_fetch_stats(const struct daemon_fetch *f, struct daemon_fetch_stats *out)
{
    *out = f->st;
    out->held = 0;
    for (int k = 0; k < 2; k++) {
        const struct cx_map_slot *s;
        for (size_t i = 0; cx_map_next(&f->map[k], &i, &s);)
            out->held += ((struct entry *)s->val)->full != NULL;
    }
}
