#include "cx_yaml.h"

#include "cx_map.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* An anchor of the current document, with what an alias to it costs (its
 * nodes, the aliases inside it expanded) and how many levels a copy adds,
 * so that an alias is judged before anything is copied. */
struct anchor {
    cJSON *node;  /* borrowed from the document, or |owned| */
    cJSON *owned; /* an anchored mapping key's node (the mapping keeps only its
                   * text): freed with the anchor */
    size_t nodes;
    int height; /* levels of |node|: 1 for a scalar */
    char name[];
};

struct yctx {
    yaml_parser_t parser;
    char *err;
    size_t errlen;
    size_t nodes;          /* nodes so far, aliases expanded */
    size_t alias_nodes;    /* the part of |nodes| that aliases copied */
    struct cx_map anchors; /* name -> its latest struct anchor */
    struct anchor **all;   /* every anchor of the document, redefined ones
                            * too (a key's node lives until the document ends) */
    size_t nall, capall;
    int failed;
};

__attribute__((format(printf, 3, 4))) static void set_err(struct yctx *y, const yaml_mark_t *at,
                                                          const char *fmt, ...)
{
    if (!y->failed && y->err && y->errlen) {
        char what[400];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        if (at)
            snprintf(y->err, y->errlen, "line %zu column %zu: %s", at->line + 1, at->column + 1,
                     what);
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

static cJSON *parse_node(struct yctx *y, yaml_event_t *ev, int depth, int *height);

static int next(struct yctx *y, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&y->parser, ev)) {
        yaml_mark_t at = y->parser.problem_mark;
        set_err(y, &at, "%s", y->parser.problem ? y->parser.problem : "invalid YAML");
        return -1;
    }
    return 0;
}

static const char *anchor_of(const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        return (const char *)ev->data.scalar.anchor;
    case YAML_SEQUENCE_START_EVENT:
        return (const char *)ev->data.sequence_start.anchor;
    case YAML_MAPPING_START_EVENT:
        return (const char *)ev->data.mapping_start.anchor;
    default:
        return NULL;
    }
}

/* Names |node| (complete: an alias costs what it copies) |name|, replacing
 * an earlier anchor of that name. Returns 0 or -1 (out of memory). */
static int remember(struct yctx *y, const char *name, cJSON *node, size_t nodes, int height)
{
    size_t len = strlen(name);
    if (y->nall == y->capall) {
        size_t cap = y->capall ? y->capall * 2 : 8;
        struct anchor **all = realloc(y->all, cap * sizeof(*all));
        if (!all)
            return -1;
        y->all = all;
        y->capall = cap;
    }
    struct anchor *a = malloc(sizeof(*a) + len + 1);
    if (!a)
        return -1;
    *a = (struct anchor){.node = node, .nodes = nodes, .height = height};
    memcpy(a->name, name, len + 1);
    y->all[y->nall++] = a;
    return cx_map_puts(&y->anchors, a->name, a, NULL);
}

/* Anchors do not cross documents. */
static void drop_anchors(struct yctx *y)
{
    for (size_t i = 0; i < y->nall; i++) {
        cJSON_Delete(y->all[i]->owned);
        free(y->all[i]);
        y->all[i] = NULL;
    }
    y->nall = 0;
    cx_map_free(&y->anchors);
}

/* An alias at |depth|: refused before anything is copied when the copy
 * would pass the nesting, node or alias-expansion limit, so that an alias
 * bomb costs no more than the limits it is held to. */
static cJSON *alias(struct yctx *y, const yaml_event_t *ev, int depth, int *height)
{
    const char *name = (const char *)ev->data.alias.anchor;
    const struct anchor *a = cx_map_gets(&y->anchors, name);
    if (!a) {
        set_err(y, &ev->start_mark, "unknown anchor %.200s", name);
        return NULL;
    }
    if (depth + a->height > CX_YAML_MAX_DEPTH) {
        set_err(y, &ev->start_mark,
                "nesting too deep: alias *%.200s would reach %d levels, over the limit of %d", name,
                depth + a->height, CX_YAML_MAX_DEPTH);
        return NULL;
    }
    if (y->alias_nodes + a->nodes > CX_YAML_MAX_ALIAS_NODES) {
        set_err(y, &ev->start_mark,
                "aliases expand too much: alias *%.200s would bring the nodes copied by "
                "aliases to %zu, over the limit of %d",
                name, y->alias_nodes + a->nodes, CX_YAML_MAX_ALIAS_NODES);
        return NULL;
    }
    if (y->nodes + a->nodes > CX_YAML_MAX_NODES) {
        set_err(y, &ev->start_mark,
                "too many nodes: alias *%.200s would bring them to %zu, over the limit of %d", name,
                y->nodes + a->nodes, CX_YAML_MAX_NODES);
        return NULL;
    }
    cJSON *copy = cJSON_Duplicate(a->node, 1);
    if (!copy) {
        set_err(y, NULL, "out of memory");
        return NULL;
    }
    y->nodes += a->nodes;
    y->alias_nodes += a->nodes;
    *height = a->height;
    return copy;
}

static cJSON *scalar_node(struct yctx *y, const yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    if (strlen(v) != len) {
        set_err(y, &ev->start_mark, "NUL byte in a scalar");
        return NULL;
    }
    cJSON *node = NULL;
    if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (!tag || strcmp(tag, YAML_STR_TAG) != 0))
        node = plain_scalar(v, len);
    if (!node)
        node = cJSON_CreateString(v);
    if (!node)
        set_err(y, NULL, "out of memory");
    return node;
}

/* The items of a sequence whose start was just read, up to its end. */
static cJSON *seq_node(struct yctx *y, int depth, int *height)
{
    cJSON *node = cJSON_CreateArray();
    if (!node) {
        set_err(y, NULL, "out of memory");
        return NULL;
    }
    for (;;) {
        yaml_event_t ev;
        if (next(y, &ev) != 0)
            goto fail;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        int h = 0;
        cJSON *c = parse_node(y, &ev, depth + 1, &h);
        yaml_event_delete(&ev);
        if (!c)
            goto fail;
        cJSON_AddItemToArray(node, c);
        if (h + 1 > *height)
            *height = h + 1;
    }
    return node;
fail:
    cJSON_Delete(node);
    return NULL;
}

/* The keys of a mapping so far, so that a duplicate is found without
 * scanning them all: a wide mapping would be quadratic. A scan while the
 * mapping is small, a map (keys borrowed from the items) from KEYSET_SCAN
 * keys on. */
#define KEYSET_SCAN 8
struct keyset {
    struct cx_map map;
    size_t n;
};

static int keyset_has(const struct keyset *ks, const cJSON *obj, const char *key)
{
    if (ks->n < KEYSET_SCAN)
        return cJSON_GetObjectItemCaseSensitive(obj, key) != NULL;
    return cx_map_gets(&ks->map, key) != NULL;
}

/* Records |item|, just added to |obj|. Returns 0 or -1 (out of memory). */
static int keyset_add(struct keyset *ks, const cJSON *obj, cJSON *item)
{
    if (++ks->n < KEYSET_SCAN)
        return 0;
    if (ks->n > KEYSET_SCAN)
        return cx_map_puts(&ks->map, item->string, item, NULL);
    for (cJSON *c = obj->child; c; c = c->next)
        if (cx_map_puts(&ks->map, c->string, c, NULL) != 0)
            return -1;
    return 0;
}

/* A scalar key's text (in |buf| for numbers), NULL for a collection. */
static const char *key_text(const cJSON *k, char *buf, size_t len)
{
    if (cJSON_IsString(k))
        return k->valuestring;
    if (cJSON_IsNumber(k)) {
        snprintf(buf, len, "%.17g", k->valuedouble);
        return buf;
    }
    if (cJSON_IsBool(k))
        return cJSON_IsTrue(k) ? "true" : "false";
    if (cJSON_IsNull(k))
        return "null";
    return NULL;
}

/* The pairs of a mapping whose start was just read, up to its end. A key's
 * node is freed once its text is used, unless it has an anchor: then the
 * anchor keeps it (for the aliases to it) until the document ends. */
static cJSON *map_node(struct yctx *y, int depth, int *height)
{
    struct keyset ks = {0};
    cJSON *k = NULL;
    int free_k = 0;
    cJSON *node = cJSON_CreateObject();
    if (!node) {
        set_err(y, NULL, "out of memory");
        goto out;
    }
    for (;;) {
        yaml_event_t kev;
        if (next(y, &kev) != 0)
            goto fail;
        if (kev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&kev);
            break;
        }
        int h = 0;
        k = parse_node(y, &kev, depth + 1, &h);
        const char *kanchor = k ? anchor_of(&kev) : NULL;
        struct anchor *ka = kanchor ? cx_map_gets(&y->anchors, kanchor) : NULL;
        if (ka && ka->node == k)
            ka->owned = k;
        free_k = k && !(ka && ka->owned == k);
        yaml_mark_t kat = kev.start_mark;
        yaml_event_delete(&kev);
        if (!k)
            goto fail;
        char keybuf[64];
        const char *key = key_text(k, keybuf, sizeof(keybuf));
        if (!key) {
            set_err(y, &kat, "a mapping key must be a scalar");
            goto fail;
        }
        if (keyset_has(&ks, node, key)) {
            set_err(y, &kat, "duplicate key \"%.200s\"", key);
            goto fail;
        }
        yaml_event_t vev;
        if (next(y, &vev) != 0)
            goto fail;
        cJSON *v = parse_node(y, &vev, depth + 1, &h);
        yaml_event_delete(&vev);
        if (!v)
            goto fail;
        if (!cJSON_AddItemToObject(node, key, v)) {
            cJSON_Delete(v);
            set_err(y, NULL, "out of memory");
            goto fail;
        }
        if (keyset_add(&ks, node, v) != 0) {
            set_err(y, NULL, "out of memory");
            goto fail;
        }
        if (free_k)
            cJSON_Delete(k);
        k = NULL;
        free_k = 0;
        if (h + 1 > *height)
            *height = h + 1;
    }
    goto out;
fail:
    cJSON_Delete(node);
    node = NULL;
out:
    if (free_k)
        cJSON_Delete(k);
    k = NULL;
    cx_map_free(&ks.map);
    return node;
}

/* The node that starts with |ev| at |depth| (0: a document's root), its
 * levels in |height|. Refuses a node past CX_YAML_MAX_DEPTH levels or
 * CX_YAML_MAX_NODES nodes. */
static cJSON *parse_node(struct yctx *y, yaml_event_t *ev, int depth, int *height)
{
    if (depth >= CX_YAML_MAX_DEPTH) {
        set_err(y, &ev->start_mark, "nesting too deep: over the limit of %d levels",
                CX_YAML_MAX_DEPTH);
        return NULL;
    }
    if (ev->type == YAML_ALIAS_EVENT)
        return alias(y, ev, depth, height);
    if (++y->nodes > CX_YAML_MAX_NODES) {
        set_err(y, &ev->start_mark, "too many nodes: over the limit of %d", CX_YAML_MAX_NODES);
        return NULL;
    }
    size_t before = y->nodes - 1;
    cJSON *node;
    *height = 1;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        node = scalar_node(y, ev);
        break;
    case YAML_SEQUENCE_START_EVENT:
        node = seq_node(y, depth, height);
        break;
    case YAML_MAPPING_START_EVENT:
        node = map_node(y, depth, height);
        break;
    default:
        set_err(y, &ev->start_mark, "unexpected YAML event");
        return NULL;
    }
    const char *name = anchor_of(ev);
    if (node && name && remember(y, name, node, y->nodes - before, *height) != 0) {
        set_err(y, NULL, "out of memory");
        cJSON_Delete(node);
        node = NULL;
    }
    return node;
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
            drop_anchors(&y);
            int h = 0;
            cJSON *doc = parse_node(&y, &ev, 0, &h);
            if (doc && !cJSON_IsNull(doc))
                cJSON_AddItemToArray(docs, doc);
            else
                cJSON_Delete(doc);
            break;
        }
        }
        yaml_event_delete(&ev);
    }
    drop_anchors(&y);
    free(y.all);
    y.all = NULL;
    yaml_parser_delete(&y.parser);
    if (y.failed) {
        cJSON_Delete(docs);
        return NULL;
    }
    return docs;
}
