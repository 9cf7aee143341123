/* cx-test: quiet (a 60 s soak of two informers against kubesim: about 1 s of CPU in all) */
/* The filter's reason to exist, end to end at the level that exists today:
 * kubesim -> kube_informer -> filter -> a store + counting sink standing in
 * for the translator's input queue.
 *
 * Two lock objects are renewed every 2 s by a real peer
 * (lock_renewer.py: the Python client's own elector on a ConfigMap lock,
 * and a Lease), for 60 s (10 s under sanitizers). Two pipelines watch:
 *   P1 uses the filter's push-down (namespace path, labelSelector,
 *      fieldSelector metadata.name!=<lock>): the lock events never leave
 *      the server;
 *   P2 watches every namespace without selectors: the lock events arrive
 *      and the filter drops them (excluded-lock).
 * Neither sink may receive a single event during the soak. Then a real
 * ConfigMap data change must pass within one debounce window, and a
 * status-only write to a VirtualService must cost 0 events. */
#include "cx_json.h"
#include "cx_metrics.h"
#include "cxtest.h"
#include "filter.h"
#include "fx.h"
#include "kube_informer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS         "ctl"
#define LOCK_CM    "coxswain-leader"
#define LOCK_LEASE "coxswain"
/* One debounce window, as an upper bound on a loaded 2-core machine. */
#define DEBOUNCE_MS 1000

static const struct kube_resource CM = {"", "v1", "configmaps", "ConfigMap", 1};
static const struct kube_resource LEASE = {"coordination.k8s.io", "v1", "leases", "Lease", 1};
static const struct kube_resource VS = {"coxswain.dev", "v1", "virtualservices", "VirtualService",
                                        1};

/* ---- the store and the sink ------------------------------------------------- */

#define STORE_MAX 64

struct entry {
    char key[300];
    struct kube_obj *obj;
    uint64_t digest;
};

struct pipeline {
    const char *name;
    struct filter *f;
    struct entry store[STORE_MAX];
    int nstore;
    /* the sink: what the translator would have received */
    long passes;
    char last_key[300];
    long long last_pass_ms;
    enum filter_reason last_reason;
    long vs_updates_seen; /* informer update callbacks for VirtualServices */
};

struct handler_ctx {
    struct pipeline *p;
    const char *kind;
};

static struct entry *store_find(struct pipeline *p, const char *key)
{
    for (int i = 0; i < p->nstore; i++)
        if (strcmp(p->store[i].key, key) == 0)
            return &p->store[i];
    return NULL;
}

static void deliver(struct handler_ctx *h, enum filter_event_type t, struct kube_obj *o)
{
    struct pipeline *p = h->p;
    char key[300];
    snprintf(key, sizeof(key), "%s/%s", h->kind, o->key);
    struct entry *e = store_find(p, key);
    struct filter_event ev = {.type = t,
                              .kind = h->kind,
                              .obj = o->json,
                              .old = e ? e->obj->json : NULL,
                              .old_digest = e ? &e->digest : NULL};
    struct filter_decision d;
    if (filter_decide(p->f, &ev, &d) != FILTER_OK)
        printf("# %s: filter_decide failed\n", p->name);
    switch (d.action) {
    case FILTER_STORE_ADD:
        if (!e && p->nstore < STORE_MAX)
            e = &p->store[p->nstore++];
        if (e) {
            snprintf(e->key, sizeof(e->key), "%s", key);
            e->obj = kube_obj_ref(o);
            e->digest = d.digest;
        }
        break;
    case FILTER_STORE_UPDATE:
        kube_obj_unref(e->obj);
        e->obj = kube_obj_ref(o);
        e->digest = d.digest;
        break;
    case FILTER_STORE_DELETE:
        kube_obj_unref(e->obj);
        *e = p->store[--p->nstore];
        break;
    case FILTER_STORE_NONE:
        break;
    }
    if (d.verdict == FILTER_PASS) {
        p->passes++;
        snprintf(p->last_key, sizeof(p->last_key), "%s", key);
        p->last_pass_ms = fx_now_ms();
        p->last_reason = d.reason;
    }
}

static void on_add(void *ud, struct kube_obj *o)
{
    deliver(ud, FILTER_EV_ADDED, o);
}

static void on_update(void *ud, struct kube_obj *old, struct kube_obj *o)
{
    (void)old;
    struct handler_ctx *h = ud;
    if (strcmp(h->kind, "VirtualService") == 0)
        h->p->vs_updates_seen++;
    deliver(ud, FILTER_EV_MODIFIED, o);
}

static void on_delete(void *ud, struct kube_obj *o)
{
    deliver(ud, FILTER_EV_DELETED, o);
}

static const struct kube_informer_handlers H = {on_add, on_update, on_delete, NULL};

/* ---- fixture ------------------------------------------------------------------- */

static struct fx F;
static struct pipeline P1 = {.name = "P1"}, P2 = {.name = "P2"};
static struct handler_ctx hctx[5];
static struct kube_informer *inf[5]; /* P1: cm, lease, vs; P2: cm, lease */
static pid_t renewer;
static char count_file[300];
static int ready;

static int read_counts(long *cm, long *lease)
{
    FILE *f = fopen(count_file, "r");
    if (!f)
        return -1;
    int n = fscanf(f, "configmap=%ld lease=%ld", cm, lease);
    fclose(f);
    return n == 2 ? 0 : -1;
}

static struct kube_informer *start_informer(struct pipeline *p, int slot, const char *kind,
                                            const struct kube_resource *res, int pushdown)
{
    struct kube_informer_opts o = {.res = res, .name = kind};
    struct filter_pushdown pd;
    if (pushdown) {
        if (filter_pushdown(p->f, kind, &pd) != FILTER_OK)
            return NULL;
        o.ns = pd.namespace;
        o.label_selector = pd.label_selector;
        o.field_selector = *pd.field_selector ? pd.field_selector : NULL;
        printf("# %s %s: ns=%s labelSelector=%s fieldSelector=%s\n", p->name, kind,
               pd.namespace ? pd.namespace : "(all)", pd.label_selector, pd.field_selector);
    }
    hctx[slot] = (struct handler_ctx){p, kind};
    struct kube_informer *i = kube_informer_new(F.c, &o, &H, &hctx[slot]);
    if (i && kube_informer_start(i) != 0) {
        kube_informer_free(i);
        i = NULL;
    }
    return i;
}

static int all_synced(void)
{
    for (int i = 0; i < 5; i++)
        if (!inf[i] || !kube_informer_synced(inf[i]))
            return 0;
    return 1;
}

static void test_setup(void)
{
    REQUIRE(fx_start(&F) == 0);
    REQUIRE_INT_EQ(fx_post(&F, "/api/v1/namespaces",
                           "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":"
                           "\"" NS "\"}}"),
                   KUBE_OK);
    REQUIRE_INT_EQ(
        fx_post(&F, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
                "\"metadata\":{\"name\":\"virtualservices.coxswain.dev\"},\"spec\":{\"group\":"
                "\"coxswain.dev\",\"scope\":\"Namespaced\",\"names\":{\"plural\":"
                "\"virtualservices\",\"singular\":\"virtualservice\",\"kind\":\"VirtualService\","
                "\"listKind\":\"VirtualServiceList\"},\"versions\":[{\"name\":\"v1\",\"served\":"
                "true,\"storage\":true,\"subresources\":{\"status\":{}},\"schema\":{"
                "\"openAPIV3Schema\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":"
                "true}}}]}}"),
        KUBE_OK);
    REQUIRE_INT_EQ(fx_post(&F, "/api/v1/namespaces/" NS "/configmaps",
                           "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                           "\"app-config\",\"labels\":{\"app\":\"web\"}},\"data\":{\"k\":\"v1\"}}"),
                   KUBE_OK);
    enum kube_err_code vrc = KUBE_E_OTHER;
    for (int i = 0; i < 50 && vrc != KUBE_OK; i++) {
        vrc = fx_post(&F, "/apis/coxswain.dev/v1/namespaces/" NS "/virtualservices",
                      "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\","
                      "\"metadata\":{\"name\":\"web\"},\"spec\":{\"domains\":[\"web.example\"]}}");
        if (vrc != KUBE_OK)
            fx_run_for(&F, 100); /* the CRD is being established */
    }
    REQUIRE_INT_EQ(vrc, KUBE_OK);

    /* both filters know the locks; P1 watches only NS, P2 everything */
    struct filter_error err;
    P1.f = filter_new();
    P2.f = filter_new();
    REQUIRE(P1.f && P2.f);
    REQUIRE_INT_EQ(filter_set_namespaces(P1.f, NULL, NS, &err), FILTER_OK);
    struct filter *fs[2] = {P1.f, P2.f};
    for (int i = 0; i < 2; i++) {
        REQUIRE_INT_EQ(filter_add_lock(fs[i], "ConfigMap", NS, LOCK_CM), FILTER_OK);
        REQUIRE_INT_EQ(filter_add_lock(fs[i], "Lease", NS, LOCK_LEASE), FILTER_OK);
    }

    /* the renewers first, so the lock objects exist before the soak */
    snprintf(count_file, sizeof(count_file), "%s/renewals", F.dir);
    char script[512];
    const char *top = getenv("COXSWAIN_TOP");
    snprintf(script, sizeof(script), "%s/tests/integration/filters/lock_renewer.py",
             top && *top ? top : ".");
    renewer = fork();
    REQUIRE(renewer >= 0);
    if (renewer == 0) {
        execl("/usr/bin/python3", "python3", script, F.kubeconfig, NS, LOCK_CM, LOCK_LEASE,
              count_file, (char *)NULL);
        _exit(127);
    }

    inf[0] = start_informer(&P1, 0, "ConfigMap", &CM, 1);
    inf[1] = start_informer(&P1, 1, "Lease", &LEASE, 1);
    inf[2] = start_informer(&P1, 2, "VirtualService", &VS, 1);
    inf[3] = start_informer(&P2, 3, "ConfigMap", &CM, 0);
    inf[4] = start_informer(&P2, 4, "Lease", &LEASE, 0);
    long long deadline = fx_now_ms() + 20000;
    while (!all_synced() && fx_now_ms() < deadline)
        fx_run_for(&F, 50);
    REQUIRE(all_synced());

    /* wait until both locks have been renewed at least twice (the peer
     * is up and past its start) */
    long cm = 0, lease = 0;
    deadline = fx_now_ms() + 20000;
    while ((read_counts(&cm, &lease) != 0 || cm < 2 || lease < 2) && fx_now_ms() < deadline)
        fx_run_for(&F, 100);
    printf("# renewals before the soak: configmap=%ld lease=%ld\n", cm, lease);
    REQUIRE(cm >= 2 && lease >= 2);
    fx_run_for(&F, 300); /* let the last renewal's events arrive */
    /* what reached the sinks so far: the initial objects */
    CHECK(store_find(&P1, "ConfigMap/" NS "/app-config") != NULL);
    CHECK(store_find(&P1, "VirtualService/" NS "/web") != NULL);
    CHECK(store_find(&P1, "ConfigMap/" NS "/" LOCK_CM) == NULL);
    CHECK(store_find(&P2, "ConfigMap/" NS "/" LOCK_CM) == NULL);
    CHECK(store_find(&P2, "Lease/" NS "/" LOCK_LEASE) == NULL);
    ready = 1;
}

static void test_lock_renewals_cost_nothing(void)
{
    REQUIRE(ready);
    int soak_s = fx_sanitized() ? 10 : 60;
    long cm0, lease0, cm1, lease1;
    REQUIRE(read_counts(&cm0, &lease0) == 0);
    long p1 = P1.passes, p2 = P2.passes;
    uint64_t x_cm = filter_count(P2.f, "ConfigMap", FILTER_R_EXCLUDED_LOCK);
    uint64_t x_lease = filter_count(P2.f, "Lease", FILTER_R_EXCLUDED_LOCK);
    struct kube_informer_stats s_cm0, s_lease0, s_cm1, s_lease1;
    kube_informer_stats(inf[0], &s_cm0);
    kube_informer_stats(inf[1], &s_lease0);
    struct cx_metric *m = cx_counter("coxswain_filter_events_total", "", "kind,verdict,reason");
    REQUIRE(m);
    double metric0 = cx_metric_get(m, "ConfigMap", "drop", "excluded-lock");

    fx_run_for(&F, soak_s * 1000LL);

    REQUIRE(read_counts(&cm1, &lease1) == 0);
    long dcm = cm1 - cm0, dlease = lease1 - lease0;
    uint64_t dx_cm = filter_count(P2.f, "ConfigMap", FILTER_R_EXCLUDED_LOCK) - x_cm;
    uint64_t dx_lease = filter_count(P2.f, "Lease", FILTER_R_EXCLUDED_LOCK) - x_lease;
    kube_informer_stats(inf[0], &s_cm1);
    kube_informer_stats(inf[1], &s_lease1);
    printf("# %d s: renewals configmap=%ld lease=%ld; P2 dropped as excluded-lock: configmap=%llu "
           "lease=%llu; translator events P1=%ld P2=%ld\n",
           soak_s, dcm, dlease, (unsigned long long)dx_cm, (unsigned long long)dx_lease,
           P1.passes - p1, P2.passes - p2);

    /* the peer really renewed every ~2 s (a third of the nominal rate
     * leaves room for a loaded machine) */
    CHECK(dcm >= soak_s / 6);
    CHECK(dlease >= soak_s / 6);
    /* the translator heard nothing */
    CHECK_INT_EQ(P1.passes - p1, 0);
    CHECK_INT_EQ(P2.passes - p2, 0);
    /* P2 saw every renewal and dropped it as the lock (an event or two at
     * the window's edges may fall on either side) */
    CHECK((long)dx_cm >= dcm - 2 && (long)dx_cm <= dcm + 2);
    CHECK((long)dx_lease >= dlease - 2 && (long)dx_lease <= dlease + 2);
    CHECK(cx_metric_get(m, "ConfigMap", "drop", "excluded-lock") - metric0 >= (double)dx_cm);
    /* P1's push-down kept them on the server */
    CHECK_INT_EQ(s_cm1.updates - s_cm0.updates, 0);
    CHECK_INT_EQ(s_lease1.updates - s_lease0.updates, 0);
    CHECK_INT_EQ(filter_count(P1.f, NULL, FILTER_R_EXCLUDED_LOCK), 0);
}

static struct fx_res patched;

static void test_data_change_passes_promptly(void)
{
    REQUIRE(ready);
    long p1 = P1.passes, p2 = P2.passes;
    memset(&patched, 0, sizeof(patched));
    long long t0 = fx_now_ms();
    fx_wait(&F,
            kube_patch(F.c, &CM, NS, "app-config", KUBE_PATCH_MERGE, "{\"data\":{\"k\":\"v2\"}}", 0,
                       NULL, fx_on_res, &patched),
            &patched);
    cJSON_Delete(patched.obj);
    REQUIRE_INT_EQ(patched.code, KUBE_OK);
    long long deadline = t0 + DEBOUNCE_MS * 5;
    while ((P1.passes == p1 || P2.passes == p2) && fx_now_ms() < deadline)
        fx_run_for(&F, 5);
    long long lat1 = P1.last_pass_ms - t0, lat2 = P2.last_pass_ms - t0;
    printf("# data change reached the sinks after %lld ms (P1) and %lld ms (P2)\n", lat1, lat2);
    CHECK_INT_EQ(P1.passes - p1, 1);
    CHECK_INT_EQ(P2.passes - p2, 1);
    CHECK_STR_EQ(P1.last_key, "ConfigMap/" NS "/app-config");
    CHECK_STR_EQ(filter_reason_name(P1.last_reason), "changed");
    CHECK(lat1 >= 0 && lat1 < DEBOUNCE_MS);
    CHECK(lat2 >= 0 && lat2 < DEBOUNCE_MS);
    /* nothing else trails it */
    fx_run_for(&F, 300);
    CHECK_INT_EQ(P1.passes - p1, 1);
}

static void test_status_write_costs_nothing(void)
{
    REQUIRE(ready);
    struct fx_res got = {0};
    fx_wait(&F, kube_get(F.c, &VS, NS, "web", NULL, fx_on_res, &got), &got);
    REQUIRE_INT_EQ(got.code, KUBE_OK);
    cJSON_AddItemToObject(got.obj, "status",
                          cJSON_Parse("{\"state\":\"Accepted\",\"observedGeneration\":1}"));
    long p1 = P1.passes;
    long seen = P1.vs_updates_seen;
    uint64_t insig = filter_count(P1.f, "VirtualService", FILTER_R_INSIGNIFICANT);
    struct fx_res put = {0};
    fx_wait(&F, kube_update(F.c, &VS, NS, got.obj, 1, NULL, fx_on_res, &put), &put);
    cJSON_Delete(got.obj);
    REQUIRE_INT_EQ(put.code, KUBE_OK);
    CHECK(cJSON_GetObjectItemCaseSensitive(put.obj, "status") != NULL);
    cJSON_Delete(put.obj);
    /* the informer sees the write, the translator does not */
    long long deadline = fx_now_ms() + 5000;
    while (P1.vs_updates_seen == seen && fx_now_ms() < deadline)
        fx_run_for(&F, 5);
    fx_run_for(&F, 200);
    CHECK_INT_EQ(P1.vs_updates_seen - seen, 1);
    CHECK_INT_EQ(P1.passes - p1, 0);
    CHECK_INT_EQ(filter_count(P1.f, "VirtualService", FILTER_R_INSIGNIFICANT) - insig, 1);
    /* while a spec change still gets through */
    struct fx_res sp = {0};
    fx_wait(&F,
            kube_patch(F.c, &VS, NS, "web", KUBE_PATCH_MERGE,
                       "{\"spec\":{\"domains\":[\"web2.example\"]}}", 0, NULL, fx_on_res, &sp),
            &sp);
    cJSON_Delete(sp.obj);
    REQUIRE_INT_EQ(sp.code, KUBE_OK);
    deadline = fx_now_ms() + 5000;
    while (P1.passes == p1 && fx_now_ms() < deadline)
        fx_run_for(&F, 5);
    CHECK_INT_EQ(P1.passes - p1, 1);
    CHECK_STR_EQ(P1.last_key, "VirtualService/" NS "/web");
}

static void test_teardown(void)
{
    if (renewer > 0) {
        kill(renewer, SIGTERM);
        int st;
        waitpid(renewer, &st, 0);
        renewer = 0;
    }
    for (int i = 0; i < 5; i++) {
        if (inf[i])
            kube_informer_free(inf[i]);
        inf[i] = NULL;
    }
    struct pipeline *ps[2] = {&P1, &P2};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < ps[k]->nstore; i++)
            kube_obj_unref(ps[k]->store[i].obj);
        ps[k]->nstore = 0;
        filter_free(ps[k]->f);
        ps[k]->f = NULL;
    }
    fx_stop(&F);
    CHECK_INT_EQ(F.stop_status, 0); /* kubesim shut down cleanly */
}

static const struct cxt_case cases[] = {
    CXT(test_setup),
    CXT(test_lock_renewals_cost_nothing),
    CXT(test_data_change_passes_promptly),
    CXT(test_status_write_costs_nothing),
    CXT(test_teardown),
};
CXT_MAIN(cases)
