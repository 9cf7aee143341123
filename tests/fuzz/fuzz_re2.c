/* Fuzz target: arbitrary bytes as a regex -> the RE2 shim
 * (translator/xlate_re2.cc). Never crashes, never leaks, and keeps its
 * contract: a refusal says why; an accepted regex has a positive program
 * size and a literal prefix that is NUL-terminated, within its cap, ends on
 * a whole UTF-8 sequence, and is the regex itself when the regex is a
 * plain literal; the same bytes give the same answer twice. */
#include "xlate_re2.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int plain_literal(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '/' ||
              s[i] == '-' || s[i] == '_'))
            return 0;
    return n > 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256], err2[256];
    struct xlate_re2_info info, info2;
    memset(err, 'x', sizeof(err));
    int rc = xlate_re2_compile((const char *)data, size, &info, err, sizeof(err));
    int rc2 = xlate_re2_compile((const char *)data, size, &info2, err2, sizeof(err2));
    if (rc != rc2)
        abort();
    if (rc == XLATE_RE2_NOMEM)
        return 0;
    if (rc != XLATE_RE2_OK) {
        if (rc != XLATE_RE2_INVALID || !memchr(err, '\0', sizeof(err)) || err[0] == '\0' ||
            strcmp(err, err2) != 0)
            abort();
        return 0;
    }
    size_t n = strnlen(info.prefix, sizeof(info.prefix));
    if (n > XLATE_RE2_PREFIX_MAX || info.program_size <= 0 ||
        info.program_size != info2.program_size || strcmp(info.prefix, info2.prefix) != 0)
        abort();
    /* no incomplete UTF-8 sequence at the end */
    size_t k = n;
    while (k > 0 && ((unsigned char)info.prefix[k - 1] & 0xc0) == 0x80)
        k--;
    if (k > 0 && (unsigned char)info.prefix[k - 1] >= 0xc0) {
        unsigned char lead = (unsigned char)info.prefix[k - 1];
        size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
        if (n - (k - 1) != want)
            abort();
    }
    if (plain_literal(data, size)) {
        size_t want = size < XLATE_RE2_PREFIX_MAX ? size : XLATE_RE2_PREFIX_MAX;
        if (n != want || memcmp(info.prefix, data, want) != 0)
            abort();
    }
    return 0;
}
