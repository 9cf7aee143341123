/* The elector's Kubernetes interface (election/election_kube.h) as the
 * daemon implements it over kube_client (daemon_elect_kube.c), against
 * kubesim: every operation, the error class, HTTP status and server message
 * of each failure the elector must tell apart, watches, cancelling, and a
 * close with calls still open (their wrappers must not leak: the sanitizer
 * and valgrind runs check it). */
#include "cx_kubesim.h"
#include "cxt_loop.h"
#include "cxtest.h"
#include "daemon_elect_kube.h"
#include "election_report.h"
#include "kube_config.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct got {
    int done;
    enum election_err_class cls;
    int http;
    char message[ELECTION_KUBE_MESSAGE_MAX];
    char rv[64];
    cJSON *object;
};

struct watch_log {
    int events;
    enum election_watch_ev last;
    char holder[64];
    int ended;
    enum election_err_class end_cls;
};

static struct event_base *base;
static struct cx_kubesim ks;
static struct kube_config kcfg;
static struct election_kube ek;
static struct election_kube_conn *conn;

static void on_done(struct election_kube_result *r, void *arg)
{
    struct got *g = arg;
    g->done++;
    g->cls = r->cls;
    g->http = r->http_status;
    snprintf(g->message, sizeof(g->message), "%s", r->message);
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r->object, "metadata"), "resourceVersion");
    snprintf(g->rv, sizeof(g->rv), "%s", cJSON_IsString(rv) ? rv->valuestring : "");
    cJSON_Delete(g->object);
    g->object = r->object; /* kept */
    r->object = NULL;
}

static void reset(struct got *g)
{
    cJSON_Delete(g->object);
    memset(g, 0, sizeof(*g));
}

static void wait_done(struct got *g)
{
    cxt_loop_until_flag(base, &g->done, 10000 * cxt_slowdown());
    REQUIRE(g->done == 1);
}

static cJSON *lease(const char *ns, const char *name, const char *holder, const char *rv)
{
    char buf[512];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{"
             "\"name\":\"%s\",\"namespace\":\"%s\"%s%s%s},\"spec\":{\"holderIdentity\":\"%s\"}}",
             name, ns, rv ? ",\"resourceVersion\":\"" : "", rv ? rv : "", rv ? "\"" : "", holder);
    return cJSON_Parse(buf);
}

static void sim(const char *method, const char *path, const char *body)
{
    long code = 0;
    const char *ct =
        strcmp(method, "PATCH") == 0 ? "application/merge-patch+json" : "application/json";
    free(cx_kubesim_request(&ks, method, path, body, ct, &code));
    REQUIRE(code >= 200 && code < 300);
}

static void fault(const char *rule)
{
    sim("POST", "/_sim/faults", rule);
}

static void setup(void)
{
    REQUIRE(cx_kubesim_start(&ks, NULL) == 0);
    char err[256];
    memset(&kcfg, 0, sizeof(kcfg));
    REQUIRE(kube_config_load_default(ks.kubeconfig, NULL, &kcfg, err, sizeof(err)) == 0);
    base = event_base_new();
    REQUIRE(base);
    daemon_elect_kube(&ek, &kcfg);
    conn = ek.ops->open(ek.impl, base, "id-1", "coxswain-election", err, sizeof(err));
    REQUIRE(conn);
}

static void teardown(void)
{
    ek.ops->close(conn);
    conn = NULL;
    event_base_free(base);
    base = NULL;
    kube_config_free(&kcfg);
    cx_kubesim_stop(&ks);
}

/* get / create / update and the classes the elector branches on. */
static void test_requests_and_classes(void)
{
    setup();
    struct got g = {0};
    REQUIRE(ek.ops->get(conn, ELECTION_RES_LEASES, "default", "lock", 2000, on_done, &g));
    wait_done(&g);
    CHECK_INT_EQ(g.cls, ELECTION_ERR_NOT_FOUND);
    CHECK_INT_EQ(g.http, 404);
    CHECK(strstr(g.message, "\"lock\" not found") != NULL);

    cJSON *obj = lease("default", "lock", "id-1", NULL);
    reset(&g);
    REQUIRE(ek.ops->create(conn, ELECTION_RES_LEASES, "default", obj, 2000, on_done, &g));
    cJSON_Delete(obj);
    wait_done(&g);
    CHECK_INT_EQ(g.cls, ELECTION_ERR_NONE);
    CHECK_INT_EQ(g.http, 201);
    REQUIRE(g.rv[0]);
    char rv1[64];
    snprintf(rv1, sizeof(rv1), "%s", g.rv);

    /* Created again: AlreadyExists, a class of its own. */
    obj = lease("default", "lock", "id-1", NULL);
    reset(&g);
    REQUIRE(ek.ops->create(conn, ELECTION_RES_LEASES, "default", obj, 2000, on_done, &g));
    cJSON_Delete(obj);
    wait_done(&g);
    CHECK_INT_EQ(g.cls, ELECTION_ERR_EXISTS);
    CHECK_INT_EQ(g.http, 409);

    /* Updated with the version read: the holder changes. */
    obj = lease("default", "lock", "id-2", rv1);
    reset(&g);
    REQUIRE(ek.ops->update(conn, ELECTION_RES_LEASES, "default", obj, 2000, on_done, &g));
    cJSON_Delete(obj);
    wait_done(&g);
    CHECK_INT_EQ(g.cls, ELECTION_ERR_NONE);
    CHECK_STR_EQ(cJSON_GetObjectItemCaseSensitive(
                     cJSON_GetObjectItemCaseSensitive(g.object, "spec"), "holderIdentity")
                     ->valuestring,
                 "id-2");

    /* ...and once more with the stale one: Conflict. */
    obj = lease("default", "lock", "id-3", rv1);
    reset(&g);
    REQUIRE(ek.ops->update(conn, ELECTION_RES_LEASES, "default", obj, 2000, on_done, &g));
    cJSON_Delete(obj);
    wait_done(&g);
    CHECK_INT_EQ(g.cls, ELECTION_ERR_CONFLICT);
    CHECK_INT_EQ(g.http, 409);

    /* A namespace that does not exist: 404 with the server's words. */
    obj = lease("nosuchns", "lock", "id-1", NULL);
    reset(&g);
    REQUIRE(ek.ops->create(conn, ELECTION_RES_LEASES, "nosuchns", obj, 2000, on_done, &g));
    cJSON_Delete(obj);
    wait_done(&g);
    CHECK_INT_EQ(g.cls, ELECTION_ERR_NOT_FOUND);
    CHECK(strstr(g.message, "nosuchns") != NULL);

    /* Injected answers: 403, 422, 429, 503, 500. (A closed connection is
     * not tried here: libcurl itself retries a request whose reused
     * connection died before an answer.) */
    static const struct {
        const char *rule;
        enum election_err_class cls;
        int http;
    } inj[] = {
        {"{\"verb\":\"get\",\"action\":\"fail\",\"code\":403,\"count\":1}", ELECTION_ERR_FORBIDDEN,
         403},
        {"{\"verb\":\"get\",\"action\":\"fail\",\"code\":422,\"count\":1}", ELECTION_ERR_INVALID,
         422},
        {"{\"verb\":\"get\",\"action\":\"fail\",\"code\":429,\"count\":1}", ELECTION_ERR_THROTTLED,
         429},
        {"{\"verb\":\"get\",\"action\":\"fail\",\"code\":503,\"count\":1}", ELECTION_ERR_SERVER,
         503},
        {"{\"verb\":\"get\",\"action\":\"fail\",\"code\":500,\"count\":1}", ELECTION_ERR_SERVER,
         500},
    };
    for (size_t i = 0; i < sizeof(inj) / sizeof(inj[0]); i++) {
        fault(inj[i].rule);
        reset(&g);
        REQUIRE(ek.ops->get(conn, ELECTION_RES_LEASES, "default", "lock", 2000, on_done, &g));
        wait_done(&g);
        if (g.cls != inj[i].cls || g.http != inj[i].http)
            cxt_fail(__FILE__, __LINE__, 0, "%s: class %s http %d", inj[i].rule,
                     election_err_class_name(g.cls), g.http);
        CHECK(g.message[0] != '\0');
    }
    /* A request that is never answered ends as a timeout of ours. */
    fault("{\"verb\":\"get\",\"action\":\"hang\",\"count\":1}");
    reset(&g);
    REQUIRE(ek.ops->get(conn, ELECTION_RES_LEASES, "default", "lock", 300, on_done, &g));
    wait_done(&g);
    CHECK_INT_EQ(g.cls, ELECTION_ERR_TIMEOUT);
    cJSON_Delete(g.object);
    teardown();
}

static void on_wev(void *arg, enum election_watch_ev type, cJSON *obj)
{
    struct watch_log *w = arg;
    w->events++;
    w->last = type;
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "spec"),
                                                      "holderIdentity");
    snprintf(w->holder, sizeof(w->holder), "%s", cJSON_IsString(h) ? h->valuestring : "");
    cJSON_Delete(obj);
}

static void on_wend(void *arg, const struct election_kube_result *why)
{
    struct watch_log *w = arg;
    w->ended++;
    w->end_cls = why->cls;
}

/* list + watch of the one object (field selector), an event for it and
 * none for its neighbour, then a 410 ends the watch as EXPIRED. */
static void test_list_watch(void)
{
    setup();
    sim("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        "{\"metadata\":{\"name\":\"lock\"},\"spec\":{\"holderIdentity\":\"a\"}}");
    struct got g = {0};
    REQUIRE(ek.ops->list(conn, ELECTION_RES_LEASES, "default", "metadata.name=lock", 2000, on_done,
                         &g));
    wait_done(&g);
    CHECK_INT_EQ(g.cls, ELECTION_ERR_NONE);
    REQUIRE(g.rv[0]);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(g.object, "items")), 1);

    struct watch_log w = {0};
    static const struct election_kube_watch_handlers h = {on_wev, on_wend};
    struct election_kube_watch *wa = ek.ops->watch(conn, ELECTION_RES_LEASES, "default",
                                                   "metadata.name=lock", g.rv, 60000, &h, &w);
    REQUIRE(wa);
    sim("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        "{\"metadata\":{\"name\":\"other\"},\"spec\":{\"holderIdentity\":\"x\"}}");
    sim("PATCH", "/apis/coordination.k8s.io/v1/namespaces/default/leases/lock",
        "{\"spec\":{\"holderIdentity\":\"b\"}}");
    cxt_loop_until_flag(base, &w.events, 5000 * cxt_slowdown());
    CHECK_INT_EQ(w.events, 1);
    CHECK_INT_EQ(w.last, ELECTION_WATCH_MODIFIED);
    CHECK_STR_EQ(w.holder, "b");
    /* Compaction, then the watch is ended: re-watching from the old
     * version is 410. */
    ek.ops->watch_stop(wa);
    sim("POST", "/_sim/compact", "{}");
    struct watch_log w2 = {0};
    wa = ek.ops->watch(conn, ELECTION_RES_LEASES, "default", "metadata.name=lock", g.rv, 60000, &h,
                       &w2);
    REQUIRE(wa);
    cxt_loop_until_flag(base, &w2.ended, 5000 * cxt_slowdown());
    CHECK_INT_EQ(w2.ended, 1);
    CHECK_INT_EQ(w2.end_cls, ELECTION_ERR_EXPIRED);
    cJSON_Delete(g.object);
    teardown();
}

/* A cancelled call never calls back; a close with a call and a watch still
 * open frees them without callbacks. */
static void test_cancel_and_close(void)
{
    setup();
    struct got g = {0};
    fault("{\"verb\":\"get\",\"action\":\"delay\",\"delay_ms\":200}");
    struct election_kube_call *c =
        ek.ops->get(conn, ELECTION_RES_LEASES, "default", "lock", 2000, on_done, &g);
    REQUIRE(c);
    ek.ops->cancel(c);
    struct got g2 = {0};
    REQUIRE(ek.ops->get(conn, ELECTION_RES_LEASES, "default", "lock", 2000, on_done, &g2));
    wait_done(&g2);
    CHECK_INT_EQ(g.done, 0);

    /* Left open on purpose: an Event (as the elector posts them, never
     * waited for), a delayed get and a watch. */
    cJSON *ev = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":"
                            "\"lock.1\",\"namespace\":\"default\"},\"reason\":\"LeaderElection\"}");
    struct got g3 = {0};
    REQUIRE(ek.ops->create(conn, ELECTION_RES_EVENTS, "default", ev, 2000, on_done, &g3));
    cJSON_Delete(ev);
    struct got g4 = {0};
    REQUIRE(ek.ops->get(conn, ELECTION_RES_LEASES, "default", "lock", 2000, on_done, &g4));
    struct watch_log w = {0};
    static const struct election_kube_watch_handlers h = {on_wev, on_wend};
    REQUIRE(ek.ops->watch(conn, ELECTION_RES_LEASES, "default", "metadata.name=lock", "", 60000, &h,
                          &w));
    struct timeval tv = {0, 20000};
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
    teardown();
    CHECK_INT_EQ(g4.done, 0);
    CHECK_INT_EQ(w.ended, 0);
    cJSON_Delete(g2.object);
    cJSON_Delete(g3.object);
}

static const struct cxt_case cases[] = {
    CXT(test_requests_and_classes),
    CXT(test_list_watch),
    CXT(test_cancel_and_close),
};
CXT_MAIN(cases)
