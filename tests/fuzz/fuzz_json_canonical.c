/* Fuzz target: arbitrary bytes -> cJSON -> canonical form. The canonical
 * form must itself parse and be a fixed point (canonical(canonical(x)) ==
 * canonical(x)), and the cap must never be exceeded. */
#include "cx_json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *v = cx_json_parse((const char *)data, size);
    if (!v)
        return 0;
    struct cx_buf a, b;
    cx_buf_init(&a, 1 << 20);
    cx_buf_init(&b, 1 << 20);
    if (cx_json_canonical(v, &a) == 0) {
        cJSON *w = cx_json_parse(a.data, a.len);
        if (!w)
            abort();
        if (cx_json_canonical(w, &b) != 0 || a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
            abort();
        cJSON_Delete(w);
    }
    if (a.len > (1 << 20))
        abort();
    cx_buf_free(&a);
    cx_buf_free(&b);
    cJSON_Delete(v);
    return 0;
}
