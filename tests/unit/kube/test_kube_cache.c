/* The informer store: refcounted objects, primary and secondary indexes,
 * replacement and removal, growth with tombstones, sorted views. */
#include "cx_json.h"
#include "cxtest.h"
#include "kube_cache.h"

#include <stdio.h>
#include <string.h>

static struct kube_obj *mk(const char *ns, const char *name, const char *rv, const char *app)
{
    char buf[512];
    if (app)
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"resourceVersion\":\"%s\","
                 "\"uid\":\"u-%s\",\"labels\":{\"app\":\"%s\"}}}",
                 ns, name, rv, name, app);
    else if (ns)
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"resourceVersion\":\"%s\"}}",
                 ns, name, rv);
    else
        snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"%s\"}}",
                 name, rv);
    return kube_obj_new(cx_json_parse(buf, strlen(buf)));
}

static int count_cb(void *ud, struct kube_obj *o)
{
    (void)o;
    (*(int *)ud)++;
    return 0;
}

static void test_obj_fields_and_refs(void)
{
    struct kube_obj *o = mk("ns1", "a", "7", "web");
    REQUIRE(o != NULL);
    CHECK_STR_EQ(o->key, "ns1/a");
    CHECK_STR_EQ(o->ns, "ns1");
    CHECK_STR_EQ(o->name, "a");
    CHECK_STR_EQ(o->rv, "7");
    CHECK_STR_EQ(o->uid, "u-a");
    CHECK_STR_EQ(kube_obj_label(o, "app"), "web");
    CHECK(kube_obj_label(o, "nope") == NULL);
    struct kube_obj *c = mk(NULL, "cluster-wide", "1", NULL);
    CHECK_STR_EQ(c->key, "cluster-wide");
    CHECK_STR_EQ(c->ns, "");
    CHECK_STR_EQ(c->uid, "");
    CHECK(kube_obj_ref(o) == o);
    CHECK_INT_EQ(atomic_load(&o->refs), 2);
    kube_obj_unref(o);
    kube_obj_unref(o);
    kube_obj_unref(c);
    kube_obj_unref(NULL);
    /* No name: refused, json left to the caller. */
    cJSON *j = cx_json_parse("{\"metadata\":{}}", 15);
    CHECK(kube_obj_new(j) == NULL);
    cJSON_Delete(j);
}

static void test_put_replace_remove_indexes(void)
{
    struct kube_cache *c = kube_cache_new();
    REQUIRE_INT_EQ(kube_cache_index_label(c, "app"), 0);
    CHECK(kube_cache_put(c, mk("ns1", "a", "1", "web")) == NULL);
    CHECK(kube_cache_put(c, mk("ns1", "b", "2", "db")) == NULL);
    CHECK(kube_cache_put(c, mk("ns2", "a", "3", "web")) == NULL);
    CHECK_INT_EQ(kube_cache_len(c), 3);
    int n = 0;
    CHECK_INT_EQ(kube_cache_foreach_label(c, "app", "web", count_cb, &n), 2);
    n = 0;
    CHECK_INT_EQ(kube_cache_foreach_ns(c, "ns1", count_cb, &n), 2);
    CHECK_INT_EQ(kube_cache_foreach_ns(c, "ns3", count_cb, &n), 0);
    CHECK_INT_EQ(kube_cache_foreach_label(c, "tier", "x", count_cb, &n), 0); /* not indexed */

    /* Replace ns1/a with a new version whose label changed: the label
     * index follows, the old object comes back to the caller. */
    struct kube_obj *old = kube_cache_put(c, mk("ns1", "a", "4", "db"));
    REQUIRE(old != NULL);
    CHECK_STR_EQ(old->rv, "1");
    kube_obj_unref(old);
    CHECK_STR_EQ(kube_cache_get(c, "ns1/a")->rv, "4");
    CHECK_INT_EQ(kube_cache_len(c), 3);
    CHECK_INT_EQ(kube_cache_foreach_label(c, "app", "web", count_cb, &n), 1);
    CHECK_INT_EQ(kube_cache_foreach_label(c, "app", "db", count_cb, &n), 2);

    struct kube_obj *r = kube_cache_remove(c, "ns1/b");
    REQUIRE(r != NULL);
    kube_obj_unref(r);
    CHECK(kube_cache_remove(c, "ns1/b") == NULL);
    CHECK(kube_cache_get(c, "ns1/b") == NULL);
    CHECK_INT_EQ(kube_cache_foreach_label(c, "app", "db", count_cb, &n), 1);
    CHECK_INT_EQ(kube_cache_len(c), 2);

    /* An index added late covers what is already there. */
    REQUIRE_INT_EQ(kube_cache_index_label(c, "missing"), 0);
    CHECK_INT_EQ(kube_cache_foreach_label(c, "missing", "x", count_cb, &n), 0);
    kube_cache_free(c);
}

static void test_growth_churn_and_sorted_view(void)
{
    struct kube_cache *c = kube_cache_new();
    kube_cache_index_label(c, "app");
    char name[32];
    /* Churn: add 5000, remove every other, re-add, many tombstones. */
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 5000; i++) {
            snprintf(name, sizeof(name), "o%05d", i);
            kube_obj_unref(kube_cache_put(c, mk("ns", name, "1", i % 2 ? "odd" : "even")));
        }
        for (int i = 0; i < 5000; i += 2) {
            snprintf(name, sizeof(name), "ns/o%05d", i);
            kube_obj_unref(kube_cache_remove(c, name));
        }
    }
    CHECK_INT_EQ(kube_cache_len(c), 2500);
    int n = 0;
    CHECK_INT_EQ(kube_cache_foreach_label(c, "app", "odd", count_cb, &n), 2500);
    CHECK_INT_EQ(kube_cache_foreach_label(c, "app", "even", count_cb, &n), 0);
    size_t k = 0;
    struct kube_obj **l = kube_cache_list(c, &k);
    REQUIRE_INT_EQ(k, 2500);
    for (size_t i = 1; i < k; i++)
        CHECK(strcmp(l[i - 1]->key, l[i]->key) < 0);
    CHECK_STR_EQ(l[0]->key, "ns/o00001");
    /* The view outlives the cache. */
    kube_cache_free(c);
    CHECK_STR_EQ(l[k - 1]->key, "ns/o04999");
    kube_cache_list_free(l, k);
}

static const struct cxt_case cases[] = {
    CXT(test_obj_fields_and_refs),
    CXT(test_put_replace_remove_indexes),
    CXT(test_growth_churn_and_sorted_view),
};
CXT_MAIN(cases)
