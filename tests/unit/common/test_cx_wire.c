/* cx_wire against bytes worked out by hand from the protobuf encoding
 * rules: varint and string fields, nested messages closed back to front,
 * keys of field numbers past 15 (two bytes), proto3 empty strings left
 * out, wrappers and Durations (negative ones sign-extended), growth from a
 * tiny buffer, the byte cap, and the forward header writer agreeing with the sizes. */
#include "cx_wire.h"
#include "cxtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Finishes |w| and compares its bytes with |hex|. */
static void check_bytes(struct cx_wire *w, const char *hex, int line)
{
    uint8_t *out = NULL;
    size_t len = 0;
    if (cx_wire_finish(w, &out, &len) != 0) {
        cxt_fail(__FILE__, line, 0, "cx_wire_finish failed");
        return;
    }
    char got[512];
    size_t n = 0;
    for (size_t i = 0; i < len && n + 3 < sizeof(got); i++)
        n += (size_t)snprintf(got + n, sizeof(got) - n, "%02x", out[i]);
    got[n] = '\0';
    if (strcmp(got, hex) != 0)
        cxt_fail(__FILE__, line, 0, "bytes %s, expected %s", got, hex);
    free(out);
}

static void test_scalars_and_strings(void)
{
    struct cx_wire w;
    REQUIRE_INT_EQ(cx_wire_init(&w, 64), 0);
    /* message {1: 150, 2: "testing", 3: ""(proto3: left out), 4: 0 (written)} */
    cx_wire_uint(&w, 4, 0);
    cx_wire_str3(&w, 3, "");
    cx_wire_str3(&w, 3, NULL);
    cx_wire_str(&w, 2, "testing");
    cx_wire_uint(&w, 1, 150);
    check_bytes(&w, "089601120774657374696e672000", __LINE__);
}

static void test_nested_and_long_keys(void)
{
    struct cx_wire w;
    REQUIRE_INT_EQ(cx_wire_init(&w, 64), 0);
    /* {3: {1: 150}, 16: "a", 36: {}} written last field first */
    size_t m = cx_wire_mark(&w);
    cx_wire_close(&w, 36, m); /* key 36<<3|2 = 290: a2 02 */
    cx_wire_bytes(&w, 16, "a", 1);
    m = cx_wire_mark(&w);
    cx_wire_uint(&w, 1, 150);
    cx_wire_close(&w, 3, m);
    check_bytes(&w,
                "1a03089601"
                "82010161"
                "a20200",
                __LINE__);
}

static void test_wrappers_and_durations(void)
{
    struct cx_wire w;
    REQUIRE_INT_EQ(cx_wire_init(&w, 8), 0);
    cx_wire_duration(&w, 6, -1500000000);
    cx_wire_duration(&w, 5, 1500000000);
    cx_wire_duration(&w, 4, 0);
    cx_wire_wrapped(&w, 2, 300);
    cx_wire_wrapped(&w, 1, 0);
    check_bytes(&w,
                "0a00"                    /* 1: UInt32Value{} (present, value 0) */
                "120308ac02"              /* 2: {value: 300} */
                "2200"                    /* 4: Duration{} */
                "2a08080110"              /* 5: {seconds: 1, nanos: ... */
                "80cab5ee01"              /* ... 500000000} */
                "3216"                    /* 6: {seconds: -1, nanos: -500000000} */
                "08ffffffffffffffffff01"  /* seconds, sign-extended */
                "1080b6ca91feffffffff01", /* nanos, sign-extended */
                __LINE__);
}

static void test_growth_from_a_tiny_buffer(void)
{
    struct cx_wire w;
    REQUIRE_INT_EQ(cx_wire_init(&w, 1), 0);
    char big[3000];
    memset(big, 'x', sizeof(big));
    size_t m = cx_wire_mark(&w);
    for (int i = 0; i < 10; i++)
        cx_wire_bytes(&w, 1, big, sizeof(big));
    cx_wire_close(&w, 2, m);
    uint8_t *out = NULL;
    size_t len = 0;
    REQUIRE_INT_EQ(cx_wire_finish(&w, &out, &len), 0);
    /* 2: len 10 * (1 + 2 + 3000) = 30030 (varint ce ea 01) */
    CHECK_INT_EQ(len, 1 + 3 + 30030);
    CHECK(out[0] == 0x12 && out[1] == 0xce && out[2] == 0xea && out[3] == 0x01);
    CHECK(out[4] == 0x0a && out[5] == 0xb8 && out[6] == 0x17 && out[7] == 'x');
    CHECK(out[len - 1] == 'x');
    free(out);
}

/* A capped writer: exactly |max| bytes fit, one more fails it with -2, and
 * its buffer never grows past the cap. */
static void test_cap(void)
{
    char big[100];
    memset(big, 'y', sizeof(big));
    struct cx_wire w;
    /* {1: 100 bytes} is 1 + 1 + 100 = 102 bytes */
    REQUIRE_INT_EQ(cx_wire_init_max(&w, 4096, 102), 0);
    CHECK_INT_EQ(w.cap, 102);
    cx_wire_bytes(&w, 1, big, sizeof(big));
    uint8_t *out = NULL;
    size_t len = 0;
    REQUIRE_INT_EQ(cx_wire_finish(&w, &out, &len), 0);
    CHECK_INT_EQ(len, 102);
    CHECK(out[0] == 0x0a && out[1] == 100 && out[101] == 'y');
    free(out);

    /* from a tiny buffer, growing: one byte past the cap fails */
    REQUIRE_INT_EQ(cx_wire_init_max(&w, 1, 101), 0);
    cx_wire_bytes(&w, 1, big, sizeof(big));
    CHECK(w.over);
    CHECK_INT_LE(w.cap, 101);
    out = NULL;
    CHECK_INT_EQ(cx_wire_finish(&w, &out, &len), -2);
    CHECK(out == NULL);

    /* nothing more is written once over, even what would fit */
    REQUIRE_INT_EQ(cx_wire_init_max(&w, 8, 50), 0);
    cx_wire_bytes(&w, 1, big, sizeof(big));
    cx_wire_uint(&w, 1, 1);
    CHECK_INT_EQ(w.used, 0);
    CHECK_INT_EQ(cx_wire_finish(&w, &out, &len), -2);

    /* a cap of 0 is no cap */
    REQUIRE_INT_EQ(cx_wire_init_max(&w, 1, 0), 0);
    for (int i = 0; i < 100; i++)
        cx_wire_bytes(&w, 1, big, sizeof(big));
    REQUIRE_INT_EQ(cx_wire_finish(&w, &out, &len), 0);
    CHECK_INT_EQ(len, 100 * 102);
    free(out);
}

static void test_headers_forward(void)
{
    static const size_t lens[] = {0, 1, 127, 128, 16383, 16384, 1u << 21};
    static const uint32_t fields[] = {1, 15, 16, 2047, 2048, 536870911};
    for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
        for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
            uint8_t hdr[CX_WIRE_HDR_MAX];
            size_t n = cx_wire_put_len_header(hdr, fields[f], lens[l]);
            CHECK_INT_EQ(n + lens[l], cx_wire_len_size(fields[f], lens[l]));
            CHECK_INT_LE(n, CX_WIRE_HDR_MAX);
            /* the same header as the back-to-front writer puts in front */
            struct cx_wire w;
            REQUIRE_INT_EQ(cx_wire_init(&w, 16), 0);
            cx_wire_varint(&w, lens[l]);
            cx_wire_varint(&w, cx_wire_key(fields[f], CX_WIRE_LEN));
            CHECK_INT_EQ(w.used, n);
            CHECK(memcmp(w.buf + w.cap - w.used, hdr, n) == 0);
            cx_wire_discard(&w);
        }
    uint8_t hdr[CX_WIRE_HDR_MAX];
    CHECK_INT_EQ(cx_wire_put_len_header(hdr, 2, 7), 2);
    CHECK(hdr[0] == 0x12 && hdr[1] == 0x07);
}

static const struct cxt_case cases[] = {
    CXT(test_scalars_and_strings),
    CXT(test_nested_and_long_keys),
    CXT(test_wrappers_and_durations),
    CXT(test_growth_from_a_tiny_buffer),
    CXT(test_cap),
    CXT(test_headers_forward),
};
CXT_MAIN(cases)
