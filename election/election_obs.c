#include "election_impl.h"

#include "cx_json.h"

#include <stdio.h>

#define HEALTHZ_GRACE_NS (INT64_C(20) * 1000000000)

/* ---- metrics ------------------------------------------------------------- */

static const double renew_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                       0.1,    0.25,  0.5,    1,     2.5,  5,     10};

void election_metrics_init(struct election *e)
{
    const char *name = e->cfg.name;
    struct cx_metric *m;
    m = cx_gauge("leader_election_master_status",
                 "1 if this replica leads the election named by the lock, else 0 (client-go's "
                 "name and meaning)",
                 "name");
    e->m.master = m ? cx_metric_with(m, name) : NULL;
    m = cx_counter("coxswain_leader_election_transitions_total",
                   "Times this replica started or stopped leading", "name,direction");
    e->m.started = m ? cx_metric_with(m, name, "started") : NULL;
    e->m.stopped = m ? cx_metric_with(m, name, "stopped") : NULL;
    m = cx_gauge("coxswain_leader_election_lease_transitions",
                 "leaseTransitions (leaderTransitions) of the lock record last observed", "name");
    e->m.lease_transitions = m ? cx_metric_with(m, name) : NULL;
    m = cx_histogram("coxswain_leader_election_renew_duration_seconds",
                     "Round trip of successful lease renewals", "name", renew_buckets,
                     sizeof(renew_buckets) / sizeof(renew_buckets[0]));
    e->m.renew_seconds = m ? cx_metric_with(m, name) : NULL;
    m = cx_counter("coxswain_leader_election_renew_failures_total",
                   "Renewals that failed, conflicted, timed out or changed nothing", "name");
    e->m.renew_failures = m ? cx_metric_with(m, name) : NULL;
    m = cx_counter("leader_election_slowpath_total",
                   "Renewals that could not use the cached record and needed a GET of the lock "
                   "first, after a conflict (client-go's name and meaning)",
                   "name");
    e->m.slowpath = m ? cx_metric_with(m, name) : NULL;
    e->m.takeovers = cx_counter("coxswain_leader_election_takeovers_total",
                                "Terms this replica began, by what made the lock free: created, "
                                "release, lease-expiry, proof-of-death (peer channel), own",
                                "name,cause");
    for (int k = 0; k < ELECTION_TAKE_COUNT && e->m.takeovers; k++)
        cx_metric_with(e->m.takeovers, name, election_takeover_name(k));
    m = cx_gauge("coxswain_leader_election_last_renew_timestamp_seconds",
                 "Wall-clock time (Unix seconds) at which the last successful renewal was sent",
                 "name");
    e->m.last_renew = m ? cx_metric_with(m, name) : NULL;
    e->m.requests = cx_counter("coxswain_leader_election_requests_total",
                               "Requests the elector made, by purpose and outcome (the watch "
                               "and its list not included)",
                               "name,purpose,outcome");
    e->m.stepdowns = cx_counter("coxswain_leader_election_stepdowns_total",
                                "Times this replica stopped leading, by reason", "name,reason");
    /* Every series exists from the start (at 0), so alerts and dashboards
     * see the metric before the first step-down or error. */
    for (int r = ELECTION_STOP_DEADLINE; r <= ELECTION_STOP_SHUTDOWN && e->m.stepdowns; r++)
        cx_metric_with(e->m.stepdowns, name, election_stop_reason_name(r));
    m = cx_counter("coxswain_leader_election_errors_total",
                   "Failed elector requests (lock requests, its list and watch, Events) by error "
                   "class",
                   "name,class");
    for (int c = 1; c < ELECTION_ERR_COUNT && m; c++)
        if (c != ELECTION_ERR_CANCELLED)
            e->m.errors[c] = cx_metric_with(m, name, election_err_class_name(c));
    m = cx_gauge("coxswain_leader_election_peer_listening",
                 "1 if this replica serves the peer liveness channel (proof of death), 0 if the "
                 "channel is off or there is no address to advertise (no POD_IP)",
                 "name");
    e->m.peer_listening = m ? cx_metric_with(m, name) : NULL;
    if (e->m.peer_listening)
        cx_series_set(e->m.peer_listening, e->peer_off_why && !*e->peer_off_why ? 1 : 0);
    if (e->m.master)
        cx_series_set(e->m.master, 0);
}

void election_inc(struct cx_series *s)
{
    if (s)
        cx_series_inc(s);
}

/* ---- status -------------------------------------------------------------- */

void election_status_update(struct election *e)
{
    const struct election_observation *o = election_core_observed(e->core);
    pthread_mutex_lock(&e->mu);
    e->st.role = election_core_role(e->core);
    e->st.term = election_core_term(e->core);
    snprintf(e->st.holder, sizeof(e->st.holder), "%s", election_core_holder(e->core));
    e->st.watch_up = e->watch_up;
    e->st.transitions = o && o->found ? o->rec.transitions : 0;
    e->st.stats = *election_core_stats(e->core);
    snprintf(e->st.last_error, sizeof(e->st.last_error), "%s", election_report_last(&e->rep_req));
    if (e->peer)
        election_peer_stats(e->peer, &e->st.peer);
    pthread_mutex_unlock(&e->mu);
    if (e->m.lease_transitions)
        cx_series_set(e->m.lease_transitions, e->st.transitions);
}

/* ---- health and status ---------------------------------------------------- */

int election_healthz(void *arg, struct cx_buf *why)
{
    struct election *e = arg;
    if (election_guard_healthy(&e->guard, election_clock_ns(), e->cfg.lease_ns, HEALTHZ_GRACE_NS))
        return 0;
    int64_t age = election_clock_ns() - atomic_load(&e->guard.last_renew_mono);
    if (why &&
        cx_buf_printf(why,
                      "leader election: we believe we lead but last renewed %lld ms ago "
                      "(limit: lease %lld ms + 20 s)",
                      (long long)(age / 1000000), (long long)(e->cfg.lease_ns / 1000000)) != 0)
        return -1;
    return -1;
}

int election_status_json(struct election *e, struct cx_buf *out)
{
    pthread_mutex_lock(&e->mu);
    __typeof__(e->st) st = e->st;
    pthread_mutex_unlock(&e->mu);
    int64_t left = 0;
    bool may_write = election_guard_check(&e->guard, election_clock_ns(), &left, NULL);
    /* The check counted as a write attempt; do not let the page skew it. */
    if (may_write)
        atomic_fetch_sub(&e->guard.allowed, 1);
    else
        atomic_fetch_sub(&e->guard.refused, 1);
    int rc = cx_buf_puts(out, "{\"identity\":");
    rc |= cx_json_escape(out, e->cfg.identity);
    rc |= cx_buf_printf(out, ",\"lock\":\"%s\",\"namespace\":", election_lock_desc(e));
    rc |= cx_json_escape(out, e->cfg.ns);
    rc |= cx_buf_puts(out, ",\"name\":");
    rc |= cx_json_escape(out, e->cfg.name);
    rc |= cx_buf_printf(out, ",\"role\":\"%s\",\"term\":%llu,\"holder\":",
                        st.role == ELECTION_LEADER    ? "leader"
                        : st.role == ELECTION_STOPPED ? "stopped"
                                                      : "standby",
                        (unsigned long long)st.term);
    rc |= cx_json_escape(out, st.holder);
    rc |= cx_buf_printf(
        out,
        ",\"mayWrite\":%s,\"safeMillisecondsLeft\":%lld,\"watch\":\"%s\","
        "\"leaseTransitions\":%d,\"requests\":%llu,\"renewals\":%llu,"
        "\"renewFailures\":%llu,\"conflicts\":%llu,\"clockJumps\":%llu,"
        "\"writesAllowed\":%llu,\"writesRefused\":%llu,\"errors\":%llu,\"lastError\":",
        may_write ? "true" : "false", (long long)(may_write ? left / 1000000 : 0),
        st.watch_up ? "up" : "broken", (int)st.transitions, (unsigned long long)st.stats.requests,
        (unsigned long long)st.stats.renew_ok, (unsigned long long)st.stats.renew_failed,
        (unsigned long long)st.stats.conflicts, (unsigned long long)st.stats.clock_jumps,
        (unsigned long long)atomic_load(&e->guard.allowed),
        (unsigned long long)atomic_load(&e->guard.refused), (unsigned long long)st.errors);
    rc |= cx_json_escape(out, st.last_error);
    /* The peer channel: where it listens and what it advertises (fixed
     * before the elector's thread starts), and its counters. */
    if (e->peer) {
        bool listening = e->peer_off_why && !*e->peer_off_why;
        rc |= cx_buf_printf(out, ",\"peer\":{\"listening\":%s,\"port\":%d,\"advertise\":",
                            listening ? "true" : "false", election_peer_port(e->peer));
        rc |= cx_json_escape(out, e->cfg.peer_advertise);
        if (!listening) {
            rc |= cx_buf_puts(out, ",\"notListening\":");
            rc |= cx_json_escape(out, e->peer_off_why ? e->peer_off_why : "");
        }
        rc |= cx_buf_printf(out,
                            ",\"accepted\":%llu,\"connects\":%llu,\"ended\":%llu,"
                            "\"proofs\":%llu,\"noProofs\":%llu}",
                            (unsigned long long)st.peer.accepted,
                            (unsigned long long)st.peer.connects, (unsigned long long)st.peer.ended,
                            (unsigned long long)st.peer.proofs,
                            (unsigned long long)st.peer.no_proofs);
    } else {
        rc |= cx_buf_puts(out, ",\"peer\":null");
    }
    rc |= cx_buf_puts(out, "}");
    return rc ? -1 : 0;
}
