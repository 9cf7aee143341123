#include "election.h"

#include "cx_json.h"
#include "cx_log.h"
#include "cx_metrics.h"
#include "cx_time.h"
#include "election_impl.h"
#include "election_lock.h"
#include "election_record.h"
#include "election_report.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOG              "election"
#define EVENT_TIMEOUT_MS 2000
/* The lock's watch hears the holder's renewal every retryPeriod: no byte
 * for two leases means nobody leads (a new watch costs nothing then) or a
 * stalled stream (over HTTP/2 too: election_kube.h's stall is protocol
 * blind), which would hide every change of the lock, a release or the
 * record a proof of death must name. */
#define WATCH_STALL_MIN_MS INT64_C(10000)
#define WATCH_STALL_MAX_MS INT64_C(150000)
#define WATCH_RETRY_MIN_NS (INT64_C(100) * 1000000)
#define WATCH_RETRY_CAP    4 /* x retryPeriod; the core polls meanwhile */

/* ---- notices to the main loop ------------------------------------------- */

static void deliver(struct election *e, const struct notice *n)
{
    const struct election_callbacks *cb = &e->cb;
    switch (n->kind) {
    case ELECTION_ACT_STARTED_LEADING:
        if (cb->on_started_leading)
            cb->on_started_leading(cb->user_data, n->term);
        break;
    case ELECTION_ACT_STOPPED_LEADING:
        if (cb->on_stopped_leading)
            cb->on_stopped_leading(cb->user_data, n->term, n->reason);
        break;
    case ELECTION_ACT_NEW_LEADER:
        if (cb->on_new_leader)
            cb->on_new_leader(cb->user_data, n->leader);
        break;
    case ELECTION_ACT_DONE:
        if (cb->on_done)
            cb->on_done(cb->user_data, n->released);
        break;
    default:
        break;
    }
}

static void post_notice(struct election *e, const struct election_action *a)
{
    struct notice n;
    memset(&n, 0, sizeof(n));
    n.kind = a->kind;
    n.term = a->term;
    n.reason = a->reason;
    n.released = a->released;
    memcpy(n.leader, a->leader, sizeof(n.leader));
    if (!e->main_base) {
        deliver(e, &n);
        return;
    }
    struct notice *p = malloc(sizeof(*p));
    if (!p) {
        cx_error(LOG, "out of memory: a leadership notice is lost");
        return;
    }
    *p = n;
    pthread_mutex_lock(&e->mu);
    cx_list_append(&e->notices, &p->link);
    pthread_mutex_unlock(&e->mu);
    char b = 'n';
    /* A full pipe already holds a wake-up byte: nothing is lost. */
    if (write(e->note_wr, &b, 1) < 0 && errno != EAGAIN)
        cx_warn(LOG, "notice pipe: %s", strerror(errno));
}

static void on_notices(evutil_socket_t fd, short what, void *arg)
{
    struct election *e = arg;
    (void)what;
    char buf[64];
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        struct cx_list *l = cx_list_pop(&e->notices);
        pthread_mutex_unlock(&e->mu);
        if (!l)
            break;
        struct notice *n = cx_list_entry(l, struct notice, link);
        deliver(e, n);
        free(n);
    }
}

/* ---- failures -------------------------------------------------------------- */

/* Counts and reports one failed request or watch through |rep| (one line
 * per distinct failure, then a summary at most once a minute). Conflicts
 * and a lock that went away are part of elections: said at info level. */
static void failure(struct election *e, struct election_report *rep, const char *verb,
                    enum election_kube_res res, const char *purpose, int http_status,
                    enum election_err_class cls, const char *message)
{
    if ((unsigned)cls < ELECTION_ERR_COUNT)
        election_inc(e->m.errors[cls]);
    pthread_mutex_lock(&e->mu);
    e->st.errors++;
    pthread_mutex_unlock(&e->mu);
    struct election_failure f = {
        .verb = verb,
        .resource = election_kube_res_name(res),
        .ns = e->cfg.ns,
        .name = res == ELECTION_RES_EVENTS ? "(event)" : e->cfg.name,
        .purpose = purpose,
        .http_status = http_status,
        .cls = cls,
        .message = message,
    };
    char line[ELECTION_REPORT_LINE_MAX];
    if (election_report_failure(rep, election_clock_ns(), &f, line, sizeof(line)) ==
        ELECTION_SAY_NOTHING)
        return;
    if (cls == ELECTION_ERR_CONFLICT || cls == ELECTION_ERR_EXISTS ||
        (cls == ELECTION_ERR_NOT_FOUND && strcmp(verb, "update") == 0))
        cx_info(LOG, "%s", line);
    else
        cx_warn(LOG, "%s", line);
}

static void success(struct election_report *rep, const char *verb, enum election_kube_res res)
{
    char line[ELECTION_REPORT_LINE_MAX];
    if (election_report_success(rep, verb, election_kube_res_name(res), line, sizeof(line)))
        cx_info(LOG, "%s", line);
}

/* ---- Kubernetes Events ---------------------------------------------------- */

static void on_event_posted(struct election_kube_result *r, void *arg)
{
    struct election *e = arg;
    if (r->cls == ELECTION_ERR_NONE)
        success(&e->rep_event, "create", ELECTION_RES_EVENTS);
    else
        failure(e, &e->rep_event, "create", ELECTION_RES_EVENTS, "post the leader election Event",
                r->http_status, r->cls, r->message);
}

static void post_k8s_event(struct election *e, const char *message)
{
    if (!e->post_events)
        return;
    int64_t wall = cx_wall_ns();
    char ts[CX_TIME_RFC3339_LEN + 4], micro[CX_TIME_MICRO_LEN + 4], name[ELECTION_NAME_MAX + 32];
    cx_time_format_rfc3339(wall, ts, sizeof(ts));
    cx_time_format_micro(wall, micro, sizeof(micro));
    /* client-go's recorder names events <object>.<hex nanoseconds>. */
    snprintf(name, sizeof(name), "%.200s.%llx", e->cfg.name, (unsigned long long)wall);
    cJSON *ev = cJSON_CreateObject();
    if (!ev)
        return;
    cJSON_AddStringToObject(ev, "apiVersion", "v1");
    cJSON_AddStringToObject(ev, "kind", "Event");
    cJSON *md = cJSON_AddObjectToObject(ev, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", e->cfg.ns);
    cJSON *io = cJSON_AddObjectToObject(ev, "involvedObject");
    cJSON_AddStringToObject(io, "apiVersion",
                            e->cfg.lock == ELECTION_LOCK_LEASES ? "coordination.k8s.io/v1" : "v1");
    cJSON_AddStringToObject(io, "kind",
                            e->cfg.lock == ELECTION_LOCK_LEASES ? "Lease" : "ConfigMap");
    cJSON_AddStringToObject(io, "namespace", e->cfg.ns);
    cJSON_AddStringToObject(io, "name", e->cfg.name);
    if (e->lock.uid[0])
        cJSON_AddStringToObject(io, "uid", e->lock.uid);
    cJSON_AddStringToObject(ev, "reason", "LeaderElection");
    cJSON_AddStringToObject(ev, "message", message);
    cJSON_AddStringToObject(ev, "type", "Normal");
    cJSON *src = cJSON_AddObjectToObject(ev, "source");
    cJSON_AddStringToObject(src, "component", e->component);
    cJSON_AddStringToObject(ev, "firstTimestamp", ts);
    cJSON_AddStringToObject(ev, "lastTimestamp", ts);
    cJSON_AddNumberToObject(ev, "count", 1);
    cJSON_AddStringToObject(ev, "reportingComponent", e->component);
    cJSON_AddStringToObject(ev, "reportingInstance", e->cfg.identity);
    /* Best effort: never waited for, never retried. */
    if (!e->kube.ops->create(e->conn, ELECTION_RES_EVENTS, e->cfg.ns, ev, EVENT_TIMEOUT_MS,
                             on_event_posted, e))
        cx_debug(LOG, "cannot build the leader election Event");
    cJSON_Delete(ev);
}

/* ---- driving the core ----------------------------------------------------- */

static void on_result(struct election_kube_result *r, void *arg);
static void on_timer(evutil_socket_t fd, short what, void *arg);

static void send_failed_later(evutil_socket_t fd, short what, void *arg);

static void send_now(struct election *e, const struct election_action *a)
{
    e->call_id = a->req_id;
    e->call_purpose = a->purpose;
    e->call_kind = a->req;
    e->call = election_lock_send(&e->lock, a, on_result, e);
    if (!e->call) {
        /* Could not even build it: a failure, reported from the loop
         * (never from inside the core's own action processing). */
        static const struct timeval now0 = {0, 0};
        evtimer_add(e->fail_ev, &now0);
    }
}

#define DRAIN_POLL_MS 2

static void drain_later(struct election *e)
{
    const struct timeval tv = {0, DRAIN_POLL_MS * 1000};
    evtimer_add(e->drain_ev, &tv);
}

/* The held release goes once the ended term's writes have ended (or their
 * deadline passed, which bounds them). */
static void on_drain(evutil_socket_t fd, short what, void *arg)
{
    struct election *e = arg;
    (void)fd;
    (void)what;
    if (!e->drain_pending)
        return;
    if (election_guard_draining(&e->guard, election_clock_ns())) {
        drain_later(e);
        return;
    }
    e->drain_pending = false;
    send_now(e, &e->drained);
}

static void do_action(struct election *e, const struct election_action *a)
{
    char msg[ELECTION_IDENTITY_MAX + 512];
    switch (a->kind) {
    case ELECTION_ACT_SEND:
        if (a->purpose == ELECTION_FOR_RELEASE && a->req == ELECTION_REQ_UPDATE &&
            election_guard_draining(&e->guard, election_clock_ns())) {
            /* A write let through before the step-down may still be on
             * its way: the lock is released after it lands, never before. */
            cx_info(LOG, "%s: release waits for the last term's writes in flight", e->cfg.identity);
            e->drained = *a;
            e->drain_pending = true;
            e->call_id = a->req_id;
            drain_later(e);
            break;
        }
        send_now(e, a);
        break;
    case ELECTION_ACT_CANCEL:
        if (e->drain_pending && e->drained.req_id == a->req_id) {
            e->drain_pending = false;
            evtimer_del(e->drain_ev);
        }
        if (e->call && e->call_id == a->req_id) {
            e->kube.ops->cancel(e->call);
            e->call = NULL;
            e->call_id = 0;
        }
        break;
    case ELECTION_ACT_STARTED_LEADING:
        cx_info(LOG, "%s started leading %s %s/%s (term %llu, %s)", e->cfg.identity,
                election_lock_desc(e), e->cfg.ns, e->cfg.name, (unsigned long long)a->term,
                election_takeover_name(a->took));
        if (e->m.master)
            cx_series_set(e->m.master, 1);
        election_inc(e->m.started);
        if (e->m.takeovers)
            cx_metric_inc(e->m.takeovers, e->cfg.name, election_takeover_name(a->took));
        if (e->peer)
            election_peer_set_role(e->peer, true, a->term);
        /* The Event's text is client-go's ("X became leader"), which tools
         * match; the cause is in the log line and the takeovers metric. */
        snprintf(msg, sizeof(msg), "%s became leader", e->cfg.identity);
        post_k8s_event(e, msg);
        post_notice(e, a);
        break;
    case ELECTION_ACT_STOPPED_LEADING: {
        /* A deadline passes because renewals failed: say how they failed
         * (a 403 after RBAC removal reads as a 403, not only as a deadline). */
        const char *last = election_report_last(&e->rep_req);
        bool why = a->reason == ELECTION_STOP_DEADLINE && last[0];
        cx_log(a->reason == ELECTION_STOP_SHUTDOWN || a->reason == ELECTION_STOP_HANDOVER
                   ? CX_LOG_INFO
                   : CX_LOG_WARN,
               LOG, "%s stopped leading %s %s/%s (term %llu): %s%s%s", e->cfg.identity,
               election_lock_desc(e), e->cfg.ns, e->cfg.name, (unsigned long long)a->term,
               election_stop_reason_name(a->reason), why ? "; last renewal failure: " : "",
               why ? last : "");
        if (e->m.master)
            cx_series_set(e->m.master, 0);
        if (e->peer)
            election_peer_set_role(e->peer, false, a->term); /* keeps serving */
        election_inc(e->m.stopped);
        if (e->m.stepdowns)
            cx_metric_inc(e->m.stepdowns, e->cfg.name, election_stop_reason_name(a->reason));
        snprintf(msg, sizeof(msg), "%s stopped leading: %s%s%.200s", e->cfg.identity,
                 election_stop_reason_name(a->reason), why ? "; last renewal failure: " : "",
                 why ? last : "");
        post_k8s_event(e, msg);
        post_notice(e, a);
        break;
    }
    case ELECTION_ACT_NEW_LEADER:
        cx_info(LOG, "leader of %s %s/%s: %s", election_lock_desc(e), e->cfg.ns, e->cfg.name,
                a->leader[0] ? a->leader : "(none)");
        post_notice(e, a);
        break;
    case ELECTION_ACT_DONE:
        cx_info(LOG, "%s: elector stopped (%s)", e->cfg.identity,
                a->released ? "lock released" : "nothing to release");
        post_notice(e, a);
        atomic_store(&e->finished, true);
        event_base_loopbreak(e->base);
        break;
    case ELECTION_ACT_NONE:
        break;
    }
}

/* A standby holds a connection to the holder's advertised peer endpoint
 * (election_peer.h); a leader, or a replica with nobody to follow, none. */
static void peer_follow(struct election *e)
{
    if (!e->peer)
        return;
    const struct election_observation *o = election_core_observed(e->core);
    bool follow = o && o->found && !o->rec.holder_overflow && o->rec.holder[0] &&
                  strcmp(o->rec.holder, e->cfg.identity) != 0 &&
                  election_core_role(e->core) == ELECTION_STANDBY;
    election_peer_follow(e->peer, follow ? o->rec.holder : "", follow ? o->rec.peer : "",
                         o && o->found ? o->rv : "");
}

static void pump(struct election *e);

static void on_peer_dead(void *arg, const char *holder, const char *rv)
{
    struct election *e = arg;
    election_core_holder_dead(e->core, election_now_pair(), holder, rv);
    pump(e);
}

/* Runs the core's actions and re-arms its timer. Re-entrant calls (a
 * callback run from inside an action) only queue: the outer pump drains. */
static void pump(struct election *e)
{
    if (e->pumping)
        return;
    e->pumping = true;
    struct election_action a;
    while (election_core_next_action(e->core, &a))
        do_action(e, &a);
    e->pumping = false;
    election_status_update(e);
    peer_follow(e);
    if (atomic_load(&e->finished))
        return;
    int64_t w = election_core_next_wakeup(e->core);
    if (w == INT64_MAX) {
        evtimer_del(e->timer);
        return;
    }
    int64_t d = w - election_clock_ns();
    if (d < 0)
        d = 0;
    /* Round up to the microsecond so the timer never fires early. */
    struct timeval tv = {.tv_sec = d / 1000000000, .tv_usec = (d % 1000000000 + 999) / 1000};
    if (tv.tv_usec >= 1000000) {
        tv.tv_sec++;
        tv.tv_usec -= 1000000;
    }
    evtimer_add(e->timer, &tv);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct election *e = arg;
    (void)fd;
    (void)what;
    election_core_tick(e->core, election_now_pair());
    pump(e);
}

static void send_failed_later(evutil_socket_t fd, short what, void *arg)
{
    struct election *e = arg;
    (void)fd;
    (void)what;
    if (e->call || !e->call_id)
        return; /* cancelled meanwhile, or a later request is in flight */
    uint64_t id = e->call_id;
    e->call_id = 0;
    if (e->m.requests)
        cx_metric_inc(e->m.requests, e->cfg.name, election_purpose_name(e->call_purpose), "failed");
    failure(e, &e->rep_req, election_req_verb(e->call_kind), e->lock.res,
            election_purpose_name(e->call_purpose), 0, ELECTION_ERR_OTHER,
            "the request could not be built");
    election_core_result(e->core, election_now_pair(), id, ELECTION_FAILED, NULL);
    pump(e);
}

static void on_result(struct election_kube_result *r, void *arg)
{
    struct election *e = arg;
    uint64_t id = e->call_id;
    enum election_purpose purpose = e->call_purpose;
    e->call = NULL;
    e->call_id = 0;
    enum election_outcome out = election_lock_outcome(r->cls);
    struct election_observation obs;
    bool have = false;
    if (out == ELECTION_OK && cJSON_IsObject(r->object)) {
        cJSON *obj = r->object;
        r->object = NULL;
        election_lock_take(&e->lock, obj, &obs);
        have = true;
    } else if (out == ELECTION_NOT_FOUND && e->call_kind != ELECTION_REQ_CREATE) {
        election_lock_forget(&e->lock);
    } else if (out == ELECTION_OK) {
        out = ELECTION_FAILED; /* a 2xx without an object tells us nothing */
    }
    if (e->m.requests)
        cx_metric_inc(e->m.requests, e->cfg.name, election_purpose_name(purpose),
                      election_outcome_name(out));
    /* A GET's 404 is an answer (the lock is missing); every other failure
     * is reported, with the server's own words. */
    if (r->cls == ELECTION_ERR_NONE ||
        (r->cls == ELECTION_ERR_NOT_FOUND && e->call_kind == ELECTION_REQ_GET))
        success(&e->rep_req, election_req_verb(e->call_kind), e->lock.res);
    else
        failure(e, &e->rep_req, election_req_verb(e->call_kind), e->lock.res,
                election_purpose_name(purpose), r->http_status, r->cls, r->message);
    uint64_t ok_before = election_core_stats(e->core)->renew_ok;
    uint64_t failed_before = election_core_stats(e->core)->renew_failed;
    uint64_t slow_before = election_core_stats(e->core)->slowpath;
    election_core_result(e->core, election_now_pair(), id, out, have ? &obs : NULL);
    const struct election_core_stats *st = election_core_stats(e->core);
    if (st->renew_ok > ok_before && e->m.renew_seconds)
        cx_series_observe(e->m.renew_seconds, (double)(r->done_mono_ns - r->sent_mono_ns) / 1e9);
    if (st->renew_failed > failed_before)
        election_inc(e->m.renew_failures);
    if (st->slowpath > slow_before)
        election_inc(e->m.slowpath);
    if ((purpose == ELECTION_FOR_RENEW || purpose == ELECTION_FOR_ACQUIRE) &&
        election_core_role(e->core) == ELECTION_LEADER && e->m.last_renew)
        cx_series_set(e->m.last_renew, (double)atomic_load(&e->guard.last_renew_wall) / 1e9);
    pump(e);
}

/* ---- the watch --------------------------------------------------------------- */

static void watch_begin(struct election *e);

static void watch_state(struct election *e, bool up)
{
    if (e->watch_up == up)
        return;
    e->watch_up = up;
    cx_debug(LOG, "watch of %s/%s is %s", e->cfg.ns, e->cfg.name, up ? "up" : "broken");
    election_core_watch_state(e->core, election_now_pair(), up);
    pump(e);
}

/* The list or the watch failed (|verb|, with the answer's status, class
 * and message): reported once, the watch marked broken (the core polls
 * meanwhile), and tried again after a jittered backoff that grows from
 * 100 ms to 4 x retryPeriod and starts over only once a watch has
 * delivered something. */
static void watch_failed(struct election *e, const char *verb, int http_status,
                         enum election_err_class cls, const char *why)
{
    if (atomic_load(&e->finished))
        return;
    e->watch_failures++;
    failure(e, &e->rep_watch, verb, e->lock.res, "watch the lock (polling meanwhile)", http_status,
            cls, why);
    watch_state(e, false);
    int64_t d = WATCH_RETRY_MIN_NS, cap = WATCH_RETRY_CAP * e->cfg.retry_ns;
    for (int i = 1; i < e->watch_failures && d < cap; i++)
        d *= 2;
    if (d > cap)
        d = cap;
    /* xorshift64: jitter x [1, 1.2), so replicas that lost the server
     * together do not come back in step. */
    e->rng ^= e->rng << 13;
    e->rng ^= e->rng >> 7;
    e->rng ^= e->rng << 17;
    d += (int64_t)((double)d * 0.2 * (double)(e->rng % 1000) / 1000.0);
    struct timeval tv = {.tv_sec = d / 1000000000, .tv_usec = (d % 1000000000) / 1000};
    evtimer_add(e->watch_retry, &tv);
}

/* The watch delivered: it works, its backoff starts over. */
static void watch_proven(struct election *e)
{
    if (e->watch_proven)
        return;
    e->watch_proven = true;
    e->watch_failures = 0;
    success(&e->rep_watch, "watch", e->lock.res);
}

static void on_watch_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    watch_begin(arg);
}

static void on_watch_event(void *arg, enum election_watch_ev type, cJSON *obj)
{
    struct election *e = arg;
    struct election_observation o;
    const char *rv = cx_json_path_str(obj, "metadata", "resourceVersion", (char *)NULL);
    if (rv)
        snprintf(e->watch_rv, sizeof(e->watch_rv), "%s", rv);
    watch_proven(e);
    switch (type) {
    case ELECTION_WATCH_ADDED:
    case ELECTION_WATCH_MODIFIED:
        election_lock_take(&e->lock, obj, &o);
        election_core_observe(e->core, election_now_pair(), &o);
        pump(e);
        return;
    case ELECTION_WATCH_DELETED:
        memset(&o, 0, sizeof(o));
        o.found = false;
        snprintf(o.rv, sizeof(o.rv), "%s", e->watch_rv);
        election_lock_forget(&e->lock);
        cJSON_Delete(obj);
        election_core_observe(e->core, election_now_pair(), &o);
        pump(e);
        return;
    default:
        cJSON_Delete(obj);
        return;
    }
}

static int64_t watch_stall_ms(const struct election *e)
{
    int64_t ms = 2 * (e->cfg.lease_ns / 1000000);
    return ms < WATCH_STALL_MIN_MS   ? WATCH_STALL_MIN_MS
           : ms > WATCH_STALL_MAX_MS ? WATCH_STALL_MAX_MS
                                     : ms;
}

static void on_watch_end(void *arg, const struct election_kube_result *err)
{
    struct election *e = arg;
    e->watch = NULL;
    if (atomic_load(&e->finished))
        return;
    /* A clean end after a while (the server's timeoutSeconds): carry on.
     * One that ended at once without a byte counts as a failure, or a
     * server that keeps doing it would have us loop. */
    bool quick = !e->watch_proven && election_clock_ns() - e->watch_started < e->cfg.retry_ns;
    if (err->cls == ELECTION_ERR_NONE && e->watch_rv[0] && !quick) {
        static const struct election_kube_watch_handlers h = {on_watch_event, on_watch_end};
        e->watch_proven = false;
        e->watch_started = election_clock_ns();
        e->watch = election_lock_watch(&e->lock, e->watch_rv, watch_stall_ms(e), &h, e);
        if (e->watch)
            return;
    }
    if (err->cls == ELECTION_ERR_EXPIRED && e->watch_failures == 0) {
        watch_begin(e); /* re-list at once (once: a 410 again backs off) */
        e->watch_failures++;
        return;
    }
    watch_failed(e, "watch", err->http_status,
                 err->cls == ELECTION_ERR_NONE ? ELECTION_ERR_OTHER : err->cls,
                 err->cls == ELECTION_ERR_NONE ? "the watch ended at once, empty"
                 : err->message[0]             ? err->message
                                               : "ended");
}

static void on_list(struct election_kube_result *r, void *arg)
{
    struct election *e = arg;
    e->list_call = NULL;
    if (atomic_load(&e->finished))
        return;
    if (r->cls != ELECTION_ERR_NONE || !cJSON_IsObject(r->object)) {
        watch_failed(e, "list", r->http_status,
                     r->cls != ELECTION_ERR_NONE ? r->cls : ELECTION_ERR_DECODE,
                     r->cls != ELECTION_ERR_NONE ? r->message : "empty list answer");
        return;
    }
    const char *rv = cx_json_path_str(r->object, "metadata", "resourceVersion", (char *)NULL);
    snprintf(e->watch_rv, sizeof(e->watch_rv), "%s", rv ? rv : "");
    cJSON *items = cJSON_GetObjectItemCaseSensitive(r->object, "items");
    cJSON *first = cJSON_IsArray(items) ? cJSON_DetachItemFromArray(items, 0) : NULL;
    struct election_observation o;
    if (first) {
        election_lock_take(&e->lock, first, &o);
    } else {
        memset(&o, 0, sizeof(o));
        o.found = false;
        /* "Not found as of this version": a create that landed after the
         * list was served is newer and wins. */
        snprintf(o.rv, sizeof(o.rv), "%s", e->watch_rv);
    }
    static const struct election_kube_watch_handlers h = {on_watch_event, on_watch_end};
    e->watch_proven = false;
    e->watch_started = election_clock_ns();
    e->watch = election_lock_watch(&e->lock, e->watch_rv, watch_stall_ms(e), &h, e);
    election_core_observe(e->core, election_now_pair(), &o);
    pump(e);
    if (!e->watch) {
        watch_failed(e, "watch", 0, ELECTION_ERR_OTHER, "cannot start the watch");
        return;
    }
    watch_state(e, true);
}

static void watch_begin(struct election *e)
{
    if (e->watch || e->list_call || atomic_load(&e->finished))
        return;
    e->list_call = election_lock_list(&e->lock, e->cfg.renew_ns, on_list, e);
    if (!e->list_call)
        watch_failed(e, "list", 0, ELECTION_ERR_OTHER, "cannot build the list request");
}

/* ---- control from the main thread ------------------------------------------- */

static void on_ctl(evutil_socket_t fd, short what, void *arg)
{
    struct election *e = arg;
    (void)what;
    char buf[16];
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    if (atomic_load(&e->stop_requested) && !e->stop_seen) {
        e->stop_seen = true;
        cx_info(LOG, "%s: stopping%s", e->cfg.identity,
                election_core_role(e->core) == ELECTION_LEADER ? ", releasing the lock" : "");
        election_core_shutdown(e->core, election_now_pair());
        pump(e);
    }
}

static void *thread_main(void *arg)
{
    struct election *e = arg;
    cx_info(LOG, "%s: electing on %s %s/%s (lease %lldms, renew %lldms, retry %lldms)",
            e->cfg.identity, election_lock_desc(e), e->cfg.ns, e->cfg.name,
            (long long)(e->cfg.lease_ns / 1000000), (long long)(e->cfg.renew_ns / 1000000),
            (long long)(e->cfg.retry_ns / 1000000));
    election_core_start(e->core, election_now_pair());
    pump(e);
    watch_begin(e);
    /* A stop asked before the thread ran. */
    on_ctl(e->ctl_rd, EV_READ, e);
    event_base_dispatch(e->base);
    atomic_store(&e->finished, true);
    return NULL;
}

/* ---- public ---------------------------------------------------------------------- */

static int make_pipe(int *rd, int *wr)
{
    int p[2];
    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0)
        return -1;
    *rd = p[0];
    *wr = p[1];
    return 0;
}

struct election *election_new(const struct election_opts *o, char *err, size_t errlen)
{
    if (!o || !o->cfg || !o->kube || !o->kube->ops) {
        snprintf(err, errlen, "election_new: missing config");
        return NULL;
    }
    if (election_config_validate(o->cfg, err, errlen) != 0)
        return NULL;
    struct election *e = calloc(1, sizeof(*e));
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    e->note_rd = e->note_wr = e->ctl_rd = e->ctl_wr = -1;
    cx_list_init(&e->notices);
    pthread_mutex_init(&e->mu, NULL);
    e->cfg = *o->cfg;
    e->cb = o->cb;
    e->post_events = o->post_events;
    snprintf(e->component, sizeof(e->component), "%s",
             o->component && *o->component ? o->component : "coxswain");
    e->main_base = o->main_base;
    election_report_init(&e->rep_req);
    election_report_init(&e->rep_watch);
    election_report_init(&e->rep_event);
    e->rng = UINT64_C(0x9e3779b97f4a7c15);
    for (const char *p = o->cfg->identity; *p; p++)
        e->rng = (e->rng ^ (unsigned char)*p) * UINT64_C(0x100000001b3);
    if (!e->rng)
        e->rng = 1;
    election_guard_init(&e->guard, election_config_margin(&e->cfg));
    e->kube = *o->kube;
    election_lock_init(&e->lock, &e->cfg, e->kube.ops);
    if (make_pipe(&e->note_rd, &e->note_wr) != 0 || make_pipe(&e->ctl_rd, &e->ctl_wr) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    if (e->main_base) {
        e->note_ev = event_new(e->main_base, e->note_rd, EV_READ | EV_PERSIST, on_notices, e);
        if (!e->note_ev || event_add(e->note_ev, NULL) != 0) {
            snprintf(err, errlen, "cannot watch the notice pipe");
            goto fail;
        }
    }
    /* Precise timers: libevent's default coarse clock can be milliseconds
     * behind, and the renew and takeover timers are what this thread is for. */
    struct event_config *ec = event_config_new();
    if (ec) {
        event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
        e->base = event_base_new_with_config(ec);
        event_config_free(ec);
    }
    if (!e->base) {
        snprintf(err, errlen, "cannot create the elector's event base");
        goto fail;
    }
    char ua[96];
    snprintf(ua, sizeof(ua), "%s-election", e->component);
    e->conn = e->kube.ops->open(e->kube.impl, e->base, e->cfg.identity, ua, err, errlen);
    if (!e->conn)
        goto fail;
    e->lock.conn = e->conn;
    /* The peer listener is bound before the core copies the config: the
     * advertised endpoint carries the bound port. With no address to
     * advertise (no POD_IP, a wildcard listen address, no
     * --leader-elect-peer-advertise) nobody could connect to it: no
     * listener at all (no port open for nothing), said once; the replica
     * still follows a holder that advertises one. */
    if (e->cfg.peer) {
        bool serve = e->cfg.peer_advertise[0] != '\0';
        e->peer = election_peer_new(e->base, e->cfg.identity, serve ? e->cfg.peer_listen : NULL,
                                    e->cfg.peer_advertise, sizeof(e->cfg.peer_advertise),
                                    on_peer_dead, e, err, errlen);
        if (!e->peer)
            goto fail;
        if (serve) {
            e->peer_off_why = "";
            cx_info(LOG, "peer channel: listening on %s (port %d), advertising %s",
                    e->cfg.peer_listen, election_peer_port(e->peer), e->cfg.peer_advertise);
        } else {
            e->peer_off_why = "no address to advertise";
            cx_warn(LOG,
                    "peer channel: not listening on %s: no address to advertise (set POD_IP or "
                    "--leader-elect-peer-advertise); while this replica leads, standbys wait "
                    "for its lease after a crash (it still follows a leader that advertises one)",
                    e->cfg.peer_listen);
        }
    } else {
        e->peer_off_why = "turned off (--leader-elect-peer=false)";
    }
    e->core = election_core_new(&e->cfg, &e->guard);
    e->timer = evtimer_new(e->base, on_timer, e);
    e->watch_retry = evtimer_new(e->base, on_watch_retry, e);
    e->fail_ev = evtimer_new(e->base, send_failed_later, e);
    e->drain_ev = evtimer_new(e->base, on_drain, e);
    e->ctl_ev = event_new(e->base, e->ctl_rd, EV_READ | EV_PERSIST, on_ctl, e);
    if (!e->core || !e->timer || !e->watch_retry || !e->fail_ev || !e->drain_ev || !e->ctl_ev ||
        event_add(e->ctl_ev, NULL) != 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    election_metrics_init(e);
    return e;
fail:
    election_free(e);
    return NULL;
}

int election_start(struct election *e, char *err, size_t errlen)
{
    if (e->thread_started) {
        snprintf(err, errlen, "the elector is already started");
        return -1;
    }
    int rc = pthread_create(&e->th, NULL, thread_main, e);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the elector thread: %s", strerror(rc));
        return -1;
    }
    e->thread_started = true;
    return 0;
}

struct election_guard *election_guard_of(struct election *e)
{
    return &e->guard;
}

const char *election_identity(const struct election *e)
{
    return e->cfg.identity;
}

void election_stop(struct election *e)
{
    if (!e || atomic_exchange(&e->stop_requested, true))
        return;
    char b = 's';
    if (e->ctl_wr >= 0 && write(e->ctl_wr, &b, 1) < 0 && errno != EAGAIN)
        cx_warn(LOG, "control pipe: %s", strerror(errno));
}

void election_free(struct election *e)
{
    if (!e)
        return;
    if (e->thread_started && !e->joined) {
        election_stop(e);
        pthread_join(e->th, NULL);
        e->joined = true;
    }
    /* The thread is gone (or never ran): everything below is ours. */
    if (e->call)
        e->kube.ops->cancel(e->call);
    if (e->list_call)
        e->kube.ops->cancel(e->list_call);
    if (e->watch)
        e->kube.ops->watch_stop(e->watch);
    if (e->conn)
        e->kube.ops->close(e->conn);
    if (e->timer)
        event_free(e->timer);
    if (e->watch_retry)
        event_free(e->watch_retry);
    if (e->fail_ev)
        event_free(e->fail_ev);
    if (e->drain_ev)
        event_free(e->drain_ev);
    if (e->ctl_ev)
        event_free(e->ctl_ev);
    /* The peer listener goes last: after the last write (the release), so
     * a standby's proof of death can never precede it. */
    election_peer_free(e->peer);
    if (e->base)
        event_base_free(e->base);
    if (e->note_ev)
        event_free(e->note_ev);
    election_core_free(e->core);
    election_lock_free(&e->lock);
    for (int *fd = &e->note_rd; fd <= &e->ctl_wr; fd++)
        if (*fd >= 0)
            close(*fd);
    struct cx_list *l;
    while ((l = cx_list_pop(&e->notices)))
        free(cx_list_entry(l, struct notice, link));
    pthread_mutex_destroy(&e->mu);
    if (e->m.master)
        cx_series_set(e->m.master, 0);
    free(e);
}
