#include "election_core.h"

#include "election_core_impl.h"

int64_t election_core_next_wakeup(const struct election_core *c)
{
    if (c->done || !c->started)
        return INT64_MAX;
    int64_t w = c->last_now + c->cfg.retry_ns; /* heartbeat */
#define WAKE_AT(x)        \
    do {                  \
        int64_t x_ = (x); \
        if (x_ < w)       \
            w = x_;       \
    } while (0)
    /* Deadlines that hold whatever else is going on. */
    if (c->role == ELECTION_LEADER)
        WAKE_AT(c->safe_deadline);
    if (c->stopping)
        WAKE_AT(c->release_deadline);
    if (c->fl.id) {
        WAKE_AT(c->fl.sent + c->fl.timeout + c->cfg.retry_ns);
        return w < c->last_now ? c->last_now : w;
    }
    /* Everything else waits for not_before, as decide() does. */
    int64_t gate = c->not_before > c->last_now ? c->not_before : c->last_now;
#define ACT_AT(x)                       \
    do {                                \
        int64_t y_ = (x);               \
        WAKE_AT(y_ > gate ? y_ : gate); \
    } while (0)
    if (c->stopping || c->need_get) {
        ACT_AT(gate);
    } else if (!c->have_obs || c->quarantine) {
        /* waiting for an answer that is not in flight: heartbeat only */
    } else if (c->role == ELECTION_LEADER) {
        ACT_AT(c->renew_at);
    } else {
        if (!c->obs.found) {
            /* Missing: created at once unless another's lease may still
             * run (as may_acquire() says). */
            bool now_ok = c->gone_holder[0] == '\0' || strcmp(c->gone_holder, c->cfg.identity) == 0;
            ACT_AT(now_ok ? gate : c->gone_expiry);
        } else if (is_self(c, &c->obs.rec) || holder_empty(&c->obs.rec)) {
            ACT_AT(yield_to_preferred(c) && !is_self(c, &c->obs.rec)
                       ? c->obs_time + lease_of(c, &c->obs.rec)
                       : gate);
        } else {
            ACT_AT(proven_dead(c) ? gate : c->obs_time + lease_of(c, &c->obs.rec));
        }
        if (!c->watch_up)
            ACT_AT(c->next_poll);
    }
#undef ACT_AT
#undef WAKE_AT
    return w < c->last_now ? c->last_now : w;
}

enum election_role election_core_role(const struct election_core *c)
{
    return c->role;
}

uint64_t election_core_term(const struct election_core *c)
{
    return c->term;
}

bool election_core_done(const struct election_core *c)
{
    return c->done;
}

const char *election_core_holder(const struct election_core *c)
{
    return c->have_obs && c->obs.found ? c->obs.rec.holder : "";
}

const struct election_observation *election_core_observed(const struct election_core *c)
{
    return c->have_obs ? &c->obs : NULL;
}

int64_t election_core_observed_time(const struct election_core *c)
{
    return c->obs_time;
}

int64_t election_core_safe_deadline(const struct election_core *c)
{
    return c->role == ELECTION_LEADER ? c->safe_deadline : 0;
}

const struct election_core_stats *election_core_stats(const struct election_core *c)
{
    return &c->stats;
}

const char *election_stop_reason_name(enum election_stop_reason r)
{
    switch (r) {
    case ELECTION_STOP_NONE:
        return "none";
    case ELECTION_STOP_DEADLINE:
        return "renew deadline passed";
    case ELECTION_STOP_LOST:
        return "another holder took the lock";
    case ELECTION_STOP_DELETED:
        return "lock deleted";
    case ELECTION_STOP_CLOCK_JUMP:
        return "clock jump";
    case ELECTION_STOP_HANDOVER:
        return "planned handover";
    case ELECTION_STOP_SHUTDOWN:
        return "shutdown";
    }
    return "?";
}

const char *election_purpose_name(enum election_purpose p)
{
    switch (p) {
    case ELECTION_FOR_OBSERVE:
        return "observe";
    case ELECTION_FOR_POLL:
        return "poll";
    case ELECTION_FOR_ACQUIRE:
        return "acquire";
    case ELECTION_FOR_RENEW:
        return "renew";
    case ELECTION_FOR_RELEASE:
        return "release";
    }
    return "?";
}

const char *election_takeover_name(enum election_takeover k)
{
    switch (k) {
    case ELECTION_TAKE_CREATED:
        return "created";
    case ELECTION_TAKE_RELEASED:
        return "release";
    case ELECTION_TAKE_EXPIRED:
        return "lease-expiry";
    case ELECTION_TAKE_DEAD:
        return "proof-of-death";
    case ELECTION_TAKE_OWN:
        return "own";
    }
    return "?";
}

const char *election_outcome_name(enum election_outcome o)
{
    switch (o) {
    case ELECTION_OK:
        return "ok";
    case ELECTION_NOT_FOUND:
        return "not found";
    case ELECTION_CONFLICT:
        return "conflict";
    case ELECTION_FAILED:
        return "failed";
    case ELECTION_TIMEOUT:
        return "timeout";
    }
    return "?";
}
