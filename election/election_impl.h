/*
 * election_impl: the elector's state, shared by its files (election.c runs
 * the elector thread and its requests; election_obs.c its metrics, status
 * and health). Private to election/.
 */
#ifndef ELECTION_IMPL_H
#define ELECTION_IMPL_H

#include "election.h"

#include "cx_list.h"
#include "cx_metrics.h"
#include "cx_time.h"
#include "election_core.h"
#include "election_lock.h"
#include "election_peer.h"
#include "election_report.h"

#include <pthread.h>
#include <stdatomic.h>

/* A leadership change on its way to the main loop. */
struct notice {
    enum election_action_kind kind;
    uint64_t term;
    enum election_stop_reason reason;
    bool released;
    char leader[ELECTION_IDENTITY_MAX];
    struct cx_list link;
};

struct election_metrics {
    struct cx_series *master;
    struct cx_series *started;
    struct cx_series *stopped;
    struct cx_series *lease_transitions;
    struct cx_series *renew_seconds;
    struct cx_series *renew_failures;
    struct cx_series *slowpath;
    struct cx_metric *takeovers; /* {name,cause} */
    struct cx_series *last_renew;
    struct cx_metric *requests;                   /* {name,purpose,outcome} */
    struct cx_metric *stepdowns;                  /* {name,reason} */
    struct cx_series *errors[ELECTION_ERR_COUNT]; /* {name,class} */
    struct cx_series *peer_listening;
};

struct election {
    struct election_config cfg;
    struct election_kube kube;
    struct election_guard guard;
    struct election_callbacks cb;
    bool post_events;
    char component[64];

    /* Main side. */
    struct event_base *main_base;
    int note_rd, note_wr;
    struct event *note_ev;
    pthread_mutex_t mu;     /* notices, status */
    struct cx_list notices; /* FIFO of struct notice */

    /* Elector thread. */
    pthread_t th;
    bool thread_started;
    bool joined;
    int ctl_rd, ctl_wr;
    struct event_base *base;
    struct election_kube_conn *conn;
    struct election_peer *peer; /* NULL: the peer channel is off */
    /* Why the peer listener does not run ("" when it does): the channel is
     * off, or there is no address to advertise. Fixed before the thread. */
    const char *peer_off_why;
    struct election_core *core;
    struct election_lock lock;
    struct event *timer;
    struct event *ctl_ev;
    struct event *watch_retry;
    struct event *fail_ev;
    /* The release UPDATE, held while writes of the ended term are in
     * flight (election_guard_draining), polled every DRAIN_POLL_MS. */
    struct event *drain_ev;
    struct election_action drained;
    bool drain_pending;
    struct election_kube_call *call;
    uint64_t call_id;
    enum election_purpose call_purpose;
    enum election_req_kind call_kind;
    struct election_kube_call *list_call;
    struct election_kube_watch *watch;
    char watch_rv[ELECTION_RV_MAX];
    bool watch_up;
    int watch_failures;    /* since the watch last proved itself */
    bool watch_proven;     /* this watch delivered an event */
    int64_t watch_started; /* election_clock_ns() */
    uint64_t rng;          /* jitter of the watch's backoff */
    /* What failed, said once (election_report.h): the lock requests, the
     * list + watch, and the Events apart, so that one working does not
     * make the others' failures news again. */
    struct election_report rep_req, rep_watch, rep_event;
    bool pumping;
    bool stop_seen;
    _Atomic bool stop_requested;
    _Atomic bool finished;

    /* Status snapshot (under mu), for other threads. */
    struct {
        enum election_role role;
        uint64_t term;
        char holder[ELECTION_IDENTITY_MAX];
        bool watch_up;
        int32_t transitions;
        struct election_core_stats stats;
        char last_error[ELECTION_REPORT_TEXT_MAX];
        uint64_t errors;
        struct election_peer_stats peer; /* zeros when the channel is off */
    } st;

    struct election_metrics m;
};

static inline const char *election_lock_desc(const struct election *e)
{
    return election_lock_kind_name(e->cfg.lock);
}

static inline struct election_now election_now_pair(void)
{
    struct election_now n = {election_clock_ns(), cx_wall_ns()};
    return n;
}

/* election_obs.c */
void election_metrics_init(struct election *e);
void election_inc(struct cx_series *s);
/* Copies what other threads may read (under mu) and the gauges. */
void election_status_update(struct election *e);

#endif
