#include "kube_cache.h"

#include "cx_json.h"
#include "cx_map.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 512 /* namespace (63) + "/" + name (253), with room */

/* ---- objects ---------------------------------------------------------------- */

int kube_obj_key(const char *ns, const char *name, char *out, size_t n)
{
    int w = ns && *ns ? snprintf(out, n, "%s/%s", ns, name) : snprintf(out, n, "%s", name);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

struct kube_obj *kube_obj_new(cJSON *json)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(json, "metadata");
    const char *name = cx_json_str(md, "name");
    if (!name || !*name)
        return NULL;
    const char *ns = cx_json_str(md, "namespace");
    const char *uid = cx_json_str(md, "uid");
    const char *rv = cx_json_str(md, "resourceVersion");
    char key[KEY_MAX];
    if (kube_obj_key(ns, name, key, sizeof(key)) != 0)
        return NULL;
    ns = ns ? ns : "";
    uid = uid ? uid : "";
    rv = rv ? rv : "";
    /* key, then ns, name, uid and rv: one allocation that outlives the JSON */
    size_t kl = strlen(key) + 1, nl = strlen(ns) + 1, ml = strlen(name) + 1, ul = strlen(uid) + 1,
           rl = strlen(rv) + 1;
    struct kube_obj *o = malloc(sizeof(*o) + kl + nl + ml + ul + rl);
    if (!o)
        return NULL;
    atomic_init(&o->refs, 1);
    o->json = json;
    o->rec = NULL;
    o->rec_ops = NULL;
    char *p = o->key;
    memcpy(p, key, kl);
    p += kl;
    o->ns = memcpy(p, ns, nl);
    p += nl;
    o->name = memcpy(p, name, ml);
    p += ml;
    o->uid = memcpy(p, uid, ul);
    p += ul;
    o->rv = memcpy(p, rv, rl);
    return o;
}

void kube_obj_keep_rec(struct kube_obj *o, void *rec, const struct kube_rec_ops *ops)
{
    cJSON_Delete(o->json);
    o->json = NULL;
    o->rec = rec;
    o->rec_ops = ops;
}

void kube_obj_trim(cJSON *json)
{
    cJSON *md = cJSON_GetObjectItemCaseSensitive(json, "metadata");
    if (!cJSON_IsObject(md))
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(md, "managedFields");
    cJSON *ann = cJSON_GetObjectItemCaseSensitive(md, "annotations");
    if (!cJSON_IsObject(ann))
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(ann,
                                            "kubectl.kubernetes.io/last-applied-configuration");
    if (!ann->child)
        cJSON_DeleteItemFromObjectCaseSensitive(md, "annotations");
}

static size_t json_size(const cJSON *j, size_t cap, size_t acc)
{
    for (; j && acc <= cap; j = j->next) {
        acc += 1; /* separator */
        if (j->string)
            acc += strlen(j->string) + 3;
        if (cJSON_IsString(j) || cJSON_IsRaw(j))
            acc += (j->valuestring ? strlen(j->valuestring) : 0) + 2;
        else if (cJSON_IsObject(j) || cJSON_IsArray(j))
            acc = json_size(j->child, cap, acc + 2);
        else
            acc += 8;
    }
    return acc;
}

size_t kube_json_size(const cJSON *j, size_t cap)
{
    if (!j)
        return 0;
    /* Only |j| itself, not its siblings. */
    size_t acc = 0;
    if (cJSON_IsObject(j) || cJSON_IsArray(j))
        acc = json_size(j->child, cap, 2);
    else if (cJSON_IsString(j) || cJSON_IsRaw(j))
        acc = (j->valuestring ? strlen(j->valuestring) : 0) + 2;
    else
        acc = 8;
    return acc;
}

int kube_obj_metadata_only(cJSON *json)
{
    cJSON *md = cJSON_GetObjectItemCaseSensitive(json, "metadata");
    if (!cJSON_IsObject(md))
        return -1;
    cJSON_DetachItemViaPointer(json, md);
    while (json->child)
        cJSON_Delete(cJSON_DetachItemViaPointer(json, json->child));
    if (!cJSON_AddStringToObject(json, "kind", "PartialObjectMetadata") ||
        !cJSON_AddStringToObject(json, "apiVersion", "meta.k8s.io/v1")) {
        cJSON_Delete(md);
        return -1;
    }
    if (!cJSON_AddItemToObject(json, "metadata", md)) {
        cJSON_Delete(md);
        return -1;
    }
    return 0;
}

int kube_obj_admit(cJSON *json, int metadata_only, int trim, size_t max_object, const char *kind,
                   const char *api_version, size_t *size_out)
{
    if (metadata_only)
        (void)kube_obj_metadata_only(json);
    else if (trim)
        kube_obj_trim(json);
    size_t size = kube_json_size(json, max_object);
    if (size_out)
        *size_out = size;
    if (size > max_object)
        return -1;
    if (!cJSON_IsObject(json))
        return 0; /* nothing to fill in: kube_obj_new refuses it */
    if (!cJSON_GetObjectItemCaseSensitive(json, "kind"))
        cJSON_AddStringToObject(json, "kind", kind ? kind : "");
    if (!cJSON_GetObjectItemCaseSensitive(json, "apiVersion"))
        cJSON_AddStringToObject(json, "apiVersion", api_version ? api_version : "");
    return 0;
}

struct kube_obj *kube_obj_ref(struct kube_obj *o)
{
    if (o)
        atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
    return o;
}

void kube_obj_unref(struct kube_obj *o)
{
    if (!o)
        return;
    if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1) {
        cJSON_Delete(o->json);
        if (o->rec && o->rec_ops && o->rec_ops->free)
            o->rec_ops->free(o->rec);
        free(o);
    }
}

const char *kube_obj_label(const struct kube_obj *o, const char *key)
{
    if (!o->json)
        return o->rec && o->rec_ops && o->rec_ops->label ? o->rec_ops->label(o->rec, key) : NULL;
    return cx_json_path_str(o->json, "metadata", "labels", key, NULL);
}

/* ---- secondary indexes: value -> set of objects ---------------------------------- */

struct bucket {
    char *value;       /* owned */
    struct cx_map set; /* obj key -> obj (borrowed from the primary map) */
};

struct index {
    char *label;           /* label key, or NULL for the namespace index */
    struct cx_map buckets; /* value -> struct bucket */
};

static const char *index_value(const struct index *ix, const struct kube_obj *o)
{
    return ix->label ? kube_obj_label(o, ix->label) : o->ns;
}

static int index_add(struct index *ix, struct kube_obj *o)
{
    const char *v = index_value(ix, o);
    if (!v)
        return 0;
    struct bucket *b = cx_map_gets(&ix->buckets, v);
    if (!b) {
        b = calloc(1, sizeof(*b));
        if (!b || !(b->value = strdup(v)) || cx_map_puts(&ix->buckets, b->value, b, NULL) != 0) {
            if (b)
                free(b->value);
            free(b);
            return -1;
        }
    }
    return cx_map_puts(&b->set, o->key, o, NULL);
}

static void index_del(struct index *ix, struct kube_obj *o)
{
    const char *v = index_value(ix, o);
    if (!v)
        return;
    struct bucket *b = cx_map_gets(&ix->buckets, v);
    if (!b)
        return;
    cx_map_dels(&b->set, o->key);
    if (cx_map_len(&b->set) == 0) {
        cx_map_dels(&ix->buckets, b->value);
        cx_map_free(&b->set);
        free(b->value);
        free(b);
    }
}

static void index_free(struct index *ix)
{
    const struct cx_map_slot *e;
    for (size_t i = 0; cx_map_next(&ix->buckets, &i, &e);) {
        struct bucket *b = e->val;
        cx_map_free(&b->set);
        free(b->value);
        free(b);
    }
    cx_map_free(&ix->buckets);
    free(ix->label);
    ix->label = NULL;
}

/* ---- the cache ------------------------------------------------------------------- */

struct kube_cache {
    struct cx_map objs; /* key -> kube_obj (one reference each) */
    struct index ns;    /* by namespace */
    struct index labels[KUBE_CACHE_MAX_LABEL_INDEXES];
    int nlabels;
};

struct kube_cache *kube_cache_new(void)
{
    return calloc(1, sizeof(struct kube_cache));
}

void kube_cache_free(struct kube_cache *c)
{
    if (!c)
        return;
    const struct cx_map_slot *e;
    for (size_t i = 0; cx_map_next(&c->objs, &i, &e);)
        kube_obj_unref(e->val);
    cx_map_free(&c->objs);
    index_free(&c->ns);
    for (int i = 0; i < c->nlabels; i++)
        index_free(&c->labels[i]);
    free(c);
}

size_t kube_cache_len(const struct kube_cache *c)
{
    return cx_map_len(&c->objs);
}

static void indexes_del(struct kube_cache *c, struct kube_obj *o)
{
    index_del(&c->ns, o);
    for (int i = 0; i < c->nlabels; i++)
        index_del(&c->labels[i], o);
}

static int indexes_add(struct kube_cache *c, struct kube_obj *o)
{
    int rc = index_add(&c->ns, o);
    for (int i = 0; i < c->nlabels; i++)
        rc |= index_add(&c->labels[i], o);
    return rc;
}

int kube_cache_index_label(struct kube_cache *c, const char *key)
{
    for (int i = 0; i < c->nlabels; i++)
        if (strcmp(c->labels[i].label, key) == 0)
            return 0;
    if (c->nlabels >= KUBE_CACHE_MAX_LABEL_INDEXES)
        return -1;
    struct index *ix = &c->labels[c->nlabels];
    memset(ix, 0, sizeof(*ix));
    if (!(ix->label = strdup(key)))
        return -1;
    c->nlabels++;
    int rc = 0;
    const struct cx_map_slot *e;
    for (size_t i = 0; cx_map_next(&c->objs, &i, &e);)
        rc |= index_add(ix, e->val);
    return rc ? -1 : 0;
}

struct kube_obj *kube_cache_get(const struct kube_cache *c, const char *key)
{
    return cx_map_gets(&c->objs, key);
}

struct kube_obj *kube_cache_put(struct kube_cache *c, struct kube_obj *o)
{
    void *old = NULL;
    if (cx_map_puts(&c->objs, o->key, o, &old) != 0)
        return o;
    if (old)
        indexes_del(c, old);
    /* An index that could not grow only loses lookups by that value; the
     * primary map, which every decision uses, is intact. */
    (void)indexes_add(c, o);
    return old;
}

struct kube_obj *kube_cache_remove(struct kube_cache *c, const char *key)
{
    struct kube_obj *o = cx_map_dels(&c->objs, key);
    if (o)
        indexes_del(c, o);
    return o;
}

static size_t foreach_map(const struct cx_map *m, kube_cache_fn fn, void *ud)
{
    size_t n = 0;
    const struct cx_map_slot *e;
    for (size_t i = 0; cx_map_next(m, &i, &e);) {
        n++;
        if (fn(ud, e->val))
            break;
    }
    return n;
}

size_t kube_cache_foreach(const struct kube_cache *c, kube_cache_fn fn, void *user_data)
{
    return foreach_map(&c->objs, fn, user_data);
}

size_t kube_cache_foreach_ns(const struct kube_cache *c, const char *ns, kube_cache_fn fn,
                             void *user_data)
{
    struct bucket *b = cx_map_gets(&c->ns.buckets, ns ? ns : "");
    return b ? foreach_map(&b->set, fn, user_data) : 0;
}

size_t kube_cache_foreach_label(const struct kube_cache *c, const char *key, const char *value,
                                kube_cache_fn fn, void *user_data)
{
    for (int i = 0; i < c->nlabels; i++) {
        if (strcmp(c->labels[i].label, key) != 0)
            continue;
        struct bucket *b = cx_map_gets(&c->labels[i].buckets, value);
        return b ? foreach_map(&b->set, fn, user_data) : 0;
    }
    return 0;
}

static int by_key(const void *a, const void *b)
{
    const struct kube_obj *x = *(struct kube_obj *const *)a;
    const struct kube_obj *y = *(struct kube_obj *const *)b;
    return strcmp(x->key, y->key);
}

struct kube_obj **kube_cache_list(const struct kube_cache *c, size_t *n)
{
    *n = 0;
    if (cx_map_len(&c->objs) == 0)
        return NULL;
    struct kube_obj **list = malloc(cx_map_len(&c->objs) * sizeof(*list));
    if (!list)
        return NULL;
    size_t k = 0;
    const struct cx_map_slot *e;
    for (size_t i = 0; cx_map_next(&c->objs, &i, &e);)
        list[k++] = kube_obj_ref(e->val);
    qsort(list, k, sizeof(*list), by_key);
    *n = k;
    return list;
}

void kube_cache_list_free(struct kube_obj **list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        kube_obj_unref(list[i]);
    free(list);
}
