/*
 * Ingest, the first half of a pass (see xlate_internal.h): every input
 * object finds or creates its entry and is re-parsed when its digest
 * changed; deletions; the indexes (slices by Service, Upstreams by Service
 * and by Secret/ConfigMap, RouteTables by namespace) and the dependency
 * marks that say what changed; then Upstreams are refreshed and the
 * VirtualServices that read something that changed lose their resolution.
 * What is left for the Gateways (xlate_gateway.c): the touched lists.
 */
#include "xlate_internal.h"

#include "cx_json.h"
#include "xlate_tls.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the kind's extra memory starts in an entry's block: after the
 * entry and its key twice, aligned for the structures put there. */
static size_t entry_extra_at(size_t keylen)
{
    size_t at = sizeof(struct xl_entry) + 2 * (keylen + 1);
    return (at + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1);
}

static void *entry_extra(struct xl_entry *e, size_t keylen)
{
    return (char *)e + entry_extra_at(keylen);
}

/* An entry's block: the entry, its key twice, then a VirtualService's
 * resolutions or an Upstream's memo. */
static size_t entry_size(enum xlate_kind kind, size_t keylen)
{
    size_t extra = kind == XLATE_KIND_VIRTUAL_SERVICE ? XL_MODES * sizeof(struct xl_vs_res)
                   : kind == XLATE_KIND_UPSTREAM      ? sizeof(struct xl_up_memo)
                                                      : 0;
    return entry_extra_at(keylen) + extra;
}

/* Tens of thousands of entries arrive in a full view: from the context's
 * pool (a long key: malloc). */
static void entry_block_free(struct xlate_ctx *ctx, struct xl_entry *e)
{
    size_t n = entry_size(e->kind, e->keylen);
    if (n <= XL_POOL_MAX)
        xlate_pool_put(&ctx->entries, e, n);
    else
        free(e);
}

void xlate_entry_free(struct xlate_ctx *ctx, struct xl_entry *e)
{
    if (!e)
        return;
    xlate_record_unref(e->rec);
    e->rec = NULL;
    for (int m = 0; e->res && m < XL_MODES; m++)
        xlate_res_clear(&e->res[m]);
    xlate_up_memo_clear(e->up); /* e->res and e->up live in the entry's block */
    xlate_gw_tls_free(e->gtls);
    free(e->contrib.items);
    free(e->rep_msg);
    entry_block_free(ctx, e);
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
 * very one of the previous pass is known without reading it. Only cJSON
 * inputs are in it: a record carries its key, and the by_key lookup that
 * finds its entry tells as much (one map less: 24-48 bytes an object). */
static void ptr_del(struct xlate_ctx *ctx, struct xl_entry *e)
{
    if (e->in_by_ptr)
        cx_map_del(&ctx->by_ptr, ptrkey_entry(e), PTRKEY_LEN);
    e->in_by_ptr = 0;
}

static int ptr_put(struct xlate_ctx *ctx, struct xl_entry *e, int is_record)
{
    if (!e->obj_ptr || is_record)
        return 0;
    if (cx_map_put(&ctx->by_ptr, ptrkey_entry(e), PTRKEY_LEN, e, NULL) != 0)
        return -1;
    e->in_by_ptr = 1;
    return 0;
}

static int mark_key(struct cx_map *m, const char *key)
{
    size_t n = strlen(key);
    if (cx_map_get(m, key, n))
        return 0;
    char *k = malloc(n + 1);
    if (!k)
        return -1;
    memcpy(k, key, n + 1);
    if (cx_map_put(m, k, n, k, NULL) != 0) {
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
    if (join_key(buf, sizeof(buf), pre, a) != 0 || !cx_map_gets(&ctx->deps, buf))
        return 0;
    return mark_key(&ctx->changed_deps, buf);
}

/* Records that Service ns/name's endpoints changed this pass, when an
 * Upstream not parsed this pass reads them: upstreams() refreshes the
 * parsed ones anyway (and those parsed later in the pass, not yet in the
 * index). On a pass that began with no entries, nothing to record (and no
 * lookup: at 100k Services it is a cache miss each). */
static int mark_service(struct xlate_ctx *ctx, const char *ns, const char *name)
{
    char buf[600];
    if (ctx->fresh || join_key(buf, sizeof(buf), ns, name) != 0)
        return 0;
    const struct xl_entry_list *l = cx_map_gets(&ctx->svc_ups, buf);
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

/* ---- indexes -------------------------------------------------------------------- */

void xlate_index_list_free(struct xl_entry_list *l)
{
    if (!l)
        return;
    if (l->items != &((struct xl_index_list *)l)->one)
        free(l->items);
    free(l);
}

static int index_add(struct cx_map *m, const char *key, struct xl_entry *e)
{
    size_t n = strlen(key);
    struct xl_index_list *il = cx_map_get(m, key, n);
    if (!il) {
        /* one allocation for a list of one */
        if (!(il = malloc(sizeof(*il) + n + 1)))
            return -1;
        memcpy(il->key, key, n + 1);
        il->one = e;
        il->l = (struct xl_entry_list){&il->one, 1, 1};
        if (cx_map_put(m, il->key, n, il, NULL) != 0) {
            free(il);
            return -1;
        }
        return 0;
    }
    struct xl_entry_list *l = &il->l;
    if (l->items == &il->one && l->n == l->cap) {
        struct xl_entry **items = malloc(4 * sizeof(*items));
        if (!items)
            return -1;
        memcpy(items, l->items, l->n * sizeof(*items));
        l->items = items;
        l->cap = 4;
    }
    /* kept sorted: index users iterate in name order */
    size_t cap = l->cap;
    return xlate_sorted_insert(&l->items, &l->n, &cap, e) == 0 ? (l->cap = cap, 0) : -1;
}

static void index_del(struct cx_map *m, const char *key, struct xl_entry *e)
{
    size_t n = strlen(key);
    struct xl_entry_list *l = cx_map_get(m, key, n);
    if (!l)
        return;
    xlate_sorted_remove(l->items, &l->n, e);
    if (l->n == 0) {
        cx_map_del(m, key, n);
        xlate_index_list_free(l);
    }
}

/* Takes |e| (parsed as it is now) out of, or into, the indexes. */
static int index_entry(struct xlate_ctx *ctx, struct xl_entry *e, int add)
{
    char key[600];
    switch (e->kind) {
    case XLATE_KIND_ENDPOINT_SLICE: {
        const char *sk = e->obj->u.eps.svc_key; /* the record's */
        if (!sk)
            return 0;
        if (!add) {
            index_del(&ctx->slices_by_svc, sk, e);
            return 0;
        }
        return index_add(&ctx->slices_by_svc, sk, e);
    }
    case XLATE_KIND_ROUTE_TABLE:
        if (!add) {
            index_del(&ctx->rt_by_ns, e->obj->meta.ns, e);
            return 0;
        }
        return index_add(&ctx->rt_by_ns, e->obj->meta.ns, e);
    case XLATE_KIND_UPSTREAM:
        if (!add) {
            if (e->up && e->up->svc_key) {
                index_del(&ctx->svc_ups, e->up->svc_key, e);
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
        if (!e->up) /* zeroed with the entry */
            e->up = entry_extra(e, e->keylen);
        if (e->parse_state == XLATE_REJECTED)
            return 0;
        /* the Secret and ConfigMap of spec.tls: their changes refresh it */
        const struct xl_upstream_tls *t = xlate_upstream_tls_of(&e->obj->u.up);
        const struct xl_obj_ref *refs[2] = {t->has_ca ? &t->ca : NULL,
                                            t->has_client_cert ? &t->client_cert : NULL};
        for (int i = 0; i < 2; i++) {
            if (!refs[i])
                continue;
            snprintf(key, sizeof(key), "%c/%s/%s", i ? 'S' : 'C', refs[i]->ns, refs[i]->name);
            if (!(e->up->ref_keys[i] = strdup(key)) || index_add(&ctx->ref_ups, key, e) != 0)
                return -1;
        }
        /* none: a name longer than any Kubernetes name matches no Service */
        if (!e->obj->u.up.is_kube || !e->obj->u.up.kube_key)
            return 0;
        e->up->svc_key = e->obj->u.up.kube_key;
        return index_add(&ctx->svc_ups, e->up->svc_key, e);
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
        rc |= mark_dep(ctx, 'N', e->obj->meta.ns ? e->obj->meta.ns : "");
        break;
    case XLATE_KIND_SERVICE:
        rc |= mark_service(ctx, e->obj->meta.ns, e->obj->meta.name);
        break;
    case XLATE_KIND_ENDPOINT_SLICE:
        if (e->obj->u.eps.service)
            rc |= mark_service(ctx, e->obj->meta.ns, e->obj->u.eps.service);
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

/* Empty objects of each kind: what an entry reads before its first decode. */
static const struct xl_object empty_obj[XLATE_KIND_COUNT] = {
    [XLATE_KIND_GATEWAY] = {.kind = XLATE_KIND_GATEWAY},
    [XLATE_KIND_VIRTUAL_SERVICE] = {.kind = XLATE_KIND_VIRTUAL_SERVICE},
    [XLATE_KIND_ROUTE_TABLE] = {.kind = XLATE_KIND_ROUTE_TABLE},
    [XLATE_KIND_UPSTREAM] = {.kind = XLATE_KIND_UPSTREAM},
    [XLATE_KIND_SERVICE] = {.kind = XLATE_KIND_SERVICE},
    [XLATE_KIND_ENDPOINT_SLICE] = {.kind = XLATE_KIND_ENDPOINT_SLICE},
    [XLATE_KIND_SECRET] = {.kind = XLATE_KIND_SECRET},
    [XLATE_KIND_CONFIG_MAP] = {.kind = XLATE_KIND_CONFIG_MAP},
};

/* |e| takes |rec| (a reference of its own, or the one decoded from |obj|)
 * as its object. The new record is in hand before the old one is let go:
 * when memory runs out the entry stays as it was. */
static int reparse(struct xlate_ctx *ctx, struct xl_entry *e, const void *obj,
                   const struct xlate_record *given, uint64_t digest)
{
    struct xlate_record *rec =
        given ? xlate_record_ref(given)
              : xlate_record_new(e->kind, obj, digest, &ctx->limits, &ctx->arena_hint[e->kind]);
    if (!rec)
        return -1;
    int had = e->changed != 0;
    ptr_del(ctx, e);
    if (had) {
        /* what the old version fed (a slice's old Service) changes too */
        if (note_change(ctx, e) != 0) {
            xlate_record_unref(rec);
            return -1;
        }
        index_entry(ctx, e, 0);
        /* sorted lists hold the entry by its name, which does not change */
    }
    xlate_record_unref(e->rec);
    e->rec = rec;
    e->obj = &rec->obj;
    e->digest = digest;
    e->obj_ptr = obj;
    e->parse_state = rec->parse_state;
    /* a full view holding a key twice may parse its entry twice: the entry
     * is on the changed list once */
    int listed = e->changed == ctx->pass;
    e->changed = ctx->pass;
    if (e->kind == XLATE_KIND_SECRET)
        e->cert_phase = (int)xlate_tls_phase(&e->obj->u.secret.cert, ctx->now);
    ctx->stats.parsed++;
    if (e->kind == XLATE_KIND_VIRTUAL_SERVICE) {
        /* beside the entry's name for the claim order's sort (the record
         * is elsewhere in memory) */
        e->has_created = e->obj->u.vs.has_created;
        e->created = e->obj->u.vs.created;
    }
    if (!had && list_add(ctx, e) != 0)
        return -1;
    if (note_change(ctx, e) != 0 || index_entry(ctx, e, 1) != 0)
        return -1;
    if ((!listed && xlate_list_push(&ctx->changed[e->kind], e) != 0) ||
        xlate_rep_dirty(ctx, e) != 0)
        return -1;
    return ptr_put(ctx, e, given != NULL);
}

static struct xl_entry *entry_new(struct xlate_ctx *ctx, enum xlate_kind kind, const char *key,
                                  size_t keylen)
{
    size_t n = entry_size(kind, keylen);
    struct xl_entry *e = n <= XL_POOL_MAX ? xlate_pool_get(&ctx->entries, n) : calloc(1, n);
    if (!e)
        return NULL;
    e->kind = kind;
    e->obj = &empty_obj[kind];
    if (kind == XLATE_KIND_VIRTUAL_SERVICE) {
        e->res = entry_extra(e, keylen);
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
    if (cx_map_put(&ctx->by_key[kind], e->key, keylen, e, NULL) != 0) {
        entry_block_free(ctx, e);
        return NULL;
    }
    return e;
}

/* Deletion: the entry leaves every index now and is freed at the end of the
 * pass. */
int xlate_delete_entry(struct xlate_ctx *ctx, struct xl_entry *e)
{
    if (e->deleted)
        return 0;
    e->deleted = 1;
    if (e->changed && note_change(ctx, e) != 0)
        return -1;
    if (e->changed)
        index_entry(ctx, e, 0);
    cx_map_del(&ctx->by_key[e->kind], e->key, e->keylen);
    ptr_del(ctx, e);
    if (e->changed)
        ctx->list_changes[e->kind]++;
    ctx->reports_changed = 1;
    ctx->ndeleted[e->kind]++;
    if (xlate_list_push(&ctx->graveyard, e) != 0)
        return -1;
    return xlate_list_push(&ctx->changed[e->kind], e);
}

static int commit_one(struct xlate_ctx *ctx, struct xl_entry *e)
{
    if (e->changed && e->digest == e->cand_digest) {
        /* same content, another cJSON: only the fast-lookup key moves */
        ptr_del(ctx, e);
        e->obj_ptr = e->cand_obj;
        return ptr_put(ctx, e, e->cand_rec != NULL);
    }
    return reparse(ctx, e, e->cand_obj, e->cand_rec, e->cand_digest);
}

/* "<namespace>/<name>" of |obj| in |key|: its length, 0 if it does not
 * fit (no Kubernetes name is that long). */
size_t xlate_object_key(const cJSON *obj, char *key, size_t cap)
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
int xlate_ingest_one(struct xlate_ctx *ctx, enum xlate_kind kind, const cJSON *json,
                     const struct xlate_record *rec, uint64_t digest, int last_wins)
{
    const void *obj = json;
    if (rec) {
        /* decoded under another regex budget: translating it would apply
         * that one (xlate_record_new) */
        if (rec->regex_program_size != ctx->limits.regex_program_size)
            return -1;
        obj = rec;
        kind = rec->kind;
        digest = rec->digest;
    } else {
        if (kind == XLATE_KIND_UNKNOWN)
            kind = xlate_kind_of(json);
        if (kind < 0 || kind >= XLATE_KIND_COUNT || !cJSON_IsObject(json))
            return 0; /* not ours: no entry, no report */
        if (!digest)
            digest = xlate_digest(json);
    }
    struct xl_entry *e;
    if (rec) {
        e = cx_map_get(&ctx->by_key[kind], rec->key, rec->keylen);
    } else {
        struct ptrkey probe = {digest, obj};
        e = cx_map_get(&ctx->by_ptr, &probe, PTRKEY_LEN);
    }
    if (e && e->kind == kind && e->obj_ptr == obj && e->seen != ctx->pass && e->digest == digest) {
        /* the very object of last pass: nothing to do */
        e->seen = ctx->pass;
        ctx->nseen[kind]++;
        e->duplicate = 0;
        e->cand_obj = obj;
        e->cand_rec = rec;
        e->cand_digest = digest;
        return 1;
    }
    char buf[600];
    const char *key = buf;
    size_t n;
    if (rec) {
        key = rec->key;
        n = rec->keylen;
    } else if (!(n = xlate_object_key(json, buf, sizeof(buf)))) {
        return 0; /* names this long cannot exist in Kubernetes */
    }
    if (!rec)
        e = cx_map_get(&ctx->by_key[kind], key, n);
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
            e->cand_rec = rec;
            e->cand_digest = digest;
            return commit_one(ctx, e);
        }
    }
    e->cand_obj = obj;
    e->cand_rec = rec;
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
int xlate_sweep(struct xlate_ctx *ctx)
{
    for (int k = 0; k < XLATE_KIND_COUNT; k++) {
        if (ctx->nseen[k] == cx_map_len(&ctx->by_key[k]))
            continue; /* every entry of the kind was seen */
        if (!kind_listed(k)) {
            /* deleting leaves a tombstone: the walk goes on */
            const struct cx_map_slot *s;
            for (size_t i = 0; cx_map_next(&ctx->by_key[k], &i, &s);) {
                struct xl_entry *e = s->val;
                if (e->seen != ctx->pass && xlate_delete_entry(ctx, e) != 0)
                    return -1;
            }
            continue;
        }
        for (size_t i = 0; i < ctx->nlist[k]; i++) {
            struct xl_entry *e = ctx->list[k][i];
            if (e->seen != ctx->pass && xlate_delete_entry(ctx, e) != 0)
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

/* The first 16 bytes of the sort key of |len| bytes of key at |s|
 * (entry_new: the key with its first '/' as 0x01), big-endian, 0-padded. */
static void sort_prefix(const char *s, size_t len, uint64_t *k0, uint64_t *k1)
{
    unsigned char b[16] = {0};
    memcpy(b, s, len < sizeof(b) ? len : sizeof(b));
    unsigned char *slash = memchr(b, '/', sizeof(b));
    if (slash)
        *slash = 1;
    uint64_t v[2] = {0, 0};
    for (size_t i = 0; i < sizeof(b); i++)
        v[i / 8] = v[i / 8] << 8 | b[i];
    *k0 = v[0];
    *k1 = v[1];
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
 * out. The keys are read through the table's slots (one cache line of each
 * entry, asked for ahead), not through the entries' headers. */
static int sort_by_key(const struct cx_map *m, struct xl_entry **out, size_t *n)
{
    struct keyed *v = malloc((cx_map_len(m) ? cx_map_len(m) : 1) * sizeof(*v));
    if (!v)
        return -1;
    size_t j = 0;
    const struct cx_map_slot *s;
    for (size_t i = 0; cx_map_next(m, &i, &s);) {
        if (i + 16 < m->cap && m->slots[i + 16].key)
            __builtin_prefetch(m->slots[i + 16].key);
        struct keyed *kv = &v[j++];
        sort_prefix(s->key, s->klen, &kv->k0, &kv->k1);
        kv->e = s->val;
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
        size_t n = cx_map_len(&ctx->by_key[k]);
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
            for (size_t i = 0; i < ctx->changed[k].n; i++) {
                struct xl_entry *e = ctx->changed[k].items[i];
                if (e->deleted)
                    xlate_sorted_remove(ctx->list[k], &ctx->nlist[k], e);
                else if (xlate_sorted_insert(&ctx->list[k], &ctx->nlist[k], &ctx->caplist[k], e) !=
                         0)
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
    int hashing = valid && xlate_upstream_hashing(&e->obj->u.up);
    if (exists != e->up_exists || valid != e->up_valid || hashing != e->up_hashing) {
        /* what routes read: whether it is there and usable, and whether
         * their hash policies apply */
        if (mark_dep(ctx, 'U', e->key) != 0)
            return -1;
        e->up_exists = exists;
        e->up_valid = valid;
        e->up_hashing = hashing;
        rc = 1;
    }
    if (rc && touch(ctx, &ctx->up_touched, e) != 0)
        return -1;
    return xlate_rep_dirty(ctx, e);
}

/* In the walk of changed Upstreams |l| at |i|: the Service and slices a
 * refresh looks up (xlate_upstream_refresh, by the Upstream's svc_key),
 * asked for in stages behind xlate_list_prefetch's: the key's pointer,
 * the key, the two tables' slots, then what the slots point at. */
static void prefetch_service(const struct xlate_ctx *ctx, const struct xl_entry_list *l, size_t i)
{
    const struct xl_up_memo *u;
    if (i + 12 < l->n && (u = l->items[i + 12]->up))
        __builtin_prefetch(&u->svc_key);
    if (i + 8 < l->n && (u = l->items[i + 8]->up) && u->svc_key)
        __builtin_prefetch(u->svc_key);
    if (i + 4 < l->n && (u = l->items[i + 4]->up) && u->svc_key) {
        size_t n = strlen(u->svc_key);
        cx_map_prefetch(&ctx->by_key[XLATE_KIND_SERVICE], u->svc_key, n);
        cx_map_prefetch(&ctx->slices_by_svc, u->svc_key, n);
    }
    if (i + 2 < l->n && (u = l->items[i + 2]->up) && u->svc_key) {
        size_t n = strlen(u->svc_key);
        cx_map_prefetch_entry(&ctx->by_key[XLATE_KIND_SERVICE], u->svc_key, n);
        cx_map_prefetch_entry(&ctx->slices_by_svc, u->svc_key, n);
    }
}

static int upstreams(struct xlate_ctx *ctx)
{
    const struct xl_entry_list *ch = &ctx->changed[XLATE_KIND_UPSTREAM];
    for (size_t i = 0; i < ch->n; i++) {
        xlate_list_prefetch(ch, i);
        prefetch_service(ctx, ch, i);
        if (refresh_upstream(ctx, ch->items[i]) != 0)
            return -1;
    }
    const struct cx_map_slot *s;
    for (size_t i = 0; cx_map_next(&ctx->dirty_services, &i, &s);) {
        struct xl_entry_list *l = cx_map_get(&ctx->svc_ups, s->key, s->klen);
        for (size_t k = 0; l && k < l->n; k++)
            if (refresh_upstream(ctx, l->items[k]) != 0)
                return -1;
    }
    for (size_t i = 0; cx_map_next(&ctx->dirty_refs, &i, &s);) {
        struct xl_entry_list *l = cx_map_get(&ctx->ref_ups, s->key, s->klen);
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
        const struct xl_secret *sec = &e->obj->u.secret;
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

int xlate_invalidate_vs(struct xlate_ctx *ctx, struct xl_entry *e, int mode)
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
    const struct xl_entry_list *ch = &ctx->changed[XLATE_KIND_VIRTUAL_SERVICE];
    for (size_t i = 0; i < ch->n; i++) {
        xlate_list_prefetch(ch, i);
        if (xlate_invalidate_vs(ctx, ch->items[i], -1) != 0)
            return -1;
    }
    const struct cx_map_slot *s;
    for (size_t i = 0; cx_map_next(&ctx->changed_deps, &i, &s);) {
        struct xl_dep_list *l = cx_map_del(&ctx->deps, s->key, s->klen);
        if (!l)
            continue;
        int rc = 0;
        for (size_t k = 0; k < l->n && rc == 0; k++) {
            struct xl_entry *v = xlate_find_key(ctx, XLATE_KIND_VIRTUAL_SERVICE, l->items[k].vskey);
            int m = l->items[k].mode;
            /* registrations of older resolutions are stale: skip them */
            if (v && v->res[m].valid && v->res[m].serial == l->items[k].serial)
                rc = xlate_invalidate_vs(ctx, v, m);
        }
        xlate_dep_list_free(l);
        if (rc != 0)
            return -1;
    }
    return 0;
}

int xlate_settle(struct xlate_ctx *ctx)
{
    if (commit_candidates(ctx) != 0 || fix_lists(ctx) != 0 || time_scan(ctx) != 0 ||
        upstreams(ctx) != 0 || invalidate(ctx) != 0)
        return -1;
    return 0;
}
