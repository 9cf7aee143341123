/* status_writer against a real kubesim: a Gateway, VirtualServices and an
 * Upstream, translated by the real translator, their statuses written
 * through /status — only when leading, only through the guard, only the
 * differences, rate-limited, conflicts retried, in-flight writes cancelled
 * on stop, deferral while a translation is pending, and the Gateway's
 * extra conditions. */
#include "daemon_test.h"
#include "status_writer.h"
#include "xlate.h"
#include "xlate_snapshot.h"

#include <stdint.h>

#define NS "sw"

static struct event_base *base;
static struct cx_kubesim ks;
static struct kube_client *kc;
static struct kube_informer *infs[XLATE_KIND_COUNT];
static struct xlate_ctx *xctx;
static struct status_writer *w;

/* What the fake guard says. */
static int guard_open = 1;
static int64_t guard_timeout_ns = 5 * CX_NS_PER_S;
static uint64_t guard_term = 1;
static int recheck_open = 1;
static int rechecks;
static int pending;
static int nack_active;

static bool guard(void *arg, int64_t *timeout_ns, uint64_t *term)
{
    (void)arg;
    if (!guard_open)
        return false;
    *timeout_ns = guard_timeout_ns;
    *term = guard_term;
    return true;
}

/* The last-moment check the client runs right before the bytes leave. */
static bool guard_recheck(void *arg, uint64_t term)
{
    (void)arg;
    rechecks++;
    return recheck_open && term == guard_term;
}

static struct kube_obj *lookup(void *user, enum xlate_kind kind, const char *key)
{
    (void)user;
    return infs[kind] ? kube_cache_get(kube_informer_cache(infs[kind]), key) : NULL;
}

static int translation_pending(void *user)
{
    (void)user;
    return pending;
}

static size_t gw_conditions(void *user, const char *group, struct status_condition *out, size_t max)
{
    (void)user;
    (void)group;
    if (!max)
        return 0;
    out[0] = (struct status_condition){
        .type = "XdsAccepted",
        .ok = !nack_active,
        .reason = nack_active ? "Rejected" : "Accepted",
        .message = nack_active ? "RDS version abc rejected by 1 proxy stream"
                               : "no proxy rejects the current configuration",
    };
    return 1;
}

/* What the daemon's feed does: every informer change of a status-carrying
 * object makes the writer look at it again. */
static void inf_add(void *ud, struct kube_obj *o)
{
    if (w)
        status_writer_object_changed(w, (enum xlate_kind)(intptr_t)ud, o->key);
}

static void inf_update(void *ud, struct kube_obj *old, struct kube_obj *o)
{
    (void)old;
    inf_add(ud, o);
}

static int all_synced(void *arg)
{
    (void)arg;
    for (int k = 0; k < XLATE_KIND_COUNT; k++)
        if (infs[k] && !kube_informer_synced(infs[k]))
            return 0;
    return 1;
}

/* Translates what the informers hold; hands the snapshot to the writer. */
static struct xlate_snapshot *translate(void)
{
    struct xlate_object objs[64];
    struct kube_obj **lists[XLATE_KIND_COUNT] = {0};
    size_t lens[XLATE_KIND_COUNT] = {0}, n = 0;
    for (int k = 0; k < XLATE_KIND_COUNT; k++) {
        if (!infs[k])
            continue;
        lists[k] = kube_cache_list(kube_informer_cache(infs[k]), &lens[k]);
        for (size_t i = 0; i < lens[k] && n < 64; i++)
            objs[n++] = (struct xlate_object){.kind = (enum xlate_kind)k, .obj = lists[k][i]->json};
    }
    struct xlate_input in = {.objects = objs, .n = n};
    struct xlate_snapshot *s = NULL;
    int rc = xlate_run(xctx, &in, &s, NULL);
    for (int k = 0; k < XLATE_KIND_COUNT; k++)
        kube_cache_list_free(lists[k], lens[k]);
    return rc == 0 ? s : NULL;
}

static void publish_snapshot(void)
{
    struct xlate_snapshot *s = translate();
    REQUIRE(s != NULL);
    CHECK_INT_EQ(status_writer_set_snapshot(w, s), 0);
    xlate_snapshot_unref(s);
}

static int idle(void *arg)
{
    (void)arg;
    return status_writer_idle(w);
}

static int64_t generation_of(const cJSON *o)
{
    const cJSON *g = cx_json_path(o, "metadata", "generation", NULL);
    return cJSON_IsNumber(g) ? (int64_t)g->valuedouble : -1;
}

static int64_t observed_of(const cJSON *o)
{
    const cJSON *g = cx_json_path(o, "status", "observedGeneration", NULL);
    return cJSON_IsNumber(g) ? (int64_t)g->valuedouble : -1;
}

static const char *state_of(const cJSON *o)
{
    return cx_json_path_str(o, "status", "state", NULL);
}

static void new_writer(double qps, double burst)
{
    status_writer_free(w);
    struct status_writer_opts o = {
        .kc = kc,
        .qps = qps,
        .burst = burst,
        .guard = {.allow = guard, .recheck = guard_recheck},
        .lookup = lookup,
        .gateway_conditions = gw_conditions,
        .translation_pending = translation_pending,
    };
    w = status_writer_new(base, &o);
    REQUIRE(w != NULL);
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
    const struct kube_resource *gw = store_kind_resource(XLATE_KIND_GATEWAY);
    const struct kube_resource *vs = store_kind_resource(XLATE_KIND_VIRTUAL_SERVICE);
    const struct kube_resource *us = store_kind_resource(XLATE_KIND_UPSTREAM);
    REQUIRE_INT_EQ(dt_create(&ks, gw, NS,
                             "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Gateway\","
                             "\"metadata\":{\"name\":\"gw\"},\"spec\":{\"mode\":\"proxyless\"}}"),
                   201);
    REQUIRE_INT_EQ(dt_create(&ks, us, NS,
                             "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Upstream\","
                             "\"metadata\":{\"name\":\"up\"},\"spec\":{\"static\":{\"hosts\":"
                             "[{\"address\":\"10.0.0.1\",\"port\":80}]}}}"),
                   201);
    for (int i = 0; i < 3; i++) {
        char body[512];
        snprintf(body, sizeof(body),
                 "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\","
                 "\"metadata\":{\"name\":\"vs%d\"},\"spec\":{\"domains\":[\"d%d.test\"],"
                 "\"routes\":[{\"match\":{\"prefix\":\"/\"},\"upstream\":{\"name\":\"up\"}}]}}",
                 i, i);
        REQUIRE_INT_EQ(dt_create(&ks, vs, NS, body), 201);
    }
    kc = dt_client(base, &ks, "writer-test");
    REQUIRE(kc != NULL);
    for (int k = XLATE_KIND_GATEWAY; k <= XLATE_KIND_UPSTREAM; k++) {
        struct kube_informer_opts o = {.res = store_kind_resource((enum xlate_kind)k), .ns = NS};
        static const struct kube_informer_handlers h = {
            .on_add = inf_add, .on_update = inf_update, .on_delete = inf_add};
        infs[k] = kube_informer_new(kc, &o, &h, (void *)(intptr_t)k);
        REQUIRE(infs[k] != NULL);
        REQUIRE_INT_EQ(kube_informer_start(infs[k]), 0);
    }
    REQUIRE(cxt_loop_until(base, all_synced, NULL, 5000));
    xctx = xlate_ctx_new();
    REQUIRE(xctx != NULL);
    new_writer(0, 1);
}

static void test_standby_never_writes(void)
{
    REQUIRE(w != NULL);
    long seq = dt_audit_seq(&ks);
    publish_snapshot();
    status_writer_object_changed(w, XLATE_KIND_VIRTUAL_SERVICE, NS "/vs0");
    cxt_loop_for(base, 300);
    CHECK_INT_EQ(dt_audit_count(&ks, NULL, NULL, "status", seq), 0);
    struct status_writer_stats st;
    status_writer_stats(w, &st);
    CHECK_INT_EQ(st.checks, 0);
    CHECK_INT_EQ(st.writes, 0);
    CHECK(!status_writer_idle(w)); /* not leading */
}

static void test_full_pass_writes_every_status_once(void)
{
    REQUIRE(w != NULL);
    long seq = dt_audit_seq(&ks);
    status_writer_start(w, 1);
    REQUIRE(cxt_loop_until(base, idle, NULL, 5000));
    struct status_writer_stats st;
    status_writer_stats(w, &st);
    CHECK_INT_EQ(st.writes_ok, 5); /* gw, up, vs0..2 */
    CHECK_INT_EQ(st.passes, 1);
    CHECK_INT_EQ(dt_audit_count(&ks, "patch", NULL, "status", seq), 5);
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof(name), "vs%d", i);
        cJSON *o = dt_get(&ks, store_kind_resource(XLATE_KIND_VIRTUAL_SERVICE), NS, name);
        REQUIRE(o != NULL);
        CHECK_STR_EQ(state_of(o), "Accepted");
        CHECK_INT_EQ(observed_of(o), generation_of(o));
        const cJSON *conds = cJSON_GetObjectItem(cx_json_path(o, "status", NULL), "conditions");
        CHECK_STR_EQ(cx_json_str(cJSON_GetArrayItem(conds, 0), "type"), "Accepted");
        CHECK_STR_EQ(cx_json_str(cJSON_GetArrayItem(conds, 0), "status"), "True");
        cJSON_Delete(o);
    }
    /* The Gateway carries XdsAccepted from the callback. */
    cJSON *g = dt_get(&ks, store_kind_resource(XLATE_KIND_GATEWAY), NS, "gw");
    REQUIRE(g != NULL);
    const cJSON *gconds = cJSON_GetObjectItem(cx_json_path(g, "status", NULL), "conditions");
    CHECK_INT_EQ(cJSON_GetArraySize(gconds), 2);
    CHECK_STR_EQ(cx_json_str(cJSON_GetArrayItem(gconds, 1), "type"), "XdsAccepted");
    CHECK_STR_EQ(cx_json_str(cJSON_GetArrayItem(gconds, 1), "status"), "True");
    cJSON_Delete(g);
    /* Our own writes came back through the informers: re-checked, nothing
     * more written. */
    cxt_loop_for(base, 200);
    status_writer_stats(w, &st);
    CHECK_INT_EQ(st.writes, 5);
    CHECK(st.up_to_date >= 5);
}

static void test_new_term_full_pass_writes_nothing_when_up_to_date(void)
{
    REQUIRE(w != NULL);
    long seq = dt_audit_seq(&ks);
    status_writer_stop(w);
    guard_term = 2;
    status_writer_start(w, 2);
    /* The pass walks the reports with a cursor: nothing is queued for
     * objects that are up to date. */
    struct status_writer_stats st0;
    status_writer_stats(w, &st0);
    CHECK_INT_EQ(st0.queued, 0);
    CHECK(!status_writer_idle(w)); /* the pass is still to run */
    REQUIRE(cxt_loop_until(base, idle, NULL, 5000));
    struct status_writer_stats st;
    status_writer_stats(w, &st);
    CHECK_INT_EQ(st.passes, 2);
    CHECK_INT_EQ(dt_audit_count(&ks, NULL, NULL, "status", seq), 0);
}

static void test_changed_report_is_written_with_new_generation(void)
{
    REQUIRE(w != NULL);
    REQUIRE_INT_EQ(dt_patch(&ks, store_kind_resource(XLATE_KIND_VIRTUAL_SERVICE), NS, "vs1",
                            "{\"spec\":{\"routes\":[{\"match\":{\"prefix\":\"/\"},"
                            "\"upstream\":{\"name\":\"missing\"}}]}}"),
                   200);
    /* The informer sees generation 2 before any snapshot has it: with a
     * translation pending, the writer defers instead of writing gen 1. */
    pending = 1;
    cxt_loop_for(base, 300);
    struct status_writer_stats st;
    status_writer_stats(w, &st);
    uint64_t writes_before = st.writes;
    status_writer_object_changed(w, XLATE_KIND_VIRTUAL_SERVICE, NS "/vs1");
    cxt_loop_for(base, 100);
    status_writer_stats(w, &st);
    CHECK(st.deferred >= 1);
    CHECK_INT_EQ(st.writes, writes_before);
    pending = 0;
    long seq = dt_audit_seq(&ks);
    publish_snapshot();
    REQUIRE(cxt_loop_until(base, idle, NULL, 5000));
    cJSON *o = dt_get(&ks, store_kind_resource(XLATE_KIND_VIRTUAL_SERVICE), NS, "vs1");
    REQUIRE(o != NULL);
    CHECK_INT_EQ(generation_of(o), 2);
    CHECK_INT_EQ(observed_of(o), 2);
    CHECK_STR_EQ(state_of(o), "Rejected");
    const cJSON *c0 =
        cJSON_GetArrayItem(cJSON_GetObjectItem(cx_json_path(o, "status", NULL), "conditions"), 0);
    CHECK_STR_EQ(cx_json_str(c0, "status"), "False");
    CHECK_STR_CONTAINS(cx_json_str(c0, "message"), "missing");
    cJSON_Delete(o);
    /* vs1 written once; the Gateway's report changed too (one virtual host
     * fewer), nothing else. */
    CHECK_INT_EQ(dt_audit_count(&ks, "patch", "virtualservices", "status", seq), 1);
    CHECK_INT_EQ(dt_audit_count(&ks, "patch", NULL, "status", seq), 2);
}

static void test_someone_elses_status_edit_is_reverted(void)
{
    REQUIRE(w != NULL);
    char path[256];
    dt_path(path, sizeof(path), store_kind_resource(XLATE_KIND_VIRTUAL_SERVICE), NS, "vs0",
            "status");
    long code = 0;
    free(cx_kubesim_request(&ks, "PATCH", path, "{\"status\":{\"state\":\"Warning\"}}",
                            "application/merge-patch+json", &code));
    REQUIRE_INT_EQ(code, 200);
    int ok = 0;
    for (int i = 0; i < 100 && !ok; i++) {
        cxt_loop_for(base, 20);
        cJSON *o = dt_get(&ks, store_kind_resource(XLATE_KIND_VIRTUAL_SERVICE), NS, "vs0");
        ok = o && state_of(o) && strcmp(state_of(o), "Accepted") == 0;
        cJSON_Delete(o);
    }
    CHECK(ok);
}

static void test_guard_refusal_holds_writes(void)
{
    REQUIRE(w != NULL);
    guard_open = 0;
    long seq = dt_audit_seq(&ks);
    nack_active = 1; /* the Gateway needs a write */
    status_writer_recheck_gateway(w, NS "/gw");
    cxt_loop_for(base, 400);
    struct status_writer_stats st;
    status_writer_stats(w, &st);
    CHECK(st.refused >= 1);
    CHECK_INT_EQ(dt_audit_count(&ks, NULL, NULL, "status", seq), 0);
    guard_open = 1;
    REQUIRE(cxt_loop_until(base, idle, NULL, 3000));
    CHECK_INT_EQ(dt_audit_count(&ks, "patch", "gateways", "status", seq), 1);
    cJSON *g = dt_get(&ks, store_kind_resource(XLATE_KIND_GATEWAY), NS, "gw");
    REQUIRE(g != NULL);
    const cJSON *conds = cJSON_GetObjectItem(cx_json_path(g, "status", NULL), "conditions");
    const cJSON *x = cJSON_GetArrayItem(conds, 1);
    CHECK_STR_EQ(cx_json_str(x, "type"), "XdsAccepted");
    CHECK_STR_EQ(cx_json_str(x, "status"), "False");
    CHECK_STR_EQ(cx_json_str(x, "reason"), "Rejected");
    cJSON_Delete(g);
    nack_active = 0;
}

/* The guard said yes when the write was queued, but by the time the
 * client was about to send it the leadership was gone (a pause between the
 * two): nothing reaches the server; once leading again the write goes out. */
static void test_last_moment_recheck_stops_the_write(void)
{
    REQUIRE(w != NULL);
    recheck_open = 0;
    rechecks = 0;
    long seq = dt_audit_seq(&ks);
    struct status_writer_stats before, st;
    status_writer_stats(w, &before);
    /* the previous case left XdsAccepted=False on the Gateway: clearing the
     * NACK needs a write */
    nack_active = 0;
    status_writer_recheck_gateway(w, NS "/gw");
    cxt_loop_for(base, 400);
    status_writer_stats(w, &st);
    CHECK_INT_GE(rechecks, 1);
    CHECK(st.refused > before.refused);
    CHECK_INT_EQ(dt_audit_count(&ks, NULL, NULL, "status", seq), 0);
    recheck_open = 1;
    REQUIRE(cxt_loop_until(base, idle, NULL, 10000));
    CHECK_INT_EQ(dt_audit_count(&ks, "patch", "gateways", "status", seq), 1);
    cJSON *g = dt_get(&ks, store_kind_resource(XLATE_KIND_GATEWAY), NS, "gw");
    REQUIRE(g != NULL);
    const cJSON *conds = cJSON_GetObjectItem(cx_json_path(g, "status", NULL), "conditions");
    CHECK_STR_EQ(cx_json_str(cJSON_GetArrayItem(conds, 1), "status"), "True");
    cJSON_Delete(g);
    /* leave the Gateway as the previous case did (NACK shown, cleared in
     * memory) for the next case */
    nack_active = 1;
    status_writer_recheck_gateway(w, NS "/gw");
    REQUIRE(cxt_loop_until(base, idle, NULL, 10000));
    nack_active = 0;
}

static void test_conflict_is_retried(void)
{
    REQUIRE(w != NULL);
    REQUIRE_INT_EQ(dt_fault(&ks, "{\"verb\":\"patch\",\"resource\":\"gateways/status\","
                                 "\"action\":\"fail\",\"code\":409,\"count\":1}"),
                   201);
    struct status_writer_stats st;
    status_writer_stats(w, &st);
    uint64_t conflicts = st.conflicts;
    status_writer_recheck_gateway(w, NS "/gw"); /* nack_active went back to 0 */
    REQUIRE(cxt_loop_until(base, idle, NULL, 5000));
    status_writer_stats(w, &st);
    CHECK_INT_EQ(st.conflicts, conflicts + 1);
    cJSON *g = dt_get(&ks, store_kind_resource(XLATE_KIND_GATEWAY), NS, "gw");
    const cJSON *x =
        cJSON_GetArrayItem(cJSON_GetObjectItem(cx_json_path(g, "status", NULL), "conditions"), 1);
    CHECK_STR_EQ(cx_json_str(x, "status"), "True");
    cJSON_Delete(g);
    dt_clear_faults(&ks);
}

static int has_inflight(void *arg)
{
    (void)arg;
    struct status_writer_stats st;
    status_writer_stats(w, &st);
    return st.inflight > 0;
}

static void test_write_timeout_is_bounded_by_the_guard(void)
{
    REQUIRE(w != NULL);
    REQUIRE_INT_EQ(dt_fault(&ks, "{\"verb\":\"patch\",\"resource\":\"gateways/status\","
                                 "\"action\":\"delay\",\"delay_ms\":1500}"),
                   201);
    guard_timeout_ns = 200 * CX_NS_PER_MS;
    struct status_writer_stats st;
    status_writer_stats(w, &st);
    uint64_t failures = st.failures;
    nack_active = 1;
    status_writer_recheck_gateway(w, NS "/gw");
    REQUIRE(cxt_loop_until(base, has_inflight, NULL, 2000));
    int64_t t0 = cx_mono_ms();
    int failed_fast = 0;
    while (cx_mono_ms() - t0 < 1200 && !failed_fast) {
        cxt_loop_for(base, 10);
        status_writer_stats(w, &st);
        failed_fast = st.failures > failures;
    }
    CHECK(failed_fast); /* gave up after ~200 ms, long before the 1.5 s answer */
    CHECK_INT_LT(cx_mono_ms() - t0, 1000);
    guard_timeout_ns = 5 * CX_NS_PER_S;
    dt_clear_faults(&ks);
    REQUIRE(cxt_loop_until(base, idle, NULL, 5000)); /* retried and written */
    nack_active = 0;
}

static void test_stop_cancels_in_flight_writes(void)
{
    REQUIRE(w != NULL);
    REQUIRE_INT_EQ(dt_fault(&ks, "{\"verb\":\"patch\",\"resource\":\"gateways/status\","
                                 "\"action\":\"delay\",\"delay_ms\":800}"),
                   201);
    status_writer_recheck_gateway(w, NS "/gw");
    REQUIRE(cxt_loop_until(base, has_inflight, NULL, 2000));
    status_writer_stop(w);
    struct status_writer_stats st;
    status_writer_stats(w, &st);
    CHECK_INT_EQ(st.inflight, 0);
    CHECK_INT_EQ(st.queued, 0);
    CHECK(st.cancelled >= 1);
    CHECK(!st.leading);
    uint64_t ok = st.writes_ok, fails = st.failures;
    cxt_loop_for(base, 1000); /* the delayed answer (if any) reaches nobody */
    status_writer_stats(w, &st);
    CHECK_INT_EQ(st.writes_ok, ok);
    CHECK_INT_EQ(st.failures, fails);
    dt_clear_faults(&ks);
}

static void test_rate_limit_spaces_writes(void)
{
    REQUIRE(w != NULL);
    new_writer(5, 1); /* one write per 200 ms */
    /* Make every status stale: each object needs a write. */
    const char *kinds[] = {"virtualservices", "virtualservices", "virtualservices", "upstreams",
                           "gateways"};
    const char *names[] = {"vs0", "vs1", "vs2", "up", "gw"};
    for (int i = 0; i < 5; i++) {
        char path[256];
        snprintf(path, sizeof(path), "/apis/coxswain.dev/v1/namespaces/" NS "/%s/%s/status",
                 kinds[i], names[i]);
        long code = 0;
        free(cx_kubesim_request(&ks, "PATCH", path, "{\"status\":null}",
                                "application/merge-patch+json", &code));
        CHECK_INT_EQ(code, 200);
    }
    cxt_loop_for(base, 100); /* informers catch up */
    publish_snapshot();
    guard_term = 3;
    int64_t t0 = cx_mono_ms();
    status_writer_start(w, 3);
    REQUIRE(cxt_loop_until(base, idle, NULL, 5000));
    int64_t dt = cx_mono_ms() - t0;
    struct status_writer_stats st;
    status_writer_stats(w, &st);
    CHECK_INT_EQ(st.writes_ok, 5);
    CHECK_INT_GE(dt, 700); /* 1 at once, then 4 x 200 ms (less scheduling slack) */
}

static void test_teardown(void)
{
    status_writer_free(w);
    w = NULL;
    for (int k = 0; k < XLATE_KIND_COUNT; k++)
        kube_informer_free(infs[k]);
    xlate_ctx_free(xctx);
    kube_client_free(kc);
    CHECK_INT_EQ(cx_kubesim_stop(&ks), 0);
    event_base_free(base);
}

static const struct cxt_case cases[] = {
    CXT(test_setup),
    CXT(test_standby_never_writes),
    CXT(test_full_pass_writes_every_status_once),
    CXT(test_new_term_full_pass_writes_nothing_when_up_to_date),
    CXT(test_changed_report_is_written_with_new_generation),
    CXT(test_someone_elses_status_edit_is_reverted),
    CXT(test_guard_refusal_holds_writes),
    CXT(test_last_moment_recheck_stops_the_write),
    CXT(test_conflict_is_retried),
    CXT(test_write_timeout_is_bounded_by_the_guard),
    CXT(test_stop_cancels_in_flight_writes),
    CXT(test_rate_limit_spaces_writes),
    CXT(test_teardown),
};
CXT_MAIN(cases)
