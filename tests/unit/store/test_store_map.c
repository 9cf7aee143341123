/* store_map against a reference model: random puts, replaces and removes
 * (backward-shift deletion must keep every probe chain reachable), growth,
 * iteration. */
#include "cxtest.h"
#include "store_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NKEYS 3000

static char keys[NKEYS][24];
static int present[NKEYS];
static int values[NKEYS];

static void test_empty(void)
{
    struct store_map m;
    store_map_init(&m);
    CHECK(store_map_get(&m, "x") == NULL);
    CHECK(store_map_remove(&m, "x") == NULL);
    CHECK_INT_EQ(store_map_len(&m), 0);
    store_map_free(&m);
}

static void test_put_replace_remove(void)
{
    struct store_map m;
    store_map_init(&m);
    int a = 1, b = 2, err = 0;
    CHECK(store_map_put(&m, "ns/a", &a, &err) == NULL);
    CHECK_INT_EQ(err, 0);
    CHECK(store_map_get(&m, "ns/a") == &a);
    /* Replacing returns the old value and re-points the key. */
    char other[] = "ns/a";
    CHECK(store_map_put(&m, other, &b, &err) == &a);
    CHECK(store_map_get(&m, "ns/a") == &b);
    CHECK_INT_EQ(store_map_len(&m), 1);
    CHECK(store_map_remove(&m, "ns/a") == &b);
    CHECK(store_map_get(&m, "ns/a") == NULL);
    CHECK_INT_EQ(store_map_len(&m), 0);
    store_map_free(&m);
}

static int count_cb(void *user, const char *key, void *v)
{
    int *n = user;
    int i = (int)((int *)v - values);
    if (i < 0 || i >= NKEYS || strcmp(key, keys[i]) != 0 || !present[i])
        *n = -1000000;
    (*n)++;
    return 0;
}

static void test_random_against_model(void)
{
    struct store_map m;
    store_map_init(&m);
    for (int i = 0; i < NKEYS; i++)
        snprintf(keys[i], sizeof(keys[i]), "ns%d/obj-%d", i % 7, i);
    unsigned seed = 12345;
    size_t live = 0;
    for (int step = 0; step < 200000; step++) {
        seed = seed * 1103515245u + 12345u;
        int i = (int)((seed >> 8) % NKEYS);
        int op = (int)((seed >> 24) % 3);
        int err = 0;
        if (op < 2) {
            void *old = store_map_put(&m, keys[i], &values[i], &err);
            REQUIRE_INT_EQ(err, 0);
            CHECK((old != NULL) == present[i]);
            if (!present[i])
                live++;
            present[i] = 1;
        } else {
            void *old = store_map_remove(&m, keys[i]);
            CHECK((old != NULL) == present[i]);
            if (present[i])
                live--;
            present[i] = 0;
        }
        if (step % 997 == 0) {
            for (int k = 0; k < NKEYS; k++)
                if ((store_map_get(&m, keys[k]) != NULL) != present[k]) {
                    cxt_fail(__FILE__, __LINE__, 1, "key %s: map and model disagree at step %d",
                             keys[k], step);
                }
        }
    }
    CHECK_INT_EQ(store_map_len(&m), live);
    int n = 0;
    store_map_foreach(&m, count_cb, &n);
    CHECK_INT_EQ(n, live);
    store_map_free(&m);
}

static const struct cxt_case cases[] = {
    CXT(test_empty),
    CXT(test_put_replace_remove),
    CXT(test_random_against_model),
};
CXT_MAIN(cases)
