/* Fuzz target: arbitrary bytes as a regex -> the RE2 syntax checker and the
 * literal-prefix helper. Never crashes; an accepted regex's literal prefix
 * is a prefix of... at least no longer than the regex. */
#include "xlate_re2.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    if (xlate_re2_check((const char *)data, size, err, sizeof(err)) != 0) {
        if (strlen(err) == 0)
            abort(); /* every refusal says why */
        return 0;
    }
    char prefix[128];
    size_t n = xlate_re2_literal_prefix((const char *)data, size, prefix, sizeof(prefix));
    if (n >= sizeof(prefix) || n > size || strlen(prefix) != n)
        abort();
    if (xlate_re2_program_size((const char *)data, size) <= 0)
        abort();
    return 0;
}
