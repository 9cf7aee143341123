#include "admin.h"
#include "cx_metrics.h"
#include "cxtest.h"

#include <curl/curl.h>
#include <event2/thread.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static struct event_base *base;
static struct admin_server *srv;
static pthread_t loop_thread;
static int ready_flag;

static void *loop(void *arg)
{
    (void)arg;
    event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

static int check_ok(void *arg, struct cx_buf *why)
{
    (void)arg;
    (void)why;
    return 0;
}

static int check_ready(void *arg, struct cx_buf *why)
{
    if (*(int *)arg)
        return 0;
    if (cx_buf_puts(why, "caches not synced") != 0)
        return -1;
    return -1;
}

static void debug_cb(struct evhttp_request *req, void *arg)
{
    (void)arg;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    char body[256];
    int n = snprintf(body, sizeof(body), "debug:%s", path);
    admin_reply(req, 200, "text/plain", body, (size_t)n);
}

static size_t collect(char *p, size_t sz, size_t n, void *arg)
{
    struct cx_buf *b = arg;
    return cx_buf_append(b, p, sz * n) == 0 ? sz * n : 0;
}

/* GETs |path|; returns the HTTP status and the body (caller frees). */
static long get(const char *path, char **body, char *ctype, size_t ctlen)
{
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", admin_port(srv), path);
    CURL *c = curl_easy_init();
    struct cx_buf b;
    cx_buf_init(&b, 0);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
    long code = -1;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    char *ct = NULL;
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
    if (ctype)
        snprintf(ctype, ctlen, "%s", ct ? ct : "");
    curl_easy_cleanup(c);
    *body = cx_buf_steal(&b, NULL);
    return code;
}

static void setup(void)
{
    if (base)
        return;
    evthread_use_pthreads();
    base = event_base_new();
    char err[256];
    srv = admin_new(base, "bogus", err, sizeof(err));
    CHECK(srv == NULL);
    CHECK_STR_CONTAINS(err, "expected host:port");
    srv = admin_new(base, "127.0.0.1:0", err, sizeof(err));
    REQUIRE(srv != NULL);
    CHECK_INT_GT(admin_port(srv), 0);
    admin_register_process_metrics();
    admin_add_health_check(srv, "ping", check_ok, NULL);
    admin_add_ready_check(srv, "informers", check_ready, &ready_flag);
    admin_handle_prefix(srv, "/debug/", debug_cb, NULL);
    pthread_create(&loop_thread, NULL, loop, NULL);
}

static void test_metrics_endpoint(void)
{
    setup();
    cx_metric_inc(cx_counter("t_admin_requests_total", "Test counter.", "path"), "/x");
    char *body, ct[128];
    long code = get("/metrics", &body, ct, sizeof(ct));
    CHECK_INT_EQ(code, 200);
    CHECK_STR_EQ(ct, CX_METRICS_CONTENT_TYPE);
    CHECK_STR_CONTAINS(body, "t_admin_requests_total{path=\"/x\"} 1\n");
    CHECK_STR_CONTAINS(body, "# TYPE process_resident_memory_bytes gauge\n");
    CHECK_STR_CONTAINS(body, "# TYPE process_cpu_seconds_total counter\n");
    CHECK_STR_CONTAINS(body, "coxswain_build_info{version=\"");
    /* RSS is a real reading: more than 1 MB */
    const char *p = strstr(body, "\nprocess_resident_memory_bytes ");
    REQUIRE(p != NULL);
    CHECK(strtod(p + 31, NULL) > 1e6);
    if (access("/usr/bin/promtool", X_OK) == 0) {
        FILE *f = popen("promtool check metrics > /tmp/cx_admin_promtool.out 2>&1", "w");
        fputs(body, f);
        CHECK_INT_EQ(pclose(f), 0);
        unlink("/tmp/cx_admin_promtool.out");
    }
    free(body);
}

static void test_health_and_ready(void)
{
    setup();
    char *body;
    CHECK_INT_EQ(get("/healthz", &body, NULL, 0), 200);
    CHECK_STR_EQ(body, "ok");
    free(body);
    CHECK_INT_EQ(get("/healthz?verbose", &body, NULL, 0), 200);
    CHECK_STR_CONTAINS(body, "[+]ping ok\n");
    free(body);
    ready_flag = 0;
    CHECK_INT_EQ(get("/readyz", &body, NULL, 0), 500);
    CHECK_STR_CONTAINS(body, "[-]informers failed: caches not synced\n");
    CHECK_STR_CONTAINS(body, "readyz check failed");
    free(body);
    ready_flag = 1;
    CHECK_INT_EQ(get("/readyz", &body, NULL, 0), 200);
    free(body);
}

static void test_prefix_and_404(void)
{
    setup();
    char *body;
    CHECK_INT_EQ(get("/debug/snapshot", &body, NULL, 0), 200);
    CHECK_STR_EQ(body, "debug:/debug/snapshot");
    free(body);
    CHECK_INT_EQ(get("/nothing-here", &body, NULL, 0), 404);
    free(body);
}

static void test_teardown(void)
{
    setup();
    event_base_loopbreak(base);
    pthread_join(loop_thread, NULL);
    admin_free(srv);
    event_base_free(base);
    libevent_global_shutdown();
    base = NULL;
}

static const struct cxt_case cases[] = {
    CXT(test_metrics_endpoint),
    CXT(test_health_and_ready),
    CXT(test_prefix_and_404),
    CXT(test_teardown),
};
CXT_MAIN(cases)
