/*
 * The translator context and one pass: ingest (find each object's entry,
 * re-parse what changed), dependency bookkeeping, Upstreams, Gateways (their
 * selected VirtualServices, domain claims, the four resource sets), and the
 * snapshot.
 */
#include "xlate_internal.h"

#include "cx_hash.h"
#include "cx_json.h"
#include "filter_selector.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers -------------------------------------------------------- */

uint64_t xl_fnv(uint64_t h, const void *p, size_t n)
{
    return cx_fnv64(h, p, n);
}

uint64_t xl_fnv_str(uint64_t h, const char *s)
{
    s = s ? s : "";
    return cx_fnv64(h, s, strlen(s) + 1);
}

int xl_list_push(struct xl_entry_list *l, struct xl_entry *e)
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

static const char *label_get(void *user, const char *key)
{
    return xl_meta_label(&((const struct xl_entry *)user)->obj.meta, key);
}

int xl_selector_matches(const struct filter_selector *sel, const struct xl_entry *e)
{
    if (!sel)
        return 1;
    return filter_selector_matches_fn(sel, label_get, (void *)e);
}

struct xl_entry *xl_find(struct xlate_ctx *ctx, enum xlate_kind kind, const char *ns,
                         const char *name)
{
    char key[600];
    int n = snprintf(key, sizeof(key), "%s/%s", ns, name);
    if (n < 0 || (size_t)n >= sizeof(key))
        return NULL;
    return xl_map_get(&ctx->by_key[kind], key, (size_t)n);
}

void xl_touch(struct xlate_ctx *ctx, struct xl_entry *e)
{
    if (e->use_pass == ctx->pass)
        return;
    e->use_pass = ctx->pass;
    e->nuses = 0;
    e->used_modes = 0;
    e->nrmsgs = 0;
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

uint64_t xlate_digest(const cJSON *obj)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = 0;
    const cJSON *c;
    /* every top-level member but status; metadata without what changes on
     * every write (resourceVersion, managedFields) and annotations */
    cJSON_ArrayForEach(c, obj)
    {
        if (!c->string || strcmp(c->string, "status") == 0)
            continue;
        if (strcmp(c->string, "metadata") == 0) {
            static const char *const keep[] = {"namespace",         "name",   "uid", "generation",
                                               "creationTimestamp", "labels", NULL};
            rc |= cx_buf_puts(&b, "metadata{");
            for (const char *const *k = keep; *k; k++)
                rc |= canon_member(&b, c, *k);
            rc |= cx_buf_puts(&b, "}");
            continue;
        }
        rc |= canon_member(&b, obj, c->string);
    }
    uint64_t h = cx_fnv64(CX_FNV64_INIT, b.data ? b.data : "", b.len);
    if (rc != 0) /* the canonical form did not fit: hash what the pointer says */
        h = cx_fnv64(h, &obj, sizeof(obj));
    cx_buf_free(&b);
    return h ? h : 1;
}

/* ---- context ----------------------------------------------------------------- */

struct xlate_ctx *xlate_ctx_new(void)
{
    return calloc(1, sizeof(struct xlate_ctx));
}

static void entry_free(struct xl_entry *e)
{
    if (!e)
        return;
    xl_object_release(&e->obj);
    xl_arena_free(&e->arena);
    for (int m = 0; m < XL_MODES; m++)
        xl_res_clear(&e->res[m]);
    xl_up_memo_free(e->up);
    free(e->uses);
    free(e->rmsgs);
    free(e->rep_msg);
    free(e);
}

static void set_free(struct xds_resource_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        xds_resource_unref(s->items[i]);
    free(s->items);
    memset(s, 0, sizeof(*s));
}

static void gw_memo_free(struct xl_gw_memo *m)
{
    if (!m)
        return;
    free(m->selected);
    free(m->accepted);
    if (m->conflict_msgs)
        for (size_t i = 0; i < m->nselected; i++)
            free(m->conflict_msgs[i]);
    free(m->conflict_msgs);
    xds_resource_unref(m->rc);
    xds_resource_unref(m->listener);
    const struct xl_map_slot *s;
    for (size_t i = 0; xl_map_next(&m->api_listeners, &i, &s);) {
        free((void *)s->key);
        xds_resource_unref(s->val);
    }
    xl_map_free(&m->api_listeners);
    for (int t = 0; t < XDS_TYPE_COUNT; t++) {
        set_free(&m->sets[t]);
        free(m->seq[t]);
    }
    free(m);
}

static void free_list_map(struct xl_map *m)
{
    const struct xl_map_slot *s;
    for (size_t i = 0; xl_map_next(m, &i, &s);) {
        struct xl_entry_list *l = s->val;
        free(l->items);
        free(l);
    }
    xl_map_free(m);
}

void xlate_ctx_free(struct xlate_ctx *ctx)
{
    if (!ctx)
        return;
    const struct xl_map_slot *s;
    for (size_t i = 0; xl_map_next(&ctx->gw_memo, &i, &s);)
        gw_memo_free(s->val);
    xl_map_free(&ctx->gw_memo);
    for (int k = 0; k < XLATE_KIND_COUNT; k++) {
        for (size_t i = 0; xl_map_next(&ctx->by_key[k], &i, &s);)
            entry_free(s->val);
        xl_map_free(&ctx->by_key[k]);
        free(ctx->list[k]);
    }
    xl_map_free(&ctx->by_ptr);
    free(ctx->pending.items);
    free_list_map(&ctx->slices_by_svc);
    free_list_map(&ctx->rt_by_ns);
    xl_map_free(&ctx->changed_deps);
    xl_map_free(&ctx->dirty_services);
    free(ctx);
}

/* ---- ingest ------------------------------------------------------------------ */

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

/* Records that dependency "<c>/<a>" changed this pass. */
static int mark_dep(struct xlate_ctx *ctx, char c, const char *a)
{
    char buf[600];
    int n = snprintf(buf, sizeof(buf), "%c/%s", c, a);
    if (n < 0 || (size_t)n >= sizeof(buf))
        return 0;
    if (xl_map_get(&ctx->changed_deps, buf, (size_t)n))
        return 0;
    char *k = malloc((size_t)n + 1);
    if (!k)
        return -1;
    memcpy(k, buf, (size_t)n + 1);
    if (xl_map_put(&ctx->changed_deps, k, (size_t)n, k) != 0) {
        free(k);
        return -1;
    }
    return 0;
}

static int mark_service(struct xlate_ctx *ctx, const char *ns, const char *name)
{
    char buf[600];
    int n = snprintf(buf, sizeof(buf), "%s/%s", ns, name);
    if (n < 0 || (size_t)n >= sizeof(buf) || xl_map_get(&ctx->dirty_services, buf, (size_t)n))
        return 0;
    char *k = malloc((size_t)n + 1);
    if (!k)
        return -1;
    memcpy(k, buf, (size_t)n + 1);
    if (xl_map_put(&ctx->dirty_services, k, (size_t)n, k) != 0) {
        free(k);
        return -1;
    }
    return 0;
}

static void clear_key_map(struct xl_map *m)
{
    const struct xl_map_slot *s;
    for (size_t i = 0; xl_map_next(m, &i, &s);)
        free(s->val);
    xl_map_free(m);
}

static uint64_t labels_hash(const struct xl_meta *m)
{
    uint64_t h = CX_FNV64_INIT;
    for (size_t i = 0; i < m->nlabels; i++) {
        h = xl_fnv_str(h, m->labels[i].key);
        h = xl_fnv_str(h, m->labels[i].value);
    }
    return h;
}

/* Dependency marks for an entry that appears, changes or goes. */
static int note_change(struct xlate_ctx *ctx, struct xl_entry *e, int gone)
{
    int rc = 0;
    switch (e->kind) {
    case XLATE_KIND_ROUTE_TABLE:
        rc |= mark_dep(ctx, 'R', e->key);
        rc |= mark_dep(ctx, 'N', e->obj.meta.ns ? e->obj.meta.ns : "");
        ctx->list_dirty[XLATE_KIND_ROUTE_TABLE] = 1; /* rt_by_ns is rebuilt */
        break;
    case XLATE_KIND_SERVICE:
        rc |= mark_service(ctx, e->obj.meta.ns, e->obj.meta.name);
        break;
    case XLATE_KIND_ENDPOINT_SLICE:
        ctx->slices_dirty = 1;
        if (e->obj.u.eps.service)
            rc |= mark_service(ctx, e->obj.meta.ns, e->obj.u.eps.service);
        break;
    case XLATE_KIND_UPSTREAM:
        if (gone)
            rc |= mark_dep(ctx, 'U', e->key);
        break;
    case XLATE_KIND_VIRTUAL_SERVICE:
        if (gone)
            ctx->sel_epoch++;
        break;
    default:
        break;
    }
    return rc ? -1 : 0;
}

static int reparse(struct xlate_ctx *ctx, struct xl_entry *e, const cJSON *obj, uint64_t digest)
{
    if (e->obj_ptr)
        xl_map_del(&ctx->by_ptr, ptrkey_entry(e), PTRKEY_LEN);
    /* what the old version fed (a slice's old Service) changes too */
    if (e->changed && note_change(ctx, e, 0) != 0)
        return -1;
    uint64_t old_labels = e->label_hash;
    enum xlate_state old_state = e->parse_state;
    int had = e->changed != 0;
    xl_object_release(&e->obj);
    xl_arena_free(&e->arena);
    e->digest = digest;
    e->obj_ptr = obj;
    if (xl_api_parse(e->kind, obj, &e->arena, &e->obj) != 0) {
        memset(&e->obj, 0, sizeof(e->obj));
        e->obj.kind = e->kind;
        e->digest = 0; /* parse again next pass */
        e->obj_ptr = NULL;
        return -1;
    }
    e->parse_state = xl_errors_state(&e->obj.errors);
    e->label_hash = labels_hash(&e->obj.meta);
    e->changed = ctx->pass;
    ctx->stats.parsed++;
    if (e->kind == XLATE_KIND_VIRTUAL_SERVICE) {
        uint64_t h = xl_fnv_str(CX_FNV64_INIT, e->obj.meta.creation);
        for (size_t i = 0; i < e->obj.u.vs.ndomains; i++)
            h = xl_fnv_str(h, e->obj.u.vs.domains[i]);
        h = xl_fnv(h, &e->parse_state, sizeof(e->parse_state));
        e->claim_hash = h;
        /* labels and validity decide which Gateways select it */
        if (!had || old_labels != e->label_hash ||
            (old_state == XLATE_REJECTED) != (e->parse_state == XLATE_REJECTED))
            ctx->sel_epoch++;
    }
    if (note_change(ctx, e, 0) != 0)
        return -1;
    if (xl_map_put(&ctx->by_ptr, ptrkey_entry(e), PTRKEY_LEN, e) != 0)
        return -1;
    return 0;
}

static struct xl_entry *entry_new(struct xlate_ctx *ctx, enum xlate_kind kind, const char *key,
                                  size_t keylen)
{
    struct xl_entry *e = calloc(1, sizeof(*e) + keylen + 1);
    if (!e)
        return NULL;
    e->kind = kind;
    memcpy(e->key, key, keylen);
    e->keylen = keylen;
    if (xl_map_put(&ctx->by_key[kind], e->key, keylen, e) != 0) {
        free(e);
        return NULL;
    }
    ctx->list_dirty[kind] = 1;
    return e;
}

/* Ingest: every input object finds (or creates) its entry and offers itself
 * as the entry's candidate; when a key appears twice the smaller digest
 * wins, whatever the order. Entries whose candidate differs from what they
 * hold are re-parsed afterwards (commit_candidates). */
static int ingest_one(struct xlate_ctx *ctx, const struct xlate_object *in)
{
    const cJSON *obj = in->obj;
    enum xlate_kind kind = in->kind == XLATE_KIND_UNKNOWN ? xlate_kind_of(obj) : in->kind;
    if (kind < 0 || kind >= XLATE_KIND_COUNT || !cJSON_IsObject(obj))
        return 0; /* not ours: no entry, no report */
    uint64_t digest = in->digest ? in->digest : xlate_digest(obj);
    struct ptrkey probe = {digest, obj};
    struct xl_entry *e = xl_map_get(&ctx->by_ptr, &probe, PTRKEY_LEN);
    if (e && e->kind == kind && e->seen != ctx->pass && e->digest == digest) {
        /* the very object of last pass: nothing to do */
        e->seen = ctx->pass;
        e->duplicate = 0;
        e->cand_obj = obj;
        e->cand_digest = digest;
        return 0;
    }
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const char *ns = cx_json_str(md, "namespace");
    const char *name = cx_json_str(md, "name");
    char key[600];
    int n = snprintf(key, sizeof(key), "%s/%s", ns && *ns ? ns : "default", name ? name : "");
    if (n < 0 || (size_t)n >= sizeof(key))
        return 0; /* names this long cannot exist in Kubernetes */
    e = xl_map_get(&ctx->by_key[kind], key, (size_t)n);
    if (!e) {
        e = entry_new(ctx, kind, key, (size_t)n);
        if (!e)
            return -1;
    }
    if (e->seen == ctx->pass) {
        e->duplicate = 1;
        if (digest >= e->cand_digest)
            return 0;
    } else {
        e->seen = ctx->pass;
        e->duplicate = 0;
    }
    e->cand_obj = obj;
    e->cand_digest = digest;
    if (!e->pending) {
        e->pending = 1;
        if (xl_list_push(&ctx->pending, e) != 0)
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
        if (rc != 0)
            continue;
        if (e->changed && e->digest == e->cand_digest) {
            /* same content, another cJSON: only the fast-lookup key moves */
            if (e->obj_ptr)
                xl_map_del(&ctx->by_ptr, ptrkey_entry(e), PTRKEY_LEN);
            e->obj_ptr = e->cand_obj;
            rc = xl_map_put(&ctx->by_ptr, ptrkey_entry(e), PTRKEY_LEN, e);
        } else {
            rc = reparse(ctx, e, e->cand_obj, e->cand_digest);
        }
    }
    ctx->pending.n = 0;
    return rc;
}

static int entry_cmp(const void *a, const void *b)
{
    const struct xl_entry *x = *(struct xl_entry *const *)a;
    const struct xl_entry *y = *(struct xl_entry *const *)b;
    int c = strcmp(x->obj.meta.ns ? x->obj.meta.ns : "", y->obj.meta.ns ? y->obj.meta.ns : "");
    if (c)
        return c;
    c = strcmp(x->obj.meta.name ? x->obj.meta.name : "", y->obj.meta.name ? y->obj.meta.name : "");
    return c ? c : strcmp(x->key, y->key);
}

/* Drops entries not seen this pass and rebuilds the sorted lists. */
static int sweep(struct xlate_ctx *ctx)
{
    for (int k = 0; k < XLATE_KIND_COUNT; k++) {
        size_t w = 0;
        for (size_t i = 0; i < ctx->nlist[k]; i++) {
            struct xl_entry *e = ctx->list[k][i];
            if (e->seen == ctx->pass) {
                ctx->list[k][w++] = e;
                continue;
            }
            if (note_change(ctx, e, 1) != 0)
                return -1;
            if (k == XLATE_KIND_GATEWAY)
                gw_memo_free(xl_map_del(&ctx->gw_memo, e->key, e->keylen));
            xl_map_del(&ctx->by_key[k], e->key, e->keylen);
            if (e->obj_ptr)
                xl_map_del(&ctx->by_ptr, ptrkey_entry(e), PTRKEY_LEN);
            entry_free(e);
            ctx->list_dirty[k] = 1;
        }
        ctx->nlist[k] = w;
        if (!ctx->list_dirty[k])
            continue;
        /* new entries are only in the map: rebuild from it */
        size_t n = ctx->by_key[k].n;
        struct xl_entry **l = realloc(ctx->list[k], (n ? n : 1) * sizeof(*l));
        if (!l)
            return -1;
        ctx->list[k] = l;
        size_t j = 0;
        const struct xl_map_slot *s;
        for (size_t i = 0; xl_map_next(&ctx->by_key[k], &i, &s);)
            l[j++] = s->val;
        ctx->nlist[k] = j;
        qsort(l, j, sizeof(*l), entry_cmp);
    }
    return 0;
}

static int rebuild_index(struct xl_map *m, struct xl_entry **items, size_t n, int by_service)
{
    free_list_map(m);
    for (size_t i = 0; i < n; i++) {
        struct xl_entry *e = items[i];
        char key[600];
        const char *ns = e->obj.meta.ns;
        int len;
        if (by_service) {
            if (!e->obj.u.eps.service)
                continue;
            len = snprintf(key, sizeof(key), "%s/%s", ns, e->obj.u.eps.service);
        } else {
            len = snprintf(key, sizeof(key), "%s", ns);
        }
        if (len < 0 || (size_t)len >= sizeof(key))
            continue;
        struct xl_entry_list *l = xl_map_get(m, key, (size_t)len);
        if (!l) {
            l = calloc(1, sizeof(*l) + (size_t)len + 1);
            if (!l)
                return -1;
            char *k = (char *)(l + 1);
            memcpy(k, key, (size_t)len + 1);
            if (xl_map_put(m, k, (size_t)len, l) != 0) {
                free(l);
                return -1;
            }
        }
        if (xl_list_push(l, e) != 0)
            return -1;
    }
    return 0;
}

/* ---- gateways ----------------------------------------------------------------- */

static int ns_allowed(const struct xl_gateway *g, const char *ns)
{
    if (g->all_namespaces)
        return 1;
    for (size_t i = 0; i < g->n_vs_namespaces; i++)
        if (strcmp(g->vs_namespaces[i], ns) == 0)
            return 1;
    return 0;
}

static int deps_changed(struct xlate_ctx *ctx, const struct xl_vs_res *r)
{
    for (size_t i = 0; i < r->ndeps; i++)
        if (xl_map_gets(&ctx->changed_deps, r->deps[i]))
            return 1;
    return 0;
}

static int claim_cmp(const void *a, const void *b)
{
    const struct xl_entry *x = *(struct xl_entry *const *)a;
    const struct xl_entry *y = *(struct xl_entry *const *)b;
    /* the oldest VirtualService keeps a contested domain */
    int c = strcmp(x->obj.meta.creation, y->obj.meta.creation);
    if (c)
        return c;
    return entry_cmp(a, b);
}

static void lower(char *dst, const char *src, size_t cap)
{
    size_t i = 0;
    for (; src[i] && i + 1 < cap; i++)
        dst[i] = (src[i] >= 'A' && src[i] <= 'Z') ? (char)(src[i] - 'A' + 'a') : src[i];
    dst[i] = '\0';
}

/* Domain claims: each domain goes to the oldest VirtualService; a younger one
 * asking for a taken domain is rejected on this Gateway. */
static int compute_claims(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m,
                          enum xlate_gateway_mode mode)
{
    (void)ctx;
    int rc = -1;
    struct xl_entry **order = malloc((m->nselected ? m->nselected : 1) * sizeof(*order));
    struct xl_map owner = {0};
    struct xl_arena keys = {0};
    if (m->conflict_msgs)
        for (size_t i = 0; i < m->nselected; i++) {
            free(m->conflict_msgs[i]);
            m->conflict_msgs[i] = NULL;
        }
    free(m->conflict_msgs);
    m->conflict_msgs = calloc(m->nselected ? m->nselected : 1, sizeof(char *));
    free(m->accepted);
    m->accepted = malloc((m->nselected ? m->nselected : 1) * sizeof(*m->accepted));
    m->naccepted = 0;
    if (!order || !m->conflict_msgs || !m->accepted)
        goto out;
    size_t n = 0;
    for (size_t i = 0; i < m->nselected; i++) {
        struct xl_entry *v = m->selected[i];
        v->mark = 0;
        if (v->res[mode].nroutes)
            order[n++] = v;
    }
    qsort(order, n, sizeof(*order), claim_cmp);
    for (size_t i = 0; i < n; i++) {
        struct xl_entry *v = order[i];
        const struct xl_virtual_service *vs = &v->obj.u.vs;
        char d[300];
        struct xl_entry *other = NULL;
        const char *dom = NULL;
        for (size_t k = 0; k < vs->ndomains && !other; k++) {
            lower(d, vs->domains[k], sizeof(d));
            other = xl_map_gets(&owner, d);
            dom = vs->domains[k];
        }
        if (other) {
            char buf[900];
            snprintf(buf, sizeof(buf),
                     "domain \"%s\" is already served by VirtualService %s on Gateway %s (the "
                     "oldest VirtualService keeps a domain)",
                     dom, other->key, gwe->key);
            v->mark = 1; /* conflict */
            /* find its index among selected to store the message */
            for (size_t s = 0; s < m->nselected; s++)
                if (m->selected[s] == v) {
                    m->conflict_msgs[s] = strdup(buf);
                    if (!m->conflict_msgs[s])
                        goto out;
                }
            continue;
        }
        for (size_t k = 0; k < vs->ndomains; k++) {
            lower(d, vs->domains[k], sizeof(d));
            char *kd = xl_strdup(&keys, d);
            if (!kd || xl_map_put(&owner, kd, strlen(kd), v) != 0)
                goto out;
        }
        v->mark = 2; /* accepted */
    }
    for (size_t i = 0; i < m->nselected; i++)
        if (m->selected[i]->mark == 2)
            m->accepted[m->naccepted++] = m->selected[i];
    rc = 0;
out:
    free(order);
    xl_map_free(&owner);
    xl_arena_free(&keys);
    return rc;
}

/* Replaces memo set |set| with the resources of |seq| unless |seq| is the
 * same sequence as last time (*memo_seq): then the sealed set, its order and
 * its version stay. The set holds the references. */
static int update_set(struct xds_resource_set *set, struct xds_resource ***memo_seq, size_t *memo_n,
                      struct xds_resource **seq, size_t n)
{
    if (*memo_seq && *memo_n == n && (n == 0 || memcmp(*memo_seq, seq, n * sizeof(*seq)) == 0))
        return 0;
    struct xds_resource_set ns = {0};
    struct xds_resource **copy = malloc((n ? n : 1) * sizeof(*copy));
    ns.items = malloc((n ? n : 1) * sizeof(*ns.items));
    if (!ns.items || !copy) {
        free(ns.items);
        free(copy);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        ns.items[i] = xds_resource_ref(seq[i]);
    ns.n = n;
    if (n)
        memcpy(copy, seq, n * sizeof(*seq));
    if (xds_resource_set_seal(&ns) != 0) {
        set_free(&ns);
        free(copy);
        return -1;
    }
    set_free(set);
    *set = ns;
    free(*memo_seq);
    *memo_seq = copy;
    *memo_n = n;
    return 0;
}

#define UPDATE_SET(m, t, sq, n) update_set(&(m)->sets[t], &(m)->seq[t], &(m)->nseq[t], (sq), (n))

static void stat_prefix(char *out, size_t cap, const char *key)
{
    size_t i = 0;
    for (; key[i] && i + 1 < cap; i++)
        out[i] = key[i] == '/' ? '_' : key[i];
    out[i] = '\0';
}

static int build_gateway(struct xlate_ctx *ctx, struct xl_entry *gwe)
{
    const struct xl_gateway *g = &gwe->obj.u.gw;
    enum xlate_gateway_mode mode = g->mode;
    struct xl_gw_memo *m = xl_map_get(&ctx->gw_memo, gwe->key, gwe->keylen);
    if (!m) {
        m = calloc(1, sizeof(*m));
        if (!m || xl_map_put(&ctx->gw_memo, gwe->key, gwe->keylen, m) != 0) {
            free(m);
            return -1;
        }
        m->sel_epoch = ctx->sel_epoch - 1;
    }
    int gw_changed = m->gw_digest != gwe->digest;
    int reselect = gw_changed || m->sel_epoch != ctx->sel_epoch;
    if (reselect) {
        if (m->conflict_msgs)
            for (size_t i = 0; i < m->nselected; i++)
                free(m->conflict_msgs[i]);
        free(m->conflict_msgs);
        m->conflict_msgs = NULL;
        free(m->selected);
        m->selected = malloc((ctx->nlist[XLATE_KIND_VIRTUAL_SERVICE] + 1) * sizeof(*m->selected));
        m->nselected = 0;
        if (!m->selected)
            return -1;
        for (size_t i = 0; i < ctx->nlist[XLATE_KIND_VIRTUAL_SERVICE]; i++) {
            struct xl_entry *v = ctx->list[XLATE_KIND_VIRTUAL_SERVICE][i];
            if (v->parse_state == XLATE_REJECTED || !ns_allowed(g, v->obj.meta.ns) ||
                !xl_selector_matches(g->vs_selector, v))
                continue;
            m->selected[m->nselected++] = v;
        }
        m->sel_epoch = ctx->sel_epoch;
        m->claim_hash = 0;
    }
    /* every selected VirtualService resolved for this mode */
    uint64_t claims = xl_fnv(CX_FNV64_INIT, &gwe->digest, sizeof(gwe->digest));
    for (size_t i = 0; i < m->nselected; i++) {
        struct xl_entry *v = m->selected[i];
        struct xl_vs_res *r = &v->res[mode];
        if (!r->valid) {
            if (xl_resolve_vs(ctx, v, mode) != 0)
                return -1;
        } else {
            ctx->stats.vhosts_reused++;
        }
        xl_touch(ctx, v);
        v->used_modes |= 1 << mode;
        int served = r->nroutes > 0;
        claims = xl_fnv(claims, &v->claim_hash, sizeof(v->claim_hash));
        claims = xl_fnv(claims, &served, sizeof(served));
        claims = xl_fnv(claims, &v, sizeof(v));
    }
    claims = claims ? claims : 1;
    int reclaimed = 0;
    if (claims != m->claim_hash || !m->conflict_msgs) {
        if (compute_claims(ctx, gwe, m, mode) != 0)
            return -1;
        m->claim_hash = claims;
        reclaimed = 1;
    }
    for (size_t i = 0; i < m->nselected; i++) {
        struct xl_entry *v = m->selected[i];
        if (v->nuses == v->capuses) {
            size_t cap = v->capuses ? v->capuses * 2 : 2;
            struct xl_use *u = realloc(v->uses, cap * sizeof(*u));
            if (!u)
                return -1;
            v->uses = u;
            v->capuses = cap;
        }
        v->uses[v->nuses++] = (struct xl_use){.gw = gwe, .conflict = m->conflict_msgs[i]};
    }

    /* RDS: one RouteConfiguration, the accepted virtual hosts in key order */
    uint8_t hbuf[CX_SHA256_LEN];
    {
        struct cx_buf b;
        cx_buf_init(&b, 0);
        int rc = cx_buf_puts(&b, gwe->key);
        rc |= cx_buf_append(&b, "\n", 1);
        for (size_t i = 0; i < m->naccepted && rc == 0; i++)
            rc |= cx_buf_append(&b, m->accepted[i]->res[mode].vh_hash, 16);
        if (rc != 0) {
            cx_buf_free(&b);
            return -1;
        }
        cx_sha256(b.data, b.len, hbuf);
        cx_buf_free(&b);
    }
    if (!m->rc || memcmp(hbuf, m->rc_hash, sizeof(m->rc_hash)) != 0) {
        struct xl_bytes *vh = malloc((m->naccepted ? m->naccepted : 1) * sizeof(*vh));
        if (!vh)
            return -1;
        for (size_t i = 0; i < m->naccepted; i++)
            vh[i] =
                (struct xl_bytes){m->accepted[i]->res[mode].vh, m->accepted[i]->res[mode].vhlen};
        uint8_t *bytes = NULL;
        size_t len = 0;
        int rc = xl_encode_route_config(gwe->key, vh, m->naccepted, &bytes, &len);
        free(vh);
        if (rc != 0)
            return -1;
        static const char hex[] = "0123456789abcdef";
        char ver[XDS_VERSION_LEN + 1];
        for (int i = 0; i < XDS_VERSION_LEN; i++)
            ver[i] = hex[(hbuf[i / 2] >> (i % 2 ? 0 : 4)) & 0xf];
        ver[XDS_VERSION_LEN] = '\0';
        struct xds_resource *r = xds_resource_new_versioned(XDS_ROUTE, gwe->key, bytes, len, ver);
        if (!r)
            return -1;
        xds_resource_unref(m->rc);
        m->rc = r;
        memcpy(m->rc_hash, hbuf, sizeof(m->rc_hash));
        ctx->stats.resources_built++;
    } else {
        ctx->stats.resources_reused++;
    }
    m->nvhosts = m->naccepted;
    struct xds_resource *rcs[1] = {m->rc};
    if (UPDATE_SET(m, XDS_ROUTE, rcs, 1) != 0)
        return -1;

    /* LDS */
    char sp[300];
    stat_prefix(sp, sizeof(sp), gwe->key);
    if (mode == XLATE_MODE_ENVOY) {
        if (!m->listener || gw_changed) {
            uint8_t *bytes = NULL;
            size_t len = 0;
            if (xl_encode_listener_envoy(gwe->key, g->bind_address, g->bind_port, gwe->key, sp,
                                         &bytes, &len) != 0)
                return -1;
            struct xds_resource *r = xds_resource_new(XDS_LISTENER, gwe->key, bytes, len);
            if (!r)
                return -1;
            xds_resource_unref(m->listener);
            m->listener = r;
            ctx->stats.resources_built++;
        }
        struct xds_resource *ls[1] = {m->listener};
        if (UPDATE_SET(m, XDS_LISTENER, ls, 1) != 0)
            return -1;
    } else if (reclaimed || gw_changed || !m->seq[XDS_LISTENER]) {
        /* one API Listener per exact domain of an accepted VirtualService */
        size_t cap = 0, n = 0;
        for (size_t i = 0; i < m->naccepted; i++)
            cap += m->accepted[i]->obj.u.vs.ndomains;
        struct xds_resource **seq = malloc((cap ? cap : 1) * sizeof(*seq));
        struct xl_map fresh = {0};
        if (!seq)
            return -1;
        int rc = 0;
        for (size_t i = 0; i < m->naccepted && rc == 0; i++) {
            const struct xl_virtual_service *vs = &m->accepted[i]->obj.u.vs;
            for (size_t k = 0; k < vs->ndomains && rc == 0; k++) {
                const char *d = vs->domains[k];
                if (strchr(d, '*'))
                    continue;
                struct xds_resource *r = gw_changed ? NULL : xl_map_gets(&m->api_listeners, d);
                if (r) {
                    xl_map_del(&m->api_listeners, d, strlen(d));
                } else {
                    uint8_t *bytes = NULL;
                    size_t len = 0;
                    if (xl_encode_listener_api(d, gwe->key, sp, &bytes, &len) != 0 ||
                        !(r = xds_resource_new(XDS_LISTENER, d, bytes, len))) {
                        rc = -1;
                        break;
                    }
                    ctx->stats.resources_built++;
                }
                char *kd = strdup(d);
                if (!kd || xl_map_put(&fresh, kd, strlen(kd), r) != 0) {
                    free(kd);
                    xds_resource_unref(r);
                    rc = -1;
                    break;
                }
                seq[n++] = r;
            }
        }
        /* listeners of domains no longer served go */
        const struct xl_map_slot *s;
        for (size_t i = 0; xl_map_next(&m->api_listeners, &i, &s);) {
            free((void *)s->key);
            xds_resource_unref(s->val);
        }
        xl_map_free(&m->api_listeners);
        m->api_listeners = fresh;
        if (rc == 0)
            rc = UPDATE_SET(m, XDS_LISTENER, seq, n);
        free(seq);
        if (rc != 0)
            return -1;
    }

    /* CDS and EDS: every Upstream a served route sends to */
    size_t cap = 0, n = 0;
    for (size_t i = 0; i < m->naccepted; i++)
        cap += m->accepted[i]->res[mode].nups;
    struct xds_resource **cds = malloc((cap ? cap : 1) * sizeof(*cds));
    struct xds_resource **eds = malloc((cap ? cap : 1) * sizeof(*eds));
    int rc = (cds && eds) ? 0 : -1;
    uint32_t stamp = ++ctx->res_serial;
    for (size_t i = 0; i < m->naccepted && rc == 0; i++) {
        const struct xl_vs_res *r = &m->accepted[i]->res[mode];
        for (size_t k = 0; k < r->nups && rc == 0; k++) {
            struct xl_entry *up = r->ups[k];
            if (up->mark == stamp)
                continue;
            up->mark = stamp;
            xl_touch(ctx, up);
            up->used_modes |= 1 << mode;
            if (xl_upstream_cluster(ctx, up, mode) != 0) {
                rc = -1;
                break;
            }
            cds[n] = up->up->cluster[mode];
            eds[n] = up->up->cla;
            n++;
        }
    }
    if (rc == 0)
        rc = UPDATE_SET(m, XDS_CLUSTER, cds, n);
    if (rc == 0)
        rc = UPDATE_SET(m, XDS_ENDPOINT, eds, n);
    free(cds);
    free(eds);
    m->nclusters = n;
    m->gw_digest = gwe->digest;
    return rc;
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
    for (size_t i = 0; i < src->n; i++)
        dst->items[i] = xds_resource_ref(src->items[i]);
    return 0;
}

static int run(struct xlate_ctx *ctx, const struct xlate_input *in, struct xlate_snapshot **out)
{
    for (size_t i = 0; i < in->n; i++)
        if (ingest_one(ctx, &in->objects[i]) != 0)
            return -1;
    if (commit_candidates(ctx) != 0)
        return -1;
    if (sweep(ctx) != 0)
        return -1;
    if (ctx->slices_dirty) {
        if (rebuild_index(&ctx->slices_by_svc, ctx->list[XLATE_KIND_ENDPOINT_SLICE],
                          ctx->nlist[XLATE_KIND_ENDPOINT_SLICE], 1) != 0)
            return -1;
        ctx->slices_dirty = 0;
    }
    if (ctx->list_dirty[XLATE_KIND_ROUTE_TABLE]) {
        if (rebuild_index(&ctx->rt_by_ns, ctx->list[XLATE_KIND_ROUTE_TABLE],
                          ctx->nlist[XLATE_KIND_ROUTE_TABLE], 0) != 0)
            return -1;
    }
    memset(ctx->list_dirty, 0, sizeof(ctx->list_dirty));

    /* Upstreams: endpoint refresh, and whether their existence or validity
     * (what routes depend on) changed */
    int any_dirty_svc = ctx->dirty_services.n > 0;
    for (size_t i = 0; i < ctx->nlist[XLATE_KIND_UPSTREAM]; i++) {
        struct xl_entry *e = ctx->list[XLATE_KIND_UPSTREAM][i];
        int valid = e->parse_state != XLATE_REJECTED;
        int dirty = e->changed == ctx->pass;
        if (!dirty && any_dirty_svc && e->obj.u.up.is_kube) {
            char key[600];
            int n =
                snprintf(key, sizeof(key), "%s/%s", e->obj.u.up.kube_ns, e->obj.u.up.kube_service);
            dirty = n > 0 && (size_t)n < sizeof(key) &&
                    xl_map_get(&ctx->dirty_services, key, (size_t)n) != NULL;
        }
        if (xl_upstream_refresh(ctx, e, dirty) != 0)
            return -1;
        if (!e->up->exists_last || e->up->valid_last != valid) {
            if (mark_dep(ctx, 'U', e->key) != 0)
                return -1;
            e->up->exists_last = 1;
            e->up->valid_last = valid;
        }
    }

    /* VirtualService resolutions that are out of date */
    int any_deps = ctx->changed_deps.n > 0;
    for (size_t i = 0; i < ctx->nlist[XLATE_KIND_VIRTUAL_SERVICE]; i++) {
        struct xl_entry *e = ctx->list[XLATE_KIND_VIRTUAL_SERVICE][i];
        for (int mo = 0; mo < XL_MODES; mo++) {
            struct xl_vs_res *r = &e->res[mo];
            if (r->valid && (e->changed == ctx->pass || (any_deps && deps_changed(ctx, r))))
                xl_res_clear(r);
        }
    }

    /* Gateways */
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
        if (gwe->parse_state == XLATE_REJECTED) {
            gw_memo_free(xl_map_del(&ctx->gw_memo, gwe->key, gwe->keylen));
            continue;
        }
        xl_touch(ctx, gwe);
        if (build_gateway(ctx, gwe) != 0)
            goto fail;
        struct xl_gw_memo *m = xl_map_get(&ctx->gw_memo, gwe->key, gwe->keylen);
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
    if (xl_reports_build(ctx, snap) != 0)
        goto fail;
    *out = snap;
    return 0;
fail:
    xlate_snapshot_unref(snap);
    return -1;
}

int xlate_run(struct xlate_ctx *ctx, const struct xlate_input *in, struct xlate_snapshot **out,
              struct xlate_stats *stats)
{
    *out = NULL;
    ctx->pass++;
    memset(&ctx->stats, 0, sizeof(ctx->stats));
    ctx->stats.objects = in->n;
    int rc = run(ctx, in, out);
    clear_key_map(&ctx->changed_deps);
    clear_key_map(&ctx->dirty_services);
    if (rc != 0) {
        /* Forget resolutions and gateway memos: the next pass rebuilds them
         * from consistent state (parsed objects are kept). */
        for (size_t i = 0; i < ctx->nlist[XLATE_KIND_VIRTUAL_SERVICE]; i++)
            for (int m = 0; m < XL_MODES; m++)
                xl_res_clear(&ctx->list[XLATE_KIND_VIRTUAL_SERVICE][i]->res[m]);
        const struct xl_map_slot *s;
        for (size_t i = 0; xl_map_next(&ctx->gw_memo, &i, &s);)
            gw_memo_free(s->val);
        xl_map_free(&ctx->gw_memo);
        ctx->sel_epoch++;
    }
    if (stats)
        *stats = ctx->stats;
    return rc;
}
