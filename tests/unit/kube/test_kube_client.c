/* kube_client against a scripted in-process HTTP server (evhttp on the same
 * event_base): paths and queries, headers, typed errors, the retry policy
 * (Retry-After, backoff, unknown outcomes), timeouts, token rotation,
 * connection reuse, watches (chunking, ERROR events, garbage, stalls,
 * stop from a callback), and two clients on two threads. */
#include "cx_json.h"
#include "cx_metrics.h"
#include "cx_time.h"
#include "cxtest.h"
#include "kube_client.h"
#include "kube_client_internal.h"
#include "kube_mock.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct kube_resource CM = {"", "v1", "configmaps", "ConfigMap", 1};
static const struct kube_resource VS = {"coxswain.dev", "v1", "virtualservices", "VirtualService",
                                        1};
static const struct kube_resource NSR = {"", "v1", "namespaces", "Namespace", 0};

static const char *CM_JSON = "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                             "\"foo\",\"namespace\":\"ns1\",\"resourceVersion\":\"5\"}}";
static const char *CONFLICT =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":"
    "\"Operation cannot be fulfilled on configmaps \\\"foo\\\": the object has been modified; "
    "please apply your changes to the latest version and try again\",\"reason\":\"Conflict\","
    "\"details\":{\"name\":\"foo\",\"kind\":\"configmaps\"},\"code\":409}";

/* ---- cases --------------------------------------------------------------------- */

static void test_get_paths_and_headers(void)
{
    struct fx f;
    struct kube_client_opts o = {.identity = "pod-a_1a2b3c4d"};
    fx_init(&f, &o);
    mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
    struct outcome r = {0};
    REQUIRE(kube_get(f.c, &CM, "ns1", "foo", NULL, on_result, &r) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r.done, 5000));
    CHECK_INT_EQ(r.res.err.code, KUBE_OK);
    CHECK_INT_EQ(r.res.http_status, 200);
    CHECK_INT_EQ(r.res.attempts, 1);
    CHECK_STR_EQ(cx_json_path_str(r.obj, "metadata", "resourceVersion", NULL), "5");
    CHECK(r.res.sent_mono_ns > 0 && r.res.done_mono_ns >= r.res.sent_mono_ns);
    cJSON_Delete(r.obj);
    CHECK_STR_EQ(f.m.reqs[0].method, "GET");
    CHECK_STR_EQ(f.m.reqs[0].uri, "/api/v1/namespaces/ns1/configmaps/foo");
    CHECK_STR_EQ(f.m.reqs[0].auth, "Bearer tok-1");
    CHECK_STR_CONTAINS(f.m.reqs[0].ua, "coxswain/");
    CHECK_STR_CONTAINS(f.m.reqs[0].ua, "pod-a_1a2b3c4d");
    CHECK_STR_EQ(kube_client_user_agent(f.c), f.m.reqs[0].ua);

    /* Custom resources and cluster-scoped resources. */
    struct outcome r2 = {0}, r3 = {0};
    REQUIRE(kube_get(f.c, &VS, "apps", "vs1", NULL, on_result, &r2) != NULL);
    REQUIRE(kube_get(f.c, &NSR, "ignored", "kube-system", NULL, on_result, &r3) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r2.done, 5000));
    REQUIRE(cxt_loop_until_flag(f.base, &r3.done, 5000));
    CHECK_INT_EQ(r2.res.err.code, KUBE_E_NOT_FOUND);
    CHECK_STR_EQ(r2.res.err.reason, "NotFound");
    CHECK_STR_EQ(f.m.reqs[1].uri, "/apis/coxswain.dev/v1/namespaces/apps/virtualservices/vs1");
    CHECK_STR_EQ(f.m.reqs[2].uri, "/api/v1/namespaces/kube-system");
    /* Refused at once: namespaced write without a namespace, no name. */
    CHECK(kube_get(f.c, &CM, NULL, "foo", NULL, on_result, &r) == NULL);
    CHECK(kube_get(f.c, &CM, "ns", NULL, NULL, on_result, &r) == NULL);
    fx_free(&f);
}

static void test_list_query_escaping(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    mock_push(&f.m,
              (struct step){.status = 200, .body = "{\"kind\":\"ConfigMapList\",\"items\":[]}"});
    mock_push(&f.m,
              (struct step){.status = 200, .body = "{\"kind\":\"ConfigMapList\",\"items\":[]}"});
    struct outcome r = {0}, r2 = {0};
    struct kube_list_opts lo = {.label_selector = "app in (a,b),!legacy",
                                .field_selector = "metadata.name=x",
                                .limit = 500,
                                .resource_version = "0",
                                .resource_version_match = "NotOlderThan"};
    REQUIRE(kube_list(f.c, &CM, NULL, &lo, NULL, on_result, &r) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r.done, 5000));
    CHECK_INT_EQ(r.res.err.code, KUBE_OK);
    CHECK_STR_EQ(f.m.reqs[0].uri,
                 "/api/v1/configmaps?labelSelector=app%20in%20%28a%2Cb%29%2C%21legacy"
                 "&fieldSelector=metadata.name%3Dx&limit=500&resourceVersion=0"
                 "&resourceVersionMatch=NotOlderThan");
    /* continue drops resourceVersion (the token pins it). */
    struct kube_list_opts lo2 = {.limit = 2, .continue_token = "abc=/+", .resource_version = "7"};
    REQUIRE(kube_list(f.c, &CM, "ns", &lo2, NULL, on_result, &r2) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r2.done, 5000));
    CHECK_STR_EQ(f.m.reqs[1].uri, "/api/v1/namespaces/ns/configmaps?limit=2&continue=abc%3D%2F%2B");
    cJSON_Delete(r.obj);
    cJSON_Delete(r2.obj);
    fx_free(&f);
}

static void test_conflict_is_typed_and_not_retried(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    mock_push(&f.m, (struct step){.status = 409, .body = CONFLICT});
    cJSON *obj = cx_json_parse(CM_JSON, strlen(CM_JSON));
    struct outcome r = {0};
    REQUIRE(kube_update(f.c, &CM, "ns1", obj, 0, NULL, on_result, &r) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r.done, 5000));
    CHECK_INT_EQ(r.res.err.code, KUBE_E_CONFLICT);
    CHECK_INT_EQ(r.res.http_status, 409);
    CHECK_INT_EQ(r.res.attempts, 1);
    CHECK_STR_CONTAINS(r.res.err.message, "the object has been modified");
    CHECK_STR_EQ(f.m.reqs[0].method, "PUT");
    CHECK_STR_EQ(f.m.reqs[0].ctype, "application/json");
    CHECK_STR_CONTAINS(f.m.reqs[0].body, "\"resourceVersion\":\"5\"");
    CHECK_INT_EQ(f.m.nreqs, 1);
    cJSON_Delete(obj);
    fx_free(&f);
}

struct presend_state {
    int calls;
    int refuse_from; /* refuse from this call on (1-based); 0 = never */
    int ends;        /* presend_end calls */
};

static int presend_check(void *arg)
{
    struct presend_state *ps = arg;
    ps->calls++;
    return ps->refuse_from && ps->calls >= ps->refuse_from;
}

static void presend_end(void *arg)
{
    struct presend_state *ps = arg;
    ps->ends++;
}

/* The pre-send hook runs right before each attempt's request line and
 * headers leave, and again before its body is handed over; a refusal means
 * no complete request reaches the server and the call ends as not
 * applied. */
static void test_presend_hook(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){.backoff_base_ms = 10});
    cJSON *obj = cx_json_parse(CM_JSON, strlen(CM_JSON));
    /* refused at once: no request at all */
    struct presend_state ps = {.refuse_from = 1};
    struct kube_req_opts ro = {
        .presend = presend_check, .presend_end = presend_end, .presend_arg = &ps};
    struct outcome r = {0};
    REQUIRE(kube_update(f.c, &CM, "ns1", obj, 0, &ro, on_result, &r) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r.done, 5000));
    CHECK_INT_EQ(r.res.err.code, KUBE_E_CANCELLED);
    CHECK_STR_EQ(r.res.err.reason, "RefusedBeforeSend");
    CHECK_INT_EQ(r.res.err.maybe_applied, 0);
    CHECK_INT_EQ(r.res.attempts, 1);
    CHECK_INT_EQ(ps.calls, 1);
    CHECK_INT_EQ(ps.ends, 0); /* never said yes: nothing to end */
    CHECK_INT_EQ(f.m.nreqs, 0);
    /* headers allowed, body refused: the server never gets a complete
     * request, the call ends as refused and not applied */
    struct presend_state ps1 = {.refuse_from = 2};
    ro.presend_arg = &ps1;
    struct outcome r1 = {0};
    REQUIRE(kube_update(f.c, &CM, "ns1", obj, 0, &ro, on_result, &r1) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r1.done, 5000));
    CHECK_INT_EQ(ps1.calls, 2);
    CHECK_INT_EQ(ps1.ends, 1); /* said yes once: ended once */
    CHECK_INT_EQ(r1.res.err.code, KUBE_E_CANCELLED);
    CHECK_STR_EQ(r1.res.err.reason, "RefusedBeforeSend");
    CHECK_INT_EQ(r1.res.err.maybe_applied, 0);
    CHECK_INT_EQ(r1.res.attempts, 1);
    CHECK_INT_EQ(f.m.nreqs, 0);
    /* allowed, then a 503 and a retry: the hook runs again before the
     * second attempt and refuses it, so the server saw exactly one PUT */
    mock_push(&f.m, (struct step){.status = 503, .body = "{}", .retry_after = "0"});
    struct presend_state ps2 = {.refuse_from = 3};
    ro.presend_arg = &ps2;
    struct outcome r2 = {0};
    REQUIRE(kube_update(f.c, &CM, "ns1", obj, 0, &ro, on_result, &r2) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r2.done, 5000));
    CHECK_INT_EQ(ps2.calls, 3);
    CHECK_INT_EQ(ps2.ends, 1); /* two attempts, one call: one end */
    CHECK_INT_EQ(r2.res.err.code, KUBE_E_CANCELLED);
    CHECK_INT_EQ(f.m.nreqs, 1);
    CHECK_STR_CONTAINS(f.m.reqs[0].body, "\"resourceVersion\":\"5\"");
    /* allowed throughout: sent and answered normally */
    mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
    struct presend_state ps3 = {0};
    ro.presend_arg = &ps3;
    struct outcome r3 = {0};
    REQUIRE(kube_update(f.c, &CM, "ns1", obj, 0, &ro, on_result, &r3) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r3.done, 5000));
    CHECK_INT_EQ(r3.res.err.code, KUBE_OK);
    CHECK_INT_EQ(ps3.calls, 2); /* before the headers, before the body */
    CHECK_INT_EQ(ps3.ends, 1);
    /* a call cancelled after its yes ends too */
    mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON, .delay_ms = 2000});
    struct presend_state ps4 = {0};
    ro.presend_arg = &ps4;
    struct outcome r4 = {0};
    struct kube_call *c4 = kube_update(f.c, &CM, "ns1", obj, 0, &ro, on_result, &r4);
    REQUIRE(c4 != NULL);
    int64_t until = cx_mono_ns() + 5 * CX_NS_PER_S;
    while (ps4.calls < 2 && cx_mono_ns() < until)
        event_base_loop(f.base, EVLOOP_ONCE);
    REQUIRE(ps4.calls == 2);
    CHECK_INT_EQ(ps4.ends, 0);
    kube_call_cancel(c4);
    CHECK_INT_EQ(ps4.ends, 1);
    CHECK(!r4.done);
    CHECK_INT_EQ(f.m.nreqs, 2);
    CHECK_STR_EQ(f.m.reqs[1].method, "PUT");
    CHECK_STR_CONTAINS(f.m.reqs[1].body, "\"resourceVersion\":\"5\"");
    cJSON_Delete(r3.obj);
    cJSON_Delete(obj);
    fx_free(&f);
}

static void test_429_retry_after_honoured(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){.backoff_base_ms = 10});
    mock_push(&f.m, (struct step){.status = 429,
                                  .body = "Too many requests, please try again later.",
                                  .retry_after = "1"});
    mock_push(&f.m, (struct step){.status = 201, .body = CM_JSON});
    cJSON *obj = cx_json_parse(CM_JSON, strlen(CM_JSON));
    struct outcome r = {0};
    int64_t t0 = cx_mono_ms();
    /* A create: 429 means not processed, so even a POST is repeated. */
    REQUIRE(kube_create(f.c, &CM, "ns1", obj, NULL, on_result, &r) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r.done, 5000));
    CHECK_INT_EQ(r.res.err.code, KUBE_OK);
    CHECK_INT_EQ(r.res.http_status, 201);
    CHECK_INT_EQ(r.res.attempts, 2);
    CHECK_INT_GE(r.t_done - t0, 950); /* Retry-After, not the 10 ms backoff */
    CHECK_INT_EQ(f.m.nreqs, 2);
    CHECK_STR_EQ(f.m.reqs[1].method, "POST");
    CHECK_STR_EQ(f.m.reqs[1].uri, "/api/v1/namespaces/ns1/configmaps");
    cJSON_Delete(obj);
    cJSON_Delete(r.obj);
    struct kube_client_stats st;
    kube_client_stats(f.c, &st);
    CHECK_INT_EQ(st.retries, 1);
    CHECK_INT_EQ(st.active_calls, 0);
    fx_free(&f);
}

static void test_500_reads_retried_blind_writes_not(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){.backoff_base_ms = 5, .max_attempts = 3});
    for (int i = 0; i < 3; i++)
        mock_push(&f.m, (struct step){.status = 500, .body = "boom"});
    struct outcome r = {0};
    REQUIRE(kube_get(f.c, &CM, "ns1", "foo", NULL, on_result, &r) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r.done, 5000));
    CHECK_INT_EQ(r.res.err.code, KUBE_E_INTERNAL);
    CHECK_INT_EQ(r.res.attempts, 3); /* bounded */
    CHECK_INT_EQ(f.m.nreqs, 3);

    /* A create without precondition: one attempt only. */
    mock_push(&f.m, (struct step){.status = 500, .body = "boom"});
    cJSON *obj = cx_json_parse(CM_JSON, strlen(CM_JSON));
    struct outcome w = {0};
    REQUIRE(kube_create(f.c, &CM, "ns1", obj, NULL, on_result, &w) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &w.done, 5000));
    CHECK_INT_EQ(w.res.err.code, KUBE_E_INTERNAL);
    CHECK_INT_EQ(w.res.attempts, 1);
    CHECK_INT_EQ(f.m.nreqs, 4);

    /* An update carrying resourceVersion is idempotent by precondition. */
    mock_push(&f.m, (struct step){.status = 502, .body = "bad gateway"});
    mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
    struct outcome u = {0};
    REQUIRE(kube_update(f.c, &CM, "ns1", obj, 0, NULL, on_result, &u) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &u.done, 5000));
    CHECK_INT_EQ(u.res.err.code, KUBE_OK);
    CHECK_INT_EQ(u.res.attempts, 2);
    cJSON_Delete(u.obj);

    /* Without resourceVersion it is not. */
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(obj, "metadata"), "resourceVersion");
    mock_push(&f.m, (struct step){.status = 503, .body = "unavailable"});
    struct outcome u2 = {0};
    REQUIRE(kube_update(f.c, &CM, "ns1", obj, 1, NULL, on_result, &u2) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &u2.done, 5000));
    CHECK_INT_EQ(u2.res.err.code, KUBE_E_UNAVAILABLE);
    CHECK_INT_EQ(u2.res.attempts, 1);
    CHECK_STR_EQ(f.m.reqs[f.m.nreqs - 1].uri, "/api/v1/namespaces/ns1/configmaps/foo/status");

    /* 503 with Retry-After: the server says it did not act; a POST too. */
    mock_push(&f.m, (struct step){.status = 503, .body = "later", .retry_after = "0"});
    mock_push(&f.m, (struct step){.status = 201, .body = CM_JSON});
    struct outcome w2 = {0};
    REQUIRE(kube_create(f.c, &CM, "ns1", obj, NULL, on_result, &w2) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &w2.done, 5000));
    CHECK_INT_EQ(w2.res.err.code, KUBE_OK);
    CHECK_INT_EQ(w2.res.attempts, 2);
    cJSON_Delete(w2.obj);
    cJSON_Delete(obj);
    fx_free(&f);
}

static void test_timeout_outcome_unknown(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){.backoff_base_ms = 5, .max_attempts = 2});
    mock_push(&f.m, (struct step){.status = 201, .body = CM_JSON, .delay_ms = 1500});
    cJSON *obj = cx_json_parse(CM_JSON, strlen(CM_JSON));
    struct outcome w = {0};
    struct kube_req_opts ro = {.timeout_ms = 200};
    int64_t t0 = cx_mono_ms();
    REQUIRE(kube_create(f.c, &CM, "ns1", obj, &ro, on_result, &w) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &w.done, 5000));
    CHECK_INT_EQ(w.res.err.code, KUBE_E_TIMEOUT);
    CHECK_INT_EQ(w.res.err.maybe_applied, 1);
    CHECK_INT_EQ(w.res.attempts, 1);
    CHECK_INT_LT(w.t_done - t0, 1200);

    /* A read is repeated after a timeout. */
    mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON, .delay_ms = 1500});
    mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
    struct outcome r = {0};
    REQUIRE(kube_get(f.c, &CM, "ns1", "foo", &ro, on_result, &r) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r.done, 5000));
    CHECK_INT_EQ(r.res.err.code, KUBE_OK);
    CHECK_INT_EQ(r.res.attempts, 2);
    cJSON_Delete(r.obj);
    cJSON_Delete(obj);
    fx_free(&f);
}

static void test_deadline_bounds_retries(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){.max_attempts = 10});
    for (int i = 0; i < 10; i++)
        mock_push(&f.m, (struct step){.status = 429, .body = "x", .retry_after = "1"});
    struct outcome r = {0};
    struct kube_req_opts ro = {.deadline_ms = 1500};
    int64_t t0 = cx_mono_ms();
    REQUIRE(kube_get(f.c, &CM, "ns1", "foo", &ro, on_result, &r) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r.done, 5000));
    CHECK_INT_EQ(r.res.err.code, KUBE_E_TOO_MANY);
    CHECK_INT_EQ(r.res.attempts, 2); /* at 0 s and 1 s; a third would pass 1.5 s */
    CHECK_INT_LT(r.t_done - t0, 1500);
    fx_free(&f);
}

/* A retry whose timer fires after the call's deadline (the process was
 * paused, the loop stalled) is not sent: the call ends in a timeout. */
static void test_late_retry_past_deadline_not_sent(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){.max_attempts = 10});
    mock_push(&f.m, (struct step){.status = 429, .body = "x", .retry_after = "1"});
    mock_push(&f.m, (struct step){.status = 201, .body = CM_JSON});
    cJSON *obj = cx_json_parse(CM_JSON, strlen(CM_JSON));
    struct outcome r = {0};
    struct kube_req_opts ro = {.deadline_ms = 1500};
    REQUIRE(kube_create(f.c, &CM, "ns1", obj, &ro, on_result, &r) != NULL);
    int never = 0;
    int64_t end = cx_mono_ms() + 5000;
    while (f.m.nreqs < 1 && cx_mono_ms() < end)
        cxt_loop_until_flag(f.base, &never, 10);
    /* let the client take the 429 in (the retry then waits 1 s) */
    int settle = 150 * cxt_slowdown();
    cxt_loop_until_flag(f.base, &never, settle < 600 ? settle : 600);
    REQUIRE_INT_EQ(f.m.nreqs, 1);
    REQUIRE(!r.done);
    usleep(1600 * 1000); /* stalled past the deadline */
    REQUIRE(cxt_loop_until_flag(f.base, &r.done, 5000));
    CHECK_INT_EQ(r.res.err.code, KUBE_E_TIMEOUT);
    CHECK_INT_EQ(r.res.err.maybe_applied, 0); /* a 429 was not processed */
    CHECK_INT_EQ(r.res.attempts, 1);
    cxt_loop_until_flag(f.base, &never, 100);
    CHECK_INT_EQ(f.m.nreqs, 1); /* the retry never left */
    cJSON_Delete(obj);
    cJSON_Delete(r.obj);
    fx_free(&f);
}

static void test_connection_refused_not_sent(void)
{
    struct fx f;
    fx_init(&f, NULL);
    free(f.cfg.server);
    f.cfg.server = strdup("http://127.0.0.1:1"); /* nothing listens there */
    fx_client(&f, &(struct kube_client_opts){.backoff_base_ms = 5, .max_attempts = 3});
    cJSON *obj = cx_json_parse(CM_JSON, strlen(CM_JSON));
    struct outcome w = {0};
    REQUIRE(kube_create(f.c, &CM, "ns1", obj, NULL, on_result, &w) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &w.done, 5000));
    CHECK_INT_EQ(w.res.err.code, KUBE_E_TRANSPORT);
    CHECK_INT_EQ(w.res.err.maybe_applied, 0);
    CHECK_INT_EQ(w.res.attempts, 3); /* never left: safe to repeat even a POST */
    CHECK_INT_EQ(w.res.http_status, 0);
    cJSON_Delete(obj);
    fx_free(&f);
}

static void test_broken_connection(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){.backoff_base_ms = 5, .max_attempts = 3});
    /* On a fresh connection (curl itself resends a request once when a
     * reused keep-alive connection turns out dead before any answer, as
     * every HTTP/1.1 client does), a write cut off after sending has an
     * unknown outcome and is not repeated. */
    mock_push(&f.m, (struct step){.act = ACT_CLOSE});
    struct outcome d = {0};
    REQUIRE(kube_delete(f.c, &CM, "ns1", "foo", NULL, NULL, NULL, on_result, &d) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &d.done, 5000));
    CHECK_INT_EQ(d.res.err.code, KUBE_E_TRANSPORT);
    CHECK_INT_EQ(d.res.err.maybe_applied, 1);
    CHECK_INT_EQ(d.res.attempts, 1);
    CHECK_INT_EQ(f.m.nreqs, 1);

    /* A read is repeated. */
    mock_push(&f.m, (struct step){.act = ACT_CLOSE});
    mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
    struct outcome r = {0};
    REQUIRE(kube_get(f.c, &CM, "ns1", "foo", NULL, on_result, &r) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r.done, 5000));
    CHECK_INT_EQ(r.res.err.code, KUBE_OK);
    CHECK_INT_EQ(r.res.attempts, 2);
    cJSON_Delete(r.obj);
    fx_free(&f);
}

static void test_delete_and_patch_bodies(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){.backoff_base_ms = 5});
    mock_push(&f.m, (struct step){.status = 500, .body = "x"});
    mock_push(&f.m,
              (struct step){.status = 200, .body = "{\"kind\":\"Status\",\"status\":\"Success\"}"});
    struct outcome d = {0};
    REQUIRE(kube_delete(f.c, &CM, "ns1", "foo", "uid-1", "42", NULL, on_result, &d) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &d.done, 5000));
    CHECK_INT_EQ(d.res.err.code, KUBE_OK);
    CHECK_INT_EQ(d.res.attempts, 2); /* preconditions make it idempotent */
    CHECK_STR_EQ(f.m.reqs[0].method, "DELETE");
    CHECK_STR_EQ(f.m.reqs[0].body,
                 "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
                 "\"preconditions\":{\"uid\":\"uid-1\",\"resourceVersion\":\"42\"}}");
    cJSON_Delete(d.obj);

    const struct {
        enum kube_patch_type t;
        const char *patch;
        const char *ctype;
        int status;
        int idem;
    } rows[] = {
        {KUBE_PATCH_MERGE, "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}",
         "application/merge-patch+json", 0, 0},
        {KUBE_PATCH_JSON,
         "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"5\"},"
         "{\"op\":\"replace\",\"path\":\"/data/k\",\"value\":\"v\"}]",
         "application/json-patch+json", 1, 1},
        {KUBE_PATCH_STRATEGIC, "{\"data\":{\"k\":\"v\"}}", "application/strategic-merge-patch+json",
         0, 0},
        {KUBE_PATCH_MERGE, "{\"metadata\":{\"resourceVersion\":\"5\"},\"status\":{}}",
         "application/merge-patch+json", 1, 1},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        int base = f.m.nreqs;
        mock_push(&f.m, (struct step){.status = 504, .body = "x"});
        mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
        struct outcome p = {0};
        REQUIRE(kube_patch(f.c, &VS, "apps", "vs1", rows[i].t, rows[i].patch, rows[i].status, NULL,
                           on_result, &p) != NULL);
        REQUIRE(cxt_loop_until_flag(f.base, &p.done, 5000));
        CHECK_STR_EQ(f.m.reqs[base].method, "PATCH");
        CHECK_STR_EQ(f.m.reqs[base].ctype, rows[i].ctype);
        CHECK_STR_EQ(f.m.reqs[base].body, rows[i].patch);
        CHECK_STR_EQ(f.m.reqs[base].uri,
                     rows[i].status
                         ? "/apis/coxswain.dev/v1/namespaces/apps/virtualservices/vs1/status"
                         : "/apis/coxswain.dev/v1/namespaces/apps/virtualservices/vs1");
        CHECK_INT_EQ(p.res.attempts, rows[i].idem ? 2 : 1);
        CHECK_INT_EQ(p.res.err.code, rows[i].idem ? KUBE_OK : KUBE_E_SERVER_TIMEOUT);
        if (!rows[i].idem)
            f.m.next++; /* skip the unused 200 */
        cJSON_Delete(p.obj);
    }
    fx_free(&f);
}

static char token_path[256];

static void write_token(const char *t)
{
    char tmp[300];
    snprintf(tmp, sizeof(tmp), "%s.tmp", token_path);
    FILE *fp = fopen(tmp, "w");
    fprintf(fp, "%s\n", t);
    fclose(fp);
    rename(tmp, token_path); /* atomic, like a projected volume */
}

static void test_token_rotation(void)
{
    snprintf(token_path, sizeof(token_path), "/tmp/cx_kube_token_%d", (int)getpid());
    write_token("old");
    struct fx f;
    fx_init(&f, NULL);
    free(f.cfg.token);
    f.cfg.token = NULL;
    f.cfg.token_file = strdup(token_path);
    fx_client(&f, &(struct kube_client_opts){.token_reread_ms = 300});
    const char *unauth = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                         "\"Failure\",\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\","
                         "\"code\":401}";
    mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
    struct outcome r = {0};
    REQUIRE(kube_get(f.c, &CM, "ns1", "foo", NULL, on_result, &r) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r.done, 5000));
    CHECK_STR_EQ(f.m.reqs[0].auth, "Bearer old");
    cJSON_Delete(r.obj);

    /* Rotated on disk, server now refuses the old token: one 401, then the
     * client re-reads the file and the retry carries the new token. */
    write_token("new");
    mock_push(&f.m, (struct step){.status = 401, .body = unauth});
    mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
    struct outcome r2 = {0};
    REQUIRE(kube_get(f.c, &CM, "ns1", "foo", NULL, on_result, &r2) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r2.done, 5000));
    CHECK_INT_EQ(r2.res.err.code, KUBE_OK);
    CHECK_INT_EQ(r2.res.attempts, 2);
    CHECK_STR_EQ(f.m.reqs[2].auth, "Bearer new");
    cJSON_Delete(r2.obj);

    /* Periodic re-read without any 401. */
    write_token("newer");
    usleep(350 * 1000);
    mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
    struct outcome r3 = {0};
    REQUIRE(kube_get(f.c, &CM, "ns1", "foo", NULL, on_result, &r3) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r3.done, 5000));
    CHECK_STR_EQ(f.m.reqs[3].auth, "Bearer newer");
    cJSON_Delete(r3.obj);

    /* A persistent 401 is returned after one re-read, not looped on. */
    mock_push(&f.m, (struct step){.status = 401, .body = unauth});
    mock_push(&f.m, (struct step){.status = 401, .body = unauth});
    struct outcome r4 = {0};
    REQUIRE(kube_get(f.c, &CM, "ns1", "foo", NULL, on_result, &r4) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r4.done, 5000));
    CHECK_INT_EQ(r4.res.err.code, KUBE_E_UNAUTHORIZED);
    CHECK_INT_EQ(r4.res.attempts, 2);
    fx_free(&f);
    unlink(token_path);
}

static void test_connection_reuse(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    for (int i = 0; i < 5; i++) {
        mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
        struct outcome r = {0};
        REQUIRE(kube_get(f.c, &CM, "ns1", "foo", NULL, on_result, &r) != NULL);
        REQUIRE(cxt_loop_until_flag(f.base, &r.done, 5000));
        cJSON_Delete(r.obj);
    }
    for (int i = 1; i < 5; i++)
        CHECK_INT_EQ(f.m.reqs[i].port, f.m.reqs[0].port);
    fx_free(&f);
}

struct chain {
    struct kube_client *c;
    int left, done;
};

static void on_chain(struct kube_result *res, void *ud)
{
    struct chain *ch = ud;
    (void)res;
    /* A new request started from inside a callback. */
    if (--ch->left > 0)
        kube_get(ch->c, &CM, "ns1", "foo", NULL, on_chain, ch);
    else
        ch->done = 1;
}

static void test_request_from_callback_and_cancel(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    for (int i = 0; i < 3; i++)
        mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
    struct chain ch = {.c = f.c, .left = 3};
    REQUIRE(kube_get(f.c, &CM, "ns1", "foo", NULL, on_chain, &ch) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &ch.done, 5000));
    CHECK_INT_EQ(f.m.nreqs, 3);

    mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON, .delay_ms = 300});
    struct outcome r = {0};
    struct kube_call *call = kube_get(f.c, &CM, "ns1", "foo", NULL, on_result, &r);
    REQUIRE(call != NULL);
    int never = 0;
    cxt_loop_until_flag(f.base, &never, 100);
    kube_call_cancel(call);
    cxt_loop_until_flag(f.base, &never, 400);
    CHECK_INT_EQ(r.done, 0);
    struct kube_client_stats st;
    kube_client_stats(f.c, &st);
    CHECK_INT_EQ(st.active_calls, 0);
    /* Free with a call in flight: no callback, no leak (valgrind/ASan). */
    mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON, .delay_ms = 300});
    REQUIRE(kube_get(f.c, &CM, "ns1", "foo", NULL, on_result, &r) != NULL);
    cxt_loop_until_flag(f.base, &never, 50);
    fx_free(&f);
    CHECK_INT_EQ(r.done, 0);
}

/* ---- watches ------------------------------------------------------------------- */

struct wrec {
    int n;
    int types[32];
    char rv[32][16];
    int ended;
    struct kube_error err;
    struct kube_watch *self;
    int stop_at; /* stop from inside on_event after this many */
};

static void w_event(void *ud, enum kube_event_type t, cJSON *obj)
{
    struct wrec *w = ud;
    if (w->n < 32) {
        w->types[w->n] = t;
        const char *rv = cx_json_path_str(obj, "metadata", "resourceVersion", NULL);
        snprintf(w->rv[w->n], sizeof(w->rv[0]), "%s", rv ? rv : "");
    }
    w->n++;
    cJSON_Delete(obj);
    if (w->stop_at && w->n == w->stop_at) {
        kube_watch_stop(w->self);
        w->ended = 1;
    }
}

static void w_end(void *ud, const struct kube_error *err)
{
    struct wrec *w = ud;
    w->ended = 1;
    w->err = *err;
}

static const struct kube_watch_handlers WH = {w_event, w_end};

#define EV(t, rv)                                                                                  \
    "{\"type\":\"" t "\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"" rv "\"}" \
    "}}"

static void test_watch_chunks_and_clean_end(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    /* Events cut mid-line and several per chunk, CRLF in one. */
    mock_push(&f.m,
              (struct step){
                  .act = ACT_WATCH,
                  .chunks = {EV("ADDED", "11") "\n{\"type\":\"MODI",
                             "FIED\",\"object\":{\"metadata\":{\"resourceVersion\":\"12\"}}}\r\n",
                             EV("BOOKMARK", "15") "\n" EV("DELETED", "16") "\n"},
                  .chunk_ms = 20});
    struct wrec w = {0};
    struct kube_watch_opts o = {.resource_version = "10",
                                .allow_bookmarks = 1,
                                .timeout_seconds = 30,
                                .label_selector = "a=b"};
    REQUIRE(kube_watch_start(f.c, &CM, "ns1", &o, &WH, &w) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &w.ended, 5000));
    CHECK_INT_EQ(w.err.code, KUBE_OK);
    REQUIRE_INT_EQ(w.n, 4);
    CHECK_INT_EQ(w.types[0], KUBE_EV_ADDED);
    CHECK_INT_EQ(w.types[1], KUBE_EV_MODIFIED);
    CHECK_INT_EQ(w.types[2], KUBE_EV_BOOKMARK);
    CHECK_INT_EQ(w.types[3], KUBE_EV_DELETED);
    CHECK_STR_EQ(w.rv[1], "12");
    CHECK_STR_EQ(w.rv[3], "16");
    CHECK_STR_EQ(f.m.reqs[0].uri, "/api/v1/namespaces/ns1/configmaps?watch=1&labelSelector=a%3Db"
                                  "&resourceVersion=10&allowWatchBookmarks=true&timeoutSeconds=30");
    struct kube_client_stats st;
    kube_client_stats(f.c, &st);
    CHECK_INT_EQ(st.active_watches, 0);
    fx_free(&f);
}

static void test_watch_error_event_and_garbage(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    mock_push(&f.m, (struct step){.act = ACT_WATCH,
                                  .hang = 1,
                                  .chunks = {EV("ADDED", "11") "\n",
                                             "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\","
                                             "\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                                             "\"Failure\",\"message\":\"too old resource version: "
                                             "1 (5)\",\"reason\":\"Expired\",\"code\":410}}\n"}});
    struct wrec w = {0};
    REQUIRE(kube_watch_start(f.c, &CM, NULL, &(struct kube_watch_opts){.resource_version = "1"},
                             &WH, &w) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &w.ended, 5000));
    CHECK_INT_EQ(w.n, 1); /* the ERROR is not an event */
    CHECK_INT_EQ(w.err.code, KUBE_E_EXPIRED);
    CHECK_STR_EQ(w.err.reason, "Expired");
    CHECK_STR_EQ(f.m.reqs[0].uri, "/api/v1/configmaps?watch=1&resourceVersion=1");

    mock_push(&f.m, (struct step){.act = ACT_WATCH,
                                  .hang = 1,
                                  .chunks = {EV("ADDED", "11") "\n<html>oops</html>\n" EV(
                                      "ADDED", "12") "\n"}});
    struct wrec g = {0};
    REQUIRE(kube_watch_start(f.c, &CM, NULL, NULL, &WH, &g) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &g.ended, 5000));
    CHECK_INT_EQ(g.n, 1);
    CHECK_INT_EQ(g.err.code, KUBE_E_DECODE);

    /* A non-200 answer: the Status becomes the error. */
    mock_push(&f.m, (struct step){.status = 403,
                                  .body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":"
                                          "\"forbidden\",\"reason\":\"Forbidden\",\"code\":403}"});
    struct wrec e = {0};
    REQUIRE(kube_watch_start(f.c, &CM, NULL, NULL, &WH, &e) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &e.ended, 5000));
    CHECK_INT_EQ(e.n, 0);
    CHECK_INT_EQ(e.err.code, KUBE_E_FORBIDDEN);
    CHECK_INT_EQ(e.err.http_status, 403);
    fx_free(&f);
}

static void test_watch_stall_and_stop(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .hang = 1, .chunks = {EV("ADDED", "11") "\n"}});
    struct wrec w = {0};
    int64_t t0 = cx_mono_ms();
    REQUIRE(kube_watch_start(f.c, &CM, "ns1", &(struct kube_watch_opts){.stall_ms = 300}, &WH,
                             &w) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &w.ended, 5000));
    CHECK_INT_EQ(w.n, 1);
    CHECK_INT_EQ(w.err.code, KUBE_E_TIMEOUT);
    CHECK_INT_GE(cx_mono_ms() - t0, 280);
    CHECK_INT_LT(cx_mono_ms() - t0, 2500);

    /* Stop from inside on_event: nothing after, no on_end. */
    mock_push(&f.m, (struct step){.act = ACT_WATCH,
                                  .hang = 1,
                                  .chunks = {EV("ADDED", "1") "\n" EV("ADDED", "2") "\n" EV(
                                      "ADDED", "3") "\n"}});
    struct wrec s = {.stop_at = 2};
    s.self = kube_watch_start(f.c, &CM, "ns1", NULL, &WH, &s);
    REQUIRE(s.self != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &s.ended, 5000));
    int never = 0;
    cxt_loop_until_flag(f.base, &never, 100);
    CHECK_INT_EQ(s.n, 2);
    CHECK_INT_EQ(s.err.code, KUBE_OK); /* on_end never ran: err untouched */
    struct kube_client_stats st;
    kube_client_stats(f.c, &st);
    CHECK_INT_EQ(st.active_watches, 0);

    /* Stop from outside while hanging, then free the client with another
     * watch still open. */
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .hang = 1, .chunks = {EV("ADDED", "1") "\n"}});
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .hang = 1, .chunks = {EV("ADDED", "1") "\n"}});
    struct wrec a = {0}, b = {0};
    struct kube_watch *wa = kube_watch_start(f.c, &CM, "ns1", NULL, &WH, &a);
    REQUIRE(kube_watch_start(f.c, &CM, "ns1", NULL, &WH, &b) != NULL);
    cxt_loop_until_flag(f.base, &never, 200);
    CHECK_INT_EQ(a.n, 1);
    kube_watch_stop(wa);
    fx_free(&f);
    CHECK_INT_EQ(a.ended + b.ended, 0);
}

static void test_watch_large_event_across_many_chunks(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    /* ~300 KB event: arrives in many curl writes. */
    size_t big = 300000;
    char *ev = malloc(big + 200);
    int n = snprintf(ev, 200,
                     "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"},"
                     "\"data\":{\"k\":\"");
    memset(ev + n, 'x', big);
    snprintf(ev + n + big, 200, "\"}}}\n");
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .chunks = {ev}});
    struct wrec w = {0};
    REQUIRE(kube_watch_start(f.c, &CM, "ns1", NULL, &WH, &w) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &w.ended, 5000));
    CHECK_INT_EQ(w.n, 1);
    CHECK_STR_EQ(w.rv[0], "9");
    CHECK_INT_EQ(w.err.code, KUBE_OK);
    /* The same with a cap below it: a decode error, not a crash. */
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .chunks = {ev}});
    struct wrec w2 = {0};
    REQUIRE(kube_watch_start(f.c, &CM, "ns1", &(struct kube_watch_opts){.max_event = 100000}, &WH,
                             &w2) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &w2.ended, 5000));
    CHECK_INT_EQ(w2.n, 0);
    CHECK_INT_EQ(w2.err.code, KUBE_E_DECODE);
    free(ev);
    fx_free(&f);
}

static void test_watch_backlog_pauses_and_resumes(void)
{
    /* 20,000 events (~2 MB) at once with a 16 KiB event cap: the client
     * must pause curl while it parses and resume without losing bytes. */
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    size_t n = 20000;
    char *big = malloc(n * 120);
    size_t off = 0;
    for (size_t i = 0; i < n; i++)
        off += (size_t)snprintf(big + off, 120,
                                "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\","
                                "\"resourceVersion\":\"%zu\"}}}\n",
                                i + 1);
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .chunks = {big}});
    struct wrec w = {0};
    REQUIRE(kube_watch_start(f.c, &CM, "ns1", &(struct kube_watch_opts){.max_event = 16384}, &WH,
                             &w) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &w.ended, 10000));
    CHECK_INT_EQ(w.err.code, KUBE_OK);
    CHECK_INT_EQ(w.n, (long long)n);
    free(big);
    fx_free(&f);
}

/* A burst (here ~2.4 MB of events at once, as a streaming list's initial
 * events come) grows the watch's receive buffer; once delivered, an open,
 * idle watch does not keep it. */
static void test_watch_burst_buffer_is_not_kept(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    size_t n = 20000;
    char *big = malloc(n * 120);
    size_t off = 0;
    for (size_t i = 0; i < n; i++)
        off += (size_t)snprintf(big + off, 120,
                                "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\","
                                "\"resourceVersion\":\"%zu\"}}}\n",
                                i + 1);
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .hang = 1, .chunks = {big}});
    struct wrec w = {0};
    struct kube_watch *kw = kube_watch_start(f.c, &CM, "ns1", NULL, &WH, &w);
    REQUIRE(kw != NULL);
    int64_t end = cx_mono_ms() + 30000; /* valgrind on a loaded machine */
    int never = 0;
    size_t most = 0;
    while (w.n < (int)n && !w.ended && cx_mono_ms() < end) {
        cxt_loop_until_flag(f.base, &never, 1);
        if (kw->pending.cap > most)
            most = kw->pending.cap;
    }
    REQUIRE_INT_EQ(w.n, (long long)n);
    CHECK(!w.ended); /* still open */
    printf("# receive buffer: %zu bytes at most, %zu now\n", most, kw->pending.cap);
    CHECK(kw->pending.len == 0);
    CHECK(kw->pending.cap <= (size_t)64 << 10);
    kube_watch_stop(kw);
    free(big);
    fx_free(&f);
}

/* ---- the request limit ------------------------------------------------------------- */

static void wait_nreqs(struct fx *f, int n, int ms)
{
    int64_t end = cx_mono_ms() + ms;
    int never = 0;
    while (f->m.nreqs < n && cx_mono_ms() < end)
        cxt_loop_until_flag(f->base, &never, 20);
}

/* 8 requests at once through a client limited to 10/s with a bucket of 5:
 * the 3 tokens above the reserve go at once, the rest one per 100 ms, in
 * the order they were made; a priority client could take the reserve. */
static void test_limit_spaces_requests_in_order(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){.qps = 10, .burst = 5});
    struct outcome r[8];
    memset(r, 0, sizeof(r));
    int64_t t0 = cx_mono_ms();
    for (int i = 0; i < 8; i++) {
        mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
        char name[16];
        snprintf(name, sizeof(name), "o%d", i);
        REQUIRE(kube_get(f.c, &CM, "ns1", name, NULL, on_result, &r[i]) != NULL);
    }
    struct kube_client_stats st;
    kube_client_stats(f.c, &st);
    CHECK_INT_EQ(st.queued, 5);
    REQUIRE(cxt_loop_until_flag(f.base, &r[7].done, 5000));
    for (int i = 0; i < 8; i++) {
        CHECK(r[i].done);
        CHECK_INT_EQ(r[i].res.err.code, KUBE_OK);
        cJSON_Delete(r[i].obj);
        char want[64];
        snprintf(want, sizeof(want), "/api/v1/namespaces/ns1/configmaps/o%d", i);
        CHECK_STR_EQ(f.m.reqs[i].uri, want);
    }
    CHECK_INT_LT(r[2].t_done - t0, 150);
    CHECK_INT_GE(r[3].t_done - t0, 80);
    /* 5 waited for tokens arriving every 100 ms. */
    CHECK_INT_GE(r[7].t_done - t0, 450);
    kube_client_stats(f.c, &st);
    CHECK_INT_EQ(st.queued, 0);
    fx_free(&f);

    fx_init(&f, &(struct kube_client_opts){.qps = 10, .burst = 5, .priority = 1});
    memset(r, 0, sizeof(r));
    for (int i = 0; i < 5; i++) {
        mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
        REQUIRE(kube_get(f.c, &CM, "ns1", "p", NULL, on_result, &r[i]) != NULL);
    }
    kube_client_stats(f.c, &st);
    CHECK_INT_EQ(st.queued, 0);
    REQUIRE(cxt_loop_until_flag(f.base, &r[4].done, 5000));
    for (int i = 0; i < 5; i++)
        cJSON_Delete(r[i].obj);
    fx_free(&f);
}

/* A queued call can be cancelled (no callback, the queue goes on), and one
 * whose deadline passes while it waits ends in a timeout, unsent. */
static void test_limit_queue_cancel_and_deadline(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){.qps = 2, .burst = 3});
    struct outcome a = {0}, b = {0}, c = {0}, d = {0};
    mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
    mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
    REQUIRE(kube_get(f.c, &CM, "ns1", "a", NULL, on_result, &a) != NULL); /* the one token */
    struct kube_call *cb = kube_get(f.c, &CM, "ns1", "b", NULL, on_result, &b);
    REQUIRE(cb != NULL);
    REQUIRE(kube_get(f.c, &CM, "ns1", "c", &(struct kube_req_opts){.deadline_ms = 200}, on_result,
                     &c) != NULL);
    REQUIRE(kube_get(f.c, &CM, "ns1", "d", NULL, on_result, &d) != NULL);
    kube_call_cancel(cb);
    REQUIRE(cxt_loop_until_flag(f.base, &d.done, 5000));
    CHECK(a.done && !b.done && c.done);
    CHECK_INT_EQ(c.res.err.code, KUBE_E_TIMEOUT);
    CHECK_STR_CONTAINS(c.res.err.message, "request limit");
    CHECK_INT_EQ(c.res.attempts, 0);
    CHECK_INT_EQ(d.res.err.code, KUBE_OK);
    CHECK_INT_EQ(f.m.nreqs, 2);
    CHECK_STR_EQ(f.m.reqs[1].uri, "/api/v1/namespaces/ns1/configmaps/d");
    cJSON_Delete(a.obj);
    cJSON_Delete(d.obj);
    fx_free(&f);
}

/* Two clients made from one config share its limit: together they send no
 * more than the one bucket allows; a watch waits for a token too. */
static void test_limit_shared_through_config(void)
{
    struct fx f;
    fx_init(&f, NULL);
    f.cfg.limit = kube_limit_new(10, 6);
    REQUIRE(f.cfg.limit != NULL);
    fx_client(&f, &(struct kube_client_opts){0});
    struct kube_client *c2 = NULL;
    char err[256];
    c2 = kube_client_new(f.base, &f.cfg, &(struct kube_client_opts){0}, err, sizeof(err));
    REQUIRE(c2 != NULL);
    struct outcome r[8];
    memset(r, 0, sizeof(r));
    int64_t t0 = cx_mono_ms();
    for (int i = 0; i < 8; i++) {
        mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
        REQUIRE(kube_get(i % 2 ? c2 : f.c, &CM, "ns1", "s", NULL, on_result, &r[i]) != NULL);
    }
    int all = 0;
    for (int spin = 0; spin < 300 && !all; spin++) {
        int never = 0;
        cxt_loop_until_flag(f.base, &never, 20);
        all = 1;
        for (int i = 0; i < 8; i++)
            all &= r[i].done;
    }
    REQUIRE(all);
    /* 4 at once (6 less the reserve), then 4 more at 100 ms each. */
    int64_t last = 0;
    for (int i = 0; i < 8; i++) {
        last = r[i].t_done > last ? r[i].t_done : last;
        cJSON_Delete(r[i].obj);
    }
    CHECK_INT_GE(last - t0, 350);
    /* A watch takes a token like any request. */
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .hang = 1, .chunks = {""}});
    struct wrec w = {0};
    struct kube_watch *wa = kube_watch_start(c2, &CM, "ns1", NULL, &WH, &w);
    REQUIRE(wa != NULL);
    struct kube_client_stats st;
    kube_client_stats(c2, &st);
    CHECK_INT_EQ(st.queued, 1);
    int n0 = f.m.nreqs;
    wait_nreqs(&f, n0 + 1, 1000);
    CHECK_INT_EQ(f.m.nreqs, n0 + 1);
    kube_watch_stop(wa);
    kube_client_free(c2);
    fx_free(&f);
}

/* Every failure is counted by client, verb, resource and class. */
static void test_errors_counted_by_class(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){.component = "unit-errors"});
    mock_push(&f.m, (struct step){.status = 403,
                                  .body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":"
                                          "\"Forbidden\",\"code\":403,\"message\":\"no\"}"});
    struct outcome r = {0};
    REQUIRE(kube_get(f.c, &VS, "ns1", "foo", NULL, on_result, &r) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r.done, 5000));
    CHECK_INT_EQ(r.res.err.code, KUBE_E_FORBIDDEN);
    struct cx_metric *m =
        cx_counter("coxswain_kube_request_errors_total", "", "client,verb,resource,class");
    struct cx_metric *q = cx_counter("coxswain_kube_requests_total", "", "client,verb,resource");
    REQUIRE(m != NULL && q != NULL);
    CHECK_INT_EQ((int)cx_metric_get(m, "unit-errors", "get", "virtualservices", "forbidden"), 1);
    CHECK_INT_EQ((int)cx_metric_get(q, "unit-errors", "get", "virtualservices"), 1);
    fx_free(&f);
}

/* ---- two clients, two threads ------------------------------------------------------- */

struct thread_arg {
    int ok;
    int requests;
};

static void *thread_main(void *p)
{
    struct thread_arg *ta = p;
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){.identity = "thread"});
    for (int i = 0; i < ta->requests; i++) {
        mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON});
        struct outcome r = {0};
        if (!kube_get(f.c, &CM, "ns1", "foo", NULL, on_result, &r) ||
            !cxt_loop_until_flag(f.base, &r.done, 5000) || r.res.err.code != KUBE_OK)
            break;
        cJSON_Delete(r.obj);
        f.m.nscript = f.m.next = 0;
        ta->ok++;
    }
    fx_free(&f);
    return NULL;
}

static void test_two_clients_two_threads(void)
{
    pthread_t t[2];
    struct thread_arg a[2] = {{0, 20}, {0, 20}};
    for (int i = 0; i < 2; i++)
        REQUIRE_INT_EQ(pthread_create(&t[i], NULL, thread_main, &a[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK_INT_EQ(a[0].ok, 20);
    CHECK_INT_EQ(a[1].ok, 20);
}

/* HTTP/1.1 connections carry one transfer each: the dead-connection check
 * (kube_conn.c) never sends its health check on them, however long a watch
 * stays quiet or a request goes unanswered (over HTTP/2 it would, and
 * test_kube_h2_dead_conn.py shows it). */
static void test_http1_connections_not_probed(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){.read_idle_ms = 100, .ping_timeout_ms = 100});
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .hang = 1, .chunks = {EV("ADDED", "11") "\n"}});
    mock_push(&f.m, (struct step){.status = 200, .body = CM_JSON, .delay_ms = 1500});
    struct wrec w = {0};
    REQUIRE(kube_watch_start(f.c, &CM, "ns1", NULL, &WH, &w) != NULL);
    int one = 0;
    for (int i = 0; i < 100 && w.n < 1; i++)
        cxt_loop_until_flag(f.base, &one, 50);
    REQUIRE(w.n == 1);
    struct outcome r = {0};
    struct kube_req_opts ro = {.timeout_ms = 200, .max_attempts = 1};
    REQUIRE(kube_get(f.c, &CM, "ns1", "foo", &ro, on_result, &r) != NULL);
    REQUIRE(cxt_loop_until_flag(f.base, &r.done, 5000));
    CHECK_INT_EQ(r.res.err.code, KUBE_E_TIMEOUT);
    int never = 0;
    cxt_loop_until_flag(f.base, &never, 800); /* eight read-idle periods */
    CHECK_INT_EQ(w.ended, 0);
    struct kube_client_stats st;
    kube_client_stats(f.c, &st);
    CHECK_INT_EQ(st.probes, 0);
    CHECK_INT_EQ(st.conns_abandoned, 0);
    CHECK_INT_EQ(f.m.nreqs, 2); /* the watch and the get: no /livez */
    fx_free(&f);
}

static const struct cxt_case cases[] = {
    CXT(test_get_paths_and_headers),
    CXT(test_list_query_escaping),
    CXT(test_conflict_is_typed_and_not_retried),
    CXT(test_429_retry_after_honoured),
    CXT(test_presend_hook),
    CXT(test_500_reads_retried_blind_writes_not),
    CXT(test_timeout_outcome_unknown),
    CXT(test_deadline_bounds_retries),
    CXT(test_late_retry_past_deadline_not_sent),
    CXT(test_connection_refused_not_sent),
    CXT(test_broken_connection),
    CXT(test_delete_and_patch_bodies),
    CXT(test_token_rotation),
    CXT(test_connection_reuse),
    CXT(test_request_from_callback_and_cancel),
    CXT(test_watch_chunks_and_clean_end),
    CXT(test_watch_error_event_and_garbage),
    CXT(test_watch_stall_and_stop),
    CXT(test_watch_large_event_across_many_chunks),
    CXT(test_watch_backlog_pauses_and_resumes),
    CXT(test_watch_burst_buffer_is_not_kept),
    CXT(test_two_clients_two_threads),
    CXT(test_limit_spaces_requests_in_order),
    CXT(test_limit_queue_cancel_and_deadline),
    CXT(test_limit_shared_through_config),
    CXT(test_errors_counted_by_class),
    CXT(test_http1_connections_not_probed),
};
CXT_MAIN(cases)
