/*
 * daemon_standby: what a replica does while it does not lead, and how it
 * takes over (--standby warm|cold).
 *
 * warm (the default): every replica watches, translates and serves xDS;
 * a new leader only starts its writers (a full status pass from the warm
 * cache).
 *
 * cold: a standby runs its elector and nothing else: no informer, no
 * translation, xDS paused (the port closed), /readyz failing. On becoming
 * leader it sets up and starts its informers, translates once they have
 * synced, then serves xDS (resumed on the same port) and reconciles every
 * status (the status writer's full pass runs on the term's first
 * snapshot). On losing leadership it tells its proxies to go (GOAWAY,
 * UNAVAILABLE: they reconnect to a ready replica), stops and frees its
 * informers, store, worker and writers, and drops the served snapshot once
 * the streams are gone.
 *
 * Every term's takeover is timed from the elector's notice:
 * coxswain_takeover_seconds{phase="synced|snapshot|serving"} (cold:
 * informers synced, first snapshot built, xDS serving it; warm: all three
 * at once), and one log line.
 *
 * Main loop only.
 */
#include "cx_log.h"
#include "cx_metrics.h"
#include "cx_time.h"
#include "daemon_internal.h"

#include <inttypes.h>
#include <stdio.h>

#define STANDBY_RETRY_MS 1000
#define XDS_GRACE_MS     1000

static void phase(struct daemon *d, const char *name, int *seen)
{
    if (*seen || !d->leading || !d->sb.term_start_ns)
        return;
    *seen = 1;
    double secs = (double)(cx_mono_ns() - d->sb.term_start_ns) / 1e9;
    if (d->sb.takeover)
        cx_metric_set(d->sb.takeover, secs, name);
    cx_info("daemon", "takeover (term %" PRIu64 ", %s standby): %s after %.1f ms", d->term,
            d->cfg->cold ? "cold" : "warm", name, secs * 1e3);
}

static void arm(struct event *ev, int ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    if (ev)
        evtimer_add(ev, &tv);
}

/* Cold, leading, first snapshot there: serve it. */
static void serve(struct daemon *d)
{
    if (!d->sb.xds_paused)
        return;
    char err[256];
    if (xds_server_resume(d->xds, err, sizeof(err)) != 0) {
        cx_error("daemon", "cold standby taking over: cannot serve xDS again: %s; retrying", err);
        arm(d->sb.retry, STANDBY_RETRY_MS);
        return;
    }
    d->sb.xds_paused = 0;
    phase(d, "serving", &d->sb.serving);
}

/* Cold, leading: the informers, if they are not running yet. */
static void activate(struct daemon *d)
{
    if (d->sb.active || !d->leading || d->stopping)
        return;
    char err[256];
    if (daemon_feed_setup(d, err, sizeof(err)) != 0) {
        cx_error("daemon", "cold standby taking over: %s; retrying", err);
        daemon_feed_free(d);
        arm(d->sb.retry, STANDBY_RETRY_MS);
        return;
    }
    d->sb.active = 1;
    cx_info("daemon", "cold standby taking over (term %" PRIu64 "): listing and watching", d->term);
    daemon_feed_start(d);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct daemon *d = arg;
    if (!d->leading || d->stopping)
        return;
    if (!d->sb.active)
        activate(d);
    else if (d->snap)
        serve(d);
}

/* The pause's grace is over: no stream holds the snapshot any more. */
static void on_release(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct daemon *d = arg;
    if (!d->sb.active && d->sb.xds_paused)
        xds_server_set_snapshot(d->xds, NULL);
}

int daemon_standby_setup(struct daemon *d, char *err, size_t errlen)
{
    d->sb.takeover =
        cx_gauge("coxswain_takeover_seconds",
                 "Time from the start of this replica's last term to each phase of its "
                 "takeover: informers synced, first snapshot built, xDS serving it "
                 "(a warm standby has them all at once)",
                 "phase");
    static const char *const phases[] = {"synced", "snapshot", "serving"};
    for (size_t i = 0; i < 3 && d->sb.takeover; i++)
        cx_metric_set(d->sb.takeover, 0, phases[i]);
    struct cx_metric *m = cx_gauge("coxswain_standby_cold",
                                   "1 if this replica is a cold standby (--standby cold)", NULL);
    d->sb.mode = m ? cx_metric_with(m) : NULL;
    if (d->sb.mode)
        cx_series_set(d->sb.mode, d->cfg->cold);
    if (!d->cfg->cold)
        return 0;
    if (!d->ecfg.enabled) {
        cx_warn("daemon", "--standby cold without --leader-elect: this replica always leads, "
                          "so it runs as warm");
        d->cfg->cold = 0;
        if (d->sb.mode)
            cx_series_set(d->sb.mode, 0);
        return 0;
    }
    d->sb.retry = evtimer_new(d->base, on_retry, d);
    d->sb.release = evtimer_new(d->base, on_release, d);
    if (!d->sb.retry || !d->sb.release) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* Nothing listens until this replica leads. */
    xds_server_pause(d->xds, 0);
    d->sb.xds_paused = 1;
    cx_info("daemon",
            "cold standby: watching only the lock until leading (xDS port %d closed, "
            "not ready)",
            xds_server_port(d->xds));
    return 0;
}

void daemon_standby_lead(struct daemon *d)
{
    d->sb.term_start_ns = cx_mono_ns();
    d->sb.synced = d->sb.snapshot = d->sb.serving = 0;
    if (!d->cfg->cold) {
        /* Warm: synced, translated and serving already (or as soon as the
         * first snapshot comes, at start-up). */
        if (d->all_synced)
            phase(d, "synced", &d->sb.synced);
        if (d->snap) {
            phase(d, "snapshot", &d->sb.snapshot);
            phase(d, "serving", &d->sb.serving);
        }
        return;
    }
    evtimer_del(d->sb.release);
    activate(d);
}

void daemon_standby_stop_leading(struct daemon *d)
{
    if (!d->cfg->cold || d->stopping)
        return;
    if (d->sb.retry)
        evtimer_del(d->sb.retry);
    /* Proxies first: they go to the new leader while we tear down. */
    if (!d->sb.xds_paused) {
        xds_server_pause(d->xds, XDS_GRACE_MS);
        d->sb.xds_paused = 1;
    }
    if (!d->sb.active)
        return;
    d->sb.active = 0;
    daemon_feed_free(d);
    d->inputs_synced = 0;
    d->all_synced = 0;
    daemon_pipeline_free(d);
    store_free(d->store);
    d->store = store_new();
    xlate_snapshot_unref(d->snap);
    d->snap = NULL;
    d->first_snapshot_ns = 0;
    char err[256];
    if (!d->store || daemon_pipeline_new(d, err, sizeof(err)) != 0) {
        /* Without them this replica cannot lead again: end it, so that
         * Kubernetes restarts it. */
        cx_error("daemon", "cold standby: cannot make its pipeline again (%s): exiting",
                 d->store ? err : "out of memory");
        d->exit_code = 1;
        event_base_loopbreak(d->base);
        return;
    }
    arm(d->sb.release, XDS_GRACE_MS + 200);
    cx_info("daemon", "cold standby again: informers stopped, caches freed, xDS paused");
}

void daemon_standby_synced(struct daemon *d)
{
    phase(d, "synced", &d->sb.synced);
}

void daemon_standby_snapshot(struct daemon *d)
{
    if (!d->leading)
        return;
    phase(d, "snapshot", &d->sb.snapshot);
    if (d->cfg->cold)
        serve(d);
    else
        phase(d, "serving", &d->sb.serving);
}

int daemon_standby_ready(const struct daemon *d, struct cx_buf *why)
{
    if (!d->cfg->cold || d->sb.active)
        return 0;
    (void)!cx_buf_puts(why, "cold standby: not leading, watching only the lock (serves no xDS)");
    return -1;
}

void daemon_standby_free(struct daemon *d)
{
    if (d->sb.retry)
        event_free(d->sb.retry);
    if (d->sb.release)
        event_free(d->sb.release);
    d->sb.retry = d->sb.release = NULL;
}
