#include "election_core.h"

#include "election_core_impl.h"

#include "election_config.h"
#include "election_guard.h"

#include <stdlib.h>
#include <string.h>

/* ---- small helpers ------------------------------------------------------ */

static uint64_t next_rand(struct election_core *c)
{
    /* splitmix64 */
    uint64_t z = (c->rng += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* |d| stretched by a random factor in [1, 1.2). */
static int64_t jitter(struct election_core *c, int64_t d)
{
    uint64_t r = next_rand(c) % 1000;
    return d + (int64_t)((double)d * 0.2 * (double)r / 1000.0);
}

/* The wait before the next request after |n| failures in a row (0 for
 * none). Every failure class goes through here, so no answer of the
 * server, however quick, can make the elector loop. */
static int64_t backoff(struct election_core *c, uint32_t n)
{
    if (n == 0)
        return 0;
    bool leader = c->role == ELECTION_LEADER;
    int64_t cap = leader ? c->cfg.retry_ns : BACKOFF_CAP * c->cfg.retry_ns;
    int64_t d = leader ? c->cfg.retry_ns / 4 : c->cfg.retry_ns;
    if (c->stopping)
        cap = d = c->cfg.retry_ns / 4; /* the release has renewDeadline in all */
    for (uint32_t i = 1; i < n && d < cap; i++)
        d *= 2;
    if (d > cap)
        d = cap;
    d = jitter(c, d);
    /* The leader's jitter stays under its cap: a renewal is never pushed
     * past the next retry slot. */
    if (leader && d > cap)
        d = cap - (d - cap);
    return d;
}

/* A request failed (any class): count it and hold the next one back by
 * the backoff of |lag| failures fewer than the streak. */
static void failed_lag(struct election_core *c, int64_t t, uint32_t lag)
{
    if (c->streak < UINT32_MAX)
        c->streak++;
    int64_t nb = t + backoff(c, c->streak > lag ? c->streak - lag : 0);
    if (nb > c->not_before)
        c->not_before = nb;
}

static void failed(struct election_core *c, int64_t t)
{
    failed_lag(c, t, 0);
}

/* Parses a resourceVersion as a decimal number; false if it is not one
 * (RVs are opaque in the API, but every server we know uses integers). */
static bool rv_number(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return true;
}

static bool rv_older(const char *a, const char *b)
{
    uint64_t x, y;
    return rv_number(a, &x) && rv_number(b, &y) && x < y;
}

static void push(struct election_core *c, const struct election_action *a)
{
    if (c->qlen == CORE_QUEUE_CAP) {
        /* The caller did not drain; drop the oldest rather than block. */
        c->qhead = (c->qhead + 1) % CORE_QUEUE_CAP;
        c->qlen--;
    }
    c->q[(c->qhead + c->qlen) % CORE_QUEUE_CAP] = *a;
    c->qlen++;
}

static void cancel_inflight(struct election_core *c)
{
    if (!c->fl.id)
        return;
    struct election_action a;
    memset(&a, 0, sizeof(a));
    a.kind = ELECTION_ACT_CANCEL;
    a.req_id = c->fl.id;
    a.req = c->fl.kind;
    a.purpose = c->fl.purpose;
    push(c, &a);
    c->fl.id = 0;
}

static void report_leader(struct election_core *c, const char *holder)
{
    if (c->reported && strcmp(holder, c->reported_leader) == 0)
        return;
    c->reported = true;
    copy_str(c->reported_leader, sizeof(c->reported_leader), holder);
    struct election_action a;
    memset(&a, 0, sizeof(a));
    a.kind = ELECTION_ACT_NEW_LEADER;
    a.term = c->term;
    copy_str(a.leader, sizeof(a.leader), holder);
    push(c, &a);
}

/* ---- leadership ---------------------------------------------------------- */

static void step_down(struct election_core *c, enum election_stop_reason reason)
{
    if (c->role != ELECTION_LEADER)
        return;
    /* The guard closes before anything else happens. */
    election_guard_clear(c->guard);
    c->role = ELECTION_STANDBY;
    c->safe_deadline = 0;
    /* The standby's backoff starts over (the leader's was bounded by its
     * renew cadence; a fault that persists grows it again). */
    c->streak = 0;
    struct election_action a;
    memset(&a, 0, sizeof(a));
    a.kind = ELECTION_ACT_STOPPED_LEADING;
    a.term = c->term;
    a.reason = reason;
    push(c, &a);
}

static void become_leader(struct election_core *c, const struct inflight *f)
{
    c->role = ELECTION_LEADER;
    c->term++;
    c->stats.acquisitions++;
    c->last_renew_send = f->sent;
    c->handed_over = false;
    c->safe_deadline = f->sent + c->cfg.renew_ns;
    c->renew_at = f->sent + c->cfg.retry_ns;
    /* If we took a lock whose preferredHolder names someone else, that one
     * did not come for it: do not hand over to it again and again. */
    const char *p = c->obs.found ? c->obs.rec.preferred_holder : "";
    copy_str(c->ignore_preferred, sizeof(c->ignore_preferred),
             strcmp(p, c->cfg.identity) != 0 && strcmp(p, ELECTION_PREFERRED_ANY) != 0 ? p : "");
    election_guard_publish(c->guard, c->term, c->safe_deadline, f->sent, f->sent_wall);
    struct election_action a;
    memset(&a, 0, sizeof(a));
    a.kind = ELECTION_ACT_STARTED_LEADING;
    a.term = c->term;
    a.took = f->purpose == ELECTION_FOR_ACQUIRE ? f->took : ELECTION_TAKE_OWN;
    if (a.took == ELECTION_TAKE_DEAD)
        c->stats.proofs++;
    push(c, &a);
}

static void extend(struct election_core *c, const struct inflight *f)
{
    if (f->sent <= c->last_renew_send)
        return;
    c->last_renew_send = f->sent;
    c->safe_deadline = f->sent + c->cfg.renew_ns;
    election_guard_publish(c->guard, c->term, c->safe_deadline, f->sent, f->sent_wall);
}

/* ---- observing ----------------------------------------------------------- */

static void observe(struct election_core *c, int64_t t, const struct election_observation *o)
{
    /* An older version than we already know: a late answer (a GET, or the
     * watch's initial list saying "not found" from before our CREATE). A
     * 404 carries no version and is taken as it is. */
    if (c->have_obs && c->obs.found && rv_older(o->rv, c->obs.rv))
        return;
    bool changed = !c->have_obs || c->obs.found != o->found || strcmp(c->obs.rv, o->rv) != 0 ||
                   c->obs.fingerprint != o->fingerprint;
    if (!o->found && c->have_obs && c->obs.found) {
        /* Deleted: whoever held it may still believe it leads until its
         * lease runs out on our clock. */
        copy_str(c->gone_holder, sizeof(c->gone_holder),
                 c->obs.rec.holder_overflow ? "?" : c->obs.rec.holder);
        c->gone_expiry = c->obs_time + lease_of(c, &c->obs.rec);
    }
    if (changed) {
        /* Someone else wrote the lock (or it went): the failures so far were
         * a race that is now decided, not a fault that repeats. */
        if (o->found && c->have_obs && c->obs.found && strcmp(c->obs.rv, o->rv) != 0 &&
            !is_self(c, &o->rec))
            c->streak = 0;
        c->obs = *o;
        c->obs_time = t;
        c->have_obs = true;
    }
    /* A proof is about one version of the record: any other version (a
     * renewal that landed after all, a new holder) voids it. */
    if (c->dead_rv[0] && (!c->obs.found || strcmp(c->obs.rv, c->dead_rv) != 0))
        c->dead_rv[0] = '\0';
    report_leader(c, c->obs.found ? c->obs.rec.holder : "");
    if (c->obs.found && !holder_empty(&c->obs.rec) && !is_self(c, &c->obs.rec))
        c->handed_over = false; /* someone else took it: "any" includes us again */
    if (c->role == ELECTION_LEADER) {
        if (!c->obs.found)
            step_down(c, ELECTION_STOP_DELETED);
        else if (!is_self(c, &c->obs.rec))
            step_down(c, ELECTION_STOP_LOST);
    }
}

static void observe_missing(struct election_core *c, int64_t t)
{
    struct election_observation o;
    memset(&o, 0, sizeof(o));
    o.found = false;
    observe(c, t, &o);
}

/* ---- requests ------------------------------------------------------------ */

static void make_record(const struct election_core *c, int64_t wall, bool release,
                        struct election_record *r)
{
    memset(r, 0, sizeof(*r));
    const struct election_record *o = c->have_obs && c->obs.found ? &c->obs.rec : NULL;
    if (o) {
        copy_str(r->preferred_holder, sizeof(r->preferred_holder), o->preferred_holder);
        copy_str(r->strategy, sizeof(r->strategy), o->strategy);
    }
    r->renew_wall_ns = wall;
    if (release) {
        r->holder[0] = '\0';
        r->lease_duration_s = 1;
        r->acquire_wall_ns = wall;
        r->transitions = o ? o->transitions : 0;
        return;
    }
    copy_str(r->holder, sizeof(r->holder), c->cfg.identity);
    /* The leader's peer endpoint goes with every write that names it. */
    if (c->cfg.peer)
        copy_str(r->peer, sizeof(r->peer), c->cfg.peer_advertise);
    /* "any" asked for one handover: whoever takes the lock answered it. */
    if (strcmp(r->preferred_holder, ELECTION_PREFERRED_ANY) == 0)
        r->preferred_holder[0] = '\0';
    int64_t secs = (c->cfg.lease_ns + 999999999) / 1000000000;
    r->lease_duration_s = (int32_t)(secs < 1 ? 1 : secs > INT32_MAX ? INT32_MAX : secs);
    if (o && is_self(c, o)) {
        r->acquire_wall_ns = o->acquire_wall_ns ? o->acquire_wall_ns : wall;
        r->transitions = o->transitions;
    } else {
        r->acquire_wall_ns = wall;
        r->transitions = !o ? 0 : o->transitions < INT32_MAX ? o->transitions + 1 : INT32_MAX;
    }
}

static void send_req(struct election_core *c, struct election_now now, enum election_req_kind kind,
                     enum election_purpose purpose, int64_t timeout)
{
    struct election_action a;
    memset(&a, 0, sizeof(a));
    a.kind = ELECTION_ACT_SEND;
    a.req_id = ++c->next_id;
    a.req = kind;
    a.purpose = purpose;
    a.timeout_ns = timeout < CORE_MIN_TIMEOUT_NS ? CORE_MIN_TIMEOUT_NS : timeout;
    if (kind == ELECTION_REQ_UPDATE)
        copy_str(a.rv, sizeof(a.rv), c->obs.rv);
    if (kind != ELECTION_REQ_GET)
        make_record(c, now.wall_ns, purpose == ELECTION_FOR_RELEASE, &a.rec);
    c->fl.id = a.req_id;
    c->fl.kind = kind;
    c->fl.purpose = purpose;
    c->fl.sent = now.mono_ns;
    c->fl.sent_wall = now.wall_ns;
    c->fl.timeout = a.timeout_ns;
    c->fl.epoch = c->epoch;
    copy_str(c->fl.rv, sizeof(c->fl.rv), a.rv);
    c->stats.requests++;
    push(c, &a);
}

static int64_t renew_timeout(const struct election_core *c, int64_t t)
{
    int64_t to = c->cfg.renew_ns / 2;
    if (to < c->cfg.retry_ns)
        to = c->cfg.retry_ns;
    if (to > c->safe_deadline - t)
        to = c->safe_deadline - t;
    return to;
}

/* ---- deciding ------------------------------------------------------------ */

/* Why the lock may be taken now (what may_acquire() found). */
static enum election_takeover take_cause(const struct election_core *c, int64_t t)
{
    if (!c->obs.found)
        return ELECTION_TAKE_CREATED;
    if (holder_empty(&c->obs.rec))
        return ELECTION_TAKE_RELEASED;
    if (is_self(c, &c->obs.rec))
        return ELECTION_TAKE_OWN;
    if (t < c->obs_time + lease_of(c, &c->obs.rec) && proven_dead(c))
        return ELECTION_TAKE_DEAD;
    return ELECTION_TAKE_EXPIRED;
}

static bool may_acquire(const struct election_core *c, int64_t t)
{
    if (proven_dead(c))
        return true;
    if (!c->obs.found)
        return c->gone_holder[0] == '\0' || strcmp(c->gone_holder, c->cfg.identity) == 0 ||
               t >= c->gone_expiry;
    const struct election_record *r = &c->obs.rec;
    if (holder_empty(r)) {
        /* Released for a planned handover: let the preferred one take it
         * first, for as long as the released record says. */
        if (yield_to_preferred(c))
            return t >= c->obs_time + lease_of(c, r);
        return true;
    }
    if (is_self(c, r))
        return true;
    return t >= c->obs_time + lease_of(c, r);
}

static void finish(struct election_core *c, bool released)
{
    cancel_inflight(c);
    step_down(c, ELECTION_STOP_SHUTDOWN);
    c->done = true;
    c->role = ELECTION_STOPPED;
    struct election_action a;
    memset(&a, 0, sizeof(a));
    a.kind = ELECTION_ACT_DONE;
    a.term = c->term;
    a.released = released;
    push(c, &a);
}

static void decide_release(struct election_core *c, struct election_now now)
{
    int64_t t = now.mono_ns;
    if (t >= c->release_deadline || !c->want_release) {
        finish(c, false);
        return;
    }
    if (t < c->not_before)
        return;
    if (c->rel_phase == REL_GET) {
        send_req(c, now, ELECTION_REQ_GET, ELECTION_FOR_RELEASE, c->release_deadline - t);
        return;
    }
    /* Compare the freshly fetched holder (or anything newer the watch
     * brought since), never a cached belief. */
    if (!c->obs.found || !is_self(c, &c->obs.rec)) {
        finish(c, false);
        return;
    }
    send_req(c, now, ELECTION_REQ_UPDATE, ELECTION_FOR_RELEASE, c->release_deadline - t);
}

static void expire_inflight(struct election_core *c, struct election_now now);

static void decide(struct election_core *c, struct election_now now)
{
    int64_t t = now.mono_ns;
    if (c->done || !c->started)
        return;
    /* Entitlement first: past the safe deadline we stop at once. */
    if (c->role == ELECTION_LEADER && t >= c->safe_deadline)
        step_down(c, ELECTION_STOP_DEADLINE);
    if (c->stopping && t >= c->release_deadline) {
        finish(c, false);
        return;
    }
    if (c->fl.id) {
        if (t < c->fl.sent + c->fl.timeout + c->cfg.retry_ns)
            return;
        expire_inflight(c, now);
        if (c->done)
            return;
    }
    if (c->stopping) {
        decide_release(c, now);
        return;
    }
    if (t < c->not_before)
        return;
    if (c->need_get) {
        send_req(c, now, ELECTION_REQ_GET, ELECTION_FOR_OBSERVE, c->cfg.renew_ns);
        return;
    }
    if (!c->have_obs || c->quarantine)
        return;
    if (c->role == ELECTION_LEADER) {
        if (t < c->renew_at)
            return;
        if (!preferred_other(c)) {
            c->renew_at = t + c->cfg.retry_ns;
            send_req(c, now, ELECTION_REQ_UPDATE, ELECTION_FOR_RENEW, renew_timeout(c, t));
            return;
        }
        /* Planned handover: stop first, then release below as a standby. */
        step_down(c, ELECTION_STOP_HANDOVER);
        c->handed_over = true;
    }
    if (c->obs.found && is_self(c, &c->obs.rec) && preferred_other(c)) {
        send_req(c, now, ELECTION_REQ_UPDATE, ELECTION_FOR_RELEASE, c->cfg.renew_ns);
        return;
    }
    if (may_acquire(c, t)) {
        send_req(c, now, c->obs.found ? ELECTION_REQ_UPDATE : ELECTION_REQ_CREATE,
                 ELECTION_FOR_ACQUIRE, c->cfg.renew_ns);
        c->fl.took = take_cause(c, t);
        return;
    }
    if (!c->watch_up && t >= c->next_poll)
        send_req(c, now, ELECTION_REQ_GET, ELECTION_FOR_POLL, c->cfg.renew_ns);
}

/* ---- results ------------------------------------------------------------- */

static void on_get(struct election_core *c, struct election_now now, const struct inflight *f,
                   enum election_outcome outcome, const struct election_observation *o, bool fresh)
{
    int64_t t = now.mono_ns;
    bool got = false;
    if (outcome == ELECTION_OK && o) {
        observe(c, t, o);
        got = true;
    } else if (outcome == ELECTION_NOT_FOUND) {
        observe_missing(c, t);
        got = true;
    }
    c->next_poll = f->sent + jitter(c, c->cfg.retry_ns);
    if (got) {
        c->need_get = false;
        if (fresh)
            c->quarantine = false;
        if (c->stopping)
            c->rel_phase = REL_UPDATE;
        return;
    }
    failed(c, t);
    if (f->purpose == ELECTION_FOR_OBSERVE)
        c->need_get = true;
}

static void on_write(struct election_core *c, struct election_now now, const struct inflight *f,
                     enum election_outcome outcome, const struct election_observation *o,
                     bool fresh)
{
    int64_t t = now.mono_ns;
    bool renew = f->purpose == ELECTION_FOR_RENEW && c->role == ELECTION_LEADER;
    switch (outcome) {
    case ELECTION_OK: {
        /* The server answered without a new resourceVersion: nothing was
         * written, observers saw nothing, so it proves nothing. */
        bool noop = f->kind == ELECTION_REQ_UPDATE && o && strcmp(o->rv, f->rv) == 0;
        if (o)
            observe(c, t, o);
        if (f->purpose == ELECTION_FOR_RELEASE) {
            if (c->stopping)
                finish(c, true);
            return;
        }
        if (noop) {
            if (renew)
                c->stats.renew_failed++;
            failed(c, t);
            return;
        }
        c->streak = 0;
        if (!fresh)
            return; /* sent before a clock jump: an observation only */
        if (c->stopping) {
            c->want_release = true; /* we hold it now; the release takes it back */
            return;
        }
        if (c->role == ELECTION_LEADER) {
            if (f->purpose == ELECTION_FOR_RENEW)
                c->stats.renew_ok++;
            extend(c, f);
        } else if (c->obs.found && is_self(c, &c->obs.rec) &&
                   f->sent + c->cfg.renew_ns - c->margin > t) {
            become_leader(c, f);
        }
        return;
    }
    case ELECTION_CONFLICT:
        /* A 409 is an answer: the first is followed by a GET at once (a
         * leader renews right after it); conflicts in a row back off. */
        c->need_get = true;
        failed_lag(c, t, 1);
        if (renew) {
            c->stats.renew_failed++;
            c->stats.slowpath++; /* the next renewal needs a GET first */
            c->renew_at = t;     /* renew again as soon as the GET has answered */
        }
        if (c->stopping)
            c->rel_phase = REL_GET;
        return;
    case ELECTION_NOT_FOUND:
        /* An update: the object went. A create: its namespace does not
         * exist (the object itself cannot be missing): that repeats until
         * someone creates the namespace, so it backs off like any fault. */
        observe_missing(c, t);
        if (renew)
            c->stats.renew_failed++;
        if (f->kind == ELECTION_REQ_CREATE)
            failed(c, t);
        return;
    case ELECTION_FAILED:
    case ELECTION_TIMEOUT:
        failed(c, t);
        if (renew) {
            /* Retry at the next renew slot (renew_at was set at send time),
             * or after the backoff (at most a retryPeriod) when that slot
             * has passed; the safe deadline does the rest. */
            c->stats.renew_failed++;
            return;
        }
        if (c->stopping) {
            c->rel_phase = REL_GET;
            return;
        }
        /* The write may or may not have happened: look before trying again. */
        c->need_get = true;
        return;
    }
}

static void handle_result(struct election_core *c, struct election_now now, uint64_t id,
                          enum election_outcome outcome, const struct election_observation *o)
{
    if (id == 0 || id != c->fl.id) {
        c->stats.stale_results++;
        if (outcome == ELECTION_OK && o)
            observe(c, now.mono_ns, o);
        return;
    }
    struct inflight f = c->fl;
    c->fl.id = 0;
    bool fresh = f.epoch == c->epoch;
    if (outcome == ELECTION_CONFLICT)
        c->stats.conflicts++;
    if (f.kind == ELECTION_REQ_GET)
        on_get(c, now, &f, outcome, o, fresh);
    else
        on_write(c, now, &f, outcome, o, fresh);
}

static void expire_inflight(struct election_core *c, struct election_now now)
{
    /* The I/O side never answered: abandon the request as timed out. */
    uint64_t id = c->fl.id;
    struct election_action a;
    memset(&a, 0, sizeof(a));
    a.kind = ELECTION_ACT_CANCEL;
    a.req_id = id;
    a.req = c->fl.kind;
    a.purpose = c->fl.purpose;
    push(c, &a);
    handle_result(c, now, id, ELECTION_TIMEOUT, NULL);
}

/* ---- clock --------------------------------------------------------------- */

static void on_jump(struct election_core *c, int64_t t, int64_t delta)
{
    c->epoch++;
    c->stats.clock_jumps++;
    step_down(c, ELECTION_STOP_CLOCK_JUMP);
    cancel_inflight(c);
    /* Stop acting, keep observing: nothing we measured before the jump is
     * trusted. The expiry clock restarts now and we act again only after a
     * GET sent from here on has answered. */
    c->quarantine = true;
    c->need_get = true;
    if (c->have_obs)
        c->obs_time = t;
    if (c->gone_expiry)
        c->gone_expiry = t + c->cfg.lease_ns;
    c->not_before = t;
    c->next_poll = t;
    c->renew_at = t;
    if (c->stopping) {
        c->rel_phase = REL_GET;
        if (delta < 0)
            c->release_deadline = t + c->cfg.renew_ns;
    }
}

static void clock_check(struct election_core *c, int64_t t)
{
    if (c->started) {
        int64_t d = t - c->last_now;
        if (d < 0 || d > c->jump)
            on_jump(c, t, d);
    }
    c->last_now = t;
}

/* ---- public -------------------------------------------------------------- */

struct election_core *election_core_new(const struct election_config *cfg,
                                        struct election_guard *guard)
{
    struct election_core *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->cfg = *cfg;
    c->guard = guard;
    c->margin = election_config_margin(cfg);
    c->jump = election_config_jump(cfg);
    c->role = ELECTION_STANDBY;
    c->rng = cfg->seed ? cfg->seed : UINT64_C(0x5eed5eed5eed5eed);
    return c;
}

void election_core_free(struct election_core *c)
{
    free(c);
}

void election_core_start(struct election_core *c, struct election_now now)
{
    if (c->started || c->done)
        return;
    c->started = true;
    c->last_now = now.mono_ns;
    c->need_get = true;
    c->next_poll = now.mono_ns;
    decide(c, now);
}

void election_core_tick(struct election_core *c, struct election_now now)
{
    if (c->done)
        return;
    clock_check(c, now.mono_ns);
    decide(c, now);
}

void election_core_observe(struct election_core *c, struct election_now now,
                           const struct election_observation *obs)
{
    if (c->done)
        return;
    clock_check(c, now.mono_ns);
    observe(c, now.mono_ns, obs);
    decide(c, now);
}

void election_core_watch_state(struct election_core *c, struct election_now now, bool up)
{
    if (c->done)
        return;
    clock_check(c, now.mono_ns);
    if (c->watch_up && !up)
        c->next_poll = now.mono_ns + jitter(c, c->cfg.retry_ns);
    if (!c->watch_up && up) {
        /* A fresh list + watch answered: the server is back. Whatever
         * failed before is worth one prompt try (after an outage the lock
         * is taken at once, not after a long backoff). */
        c->streak = 0;
        if (c->not_before > now.mono_ns)
            c->not_before = now.mono_ns;
    }
    c->watch_up = up;
    decide(c, now);
}

void election_core_result(struct election_core *c, struct election_now now, uint64_t req_id,
                          enum election_outcome outcome, const struct election_observation *obs)
{
    if (c->done)
        return;
    clock_check(c, now.mono_ns);
    handle_result(c, now, req_id, outcome, obs);
    decide(c, now);
}

void election_core_holder_dead(struct election_core *c, struct election_now now, const char *holder,
                               const char *rv)
{
    if (c->done || !c->started)
        return;
    clock_check(c, now.mono_ns);
    /* Only for the record we hold now, naming that holder, someone else,
     * while we stand by and act normally. */
    if (!c->stopping && !c->quarantine && c->role == ELECTION_STANDBY && c->have_obs &&
        c->obs.found && !c->obs.rec.holder_overflow && c->obs.rec.holder[0] &&
        !is_self(c, &c->obs.rec) && strcmp(c->obs.rec.holder, holder) == 0 &&
        strcmp(c->obs.rv, rv) == 0 && rv[0])
        copy_str(c->dead_rv, sizeof(c->dead_rv), rv);
    decide(c, now);
}

void election_core_shutdown(struct election_core *c, struct election_now now)
{
    if (c->done || c->stopping)
        return;
    if (c->started)
        clock_check(c, now.mono_ns);
    c->stopping = true;
    c->release_deadline = now.mono_ns + c->cfg.renew_ns;
    c->rel_phase = REL_GET;
    c->not_before = now.mono_ns;
    c->want_release = c->started && (c->role == ELECTION_LEADER ||
                                     (c->fl.id && c->fl.purpose == ELECTION_FOR_ACQUIRE) ||
                                     (c->have_obs && c->obs.found && is_self(c, &c->obs.rec)));
    step_down(c, ELECTION_STOP_SHUTDOWN);
    /* An in-flight renewal would only race with the release (the 409 users
     * hit); the fresh GET below sees whatever it did. */
    cancel_inflight(c);
    if (!c->started) {
        finish(c, false);
        return;
    }
    decide(c, now);
}

int election_core_next_action(struct election_core *c, struct election_action *out)
{
    if (c->qlen == 0)
        return 0;
    *out = c->q[c->qhead];
    c->qhead = (c->qhead + 1) % CORE_QUEUE_CAP;
    c->qlen--;
    return 1;
}
