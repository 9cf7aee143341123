#include "kube_cache.h"

#include "cx_hash.h"
#include "cx_json.h"

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
    size_t kl = strlen(key);
    struct kube_obj *o = malloc(sizeof(*o) + kl + 1);
    if (!o)
        return NULL;
    atomic_init(&o->refs, 1);
    o->json = json;
    o->ns = ns ? ns : "";
    o->name = name;
    o->uid = uid ? uid : "";
    o->rv = rv ? rv : "";
    memcpy(o->key, key, kl + 1);
    return o;
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
        free(o);
    }
}

const char *kube_obj_label(const struct kube_obj *o, const char *key)
{
    return cx_json_path_str(o->json, "metadata", "labels", key, NULL);
}

/* ---- a string-keyed open-addressing hash map ----------------------------------- */

static char tomb_mark;
#define TOMB (&tomb_mark)

struct smap_ent {
    const char *key; /* NULL: empty; TOMB: deleted */
    uint64_t h;
    void *val;
};

struct smap {
    struct smap_ent *e;
    size_t cap;  /* power of two, or 0 */
    size_t len;  /* live entries */
    size_t used; /* live + tombstones */
};

static uint64_t hstr(const char *s)
{
    return cx_fnv64(CX_FNV64_INIT, s, strlen(s));
}

static struct smap_ent *smap_find(const struct smap *m, const char *key, uint64_t h)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        struct smap_ent *e = &m->e[i];
        if (!e->key)
            return NULL;
        if (e->key != TOMB && e->h == h && strcmp(e->key, key) == 0)
            return e;
    }
}

static void *smap_get(const struct smap *m, const char *key)
{
    struct smap_ent *e = smap_find(m, key, hstr(key));
    return e ? e->val : NULL;
}

static int smap_grow(struct smap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 16;
    if (m->len * 4 < m->cap) /* mostly tombstones: rehash at the same size */
        ncap = m->cap;
    struct smap_ent *ne = calloc(ncap, sizeof(*ne));
    if (!ne)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        struct smap_ent *e = &m->e[i];
        if (!e->key || e->key == TOMB)
            continue;
        size_t j = e->h & (ncap - 1);
        while (ne[j].key)
            j = (j + 1) & (ncap - 1);
        ne[j] = *e;
    }
    free(m->e);
    m->e = ne;
    m->cap = ncap;
    m->used = m->len;
    return 0;
}

/* Sets key -> val; |key| must outlive the entry. Returns the previous value
 * (NULL if none) via *old. Returns 0 or -1 (memory). */
static int smap_put(struct smap *m, const char *key, void *val, void **old)
{
    uint64_t h = hstr(key);
    struct smap_ent *e = smap_find(m, key, h);
    if (e) {
        if (old)
            *old = e->val;
        e->key = key;
        e->val = val;
        return 0;
    }
    if (old)
        *old = NULL;
    if ((m->used + 1) * 4 > m->cap * 3 && smap_grow(m) != 0)
        return -1;
    size_t mask = m->cap - 1;
    size_t i = h & mask;
    while (m->e[i].key && m->e[i].key != TOMB)
        i = (i + 1) & mask;
    if (!m->e[i].key)
        m->used++;
    m->e[i].key = key;
    m->e[i].h = h;
    m->e[i].val = val;
    m->len++;
    return 0;
}

static void *smap_del(struct smap *m, const char *key)
{
    struct smap_ent *e = smap_find(m, key, hstr(key));
    if (!e)
        return NULL;
    void *v = e->val;
    e->key = TOMB;
    e->val = NULL;
    m->len--;
    return v;
}

static void smap_free(struct smap *m)
{
    free(m->e);
    memset(m, 0, sizeof(*m));
}

/* ---- secondary indexes: value -> set of objects ---------------------------------- */

struct bucket {
    char *value;     /* owned */
    struct smap set; /* obj key -> obj (borrowed from the primary map) */
};

struct index {
    char *label;         /* label key, or NULL for the namespace index */
    struct smap buckets; /* value -> struct bucket */
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
    struct bucket *b = smap_get(&ix->buckets, v);
    if (!b) {
        b = calloc(1, sizeof(*b));
        if (!b || !(b->value = strdup(v)) || smap_put(&ix->buckets, b->value, b, NULL) != 0) {
            if (b)
                free(b->value);
            free(b);
            return -1;
        }
    }
    return smap_put(&b->set, o->key, o, NULL);
}

static void index_del(struct index *ix, struct kube_obj *o)
{
    const char *v = index_value(ix, o);
    if (!v)
        return;
    struct bucket *b = smap_get(&ix->buckets, v);
    if (!b)
        return;
    smap_del(&b->set, o->key);
    if (b->set.len == 0) {
        smap_del(&ix->buckets, b->value);
        smap_free(&b->set);
        free(b->value);
        free(b);
    }
}

static void index_free(struct index *ix)
{
    for (size_t i = 0; i < ix->buckets.cap; i++) {
        struct smap_ent *e = &ix->buckets.e[i];
        if (!e->key || e->key == TOMB)
            continue;
        struct bucket *b = e->val;
        smap_free(&b->set);
        free(b->value);
        free(b);
    }
    smap_free(&ix->buckets);
    free(ix->label);
    ix->label = NULL;
}

/* ---- the cache ------------------------------------------------------------------- */

struct kube_cache {
    struct smap objs; /* key -> kube_obj (one reference each) */
    struct index ns;  /* by namespace */
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
    for (size_t i = 0; i < c->objs.cap; i++) {
        struct smap_ent *e = &c->objs.e[i];
        if (e->key && e->key != TOMB)
            kube_obj_unref(e->val);
    }
    smap_free(&c->objs);
    index_free(&c->ns);
    for (int i = 0; i < c->nlabels; i++)
        index_free(&c->labels[i]);
    free(c);
}

size_t kube_cache_len(const struct kube_cache *c)
{
    return c->objs.len;
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
    for (size_t i = 0; i < c->objs.cap; i++) {
        struct smap_ent *e = &c->objs.e[i];
        if (e->key && e->key != TOMB)
            rc |= index_add(ix, e->val);
    }
    return rc ? -1 : 0;
}

struct kube_obj *kube_cache_get(const struct kube_cache *c, const char *key)
{
    return smap_get(&c->objs, key);
}

struct kube_obj *kube_cache_put(struct kube_cache *c, struct kube_obj *o)
{
    void *old = NULL;
    if (smap_put(&c->objs, o->key, o, &old) != 0)
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
    struct kube_obj *o = smap_del(&c->objs, key);
    if (o)
        indexes_del(c, o);
    return o;
}

static size_t foreach_map(const struct smap *m, kube_cache_fn fn, void *ud)
{
    size_t n = 0;
    for (size_t i = 0; i < m->cap; i++) {
        struct smap_ent *e = &m->e[i];
        if (!e->key || e->key == TOMB)
            continue;
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
    struct bucket *b = smap_get(&c->ns.buckets, ns ? ns : "");
    return b ? foreach_map(&b->set, fn, user_data) : 0;
}

size_t kube_cache_foreach_label(const struct kube_cache *c, const char *key, const char *value,
                                kube_cache_fn fn, void *user_data)
{
    for (int i = 0; i < c->nlabels; i++) {
        if (strcmp(c->labels[i].label, key) != 0)
            continue;
        struct bucket *b = smap_get(&c->labels[i].buckets, value);
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
    if (c->objs.len == 0)
        return NULL;
    struct kube_obj **list = malloc(c->objs.len * sizeof(*list));
    if (!list)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < c->objs.cap; i++) {
        struct smap_ent *e = &c->objs.e[i];
        if (e->key && e->key != TOMB)
            list[k++] = kube_obj_ref(e->val);
    }
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
