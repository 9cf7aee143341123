#include "cx_hash.h"

#include <openssl/evp.h>

void cx_sha256(const void *data, size_t len, uint8_t out[CX_SHA256_LEN])
{
    unsigned int n = 0;
    EVP_Digest(data, len, out, &n, EVP_sha256(), NULL);
}

void cx_sha256_hex(const void *data, size_t len, char *out, size_t hexchars)
{
    static const char hex[] = "0123456789abcdef";
    uint8_t d[CX_SHA256_LEN];
    cx_sha256(data, len, d);
    if (hexchars > 64)
        hexchars = 64;
    for (size_t i = 0; i < hexchars; i++)
        out[i] = hex[(d[i / 2] >> (i % 2 ? 0 : 4)) & 0xf];
    out[hexchars] = '\0';
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
