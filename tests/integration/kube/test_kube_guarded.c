/* Guarded writes (kube_req_opts.presend: the leader's status writes and
 * snapshot records) against kubesim over TLS, where everything else of a
 * client shares one multiplexed HTTP/2 connection.
 *
 * Over that connection a request that passed its pre-send check could
 * wait in the connection's queue and be flushed by another transfer after
 * a pause, past the writer's lease (a paused old leader's status PATCH
 * landed 0.556 s after its term). Guarded writes therefore go over
 * HTTP/1.1 on a connection of their own, reused from one guarded write to
 * the next, and their body is handed over only after the check said yes
 * once more. kubesim's audit log is the witness of what arrived and how. */
#include "cx_json.h"
#include "cx_kubesim.h"
#include "cx_time.h"
#include "cxt_loop.h"
#include "cxtest.h"
#include "kube_client.h"
#include "kube_client_internal.h"
#include "kube_config.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct kube_resource CM = {"", "v1", "configmaps", "ConfigMap", 1};

static struct event_base *base;
static struct cx_kubesim ks;
static struct kube_config kcfg;
static struct kube_client *kc;

struct outcome {
    int done;
    struct kube_result res;
};

static void on_result(struct kube_result *r, void *arg)
{
    struct outcome *o = arg;
    o->done = 1;
    o->res = *r;
    o->res.object = NULL; /* freed by the client after this returns */
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static void setup(void)
{
    const char *args[] = {"--tls", NULL};
    REQUIRE(cx_kubesim_start(&ks, args) == 0);
    char err[256];
    REQUIRE(kube_config_load_default(ks.kubeconfig, NULL, &kcfg, err, sizeof(err)) == 0);
    REQUIRE(strncmp(kcfg.server, "https://", 8) == 0);
    base = event_base_new();
    REQUIRE(base != NULL);
    struct kube_client_opts o = {.qps = -1};
    kc = kube_client_new(base, &kcfg, &o, err, sizeof(err));
    REQUIRE(kc != NULL);
}

static void teardown(void)
{
    kube_client_free(kc);
    kc = NULL;
    event_base_free(base);
    base = NULL;
    kube_config_free(&kcfg);
    CHECK_INT_EQ(cx_kubesim_stop(&ks), 0);
}

static void make_configmap(const char *name)
{
    char body[256];
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},"
             "\"data\":{\"v\":\"0\"}}",
             name);
    long code = 0;
    free(cx_kubesim_request(&ks, "POST", "/api/v1/namespaces/default/configmaps", body,
                            "application/json", &code));
    REQUIRE_INT_EQ(code, 201);
}

/* data.v of ConfigMap |name| as kubesim holds it now; caller frees. */
static char *stored_value(const char *name)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/namespaces/default/configmaps/%s", name);
    long code = 0;
    char *b = cx_kubesim_request(&ks, "GET", path, NULL, NULL, &code);
    cJSON *j = b ? cx_json_parse(b, strlen(b)) : NULL;
    const char *v = cx_json_path_str(j, "data", "v", NULL);
    char *out = strdup(v ? v : "");
    cJSON_Delete(j);
    free(b);
    return out;
}

/* The audit lines of |verb| on ConfigMap |name|: how many, and how many of
 * them came over |protocol|. */
static void audited(const char *verb, const char *name, const char *protocol, int *n, int *n_proto)
{
    long code = 0;
    char *b = cx_kubesim_request(&ks, "GET", "/_sim/audit", NULL, NULL, &code);
    *n = *n_proto = 0;
    for (char *save = NULL, *line = b ? strtok_r(b, "\n", &save) : NULL; line;
         line = strtok_r(NULL, "\n", &save)) {
        cJSON *a = cx_json_parse(line, strlen(line));
        const char *v = cx_json_path_str(a, "verb", NULL);
        const char *res = cx_json_path_str(a, "resource", NULL);
        const char *nm = cx_json_path_str(a, "name", NULL);
        const char *p = cx_json_path_str(a, "protocol", NULL);
        if (v && res && nm && strcmp(v, verb) == 0 && strcmp(res, "configmaps") == 0 &&
            strcmp(nm, name) == 0) {
            (*n)++;
            if (p && strcmp(p, protocol) == 0)
                (*n_proto)++;
        }
        cJSON_Delete(a);
    }
    free(b);
}

struct guard {
    int calls;
    int64_t term_left_ms; /* the term ends this long after the first yes; 0: never */
    int64_t stall_ms;     /* after the first yes: the process stops this long */
    int64_t first_ns;     /* when the first yes was given */
};

/* The leader's write guard as a test sees it: yes while the term lasts.
 * With |stall_ms| the process stops right after its first yes, before
 * libcurl writes anything (SIGSTOP landing there, a stalled loop). The
 * term is measured from the first yes, so a slow connection set-up
 * (valgrind) does not end it before the check. */
static int guard_check(void *arg)
{
    struct guard *g = arg;
    int64_t now = cx_mono_ns();
    g->calls++;
    if (g->first_ns && g->term_left_ms && now >= g->first_ns + g->term_left_ms * CX_NS_PER_MS)
        return 1;
    if (!g->first_ns) {
        g->first_ns = now;
        if (g->stall_ms)
            sleep_ms(g->stall_ms);
    }
    return 0;
}

static void patch_value(const char *name, const char *v, struct guard *g, struct outcome *o)
{
    char body[128];
    snprintf(body, sizeof(body), "{\"data\":{\"v\":\"%s\"}}", v);
    struct kube_req_opts ro = {.timeout_ms = 5000 * cxt_slowdown(), .max_attempts = 1};
    if (g) {
        ro.presend = guard_check;
        ro.presend_arg = g;
    }
    memset(o, 0, sizeof(*o));
    REQUIRE(kube_patch(kc, &CM, "default", name, KUBE_PATCH_MERGE, body, 0, &ro, on_result, o) !=
            NULL);
    REQUIRE(cxt_loop_until_flag(base, &o->done, 10000 * cxt_slowdown()));
}

static void ignore_event(void *ud, enum kube_event_type type, cJSON *object)
{
    (void)ud;
    (void)type;
    cJSON_Delete(object);
}

static void ignore_end(void *ud, const struct kube_error *err)
{
    (void)ud;
    (void)err;
}

/* Guarded writes go over HTTP/1.1 while the watch and unguarded writes
 * keep the HTTP/2 connection open: a guarded write never takes it, and an
 * unguarded write never takes the guarded writes' idle connection (libcurl
 * gives an idle connection of its pool to any transfer: the two kinds have
 * a pool each). The guarded writes share one HTTP/1.1 connection, one
 * after the other (no TLS handshake per write). */
static void test_guarded_writes_take_http1(void)
{
    setup();
    make_configmap("fence");
    make_configmap("plain");
    struct kube_watch_handlers h = {.on_event = ignore_event, .on_end = ignore_end};
    struct kube_watch *w = kube_watch_start(kc, &CM, "default", NULL, &h, NULL);
    REQUIRE(w != NULL);
    struct outcome o;
    patch_value("plain", "1", NULL, &o);
    CHECK_INT_EQ(o.res.err.code, KUBE_OK);
    REQUIRE_INT_EQ(kc->conn_serial, 1); /* one connection carries the watch and the write */
    struct guard g = {0};
    for (int i = 1; i <= 4; i++) {
        char v[16];
        snprintf(v, sizeof(v), "guarded-%d", i);
        patch_value("fence", v, &g, &o);
        CHECK_INT_EQ(o.res.err.code, KUBE_OK);
        CHECK_INT_EQ(o.res.http_status, 200);
        if (i == 2) { /* the HTTP/2 connection busy again in between */
            patch_value("plain", "2", NULL, &o);
            CHECK_INT_EQ(o.res.err.code, KUBE_OK);
        }
    }
    CHECK_INT_EQ(g.calls, 8); /* before the headers and before the body, each */
    char *v = stored_value("fence");
    CHECK_STR_EQ(v, "guarded-4");
    free(v);
    /* one more connection in all: the guarded writes' own, reused */
    CHECK_INT_EQ(kc->conn_serial, 2);
    int n = 0, n_proto = 0;
    audited("patch", "fence", "HTTP/1.1", &n, &n_proto);
    CHECK_INT_EQ(n, 4);
    CHECK_INT_EQ(n_proto, 4);
    audited("patch", "plain", "HTTP/2.0", &n, &n_proto);
    CHECK_INT_EQ(n, 2);
    CHECK_INT_EQ(n_proto, 2);
    kube_watch_stop(w);
    teardown();
}

/* The guard said yes, then the process stopped before a byte left, past
 * the end of the term. The body is handed over only after the guard says
 * yes again: it says no, the request stays without its body, the server
 * applies and records nothing, and the caller learns it was refused. */
static void test_pause_after_the_guard_sends_no_request(void)
{
    setup();
    make_configmap("paused");
    struct outcome o;
    patch_value("paused", "warm", NULL, &o); /* the HTTP/2 connection is up */
    CHECK_INT_EQ(o.res.err.code, KUBE_OK);
    struct guard g = {.term_left_ms = 200, .stall_ms = 600};
    patch_value("paused", "stale", &g, &o);
    CHECK_INT_EQ(o.res.err.code, KUBE_E_CANCELLED);
    CHECK_STR_EQ(o.res.err.reason, "RefusedBeforeSend");
    CHECK_INT_EQ(o.res.err.maybe_applied, 0);
    CHECK_INT_EQ(g.calls, 2);
    char *v = stored_value("paused");
    CHECK_STR_EQ(v, "warm");
    free(v);
    int n = 0, n_proto = 0;
    audited("patch", "paused", "HTTP/1.1", &n, &n_proto);
    CHECK_INT_EQ(n, 1); /* the warm-up alone */
    /* The next guarded write of a new term goes out normally: the aborted
     * connection was closed, not handed to it half-written. */
    struct guard g2 = {0};
    patch_value("paused", "fresh", &g2, &o);
    CHECK_INT_EQ(o.res.err.code, KUBE_OK);
    v = stored_value("paused");
    CHECK_STR_EQ(v, "fresh");
    free(v);
    /* h2, the refused write's (closed), the fresh write's */
    CHECK_INT_EQ(kc->conn_serial, 3);
    teardown();
}

static const struct cxt_case cases[] = {
    CXT(test_guarded_writes_take_http1),
    CXT(test_pause_after_the_guard_sends_no_request),
};
CXT_MAIN(cases)
