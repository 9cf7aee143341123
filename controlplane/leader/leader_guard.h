/*
 * leader_guard: what a leader-only writer (status writer, snapshot
 * publisher) asks right before every write. The daemon backs it with the
 * elector's write guard (election_guard_allow); tests back it with a flag.
 */
#ifndef LEADER_GUARD_H
#define LEADER_GUARD_H

#include <stdbool.h>
#include <stdint.h>

struct leader_guard {
    /* True if a write may be sent now; then *timeout_ns is the longest the
     * write may take (its deadline) and *term the current leadership term.
     * Any thread; cheap (atomics). */
    bool (*allow)(void *arg, int64_t *timeout_ns, uint64_t *term);
    /* The last-moment check, run by the Kubernetes client right before the
     * write's bytes leave (kube_req_opts.presend): true if we still lead
     * |term| with the margin left. NULL: no second check. Any thread. */
    bool (*recheck)(void *arg, uint64_t term);
    /* The first yes of a write, counted until leave(): the elector holds
     * its lock's release until the writes of the ended term have ended
     * (election_guard_enter/leave). NULL: recheck alone, nothing counted. */
    bool (*enter)(void *arg, uint64_t term);
    void (*leave)(void *arg);
    void *arg;
};

/* A kube_req_opts.presend for a write made in |term|: asks |g|'s recheck.
 * |g| and the storage of |term| must outlive the call. */
struct leader_guard_presend {
    const struct leader_guard *g;
    uint64_t term;
    bool entered; /* counted by g->enter, until leader_guard_presend_end */
};

static inline int leader_guard_presend(void *arg)
{
    struct leader_guard_presend *p = arg;
    if (!p->entered && p->g->enter) {
        if (!p->g->enter(p->g->arg, p->term))
            return 1;
        p->entered = true;
        return 0;
    }
    if (!p->g->recheck)
        return 0;
    return p->g->recheck(p->g->arg, p->term) ? 0 : 1;
}

/* kube_req_opts.presend_end of leader_guard_presend: the write ended. */
static inline void leader_guard_presend_end(void *arg)
{
    struct leader_guard_presend *p = arg;
    if (p->entered && p->g->leave)
        p->g->leave(p->g->arg);
    p->entered = false;
}

/* The guard's answer as a per-attempt timeout in milliseconds (>= 1). */
static inline int64_t leader_guard_timeout_ms(int64_t timeout_ns)
{
    int64_t ms = timeout_ns / 1000000;
    return ms < 1 ? 1 : ms;
}

#endif
