#include "store.h"

#include "cx_map.h"
#include "store_obj.h"

#include <stdlib.h>
#include <string.h>

/* One object's change since the last view (the latest wins). */
struct store_change {
    enum xlate_kind kind;
    struct kube_obj *obj; /* a reference; NULL: deleted */
    uint64_t digest;
    char key[]; /* "<kind digit>/ns/name" */
};

struct store {
    struct cx_map kinds[XLATE_KIND_COUNT]; /* key -> struct store_entry * */
    uint64_t generation;
    size_t total;
    struct cx_map changes; /* "<kind>/ns/name" -> struct store_change * */
    int changes_lost;      /* a change could not be recorded */
};

/* Records that |kind| |key| now is |obj| (NULL: deleted); takes a new
 * reference to |obj|. */
static void note_change(struct store *s, enum xlate_kind kind, const char *key,
                        struct kube_obj *obj, uint64_t digest)
{
    size_t kl = strlen(key);
    struct store_change *c = malloc(sizeof(*c) + kl + 3);
    if (!c) {
        s->changes_lost = 1;
        return;
    }
    c->kind = kind;
    c->obj = kube_obj_ref(obj);
    c->digest = digest;
    c->key[0] = (char)('0' + kind);
    c->key[1] = '/';
    memcpy(c->key + 2, key, kl + 1);
    struct store_change *old = NULL;
    if (cx_map_puts(&s->changes, c->key, c, (void **)&old) != 0) {
        kube_obj_unref(c->obj);
        free(c);
        s->changes_lost = 1;
        return;
    }
    if (old) {
        kube_obj_unref(old->obj);
        free(old);
    }
}

static void free_changes(struct cx_map *m)
{
    const struct cx_map_slot *sl;
    for (size_t i = 0; cx_map_next(m, &i, &sl);) {
        struct store_change *c = sl->val;
        kube_obj_unref(c->obj);
        free(c);
    }
    cx_map_free(m);
}

static int kind_ok(enum xlate_kind k)
{
    return k >= 0 && k < XLATE_KIND_COUNT;
}

struct store *store_new(void)
{
    return calloc(1, sizeof(struct store));
}

void store_free(struct store *s)
{
    if (!s)
        return;
    for (int k = 0; k < XLATE_KIND_COUNT; k++) {
        const struct cx_map_slot *sl;
        for (size_t i = 0; cx_map_next(&s->kinds[k], &i, &sl);) {
            struct store_entry *e = sl->val;
            kube_obj_unref(e->obj);
            free(e);
        }
        cx_map_free(&s->kinds[k]);
    }
    free_changes(&s->changes);
    free(s);
}

const struct store_entry *store_get(const struct store *s, enum xlate_kind kind, const char *key)
{
    if (!kind_ok(kind))
        return NULL;
    return cx_map_gets(&s->kinds[kind], key);
}

int store_put(struct store *s, enum xlate_kind kind, struct kube_obj *obj, uint64_t digest)
{
    if (!kind_ok(kind) || !obj)
        return -1;
    struct cx_map *m = &s->kinds[kind];
    struct store_entry *e = cx_map_gets(m, obj->key);
    if (e) {
        /* Replace in place: re-point the slot's key at the new object
         * before the old one (which owns the old key string) goes. An
         * existing key allocates nothing: this cannot fail. */
        int rc = cx_map_puts(m, obj->key, e, NULL);
        (void)rc;
        kube_obj_unref(e->obj);
        e->obj = obj;
        e->digest = digest;
        s->generation++;
        note_change(s, kind, obj->key, obj, digest);
        return 0;
    }
    e = malloc(sizeof(*e));
    if (!e)
        return -1;
    e->obj = obj;
    e->digest = digest;
    if (cx_map_puts(m, obj->key, e, NULL) != 0) {
        free(e);
        return -1;
    }
    s->total++;
    s->generation++;
    note_change(s, kind, obj->key, obj, digest);
    return 0;
}

int store_remove(struct store *s, enum xlate_kind kind, const char *key)
{
    if (!kind_ok(kind))
        return 0;
    struct store_entry *e = cx_map_dels(&s->kinds[kind], key);
    if (!e)
        return 0;
    note_change(s, kind, key, NULL, 0);
    kube_obj_unref(e->obj);
    free(e);
    s->total--;
    s->generation++;
    return 1;
}

size_t store_len(const struct store *s, enum xlate_kind kind)
{
    return kind_ok(kind) ? cx_map_len(&s->kinds[kind]) : 0;
}

size_t store_total(const struct store *s)
{
    return s->total;
}

uint64_t store_generation(const struct store *s)
{
    return s->generation;
}

void store_foreach(const struct store *s, enum xlate_kind kind,
                   int (*fn)(void *user, const struct store_entry *e), void *user)
{
    if (!kind_ok(kind))
        return;
    const struct cx_map_slot *sl;
    for (size_t i = 0; cx_map_next(&s->kinds[kind], &i, &sl);)
        if (fn(user, sl->val))
            return;
}

/* ---- views ---------------------------------------------------------------- */

static void view_add(struct store_view *v, enum xlate_kind kind, struct store_entry *e)
{
    v->objs[v->n] = kube_obj_ref(e->obj);
    const struct store_obj *so = store_obj_of(e->obj);
    v->objects[v->n] = (struct xlate_object){.kind = kind,
                                             .obj = e->obj->json,
                                             .rec = so ? so->rec : NULL,
                                             .digest = e->digest ? e->digest : 1};
    v->n++;
}

/* Moves change |c| into |v|; returns 1 if it lost the deleted object's
 * name (memory), else 0. */
static int take_change(struct store_view *v, struct store_change *c)
{
    int failed = 0;
    size_t i = v->nchanges;
    struct xlate_change *xc = &v->changes[i];
    *xc = (struct xlate_change){.kind = c->kind, .digest = c->digest ? c->digest : 1};
    v->change_objs[i] = c->obj; /* the reference moves to the view */
    v->change_keys[i] = NULL;
    if (c->obj) {
        const struct store_obj *so = store_obj_of(c->obj);
        xc->obj = c->obj->json;
        xc->rec = so ? so->rec : NULL;
    } else {
        /* "ns/name" -> "ns\0name" */
        char *k = strdup(c->key + 2);
        char *slash = k ? strchr(k, '/') : NULL;
        if (!slash) {
            free(k);
            failed = 1;
        } else {
            *slash = '\0';
            v->change_keys[i] = k;
            xc->namespace = k;
            xc->name = slash + 1;
        }
    }
    v->nchanges++;
    free(c);
    return failed;
}

struct store_view *store_view_new(struct store *s)
{
    struct store_view *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    size_t n = s->total ? s->total : 1;
    v->objects = malloc(n * sizeof(*v->objects));
    v->objs = malloc(n * sizeof(*v->objs));
    if (!v->objects || !v->objs) {
        free(v->objects);
        free(v->objs);
        free(v);
        return NULL;
    }
    atomic_init(&v->refs, 1);
    v->generation = s->generation;
    const struct cx_map_slot *sl;
    for (int k = 0; k < XLATE_KIND_COUNT; k++)
        for (size_t i = 0; cx_map_next(&s->kinds[k], &i, &sl);)
            view_add(v, (enum xlate_kind)k, sl->val);
    /* The changes move into the view; the store starts a new log. */
    size_t nc = cx_map_len(&s->changes);
    v->changes = calloc(nc ? nc : 1, sizeof(*v->changes));
    v->change_objs = calloc(nc ? nc : 1, sizeof(*v->change_objs));
    v->change_keys = calloc(nc ? nc : 1, sizeof(*v->change_keys));
    if (!v->changes || !v->change_objs || !v->change_keys) {
        free_changes(&s->changes);
        v->changes_complete = 0;
    } else {
        int failed = 0;
        for (size_t i = 0; cx_map_next(&s->changes, &i, &sl);)
            failed |= take_change(v, sl->val);
        v->changes_complete = !s->changes_lost && !failed;
        cx_map_free(&s->changes);
    }
    s->changes_lost = 0;
    return v;
}

struct store_view *store_view_ref(struct store_view *v)
{
    if (v)
        atomic_fetch_add_explicit(&v->refs, 1, memory_order_relaxed);
    return v;
}

void store_view_unref(struct store_view *v)
{
    if (!v || atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < v->n; i++)
        kube_obj_unref(v->objs[i]);
    for (size_t i = 0; i < v->nchanges; i++) {
        kube_obj_unref(v->change_objs[i]);
        free(v->change_keys[i]);
    }
    free(v->change_objs);
    free(v->change_keys);
    free(v->changes);
    free(v->objs);
    free(v->objects);
    free(v);
}
