/* store: put/replace/remove with the generation, and views that stay valid
 * (their own references) while the store changes under them. */
#include "cx_json.h"
#include "cxtest.h"
#include "store.h"

#include <stdio.h>
#include <string.h>

static struct kube_obj *obj(const char *ns, const char *name, const char *rv)
{
    char buf[256];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"namespace\":\"%s\","
             "\"name\":\"%s\",\"resourceVersion\":\"%s\"}}",
             ns, name, rv);
    cJSON *j = cx_json_parse(buf, strlen(buf));
    return kube_obj_new(j);
}

static void test_put_get_remove(void)
{
    struct store *s = store_new();
    REQUIRE(s != NULL);
    uint64_t g0 = store_generation(s);
    struct kube_obj *a = obj("ns", "a", "1");
    REQUIRE_INT_EQ(store_put(s, XLATE_KIND_SERVICE, a, 11), 0);
    CHECK(store_generation(s) > g0);
    const struct store_entry *e = store_get(s, XLATE_KIND_SERVICE, "ns/a");
    REQUIRE(e != NULL);
    CHECK(e->obj == a);
    CHECK_INT_EQ(e->digest, 11);
    CHECK(store_get(s, XLATE_KIND_UPSTREAM, "ns/a") == NULL); /* kinds apart */
    /* Replace: the old object is released, the entry holds the new one. */
    struct kube_obj *a2 = obj("ns", "a", "2");
    uint64_t g1 = store_generation(s);
    REQUIRE_INT_EQ(store_put(s, XLATE_KIND_SERVICE, a2, 22), 0);
    CHECK(store_generation(s) > g1);
    e = store_get(s, XLATE_KIND_SERVICE, "ns/a");
    CHECK(e->obj == a2);
    CHECK_INT_EQ(e->digest, 22);
    CHECK_STR_EQ(e->obj->rv, "2");
    CHECK_INT_EQ(store_len(s, XLATE_KIND_SERVICE), 1);
    CHECK_INT_EQ(store_total(s), 1);
    CHECK_INT_EQ(store_remove(s, XLATE_KIND_SERVICE, "ns/a"), 1);
    CHECK_INT_EQ(store_remove(s, XLATE_KIND_SERVICE, "ns/a"), 0);
    CHECK_INT_EQ(store_total(s), 0);
    store_free(s);
}

static void test_view_outlives_changes(void)
{
    struct store *s = store_new();
    REQUIRE(s != NULL);
    for (int i = 0; i < 50; i++) {
        char name[16];
        snprintf(name, sizeof(name), "o%d", i);
        REQUIRE_INT_EQ(store_put(s, i % 2 ? XLATE_KIND_SERVICE : XLATE_KIND_ENDPOINT_SLICE,
                                 obj("ns", name, "1"), (uint64_t)i + 1),
                       0);
    }
    struct store_view *v = store_view_new(s);
    REQUIRE(v != NULL);
    CHECK_INT_EQ(v->n, 50);
    CHECK_INT_EQ(v->generation, store_generation(s));
    /* Kinds and digests come along. */
    size_t svc = 0;
    for (size_t i = 0; i < v->n; i++) {
        CHECK(v->objects[i].obj == v->objs[i]->json);
        CHECK(v->objects[i].digest != 0);
        svc += v->objects[i].kind == XLATE_KIND_SERVICE;
    }
    CHECK_INT_EQ(svc, 25);
    /* Empty the store: the view still holds every object (ASan would see
     * a use after free otherwise). */
    for (int i = 0; i < 50; i++) {
        char key[16];
        snprintf(key, sizeof(key), "ns/o%d", i);
        store_remove(s, i % 2 ? XLATE_KIND_SERVICE : XLATE_KIND_ENDPOINT_SLICE, key);
    }
    CHECK(v->generation != store_generation(s));
    size_t named = 0;
    for (size_t i = 0; i < v->n; i++)
        named += cx_json_path_str(v->objects[i].obj, "metadata", "name", NULL) != NULL;
    CHECK_INT_EQ(named, 50);
    struct store_view *v2 = store_view_ref(v);
    store_view_unref(v);
    CHECK_INT_EQ(v2->n, 50);
    store_view_unref(v2);
    struct store_view *e = store_view_new(s);
    REQUIRE(e != NULL);
    CHECK_INT_EQ(e->n, 0);
    store_view_unref(e);
    store_free(s);
}

static void test_views_carry_the_changes(void)
{
    struct store *s = store_new();
    REQUIRE(s != NULL);
    REQUIRE_INT_EQ(store_put(s, XLATE_KIND_SERVICE, obj("ns", "a", "1"), 1), 0);
    REQUIRE_INT_EQ(store_put(s, XLATE_KIND_SERVICE, obj("ns", "c", "1"), 3), 0);
    struct store_view *v0 = store_view_new(s);
    REQUIRE(v0 != NULL);
    CHECK_INT_EQ(v0->nchanges, 2); /* everything is new to the first view */
    CHECK(v0->changes_complete);
    store_view_unref(v0);
    /* a changes twice (coalesced), b appears, c goes; kinds stay apart. */
    struct kube_obj *a2 = obj("ns", "a", "2"), *a3 = obj("ns", "a", "3");
    REQUIRE_INT_EQ(store_put(s, XLATE_KIND_SERVICE, a2, 2), 0);
    REQUIRE_INT_EQ(store_put(s, XLATE_KIND_SERVICE, a3, 4), 0);
    REQUIRE_INT_EQ(store_put(s, XLATE_KIND_ENDPOINT_SLICE, obj("ns", "a", "1"), 5), 0);
    CHECK_INT_EQ(store_remove(s, XLATE_KIND_SERVICE, "ns/c"), 1);
    struct store_view *v = store_view_new(s);
    REQUIRE(v != NULL);
    CHECK(v->changes_complete);
    CHECK_INT_EQ(v->n, 2);
    CHECK_INT_EQ(v->nchanges, 3);
    int seen_a = 0, seen_del = 0, seen_slice = 0;
    for (size_t i = 0; i < v->nchanges; i++) {
        const struct xlate_change *c = &v->changes[i];
        if (c->kind == XLATE_KIND_SERVICE && c->obj) {
            seen_a++;
            CHECK(c->obj == a3->json); /* the latest */
            CHECK_INT_EQ(c->digest, 4);
        } else if (c->kind == XLATE_KIND_SERVICE) {
            seen_del++;
            CHECK_STR_EQ(c->namespace, "ns");
            CHECK_STR_EQ(c->name, "c");
        } else if (c->kind == XLATE_KIND_ENDPOINT_SLICE) {
            seen_slice++;
        }
    }
    CHECK_INT_EQ(seen_a, 1);
    CHECK_INT_EQ(seen_del, 1);
    CHECK_INT_EQ(seen_slice, 1);
    /* The view keeps the changed objects alive after the store dropped them. */
    CHECK_INT_EQ(store_remove(s, XLATE_KIND_SERVICE, "ns/a"), 1);
    CHECK_STR_EQ(cx_json_path_str(v->changes[0].obj ? v->changes[0].obj : a3->json, "metadata",
                                  "namespace", NULL),
                 "ns");
    store_view_unref(v);
    struct store_view *v2 = store_view_new(s);
    REQUIRE(v2 != NULL);
    CHECK_INT_EQ(v2->nchanges, 1); /* the removal of a */
    store_view_unref(v2);
    struct store_view *v3 = store_view_new(s);
    REQUIRE(v3 != NULL);
    CHECK_INT_EQ(v3->nchanges, 0);
    store_view_unref(v3);
    store_free(s);
}

static const struct cxt_case cases[] = {
    CXT(test_views_carry_the_changes),
    CXT(test_put_get_remove),
    CXT(test_view_outlives_changes),
};
CXT_MAIN(cases)
