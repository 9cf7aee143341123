#include "daemon.h"

#include "cx_json.h"
#include "cx_log.h"
#include "cx_metrics.h"
#include "cx_time.h"
#include "daemon_elect_kube.h"
#include "daemon_internal.h"
#include "store_kinds.h"
#include "xds_rest.h"
#include "xlate_snapshot.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>

/* How often the leader re-checks the XdsAccepted condition of Gateways
 * that have NACK records (a NACK clears without a callback). */
#define DAEMON_NACK_RECHECK_MS 2000

/* ---- write guard -------------------------------------------------------------- */

static bool guard_election(void *arg, int64_t *timeout_ns, uint64_t *term)
{
    struct daemon *d = arg;
    return election_guard_allow(election_guard_of(d->election), timeout_ns, term);
}

static bool guard_election_recheck(void *arg, uint64_t term)
{
    struct daemon *d = arg;
    return election_guard_recheck(election_guard_of(d->election), term);
}

static bool guard_election_enter(void *arg, uint64_t term)
{
    struct daemon *d = arg;
    return d->election && election_guard_enter(election_guard_of(d->election), term);
}

/* Writes cancelled at teardown end after the elector is gone. */
static void guard_election_leave(void *arg)
{
    struct daemon *d = arg;
    if (d->election)
        election_guard_leave(election_guard_of(d->election));
}

/* --leader-elect=false: this replica alone writes (one replica, or tests). */
static bool guard_always(void *arg, int64_t *timeout_ns, uint64_t *term)
{
    struct daemon *d = arg;
    if (d->stopping)
        return false;
    *timeout_ns = 30 * CX_NS_PER_S;
    *term = 1;
    return true;
}

static bool guard_always_recheck(void *arg, uint64_t term)
{
    struct daemon *d = arg;
    (void)term;
    return !d->stopping;
}

/* ---- leadership ----------------------------------------------------------------- */

static void start_writers(struct daemon *d)
{
    if (!d->leading || d->writers_started || d->stopping)
        return;
    d->writers_started = 1;
    status_writer_start(d->sw, d->term);
    /* The publisher compares with what is published: it needs that cache. */
    if (d->snap_inf.synced)
        publish_start(d->pub, d->term);
}

static void stop_writers(struct daemon *d)
{
    d->writers_started = 0;
    status_writer_stop(d->sw);
    publish_stop(d->pub);
}

static void on_started_leading(void *ud, uint64_t term)
{
    struct daemon *d = ud;
    cx_info("daemon", "leading (term %" PRIu64 "): starting the status writer and publisher", term);
    d->leading = 1;
    d->term = term;
    snprintf(d->leader, sizeof(d->leader), "%s", d->identity);
    cx_series_set(d->m.leader, 1);
    stop_writers(d); /* a new term starts from scratch */
    daemon_standby_lead(d);
    start_writers(d);
}

static void on_stopped_leading(void *ud, uint64_t term, enum election_stop_reason reason)
{
    struct daemon *d = ud;
    cx_warn("daemon", "stopped leading (term %" PRIu64 ", %s): writers stopped, %s", term,
            election_stop_reason_name(reason),
            d->cfg->cold ? "cold standby: xDS proxies sent away, informers stopped, caches freed"
                         : "xDS goes on");
    d->leading = 0;
    cx_series_set(d->m.leader, 0);
    stop_writers(d);
    daemon_standby_stop_leading(d);
}

static void on_new_leader(void *ud, const char *identity)
{
    struct daemon *d = ud;
    snprintf(d->leader, sizeof(d->leader), "%s", identity);
    cx_info("daemon", "leader is now %s", *identity ? identity : "(nobody)");
}

static void maybe_exit(struct daemon *d)
{
    if (d->stopping && d->election_done && d->xds_done)
        event_base_loopbreak(d->base);
}

static void on_election_done(void *ud, bool released)
{
    struct daemon *d = ud;
    cx_info("daemon", "election stopped%s", released ? ": lease released" : "");
    d->election_done = 1;
    maybe_exit(d);
}

/* ---- snapshots ------------------------------------------------------------------ */

static struct store_view *make_view(void *user)
{
    struct daemon *d = user;
    return store_view_new(d->store);
}

/* A certificate became valid or expired: translate again, at the new
 * time (the reports change; no byte does). */
static void on_recheck(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct daemon *d = arg;
    cx_info("daemon", "a certificate's validity period starts or ends now: translating again");
    daemon_worker_poke(d->worker);
}

/* Arms the recheck timer for |at| (Unix seconds; 0: none), at most a day
 * ahead (re-armed after every pass). */
static void arm_recheck(struct daemon *d, int64_t at)
{
    if (!d->recheck_timer)
        return;
    evtimer_del(d->recheck_timer);
    if (at <= 0)
        return;
    int64_t delay = at - cx_wall_ns() / CX_NS_PER_S + 1;
    if (delay < 1)
        delay = 1;
    if (delay > 86400)
        delay = 86400;
    struct timeval tv = {.tv_sec = (time_t)delay};
    evtimer_add(d->recheck_timer, &tv);
}

static void on_snapshot(void *user, struct xlate_snapshot *snap,
                        const struct daemon_worker_result *res)
{
    struct daemon *d = user;
    struct xlate_snapshot *old = d->snap;
    d->snap = snap;
    d->snapshots++;
    xds_server_set_snapshot(d->xds, snap);
    status_writer_set_snapshot(d->sw, snap);
    publish_set_snapshot(d->pub, snap);
    daemon_admin_note_snapshot(d);
    arm_recheck(d, snap->recheck_at);
    daemon_standby_snapshot(d);
    int changed = !old || strcmp(old->version, snap->version) != 0;
    if (!d->first_snapshot_ns) {
        d->first_snapshot_ns = cx_mono_ns();
        cx_info("daemon",
                "first snapshot %s: %zu gateways, %zu objects, translated in %.1f ms; ready "
                "%.0f ms after start",
                snap->version, snap->ngroups, res->stats.objects, (double)res->duration_ns / 1e6,
                (double)(d->first_snapshot_ns - d->start_ns) / 1e6);
    } else if (changed) {
        cx_info("daemon", "snapshot %s: %zu gateways, %zu objects, %.1f ms after the change",
                snap->version, snap->ngroups, res->stats.objects,
                (double)(cx_mono_ns() - res->queued_ns) / 1e6);
    }
    xlate_snapshot_unref(old);
}

void daemon_on_synced(struct daemon *d)
{
    cx_info("daemon", "caches synced in %.0f ms (%zu objects in scope): translating",
            (double)(cx_mono_ns() - d->start_ns) / 1e6, store_total(d->store));
    daemon_standby_synced(d);
    daemon_worker_enable(d->worker);
}

void daemon_on_snapshots_synced(struct daemon *d)
{
    if (d->leading && d->writers_started)
        publish_start(d->pub, d->term);
}

/* " name", with why it is not synced when its informer knows:
 * " configmaps (list: HTTP 403 Forbidden: configmaps is forbidden: ...)". */
static int why_unsynced(struct cx_buf *why, const struct daemon_inf *di, int *n)
{
    const char *verb = NULL;
    const struct kube_error *e = di->inf ? kube_informer_last_error(di->inf, &verb) : NULL;
    const char *sep = (*n)++ ? ", " : " ";
    if (!e)
        return cx_buf_printf(why, "%s%s (waiting for the first list)", sep, di->name);
    if (e->http_status)
        return cx_buf_printf(why, "%s%s (%s: HTTP %d %s: %.240s)", sep, di->name, verb,
                             e->http_status, e->reason, e->message);
    return cx_buf_printf(why, "%s%s (%s: %s: %.240s)", sep, di->name, verb,
                         kube_error_name(e->code), e->message);
}

int daemon_ready(const struct daemon *d, struct cx_buf *why)
{
    if (daemon_standby_ready(d, why) != 0)
        return -1;
    if (!d->all_synced) {
        int rc = cx_buf_puts(why, "informers not synced:"), n = 0;
        for (size_t i = 0; i < d->ninputs; i++)
            if (!d->inputs[i].synced)
                rc |= why_unsynced(why, &d->inputs[i], &n);
        if (d->ns_selector && !d->ns_inf.synced)
            rc |= why_unsynced(why, &d->ns_inf, &n);
        if (d->sync_waits_for_reads)
            rc |= cx_buf_printf(why, "%sreading %zu referenced Secrets and ConfigMaps",
                                n ? "; " : " ", daemon_fetch_pending(d->fetch));
        (void)rc; /* a cut reason is still a reason */
        return -1;
    }
    if (!d->snap) {
        (void)!cx_buf_puts(why, "no snapshot built yet");
        return -1;
    }
    return 0;
}

/* ---- status writer hooks ------------------------------------------------------- */

static struct kube_obj *sw_lookup(void *user, enum xlate_kind kind, const char *key)
{
    return daemon_lookup(user, kind, key);
}

static int sw_pending(void *user)
{
    struct daemon *d = user;
    return daemon_worker_pending(d->worker);
}

/* A Gateway's XdsAccepted condition: False while any proxy connected to
 * this replica rejects the current resources of some type. */
static size_t sw_gateway_conditions(void *user, const char *group, struct status_condition *out,
                                    size_t max)
{
    struct daemon *d = user;
    if (!max)
        return 0;
    struct cx_buf b;
    cx_buf_init(&b, sizeof(d->gw_cond_msg) - 1);
    int rejecting = 0, rc = 0;
    for (int t = 0; t < XDS_TYPE_COUNT; t++) {
        struct xds_nack_stat st;
        if (xds_server_nack_stat(d->xds, group, (enum xds_type)t, &st) != 0 || !st.active)
            continue;
        rc |= cx_buf_printf(&b, "%s%s version %s rejected by %u proxy stream%s (last: node %s: %s)",
                            rejecting ? "; " : "", xlate_type_short((enum xds_type)t),
                            st.last_version, st.active, st.active == 1 ? "" : "s", st.last_node,
                            st.last_message);
        rejecting = 1;
    }
    if (rc != 0 && b.len == 0)
        rejecting = 0;
    snprintf(d->gw_cond_msg, sizeof(d->gw_cond_msg), "%s",
             rejecting ? (b.data ? b.data : "") : "no proxy rejects the current configuration");
    cx_buf_free(&b);
    out[0] = (struct status_condition){
        .type = "XdsAccepted",
        .ok = !rejecting,
        .reason = rejecting ? "Rejected" : "Accepted",
        .message = d->gw_cond_msg,
    };
    return 1;
}

static void on_nack(void *user, const struct xds_nack *n)
{
    struct daemon *d = user;
    cx_warn("xds", "gateway %s: node %s rejected %s version %s: %s", n->group, n->node_id,
            xlate_type_short(n->type), n->rejected_version, n->message);
    status_writer_recheck_gateway(d->sw, n->group);
}

static void recheck_nacked(void *user, const char *group, enum xds_type type,
                           const struct xds_nack_stat *st)
{
    (void)type;
    (void)st;
    struct daemon *d = user;
    status_writer_recheck_gateway(d->sw, group);
}

static void on_nack_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct daemon *d = arg;
    if (d->leading && d->writers_started)
        xds_server_foreach_nack(d->xds, recheck_nacked, d);
}

static struct kube_obj *pub_lookup(void *user, const char *name)
{
    return daemon_lookup_snapshot(user, name);
}

static void pub_foreach(void *user, int (*fn)(void *ctx, struct kube_obj *o), void *ctx)
{
    daemon_foreach_snapshot(user, fn, ctx);
}

/* ---- shutdown ------------------------------------------------------------------ */

static void on_xds_closed(void *arg)
{
    struct daemon *d = arg;
    d->xds_done = 1;
    maybe_exit(d);
}

static void on_grace(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct daemon *d = arg;
    cx_warn("daemon", "shutdown grace period over (lease %s, xDS %s): exiting",
            d->election_done ? "released" : "not released", d->xds_done ? "closed" : "open");
    event_base_loopbreak(d->base);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct daemon *d = arg;
    if (d->stopping++) {
        cx_warn("daemon", "second signal: exiting now");
        event_base_loopbreak(d->base);
        return;
    }
    cx_info("daemon", "signal %d: stopping writers, releasing the lease, closing xDS streams",
            (int)sig);
    stop_writers(d);
    d->leading = 0;
    if (d->election)
        election_stop(d->election);
    else
        d->election_done = 1;
    int grace_ms = (int)(d->cfg->shutdown_grace_ns / CX_NS_PER_MS);
    xds_server_shutdown(d->xds, grace_ms > 1000 ? 1000 : grace_ms, on_xds_closed, d);
    struct timeval tv = {.tv_sec = (time_t)(d->cfg->shutdown_grace_ns / CX_NS_PER_S),
                         .tv_usec =
                             (suseconds_t)((d->cfg->shutdown_grace_ns % CX_NS_PER_S) / 1000)};
    evtimer_add(d->grace_timer, &tv);
    maybe_exit(d);
}

/* The worker, the status writer and the publisher: made at start-up, and
 * made anew by a cold standby that stopped leading (daemon_standby.c), so
 * that nothing of the last term's world stays in memory. */
int daemon_pipeline_new(struct daemon *d, char *err, size_t errlen)
{
    struct daemon_config *c = d->cfg;
    struct daemon_worker_opts wo = {
        .debounce_ns = c->debounce_ns,
        .limits = c->limits,
        .make_view = make_view,
        .on_snapshot = on_snapshot,
        .user = d,
    };
    d->worker = daemon_worker_new(d->base, &wo, err, errlen);
    if (!d->worker)
        return -1;

    struct leader_guard guard = {.allow = d->ecfg.enabled ? guard_election : guard_always,
                                 .recheck = d->ecfg.enabled ? guard_election_recheck
                                                            : guard_always_recheck,
                                 .enter = d->ecfg.enabled ? guard_election_enter : NULL,
                                 .leave = d->ecfg.enabled ? guard_election_leave : NULL,
                                 .arg = d};
    struct status_writer_opts so = {
        .kc = d->kc,
        .qps = c->status_qps,
        .burst = (double)c->status_burst,
        .guard = guard,
        .lookup = sw_lookup,
        .gateway_conditions = sw_gateway_conditions,
        .translation_pending = sw_pending,
        .user = d,
    };
    d->sw = status_writer_new(d->base, &so);
    struct publish_opts po = {
        .kc = d->kc,
        .namespace = d->ns,
        .guard = guard,
        .max_bytes = c->snapshot_max_bytes > 0 ? (size_t)c->snapshot_max_bytes : 1,
        .qps = 5,
        .burst = 10,
        .lookup = pub_lookup,
        .foreach = pub_foreach,
        .user = d,
    };
    d->pub = publish_new(d->base, &po);
    if (!d->sw || !d->pub) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void daemon_pipeline_free(struct daemon *d)
{
    status_writer_free(d->sw);
    d->sw = NULL;
    publish_free(d->pub);
    d->pub = NULL;
    daemon_worker_free(d->worker);
    d->worker = NULL;
}

/* ---- start-up --------------------------------------------------------------------- */

static int need_ns_selector(const struct daemon_config *c)
{
    if ((c->ff.watch_namespace_selector && *c->ff.watch_namespace_selector) ||
        (c->namespace_selector && *c->namespace_selector))
        return 1;
    for (size_t k = 0; k < c->ff.nkinds; k++)
        if (c->ff.kinds[k].values[1] && *c->ff.kinds[k].values[1])
            return 1;
    return 0;
}

static int setup(struct daemon *d, char *err, size_t errlen)
{
    struct daemon_config *c = d->cfg;
    if (kube_config_load_default(c->kubeconfig && *c->kubeconfig ? c->kubeconfig : NULL,
                                 c->kube_context && *c->kube_context ? c->kube_context : NULL,
                                 &d->kcfg, err, errlen) != 0)
        return -1;
    d->have_kcfg = 1;
    /* One request limit for the replica: every client made from this
     * config, the elector's on its own thread included, shares it. */
    d->kcfg.limit = kube_limit_new(c->kube_api_qps, (int)c->kube_api_burst);
    if (!d->kcfg.limit) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* Every client of the replica, the elector's included, checks its
     * connections alike. */
    d->kcfg.read_idle_ms =
        c->kube_api_read_idle_ns > 0 ? c->kube_api_read_idle_ns / CX_NS_PER_MS : -1;
    d->kcfg.ping_timeout_ms = c->kube_api_ping_timeout_ns / CX_NS_PER_MS;
    snprintf(d->ns, sizeof(d->ns), "%s", daemon_config_namespace(c, d->kcfg.namespace));
    if (daemon_config_election(c, d->ns, d->identity, &d->ecfg, err, errlen) != 0)
        return -1;
    d->filter = filter_new();
    d->store = store_new();
    if (!d->filter || !d->store) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (daemon_config_filter(c, &d->ecfg, d->filter, err, errlen) != 0)
        return -1;
    d->ns_selector = need_ns_selector(c);

    struct kube_client_opts ko = {.identity = d->identity, .component = "coxswain"};
    d->kc = kube_client_new(d->base, &d->kcfg, &ko, err, errlen);
    if (!d->kc)
        return -1;

    int auth_none = strcmp(c->xds_auth, "none") == 0;
    daemon_auth_xds_reviewer(d->kc, &d->reviewer);
    struct xds_server_config xc = {
        .listen = c->xds_listen,
        .auth = auth_none ? XDS_AUTH_NONE : XDS_AUTH_REQUIRED,
        .reviewer = &d->reviewer,
        .token_audience = c->xds_token_audience,
        .trust_domain = c->xds_trust_domain,
        .tls_cert = c->xds_tls_cert && *c->xds_tls_cert ? c->xds_tls_cert : NULL,
        .tls_key = c->xds_tls_key && *c->xds_tls_key ? c->xds_tls_key : NULL,
        .tls_client_ca =
            c->xds_tls_client_ca && *c->xds_tls_client_ca ? c->xds_tls_client_ca : NULL,
        .tls_require_client_cert = c->xds_tls_client_ca && *c->xds_tls_client_ca,
        .default_group = c->default_gateway && *c->default_gateway ? c->default_gateway : NULL,
        .identifier = d->identity,
        .memory_budget = (size_t)c->xds_memory_budget_mb << 20,
        .idle_conn_ms = c->xds_idle_conn_ns ? (int)(c->xds_idle_conn_ns / 1000000) : -1,
        .nack_qps = c->xds_nack_rate,
    };
    char xerr[256];
    d->xds = xds_server_new(d->base, &xc, xerr, sizeof(xerr));
    if (!d->xds) {
        snprintf(err, errlen, "xDS server on %s: %s", c->xds_listen, xerr);
        return -1;
    }
    xds_server_on_nack(d->xds, on_nack, d);
    if (auth_none)
        cx_warn("daemon",
                "--xds-auth none: xDS clients are not authenticated; anyone who reaches %s "
                "receives every Gateway's configuration, private keys included",
                c->xds_listen);
    if (daemon_standby_setup(d, err, errlen) != 0)
        return -1;

    if (daemon_pipeline_new(d, err, errlen) != 0)
        return -1;
    if (!d->cfg->cold && daemon_feed_setup(d, err, errlen) != 0)
        return -1;
    if (daemon_admin_setup(d, err, errlen) != 0)
        return -1;

    d->sig_term = evsignal_new(d->base, SIGTERM, on_signal, d);
    d->sig_int = evsignal_new(d->base, SIGINT, on_signal, d);
    d->grace_timer = evtimer_new(d->base, on_grace, d);
    d->nack_timer = event_new(d->base, -1, EV_PERSIST, on_nack_timer, d);
    d->recheck_timer = evtimer_new(d->base, on_recheck, d);
    struct timeval ntv = {.tv_sec = DAEMON_NACK_RECHECK_MS / 1000,
                          .tv_usec = (DAEMON_NACK_RECHECK_MS % 1000) * 1000};
    if (!d->sig_term || !d->sig_int || !d->grace_timer || !d->nack_timer || !d->recheck_timer ||
        event_add(d->sig_term, NULL) != 0 || event_add(d->sig_int, NULL) != 0 ||
        event_add(d->nack_timer, &ntv) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    if (d->ecfg.enabled) {
        struct election_kube ek;
        daemon_elect_kube(&ek, &d->kcfg);
        struct election_opts eo = {
            .cfg = &d->ecfg,
            .kube = &ek,
            .main_base = d->base,
            .cb = {.on_started_leading = on_started_leading,
                   .on_stopped_leading = on_stopped_leading,
                   .on_new_leader = on_new_leader,
                   .on_done = on_election_done,
                   .user_data = d},
            .post_events = true,
            .component = "coxswain",
        };
        d->election = election_new(&eo, err, errlen);
        if (!d->election)
            return -1;
    }
    return 0;
}

static void teardown(struct daemon *d)
{
    if (d->election) {
        /* After a clean stop this joins at once; if the grace period ran
         * out with the elector still releasing, do not wait for it. */
        if (d->election_done || !d->stopping)
            election_free(d->election);
        d->election = NULL;
    }
    daemon_standby_free(d);
    daemon_feed_free(d);
    daemon_pipeline_free(d);
    xds_server_free(d->xds);
    daemon_admin_free(d);
    daemon_auth_admin_free(d->admin_auth);
    admin_free(d->admin);
    xlate_snapshot_unref(d->snap);
    kube_client_free(d->kc);
    store_free(d->store);
    filter_free(d->filter);
    if (d->have_kcfg)
        kube_config_free(&d->kcfg);
    if (d->sig_term)
        event_free(d->sig_term);
    if (d->sig_int)
        event_free(d->sig_int);
    if (d->grace_timer)
        event_free(d->grace_timer);
    if (d->nack_timer)
        event_free(d->nack_timer);
    if (d->recheck_timer)
        event_free(d->recheck_timer);
    for (size_t i = 0; i < d->ngw_series; i++)
        free(d->gw_series[i].gateway);
    free(d->gw_series);
}

/* Every proxy costs a descriptor: the soft limit (often 1024) goes up to
 * the hard one, which the operator (or the container runtime) set. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
        return;
    rlim_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        cx_warn("daemon", "cannot raise the open-file limit from %llu to %llu",
                (unsigned long long)was, (unsigned long long)rl.rlim_max);
    else
        cx_info("daemon", "open-file limit raised from %llu to %llu", (unsigned long long)was,
                (unsigned long long)rl.rlim_max);
}

/* A core dump would hold every private key and token the process read:
 * not dumpable unless the operator asks (--allow-core-dumps). */
static void core_dumps(int allow)
{
    if (allow) {
        cx_warn("daemon", "core dumps allowed (--allow-core-dumps): a core holds private keys "
                          "and tokens");
        return;
    }
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        cx_warn("daemon", "cannot make the process non-dumpable: %s", strerror(errno));
}

int daemon_run(struct daemon_config *cfg)
{
    struct daemon d;
    memset(&d, 0, sizeof(d));
    d.cfg = cfg;
    d.start_ns = cx_mono_ns();
    core_dumps(cfg->allow_core_dumps);
    raise_nofile();
    d.exit_code = 0;
    char err[512] = "";
    if (cfg->identity && *cfg->identity) {
        snprintf(d.identity, sizeof(d.identity), "%s", cfg->identity);
    } else if (election_identity_make(d.identity, sizeof(d.identity)) != 0) {
        cx_error("daemon", "cannot make an identity (no randomness)");
        return 1;
    }
    d.base = event_base_new();
    if (!d.base) {
        cx_error("daemon", "cannot create the event loop");
        return 1;
    }
    int rc = 1;
    if (setup(&d, err, sizeof(err)) != 0) {
        cx_error("daemon", "start-up failed: %s", err);
        goto out;
    }
    if (d.election && election_start(d.election, err, sizeof(err)) != 0) {
        cx_error("daemon", "cannot start the election: %s", err);
        goto out;
    }
    cx_info("daemon",
            "coxswain run: identity %s, namespace %s, API %s, xDS on port %d, admin on port %d, "
            "election %s",
            d.identity, d.ns, d.kcfg.server, xds_server_port(d.xds), admin_port(d.admin),
            d.ecfg.enabled ? "on" : "off (this replica writes)");
    if (d.ecfg.enabled)
        cx_info("daemon", "lock %s %s/%s; lease %.1fs, renew deadline %.1fs, retry %.1fs",
                election_lock_kind_name(d.ecfg.lock), d.ecfg.ns, d.ecfg.name,
                (double)d.ecfg.lease_ns / 1e9, (double)d.ecfg.renew_ns / 1e9,
                (double)d.ecfg.retry_ns / 1e9);
    if (!cfg->cold)
        daemon_feed_start(&d);
    if (!d.ecfg.enabled) {
        d.leading = 1;
        d.term = 1;
        snprintf(d.leader, sizeof(d.leader), "%s", d.identity);
        cx_series_set(d.m.leader, 1);
        start_writers(&d);
    }
    event_base_dispatch(d.base);
    rc = d.exit_code;
    cx_info("daemon", "stopped after %.1f s", (double)(cx_mono_ns() - d.start_ns) / 1e9);
out:
    teardown(&d);
    event_base_free(d.base);
    return rc;
}
