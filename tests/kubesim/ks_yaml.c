/*
 * ks_yaml: one YAML document to cJSON (request bodies in YAML, server-side
 * apply). Plain scalars become null/bool/number where YAML 1.1 would, quoted
 * ones stay strings. Pure; any thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "cx_json.h"
#include "ks_crd.h"

#define YAML_MAX_DEPTH 100

/* ---- YAML ---------------------------------------------------------------- */

static cJSON *yaml_scalar(const yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return cJSON_CreateString(v);
    if (n == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0)
        return cJSON_CreateNull();
    if (strcmp(v, "true") == 0 || strcmp(v, "True") == 0)
        return cJSON_CreateTrue();
    if (strcmp(v, "false") == 0 || strcmp(v, "False") == 0)
        return cJSON_CreateFalse();
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (!errno && end != v && *end == '\0' && strspn(v, "+-0123456789.eE") == n)
        return cJSON_CreateNumber(d);
    return cJSON_CreateString(v);
}

static cJSON *yaml_node(yaml_parser_t *p, yaml_event_t *first, int depth)
{
    if (depth > YAML_MAX_DEPTH)
        return NULL;
    switch (first->type) {
    case YAML_SCALAR_EVENT:
        return yaml_scalar(first);
    case YAML_SEQUENCE_START_EVENT: {
        cJSON *a = cJSON_CreateArray();
        for (;;) {
            yaml_event_t ev;
            if (!yaml_parser_parse(p, &ev)) {
                cJSON_Delete(a);
                return NULL;
            }
            if (ev.type == YAML_SEQUENCE_END_EVENT) {
                yaml_event_delete(&ev);
                return a;
            }
            cJSON *c = yaml_node(p, &ev, depth + 1);
            yaml_event_delete(&ev);
            if (!c) {
                cJSON_Delete(a);
                return NULL;
            }
            cJSON_AddItemToArray(a, c);
        }
    }
    case YAML_MAPPING_START_EVENT: {
        cJSON *o = cJSON_CreateObject();
        for (;;) {
            yaml_event_t kev;
            if (!yaml_parser_parse(p, &kev)) {
                cJSON_Delete(o);
                return NULL;
            }
            if (kev.type == YAML_MAPPING_END_EVENT) {
                yaml_event_delete(&kev);
                return o;
            }
            if (kev.type != YAML_SCALAR_EVENT) {
                yaml_event_delete(&kev);
                cJSON_Delete(o);
                return NULL;
            }
            char *key = strdup((const char *)kev.data.scalar.value);
            yaml_event_delete(&kev);
            yaml_event_t vev;
            if (!key || !yaml_parser_parse(p, &vev)) {
                free(key);
                cJSON_Delete(o);
                return NULL;
            }
            cJSON *c = yaml_node(p, &vev, depth + 1);
            yaml_event_delete(&vev);
            if (!c) {
                free(key);
                cJSON_Delete(o);
                return NULL;
            }
            cJSON_DeleteItemFromObjectCaseSensitive(o, key);
            cJSON_AddItemToObject(o, key, c);
            free(key);
        }
    }
    default:
        return NULL;
    }
}

cJSON *ks_yaml_parse(const char *data, size_t len)
{
    /* JSON is YAML; take the fast path. */
    cJSON *j = cx_json_parse(data, len);
    if (j)
        return j;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return NULL;
    yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
    cJSON *root = NULL;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev))
            break;
        if (ev.type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT ||
            ev.type == YAML_SCALAR_EVENT) {
            root = yaml_node(&p, &ev, 0);
            yaml_event_delete(&ev);
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return root;
}
