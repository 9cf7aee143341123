#include "cx_hash.h"
#include "cxtest.h"
#include "xlate_util.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void test_arena(void)
{
    struct xl_arena a = {0};
    char *p = xlate_alloc(&a, 3);
    char *q = xlate_alloc(&a, 1);
    REQUIRE(p && q);
    /* 8-byte aligned (what every type in an arena needs) and packed at
     * that: a 3-byte block takes 8, not 16 */
    CHECK_INT_EQ((uintptr_t)p % 8, 0);
    CHECK_INT_EQ((uintptr_t)q % 8, 0);
    CHECK(q == p + 8);
    /* zeroed, large allocations, strings */
    unsigned char *big = xlate_alloc(&a, 100000);
    REQUIRE(big);
    int zero = 1;
    for (size_t i = 0; i < 100000; i++)
        zero &= big[i] == 0;
    CHECK(zero);
    CHECK_STR_EQ(xlate_strdup(&a, "hello"), "hello");
    CHECK_STR_EQ(xlate_strndup(&a, "hello", 3), "hel");
    CHECK_STR_EQ(xlate_printf(&a, "%s-%d", "x", 42), "x-42");
    CHECK(xlate_strdup(&a, NULL) == NULL);
    /* strings are packed byte after byte; the next allocation is aligned
     * and zeroed again */
    char *s1 = xlate_strdup(&a, "ab");
    char *s2 = xlate_strdup(&a, "cde");
    REQUIRE(s1 && s2);
    CHECK(s2 == s1 + 3);
    CHECK_STR_EQ(s1, "ab");
    unsigned char *after = xlate_alloc(&a, 24);
    REQUIRE(after);
    CHECK_INT_EQ((uintptr_t)after % 8, 0);
    CHECK(after >= (unsigned char *)s2 + 4 && after < (unsigned char *)s2 + 4 + 8);
    CHECK(after[0] == 0 && after[23] == 0);
    size_t live = a.live;
    CHECK_INT_GE(live, 100000);
    CHECK_INT_GE(a.total, live);
    xlate_arena_free(&a);
    CHECK(a.head == NULL);
    CHECK_INT_EQ(a.total, 0);
    CHECK_INT_EQ(a.live, 0);
    /* the next use starts with one chunk as big as what was used */
    CHECK_INT_EQ(a.hint, live);
    REQUIRE(xlate_alloc(&a, 50000));
    REQUIRE(xlate_alloc(&a, 50000));
    CHECK_INT_EQ(a.total, live); /* both fit in the first chunk */
    xlate_arena_free(&a);

    /* reset: the newest chunk stays for what comes next, the rest goes */
    struct xl_arena r = {.hint = 64};
    REQUIRE(xlate_alloc(&r, 48));
    REQUIRE(xlate_alloc(&r, 48)); /* a second chunk */
    void *newest = r.head;
    size_t size = r.total - 64;
    xlate_arena_reset(&r);
    CHECK(r.head == newest && r.head != NULL);
    CHECK_INT_EQ(r.total, size);
    CHECK_INT_EQ(r.live, 0);
    unsigned char *again = xlate_alloc(&r, 16);
    REQUIRE(again);
    CHECK(r.head == newest && r.total == size); /* served by the kept chunk */
    CHECK(again[0] == 0 && again[15] == 0);
    xlate_arena_free(&r);
}

static void test_sha256_ctx(void)
{
    /* the reusable context gives cx_sha256's digests, call after call */
    struct cx_sha256_ctx *h = cx_sha256_ctx_new();
    REQUIRE(h);
    unsigned char big[1000];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (unsigned char)(i * 7);
    for (int round = 0; round < 3; round++) {
        uint8_t want[CX_SHA256_LEN], got[CX_SHA256_LEN];
        cx_sha256(big, sizeof(big) - (size_t)round, want);
        cx_sha256_with(h, big, sizeof(big) - (size_t)round, got);
        CHECK(memcmp(want, got, sizeof(want)) == 0);
    }
    char hex[CX_SHA256_HEX_LEN];
    cx_sha256_hex_with(h, "abc", 3, hex, 16);
    CHECK_STR_EQ(hex, "ba7816bf8f01cfea");
    cx_sha256_hex_with(NULL, "abc", 3, hex, 64);
    CHECK_STR_EQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    cx_sha256_ctx_free(h);
}

static const struct cxt_case cases[] = {
    CXT(test_arena),
    CXT(test_sha256_ctx),
};
CXT_MAIN(cases)
