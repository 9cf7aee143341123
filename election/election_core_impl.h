/*
 * election_core_impl: the decision core's state and the small helpers its
 * two files share (election_core.c decides; election_core_query.c says when
 * to wake it and what it holds). Private to those two files.
 */
#ifndef ELECTION_CORE_IMPL_H
#define ELECTION_CORE_IMPL_H

#include "election_core.h"

#include <stdlib.h>
#include <string.h>

/* Each input pushes at most ~6 actions; the caller drains after every
 * input. */
#define CORE_QUEUE_CAP      16
#define CORE_MIN_TIMEOUT_NS INT64_C(1000000)
/* Backoff after failures in a row: a standby waits retryPeriod, doubling,
 * at most BACKOFF_CAP x retryPeriod; the leader retryPeriod/4, doubling, at
 * most one retryPeriod (its renewals must keep their cadence to meet the
 * renew deadline); both stretched by jitter. */
#define BACKOFF_CAP 4

enum release_phase {
    REL_GET = 0,
    REL_UPDATE = 1,
};

struct inflight {
    uint64_t id; /* 0: nothing in flight */
    enum election_req_kind kind;
    enum election_purpose purpose;
    int64_t sent;      /* monotonic */
    int64_t sent_wall; /* wall clock, for the guard's metrics */
    int64_t timeout;
    uint64_t epoch; /* clock epoch at send time */
    char rv[ELECTION_RV_MAX];
    enum election_takeover took; /* an acquisition: what made it allowed */
};

struct election_core {
    struct election_config cfg;
    struct election_guard *guard;
    int64_t margin;
    int64_t jump;
    enum election_role role;
    bool started;
    bool done;

    /* Observing. */
    bool have_obs;
    struct election_observation obs;
    int64_t obs_time;                        /* monotonic time the record or its RV last changed */
    char gone_holder[ELECTION_IDENTITY_MAX]; /* holder before a deletion */
    int64_t gone_expiry;
    /* A proof that the holder of record version dead_rv is dead
     * (election_core_holder_dead): that version may be taken at once. */
    char dead_rv[ELECTION_RV_MAX];

    /* Requests. */
    struct inflight fl;
    uint64_t next_id;
    bool need_get;
    int64_t not_before; /* after a failure, no request before this */
    uint32_t streak;    /* failed requests in a row (backoff) */
    int64_t next_poll;
    bool watch_up;

    /* Leading. */
    uint64_t term;
    int64_t last_renew_send;
    int64_t safe_deadline;
    int64_t renew_at;
    char ignore_preferred[ELECTION_IDENTITY_MAX];
    /* We released for a planned handover: a preferredHolder of "any"
     * does not include us (until someone else has taken the lock). */
    bool handed_over;

    /* Shutting down. */
    bool stopping;
    bool want_release;
    enum release_phase rel_phase;
    int64_t release_deadline;

    /* Clock. */
    int64_t last_now;
    uint64_t epoch;
    bool quarantine;

    bool reported;
    char reported_leader[ELECTION_IDENTITY_MAX];

    struct election_action q[CORE_QUEUE_CAP];
    unsigned qhead;
    unsigned qlen;
    uint64_t rng;
    struct election_core_stats stats;
};

static inline void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}
static inline bool is_self(const struct election_core *c, const struct election_record *r)
{
    return !r->holder_overflow && strcmp(r->holder, c->cfg.identity) == 0;
}
static inline bool holder_empty(const struct election_record *r)
{
    return !r->holder_overflow && r->holder[0] == '\0';
}
static inline int64_t lease_of(const struct election_core *c, const struct election_record *r)
{
    if (r->lease_duration_s > 0)
        return (int64_t)r->lease_duration_s * 1000000000;
    return c->cfg.lease_ns;
}
static inline bool preferred_other(const struct election_core *c)
{
    if (!c->have_obs || !c->obs.found)
        return false;
    const char *p = c->obs.rec.preferred_holder;
    return p[0] != '\0' && strcmp(p, c->cfg.identity) != 0 && strcmp(p, c->ignore_preferred) != 0;
}

/* The current record is the one whose holder was proven dead. */
static inline bool proven_dead(const struct election_core *c)
{
    return c->dead_rv[0] && c->obs.found && !c->obs.rec.holder_overflow && c->obs.rec.holder[0] &&
           strcmp(c->obs.rv, c->dead_rv) == 0 && !is_self(c, &c->obs.rec);
}
/* A released record asks us to let another replica take it first, for
 * the released record's lease: it names someone else, or it says "any"
 * and we are the one that released it. */
static inline bool yield_to_preferred(const struct election_core *c)
{
    if (!preferred_other(c))
        return false;
    return strcmp(c->obs.rec.preferred_holder, ELECTION_PREFERRED_ANY) != 0 || c->handed_over;
}

#endif
