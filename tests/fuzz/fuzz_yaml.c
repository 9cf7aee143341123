/* Fuzz target: arbitrary bytes -> cx_yaml_parse. Must never crash, leak or
 * exceed its node cap; whatever it returns must be an array of documents
 * that prints and re-parses as JSON. */
#include "cx_json.h"
#include "cx_yaml.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    cJSON *docs = cx_yaml_parse((const char *)data, size, err, sizeof(err));
    if (!docs)
        return 0;
    if (!cJSON_IsArray(docs))
        abort();
    char *s = cJSON_PrintUnformatted(docs);
    if (s) {
        cJSON *back = cJSON_Parse(s);
        if (!back)
            abort();
        cJSON_Delete(back);
        free(s);
    }
    cJSON_Delete(docs);
    return 0;
}
