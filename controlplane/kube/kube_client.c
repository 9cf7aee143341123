/*
 * The client itself: libcurl's multi interface driven by libevent, what
 * every transfer is set up with, the request limit's queue, and the
 * dispatch of finished transfers to calls and watches.
 */
#include "kube_client_internal.h"

#include "cx_log.h"
#include "cx_metrics.h"
#include "cx_time.h"
#include "cx_version.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A wait for the request limit longer than this is worth a line. */
#define THROTTLE_LOG_NS       CX_NS_PER_S
#define THROTTLE_LOG_EVERY_NS (30 * CX_NS_PER_S)

struct sockinfo {
    struct event *ev;
    struct kube_multi *mx;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_init_rc;
static struct cx_metric *m_throttle;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
    static const double bounds[] = {0.001, 0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 60};
    m_throttle = cx_histogram("coxswain_kube_client_throttle_seconds",
                              "Time requests waited for the client-side request limit "
                              "(--kube-api-qps, --kube-api-burst), by client.",
                              "client", bounds, sizeof(bounds) / sizeof(bounds[0]));
    kube_report_metrics_init();
    kube_conn_metrics_init();
}

/* ---- libcurl <-> libevent --------------------------------------------- */

static void check_multi_info(struct kube_multi *mx);

static void on_socket_event(evutil_socket_t fd, short what, void *arg)
{
    struct kube_multi *mx = arg;
    if (what & EV_READ)
        kube_conn_rx(mx->c, fd);
    int action =
        ((what & EV_READ) ? CURL_CSELECT_IN : 0) | ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    int running = 0;
    curl_multi_socket_action(mx->m, fd, action, &running);
    check_multi_info(mx);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct kube_multi *mx = arg;
    (void)fd;
    (void)what;
    int running = 0;
    curl_multi_socket_action(mx->m, CURL_SOCKET_TIMEOUT, 0, &running);
    check_multi_info(mx);
}

static int curl_socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    struct kube_multi *mx = userp;
    struct sockinfo *si = socketp;
    (void)e;
    if (what == CURL_POLL_REMOVE) {
        if (si) {
            event_free(si->ev);
            si->ev = NULL;
            free(si);
            curl_multi_assign(mx->m, s, NULL);
        }
        return 0;
    }
    if (!si) {
        si = calloc(1, sizeof(*si));
        if (!si)
            return -1;
        si->mx = mx;
        curl_multi_assign(mx->m, s, si);
    } else if (si->ev) {
        event_free(si->ev);
        si->ev = NULL;
    }
    short kind = (short)(((what & CURL_POLL_IN) ? EV_READ : 0) |
                         ((what & CURL_POLL_OUT) ? EV_WRITE : 0) | EV_PERSIST);
    si->ev = event_new(mx->c->base, s, kind, on_socket_event, mx);
    if (!si->ev || event_add(si->ev, NULL) != 0)
        return -1;
    return 0;
}

static int curl_timer_cb(CURLM *m, long timeout_ms, void *userp)
{
    struct kube_multi *mx = userp;
    (void)m;
    if (timeout_ms < 0) {
        evtimer_del(mx->timer);
        return 0;
    }
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    evtimer_add(mx->timer, &tv);
    return 0;
}

/* Sets up |mx| on |c|'s base. 0 or -1. */
static int multi_init(struct kube_client *c, struct kube_multi *mx)
{
    mx->c = c;
    mx->m = curl_multi_init();
    mx->timer = evtimer_new(c->base, on_timer, mx);
    if (!mx->m || !mx->timer)
        return -1;
    curl_multi_setopt(mx->m, CURLMOPT_SOCKETFUNCTION, curl_socket_cb);
    curl_multi_setopt(mx->m, CURLMOPT_SOCKETDATA, mx);
    curl_multi_setopt(mx->m, CURLMOPT_TIMERFUNCTION, curl_timer_cb);
    curl_multi_setopt(mx->m, CURLMOPT_TIMERDATA, mx);
    return 0;
}

static void multi_free(struct kube_multi *mx)
{
    if (mx->m)
        curl_multi_cleanup(mx->m);
    mx->m = NULL;
    if (mx->timer)
        event_free(mx->timer);
    mx->timer = NULL;
}

/* ---- the request limit's queue --------------------------------------------- */

static void arm_queue(struct kube_client *c, int64_t wait_ns)
{
    struct timeval tv = {.tv_sec = (time_t)(wait_ns / CX_NS_PER_S),
                         .tv_usec = (suseconds_t)((wait_ns % CX_NS_PER_S) / 1000)};
    if (tv.tv_sec == 0 && tv.tv_usec == 0)
        tv.tv_usec = 1;
    evtimer_add(c->queue_ev, &tv);
}

void kube_client_unqueue(struct kube_client *c, struct kube_xfer *x)
{
    if (!x->queued)
        return;
    if (x->qprev)
        x->qprev->qnext = x->qnext;
    else
        c->qhead = x->qnext;
    if (x->qnext)
        x->qnext->qprev = x->qprev;
    else
        c->qtail = x->qprev;
    x->qprev = x->qnext = NULL;
    x->queued = 0;
}

int kube_client_admit(struct kube_client *c, struct kube_xfer *x)
{
    int64_t now = cx_mono_ns();
    if (!c->qhead) {
        int64_t wait = kube_limit_take(c->limit, c->priority, now);
        if (wait == 0)
            return 0;
        arm_queue(c, wait);
    }
    x->queued = 1;
    x->queued_ns = now;
    x->qnext = NULL;
    x->qprev = c->qtail;
    if (c->qtail)
        c->qtail->qnext = x;
    else
        c->qhead = x;
    c->qtail = x;
    return 1;
}

static void note_throttled(struct kube_client *c, int64_t waited_ns, int64_t now)
{
    if (m_throttle)
        cx_metric_observe(m_throttle, (double)waited_ns / 1e9, c->report.client);
    c->throttled_since_log++;
    if (waited_ns > c->throttle_max_ns)
        c->throttle_max_ns = waited_ns;
    if (c->throttle_max_ns < THROTTLE_LOG_NS ||
        (c->throttle_logged_ns && now - c->throttle_logged_ns < THROTTLE_LOG_EVERY_NS))
        return;
    cx_warn("kube",
            "client-side request limit: %llu requests waited, the longest %.1f s (limit %g/s, "
            "burst %g: --kube-api-qps, --kube-api-burst; client %s)",
            (unsigned long long)c->throttled_since_log, (double)c->throttle_max_ns / 1e9,
            kube_limit_qps(c->limit), kube_limit_burst(c->limit), c->report.client);
    c->throttle_logged_ns = now;
    c->throttled_since_log = 0;
    c->throttle_max_ns = 0;
}

/* The limit has a token again: send what waits, in order, while tokens
 * last. Sending may run callbacks that cancel queued transfers, so the
 * head is read again each time. */
static void on_queue(evutil_socket_t fd, short what, void *arg)
{
    struct kube_client *c = arg;
    (void)fd;
    (void)what;
    while (c->qhead) {
        int64_t now = cx_mono_ns();
        struct kube_xfer *head = c->qhead;
        if (head->kind == KUBE_XFER_CALL && kube_call_expired((struct kube_call *)head, now)) {
            /* Its time ran out while it waited: it ends without a token. */
            kube_client_unqueue(c, head);
            kube_call_send((struct kube_call *)head);
            continue;
        }
        int64_t wait = kube_limit_take(c->limit, c->priority, now);
        if (wait > 0) {
            arm_queue(c, wait);
            return;
        }
        struct kube_xfer *x = c->qhead;
        kube_client_unqueue(c, x);
        note_throttled(c, now - x->queued_ns, now);
        if (x->kind == KUBE_XFER_CALL)
            kube_call_send((struct kube_call *)x);
        else
            kube_watch_send((struct kube_watch *)x);
    }
}

/* ---- tls-server-name ------------------------------------------------------ */

/* kubeconfig's tls-server-name (client-go's TLSClientConfig.ServerName):
 * TLS verifies the server's certificate for that name and sends it as SNI,
 * while the connection still goes to the server's address. libcurl takes
 * the name from the URL, so the URL carries it and CURLOPT_CONNECT_TO maps
 * it to the real host; the Host header stays the server's. Returns 0, or -1
 * with |err| (an https server URL libcurl cannot read). */
static int setup_server_name(struct kube_client *c, char *err, size_t errlen)
{
    const char *sn = c->cfg.tls_server_name;
    if (!sn || !*sn || strncmp(c->cfg.server, "https://", 8) != 0) {
        if ((c->url_base = strdup(c->cfg.server)))
            return 0;
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL;
    int rc = -1;
    if (!u || curl_url_set(u, CURLUPART_URL, c->cfg.server, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
        snprintf(err, errlen, "cannot read the server URL %s for tls-server-name", c->cfg.server);
        goto out;
    }
    struct cx_buf b;
    cx_buf_init(&b, KUBE_URL_MAX);
    int brc = cx_buf_printf(&b, "https://%s:%s", sn, port);
    c->url_base = brc == 0 ? cx_buf_steal(&b, NULL) : NULL;
    cx_buf_free(&b);
    cx_buf_init(&b, KUBE_URL_MAX);
    brc = cx_buf_printf(&b, "%s:%s:%s:%s", sn, port, host, port);
    c->connect_to = brc == 0 ? curl_slist_append(NULL, b.data) : NULL;
    cx_buf_free(&b);
    cx_buf_init(&b, KUBE_URL_MAX);
    brc = strcmp(port, "443") == 0 ? cx_buf_printf(&b, "Host: %s", host)
                                   : cx_buf_printf(&b, "Host: %s:%s", host, port);
    c->host_header = brc == 0 ? cx_buf_steal(&b, NULL) : NULL;
    cx_buf_free(&b);
    if (!c->url_base || !c->connect_to || !c->host_header) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    rc = 0;
out:
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return rc;
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
    c->priority = opts->priority;
    c->caller_reports = opts->caller_reports;
    const char *product = opts->component ? opts->component : "coxswain";
    kube_report_init(&c->report, product, cx_mono_ns());

    struct cx_buf ua;
    cx_buf_init(&ua, 1024);
    int rc = cx_buf_printf(&ua, "%s/%s (linux)", product, COXSWAIN_VERSION);
    if (opts->identity && *opts->identity)
        rc |= cx_buf_printf(&ua, " replica/%s", opts->identity);
    c->user_agent = rc == 0 ? cx_buf_steal(&ua, NULL) : NULL;
    cx_buf_free(&ua);

    if (c->cfg.limit)
        c->limit = kube_limit_ref(c->cfg.limit);
    else if (opts->qps >= 0)
        c->limit = kube_limit_new(opts->qps > 0 ? opts->qps : KUBE_LIMIT_DEFAULT_QPS,
                                  opts->burst > 0 ? opts->burst : KUBE_LIMIT_DEFAULT_BURST);
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
    if (setup_server_name(c, err, errlen) != 0)
        goto fail;
    c->queue_ev = evtimer_new(base, on_queue, c);
    if (!c->user_agent || multi_init(c, &c->shared) != 0 || multi_init(c, &c->guarded) != 0 ||
        !c->queue_ev || (c->cfg.token && !c->token) || (!c->limit && opts->qps >= 0) ||
        kube_conn_init(c, opts) != 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    return c;
fail:
    kube_client_free(c);
    return NULL;
}

/* A bearer token leaves memory wiped (freed memory and cores keep none). */
static void free_token(char *t)
{
    if (t)
        explicit_bzero(t, strlen(t));
    free(t);
}

void kube_client_free(struct kube_client *c)
{
    if (!c)
        return;
    while (c->calls)
        kube_call_free(c->calls);
    while (c->watches)
        kube_watch_free(c->watches);
    kube_conn_free_probe(c);
    multi_free(&c->shared);
    multi_free(&c->guarded);
    kube_conn_free(c);
    if (c->queue_ev)
        event_free(c->queue_ev);
    kube_limit_unref(c->limit);
    free(c->url_base);
    curl_slist_free_all(c->connect_to);
    free(c->host_header);
    kube_config_free(&c->cfg);
    free(c->user_agent);
    free_token(c->token);
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
    out->queued = 0;
    for (const struct kube_xfer *x = c->qhead; x; x = x->qnext)
        out->queued++;
}

void kube_client_sent(struct kube_client *c, const struct kube_xfer *x)
{
    kube_report_sent(&c->report, &x->info);
}

void kube_client_report(struct kube_client *c, const struct kube_xfer *x,
                        const struct kube_error *e)
{
    int quiet = e->code != KUBE_OK && (c->caller_reports || (x->quiet & KUBE_QUIET(e->code)) != 0);
    kube_report_attempt(&c->report, &x->info, e, quiet, cx_mono_ns());
}

void kube_client_unauthorized(struct kube_client *c)
{
    c->stats.unauthorized++;
    c->token_stale = 1;
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
        free_token(c->token);
        c->token = t;
    }
}

static void set_blob(CURL *e, CURLoption opt, const char *data, size_t len)
{
    struct curl_blob blob = {.data = (void *)data, .len = len, .flags = CURL_BLOB_COPY};
    curl_easy_setopt(e, opt, &blob);
}

static void setup_tls(struct kube_client *c, CURL *e)
{
    if (c->cfg.insecure_skip_tls_verify) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    } else {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    }
    if (c->cfg.ca_data)
        set_blob(e, CURLOPT_CAINFO_BLOB, c->cfg.ca_data, c->cfg.ca_data_len);
    else if (c->cfg.ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, c->cfg.ca_file);
    if (c->cfg.client_cert_data) {
        set_blob(e, CURLOPT_SSLCERT_BLOB, c->cfg.client_cert_data, c->cfg.client_cert_data_len);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (c->cfg.client_cert_file) {
        curl_easy_setopt(e, CURLOPT_SSLCERT, c->cfg.client_cert_file);
    }
    if (c->cfg.client_key_data) {
        set_blob(e, CURLOPT_SSLKEY_BLOB, c->cfg.client_key_data, c->cfg.client_key_data_len);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (c->cfg.client_key_file) {
        curl_easy_setopt(e, CURLOPT_SSLKEY, c->cfg.client_key_file);
    }
}

int kube_client_setup_easy(struct kube_client *c, CURL *e, const char *path_query,
                           struct curl_slist **hdrs, const char *content_type, const char *accept)
{
    struct cx_buf url;
    cx_buf_init(&url, KUBE_URL_MAX);
    int rc = cx_buf_puts(&url, c->url_base);
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
    kube_conn_setup_easy(c, e);
    if (c->connect_to)
        curl_easy_setopt(e, CURLOPT_CONNECT_TO, c->connect_to);
    setup_tls(c, e);

    struct curl_slist *h = NULL, *t;
    if (accept) {
        struct cx_buf ah;
        cx_buf_init(&ah, 1024);
        if (cx_buf_printf(&ah, "Accept: %s", accept) == 0)
            h = curl_slist_append(h, ah.data);
        cx_buf_free(&ah);
    } else {
        h = curl_slist_append(h, "Accept: application/json");
    }
    /* No "Expect: 100-continue" round trip on large bodies. */
    if (h && (t = curl_slist_append(h, "Expect:")))
        h = t;
    if (h && c->host_header && (t = curl_slist_append(h, c->host_header)))
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
        if (auth.data)
            explicit_bzero(auth.data, auth.len);
        cx_buf_free(&auth);
    }
    if (!h)
        return -1;
    *hdrs = h;
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    return 0;
}

void kube_transfer_error(struct kube_error *e, CURL *easy, CURLcode code, int is_write)
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

/* ---- completion ------------------------------------------------------------- */

static void check_multi_info(struct kube_multi *mx)
{
    struct kube_client *c = mx->c;
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(mx->m, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        struct kube_xfer *h = NULL;
        CURLcode code = msg->data.result;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&h);
        if (!h)
            continue;
        if (h->kind == KUBE_XFER_CALL)
            kube_call_done((struct kube_call *)h, code);
        else if (h->kind == KUBE_XFER_WATCH)
            kube_watch_done((struct kube_watch *)h, code);
        else
            kube_conn_probe_done(c, h, code);
    }
}
