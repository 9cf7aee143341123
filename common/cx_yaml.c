#include "cx_yaml.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct anchor {
    char *name;
    cJSON *node;  /* borrowed: lives in the document being built */
    size_t nodes; /* nodes it holds (aliases cost as much as copies) */
};

struct yctx {
    yaml_parser_t parser;
    char *err;
    size_t errlen;
    size_t nodes;
    struct anchor *anchors;
    size_t nanchors, capanchors;
    int failed;
};

static void set_err(struct yctx *y, size_t line, size_t col, const char *what)
{
    if (!y->failed && y->err && y->errlen) {
        if (line)
            snprintf(y->err, y->errlen, "line %zu column %zu: %s", line, col, what);
        else
            snprintf(y->err, y->errlen, "%s", what);
    }
    y->failed = 1;
}

static int scalar_is(const char *v, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(v, *list) == 0)
            return 1;
    return 0;
}

/* A plain scalar's JSON value (YAML 1.1 as go-yaml resolves it). */
static cJSON *plain_scalar(const char *v, size_t len)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    /* YAML 1.2 core schema: yes/no/on/off are strings (in YAML 1.1, which
     * kubectl speaks, they are booleans: "on:" becomes "true:") */
    static const char *const trues[] = {"true", "True", "TRUE", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", NULL};
    if (scalar_is(v, nulls))
        return cJSON_CreateNull();
    if (scalar_is(v, trues))
        return cJSON_CreateTrue();
    if (scalar_is(v, falses))
        return cJSON_CreateFalse();
    /* numbers: decimal integers, 0x/0o integers, decimal floats */
    if (len > 0 && len < 64 && strspn(v, "+-0123456789.eExXoOabcdefABCDEF_") == len) {
        char *end = NULL;
        errno = 0;
        if ((v[0] == '0' && (v[1] == 'x' || v[1] == 'o')) ||
            ((v[0] == '+' || v[0] == '-') && v[1] == '0' && (v[2] == 'x' || v[2] == 'o'))) {
            const char *p = v + ((v[0] == '+' || v[0] == '-') ? 1 : 0);
            long long n = strtoll(p + 2, &end, p[1] == 'x' ? 16 : 8);
            if (end && *end == '\0' && errno == 0 && p[2])
                return cJSON_CreateNumber((double)(v[0] == '-' ? -n : n));
            return NULL;
        }
        int digits = 0;
        for (const char *c = v; *c; c++)
            digits += (*c >= '0' && *c <= '9');
        if (digits) {
            double d = strtod(v, &end);
            if (end && *end == '\0' && isfinite(d))
                return cJSON_CreateNumber(d);
        }
    }
    return NULL; /* a string */
}

static cJSON *parse_node(struct yctx *y, yaml_event_t *ev, int depth);

static int next(struct yctx *y, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&y->parser, ev)) {
        set_err(y, y->parser.problem_mark.line + 1, y->parser.problem_mark.column + 1,
                y->parser.problem ? y->parser.problem : "invalid YAML");
        return -1;
    }
    return 0;
}

static int count(const cJSON *n)
{
    int c = 1;
    for (const cJSON *k = n ? n->child : NULL; k; k = k->next)
        c += count(k);
    return c;
}

static int remember(struct yctx *y, const yaml_char_t *anchor, cJSON *node)
{
    if (!anchor)
        return 0;
    if (y->nanchors == y->capanchors) {
        size_t cap = y->capanchors ? y->capanchors * 2 : 8;
        struct anchor *a = realloc(y->anchors, cap * sizeof(*a));
        if (!a)
            return -1;
        y->anchors = a;
        y->capanchors = cap;
    }
    char *name = strdup((const char *)anchor);
    if (!name)
        return -1;
    y->anchors[y->nanchors++] = (struct anchor){name, node, (size_t)count(node)};
    // cppcheck-suppress memleak ; freed with y->anchors
    return 0;
}

/* A node about to be freed (a mapping key: only its text is kept) must not
 * stay reachable through an anchor. */
static void forget(struct yctx *y, const cJSON *node)
{
    for (size_t i = 0; i < y->nanchors;) {
        if (y->anchors[i].node == node) {
            free(y->anchors[i].name);
            y->anchors[i] = y->anchors[--y->nanchors];
        } else {
            i++;
        }
    }
}

static cJSON *alias(struct yctx *y, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    for (size_t i = y->nanchors; i-- > 0;) {
        if (strcmp(y->anchors[i].name, name) != 0)
            continue;
        y->nodes += y->anchors[i].nodes;
        if (y->nodes > CX_YAML_MAX_NODES) {
            set_err(y, ev->start_mark.line + 1, ev->start_mark.column + 1,
                    "too many nodes (aliases expand too much)");
            return NULL;
        }
        cJSON *copy = cJSON_Duplicate(y->anchors[i].node, 1);
        if (!copy)
            set_err(y, 0, 0, "out of memory");
        return copy;
    }
    char what[300];
    snprintf(what, sizeof(what), "unknown anchor %.200s", name);
    set_err(y, ev->start_mark.line + 1, ev->start_mark.column + 1, what);
    return NULL;
}

static cJSON *parse_node(struct yctx *y, yaml_event_t *ev, int depth)
{
    cJSON *node = NULL;
    if (depth > CX_YAML_MAX_DEPTH) {
        set_err(y, ev->start_mark.line + 1, ev->start_mark.column + 1, "nesting too deep");
        return NULL;
    }
    if (++y->nodes > CX_YAML_MAX_NODES) {
        set_err(y, ev->start_mark.line + 1, ev->start_mark.column + 1, "too many nodes");
        return NULL;
    }
    switch (ev->type) {
    case YAML_ALIAS_EVENT:
        return alias(y, ev);
    case YAML_SCALAR_EVENT: {
        const char *v = (const char *)ev->data.scalar.value;
        size_t len = ev->data.scalar.length;
        const char *tag = (const char *)ev->data.scalar.tag;
        if (strlen(v) != len) {
            set_err(y, ev->start_mark.line + 1, ev->start_mark.column + 1, "NUL byte in a scalar");
            return NULL;
        }
        if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
            (!tag || strcmp(tag, YAML_STR_TAG) != 0))
            node = plain_scalar(v, len);
        if (!node)
            node = cJSON_CreateString(v);
        if (node && remember(y, ev->data.scalar.anchor, node) != 0) {
            cJSON_Delete(node);
            node = NULL;
        }
        break;
    }
    case YAML_SEQUENCE_START_EVENT: {
        node = cJSON_CreateArray();
        if (!node)
            break;
        for (;;) {
            yaml_event_t child;
            if (next(y, &child) != 0)
                goto fail;
            if (child.type == YAML_SEQUENCE_END_EVENT) {
                yaml_event_delete(&child);
                break;
            }
            cJSON *c = parse_node(y, &child, depth + 1);
            yaml_event_delete(&child);
            if (!c)
                goto fail;
            cJSON_AddItemToArray(node, c);
        }
        /* registered complete, so an alias costs what it copies */
        if (remember(y, ev->data.sequence_start.anchor, node) != 0)
            goto fail;
        break;
    }
    case YAML_MAPPING_START_EVENT: {
        node = cJSON_CreateObject();
        if (!node)
            break;
        for (;;) {
            yaml_event_t kev;
            if (next(y, &kev) != 0)
                goto fail;
            if (kev.type == YAML_MAPPING_END_EVENT) {
                yaml_event_delete(&kev);
                break;
            }
            cJSON *k = parse_node(y, &kev, depth + 1);
            size_t line = kev.start_mark.line + 1, col = kev.start_mark.column + 1;
            yaml_event_delete(&kev);
            if (!k)
                goto fail;
            char keybuf[64];
            const char *key;
            if (cJSON_IsString(k)) {
                key = k->valuestring;
            } else if (cJSON_IsNumber(k)) {
                snprintf(keybuf, sizeof(keybuf), "%.17g", k->valuedouble);
                key = keybuf;
            } else if (cJSON_IsBool(k)) {
                key = cJSON_IsTrue(k) ? "true" : "false";
            } else if (cJSON_IsNull(k)) {
                key = "null";
            } else {
                forget(y, k);
                cJSON_Delete(k);
                set_err(y, line, col, "a mapping key must be a scalar");
                goto fail;
            }
            yaml_event_t vev;
            if (next(y, &vev) != 0) {
                forget(y, k);
                cJSON_Delete(k);
                goto fail;
            }
            cJSON *v = parse_node(y, &vev, depth + 1);
            yaml_event_delete(&vev);
            if (!v) {
                forget(y, k);
                cJSON_Delete(k);
                goto fail;
            }
            if (cJSON_GetObjectItemCaseSensitive(node, key)) {
                char what[300];
                snprintf(what, sizeof(what), "duplicate key \"%.200s\"", key);
                set_err(y, line, col, what);
                forget(y, k);
                cJSON_Delete(k);
                cJSON_Delete(v);
                goto fail;
            }
            cJSON_AddItemToObject(node, key, v);
            forget(y, k);
            cJSON_Delete(k);
        }
        if (remember(y, ev->data.mapping_start.anchor, node) != 0)
            goto fail;
        break;
    }
    default:
        set_err(y, ev->start_mark.line + 1, ev->start_mark.column + 1, "unexpected YAML event");
        return NULL;
    }
    if (!node)
        set_err(y, 0, 0, "out of memory");
    return node;
fail:
    cJSON_Delete(node);
    return NULL;
}

cJSON *cx_yaml_parse(const char *data, size_t len, char *err, size_t errlen)
{
    struct yctx y = {.err = err, .errlen = errlen};
    cJSON *docs = cJSON_CreateArray();
    if (err && errlen)
        err[0] = '\0';
    if (!docs || !yaml_parser_initialize(&y.parser)) {
        cJSON_Delete(docs);
        if (err && errlen)
            snprintf(err, errlen, "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&y.parser, (const unsigned char *)data, len);
    int done = 0;
    while (!done && !y.failed) {
        yaml_event_t ev;
        if (next(&y, &ev) != 0)
            break;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = 1;
            break;
        case YAML_DOCUMENT_START_EVENT:
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_END_EVENT:
            break;
        default: {
            /* anchors do not cross documents */
            for (size_t i = 0; i < y.nanchors; i++)
                free(y.anchors[i].name);
            y.nanchors = 0;
            cJSON *doc = parse_node(&y, &ev, 0);
            if (doc && !cJSON_IsNull(doc))
                cJSON_AddItemToArray(docs, doc);
            else
                cJSON_Delete(doc);
            break;
        }
        }
        yaml_event_delete(&ev);
    }
    for (size_t i = 0; i < y.nanchors; i++)
        free(y.anchors[i].name);
    free(y.anchors);
    yaml_parser_delete(&y.parser);
    if (y.failed) {
        cJSON_Delete(docs);
        return NULL;
    }
    return docs;
}
