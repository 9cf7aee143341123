/* End to end: kubesim + two replicas of `coxswain run` + three small gRPC
 * backends. gRPC's own xDS client (C-core, Debian python3-grpcio) dials
 * xds:///echo.test through the *standby* replica and routes real RPCs by
 * what the daemon translated from the API objects:
 *   - path-prefix routing reaches the right backend,
 *   - a weighted 80/20 split is observed within statistical tolerance,
 *   - an EndpointSlice change is followed within a second or two,
 *   - deleting a route makes its calls fail as gRPC specifies.
 * Then a proxy NACKs the leader's listener (our own ADS client: the
 * translator's output is valid for gRPC C-core 1.51, which therefore never
 * NACKs it): the NACK shows in coxswain_xds_nacks_total and in the
 * Gateway's XdsAccepted condition, and clears from it after the ACK. */
#include "cx_json.h"
#include "cx_kubesim.h"
#include "cx_time.h"
#include "cxtest.h"
#include "daemon_test.h"
#include "xdsc.h"
#include "xdsp.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NS "app"

struct rep {
    pid_t pid;
    int xds, admin;
    char name[16];
    char dir[128];
};

static struct event_base *base;
static struct cx_kubesim ks;
static struct rep reps[2];
static struct xdsp *backends[3];
static int ports[3];
static struct xdsp *py;
static char bootstrap_env[320];
static int leader = -1;

static int sanitized(void)
{
    const char *s = getenv("COXSWAIN_SANITIZE");
    return s && *s && strcmp(s, "0") != 0;
}

static const char *bin(void)
{
    static char path[512];
    const char *b = getenv("COXSWAIN_BUILD");
    snprintf(path, sizeof(path), "%s/bin/coxswain", b ? b : "build");
    return path;
}

static int rep_start(struct rep *r, const char *name)
{
    snprintf(r->name, sizeof(r->name), "%s", name);
    snprintf(r->dir, sizeof(r->dir), "/tmp/cxd-xds-%s-XXXXXX", name);
    if (!mkdtemp(r->dir))
        return -1;
    char ports_file[256], log[256];
    snprintf(ports_file, sizeof(ports_file), "%s/ports.json", r->dir);
    snprintf(log, sizeof(log), "%s/coxswain.log", r->dir);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        char pf[300];
        snprintf(pf, sizeof(pf), "--ports-file=%s", ports_file);
        char ident[40];
        snprintf(ident, sizeof(ident), "--identity=%s", name);
        char kc[400];
        snprintf(kc, sizeof(kc), "--kubeconfig=%s", ks.kubeconfig);
        execl(bin(), "coxswain", "run", kc, "--namespace=coxswain-system", ident,
              "--xds-listen=127.0.0.1:0", "--admin-listen=127.0.0.1:0", pf, "--debounce=20ms",
              "--xds-auth=none", "--leader-elect-lease-duration=2s",
              "--leader-elect-renew-deadline=1500ms", "--leader-elect-retry-period=500ms",
              (char *)NULL);
        _exit(127);
    }
    r->pid = pid;
    for (int i = 0; i < 2000; i++) {
        size_t len = 0;
        char *text = cxt_read_file(ports_file, &len);
        cJSON *j = text ? cx_json_parse(text, len) : NULL;
        free(text);
        if (j) {
            r->xds = cJSON_GetObjectItem(j, "xds")->valueint;
            r->admin = cJSON_GetObjectItem(j, "admin")->valueint;
            cJSON_Delete(j);
            return 0;
        }
        usleep(10000);
    }
    return -1;
}

static int rep_stop(struct rep *r)
{
    if (r->pid <= 0)
        return -1;
    kill(r->pid, SIGTERM);
    int st = 0;
    waitpid(r->pid, &st, 0);
    r->pid = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void rep_dump(struct rep *r)
{
    char log[256];
    snprintf(log, sizeof(log), "%s/coxswain.log", r->dir);
    size_t len = 0;
    char *text = cxt_read_file(log, &len);
    if (!text)
        return;
    const char *p = len > 4000 ? text + len - 4000 : text;
    printf("# --- %s ---\n", r->name);
    for (const char *l = p; *l;) {
        const char *e = strchr(l, '\n');
        printf("# %.*s\n", (int)(e ? e - l : (long)strlen(l)), l);
        if (!e)
            break;
        l = e + 1;
    }
    free(text);
}

static size_t collect(char *ptr, size_t size, size_t n, void *ud)
{
    struct cx_buf *b = ud;
    return cx_buf_append(b, ptr, size * n) == 0 ? size * n : 0;
}

/* GET http://127.0.0.1:|port||path|; caller frees; NULL on failure. */
static char *http_get(int port, const char *path, long *code)
{
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    struct cx_buf b;
    cx_buf_init(&b, 0);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    CURLcode rc = curl_easy_perform(c);
    *code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
    curl_easy_cleanup(c);
    if (rc != CURLE_OK) {
        cx_buf_free(&b);
        return NULL;
    }
    size_t n;
    return cx_buf_steal(&b, &n);
}

/* The value of the metric line starting with |series| (exact series text). */
static double metric(int port, const char *series)
{
    long code;
    char *m = http_get(port, "/metrics", &code);
    double v = -1;
    size_t sl = strlen(series);
    for (char *l = m; l && *l;) {
        char *e = strchr(l, '\n');
        if (strncmp(l, series, sl) == 0 && l[sl] == ' ')
            v = strtod(l + sl + 1, NULL);
        if (!e)
            break;
        l = e + 1;
    }
    free(m);
    return v;
}

static int leading(struct rep *r)
{
    long code;
    char *b = http_get(r->admin, "/debug/leader", &code);
    int yes = b && strstr(b, "\"leading\":true") != NULL;
    free(b);
    return yes;
}

static int ready(struct rep *r)
{
    long code = 0;
    free(http_get(r->admin, "/readyz", &code));
    return code == 200;
}

static int both_ready_one_leader(void *arg)
{
    (void)arg;
    if (!ready(&reps[0]) || !ready(&reps[1]))
        return 0;
    int a = leading(&reps[0]), b = leading(&reps[1]);
    if (a + b != 1)
        return 0;
    leader = a ? 0 : 1;
    return 1;
}

static cJSON *ask(const char *cmd, int timeout_ms)
{
    char line[8192];
    if (xdsp_send(py, cmd) != 0)
        return NULL;
    if (xdsp_readline(py, base, line, sizeof(line), timeout_ms) != 1) {
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

static const struct kube_resource *R(enum xlate_kind k)
{
    return store_kind_resource(k);
}

static char *vs_json(int with_b)
{
    static char buf[2048];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\",\"metadata\":{"
             "\"name\":\"echo\"},\"spec\":{\"domains\":[\"echo.test\"],\"routes\":["
             "{\"match\":{\"prefix\":\"/svc.A/\"},\"upstream\":{\"name\":\"a\"}},"
             "%s"
             "{\"match\":{\"prefix\":\"/svc.W/\"},\"weighted\":[{\"upstream\":{\"name\":\"a\"},"
             "\"weight\":80},{\"upstream\":{\"name\":\"b\"},\"weight\":20}]}]}}",
             with_b ? "{\"match\":{\"prefix\":\"/svc.B/\"},\"upstream\":{\"name\":\"b\"}}," : "");
    return buf;
}

static char *slice_json(int port)
{
    static char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{"
             "\"name\":\"svc-b-1\",\"labels\":{\"kubernetes.io/service-name\":\"svc-b\"}},"
             "\"addressType\":\"IPv4\",\"ports\":[{\"name\":\"grpc\",\"port\":%d}],"
             "\"endpoints\":[{\"addresses\":[\"127.0.0.1\"],\"conditions\":{\"ready\":true}}]}",
             port);
    return buf;
}

static void test_setup(void)
{
    base = event_base_new();
    REQUIRE(base != NULL);
    REQUIRE_INT_EQ(cx_kubesim_start(&ks, NULL), 0);
    REQUIRE_INT_EQ(dt_apply_crds(&ks), 0);
    long code = 0;
    free(cx_kubesim_request(&ks, "POST", "/api/v1/namespaces",
                            "{\"metadata\":{\"name\":\"" NS "\"}}", "application/json", &code));
    REQUIRE_INT_EQ(code, 201);
    free(cx_kubesim_request(&ks, "POST", "/api/v1/namespaces",
                            "{\"metadata\":{\"name\":\"coxswain-system\"}}", "application/json",
                            &code));
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/e2e/xds/backend.py", dt_top());
    const char *names[3] = {"b1", "b2", "b3"};
    for (int i = 0; i < 3; i++) {
        char *argv[] = {"/usr/bin/python3", path, (char *)names[i], NULL};
        backends[i] = xdsp_spawn(argv, NULL);
        REQUIRE(backends[i] != NULL);
        char line[64];
        REQUIRE_INT_EQ(xdsp_readline(backends[i], base, line, sizeof(line), 15000), 1);
        ports[i] = (int)strtol(line, NULL, 10);
        REQUIRE(ports[i] > 0);
    }
    char buf[1024];
    REQUIRE_INT_EQ(dt_create(&ks, R(XLATE_KIND_GATEWAY), NS,
                             "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Gateway\","
                             "\"metadata\":{\"name\":\"grpc\"},\"spec\":{\"mode\":\"proxyless\"}}"),
                   201);
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Upstream\",\"metadata\":{\"name\":"
             "\"a\"},\"spec\":{\"static\":{\"hosts\":[{\"address\":\"127.0.0.1\",\"port\":%d}]}}}",
             ports[0]);
    REQUIRE_INT_EQ(dt_create(&ks, R(XLATE_KIND_UPSTREAM), NS, buf), 201);
    REQUIRE_INT_EQ(dt_create(&ks, R(XLATE_KIND_UPSTREAM), NS,
                             "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Upstream\","
                             "\"metadata\":{\"name\":\"b\"},\"spec\":{\"kube\":{\"service\":"
                             "\"svc-b\",\"port\":\"grpc\"}}}"),
                   201);
    REQUIRE_INT_EQ(dt_create(&ks, R(XLATE_KIND_SERVICE), NS,
                             "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":"
                             "\"svc-b\"},\"spec\":{\"ports\":[{\"name\":\"grpc\",\"port\":"
                             "50051}]}}"),
                   201);
    REQUIRE_INT_EQ(dt_create(&ks, R(XLATE_KIND_ENDPOINT_SLICE), NS, slice_json(ports[1])), 201);
    REQUIRE_INT_EQ(dt_create(&ks, R(XLATE_KIND_VIRTUAL_SERVICE), NS, vs_json(1)), 201);
    REQUIRE_INT_EQ(rep_start(&reps[0], "x0"), 0);
    REQUIRE_INT_EQ(rep_start(&reps[1], "x1"), 0);
    if (!cxt_loop_until(base, both_ready_one_leader, NULL, 20000)) {
        rep_dump(&reps[0]);
        rep_dump(&reps[1]);
        REQUIRE(0);
    }
    /* The client talks to the standby: every replica serves xDS. */
    int standby = 1 - leader;
    char boot[256];
    snprintf(boot, sizeof(boot), "%s/bootstrap.json", reps[standby].dir);
    FILE *f = fopen(boot, "w");
    REQUIRE(f != NULL);
    fprintf(f,
            "{\"xds_servers\":[{\"server_uri\":\"127.0.0.1:%d\",\"channel_creds\":[{\"type\":"
            "\"insecure\"}],\"server_features\":[\"xds_v3\"]}],\"node\":{\"id\":\"e2e-client\","
            "\"cluster\":\"c\",\"locality\":{\"zone\":\"z1\"},\"metadata\":{\"coxswain.dev/"
            "gateway\":\"" NS "/grpc\"}}}\n",
            reps[standby].xds);
    fclose(f);
    snprintf(bootstrap_env, sizeof(bootstrap_env), "GRPC_XDS_BOOTSTRAP=%s", boot);
    printf("# leader %s, gRPC client on standby %s (xDS port %d)\n", reps[leader].name,
           reps[standby].name, reps[standby].xds);
}

static void test_path_prefix_routing(void)
{
    REQUIRE(leader >= 0);
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/e2e/xds/grpc_client.py", dt_top());
    char *argv[] = {"/usr/bin/python3", path, "echo.test", NULL};
    char *env[] = {bootstrap_env, "GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS=20", NULL};
    py = xdsp_spawn(argv, env);
    REQUIRE(py != NULL);
    char line[256] = "";
    REQUIRE_INT_EQ(xdsp_readline(py, base, line, sizeof(line), 15000), 1);
    cJSON *r = ask("call /svc.A/Call 20", 20000);
    REQUIRE(r != NULL);
    CHECK_INT_EQ(count_of(r, "ok", "b1"), 20);
    cJSON_Delete(r);
    r = ask("call /svc.B/Call 20", 10000);
    REQUIRE(r != NULL);
    CHECK_INT_EQ(count_of(r, "ok", "b2"), 20); /* through the Service's EndpointSlice */
    cJSON_Delete(r);
}

static void test_weighted_split(void)
{
    REQUIRE(py != NULL);
    int n = sanitized() ? 400 : 1000;
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "call /svc.W/Call %d", n);
    cJSON *r = ask(cmd, 60000);
    REQUIRE(r != NULL);
    int a = count_of(r, "ok", "b1"), b = count_of(r, "ok", "b2");
    CHECK_INT_EQ(a + b, n);
    double frac = (double)a / n, tol = n >= 1000 ? 0.065 : 0.10; /* +-5 sigma */
    printf("# weighted: %d/%d = %.3f to a (want 0.8 +- %.3f)\n", a, n, frac, tol);
    CHECK(frac > 0.8 - tol && frac < 0.8 + tol);
    cJSON_Delete(r);
}

static void test_endpointslice_change_followed(void)
{
    REQUIRE(py != NULL);
    char path[256];
    dt_path(path, sizeof(path), R(XLATE_KIND_ENDPOINT_SLICE), NS, "svc-b-1", NULL);
    char patch[128];
    snprintf(patch, sizeof(patch), "{\"ports\":[{\"name\":\"grpc\",\"port\":%d}]}", ports[2]);
    double t0 = (double)cx_mono_ns() / 1e9;
    long code = 0;
    free(cx_kubesim_request(&ks, "PATCH", path, patch, "application/merge-patch+json", &code));
    REQUIRE_INT_EQ(code, 200);
    cJSON *r = ask("wait /svc.B/Call b3 5", 10000);
    REQUIRE(r != NULL);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "t");
    REQUIRE(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "found")) && cJSON_IsNumber(t));
    double took = t->valuedouble - t0;
    printf("# EndpointSlice change reached the gRPC client after %.3f s (API write -> informer "
           "-> translation -> xDS push -> client)\n",
           took);
    CHECK(took < (sanitized() ? 3.0 : 1.0));
    cJSON_Delete(r);
}

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

static void test_route_deleted_fails(void)
{
    REQUIRE(py != NULL);
    cJSON *spec = cJSON_Parse(vs_json(0));
    char *patch = cJSON_PrintUnformatted(spec); /* routes are replaced as a whole */
    cJSON_Delete(spec);
    REQUIRE_INT_EQ(dt_patch(&ks, R(XLATE_KIND_VIRTUAL_SERVICE), NS, "echo", patch), 200);
    free(patch);
    cJSON *r = ask("waitfail /svc.B/Call 5", 10000);
    REQUIRE(r != NULL);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "failed")));
    CHECK(no_route_status(r));
    cJSON_Delete(r);
    r = ask("call /svc.A/Call 5", 10000);
    REQUIRE(r != NULL);
    CHECK_INT_EQ(count_of(r, "ok", "b1"), 5);
    cJSON_Delete(r);
}

static const cJSON *xds_condition(cJSON *gw)
{
    const cJSON *conds = cJSON_GetObjectItem(cx_json_path(gw, "status", NULL), "conditions");
    const cJSON *c;
    cJSON_ArrayForEach(c, conds)
    {
        const char *t = cx_json_str(c, "type");
        if (t && strcmp(t, "XdsAccepted") == 0)
            return c;
    }
    return NULL;
}

static int xds_accepted_is(const char *want)
{
    cJSON *g = dt_get(&ks, R(XLATE_KIND_GATEWAY), NS, "grpc");
    const cJSON *c = xds_condition(g);
    int yes = c && cx_json_str(c, "status") && strcmp(cx_json_str(c, "status"), want) == 0;
    cJSON_Delete(g);
    return yes;
}

static int gw_rejected(void *arg)
{
    (void)arg;
    return xds_accepted_is("False");
}

static int gw_accepted(void *arg)
{
    (void)arg;
    return xds_accepted_is("True");
}

static void test_nack_in_metric_and_gateway_status(void)
{
    REQUIRE(leader >= 0);
    CHECK(cxt_loop_until(base, gw_accepted, NULL, 5000)); /* before: True */
    struct rep *l = &reps[leader];
    struct xdsc *c = xdsc_connect(base, "127.0.0.1", l->xds, NULL, NULL);
    REQUIRE(c != NULL);
    struct xdsc_ads_config cfg = {.node_id = "picky-proxy", .gateway = NS "/grpc", .keep = 1};
    struct xdsc_ads *a = xdsc_ads_open(c, &cfg);
    REQUIRE(a != NULL);
    const char *names[] = {"echo.test"};
    REQUIRE_INT_EQ(xdsc_ads_request(a, XDS_LISTENER, names, 1, "", "", NULL), 0);
    xdsc_response *resp = xdsc_ads_wait(a, base, 5000);
    REQUIRE(resp != NULL);
    CHECK_INT_EQ(resp->n_resources, 1);
    xdsc_response_free(resp);
    REQUIRE_INT_EQ(xdsc_ads_request(a, XDS_LISTENER, names, 1, "", NULL,
                                    "listener echo.test: unsupported filter (test)"),
                   0);
    int64_t t0 = cx_mono_ms();
    int ok = cxt_loop_until(base, gw_rejected, NULL, 8000);
    CHECK(ok);
    printf("# NACK on the Gateway's status after %lld ms\n", (long long)(cx_mono_ms() - t0));
    CHECK(metric(l->admin, "coxswain_xds_nacks_total{group=\"" NS "/grpc\",type=\"LDS\"}") >= 1);
    cJSON *g = dt_get(&ks, R(XLATE_KIND_GATEWAY), NS, "grpc");
    const cJSON *cond = xds_condition(g);
    REQUIRE(cond != NULL);
    CHECK_STR_EQ(cx_json_str(cond, "reason"), "Rejected");
    CHECK_STR_CONTAINS(cx_json_str(cond, "message"), "LDS");
    CHECK_STR_CONTAINS(cx_json_str(cond, "message"), "picky-proxy");
    CHECK_STR_CONTAINS(cx_json_str(cond, "message"), "unsupported filter (test)");
    printf("# XdsAccepted: %s\n", cx_json_str(cond, "message"));
    CHECK_STR_EQ(cx_json_path_str(g, "status", "state", NULL), "Accepted"); /* translation ok */
    cJSON_Delete(g);
    /* The proxy accepts the same version after all: the condition clears. */
    REQUIRE_INT_EQ(xdsc_ads_request(a, XDS_LISTENER, names, 1, NULL, NULL, NULL), 0);
    CHECK(cxt_loop_until(base, gw_accepted, NULL, 8000));
    xdsc_ads_free(a);
    xdsc_free(c);
    if (!ok)
        rep_dump(l);
}

static void test_teardown(void)
{
    if (py) {
        xdsp_send(py, "quit");
        xdsp_stop(py);
    }
    for (int i = 0; i < 3; i++)
        if (backends[i])
            xdsp_stop(backends[i]);
    for (int i = 0; i < 2; i++)
        CHECK_INT_EQ(rep_stop(&reps[i]), 0);
    CHECK_INT_EQ(cx_kubesim_stop(&ks), 0);
    event_base_free(base);
}

static const struct cxt_case cases[] = {
    CXT(test_setup),
    CXT(test_path_prefix_routing),
    CXT(test_weighted_split),
    CXT(test_endpointslice_change_followed),
    CXT(test_route_deleted_fails),
    CXT(test_nack_in_metric_and_gateway_status),
    CXT(test_teardown),
};
CXT_MAIN(cases)
