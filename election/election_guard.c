#include "election_guard.h"

#include "cx_time.h"

#include <time.h>

void election_guard_init(struct election_guard *g, int64_t margin_ns)
{
    atomic_init(&g->deadline_ns, 0);
    atomic_init(&g->term, 0);
    atomic_init(&g->leading, false);
    atomic_init(&g->last_renew_mono, 0);
    atomic_init(&g->last_renew_wall, 0);
    atomic_init(&g->allowed, 0);
    atomic_init(&g->refused, 0);
    atomic_init(&g->inflight, 0);
    atomic_init(&g->drain_until, 0);
    g->margin_ns = margin_ns;
}

void election_guard_publish(struct election_guard *g, uint64_t term, int64_t deadline_ns,
                            int64_t renew_mono_ns, int64_t renew_wall_ns)
{
    /* The term goes first so that a reader that sees the new deadline also
     * sees the term it belongs to. */
    atomic_store(&g->term, term);
    atomic_store(&g->last_renew_mono, renew_mono_ns);
    atomic_store(&g->last_renew_wall, renew_wall_ns);
    atomic_store(&g->leading, true);
    atomic_store(&g->deadline_ns, deadline_ns > 0 ? deadline_ns : 1);
}

void election_guard_clear(struct election_guard *g)
{
    /* The deadline first: from this store on no reader is allowed. The
     * writes let through before it end by that deadline at the latest. */
    int64_t d = atomic_exchange(&g->deadline_ns, 0);
    if (d)
        atomic_store(&g->drain_until, d);
    atomic_store(&g->leading, false);
}

bool election_guard_enter(struct election_guard *g, uint64_t term)
{
    atomic_fetch_add(&g->inflight, 1);
    if (election_guard_recheck(g, term))
        return true;
    atomic_fetch_sub(&g->inflight, 1);
    return false;
}

void election_guard_leave(struct election_guard *g)
{
    atomic_fetch_sub(&g->inflight, 1);
}

bool election_guard_draining(struct election_guard *g, int64_t now_ns)
{
    return atomic_load(&g->inflight) > 0 && now_ns < atomic_load(&g->drain_until);
}

bool election_guard_check(struct election_guard *g, int64_t now_ns, int64_t *timeout_ns,
                          uint64_t *term)
{
    uint64_t t = atomic_load(&g->term);
    int64_t deadline = atomic_load(&g->deadline_ns);
    if (deadline == 0 || deadline - now_ns < g->margin_ns || deadline - now_ns <= 0) {
        atomic_fetch_add(&g->refused, 1);
        return false;
    }
    /* A step-down and re-acquisition between our two loads would change the
     * term; re-read it so that the caller gets the term of this deadline. */
    if (atomic_load(&g->term) != t || atomic_load(&g->deadline_ns) == 0) {
        atomic_fetch_add(&g->refused, 1);
        return false;
    }
    if (timeout_ns)
        *timeout_ns = deadline - now_ns;
    if (term)
        *term = t;
    atomic_fetch_add(&g->allowed, 1);
    return true;
}

int64_t election_clock_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
        return cx_mono_ns();
    return (int64_t)ts.tv_sec * CX_NS_PER_S + ts.tv_nsec;
}

bool election_guard_allow(struct election_guard *g, int64_t *timeout_ns, uint64_t *term)
{
    return election_guard_check(g, election_clock_ns(), timeout_ns, term);
}

bool election_guard_recheck(struct election_guard *g, uint64_t term)
{
    uint64_t t = 0;
    int64_t now = election_clock_ns();
    int64_t deadline = atomic_load(&g->deadline_ns);
    if (deadline == 0 || deadline - now < g->margin_ns || deadline - now <= 0)
        return false;
    t = atomic_load(&g->term);
    return t == term && atomic_load(&g->deadline_ns) != 0;
}

uint64_t election_guard_term(struct election_guard *g)
{
    return atomic_load(&g->deadline_ns) != 0 ? atomic_load(&g->term) : 0;
}

bool election_guard_healthy(struct election_guard *g, int64_t now_ns, int64_t lease_ns,
                            int64_t grace_ns)
{
    if (!atomic_load(&g->leading))
        return true;
    return now_ns - atomic_load(&g->last_renew_mono) <= lease_ns + grace_ns;
}
