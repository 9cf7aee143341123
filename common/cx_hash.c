#include "cx_hash.h"

#include <openssl/evp.h>
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

struct cx_sha256_ctx {
    EVP_MD *md;
    EVP_MD_CTX *c;
};

struct cx_sha256_ctx *cx_sha256_ctx_new(void)
{
    struct cx_sha256_ctx *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->md = EVP_MD_fetch(NULL, "SHA256", NULL);
    h->c = EVP_MD_CTX_new();
    if (!h->md || !h->c) {
        cx_sha256_ctx_free(h);
        return NULL;
    }
    return h;
}

void cx_sha256_ctx_free(struct cx_sha256_ctx *h)
{
    if (!h)
        return;
    EVP_MD_CTX_free(h->c);
    EVP_MD_free(h->md);
    free(h);
}

void cx_sha256_with(struct cx_sha256_ctx *h, const void *data, size_t len,
                    uint8_t out[CX_SHA256_LEN])
{
    unsigned int n = 0;
    if (!h || EVP_DigestInit_ex(h->c, h->md, NULL) != 1 || EVP_DigestUpdate(h->c, data, len) != 1 ||
        EVP_DigestFinal_ex(h->c, out, &n) != 1)
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
