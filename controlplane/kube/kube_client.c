#include "kube_client.h"

#include "cx_buf.h"
#include "cx_json.h"
#include "cx_time.h"
#include "kube_watch.h"
#include "cx_version.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define URL_MAX            ((size_t)16 << 10)
#define WATCH_ERRBODY_MAX  ((size_t)64 << 10)
#define CONNECT_TIMEOUT_MS 10000
#define WATCH_GRACE_MS     30000

enum xfer_kind {
    XFER_CALL = 1,
    XFER_WATCH = 2,
};

/* First member of calls and watches: what CURLOPT_PRIVATE points at. */
struct xfer_hdr {
    enum xfer_kind kind;
};

struct sockinfo {
    struct event *ev;
    struct kube_client *c;
};

struct kube_call {
    struct xfer_hdr h;
    struct kube_client *c;
    struct kube_call *prev, *next;
    char *method;
    char *path_query;
    char *body;
    size_t body_len;
    char *content_type;
    enum kube_verb_class verb;
    int idempotent;
    int64_t timeout_ms;
    int64_t deadline_ns; /* 0: none */
    int max_attempts;
    int attempts;
    int auth_retried;
    struct kube_backoff backoff;
    CURL *easy;
    struct curl_slist *hdrs;
    struct cx_buf resp;
    struct event *retry_ev;
    int64_t sent_ns;
    int (*presend)(void *arg);
    void *presend_arg;
    int presend_refused;     /* the pre-send check aborted the last attempt */
    int retry_maybe_applied; /* the attempt a pending retry follows may have applied */
    kube_result_fn cb;
    void *user_data;
};

struct kube_watch {
    struct xfer_hdr h;
    struct kube_client *c;
    struct kube_watch *prev, *next;
    CURL *easy;
    struct curl_slist *hdrs;
    struct kube_watch_parser parser;
    struct cx_buf pending; /* bytes from curl not parsed yet */
    struct cx_buf errbody; /* body of a non-200 answer */
    size_t pending_max;
    struct event *deliver_ev;
    struct event *stall_ev;
    int64_t stall_ms;
    int paused;
    int busy;    /* inside deliver (user callbacks may run) */
    int stopped; /* kube_watch_stop was called while busy */
    int ending;  /* an ERROR event ended it; end_err holds the Status */
    struct kube_error end_err;
    struct kube_watch_handlers hd;
    void *user_data;
};

struct kube_client {
    struct event_base *base;
    CURLM *multi;
    struct event *timer;
    struct kube_config cfg;
    char *user_agent;
    int64_t timeout_ms;
    int max_attempts;
    int64_t max_retry_after_ms;
    int64_t token_reread_ns;
    int64_t backoff_base_ms, backoff_max_ms;
    size_t max_response;
    char *token;           /* current bearer token */
    int64_t token_read_ns; /* when the token file was last read */
    int token_stale;       /* re-read before the next request */
    struct kube_call *calls;
    struct kube_watch *watches;
    struct kube_client_stats stats;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_init_rc;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

/* ---- libcurl <-> libevent --------------------------------------------- */

static void check_multi_info(struct kube_client *c);

static void on_socket_event(evutil_socket_t fd, short what, void *arg)
{
    struct kube_client *c = arg;
    int action =
        ((what & EV_READ) ? CURL_CSELECT_IN : 0) | ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    int running = 0;
    curl_multi_socket_action(c->multi, fd, action, &running);
    check_multi_info(c);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct kube_client *c = arg;
    (void)fd;
    (void)what;
    int running = 0;
    curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_multi_info(c);
}

static int curl_socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    struct kube_client *c = userp;
    struct sockinfo *si = socketp;
    (void)e;
    if (what == CURL_POLL_REMOVE) {
        if (si) {
            event_free(si->ev);
            si->ev = NULL;
            free(si);
            curl_multi_assign(c->multi, s, NULL);
        }
        return 0;
    }
    if (!si) {
        si = calloc(1, sizeof(*si));
        if (!si)
            return -1;
        si->c = c;
        curl_multi_assign(c->multi, s, si);
    } else if (si->ev) {
        event_free(si->ev);
        si->ev = NULL;
    }
    short kind = (short)(((what & CURL_POLL_IN) ? EV_READ : 0) |
                         ((what & CURL_POLL_OUT) ? EV_WRITE : 0) | EV_PERSIST);
    si->ev = event_new(c->base, s, kind, on_socket_event, c);
    if (!si->ev || event_add(si->ev, NULL) != 0)
        return -1;
    return 0;
}

static int curl_timer_cb(CURLM *m, long timeout_ms, void *userp)
{
    struct kube_client *c = userp;
    (void)m;
    if (timeout_ms < 0) {
        evtimer_del(c->timer);
        return 0;
    }
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    evtimer_add(c->timer, &tv);
    return 0;
}

/* ---- client ------------------------------------------------------------- */

static int64_t def_i64(int64_t v, int64_t d)
{
    return v > 0 ? v : d;
}

struct kube_client *kube_client_new(struct event_base *base, const struct kube_config *cfg,
                                    const struct kube_client_opts *opts, char *err, size_t errlen)
{
    static const struct kube_client_opts none = {0};
    if (!opts)
        opts = &none;
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != 0) {
        snprintf(err, errlen, "curl_global_init failed");
        return NULL;
    }
    if (!cfg || !cfg->server) {
        snprintf(err, errlen, "no API server in the config");
        return NULL;
    }
    struct kube_client *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->base = base;
    if (kube_config_copy(&c->cfg, cfg) != 0) {
        free(c);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->timeout_ms = def_i64(opts->timeout_ms, 30000);
    c->max_attempts = opts->max_attempts > 0 ? opts->max_attempts : 5;
    c->max_retry_after_ms = def_i64(opts->max_retry_after_ms, 30000);
    c->token_reread_ns = def_i64(opts->token_reread_ms, 60000) * CX_NS_PER_MS;
    c->backoff_base_ms = def_i64(opts->backoff_base_ms, 200);
    c->backoff_max_ms = def_i64(opts->backoff_max_ms, 5000);
    c->max_response = opts->max_response ? opts->max_response : ((size_t)256 << 20);

    struct cx_buf ua;
    cx_buf_init(&ua, 1024);
    int rc = cx_buf_printf(&ua, "%s/%s (linux)", opts->component ? opts->component : "coxswain",
                           COXSWAIN_VERSION);
    if (opts->identity && *opts->identity)
        rc |= cx_buf_printf(&ua, " replica/%s", opts->identity);
    c->user_agent = rc == 0 ? cx_buf_steal(&ua, NULL) : NULL;
    cx_buf_free(&ua);

    if (c->cfg.token_file) {
        c->token = kube_config_read_token(c->cfg.token_file);
        c->token_read_ns = cx_mono_ns();
        c->stats.token_reads++;
        if (!c->token) {
            snprintf(err, errlen, "cannot read token file %s", c->cfg.token_file);
            goto fail;
        }
    } else if (c->cfg.token) {
        c->token = strdup(c->cfg.token);
    }
    c->multi = curl_multi_init();
    c->timer = evtimer_new(base, on_timer, c);
    if (!c->user_agent || !c->multi || !c->timer || (c->cfg.token && !c->token)) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, curl_socket_cb);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    return c;
fail:
    kube_client_free(c);
    return NULL;
}

static void call_free(struct kube_call *call);
static void watch_free(struct kube_watch *w);

void kube_client_free(struct kube_client *c)
{
    if (!c)
        return;
    while (c->calls)
        call_free(c->calls);
    while (c->watches)
        watch_free(c->watches);
    if (c->multi)
        curl_multi_cleanup(c->multi);
    if (c->timer)
        event_free(c->timer);
    kube_config_free(&c->cfg);
    free(c->user_agent);
    free(c->token);
    free(c);
}

struct event_base *kube_client_base(const struct kube_client *c)
{
    return c->base;
}

const char *kube_client_user_agent(const struct kube_client *c)
{
    return c->user_agent;
}

void kube_client_stats(const struct kube_client *c, struct kube_client_stats *out)
{
    *out = c->stats;
}

/* Re-reads the token file when it is due (or after a 401). A failed read
 * keeps the previous token: a rotation in progress may leave the file
 * briefly empty. */
static void refresh_token(struct kube_client *c)
{
    if (!c->cfg.token_file)
        return;
    int64_t now = cx_mono_ns();
    if (!c->token_stale && now - c->token_read_ns < c->token_reread_ns)
        return;
    char *t = kube_config_read_token(c->cfg.token_file);
    c->stats.token_reads++;
    c->token_read_ns = now;
    c->token_stale = 0;
    if (t) {
        free(c->token);
        c->token = t;
    }
}

/* Sets what every easy handle of this client needs. */
static int setup_easy(struct kube_client *c, CURL *e, const char *path_query,
                      struct curl_slist **hdrs, const char *content_type)
{
    struct cx_buf url;
    cx_buf_init(&url, URL_MAX);
    int rc = cx_buf_puts(&url, c->cfg.server);
    rc |= cx_buf_puts(&url, path_query);
    if (rc != 0) {
        cx_buf_free(&url);
        return -1;
    }
    curl_easy_setopt(e, CURLOPT_URL, url.data);
    cx_buf_free(&url);
    curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->cfg.insecure_skip_tls_verify) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    } else {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    }
    if (c->cfg.ca_data) {
        struct curl_blob blob = {
            .data = c->cfg.ca_data, .len = c->cfg.ca_data_len, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
    } else if (c->cfg.ca_file) {
        curl_easy_setopt(e, CURLOPT_CAINFO, c->cfg.ca_file);
    }
    if (c->cfg.client_cert_data) {
        struct curl_blob blob = {.data = c->cfg.client_cert_data,
                                 .len = c->cfg.client_cert_data_len,
                                 .flags = CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &blob);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (c->cfg.client_cert_file) {
        curl_easy_setopt(e, CURLOPT_SSLCERT, c->cfg.client_cert_file);
    }
    if (c->cfg.client_key_data) {
        struct curl_blob blob = {.data = c->cfg.client_key_data,
                                 .len = c->cfg.client_key_data_len,
                                 .flags = CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &blob);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (c->cfg.client_key_file) {
        curl_easy_setopt(e, CURLOPT_SSLKEY, c->cfg.client_key_file);
    }

    struct curl_slist *h = NULL, *t;
    h = curl_slist_append(h, "Accept: application/json");
    /* No "Expect: 100-continue" round trip on large bodies. */
    if (h && (t = curl_slist_append(h, "Expect:")))
        h = t;
    if (h && content_type) {
        char ct[128];
        snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
        if ((t = curl_slist_append(h, ct)))
            h = t;
    }
    refresh_token(c);
    if (h && c->token) {
        struct cx_buf auth;
        cx_buf_init(&auth, KUBE_TOKEN_FILE_MAX + 64);
        if (cx_buf_printf(&auth, "Authorization: Bearer %s", c->token) == 0 &&
            (t = curl_slist_append(h, auth.data)))
            h = t;
        cx_buf_free(&auth);
    }
    if (!h)
        return -1;
    *hdrs = h;
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    return 0;
}

/* ---- calls ---------------------------------------------------------------- */

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

static void call_drop_easy(struct kube_call *call)
{
    if (call->easy) {
        curl_multi_remove_handle(call->c->multi, call->easy);
        curl_easy_cleanup(call->easy);
        call->easy = NULL;
    }
    curl_slist_free_all(call->hdrs);
    call->hdrs = NULL;
}

static void call_free(struct kube_call *call)
{
    call_drop_easy(call);
    call_unlink(call);
    call->c->stats.active_calls--;
    if (call->retry_ev)
        event_free(call->retry_ev);
    cx_buf_free(&call->resp);
    free(call->method);
    free(call->path_query);
    free(call->body);
    free(call->content_type);
    free(call);
}

void kube_call_cancel(struct kube_call *call)
{
    if (call)
        call_free(call);
}

static size_t call_write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct kube_call *call = userdata;
    size_t n = size * nmemb;
    if (cx_buf_append(&call->resp, ptr, n) != 0)
        return 0; /* over the cap: abort the transfer */
    return n;
}

static void call_finish(struct kube_call *call, struct kube_result *res)
{
    res->attempts = call->attempts;
    res->sent_mono_ns = call->sent_ns;
    if (!res->done_mono_ns)
        res->done_mono_ns = cx_mono_ns();
    kube_result_fn cb = call->cb;
    void *ud = call->user_data;
    call_free(call);
    cb(res, ud);
    cJSON_Delete(res->object);
    res->object = NULL;
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
    (void)local_port;
    if (call->presend && call->presend(call->presend_arg) != 0) {
        call->presend_refused = 1;
        return CURL_PREREQFUNC_ABORT;
    }
    return CURL_PREREQFUNC_OK;
}

static int call_attempt(struct kube_call *call)
{
    struct kube_client *c = call->c;
    call_drop_easy(call);
    cx_buf_reset(&call->resp);
    CURL *e = curl_easy_init();
    if (!e)
        return -1;
    call->easy = e;
    if (setup_easy(c, e, call->path_query, &call->hdrs, call->body ? call->content_type : NULL) !=
        0)
        return -1;
    curl_easy_setopt(e, CURLOPT_PRIVATE, &call->h);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, call_write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, call);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, call->method);
    if (call->presend) {
        curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, call_prereq_cb);
        curl_easy_setopt(e, CURLOPT_PREREQDATA, call);
    }
    call->presend_refused = 0;
    if (strcmp(call->method, "GET") == 0) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, NULL);
    } else if (call->body) {
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
                     (long)(t < CONNECT_TIMEOUT_MS ? t : CONNECT_TIMEOUT_MS));
    call->attempts++;
    call->sent_ns = now;
    c->stats.requests++;
    if (call->attempts > 1)
        c->stats.retries++;
    if (curl_multi_add_handle(c->multi, e) != CURLM_OK)
        return -1;
    return 0;
}

static void on_retry_timer(evutil_socket_t fd, short what, void *arg)
{
    struct kube_call *call = arg;
    (void)fd;
    (void)what;
    if (call->deadline_ns && cx_mono_ns() >= call->deadline_ns) {
        /* The timer fired late (the process was paused, the loop stalled):
         * the call's time is up, so the retry is not sent at all. */
        struct kube_result res = {0};
        kube_error_set(&res.err, KUBE_E_TIMEOUT, "deadline passed before the retry was sent");
        res.err.maybe_applied = call->retry_maybe_applied;
        call_finish(call, &res);
        return;
    }
    if (call_attempt(call) != 0) {
        struct kube_result res = {0};
        kube_error_set(&res.err, KUBE_E_TRANSPORT, "cannot start request");
        call_finish(call, &res);
    }
}

/* Turns a finished transfer into an error or success. */
static void transfer_error(struct kube_error *e, CURL *easy, CURLcode code, int is_write)
{
    enum kube_err_code k = code == CURLE_OPERATION_TIMEDOUT ? KUBE_E_TIMEOUT : KUBE_E_TRANSPORT;
    kube_error_set(e, k, "%s", curl_easy_strerror(code));
    /* Did the request leave? Failing to resolve or connect means not. */
    curl_off_t pretransfer = 0;
    curl_easy_getinfo(easy, CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
    int not_sent = code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
                   code == CURLE_COULDNT_RESOLVE_PROXY || pretransfer == 0;
    e->maybe_applied = is_write && !not_sent;
}

static void call_done(struct kube_call *call, CURLcode code)
{
    struct kube_client *c = call->c;
    struct kube_result res = {0};
    res.done_mono_ns = cx_mono_ns();
    long http = 0;
    curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &http);
    res.http_status = (int)http;
    if (code != CURLE_OK && call->presend_refused) {
        /* nothing left: the request was never written */
        kube_error_set(&res.err, KUBE_E_CANCELLED, "refused before send by the caller's check");
        snprintf(res.err.reason, sizeof(res.err.reason), "RefusedBeforeSend");
        res.err.maybe_applied = 0;
        call_finish(call, &res);
        return;
    }
    if (code != CURLE_OK) {
        transfer_error(&res.err, call->easy, code, call->verb == KUBE_VERB_WRITE);
        if (code == CURLE_WRITE_ERROR)
            kube_error_set(&res.err, KUBE_E_DECODE, "response larger than %zu bytes",
                           c->max_response);
    } else if (http >= 200 && http < 300) {
        kube_error_clear(&res.err);
        if (call->resp.len > 0) {
            res.object = cx_json_parse(call->resp.data, call->resp.len);
            if (!res.object)
                kube_error_set(&res.err, KUBE_E_DECODE, "response is not JSON (HTTP %ld)", http);
        }
    } else {
        struct curl_header *h = NULL;
        const char *ra = NULL;
        if (curl_easy_header(call->easy, "Retry-After", 0, CURLH_HEADER, -1, &h) == CURLHE_OK)
            ra = h->value;
        kube_error_from_http(&res.err, (int)http, call->resp.data, call->resp.len, ra);
        if (http == 401) {
            c->stats.unauthorized++;
            c->token_stale = 1;
        }
    }
    if (res.err.code == KUBE_OK || res.err.code == KUBE_E_DECODE) {
        call_finish(call, &res);
        return;
    }
    /* A 401 with a token file: the token may just have rotated. */
    int64_t delay = -1;
    if (res.err.code == KUBE_E_UNAUTHORIZED && c->cfg.token_file && !call->auth_retried) {
        call->auth_retried = 1;
        delay = 0;
    } else if (call->attempts < call->max_attempts &&
               kube_retry_decide(&res.err, call->verb, call->idempotent, &call->backoff,
                                 c->max_retry_after_ms, &delay)) {
        if (call->deadline_ns && cx_mono_ns() + delay * CX_NS_PER_MS >= call->deadline_ns)
            delay = -1; /* no time left for another try */
    } else {
        delay = -1;
    }
    if (delay < 0) {
        call_finish(call, &res);
        return;
    }
    call_drop_easy(call);
    call->retry_maybe_applied = res.err.maybe_applied;
    struct timeval tv = {.tv_sec = delay / 1000, .tv_usec = (delay % 1000) * 1000};
    if (!call->retry_ev)
        call->retry_ev = evtimer_new(c->base, on_retry_timer, call);
    if (!call->retry_ev || evtimer_add(call->retry_ev, &tv) != 0) {
        call_finish(call, &res);
        return;
    }
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
    call->h.kind = XFER_CALL;
    call->c = c;
    call->cb = cb;
    call->user_data = user_data;
    call->verb = r->verb;
    call->idempotent = r->opts.idempotent;
    call->presend = r->opts.presend;
    call->presend_arg = r->opts.presend_arg;
    call->timeout_ms = def_i64(r->opts.timeout_ms, c->timeout_ms);
    call->max_attempts = r->opts.max_attempts > 0 ? r->opts.max_attempts : c->max_attempts;
    if (r->opts.deadline_ms > 0)
        call->deadline_ns = cx_mono_ns() + r->opts.deadline_ms * CX_NS_PER_MS;
    call->backoff.base_ms = c->backoff_base_ms;
    call->backoff.max_ms = c->backoff_max_ms;
    cx_buf_init(&call->resp, c->max_response);
    call->method = strdup(r->method);
    call->path_query = strdup(r->path_query);
    call->content_type = r->content_type ? strdup(r->content_type) : NULL;
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
        (r->body && !call->body) || call_attempt(call) != 0) {
        call_free(call);
        return NULL;
    }
    return call;
}

/* ---- paths and typed requests ------------------------------------------- */

static int append_escaped(struct cx_buf *b, const char *s)
{
    char *e = curl_easy_escape(NULL, s, 0);
    if (!e)
        return -1;
    int rc = cx_buf_puts(b, e);
    curl_free(e);
    return rc;
}

int kube_path(struct cx_buf *b, const struct kube_resource *res, const char *ns, const char *name,
              const char *subresource)
{
    int rc;
    if (!res->group || !*res->group)
        rc = cx_buf_printf(b, "/api/%s", res->version);
    else
        rc = cx_buf_printf(b, "/apis/%s/%s", res->group, res->version);
    if (res->namespaced && ns && *ns) {
        rc |= cx_buf_puts(b, "/namespaces/");
        rc |= append_escaped(b, ns);
    }
    rc |= cx_buf_printf(b, "/%s", res->plural);
    if (name) {
        rc |= cx_buf_puts(b, "/");
        rc |= append_escaped(b, name);
    }
    if (subresource)
        rc |= cx_buf_printf(b, "/%s", subresource);
    return rc ? -1 : 0;
}

/* Appends "?k=v" or "&k=v" with |v| escaped; skips NULL/empty values. */
static int add_query(struct cx_buf *b, int *first, const char *k, const char *v)
{
    if (!v || !*v)
        return 0;
    int rc = cx_buf_printf(b, "%c%s=", *first ? '?' : '&', k);
    *first = 0;
    rc |= append_escaped(b, v);
    return rc;
}

static struct kube_call *simple(struct kube_client *c, const char *method, struct cx_buf *path,
                                const char *body, size_t body_len, const char *ctype,
                                enum kube_verb_class verb, int idempotent,
                                const struct kube_req_opts *opts, kube_result_fn cb, void *ud)
{
    struct kube_raw_req r = {
        .method = method,
        .path_query = path->data,
        .body = body,
        .body_len = body_len,
        .content_type = ctype,
        .verb = verb,
    };
    if (opts)
        r.opts = *opts;
    if (idempotent)
        r.opts.idempotent = 1;
    return kube_request(c, &r, cb, ud);
}

static int needs_ns(const struct kube_resource *res, const char *ns)
{
    return res->namespaced && (!ns || !*ns);
}

struct kube_call *kube_get(struct kube_client *c, const struct kube_resource *res, const char *ns,
                           const char *name, const struct kube_req_opts *opts, kube_result_fn cb,
                           void *user_data)
{
    if (!name || !*name || needs_ns(res, ns))
        return NULL;
    struct cx_buf p;
    cx_buf_init(&p, URL_MAX);
    struct kube_call *call = NULL;
    if (kube_path(&p, res, ns, name, NULL) == 0)
        call = simple(c, "GET", &p, NULL, 0, NULL, KUBE_VERB_READ, 0, opts, cb, user_data);
    cx_buf_free(&p);
    return call;
}

struct kube_call *kube_list(struct kube_client *c, const struct kube_resource *res, const char *ns,
                            const struct kube_list_opts *lo, const struct kube_req_opts *opts,
                            kube_result_fn cb, void *user_data)
{
    static const struct kube_list_opts none = {0};
    if (!lo)
        lo = &none;
    struct cx_buf p;
    cx_buf_init(&p, URL_MAX);
    struct kube_call *call = NULL;
    int first = 1;
    int rc = kube_path(&p, res, ns, NULL, NULL);
    rc |= add_query(&p, &first, "labelSelector", lo->label_selector);
    rc |= add_query(&p, &first, "fieldSelector", lo->field_selector);
    if (lo->limit > 0) {
        char lim[32];
        snprintf(lim, sizeof(lim), "%ld", lo->limit);
        rc |= add_query(&p, &first, "limit", lim);
    }
    rc |= add_query(&p, &first, "continue", lo->continue_token);
    /* RV together with continue is a 400: the token pins the RV. */
    if (!lo->continue_token || !*lo->continue_token) {
        rc |= add_query(&p, &first, "resourceVersion", lo->resource_version);
        if (lo->resource_version && *lo->resource_version)
            rc |= add_query(&p, &first, "resourceVersionMatch", lo->resource_version_match);
    }
    if (rc == 0)
        call = simple(c, "GET", &p, NULL, 0, NULL, KUBE_VERB_READ, 0, opts, cb, user_data);
    cx_buf_free(&p);
    return call;
}

static char *print_obj(const cJSON *obj)
{
    return obj ? cJSON_PrintUnformatted(obj) : NULL;
}

struct kube_call *kube_create(struct kube_client *c, const struct kube_resource *res,
                              const char *ns, const cJSON *obj, const struct kube_req_opts *opts,
                              kube_result_fn cb, void *user_data)
{
    if (needs_ns(res, ns))
        return NULL;
    char *body = print_obj(obj);
    if (!body)
        return NULL;
    struct cx_buf p;
    cx_buf_init(&p, URL_MAX);
    struct kube_call *call = NULL;
    if (kube_path(&p, res, ns, NULL, NULL) == 0)
        call = simple(c, "POST", &p, body, strlen(body), "application/json", KUBE_VERB_WRITE, 0,
                      opts, cb, user_data);
    cx_buf_free(&p);
    free(body);
    return call;
}

struct kube_call *kube_update(struct kube_client *c, const struct kube_resource *res,
                              const char *ns, const cJSON *obj, int status,
                              const struct kube_req_opts *opts, kube_result_fn cb, void *user_data)
{
    const char *name = cx_json_path_str(obj, "metadata", "name", NULL);
    if (!name || !*name || needs_ns(res, ns))
        return NULL;
    const char *rv = cx_json_path_str(obj, "metadata", "resourceVersion", NULL);
    char *body = print_obj(obj);
    if (!body)
        return NULL;
    struct cx_buf p;
    cx_buf_init(&p, URL_MAX);
    struct kube_call *call = NULL;
    if (kube_path(&p, res, ns, name, status ? "status" : NULL) == 0)
        call = simple(c, "PUT", &p, body, strlen(body), "application/json", KUBE_VERB_WRITE,
                      rv && *rv, opts, cb, user_data);
    cx_buf_free(&p);
    free(body);
    return call;
}

/* True if a patch pins the resourceVersion, so that repeating it after an
 * unknown outcome cannot apply it twice. */
static int patch_pins_rv(enum kube_patch_type type, const char *patch)
{
    cJSON *p = cx_json_parse(patch, strlen(patch));
    int pinned = 0;
    if (type == KUBE_PATCH_JSON && cJSON_IsArray(p)) {
        const cJSON *op;
        cJSON_ArrayForEach(op, p)
        {
            const char *o = cx_json_str(op, "op");
            const char *path = cx_json_str(op, "path");
            if (o && path && strcmp(o, "test") == 0 &&
                strcmp(path, "/metadata/resourceVersion") == 0)
                pinned = 1;
        }
    } else if (cJSON_IsObject(p)) {
        const char *rv = cx_json_path_str(p, "metadata", "resourceVersion", NULL);
        pinned = rv && *rv;
    }
    cJSON_Delete(p);
    return pinned;
}

struct kube_call *kube_patch(struct kube_client *c, const struct kube_resource *res, const char *ns,
                             const char *name, enum kube_patch_type type, const char *patch,
                             int status, const struct kube_req_opts *opts, kube_result_fn cb,
                             void *user_data)
{
    static const char *const ctypes[] = {"application/merge-patch+json",
                                         "application/json-patch+json",
                                         "application/strategic-merge-patch+json"};
    if (!name || !*name || !patch || needs_ns(res, ns) || (unsigned)type > KUBE_PATCH_STRATEGIC)
        return NULL;
    struct cx_buf p;
    cx_buf_init(&p, URL_MAX);
    struct kube_call *call = NULL;
    if (kube_path(&p, res, ns, name, status ? "status" : NULL) == 0)
        call = simple(c, "PATCH", &p, patch, strlen(patch), ctypes[type], KUBE_VERB_WRITE,
                      patch_pins_rv(type, patch), opts, cb, user_data);
    cx_buf_free(&p);
    return call;
}

struct kube_call *kube_delete(struct kube_client *c, const struct kube_resource *res,
                              const char *ns, const char *name, const char *uid, const char *rv,
                              const struct kube_req_opts *opts, kube_result_fn cb, void *user_data)
{
    if (!name || !*name || needs_ns(res, ns))
        return NULL;
    struct cx_buf body;
    cx_buf_init(&body, 4096);
    int rc = cx_buf_puts(&body, "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\"");
    int pre = (uid && *uid) || (rv && *rv);
    if (pre) {
        rc |= cx_buf_puts(&body, ",\"preconditions\":{");
        if (uid && *uid) {
            rc |= cx_buf_puts(&body, "\"uid\":");
            rc |= cx_json_escape(&body, uid);
        }
        if (rv && *rv) {
            rc |= cx_buf_puts(&body,
                              (uid && *uid) ? ",\"resourceVersion\":" : "\"resourceVersion\":");
            rc |= cx_json_escape(&body, rv);
        }
        rc |= cx_buf_puts(&body, "}");
    }
    rc |= cx_buf_puts(&body, "}");
    struct cx_buf p;
    cx_buf_init(&p, URL_MAX);
    struct kube_call *call = NULL;
    if (rc == 0 && kube_path(&p, res, ns, name, NULL) == 0)
        call = simple(c, "DELETE", &p, body.data, body.len, "application/json", KUBE_VERB_WRITE,
                      pre, opts, cb, user_data);
    cx_buf_free(&p);
    cx_buf_free(&body);
    return call;
}

/* ---- watches ---------------------------------------------------------------- */

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

static void watch_free(struct kube_watch *w)
{
    if (w->easy) {
        curl_multi_remove_handle(w->c->multi, w->easy);
        curl_easy_cleanup(w->easy);
        w->easy = NULL;
    }
    curl_slist_free_all(w->hdrs);
    watch_unlink(w);
    w->c->stats.active_watches--;
    if (w->deliver_ev)
        event_free(w->deliver_ev);
    if (w->stall_ev)
        event_free(w->stall_ev);
    kube_watch_parser_free(&w->parser);
    cx_buf_free(&w->pending);
    cx_buf_free(&w->errbody);
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
    watch_free(w);
}

/* Ends |w| with |err|: the transfer goes, on_end runs, |w| is freed. */
static void watch_end(struct kube_watch *w, const struct kube_error *err)
{
    struct kube_error e = *err;
    if (w->easy) {
        curl_multi_remove_handle(w->c->multi, w->easy);
        curl_easy_cleanup(w->easy);
        w->easy = NULL;
    }
    w->busy = 1; /* on_end must not free it under us */
    if (w->hd.on_end)
        w->hd.on_end(w->user_data, &e);
    w->busy = 0;
    watch_free(w);
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
    if (w->stopped) {
        watch_free(w);
        return 1;
    }
    if (w->ending) {
        watch_end(w, &w->end_err);
        return 1;
    }
    if (rc != KUBE_WATCH_OK) {
        struct kube_error e;
        kube_error_set(&e, KUBE_E_DECODE, "watch stream: %s", w->parser.error);
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

static void watch_done(struct kube_watch *w, CURLcode code)
{
    if (watch_deliver(w))
        return;
    struct kube_error e;
    long http = 0;
    curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &http);
    if (http != 0 && http != 200) {
        struct curl_header *h = NULL;
        const char *ra = NULL;
        if (curl_easy_header(w->easy, "Retry-After", 0, CURLH_HEADER, -1, &h) == CURLHE_OK)
            ra = h->value;
        kube_error_from_http(&e, (int)http, w->errbody.data, w->errbody.len, ra);
        if (http == 401) {
            w->c->stats.unauthorized++;
            w->c->token_stale = 1;
        }
    } else if (code != CURLE_OK) {
        transfer_error(&e, w->easy, code, 0);
    } else if (kube_watch_parser_finish(&w->parser) == KUBE_WATCH_OK) {
        kube_error_clear(&e);
    } else {
        kube_error_set(&e, KUBE_E_DECODE, "watch stream: %s", w->parser.error);
    }
    if (w->ending) /* an ERROR event in the final bytes */
        e = w->end_err;
    watch_end(w, &e);
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
    w->h.kind = XFER_WATCH;
    w->c = c;
    w->hd = *h;
    w->user_data = user_data;
    w->stall_ms = o->stall_ms;
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
    cx_buf_init(&p, URL_MAX);
    int first = 0;
    int rc = kube_path(&p, res, ns, NULL, NULL);
    rc |= cx_buf_puts(&p, "?watch=1");
    rc |= add_query(&p, &first, "labelSelector", o->label_selector);
    rc |= add_query(&p, &first, "fieldSelector", o->field_selector);
    rc |= add_query(&p, &first, "resourceVersion", o->resource_version);
    if (o->allow_bookmarks)
        rc |= cx_buf_puts(&p, "&allowWatchBookmarks=true");
    if (o->send_initial_events)
        rc |= cx_buf_puts(&p, "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan");
    if (o->timeout_seconds > 0)
        rc |= cx_buf_printf(&p, "&timeoutSeconds=%d", o->timeout_seconds);
    w->deliver_ev = event_new(c->base, -1, 0, on_deliver, w);
    w->stall_ev = evtimer_new(c->base, on_stall, w);
    w->easy = curl_easy_init();
    if (rc != 0 || !w->deliver_ev || !w->stall_ev || !w->easy ||
        setup_easy(c, w->easy, p.data, &w->hdrs, NULL) != 0)
        goto fail;
    curl_easy_setopt(w->easy, CURLOPT_PRIVATE, &w->h);
    curl_easy_setopt(w->easy, CURLOPT_WRITEFUNCTION, watch_write_cb);
    curl_easy_setopt(w->easy, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(w->easy, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(w->easy, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
    if (o->timeout_seconds > 0)
        curl_easy_setopt(w->easy, CURLOPT_TIMEOUT_MS,
                         (long)o->timeout_seconds * 1000L + WATCH_GRACE_MS);
    c->stats.requests++;
    c->stats.watches++;
    if (curl_multi_add_handle(c->multi, w->easy) != CURLM_OK)
        goto fail;
    arm_stall(w);
    cx_buf_free(&p);
    return w;
fail:
    cx_buf_free(&p);
    watch_free(w);
    return NULL;
}

/* ---- completion ------------------------------------------------------------- */

static void check_multi_info(struct kube_client *c)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(c->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        struct xfer_hdr *h = NULL;
        CURLcode code = msg->data.result;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&h);
        if (!h)
            continue;
        if (h->kind == XFER_CALL)
            call_done((struct kube_call *)h, code);
        else
            watch_done((struct kube_watch *)h, code);
    }
}
