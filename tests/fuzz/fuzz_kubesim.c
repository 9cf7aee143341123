/*
 * Fuzz target for kubesim's parsers of untrusted bytes: label and field
 * selectors (with matching), the three patch formats, YAML bodies,
 * Kubernetes protobuf bodies, Accept headers and printer-column JSONPaths.
 * The first byte picks the parser; the rest is the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kubesim/ks_accept.c"
#include "../kubesim/ks_jsonpath.c"
#include "../kubesim/ks_patch.c"
#include "../kubesim/ks_proto.c"
#include "../kubesim/ks_selector.c"
#include "../kubesim/ks_yaml.c"

static const char *field_of(const void *obj, const char *f)
{
    (void)f;
    return obj;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *s = malloc(size);
    if (!s)
        return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = 0;
    char err[8192];
    switch (data[0] % 9) {
    case 0: {
        struct ks_lsel *l = ks_lsel_parse(s, err, sizeof(err));
        if (l) {
            cJSON *lbl = cJSON_Parse("{\"a\":\"b\",\"x\":\"1\",\"example.com/k\":\"\"}");
            (void)ks_lsel_match(l, lbl);
            cJSON_Delete(lbl);
        }
        ks_lsel_free(l);
        break;
    }
    case 1: {
        struct ks_fsel *f = ks_fsel_parse(s, err, sizeof(err));
        if (f)
            (void)ks_fsel_match(f, field_of, "v");
        ks_fsel_free(f);
        break;
    }
    case 2:
    case 3:
    case 4: {
        cJSON *patch = cJSON_Parse(s);
        cJSON *doc = cJSON_Parse(
            "{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"b\"},\"finalizers\":[\"x\"]},"
            "\"spec\":{\"ports\":[{\"port\":80,\"name\":\"h\"}]},\"data\":{\"k\":\"v\"}}");
        if (patch && doc) {
            if (data[0] % 9 == 2) {
                doc = ks_merge_patch(doc, patch);
            } else if (data[0] % 9 == 3) {
                (void)ks_json_patch(&doc, patch, err, sizeof(err));
            } else {
                (void)ks_strategic_patch(&doc, patch, "Service", err, sizeof(err));
            }
        }
        cJSON_Delete(patch);
        cJSON_Delete(doc);
        break;
    }
    case 5: {
        cJSON *y = ks_yaml_parse(s, size - 1);
        cJSON_Delete(y);
        break;
    }
    case 6: {
        cJSON *o = ks_proto_decode(data + 1, size - 1, err, sizeof(err));
        cJSON_Delete(o);
        break;
    }
    case 7: {
        enum ks_as as;
        bool beta;
        ks_accept_negotiate(s, false, true, &as, &beta);
        ks_accept_negotiate(s, true, false, &as, &beta);
        break;
    }
    case 8: {
        cJSON *doc = cJSON_Parse("{\"spec\":{\"a\":[1,{\"b\":\"c\"}],\"d\":{\"e.f\":true}},"
                                 "\"status\":{\"conditions\":[{\"type\":\"Ready\","
                                 "\"status\":\"True\",\"n\":2}]}}");
        (void)ks_jsonpath_first(doc, s);
        cJSON_Delete(doc);
        break;
    }
    }
    free(s);
    return 0;
}
