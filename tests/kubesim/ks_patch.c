/*
 * ks_patch: merge patch, JSON patch and strategic merge patch.
 */
#include "ks_patch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATCH_MAX_OPS 10000 /* kube-apiserver's maxJSONPatchOperations */

/* ---- merge patch --------------------------------------------------------- */

cJSON *ks_merge_patch(cJSON *doc, const cJSON *patch)
{
    if (!cJSON_IsObject(patch)) {
        cJSON_Delete(doc);
        return cJSON_Duplicate(patch, 1);
    }
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        doc = cJSON_CreateObject();
        if (!doc)
            return NULL;
    }
    for (const cJSON *p = patch->child; p; p = p->next) {
        if (cJSON_IsNull(p)) {
            cJSON_DeleteItemFromObjectCaseSensitive(doc, p->string);
            continue;
        }
        cJSON *cur = cJSON_DetachItemFromObjectCaseSensitive(doc, p->string);
        cJSON *merged = ks_merge_patch(cur, p);
        if (!merged)
            return doc;
        cJSON_AddItemToObject(doc, p->string, merged);
    }
    return doc;
}

/* ---- JSON pointer + JSON patch ------------------------------------------- */

static void toks_free(char **t, int n)
{
    for (int i = 0; i < n; i++)
        free(t[i]);
    free(t);
}

/* Splits "/a/b~1c" into unescaped tokens. Returns count or -1. */
static int ptr_split(const char *path, char ***out)
{
    *out = NULL;
    if (*path == '\0')
        return 0;
    if (*path != '/')
        return -1;
    int n = 0;
    char **toks = NULL;
    const char *p = path + 1;
    for (;;) {
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char **nt = realloc(toks, (size_t)(n + 1) * sizeof(*nt));
        if (!nt) {
            toks_free(toks, n);
            return -1;
        }
        toks = nt;
        char *t = malloc(len + 1), *q = t;
        if (!t) {
            toks_free(toks, n);
            return -1;
        }
        for (size_t i = 0; i < len; i++) {
            if (p[i] == '~' && i + 1 < len && p[i + 1] == '0') {
                *q++ = '~';
                i++;
            } else if (p[i] == '~' && i + 1 < len && p[i + 1] == '1') {
                *q++ = '/';
                i++;
            } else {
                *q++ = p[i];
            }
        }
        *q = 0;
        toks[n++] = t;
        if (!e)
            break;
        p = e + 1;
    }
    *out = toks;
    return n;
}

static bool parse_index(const char *t, int max, int *out)
{
    if (!*t || (t[0] == '0' && t[1]))
        return false;
    for (const char *c = t; *c; c++)
        if (*c < '0' || *c > '9')
            return false;
    errno = 0;
    long v = strtol(t, NULL, 10);
    if (errno || v > max)
        return false;
    *out = (int)v;
    return true;
}

/* Resolves all but the last token: the container of the target. */
static cJSON *ptr_parent(cJSON *doc, char **toks, int n)
{
    cJSON *cur = doc;
    for (int i = 0; i < n - 1; i++) {
        if (cJSON_IsObject(cur)) {
            cur = cJSON_GetObjectItemCaseSensitive(cur, toks[i]);
        } else if (cJSON_IsArray(cur)) {
            int idx;
            if (!parse_index(toks[i], cJSON_GetArraySize(cur) - 1, &idx))
                return NULL;
            cur = cJSON_GetArrayItem(cur, idx);
        } else {
            return NULL;
        }
        if (!cur)
            return NULL;
    }
    return cur;
}

static cJSON *ptr_get(cJSON *doc, const char *path)
{
    char **t;
    int n = ptr_split(path, &t);
    if (n < 0)
        return NULL;
    if (n == 0)
        return doc;
    cJSON *par = ptr_parent(doc, t, n), *r = NULL;
    if (par && cJSON_IsObject(par))
        r = cJSON_GetObjectItemCaseSensitive(par, t[n - 1]);
    else if (par && cJSON_IsArray(par)) {
        int idx;
        if (parse_index(t[n - 1], cJSON_GetArraySize(par) - 1, &idx))
            r = cJSON_GetArrayItem(par, idx);
    }
    toks_free(t, n);
    return r;
}

/* Detaches the value at |path| (NULL if missing). */
static cJSON *ptr_detach(cJSON *doc, const char *path)
{
    char **t;
    int n = ptr_split(path, &t);
    if (n <= 0) {
        if (n == 0)
            toks_free(t, 0);
        return NULL;
    }
    cJSON *par = ptr_parent(doc, t, n), *r = NULL;
    if (par && cJSON_IsObject(par))
        r = cJSON_DetachItemFromObjectCaseSensitive(par, t[n - 1]);
    else if (par && cJSON_IsArray(par)) {
        int idx;
        if (parse_index(t[n - 1], cJSON_GetArraySize(par) - 1, &idx))
            r = cJSON_DetachItemFromArray(par, idx);
    }
    toks_free(t, n);
    return r;
}

/* Adds |val| (ownership taken) at |path|. Returns 0 or -1. */
static int ptr_add(cJSON **doc, const char *path, cJSON *val, bool replace_only)
{
    char **t;
    int n = ptr_split(path, &t);
    if (n < 0) {
        cJSON_Delete(val);
        return -1;
    }
    if (n == 0) {
        cJSON_Delete(*doc);
        *doc = val;
        return 0;
    }
    int rc = -1;
    cJSON *par = ptr_parent(*doc, t, n);
    const char *last = t[n - 1];
    if (par && cJSON_IsObject(par)) {
        cJSON *old = cJSON_GetObjectItemCaseSensitive(par, last);
        if (old) {
            cJSON_ReplaceItemInObjectCaseSensitive(par, last, val);
            rc = 0;
        } else if (!replace_only) {
            cJSON_AddItemToObject(par, last, val);
            rc = 0;
        }
    } else if (par && cJSON_IsArray(par)) {
        int size = cJSON_GetArraySize(par), idx;
        if (replace_only) {
            if (parse_index(last, size - 1, &idx)) {
                cJSON_ReplaceItemInArray(par, idx, val);
                rc = 0;
            }
        } else if (strcmp(last, "-") == 0) {
            cJSON_AddItemToArray(par, val);
            rc = 0;
        } else if (parse_index(last, size, &idx)) {
            if (idx == size)
                cJSON_AddItemToArray(par, val);
            else
                cJSON_InsertItemInArray(par, idx, val);
            rc = 0;
        }
    }
    if (rc != 0)
        cJSON_Delete(val);
    toks_free(t, n);
    return rc;
}

int ks_json_patch(cJSON **doc, const cJSON *patch, char *err, size_t errlen)
{
    if (!cJSON_IsArray(patch)) {
        snprintf(err, errlen,
                 "json: cannot unmarshal object into Go value of type jsonpatch.Patch");
        return -1;
    }
    if (cJSON_GetArraySize(patch) > PATCH_MAX_OPS) {
        snprintf(err, errlen, "The allowed maximum operations in a JSON patch is %d, got %d",
                 PATCH_MAX_OPS, cJSON_GetArraySize(patch));
        return -1;
    }
    cJSON *work = cJSON_Duplicate(*doc, 1);
    if (!work) {
        snprintf(err, errlen, "out of memory");
        return -2;
    }
    for (const cJSON *op = patch->child; op; op = op->next) {
        const char *kind = cJSON_IsObject(op)
                               ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(op, "op"))
                               : NULL;
        const char *path = cJSON_IsObject(op)
                               ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(op, "path"))
                               : NULL;
        const cJSON *value =
            cJSON_IsObject(op) ? cJSON_GetObjectItemCaseSensitive(op, "value") : NULL;
        const char *from = cJSON_IsObject(op)
                               ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(op, "from"))
                               : NULL;
        if (!kind) {
            snprintf(err, errlen, "Unexpected kind: unknown");
            goto bad;
        }
        if (!path) {
            snprintf(err, errlen, "%s operation missing path", kind);
            goto bad;
        }
        if (strcmp(kind, "add") == 0 || strcmp(kind, "replace") == 0) {
            if (!value) {
                snprintf(err, errlen, "%s operation, missing value field", kind);
                goto bad;
            }
            bool rep = kind[0] == 'r';
            if (ptr_add(&work, path, cJSON_Duplicate(value, 1), rep) != 0) {
                snprintf(
                    err, errlen,
                    rep ? "replace operation does not apply: doc is missing key: %s: missing value"
                        : "add operation does not apply: doc is missing path: \"%s\": missing "
                          "value",
                    path);
                goto fail;
            }
        } else if (strcmp(kind, "remove") == 0) {
            cJSON *v = ptr_detach(work, path);
            if (!v) {
                snprintf(
                    err, errlen,
                    "remove operation does not apply: doc is missing path: \"%s\": missing value",
                    path);
                goto fail;
            }
            cJSON_Delete(v);
        } else if (strcmp(kind, "move") == 0 || strcmp(kind, "copy") == 0) {
            if (!from) {
                snprintf(err, errlen, "%s operation missing from", kind);
                goto bad;
            }
            cJSON *v;
            if (kind[0] == 'm') {
                v = ptr_detach(work, from);
            } else {
                cJSON *src = ptr_get(work, from);
                v = src ? cJSON_Duplicate(src, 1) : NULL;
            }
            if (!v) {
                snprintf(err, errlen,
                         "%s operation does not apply: doc is missing from path: %s: missing value",
                         kind, from);
                goto fail;
            }
            if (ptr_add(&work, path, v, false) != 0) {
                snprintf(err, errlen,
                         "%s operation does not apply: doc is missing destination path: %s: "
                         "missing value",
                         kind, path);
                goto fail;
            }
        } else if (strcmp(kind, "test") == 0) {
            cJSON *cur = ptr_get(work, path);
            bool eq =
                cur ? (value && cJSON_Compare(cur, value, 1)) : (!value || cJSON_IsNull(value));
            if (!eq) {
                snprintf(err, errlen, "testing value %s failed: test failed", path);
                goto fail;
            }
        } else {
            snprintf(err, errlen, "Unexpected kind: %s", kind);
            goto fail;
        }
    }
    cJSON_Delete(*doc);
    *doc = work;
    return 0;
bad:
    cJSON_Delete(work);
    return -1;
fail:
    cJSON_Delete(work);
    return -2;
}

/* ---- strategic merge patch ------------------------------------------------ */

struct smp_list {
    const char *kind; /* NULL: any kind */
    const char *path; /* dotted path from the object root */
    const char *key;  /* merge key; NULL: primitive list merged as a set */
};

/* patchStrategy=merge lists of the built-in kinds kubesim serves. Every other
 * list is atomic (replaced), as in their Go types. */
static const struct smp_list smp_lists[] = {
    {NULL, "metadata.finalizers", NULL},
    {NULL, "metadata.ownerReferences", "uid"},
    {"Service", "spec.ports", "port"},
    {"ServiceAccount", "secrets", "name"},
    {"ServiceAccount", "imagePullSecrets", "name"},
    {"Namespace", "spec.finalizers", NULL},
};

static const struct smp_list *smp_find(const char *kind, const char *path)
{
    for (size_t i = 0; i < sizeof(smp_lists) / sizeof(smp_lists[0]); i++)
        if ((!smp_lists[i].kind || strcmp(smp_lists[i].kind, kind) == 0) &&
            strcmp(smp_lists[i].path, path) == 0)
            return &smp_lists[i];
    return NULL;
}

static int smp_map(cJSON **doc, const cJSON *patch, const char *kind, const char *path, char *err,
                   size_t errlen);

static cJSON *find_by_key(cJSON *arr, const char *key, const cJSON *val)
{
    cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        cJSON *k = cJSON_GetObjectItemCaseSensitive(it, key);
        if (k && cJSON_Compare(k, val, 1))
            return it;
    }
    return NULL;
}

static int smp_list_merge(cJSON **doc, const cJSON *patch, const struct smp_list *L,
                          const char *kind, const char *path, char *err, size_t errlen)
{
    if (!cJSON_IsArray(*doc)) {
        cJSON_Delete(*doc);
        *doc = cJSON_CreateArray();
        if (!*doc)
            return -1;
    }
    cJSON *it;
    /* A {"$patch":"replace"} element replaces the whole list. */
    cJSON_ArrayForEach(it, patch)
    {
        const char *d = cJSON_IsObject(it)
                            ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "$patch"))
                            : NULL;
        if (d && strcmp(d, "replace") == 0) {
            cJSON *n = cJSON_CreateArray();
            const cJSON *j;
            cJSON_ArrayForEach(j, patch)
            {
                if (j == it)
                    continue;
                cJSON_AddItemToArray(n, cJSON_Duplicate(j, 1));
            }
            cJSON_Delete(*doc);
            *doc = n;
            return 0;
        }
    }
    cJSON_ArrayForEach(it, patch)
    {
        if (!L->key) {
            bool present = false;
            cJSON *e;
            cJSON_ArrayForEach(e, *doc) if (cJSON_Compare(e, it, 1)) present = true;
            if (!present)
                cJSON_AddItemToArray(*doc, cJSON_Duplicate(it, 1));
            continue;
        }
        if (!cJSON_IsObject(it)) {
            snprintf(err, errlen, "unable to find api field in struct for the list element at %s",
                     path);
            return -1;
        }
        const cJSON *kv = cJSON_GetObjectItemCaseSensitive(it, L->key);
        if (!kv) {
            snprintf(err, errlen, "map: %s does not contain declared merge key: %s", path, L->key);
            return -1;
        }
        cJSON *cur = find_by_key(*doc, L->key, kv);
        const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "$patch"));
        if (d && strcmp(d, "delete") == 0) {
            if (cur) {
                cJSON_DetachItemViaPointer(*doc, cur);
                cJSON_Delete(cur);
            }
            continue;
        }
        if (cur) {
            cJSON *copy = cJSON_Duplicate(cur, 1);
            if (smp_map(&copy, it, kind, path, err, errlen) != 0) {
                cJSON_Delete(copy);
                return -1;
            }
            cJSON_ReplaceItemViaPointer(*doc, cur, copy);
        } else {
            cJSON *n = NULL;
            if (smp_map(&n, it, kind, path, err, errlen) != 0) {
                cJSON_Delete(n);
                return -1;
            }
            cJSON_AddItemToArray(*doc, n);
        }
    }
    return 0;
}

static int smp_map(cJSON **doc, const cJSON *patch, const char *kind, const char *path, char *err,
                   size_t errlen)
{
    if (!cJSON_IsObject(*doc)) {
        cJSON_Delete(*doc);
        *doc = cJSON_CreateObject();
        if (!*doc)
            return -1;
    }
    const char *directive = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(patch, "$patch"));
    if (directive && strcmp(directive, "replace") == 0) {
        cJSON *n = cJSON_Duplicate(patch, 1);
        cJSON_DeleteItemFromObjectCaseSensitive(n, "$patch");
        cJSON_Delete(*doc);
        *doc = n;
        return 0;
    }
    if (directive && strcmp(directive, "merge") != 0 && strcmp(directive, "delete") != 0) {
        snprintf(err, errlen, "Unknown patch type: %s in map: %s", directive, path);
        return -1;
    }
    const cJSON *retain = cJSON_GetObjectItemCaseSensitive(patch, "$retainKeys");
    for (const cJSON *p = patch->child; p; p = p->next) {
        const char *k = p->string;
        if (strcmp(k, "$patch") == 0 || strcmp(k, "$retainKeys") == 0 ||
            strncmp(k, "$setElementOrder/", 17) == 0)
            continue;
        if (strncmp(k, "$deleteFromPrimitiveList/", 25) == 0) {
            cJSON *lst = cJSON_GetObjectItemCaseSensitive(*doc, k + 25);
            const cJSON *del;
            if (cJSON_IsArray(lst))
                cJSON_ArrayForEach(del, p)
                {
                    for (int i = cJSON_GetArraySize(lst) - 1; i >= 0; i--)
                        if (cJSON_Compare(cJSON_GetArrayItem(lst, i), del, 1))
                            cJSON_DeleteItemFromArray(lst, i);
                }
            continue;
        }
        char sub[512];
        snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", k);
        if (cJSON_IsNull(p)) {
            cJSON_DeleteItemFromObjectCaseSensitive(*doc, k);
            continue;
        }
        if (cJSON_IsObject(p)) {
            const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "$patch"));
            if (d && strcmp(d, "delete") == 0) {
                cJSON_DeleteItemFromObjectCaseSensitive(*doc, k);
                continue;
            }
            cJSON *cur = cJSON_DetachItemFromObjectCaseSensitive(*doc, k);
            int rc = smp_map(&cur, p, kind, sub, err, errlen);
            if (cur)
                cJSON_AddItemToObject(*doc, k, cur);
            if (rc != 0)
                return rc;
            continue;
        }
        const struct smp_list *L = cJSON_IsArray(p) ? smp_find(kind, sub) : NULL;
        if (L) {
            cJSON *cur = cJSON_DetachItemFromObjectCaseSensitive(*doc, k);
            int rc = smp_list_merge(&cur, p, L, kind, sub, err, errlen);
            if (cur)
                cJSON_AddItemToObject(*doc, k, cur);
            if (rc != 0)
                return rc;
            continue;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(*doc, k);
        cJSON_AddItemToObject(*doc, k, cJSON_Duplicate(p, 1));
    }
    if (cJSON_IsArray(retain)) {
        cJSON *c = (*doc)->child;
        while (c) {
            cJSON *next = c->next;
            bool keep = false;
            const cJSON *r;
            cJSON_ArrayForEach(r, retain) if (cJSON_IsString(r) &&
                                              strcmp(r->valuestring, c->string) == 0) keep = true;
            if (!keep) {
                cJSON_DetachItemViaPointer(*doc, c);
                cJSON_Delete(c);
            }
            c = next;
        }
    }
    return 0;
}

int ks_strategic_patch(cJSON **doc, const cJSON *patch, const char *kind, char *err, size_t errlen)
{
    if (!cJSON_IsObject(patch)) {
        snprintf(err, errlen,
                 "json: cannot unmarshal %s into Go value of type map[string]interface {}",
                 cJSON_IsArray(patch) ? "array" : "value");
        return -1;
    }
    return smp_map(doc, patch, kind, "", err, errlen);
}
