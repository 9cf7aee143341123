#include "cxtest.h"
#include "xds_frame.h"

#include <stdlib.h>
#include <string.h>

struct got {
    int n;
    size_t lens[16];
    char data[16][64];
    int stop_after;
};

static int collect(void *user, const uint8_t *msg, size_t len)
{
    struct got *g = user;
    if (g->n < 16) {
        g->lens[g->n] = len;
        memcpy(g->data[g->n], msg, len < 63 ? len : 63);
        g->data[g->n][len < 63 ? len : 63] = '\0';
    }
    g->n++;
    return g->stop_after && g->n >= g->stop_after ? 7 : 0;
}

/* Three messages ("hello", "", "world!") back to back. */
static size_t three(uint8_t *buf)
{
    size_t k = 0;
    const char *m[3] = {"hello", "", "world!"};
    for (int i = 0; i < 3; i++) {
        xds_frame_prefix(buf + k, (uint32_t)strlen(m[i]));
        k += 5;
        memcpy(buf + k, m[i], strlen(m[i]));
        k += strlen(m[i]);
    }
    return k;
}

static void test_prefix_is_big_endian(void)
{
    uint8_t p[5];
    xds_frame_prefix(p, 0x01020304);
    CHECK_INT_EQ(p[0], 0);
    CHECK_INT_EQ(p[1], 1);
    CHECK_INT_EQ(p[4], 4);
}

static void test_whole_buffer(void)
{
    uint8_t buf[64];
    size_t n = three(buf);
    struct xds_deframer d;
    struct got g = {0};
    xds_deframer_init(&d, 100);
    REQUIRE_INT_EQ(xds_deframer_feed(&d, buf, n, collect, &g), 0);
    REQUIRE_INT_EQ(g.n, 3);
    CHECK_STR_EQ(g.data[0], "hello");
    CHECK_INT_EQ(g.lens[1], 0);
    CHECK_STR_EQ(g.data[2], "world!");
    CHECK(!xds_deframer_partial(&d));
    xds_deframer_free(&d);
}

/* Every split point and byte-at-a-time give the same messages. */
static void test_any_split(void)
{
    uint8_t buf[64];
    size_t n = three(buf);
    for (size_t cut = 0; cut <= n; cut++) {
        struct xds_deframer d;
        struct got g = {0};
        xds_deframer_init(&d, 100);
        REQUIRE_INT_EQ(xds_deframer_feed(&d, buf, cut, collect, &g), 0);
        REQUIRE_INT_EQ(xds_deframer_feed(&d, buf + cut, n - cut, collect, &g), 0);
        CHECK_INT_EQ(g.n, 3);
        CHECK_STR_EQ(g.data[2], "world!");
        xds_deframer_free(&d);
    }
    struct xds_deframer d;
    struct got g = {0};
    xds_deframer_init(&d, 100);
    for (size_t i = 0; i < n; i++) {
        REQUIRE_INT_EQ(xds_deframer_feed(&d, buf + i, 1, collect, &g), 0);
        if (i == 6)
            CHECK(xds_deframer_partial(&d));
    }
    CHECK_INT_EQ(g.n, 3);
    CHECK_STR_EQ(g.data[0], "hello");
    xds_deframer_free(&d);
}

static void test_cap_refused_before_buffering(void)
{
    uint8_t hdr[5];
    xds_frame_prefix(hdr, 101);
    struct xds_deframer d;
    struct got g = {0};
    xds_deframer_init(&d, 100);
    CHECK_INT_EQ(xds_deframer_feed(&d, hdr, 5, collect, &g), XDS_DEFRAME_TOO_BIG);
    CHECK(d.body == NULL);
    /* the deframer stays failed */
    uint8_t ok[6];
    xds_frame_prefix(ok, 1);
    ok[5] = 'x';
    CHECK_INT_EQ(xds_deframer_feed(&d, ok, 6, collect, &g), XDS_DEFRAME_TOO_BIG);
    CHECK_INT_EQ(g.n, 0);
    xds_deframer_free(&d);
    /* exactly the cap is fine */
    xds_deframer_init(&d, 3);
    uint8_t three_b[8];
    xds_frame_prefix(three_b, 3);
    memcpy(three_b + 5, "abc", 3);
    CHECK_INT_EQ(xds_deframer_feed(&d, three_b, 8, collect, &g), 0);
    CHECK_INT_EQ(g.n, 1);
    xds_deframer_free(&d);
}

static void test_flags(void)
{
    uint8_t m[6] = {1, 0, 0, 0, 1, 'x'};
    struct xds_deframer d;
    struct got g = {0};
    xds_deframer_init(&d, 100);
    CHECK_INT_EQ(xds_deframer_feed(&d, m, 6, collect, &g), XDS_DEFRAME_COMPRESSED);
    xds_deframer_free(&d);
    m[0] = 2;
    xds_deframer_init(&d, 100);
    CHECK_INT_EQ(xds_deframer_feed(&d, m, 6, collect, &g), XDS_DEFRAME_BAD_FLAG);
    CHECK_INT_EQ(g.n, 0);
    xds_deframer_free(&d);
}

static void test_callback_stops(void)
{
    uint8_t buf[64];
    size_t n = three(buf);
    struct xds_deframer d;
    struct got g = {.stop_after = 2};
    xds_deframer_init(&d, 100);
    CHECK_INT_EQ(xds_deframer_feed(&d, buf, n, collect, &g), 7);
    CHECK_INT_EQ(g.n, 2);
    xds_deframer_free(&d);
}

/* Found by fuzz_ads_stream: a header ending a chunk must not leave a body
 * buffer behind that a later, larger message would overflow. */
static void test_header_at_chunk_end_then_larger_message(void)
{
    uint8_t a[5 + 4], b[5 + 40];
    xds_frame_prefix(a, 4);
    memcpy(a + 5, "abcd", 4);
    xds_frame_prefix(b, 40);
    memset(b + 5, 'z', 40);
    struct xds_deframer d;
    struct got g = {0};
    xds_deframer_init(&d, 100);
    REQUIRE_INT_EQ(xds_deframer_feed(&d, a, 5, collect, &g), 0);     /* header only */
    REQUIRE_INT_EQ(xds_deframer_feed(&d, a + 5, 4, collect, &g), 0); /* whole body */
    REQUIRE_INT_EQ(xds_deframer_feed(&d, b, 10, collect, &g), 0);    /* partial, larger */
    REQUIRE_INT_EQ(xds_deframer_feed(&d, b + 10, 35, collect, &g), 0);
    CHECK_INT_EQ(g.n, 2);
    CHECK_INT_EQ(g.lens[1], 40);
    CHECK_INT_EQ(g.data[1][39], 'z');
    xds_deframer_free(&d);
}

/* Partly received bodies are charged with their declared length to the
 * global and the connection budget, refused past either, given back on
 * delivery and on free. */
static void test_budget(void)
{
    struct xds_budget global = {.max = 100}, conn = {.max = 60};
    struct xds_deframer a, b;
    struct got g = {0};
    xds_deframer_init(&a, 1000);
    xds_deframer_init(&b, 1000);
    xds_deframer_set_budget(&a, &global, &conn);
    xds_deframer_set_budget(&b, &global, &conn);
    uint8_t hdr[5];
    xds_frame_prefix(hdr, 50);
    REQUIRE_INT_EQ(xds_deframer_feed(&a, hdr, 5, collect, &g), 0);
    REQUIRE_INT_EQ(xds_deframer_feed(&a, (const uint8_t *)"x", 1, collect, &g), 0);
    CHECK_INT_EQ(global.used, 50);
    CHECK_INT_EQ(conn.used, 50);
    /* 50 more would pass the global budget (100) but not the connection's (60) */
    REQUIRE_INT_EQ(xds_deframer_feed(&b, hdr, 5, collect, &g), 0);
    CHECK_INT_EQ(xds_deframer_feed(&b, (const uint8_t *)"y", 1, collect, &g), XDS_DEFRAME_BUDGET);
    CHECK_INT_EQ(global.refused, 1);
    CHECK_INT_EQ(global.used, 50);
    /* a whole message in one chunk is never buffered: not charged */
    xds_deframer_free(&b);
    xds_deframer_init(&b, 1000);
    xds_deframer_set_budget(&b, &global, &conn);
    uint8_t whole[5 + 50];
    memcpy(whole, hdr, 5);
    memset(whole + 5, 'z', 50);
    REQUIRE_INT_EQ(xds_deframer_feed(&b, whole, sizeof(whole), collect, &g), 0);
    CHECK_INT_EQ(g.n, 1);
    /* delivery gives the charge back */
    uint8_t rest[49];
    memset(rest, 'x', sizeof(rest));
    REQUIRE_INT_EQ(xds_deframer_feed(&a, rest, sizeof(rest), collect, &g), 0);
    CHECK_INT_EQ(g.n, 2);
    CHECK_INT_EQ(global.used, 0);
    CHECK_INT_EQ(conn.used, 0);
    /* so does freeing a deframer in the middle of a body */
    REQUIRE_INT_EQ(xds_deframer_feed(&a, whole, 20, collect, &g), 0);
    CHECK_INT_EQ(global.used, 50);
    xds_deframer_free(&a);
    CHECK_INT_EQ(global.used, 0);
    xds_deframer_free(&b);
}

static const struct cxt_case cases[] = {
    CXT(test_budget),
    CXT(test_header_at_chunk_end_then_larger_message),
    CXT(test_prefix_is_big_endian),
    CXT(test_whole_buffer),
    CXT(test_any_split),
    CXT(test_cap_refused_before_buffering),
    CXT(test_flags),
    CXT(test_callback_stops),
};
CXT_MAIN(cases)
