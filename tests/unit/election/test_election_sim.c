/*
 * Several election cores against one fake lock in simulated time, with
 * network delays, lost requests and answers, partitions, an API outage,
 * paused processes (SIGSTOP), crashes and graceful restarts.
 *
 * Invariant checked after every step: whenever a replica's write guard
 * allows a write, the lock on the server names that replica. That is what
 * "no two leaders write at once" means once network delays exist: a new
 * holder's acquisition commits only after every older leader's guard has
 * closed. Wall clocks differ by hours between replicas, on purpose.
 */
#include "cxtest.h"
#include "election_config.h"
#include "election_core.h"
#include "election_guard.h"
#include "fake_lock.h"

#include <stdlib.h>

#define MS(x)  ((int64_t)(x)*1000000)
#define NODES  3
#define EV_CAP 4096
#define SIM_T0 MS(1000000)

enum ev_kind {
    EV_ARRIVE = 0,  /* a request reaches the server */
    EV_RESP = 1,    /* its answer reaches the node */
    EV_TIMEOUT = 2, /* the node's I/O layer gives up on it */
    EV_WATCH = 3,   /* a watch event reaches the node */
    EV_WATCH_UP = 4,
};

struct ev {
    int64_t at;
    uint64_t seq;
    enum ev_kind kind;
    int node;
    uint64_t gen;
    uint64_t req_id;
    struct election_action act;
    enum election_outcome out;
    struct election_observation obs;
    bool has_obs;
};

struct node {
    bool alive;
    uint64_t gen;
    char id[32];
    struct election_config cfg;
    struct election_guard guard;
    struct election_core *c;
    int64_t wall_skew;
    bool pending;
    uint64_t req_id;
    bool watch;
    bool partitioned;
    int64_t paused_until;
    bool stopping;
    int64_t restart_at; /* dead: restart at this time (0: never) */
    uint64_t requests;
    int64_t started_at; /* last STARTED_LEADING */
};

struct sim {
    int64_t now;
    uint64_t rng;
    uint64_t seq;
    struct fake_lock lock;
    struct node n[NODES];
    struct ev *ev;
    int nev;
    uint64_t generation;
    /* Fault knobs. */
    int drop_pct;      /* request lost before the server */
    int lose_resp_pct; /* applied, answer lost */
    int slow_pct;      /* a delay of up to slow_ms instead of up to fast_ms */
    int fast_ms;
    int slow_ms;
    bool api_down;
    /* Results. */
    uint64_t violations;
    uint64_t acquisitions;
    int64_t last_acquire_at;
    char last_acquirer[32];
    uint64_t guarded_checks;
    int64_t last_t;
    long same_t;
};

static uint64_t rnd(struct sim *s)
{
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return s->rng;
}

static int64_t delay(struct sim *s)
{
    int ms = (int)(rnd(s) % 100) < s->slow_pct ? s->slow_ms : s->fast_ms;
    return (int64_t)(rnd(s) % (uint64_t)(ms * 1000 + 1)) * 1000;
}

static void push_ev(struct sim *s, const struct ev *e)
{
    if (s->nev == EV_CAP) {
        cxt_fail(__FILE__, __LINE__, 1, "event queue full");
        return;
    }
    s->ev[s->nev] = *e;
    s->ev[s->nev].seq = ++s->seq;
    s->nev++;
}

static struct election_now node_now(struct sim *s, struct node *nd)
{
    struct election_now t = {s->now, s->now + nd->wall_skew};
    return t;
}

static void node_start(struct sim *s, int i)
{
    struct node *nd = &s->n[i];
    if (nd->c)
        election_core_free(nd->c);
    s->generation++;
    memset(nd, 0, sizeof(*nd));
    nd->alive = true;
    nd->gen = s->generation;
    snprintf(nd->id, sizeof(nd->id), "node%d-%llu", i, (unsigned long long)nd->gen);
    election_config_defaults(&nd->cfg);
    nd->cfg.lease_ns = MS(3000);
    nd->cfg.renew_ns = MS(2000);
    nd->cfg.retry_ns = MS(500);
    nd->cfg.seed = rnd(s) | 1;
    memcpy(nd->cfg.identity, nd->id, sizeof(nd->id));
    nd->wall_skew = ((int64_t)(rnd(s) % 7200) - 3600) * MS(1000);
    election_guard_init(&nd->guard, election_config_margin(&nd->cfg));
    nd->c = election_core_new(&nd->cfg, &nd->guard);
    nd->watch = !s->api_down;
    election_core_start(nd->c, node_now(s, nd));
    if (nd->watch)
        election_core_watch_state(nd->c, node_now(s, nd), true);
}

static void drain(struct sim *s, int i)
{
    struct node *nd = &s->n[i];
    struct election_action a;
    while (election_core_next_action(nd->c, &a)) {
        struct ev e;
        memset(&e, 0, sizeof(e));
        e.node = i;
        e.gen = nd->gen;
        e.req_id = a.req_id;
        switch (a.kind) {
        case ELECTION_ACT_SEND:
            if (nd->pending)
                cxt_fail(__FILE__, __LINE__, 0, "%s: two requests in flight", nd->id);
            nd->pending = true;
            nd->req_id = a.req_id;
            nd->requests++;
            e.kind = EV_TIMEOUT;
            e.at = s->now + a.timeout_ns;
            push_ev(s, &e);
            if (nd->partitioned || s->api_down || (int)(rnd(s) % 100) < s->drop_pct)
                break;
            e.kind = EV_ARRIVE;
            e.at = s->now + delay(s);
            e.act = a;
            push_ev(s, &e);
            break;
        case ELECTION_ACT_CANCEL:
            if (nd->pending && nd->req_id == a.req_id)
                nd->pending = false;
            break;
        case ELECTION_ACT_STARTED_LEADING:
            s->acquisitions++;
            s->last_acquire_at = s->now;
            snprintf(s->last_acquirer, sizeof(s->last_acquirer), "%s", nd->id);
            nd->started_at = s->now;
            break;
        case ELECTION_ACT_DONE:
            nd->alive = false;
            nd->stopping = false;
            break;
        default:
            break;
        }
    }
}

static void check_invariant(struct sim *s)
{
    for (int i = 0; i < NODES; i++) {
        struct node *nd = &s->n[i];
        if (!nd->alive || nd->paused_until > s->now)
            continue;
        s->guarded_checks++;
        if (!election_guard_check(&nd->guard, s->now, NULL, NULL))
            continue;
        if (!s->lock.found || strcmp(s->lock.rec.holder, nd->id) != 0) {
            if (s->violations++ < 5)
                cxt_fail(__FILE__, __LINE__, 0,
                         "t=%lldms %s may write but the lock names \"%s\" (found %d)",
                         (long long)((s->now - SIM_T0) / 1000000), nd->id,
                         s->lock.found ? s->lock.rec.holder : "", s->lock.found);
        }
    }
}

static void broadcast(struct sim *s)
{
    for (int i = 0; i < NODES; i++) {
        struct node *nd = &s->n[i];
        if (!nd->alive || !nd->watch || nd->partitioned || s->api_down)
            continue;
        struct ev e;
        memset(&e, 0, sizeof(e));
        e.kind = EV_WATCH;
        e.node = i;
        e.gen = nd->gen;
        e.at = s->now + delay(s);
        fake_obs(&s->lock, &e.obs);
        e.has_obs = true;
        push_ev(s, &e);
    }
}

static void process(struct sim *s, struct ev *e)
{
    if (e->kind == EV_ARRIVE) {
        uint64_t rv = s->lock.rv;
        bool found = s->lock.found;
        struct ev r;
        memset(&r, 0, sizeof(r));
        r.out = fake_apply(&s->lock, &e->act, &r.obs);
        r.has_obs = r.out == ELECTION_OK;
        if (s->lock.rv != rv || s->lock.found != found)
            broadcast(s);
        struct node *nd = &s->n[e->node];
        if (nd->partitioned || s->api_down || (int)(rnd(s) % 100) < s->lose_resp_pct)
            return;
        r.kind = EV_RESP;
        r.node = e->node;
        r.gen = e->gen;
        r.req_id = e->req_id;
        r.at = s->now + delay(s);
        push_ev(s, &r);
        return;
    }
    struct node *nd = &s->n[e->node];
    if (!nd->alive || nd->gen != e->gen)
        return;
    if (nd->paused_until > s->now) {
        e->at = nd->paused_until; /* delivered when the process runs again */
        push_ev(s, e);
        return;
    }
    struct election_now t = node_now(s, nd);
    switch (e->kind) {
    case EV_RESP:
    case EV_TIMEOUT:
        if (!nd->pending || nd->req_id != e->req_id)
            return;
        nd->pending = false;
        election_core_result(nd->c, t, e->req_id, e->kind == EV_RESP ? e->out : ELECTION_TIMEOUT,
                             e->has_obs ? &e->obs : NULL);
        break;
    case EV_WATCH:
        if (!nd->watch)
            return;
        election_core_observe(nd->c, t, &e->obs);
        break;
    case EV_WATCH_UP:
        if (nd->partitioned || s->api_down)
            return;
        nd->watch = true;
        election_core_watch_state(nd->c, t, true);
        drain(s, e->node);
        if (s->lock.found) {
            struct election_observation o;
            fake_obs(&s->lock, &o);
            election_core_observe(nd->c, t, &o);
        }
        break;
    case EV_ARRIVE:
        break;
    }
    drain(s, e->node);
}

static void watch_down(struct sim *s, int i)
{
    struct node *nd = &s->n[i];
    if (!nd->alive || !nd->watch)
        return;
    nd->watch = false;
    if (nd->paused_until <= s->now) {
        election_core_watch_state(nd->c, node_now(s, nd), false);
        drain(s, i);
    }
}

static void watch_up_later(struct sim *s, int i, int64_t after)
{
    struct ev e;
    memset(&e, 0, sizeof(e));
    e.kind = EV_WATCH_UP;
    e.node = i;
    e.gen = s->n[i].gen;
    e.at = s->now + after;
    push_ev(s, &e);
}

/* Advances to |until|, processing events and ticks in time order. */
static void sim_run(struct sim *s, int64_t until)
{
    for (;;) {
        int best = -1;
        for (int k = 0; k < s->nev; k++)
            if (best < 0 || s->ev[k].at < s->ev[best].at ||
                (s->ev[k].at == s->ev[best].at && s->ev[k].seq < s->ev[best].seq))
                best = k;
        int64_t te = best >= 0 ? s->ev[best].at : INT64_MAX;
        int tick_node = -1;
        int64_t tn = INT64_MAX;
        for (int i = 0; i < NODES; i++) {
            struct node *nd = &s->n[i];
            if (!nd->alive) {
                if (nd->restart_at && nd->restart_at < tn) {
                    tn = nd->restart_at;
                    tick_node = i;
                }
                continue;
            }
            int64_t w = election_core_next_wakeup(nd->c);
            if (nd->paused_until > s->now && w < nd->paused_until)
                w = nd->paused_until;
            if (w < tn) {
                tn = w;
                tick_node = i;
            }
        }
        int64_t t = te < tn ? te : tn;
        if (t > until)
            break;
        /* A core that keeps asking for "now" without doing anything
         * would spin the daemon's loop: fail instead of hanging. */
        if (t == s->last_t) {
            if (++s->same_t == 10000) {
                cxt_fail(__FILE__, __LINE__, 1, "busy loop at t=%lldms (node %d)",
                         (long long)((t - SIM_T0) / 1000000), tick_node);
                return;
            }
        } else {
            s->same_t = 0;
            s->last_t = t;
        }
        if (t > s->now)
            s->now = t;
        if (te <= tn) {
            struct ev e = s->ev[best];
            s->ev[best] = s->ev[--s->nev];
            process(s, &e);
        } else {
            struct node *nd = &s->n[tick_node];
            if (!nd->alive) {
                node_start(s, tick_node);
            } else {
                if (nd->paused_until && nd->paused_until <= s->now) {
                    nd->paused_until = 0;
                    /* The watch broke while we were stopped (the server
                     * kept writing to a socket nobody read). */
                }
                election_core_tick(nd->c, node_now(s, nd));
            }
            drain(s, tick_node);
        }
        check_invariant(s);
    }
    if (until > s->now)
        s->now = until;
}

static void sim_init(struct sim *s, uint64_t seed)
{
    memset(s, 0, sizeof(*s));
    s->ev = calloc(EV_CAP, sizeof(struct ev));
    s->rng = seed * UINT64_C(0x9e3779b97f4a7c15) + 1;
    s->now = SIM_T0;
    s->fast_ms = 20;
    s->slow_ms = 20;
    for (int i = 0; i < NODES; i++)
        node_start(s, i);
    for (int i = 0; i < NODES; i++)
        drain(s, i);
}

static void sim_free(struct sim *s)
{
    for (int i = 0; i < NODES; i++)
        if (s->n[i].c)
            election_core_free(s->n[i].c);
    free(s->ev);
}

static int leaders(struct sim *s, int *which)
{
    int k = 0;
    for (int i = 0; i < NODES; i++)
        if (s->n[i].alive && election_core_role(s->n[i].c) == ELECTION_LEADER &&
            election_guard_check(&s->n[i].guard, s->now, NULL, NULL)) {
            k++;
            if (which)
                *which = i;
        }
    return k;
}

/* ---- scenarios ------------------------------------------------------------ */

static void test_three_electors_one_leader_standbys_silent(void)
{
    struct sim s;
    sim_init(&s, 1);
    sim_run(&s, SIM_T0 + MS(2000));
    int l = -1;
    CHECK_INT_EQ(leaders(&s, &l), 1);
    REQUIRE(l >= 0);
    uint64_t before[NODES];
    for (int i = 0; i < NODES; i++)
        before[i] = s.n[i].requests;
    sim_run(&s, SIM_T0 + MS(62000));
    CHECK_INT_EQ(leaders(&s, NULL), 1);
    CHECK_INT_EQ(election_core_role(s.n[l].c), ELECTION_LEADER);
    CHECK_INT_EQ(s.acquisitions, 1);
    for (int i = 0; i < NODES; i++) {
        uint64_t made = s.n[i].requests - before[i];
        if (i == l) {
            CHECK_INT_GE(made, 115); /* a renewal every 500 ms: 120 a minute */
            CHECK_INT_LE(made, 121);
        } else {
            CHECK_INT_EQ(made, 0); /* standbys only watch */
        }
    }
    CHECK_INT_EQ(s.violations, 0);
    sim_free(&s);
}

static void test_crash_failover_within_lease(void)
{
    struct sim s;
    sim_init(&s, 2);
    for (int round = 0; round < 5; round++) {
        sim_run(&s, s.now + MS(4000));
        int l = -1;
        REQUIRE(leaders(&s, &l) == 1);
        uint64_t acq = s.acquisitions;
        int64_t killed = s.now;
        s.n[l].alive = false; /* kill -9 */
        s.n[l].restart_at = killed + MS(1000);
        sim_run(&s, killed + MS(3600));
        CHECK_INT_EQ(s.acquisitions, acq + 1);
        /* The last renewal happened at most one retry period before the
         * kill, so the takeover comes within the lease of the kill (plus
         * a few 20 ms hops). */
        CHECK_INT_LE(s.last_acquire_at - killed, MS(3100));
        CHECK_INT_GE(s.last_acquire_at - killed, MS(2400));
    }
    CHECK_INT_EQ(s.violations, 0);
    sim_free(&s);
}

static void test_graceful_handover_is_immediate(void)
{
    struct sim s;
    sim_init(&s, 3);
    for (int round = 0; round < 5; round++) {
        sim_run(&s, s.now + MS(3000));
        int l = -1;
        REQUIRE(leaders(&s, &l) == 1);
        uint64_t acq = s.acquisitions;
        int64_t t = s.now;
        election_core_shutdown(s.n[l].c, node_now(&s, &s.n[l]));
        drain(&s, l);
        s.n[l].restart_at = t + MS(1000);
        sim_run(&s, t + MS(500));
        CHECK_INT_EQ(s.acquisitions, acq + 1);
        /* GET + PUT by the old leader, a watch event, a PUT by the new
         * one: at most six 20 ms hops. */
        CHECK_INT_LE(s.last_acquire_at - t, MS(120));
    }
    CHECK_INT_EQ(s.violations, 0);
    sim_free(&s);
}

static void test_paused_leader_never_writes_after_takeover(void)
{
    struct sim s;
    sim_init(&s, 4);
    sim_run(&s, SIM_T0 + MS(3000));
    int l = -1;
    REQUIRE(leaders(&s, &l) == 1);
    s.n[l].paused_until = s.now + MS(5000); /* SIGSTOP longer than the lease */
    sim_run(&s, s.now + MS(4900));
    int l2 = -1;
    CHECK_INT_EQ(leaders(&s, &l2), 1);
    CHECK(l2 != l);
    sim_run(&s, s.now + MS(3000)); /* SIGCONT */
    CHECK(s.n[l].alive);
    CHECK_INT_EQ(election_core_role(s.n[l].c), ELECTION_STANDBY);
    CHECK(!election_guard_check(&s.n[l].guard, s.now, NULL, NULL));
    CHECK_INT_EQ(leaders(&s, NULL), 1);
    CHECK_INT_EQ(s.violations, 0);
    sim_free(&s);
}

static void test_partitioned_leader_stops_by_renew_deadline(void)
{
    struct sim s;
    sim_init(&s, 5);
    sim_run(&s, SIM_T0 + MS(3000));
    int l = -1;
    REQUIRE(leaders(&s, &l) == 1);
    int64_t cut = s.now;
    s.n[l].partitioned = true;
    watch_down(&s, l);
    sim_run(&s, cut + MS(2000));
    /* Its last good renewal was sent at most 500 ms before the cut. */
    CHECK(!election_guard_check(&s.n[l].guard, s.now, NULL, NULL));
    CHECK_INT_EQ(election_core_role(s.n[l].c), ELECTION_STANDBY);
    sim_run(&s, cut + MS(3200));
    int l2 = -1;
    CHECK_INT_EQ(leaders(&s, &l2), 1);
    CHECK(l2 != l);
    s.n[l].partitioned = false;
    watch_up_later(&s, l, MS(100));
    sim_run(&s, s.now + MS(5000));
    CHECK_INT_EQ(leaders(&s, NULL), 1);
    CHECK(s.n[l].alive);
    CHECK_INT_EQ(s.violations, 0);
    sim_free(&s);
}

static void test_api_outage_then_recovery(void)
{
    struct sim s;
    sim_init(&s, 6);
    sim_run(&s, SIM_T0 + MS(3000));
    REQUIRE(leaders(&s, NULL) == 1);
    s.api_down = true;
    for (int i = 0; i < NODES; i++)
        watch_down(&s, i);
    sim_run(&s, s.now + MS(30000));
    CHECK_INT_EQ(leaders(&s, NULL), 0);
    for (int i = 0; i < NODES; i++)
        CHECK(s.n[i].alive); /* nobody exits */
    s.api_down = false;
    for (int i = 0; i < NODES; i++)
        watch_up_later(&s, i, MS(50));
    sim_run(&s, s.now + MS(1500));
    CHECK_INT_EQ(leaders(&s, NULL), 1);
    CHECK_INT_EQ(s.violations, 0);
    sim_free(&s);
}

/* Random faults on many seeds; the invariant is checked at every step and
 * a single leader must emerge once the faults stop. */
static void test_random_faults_never_overlap(void)
{
    uint64_t total_acq = 0, checks = 0;
    for (uint64_t seed = 100; seed < 260; seed++) {
        struct sim s;
        sim_init(&s, seed);
        s.fast_ms = 30;
        s.slow_ms = 1500;
        s.slow_pct = 5;
        s.drop_pct = 3;
        s.lose_resp_pct = 3;
        int64_t end_faults = SIM_T0 + MS(60000);
        while (s.now < end_faults) {
            sim_run(&s, s.now + MS(500 + (int64_t)(rnd(&s) % 4000)));
            int i = (int)(rnd(&s) % NODES);
            struct node *nd = &s.n[i];
            switch (rnd(&s) % 7) {
            case 0: /* crash */
                if (nd->alive) {
                    nd->alive = false;
                    nd->restart_at = s.now + MS(500 + (int64_t)(rnd(&s) % 3000));
                }
                break;
            case 1: /* graceful restart */
                if (nd->alive && !nd->stopping) {
                    nd->stopping = true;
                    election_core_shutdown(nd->c, node_now(&s, nd));
                    drain(&s, i);
                    nd->restart_at = s.now + MS(200 + (int64_t)(rnd(&s) % 2000));
                }
                break;
            case 2: /* pause */
                if (nd->alive && nd->paused_until <= s.now)
                    nd->paused_until = s.now + MS(500 + (int64_t)(rnd(&s) % 6000));
                break;
            case 3: /* partition for a while */
                if (nd->alive && !nd->partitioned) {
                    nd->partitioned = true;
                    watch_down(&s, i);
                    sim_run(&s, s.now + MS(200 + (int64_t)(rnd(&s) % 6000)));
                    nd->partitioned = false;
                    if (nd->alive)
                        watch_up_later(&s, i, MS(50));
                }
                break;
            case 4: /* watch broken, requests fine */
                watch_down(&s, i);
                watch_up_later(&s, i, MS(100 + (int64_t)(rnd(&s) % 5000)));
                break;
            case 5: /* short API outage */
                s.api_down = true;
                for (int k = 0; k < NODES; k++)
                    watch_down(&s, k);
                sim_run(&s, s.now + MS(200 + (int64_t)(rnd(&s) % 4000)));
                s.api_down = false;
                for (int k = 0; k < NODES; k++)
                    watch_up_later(&s, k, MS(50));
                break;
            default:
                break;
            }
        }
        /* Calm: no more losses or slow hops; every node back. */
        s.drop_pct = s.lose_resp_pct = s.slow_pct = 0;
        for (int i = 0; i < NODES; i++) {
            s.n[i].partitioned = false;
            if (s.n[i].alive && !s.n[i].watch)
                watch_up_later(&s, i, MS(10));
        }
        sim_run(&s, end_faults + MS(20000));
        int l = -1;
        int k = leaders(&s, &l);
        if (k != 1)
            cxt_fail(__FILE__, __LINE__, 0, "seed %llu: %d leaders after the faults",
                     (unsigned long long)seed, k);
        CHECK_INT_EQ(s.violations, 0);
        if (s.violations)
            cxt_fail(__FILE__, __LINE__, 0, "seed %llu violated the invariant",
                     (unsigned long long)seed);
        total_acq += s.acquisitions;
        checks += s.guarded_checks;
        sim_free(&s);
    }
    printf("# %llu acquisitions, %llu guard checks over 160 seeds\n", (unsigned long long)total_acq,
           (unsigned long long)checks);
    CHECK_INT_GE(total_acq, 160 * 5); /* the faults did move leadership around */
}

static const struct cxt_case cases[] = {
    CXT(test_three_electors_one_leader_standbys_silent),
    CXT(test_crash_failover_within_lease),
    CXT(test_graceful_handover_is_immediate),
    CXT(test_paused_leader_never_writes_after_takeover),
    CXT(test_partitioned_leader_stops_by_renew_deadline),
    CXT(test_api_outage_then_recovery),
    CXT(test_random_faults_never_overlap),
};
CXT_MAIN(cases)
