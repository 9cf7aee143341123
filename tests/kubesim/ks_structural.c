/*
 * ks_structural: a CRD version's openAPIV3Schema must be structural, and
 * what apiextensions' CRD validation checks of each schema node
 * (apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go,
 * pkg/apiserver/schema/validation.go): a type on every node (unless
 * int-or-string or preserve-unknown-fields), object at the root, items for
 * arrays, nothing structural inside allOf/anyOf/oneOf/not, properties and
 * additionalProperties exclusive, no uniqueItems, patterns that compile,
 * list-map keys that exist. Event loop only (ks_re2).
 */
#include <stdio.h>
#include <string.h>

#include "cx_json.h"
#include "ks_re2.h"
#include "ks_schema.h"

#define MAX_DEPTH 64
#define FIELD_MAX 256

static bool is_true(const cJSON *s, const char *k)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, k));
}

/* |out| = |path|.|name| (cut at FIELD_MAX: paths are only messages). */
static void child(char *out, const char *path, const char *name)
{
    if (snprintf(out, FIELD_MAX, "%s.%s", path, name) >= FIELD_MAX)
        out[FIELD_MAX - 1] = 0;
}

static void node(const cJSON *s, const char *path, bool root, bool in_value, int depth,
                 struct ks_ferrs *fe);

/* allOf/anyOf/oneOf/not: value validations only. */
static void value_validation(const cJSON *s, const char *path, int depth, struct ks_ferrs *fe)
{
    static const char *const lists[] = {"allOf", "anyOf", "oneOf"};
    char f[FIELD_MAX];
    for (size_t l = 0; l < 3; l++) {
        int i = 0;
        const cJSON *sub;
        cJSON_ArrayForEach(sub, cJSON_GetObjectItemCaseSensitive(s, lists[l]))
        {
            char name[32];
            snprintf(name, sizeof(name), "%s[%d]", lists[l], i++);
            child(f, path, name);
            node(sub, f, false, true, depth + 1, fe);
        }
    }
    const cJSON *not = cJSON_GetObjectItemCaseSensitive(s, "not");
    if (cJSON_IsObject(not )) {
        child(f, path, "not");
        node(not, f, false, true, depth + 1, fe);
    }
}

static void node(const cJSON *s, const char *path, bool root, bool in_value, int depth,
                 struct ks_ferrs *fe)
{
    if (!cJSON_IsObject(s) || depth > MAX_DEPTH)
        return;
    char f[FIELD_MAX];
    const char *type = cx_json_str(s, "type");
    const cJSON *pres = cJSON_GetObjectItemCaseSensitive(s, "x-kubernetes-preserve-unknown-fields");
    bool ios = is_true(s, "x-kubernetes-int-or-string");
    if (in_value) {
        /* validateValueValidation: only value validations in there */
        if (type && *type) {
            child(f, path, "type");
            ks_ferr_add(fe, "FieldValueForbidden", f, "Forbidden: must be empty to be structural");
        }
        if (cJSON_GetObjectItemCaseSensitive(s, "default")) {
            child(f, path, "default");
            ks_ferr_add(fe, "FieldValueForbidden", f,
                        "Forbidden: must be undefined to be structural");
        }
        if (is_true(s, "nullable")) {
            child(f, path, "nullable");
            ks_ferr_add(fe, "FieldValueForbidden", f, "Forbidden: must be false to be structural");
        }
    } else {
        if (root && type && strcmp(type, "object") != 0) {
            child(f, path, "type");
            ks_ferr_invalid_str(fe, f, type, "must be object at the root");
        }
        if (ios && type && *type) {
            child(f, path, "type");
            ks_ferr_invalid_str(fe, f, type, "must be empty if x-kubernetes-int-or-string is true");
        }
        if ((!type || !*type) && !ios && !cJSON_IsTrue(pres)) {
            child(f, path, "type");
            ks_ferr_add(fe, "FieldValueRequired", f,
                        "Required value: must not be empty for specified object fields");
        }
        if (type && strcmp(type, "array") == 0 && !cJSON_GetObjectItemCaseSensitive(s, "items")) {
            child(f, path, "items");
            ks_ferr_add(fe, "FieldValueRequired", f, "Required value: must be specified");
        }
    }
    if (pres && !cJSON_IsTrue(pres)) {
        child(f, path, "x-kubernetes-preserve-unknown-fields");
        ks_ferr_add(fe, "FieldValueInvalid", f, "Invalid value: false: must be true or undefined");
    }
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    const cJSON *addl = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    if (cJSON_IsObject(props) && props->child && addl && !cJSON_IsFalse(addl)) {
        child(f, path, "additionalProperties");
        ks_ferr_add(fe, "FieldValueForbidden", f,
                    "Forbidden: additionalProperties and properties are mutual exclusive");
    }
    if (is_true(s, "uniqueItems")) {
        child(f, path, "uniqueItems");
        ks_ferr_add(fe, "FieldValueForbidden", f,
                    "Forbidden: uniqueItems cannot be set to true since the runtime complexity "
                    "becomes quadratic");
    }
    const char *pat = cx_json_str(s, "pattern");
    if (pat) {
        char err[200], why[320];
        if (ks_re2_search(pat, "", 0, err, sizeof(err)) < 0) {
            snprintf(why, sizeof(why),
                     "must be a valid regular expression, but isn't: error parsing regexp: %s",
                     err);
            child(f, path, "pattern");
            ks_ferr_invalid_str(fe, f, pat, why);
        }
    }
    const char *lt = cx_json_str(s, "x-kubernetes-list-type");
    const cJSON *keys = cJSON_GetObjectItemCaseSensitive(s, "x-kubernetes-list-map-keys");
    if (lt && strcmp(lt, "map") == 0) {
        const cJSON *ip = cx_json_path(s, "items", "properties", NULL);
        const cJSON *k;
        if (!cJSON_IsArray(keys) || !keys->child) {
            child(f, path, "x-kubernetes-list-map-keys");
            ks_ferr_add(fe, "FieldValueRequired", f,
                        "Required value: must not be empty if x-kubernetes-list-type is map");
        }
        cJSON_ArrayForEach(k, keys)
        {
            if (cJSON_IsString(k) && !cJSON_GetObjectItemCaseSensitive(ip, k->valuestring)) {
                child(f, path, "items.properties");
                ks_ferr_add(fe, "FieldValueRequired", f,
                            "Required value: entries for all x-kubernetes-list-map-keys are "
                            "required");
                break;
            }
        }
    } else if (keys) {
        child(f, path, "x-kubernetes-list-type");
        ks_ferr_add(fe, "FieldValueInvalid", f,
                    "Invalid value: \"%s\": must be map if x-kubernetes-list-map-keys is non-empty",
                    lt ? lt : "");
    }
    for (const cJSON *p = cJSON_IsObject(props) ? props->child : NULL; p; p = p->next) {
        char name[FIELD_MAX];
        if (snprintf(name, sizeof(name), "properties[%s]", p->string) >= FIELD_MAX)
            name[FIELD_MAX - 1] = 0;
        child(f, path, name);
        node(p, f, false, in_value, depth + 1, fe);
    }
    if (cJSON_IsObject(addl)) {
        child(f, path, "additionalProperties");
        node(addl, f, false, in_value, depth + 1, fe);
    }
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
    if (cJSON_IsObject(items)) {
        child(f, path, "items");
        node(items, f, false, in_value, depth + 1, fe);
    }
    value_validation(s, path, depth, fe);
}

void ks_schema_structural(const cJSON *sch, const char *path, struct ks_ferrs *fe)
{
    node(sch, path, true, false, 0, fe);
}
