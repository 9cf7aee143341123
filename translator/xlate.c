/*
 * The translator context and one pass (see xlate_internal.h for the memo
 * rules): the context's lifetime, then a pass in order: ingest
 * (xlate_ingest.c), Gateways (xlate_gateway.c), the snapshot and the
 * reports (xlate_report.c).
 */
#include "xlate_internal.h"

#include "cx_hash.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- context ----------------------------------------------------------------- */

struct xlate_ctx *xlate_ctx_new(void)
{
    return xlate_ctx_new_limits(NULL);
}

struct xlate_ctx *xlate_ctx_new_limits(const struct xlate_limits *lim)
{
    struct xlate_ctx *ctx = calloc(1, sizeof(struct xlate_ctx));
    if (!ctx)
        return NULL;
    xlate_limits_default(&ctx->limits);
    if (lim) {
        /* a field left 0 (or negative) keeps its default */
        struct xlate_limits *l = &ctx->limits;
        l->routes_per_vs = lim->routes_per_vs > 0 ? lim->routes_per_vs : l->routes_per_vs;
        l->delegations_per_vs =
            lim->delegations_per_vs > 0 ? lim->delegations_per_vs : l->delegations_per_vs;
        l->routes_per_gateway =
            lim->routes_per_gateway > 0 ? lim->routes_per_gateway : l->routes_per_gateway;
        l->resources_per_gateway =
            lim->resources_per_gateway > 0 ? lim->resources_per_gateway : l->resources_per_gateway;
        l->resource_bytes = lim->resource_bytes > 0 ? lim->resource_bytes : l->resource_bytes;
        l->regex_program_size =
            lim->regex_program_size > 0 ? lim->regex_program_size : l->regex_program_size;
    }
    if (!(ctx->sha = cx_sha256_ctx_new())) {
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

static void free_list_map(struct cx_map *m)
{
    const struct cx_map_slot *s;
    for (size_t i = 0; cx_map_next(m, &i, &s);)
        xlate_index_list_free(s->val);
    cx_map_free(m);
}

static void free_deps(struct cx_map *m)
{
    const struct cx_map_slot *s;
    for (size_t i = 0; cx_map_next(m, &i, &s);)
        xlate_dep_list_free(s->val);
    cx_map_free(m);
}

/* Everything but the pass scratch lists. */
static void ctx_clear(struct xlate_ctx *ctx)
{
    const struct cx_map_slot *s;
    for (size_t i = 0; cx_map_next(&ctx->gw_memo, &i, &s);)
        xlate_gw_memo_free(s->val);
    cx_map_free(&ctx->gw_memo);
    for (int k = 0; k < XLATE_KIND_COUNT; k++) {
        for (size_t i = 0; cx_map_next(&ctx->by_key[k], &i, &s);)
            xlate_entry_free(ctx, s->val);
        cx_map_free(&ctx->by_key[k]);
        free(ctx->list[k]);
        ctx->list[k] = NULL;
        ctx->nlist[k] = ctx->caplist[k] = 0;
    }
    for (size_t i = 0; i < ctx->graveyard.n; i++)
        xlate_entry_free(ctx, ctx->graveyard.items[i]);
    ctx->graveyard.n = 0;
    cx_map_free(&ctx->by_ptr);
    free_list_map(&ctx->slices_by_svc);
    free_list_map(&ctx->svc_ups);
    free_list_map(&ctx->rt_by_ns);
    free_list_map(&ctx->ref_ups);
    free_deps(&ctx->deps);
    xlate_report_block_unref(ctx->reports);
    ctx->reports = NULL;
}

void xlate_trim(void)
{
    xlate_big_trim();
}

void xlate_ctx_free(struct xlate_ctx *ctx)
{
    if (!ctx)
        return;
    ctx_clear(ctx);
    xlate_pool_free(&ctx->entries); /* every entry went back in ctx_clear */
    free(ctx->pending.items);
    for (int k = 0; k < XLATE_KIND_COUNT; k++)
        free(ctx->changed[k].items);
    free(ctx->graveyard.items);
    free(ctx->vs_touched.items);
    free(ctx->up_touched.items);
    free(ctx->rep_list.items);
    xlate_map_free_vals(&ctx->changed_deps);
    xlate_map_free_vals(&ctx->dirty_services);
    xlate_map_free_vals(&ctx->dirty_refs);
    cx_sha256_ctx_free(ctx->sha);
    free(ctx->rroutes);
    xlate_arena_free(&ctx->rscratch);
    free(ctx);
}

/* ---- the pass ------------------------------------------------------------------- */

/* A Gateway's spec.xdsAccess, copied into one block owned by the
 * snapshot's group. */
static int xlate_access_copy(struct xlate_access *dst, const struct xl_gateway_access *src)
{
    dst->unauthenticated = (uint8_t)(src->unauthenticated != 0);
    dst->n = 0;
    dst->sas = NULL;
    if (src->n == 0)
        return 0;
    size_t bytes = src->n * sizeof(*dst->sas);
    for (size_t i = 0; i < src->n; i++)
        bytes += strlen(src->sas[i].ns) + strlen(src->sas[i].name) + 2;
    char *blk = malloc(bytes);
    if (!blk)
        return -1;
    dst->sas = (struct xlate_sa_ref *)blk;
    char *str = blk + src->n * sizeof(*dst->sas);
    for (size_t i = 0; i < src->n; i++) {
        size_t a = strlen(src->sas[i].ns) + 1, b = strlen(src->sas[i].name) + 1;
        dst->sas[i].ns = memcpy(str, src->sas[i].ns, a);
        dst->sas[i].name = memcpy(str + a, src->sas[i].name, b);
        str += a + b;
    }
    dst->n = src->n;
    return 0;
}

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
    if (xlate_settle(ctx) != 0)
        return -1;
    /* VirtualServices deleted this pass leave every Gateway */
    const struct xl_entry_list *vs = &ctx->changed[XLATE_KIND_VIRTUAL_SERVICE];
    for (size_t i = 0; ctx->ndeleted[XLATE_KIND_VIRTUAL_SERVICE] && i < vs->n; i++)
        if (vs->items[i]->deleted && xlate_invalidate_vs(ctx, vs->items[i], -1) != 0)
            return -1;
    const struct xl_entry_list *gw = &ctx->changed[XLATE_KIND_GATEWAY];
    for (size_t i = 0; i < gw->n; i++) {
        struct xl_entry *e = gw->items[i];
        if (e->deleted &&
            xlate_gw_memo_drop(ctx, cx_map_del(&ctx->gw_memo, e->key, e->keylen)) != 0)
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
            if (xlate_gw_memo_drop(ctx, cx_map_del(&ctx->gw_memo, gwe->key, gwe->keylen)) != 0)
                goto fail;
            continue;
        }
        if (xlate_build_gateway(ctx, gwe) != 0)
            goto fail;
        struct xl_gw_memo *m = cx_map_get(&ctx->gw_memo, gwe->key, gwe->keylen);
        struct xlate_group *grp = &snap->groups[snap->ngroups++];
        grp->name = strdup(gwe->key);
        grp->mode = gwe->obj->u.gw.mode;
        if (!grp->name || xlate_access_copy(&grp->access, &gwe->obj->u.gw.access) != 0)
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
        xlate_entry_free(ctx, ctx->graveyard.items[i]);
    xlate_list_clear(&ctx->graveyard);
    xlate_list_clear(&ctx->pending);
    for (int k = 0; k < XLATE_KIND_COUNT; k++) {
        xlate_list_clear(&ctx->changed[k]);
        ctx->ndeleted[k] = 0;
    }
    xlate_list_clear(&ctx->vs_touched);
    xlate_list_clear(&ctx->up_touched);
    xlate_list_clear(&ctx->rep_list);
    ctx->reports_changed = 0;
    xlate_map_free_vals(&ctx->changed_deps);
    xlate_map_free_vals(&ctx->dirty_services);
    xlate_map_free_vals(&ctx->dirty_refs);
}

static int begin(struct xlate_ctx *ctx, struct xlate_snapshot **out)
{
    *out = NULL;
    ctx->pass++;
    ctx->fresh = 1;
    for (int k = 0; k < XLATE_KIND_COUNT; k++)
        ctx->fresh &= cx_map_len(&ctx->by_key[k]) == 0;
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

#define RESERVE_AHEAD 16 /* records whose headers reserve() asks for ahead */

/* A full view tells how many entries of each kind the maps will hold: room
 * for them now spares the maps' repeated doubling (each a rehash of every
 * slot) while tens of thousands of entries arrive. Inputs whose kind is not
 * given count for every kind. */
static int reserve(struct xlate_ctx *ctx, const struct xlate_input *in)
{
    size_t n[XLATE_KIND_COUNT] = {0}, unknown = 0, trees = 0;
    for (size_t i = 0; i < in->n; i++) {
        /* the records' headers are scattered: asked for well ahead, their
         * misses overlap instead of coming one after another */
        if (i + RESERVE_AHEAD < in->n && in->objects[i + RESERVE_AHEAD].rec)
            __builtin_prefetch(in->objects[i + RESERVE_AHEAD].rec);
        trees += !in->objects[i].rec; /* records are not in by_ptr */
        int k = in->objects[i].rec ? (int)in->objects[i].rec->kind : (int)in->objects[i].kind;
        if (k > XLATE_KIND_UNKNOWN && k < XLATE_KIND_COUNT)
            n[k]++;
        else
            unknown++;
    }
    int rc = trees ? cx_map_reserve(&ctx->by_ptr, trees) : 0;
    for (int k = 0; k < XLATE_KIND_COUNT; k++)
        rc |= cx_map_reserve(&ctx->by_key[k], n[k] + unknown);
    rc |= cx_map_reserve(&ctx->slices_by_svc, n[XLATE_KIND_ENDPOINT_SLICE] + unknown);
    rc |= cx_map_reserve(&ctx->svc_ups, n[XLATE_KIND_UPSTREAM] + unknown);
    /* VirtualServices' dependencies: mostly one key per Upstream they name */
    rc |= cx_map_reserve(&ctx->deps, n[XLATE_KIND_UPSTREAM] + unknown);
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
    XL_PREFETCH_KEEP();
}

/* The next object's slot in its kind's key map, asked for while this one
 * is parsed (its metadata was asked for by prefetch_top): a new key's
 * lookup is otherwise a miss of its own. */
static void prefetch_key(const struct xlate_ctx *ctx, const struct xlate_object *o)
{
    if (o->rec) {
        cx_map_prefetch(&ctx->by_key[o->rec->kind], o->rec->key, o->rec->keylen);
        return;
    }
    if (o->kind <= XLATE_KIND_UNKNOWN || o->kind >= XLATE_KIND_COUNT || !cJSON_IsObject(o->obj))
        return;
    char key[600];
    size_t n = xlate_object_key(o->obj, key, sizeof(key));
    if (n)
        cx_map_prefetch(&ctx->by_key[o->kind], key, n);
}

/* The "namespace/service" an EndpointSlice or kube Upstream record is
 * indexed under (xlate_ingest.c, index_entry), and the index; NULL if
 * none. */
static const char *index_key(const struct xlate_ctx *ctx, const struct xlate_record *r,
                             const struct cx_map **m)
{
    if (r->kind == XLATE_KIND_ENDPOINT_SLICE) {
        *m = &ctx->slices_by_svc;
        return r->obj.u.eps.svc_key;
    }
    if (r->kind == XLATE_KIND_UPSTREAM && r->obj.u.up.is_kube) {
        *m = &ctx->svc_ups;
        return r->obj.u.up.kube_key;
    }
    return NULL;
}

/* Ingest of records, at object |i|: asks 8 objects ahead for the record's
 * header, typed object and key (five lines), 4 ahead for its index key
 * (found in the typed object), 2 ahead for that key's slot in the index,
 * and 1 ahead for its own key's slot (prefetch_key). */
static void prefetch_records(const struct xlate_ctx *ctx, const struct xlate_input *in, size_t i)
{
    const struct xlate_record *r;
    const struct cx_map *m;
    const char *k;
    if (i + 8 < in->n && (r = in->objects[i + 8].rec)) {
        for (size_t off = 0; off < sizeof(*r); off += 64)
            __builtin_prefetch((const char *)r + off);
        __builtin_prefetch(r->key);
    }
    if (i + 4 < in->n && (r = in->objects[i + 4].rec) && (k = index_key(ctx, r, &m)))
        __builtin_prefetch(k);
    if (i + 2 < in->n && (r = in->objects[i + 2].rec) && (k = index_key(ctx, r, &m)))
        cx_map_prefetch(m, k, strlen(k));
    if (i + 1 < in->n)
        prefetch_key(ctx, &in->objects[i + 1]);
    XL_PREFETCH_KEEP();
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
        const struct xlate_object *o = &in->objects[i];
        if (o->rec) {
            if (!known)
                prefetch_records(ctx, in, i);
        } else {
            for (size_t d = 1; d <= PREFETCH_AHEAD && i + d < in->n && !known; d++)
                prefetch_top(in->objects[i + d].obj, PREFETCH_AHEAD - d);
            if (i + 1 < in->n && !known)
                prefetch_key(ctx, &in->objects[i + 1]);
        }
        int r = xlate_ingest_one(ctx, o->kind, o->obj, o->rec, o->digest, 0);
        known = r > 0;
        rc = r < 0 ? -1 : 0;
    }
    if (rc == 0)
        rc = xlate_sweep(ctx);
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
        if (c->obj || c->rec) {
            rc = xlate_ingest_one(ctx, c->kind, c->obj, c->rec, c->digest, 1) < 0 ? -1 : 0;
            continue;
        }
        if (c->kind < 0 || c->kind >= XLATE_KIND_COUNT || !c->name)
            continue;
        struct xl_entry *e = xlate_find(
            ctx, c->kind, c->namespace && *c->namespace ? c->namespace : "default", c->name);
        if (e)
            rc = xlate_delete_entry(ctx, e);
    }
    /* deleted then re-added in one batch: the deletion took the entry out
     * of the key map, so the re-add made a fresh one; the other order is
     * handled in commit_candidates */
    if (rc == 0)
        rc = pass(ctx, out);
    return finish(ctx, rc, stats);
}
