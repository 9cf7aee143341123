/*
 * kube_client_internal: what the files of the Kubernetes client share and
 * nobody else sees.
 *
 *   kube_client.c        the client: libcurl multi <-> libevent, TLS and
 *                        token set-up of each transfer, the request limit's
 *                        queue, completion dispatch
 *   kube_call.c          one request/response call: attempts, the retry
 *                        decision (policy, no I/O) apart from the transfer
 *   kube_verbs.c         paths and the typed requests (get, list, create...)
 *   kube_client_watch.c  watches: bytes from curl to the stream parser
 *   kube_conn.c          connections: which transfer is on which, their
 *                        health check (dead HTTP/2 connections abandoned)
 *
 * Everything here runs on the client's event_base thread.
 */
#ifndef KUBE_CLIENT_INTERNAL_H
#define KUBE_CLIENT_INTERNAL_H

#include "cx_buf.h"
#include "kube_client.h"
#include "kube_limit.h"
#include "kube_report.h"
#include "kube_watch.h"

#include <curl/curl.h>
#include <event2/event.h>

#define KUBE_URL_MAX            ((size_t)16 << 10)
#define KUBE_CONNECT_TIMEOUT_MS 10000

enum kube_xfer_kind {
    KUBE_XFER_CALL = 1,
    KUBE_XFER_WATCH = 2,
    KUBE_XFER_PROBE = 3, /* a connection's health check (kube_conn.c) */
};

/* First member of calls and watches: what CURLOPT_PRIVATE points at, and
 * their place in the client's queue of transfers waiting for the request
 * limit. */
struct kube_xfer {
    enum kube_xfer_kind kind;
    struct kube_xfer *qprev, *qnext;
    int queued;        /* in the limit's queue */
    int64_t queued_ns; /* since when */
    struct kube_reqinfo info;
    uint32_t quiet;      /* KUBE_QUIET() mask: failures the caller expects */
    uint64_t conn_id;    /* the connection it runs on (kube_conn.c); 0: none */
    int64_t attached_ns; /* since when */
};

struct kube_call {
    struct kube_xfer h;
    struct kube_client *c;
    struct kube_call *prev, *next;
    char *method;
    char *path_query;
    char *body;
    size_t body_len;
    size_t body_off; /* of a guarded call: handed to libcurl so far */
    char *content_type;
    char *accept; /* NULL: application/json */
    size_t max_response;
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
    void (*presend_end)(void *arg);
    int presend_refused;     /* the pre-send check aborted the last attempt */
    int presend_passed;      /* the pre-send check said yes at least once */
    int retry_maybe_applied; /* the attempt a pending retry follows may have applied */
    kube_result_fn cb;
    void *user_data;
};

struct kube_watch {
    struct kube_xfer h;
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
    int stall_any_protocol;
    int paused;
    int busy;    /* inside deliver (user callbacks may run) */
    int stopped; /* kube_watch_stop was called while busy */
    int ending;  /* an ERROR event ended it; end_err holds the Status */
    struct kube_error end_err;
    char *path_query;
    char *accept; /* NULL: application/json */
    int timeout_seconds;
    struct kube_watch_handlers hd;
    void *user_data;
};

/* A libcurl multi handle and its timer. Each keeps its own connection
 * pool: the client's |shared| one carries everything over one multiplexed
 * HTTP/2 connection (over TLS), its |guarded| one the guarded writes over
 * HTTP/1.1 (kube_call.c call_setup_guarded), so neither takes the other's
 * connections. */
struct kube_multi {
    struct kube_client *c;
    CURLM *m;
    struct event *timer;
};

struct kube_client {
    struct event_base *base;
    struct kube_multi shared;
    struct kube_multi guarded;
    struct kube_config cfg;
    /* Where requests go: cfg.server, or with tls-server-name the same port
     * under that name (the name TLS verifies and sends as SNI), with
     * connect_to sending the connection to the real host and host_header
     * keeping the Host the server expects. */
    char *url_base;
    struct curl_slist *connect_to;
    char *host_header;
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

    /* The request limit (shared through cfg.limit, or the client's own;
     * NULL: none) and the transfers waiting for it, in order. */
    struct kube_limit *limit;
    int priority;
    int caller_reports; /* kube_client_opts.caller_reports */
    struct kube_xfer *qhead, *qtail;
    struct event *queue_ev;
    int64_t throttle_logged_ns;
    uint64_t throttled_since_log;
    int64_t throttle_max_ns; /* longest wait since the last line */

    struct kube_report report;

    /* Connections and their health check (kube_conn.c). */
    struct kube_conn *conns;
    uint64_t conn_serial;
    struct kube_probe *probe; /* at most one at a time */
    struct event *health_ev;  /* NULL: no health checks */
    int64_t read_idle_ns, ping_timeout_ns;
};

/* kube_client.c */
/* Sets what every easy handle of this client needs (URL, TLS, headers with
 * the current token). Returns 0 or -1 (memory, cap). */
int kube_client_setup_easy(struct kube_client *c, CURL *e, const char *path_query,
                           struct curl_slist **hdrs, const char *content_type, const char *accept);
/* Asks the request limit for |x|: returns 0 when it may go now, 1 when it
 * was queued (kube_call_send / kube_watch_send run when its turn comes). */
int kube_client_admit(struct kube_client *c, struct kube_xfer *x);
/* Takes |x| out of the limit's queue if it is there. */
void kube_client_unqueue(struct kube_client *c, struct kube_xfer *x);
/* Counts a request that goes out now. */
void kube_client_sent(struct kube_client *c, const struct kube_xfer *x);
/* Counts and (rate-limited) logs one attempt's outcome. */
void kube_client_report(struct kube_client *c, const struct kube_xfer *x,
                        const struct kube_error *e);
/* Notes a 401: the token is re-read before the next request. */
void kube_client_unauthorized(struct kube_client *c);
/* Fills |e| from a transfer that ended without an HTTP answer. */
void kube_transfer_error(struct kube_error *e, CURL *easy, CURLcode code, int is_write);

/* kube_conn.c */
void kube_conn_metrics_init(void);
/* Starts the health check (unless opts->read_idle_ms < 0). 0 or -1. */
int kube_conn_init(struct kube_client *c, const struct kube_client_opts *o);
/* Frees the probe (before the multi handle goes) and the rest (after). */
void kube_conn_free_probe(struct kube_client *c);
void kube_conn_free(struct kube_client *c);
/* Sockets opened and closed through kube_conn.c, PIPEWAIT. */
void kube_conn_setup_easy(struct kube_client *c, CURL *e);
/* From a PREREQ callback: |x| runs on the connection of local port |port|. */
void kube_conn_attach(struct kube_client *c, struct kube_xfer *x, int port);
/* |x| leaves its connection; |e| (may be NULL) and |code|: how it ended. */
void kube_conn_detach(struct kube_client *c, struct kube_xfer *x, CURL *e, CURLcode code);
/* Bytes (or the end) arrived on |fd|. */
void kube_conn_rx(struct kube_client *c, curl_socket_t fd);
void kube_conn_probe_done(struct kube_client *c, struct kube_xfer *x, CURLcode code);

/* kube_verbs.c */
/* Appends "?k=v" (when *first) or "&k=v" with |v| escaped; skips NULL and
 * empty values. Returns 0 or -1 (cap). */
int kube_query_add(struct cx_buf *b, int *first, const char *k, const char *v);

/* kube_call.c */
void kube_call_free(struct kube_call *call);
/* Whether the call's deadline has passed at |now_ns|. */
int kube_call_expired(const struct kube_call *call, int64_t now_ns);
/* Sends the call's next attempt now (its turn under the limit came); ends
 * it with a timeout instead when its deadline passed. */
void kube_call_send(struct kube_call *call);
void kube_call_done(struct kube_call *call, CURLcode code);

/* kube_client_watch.c */
void kube_watch_free(struct kube_watch *w);
void kube_watch_send(struct kube_watch *w);
void kube_watch_done(struct kube_watch *w, CURLcode code);

#endif
