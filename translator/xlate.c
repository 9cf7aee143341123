/*
 * The translator context and one pass (see xlate_internal.h for the memo
 * rules): ingest (entries, re-parse what changed, deletions), indexes and
 * dependency marks, Upstreams, VirtualService invalidation, Gateways
 * (selection, domain claims, accepted virtual hosts, the four resource sets
 * patched in place), the snapshot.
 */
#include "xlate_internal.h"

#include "cx_hash.h"
#include "cx_json.h"
#include "filter_selector.h"
#include "xlate_tls.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers -------------------------------------------------------- */

uint64_t xlate_fnv(uint64_t h, const void *p, size_t n)
{
    return cx_fnv64(h, p, n);
}

uint64_t xlate_fnv_str(uint64_t h, const char *s)
{
    s = s ? s : "";
    return cx_fnv64(h, s, strlen(s) + 1);
}

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
static void list_clear(struct xl_entry_list *l)
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
    return xlate_meta_label(&((const struct xl_entry *)user)->obj.meta, key);
}

int xlate_selector_matches(const struct filter_selector *sel, const struct xl_entry *e)
{
    if (!sel)
        return 1;
    return filter_selector_matches_fn(sel, label_get, (void *)e);
}

struct xl_entry *xlate_find_key(struct xlate_ctx *ctx, enum xlate_kind kind, const char *key)
{
    return xlate_map_gets(&ctx->by_key[kind], key);
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
    return xlate_map_get(&ctx->by_key[kind], key, nl + 1 + ml);
}

int xlate_rep_dirty(struct xlate_ctx *ctx, struct xl_entry *e)
{
    if (e->rep_dirty == ctx->pass)
        return 0;
    e->rep_dirty = ctx->pass;
    return xlate_list_push(&ctx->rep_list, e);
}

/* A VirtualService started or stopped being selected by a Gateway: its
 * report, and those of the RouteTables it has problems about, change. */
static int usage_changed(struct xlate_ctx *ctx, struct xl_entry *v)
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
static void sort_unless_sorted(void *base, size_t n, size_t size,
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
static int sorted_insert(struct xl_entry ***items, size_t *n, size_t *cap, struct xl_entry *e)
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

static void sorted_remove(struct xl_entry **items, size_t *n, struct xl_entry *e)
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

int xlate_gw_is_sel(struct xl_gw_memo *m, const struct xl_entry *vs)
{
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

/* ---- context ----------------------------------------------------------------- */

struct xlate_ctx *xlate_ctx_new(void)
{
    struct xlate_ctx *ctx = calloc(1, sizeof(struct xlate_ctx));
    if (ctx && !(ctx->sha = cx_sha256_ctx_new())) {
        free(ctx);
        return NULL;
    }
    return ctx;
}

struct xds_resource *xlate_ctx_resource_new(struct xlate_ctx *ctx, enum xds_type type,
                                            const char *name, uint8_t *bytes, size_t len)
{
    char ver[XDS_VERSION_LEN + 1];
    cx_sha256_hex_with(ctx->sha, bytes ? (const void *)bytes : (const void *)"", len, ver,
                       XDS_VERSION_LEN);
    return xlate_resource_new_versioned(type, name, bytes, len, ver);
}

static void entry_free(struct xl_entry *e)
{
    if (!e)
        return;
    xlate_object_release(&e->obj);
    xlate_arena_free(&e->arena);
    for (int m = 0; e->res && m < XL_MODES; m++)
        xlate_res_clear(&e->res[m]);
    free(e->res);
    xlate_up_memo_free(e->up);
    xlate_gw_tls_free(e->gtls);
    free(e->contrib.items);
    free(e->rep_msg);
    free(e);
}

static void set_free(struct xds_resource_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        xlate_resource_unref(s->items[i]);
    free(s->items);
    memset(s, 0, sizeof(*s));
}

static void free_map_vals(struct xl_map *m)
{
    const struct xl_map_slot *s;
    for (size_t i = 0; xlate_map_next(m, &i, &s);)
        free(s->val);
    xlate_map_free(m);
}

static void free_slots(struct xl_gw_memo *m)
{
    for (size_t i = 0; i < m->nacc; i++)
        free(m->acc[i].ups);
    free(m->acc);
    m->acc = NULL;
    m->nacc = 0;
}

static void gw_memo_free(struct xl_gw_memo *m)
{
    if (!m)
        return;
    free(m->sel);
    free_slots(m);
    free_map_vals(&m->conflicts);
    free_map_vals(&m->upcount);
    xlate_resource_unref(m->rc);
    xlate_resource_unref(m->listener);
    const struct xl_map_slot *s;
    for (size_t i = 0; xlate_map_next(&m->api_listeners, &i, &s);) {
        struct xl_api_listener *al = s->val;
        xlate_resource_unref(al->r);
        free(al);
    }
    xlate_map_free(&m->api_listeners);
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        set_free(&m->sets[t]);
    free(m->touched.items);
    free_map_vals(&m->uncovered);
    for (size_t i = 0; i < m->ncert_notes; i++)
        free(m->cert_notes[i]);
    free(m->cert_notes);
    free(m);
}

/* Frees a Gateway's memo, marking the reports that depended on it. */
static int gw_memo_drop(struct xlate_ctx *ctx, struct xl_gw_memo *m)
{
    int rc = 0;
    if (!m)
        return 0;
    for (size_t i = 0; i < m->nsel && rc == 0; i++)
        rc = usage_changed(ctx, m->sel[i]);
    const struct xl_map_slot *u;
    for (size_t i = 0; rc == 0 && xlate_map_next(&m->uncovered, &i, &u);) {
        struct xl_entry *v = xlate_find_key(ctx, XLATE_KIND_VIRTUAL_SERVICE, u->key);
        if (v)
            rc = xlate_rep_dirty(ctx, v);
    }
    const struct xl_map_slot *s;
    for (size_t i = 0; rc == 0 && xlate_map_next(&m->upcount, &i, &s);)
        rc = xlate_rep_dirty(ctx, ((struct xl_ucount *)s->val)->up);
    gw_memo_free(m);
    return rc;
}

static void free_list_map(struct xl_map *m)
{
    const struct xl_map_slot *s;
    for (size_t i = 0; xlate_map_next(m, &i, &s);) {
        struct xl_entry_list *l = s->val;
        free(l->items);
        free(l);
    }
    xlate_map_free(m);
}

static void free_dep_list(struct xl_dep_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i].vskey);
    free(l->items);
    free(l);
}

static void free_deps(struct xl_map *m)
{
    const struct xl_map_slot *s;
    for (size_t i = 0; xlate_map_next(m, &i, &s);)
        free_dep_list(s->val);
    xlate_map_free(m);
}

/* Everything but the pass scratch lists. */
static void ctx_clear(struct xlate_ctx *ctx)
{
    const struct xl_map_slot *s;
    for (size_t i = 0; xlate_map_next(&ctx->gw_memo, &i, &s);)
        gw_memo_free(s->val);
    xlate_map_free(&ctx->gw_memo);
    for (int k = 0; k < XLATE_KIND_COUNT; k++) {
        for (size_t i = 0; xlate_map_next(&ctx->by_key[k], &i, &s);)
            entry_free(s->val);
        xlate_map_free(&ctx->by_key[k]);
        free(ctx->list[k]);
        ctx->list[k] = NULL;
        ctx->nlist[k] = ctx->caplist[k] = 0;
    }
    for (size_t i = 0; i < ctx->graveyard.n; i++)
        entry_free(ctx->graveyard.items[i]);
    ctx->graveyard.n = 0;
    xlate_map_free(&ctx->by_ptr);
    free_list_map(&ctx->slices_by_svc);
    free_list_map(&ctx->svc_ups);
    free_list_map(&ctx->rt_by_ns);
    free_list_map(&ctx->ref_ups);
    free_deps(&ctx->deps);
    xlate_report_block_unref(ctx->reports);
    ctx->reports = NULL;
}

void xlate_ctx_free(struct xlate_ctx *ctx)
{
    if (!ctx)
        return;
    ctx_clear(ctx);
    free(ctx->pending.items);
    free(ctx->changed.items);
    free(ctx->graveyard.items);
    free(ctx->vs_touched.items);
    free(ctx->up_touched.items);
    free(ctx->rep_list.items);
    free_map_vals(&ctx->changed_deps);
    free_map_vals(&ctx->dirty_services);
    free_map_vals(&ctx->dirty_refs);
    cx_sha256_ctx_free(ctx->sha);
    free(ctx->rroutes);
    xlate_arena_free(&ctx->rscratch);
    free(ctx);
}

/* ---- pass-local marks --------------------------------------------------------- */

/* by_ptr keys are (digest, obj_ptr) as laid out in the entry: 16 bytes that
 * say "this very cJSON with this content". */
struct ptrkey {
    uint64_t digest;
    const void *ptr;
};
_Static_assert(offsetof(struct xl_entry, obj_ptr) == offsetof(struct xl_entry, digest) + 8 &&
                   sizeof(struct ptrkey) == 16,
               "an entry's digest and obj_ptr form its ptrkey");
#define PTRKEY_LEN sizeof(struct ptrkey)

static const void *ptrkey_entry(const struct xl_entry *e)
{
    return &e->digest;
}

/* The (digest, pointer) index: in a full view, an input object that is the
 * very one of the previous pass is known without reading it. */
static void ptr_del(struct xlate_ctx *ctx, struct xl_entry *e)
{
    if (e->obj_ptr)
        xlate_map_del(&ctx->by_ptr, ptrkey_entry(e), PTRKEY_LEN);
}

static int ptr_put(struct xlate_ctx *ctx, struct xl_entry *e)
{
    return xlate_map_put(&ctx->by_ptr, ptrkey_entry(e), PTRKEY_LEN, e);
}

static int mark_key(struct xl_map *m, const char *key)
{
    size_t n = strlen(key);
    if (xlate_map_get(m, key, n))
        return 0;
    char *k = malloc(n + 1);
    if (!k)
        return -1;
    memcpy(k, key, n + 1);
    if (xlate_map_put(m, k, n, k) != 0) {
        free(k);
        return -1;
    }
    return 0;
}

/* "<a>/<b>" in |buf|; -1 if it does not fit. */
static int join_key(char *buf, size_t cap, const char *a, const char *b)
{
    size_t al = strlen(a), bl = strlen(b);
    if (al + bl + 2 > cap)
        return -1;
    memcpy(buf, a, al);
    buf[al] = '/';
    memcpy(buf + al + 1, b, bl + 1);
    return 0;
}

/* Records that dependency "<c>/<a>" changed this pass, when a resolution
 * of an earlier pass read it: invalidate() looks for nothing else (this
 * pass's resolutions come after it). */
static int mark_dep(struct xlate_ctx *ctx, char c, const char *a)
{
    char buf[600];
    const char pre[2] = {c, '\0'};
    if (join_key(buf, sizeof(buf), pre, a) != 0 || !xlate_map_gets(&ctx->deps, buf))
        return 0;
    return mark_key(&ctx->changed_deps, buf);
}

/* Records that Service ns/name's endpoints changed this pass, when an
 * Upstream not parsed this pass reads them: upstreams() refreshes the
 * parsed ones anyway (and those parsed later in the pass, not yet in the
 * index). On a first pass, nothing to record. */
static int mark_service(struct xlate_ctx *ctx, const char *ns, const char *name)
{
    char buf[600];
    if (join_key(buf, sizeof(buf), ns, name) != 0)
        return 0;
    const struct xl_entry_list *l = xlate_map_gets(&ctx->svc_ups, buf);
    int others = 0;
    for (size_t i = 0; l && i < l->n && !others; i++)
        others = l->items[i]->changed != ctx->pass;
    return others ? mark_key(&ctx->dirty_services, buf) : 0;
}

/* Records that Secret ('S') or ConfigMap ('C') |key| changed this pass. */
static int mark_ref(struct xlate_ctx *ctx, char c, const char *key)
{
    char buf[600];
    const char pre[2] = {c, '\0'};
    if (join_key(buf, sizeof(buf), pre, key) != 0)
        return 0;
    return mark_key(&ctx->dirty_refs, buf);
}

static int touch(struct xlate_ctx *ctx, struct xl_entry_list *l, struct xl_entry *e)
{
    if (e->touched == ctx->pass && e->kind != XLATE_KIND_GATEWAY)
        return 0;
    e->touched = ctx->pass;
    return xlate_list_push(l, e);
}

static uint64_t labels_hash(const struct xl_meta *m)
{
    uint64_t h = CX_FNV64_INIT;
    for (size_t i = 0; i < m->nlabels; i++) {
        h = xlate_fnv_str(h, m->labels[i].key);
        h = xlate_fnv_str(h, m->labels[i].value);
    }
    return h;
}

/* ---- indexes -------------------------------------------------------------------- */

static int index_add(struct xl_map *m, const char *key, struct xl_entry *e)
{
    size_t n = strlen(key);
    struct xl_entry_list *l = xlate_map_get(m, key, n);
    if (!l) {
        l = calloc(1, sizeof(*l) + n + 1);
        if (!l)
            return -1;
        char *k = (char *)(l + 1);
        memcpy(k, key, n + 1);
        if (xlate_map_put(m, k, n, l) != 0) {
            free(l);
            return -1;
        }
    }
    /* kept sorted: index users iterate in name order */
    size_t cap = l->cap;
    return sorted_insert(&l->items, &l->n, &cap, e) == 0 ? (l->cap = cap, 0) : -1;
}

static void index_del(struct xl_map *m, const char *key, struct xl_entry *e)
{
    size_t n = strlen(key);
    struct xl_entry_list *l = xlate_map_get(m, key, n);
    if (!l)
        return;
    sorted_remove(l->items, &l->n, e);
    if (l->n == 0) {
        xlate_map_del(m, key, n);
        free(l->items);
        free(l);
    }
}

static int slice_key(const struct xl_entry *e, char *buf, size_t cap)
{
    if (!e->obj.u.eps.service)
        return -1;
    return join_key(buf, cap, e->obj.meta.ns, e->obj.u.eps.service);
}

/* Takes |e| (parsed as it is now) out of, or into, the indexes. */
static int index_entry(struct xlate_ctx *ctx, struct xl_entry *e, int add)
{
    char key[600];
    switch (e->kind) {
    case XLATE_KIND_ENDPOINT_SLICE:
        if (slice_key(e, key, sizeof(key)) != 0)
            return 0;
        if (!add) {
            index_del(&ctx->slices_by_svc, key, e);
            return 0;
        }
        return index_add(&ctx->slices_by_svc, key, e);
    case XLATE_KIND_ROUTE_TABLE:
        if (!add) {
            index_del(&ctx->rt_by_ns, e->obj.meta.ns, e);
            return 0;
        }
        return index_add(&ctx->rt_by_ns, e->obj.meta.ns, e);
    case XLATE_KIND_UPSTREAM:
        if (!add) {
            if (e->up && e->up->svc_key) {
                index_del(&ctx->svc_ups, e->up->svc_key, e);
                free(e->up->svc_key);
                e->up->svc_key = NULL;
            }
            for (int i = 0; e->up && i < 2; i++)
                if (e->up->ref_keys[i]) {
                    index_del(&ctx->ref_ups, e->up->ref_keys[i], e);
                    free(e->up->ref_keys[i]);
                    e->up->ref_keys[i] = NULL;
                }
            return 0;
        }
        if (!e->up && !(e->up = calloc(1, sizeof(*e->up))))
            return -1;
        if (e->parse_state == XLATE_REJECTED)
            return 0;
        /* the Secret and ConfigMap of spec.tls: their changes refresh it */
        const struct xl_upstream_tls *t = xlate_upstream_tls_of(&e->obj.u.up);
        const struct xl_obj_ref *refs[2] = {t->has_ca ? &t->ca : NULL,
                                            t->has_client_cert ? &t->client_cert : NULL};
        for (int i = 0; i < 2; i++) {
            if (!refs[i])
                continue;
            snprintf(key, sizeof(key), "%c/%s/%s", i ? 'S' : 'C', refs[i]->ns, refs[i]->name);
            if (!(e->up->ref_keys[i] = strdup(key)) || index_add(&ctx->ref_ups, key, e) != 0)
                return -1;
        }
        if (!e->obj.u.up.is_kube)
            return 0;
        if (join_key(key, sizeof(key), e->obj.u.up.kube_ns, e->obj.u.up.kube_service) != 0)
            return 0; /* longer than any Kubernetes name: matches no Service */
        if (!(e->up->svc_key = strdup(key)))
            return -1;
        return index_add(&ctx->svc_ups, key, e);
    default:
        return 0;
    }
}

/* Dependency marks for an entry that appears, changes or goes (|e| as it is
 * now: called for the old version before a re-parse and for the new one
 * after). */
static int note_change(struct xlate_ctx *ctx, struct xl_entry *e)
{
    int rc = 0;
    switch (e->kind) {
    case XLATE_KIND_ROUTE_TABLE:
        rc |= mark_dep(ctx, 'R', e->key);
        rc |= mark_dep(ctx, 'N', e->obj.meta.ns ? e->obj.meta.ns : "");
        break;
    case XLATE_KIND_SERVICE:
        rc |= mark_service(ctx, e->obj.meta.ns, e->obj.meta.name);
        break;
    case XLATE_KIND_ENDPOINT_SLICE:
        if (e->obj.u.eps.service)
            rc |= mark_service(ctx, e->obj.meta.ns, e->obj.u.eps.service);
        break;
    case XLATE_KIND_SECRET:
        rc |= mark_ref(ctx, 'S', e->key);
        break;
    case XLATE_KIND_CONFIG_MAP:
        rc |= mark_ref(ctx, 'C', e->key);
        break;
    default:
        break;
    }
    return rc ? -1 : 0;
}

/* ---- ingest ------------------------------------------------------------------------ */

static int list_add(struct xlate_ctx *ctx, struct xl_entry *e)
{
    ctx->list_changes[e->kind]++;
    return 0; /* the list itself is fixed up by fix_lists() */
}

static int reparse(struct xlate_ctx *ctx, struct xl_entry *e, const cJSON *obj, uint64_t digest)
{
    int had = e->changed != 0;
    ptr_del(ctx, e);
    if (had) {
        /* what the old version fed (a slice's old Service) changes too */
        if (note_change(ctx, e) != 0)
            return -1;
        index_entry(ctx, e, 0);
        /* sorted lists hold the entry by its name, which does not change */
    }
    xlate_object_release(&e->obj);
    xlate_arena_free(&e->arena);
    /* a first parse starts with a chunk sized like the kind's last object:
     * objects of a kind are alike, so most fit in one chunk */
    if (!e->arena.hint)
        e->arena.hint = ctx->arena_hint[e->kind];
    e->digest = digest;
    e->obj_ptr = obj;
    if (xlate_api_parse(e->kind, obj, &e->arena, &e->obj) != 0) {
        memset(&e->obj, 0, sizeof(e->obj));
        e->obj.kind = e->kind;
        e->digest = 0;
        e->obj_ptr = NULL;
        return -1;
    }
    e->parse_state = xlate_errors_state(&e->obj.errors);
    /* the largest of the kind so far: objects of a kind are alike, and one
     * that needs a little more gets a small second chunk */
    size_t want = (e->arena.live + 15) & ~(size_t)15;
    if (want > ctx->arena_hint[e->kind])
        ctx->arena_hint[e->kind] = want;
    e->label_hash = labels_hash(&e->obj.meta);
    /* a full view holding a key twice may parse its entry twice: the entry
     * is on the changed list once */
    int listed = e->changed == ctx->pass;
    e->changed = ctx->pass;
    if (e->kind == XLATE_KIND_SECRET)
        e->cert_phase = (int)xlate_tls_phase(&e->obj.u.secret.cert, ctx->now);
    ctx->stats.parsed++;
    if (e->kind == XLATE_KIND_VIRTUAL_SERVICE) {
        uint64_t h = xlate_fnv_str(CX_FNV64_INIT, e->obj.meta.creation);
        for (size_t i = 0; i < e->obj.u.vs.ndomains; i++)
            h = xlate_fnv_str(h, e->obj.u.vs.domains[i]);
        e->claim_hash = h;
    }
    if (!had && list_add(ctx, e) != 0)
        return -1;
    if (note_change(ctx, e) != 0 || index_entry(ctx, e, 1) != 0)
        return -1;
    if ((!listed && xlate_list_push(&ctx->changed, e) != 0) || xlate_rep_dirty(ctx, e) != 0)
        return -1;
    return ptr_put(ctx, e);
}

static struct xl_entry *entry_new(struct xlate_ctx *ctx, enum xlate_kind kind, const char *key,
                                  size_t keylen)
{
    struct xl_entry *e = calloc(1, sizeof(*e) + 2 * (keylen + 1));
    if (!e)
        return NULL;
    e->kind = kind;
    if (kind == XLATE_KIND_VIRTUAL_SERVICE) {
        e->res = calloc(XL_MODES, sizeof(*e->res));
        if (!e->res) {
            free(e);
            return NULL;
        }
        /* resolutions hold a few dependency names: start small */
        for (int m = 0; m < XL_MODES; m++)
            e->res[m].arena.hint = 256;
    }
    memcpy(e->key, key, keylen);
    e->keylen = keylen;
    e->skey = e->key + keylen + 1;
    memcpy(e->skey, key, keylen);
    char *slash = memchr(e->skey, '/', keylen);
    if (slash)
        *slash = '\x01';
    if (xlate_map_put(&ctx->by_key[kind], e->key, keylen, e) != 0) {
        free(e->res);
        free(e);
        return NULL;
    }
    return e;
}

/* Deletion: the entry leaves every index now and is freed at the end of the
 * pass. */
static int delete_entry(struct xlate_ctx *ctx, struct xl_entry *e)
{
    if (e->deleted)
        return 0;
    e->deleted = 1;
    if (e->changed && note_change(ctx, e) != 0)
        return -1;
    if (e->changed)
        index_entry(ctx, e, 0);
    xlate_map_del(&ctx->by_key[e->kind], e->key, e->keylen);
    ptr_del(ctx, e);
    if (e->changed)
        ctx->list_changes[e->kind]++;
    ctx->reports_changed = 1;
    if (xlate_list_push(&ctx->graveyard, e) != 0)
        return -1;
    return xlate_list_push(&ctx->changed, e);
}

static int commit_one(struct xlate_ctx *ctx, struct xl_entry *e)
{
    if (e->changed && e->digest == e->cand_digest) {
        /* same content, another cJSON: only the fast-lookup key moves */
        ptr_del(ctx, e);
        e->obj_ptr = e->cand_obj;
        return ptr_put(ctx, e);
    }
    return reparse(ctx, e, e->cand_obj, e->cand_digest);
}

/* "<namespace>/<name>" of |obj| in |key|: its length, 0 if it does not
 * fit (no Kubernetes name is that long). */
static size_t object_key(const cJSON *obj, char *key, size_t cap)
{
    const cJSON *md = cx_json_member(obj, "metadata");
    const char *ns = cx_json_str(md, "namespace");
    const char *name = cx_json_str(md, "name");
    if (!ns || !*ns)
        ns = "default";
    if (!name)
        name = "";
    size_t nl = strlen(ns), ml = strlen(name);
    if (nl + ml + 2 > cap)
        return 0;
    memcpy(key, ns, nl);
    key[nl] = '/';
    memcpy(key + nl + 1, name, ml + 1);
    return nl + 1 + ml;
}

/* Ingest: every input object finds (or creates) its entry and offers itself
 * as the entry's candidate; when a key appears twice the smaller digest
 * wins, whatever the order. A full view parses an object at the first
 * sight of its key; the changes path, and a contest of copies, re-parse
 * entries whose candidate differs from what they hold afterwards
 * (commit_candidates). Returns 1 when |obj| is the very object of the last
 * pass (nothing of it read), 0 otherwise, -1 when memory ran out. */
static int ingest_one(struct xlate_ctx *ctx, enum xlate_kind kind, const cJSON *obj,
                      uint64_t digest, int last_wins)
{
    if (kind == XLATE_KIND_UNKNOWN)
        kind = xlate_kind_of(obj);
    if (kind < 0 || kind >= XLATE_KIND_COUNT || !cJSON_IsObject(obj))
        return 0; /* not ours: no entry, no report */
    if (!digest)
        digest = xlate_digest(obj);
    struct ptrkey probe = {digest, obj};
    struct xl_entry *e = xlate_map_get(&ctx->by_ptr, &probe, PTRKEY_LEN);
    if (e && e->kind == kind && e->seen != ctx->pass && e->digest == digest) {
        /* the very object of last pass: nothing to do */
        e->seen = ctx->pass;
        ctx->nseen[kind]++;
        e->duplicate = 0;
        e->cand_obj = obj;
        e->cand_digest = digest;
        return 1;
    }
    char key[600];
    size_t n = object_key(obj, key, sizeof(key));
    if (!n)
        return 0; /* names this long cannot exist in Kubernetes */
    e = xlate_map_get(&ctx->by_key[kind], key, n);
    if (!e) {
        e = entry_new(ctx, kind, key, n);
        if (!e)
            return -1;
    }
    if (e->seen == ctx->pass && !last_wins) {
        /* a full view holding the key twice */
        if (!e->duplicate) {
            e->duplicate = 1;
            if (xlate_rep_dirty(ctx, e) != 0)
                return -1;
        }
        if (digest >= e->cand_digest)
            return 0;
    } else if (e->seen == ctx->pass) {
        /* changes: a later event for the key replaces an earlier one */
    } else {
        e->seen = ctx->pass;
        ctx->nseen[kind]++;
        int was_duplicate = e->duplicate;
        if (e->duplicate && xlate_rep_dirty(ctx, e) != 0)
            return -1;
        e->duplicate = 0;
        if (!last_wins && !was_duplicate) {
            /* a full view's first sight of the key: parse it now, while the
             * nodes ingest just read are in the cache. A key held twice
             * waits for the contest's winner; one that turns up twice only
             * now is parsed again at commit if a later copy wins. */
            e->cand_obj = obj;
            e->cand_digest = digest;
            return commit_one(ctx, e);
        }
    }
    e->cand_obj = obj;
    e->cand_digest = digest;
    if (!e->pending) {
        e->pending = 1;
        if (xlate_list_push(&ctx->pending, e) != 0)
            return -1;
    }
    return 0;
}

static int commit_candidates(struct xlate_ctx *ctx)
{
    int rc = 0;
    for (size_t i = 0; i < ctx->pending.n; i++) {
        struct xl_entry *e = ctx->pending.items[i];
        e->pending = 0;
        if (rc != 0 || e->deleted) /* upserted, then deleted, in one batch */
            continue;
        rc = commit_one(ctx, e);
    }
    ctx->pending.n = 0;
    return rc;
}

/* Kinds kept in a list sorted by name: those something walks in name
 * order (Gateways, selections, reports, certificate times). Services and
 * EndpointSlices are only looked up by key: sorting them would be wasted. */
static int kind_listed(int k)
{
    return k != XLATE_KIND_SERVICE && k != XLATE_KIND_ENDPOINT_SLICE;
}

/* Full view: whatever was not seen this pass is gone. */
static int sweep(struct xlate_ctx *ctx)
{
    for (int k = 0; k < XLATE_KIND_COUNT; k++) {
        if (ctx->nseen[k] == ctx->by_key[k].n)
            continue; /* every entry of the kind was seen */
        if (!kind_listed(k)) {
            /* deleting leaves a tombstone: the walk goes on */
            const struct xl_map_slot *s;
            for (size_t i = 0; xlate_map_next(&ctx->by_key[k], &i, &s);) {
                struct xl_entry *e = s->val;
                if (e->seen != ctx->pass && delete_entry(ctx, e) != 0)
                    return -1;
            }
            continue;
        }
        for (size_t i = 0; i < ctx->nlist[k]; i++) {
            struct xl_entry *e = ctx->list[k][i];
            if (e->seen != ctx->pass && delete_entry(ctx, e) != 0)
                return -1;
        }
    }
    return 0;
}

/* Sorting tens of thousands of entries by their sort keys compares keys of
 * entries scattered in memory, a cache miss per comparison: each is sorted
 * here with the first 16 bytes of its key beside it (big-endian, so that
 * integers compare as the bytes do) and only ties read the entries. */
struct keyed {
    uint64_t k0, k1;
    struct xl_entry *e;
};

static uint64_t be64(const char *s, size_t len)
{
    uint64_t v = 0;
    for (size_t i = 0; i < 8; i++)
        v = v << 8 | (i < len ? (unsigned char)s[i] : 0);
    return v;
}

static int keyed_cmp(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->k0 != y->k0)
        return x->k0 < y->k0 ? -1 : 1;
    if (x->k1 != y->k1)
        return x->k1 < y->k1 ? -1 : 1;
    return xlate_entry_cmp(x->e, y->e);
}

/* |out| gets the entries of |m| in xlate_entry_cmp order; -1 when memory ran
 * out. */
static int sort_by_key(const struct xl_map *m, struct xl_entry **out, size_t *n)
{
    struct keyed *v = malloc((m->n ? m->n : 1) * sizeof(*v));
    if (!v)
        return -1;
    size_t j = 0;
    const struct xl_map_slot *s;
    for (size_t i = 0; xlate_map_next(m, &i, &s);) {
        struct xl_entry *e = s->val;
        /* the sort key is the key with one byte changed: same length */
        v[j++] = (struct keyed){be64(e->skey, e->keylen),
                                e->keylen > 8 ? be64(e->skey + 8, e->keylen - 8) : 0, e};
    }
    qsort(v, j, sizeof(*v), keyed_cmp);
    for (size_t i = 0; i < j; i++)
        out[i] = v[i].e;
    *n = j;
    free(v);
    return 0;
}

/* Brings the sorted per-kind lists up to date: a few changes are patched in
 * place, many rebuild the list from the map. */
static int fix_lists(struct xlate_ctx *ctx)
{
    for (int k = 0; k < XLATE_KIND_COUNT; k++) {
        if (!ctx->list_changes[k] || !kind_listed(k)) {
            ctx->list_changes[k] = 0;
            continue;
        }
        size_t n = ctx->by_key[k].n;
        if (ctx->list_changes[k] > 32 + ctx->nlist[k] / 16) {
            if (n > ctx->caplist[k]) {
                struct xl_entry **l = realloc(ctx->list[k], n * sizeof(*l));
                if (!l)
                    return -1;
                ctx->list[k] = l;
                ctx->caplist[k] = n;
            }
            if (sort_by_key(&ctx->by_key[k], ctx->list[k], &ctx->nlist[k]) != 0)
                return -1;
        } else {
            for (size_t i = 0; i < ctx->changed.n; i++) {
                struct xl_entry *e = ctx->changed.items[i];
                if (e->kind != k)
                    continue;
                if (e->deleted)
                    sorted_remove(ctx->list[k], &ctx->nlist[k], e);
                else if (sorted_insert(&ctx->list[k], &ctx->nlist[k], &ctx->caplist[k], e) != 0)
                    return -1;
            }
        }
        ctx->list_changes[k] = 0;
    }
    return 0;
}

/* ---- upstreams and dependants ---------------------------------------------------- */

static int refresh_upstream(struct xlate_ctx *ctx, struct xl_entry *e)
{
    if (e->mark == ctx->pass)
        return 0;
    e->mark = ctx->pass;
    int rc = e->deleted ? 0 : xlate_upstream_refresh(ctx, e);
    if (rc < 0)
        return -1;
    int exists = !e->deleted, valid = exists && xlate_upstream_usable(e);
    if (exists != e->up_exists || valid != e->up_valid) {
        /* what routes read: whether it is there and usable */
        if (mark_dep(ctx, 'U', e->key) != 0)
            return -1;
        e->up_exists = exists;
        e->up_valid = valid;
        rc = 1;
    }
    if (rc && touch(ctx, &ctx->up_touched, e) != 0)
        return -1;
    return xlate_rep_dirty(ctx, e);
}

static int upstreams(struct xlate_ctx *ctx)
{
    for (size_t i = 0; i < ctx->changed.n; i++) {
        struct xl_entry *e = ctx->changed.items[i];
        if (e->kind == XLATE_KIND_UPSTREAM && refresh_upstream(ctx, e) != 0)
            return -1;
    }
    const struct xl_map_slot *s;
    for (size_t i = 0; xlate_map_next(&ctx->dirty_services, &i, &s);) {
        struct xl_entry_list *l = xlate_map_get(&ctx->svc_ups, s->key, s->klen);
        for (size_t k = 0; l && k < l->n; k++)
            if (refresh_upstream(ctx, l->items[k]) != 0)
                return -1;
    }
    for (size_t i = 0; xlate_map_next(&ctx->dirty_refs, &i, &s);) {
        struct xl_entry_list *l = xlate_map_get(&ctx->ref_ups, s->key, s->klen);
        for (size_t k = 0; l && k < l->n; k++)
            if (refresh_upstream(ctx, l->items[k]) != 0)
                return -1;
    }
    return 0;
}

/* Time: a Secret whose certificate crossed a validity boundary since the
 * previous pass's time counts as changed for its referrers' reports (its
 * bytes did not change, so no resource is rebuilt). Also finds the next
 * boundary (snapshot recheck_at). */
static int time_scan(struct xlate_ctx *ctx)
{
    int64_t next = 0;
    for (size_t i = 0; i < ctx->nlist[XLATE_KIND_SECRET]; i++) {
        struct xl_entry *e = ctx->list[XLATE_KIND_SECRET][i];
        const struct xl_secret *sec = &e->obj.u.secret;
        if (sec->state != XL_SECRET_OK)
            continue;
        int phase = (int)xlate_tls_phase(&sec->cert, ctx->now);
        if (phase != e->cert_phase && e->changed != ctx->pass && mark_ref(ctx, 'S', e->key) != 0)
            return -1;
        e->cert_phase = phase;
        int64_t t = xlate_tls_next_change(&sec->cert, ctx->now);
        if (t && (!next || t < next))
            next = t;
    }
    ctx->recheck_at = next;
    return 0;
}

static int invalidate_vs(struct xlate_ctx *ctx, struct xl_entry *e, int mode)
{
    if (mode < 0) {
        for (int m = 0; m < XL_MODES; m++)
            xlate_res_drop(ctx, e, m);
    } else {
        xlate_res_drop(ctx, e, mode);
    }
    if (xlate_rep_dirty(ctx, e) != 0)
        return -1;
    return touch(ctx, &ctx->vs_touched, e);
}

/* VirtualServices that changed, and those that read a dependency that
 * changed, lose their resolution. */
static int invalidate(struct xlate_ctx *ctx)
{
    for (size_t i = 0; i < ctx->changed.n; i++) {
        struct xl_entry *e = ctx->changed.items[i];
        if (e->kind == XLATE_KIND_VIRTUAL_SERVICE && invalidate_vs(ctx, e, -1) != 0)
            return -1;
    }
    const struct xl_map_slot *s;
    for (size_t i = 0; xlate_map_next(&ctx->changed_deps, &i, &s);) {
        struct xl_dep_list *l = xlate_map_del(&ctx->deps, s->key, s->klen);
        if (!l)
            continue;
        int rc = 0;
        for (size_t k = 0; k < l->n && rc == 0; k++) {
            struct xl_entry *v = xlate_find_key(ctx, XLATE_KIND_VIRTUAL_SERVICE, l->items[k].vskey);
            int m = l->items[k].mode;
            /* registrations of older resolutions are stale: skip them */
            if (v && v->res[m].valid && v->res[m].serial == l->items[k].serial)
                rc = invalidate_vs(ctx, v, m);
        }
        free_dep_list(l);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* ---- gateways --------------------------------------------------------------------- */

static int ns_allowed(const struct xl_gateway *g, const char *ns)
{
    if (g->all_namespaces)
        return 1;
    for (size_t i = 0; i < g->n_vs_namespaces; i++)
        if (strcmp(g->vs_namespaces[i], ns) == 0)
            return 1;
    return 0;
}

static int selects(const struct xl_entry *gwe, const struct xl_entry *v)
{
    const struct xl_gateway *g = &gwe->obj.u.gw;
    return !v->deleted && v->parse_state != XLATE_REJECTED && ns_allowed(g, v->obj.meta.ns) &&
           xlate_selector_matches(g->vs_selector, v);
}

static int claim_cmp(const void *a, const void *b)
{
    const struct xl_entry *x = *(struct xl_entry *const *)a;
    const struct xl_entry *y = *(struct xl_entry *const *)b;
    /* the oldest VirtualService keeps a contested domain */
    int c = strcmp(x->obj.meta.creation, y->obj.meta.creation);
    return c ? c : xlate_entry_cmp(x, y);
}

static void lower(char *dst, const char *src, size_t cap)
{
    size_t i = 0;
    for (; src[i] && i + 1 < cap; i++)
        dst[i] = (src[i] >= 'A' && src[i] <= 'Z') ? (char)(src[i] - 'A' + 'a') : src[i];
    dst[i] = '\0';
}

static int res_cmp_name(const void *a, const void *b)
{
    return strcmp((*(struct xds_resource *const *)a)->name,
                  (*(struct xds_resource *const *)b)->name);
}

/* Sorted resource sets (by name; names unique): find, insert, remove,
 * replace. The set holds one reference per item. */
static size_t set_pos_n(const struct xds_resource_set *s, size_t n, const char *name, int *found)
{
    size_t lo = 0, hi = n;
    *found = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->items[mid]->name, name);
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

static size_t set_pos(const struct xds_resource_set *s, const char *name, int *found)
{
    return set_pos_n(s, s->n, name, found);
}

static int set_grow(struct xl_gw_memo *m, int t)
{
    struct xds_resource_set *s = &m->sets[t];
    if (s->n < m->cap[t])
        return 0;
    size_t nc = m->cap[t] ? m->cap[t] * 2 : 8;
    struct xds_resource **ni = realloc(s->items, nc * sizeof(*ni));
    if (!ni)
        return -1;
    s->items = ni;
    m->cap[t] = nc;
    return 0;
}

static int set_put(struct xl_gw_memo *m, int t, struct xds_resource *r)
{
    struct xds_resource_set *s = &m->sets[t];
    if (m->bulk) {
        /* compute_claims adds many: append now, sort once after; a name
         * already in the sorted part (an Upstream re-created this pass) is
         * replaced in place */
        int found;
        size_t at = set_pos_n(s, m->bulk_sorted[t], r->name, &found);
        if (found) {
            xlate_resource_unref(s->items[at]);
            s->items[at] = xlate_resource_ref(r);
            m->set_dirty[t] = 1;
            return 0;
        }
        if (set_grow(m, t) != 0)
            return -1;
        s->items[s->n++] = xlate_resource_ref(r);
        m->unsorted[t] = 1;
        m->set_dirty[t] = 1;
        return 0;
    }
    int found;
    size_t at = set_pos(s, r->name, &found);
    if (found) {
        if (s->items[at] != r) {
            xlate_resource_unref(s->items[at]);
            s->items[at] = xlate_resource_ref(r);
            m->set_dirty[t] = 1;
        }
        return 0;
    }
    if (set_grow(m, t) != 0)
        return -1;
    memmove(&s->items[at + 1], &s->items[at], (s->n - at) * sizeof(*s->items));
    s->items[at] = xlate_resource_ref(r);
    s->n++;
    m->set_dirty[t] = 1;
    return 0;
}

/* Removes |name| from the set if it is |only| (or any, when |only| is
 * NULL). */
static void set_del(struct xl_gw_memo *m, int t, const char *name, const struct xds_resource *only)
{
    struct xds_resource_set *s = &m->sets[t];
    int found;
    size_t at = set_pos(s, name, &found);
    if (!found || (only && s->items[at] != only))
        return;
    xlate_resource_unref(s->items[at]);
    memmove(&s->items[at], &s->items[at + 1], (s->n - at - 1) * sizeof(*s->items));
    s->n--;
    m->set_dirty[t] = 1;
}

/* The set's version, exactly as xlate_resource_set_seal computes it (sha256
 * of "name\nversion\n" per item), without printf. */
static int set_version(struct xlate_ctx *ctx, struct xds_resource_set *s)
{
    size_t total = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (i + 8 < s->n)
            __builtin_prefetch(s->items[i + 8]);
        total += strlen(s->items[i]->name) + XDS_VERSION_LEN + 2;
    }
    char *buf = malloc(total ? total : 1);
    if (!buf)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < s->n; i++) {
        size_t nl = strlen(s->items[i]->name);
        memcpy(buf + o, s->items[i]->name, nl);
        o += nl;
        buf[o++] = '\n';
        size_t vl = strlen(s->items[i]->version);
        memcpy(buf + o, s->items[i]->version, vl);
        o += vl;
        buf[o++] = '\n';
    }
    cx_sha256_hex_with(ctx->sha, o ? buf : "", o, s->version, XDS_VERSION_LEN);
    free(buf);
    return 0;
}

/* Upstream |up| is sent to by one more (|delta| = 1) or one fewer (-1)
 * accepted VirtualService of the Gateway; the CDS and EDS sets follow the
 * count's 0 <-> 1 transitions. */
/* upcount is keyed by the Upstream entry itself (8 bytes of pointer): an
 * Upstream deleted and re-created in one pass is two entries with one name */
static struct xl_ucount *ucount_get(const struct xl_gw_memo *m, const struct xl_entry *up)
{
    return xlate_map_get(&m->upcount, &up, sizeof(up));
}

static int count_upstream(struct xlate_ctx *ctx, struct xl_gw_memo *m, struct xl_entry *up,
                          int delta)
{
    struct xl_ucount *c = ucount_get(m, up);
    if (delta > 0) {
        if (c) {
            c->count++;
            return 0;
        }
        if (!(c = calloc(1, sizeof(*c))))
            return -1;
        c->up = up;
        c->count = 1;
        if (xlate_map_put(&m->upcount, &c->up, sizeof(c->up), c) != 0) {
            free(c);
            return -1;
        }
        if (xlate_upstream_cluster(ctx, up, m->mode) != 0 ||
            set_put(m, XDS_CLUSTER, up->up->cluster[m->mode]) != 0 ||
            set_put(m, XDS_ENDPOINT, up->up->cla) != 0)
            return -1;
        c->put_pass = ctx->pass;
        return xlate_rep_dirty(ctx, up);
    }
    if (!c)
        return 0;
    if (--c->count > 0)
        return 0;
    xlate_map_del(&m->upcount, &c->up, sizeof(c->up));
    free(c);
    /* unless a successor of the same name (deleted and re-created in one
     * pass) is counted and holds the slots now */
    struct xl_entry *succ = xlate_find_key(ctx, XLATE_KIND_UPSTREAM, up->key);
    if (!(succ && succ != up && ucount_get(m, succ))) {
        set_del(m, XDS_CLUSTER, up->key, NULL);
        set_del(m, XDS_ENDPOINT, up->key, NULL);
    }
    return xlate_rep_dirty(ctx, up);
}

static int slot_fill(struct xlate_ctx *ctx, struct xl_gw_memo *m, struct xl_slot *s,
                     struct xl_entry *v)
{
    const struct xl_vs_res *r = &v->res[m->mode];
    s->vs = v;
    s->vh = r->vh;
    s->vhlen = r->vhlen;
    memcpy(s->hash, r->vh_hash, sizeof(s->hash));
    s->ups = malloc((r->nups ? r->nups : 1) * sizeof(*s->ups));
    if (!s->ups)
        return -1;
    memcpy(s->ups, r->ups, r->nups * sizeof(*s->ups));
    s->nups = r->nups;
    for (size_t i = 0; i < s->nups; i++)
        if (count_upstream(ctx, m, s->ups[i], 1) != 0)
            return -1;
    return 0;
}

static void slot_release(struct xlate_ctx *ctx, struct xl_gw_memo *m, struct xl_slot *s)
{
    for (size_t i = 0; i < s->nups; i++)
        (void)count_upstream(ctx, m, s->ups[i], -1);
    free(s->ups);
    s->ups = NULL;
    s->nups = 0;
}

/* Domain claims over the whole selection: each domain goes to the oldest
 * VirtualService; a younger one asking for a taken domain is rejected on
 * this Gateway. Rebuilds the accepted slots, their Upstream counts and the
 * conflict messages. */
static int compute_claims(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m)
{
    int rc = -1;
    struct xl_entry **order = malloc((m->nsel ? m->nsel : 1) * sizeof(*order));
    struct xl_map owner = {0};
    struct xl_arena keys = {0};
    struct xl_slot *acc = NULL, *old = m->acc;
    size_t nold = m->nacc, nacc = 0;
    if (!order)
        goto out;
    for (size_t i = 0; i < nold; i++)
        (void)xlate_rep_dirty(ctx, old[i].vs);
    const struct xl_map_slot *cs;
    for (size_t i = 0; xlate_map_next(&m->conflicts, &i, &cs);) {
        struct xl_entry *v = xlate_find_key(ctx, XLATE_KIND_VIRTUAL_SERVICE, cs->key);
        if (v)
            (void)xlate_rep_dirty(ctx, v);
    }
    free_map_vals(&m->conflicts);
    size_t n = 0;
    for (size_t i = 0; i < m->nsel; i++) {
        struct xl_entry *v = m->sel[i];
        v->mark = 0;
        if (v->res[m->mode].nroutes)
            order[n++] = v;
    }
    sort_unless_sorted(order, n, sizeof(*order), claim_cmp);
    size_t naccepted = 0;
    for (size_t i = 0; i < n; i++) {
        struct xl_entry *v = order[i];
        const struct xl_virtual_service *vs = &v->obj.u.vs;
        char d[300];
        struct xl_entry *other = NULL;
        const char *dom = NULL;
        for (size_t k = 0; k < vs->ndomains && !other; k++) {
            lower(d, vs->domains[k], sizeof(d));
            other = xlate_map_gets(&owner, d);
            dom = vs->domains[k];
        }
        if (other) {
            char buf[900];
            snprintf(buf, sizeof(buf),
                     "domain \"%s\" is already served by VirtualService %s on Gateway %s (the "
                     "oldest VirtualService keeps a domain)",
                     dom, other->key, gwe->key);
            char *msgc = strdup(buf);
            if (!msgc || xlate_map_put(&m->conflicts, v->key, v->keylen, msgc) != 0) {
                free(msgc);
                goto out;
            }
            (void)xlate_rep_dirty(ctx, v);
            continue;
        }
        for (size_t k = 0; k < vs->ndomains; k++) {
            lower(d, vs->domains[k], sizeof(d));
            char *kd = xlate_strdup(&keys, d);
            if (!kd || xlate_map_put(&owner, kd, strlen(kd), v) != 0)
                goto out;
        }
        v->mark = 1; /* accepted */
        naccepted++;
    }
    acc = calloc(naccepted ? naccepted : 1, sizeof(*acc));
    if (!acc)
        goto out;
    /* the new slots count their Upstreams before the old ones let go, so an
     * Upstream in both never leaves the sets; new ones are appended and the
     * sets sorted once */
    m->bulk = 1;
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        m->bulk_sorted[t] = m->sets[t].n;
    for (size_t i = 0; i < m->nsel; i++) {
        struct xl_entry *v = m->sel[i];
        if (v->mark != 1)
            continue;
        (void)xlate_rep_dirty(ctx, v);
        if (slot_fill(ctx, m, &acc[nacc++], v) != 0) {
            m->bulk = 0;
            goto out;
        }
    }
    m->bulk = 0;
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        if (m->unsorted[t]) {
            sort_unless_sorted(m->sets[t].items, m->sets[t].n, sizeof(*m->sets[t].items),
                               res_cmp_name);
            m->unsorted[t] = 0;
        }
    for (size_t i = 0; i < nold; i++)
        slot_release(ctx, m, &old[i]);
    free(old);
    m->acc = acc;
    m->nacc = nacc;
    acc = NULL;
    m->rc_dirty = 1;
    m->lds_dirty = 1;
    rc = 0;
out:
    if (acc) {
        for (size_t i = 0; i < nacc; i++)
            free(acc[i].ups);
        free(acc);
    }
    free(order);
    xlate_map_free(&owner);
    xlate_arena_free(&keys);
    return rc;
}

static void stat_prefix(char *out, size_t cap, const char *key)
{
    size_t i = 0;
    for (; key[i] && i + 1 < cap; i++)
        out[i] = key[i] == '/' ? '_' : key[i];
    out[i] = '\0';
}

static int build_rc(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m)
{
    uint8_t hbuf[CX_SHA256_LEN];
    size_t klen = strlen(gwe->key);
    size_t hl = klen + 1 + m->nacc * 16;
    uint8_t *hin = malloc(hl);
    if (!hin)
        return -1;
    memcpy(hin, gwe->key, klen);
    hin[klen] = '\n';
    for (size_t i = 0; i < m->nacc; i++)
        memcpy(hin + klen + 1 + i * 16, m->acc[i].hash, 16);
    cx_sha256_with(ctx->sha, hin, hl, hbuf);
    free(hin);
    if (m->rc && memcmp(hbuf, m->rc_hash, sizeof(m->rc_hash)) == 0) {
        ctx->stats.resources_reused++;
        return 0;
    }
    struct xl_bytes *vh = malloc((m->nacc ? m->nacc : 1) * sizeof(*vh));
    if (!vh)
        return -1;
    for (size_t i = 0; i < m->nacc; i++)
        vh[i] = (struct xl_bytes){m->acc[i].vh, m->acc[i].vhlen};
    uint8_t *bytes = NULL;
    size_t len = 0;
    int rc = xlate_encode_route_config(gwe->key, vh, m->nacc, &bytes, &len);
    free(vh);
    if (rc != 0)
        return -1;
    static const char hex[] = "0123456789abcdef";
    char ver[XDS_VERSION_LEN + 1];
    for (int i = 0; i < XDS_VERSION_LEN; i++)
        ver[i] = hex[(hbuf[i / 2] >> (i % 2 ? 0 : 4)) & 0xf];
    ver[XDS_VERSION_LEN] = '\0';
    struct xds_resource *r = xlate_resource_new_versioned(XDS_ROUTE, gwe->key, bytes, len, ver);
    if (!r)
        return -1;
    if (m->rc)
        set_del(m, XDS_ROUTE, m->rc->name, NULL);
    xlate_resource_unref(m->rc);
    m->rc = r;
    memcpy(m->rc_hash, hbuf, sizeof(m->rc_hash));
    ctx->stats.resources_built++;
    return set_put(m, XDS_ROUTE, r);
}

static int build_lds(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m,
                     int gw_changed)
{
    const struct xl_gateway *g = &gwe->obj.u.gw;
    char sp[300];
    stat_prefix(sp, sizeof(sp), gwe->key);
    if (m->mode == XLATE_MODE_ENVOY) {
        const struct xl_gw_tls *t = gwe->gtls;
        /* a TLS listener also follows its certificates and the served
         * domains (SNI) */
        if (m->listener && !gw_changed && (!t || (!m->lds_dirty && m->lds_tls_digest == t->digest)))
            return 0;
        uint8_t *bytes = NULL;
        size_t len = 0;
        if (t ? xlate_gw_tls_listener(ctx, gwe, m, sp, &bytes, &len) != 0
              : xlate_encode_listener_envoy(gwe->key, g->bind_address, g->bind_port, gwe->key, sp,
                                            &bytes, &len) != 0)
            return -1;
        m->lds_dirty = 0;
        m->lds_tls_digest = t ? t->digest : 0;
        struct xds_resource *r = xlate_ctx_resource_new(ctx, XDS_LISTENER, gwe->key, bytes, len);
        if (!r)
            return -1;
        ctx->stats.resources_built++;
        if (m->listener && m->listener->len == r->len &&
            memcmp(m->listener->bytes, r->bytes, r->len) == 0) {
            xlate_resource_unref(r);
            return 0;
        }
        xlate_resource_unref(m->listener);
        m->listener = r;
        return set_put(m, XDS_LISTENER, r);
    }
    if (!m->lds_dirty && !gw_changed)
        return 0;
    /* one API Listener per exact domain of an accepted VirtualService */
    struct xl_map fresh = {0};
    int rc = 0;
    for (size_t i = 0; i < m->nacc && rc == 0; i++) {
        const struct xl_virtual_service *vs = &m->acc[i].vs->obj.u.vs;
        for (size_t k = 0; k < vs->ndomains && rc == 0; k++) {
            const char *d = vs->domains[k];
            size_t dl = strlen(d);
            if (strchr(d, '*'))
                continue;
            /* an API listener keeps its bytes while its domain stays served */
            struct xl_api_listener *al = xlate_map_del(&m->api_listeners, d, dl);
            if (!al) {
                uint8_t *bytes = NULL;
                size_t len = 0;
                al = calloc(1, sizeof(*al) + dl + 1);
                if (!al || xlate_encode_listener_api(d, gwe->key, sp, &bytes, &len) != 0 ||
                    !(al->r = xlate_ctx_resource_new(ctx, XDS_LISTENER, d, bytes, len))) {
                    free(al);
                    rc = -1;
                    break;
                }
                memcpy(al->domain, d, dl + 1);
                ctx->stats.resources_built++;
            }
            if (xlate_map_put(&fresh, al->domain, dl, al) != 0) {
                xlate_resource_unref(al->r);
                free(al);
                rc = -1;
                break;
            }
        }
    }
    /* listeners of domains no longer served go */
    const struct xl_map_slot *s;
    for (size_t i = 0; xlate_map_next(&m->api_listeners, &i, &s);) {
        struct xl_api_listener *al = s->val;
        xlate_resource_unref(al->r);
        free(al);
    }
    xlate_map_free(&m->api_listeners);
    m->api_listeners = fresh;
    if (rc != 0)
        return -1;
    /* rebuild the sorted set from the map */
    set_free(&m->sets[XDS_LISTENER]);
    m->cap[XDS_LISTENER] = 0;
    size_t n = fresh.n;
    struct xds_resource **items = malloc((n ? n : 1) * sizeof(*items));
    if (!items)
        return -1;
    size_t j = 0;
    for (size_t i = 0; xlate_map_next(&fresh, &i, &s);)
        items[j++] = xlate_resource_ref(((struct xl_api_listener *)s->val)->r);
    qsort(items, j, sizeof(*items), res_cmp_name);
    m->sets[XDS_LISTENER].items = items;
    m->sets[XDS_LISTENER].n = j;
    m->cap[XDS_LISTENER] = n ? n : 1;
    m->set_dirty[XDS_LISTENER] = 1;
    m->lds_dirty = 0;
    return 0;
}

/* qsort order of entry pointers by address */
static int addr_cmp(const void *a, const void *b)
{
    const void *pa = *(void *const *)a, *pb = *(void *const *)b;
    uintptr_t x = (uintptr_t)pa, y = (uintptr_t)pb;
    return (x > y) - (x < y);
}

static int build_gateway(struct xlate_ctx *ctx, struct xl_entry *gwe)
{
    const struct xl_gateway *g = &gwe->obj.u.gw;
    struct xl_gw_memo *m = xlate_map_get(&ctx->gw_memo, gwe->key, gwe->keylen);
    int gw_changed = !m || m->gw_digest != gwe->digest;
    if (m && gw_changed) {
        /* mode, selector or bind address changed: start over */
        xlate_map_del(&ctx->gw_memo, gwe->key, gwe->keylen);
        if (gw_memo_drop(ctx, m) != 0)
            return -1;
        m = NULL;
    }
    if (!m) {
        m = calloc(1, sizeof(*m));
        if (!m || xlate_map_put(&ctx->gw_memo, gwe->key, gwe->keylen, m) != 0) {
            free(m);
            return -1;
        }
        m->mode = g->mode;
        m->gw_digest = gwe->digest;
        for (size_t i = 0; i < ctx->nlist[XLATE_KIND_VIRTUAL_SERVICE]; i++) {
            struct xl_entry *v = ctx->list[XLATE_KIND_VIRTUAL_SERVICE][i];
            if (selects(gwe, v) && (sorted_insert(&m->sel, &m->nsel, &m->capsel, v) != 0 ||
                                    usage_changed(ctx, v) != 0))
                return -1;
        }
        m->claims_dirty = 1;
        for (size_t i = 0; i < m->nsel; i++)
            if (xlate_list_push(&m->touched, m->sel[i]) != 0)
                return -1;
    } else {
        /* membership and resolution changes of the touched VirtualServices */
        for (size_t i = 0; i < ctx->vs_touched.n; i++) {
            struct xl_entry *v = ctx->vs_touched.items[i];
            int want = selects(gwe, v);
            long at = xlate_gw_find_sel(m, v);
            if (want && at < 0) {
                if (sorted_insert(&m->sel, &m->nsel, &m->capsel, v) != 0 ||
                    usage_changed(ctx, v) != 0)
                    return -1;
                m->claims_dirty = 1;
            } else if (!want && at >= 0) {
                sorted_remove(m->sel, &m->nsel, v);
                if (xlate_gw_find_acc(m, v) >= 0 || xlate_map_get(&m->conflicts, v->key, v->keylen))
                    m->claims_dirty = 1;
                if (usage_changed(ctx, v) != 0)
                    return -1;
                continue;
            }
            if (want && xlate_list_push(&m->touched, v) != 0)
                return -1;
        }
    }
    /* every touched VirtualService resolved for this mode; a changed claim
     * (domains, creation, served or not) redoes the claims. Many at once (a
     * first pass) are resolved in memory order, where entries and their
     * parse arenas were allocated one after another, instead of in name
     * order (scattered). Nothing in the output follows this order: each
     * resolution is its own, and a RouteTable's report sorts what its
     * delegators left (test_large_first_pass_order_free). */
    if (m->touched.n > 256)
        qsort(m->touched.items, m->touched.n, sizeof(*m->touched.items), addr_cmp);
    for (size_t i = 0; i < m->touched.n; i++) {
        struct xl_entry *v = m->touched.items[i];
        struct xl_vs_res *r = &v->res[m->mode];
        if (!r->valid && xlate_resolve_vs(ctx, v, m->mode) != 0)
            return -1;
        if (v->claim_changed[m->mode] == ctx->pass)
            m->claims_dirty = 1;
        if (xlate_rep_dirty(ctx, v) != 0)
            return -1;
    }
    ctx->stats.vhosts_reused += m->nsel - m->touched.n;
    if (m->claims_dirty) {
        if (compute_claims(ctx, gwe, m) != 0)
            return -1;
        m->claims_dirty = 0;
    } else {
        /* same claims: patch the accepted slots of the touched ones */
        for (size_t i = 0; i < m->touched.n; i++) {
            long at = xlate_gw_find_acc(m, m->touched.items[i]);
            if (at < 0)
                continue;
            struct xl_slot *s = &m->acc[at];
            struct xl_slot old = *s;
            s->ups = NULL;
            if (slot_fill(ctx, m, s, old.vs) != 0) {
                free(old.ups);
                return -1;
            }
            slot_release(ctx, m, &old);
            m->rc_dirty = 1;
        }
    }
    list_clear(&m->touched);
    /* Upstreams whose Cluster or ClusterLoadAssignment was rebuilt */
    for (size_t i = 0; i < ctx->up_touched.n; i++) {
        struct xl_entry *up = ctx->up_touched.items[i];
        if (up->deleted || !xlate_upstream_usable(up) || !up->up->cla)
            continue;
        /* not sent to, or counted in this pass with the resources as they
         * are now (every Upstream of a first pass) */
        const struct xl_ucount *c = ucount_get(m, up);
        if (!c || c->put_pass == ctx->pass)
            continue;
        if (xlate_upstream_cluster(ctx, up, m->mode) != 0 ||
            set_put(m, XDS_CLUSTER, up->up->cluster[m->mode]) != 0 ||
            set_put(m, XDS_ENDPOINT, up->up->cla) != 0)
            return -1;
    }
    if ((m->rc_dirty || !m->rc) && build_rc(ctx, gwe, m) != 0)
        return -1;
    m->rc_dirty = 0;
    if (build_lds(ctx, gwe, m, gw_changed) != 0)
        return -1;
    for (int t = 0; t < XDS_TYPE_COUNT; t++) {
        if (!m->set_dirty[t] && m->sets[t].version[0])
            continue;
        if (set_version(ctx, &m->sets[t]) != 0)
            return -1;
        m->set_dirty[t] = 0;
    }
    return 0;
}

/* ---- the pass ------------------------------------------------------------------- */

static int group_cmp(const void *a, const void *b)
{
    return strcmp(((const struct xlate_group *)a)->name, ((const struct xlate_group *)b)->name);
}

static int copy_set(struct xds_resource_set *dst, const struct xds_resource_set *src)
{
    memcpy(dst->version, src->version, sizeof(dst->version));
    dst->n = src->n;
    dst->items = malloc((src->n ? src->n : 1) * sizeof(*dst->items));
    if (!dst->items) {
        dst->n = 0;
        return -1;
    }
    if (src->n)
        memcpy(dst->items, src->items, src->n * sizeof(*dst->items));
    /* one reference per item for this snapshot; prefetch ahead because the
     * resources are scattered and each increment is otherwise a miss */
    for (size_t i = 0; i < src->n; i++) {
        if (i + 16 < src->n)
            __builtin_prefetch(src->items[i + 16], 1);
        xlate_resource_ref(src->items[i]);
    }
    return 0;
}

static int pass(struct xlate_ctx *ctx, struct xlate_snapshot **out)
{
    if (commit_candidates(ctx) != 0 || fix_lists(ctx) != 0 || time_scan(ctx) != 0 ||
        upstreams(ctx) != 0 || invalidate(ctx) != 0)
        return -1;
    /* VirtualServices deleted this pass leave every Gateway */
    for (size_t i = 0; i < ctx->changed.n; i++) {
        struct xl_entry *e = ctx->changed.items[i];
        if (e->deleted && e->kind == XLATE_KIND_VIRTUAL_SERVICE && invalidate_vs(ctx, e, -1) != 0)
            return -1;
        if (e->deleted && e->kind == XLATE_KIND_GATEWAY &&
            gw_memo_drop(ctx, xlate_map_del(&ctx->gw_memo, e->key, e->keylen)) != 0)
            return -1;
    }
    struct xlate_snapshot *snap = calloc(1, sizeof(*snap));
    if (!snap)
        return -1;
    atomic_init(&snap->refs, 1);
    size_t ng = ctx->nlist[XLATE_KIND_GATEWAY];
    snap->groups = calloc(ng ? ng : 1, sizeof(*snap->groups));
    if (!snap->groups)
        goto fail;
    for (size_t i = 0; i < ng; i++) {
        struct xl_entry *gwe = ctx->list[XLATE_KIND_GATEWAY][i];
        if (xlate_rep_dirty(ctx, gwe) != 0)
            goto fail;
        if (xlate_gw_tls_resolve(ctx, gwe) != 0)
            goto fail;
        if (gwe->parse_state == XLATE_REJECTED || (gwe->gtls && gwe->gtls->fatal)) {
            if (gw_memo_drop(ctx, xlate_map_del(&ctx->gw_memo, gwe->key, gwe->keylen)) != 0)
                goto fail;
            continue;
        }
        if (build_gateway(ctx, gwe) != 0)
            goto fail;
        struct xl_gw_memo *m = xlate_map_get(&ctx->gw_memo, gwe->key, gwe->keylen);
        struct xlate_group *grp = &snap->groups[snap->ngroups++];
        grp->name = strdup(gwe->key);
        grp->mode = gwe->obj.u.gw.mode;
        if (!grp->name)
            goto fail;
        for (int t = 0; t < XDS_TYPE_COUNT; t++)
            if (copy_set(&grp->types[t], &m->sets[t]) != 0)
                goto fail;
    }
    if (snap->ngroups > 1)
        qsort(snap->groups, snap->ngroups, sizeof(*snap->groups), group_cmp);
    xlate_snapshot_seal(snap);
    snap->recheck_at = ctx->recheck_at;
    if (xlate_reports_build(ctx, snap) != 0)
        goto fail;
    *out = snap;
    return 0;
fail:
    xlate_snapshot_unref(snap);
    return -1;
}

static void pass_end(struct xlate_ctx *ctx)
{
    for (size_t i = 0; i < ctx->graveyard.n; i++)
        entry_free(ctx->graveyard.items[i]);
    list_clear(&ctx->graveyard);
    list_clear(&ctx->pending);
    list_clear(&ctx->changed);
    list_clear(&ctx->vs_touched);
    list_clear(&ctx->up_touched);
    list_clear(&ctx->rep_list);
    ctx->reports_changed = 0;
    free_map_vals(&ctx->changed_deps);
    free_map_vals(&ctx->dirty_services);
    free_map_vals(&ctx->dirty_refs);
}

static int begin(struct xlate_ctx *ctx, struct xlate_snapshot **out)
{
    *out = NULL;
    ctx->pass++;
    memset(ctx->nseen, 0, sizeof(ctx->nseen));
    memset(&ctx->stats, 0, sizeof(ctx->stats));
    return 0;
}

static int finish(struct xlate_ctx *ctx, int rc, struct xlate_stats *stats)
{
    if (rc != 0) {
        /* The memo may be half updated: forget it all; the next pass must be
         * a full view (xlate_run), which rebuilds everything. */
        for (size_t i = 0; i < ctx->pending.n; i++)
            ctx->pending.items[i]->pending = 0;
        pass_end(ctx);
        ctx_clear(ctx);
        ctx->broken = 1;
    } else {
        pass_end(ctx);
    }
    if (stats)
        *stats = ctx->stats;
    return rc;
}

/* A full view tells how many entries of each kind the maps will hold: room
 * for them now spares the maps' repeated doubling (each a rehash of every
 * slot) while tens of thousands of entries arrive. Inputs whose kind is not
 * given count for every kind. */
static int reserve(struct xlate_ctx *ctx, const struct xlate_input *in)
{
    size_t n[XLATE_KIND_COUNT] = {0}, unknown = 0;
    for (size_t i = 0; i < in->n; i++) {
        int k = in->objects[i].kind;
        if (k > XLATE_KIND_UNKNOWN && k < XLATE_KIND_COUNT)
            n[k]++;
        else
            unknown++;
    }
    int rc = xlate_map_reserve(&ctx->by_ptr, in->n);
    for (int k = 0; k < XLATE_KIND_COUNT; k++)
        rc |= xlate_map_reserve(&ctx->by_key[k], n[k] + unknown);
    rc |= xlate_map_reserve(&ctx->slices_by_svc, n[XLATE_KIND_ENDPOINT_SLICE] + unknown);
    rc |= xlate_map_reserve(&ctx->svc_ups, n[XLATE_KIND_UPSTREAM] + unknown);
    return rc ? -1 : 0;
}

/* The objects of a full view are scattered in memory, and reading one is a
 * chain of dependent loads (object, first member, its name, the next
 * member...). Object i + d gets step PREFETCH_AHEAD - d of its top-level
 * chain asked for at object i: every load below is of a node asked for
 * one object earlier, so when ingest reaches an object its top-level
 * members (metadata among them) are in the cache. */
#define PREFETCH_AHEAD 6

static void prefetch_top(const cJSON *obj, size_t step)
{
    if (!obj)
        return;
    if (step == 0) {
        __builtin_prefetch(obj);
        return;
    }
    const cJSON *c = obj->child;
    for (size_t s = 1; c && s < step; s++) {
        __builtin_prefetch(c->string);
        __builtin_prefetch(c->child);
        c = c->next;
    }
    if (c)
        __builtin_prefetch(c);
}

/* The next object's slot in its kind's key map, asked for while this one
 * is parsed (its metadata was asked for by prefetch_top): a new key's
 * lookup is otherwise a miss of its own. */
static void prefetch_key(const struct xlate_ctx *ctx, const struct xlate_object *o)
{
    if (o->kind <= XLATE_KIND_UNKNOWN || o->kind >= XLATE_KIND_COUNT || !cJSON_IsObject(o->obj))
        return;
    char key[600];
    size_t n = object_key(o->obj, key, sizeof(key));
    if (n)
        xlate_map_prefetch(&ctx->by_key[o->kind], key, n);
}

int xlate_run(struct xlate_ctx *ctx, const struct xlate_input *in, struct xlate_snapshot **out,
              struct xlate_stats *stats)
{
    begin(ctx, out);
    ctx->broken = 0;
    ctx->now = in->now;
    ctx->stats.objects = in->n;
    int rc = reserve(ctx, in);
    int known = 0; /* the last object was the very one of the last pass */
    for (size_t i = 0; i < in->n && rc == 0; i++) {
        /* not while the view repeats the last one: objects known by their
         * (digest, pointer) are not read, and the walks would stall */
        for (size_t d = 1; d <= PREFETCH_AHEAD && i + d < in->n && !known; d++)
            prefetch_top(in->objects[i + d].obj, PREFETCH_AHEAD - d);
        if (i + 1 < in->n && !known)
            prefetch_key(ctx, &in->objects[i + 1]);
        int r = ingest_one(ctx, in->objects[i].kind, in->objects[i].obj, in->objects[i].digest, 0);
        known = r > 0;
        rc = r < 0 ? -1 : 0;
    }
    if (rc == 0)
        rc = sweep(ctx);
    if (rc == 0)
        rc = pass(ctx, out);
    return finish(ctx, rc, stats);
}

int xlate_run_changes(struct xlate_ctx *ctx, const struct xlate_change *changes, size_t n,
                      struct xlate_snapshot **out, struct xlate_stats *stats)
{
    return xlate_run_changes_at(ctx, changes, n, ctx->now, out, stats);
}

int xlate_run_changes_at(struct xlate_ctx *ctx, const struct xlate_change *changes, size_t n,
                         int64_t now, struct xlate_snapshot **out, struct xlate_stats *stats)
{
    begin(ctx, out);
    ctx->now = now;
    if (ctx->broken) {
        /* no complete view since a failed pass: the caller must send one */
        if (stats)
            *stats = ctx->stats;
        return -1;
    }
    ctx->stats.objects = n;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct xlate_change *c = &changes[i];
        if (c->obj) {
            rc = ingest_one(ctx, c->kind, c->obj, c->digest, 1) < 0 ? -1 : 0;
            continue;
        }
        if (c->kind < 0 || c->kind >= XLATE_KIND_COUNT || !c->name)
            continue;
        struct xl_entry *e = xlate_find(
            ctx, c->kind, c->namespace && *c->namespace ? c->namespace : "default", c->name);
        if (e)
            rc = delete_entry(ctx, e);
    }
    /* deleted then re-added in one batch: the deletion took the entry out
     * of the key map, so the re-add made a fresh one; the other order is
     * handled in commit_candidates */
    if (rc == 0)
        rc = pass(ctx, out);
    return finish(ctx, rc, stats);
}
