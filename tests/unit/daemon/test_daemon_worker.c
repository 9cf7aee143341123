/* daemon_worker: nothing before enable; enable translates at once; pokes
 * within one window make one pass, no sooner than the window; pokes during
 * a pass make exactly one more pass right after it; the snapshot is the
 * translation of the view (the worker thread's own xlate_ctx). */
#include "cx_json.h"
#include "cx_time.h"
#include "cxtest.h"
#include "daemon_worker.h"
#include "xlate_snapshot.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct event_base *base;
static struct store *st;
static struct daemon_worker *w;
static int views;
static int snapshots;
static struct xlate_snapshot *last;
static struct daemon_worker_result last_res;
static struct event *poke_ev;
static int pokes_from_view;
static int poked_while_running;
static int64_t snapshot_at[8];
static int64_t started_at[8];

static void add(enum xlate_kind k, const char *json)
{
    cJSON *j = cx_json_parse(json, strlen(json));
    struct kube_obj *o = kube_obj_new(j);
    REQUIRE(o != NULL);
    REQUIRE_INT_EQ(store_put(st, k, o, xlate_digest(j)), 0);
}

static void add_vs(int i)
{
    char buf[512];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\",\"metadata\":{"
             "\"namespace\":\"ns\",\"name\":\"vs%d\",\"generation\":1},\"spec\":{\"domains\":"
             "[\"d%d.test\"],\"routes\":[{\"match\":{\"prefix\":\"/a\"},\"upstream\":{\"name\":"
             "\"up\"}},{\"match\":{\"prefix\":\"/b\"},\"upstream\":{\"name\":\"up\"}}]}}",
             i, i);
    add(XLATE_KIND_VIRTUAL_SERVICE, buf);
}

static void on_poke(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    poked_while_running = daemon_worker_pending(w);
    for (int i = 0; i < 3; i++)
        daemon_worker_poke(w);
}

static struct store_view *make_view(void *user)
{
    (void)user;
    views++;
    if (pokes_from_view) {
        pokes_from_view = 0;
        event_active(poke_ev, 0, 0); /* next loop turn: the pass is running */
    }
    return store_view_new(st);
}

static void on_snapshot(void *user, struct xlate_snapshot *snap,
                        const struct daemon_worker_result *res)
{
    (void)user;
    if (snapshots < 8) {
        snapshot_at[snapshots] = cx_mono_ns();
        started_at[snapshots] = res->started_ns;
    }
    snapshots++;
    xlate_snapshot_unref(last);
    last = snap;
    last_res = *res;
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

static void run_ms(int ms)
{
    struct event *t = event_new(base, -1, EV_PERSIST, tick, NULL);
    struct timeval tv = {0, 2000};
    event_add(t, &tv);
    int64_t end = cx_mono_ms() + ms;
    while (cx_mono_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    event_free(t);
}

static int run_until_snapshots(int n, int ms)
{
    struct event *t = event_new(base, -1, EV_PERSIST, tick, NULL);
    struct timeval tv = {0, 1000};
    event_add(t, &tv);
    int64_t end = cx_mono_ms() + ms;
    while (snapshots < n && cx_mono_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    event_free(t);
    return snapshots >= n;
}

static void test_setup(void)
{
    base = event_base_new();
    st = store_new();
    REQUIRE(base && st);
    poke_ev = event_new(base, -1, 0, on_poke, NULL);
    add(XLATE_KIND_GATEWAY, "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Gateway\","
                            "\"metadata\":{\"namespace\":\"ns\",\"name\":\"gw\",\"generation\":1},"
                            "\"spec\":{\"mode\":\"proxyless\"}}");
    add(XLATE_KIND_UPSTREAM, "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Upstream\","
                             "\"metadata\":{\"namespace\":\"ns\",\"name\":\"up\",\"generation\":1},"
                             "\"spec\":{\"static\":{\"hosts\":[{\"address\":\"10.0.0.1\","
                             "\"port\":80}]}}}");
    add_vs(0);
    struct daemon_worker_opts o = {.debounce_ns = 150 * CX_NS_PER_MS * cxt_slowdown(),
                                   .make_view = make_view,
                                   .on_snapshot = on_snapshot};
    char err[128];
    w = daemon_worker_new(base, &o, err, sizeof(err));
    REQUIRE(w != NULL);
}

static void test_nothing_before_enable(void)
{
    REQUIRE(w != NULL);
    daemon_worker_poke(w);
    run_ms(400);
    CHECK_INT_EQ(views, 0);
    CHECK_INT_EQ(snapshots, 0);
    CHECK(daemon_worker_pending(w)); /* the change is remembered */
}

static void test_enable_translates_at_once(void)
{
    REQUIRE(w != NULL);
    int64_t t0 = cx_mono_ns();
    daemon_worker_enable(w);
    CHECK_INT_EQ(views, 1); /* the view is taken synchronously */
    REQUIRE(run_until_snapshots(1, 5000));
    CHECK_INT_LT(cx_mono_ns() - t0, 150 * CX_NS_PER_MS * cxt_slowdown()); /* no debounce wait */
    CHECK_INT_EQ(last_res.pass, 1);
    CHECK_INT_EQ(last_res.view_generation, store_generation(st));
    CHECK_INT_EQ(last_res.objects, 3);
    CHECK(!last_res.incremental); /* the first pass reads the whole view */
    REQUIRE(last != NULL);
    CHECK_INT_EQ(last->ngroups, 1);
    CHECK(xlate_snapshot_group(last, "ns/gw") != NULL);
    CHECK(!daemon_worker_pending(w));
    daemon_worker_enable(w); /* idempotent */
    run_ms(50);
    CHECK_INT_EQ(snapshots, 1);
}

static void test_pokes_in_one_window_make_one_pass(void)
{
    REQUIRE(w != NULL);
    int64_t t0 = cx_mono_ns();
    add_vs(1);
    daemon_worker_poke(w);
    run_ms(20);
    add_vs(2);
    daemon_worker_poke(w);
    daemon_worker_poke(w);
    CHECK(daemon_worker_pending(w));
    REQUIRE(run_until_snapshots(2, 5000));
    int64_t took = cx_mono_ns() - t0;
    CHECK_INT_GE(took, 140 * CX_NS_PER_MS * cxt_slowdown()); /* waited for the window */
    run_ms(300 * cxt_slowdown());
    CHECK_INT_EQ(snapshots, 2);
    CHECK_INT_EQ(last_res.objects, 5);
    CHECK(last_res.incremental); /* the two new VirtualServices alone */
    CHECK_INT_EQ(last_res.stats.objects, 2);
    CHECK_INT_EQ(last->nreports, 5);
    CHECK_INT_EQ(last_res.view_generation, store_generation(st));
    CHECK(last_res.queued_ns >= t0 && last_res.queued_ns <= t0 + 5 * CX_NS_PER_MS * cxt_slowdown());
    CHECK_INT_EQ(daemon_worker_passes(w), 2);
}

static void test_pokes_during_a_pass_make_one_more(void)
{
    REQUIRE(w != NULL);
    for (int i = 3; i < 3000; i++)
        add_vs(i); /* a pass long enough to poke into */
    int before = snapshots;
    pokes_from_view = 1;
    daemon_worker_poke(w);
    REQUIRE(run_until_snapshots(before + 2, 20000));
    run_ms(400 * cxt_slowdown());
    CHECK_INT_EQ(snapshots, before + 2);
    CHECK_INT_EQ(last_res.objects, 3002);
    CHECK_INT_EQ(last->nreports, 3002);
    CHECK(!daemon_worker_pending(w));
    /* The pokes landed while the pass ran, so the next pass started as
     * soon as it ended, without another window. */
    CHECK(poked_while_running);
    if (poked_while_running && before + 1 < 8)
        CHECK_INT_LT(started_at[before + 1] - snapshot_at[before],
                     100 * CX_NS_PER_MS * cxt_slowdown());
}

static void test_teardown(void)
{
    daemon_worker_free(w);
    xlate_snapshot_unref(last);
    event_free(poke_ev);
    store_free(st);
    event_base_free(base);
}

static const struct cxt_case cases[] = {
    CXT(test_setup),
    CXT(test_nothing_before_enable),
    CXT(test_enable_translates_at_once),
    CXT(test_pokes_in_one_window_make_one_pass),
    CXT(test_pokes_during_a_pass_make_one_more),
    CXT(test_teardown),
};
CXT_MAIN(cases)
