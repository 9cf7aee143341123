/* Lease and ConfigMap record encode/decode against golden JSON, including
 * what the official Python client writes. */
#include "cx_json.h"
#include "cx_time.h"
#include "cxtest.h"
#include "election_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static cJSON *load(const char *name)
{
    char rel[128];
    snprintf(rel, sizeof(rel), "election/%s", name);
    size_t len = 0;
    char *text = cxt_read_file(cxt_data_path(rel), &len);
    if (!text)
        return NULL;
    cJSON *o = cx_json_parse(text, len);
    free(text);
    return o;
}

/* Canonical text of |o| (caller frees). */
static char *canon(const cJSON *o)
{
    struct cx_buf b;
    cx_buf_init(&b, 1 << 20);
    if (!o || cx_json_canonical(o, &b) != 0) {
        cx_buf_free(&b);
        return NULL;
    }
    return cx_buf_steal(&b, NULL);
}

static void check_same_json(const cJSON *got, const char *golden)
{
    cJSON *want = load(golden);
    REQUIRE(want != NULL);
    char *a = canon(got), *b = canon(want);
    CHECK_STR_EQ(a, b);
    free(a);
    free(b);
    cJSON_Delete(want);
}

static int64_t rfc(const char *s)
{
    int64_t ns = 0;
    if (cx_time_parse_rfc3339(s, &ns) != 0)
        return -1;
    return ns;
}

static void test_decode_lease(void)
{
    cJSON *o = load("lease_from_server.json");
    REQUIRE(o != NULL);
    struct election_observation ob;
    election_record_decode(ELECTION_LOCK_LEASES, o, &ob);
    CHECK(ob.found);
    CHECK_STR_EQ(ob.rv, "48213");
    CHECK_STR_EQ(ob.rec.holder, "coxswain-7d9f8-abcde_1a2b3c4d");
    CHECK(!ob.rec.holder_overflow);
    CHECK_INT_EQ(ob.rec.lease_duration_s, 15);
    CHECK_INT_EQ(ob.rec.transitions, 4);
    CHECK_INT_EQ(ob.rec.acquire_wall_ns, rfc("2025-11-29T14:58:01.25Z"));
    CHECK_INT_EQ(ob.rec.renew_wall_ns, rfc("2025-11-29T15:00:03Z") + 123456000);
    CHECK_STR_EQ(ob.rec.preferred_holder, "coxswain-7d9f8-fghij_5e6f7a8b");
    CHECK_STR_EQ(ob.rec.strategy, "OldestEmulationVersion");
    CHECK(ob.fingerprint != 0);
    cJSON_Delete(o);
}

/* A PUT keeps everything of the object we did not write (labels, uid,
 * managedFields) and carries the resourceVersion as the precondition. */
static void test_lease_update_golden(void)
{
    cJSON *o = load("lease_from_server.json");
    REQUIRE(o != NULL);
    struct election_observation ob;
    election_record_decode(ELECTION_LOCK_LEASES, o, &ob);
    ob.rec.renew_wall_ns = rfc("2025-11-29T15:00:05Z") + 1000 + 999; /* truncated to 1 us */
    cJSON *put = election_record_update_object(ELECTION_LOCK_LEASES, o, "gw-system", "coxswain",
                                               "48213", &ob.rec);
    REQUIRE(put != NULL);
    check_same_json(put, "lease_put_expected.json");
    cJSON_Delete(put);
    cJSON_Delete(o);
}

static void test_lease_create_golden(void)
{
    struct election_record r;
    memset(&r, 0, sizeof(r));
    snprintf(r.holder, sizeof(r.holder), "node-a_0badcafe");
    r.lease_duration_s = 3;
    r.acquire_wall_ns = r.renew_wall_ns = rfc("2025-11-29T15:00:00Z");
    cJSON *o = election_record_new_object(ELECTION_LOCK_LEASES, "gw-system", "coxswain", &r);
    REQUIRE(o != NULL);
    check_same_json(o, "lease_create_expected.json");
    /* Exactly six fractional digits, UTC, even for whole seconds. */
    CHECK_STR_EQ(cx_json_path_str(o, "spec", "renewTime", (char *)NULL),
                 "2025-11-29T15:00:00.000000Z");
    cJSON_Delete(o);
}

static void test_lease_release_keeps_empty_holder(void)
{
    struct election_record r;
    memset(&r, 0, sizeof(r));
    r.lease_duration_s = 1;
    r.transitions = 6;
    r.acquire_wall_ns = r.renew_wall_ns = rfc("2025-11-29T15:00:00Z") + 987654321;
    cJSON *o = election_record_update_object(ELECTION_LOCK_LEASES, NULL, "ns", "lk", "12", &r);
    REQUIRE(o != NULL);
    CHECK_STR_EQ(cx_json_path_str(o, "spec", "holderIdentity", (char *)NULL),
                 ""); /* present, empty */
    CHECK_STR_EQ(cx_json_path_str(o, "spec", "renewTime", (char *)NULL),
                 "2025-11-29T15:00:00.987654Z");
    CHECK_STR_EQ(cx_json_path_str(o, "metadata", "resourceVersion", (char *)NULL), "12");
    CHECK_STR_EQ(cx_json_str(o, "kind"), "Lease");
    cJSON *tr = cx_json_path(o, "spec", "leaseTransitions", (char *)NULL);
    REQUIRE(cJSON_IsNumber(tr));
    CHECK_INT_EQ(tr->valueint, 6);
    struct election_observation back;
    election_record_decode(ELECTION_LOCK_LEASES, o, &back);
    CHECK_STR_EQ(back.rec.holder, "");
    CHECK(!back.rec.holder_overflow);
    CHECK_INT_EQ(back.rec.lease_duration_s, 1);
    CHECK_INT_EQ(back.rec.renew_wall_ns, r.renew_wall_ns / 1000 * 1000);
    cJSON_Delete(o);
}

static void test_decode_python_configmap(void)
{
    setenv("TZ", "UTC", 1);
    tzset();
    cJSON *o = load("configmap_python.json");
    REQUIRE(o != NULL);
    struct election_observation ob;
    election_record_decode(ELECTION_LOCK_CONFIGMAPS, o, &ob);
    CHECK(ob.found);
    CHECK_STR_EQ(ob.rv, "913");
    CHECK_STR_EQ(ob.rec.holder, "py-elector-1");
    CHECK_INT_EQ(ob.rec.lease_duration_s, 15); /* "15", a string */
    CHECK_INT_EQ(ob.rec.transitions, 0);       /* absent */
    CHECK_INT_EQ(ob.rec.acquire_wall_ns, rfc("2026-11-29T15:00:00.123456Z"));
    CHECK_INT_EQ(ob.rec.renew_wall_ns, rfc("2026-11-29T15:00:02.654321Z"));
    /* Python wrote local time: in UTC+9 the same text is 9 hours earlier. */
    setenv("TZ", "JST-9", 1);
    tzset();
    struct election_observation jst;
    election_record_decode(ELECTION_LOCK_CONFIGMAPS, o, &jst);
    CHECK_INT_EQ(jst.rec.renew_wall_ns, ob.rec.renew_wall_ns - INT64_C(9) * 3600 * 1000000000);
    CHECK_INT_EQ(jst.fingerprint, ob.fingerprint); /* the raw text did not change */
    setenv("TZ", "UTC", 1);
    tzset();
    cJSON_Delete(o);
}

static void test_decode_clientgo_configmap(void)
{
    cJSON *o = load("configmap_clientgo.json");
    REQUIRE(o != NULL);
    struct election_observation ob;
    election_record_decode(ELECTION_LOCK_CONFIGMAPS, o, &ob);
    CHECK_STR_EQ(ob.rec.holder, "kube-controller-1_0f1e2d3c");
    CHECK_INT_EQ(ob.rec.lease_duration_s, 15);
    CHECK_INT_EQ(ob.rec.transitions, 9);
    CHECK_INT_EQ(ob.rec.acquire_wall_ns, rfc("2021-06-01T10:00:00Z"));
    CHECK_INT_EQ(ob.rec.renew_wall_ns, rfc("2021-06-01T10:05:30Z"));
    cJSON_Delete(o);
}

/* Taking over the Python client's lock: its data and other annotations stay;
 * our record is written as client-go writes it. */
static void test_configmap_update_golden(void)
{
    cJSON *o = load("configmap_python.json");
    REQUIRE(o != NULL);
    struct election_record r;
    memset(&r, 0, sizeof(r));
    snprintf(r.holder, sizeof(r.holder), "node-a_0badcafe");
    r.lease_duration_s = 15;
    r.transitions = 1;
    r.acquire_wall_ns = r.renew_wall_ns = rfc("2025-11-29T15:00:00Z") + 999999999;
    cJSON *put =
        election_record_update_object(ELECTION_LOCK_CONFIGMAPS, o, "default", "gw-lock", "913", &r);
    REQUIRE(put != NULL);
    check_same_json(put, "configmap_put_expected.json");
    /* The Python client reads it back with json.loads + .get(): a JSON object
     * whose holderIdentity is a non-empty string. */
    const char *ann = cx_json_path_str(put, "metadata", "annotations",
                                       ELECTION_CONFIGMAP_ANNOTATION, (char *)NULL);
    REQUIRE(ann != NULL);
    struct election_record back;
    CHECK_INT_EQ(election_record_parse_annotation(ann, strlen(ann), &back), 0);
    CHECK_STR_EQ(back.holder, "node-a_0badcafe");
    CHECK_INT_EQ(back.transitions, 1);
    cJSON_Delete(put);
    cJSON_Delete(o);
}

static void test_configmap_create_and_missing_annotations(void)
{
    struct election_record r;
    memset(&r, 0, sizeof(r));
    snprintf(r.holder, sizeof(r.holder), "a\"b");
    r.lease_duration_s = 3;
    cJSON *o = election_record_new_object(ELECTION_LOCK_CONFIGMAPS, "ns", "lk", &r);
    REQUIRE(o != NULL);
    const char *ann =
        cx_json_path_str(o, "metadata", "annotations", ELECTION_CONFIGMAP_ANNOTATION, (char *)NULL);
    CHECK_STR_EQ(ann, "{\"holderIdentity\":\"a\\\"b\",\"leaseDurationSeconds\":3,\"acquireTime\":"
                      "null,\"renewTime\":null,\"leaderTransitions\":0}");
    cJSON_Delete(o);

    /* A ConfigMap without our annotation (or with an empty one) holds no
     * record: free to take, like client-go and the Python client. */
    static const char *const objs[] = {
        "{\"metadata\":{\"name\":\"lk\",\"resourceVersion\":\"5\"}}",
        "{\"metadata\":{\"resourceVersion\":\"5\",\"annotations\":{\"x\":\"y\"}}}",
        "{\"metadata\":{\"resourceVersion\":\"5\",\"annotations\":{"
        "\"control-plane.alpha.kubernetes.io/leader\":\"\"}}}",
    };
    for (size_t k = 0; k < 3; k++) {
        cJSON *c = cx_json_parse(objs[k], strlen(objs[k]));
        REQUIRE(c != NULL);
        struct election_observation ob;
        election_record_decode(ELECTION_LOCK_CONFIGMAPS, c, &ob);
        CHECK(ob.found);
        CHECK_STR_EQ(ob.rv, "5");
        CHECK_STR_EQ(ob.rec.holder, "");
        CHECK(!ob.rec.holder_overflow);
        CHECK_INT_EQ(ob.fingerprint, 0);
        cJSON_Delete(c);
    }
}

/* preferredHolder and strategy survive a ConfigMap round trip (a planned
 * handover must hold on either lock kind); without them the annotation is
 * exactly what client-go writes. */
static void test_configmap_keeps_preferred_holder(void)
{
    struct election_record r;
    memset(&r, 0, sizeof(r));
    snprintf(r.holder, sizeof(r.holder), "a_1");
    snprintf(r.preferred_holder, sizeof(r.preferred_holder), "b_\"2");
    snprintf(r.strategy, sizeof(r.strategy), "OldestEmulationVersion");
    r.lease_duration_s = 3;
    r.transitions = 4;
    cJSON *o = election_record_new_object(ELECTION_LOCK_CONFIGMAPS, "ns", "lk", &r);
    REQUIRE(o != NULL);
    const char *ann =
        cx_json_path_str(o, "metadata", "annotations", ELECTION_CONFIGMAP_ANNOTATION, (char *)NULL);
    CHECK_STR_EQ(ann, "{\"holderIdentity\":\"a_1\",\"leaseDurationSeconds\":3,\"acquireTime\":"
                      "null,\"renewTime\":null,\"leaderTransitions\":4,\"strategy\":"
                      "\"OldestEmulationVersion\",\"preferredHolder\":\"b_\\\"2\"}");
    struct election_observation ob;
    cJSON_AddItemToObject(cJSON_GetObjectItem(o, "metadata"), "resourceVersion",
                          cJSON_CreateString("7"));
    election_record_decode(ELECTION_LOCK_CONFIGMAPS, o, &ob);
    CHECK_STR_EQ(ob.rec.holder, "a_1");
    CHECK_STR_EQ(ob.rec.preferred_holder, "b_\"2");
    CHECK_STR_EQ(ob.rec.strategy, "OldestEmulationVersion");
    CHECK_INT_EQ(ob.rec.transitions, 4);
    /* a record without them writes neither key */
    r.preferred_holder[0] = '\0';
    r.strategy[0] = '\0';
    cJSON *put = election_record_update_object(ELECTION_LOCK_CONFIGMAPS, o, "ns", "lk", "7", &r);
    REQUIRE(put != NULL);
    ann = cx_json_path_str(put, "metadata", "annotations", ELECTION_CONFIGMAP_ANNOTATION,
                           (char *)NULL);
    REQUIRE(ann != NULL);
    CHECK(strstr(ann, "preferredHolder") == NULL);
    CHECK(strstr(ann, "strategy") == NULL);
    cJSON_Delete(put);
    cJSON_Delete(o);
}

/* Garbage in our annotation is somebody's: never taken at once. */
static void test_garbled_annotation_is_someone_elses(void)
{
    static const char *const bad[] = {"not json", "[1,2]", "\"x\"", "{\"holderIdentity\":"};
    for (size_t k = 0; k < 4; k++) {
        cJSON *c = cJSON_CreateObject();
        cJSON *md = cJSON_AddObjectToObject(c, "metadata");
        cJSON *an = cJSON_AddObjectToObject(md, "annotations");
        cJSON_AddStringToObject(an, ELECTION_CONFIGMAP_ANNOTATION, bad[k]);
        struct election_observation ob;
        election_record_decode(ELECTION_LOCK_CONFIGMAPS, c, &ob);
        CHECK(ob.rec.holder_overflow);
        CHECK_STR_EQ(ob.rec.holder, "");
        CHECK(ob.fingerprint != 0);
        cJSON_Delete(c);
    }
}

static void test_lenient_numbers(void)
{
    static const struct {
        const char *json;
        int lease, transitions;
    } rows[] = {
        {"{\"leaseDurationSeconds\":\"15\",\"leaderTransitions\":\"3\"}", 15, 3},
        {"{\"leaseDurationSeconds\":\" 15 \"}", 15, 0},
        {"{\"leaseDurationSeconds\":\"abc\",\"leaderTransitions\":-2}", 0, 0},
        {"{\"leaseDurationSeconds\":-5}", 0, 0},
        {"{\"leaseDurationSeconds\":1.5}", 0, 0},
        {"{\"leaseDurationSeconds\":1e12}", INT32_MAX, 0},
        {"{\"leaseDurationSeconds\":\"99999999999999\"}", INT32_MAX, 0},
        {"{\"leaseDurationSeconds\":null,\"leaderTransitions\":true}", 0, 0},
        {"{\"leaseDurationSeconds\":\"15s\"}", 0, 0},
    };
    for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
        struct election_record r;
        CHECK_INT_EQ(election_record_parse_annotation(rows[k].json, strlen(rows[k].json), &r), 0);
        CHECK_INT_EQ(r.lease_duration_s, rows[k].lease);
        CHECK_INT_EQ(r.transitions, rows[k].transitions);
    }
}

static void test_times_lenient(void)
{
    static const char *const js[] = {
        "{\"renewTime\":\"yesterday\"}",
        "{\"renewTime\":\"2026-13-29 15:00:00\"}",
        "{\"renewTime\":\"2026-11-29 15:00:00.\"}",
        "{\"renewTime\":12345}",
    };
    for (size_t k = 0; k < 4; k++) {
        struct election_record r;
        CHECK_INT_EQ(election_record_parse_annotation(js[k], strlen(js[k]), &r), 0);
        CHECK_INT_EQ(r.renew_wall_ns, 0);
    }
    int64_t ns = 0;
    setenv("TZ", "UTC", 1);
    tzset();
    CHECK_INT_EQ(election_parse_python_time("2026-11-29 15:00:00", &ns), 0);
    CHECK_INT_EQ(ns, rfc("2026-11-29T15:00:00Z"));
    CHECK_INT_EQ(election_parse_python_time("2026-11-29 15:00:00.5", &ns), 0);
    CHECK_INT_EQ(ns, rfc("2026-11-29T15:00:00.5Z"));
    CHECK_INT_EQ(election_parse_python_time("2026-11-29T15:00:00", &ns), -1);
}

static void test_fingerprint_tracks_record(void)
{
    const char *a = "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":\"x\","
                    "\"leaseDurationSeconds\":3,\"renewTime\":\"2025-11-29T15:00:00.000001Z\"}}";
    const char *b = "{\"spec\":{\"renewTime\":\"2025-11-29T15:00:00.000001Z\","
                    "\"leaseDurationSeconds\":3,\"holderIdentity\":\"x\"},\"metadata\":"
                    "{\"resourceVersion\":\"2\"}}";
    const char *c = "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":\"x\","
                    "\"leaseDurationSeconds\":3,\"renewTime\":\"2025-11-29T15:00:00.000002Z\"}}";
    struct election_observation oa, ob, oc;
    cJSON *ja = cx_json_parse(a, strlen(a)), *jb = cx_json_parse(b, strlen(b)),
          *jc = cx_json_parse(c, strlen(c));
    REQUIRE(ja && jb && jc);
    election_record_decode(ELECTION_LOCK_LEASES, ja, &oa);
    election_record_decode(ELECTION_LOCK_LEASES, jb, &ob);
    election_record_decode(ELECTION_LOCK_LEASES, jc, &oc);
    CHECK_INT_EQ(oa.fingerprint, ob.fingerprint); /* key order does not matter */
    CHECK(oa.fingerprint != oc.fingerprint);      /* a microsecond does */
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    cJSON_Delete(jc);
}

static void test_overlong_holder(void)
{
    char big[400];
    memset(big, 'h', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    cJSON *o = cJSON_CreateObject();
    cJSON *spec = cJSON_AddObjectToObject(o, "spec");
    cJSON_AddStringToObject(spec, "holderIdentity", big);
    struct election_observation ob;
    election_record_decode(ELECTION_LOCK_LEASES, o, &ob);
    CHECK(ob.rec.holder_overflow);
    CHECK_INT_EQ(strlen(ob.rec.holder), ELECTION_IDENTITY_MAX - 1);
    cJSON_Delete(o);
    /* A Lease without spec, and one whose spec is not an object. */
    const char *ns = "{\"metadata\":{\"resourceVersion\":\"3\"},\"spec\":7}";
    cJSON *j = cx_json_parse(ns, strlen(ns));
    election_record_decode(ELECTION_LOCK_LEASES, j, &ob);
    CHECK(ob.found);
    CHECK_STR_EQ(ob.rec.holder, "");
    CHECK(!ob.rec.holder_overflow);
    cJSON_Delete(j);
}

static const struct cxt_case cases[] = {
    CXT(test_decode_lease),
    CXT(test_lease_update_golden),
    CXT(test_lease_create_golden),
    CXT(test_lease_release_keeps_empty_holder),
    CXT(test_decode_python_configmap),
    CXT(test_decode_clientgo_configmap),
    CXT(test_configmap_update_golden),
    CXT(test_configmap_create_and_missing_annotations),
    CXT(test_configmap_keeps_preferred_holder),
    CXT(test_garbled_annotation_is_someone_elses),
    CXT(test_lenient_numbers),
    CXT(test_times_lenient),
    CXT(test_fingerprint_tracks_record),
    CXT(test_overlong_holder),
};
CXT_MAIN(cases)
