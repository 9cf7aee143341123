/*
 * ks_watch: watch streams. One JSON object per event, each ending in "\n",
 * one HTTP chunk each. Event frames are encoded once per event and handed to
 * every watcher's connection by reference.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_log.h"
#include "cx_time.h"
#include "ks.h"
#include "ks_admin.h"
#include "ks_api.h"
#include "ks_http.h"
#include "ks_fault.h"
#include "ks_form.h"

struct ks_watch {
    struct ks_server *s;
    struct ks_rtype *rt;
    struct ks_req *r;
    char prefix[320]; /* "ns/" or "" */
    char *name;       /* watch of one object, or NULL */
    struct ks_listopts o;
    uint64_t last_rv;
    uint64_t start_rv; /* the watch's resourceVersion in the cache's terms */
    int64_t deadline_ms;
    bool pre_deadline_sent;
    bool starting; /* inside ks_watch_start: the caller still owns |r| */
    bool frozen;   /* events held back: the user is partitioned */
    struct event *deadline_ev;
    struct event *bookmark_ev;
    struct evbuffer *scratch;
    TAILQ_ENTRY(ks_watch) rt_link;
    TAILQ_ENTRY(ks_watch) all_link;
};

/* TAILQ_ENTRY names must match the list heads declared in ks.h. */
#define rt_watchers(rt) (&(rt)->watchers)

static void watch_free(struct ks_watch *w)
{
    if (w->deadline_ev)
        event_free(w->deadline_ev);
    if (w->bookmark_ev)
        event_free(w->bookmark_ev);
    if (w->scratch)
        evbuffer_free(w->scratch);
    ks_listopts_free(&w->o);
    free(w->name);
    free(w);
}

static void unlink_watch(struct ks_watch *w)
{
    TAILQ_REMOVE(&w->rt->watchers, w, rt_link);
    w->rt->nwatchers--;
    TAILQ_REMOVE(&w->s->all_watches, w, all_link);
}

/* Ends the stream cleanly (final empty chunk) and frees the watcher. */
static void watch_end(struct ks_watch *w)
{
    struct ks_req *r = w->r;
    bool starting = w->starting;
    unlink_watch(w);
    ks_req_on_close(r, NULL, NULL);
    ks_req_end(r);
    r->req = NULL;
    watch_free(w);
    if (starting)
        r->parked = false; /* the dispatcher finishes the request */
    else
        ks_req_done(r);
}

/* The client went away (connection closed, stream reset): we only let go
 * of the request. */
static void on_close(struct ks_req *r, void *arg)
{
    struct ks_watch *w = arg;
    unlink_watch(w);
    ks_req_gone(r);
    watch_free(w);
    ks_req_done(r);
}

static size_t out_len(struct ks_watch *w)
{
    return ks_req_queued(w->r);
}

/* Sends one frame. Returns 0, or -1 if the watcher was ended (slow
 * consumer); |w| is freed then. */
static int send_blob(struct ks_watch *w, struct ks_blob *b)
{
    if (!b || ks_blob_add_ref(w->scratch, b) != 0)
        return 0;
    ks_req_chunk(w->r, w->scratch);
    evbuffer_drain(w->scratch, evbuffer_get_length(w->scratch));
    size_t cap = w->s->cfg.max_watch_buffer ? w->s->cfg.max_watch_buffer : ((size_t)256 << 20);
    if (out_len(w) > cap) {
        cx_warn(KS_LOG, "watch of %s by %s: consumer too slow (%zu bytes queued), ending it",
                w->rt->plural, w->r->user, out_len(w));
        watch_end(w);
        return -1;
    }
    return 0;
}

static int send_text(struct ks_watch *w, const char *text)
{
    struct ks_blob *b = ks_blob_new(text, strlen(text));
    int rc = send_blob(w, b);
    ks_blob_unref(b);
    return rc;
}

static bool in_scope(const struct ks_watch *w, const char *key)
{
    if (w->prefix[0] && strncmp(key, w->prefix, strlen(w->prefix)) != 0)
        return false;
    if (w->name) {
        const char *n = w->prefix[0] ? key + strlen(w->prefix) : key;
        if (strcmp(n, w->name) != 0)
            return false;
    }
    return true;
}

/* Sends event |e| to |w| if it concerns it. Returns -1 if |w| ended. */
static int deliver(struct ks_watch *w, struct ks_event *e)
{
    if (e->rv <= w->last_rv || !in_scope(w, e->key))
        return 0;
    if (w->frozen || ks_fault_partitioned(w->s, w->r->user)) {
        w->frozen = true;
        return 0;
    }
    bool cur = e->type != KS_EV_DELETED && ks_obj_matches(w->rt, NULL, &w->o, e->obj);
    bool old = e->prev && ks_obj_matches(w->rt, NULL, &w->o, e->prev);
    enum ks_evtype t;
    if (cur && !old)
        t = KS_EV_ADDED;
    else if (cur && old)
        t = KS_EV_MODIFIED;
    else if (!cur && old)
        t = KS_EV_DELETED;
    else
        return 0;
    w->last_rv = e->rv;
    struct ks_blob *f = ks_form_event_frame(w->r, e, t);
    int rc = send_blob(w, f);
    ks_blob_unref(f);
    return rc;
}

void ks_watch_fanout(struct ks_server *s, struct ks_rtype *rt, struct ks_event *e)
{
    (void)s;
    struct ks_watch *w, *tmp;
    for (w = TAILQ_FIRST(&rt->watchers); w; w = tmp) {
        tmp = TAILQ_NEXT(w, rt_link);
        (void)deliver(w, e);
    }
}

static int send_bookmark_at(struct ks_watch *w, uint64_t rv, bool initial_end)
{
    if (w->frozen || ks_fault_partitioned(w->s, w->r->user))
        return 0;
    struct ks_blob *b = ks_form_bookmark(w->r, rv, initial_end);
    if (rv > w->last_rv)
        w->last_rv = rv;
    int rc = send_blob(w, b);
    ks_blob_unref(b);
    return rc;
}

static int send_bookmark(struct ks_watch *w, bool initial_end)
{
    uint64_t rv = w->s->rv > w->last_rv ? w->s->rv : w->last_rv;
    return send_bookmark_at(w, rv, initial_end);
}

/* A due bookmark. The watch cache sends one only when the resource's last
 * processed resourceVersion (its latest event, or a progress notification)
 * is past the watch's own (cacheWatcher.process: event.ResourceVersion >
 * resourceVersion), with that resourceVersion; quiet resources get none
 * until etcd notifies progress (storage/cacher/cacher.go). --bookmarks
 * periodic sends one every interval whatever happened. */
static int bookmark_due(struct ks_watch *w)
{
    if (w->s->cfg.bookmarks_periodic)
        return send_bookmark(w, false);
    if (w->rt->cache_rv <= w->start_rv)
        return 0;
    return send_bookmark_at(w, w->rt->cache_rv, false);
}

static void schedule_bookmark(struct ks_watch *w);

static void on_bookmark(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct ks_watch *w = arg;
    if (bookmark_due(w) != 0)
        return;
    schedule_bookmark(w);
}

/* Next bookmark: every interval (the cacher's bookmarkFrequency, 1 min),
 * and 2 s before the deadline (cacheWatcher.nextBookmarkTime). */
static void schedule_bookmark(struct ks_watch *w)
{
    if (!w->o.bookmarks)
        return;
    int64_t now = cx_mono_ms();
    int64_t at = now + w->s->cfg.bookmark_interval_ms;
    int64_t pre = w->deadline_ms - 2000;
    if (!w->pre_deadline_sent && pre < at) {
        w->pre_deadline_sent = true;
        if (pre >= now)
            at = pre;
    }
    if (at >= w->deadline_ms)
        return;
    struct timeval tv = {.tv_sec = (at - now) / 1000, .tv_usec = ((at - now) % 1000) * 1000};
    event_add(w->bookmark_ev, &tv);
}

/* A reset fault: the stream is reset (HTTP/2 RST_STREAM; HTTP/1.1 loses
 * its connection) instead of ending cleanly. */
static void watch_reset(struct ks_watch *w)
{
    struct ks_req *r = w->r;
    unlink_watch(w);
    ks_req_on_close(r, NULL, NULL);
    ks_req_reset(r, r->reset_code);
    watch_free(w);
    ks_req_done(r);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct ks_watch *w = arg;
    if (w->r->reset_code)
        watch_reset(w);
    else
        watch_end(w);
}

static void send_error_and_end(struct ks_watch *w, int code, const char *reason, const char *msg)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
             "\"metadata\":{},\"status\":\"Failure\",\"message\":\"%s\",\"reason\":\"%s\","
             "\"code\":%d}}\n",
             msg, reason, code);
    if (send_text(w, buf) == 0)
        watch_end(w);
}

void ks_watch_start(struct ks_req *r)
{
    struct ks_server *s = r->s;
    struct ks_rtype *rt = r->rt;
    struct ks_watch *w = calloc(1, sizeof(*w));
    if (!w) {
        ks_err_internal(r, "out of memory");
        return;
    }
    w->s = s;
    w->rt = rt;
    w->r = r;
    if (ks_listopts_parse(r, &w->o) != 0) {
        free(w);
        return;
    }
    if (rt->namespaced && r->ns)
        snprintf(w->prefix, sizeof(w->prefix), "%s/", r->ns);
    if (r->name)
        w->name = strdup(r->name);
    struct ks_listopts *o = &w->o;
    if (o->cont) {
        ks_err_bad_request(r, "continue is not supported for watch");
        watch_free(w);
        return;
    }
    /* Where the stream starts. */
    bool synthetic = false, initial_end = false;
    uint64_t from = s->rv;
    bool too_old = false;
    if (o->send_initial == 1) {
        if (o->rv && strcmp(o->rv, "0") != 0 && o->rv_num > s->rv) {
            if (!ks_admin_park_too_new(s, r, o->rv_num)) {
                struct ks_cause c = {.reason = "ResourceVersionTooLarge",
                                     .message = "Too large resource version"};
                struct ks_details d = {.causes = &c, .ncauses = 1, .retry_after = 1};
                char msg[256];
                snprintf(msg, sizeof(msg),
                         "Timeout: Too large resource version: %llu, current: %llu",
                         (unsigned long long)o->rv_num, (unsigned long long)s->rv);
                ks_reply_status(r, 504, "Timeout", msg, &d, NULL);
            }
            watch_free(w);
            return;
        }
        synthetic = true;
        initial_end = o->bookmarks;
    } else if (!o->rv || strcmp(o->rv, "0") == 0) {
        synthetic = o->send_initial != 0;
    } else {
        if (o->rv_num > s->rv) {
            if (!ks_admin_park_too_new(s, r, o->rv_num)) {
                struct ks_cause c = {.reason = "ResourceVersionTooLarge",
                                     .message = "Too large resource version"};
                struct ks_details d = {.causes = &c, .ncauses = 1, .retry_after = 1};
                char msg[256];
                snprintf(msg, sizeof(msg),
                         "Timeout: Too large resource version: %llu, current: %llu",
                         (unsigned long long)o->rv_num, (unsigned long long)s->rv);
                ks_reply_status(r, 504, "Timeout", msg, &d, NULL);
            }
            watch_free(w);
            return;
        }
        from = o->rv_num;
        too_old = from < rt->window_start_rv;
    }
    w->scratch = evbuffer_new();
    w->deadline_ev = evtimer_new(s->base, on_deadline, w);
    w->bookmark_ev = evtimer_new(s->base, on_bookmark, w);
    if (!w->scratch || !w->deadline_ev || !w->bookmark_ev ||
        (!r->h2 && !(r->req && evhttp_request_get_connection(r->req)))) {
        watch_free(w);
        ks_err_internal(r, "out of memory");
        return;
    }
    /* Start the stream: 200, chunked. */
    r->replied = true;
    r->parked = true;
    r->code = 200;
    ks_req_add_header(r, "Content-Type", "application/json");
    ks_req_add_header(r, "Cache-Control", "no-cache, private");
    ks_req_add_header(r, "Audit-Id", r->audit_id);
    ks_req_start(r, 200, "OK");
    TAILQ_INSERT_TAIL(&rt->watchers, w, rt_link);
    rt->nwatchers++;
    TAILQ_INSERT_TAIL(&s->all_watches, w, all_link);
    ks_req_on_close(r, on_close, w);
    w->starting = true;
    if (r->inject) {
        /* A hostile-response fault: its bytes open the stream, uncapped. */
        ks_req_chunk(r, r->inject);
        evbuffer_free(r->inject);
        r->inject = NULL;
        if (r->inject_end) {
            watch_end(w);
            return;
        }
    }
    if (r->end_watch_now) {
        watch_end(w);
        return;
    }

    long timeout = o->timeout_s;
    if (timeout <= 0) {
        /* kube-apiserver: a random duration in [minRequestTimeout, 2x]. */
        timeout = 1800 + (long)(cx_mono_ns() % 1800);
    }
    w->deadline_ms = cx_mono_ms() + (int64_t)timeout * 1000;
    struct timeval tv = {.tv_sec = timeout, .tv_usec = 0};
    if (r->reset_code && r->reset_after_ms < (int64_t)timeout * 1000) {
        tv.tv_sec = r->reset_after_ms / 1000;
        tv.tv_usec = (r->reset_after_ms % 1000) * 1000;
    }
    event_add(w->deadline_ev, &tv);

    if (too_old) {
        char msg[128];
        snprintf(msg, sizeof(msg), "too old resource version: %llu (%llu)",
                 (unsigned long long)from, (unsigned long long)(rt->window_start_rv + 1));
        send_error_and_end(w, 410, "Expired", msg);
        return;
    }
    if (synthetic) {
        char prefix[320];
        snprintf(prefix, sizeof(prefix), "%s", w->prefix);
        size_t plen = strlen(prefix);
        for (struct ks_obj *ob = ks_index_seek(&rt->idx, prefix);
             ob && strncmp(ob->key, prefix, plen) == 0; ob = ks_index_next(ob)) {
            if (!in_scope(w, ob->key) || !ks_obj_matches(rt, NULL, o, ob->cur))
                continue;
            struct ks_blob *f = ks_form_added_frame(r, ob->cur);
            int rc = send_blob(w, f);
            ks_blob_unref(f);
            if (rc != 0)
                return;
        }
        w->last_rv = s->rv;
        w->start_rv = rt->cache_rv;
        if (initial_end && send_bookmark(w, true) != 0)
            return;
    } else {
        /* Replay the window: events strictly after |from|. */
        w->last_rv = from;
        w->start_rv = from;
        for (size_t i = 0; i < rt->ring_len; i++) {
            struct ks_event *e = rt->ring[(rt->ring_head + i) % rt->ring_cap];
            if (e->rv <= from)
                continue;
            if (deliver(w, e) != 0)
                return;
        }
        if (w->last_rv < from)
            w->last_rv = from;
    }
    schedule_bookmark(w);
    w->starting = false;
    ks_admin_watch_started(s, r);
}

static void send_error_and_end(struct ks_watch *w, int code, const char *reason, const char *msg);

void ks_watch_heal(struct ks_server *s)
{
    struct ks_watch *w, *tmp;
    for (w = TAILQ_FIRST(&s->all_watches); w; w = tmp) {
        tmp = TAILQ_NEXT(w, all_link);
        if (!w->frozen || ks_fault_partitioned(s, w->r->user))
            continue;
        w->frozen = false;
        struct ks_rtype *rt = w->rt;
        if (w->last_rv < rt->window_start_rv) {
            char msg[128];
            snprintf(msg, sizeof(msg), "too old resource version: %llu (%llu)",
                     (unsigned long long)w->last_rv, (unsigned long long)(rt->window_start_rv + 1));
            send_error_and_end(w, 410, "Expired", msg);
            continue;
        }
        for (size_t i = 0; i < rt->ring_len; i++) {
            struct ks_event *e = rt->ring[(rt->ring_head + i) % rt->ring_cap];
            if (e->rv > w->last_rv && deliver(w, e) != 0)
                break;
        }
    }
}

/* Ends watches of |user| on |resource| (NULL: any). */
void ks_watch_end_all(struct ks_server *s, const char *user, const char *resource)
{
    struct ks_watch *w, *tmp;
    for (w = TAILQ_FIRST(&s->all_watches); w; w = tmp) {
        tmp = TAILQ_NEXT(w, all_link);
        if (user && strcmp(w->r->user, user) != 0)
            continue;
        if (resource && strcmp(w->rt->plural, resource) != 0)
            continue;
        watch_end(w);
    }
}

size_t ks_watch_count(struct ks_server *s)
{
    size_t n = 0;
    struct ks_watch *w;
    TAILQ_FOREACH(w, &s->all_watches, all_link) n++;
    return n;
}
