/*
 * Entries and their lists (see xlate_internal.h): lookup by key, the
 * sorted arrays of entries (selections, index lists, per-kind lists),
 * report marks, selector matching, the change digest of an input
 * object, and the records entries hold (xlate_record.h): an object decoded
 * once into its typed form.
 */
#include "xlate_internal.h"

#include "cx_hash.h"
#include "cx_json.h"
#include "filter_selector.h"

#include <stdlib.h>
#include <string.h>

/* ---- small helpers -------------------------------------------------------- */

int xlate_list_push(struct xl_entry_list *l, struct xl_entry *e)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        struct xl_entry **n = realloc(l->items, cap * sizeof(*n));
        if (!n)
            return -1;
        l->items = n;
        l->cap = cap;
    }
    l->items[l->n++] = e;
    return 0;
}

/* Empties a pass's list; one that a big pass (a first one) grew goes back
 * to nothing: the passes after it are small. */
void xlate_list_clear(struct xl_entry_list *l)
{
    l->n = 0;
    if (l->cap > 1024) {
        free(l->items);
        l->items = NULL;
        l->cap = 0;
    }
}

void xlate_list_remove(struct xl_entry_list *l, struct xl_entry *e)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->items[i] == e) {
            memmove(&l->items[i], &l->items[i + 1], (l->n - i - 1) * sizeof(*l->items));
            l->n--;
            return;
        }
}

static const char *label_get(void *user, const char *key)
{
    return xlate_meta_label(&((const struct xl_entry *)user)->obj->meta, key);
}

int xlate_selector_matches(const struct filter_selector *sel, const struct xl_entry *e)
{
    if (!sel)
        return 1;
    return filter_selector_matches_fn(sel, label_get, (void *)e);
}

struct xl_entry *xlate_find_key(struct xlate_ctx *ctx, enum xlate_kind kind, const char *key)
{
    return cx_map_gets(&ctx->by_key[kind], key);
}

struct xl_entry *xlate_find(struct xlate_ctx *ctx, enum xlate_kind kind, const char *ns,
                            const char *name)
{
    char key[600];
    size_t nl = strlen(ns), ml = strlen(name);
    if (nl + ml + 1 >= sizeof(key))
        return NULL;
    memcpy(key, ns, nl);
    key[nl] = '/';
    memcpy(key + nl + 1, name, ml);
    return cx_map_get(&ctx->by_key[kind], key, nl + 1 + ml);
}

int xlate_rep_dirty(struct xlate_ctx *ctx, struct xl_entry *e)
{
    if (e->rep_dirty == ctx->pass)
        return 0;
    e->rep_dirty = ctx->pass;
    return xlate_kind_reportable(e->kind) ? xlate_list_push(&ctx->rep_list, e) : 0;
}

/* A VirtualService started or stopped being selected by a Gateway: its
 * report, and those of the RouteTables it has problems about, change. */
int xlate_usage_changed(struct xlate_ctx *ctx, struct xl_entry *v)
{
    if (xlate_rep_dirty(ctx, v) != 0)
        return -1;
    for (int m = 0; m < XL_MODES; m++)
        for (size_t i = 0; i < v->res[m].nmsgs; i++)
            if (v->res[m].msgs[i].target != v &&
                xlate_rep_dirty(ctx, v->res[m].msgs[i].target) != 0)
                return -1;
    return 0;
}

int xlate_entry_cmp(const struct xl_entry *x, const struct xl_entry *y)
{
    /* (namespace, name) order; namespaces hold no byte below '-' */
    return strcmp(x->skey, y->skey);
}

/* qsort, unless the array is in order already: the selection's claims
 * and its Upstreams' resources mostly come in name order, and checking
 * costs one comparison per item. */
void xlate_sort_unless_sorted(void *base, size_t n, size_t size,
                              int (*cmp)(const void *, const void *))
{
    const char *p = base;
    for (size_t i = 1; i < n; i++)
        if (cmp(p + (i - 1) * size, p + i * size) > 0) {
            qsort(base, n, size, cmp);
            return;
        }
}

/* Position of |e| in a sorted array: its index if present (*found = 1),
 * else where it would go. */
static size_t bsearch_entry(struct xl_entry *const *items, size_t n, const struct xl_entry *e,
                            int *found)
{
    size_t lo = 0, hi = n;
    *found = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = items[mid] == e ? 0 : xlate_entry_cmp(items[mid], e);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Sorted insert (no duplicates). Returns 0 or -1. */
int xlate_sorted_insert(struct xl_entry ***items, size_t *n, size_t *cap, struct xl_entry *e)
{
    int found;
    size_t at = bsearch_entry(*items, *n, e, &found);
    if (found)
        return 0;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 1; /* index lists mostly hold one */
        struct xl_entry **ni = realloc(*items, nc * sizeof(*ni));
        if (!ni)
            return -1;
        *items = ni;
        *cap = nc;
    }
    memmove(&(*items)[at + 1], &(*items)[at], (*n - at) * sizeof(**items));
    (*items)[at] = e;
    (*n)++;
    return 0;
}

void xlate_sorted_remove(struct xl_entry **items, size_t *n, struct xl_entry *e)
{
    int found;
    size_t at = bsearch_entry(items, *n, e, &found);
    if (!found)
        return;
    memmove(&items[at], &items[at + 1], (*n - at - 1) * sizeof(*items));
    (*n)--;
}

long xlate_gw_find_sel(const struct xl_gw_memo *m, const struct xl_entry *vs)
{
    int found;
    size_t at = bsearch_entry(m->sel, m->nsel, vs, &found);
    return found ? (long)at : -1;
}

int xlate_gw_sel_add(struct xl_gw_memo *m, struct xl_entry *v)
{
    size_t n = m->nsel;
    if (xlate_sorted_insert(&m->sel, &m->nsel, &m->capsel, v) != 0)
        return -1;
    if (m->nsel > n && v->nsel++ == 0)
        v->sel_id = m->id;
    return 0;
}

void xlate_gw_sel_unmark(const struct xl_gw_memo *m, struct xl_entry *v)
{
    v->nsel--;
    if (v->sel_id == m->id)
        v->sel_id = 0;
}

int xlate_gw_is_sel(struct xl_gw_memo *m, const struct xl_entry *vs)
{
    /* held by this memo, or by none or one other: known from the entry */
    if (vs->sel_id == m->id)
        return 1;
    if (vs->nsel == 0 || (vs->nsel == 1 && vs->sel_id))
        return 0;
    /* the entry at the finger or the one after it (pointers compared: no
     * entry is read), else a search */
    size_t f = m->sel_finger;
    for (size_t i = f; i < m->nsel && i < f + 2; i++)
        if (m->sel[i] == vs) {
            m->sel_finger = i + 1;
            return 1;
        }
    int found;
    size_t at = bsearch_entry(m->sel, m->nsel, vs, &found);
    m->sel_finger = found ? at + 1 : at;
    return found;
}

long xlate_gw_find_acc(const struct xl_gw_memo *m, const struct xl_entry *vs)
{
    size_t lo = 0, hi = m->nacc;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = m->acc[mid].vs == vs ? 0 : xlate_entry_cmp(m->acc[mid].vs, vs);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

void xlate_map_free_vals(struct cx_map *m)
{
    const struct cx_map_slot *s;
    for (size_t i = 0; cx_map_next(m, &i, &s);)
        free(s->val);
    cx_map_free(m);
}

void xlate_dep_list_free(struct xl_dep_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->items[i].vskey != l->vskey0)
            free(l->items[i].vskey);
    if (l->items != &l->first)
        free(l->items);
    free(l);
}

/* ---- digest --------------------------------------------------------------- */

static int canon_member(struct cx_buf *b, const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return 0;
    int rc = cx_json_escape(b, key);
    rc |= cx_buf_puts(b, ":");
    rc |= cx_json_canonical(v, b);
    rc |= cx_buf_puts(b, ",");
    return rc;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

uint64_t xlate_digest(const cJSON *obj)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = 0;
    const cJSON *c;
    const char *keys[64] = {0};
    size_t nk = 0;
    /* every top-level member but status, in key order; metadata without what
     * changes on every write (resourceVersion, managedFields) and
     * annotations */
    cJSON_ArrayForEach(c, obj)
    {
        if (c->string && strcmp(c->string, "status") != 0 && nk < 64)
            keys[nk++] = c->string;
    }
    qsort(keys, nk, sizeof(keys[0]), name_cmp);
    /* Secrets and ConfigMaps: the translator reads an annotation of theirs
     * (XLATE_ALLOW_REFS_ANNOTATION), so annotations count */
    enum xlate_kind kind = xlate_kind_of(obj);
    int with_annotations = kind == XLATE_KIND_SECRET || kind == XLATE_KIND_CONFIG_MAP;
    for (size_t i = 0; i < nk; i++) {
        if (strcmp(keys[i], "metadata") == 0) {
            static const char *const keep[] = {"creationTimestamp", "generation", "labels", "name",
                                               "namespace",         "uid",        NULL};
            const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
            rc |= cx_buf_puts(&b, "metadata{");
            if (with_annotations)
                rc |= canon_member(&b, md, "annotations");
            for (const char *const *k = keep; *k; k++)
                rc |= canon_member(&b, md, *k);
            rc |= cx_buf_puts(&b, "}");
            continue;
        }
        rc |= canon_member(&b, obj, keys[i]);
    }
    uint64_t h = cx_fnv64(CX_FNV64_INIT, b.data ? b.data : "", b.len);
    if (rc != 0 || nk == 64) /* too big to canonicalise: hash the pointer too */
        h = cx_fnv64(h, &obj, sizeof(obj));
    cx_buf_free(&b);
    return h ? h : 1;
}

/* ---- records (xlate_record.h) ---------------------------------------------- */

struct xlate_record *xlate_record_new(enum xlate_kind kind, const cJSON *obj, uint64_t digest,
                                      const struct xlate_limits *lim, size_t *hint)
{
    struct xlate_limits dflt;
    if (!lim) {
        xlate_limits_default(&dflt);
        lim = &dflt;
    }
    if (kind == XLATE_KIND_UNKNOWN)
        kind = xlate_kind_of(obj);
    if (kind < 0 || kind >= XLATE_KIND_COUNT || !cJSON_IsObject(obj))
        return NULL;
    char key[600];
    size_t keylen = xlate_object_key(obj, key, sizeof(key));
    if (!keylen)
        return NULL; /* names this long cannot exist in Kubernetes */
    /* the header, the key and the decoded object share one arena: most
     * records are one allocation, sized like the kind's largest so far */
    struct xl_arena a = {.hint = hint ? *hint : 0};
    struct xlate_record *r = xlate_alloc(&a, sizeof(*r) + keylen + 1);
    if (!r) {
        xlate_arena_free(&a);
        return NULL;
    }
    memcpy(r->key, key, keylen + 1);
    r->keylen = (uint32_t)keylen;
    r->kind = kind;
    r->digest = digest ? digest : xlate_digest(obj);
    r->regex_program_size = lim->regex_program_size;
    if (xlate_api_parse(kind, obj, lim, &a, &r->obj) != 0) {
        xlate_arena_free(&a);
        return NULL;
    }
    r->parse_state = xlate_errors_state(&r->obj.errors);
    if (hint) {
        size_t want = (a.live + 7) & ~(size_t)7;
        if (want > *hint)
            *hint = want;
    }
    r->chunks = a.head;
    r->bytes = a.total > UINT32_MAX ? UINT32_MAX : (uint32_t)a.total;
    r->live = a.live > UINT32_MAX ? UINT32_MAX : (uint32_t)a.live;
    atomic_init(&r->refs, 1);
    return r;
}

struct xlate_record *xlate_record_ref(const struct xlate_record *r)
{
    struct xlate_record *w = (struct xlate_record *)r;
    if (w)
        atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed);
    return w;
}

void xlate_record_unref(const struct xlate_record *r)
{
    struct xlate_record *w = (struct xlate_record *)r;
    if (!w || atomic_fetch_sub_explicit(&w->refs, 1, memory_order_acq_rel) != 1)
        return;
    xlate_object_release(&w->obj);
    struct xl_arena a = {.head = w->chunks}; /* the record lives in it */
    xlate_arena_free(&a);
}

enum xlate_kind xlate_record_kind(const struct xlate_record *r)
{
    return r->kind;
}

uint64_t xlate_record_digest(const struct xlate_record *r)
{
    return r->digest;
}

const char *xlate_record_key(const struct xlate_record *r)
{
    return r->key;
}

size_t xlate_record_bytes(const struct xlate_record *r)
{
    return r->bytes;
}
