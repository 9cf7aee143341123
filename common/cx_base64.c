#include "cx_base64.h"

#include <openssl/evp.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static int is_std(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

long cx_b64_decode(const char *in, size_t len, uint8_t *out, enum cx_b64_mode mode)
{
    if (len > INT_MAX - 4)
        return -1;
    /* The normalised text: standard alphabet, padded to a multiple of 4. */
    char *t = malloc(len + 4);
    if (!t)
        return -1;
    size_t m = 0, pad = 0;
    long r = -1;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '=') {
            if (mode == CX_B64_URL || ++pad > 2)
                goto out;
            t[m++] = '=';
            continue;
        }
        if (mode == CX_B64_LENIENT && is_space(c))
            continue;
        if (mode != CX_B64_STD && (c == '-' || c == '_'))
            c = c == '-' ? '+' : '/';
        else if (mode == CX_B64_URL && (c == '+' || c == '/'))
            goto out;
        if (pad || !is_std(c)) /* data after padding, or not base64 */
            goto out;
        t[m++] = (char)c;
    }
    if (mode == CX_B64_STD ? m % 4 != 0 : m % 4 == 1)
        goto out;
    while (m % 4) {
        t[m++] = '=';
        pad++;
    }
    if (m == 0) {
        r = 0;
        goto out;
    }
    int n = EVP_DecodeBlock(out, (const unsigned char *)t, (int)m);
    if (n < 0 || (size_t)n < pad)
        goto out;
    r = n - (long)pad;
out:
    free(t);
    return r;
}
