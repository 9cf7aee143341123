/*
 * Change significance: a digest of exactly what translation reads.
 *
 * The digest covers the canonical JSON (common/cx_json: keys sorted, no
 * whitespace) of the object minus:
 *   status                      our own status writes, other controllers'
 *   metadata.resourceVersion    changes on every write
 *   metadata.managedFields      server-side apply bookkeeping
 *   metadata.generation         derived: the server bumps it exactly when
 *                               the non-metadata, non-status content changes,
 *                               which the digest covers already; and where a
 *                               kind has no status subresource the server
 *                               bumps it on status writes too, which would
 *                               make our own status writes significant
 *   metadata.annotations["control-plane.alpha.kubernetes.io/leader"]
 *                               the ConfigMap lock record, renewed every 2 s
 * An annotations map left empty is dropped, as the API server drops empty
 * maps. The bytes are produced while walking the tree, without copying it,
 * and equal cx_json_canonical() of the pruned object (a unit test checks).
 */
#include "cx_hash.h"
#include "cx_json.h"
#include "filter.h"

#include <stdlib.h>
#include <string.h>

enum level {
    LVL_ROOT = 0,
    LVL_METADATA = 1,
    LVL_ANNOTATIONS = 2,
};

static int excluded(enum level lvl, const char *key)
{
    switch (lvl) {
    case LVL_ROOT:
        return strcmp(key, "status") == 0;
    case LVL_METADATA:
        return strcmp(key, "resourceVersion") == 0 || strcmp(key, "managedFields") == 0 ||
               strcmp(key, "generation") == 0;
    case LVL_ANNOTATIONS:
        return strcmp(key, FILTER_LEADER_ANNOTATION) == 0;
    }
    return 0;
}

static int key_cmp(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a;
    const cJSON *y = *(const cJSON *const *)b;
    return strcmp(x->string, y->string);
}

static size_t kept_children(const cJSON *o, enum level lvl)
{
    size_t n = 0;
    for (const cJSON *c = o->child; c; c = c->next)
        if (c->string && !excluded(lvl, c->string))
            n++;
    return n;
}

static int emit_pruned(const cJSON *o, enum level lvl, struct cx_buf *b)
{
    size_t n = kept_children(o, lvl);
    const cJSON *stackv[32];
    const cJSON **kids = n <= 32 ? stackv : malloc(n * sizeof(*kids));
    if (!kids)
        return -1;
    size_t i = 0;
    for (const cJSON *c = o->child; c; c = c->next)
        if (c->string && !excluded(lvl, c->string))
            kids[i++] = c;
    if (n > 1)
        qsort(kids, n, sizeof(*kids), key_cmp);
    int rc = cx_buf_append(b, "{", 1);
    int first = 1;
    for (i = 0; i < n && rc == 0; i++) {
        const cJSON *c = kids[i];
        enum level sub = LVL_ROOT;
        int prune = 0;
        if (lvl == LVL_ROOT && strcmp(c->string, "metadata") == 0 && cJSON_IsObject(c)) {
            prune = 1;
            sub = LVL_METADATA;
        } else if (lvl == LVL_METADATA && strcmp(c->string, "annotations") == 0 &&
                   cJSON_IsObject(c)) {
            if (kept_children(c, LVL_ANNOTATIONS) == 0)
                continue; /* only the leader record: as if absent */
            prune = 1;
            sub = LVL_ANNOTATIONS;
        }
        if (!first)
            rc |= cx_buf_append(b, ",", 1);
        first = 0;
        rc |= cx_json_escape(b, c->string);
        rc |= cx_buf_append(b, ":", 1);
        if (rc)
            break;
        rc = prune ? emit_pruned(c, sub, b) : cx_json_canonical(c, b);
    }
    if (rc == 0)
        rc = cx_buf_append(b, "}", 1);
    if (kids != stackv)
        free(kids);
    return rc ? -1 : 0;
}

int filter_digest_input(const cJSON *obj, struct cx_buf *out)
{
    if (!cJSON_IsObject(obj))
        return cx_json_canonical(obj, out);
    return emit_pruned(obj, LVL_ROOT, out);
}

int filter_digest(const cJSON *obj, struct cx_buf *scratch, uint64_t *out)
{
    cx_buf_reset(scratch);
    if (filter_digest_input(obj, scratch) != 0)
        return -1;
    *out = cx_fnv64(CX_FNV64_INIT, scratch->data, scratch->len);
    return 0;
}
