/* cx_base64 in its three dialects: RFC 4648's test vectors, the refusals
 * each dialect owes (padding, alphabet, whitespace, lengths), and random
 * bytes round-tripped through OpenSSL's encoder and rewritten the way each
 * dialect's writers write them (Kubernetes, kubeconfig tools, JWT). */
#include "cx_base64.h"
#include "cxtest.h"

#include <openssl/evp.h>

#include <stdlib.h>
#include <string.h>

static long dec(const char *s, enum cx_b64_mode m, uint8_t *out)
{
    return cx_b64_decode(s, strlen(s), out, m);
}

static void test_rfc4648_vectors(void)
{
    static const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *enc[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    static const char *bare[] = {"", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};
    uint8_t out[16];
    for (size_t i = 0; i < 7; i++) {
        size_t n = strlen(plain[i]);
        CHECK_INT_EQ(dec(enc[i], CX_B64_STD, out), (long)n);
        CHECK(memcmp(out, plain[i], n) == 0);
        CHECK_INT_EQ(dec(enc[i], CX_B64_LENIENT, out), (long)n);
        CHECK(memcmp(out, plain[i], n) == 0);
        CHECK_INT_EQ(dec(bare[i], CX_B64_LENIENT, out), (long)n);
        CHECK(memcmp(out, plain[i], n) == 0);
        CHECK_INT_EQ(dec(bare[i], CX_B64_URL, out), (long)n);
        CHECK(memcmp(out, plain[i], n) == 0);
        /* padding is required in STD and refused in URL */
        if (strcmp(enc[i], bare[i]) != 0) {
            CHECK_INT_EQ(dec(bare[i], CX_B64_STD, out), -1);
            CHECK_INT_EQ(dec(enc[i], CX_B64_URL, out), -1);
        }
    }
}

static void test_refusals(void)
{
    uint8_t out[32];
    static const char *bad_everywhere[] = {
        "aG=sbG8=", /* padding inside */
        "aGk===",   /* three pads */
        "Zg==Zg==", /* data after padding */
        "!!!!",     /* not the alphabet */
        "Zm9v\x80", /* high bit */
        "Z",        /* one character is never a byte */
        "Zm9vY",    /* nor is 4k+1 */
    };
    for (size_t i = 0; i < sizeof(bad_everywhere) / sizeof(*bad_everywhere); i++)
        for (int m = CX_B64_STD; m <= CX_B64_URL; m++)
            CHECK_INT_EQ(dec(bad_everywhere[i], (enum cx_b64_mode)m, out) * 10 - m, -10 - m);
    /* whitespace: only the lenient dialect skips it */
    CHECK_INT_EQ(dec("aGVs\nbG8=", CX_B64_STD, out), -1);
    CHECK_INT_EQ(dec("aGVs\nbG8=", CX_B64_LENIENT, out), 5);
    CHECK(memcmp(out, "hello", 5) == 0);
    CHECK_INT_EQ(dec(" aGVs bG8 \r\n", CX_B64_LENIENT, out), 5);
    CHECK_INT_EQ(dec("aGVs bG8", CX_B64_URL, out), -1);
    /* alphabets: '-' and '_' are URL's, '+' and '/' standard */
    CHECK_INT_EQ(dec("-_-_", CX_B64_STD, out), -1);
    CHECK_INT_EQ(dec("+/+/", CX_B64_URL, out), -1);
    CHECK_INT_EQ(dec("-_-_", CX_B64_URL, out), 3);
    CHECK(memcmp(out, "\xfb\xff\xbf", 3) == 0);
    CHECK_INT_EQ(dec("+/+/", CX_B64_STD, out), 3);
    CHECK(memcmp(out, "\xfb\xff\xbf", 3) == 0);
    CHECK_INT_EQ(dec("-_+/", CX_B64_LENIENT, out), 3);
    /* the length given is the end: nothing past it is read */
    CHECK_INT_EQ(cx_b64_decode("Zm9vYmFy!!!!", 8, out, CX_B64_STD), 6); /* bytes 9-12 not base64 */
    CHECK_INT_EQ(cx_b64_decode("Zg==", 0, out, CX_B64_STD), 0);
}

static uint32_t seed = 2026;

static uint32_t rnd(void)
{
    seed = seed * 1103515245u + 12345u;
    return seed >> 8;
}

static void test_random_round_trips(void)
{
    unsigned char in[300], enc[404], url[404], spaced[900];
    uint8_t out[CX_B64_DECODED_MAX(900)];
    for (int round = 0; round < 2000; round++) {
        size_t n = (size_t)(rnd() % sizeof(in));
        for (size_t i = 0; i < n; i++)
            in[i] = (unsigned char)rnd();
        int el = EVP_EncodeBlock(enc, in, (int)n);
        REQUIRE(el >= 0);
        size_t e = (size_t)el;
        CHECK_INT_EQ(cx_b64_decode((char *)enc, e, out, CX_B64_STD), (long)n);
        CHECK(memcmp(out, in, n) == 0);
        /* JWT style: URL alphabet, no padding */
        size_t u = 0;
        for (size_t i = 0; i < e && enc[i] != '='; i++)
            url[u++] = enc[i] == '+' ? '-' : enc[i] == '/' ? '_' : enc[i];
        CHECK_INT_EQ(cx_b64_decode((char *)url, u, out, CX_B64_URL), (long)n);
        CHECK(memcmp(out, in, n) == 0);
        /* hand-written kubeconfig: line breaks and spaces anywhere */
        size_t s = 0;
        for (size_t i = 0; i < e; i++) {
            if (rnd() % 5 == 0)
                spaced[s++] = "\n \t\r"[rnd() % 4];
            spaced[s++] = enc[i];
        }
        CHECK_INT_EQ(cx_b64_decode((char *)spaced, s, out, CX_B64_LENIENT), (long)n);
        CHECK(memcmp(out, in, n) == 0);
        if (n % 3 != 0) /* padded: STD refuses the text without its padding */
            CHECK_INT_EQ(cx_b64_decode((char *)url, u, out, CX_B64_STD), -1);
    }
}

static const struct cxt_case cases[] = {
    CXT(test_rfc4648_vectors),
    CXT(test_refusals),
    CXT(test_random_round_trips),
};
CXT_MAIN(cases)
