/*
 * `coxswain elect`: runs only the leader election and logs its transitions,
 * so the elector can be tested and benchmarked alone. SIGTERM / SIGINT
 * release the lock (if held) and exit 0.
 *
 * With --test-write-interval it also performs a guarded write (a merge
 * patch of a ConfigMap) at that interval from the main thread, through the
 * write guard and with the guard's timeout, as the daemon's writers do. The
 * API server's audit log then shows whether any write of a replica landed
 * after another replica had taken the lock.
 *
 * Log lines meant for tests start with "elect:" and carry the monotonic
 * time in nanoseconds (mono=...), the same clock kubesim's audit log uses.
 */
#include "cli.h"
#include "admin.h"
#include "cx_flags.h"
#include "cx_json.h"
#include "cx_log.h"
#include "cx_time.h"
#include "daemon_elect_kube.h"
#include "election.h"
#include "kube_client.h"
#include "kube_config.h"

#include <event2/event.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_elect(int argc, char **argv);

static const struct kube_resource res_configmaps = {"", "v1", "configmaps", "ConfigMap", 1};

struct elect {
    struct event_base *base;
    struct election *e;
    struct kube_client *kc; /* the main loop's own client (test writes) */
    const char *identity;
    const char *ns;
    char *write_cm;
    int64_t write_interval;
    struct event *write_timer;
    uint64_t write_term; /* the term the queued write was allowed in */
    int write_entered;   /* its first pre-send yes was counted (election_guard_enter) */
    struct kube_call *write_call;
    uint64_t seq;
    uint64_t writes_ok, writes_failed, writes_refused;
    int exit_code;
    int stopping;
};

static void emit(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line on stdout per transition, flushed: tests read these. */
static void emit(const char *what, const char *fmt, ...)
{
    char rest[512] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(rest, sizeof(rest), fmt, ap);
        va_end(ap);
    }
    printf("elect: %s mono=%" PRId64 "%s%s\n", what, cx_mono_ns(), rest[0] ? " " : "", rest);
    fflush(stdout);
}

static void on_started(void *ud, uint64_t term)
{
    (void)ud;
    emit("started-leading", "term=%" PRIu64, term);
}

static void on_stopped(void *ud, uint64_t term, enum election_stop_reason reason)
{
    (void)ud;
    emit("stopped-leading", "term=%" PRIu64 " reason=\"%s\"", term,
         election_stop_reason_name(reason));
}

static void on_new_leader(void *ud, const char *id)
{
    (void)ud;
    emit("new-leader", "leader=\"%s\"", id);
}

static void on_done(void *ud, bool released)
{
    struct elect *el = ud;
    emit("done", "released=%d", released ? 1 : 0);
    event_base_loopbreak(el->base);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct elect *el = arg;
    (void)what;
    if (el->stopping++) {
        cx_warn("elect", "second signal: exiting without waiting for the release");
        event_base_loopbreak(el->base);
        return;
    }
    emit("stopping", "signal=%d", (int)sig);
    if (el->write_timer)
        evtimer_del(el->write_timer);
    election_stop(el->e);
}

/* ---- guarded test writes ---------------------------------------------- */

static void schedule_write(struct elect *el);

/* kube_req_opts.presend: the guard once more, right before the bytes leave
 * (closes the gap between queueing and libcurl's send). */
static int write_presend(void *arg)
{
    struct elect *el = arg;
    struct election_guard *g = election_guard_of(el->e);
    if (!el->write_entered) {
        /* counted until it ends: the release waits for it */
        if (!election_guard_enter(g, el->write_term))
            return 1;
        el->write_entered = 1;
        return 0;
    }
    return election_guard_recheck(g, el->write_term) ? 0 : 1;
}

static void write_presend_end(void *arg)
{
    struct elect *el = arg;
    if (el->write_entered)
        election_guard_leave(election_guard_of(el->e));
    el->write_entered = 0;
}

/* Options of a guarded test write in |term|: one attempt that may not
 * outlive the |timeout_ns| the guard allowed, checked again right before
 * it is sent. */
static struct kube_req_opts write_opts(struct elect *el, uint64_t term, int64_t timeout_ns)
{
    int64_t ms = timeout_ns / 1000000;
    el->write_term = term;
    return (struct kube_req_opts){.timeout_ms = ms < 1 ? 1 : ms,
                                  .deadline_ms = ms < 1 ? 1 : ms,
                                  .max_attempts = 1,
                                  .presend = write_presend,
                                  .presend_end = write_presend_end,
                                  .presend_arg = el};
}

static void on_write_done(struct kube_result *r, void *arg)
{
    struct elect *el = arg;
    el->write_call = NULL;
    if (r->err.code == KUBE_OK) {
        el->writes_ok++;
    } else if (r->err.code == KUBE_E_NOT_FOUND && !el->stopping) {
        /* First write ever: the ConfigMap does not exist yet. Create it,
         * through the guard like any other write. */
        el->writes_failed++;
        int64_t timeout_ns = 0;
        uint64_t term = 0;
        if (election_guard_allow(election_guard_of(el->e), &timeout_ns, &term)) {
            cJSON *cm = cJSON_CreateObject();
            cJSON_AddStringToObject(cm, "apiVersion", "v1");
            cJSON_AddStringToObject(cm, "kind", "ConfigMap");
            cJSON *md = cJSON_AddObjectToObject(cm, "metadata");
            cJSON_AddStringToObject(md, "name", el->write_cm);
            cJSON_AddStringToObject(md, "namespace", el->ns);
            struct kube_req_opts o = write_opts(el, term, timeout_ns);
            el->write_call =
                kube_create(el->kc, &res_configmaps, el->ns, cm, &o, on_write_done, el);
            cJSON_Delete(cm);
            if (el->write_call && !election_guard_recheck(election_guard_of(el->e), term)) {
                kube_call_cancel(el->write_call);
                el->write_call = NULL;
            }
            if (el->write_call)
                return;
        }
    } else if (r->err.code == KUBE_E_CANCELLED && strcmp(r->err.reason, "RefusedBeforeSend") == 0) {
        el->writes_refused++; /* the last-moment guard check said no: never sent */
    } else {
        el->writes_failed++;
        cx_debug("elect", "test write failed: %s", r->err.message);
    }
    schedule_write(el);
}

static void write_now(struct elect *el)
{
    int64_t timeout_ns = 0;
    uint64_t term = 0;
    /* The guard, right before the write: refused when not leading or when
     * less than the margin is left; the write may not outlive the rest. */
    if (!election_guard_allow(election_guard_of(el->e), &timeout_ns, &term)) {
        el->writes_refused++;
        schedule_write(el);
        return;
    }
    el->seq++;
    /* The identity is the operator's string (--identity): JSON-escaped. */
    struct cx_buf patch;
    cx_buf_init(&patch, 4096);
    if (cx_buf_puts(&patch, "{\"metadata\":{\"labels\":{\"coxswain.dev/test-writer\":"
                            "\"elect\"}},\"data\":{\"writer\":") != 0 ||
        cx_json_escape(&patch, el->identity) != 0 ||
        cx_buf_printf(
            &patch, ",\"term\":\"%" PRIu64 "\",\"seq\":\"%" PRIu64 "\",\"mono\":\"%" PRId64 "\"}}",
            term, el->seq, cx_mono_ns()) != 0) {
        cx_buf_free(&patch);
        el->writes_failed++;
        schedule_write(el);
        return;
    }
    int64_t ms = timeout_ns / 1000000;
    struct kube_req_opts o = write_opts(el, term, timeout_ns);
    int64_t checked = cx_mono_ns();
    el->write_call = kube_patch(el->kc, &res_configmaps, el->ns, el->write_cm, KUBE_PATCH_MERGE,
                                patch.data, 0, &o, on_write_done, el);
    cx_buf_free(&patch);
    if (el->write_call && !election_guard_recheck(election_guard_of(el->e), term)) {
        /* Paused (or stepped down) while queueing it: not sent yet, drop it. */
        kube_call_cancel(el->write_call);
        el->write_call = NULL;
        el->writes_refused++;
        cx_debug("elect",
                 "test write seq=%" PRIu64 " cancelled: the guard closed while it was "
                 "being queued (allowed at mono=%" PRId64 ")",
                 el->seq, checked);
        schedule_write(el);
        return;
    }
    cx_debug("elect",
             "test write seq=%" PRIu64 " term=%" PRIu64 " allowed at mono=%" PRId64 " with %" PRId64
             " ms",
             el->seq, term, checked, ms);
    if (!el->write_call) {
        el->writes_failed++;
        schedule_write(el);
    }
}

static void on_write_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    write_now(arg);
}

static void schedule_write(struct elect *el)
{
    if (!el->write_timer || el->stopping)
        return;
    struct timeval tv = {.tv_sec = el->write_interval / 1000000000,
                         .tv_usec = (el->write_interval % 1000000000) / 1000};
    evtimer_add(el->write_timer, &tv);
}

static void handle_leader(struct evhttp_request *req, void *arg)
{
    struct cx_buf b;
    cx_buf_init(&b, 1 << 16);
    if (election_status_json(arg, &b) != 0 || cx_buf_puts(&b, "\n") != 0) {
        admin_reply(req, 500, "text/plain", "status failed\n", 14);
    } else {
        admin_reply(req, 200, "application/json", b.data, b.len);
    }
    cx_buf_free(&b);
}

int cmd_elect(int argc, char **argv)
{
    char *kubeconfig = NULL, *context = NULL, *identity = NULL, *log_level = NULL,
         *log_format = NULL, *admin_listen = NULL, *write_cm = NULL;
    int post_events = 1;
    int64_t write_interval = 0;
    struct election_flags ef;
    memset(&ef, 0, sizeof(ef));
    struct cx_flag flags[16 + ELECTION_FLAGS_MAX];
    size_t n = 0;
    flags[n++] = (struct cx_flag){"kubeconfig",
                                  CX_FLAG_STRING,
                                  &kubeconfig,
                                  "",
                                  NULL,
                                  "kubeconfig file (default: $KUBECONFIG, in-cluster, "
                                  "~/.kube/config)",
                                  0,
                                  0};
    flags[n++] = (struct cx_flag){
        "context", CX_FLAG_STRING, &context, "", NULL, "kubeconfig context (default: current)", 0,
        0};
    flags[n++] =
        (struct cx_flag){"identity", CX_FLAG_STRING,
                         &identity,  "",
                         NULL,       "holder identity (default: <POD_NAME or hostname>_<8 hex>)",
                         0,          0};
    flags[n++] = (struct cx_flag){"log-level",
                                  CX_FLAG_STRING,
                                  &log_level,
                                  "info",
                                  "COXSWAIN_LOG_LEVEL",
                                  "debug, info, warn or error",
                                  0,
                                  0};
    flags[n++] = (struct cx_flag){"log-format",          CX_FLAG_STRING, &log_format, "text",
                                  "COXSWAIN_LOG_FORMAT", "text or json", 0,           0};
    flags[n++] = (struct cx_flag){"admin-listen",
                                  CX_FLAG_STRING,
                                  &admin_listen,
                                  "",
                                  NULL,
                                  "serve /metrics, /healthz and /debug/leader on host:port "
                                  "(empty: off)",
                                  0,
                                  0};
    flags[n++] = (struct cx_flag){"post-events",
                                  CX_FLAG_BOOL,
                                  &post_events,
                                  "true",
                                  NULL,
                                  "post a Kubernetes Event on each acquisition and loss",
                                  0,
                                  0};
    flags[n++] = (struct cx_flag){"test-write-interval",
                                  CX_FLAG_DURATION,
                                  &write_interval,
                                  "0",
                                  NULL,
                                  "perform a guarded test write (merge patch of a ConfigMap) "
                                  "this often; 0: never",
                                  0,
                                  0};
    flags[n++] = (struct cx_flag){"test-write-configmap",
                                  CX_FLAG_STRING,
                                  &write_cm,
                                  "coxswain-elect-test",
                                  NULL,
                                  "the ConfigMap (in the lock's namespace) the test writes patch",
                                  0,
                                  0};
    size_t base_n = n;
    n += election_flags_table(&ef, flags + n, ELECTION_FLAGS_MAX);
    char err[512];
    int rc = 2;
    struct elect el;
    memset(&el, 0, sizeof(el));
    struct kube_config kcfg;
    memset(&kcfg, 0, sizeof(kcfg));
    struct admin_server *admin = NULL;
    struct event *sigterm = NULL, *sigint = NULL;
    struct election_config cfg;
    election_config_defaults(&cfg);

    int pr = cx_flags_parse(flags, n, argc, argv, err, sizeof(err));
    if (pr == 1) {
        cx_flags_usage(stdout, "coxswain elect",
                       "runs only the leader election and logs its transitions", flags, n);
        rc = 0;
        goto out;
    }
    if (pr != 0) {
        fprintf(stderr, "coxswain elect: %s\n", err);
        goto out;
    }
    enum cx_log_level lvl;
    enum cx_log_format fmt;
    if (cx_log_parse_level(log_level, &lvl) != 0 || cx_log_parse_format(log_format, &fmt) != 0) {
        fprintf(stderr, "coxswain elect: bad --log-level or --log-format\n");
        goto out;
    }
    if (election_apply_flags(&cfg, &ef, err, sizeof(err)) != 0) {
        fprintf(stderr, "coxswain elect: %s\n", err);
        goto out;
    }
    cfg.enabled = true;
    if (identity && *identity) {
        snprintf(cfg.identity, sizeof(cfg.identity), "%s", identity);
    } else if (election_identity_make(cfg.identity, sizeof(cfg.identity)) != 0) {
        fprintf(stderr, "coxswain elect: no randomness for the identity\n");
        goto out;
    }
    cx_log_setup(fmt, lvl, cfg.identity);
    if (election_config_validate(&cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "coxswain elect: %s\n", err);
        goto out;
    }
    if (kube_config_load_default(kubeconfig && *kubeconfig ? kubeconfig : NULL,
                                 context && *context ? context : NULL, &kcfg, err,
                                 sizeof(err)) != 0) {
        fprintf(stderr, "coxswain elect: %s\n", err);
        goto out;
    }
    rc = 1;
    signal(SIGPIPE, SIG_IGN);
    el.base = event_base_new();
    if (!el.base)
        goto out;
    el.identity = cfg.identity;
    el.ns = cfg.ns;
    el.write_cm = write_cm;
    el.write_interval = write_interval;
    struct election_kube ek;
    daemon_elect_kube(&ek, &kcfg);
    struct election_opts eo = {
        .cfg = &cfg,
        .kube = &ek,
        .main_base = el.base,
        .cb = {on_started, on_stopped, on_new_leader, on_done, &el},
        .post_events = post_events != 0,
        .component = "coxswain",
    };
    el.e = election_new(&eo, err, sizeof(err));
    if (!el.e) {
        fprintf(stderr, "coxswain elect: %s\n", err);
        goto out;
    }
    if (write_interval > 0) {
        struct kube_client_opts ko = {
            .identity = cfg.identity, .component = "coxswain-writer", .max_attempts = 1};
        el.kc = kube_client_new(el.base, &kcfg, &ko, err, sizeof(err));
        el.write_timer = evtimer_new(el.base, on_write_timer, &el);
        if (!el.kc || !el.write_timer) {
            fprintf(stderr, "coxswain elect: test writer: %s\n", err);
            goto out;
        }
    }
    if (admin_listen && *admin_listen) {
        admin = admin_new(el.base, admin_listen, err, sizeof(err));
        if (!admin) {
            fprintf(stderr, "coxswain elect: %s\n", err);
            goto out;
        }
        admin_register_process_metrics();
        if (admin_add_health_check(admin, "leader-election", election_healthz, el.e) != 0 ||
            admin_handle(admin, "/debug/leader", handle_leader, el.e) != 0)
            goto out;
        emit("admin", "port=%d", admin_port(admin));
    }
    sigterm = evsignal_new(el.base, SIGTERM, on_signal, &el);
    sigint = evsignal_new(el.base, SIGINT, on_signal, &el);
    if (!sigterm || !sigint || evsignal_add(sigterm, NULL) != 0 || evsignal_add(sigint, NULL) != 0)
        goto out;
    if (election_start(el.e, err, sizeof(err)) != 0) {
        fprintf(stderr, "coxswain elect: %s\n", err);
        goto out;
    }
    emit("identity", "identity=\"%s\" lock=%s/%s/%s", cfg.identity,
         election_lock_kind_name(cfg.lock), cfg.ns, cfg.name);
    schedule_write(&el);
    event_base_dispatch(el.base);
    emit("exit", "writes_ok=%" PRIu64 " writes_failed=%" PRIu64 " writes_refused=%" PRIu64,
         el.writes_ok, el.writes_failed, el.writes_refused);
    rc = 0;
out:
    if (el.write_call)
        kube_call_cancel(el.write_call);
    election_free(el.e);
    if (el.write_timer)
        event_free(el.write_timer);
    if (el.kc)
        kube_client_free(el.kc);
    if (admin)
        admin_free(admin);
    if (sigterm)
        event_free(sigterm);
    if (sigint)
        event_free(sigint);
    if (el.base)
        event_base_free(el.base);
    kube_config_free(&kcfg);
    cx_flags_free(flags, n);
    (void)base_n;
    return rc;
}
