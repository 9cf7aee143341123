#include "cx_metrics.h"
#include "cxtest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *render(void)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    if (cx_metrics_render(&b) != 0) {
        cx_buf_free(&b);
        return NULL;
    }
    return cx_buf_steal(&b, NULL);
}

static void test_counter_labels(void)
{
    struct cx_metric *m = cx_counter("t_events_total", "Events seen.", "kind,verdict");
    REQUIRE(m != NULL);
    cx_metric_inc(m, "ConfigMap", "drop");
    cx_metric_inc(m, "ConfigMap", "drop");
    cx_metric_inc(m, "Lease", "pass");
    struct cx_series *s = cx_metric_with(m, "ConfigMap", "drop");
    cx_series_add(s, 3);
    CHECK(cx_metric_get(m, "ConfigMap", "drop") == 5);
    CHECK(cx_metric_get(m, "Lease", "pass") == 1);
    CHECK(cx_metric_get(m, "Lease", "drop") == 0); /* not created by reading */
    CHECK(cx_metric_total(m) == 6);
    /* same name, same shape: the same family */
    CHECK(cx_counter("t_events_total", "x", "kind,verdict") == m);
    /* same name, other labels or type: refused */
    CHECK(cx_counter("t_events_total", "x", "kind") == NULL);
    CHECK(cx_gauge("t_events_total", "x", "kind,verdict") == NULL);
    char *out = render();
    CHECK_STR_CONTAINS(out, "# HELP t_events_total Events seen.\n# TYPE t_events_total counter\n"
                            "t_events_total{kind=\"ConfigMap\",verdict=\"drop\"} 5\n"
                            "t_events_total{kind=\"Lease\",verdict=\"pass\"} 1\n");
    free(out);
}

static void test_invalid_names(void)
{
    CHECK(cx_counter("1bad", "", NULL) == NULL);
    CHECK(cx_counter("has-dash", "", NULL) == NULL);
    CHECK(cx_counter("ok_total", "", "bad-label") == NULL);
    CHECK(cx_counter("ok2_total", "", "le") == NULL);
    CHECK(cx_counter("ok3_total", "", "a,,b") == NULL);
    double bad[] = {1, 1};
    CHECK(cx_histogram("h_bad", "", NULL, bad, 2) == NULL);
}

static void test_level_escape_hide(void)
{
    struct cx_metric *g = cx_gauge("t_level", "Help with \\ and\nnewline.", "name");
    REQUIRE(g != NULL);
    cx_metric_set(g, 2.5, "a\"b\\c\nd");
    cx_metric_set(g, -1, "zzz");
    char *out = render();
    CHECK_STR_CONTAINS(out, "# HELP t_level Help with \\\\ and\\nnewline.\n");
    CHECK_STR_CONTAINS(out, "t_level{name=\"a\\\"b\\\\c\\nd\"} 2.5\n");
    CHECK_STR_CONTAINS(out, "t_level{name=\"zzz\"} -1\n");
    free(out);
    struct cx_series *s = cx_metric_with(g, "zzz");
    cx_series_hide(s);
    out = render();
    CHECK(strstr(out, "name=\"zzz\"") == NULL);
    free(out);
    cx_series_set(s, 7);
    out = render();
    CHECK_STR_CONTAINS(out, "t_level{name=\"zzz\"} 7\n");
    free(out);
    /* Registered, never used: listed all the same, without samples. */
    REQUIRE(cx_counter("t_unused_total", "Never incremented.", "kind") != NULL);
    out = render();
    CHECK_STR_CONTAINS(out, "# HELP t_unused_total Never incremented.\n"
                            "# TYPE t_unused_total counter\n");
    CHECK(strstr(out, "t_unused_total{") == NULL);
    free(out);
}

/* A series per changing value (a snapshot version): removed ones leave the
 * exposition and the family, and give their memory back (ASan/valgrind
 * see any leak). */
static void test_remove_changing_series(void)
{
    struct cx_metric *g = cx_gauge("t_version_info", "Current version.", "version");
    REQUIRE(g != NULL);
    struct cx_series *cur = NULL;
    char v[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(v, sizeof(v), "v%04d", i);
        cx_series_remove(cur);
        cur = cx_metric_with(g, v);
        REQUIRE(cur != NULL);
        cx_series_set(cur, 1);
    }
    char *out = render();
    CHECK_STR_CONTAINS(out, "t_version_info{version=\"v0999\"} 1\n");
    CHECK(strstr(out, "v0998") == NULL);
    CHECK(strstr(out, "v0000") == NULL);
    free(out);
    CHECK(cx_metric_total(g) == 1);
    /* the same values again: a fresh series at zero */
    cx_series_remove(cur);
    CHECK(cx_metric_get(g, "v0999") == 0);
    cur = cx_metric_with(g, "v0999");
    CHECK(cx_series_value(cur) == 0);
    cx_series_remove(NULL);
}

static void test_histogram(void)
{
    double bounds[] = {0.001, 0.01, 0.1};
    struct cx_metric *h = cx_histogram("t_latency_seconds", "Latency.", NULL, bounds, 3);
    REQUIRE(h != NULL);
    struct cx_series *s = cx_metric_with(h);
    cx_series_observe(s, 0.0005);
    cx_series_observe(s, 0.001); /* le is inclusive */
    cx_series_observe(s, 0.05);
    cx_series_observe(s, 3);
    CHECK(cx_series_value(s) == 4);
    CHECK(cx_series_sum(s) > 3.0514 && cx_series_sum(s) < 3.0516);
    char *out = render();
    CHECK_STR_CONTAINS(out, "t_latency_seconds_bucket{le=\"0.001\"} 2\n"
                            "t_latency_seconds_bucket{le=\"0.01\"} 2\n"
                            "t_latency_seconds_bucket{le=\"0.1\"} 3\n"
                            "t_latency_seconds_bucket{le=\"+Inf\"} 4\n"
                            "t_latency_seconds_sum 3.0515\n"
                            "t_latency_seconds_count 4\n");
    free(out);
}

static double fn_value(void *arg)
{
    return *(double *)arg;
}

static void test_level_func(void)
{
    static double v = 42;
    CHECK_INT_EQ(cx_gauge_func("t_func_level", "Read at exposition.", fn_value, &v), 0);
    char *out = render();
    CHECK_STR_CONTAINS(out, "# TYPE t_func_level gauge\nt_func_level 42\n");
    free(out);
    v = 43;
    out = render();
    CHECK_STR_CONTAINS(out, "t_func_level 43\n");
    free(out);
}

static struct cx_metric *race_metric;

static void *race_worker(void *arg)
{
    const char *label = arg;
    struct cx_series *s = cx_metric_with(race_metric, label);
    for (int i = 0; i < 100000; i++) {
        cx_series_inc(s);
        if (i % 1000 == 0)
            cx_metric_inc(race_metric, "shared");
    }
    return NULL;
}

static void test_threads(void)
{
    race_metric = cx_counter("t_race_total", "Concurrent increments.", "who");
    REQUIRE(race_metric != NULL);
    pthread_t th[4];
    const char *labels[4] = {"a", "b", "a", "b"};
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, race_worker, (void *)labels[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    CHECK(cx_metric_get(race_metric, "a") == 200000);
    CHECK(cx_metric_get(race_metric, "b") == 200000);
    CHECK(cx_metric_get(race_metric, "shared") == 400);
}

/* The whole exposition passes Prometheus' own linter. */
static void test_promtool(void)
{
    if (access("/usr/bin/promtool", X_OK) != 0)
        cxt_skip("promtool not installed (Debian package prometheus)");
    char *out = render();
    REQUIRE(out != NULL);
    char path[] = "/tmp/cx_metrics_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(out, f);
    fclose(f);
    free(out);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "promtool check metrics < %s 2>&1", path);
    FILE *p = popen(cmd, "r");
    char line[512];
    int problems = 0;
    while (fgets(line, sizeof(line), p)) {
        printf("# promtool: %s", line);
        problems++;
    }
    int rc = pclose(p);
    unlink(path);
    CHECK_INT_EQ(rc, 0);
    CHECK_INT_EQ(problems, 0);
}

static const struct cxt_case cases[] = {
    CXT(test_counter_labels),    CXT(test_invalid_names),
    CXT(test_level_escape_hide), CXT(test_histogram),
    CXT(test_level_func),        CXT(test_threads),
    CXT(test_promtool),          CXT(test_remove_changing_series),
};
CXT_MAIN(cases)
