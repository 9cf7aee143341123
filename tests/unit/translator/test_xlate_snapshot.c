#include "cxtest.h"
#include "xlate_snapshot.h"

#include <stdlib.h>
#include <string.h>

static struct xds_resource *res(const char *name, const char *payload)
{
    size_t n = strlen(payload);
    uint8_t *b = malloc(n ? n : 1);
    memcpy(b, payload, n);
    return xlate_resource_new(XDS_CLUSTER, name, b, n);
}

static void test_resource_version_is_content_hash(void)
{
    struct xds_resource *a = res("a", "payload-1");
    struct xds_resource *b = res("b", "payload-1");
    struct xds_resource *c = res("a", "payload-2");
    REQUIRE(a && b && c);
    CHECK_INT_EQ(strlen(a->version), XDS_VERSION_LEN);
    CHECK_STR_EQ(a->version, b->version);
    CHECK(strcmp(a->version, c->version) != 0);
    xlate_resource_unref(a);
    xlate_resource_unref(b);
    xlate_resource_unref(c);
}

static void test_set_seal_sorts_and_versions(void)
{
    struct xds_resource *items1[3] = {res("c", "3"), res("a", "1"), res("b", "2")};
    struct xds_resource *items2[3] = {res("b", "2"), res("c", "3"), res("a", "1")};
    struct xds_resource_set s1 = {.n = 3, .items = items1};
    struct xds_resource_set s2 = {.n = 3, .items = items2};
    REQUIRE_INT_EQ(xlate_resource_set_seal(&s1), 0);
    REQUIRE_INT_EQ(xlate_resource_set_seal(&s2), 0);
    CHECK_STR_EQ(s1.items[0]->name, "a");
    CHECK_STR_EQ(s1.items[2]->name, "c");
    /* input order does not change the version */
    CHECK_STR_EQ(s1.version, s2.version);
    CHECK(xlate_resource_set_find(&s1, "b") == s1.items[1]);
    CHECK(xlate_resource_set_find(&s1, "zz") == NULL);
    /* changing one resource changes the set version */
    char old[XDS_VERSION_LEN + 1];
    memcpy(old, s2.version, sizeof(old));
    xlate_resource_unref(s2.items[1]);
    s2.items[1] = res("b", "2'");
    REQUIRE_INT_EQ(xlate_resource_set_seal(&s2), 0);
    CHECK(strcmp(old, s2.version) != 0);
    for (int i = 0; i < 3; i++) {
        xlate_resource_unref(items1[i]);
        xlate_resource_unref(items2[i]);
    }
}

static void test_set_rejects_duplicates(void)
{
    struct xds_resource *items[2] = {res("x", "1"), res("x", "2")};
    struct xds_resource_set s = {.n = 2, .items = items};
    CHECK_INT_EQ(xlate_resource_set_seal(&s), -1);
    xlate_resource_unref(items[0]);
    xlate_resource_unref(items[1]);
}

static void test_type_urls(void)
{
    CHECK_INT_EQ(xlate_type_from_url(XDS_TYPE_URL_ROUTE), XDS_ROUTE);
    CHECK_INT_EQ(xlate_type_from_url("type.googleapis.com/envoy.config.listener.v3.Listener"),
                 XDS_LISTENER);
    CHECK_INT_EQ(xlate_type_from_url("type.googleapis.com/envoy.api.v2.Listener"), -1);
    CHECK_STR_EQ(xlate_type_short(XDS_ENDPOINT), "EDS");
    CHECK_STR_EQ(xlate_state_name(XLATE_REJECTED), "Rejected");
}

static const struct cxt_case cases[] = {
    CXT(test_resource_version_is_content_hash),
    CXT(test_set_seal_sorts_and_versions),
    CXT(test_set_rejects_duplicates),
    CXT(test_type_urls),
};
CXT_MAIN(cases)
