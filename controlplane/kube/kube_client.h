/*
 * kube_client: requests and watches against the Kubernetes API over libcurl's
 * multi interface, driven by one libevent event_base.
 *
 * A client is bound to the event_base it was created with: every function
 * here, and every callback, runs on that base's thread. Two threads that
 * both talk to the API (the main loop and the election thread) each create
 * their own client from the same read-only kube_config; clients share
 * nothing (own curl multi handle, own connections, own token copy). There
 * is no global mutable state besides curl_global_init, done once.
 *
 * Callbacks never run inside libcurl: responses and watch events are
 * delivered from libevent callbacks, so a callback may start new requests,
 * cancel calls and stop watches freely. kube_client_free must not be called
 * from a callback.
 *
 * Retries follow kube_retry_decide (kube_error.h): 429 and 5xx with
 * Retry-After for every verb; other 5xx, timeouts and broken connections
 * only for reads and for writes that are idempotent by precondition
 * (update with metadata.resourceVersion, delete with preconditions, or
 * opts.idempotent). A 401 makes the client re-read its token file and try
 * once more. Bounded by max_attempts and the call's deadline. Every retry
 * waits (backoff with jitter, or Retry-After), whatever the error.
 *
 * Every request, first attempts, retries and watches alike, first takes a
 * token from the request limit (kube_limit.h): the config's shared one, or
 * the client's own. A request without a token waits in the client's queue,
 * in order; its deadline still applies.
 *
 * Every attempt is counted and every failure is logged, rate-limited, with
 * its verb, resource, object and the server's message (kube_report.h).
 */
#ifndef KUBE_CLIENT_H
#define KUBE_CLIENT_H

#include "cx_buf.h"
#include "kube_config.h"
#include "kube_error.h"
#include "kube_types.h"

#include <cjson/cJSON.h>
#include <event2/event.h>
#include <stdint.h>

struct kube_client;
struct kube_call;
struct kube_watch;

struct kube_client_opts {
    const char *identity;       /* replica identity, sent in the User-Agent */
    const char *component;      /* User-Agent product, default "coxswain" */
    int64_t timeout_ms;         /* per attempt, default 30000 */
    int max_attempts;           /* default 5 (1 = never retry) */
    int64_t max_retry_after_ms; /* cap on an honoured Retry-After, default 30000 */
    int64_t token_reread_ms;    /* token file re-read period, default 60000 */
    int64_t backoff_base_ms;    /* default 200 */
    int64_t backoff_max_ms;     /* default 5000 */
    size_t max_response;        /* cap on one response body, default 256 MiB */
    /* The request limit when the config carries none (kube_config.limit,
     * shared by every client made from it): this client's own bucket of
     * |qps| (default KUBE_LIMIT_DEFAULT_QPS; < 0: no limit) and |burst|. */
    double qps;
    int burst;
    int priority; /* may take the limit's reserve (the elector's lease renewals) */
    /* The caller logs every failure itself, with more context (the
     * elector): this client counts them and logs them at debug level only,
     * so nothing is said twice. */
    int caller_reports;
    /* Dead-connection detection (kube_conn.c): a multiplexed (HTTP/2)
     * connection waiting for bytes that received nothing for
     * |read_idle_ms| (default 25000; < 0: never checked), or whose request
     * timed out unanswered, gets a health check; one unanswered within
     * |ping_timeout_ms| (default 15000) is closed and what ran on it moves
     * to a new connection. client-go's ReadIdleTimeout (30 s there: 25 s
     * keeps a dead connection found within 45 s) and PingTimeout. */
    int64_t read_idle_ms;
    int64_t ping_timeout_ms;
};

/* err.reason of a KUBE_E_DECODE for a response or a watch event over its
 * cap: the data may be fine, only too large for us. */
#define KUBE_REASON_TOO_LARGE "ResponseTooLarge"

/* Bit of a failure the caller handles as part of its normal work (an
 * informer's 410): still counted, logged at debug level only. */
#define KUBE_QUIET(code) (1u << (unsigned)(code))

/* Per-call options; zero fields take the client's defaults. */
struct kube_req_opts {
    int64_t timeout_ms;  /* per attempt */
    int64_t deadline_ms; /* whole call including retries and waits; 0: none */
    int max_attempts;
    int idempotent; /* the caller vouches that repeating this write is safe */
    /* Called on the client's thread by libcurl once the connection is
     * ready, immediately before each attempt's request line and headers
     * are written, and again before each chunk of its body is handed over
     * (never for an attempt that does not send). Non-zero aborts the call:
     * it finishes with KUBE_E_CANCELLED, reason "RefusedBeforeSend",
     * maybe_applied 0 (no complete request reached the server), and is
     * not retried. Leader-only writers put the write guard here, so a
     * writer paused after queueing (SIGSTOP, a stall) re-checks its
     * leadership at the last moment a client can. A call with this check
     * goes over HTTP/1.1 on a connection of its own, never on the shared
     * HTTP/2 one (kube_call.c, docs/kube-client.md "Guarded writes"). */
    int (*presend)(void *arg);
    void *presend_arg;
    /* Called once, with presend_arg, when a call whose presend said yes at
     * least once ends (answered, failed, cancelled, or freed with the
     * client), before its callback: a write guard counts the writes that
     * may still land (election_guard_enter/leave). NULL: nothing. */
    void (*presend_end)(void *arg);
    uint32_t quiet;      /* KUBE_QUIET() bits */
    size_t max_response; /* cap on this call's response body; 0: the client's */
    /* The Accept header (content negotiation: "application/json;as=
     * PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json");
     * NULL: application/json. */
    const char *accept;
};

/* The outcome of a call, valid during the callback only. On success
 * err.code is KUBE_OK and |object| is the decoded body (NULL if the body was
 * empty); a callback that keeps it sets res->object = NULL and owns it. */
struct kube_result {
    struct kube_error err;
    int http_status; /* of the last attempt; 0 without a response */
    cJSON *object;
    int attempts;         /* attempts made, >= 1 */
    int64_t sent_mono_ns; /* CLOCK_MONOTONIC when the last attempt started */
    int64_t done_mono_ns; /* when its answer arrived */
};

typedef void (*kube_result_fn)(struct kube_result *res, void *user_data);

/* Creates a client on |base| from |cfg| (copied). Returns NULL with a
 * message in |err| (bad TLS files, no memory). */
struct kube_client *kube_client_new(struct event_base *base, const struct kube_config *cfg,
                                    const struct kube_client_opts *opts, char *err, size_t errlen);

/* Cancels every call and watch (no callbacks) and frees the client. */
void kube_client_free(struct kube_client *c);

/* The base this client runs on. */
struct event_base *kube_client_base(const struct kube_client *c);

/* The User-Agent it sends. */
const char *kube_client_user_agent(const struct kube_client *c);

/* Counters, for metrics and tests. */
struct kube_client_stats {
    uint64_t requests;     /* HTTP attempts started (calls and watches) */
    uint64_t retries;      /* attempts that were retries */
    uint64_t token_reads;  /* token file reads */
    uint64_t unauthorized; /* 401 answers */
    uint64_t watches;      /* watch requests started */
    uint64_t active_calls; /* calls not finished yet */
    uint64_t active_watches;
    uint64_t queued;          /* calls and watches waiting for the request limit */
    uint64_t probes;          /* health checks sent on silent connections */
    uint64_t conns_abandoned; /* connections closed for missing one */
};
void kube_client_stats(const struct kube_client *c, struct kube_client_stats *out);

/* ---- building paths ------------------------------------------------------ */

/* Appends the path of |res| ("/api/v1" or "/apis/g/v", then
 * "/namespaces/ns" when |ns| is non-empty, "/plural", "/name" when |name|
 * is non-NULL, "/subresource" when non-NULL). Returns 0/-1 (cap). */
__attribute__((warn_unused_result)) int kube_path(struct cx_buf *b, const struct kube_resource *res,
                                                  const char *ns, const char *name,
                                                  const char *subresource);

/* ---- requests --------------------------------------------------------------
 * Each returns a handle that stays valid until the callback starts, or NULL
 * (and no callback ever) when the request cannot be built (no memory,
 * missing name, namespaced resource without namespace for a write).
 * |opts| may be NULL. |ns| is ignored for cluster-scoped resources. */

struct kube_call *kube_get(struct kube_client *c, const struct kube_resource *res, const char *ns,
                           const char *name, const struct kube_req_opts *opts, kube_result_fn cb,
                           void *user_data);

struct kube_list_opts {
    const char *label_selector;         /* passed through as labelSelector */
    const char *field_selector;         /* passed through as fieldSelector */
    long limit;                         /* page size; 0 = no paging */
    const char *continue_token;         /* from the previous page */
    const char *resource_version;       /* NULL: most recent (consistent read) */
    const char *resource_version_match; /* "NotOlderThan" / "Exact" or NULL */
};

/* One page of a list ({"kind":"...List","metadata":{...},"items":[...]}).
 * |ns| NULL or "" lists across all namespaces. */
struct kube_call *kube_list(struct kube_client *c, const struct kube_resource *res, const char *ns,
                            const struct kube_list_opts *lo, const struct kube_req_opts *opts,
                            kube_result_fn cb, void *user_data);

/* POST |obj| (not taken). Never retried once sent unless opts->idempotent. */
struct kube_call *kube_create(struct kube_client *c, const struct kube_resource *res,
                              const char *ns, const cJSON *obj, const struct kube_req_opts *opts,
                              kube_result_fn cb, void *user_data);

/* PUT |obj| to metadata.name (or to /status when |status| is set).
 * Idempotent (so retried) when obj carries metadata.resourceVersion. */
struct kube_call *kube_update(struct kube_client *c, const struct kube_resource *res,
                              const char *ns, const cJSON *obj, int status,
                              const struct kube_req_opts *opts, kube_result_fn cb, void *user_data);

/* PATCH |patch| (text) of |type| to |name| (or its /status). Idempotent
 * when the patch pins metadata.resourceVersion (merge) or tests it (JSON
 * patch), or opts->idempotent. */
struct kube_call *kube_patch(struct kube_client *c, const struct kube_resource *res, const char *ns,
                             const char *name, enum kube_patch_type type, const char *patch,
                             int status, const struct kube_req_opts *opts, kube_result_fn cb,
                             void *user_data);

/* DELETE |name|, with preconditions when |uid| / |rv| are non-NULL (which
 * makes it idempotent). */
struct kube_call *kube_delete(struct kube_client *c, const struct kube_resource *res,
                              const char *ns, const char *name, const char *uid, const char *rv,
                              const struct kube_req_opts *opts, kube_result_fn cb, void *user_data);

/* A raw request: |path_query| starts with "/" ("/api/v1/...?..."). */
struct kube_raw_req {
    const char *method; /* "GET", "POST", ... */
    const char *path_query;
    const char *body; /* NULL for none */
    size_t body_len;
    const char *content_type; /* for the body */
    enum kube_verb_class verb;
    struct kube_req_opts opts;
};
struct kube_call *kube_request(struct kube_client *c, const struct kube_raw_req *r,
                               kube_result_fn cb, void *user_data);

/* Cancels |call|: its callback will not run. Not valid once the callback
 * has started (the handle is gone then). */
void kube_call_cancel(struct kube_call *call);

/* ---- watches --------------------------------------------------------------- */

struct kube_watch_opts {
    const char *resource_version; /* NULL/"" : synthetic ADDED first */
    const char *label_selector;
    const char *field_selector;
    int timeout_seconds; /* server-side end; 0 = server's choice */
    int allow_bookmarks;
    int send_initial_events; /* streaming list (adds resourceVersionMatch=NotOlderThan) */
    int64_t stall_ms;        /* end the watch after this long without bytes; 0 = never */
    /* Over HTTP/2 with the connection check on, silence is no stall (a
     * quiet resource gets nothing from a real server) unless this is set:
     * a watch that must hear something every so often (a held lock is
     * renewed every retryPeriod) ends after stall_ms whatever the protocol,
     * so a stream stalled on a live connection is not kept forever. */
    int stall_any_protocol;
    size_t max_event;   /* cap on one event; 0 = KUBE_WATCH_EVENT_MAX */
    uint32_t quiet;     /* KUBE_QUIET() bits: endings the caller expects */
    const char *accept; /* Accept header; NULL: application/json */
};

struct kube_watch_handlers {
    /* One event (ADDED, MODIFIED, DELETED, BOOKMARK; never ERROR: an ERROR
     * event ends the watch with its Status as the error). Takes ownership
     * of |object|. May call kube_watch_stop. */
    void (*on_event)(void *user_data, enum kube_event_type type, cJSON *object);
    /* The watch ended: err->code KUBE_OK for a clean end (timeoutSeconds,
     * server closed between events); KUBE_E_EXPIRED for 410 (re-list);
     * KUBE_E_DECODE for a garbage line (reason KUBE_REASON_TOO_LARGE for
     * an event over the cap); KUBE_E_TIMEOUT for a stall; any
     * other code for an HTTP error or a broken connection. The handle is
     * freed after this returns; do not stop it. */
    void (*on_end)(void *user_data, const struct kube_error *err);
};

/* Starts a watch. Returns NULL (no callbacks) if it cannot be built. */
struct kube_watch *kube_watch_start(struct kube_client *c, const struct kube_resource *res,
                                    const char *ns, const struct kube_watch_opts *o,
                                    const struct kube_watch_handlers *h, void *user_data);

/* Stops |w|; no callback runs afterwards. Safe from inside on_event. */
void kube_watch_stop(struct kube_watch *w);

#endif
