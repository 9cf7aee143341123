/*
 * daemon_admin: the daemon's admin endpoints and its own metrics.
 *
 *   /metrics /healthz /readyz        (admin.c; checks registered here)
 *   /debug/snapshot                  the served snapshot and every report (JSON)
 *   /debug/leader                    identity, role, leader, writers' counters
 *   /debug/config                    every flag's value, secrets redacted
 *   /v3/discovery:{listeners,...}    REST-JSON xDS (xds_rest.c)
 */
#include "cx_json.h"
#include "cx_log.h"
#include "cx_metrics.h"
#include "cx_time.h"
#include "daemon_internal.h"
#include "store_kinds.h"
#include "xds_rest.h"
#include "xlate_render.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_ready(void *arg, struct cx_buf *why)
{
    return daemon_ready(arg, why);
}

/* ---- /debug/snapshot ------------------------------------------------------
 * Rendering a large snapshot as JSON takes long (hundreds of ms to seconds
 * at 10k+ VirtualServices): done on the main loop, every probe, xDS push
 * and renewal hand-off would wait. The snapshot is immutable and
 * refcounted, so a thread renders it; the result is kept for that version
 * (repeated requests cost nothing) and handed to every request that came
 * meanwhile. A request whose client goes away is dropped from the list. */

#define RENDER_MAX_WAITERS 16

struct snap_render {
    struct daemon *d;
    pthread_t th;
    int running; /* a thread is rendering |snap| */
    int pipe[2]; /* the thread writes one byte when done */
    struct event *ev;
    struct xlate_snapshot *snap; /* being rendered (a reference) */
    struct cx_buf out;           /* the thread's output */
    int rc;
    char version[XDS_VERSION_LEN + 1]; /* of the cached body ("" none) */
    char *body;
    size_t len;
    struct evhttp_request *waiters[RENDER_MAX_WAITERS];
    size_t nwaiters;
};

static void *render_thread(void *arg)
{
    struct snap_render *r = arg;
    int rc = cx_buf_puts(&r->out, "{\n  \"version\": ");
    rc |= cx_json_escape(&r->out, r->snap->version);
    rc |= cx_buf_puts(&r->out, ",\n  \"snapshot\": ");
    rc |= xlate_render_groups(r->snap, 1, &r->out);
    rc |= cx_buf_puts(&r->out, ",\n  \"reports\": ");
    rc |= xlate_render_reports(r->snap, 1, &r->out);
    rc |= cx_buf_puts(&r->out, "\n}\n");
    r->rc = rc;
    char one = 1;
    while (write(r->pipe[1], &one, 1) < 0 && errno == EINTR) {
    }
    return NULL;
}

static void waiter_gone(struct evhttp_connection *evcon, void *arg)
{
    struct snap_render *r = arg;
    for (size_t i = 0; i < r->nwaiters; i++) {
        if (evhttp_request_get_connection(r->waiters[i]) == evcon) {
            r->waiters[i--] = r->waiters[--r->nwaiters];
        }
    }
}

static void reply_waiters(struct snap_render *r, int ok)
{
    while (r->nwaiters > 0) {
        struct evhttp_request *req = r->waiters[--r->nwaiters];
        evhttp_connection_set_closecb(evhttp_request_get_connection(req), NULL, NULL);
        if (ok)
            admin_reply(req, 200, "application/json", r->body, r->len);
        else
            admin_reply(req, 500, "text/plain", "rendering failed\n", 17);
    }
}

static void render_done(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct snap_render *r = arg;
    char buf[16];
    while (read(fd, buf, sizeof(buf)) > 0) {
    }
    if (!r->running)
        return;
    pthread_join(r->th, NULL);
    r->running = 0;
    free(r->body);
    r->body = NULL;
    r->version[0] = '\0';
    int ok = r->rc == 0;
    if (ok) {
        r->body = cx_buf_steal(&r->out, &r->len);
        ok = r->body != NULL;
        if (ok)
            snprintf(r->version, sizeof(r->version), "%s", r->snap->version);
    }
    cx_buf_free(&r->out);
    xlate_snapshot_unref(r->snap);
    r->snap = NULL;
    reply_waiters(r, ok);
}

static void handle_snapshot(struct evhttp_request *req, void *arg)
{
    struct daemon *d = arg;
    struct snap_render *r = d->render;
    if (!d->snap) {
        admin_reply(req, 503, "application/json", "{\"error\":\"no snapshot yet\"}\n", 28);
        return;
    }
    if (r->body && strcmp(r->version, d->snap->version) == 0) {
        admin_reply(req, 200, "application/json", r->body, r->len);
        return;
    }
    if (r->nwaiters == RENDER_MAX_WAITERS) {
        admin_reply(req, 503, "text/plain", "busy rendering the snapshot: retry\n", 35);
        return;
    }
    if (!r->running) {
        r->snap = xlate_snapshot_ref(d->snap);
        cx_buf_init(&r->out, (size_t)1 << 30);
        if (pthread_create(&r->th, NULL, render_thread, r) != 0) {
            xlate_snapshot_unref(r->snap);
            r->snap = NULL;
            admin_reply(req, 503, "text/plain", "cannot start rendering: retry\n", 30);
            return;
        }
        r->running = 1;
    }
    /* (a rendering of an older version still in progress answers this
     * request with that version: a moment old, never a stall) */
    r->waiters[r->nwaiters++] = req;
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), waiter_gone, r);
}

static int render_setup(struct daemon *d)
{
    struct snap_render *r = calloc(1, sizeof(*r));
    if (!r)
        return -1;
    r->d = d;
    r->pipe[0] = r->pipe[1] = -1;
    d->render = r;
    if (pipe2(r->pipe, O_NONBLOCK | O_CLOEXEC) != 0)
        return -1;
    r->ev = event_new(d->base, r->pipe[0], EV_READ | EV_PERSIST, render_done, r);
    if (!r->ev || event_add(r->ev, NULL) != 0)
        return -1;
    return 0;
}

void daemon_admin_free(struct daemon *d)
{
    struct snap_render *r = d->render;
    if (!r)
        return;
    if (r->running) {
        pthread_join(r->th, NULL);
        cx_buf_free(&r->out);
        xlate_snapshot_unref(r->snap);
    }
    /* waiters: their connections go with the admin server */
    for (size_t i = 0; i < r->nwaiters; i++)
        evhttp_connection_set_closecb(evhttp_request_get_connection(r->waiters[i]), NULL, NULL);
    if (r->ev)
        event_free(r->ev);
    if (r->pipe[0] >= 0)
        close(r->pipe[0]);
    if (r->pipe[1] >= 0)
        close(r->pipe[1]);
    free(r->body);
    free(r);
    d->render = NULL;
}

static void handle_leader(struct evhttp_request *req, void *arg)
{
    struct daemon *d = arg;
    struct status_writer_stats ss;
    struct publish_stats ps;
    status_writer_stats(d->sw, &ss);
    publish_stats(d->pub, &ps);
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = cx_buf_puts(&b, "{\"identity\":");
    rc |= cx_json_escape(&b, d->identity);
    rc |= cx_buf_printf(&b, ",\"leading\":%s,\"term\":%" PRIu64 ",\"leader\":",
                        d->leading ? "true" : "false", d->term);
    rc |= cx_json_escape(&b, d->leader);
    rc |= cx_buf_puts(&b, ",\"namespace\":");
    rc |= cx_json_escape(&b, d->ns);
    rc |= cx_buf_printf(&b,
                        ",\"ready\":%s,\"snapshot\":", d->snap && d->all_synced ? "true" : "false");
    rc |= cx_json_escape(&b, d->snap ? d->snap->version : "");
    rc |= cx_buf_printf(
        &b,
        ",\"snapshots\":%" PRIu64 ",\"translations\":%" PRIu64
        ",\"status_writer\":{\"leading\":%s,\"idle\":%s,\"passes\":%" PRIu64 ",\"checks\":%" PRIu64
        ",\"up_to_date\":%" PRIu64 ",\"deferred\":%" PRIu64 ",\"writes\":%" PRIu64
        ",\"writes_ok\":%" PRIu64 ",\"conflicts\":%" PRIu64 ",\"failures\":%" PRIu64
        ",\"refused\":%" PRIu64 ",\"cancelled\":%" PRIu64 ",\"queued\":%zu,\"inflight\":%zu}",
        d->snapshots, daemon_worker_passes(d->worker), ss.leading ? "true" : "false",
        status_writer_idle(d->sw) ? "true" : "false", ss.passes, ss.checks, ss.up_to_date,
        ss.deferred, ss.writes, ss.writes_ok, ss.conflicts, ss.failures, ss.refused, ss.cancelled,
        ss.queued, ss.inflight);
    rc |= cx_buf_printf(&b,
                        ",\"publisher\":{\"leading\":%s,\"idle\":%s,\"creates\":%" PRIu64
                        ",\"updates\":%" PRIu64 ",\"deletes\":%" PRIu64 ",\"conflicts\":%" PRIu64
                        ",\"failures\":%" PRIu64 ",\"refused\":%" PRIu64 ",\"truncated\":%" PRIu64
                        ",\"queued\":%zu,\"gateways\":%zu,\"consistent\":%zu}",
                        ps.leading ? "true" : "false", publish_idle(d->pub) ? "true" : "false",
                        ps.creates, ps.updates, ps.deletes, ps.conflicts, ps.failures, ps.refused,
                        ps.truncated, ps.queued, ps.groups, ps.consistent);
    rc |= cx_buf_puts(&b, ",\"election\":");
    if (d->election)
        rc |= election_status_json(d->election, &b);
    else
        rc |= cx_buf_puts(&b, "null");
    rc |= cx_buf_puts(&b, "}");
    /* The elector's fields (role, holder, watch, safe time...) also at the
     * top level, so this page is a superset of `coxswain elect`'s. */
    cJSON *doc = rc == 0 ? cx_json_parse(b.data, b.len) : NULL;
    cx_buf_free(&b);
    cJSON *el = doc ? cJSON_GetObjectItemCaseSensitive(doc, "election") : NULL;
    const cJSON *src = cJSON_IsObject(el) ? el : NULL;
    const cJSON *f;
    cJSON_ArrayForEach(f, src)
    {
        if (!cJSON_HasObjectItem(doc, f->string))
            cJSON_AddItemToObject(doc, f->string, cJSON_Duplicate(f, 1));
    }
    if (doc && !cJSON_IsObject(el)) { /* --leader-elect=false: always the writer */
        cJSON_AddStringToObject(doc, "role", "leader");
        cJSON_AddStringToObject(doc, "holder", d->identity);
    }
    char *out = doc ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    if (!out) {
        admin_reply(req, 500, "text/plain", "rendering failed\n", 17);
        return;
    }
    size_t n = strlen(out);
    char *body = realloc(out, n + 2);
    if (body) {
        body[n] = '\n';
        body[n + 1] = '\0';
        admin_reply(req, 200, "application/json", body, n + 1);
        free(body);
    } else {
        admin_reply(req, 200, "application/json", out, n);
        free(out);
    }
}

static void handle_config(struct evhttp_request *req, void *arg)
{
    struct daemon *d = arg;
    char *js = daemon_config_json(d->cfg);
    if (!js) {
        admin_reply(req, 500, "text/plain", "out of memory\n", 14);
        return;
    }
    size_t n = strlen(js);
    char *body = malloc(n + 2);
    if (body) {
        memcpy(body, js, n);
        body[n] = '\n';
        body[n + 1] = '\0';
        admin_reply(req, 200, "application/json", body, n + 1);
    }
    free(body);
    free(js);
}

static int write_ports_file(struct daemon *d, char *err, size_t errlen)
{
    const char *path = d->cfg->ports_file;
    if (!path || !*path)
        return 0;
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
        snprintf(err, errlen, "--ports-file: path too long");
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "--ports-file %s: %s", tmp, strerror(errno));
        return -1;
    }
    struct cx_buf id;
    cx_buf_init(&id, 1024);
    int rc = cx_json_escape(&id, d->identity);
    fprintf(f, "{\"xds\": %d, \"admin\": %d, \"identity\": %s, \"pid\": %d}\n",
            xds_server_port(d->xds), admin_port(d->admin), rc == 0 ? id.data : "\"\"",
            (int)getpid());
    cx_buf_free(&id);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        snprintf(err, errlen, "--ports-file %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* /readyz?verbose says when xDS clients are not authenticated. */
static int check_xds_auth(void *arg, struct cx_buf *why)
{
    struct daemon *d = arg;
    if (xds_server_auth_required(d->xds))
        return 0;
    int rc = cx_buf_printf(why, "--xds-auth none: xDS clients are not authenticated");
    (void)rc; /* a cut text still warns */
    return 1;
}

int daemon_admin_setup(struct daemon *d, char *err, size_t errlen)
{
    char aerr[256];
    d->admin = admin_new(d->base, d->cfg->admin_listen, aerr, sizeof(aerr));
    if (!d->admin) {
        snprintf(err, errlen, "admin server on %s: %s", d->cfg->admin_listen, aerr);
        return -1;
    }
    admin_register_process_metrics();
    admin_set_timeout(d->admin, (int)(d->cfg->admin_timeout_ns / 1000000000));
    admin_set_limits(d->admin, (unsigned)d->cfg->admin_max_connections,
                     (int)(d->cfg->admin_request_deadline_ns / 1000000000));
    if (render_setup(d) != 0) {
        snprintf(err, errlen, "cannot set up /debug/snapshot rendering");
        return -1;
    }
    d->m.gw_version = cx_gauge("coxswain_snapshot_version_info",
                               "Version of the snapshot this replica serves to each Gateway's "
                               "proxies (value 1).",
                               "gateway,version");
    d->m.snap_version =
        cx_gauge("coxswain_snapshot_info",
                 "Version of the whole snapshot this replica serves (value 1).", "version");
    d->m.store_objects =
        cx_gauge("coxswain_store_objects",
                 "Objects in the store (in scope, after the filters), by kind.", "kind");
    struct cx_metric *leader = cx_gauge("coxswain_leader",
                                        "1 while this replica leads (writes statuses and "
                                        "ProxySnapshots).",
                                        NULL);
    struct cx_metric *snaps = cx_gauge("coxswain_snapshot_generation",
                                       "Snapshots this replica has built since it started.", NULL);
    struct cx_metric *dumpable =
        cx_gauge("coxswain_process_dumpable",
                 "1 when the process may dump core (--allow-core-dumps), else 0: what the "
                 "kernel says (PR_GET_DUMPABLE).",
                 NULL);
    if (!d->m.gw_version || !d->m.snap_version || !d->m.store_objects || !leader || !snaps ||
        !dumpable) {
        snprintf(err, errlen, "cannot register metrics");
        return -1;
    }
    struct cx_series *dumpable_s = cx_metric_with(dumpable);
    if (dumpable_s)
        cx_series_set(dumpable_s, prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) > 0 ? 1 : 0);
    d->m.leader = cx_metric_with(leader);
    d->m.ready = cx_metric_with(snaps);
    cx_series_set(d->m.leader, 0);
    for (int k = 0; k < XLATE_KIND_COUNT; k++)
        cx_metric_set(d->m.store_objects, 0, store_kind_resource((enum xlate_kind)k)->kind);
    if ((d->election &&
         admin_add_health_check(d->admin, "leader-election", election_healthz, d->election) != 0) ||
        admin_add_ready_check(d->admin, "informers-synced-and-snapshot-built", check_ready, d) !=
            0 ||
        admin_add_ready_check(d->admin, "xds-authentication", check_xds_auth, d) != 0 ||
        admin_handle(d->admin, "/debug/snapshot", handle_snapshot, d) != 0 ||
        admin_handle(d->admin, "/debug/leader", handle_leader, d) != 0 ||
        admin_handle(d->admin, "/debug/config", handle_config, d) != 0 ||
        xds_rest_mount(d->admin, d->xds) != 0) {
        snprintf(err, errlen, "cannot mount the admin handlers");
        return -1;
    }
    d->admin_auth = daemon_auth_admin_new(d->kc, d->admin, d->cfg->admin_trust_loopback);
    if (!d->admin_auth) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return write_ports_file(d, err, errlen);
}

void daemon_admin_note_snapshot(struct daemon *d)
{
    const struct xlate_snapshot *s = d->snap;
    /* versions keep changing: the old version's series goes for good */
    cx_series_remove(d->m.snap_series);
    d->m.snap_series = cx_metric_with(d->m.snap_version, s->version);
    if (d->m.snap_series)
        cx_series_set(d->m.snap_series, 1);
    cx_series_set(d->m.ready, (double)d->snapshots);
    for (int k = 0; k < XLATE_KIND_COUNT; k++)
        cx_metric_set(d->m.store_objects, (double)store_len(d->store, (enum xlate_kind)k),
                      store_kind_resource((enum xlate_kind)k)->kind);
    /* Per gateway: hide the series of versions (and gateways) that went. */
    for (size_t i = 0; i < d->ngw_series; i++) {
        const struct xlate_group *g = xlate_snapshot_group(s, d->gw_series[i].gateway);
        char v[XDS_VERSION_LEN + 1] = "";
        if (g)
            publish_group_version(g, v);
        if (!g || strcmp(v, d->gw_series[i].version) != 0) {
            cx_series_remove(d->gw_series[i].s);
            free(d->gw_series[i].gateway);
            d->gw_series[i] = d->gw_series[--d->ngw_series];
            i--;
        }
    }
    for (size_t gi = 0; gi < s->ngroups; gi++) {
        const struct xlate_group *g = &s->groups[gi];
        size_t i;
        for (i = 0; i < d->ngw_series; i++)
            if (strcmp(d->gw_series[i].gateway, g->name) == 0)
                break;
        if (i < d->ngw_series)
            continue;
        void *n = realloc(d->gw_series, (d->ngw_series + 1) * sizeof(*d->gw_series));
        if (!n)
            return;
        d->gw_series = n;
        char v[XDS_VERSION_LEN + 1];
        publish_group_version(g, v);
        struct cx_series *se = cx_metric_with(d->m.gw_version, g->name, v);
        char *name = strdup(g->name);
        if (!se || !name) {
            free(name);
            return;
        }
        cx_series_set(se, 1);
        d->gw_series[d->ngw_series].gateway = name;
        snprintf(d->gw_series[d->ngw_series].version, XDS_VERSION_LEN + 1, "%s", v);
        d->gw_series[d->ngw_series].s = se;
        d->ngw_series++;
    }
}
