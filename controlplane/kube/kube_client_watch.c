/*
 * Watches: one long GET whose bytes go from libcurl to the stream parser
 * (kube_watch.c) on a libevent callback, never inside curl, so handlers may
 * start requests or stop watches. A reader too slow for the stream pauses
 * the transfer; a stall timer ends a watch that stopped sending.
 */
#include "kube_client_internal.h"

#include "cx_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WATCH_ERRBODY_MAX ((size_t)64 << 10)
#define WATCH_GRACE_MS    30000

static void watch_unlink(struct kube_watch *w)
{
    struct kube_client *c = w->c;
    if (w->prev)
        w->prev->next = w->next;
    else if (c->watches == w)
        c->watches = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
}

void kube_watch_free(struct kube_watch *w)
{
    kube_conn_detach(w->c, &w->h, w->easy, CURLE_ABORTED_BY_CALLBACK);
    if (w->easy) {
        curl_multi_remove_handle(w->c->shared.m, w->easy);
        curl_easy_cleanup(w->easy);
        w->easy = NULL;
    }
    curl_slist_free_all(w->hdrs);
    kube_client_unqueue(w->c, &w->h);
    watch_unlink(w);
    w->c->stats.active_watches--;
    if (w->deliver_ev)
        event_free(w->deliver_ev);
    if (w->stall_ev)
        event_free(w->stall_ev);
    kube_watch_parser_free(&w->parser);
    cx_buf_free(&w->pending);
    cx_buf_free(&w->errbody);
    free(w->path_query);
    free(w->accept);
    free(w);
}

void kube_watch_stop(struct kube_watch *w)
{
    if (!w)
        return;
    if (w->busy) {
        w->stopped = 1;
        return;
    }
    kube_watch_free(w);
}

/* Ends |w| with |err|: the transfer goes, on_end runs, |w| is freed. */
static void watch_end(struct kube_watch *w, const struct kube_error *err)
{
    struct kube_error e = *err;
    kube_client_report(w->c, &w->h, &e);
    /* Still on its connection (a stall, a decode error): ended by us. */
    kube_conn_detach(w->c, &w->h, w->easy, CURLE_ABORTED_BY_CALLBACK);
    if (w->easy) {
        curl_multi_remove_handle(w->c->shared.m, w->easy);
        curl_easy_cleanup(w->easy);
        w->easy = NULL;
    }
    w->busy = 1; /* on_end must not free it under us */
    if (w->hd.on_end)
        w->hd.on_end(w->user_data, &e);
    w->busy = 0;
    kube_watch_free(w);
}

static int watch_event_cb(void *ud, enum kube_event_type type, cJSON *obj)
{
    struct kube_watch *w = ud;
    if (w->stopped) {
        cJSON_Delete(obj);
        return 1;
    }
    if (type == KUBE_EV_ERROR) {
        kube_error_from_status(&w->end_err, obj);
        cJSON_Delete(obj);
        w->ending = 1;
        return 1;
    }
    w->hd.on_event(w->user_data, type, obj);
    return w->stopped ? 1 : 0;
}

static void arm_stall(struct kube_watch *w)
{
    if (w->stall_ev && w->stall_ms > 0) {
        struct timeval tv = {.tv_sec = w->stall_ms / 1000, .tv_usec = (w->stall_ms % 1000) * 1000};
        evtimer_add(w->stall_ev, &tv);
    }
}

/* The most a watch's buffer of received bytes keeps between bursts. */
#define PENDING_KEEP ((size_t)64 << 10)

/* Parses what curl handed over. Runs from libevent, never inside curl.
 * Returns 1 if |w| is gone. */
static int watch_deliver(struct kube_watch *w)
{
    if (w->pending.len == 0)
        return 0;
    w->busy = 1;
    int rc = kube_watch_parser_feed(&w->parser, w->pending.data, w->pending.len);
    w->busy = 0;
    cx_buf_reset(&w->pending);
    if (w->pending.cap > PENDING_KEEP) {
        /* A burst (a streaming list's initial events) grew it to as much
         * as an event's cap: an idle watch does not keep that. */
        size_t max = w->pending.max;
        cx_buf_free(&w->pending);
        cx_buf_init(&w->pending, max);
    }
    if (w->stopped) {
        kube_watch_free(w);
        return 1;
    }
    if (w->ending) {
        watch_end(w, &w->end_err);
        return 1;
    }
    if (rc != KUBE_WATCH_OK) {
        struct kube_error e;
        kube_error_set(&e, KUBE_E_DECODE, "watch stream: %s", w->parser.error);
        if (rc == KUBE_WATCH_E_TOO_BIG)
            snprintf(e.reason, sizeof(e.reason), "%s", KUBE_REASON_TOO_LARGE);
        watch_end(w, &e);
        return 1;
    }
    if (w->paused && w->easy) {
        w->paused = 0;
        /* May call the write callback at once with the held data. */
        curl_easy_pause(w->easy, CURLPAUSE_CONT);
        if (w->pending.len)
            event_active(w->deliver_ev, 0, 0);
    }
    return 0;
}

static void on_deliver(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    watch_deliver(arg);
}

static void on_stall(evutil_socket_t fd, short what, void *arg)
{
    struct kube_watch *w = arg;
    (void)fd;
    (void)what;
    if (watch_deliver(w))
        return;
    /* Over HTTP/2 with the connection check on, silence is not a stall: a
     * real API server sends a quiet resource's watchers nothing (no
     * bookmark until the resource moves) until timeoutSeconds ends the
     * watch. A dead connection is found by the check (kube_conn.c), which
     * ends every watch on it, and a stream stalled on a live connection by
     * the transfer's timeout (timeoutSeconds + WATCH_GRACE_MS). */
    long v = 0;
    if (!w->stall_any_protocol && w->c->read_idle_ns > 0 && w->easy &&
        curl_easy_getinfo(w->easy, CURLINFO_HTTP_VERSION, &v) == CURLE_OK &&
        v >= CURL_HTTP_VERSION_2_0) {
        arm_stall(w);
        return;
    }
    struct kube_error e;
    kube_error_set(&e, KUBE_E_TIMEOUT, "watch stalled: no data for %lld ms",
                   (long long)w->stall_ms);
    watch_end(w, &e);
}

static size_t watch_write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct kube_watch *w = userdata;
    size_t n = size * nmemb;
    long http = 0;
    curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &http);
    arm_stall(w);
    if (http != 200) {
        size_t room = w->errbody.max - w->errbody.len;
        if (cx_buf_append(&w->errbody, ptr, n < room ? n : room) != 0)
            return 0;
        return n;
    }
    if (w->pending.len + n > w->pending_max && w->pending.len > 0) {
        w->paused = 1;
        event_active(w->deliver_ev, 0, 0);
        return CURL_WRITEFUNC_PAUSE;
    }
    if (cx_buf_append(&w->pending, ptr, n) != 0)
        return 0;
    event_active(w->deliver_ev, 0, 0);
    return n;
}

void kube_watch_done(struct kube_watch *w, CURLcode code)
{
    if (watch_deliver(w))
        return;
    struct kube_error e;
    long http = 0;
    kube_conn_detach(w->c, &w->h, w->easy, code);
    curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &http);
    if (http != 0 && http != 200) {
        struct curl_header *h = NULL;
        const char *ra = NULL;
        if (curl_easy_header(w->easy, "Retry-After", 0, CURLH_HEADER, -1, &h) == CURLHE_OK)
            ra = h->value;
        kube_error_from_http(&e, (int)http, w->errbody.data, w->errbody.len, ra);
        if (http == 401)
            kube_client_unauthorized(w->c);
    } else if (code != CURLE_OK) {
        kube_transfer_error(&e, w->easy, code, 0);
    } else if (kube_watch_parser_finish(&w->parser) == KUBE_WATCH_OK) {
        kube_error_clear(&e);
    } else {
        kube_error_set(&e, KUBE_E_DECODE, "watch stream: %s", w->parser.error);
    }
    if (w->ending) /* an ERROR event in the final bytes */
        e = w->end_err;
    watch_end(w, &e);
}

/* CURLOPT_PREREQFUNCTION: the connection it runs on. */
static int watch_prereq_cb(void *clientp, char *primary_ip, char *local_ip, int primary_port,
                           int local_port)
{
    struct kube_watch *w = clientp;
    (void)primary_ip;
    (void)local_ip;
    (void)primary_port;
    kube_conn_attach(w->c, &w->h, local_port);
    return CURL_PREREQFUNC_OK;
}

/* Builds the transfer and hands it to libcurl. 0 or -1. */
static int watch_transmit(struct kube_watch *w)
{
    struct kube_client *c = w->c;
    w->easy = curl_easy_init();
    if (!w->easy ||
        kube_client_setup_easy(c, w->easy, w->path_query, &w->hdrs, NULL, w->accept) != 0)
        return -1;
    curl_easy_setopt(w->easy, CURLOPT_PRIVATE, &w->h);
    curl_easy_setopt(w->easy, CURLOPT_WRITEFUNCTION, watch_write_cb);
    curl_easy_setopt(w->easy, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(w->easy, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(w->easy, CURLOPT_PREREQFUNCTION, watch_prereq_cb);
    curl_easy_setopt(w->easy, CURLOPT_PREREQDATA, w);
    curl_easy_setopt(w->easy, CURLOPT_CONNECTTIMEOUT_MS, (long)KUBE_CONNECT_TIMEOUT_MS);
    if (w->timeout_seconds > 0)
        curl_easy_setopt(w->easy, CURLOPT_TIMEOUT_MS,
                         (long)w->timeout_seconds * 1000L + WATCH_GRACE_MS);
    c->stats.requests++;
    c->stats.watches++;
    kube_client_sent(c, &w->h);
    if (curl_multi_add_handle(c->shared.m, w->easy) != CURLM_OK)
        return -1;
    arm_stall(w);
    return 0;
}

void kube_watch_send(struct kube_watch *w)
{
    if (watch_transmit(w) != 0) {
        struct kube_error e;
        kube_error_set(&e, KUBE_E_TRANSPORT, "cannot start the watch request");
        watch_end(w, &e);
    }
}

struct kube_watch *kube_watch_start(struct kube_client *c, const struct kube_resource *res,
                                    const char *ns, const struct kube_watch_opts *o,
                                    const struct kube_watch_handlers *h, void *user_data)
{
    static const struct kube_watch_opts none = {0};
    if (!o)
        o = &none;
    if (!c || !h || !h->on_event || !h->on_end)
        return NULL;
    struct kube_watch *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->h.kind = KUBE_XFER_WATCH;
    w->h.quiet = o->quiet;
    w->c = c;
    w->hd = *h;
    w->user_data = user_data;
    w->stall_ms = o->stall_ms;
    w->stall_any_protocol = o->stall_any_protocol;
    w->timeout_seconds = o->timeout_seconds;
    w->accept = o->accept ? strdup(o->accept) : NULL;
    kube_watch_parser_init(&w->parser, o->max_event, watch_event_cb, w);
    w->pending_max = w->parser.max_event + 2;
    cx_buf_init(&w->pending, w->pending_max + CURL_MAX_WRITE_SIZE);
    cx_buf_init(&w->errbody, WATCH_ERRBODY_MAX);
    w->next = c->watches;
    if (c->watches)
        c->watches->prev = w;
    c->watches = w;
    c->stats.active_watches++;

    struct cx_buf p;
    cx_buf_init(&p, KUBE_URL_MAX);
    int first = 0;
    int rc = kube_path(&p, res, ns, NULL, NULL);
    rc |= cx_buf_puts(&p, "?watch=1");
    rc |= kube_query_add(&p, &first, "labelSelector", o->label_selector);
    rc |= kube_query_add(&p, &first, "fieldSelector", o->field_selector);
    rc |= kube_query_add(&p, &first, "resourceVersion", o->resource_version);
    if (o->allow_bookmarks)
        rc |= cx_buf_puts(&p, "&allowWatchBookmarks=true");
    if (o->send_initial_events)
        rc |= cx_buf_puts(&p, "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan");
    if (o->timeout_seconds > 0)
        rc |= cx_buf_printf(&p, "&timeoutSeconds=%d", o->timeout_seconds);
    w->deliver_ev = event_new(c->base, -1, 0, on_deliver, w);
    w->stall_ev = evtimer_new(c->base, on_stall, w);
    w->path_query = rc == 0 ? cx_buf_steal(&p, NULL) : NULL;
    cx_buf_free(&p);
    if (!w->path_query || !w->deliver_ev || !w->stall_ev || (o->accept && !w->accept))
        goto fail;
    kube_reqinfo_parse(&w->h.info, "GET", w->path_query);
    if (kube_client_admit(c, &w->h) == 0 && watch_transmit(w) != 0)
        goto fail;
    return w;
fail:
    kube_watch_free(w);
    return NULL;
}
