/* daemon_refs: what Gateways and Upstreams name in spec.tls, counted, with
 * a callback on every 0 <-> 1 transition (that is when the daemon feeds a
 * cached Secret or ConfigMap again). */
#include "cxtest.h"
#include "daemon_refs.h"

#include <stdio.h>
#include <string.h>

static char events[32][400];
static size_t nevents;

static void on_change(void *user, enum xlate_kind kind, const char *key, int referenced)
{
    (void)user;
    if (nevents < 32)
        snprintf(events[nevents++], sizeof(events[0]), "%s%s %s", referenced ? "+" : "-",
                 kind == XLATE_KIND_SECRET ? "Secret" : "ConfigMap", key);
}

static int saw(const char *e)
{
    for (size_t i = 0; i < nevents; i++)
        if (strcmp(events[i], e) == 0)
            return 1;
    return 0;
}

static cJSON *parse(const char *s)
{
    cJSON *j = cJSON_Parse(s);
    REQUIRE(j);
    return j;
}

static void test_refs_of(void)
{
    cJSON *gw = parse("{\"metadata\":{\"name\":\"gw\",\"namespace\":\"edge\"},\"spec\":{\"tls\":{"
                      "\"certificates\":[{\"secretRef\":{\"name\":\"www\"}},"
                      "{\"secretRef\":{\"name\":\"shop\",\"namespace\":\"certs\"}},"
                      "{\"secretRef\":{\"name\":\"www\",\"namespace\":\"edge\"}},"
                      "{\"secretRef\":{}},{\"nope\":1}],"
                      "\"clientValidation\":{\"caConfigMapRef\":{\"name\":\"clients\"}}}}}");
    struct daemon_ref r[8];
    size_t n = daemon_refs_of(XLATE_KIND_GATEWAY, gw, r, 8);
    REQUIRE_INT_EQ(n, 3);
    CHECK_INT_EQ(r[0].kind, XLATE_KIND_SECRET);
    CHECK_STR_EQ(r[0].key, "edge/www");
    CHECK_STR_EQ(r[1].key, "certs/shop");
    CHECK_INT_EQ(r[2].kind, XLATE_KIND_CONFIG_MAP);
    CHECK_STR_EQ(r[2].key, "edge/clients");
    /* a Gateway's listeners' own certificates and CAs, after spec.tls's,
     * each once; an HTTP listener without tls names nothing */
    cJSON *lgw =
        parse("{\"metadata\":{\"name\":\"gw\",\"namespace\":\"edge\"},\"spec\":{"
              "\"tls\":{\"certificates\":[{\"secretRef\":{\"name\":\"www\"}}]},\"listeners\":["
              "{\"name\":\"a\",\"port\":80},"
              "{\"name\":\"b\",\"port\":443,\"protocol\":\"HTTPS\",\"tls\":{\"certificates\":["
              "{\"secretRef\":{\"name\":\"internal\"}},{\"secretRef\":{\"name\":\"www\"}},"
              "{\"secretRef\":{\"name\":\"shop\",\"namespace\":\"certs\"}}],"
              "\"clientValidation\":{\"caConfigMapRef\":{\"name\":\"clients\"}}}},"
              "{\"name\":\"c\",\"port\":8443,\"protocol\":\"HTTPS\",\"tls\":[1]}]}}");
    n = daemon_refs_of(XLATE_KIND_GATEWAY, lgw, r, 8);
    REQUIRE_INT_EQ(n, 4);
    CHECK_STR_EQ(r[0].key, "edge/www");
    CHECK_STR_EQ(r[1].key, "edge/internal");
    CHECK_INT_EQ(r[1].kind, XLATE_KIND_SECRET);
    CHECK_STR_EQ(r[2].key, "certs/shop");
    CHECK_INT_EQ(r[3].kind, XLATE_KIND_CONFIG_MAP);
    CHECK_STR_EQ(r[3].key, "edge/clients");
    /* listeners alone, without spec.tls */
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(lgw, "spec"), "tls");
    n = daemon_refs_of(XLATE_KIND_GATEWAY, lgw, r, 8);
    REQUIRE_INT_EQ(n, 4);
    CHECK_STR_EQ(r[0].key, "edge/internal");
    CHECK_STR_EQ(r[1].key, "edge/www");
    cJSON_Delete(lgw);
    /* an Upstream: CA and client certificate; other kinds: nothing */
    cJSON *up = parse("{\"metadata\":{\"name\":\"be\"},\"spec\":{\"tls\":{"
                      "\"caConfigMapRef\":{\"name\":\"ca\",\"key\":\"x\"},"
                      "\"clientCertificate\":{\"secretRef\":{\"name\":\"client\"}}}}}");
    n = daemon_refs_of(XLATE_KIND_UPSTREAM, up, r, 8);
    REQUIRE_INT_EQ(n, 2);
    CHECK_STR_EQ(r[0].key, "default/ca");
    CHECK_STR_EQ(r[1].key, "default/client");
    CHECK_INT_EQ(daemon_refs_of(XLATE_KIND_VIRTUAL_SERVICE, up, r, 8), 0);
    CHECK_INT_EQ(daemon_refs_of(XLATE_KIND_GATEWAY, gw, r, 1), 1); /* capped */
    cJSON_Delete(gw);
    cJSON_Delete(up);
}

static void test_counts_and_transitions(void)
{
    struct daemon_refs *r = daemon_refs_new();
    REQUIRE(r);
    cJSON *a = parse("{\"metadata\":{\"namespace\":\"ns\"},\"spec\":{\"tls\":{\"certificates\":["
                     "{\"secretRef\":{\"name\":\"www\"}}]}}}");
    cJSON *b = parse("{\"metadata\":{\"namespace\":\"ns\"},\"spec\":{\"tls\":{\"certificates\":["
                     "{\"secretRef\":{\"name\":\"www\"}},{\"secretRef\":{\"name\":\"shop\"}}]}}}");
    cJSON *u = parse("{\"metadata\":{\"namespace\":\"ns\"},\"spec\":{\"tls\":{"
                     "\"caConfigMapRef\":{\"name\":\"ca\"}}}}");
    nevents = 0;
    REQUIRE_INT_EQ(daemon_refs_set(r, XLATE_KIND_GATEWAY, "ns/a", a, on_change, NULL), 0);
    CHECK_INT_EQ(nevents, 1);
    CHECK(saw("+Secret ns/www"));
    CHECK(daemon_refs_has(r, XLATE_KIND_SECRET, "ns", "www"));
    CHECK(!daemon_refs_has(r, XLATE_KIND_CONFIG_MAP, "ns", "www"));
    /* a second owner of the same Secret: no transition */
    nevents = 0;
    REQUIRE_INT_EQ(daemon_refs_set(r, XLATE_KIND_GATEWAY, "ns/b", b, on_change, NULL), 0);
    CHECK_INT_EQ(nevents, 1);
    CHECK(saw("+Secret ns/shop"));
    CHECK_INT_EQ(daemon_refs_count(r, XLATE_KIND_SECRET), 2);
    REQUIRE_INT_EQ(daemon_refs_set(r, XLATE_KIND_UPSTREAM, "ns/u", u, on_change, NULL), 0);
    CHECK(saw("+ConfigMap ns/ca"));
    CHECK_INT_EQ(daemon_refs_count(r, XLATE_KIND_CONFIG_MAP), 1);
    /* the same references again: nothing */
    nevents = 0;
    REQUIRE_INT_EQ(daemon_refs_set(r, XLATE_KIND_GATEWAY, "ns/b", b, on_change, NULL), 0);
    CHECK_INT_EQ(nevents, 0);
    /* b changes to a's set: shop goes, www stays */
    REQUIRE_INT_EQ(daemon_refs_set(r, XLATE_KIND_GATEWAY, "ns/b", a, on_change, NULL), 0);
    CHECK_INT_EQ(nevents, 1);
    CHECK(saw("-Secret ns/shop"));
    CHECK(!daemon_refs_has(r, XLATE_KIND_SECRET, "ns", "shop"));
    /* a leaves: www is still b's */
    nevents = 0;
    REQUIRE_INT_EQ(daemon_refs_set(r, XLATE_KIND_GATEWAY, "ns/a", NULL, on_change, NULL), 0);
    CHECK_INT_EQ(nevents, 0);
    CHECK(daemon_refs_has(r, XLATE_KIND_SECRET, "ns", "www"));
    REQUIRE_INT_EQ(daemon_refs_set(r, XLATE_KIND_GATEWAY, "ns/b", NULL, on_change, NULL), 0);
    CHECK(saw("-Secret ns/www"));
    CHECK_INT_EQ(daemon_refs_count(r, XLATE_KIND_SECRET), 0);
    /* an owner that was never there leaving: nothing */
    nevents = 0;
    REQUIRE_INT_EQ(daemon_refs_set(r, XLATE_KIND_UPSTREAM, "ns/x", NULL, on_change, NULL), 0);
    CHECK_INT_EQ(nevents, 0);
    daemon_refs_free(r); /* frees what u still holds */
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(u);
}

/* The kept form's list (daemon_refs_of when the object was decoded) moves
 * references as the JSON does: mixing the two for one owner works. */
static void test_set_from_a_kept_list(void)
{
    struct daemon_refs *r = daemon_refs_new();
    REQUIRE(r);
    cJSON *b = parse("{\"metadata\":{\"namespace\":\"ns\"},\"spec\":{\"tls\":{\"certificates\":["
                     "{\"secretRef\":{\"name\":\"www\"}},{\"secretRef\":{\"name\":\"shop\"}}]}}}");
    struct daemon_ref refs[DAEMON_REFS_MAX];
    size_t n = daemon_refs_of(XLATE_KIND_GATEWAY, b, refs, DAEMON_REFS_MAX);
    REQUIRE_INT_EQ(n, 2);
    nevents = 0;
    REQUIRE_INT_EQ(daemon_refs_set_list(r, XLATE_KIND_GATEWAY, "ns/b", refs, n, on_change, NULL),
                   0);
    CHECK_INT_EQ(nevents, 2);
    CHECK(saw("+Secret ns/www") && saw("+Secret ns/shop"));
    /* the same owner by JSON: the same references, nothing moves */
    nevents = 0;
    REQUIRE_INT_EQ(daemon_refs_set(r, XLATE_KIND_GATEWAY, "ns/b", b, on_change, NULL), 0);
    CHECK_INT_EQ(nevents, 0);
    /* one left in the list: shop goes */
    REQUIRE_INT_EQ(daemon_refs_set_list(r, XLATE_KIND_GATEWAY, "ns/b", refs, 1, on_change, NULL),
                   0);
    CHECK_INT_EQ(nevents, 1);
    CHECK(saw("-Secret ns/shop"));
    CHECK(daemon_refs_has(r, XLATE_KIND_SECRET, "ns", "www"));
    /* none: the owner's last reference goes */
    REQUIRE_INT_EQ(daemon_refs_set_list(r, XLATE_KIND_GATEWAY, "ns/b", NULL, 0, on_change, NULL),
                   0);
    CHECK(saw("-Secret ns/www"));
    CHECK_INT_EQ(daemon_refs_count(r, XLATE_KIND_SECRET), 0);
    daemon_refs_free(r);
    cJSON_Delete(b);
}

static const struct cxt_case cases[] = {
    CXT(test_set_from_a_kept_list),
    CXT(test_refs_of),
    CXT(test_counts_and_transitions),
};
CXT_MAIN(cases)
