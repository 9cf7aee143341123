/*
 * Fuzz target for kubesim's OpenAPI v3 validation of custom resources
 * (ks_schema.c, ks_structural.c): the input is a schema and an object, two
 * JSON texts separated by a NUL byte. The schema goes through the
 * structural checks a CRD's creation runs; only a schema that passes them
 * is used to prune, default and validate the object, as kubesim does. Both
 * come from whoever may create CRDs and objects, so both are untrusted.
 * Linked with kubesim's objects (the Makefile), not including them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kubesim/ks_schema.h"

#include <cjson/cJSON.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t slen = nul ? (size_t)(nul - data) : size;
    cJSON *sch = cJSON_ParseWithLength((const char *)data, slen);
    if (!sch)
        return 0;
    struct ks_ferrs fe = {0};
    ks_schema_structural(sch, "spec.versions[0].schema.openAPIV3Schema", &fe);
    int structural = fe.n == 0;
    ks_ferrs_free(&fe);
    if (structural && nul) {
        cJSON *obj = cJSON_ParseWithLength((const char *)nul + 1, size - slen - 1);
        if (obj) {
            struct ks_ferrs fo = {0};
            ks_schema_validate(obj, sch, &fo);
            if (fo.n > sizeof(fo.e) / sizeof(fo.e[0]))
                abort();
            ks_ferrs_free(&fo);
            /* what validation leaves behind is still JSON */
            char *out = cJSON_PrintUnformatted(obj);
            if (!out)
                abort();
            free(out);
            cJSON_Delete(obj);
        }
    }
    cJSON_Delete(sch);
    return 0;
}
