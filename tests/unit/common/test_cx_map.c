/* cx_map: puts, replaces (the entry re-pointed at the new key), deletes
 * through tombstones, binary keys, iteration (also while deleting),
 * reserve, the table's size under churn, and random operations against a
 * reference model. */
#include "cx_map.h"
#include "cxtest.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NKEYS 3000

static char keys[NKEYS][24];
static int present[NKEYS];
static int values[NKEYS];

static void test_empty(void)
{
    struct cx_map m = {0};
    CHECK(cx_map_gets(&m, "x") == NULL);
    CHECK(cx_map_dels(&m, "x") == NULL);
    CHECK_INT_EQ(cx_map_len(&m), 0);
    size_t i = 0;
    const struct cx_map_slot *s;
    CHECK(!cx_map_next(&m, &i, &s));
    cx_map_free(&m);
}

static void test_put_replace_remove(void)
{
    struct cx_map m = {0};
    int a = 1, b = 2;
    void *old = &a;
    REQUIRE_INT_EQ(cx_map_puts(&m, "ns/a", &a, &old), 0);
    CHECK(old == NULL);
    CHECK(cx_map_gets(&m, "ns/a") == &a);
    /* Replacing returns the old value and re-points the entry at the new
     * key: the old key's storage may go (here: be overwritten). */
    char first[] = "ns/b", other[] = "ns/b";
    REQUIRE_INT_EQ(cx_map_puts(&m, first, &a, NULL), 0);
    REQUIRE_INT_EQ(cx_map_puts(&m, other, &b, &old), 0);
    CHECK(old == &a);
    memcpy(first, "zz/z", 4);
    CHECK(cx_map_gets(&m, "ns/b") == &b);
    CHECK_INT_EQ(cx_map_len(&m), 2);
    CHECK(cx_map_dels(&m, "ns/b") == &b);
    CHECK(cx_map_gets(&m, "ns/b") == NULL);
    CHECK_INT_EQ(cx_map_len(&m), 1);
    cx_map_free(&m);
    CHECK(cx_map_gets(&m, "ns/a") == NULL);
    CHECK_INT_EQ(cx_map_len(&m), 0);
}

static void test_many_tombstones_binary_keys(void)
{
    struct cx_map m = {0};
    static char k[5000][16];
    for (int i = 0; i < 5000; i++) {
        snprintf(k[i], sizeof(k[i]), "key-%d", i);
        REQUIRE_INT_EQ(cx_map_puts(&m, k[i], (void *)(intptr_t)(i + 1), NULL), 0);
    }
    CHECK_INT_EQ(cx_map_len(&m), 5000);
    CHECK((intptr_t)cx_map_gets(&m, "key-4321") == 4322);
    CHECK(cx_map_gets(&m, "key-5000") == NULL);
    /* replace keeps the count */
    REQUIRE_INT_EQ(cx_map_puts(&m, k[7], (void *)(intptr_t)99, NULL), 0);
    CHECK_INT_EQ(cx_map_len(&m), 5000);
    CHECK((intptr_t)cx_map_gets(&m, "key-7") == 99);
    /* deletes leave tombstones that lookups step over */
    for (int i = 0; i < 5000; i += 2)
        CHECK(cx_map_dels(&m, k[i]) != NULL);
    CHECK(cx_map_del(&m, "key-0", 5) == NULL);
    CHECK_INT_EQ(cx_map_len(&m), 2500);
    CHECK(cx_map_gets(&m, "key-10") == NULL);
    CHECK((intptr_t)cx_map_gets(&m, "key-11") == 12);
    /* re-insert through the tombstones, then iterate */
    for (int i = 0; i < 5000; i += 2)
        REQUIRE_INT_EQ(cx_map_puts(&m, k[i], (void *)(intptr_t)(i + 1), NULL), 0);
    size_t seen = 0, it = 0;
    const struct cx_map_slot *s;
    while (cx_map_next(&m, &it, &s)) {
        seen++;
        int i = (int)strtol((const char *)s->key + 4, NULL, 10); /* "key-N", NUL-terminated */
        if (s->val != (void *)(intptr_t)(i == 7 ? 99 : i + 1))
            cxt_fail(__FILE__, __LINE__, 1, "key %s has the wrong value", k[i]);
    }
    CHECK_INT_EQ(seen, 5000);
    /* binary keys (embedded NULs), and a key that is a prefix of another */
    static const char bin1[4] = {'a', 0, 'b', 0}, bin2[4] = {'a', 0, 'c', 0};
    REQUIRE_INT_EQ(cx_map_put(&m, bin1, 4, (void *)1, NULL), 0);
    CHECK(cx_map_get(&m, bin2, 4) == NULL);
    CHECK(cx_map_get(&m, bin1, 4) == (void *)1);
    CHECK(cx_map_get(&m, bin1, 3) == NULL);
    cx_map_free(&m);
    CHECK(cx_map_gets(&m, "key-1") == NULL);
    CHECK(cx_map_hash("x", 1) != 0);
    CHECK(cx_map_hash("", 0) != 0);
    CHECK(cx_map_hash("abcdefgh1", 9) != cx_map_hash("abcdefgh2", 9));
    /* keys computed to agree on the low 32 bits of the hash without a
     * seed (its steps inverted from 0x12345678): with the process's
     * secret they spread like any others */
    static const char *const computed[] = {"00hxfXK3zzzzzzz", "00kNPrgozzzzzzz", "015OTwElzzzzzzz",
                                           "tpkvNzvHzzzzzzz"};
    uint32_t low0 = (uint32_t)cx_map_hash(computed[0], 15);
    int same = 0;
    for (int i = 1; i < 4; i++)
        same += (uint32_t)cx_map_hash(computed[i], 15) == low0;
    CHECK_INT_LT(same, 3);
}

static void test_delete_while_iterating(void)
{
    struct cx_map m = {0};
    static char k[1000][8];
    for (int i = 0; i < 1000; i++) {
        snprintf(k[i], sizeof(k[i]), "%d", i);
        REQUIRE_INT_EQ(cx_map_puts(&m, k[i], k[i], NULL), 0);
    }
    /* every entry visited once although each is deleted on the way */
    size_t seen = 0, it = 0;
    const struct cx_map_slot *s;
    while (cx_map_next(&m, &it, &s)) {
        seen++;
        CHECK(cx_map_del(&m, s->key, s->klen) != NULL);
    }
    CHECK_INT_EQ(seen, 1000);
    CHECK_INT_EQ(cx_map_len(&m), 0);
    cx_map_free(&m);
}

static void test_reserve_and_churn(void)
{
    struct cx_map m = {0};
    static char k[2000][8];
    for (int i = 0; i < 2000; i++)
        snprintf(k[i], sizeof(k[i]), "%d", i);
    REQUIRE_INT_EQ(cx_map_reserve(&m, 1000), 0);
    const struct cx_map_slot *table = m.slots;
    size_t cap = m.cap;
    CHECK_INT_GE(cap * 3, 1001 * 4);
    for (int i = 0; i < 1000; i++)
        REQUIRE_INT_EQ(cx_map_puts(&m, k[i], k[i], NULL), 0);
    CHECK(m.slots == table); /* no rehash */
    CHECK_INT_EQ(m.cap, cap);
    REQUIRE_INT_EQ(cx_map_reserve(&m, 10), 0); /* never shrinks */
    CHECK_INT_EQ(m.cap, cap);
    /* 100 live entries replaced over and over: tombstones are cleared by
     * rebuilding at the same size, the table does not grow without bound */
    cx_map_free(&m);
    for (int i = 0; i < 100; i++)
        REQUIRE_INT_EQ(cx_map_puts(&m, k[i], k[i], NULL), 0);
    size_t cap100 = m.cap;
    for (int round = 0; round < 200; round++) {
        int i = round % 100, j = 100 + (round * 7) % 1900;
        CHECK(cx_map_dels(&m, k[i]) != NULL);
        REQUIRE_INT_EQ(cx_map_puts(&m, k[j], k[j], NULL), 0);
        CHECK(cx_map_dels(&m, k[j]) != NULL);
        REQUIRE_INT_EQ(cx_map_puts(&m, k[i], k[i], NULL), 0);
    }
    CHECK_INT_EQ(cx_map_len(&m), 100);
    CHECK_INT_EQ(m.cap, cap100);
    CHECK_INT_LT(m.len + m.tombs, m.cap);
    for (int i = 0; i < 100; i++)
        CHECK(cx_map_gets(&m, k[i]) == k[i]);
    cx_map_free(&m);
}

static void test_random_against_model(void)
{
    struct cx_map m = {0};
    memset(present, 0, sizeof(present));
    for (int i = 0; i < NKEYS; i++)
        snprintf(keys[i], sizeof(keys[i]), "ns%d/obj-%d", i % 7, i);
    unsigned seed = 12345;
    size_t live = 0;
    for (int step = 0; step < 200000; step++) {
        seed = seed * 1103515245u + 12345u;
        int i = (int)((seed >> 8) % NKEYS);
        int op = (int)((seed >> 24) % 3);
        if (op < 2) {
            void *old = NULL;
            REQUIRE_INT_EQ(cx_map_puts(&m, keys[i], &values[i], &old), 0);
            CHECK((old != NULL) == present[i]);
            if (!present[i])
                live++;
            present[i] = 1;
        } else {
            void *old = cx_map_dels(&m, keys[i]);
            CHECK((old != NULL) == present[i]);
            if (present[i])
                live--;
            present[i] = 0;
        }
        if (step % 997 == 0) {
            for (int k = 0; k < NKEYS; k++)
                if ((cx_map_gets(&m, keys[k]) != NULL) != present[k]) {
                    cxt_fail(__FILE__, __LINE__, 1, "key %s: map and model disagree at step %d",
                             keys[k], step);
                }
        }
    }
    CHECK_INT_EQ(cx_map_len(&m), live);
    size_t n = 0, it = 0;
    const struct cx_map_slot *s;
    while (cx_map_next(&m, &it, &s)) {
        int i = (int)((int *)s->val - values);
        if (i < 0 || i >= NKEYS || s->klen != strlen(keys[i]) ||
            memcmp(s->key, keys[i], s->klen) != 0 || !present[i])
            cxt_fail(__FILE__, __LINE__, 1, "iteration found a wrong entry");
        n++;
    }
    CHECK_INT_EQ(n, live);
    cx_map_free(&m);
}

static const struct cxt_case cases[] = {
    CXT(test_empty),
    CXT(test_put_replace_remove),
    CXT(test_many_tombstones_binary_keys),
    CXT(test_delete_while_iterating),
    CXT(test_reserve_and_churn),
    CXT(test_random_against_model),
};
CXT_MAIN(cases)
