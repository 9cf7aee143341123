/* Change-significance digest: what it ignores, what it does not, and that
 * its input is exactly cx_json_canonical() of the pruned object. */
#include "cx_json.h"
#include "cxtest.h"
#include "filter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *VS =
    "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\","
    "\"metadata\":{\"name\":\"web\",\"namespace\":\"app\",\"uid\":\"u-1\","
    "\"resourceVersion\":\"100\",\"generation\":3,\"creationTimestamp\":\"2024-01-01T00:00:00Z\","
    "\"labels\":{\"team\":\"a\"},\"annotations\":{\"note\":\"x\","
    "\"control-plane.alpha.kubernetes.io/leader\":\"{\\\"holderIdentity\\\":\\\"a\\\"}\"},"
    "\"managedFields\":[{\"manager\":\"kubectl\",\"operation\":\"Apply\"}]},"
    "\"spec\":{\"domains\":[\"a.example.com\"],\"routes\":[{\"prefix\":\"/\",\"weight\":1.5}]},"
    "\"status\":{\"state\":\"Accepted\",\"observedGeneration\":3}}";

static uint64_t digest_of(const char *json)
{
    cJSON *o = cJSON_Parse(json);
    struct cx_buf b;
    cx_buf_init(&b, 0);
    uint64_t d = 0;
    if (!o || filter_digest(o, &b, &d) != 0)
        d = 0;
    cx_buf_free(&b);
    cJSON_Delete(o);
    return d;
}

/* Parses VS, applies |edit| to it, returns its digest. */
static uint64_t digest_edited(void (*edit)(cJSON *))
{
    cJSON *o = cJSON_Parse(VS);
    edit(o);
    struct cx_buf b;
    cx_buf_init(&b, 0);
    uint64_t d = 0;
    if (filter_digest(o, &b, &d) != 0)
        d = 0;
    cx_buf_free(&b);
    cJSON_Delete(o);
    return d;
}

static cJSON *md(cJSON *o)
{
    return cJSON_GetObjectItemCaseSensitive(o, "metadata");
}

static void e_rv(cJSON *o)
{
    cJSON_ReplaceItemInObject(md(o), "resourceVersion", cJSON_CreateString("101"));
}
static void e_generation(cJSON *o)
{
    cJSON_ReplaceItemInObject(md(o), "generation", cJSON_CreateNumber(4));
}
static void e_managed(cJSON *o)
{
    cJSON_DeleteItemFromObject(md(o), "managedFields");
}
static void e_status(cJSON *o)
{
    cJSON_ReplaceItemInObject(o, "status", cJSON_CreateString("whatever"));
}
static void e_no_status(cJSON *o)
{
    cJSON_DeleteItemFromObject(o, "status");
}
static void e_leader(cJSON *o)
{
    cJSON_ReplaceItemInObject(cJSON_GetObjectItemCaseSensitive(md(o), "annotations"),
                              "control-plane.alpha.kubernetes.io/leader",
                              cJSON_CreateString("{\"holderIdentity\":\"b\"}"));
}
static void e_spec(cJSON *o)
{
    cJSON *r = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "spec"), "routes"), 0);
    cJSON_ReplaceItemInObject(r, "prefix", cJSON_CreateString("/api"));
}
static void e_label(cJSON *o)
{
    cJSON_ReplaceItemInObject(cJSON_GetObjectItemCaseSensitive(md(o), "labels"), "team",
                              cJSON_CreateString("b"));
}
static void e_annotation(cJSON *o)
{
    cJSON_ReplaceItemInObject(cJSON_GetObjectItemCaseSensitive(md(o), "annotations"), "note",
                              cJSON_CreateString("y"));
}
static void e_deletion(cJSON *o)
{
    cJSON_AddStringToObject(md(o), "deletionTimestamp", "2024-01-02T00:00:00Z");
}
static void e_uid(cJSON *o)
{
    cJSON_ReplaceItemInObject(md(o), "uid", cJSON_CreateString("u-2"));
}
static void e_nothing(cJSON *o)
{
    (void)o;
}

static void test_ignored_changes(void)
{
    uint64_t base = digest_edited(e_nothing);
    CHECK(base != 0);
    CHECK(digest_edited(e_rv) == base);
    CHECK(digest_edited(e_generation) == base);
    CHECK(digest_edited(e_managed) == base);
    CHECK(digest_edited(e_status) == base);
    CHECK(digest_edited(e_no_status) == base);
    CHECK(digest_edited(e_leader) == base);
}

static void test_significant_changes(void)
{
    uint64_t base = digest_edited(e_nothing);
    void (*edits[])(cJSON *) = {e_spec, e_label, e_annotation, e_deletion, e_uid};
    for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++)
        CHECK(digest_edited(edits[i]) != base);
}

static void test_key_order_and_whitespace_do_not_matter(void)
{
    uint64_t a = digest_of("{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"1\",\"b\":\"2\"}},"
                           "\"data\":{\"k\":\"v\",\"j\":\"w\"}}");
    uint64_t b = digest_of("{ \"data\" : {\"j\":\"w\", \"k\":\"v\"}, \"metadata\": {\"labels\":"
                           "{\"b\":\"2\",\"a\":\"1\"}, \"name\":\"n\"} }");
    CHECK(a == b);
    uint64_t c = digest_of("{\"metadata\":{\"name\":\"n\"},\"data\":[1,2]}");
    uint64_t d = digest_of("{\"metadata\":{\"name\":\"n\"},\"data\":[2,1]}");
    CHECK(c != d); /* array order is content */
}

static void test_leader_only_annotations_equal_none(void)
{
    /* a ConfigMap lock: creating the record must not count as a change */
    uint64_t none = digest_of("{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"lock\"}}");
    uint64_t leader = digest_of(
        "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"lock\",\"annotations\":{"
        "\"control-plane.alpha.kubernetes.io/leader\":\"{}\"},\"resourceVersion\":\"7\"}}");
    CHECK(none == leader);
    uint64_t other = digest_of(
        "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"lock\",\"annotations\":{\"a\":\"b\"}}}");
    CHECK(none != other);
    /* only metadata's own fields are pruned, not same-named ones deeper */
    uint64_t s1 = digest_of("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"status\":1,"
                            "\"resourceVersion\":\"1\"}}");
    uint64_t s2 = digest_of("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"status\":2,"
                            "\"resourceVersion\":\"1\"}}");
    CHECK(s1 != s2);
}

static void test_input_is_canonical_of_pruned_copy(void)
{
    cJSON *o = cJSON_Parse(VS);
    REQUIRE(o);
    struct cx_buf got, want;
    cx_buf_init(&got, 0);
    cx_buf_init(&want, 0);
    REQUIRE_INT_EQ(filter_digest_input(o, &got), 0);
    cJSON *copy = cJSON_Duplicate(o, 1);
    cJSON_DeleteItemFromObject(copy, "status");
    cJSON_DeleteItemFromObject(md(copy), "resourceVersion");
    cJSON_DeleteItemFromObject(md(copy), "managedFields");
    cJSON_DeleteItemFromObject(md(copy), "generation");
    cJSON_DeleteItemFromObject(cJSON_GetObjectItemCaseSensitive(md(copy), "annotations"),
                               "control-plane.alpha.kubernetes.io/leader");
    REQUIRE_INT_EQ(cx_json_canonical(copy, &want), 0);
    CHECK_STR_EQ(got.data, want.data);
    CHECK(strstr(got.data, "\"spec\":{\"domains\"") != NULL);
    CHECK(strstr(got.data, "status") == NULL);
    cx_buf_free(&got);
    cx_buf_free(&want);
    cJSON_Delete(copy);
    cJSON_Delete(o);
}

static void test_many_keys_and_odd_inputs(void)
{
    /* more than 32 keys takes the heap path of the sorter */
    cJSON *o = cJSON_CreateObject();
    cJSON *m = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(m, "name", "n");
    cJSON *a = cJSON_AddObjectToObject(m, "annotations");
    char k[16];
    for (int i = 40; i > 0; i--) {
        snprintf(k, sizeof(k), "k%02d", i);
        cJSON_AddStringToObject(a, k, "v");
        cJSON_AddNumberToObject(o, k, i);
    }
    struct cx_buf b;
    cx_buf_init(&b, 0);
    REQUIRE_INT_EQ(filter_digest_input(o, &b), 0);
    CHECK(strncmp(b.data, "{\"k01\":1,\"k02\":2,", 17) == 0);
    CHECK(strstr(b.data, "\"annotations\":{\"k01\":\"v\",\"k02\":\"v\"") != NULL);
    cx_buf_free(&b);
    cJSON_Delete(o);

    /* non-objects and a too small cap */
    cJSON *arr = cJSON_Parse("[1,2]");
    cx_buf_init(&b, 0);
    REQUIRE_INT_EQ(filter_digest_input(arr, &b), 0);
    CHECK_STR_EQ(b.data, "[1,2]");
    cx_buf_free(&b);
    cJSON_Delete(arr);
    cJSON *big = cJSON_Parse(VS);
    cx_buf_init(&b, 16);
    uint64_t d;
    CHECK_INT_EQ(filter_digest(big, &b, &d), -1);
    cx_buf_free(&b);
    cJSON_Delete(big);
}

static const struct cxt_case cases[] = {
    CXT(test_ignored_changes),
    CXT(test_significant_changes),
    CXT(test_key_order_and_whitespace_do_not_matter),
    CXT(test_leader_only_annotations_equal_none),
    CXT(test_input_is_canonical_of_pruned_copy),
    CXT(test_many_keys_and_odd_inputs),
};
CXT_MAIN(cases)
