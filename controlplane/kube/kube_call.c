/*
 * Calls: one request and its answer, with retries. An attempt waits for the
 * request limit, goes out through libcurl, and when it ends three separate
 * steps run: what the transfer says (call_outcome), what the policy makes
 * of it (kube_retry_next, kube_error.c: no I/O), and one place that acts on
 * the decision (kube_call_done).
 */
#include "kube_client_internal.h"

#include "cx_json.h"
#include "cx_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int call_start(struct kube_call *call);

static void call_unlink(struct kube_call *call)
{
    struct kube_client *c = call->c;
    if (call->prev)
        call->prev->next = call->next;
    else if (c->calls == call)
        c->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
    call->prev = call->next = NULL;
}

/* The multi handle (and so the connection pool) of |call|'s transfers. */
static CURLM *call_multi(const struct kube_call *call)
{
    return call->presend ? call->c->guarded.m : call->c->shared.m;
}

static void call_drop_easy(struct kube_call *call)
{
    /* Still on its connection here: it ends without its answer. */
    kube_conn_detach(call->c, &call->h, NULL, CURLE_ABORTED_BY_CALLBACK);
    if (call->easy) {
        curl_multi_remove_handle(call_multi(call), call->easy);
        curl_easy_cleanup(call->easy);
        call->easy = NULL;
    }
    curl_slist_free_all(call->hdrs);
    call->hdrs = NULL;
}

void kube_call_free(struct kube_call *call)
{
    call_drop_easy(call);
    if (call->presend_passed && call->presend_end)
        call->presend_end(call->presend_arg);
    kube_client_unqueue(call->c, &call->h);
    call_unlink(call);
    call->c->stats.active_calls--;
    if (call->retry_ev)
        event_free(call->retry_ev);
    cx_buf_free(&call->resp);
    free(call->method);
    free(call->path_query);
    free(call->body);
    free(call->content_type);
    free(call->accept);
    free(call);
}

void kube_call_cancel(struct kube_call *call)
{
    if (call)
        kube_call_free(call);
}

static size_t call_write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct kube_call *call = userdata;
    size_t n = size * nmemb;
    if (cx_buf_append(&call->resp, ptr, n) != 0)
        return 0; /* over the cap: abort the transfer */
    return n;
}

/* Ends the call: frees it, then hands |res| to the callback. */
static void call_finish(struct kube_call *call, struct kube_result *res)
{
    res->attempts = call->attempts;
    res->sent_mono_ns = call->sent_ns;
    if (!res->done_mono_ns)
        res->done_mono_ns = cx_mono_ns();
    kube_result_fn cb = call->cb;
    void *ud = call->user_data;
    kube_call_free(call);
    cb(res, ud);
    cJSON_Delete(res->object);
    res->object = NULL;
}

/* Ends the call with an error made here (no answer to report). */
static void call_fail(struct kube_call *call, enum kube_err_code code, int maybe_applied,
                      const char *msg)
{
    struct kube_result res = {0};
    kube_error_set(&res.err, code, "%s", msg);
    res.err.maybe_applied = maybe_applied;
    call_finish(call, &res);
}

/* CURLOPT_PREREQFUNCTION: the connection is up and the request is about
 * to be written. */
static int call_prereq_cb(void *clientp, char *primary_ip, char *local_ip, int primary_port,
                          int local_port)
{
    struct kube_call *call = clientp;
    (void)primary_ip;
    (void)local_ip;
    (void)primary_port;
    kube_conn_attach(call->c, &call->h, local_port);
    if (call->presend && call->presend(call->presend_arg) != 0) {
        call->presend_refused = 1;
        return CURL_PREREQFUNC_ABORT;
    }
    call->presend_passed |= call->presend != NULL;
    return CURL_PREREQFUNC_OK;
}

/* CURLOPT_READFUNCTION of a guarded call's body: each chunk is handed to
 * libcurl only after the pre-send check said yes once more, right before
 * libcurl writes it. The request line and headers left after
 * call_prereq_cb's check; a refusal here leaves the request without its
 * body: libcurl closes the connection and the server, short of the
 * Content-Length it was promised, applies nothing. */
static size_t call_read_cb(char *buf, size_t size, size_t nitems, void *userdata)
{
    struct kube_call *call = userdata;
    size_t n = size * nitems;
    size_t left = call->body_len - call->body_off;
    if (left == 0)
        return 0;
    if (call->presend && call->presend(call->presend_arg) != 0) {
        call->presend_refused = 1;
        return CURL_READFUNC_ABORT;
    }
    call->presend_passed |= call->presend != NULL;
    if (n > left)
        n = left;
    memcpy(buf, call->body + call->body_off, n);
    call->body_off += n;
    return n;
}

/* CURLOPT_SEEKFUNCTION: libcurl sends a request again from its start (a
 * reused connection found closed before any answer). */
static int call_seek_cb(void *userdata, curl_off_t offset, int origin)
{
    struct kube_call *call = userdata;
    if (origin != SEEK_SET || offset < 0 || (size_t)offset > call->body_len)
        return CURL_SEEKFUNC_CANTSEEK;
    call->body_off = (size_t)offset;
    return CURL_SEEKFUNC_OK;
}

/* A guarded call (one with a pre-send check) does not share the client's
 * multiplexed HTTP/2 connection. There, the frames of a request that
 * passed its check are queued in the connection's session when the
 * socket is full, and any other transfer on the connection may flush them
 * later: after a pause (SIGSTOP, a stalled loop) past the call's deadline,
 * even before libcurl expires the call itself. Over HTTP/1.1 the
 * connection is the call's alone: the request is written in the call
 * chain that ran the check, only this transfer drives its connection, and
 * libcurl checks its timeout before it sends anything more. Guarded calls
 * run on the client's own multi handle for them (call_multi), whose pool
 * holds their HTTP/1.1 connections alone: reused from one guarded call to
 * the next, never lent to a watch or a read (libcurl gives an idle
 * connection to any transfer of the same pool), never an HTTP/2 one. The
 * body goes through call_read_cb. */
static void call_setup_guarded(struct kube_call *call, CURL *e)
{
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 0L);
    if (!call->body || strcmp(call->method, "GET") == 0)
        return;
    call->body_off = 0;
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, call_read_cb);
    curl_easy_setopt(e, CURLOPT_READDATA, call);
    curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, call_seek_cb);
    curl_easy_setopt(e, CURLOPT_SEEKDATA, call);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)call->body_len);
}

/* Builds the attempt's transfer and hands it to libcurl. 0 or -1. */
static int call_transmit(struct kube_call *call)
{
    struct kube_client *c = call->c;
    call_drop_easy(call);
    cx_buf_reset(&call->resp);
    CURL *e = curl_easy_init();
    if (!e)
        return -1;
    call->easy = e;
    if (kube_client_setup_easy(c, e, call->path_query, &call->hdrs,
                               call->body ? call->content_type : NULL, call->accept) != 0)
        return -1;
    curl_easy_setopt(e, CURLOPT_PRIVATE, &call->h);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, call_write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, call);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, call->method);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, call_prereq_cb);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, call);
    call->presend_refused = 0;
    if (strcmp(call->method, "GET") == 0) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, NULL);
    }
    if (call->presend) {
        call_setup_guarded(call, e);
    } else if (call->body && strcmp(call->method, "GET") != 0) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, call->body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)call->body_len);
    }
    int64_t t = call->timeout_ms;
    int64_t now = cx_mono_ns();
    if (call->deadline_ns) {
        int64_t left = (call->deadline_ns - now) / CX_NS_PER_MS;
        if (left < 1)
            left = 1;
        if (left < t)
            t = left;
    }
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)t);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(t < KUBE_CONNECT_TIMEOUT_MS ? t : KUBE_CONNECT_TIMEOUT_MS));
    call->attempts++;
    call->sent_ns = now;
    c->stats.requests++;
    kube_client_sent(c, &call->h);
    if (call->attempts > 1)
        c->stats.retries++;
    if (curl_multi_add_handle(call_multi(call), e) != CURLM_OK)
        return -1;
    return 0;
}

/* The next attempt: now, or when the request limit gives it a turn. */
static int call_start(struct kube_call *call)
{
    if (kube_client_admit(call->c, &call->h) != 0)
        return 0; /* queued: kube_call_send runs it */
    return call_transmit(call);
}

/* Whether the call's time is up: a timer that fired late (the process was
 * paused, the loop stalled) or a long wait for the limit. */
static int past_deadline(const struct kube_call *call)
{
    return kube_call_expired(call, cx_mono_ns());
}

int kube_call_expired(const struct kube_call *call, int64_t now_ns)
{
    return call->deadline_ns && now_ns >= call->deadline_ns;
}

void kube_call_send(struct kube_call *call)
{
    if (past_deadline(call))
        call_fail(call, KUBE_E_TIMEOUT, call->retry_maybe_applied,
                  "deadline passed while waiting for the client-side request limit");
    else if (call_transmit(call) != 0)
        call_fail(call, KUBE_E_TRANSPORT, call->retry_maybe_applied, "cannot start request");
}

static void on_retry_timer(evutil_socket_t fd, short what, void *arg)
{
    struct kube_call *call = arg;
    (void)fd;
    (void)what;
    if (past_deadline(call))
        call_fail(call, KUBE_E_TIMEOUT, call->retry_maybe_applied,
                  "deadline passed before the retry was sent");
    else if (call_start(call) != 0)
        call_fail(call, KUBE_E_TRANSPORT, call->retry_maybe_applied, "cannot start request");
}

/* What the finished transfer says, into |res|: an error, or the decoded
 * body. Decides nothing. */
static void call_outcome(struct kube_call *call, CURLcode code, struct kube_result *res)
{
    struct kube_client *c = call->c;
    long http = 0;
    res->done_mono_ns = cx_mono_ns();
    curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &http);
    res->http_status = (int)http;
    if (code != CURLE_OK && call->presend_refused) {
        /* nothing left: the request was never written */
        kube_error_set(&res->err, KUBE_E_CANCELLED, "refused before send by the caller's check");
        snprintf(res->err.reason, sizeof(res->err.reason), "RefusedBeforeSend");
    } else if (code == CURLE_WRITE_ERROR) {
        kube_transfer_error(&res->err, call->easy, code, call->verb == KUBE_VERB_WRITE);
        int maybe = res->err.maybe_applied;
        kube_error_set(&res->err, KUBE_E_DECODE, "response larger than %zu bytes",
                       call->max_response);
        snprintf(res->err.reason, sizeof(res->err.reason), "%s", KUBE_REASON_TOO_LARGE);
        res->err.maybe_applied = maybe;
    } else if (code != CURLE_OK) {
        kube_transfer_error(&res->err, call->easy, code, call->verb == KUBE_VERB_WRITE);
    } else if (http >= 200 && http < 300) {
        kube_error_clear(&res->err);
        if (call->resp.len > 0) {
            res->object = cx_json_parse(call->resp.data, call->resp.len);
            if (!res->object)
                kube_error_set(&res->err, KUBE_E_DECODE, "response is not JSON (HTTP %ld)", http);
        }
    } else {
        struct curl_header *h = NULL;
        const char *ra = NULL;
        if (curl_easy_header(call->easy, "Retry-After", 0, CURLH_HEADER, -1, &h) == CURLHE_OK)
            ra = h->value;
        kube_error_from_http(&res->err, (int)http, call->resp.data, call->resp.len, ra);
        if (http == 401)
            kube_client_unauthorized(c);
    }
}

/* Arms the retry after |delay_ms|. 0 or -1 (then the call must finish). */
static int call_schedule_retry(struct kube_call *call, int64_t delay_ms, const struct kube_error *e)
{
    call_drop_easy(call);
    call->retry_maybe_applied = e->maybe_applied;
    if (e->code == KUBE_E_UNAUTHORIZED)
        call->auth_retried = 1;
    struct timeval tv = {.tv_sec = delay_ms / 1000, .tv_usec = (delay_ms % 1000) * 1000};
    if (!call->retry_ev)
        call->retry_ev = evtimer_new(call->c->base, on_retry_timer, call);
    return call->retry_ev && evtimer_add(call->retry_ev, &tv) == 0 ? 0 : -1;
}

void kube_call_done(struct kube_call *call, CURLcode code)
{
    struct kube_result res = {0};
    kube_conn_detach(call->c, &call->h, call->easy, code);
    call_outcome(call, code, &res);
    int refused = res.err.code == KUBE_E_CANCELLED;
    if (!refused) /* a refused attempt sent nothing: nothing to count */
        kube_client_report(call->c, &call->h, &res.err);
    struct kube_retry_state st = {
        .verb = call->verb,
        .idempotent = call->idempotent,
        .attempts = call->attempts,
        .max_attempts = call->max_attempts,
        .auth_retry = call->c->cfg.token_file && !call->auth_retried,
        .now_ns = cx_mono_ns(),
        .deadline_ns = call->deadline_ns,
        .max_retry_after_ms = call->c->max_retry_after_ms,
    };
    int64_t delay = kube_retry_next(&res.err, &st, &call->backoff);
    if (delay < 0 || call_schedule_retry(call, delay, &res.err) != 0)
        call_finish(call, &res);
    else
        cJSON_Delete(res.object);
}

struct kube_call *kube_request(struct kube_client *c, const struct kube_raw_req *r,
                               kube_result_fn cb, void *user_data)
{
    if (!c || !r || !r->method || !r->path_query || r->path_query[0] != '/' || !cb)
        return NULL;
    struct kube_call *call = calloc(1, sizeof(*call));
    if (!call)
        return NULL;
    call->h.kind = KUBE_XFER_CALL;
    call->h.quiet = r->opts.quiet;
    kube_reqinfo_parse(&call->h.info, r->method, r->path_query);
    call->c = c;
    call->cb = cb;
    call->user_data = user_data;
    call->verb = r->verb;
    call->idempotent = r->opts.idempotent;
    call->presend = r->opts.presend;
    call->presend_arg = r->opts.presend_arg;
    call->presend_end = r->opts.presend_end;
    call->timeout_ms = r->opts.timeout_ms > 0 ? r->opts.timeout_ms : c->timeout_ms;
    call->max_attempts = r->opts.max_attempts > 0 ? r->opts.max_attempts : c->max_attempts;
    if (r->opts.deadline_ms > 0)
        call->deadline_ns = cx_mono_ns() + r->opts.deadline_ms * CX_NS_PER_MS;
    call->backoff.base_ms = c->backoff_base_ms;
    call->backoff.max_ms = c->backoff_max_ms;
    call->max_response = r->opts.max_response ? r->opts.max_response : c->max_response;
    cx_buf_init(&call->resp, call->max_response);
    call->method = strdup(r->method);
    call->path_query = strdup(r->path_query);
    call->content_type = r->content_type ? strdup(r->content_type) : NULL;
    call->accept = r->opts.accept ? strdup(r->opts.accept) : NULL;
    if (r->body) {
        call->body = malloc(r->body_len + 1);
        if (call->body) {
            memcpy(call->body, r->body, r->body_len);
            call->body[r->body_len] = '\0';
            call->body_len = r->body_len;
        }
    }
    call->next = c->calls;
    if (c->calls)
        c->calls->prev = call;
    c->calls = call;
    c->stats.active_calls++;
    if (!call->method || !call->path_query || (r->content_type && !call->content_type) ||
        (r->opts.accept && !call->accept) || (r->body && !call->body) || call_start(call) != 0) {
        kube_call_free(call);
        return NULL;
    }
    return call;
}
