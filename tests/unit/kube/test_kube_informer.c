/* kube_informer against the scripted server: paged list, watch from the
 * list RV, resume from the last RV (events and bookmarks) after a clean end
 * or a garbage line, 410 -> re-list with a diff that emits only real
 * changes, duplicate suppression, streaming lists and their fallback. The
 * same behaviours against kubesim live in tests/integration/kube. */
#include "cx_json.h"
#include "cxtest.h"
#include "kube_informer.h"
#include "kube_mock.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct kube_resource CM = {"", "v1", "configmaps", "ConfigMap", 1};

#define CMO(name, rv, val)                                                                \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\",\"resourceVersion\":\"" rv \
    "\"},\"data\":{\"k\":\"" val "\"}}"
#define EVT(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}\n"
#define BOOKMARK(rv)                                                                            \
    EVT("BOOKMARK",                                                                             \
        "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"" rv \
        "\"}}")
#define LIST(rv, cont, items)                                                                   \
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"" rv \
    "\",\"continue\":\"" cont "\"},\"items\":[" items "]}"
#define EXPIRED                                                                              \
    EVT("ERROR",                                                                             \
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\"," \
        "\"message\":\"too old resource version\",\"reason\":\"Expired\",\"code\":410}")

/* The handler log: "+ns/a@1", "~ns/a@1>2", "-ns/b@5", "synced". */
struct log {
    char lines[64][64];
    int n;
    int synced;
};

__attribute__((format(printf, 2, 3))) static void logf_(struct log *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (l->n < 64)
        vsnprintf(l->lines[l->n], sizeof(l->lines[0]), fmt, ap);
    va_end(ap);
    l->n++;
}

static void h_add(void *ud, struct kube_obj *o)
{
    logf_(ud, "+%s@%s", o->key, o->rv);
    /* List items get kind/apiVersion filled in. */
    if (!cx_json_str(o->json, "kind") || !cx_json_str(o->json, "apiVersion"))
        cxt_fail(__FILE__, __LINE__, 0, "object without kind/apiVersion");
}

static void h_update(void *ud, struct kube_obj *old, struct kube_obj *o)
{
    logf_(ud, "~%s@%s>%s", o->key, old->rv, o->rv);
}

static void h_delete(void *ud, struct kube_obj *o)
{
    logf_(ud, "-%s@%s", o->key, o->rv);
}

static void h_synced(void *ud)
{
    struct log *l = ud;
    l->synced = 1;
    logf_(ud, "synced");
}

static const struct kube_informer_handlers H = {h_add, h_update, h_delete, h_synced};

static void check_log(const struct log *l, const char *const *want, int n)
{
    CHECK_INT_EQ(l->n, n);
    for (int i = 0; i < n && i < l->n; i++)
        CHECK_STR_EQ(l->lines[i], want[i]);
}

static int wait_reqs(struct fx *f, int n, int ms)
{
    int64_t end = cx_mono_ms() + ms;
    int never = 0;
    while (f->m.nreqs < n && cx_mono_ms() < end)
        cxt_loop_until_flag(f->base, &never, 20);
    return f->m.nreqs >= n;
}

static void settle(struct fx *f, int ms)
{
    int never = 0;
    cxt_loop_until_flag(f->base, &never, ms);
}

static void test_list_watch_resume_relist(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    /* 1-2: two list pages; 3: a watch that ends cleanly after a bookmark;
     * 4: a watch resumed from the bookmark, then 410; 5: re-list (one
     * object changed, one gone, the rest identical); 6: a watch from the
     * re-list's RV that stays open. */
    mock_push(&f.m,
              (struct step){.status = 200,
                            .body = LIST("10", "tok1", CMO("a", "1", "x") "," CMO("b", "2", "x"))});
    mock_push(&f.m, (struct step){.status = 200, .body = LIST("10", "", CMO("c", "3", "x"))});
    mock_push(&f.m,
              (struct step){.act = ACT_WATCH,
                            .chunk_ms = 5,
                            .chunks = {EVT("MODIFIED", CMO("a", "11", "y"))
                                           EVT("ADDED", CMO("d", "12", "x")),
                                       /* the same change again: dropped */
                                       EVT("MODIFIED", CMO("a", "11", "y")), BOOKMARK("15")}});
    mock_push(&f.m, (struct step){.act = ACT_WATCH,
                                  .hang = 1,
                                  .chunk_ms = 5,
                                  .chunks = {EVT("DELETED", CMO("b", "16", "x")), EXPIRED}});
    mock_push(&f.m, (struct step){.status = 200,
                                  .body = LIST("30", "",
                                               CMO("a", "11", "y") "," CMO("c", "20", "z") "," CMO(
                                                   "e", "21", "x"))});
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .hang = 1});
    struct log l = {0};
    struct kube_informer_opts o = {.res = &CM,
                                   .ns = "ns",
                                   .page_size = 2,
                                   .label_selector = "app=x",
                                   .streaming = KUBE_STREAMING_OFF};
    struct kube_informer *inf = kube_informer_new(f.c, &o, &H, &l);
    REQUIRE(inf != NULL);
    REQUIRE_INT_EQ(kube_informer_start(inf), 0);
    CHECK_INT_EQ(kube_informer_start(inf), -1);
    REQUIRE(wait_reqs(&f, 6, 5000));
    settle(&f, 100);
    const char *want[] = {
        "+ns/a@1",    "+ns/b@2",    "+ns/c@3",  "synced", /* initial list */
        "~ns/a@1>11", "+ns/d@12",                         /* watch 1 */
        "-ns/b@16",                                       /* watch 2 */
        "-ns/d@12",   "~ns/c@3>20", "+ns/e@21",           /* re-list diff: a unchanged */
    };
    check_log(&l, want, 10);
    CHECK_STR_EQ(f.m.reqs[0].uri, "/api/v1/namespaces/ns/configmaps?labelSelector=app%3Dx&limit=2");
    CHECK_STR_EQ(f.m.reqs[1].uri,
                 "/api/v1/namespaces/ns/configmaps?labelSelector=app%3Dx&limit=2&continue=tok1");
    CHECK_STR_EQ(f.m.reqs[2].uri,
                 "/api/v1/namespaces/ns/configmaps?watch=1&labelSelector=app%3Dx"
                 "&resourceVersion=10&allowWatchBookmarks=true&timeoutSeconds=300");
    CHECK_STR_CONTAINS(f.m.reqs[3].uri, "&resourceVersion=15&"); /* from the bookmark */
    CHECK_STR_EQ(f.m.reqs[4].uri, "/api/v1/namespaces/ns/configmaps?labelSelector=app%3Dx&limit=2");
    CHECK_STR_CONTAINS(f.m.reqs[5].uri, "&resourceVersion=30&");
    CHECK_STR_EQ(kube_informer_resource_version(inf), "30");
    struct kube_informer_stats st;
    kube_informer_stats(inf, &st);
    CHECK_INT_EQ(st.lists, 2);
    CHECK_INT_EQ(st.relists, 1);
    CHECK_INT_EQ(st.pages, 3);
    CHECK_INT_EQ(st.duplicates, 1);
    CHECK_INT_EQ(st.watch_restarts, 2);
    CHECK_INT_EQ(st.events[KUBE_EV_BOOKMARK], 1);
    CHECK_INT_EQ(st.events[KUBE_EV_MODIFIED], 2);
    CHECK(st.last_event_wall_ns > 0);
    struct kube_cache *c = kube_informer_cache(inf);
    CHECK_INT_EQ(kube_cache_len(c), 3);
    CHECK_STR_EQ(kube_cache_get(c, "ns/c")->rv, "20");
    CHECK_STR_EQ(cx_json_path_str(kube_cache_get(c, "ns/a")->json, "data", "k", NULL), "y");
    CHECK(kube_cache_get(c, "ns/b") == NULL);
    kube_informer_free(inf);
    fx_free(&f);
}

static void test_relist_without_changes_emits_nothing(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    mock_push(&f.m,
              (struct step){.status = 200,
                            .body = LIST("10", "", CMO("a", "1", "x") "," CMO("b", "2", "x"))});
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .hang = 1, .chunks = {EXPIRED}});
    mock_push(&f.m,
              (struct step){.status = 200,
                            .body = LIST("99", "", CMO("b", "2", "x") "," CMO("a", "1", "x"))});
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .hang = 1});
    struct log l = {0};
    struct kube_informer *inf = kube_informer_new(
        f.c, &(struct kube_informer_opts){.res = &CM, .streaming = KUBE_STREAMING_OFF}, &H, &l);
    REQUIRE(inf != NULL);
    kube_informer_start(inf);
    REQUIRE(wait_reqs(&f, 4, 5000));
    settle(&f, 50);
    const char *want[] = {"+ns/a@1", "+ns/b@2", "synced"};
    check_log(&l, want, 3);
    CHECK_STR_EQ(f.m.reqs[0].uri, "/api/v1/configmaps?limit=500"); /* cluster-wide */
    CHECK_STR_CONTAINS(f.m.reqs[3].uri, "resourceVersion=99");
    kube_informer_free(inf);
    fx_free(&f);
}

static void test_garbage_and_errors_resume_without_relist(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){.backoff_base_ms = 5});
    mock_push(&f.m, (struct step){.status = 500, .body = "x"}); /* retried by the client */
    mock_push(&f.m, (struct step){.status = 200, .body = LIST("10", "", CMO("a", "1", "x"))});
    mock_push(&f.m, (struct step){.act = ACT_WATCH,
                                  .hang = 1,
                                  .chunks = {EVT("MODIFIED", CMO("a", "11", "y")) "garbage\n" EVT(
                                      "MODIFIED", CMO("a", "12", "z"))}});
    mock_push(&f.m, (struct step){.status = 503, .body = "busy"}); /* watch refused once */
    mock_push(&f.m, (struct step){.act = ACT_WATCH,
                                  .hang = 1,
                                  .chunks = {EVT("MODIFIED", CMO("a", "12", "z"))}});
    struct log l = {0};
    struct kube_informer *inf = kube_informer_new(
        f.c,
        &(struct kube_informer_opts){
            .res = &CM, .ns = "ns", .streaming = KUBE_STREAMING_OFF, .backoff_base_ms = 10},
        &H, &l);
    kube_informer_start(inf);
    REQUIRE(wait_reqs(&f, 5, 5000));
    settle(&f, 100);
    const char *want[] = {"+ns/a@1", "synced", "~ns/a@1>11", "~ns/a@11>12"};
    check_log(&l, want, 4);
    CHECK_STR_CONTAINS(f.m.reqs[3].uri, "resourceVersion=11&");
    CHECK_STR_CONTAINS(f.m.reqs[4].uri, "resourceVersion=11&");
    struct kube_informer_stats st;
    kube_informer_stats(inf, &st);
    CHECK_INT_EQ(st.lists, 1);
    CHECK_INT_EQ(st.relists, 0);
    CHECK_INT_EQ(st.watch_errors, 2);
    kube_informer_free(inf);
    fx_free(&f);
}

static void test_streaming_list(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    mock_push(
        &f.m,
        (struct step){.act = ACT_WATCH,
                      .hang = 1,
                      .chunk_ms = 5,
                      .chunks = {EVT("ADDED", CMO("a", "5", "x")) EVT("ADDED", CMO("b", "6", "x")),
                                 EVT("BOOKMARK", "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","
                                                 "\"metadata\":{\"resourceVersion\":\"9\","
                                                 "\"annotations\":{\"k8s.io/initial-events-end\":"
                                                 "\"true\"}}}"),
                                 EVT("MODIFIED", CMO("a", "10", "y"))}});
    struct log l = {0};
    struct kube_informer *inf =
        kube_informer_new(f.c, &(struct kube_informer_opts){.res = &CM, .ns = "ns"}, &H, &l);
    kube_informer_start(inf);
    REQUIRE(cxt_loop_until_flag(f.base, &l.synced, 5000));
    settle(&f, 100);
    const char *want[] = {"+ns/a@5", "+ns/b@6", "synced", "~ns/a@5>10"};
    check_log(&l, want, 4);
    CHECK_STR_EQ(f.m.reqs[0].uri,
                 "/api/v1/namespaces/ns/configmaps?watch=1&allowWatchBookmarks=true"
                 "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                 "&timeoutSeconds=300");
    CHECK_INT_EQ(f.m.nreqs, 1);
    struct kube_informer_stats st;
    kube_informer_stats(inf, &st);
    CHECK_INT_EQ(st.streaming_used, 1);
    CHECK_STR_EQ(kube_informer_resource_version(inf), "10");
    kube_informer_free(inf);
    fx_free(&f);
}

static void test_streaming_refused_falls_back(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    /* An older server: 422 for resourceVersionMatch on a watch. */
    mock_push(&f.m, (struct step){.status = 422,
                                  .body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":"
                                          "\"Invalid\",\"message\":\"resourceVersionMatch is "
                                          "forbidden for watch\",\"code\":422}"});
    mock_push(&f.m, (struct step){.status = 200, .body = LIST("10", "", CMO("a", "1", "x"))});
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .hang = 1, .chunks = {EXPIRED}});
    /* After a 410 the informer lists again, and does not retry streaming. */
    mock_push(&f.m, (struct step){.status = 200, .body = LIST("20", "", CMO("a", "1", "x"))});
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .hang = 1});
    struct log l = {0};
    struct kube_informer *inf =
        kube_informer_new(f.c, &(struct kube_informer_opts){.res = &CM, .ns = "ns"}, &H, &l);
    kube_informer_start(inf);
    REQUIRE(wait_reqs(&f, 5, 5000));
    settle(&f, 50);
    const char *want[] = {"+ns/a@1", "synced"};
    check_log(&l, want, 2);
    CHECK_STR_CONTAINS(f.m.reqs[0].uri, "sendInitialEvents=true");
    CHECK_STR_EQ(f.m.reqs[1].uri, "/api/v1/namespaces/ns/configmaps?limit=500");
    CHECK_STR_EQ(f.m.reqs[3].uri, "/api/v1/namespaces/ns/configmaps?limit=500");
    struct kube_informer_stats st;
    kube_informer_stats(inf, &st);
    CHECK_INT_EQ(st.streaming_used, 0);
    kube_informer_free(inf);
    fx_free(&f);
}

static void test_expired_continue_token_restarts_list(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    mock_push(&f.m, (struct step){.status = 200, .body = LIST("10", "tok", CMO("a", "1", "x"))});
    mock_push(&f.m,
              (struct step){.status = 410,
                            .body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":"
                                    "\"Expired\",\"message\":\"continue expired\",\"code\":410}"});
    mock_push(&f.m, (struct step){.status = 200, .body = LIST("30", "tok2", CMO("a", "21", "x"))});
    mock_push(&f.m, (struct step){.status = 200, .body = LIST("30", "", CMO("b", "22", "x"))});
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .hang = 1});
    struct log l = {0};
    struct kube_informer *inf = kube_informer_new(
        f.c,
        &(struct kube_informer_opts){.res = &CM, .page_size = 1, .streaming = KUBE_STREAMING_OFF},
        &H, &l);
    kube_informer_start(inf);
    REQUIRE(wait_reqs(&f, 5, 5000));
    settle(&f, 50);
    /* Nothing from the abandoned first page leaks out. */
    const char *want[] = {"+ns/a@21", "+ns/b@22", "synced"};
    check_log(&l, want, 3);
    CHECK_STR_EQ(f.m.reqs[2].uri, "/api/v1/configmaps?limit=1");
    CHECK_STR_CONTAINS(f.m.reqs[4].uri, "resourceVersion=30");
    kube_informer_free(inf);
    fx_free(&f);
}

/* A server that answers every watch with 410 at once (and every list
 * fine) is not met with a list/watch loop: each round waits a growing
 * backoff, and the informer keeps the last failure for /readyz. Before the
 * backoff, this script of 64 answers was used up within milliseconds. */
static void test_watch_expired_at_once_backs_off(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){.qps = -1});
    for (int i = 0; i < 32; i++) {
        mock_push(&f.m, (struct step){.status = 200, .body = LIST("10", "", CMO("a", "1", "x"))});
        mock_push(&f.m, (struct step){.act = ACT_WATCH, .chunks = {EXPIRED}});
    }
    struct log l = {0};
    struct kube_informer *inf =
        kube_informer_new(f.c,
                          &(struct kube_informer_opts){
                              .res = &CM, .streaming = KUBE_STREAMING_OFF, .backoff_base_ms = 100},
                          &H, &l);
    kube_informer_start(inf);
    settle(&f, 1500);
    /* 100, 200, 400, 800 ms (less jitter) between rounds: at most ~6
     * rounds of two requests in 1.5 s. */
    CHECK_INT_LE(f.m.nreqs, 14);
    CHECK_INT_GE(f.m.nreqs, 4);
    CHECK(l.synced);
    kube_informer_free(inf);
    fx_free(&f);

    /* A list refused with 403: backed off, and the reason is kept. */
    fx_init(&f, &(struct kube_client_opts){.qps = -1});
    for (int i = 0; i < 40; i++)
        mock_push(&f.m,
                  (struct step){.status = 403,
                                .body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":"
                                        "\"Forbidden\",\"message\":\"configmaps is forbidden: "
                                        "User \\\"u\\\" cannot list\",\"code\":403}"});
    struct log l2 = {0};
    inf = kube_informer_new(
        f.c, &(struct kube_informer_opts){.res = &CM, .streaming = KUBE_STREAMING_OFF}, &H, &l2);
    kube_informer_start(inf);
    settle(&f, 1500);
    CHECK_INT_LE(f.m.nreqs, 8);
    CHECK(!l2.synced);
    const char *verb = NULL;
    const struct kube_error *e = kube_informer_last_error(inf, &verb);
    REQUIRE(e != NULL);
    CHECK_STR_EQ(verb, "list");
    CHECK_INT_EQ(e->http_status, 403);
    CHECK_STR_CONTAINS(e->message, "cannot list");
    kube_informer_free(inf);
    fx_free(&f);
}

/* A metadata informer asks for PartialObjectMetadata(List) and keeps only
 * metadata, even from a server that sends whole objects. */
static void test_metadata_only(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    mock_push(&f.m,
              (struct step){.status = 200, .body = LIST("10", "", CMO("a", "1", "secret-bytes"))});
    mock_push(&f.m, (struct step){.act = ACT_WATCH,
                                  .hang = 1,
                                  .chunks = {EVT("ADDED", CMO("b", "11", "more-bytes"))}});
    struct log l = {0};
    struct kube_informer *inf = kube_informer_new(
        f.c,
        &(struct kube_informer_opts){
            .res = &CM, .ns = "ns", .streaming = KUBE_STREAMING_OFF, .metadata_only = 1},
        &H, &l);
    kube_informer_start(inf);
    REQUIRE(wait_reqs(&f, 2, 5000));
    settle(&f, 100);
    const char *want[] = {"+ns/a@1", "synced", "+ns/b@11"};
    check_log(&l, want, 3);
    CHECK_STR_EQ(f.m.reqs[0].accept,
                 "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                 "application/json");
    CHECK_STR_EQ(f.m.reqs[1].accept,
                 "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json");
    const char *keys[] = {"ns/a", "ns/b"};
    for (int i = 0; i < 2; i++) {
        struct kube_obj *o = kube_cache_get(kube_informer_cache(inf), keys[i]);
        REQUIRE(o != NULL);
        CHECK_STR_EQ(cx_json_str(o->json, "kind"), "PartialObjectMetadata");
        CHECK_STR_EQ(cx_json_str(o->json, "apiVersion"), "meta.k8s.io/v1");
        CHECK(cJSON_GetObjectItem(o->json, "data") == NULL);
        CHECK(cx_json_path_str(o->json, "metadata", "resourceVersion", NULL) != NULL);
    }
    kube_informer_free(inf);
    fx_free(&f);
}

#define BIGCM(name, rv)                                                                      \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\",\"resourceVersion\":\"" rv    \
    "\"},\"data\":{\"k\":\"0123456789012345678901234567890123456789012345678901234567890123" \
    "456789012345678901234567890123456789012345678901234567890123456789\"}}"

/* Objects over the cap on one object are treated as absent: refused in a
 * list, and a cached object that grows over it is deleted; counted. */
static void test_object_cap(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    mock_push(&f.m, (struct step){.status = 200,
                                  .body = LIST("10", "",
                                               BIGCM("big", "1") "," CMO("a", "2", "x") "," CMO(
                                                   "c", "3", "x"))});
    mock_push(&f.m, (struct step){.act = ACT_WATCH,
                                  .hang = 1,
                                  .chunk_ms = 5,
                                  .chunks = {EVT("MODIFIED", BIGCM("a", "11")),
                                             EVT("MODIFIED", CMO("c", "12", "y"))}});
    struct log l = {0};
    struct kube_informer *inf = kube_informer_new(
        f.c,
        &(struct kube_informer_opts){
            .res = &CM, .ns = "ns", .streaming = KUBE_STREAMING_OFF, .max_object = 150},
        &H, &l);
    kube_informer_start(inf);
    REQUIRE(wait_reqs(&f, 2, 5000));
    settle(&f, 150);
    const char *want[] = {"+ns/a@2", "+ns/c@3", "synced", "-ns/a@2", "~ns/c@3>12"};
    check_log(&l, want, 5);
    struct kube_informer_stats st;
    kube_informer_stats(inf, &st);
    CHECK_INT_EQ(st.refused, 2);
    CHECK_INT_EQ(kube_cache_len(kube_informer_cache(inf)), 1);
    kube_informer_free(inf);
    fx_free(&f);
}

/* A watch event over the cap ends the watch; the informer lists again (and
 * refuses the object there) instead of resuming into the same event. */
static void test_event_over_cap_relists(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    /* An event of ~80 KiB: over max_object (100) + the 64 KiB envelope. */
    size_t pad = 80 << 10;
    char *big = malloc(pad + 256);
    REQUIRE(big != NULL);
    int n = snprintf(big, 256,
                     "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\","
                     "\"namespace\":\"ns\",\"resourceVersion\":\"11\"},\"data\":{\"k\":\"");
    memset(big + n, 'x', pad);
    snprintf(big + n + pad, 256, "\"}}}\n");
    mock_push(&f.m, (struct step){.status = 200, .body = LIST("10", "", CMO("a", "1", "x"))});
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .hang = 1, .chunks = {big}});
    mock_push(&f.m, (struct step){.status = 200, .body = LIST("20", "", BIGCM("a", "11"))});
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .hang = 1});
    struct log l = {0};
    struct kube_informer *inf =
        kube_informer_new(f.c,
                          &(struct kube_informer_opts){.res = &CM,
                                                       .ns = "ns",
                                                       .streaming = KUBE_STREAMING_OFF,
                                                       .max_object = 100,
                                                       .backoff_base_ms = 10},
                          &H, &l);
    kube_informer_start(inf);
    REQUIRE(wait_reqs(&f, 4, 5000));
    settle(&f, 50);
    CHECK_STR_EQ(f.m.reqs[2].uri, "/api/v1/namespaces/ns/configmaps?limit=500");
    CHECK_STR_CONTAINS(f.m.reqs[3].uri, "resourceVersion=20");
    /* The relist refused the grown object: it is gone from the cache. */
    const char *want[] = {"+ns/a@1", "synced", "-ns/a@1"};
    check_log(&l, want, 3);
    kube_informer_free(inf);
    fx_free(&f);
    free(big);
}

/* A list page over max_page_bytes: the page size halves, the list goes on. */
static void test_page_cap_halves_pages(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    mock_push(&f.m,
              (struct step){.status = 200,
                            .body = LIST("10", "", CMO("a", "1", "x") "," CMO("b", "2", "x"))});
    mock_push(&f.m, (struct step){.status = 200, .body = LIST("10", "", CMO("a", "1", "x"))});
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .hang = 1});
    struct log l = {0};
    struct kube_informer *inf =
        kube_informer_new(f.c,
                          &(struct kube_informer_opts){.res = &CM,
                                                       .ns = "ns",
                                                       .streaming = KUBE_STREAMING_OFF,
                                                       .max_page_bytes = 220,
                                                       .backoff_base_ms = 10},
                          &H, &l);
    kube_informer_start(inf);
    REQUIRE(cxt_loop_until_flag(f.base, &l.synced, 5000));
    CHECK_STR_EQ(f.m.reqs[0].uri, "/api/v1/namespaces/ns/configmaps?limit=500");
    CHECK_STR_EQ(f.m.reqs[1].uri, "/api/v1/namespaces/ns/configmaps?limit=250");
    const char *verb = NULL;
    CHECK(kube_informer_last_error(inf, &verb) == NULL); /* synced: the failure is over */
    kube_informer_free(inf);
    fx_free(&f);
}

static int first_obj(void *ud, struct kube_obj *o)
{
    *(struct kube_obj **)ud = o;
    return 1;
}

static void test_label_index_through_informer(void)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    mock_push(&f.m, (struct step){
                        .status = 200,
                        .body = LIST("10", "",
                                     "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
                                     "\"resourceVersion\":\"1\",\"labels\":{\"app\":\"web\"}}},"
                                     "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\","
                                     "\"resourceVersion\":\"2\",\"labels\":{\"app\":\"db\"}}}")});
    mock_push(&f.m, (struct step){.act = ACT_WATCH, .hang = 1});
    struct log l = {0};
    const char *idx[] = {"app", NULL};
    struct kube_informer *inf =
        kube_informer_new(f.c,
                          &(struct kube_informer_opts){
                              .res = &CM, .streaming = KUBE_STREAMING_OFF, .label_indexes = idx},
                          &H, &l);
    kube_informer_start(inf);
    REQUIRE(cxt_loop_until_flag(f.base, &l.synced, 5000));
    struct kube_obj *got = NULL;
    struct kube_cache *c = kube_informer_cache(inf);
    CHECK_INT_EQ(kube_cache_foreach_label(c, "app", "web", first_obj, &got), 1);
    REQUIRE(got != NULL);
    CHECK_STR_EQ(got->key, "ns/a");
    size_t n = 0;
    struct kube_obj **all = kube_cache_list(c, &n);
    CHECK_INT_EQ(n, 2);
    kube_cache_list_free(all, n);
    kube_informer_free(inf);
    fx_free(&f);
}

/* An object as kubectl apply leaves it on a real API server. */
#define APPLIED(name, rv, extra_ann)                                                              \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\",\"resourceVersion\":\"" rv         \
    "\",\"managedFields\":[{\"manager\":\"kubectl-client-side-apply\",\"operation\":\"Update\","  \
    "\"fieldsV1\":{\"f:data\":{\"f:k\":{}}}}],\"annotations\":{" extra_ann                        \
    "\"kubectl.kubernetes.io/last-applied-configuration\":\"{\\\"data\\\":{\\\"k\\\":\\\"v\\\"}}" \
    "\"}},\"data\":{\"k\":\"v\"}}"

static const cJSON *ann_of(struct kube_informer *inf, const char *key)
{
    struct kube_obj *o = kube_cache_get(kube_informer_cache(inf), key);
    return o ? cx_json_path(o->json, "metadata", "annotations", NULL) : NULL;
}

static void run_trim(int trim)
{
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    mock_push(&f.m, (struct step){.status = 200,
                                  .body = LIST("10", "",
                                               APPLIED("a", "1", "\"team\":\"edge\",") "," APPLIED(
                                                   "b", "2", ""))});
    mock_push(&f.m, (struct step){.act = ACT_WATCH,
                                  .hang = 1,
                                  .chunk_ms = 5,
                                  .chunks = {EVT("ADDED", APPLIED("c", "11", ""))}});
    struct log l = {0};
    struct kube_informer *inf = kube_informer_new(
        f.c,
        &(struct kube_informer_opts){.res = &CM, .streaming = KUBE_STREAMING_OFF, .trim = trim}, &H,
        &l);
    kube_informer_start(inf);
    REQUIRE(cxt_loop_until_flag(f.base, &l.synced, 5000));
    int64_t end = cx_mono_ms() + 5000;
    while (!kube_cache_get(kube_informer_cache(inf), "ns/c") && cx_mono_ms() < end)
        settle(&f, 20);
    const char *keys[] = {"ns/a", "ns/b", "ns/c"};
    for (int i = 0; i < 3; i++) {
        struct kube_obj *o = kube_cache_get(kube_informer_cache(inf), keys[i]);
        REQUIRE(o != NULL);
        const cJSON *mf = cx_json_path(o->json, "metadata", "managedFields", NULL);
        const cJSON *ann = ann_of(inf, keys[i]);
        const cJSON *la = ann ? cJSON_GetObjectItemCaseSensitive(
                                    ann, "kubectl.kubernetes.io/last-applied-configuration")
                              : NULL;
        CHECK_INT_EQ(mf != NULL, !trim);
        CHECK_INT_EQ(la != NULL, !trim);
        /* what is input stays */
        CHECK_STR_EQ(cx_json_path_str(o->json, "data", "k", NULL), "v");
        CHECK_STR_EQ(o->rv, i == 0 ? "1" : i == 1 ? "2" : "11");
    }
    /* other annotations are kept; an annotations map left empty goes */
    CHECK_STR_EQ(cx_json_str(ann_of(inf, "ns/a"), "team"), "edge");
    CHECK_INT_EQ(ann_of(inf, "ns/b") != NULL, !trim);
    kube_informer_free(inf);
    fx_free(&f);
}

static int collect_one(void *user, struct kube_obj *o)
{
    *(struct kube_obj **)user = o;
    return 0;
}

static void test_trim_drops_bookkeeping(void)
{
    run_trim(1);
}

static void test_no_trim_mirrors_the_server(void)
{
    run_trim(0);
}

/* ---- decode: the cache keeps the owner's form, not the JSON -------------------- */

struct dec_rec {
    char *k;     /* data.k */
    char *label; /* metadata.labels.app */
};

static int decoded, freed;

static void dec_free(void *p)
{
    struct dec_rec *r = p;
    free(r->k);
    free(r->label);
    free(r);
    freed++;
}

static const char *dec_label(const void *p, const char *key)
{
    const struct dec_rec *r = p;
    return strcmp(key, "app") == 0 ? r->label : NULL;
}

static const struct kube_rec_ops DEC_OPS = {dec_free, dec_label};

/* Keeps data.k and the app label; "keep-json" stays JSON (NULL). */
static void *dec(void *ud, const struct kube_obj *o, const cJSON *json,
                 const struct kube_rec_ops **ops)
{
    (void)ud;
    if (strcmp(o->name, "keep-json") == 0)
        return NULL;
    struct dec_rec *r = calloc(1, sizeof(*r));
    const char *k = cx_json_path_str(json, "data", "k", NULL);
    const char *app = cx_json_path_str(json, "metadata", "labels", "app", NULL);
    r->k = strdup(k ? k : "");
    r->label = app ? strdup(app) : NULL;
    *ops = &DEC_OPS;
    decoded++;
    return r;
}

static void hd_add(void *ud, struct kube_obj *o)
{
    logf_(ud, "+%s@%s:%s", o->key, o->rv, o->json ? "json" : ((struct dec_rec *)o->rec)->k);
}

static void hd_update(void *ud, struct kube_obj *old, struct kube_obj *o)
{
    logf_(ud, "~%s@%s>%s:%s", o->key, old->rv, o->rv,
          o->json ? "json" : ((struct dec_rec *)o->rec)->k);
}

static void hd_delete(void *ud, struct kube_obj *o)
{
    /* the final state of a deletion is not decoded */
    logf_(ud, "-%s@%s:%s", o->key, o->rv, o->json ? "json" : "rec");
}

#define CML(name, rv, app, val)                                                                  \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\",\"uid\":\"u-" name                \
    "\",\"resourceVersion\":\"" rv "\",\"labels\":{\"app\":\"" app "\"}},\"data\":{\"k\":\"" val \
    "\"}}"

static void test_decode_keeps_the_owners_form(void)
{
    decoded = freed = 0;
    struct fx f;
    fx_init(&f, &(struct kube_client_opts){0});
    mock_push(&f.m, (struct step){.status = 200,
                                  .body = LIST("10", "",
                                               CML("a", "1", "web", "x") "," CML("keep-json", "2",
                                                                                 "db", "y"))});
    mock_push(&f.m, (struct step){.act = ACT_WATCH,
                                  .hang = 1,
                                  .chunk_ms = 5,
                                  .chunks = {EVT("MODIFIED", CML("a", "11", "web", "z"))
                                                 EVT("ADDED", CML("b", "12", "api", "w"))
                                                     EVT("DELETED", CML("b", "13", "api", "w"))}});
    struct log l = {0};
    static const struct kube_informer_handlers HD = {hd_add, hd_update, hd_delete, h_synced};
    const char *const idx[] = {"app", NULL};
    struct kube_informer *inf = kube_informer_new(f.c,
                                                  &(struct kube_informer_opts){
                                                      .res = &CM,
                                                      .streaming = KUBE_STREAMING_OFF,
                                                      .trim = 1,
                                                      .label_indexes = idx,
                                                      .decode = dec,
                                                  },
                                                  &HD, &l);
    REQUIRE(inf != NULL);
    kube_informer_start(inf);
    REQUIRE(cxt_loop_until_flag(f.base, &l.synced, 5000));
    int64_t end = cx_mono_ms() + 5000;
    while (l.n < 6 && cx_mono_ms() < end)
        settle(&f, 20);
    const char *want[] = {"+ns/a@1:x",    "+ns/keep-json@2:json", "synced",
                          "~ns/a@1>11:z", "+ns/b@12:w",           "-ns/b@13:json"};
    check_log(&l, want, 6);
    struct kube_cache *c = kube_informer_cache(inf);
    struct kube_obj *a = kube_cache_get(c, "ns/a");
    REQUIRE(a != NULL);
    /* the JSON is gone; what the object says of itself outlives it */
    CHECK(a->json == NULL);
    CHECK(a->rec_ops == &DEC_OPS);
    CHECK_STR_EQ(a->ns, "ns");
    CHECK_STR_EQ(a->name, "a");
    CHECK_STR_EQ(a->uid, "u-a");
    CHECK_STR_EQ(a->rv, "11");
    CHECK_STR_EQ(kube_obj_label(a, "app"), "web"); /* read from the owner's form */
    struct kube_obj *kj = kube_cache_get(c, "ns/keep-json");
    REQUIRE(kj != NULL);
    CHECK(kj->json != NULL && kj->rec == NULL);
    CHECK_STR_EQ(kube_obj_label(kj, "app"), "db");
    /* the label index works from either form */
    struct kube_obj *seen = NULL;
    CHECK_INT_EQ(kube_cache_foreach_label(c, "app", "web", collect_one, &seen), 1);
    CHECK(seen == a);
    CHECK_INT_EQ(kube_cache_foreach_label(c, "app", "db", collect_one, &seen), 1);
    CHECK(seen == kj);
    /* a (twice), b: every decoded form is freed with its object */
    CHECK_INT_EQ(decoded, 3);
    kube_informer_free(inf);
    fx_free(&f);
    CHECK_INT_EQ(freed, decoded);
}

static const struct cxt_case cases[] = {
    CXT(test_decode_keeps_the_owners_form),
    CXT(test_list_watch_resume_relist),
    CXT(test_relist_without_changes_emits_nothing),
    CXT(test_garbage_and_errors_resume_without_relist),
    CXT(test_streaming_list),
    CXT(test_streaming_refused_falls_back),
    CXT(test_expired_continue_token_restarts_list),
    CXT(test_label_index_through_informer),
    CXT(test_trim_drops_bookkeeping),
    CXT(test_no_trim_mirrors_the_server),
    CXT(test_watch_expired_at_once_backs_off),
    CXT(test_metadata_only),
    CXT(test_object_cap),
    CXT(test_event_over_cap_relists),
    CXT(test_page_cap_halves_pages),
};
CXT_MAIN(cases)
