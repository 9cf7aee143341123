/* Fuzz target: arbitrary bytes as a JSON array of objects -> the translator
 * (parse, delegation, encoding, reports), twice through one context (the
 * second pass exercises the memo) and once through a fresh one: both must
 * give the same snapshot version. Never crashes or leaks. */
#include "cx_json.h"
#include "xlate.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *arr = cx_json_parse((const char *)data, size);
    if (!arr)
        return 0;
    if (!cJSON_IsArray(arr)) {
        cJSON_Delete(arr);
        return 0;
    }
    size_t n = cJSON_IsArray(arr) ? (size_t)cJSON_GetArraySize(arr) : 0;
    struct xlate_object *objs = calloc(n ? n : 1, sizeof(*objs));
    size_t i = 0;
    cJSON *o;
    cJSON_ArrayForEach(o, arr)
    {
        objs[i++] = (struct xlate_object){.kind = XLATE_KIND_UNKNOWN, .obj = o};
    }
    struct xlate_input in = {objs, n, 0};
    struct xlate_ctx *a = xlate_ctx_new(), *b = xlate_ctx_new();
    struct xlate_snapshot *s1 = NULL, *s2 = NULL, *s3 = NULL;
    if (xlate_run(a, &in, &s1, NULL) == 0 && xlate_run(a, &in, &s2, NULL) == 0 &&
        xlate_run(b, &in, &s3, NULL) == 0) {
        if (strcmp(s1->version, s2->version) != 0 || strcmp(s1->version, s3->version) != 0 ||
            s1->nreports != s3->nreports)
            abort();
    }
    xlate_snapshot_unref(s1);
    xlate_snapshot_unref(s2);
    xlate_snapshot_unref(s3);
    xlate_ctx_free(a);
    xlate_ctx_free(b);
    free(objs);
    cJSON_Delete(arr);
    return 0;
}
