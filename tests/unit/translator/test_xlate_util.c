#include "cx_hash.h"
#include "cxtest.h"
#include "xlate_util.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* The VmFlags line of the mapping holding |p| in /proc/self/smaps, or
 * "" when none holds it. */
static void vmflags_of(const void *p, char *out, size_t outlen)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/self/smaps", "r");
    REQUIRE(f);
    char line[512];
    int in = 0;
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
            continue;
        }
        if (in && strncmp(line, "VmFlags:", 8) == 0) {
            snprintf(out, outlen, "%s", line + 8);
            break;
        }
    }
    fclose(f);
}

static void test_big_buffers(void)
{
    size_t before = xlate_big_mapped();
    /* below the threshold, or not asked to map: malloc's memory */
    char *small = xlate_big_alloc(1000, XL_BIG_ZERO | XL_BIG_MAP);
    char *heap = xlate_big_alloc(3u << 20, XL_BIG_ZERO);
    REQUIRE(small && heap);
    CHECK_INT_EQ(xlate_big_mapped(), before);
    CHECK(small[0] == 0 && small[999] == 0 && heap[(3u << 20) - 1] == 0);
    /* a malloc'd buffer grows on the heap, contents kept */
    memset(small, 'x', 1000);
    char *grown = xlate_big_realloc(small, 3u << 20);
    REQUIRE(grown);
    CHECK(grown[0] == 'x' && grown[999] == 'x');
    CHECK_INT_EQ(xlate_big_mapped(), before);
    xlate_big_free(grown);
    xlate_big_free(heap);
    char *m = xlate_big_alloc(3u << 20, XL_BIG_MAP);
    REQUIRE(m);
    if (!xlate_big_maps()) {
        /* sanitizer builds: malloc's, so ASan sees bounds and leaks */
        CHECK_INT_EQ(xlate_big_mapped(), before);
        xlate_big_free(m);
        return;
    }
    /* 3 MiB: a whole 2 MiB huge page, and the 1 MiB tail (half a huge page
     * or more) rounded up to another */
    CHECK_INT_EQ(xlate_big_mapped() - before, 4u << 20);
    /* the buffer starts 16 bytes into a 2 MiB-aligned mapping advised for
     * huge pages, zeroed */
    CHECK_INT_EQ(((uintptr_t)m - 16) % (2u << 20), 0);
    CHECK(m[0] == 0 && m[(3u << 20) - 1] == 0);
    if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0) {
        char flags[512];
        vmflags_of(m, flags, sizeof(flags));
        CHECK(strstr(flags, " hg") != NULL);
    }
    /* room within the mapping: the same buffer; beyond: a new mapping,
     * contents kept */
    CHECK(xlate_big_realloc(m, (4u << 20) - 16) == m);
    m[0] = 'a';
    m[(4u << 20) - 17] = 'z';
    char *m2 = xlate_big_realloc(m, 5u << 20);
    REQUIRE(m2);
    CHECK(m2[0] == 'a' && m2[(4u << 20) - 17] == 'z');
    CHECK_INT_EQ(xlate_big_mapped() - before, 6u << 20);
    /* a small tail (under half a huge page) stays on small pages (the
     * freed 4 MiB mapping of m is handed back first, or b would reuse it) */
    xlate_big_trim();
    char *b = xlate_big_alloc((2u << 20) + 100, XL_BIG_MAP);
    REQUIRE(b);
    CHECK_INT_EQ(xlate_big_mapped() - before, (6u << 20) + (2u << 20) + 4096);
    /* freed mappings are kept for the next buffers of about their size:
     * the same memory again, zeroed when asked; trim gives them back */
    xlate_big_trim();
    xlate_big_free(b);
    CHECK_INT_EQ(xlate_big_cached(), (2u << 20) + 4096);
    char *again = xlate_big_alloc((2u << 20) + 50, XL_BIG_MAP | XL_BIG_ZERO);
    CHECK(again == b);
    CHECK_INT_EQ(xlate_big_cached(), 0);
    CHECK(again[0] == 0 && again[(2u << 20) + 49] == 0);
    again[0] = 1;
    xlate_big_free(again);
    char *bigger = xlate_big_alloc(9u << 20, XL_BIG_MAP); /* too big for it */
    REQUIRE(bigger);
    CHECK(bigger != again);
    xlate_big_free(bigger);
    xlate_big_free(m2);
    CHECK_INT_EQ(xlate_big_mapped(), before);
    CHECK(xlate_big_cached() > 0);
    xlate_big_trim();
    CHECK_INT_EQ(xlate_big_cached(), 0);
    /* mappings of one huge page (the pools' slabs) are kept apart, every
     * one of them, and come back warm, the last freed first */
    enum { NPAGES = 6 }; /* more than the cache's other slots */
    char *pg[NPAGES];
    for (int i = 0; i < NPAGES; i++) {
        pg[i] = xlate_big_alloc((2u << 20) - 16, XL_BIG_MAP);
        REQUIRE(pg[i]);
        pg[i][0] = 'p';
    }
    CHECK_INT_EQ(xlate_big_mapped() - before, (size_t)NPAGES << 21);
    for (int i = 0; i < NPAGES; i++)
        xlate_big_free(pg[i]);
    CHECK_INT_EQ(xlate_big_cached(), (size_t)NPAGES << 21);
    CHECK_INT_EQ(xlate_big_mapped(), before);
    char *warm = xlate_big_alloc((2u << 20) - 16, XL_BIG_MAP | XL_BIG_ZERO);
    CHECK(warm == pg[NPAGES - 1]);
    CHECK(warm[0] == 0); /* zeroed as asked, the link word included */
    CHECK_INT_EQ(xlate_big_cached(), (size_t)(NPAGES - 1) << 21);
    /* a buffer of another size does not take one */
    char *other = xlate_big_alloc(3u << 20, XL_BIG_MAP);
    REQUIRE(other);
    CHECK_INT_EQ(xlate_big_cached(), (size_t)(NPAGES - 1) << 21);
    xlate_big_free(other);
    xlate_big_free(warm);
    xlate_big_trim();
    CHECK_INT_EQ(xlate_big_cached(), 0);
    CHECK_INT_EQ(xlate_big_mapped(), before);
    /* the threshold tests lower: every buffer asked to map is mapped */
    size_t prev = xlate_big_threshold(1);
    char *tiny = xlate_big_alloc(10, XL_BIG_MAP);
    REQUIRE(tiny);
    CHECK_INT_EQ(xlate_big_mapped() - before, 4096);
    xlate_big_free(tiny);
    CHECK_INT_EQ(xlate_big_threshold(prev), 1);
    CHECK_INT_EQ(xlate_big_mapped(), before);
}

static void test_pool(void)
{
    struct xl_pool p = {0};
    CHECK(xlate_pool_get(&p, 0) == NULL);
    CHECK(xlate_pool_get(&p, XL_POOL_MAX + 1) == NULL);
    unsigned char *a = xlate_pool_get(&p, 100), *b = xlate_pool_get(&p, 128);
    unsigned char *c = xlate_pool_get(&p, XL_POOL_MAX);
    REQUIRE(a && b && c);
    CHECK_INT_EQ(p.live, 3);
    /* 16-byte aligned, zeroed, apart (100 and 128 bytes: one class of 64) */
    CHECK_INT_EQ((uintptr_t)a % 16, 0);
    CHECK(b >= a + 128 || a >= b + 128);
    memset(a, 0xab, 100);
    memset(b, 0xcd, 128);
    memset(c, 0xef, XL_POOL_MAX);
    /* a block put back is the next of its class, zeroed again; another
     * class does not take it */
    xlate_pool_put(&p, a, 100);
    CHECK_INT_EQ(p.live, 2);
    unsigned char *d = xlate_pool_get(&p, 60);
    REQUIRE(d);
    CHECK(d != a);
    unsigned char *e = xlate_pool_get(&p, 120);
    CHECK(e == a);
    CHECK(e[0] == 0 && e[99] == 0 && e[119] == 0);
    CHECK(b[127] == 0xcd && c[XL_POOL_MAX - 1] == 0xef); /* neighbours untouched */
    /* tens of thousands of blocks: slabs beyond the first, every block its own */
    enum { N = 20000 };
    static unsigned char *many[N];
    for (size_t i = 0; i < N; i++) {
        REQUIRE((many[i] = xlate_pool_get(&p, 200 + i % 300)));
        memset(many[i], (int)(i & 0xff), 200);
    }
    size_t bad = 0;
    for (size_t i = 0; i < N; i++)
        bad += many[i][0] != (i & 0xff) || many[i][199] != (i & 0xff);
    CHECK_INT_EQ(bad, 0);
    CHECK_INT_EQ(p.live, 4 + N);
    for (size_t i = 0; i < N; i++)
        xlate_pool_put(&p, many[i], 200 + i % 300);
    xlate_pool_put(&p, b, 128);
    xlate_pool_put(&p, c, XL_POOL_MAX);
    xlate_pool_put(&p, d, 60);
    xlate_pool_put(&p, e, 120);
    CHECK_INT_EQ(p.live, 0);
    size_t mapped = xlate_big_mapped();
    if (xlate_big_maps())
        CHECK(mapped > 0); /* 20,000 blocks of ~400 bytes: 2 MiB slabs, mapped */
    size_t cached = xlate_big_cached();
    xlate_pool_free(&p);
    CHECK(xlate_big_mapped() < mapped || !xlate_big_maps());
    CHECK(p.slabs == NULL && p.live == 0);
    if (xlate_big_maps()) {
        /* the huge slabs are kept, and a new pool's second slab is one */
        CHECK_INT_EQ(xlate_big_cached() - cached, mapped - xlate_big_mapped());
        size_t warm = xlate_big_cached();
        for (size_t i = 0; i < N; i++)
            REQUIRE((many[i] = xlate_pool_get(&p, 200 + i % 300)));
        CHECK(xlate_big_cached() < warm);
        CHECK_INT_EQ(xlate_big_mapped(), mapped);
        for (size_t i = 0; i < N; i++)
            xlate_pool_put(&p, many[i], 200 + i % 300);
        xlate_pool_free(&p);
        xlate_big_trim();
        CHECK_INT_EQ(xlate_big_cached(), 0);
    }
}

static const struct cxt_case cases[] = {
    CXT(test_arena),
    CXT(test_pool),
    CXT(test_big_buffers),
    CXT(test_sha256_ctx),
};
CXT_MAIN(cases)
