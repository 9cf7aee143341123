/*
 * harness: drives one election core against a fake lock with a fake clock.
 * Durations are the integration tests' 3s / 2s / 500ms; the identity is
 * given per test. Header-only (static inline) so each test program takes
 * what it uses.
 */
#ifndef ELECTION_HARNESS_H
#define ELECTION_HARNESS_H

#include "cxtest.h"
#include "election_config.h"
#include "election_core.h"
#include "election_guard.h"
#include "fake_lock.h"

#include <stdlib.h>

#define MS(x)    ((int64_t)(x)*1000000)
#define T0       MS(5000000)                        /* arbitrary monotonic origin */
#define WALL0    (INT64_C(1764428400) * 1000000000) /* 2025-11-29T15:00:00Z */
#define HLOG_CAP 4096

enum h_mode {
    H_SERVE = 0,   /* apply to the fake lock, answer at once */
    H_FAIL = 1,    /* answer FAILED at once */
    H_TIMEOUT = 2, /* answer TIMEOUT when the action's timeout has passed */
    H_HANG = 3,    /* never answer */
    H_MANUAL = 4,  /* leave the request pending for the test */
    H_FIXED = 5,   /* answer h->fixed at once to requests of kind h->fixed_req (0: every
                    * kind); serve the others */
};

struct h {
    struct election_config cfg;
    struct election_guard guard;
    struct election_core *c;
    struct election_now now;
    struct fake_lock lock;
    struct election_action *log; /* HLOG_CAP entries, on the heap */
    int64_t *log_at;
    int n;
    bool pending;
    struct election_action req;
    int64_t req_at;
    enum h_mode mode;
    enum election_outcome fixed;      /* H_FIXED */
    enum election_req_kind fixed_req; /* H_FIXED: 0 = every kind */
    bool watch;                       /* writes we serve are echoed as watch events */
    int64_t max_gap;                  /* largest wakeup distance seen */
};

static inline void h_setup_cfg(struct h *h, const char *identity, int64_t lease, int64_t renew,
                               int64_t retry)
{
    memset(h, 0, sizeof(*h));
    election_config_defaults(&h->cfg);
    h->cfg.enabled = true;
    h->cfg.lease_ns = lease;
    h->cfg.renew_ns = renew;
    h->cfg.retry_ns = retry;
    h->cfg.seed = 7;
    snprintf(h->cfg.identity, sizeof(h->cfg.identity), "%s", identity);
    election_guard_init(&h->guard, election_config_margin(&h->cfg));
    h->c = election_core_new(&h->cfg, &h->guard);
    h->log = calloc(HLOG_CAP, sizeof(*h->log));
    h->log_at = calloc(HLOG_CAP, sizeof(*h->log_at));
    if (!h->c || !h->log || !h->log_at)
        cxt_fail(__FILE__, __LINE__, 1, "out of memory");
    h->now.mono_ns = T0;
    h->now.wall_ns = WALL0;
}

static inline void h_setup(struct h *h, const char *identity)
{
    h_setup_cfg(h, identity, MS(3000), MS(2000), MS(500));
}

static inline void h_free(struct h *h)
{
    election_core_free(h->c);
    h->c = NULL;
    free(h->log);
    h->log = NULL;
    free(h->log_at);
    h->log_at = NULL;
}

static inline void h_drain(struct h *h)
{
    struct election_action a;
    while (election_core_next_action(h->c, &a)) {
        if (h->n < HLOG_CAP) {
            h->log_at[h->n] = h->now.mono_ns;
            h->log[h->n++] = a;
        }
        if (a.kind == ELECTION_ACT_SEND) {
            if (h->pending)
                cxt_fail(__FILE__, __LINE__, 0, "two requests in flight (%llu and %llu)",
                         (unsigned long long)h->req.req_id, (unsigned long long)a.req_id);
            h->pending = true;
            h->req = a;
            h->req_at = h->now.mono_ns;
        } else if (a.kind == ELECTION_ACT_CANCEL && h->pending && h->req.req_id == a.req_id) {
            h->pending = false;
        }
    }
}

static inline void h_at(struct h *h, int64_t mono)
{
    h->now.wall_ns += mono - h->now.mono_ns;
    h->now.mono_ns = mono;
}

static inline void h_start(struct h *h)
{
    election_core_start(h->c, h->now);
    h_drain(h);
}

static inline void h_tick(struct h *h)
{
    election_core_tick(h->c, h->now);
    h_drain(h);
}

static inline void h_event(struct h *h)
{
    struct election_observation o;
    fake_obs(&h->lock, &o);
    election_core_observe(h->c, h->now, &o);
    h_drain(h);
}

static inline void h_watch(struct h *h, bool up)
{
    h->watch = up;
    election_core_watch_state(h->c, h->now, up);
    h_drain(h);
}

/* Applies the pending request to the fake lock and delivers the answer. */
static inline enum election_outcome h_serve(struct h *h)
{
    if (!h->pending) {
        cxt_fail(__FILE__, __LINE__, 1, "no request pending");
        return ELECTION_FAILED;
    }
    h->pending = false;
    struct election_observation o;
    uint64_t rv_before = h->lock.rv;
    bool found_before = h->lock.found;
    enum election_outcome out = fake_apply(&h->lock, &h->req, &o);
    election_core_result(h->c, h->now, h->req.req_id, out, out == ELECTION_OK ? &o : NULL);
    h_drain(h);
    if (h->watch && (h->lock.rv != rv_before || h->lock.found != found_before))
        h_event(h);
    return out;
}

static inline void h_answer(struct h *h, enum election_outcome out,
                            const struct election_observation *o)
{
    if (!h->pending) {
        cxt_fail(__FILE__, __LINE__, 1, "no request pending");
        return;
    }
    h->pending = false;
    election_core_result(h->c, h->now, h->req.req_id, out, o);
    h_drain(h);
}

/* Runs the loop up to monotonic time |until|: ticks at every wakeup the
 * core asks for and answers requests according to h->mode. */
static inline void h_run(struct h *h, int64_t until)
{
    int same = 0;
    for (int guard = 0; guard < 1000000; guard++) {
        if (h->pending && h->mode == H_SERVE) {
            h_serve(h);
            continue;
        }
        if (h->pending && h->mode == H_FAIL) {
            h_answer(h, ELECTION_FAILED, NULL);
            continue;
        }
        if (h->pending && h->mode == H_FIXED) {
            if (h->fixed_req == 0 || h->req.req == h->fixed_req)
                h_answer(h, h->fixed, NULL);
            else
                h_serve(h);
            continue;
        }
        int64_t w = election_core_next_wakeup(h->c);
        if (w - h->now.mono_ns > h->max_gap && w != INT64_MAX)
            h->max_gap = w - h->now.mono_ns;
        if (h->pending && h->mode == H_TIMEOUT) {
            int64_t due = h->req_at + h->req.timeout_ns;
            if (due <= w && due <= until) {
                h_at(h, due > h->now.mono_ns ? due : h->now.mono_ns);
                h_answer(h, ELECTION_TIMEOUT, NULL);
                continue;
            }
        }
        if (w > until)
            break;
        if (w <= h->now.mono_ns && ++same > 1000) {
            cxt_fail(__FILE__, __LINE__, 1, "the core keeps asking to be woken now (busy loop)");
            return;
        }
        if (w > h->now.mono_ns) {
            same = 0;
            h_at(h, w);
        }
        h_tick(h);
    }
    if (until > h->now.mono_ns)
        h_at(h, until);
}

static inline int h_count(const struct h *h, int from, enum election_action_kind k)
{
    int n = 0;
    for (int i = from; i < h->n; i++)
        if (h->log[i].kind == k)
            n++;
    return n;
}

static inline int h_count_sends(const struct h *h, int from, enum election_req_kind r)
{
    int n = 0;
    for (int i = from; i < h->n; i++)
        if (h->log[i].kind == ELECTION_ACT_SEND && h->log[i].req == r)
            n++;
    return n;
}

/* Index of the last action of kind |k| at or after |from|, or -1. */
static inline int h_last(const struct h *h, int from, enum election_action_kind k)
{
    for (int i = h->n - 1; i >= from; i--)
        if (h->log[i].kind == k)
            return i;
    return -1;
}

static inline int h_first(const struct h *h, int from, enum election_action_kind k)
{
    for (int i = from; i < h->n; i++)
        if (h->log[i].kind == k)
            return i;
    return -1;
}

static inline bool h_guard(struct h *h)
{
    return election_guard_check(&h->guard, h->now.mono_ns, NULL, NULL);
}

/* Starts and makes the core leader through CREATE on an empty lock. */
static inline void h_make_leader(struct h *h)
{
    h_start(h);
    h_watch(h, true);
    h_serve(h); /* GET: not found */
    h_serve(h); /* CREATE */
}

#endif
