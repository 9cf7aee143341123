/*
 * kube_error: turning API server answers into a typed kube_error, and the
 * retry policy (which failures are retried, after how long).
 *
 * I/O-free and stateless apart from the caller-owned backoff state, so any
 * thread may call it.
 */
#ifndef KUBE_ERROR_H
#define KUBE_ERROR_H

#include "kube_types.h"

#include <cjson/cJSON.h>

/* Fills |e| from an HTTP answer: |status| is the HTTP code, |body| the
 * response body (a Status object, plain text, or anything), |retry_after|
 * the Retry-After header value or NULL. A Status body's code and reason win
 * over the HTTP code where they are more precise (409 Conflict vs
 * AlreadyExists; 410 Expired/Gone). Never fails: unknown answers become
 * KUBE_E_OTHER with the text kept in the message. */
void kube_error_from_http(struct kube_error *e, int status, const char *body, size_t body_len,
                          const char *retry_after);

/* Fills |e| from a decoded Status object (an ERROR watch event's object). */
void kube_error_from_status(struct kube_error *e, const cJSON *status);

/* Sets |e| to a failure without an HTTP answer (code is KUBE_E_TRANSPORT,
 * KUBE_E_TIMEOUT, KUBE_E_CANCELLED or KUBE_E_DECODE). */
void kube_error_set(struct kube_error *e, enum kube_err_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clears |e| to KUBE_OK. */
void kube_error_clear(struct kube_error *e);

/* Maps an HTTP status (and an optional Status reason) to a code. */
enum kube_err_code kube_error_code_for(int http_status, const char *reason);

/* A stable lower-case name for |code| ("conflict", "not_found"), for logs
 * and metric labels. */
const char *kube_error_name(enum kube_err_code code);

/* The longest Retry-After taken (header or Status details), in seconds. */
#define KUBE_RETRY_AFTER_MAX_S 86400

/* Parses a Retry-After value: delta-seconds only (what the API server
 * sends), capped at KUBE_RETRY_AFTER_MAX_S; returns milliseconds, or -1 if
 * |s| is NULL or not a number. */
int64_t kube_retry_after_parse(const char *s);

/* Exponential backoff with jitter. Delay n (n = 0, 1, ...) is
 * min(max, base * factor^n), then reduced by up to |jitter| (0..1) of itself
 * at random, so replicas restarting together spread out. */
struct kube_backoff {
    int64_t base_ms;  /* first delay; 0 means 200 */
    int64_t max_ms;   /* ceiling; 0 means 30000 */
    double factor;    /* 0 means 2.0 */
    double jitter;    /* 0..1; negative means none; 0 means 0.5 */
    unsigned attempt; /* delays handed out since the last reset */
    uint64_t rng;     /* xorshift state; 0 picks a seed on first use */
};

/* Returns the next delay in milliseconds and advances |b|. */
int64_t kube_backoff_next(struct kube_backoff *b);
/* Starts over from base (after a success). */
void kube_backoff_reset(struct kube_backoff *b);

/* The |n|th delay (n >= 1) of a backoff from |first_ns| doubling to
 * |max_ns|, less up to half at random, in nanoseconds: for callers that
 * keep only a failure count per item. |rng| is the caller's random state
 * (0 seeds itself). */
int64_t kube_backoff_nth_ns(int n, int64_t first_ns, int64_t max_ns, uint64_t *rng);

/* What a request is, for the retry decision. */
enum kube_verb_class {
    KUBE_VERB_READ = 0,  /* get, list, watch: always safe to repeat */
    KUBE_VERB_WRITE = 1, /* create, update, patch, delete */
};

/* The retry decision for one failed attempt. |e| is the failure,
 * |idempotent| says a write may be repeated safely (it carries a
 * precondition: resourceVersion on update, preconditions on delete, or the
 * caller vouched for it). Rules:
 *   - 429, and 5xx with Retry-After: retried for every verb (the server
 *     says it did not process the request); delay = Retry-After (capped at
 *     |max_retry_after_ms|, plus up to a quarter at random unless the
 *     backoff has no jitter), or the backoff when that is longer or when
 *     there is no Retry-After;
 *   - connection refused / DNS failures: retried for every verb (nothing
 *     was sent);
 *   - other 5xx, timeouts and broken connections: reads and idempotent
 *     writes only, after the backoff;
 *   - everything else (4xx): never.
 * Returns 1 and sets *delay_ms when the attempt should be retried, else 0. */
int kube_retry_decide(const struct kube_error *e, enum kube_verb_class verb, int idempotent,
                      struct kube_backoff *b, int64_t max_retry_after_ms, int64_t *delay_ms);

/* Where a call stands after a failed attempt. */
struct kube_retry_state {
    enum kube_verb_class verb;
    int idempotent;
    int attempts, max_attempts;  /* made so far; the call's cap */
    int auth_retry;              /* a 401 may be retried once now (token re-read) */
    int64_t now_ns, deadline_ns; /* CLOCK_MONOTONIC; deadline 0: none */
    int64_t max_retry_after_ms;
};

/* The whole retry decision of a call after one attempt ended with |e|:
 * returns -1 (finish with |e|) or the delay in ms before the next attempt.
 * Success, DECODE and CANCELLED finish; a 401 with |auth_retry| goes again
 * at once (once per call); otherwise kube_retry_decide within max_attempts,
 * and never a retry that the deadline would cut. I/O-free. */
int64_t kube_retry_next(const struct kube_error *e, const struct kube_retry_state *st,
                        struct kube_backoff *b);

#endif
