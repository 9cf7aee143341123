#include "cx_hash.h"

/* SHA256_Init/Update/Final: deprecated in OpenSSL 3 but kept, and unlike
 * an EVP context reused for the next digest they allocate nothing */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdlib.h>

void cx_sha256(const void *data, size_t len, uint8_t out[CX_SHA256_LEN])
{
    unsigned int n = 0;
    EVP_Digest(data, len, out, &n, EVP_sha256(), NULL);
}

static void to_hex(const uint8_t d[CX_SHA256_LEN], char *out, size_t hexchars)
{
    static const char hex[] = "0123456789abcdef";
    if (hexchars > 64)
        hexchars = 64;
    for (size_t i = 0; i < hexchars; i++)
        out[i] = hex[(d[i / 2] >> (i % 2 ? 0 : 4)) & 0xf];
    out[hexchars] = '\0';
}

void cx_sha256_hex(const void *data, size_t len, char *out, size_t hexchars)
{
    uint8_t d[CX_SHA256_LEN];
    cx_sha256(data, len, d);
    to_hex(d, out, hexchars);
}

/* What a run of digests shares: nothing any more (each one's SHA256_CTX is
 * on the stack), kept so callers need not change. */
struct cx_sha256_ctx {
    int unused;
};

struct cx_sha256_ctx *cx_sha256_ctx_new(void)
{
    return calloc(1, sizeof(struct cx_sha256_ctx));
}

void cx_sha256_ctx_free(struct cx_sha256_ctx *h)
{
    free(h);
}

void cx_sha256_with(struct cx_sha256_ctx *h, const void *data, size_t len,
                    uint8_t out[CX_SHA256_LEN])
{
    /* EVP_DigestInit_ex makes a new provider context at each digest (a
     * malloc and a free): a translation takes tens of thousands of small
     * digests, so they go through SHA256_CTX on the stack; same bytes */
    SHA256_CTX c;
    if (!h || SHA256_Init(&c) != 1 || SHA256_Update(&c, data, len) != 1 ||
        SHA256_Final(out, &c) != 1)
        cx_sha256(data, len, out);
}

void cx_sha256_hex_with(struct cx_sha256_ctx *h, const void *data, size_t len, char *out,
                        size_t hexchars)
{
    uint8_t d[CX_SHA256_LEN];
    cx_sha256_with(h, data, len, d);
    to_hex(d, out, hexchars);
}

uint64_t cx_fnv64(uint64_t h, const void *data, size_t len)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}
