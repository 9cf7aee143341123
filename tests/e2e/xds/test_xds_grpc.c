/* End-to-end: coxswain's xDS server (in this process, on port 0) serving a
 * hand-built snapshot to xDS clients we did not write — gRPC C-core's
 * (Debian python3-grpcio 1.51) and @grpc/grpc-js-xds (npm) — which route
 * real RPCs to three small Python gRPC backends:
 *   - path-prefix routing reaches the right backend,
 *   - a weighted 80/20 split is observed within statistical tolerance,
 *   - an endpoint change is followed within 1 s,
 *   - deleting a route makes its calls fail with UNAVAILABLE,
 *   - an invalid resource is NACKed and the NACK shows in the stats and the
 *     coxswain_xds_nacks_total metric, while the client keeps the last good
 *     config.
 * The helpers (backend.py, grpc_client.{py,js}, tests/lib/xdsp, xdsb) are
 * meant for the kubesim + daemon version of these tests too. */
#include "cx_json.h"
#include "cx_log.h"
#include "cx_metrics.h"
#include "cx_time.h"
#include "cxtest.h"
#include "xds_server.h"
#include "xdsb.h"
#include "xdsc.h"
#include "xdsp.h"
#include "xlate.h"
#include "xlate_snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GROUP  "e2e/gw"
#define TARGET "echo.test"

static struct event_base *base;
static struct xds_server *srv;
static struct xdsp *backends[3];
static int ports[3];
static char bootstrap[256];
static char tmpdir[64];
static char *bootstrap_env;
static struct xdsp *py;

static int no_route_status(const cJSON *r);

static const char *top(void)
{
    const char *t = getenv("COXSWAIN_TOP");
    return t ? t : ".";
}

/* The snapshot: listener echo.test -> routes rc-echo:
 *   /svc.A/ -> cA, /svc.B/ -> cB (unless !route_b), /svc.W/ -> cA 80 / cB 20
 * (80 / 10 of 100 when bad_rds: an invalid resource gRPC must NACK);
 * cA's endpoint is the backend |a|, cB's is backend 1. */
static void publish(int a, int route_b, int bad_rds)
{
    struct xlate_snapshot *s = xdsc_snapshot_new();
    struct xdsb_route routes[3];
    size_t n = 0;
    routes[n++] = (struct xdsb_route){.prefix = "/svc.A/", .cluster = "cA"};
    if (route_b)
        routes[n++] = (struct xdsb_route){.prefix = "/svc.B/", .cluster = "cB"};
    routes[n++] = (struct xdsb_route){.prefix = "/svc.W/",
                                      .cluster = "cA",
                                      .cluster2 = "cB",
                                      .w1 = 80,
                                      .w2 = bad_rds ? 10 : 20,
                                      .total = 100};
    int ok = xdsc_snapshot_add(s, GROUP, xdsb_api_listener(TARGET, "rc-echo")) == 0 &&
             xdsc_snapshot_add(s, GROUP, xdsb_route_config("rc-echo", TARGET, routes, n)) == 0 &&
             xdsc_snapshot_add(s, GROUP, xdsb_cluster("cA", 0, 1)) == 0 &&
             xdsc_snapshot_add(s, GROUP, xdsb_cluster("cB", 0, 1)) == 0 &&
             xdsc_snapshot_add(s, GROUP, xdsb_endpoints("cA", &ports[a], 1)) == 0 &&
             xdsc_snapshot_add(s, GROUP, xdsb_endpoints("cB", &ports[1], 1)) == 0 &&
             xdsc_snapshot_seal(s) == 0;
    if (!ok)
        abort();
    xds_server_set_snapshot(srv, s);
    xlate_snapshot_unref(s);
}

/* Sends a command, returns the parsed JSON answer (caller frees). */
static cJSON *ask(struct xdsp *p, const char *cmd, int timeout_ms)
{
    char line[8192];
    if (xdsp_send(p, cmd) != 0)
        return NULL;
    if (xdsp_readline(p, base, line, sizeof(line), timeout_ms) != 1) {
        printf("# no answer to \"%s\"\n", cmd);
        return NULL;
    }
    printf("# %s -> %s\n", cmd, line);
    return cx_json_parse(line, strlen(line));
}

static int count_of(const cJSON *res, const char *obj, const char *key)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(res, obj);
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsNumber(v) ? v->valueint : 0;
}

static struct xdsp *start_client(char *const argv[], char *const env[])
{
    struct xdsp *p = xdsp_spawn(argv, env);
    if (!p)
        return NULL;
    char line[256] = "";
    int rc = xdsp_readline(p, base, line, sizeof(line), 15000);
    if (rc != 1 || !strstr(line, "ready")) {
        printf("# %s did not start (%d, \"%s\")\n", argv[0], rc, line);
        xdsp_stop(p);
        return NULL;
    }
    return p;
}

/* XDS_RECORD_DIR=dir saves every DiscoveryRequest the real clients send
 * (how tests/data/xds/ was recorded). */
static void record(void *user, const char *node, const uint8_t *msg, size_t len)
{
    (void)user;
    (void)node;
    static int n;
    char path[512];
    snprintf(path, sizeof(path), "%s/%03d.bin", getenv("XDS_RECORD_DIR"), n++);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(msg, 1, len, f);
        fclose(f);
    }
}

static void test_setup(void)
{
    base = event_base_new();
    REQUIRE(base != NULL);
    if (getenv("XDS_E2E_DEBUG"))
        cx_log_setup(CX_LOG_TEXT, CX_LOG_DEBUG, NULL);
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/e2e/xds/backend.py", top());
    const char *names[3] = {"b1", "b2", "b3"};
    for (int i = 0; i < 3; i++) {
        char *argv[] = {"/usr/bin/python3", path, (char *)names[i], NULL};
        backends[i] = xdsp_spawn(argv, NULL);
        REQUIRE(backends[i] != NULL);
    }
    for (int i = 0; i < 3; i++) {
        char line[64];
        REQUIRE_INT_EQ(xdsp_readline(backends[i], base, line, sizeof(line), 15000), 1);
        ports[i] = (int)strtol(line, NULL, 10);
        REQUIRE(ports[i] > 0);
    }
    struct xds_server_config cfg = {
        .listen = "127.0.0.1:0", .identifier = "e2e", .auth = XDS_AUTH_NONE};
    char err[256];
    srv = xds_server_new(base, &cfg, err, sizeof(err));
    REQUIRE(srv != NULL);
    if (getenv("XDS_RECORD_DIR"))
        xds_server_on_request(srv, record, NULL);
    publish(0, 1, 0);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/xds-e2e-XXXXXX");
    REQUIRE(mkdtemp(tmpdir) != NULL);
    snprintf(bootstrap, sizeof(bootstrap), "%s/bootstrap.json", tmpdir);
    FILE *f = fopen(bootstrap, "w");
    REQUIRE(f != NULL);
    fprintf(f,
            "{\"xds_servers\":[{\"server_uri\":\"127.0.0.1:%d\",\"channel_creds\":[{\"type\":"
            "\"insecure\"}],\"server_features\":[\"xds_v3\"]}],\"node\":{\"id\":\"e2e-client\","
            "\"cluster\":\"c\",\"locality\":{\"zone\":\"z1\"},\"metadata\":{\"coxswain.dev/"
            "gateway\":\"" GROUP "\"}}}\n",
            xds_server_port(srv));
    fclose(f);
    size_t n = strlen(bootstrap) + 32;
    bootstrap_env = malloc(n);
    snprintf(bootstrap_env, n, "GRPC_XDS_BOOTSTRAP=%s", bootstrap);
}

static void test_python_path_prefix_routing(void)
{
    REQUIRE(srv != NULL);
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/e2e/xds/grpc_client.py", top());
    char *argv[] = {"/usr/bin/python3", path, TARGET, NULL};
    /* Between commands the driver makes no calls, and C-core then reads the
     * ADS stream only from its backup poller (every 5 s by default): a NACK
     * would take seconds to arrive. Real applications poll by calling. */
    char *env[] = {bootstrap_env, "GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS=20", NULL};
    py = start_client(argv, env);
    REQUIRE(py != NULL);
    cJSON *r = ask(py, "call /svc.A/Call 20", 20000);
    REQUIRE(r != NULL);
    CHECK_INT_EQ(count_of(r, "ok", "b1"), 20);
    cJSON_Delete(r);
    r = ask(py, "call /svc.B/Call 20", 10000);
    REQUIRE(r != NULL);
    CHECK_INT_EQ(count_of(r, "ok", "b2"), 20);
    cJSON_Delete(r);
    /* no route matches /svc.C/: gRPC fails the call */
    r = ask(py, "waitfail /svc.C/Call 5", 10000);
    REQUIRE(r != NULL);
    CHECK(no_route_status(r));
    cJSON_Delete(r);
    struct xds_server_stats st;
    xds_server_stats(srv, &st);
    CHECK_INT_EQ(st.streams, 1);
    CHECK_INT_GE(st.acks_total, 4); /* LDS, RDS, CDS, EDS at least */
    CHECK_INT_EQ(st.nacks_total, 0);
}

static void test_python_weighted_split(void)
{
    REQUIRE(py != NULL);
    int n = 1000;
    if (getenv("COXSWAIN_SANITIZE") && getenv("COXSWAIN_SANITIZE")[0] &&
        strcmp(getenv("COXSWAIN_SANITIZE"), "0") != 0)
        n = 400;
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "call /svc.W/Call %d", n);
    cJSON *r = ask(py, cmd, 60000);
    REQUIRE(r != NULL);
    int a = count_of(r, "ok", "b1"), b = count_of(r, "ok", "b2");
    CHECK_INT_EQ(a + b, n);
    /* p = 0.8: the standard deviation of a/n is sqrt(.16/n) (1.3% at 1000,
     * 2% at 400); +-5 sigma keeps false failures below one in a million */
    double frac = (double)a / n, tol = n >= 1000 ? 0.065 : 0.10;
    printf("# weighted: %d/%d = %.3f to cA (want 0.8 +- %.3f)\n", a, n, frac, tol);
    CHECK(frac > 0.8 - tol && frac < 0.8 + tol);
    cJSON_Delete(r);
}

static void test_python_endpoint_change_within_1s(void)
{
    REQUIRE(py != NULL);
    double t0 = (double)cx_mono_ns() / 1e9;
    publish(2, 1, 0); /* cA: b1 -> b3 */
    cJSON *r = ask(py, "wait /svc.A/Call b3 5", 10000);
    REQUIRE(r != NULL);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "t");
    REQUIRE(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "found")) && cJSON_IsNumber(t));
    double took = t->valuedouble - t0;
    printf("# endpoint change followed after %.3f s\n", took);
    CHECK(took < 1.0);
    cJSON_Delete(r);
    r = ask(py, "call /svc.A/Call 10", 10000);
    REQUIRE(r != NULL);
    CHECK_INT_EQ(count_of(r, "ok", "b3"), 10);
    cJSON_Delete(r);
}

/* gRFC A28 says a call that matches no route fails with UNAVAILABLE; C-core
 * 1.51 (Debian's) fails it with INTERNAL "xds cluster manager picker:
 * unknown cluster" instead (fixed in later releases). Either is gRPC's own
 * verdict on a missing route; anything else (OK, or another code) is not. */
static int no_route_status(const cJSON *r)
{
    const char *code = cx_json_str(r, "code");
    const char *detail = cx_json_str(r, "detail");
    if (!code)
        return 0;
    if (strcmp(code, "UNAVAILABLE") == 0)
        return 1;
    return strcmp(code, "INTERNAL") == 0 && detail && strstr(detail, "unknown cluster");
}

static void test_python_route_deleted_fails_unavailable(void)
{
    REQUIRE(py != NULL);
    publish(2, 0, 0); /* /svc.B/ route gone */
    cJSON *r = ask(py, "waitfail /svc.B/Call 5", 10000);
    REQUIRE(r != NULL);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "failed")));
    CHECK(no_route_status(r));
    cJSON_Delete(r);
    /* the other routes still work */
    r = ask(py, "call /svc.A/Call 5", 10000);
    REQUIRE(r != NULL);
    CHECK_INT_EQ(count_of(r, "ok", "b3"), 5);
    cJSON_Delete(r);
}

static int rds_nacked(void *arg)
{
    (void)arg;
    struct xds_nack_stat st;
    return xds_server_nack_stat(srv, GROUP, XDS_ROUTE, &st) == 0;
}

static int rds_nack_cleared(void *arg)
{
    (void)arg;
    struct xds_nack_stat st;
    return xds_server_nack_stat(srv, GROUP, XDS_ROUTE, &st) == 0 && st.active == 0;
}

static void test_python_invalid_resource_nacked(void)
{
    REQUIRE(py != NULL);
    double t0 = (double)cx_mono_ns() / 1e9;
    publish(2, 0, 1); /* weights 80 + 10 != total 100 */
    CHECK(cxt_loop_until(base, rds_nacked, NULL, 5000));
    printf("# NACK counted %.3f s after the snapshot\n", (double)cx_mono_ns() / 1e9 - t0);
    struct xds_nack_stat st;
    REQUIRE_INT_EQ(xds_server_nack_stat(srv, GROUP, XDS_ROUTE, &st), 0);
    printf("# NACK: %s\n", st.last_message);
    CHECK_INT_GE(st.total, 1);
    CHECK_INT_EQ(st.active, 1);
    CHECK_STR_EQ(st.last_node, "e2e-client");
    CHECK_STR_CONTAINS(st.last_message, "rc-echo");
    struct cx_metric *m =
        cx_counter("coxswain_xds_nacks_total",
                   "NACKs (requests with error_detail) by node group and type.", "group,type");
    REQUIRE(m != NULL);
    CHECK_INT_GE((int)cx_metric_get(m, GROUP, "RDS"), 1);
    /* the client keeps its last good config */
    cJSON *r = ask(py, "call /svc.A/Call 5", 10000);
    REQUIRE(r != NULL);
    CHECK_INT_EQ(count_of(r, "ok", "b3"), 5);
    cJSON_Delete(r);
    /* fixing it clears the active NACK */
    publish(2, 0, 0);
    CHECK(cxt_loop_until(base, rds_nack_cleared, NULL, 5000));
    REQUIRE_INT_EQ(xds_server_nack_stat(srv, GROUP, XDS_ROUTE, &st), 0);
    CHECK_INT_EQ(st.active, 0);
}

/* A snapshot without the listener: LDS (full state) no longer names it,
 * gRPC treats it as deleted and fails calls with UNAVAILABLE; putting it
 * back recovers the channel. */
static void test_python_listener_deleted_fails_unavailable(void)
{
    REQUIRE(py != NULL);
    struct xlate_snapshot *s = xdsc_snapshot_new();
    REQUIRE_INT_EQ(xdsc_snapshot_add(s, GROUP, xdsb_cluster("cA", 0, 1)), 0);
    REQUIRE_INT_EQ(xdsc_snapshot_seal(s), 0);
    xds_server_set_snapshot(srv, s);
    xlate_snapshot_unref(s);
    cJSON *r = ask(py, "waitfail /svc.A/Call 5", 10000);
    REQUIRE(r != NULL);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "failed")));
    CHECK_STR_EQ(cx_json_str(r, "code"), "UNAVAILABLE");
    cJSON_Delete(r);
    publish(2, 1, 0);
    r = ask(py, "wait /svc.A/Call b3 10", 15000);
    REQUIRE(r != NULL);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "found")));
    cJSON_Delete(r);
    xdsp_send(py, "quit");
    xdsp_stop(py);
    py = NULL;
}

/* The translator's own output (xlate_run on Gateway, VirtualService,
 * Upstream, Service and EndpointSlice objects pointing at the backends),
 * served to a fresh gRPC client: the two halves of the control plane agree
 * on what gRPC accepts. */
static void test_python_translator_snapshot_routing(void)
{
    REQUIRE(srv != NULL);
    char yaml[4096];
    snprintf(yaml, sizeof(yaml),
             "[{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Gateway\","
             "\"metadata\":{\"name\":\"gw\",\"namespace\":\"e2e\"},"
             "\"spec\":{\"mode\":\"proxyless\"}},"
             "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\","
             "\"metadata\":{\"name\":\"vs\",\"namespace\":\"e2e\","
             "\"creationTimestamp\":\"2024-01-01T00:00:00Z\"},"
             "\"spec\":{\"domains\":[\"tr.test\"],\"routes\":["
             "{\"match\":{\"prefix\":\"/svc.A/\"},\"upstream\":{\"name\":\"ua\"}},"
             "{\"match\":{\"prefix\":\"/svc.B/\"},\"upstream\":{\"name\":\"ub\"}}]}},"
             "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Upstream\","
             "\"metadata\":{\"name\":\"ua\",\"namespace\":\"e2e\"},"
             "\"spec\":{\"kube\":{\"service\":\"sa\",\"port\":\"grpc\"}}},"
             "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Upstream\","
             "\"metadata\":{\"name\":\"ub\",\"namespace\":\"e2e\"},"
             "\"spec\":{\"kube\":{\"service\":\"sb\",\"port\":\"grpc\"}}},"
             "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"sa\","
             "\"namespace\":\"e2e\"},\"spec\":{\"ports\":[{\"name\":\"grpc\",\"port\":9090}]}},"
             "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"sb\","
             "\"namespace\":\"e2e\"},\"spec\":{\"ports\":[{\"name\":\"grpc\",\"port\":9090}]}},"
             "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\","
             "\"metadata\":{\"name\":\"sa-1\",\"namespace\":\"e2e\","
             "\"labels\":{\"kubernetes.io/service-name\":\"sa\"}},\"addressType\":\"IPv4\","
             "\"ports\":[{\"name\":\"grpc\",\"port\":%d}],"
             "\"endpoints\":[{\"addresses\":[\"127.0.0.1\"],\"conditions\":{\"ready\":true}}]},"
             "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\","
             "\"metadata\":{\"name\":\"sb-1\",\"namespace\":\"e2e\","
             "\"labels\":{\"kubernetes.io/service-name\":\"sb\"}},\"addressType\":\"IPv4\","
             "\"ports\":[{\"name\":\"grpc\",\"port\":%d}],"
             "\"endpoints\":[{\"addresses\":[\"127.0.0.1\"],\"conditions\":{\"ready\":true}}]}]",
             ports[0], ports[1]);
    cJSON *arr = cx_json_parse(yaml, strlen(yaml));
    REQUIRE(arr != NULL);
    struct xlate_object objs[8];
    size_t n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        if (n < 8)
            objs[n++] = (struct xlate_object){.kind = XLATE_KIND_UNKNOWN, .obj = it};
    }
    REQUIRE_INT_EQ(n, 8);
    struct xlate_ctx *ctx = xlate_ctx_new();
    REQUIRE(ctx != NULL);
    struct xlate_input in = {.objects = objs, .n = n};
    struct xlate_snapshot *snap = NULL;
    REQUIRE_INT_EQ(xlate_run(ctx, &in, &snap, NULL), 0);
    for (size_t i = 0; i < snap->nreports; i++)
        printf("# report %s %s/%s: %s %s\n", snap->reports[i].kind, snap->reports[i].namespace,
               snap->reports[i].name, xlate_state_name(snap->reports[i].state),
               snap->reports[i].message ? snap->reports[i].message : "");
    const struct xlate_group *g = xlate_snapshot_group(snap, GROUP);
    REQUIRE(g != NULL);
    CHECK(xlate_resource_set_find(&g->types[XDS_LISTENER], "tr.test") != NULL);
    xds_server_set_snapshot(srv, snap);
    xlate_snapshot_unref(snap);
    xlate_ctx_free(ctx);
    cJSON_Delete(arr);

    char path[512];
    snprintf(path, sizeof(path), "%s/tests/e2e/xds/grpc_client.py", top());
    char *argv[] = {"/usr/bin/python3", path, "tr.test", NULL};
    char *env[] = {bootstrap_env, "GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS=20", NULL};
    struct xdsp *p = start_client(argv, env);
    REQUIRE(p != NULL);
    cJSON *r = ask(p, "call /svc.A/Call 10", 20000);
    REQUIRE(r != NULL);
    CHECK_INT_EQ(count_of(r, "ok", "b1"), 10);
    cJSON_Delete(r);
    r = ask(p, "call /svc.B/Call 10", 10000);
    REQUIRE(r != NULL);
    CHECK_INT_EQ(count_of(r, "ok", "b2"), 10);
    cJSON_Delete(r);
    struct xds_nack_stat st;
    int nacked = 0;
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        if (xds_server_nack_stat(srv, GROUP, (enum xds_type)t, &st) == 0 && st.active)
            nacked = 1;
    CHECK(!nacked);
    xdsp_send(p, "quit");
    xdsp_stop(p);
}

/* @grpc/grpc-js-xds in build/npm-xds: mk/npm-xds.sh installs it once
 * (make test runs it first; here it is a no-op then). */
static int npm_ready(char *node_path, size_t cap)
{
    char probe[600], cmd[700];
    snprintf(node_path, cap, "NODE_PATH=%s/build/npm-xds/node_modules", top());
    snprintf(probe, sizeof(probe), "%s/build/npm-xds/node_modules/@grpc/grpc-js-xds/package.json",
             top());
    snprintf(cmd, sizeof(cmd), "'%s/mk/npm-xds.sh' >/dev/null", top());
    return system(cmd) == 0 && access(probe, R_OK) == 0 ? 0 : -1;
}

static void test_node_grpc_js_xds_routing(void)
{
    REQUIRE(srv != NULL);
    publish(0, 1, 0); /* back to the first routing: A -> b1, B -> b2 */
    char node_path[600];
    REQUIRE_INT_EQ(npm_ready(node_path, sizeof(node_path)), 0);
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/e2e/xds/grpc_client.js", top());
    char *argv[] = {"node", path, TARGET, NULL};
    char *env[] = {bootstrap_env, node_path, NULL};
    struct xdsp *js = start_client(argv, env);
    REQUIRE(js != NULL);
    cJSON *r = ask(js, "call /svc.A/Call 20", 20000);
    REQUIRE(r != NULL);
    CHECK_INT_EQ(count_of(r, "ok", "b1"), 20);
    cJSON_Delete(r);
    r = ask(js, "call /svc.B/Call 20", 10000);
    REQUIRE(r != NULL);
    CHECK_INT_EQ(count_of(r, "ok", "b2"), 20);
    cJSON_Delete(r);
    r = ask(js, "call /svc.W/Call 400", 30000);
    REQUIRE(r != NULL);
    int a = count_of(r, "ok", "b1"), b = count_of(r, "ok", "b2");
    CHECK_INT_EQ(a + b, 400);
    CHECK(a > 280 && a < 360); /* 0.8 +- 0.1 (5 sigma at n = 400) */
    cJSON_Delete(r);
    /* an endpoint change reaches this client too */
    double t0 = (double)cx_mono_ns() / 1e9;
    publish(2, 1, 0);
    r = ask(js, "wait /svc.A/Call b3 5", 10000);
    REQUIRE(r != NULL);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "t");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "found")) && cJSON_IsNumber(t));
    if (cJSON_IsNumber(t)) {
        printf("# grpc-js: endpoint change followed after %.3f s\n", t->valuedouble - t0);
        CHECK(t->valuedouble - t0 < 1.0);
    }
    cJSON_Delete(r);
    xdsp_send(js, "quit");
    xdsp_stop(js);
}

static void test_teardown(void)
{
    if (py)
        xdsp_stop(py);
    for (int i = 0; i < 3; i++)
        if (backends[i])
            xdsp_stop(backends[i]);
    xds_server_free(srv);
    srv = NULL;
    unlink(bootstrap);
    rmdir(tmpdir);
    free(bootstrap_env);
    event_base_free(base);
    CHECK(1);
}

static const struct cxt_case cases[] = {
    CXT(test_setup),
    CXT(test_python_path_prefix_routing),
    CXT(test_python_weighted_split),
    CXT(test_python_endpoint_change_within_1s),
    CXT(test_python_route_deleted_fails_unavailable),
    CXT(test_python_invalid_resource_nacked),
    CXT(test_python_listener_deleted_fails_unavailable),
    CXT(test_python_translator_snapshot_routing),
    CXT(test_node_grpc_js_xds_routing),
    CXT(test_teardown),
};
CXT_MAIN(cases)
