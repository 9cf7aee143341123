#include "xds_ads.h"

#include "cx_hash.h"
#include "cx_wire.h"
#include "xds_sub.h"
#include "xlate_snapshot.h"

#include "envoy/service/discovery/v3/discovery.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Secrets after Clusters and their endpoints, before Listeners: a client
 * asks for a Secret once a Cluster or Listener names it and warms that
 * one until the Secret comes, so the Secrets of the Listeners of one push
 * are answered before the next Listeners would need theirs. */
static const enum xds_type mbb_order[XDS_TYPE_COUNT] = {XDS_CLUSTER, XDS_ENDPOINT, XDS_SECRET,
                                                        XDS_LISTENER, XDS_ROUTE};

enum xds_type xds_ads_order(int i)
{
    return mbb_order[(unsigned)i % XDS_TYPE_COUNT];
}

void xds_ads_stream_init(struct xds_ads_stream *s)
{
    memset(s, 0, sizeof(*s));
}

struct xds_names_pool *xds_names_pool_new(void)
{
    return calloc(1, sizeof(struct xds_names_pool));
}

void xds_names_pool_free(struct xds_names_pool *p)
{
    free(p);
}

void xds_ads_stream_set_pool(struct xds_ads_stream *s, struct xds_names_pool *pool)
{
    s->pool = pool;
}

/* Allocation bytes of a list (what the pool charges to its budget). */
static size_t names_alloc_bytes(const struct xds_names *l);

static void names_release(struct xds_names_pool *pool, struct xds_names *l)
{
    if (!l || --l->refs > 0)
        return;
    if (pool && l->hash) {
        struct xds_names **pp = &pool->buckets[l->hash % XDS_NAMES_POOL_BUCKETS];
        while (*pp && *pp != l)
            pp = &(*pp)->next;
        if (*pp) {
            *pp = l->next;
            pool->count--;
            size_t b = names_alloc_bytes(l);
            pool->bytes -= b;
            xds_sub_uncharge(pool->budget, &pool->charged, b);
        }
    }
    free(l);
}

/* Total bytes of a list's strings block, for comparing lists. */
static size_t names_bytes(const struct xds_names *l)
{
    return l->n ? (size_t)(l->v[l->n - 1] - l->v[0]) + strlen(l->v[l->n - 1]) + 1 : 0;
}

static size_t names_alloc_bytes(const struct xds_names *l)
{
    return sizeof(*l) + l->n * sizeof(char *) + names_bytes(l);
}

/* Returns the pooled copy of |l| (taking a reference, freeing |l|) or |l|
 * itself, now in the pool. */
static struct xds_names *names_intern(struct xds_names_pool *pool, struct xds_names *l)
{
    if (!pool)
        return l;
    size_t bytes = names_bytes(l);
    uint64_t h = cx_fnv64(CX_FNV64_INIT, &l->n, sizeof(l->n));
    if (bytes)
        h = cx_fnv64(h, l->v[0], bytes);
    if (h == 0)
        h = 1; /* 0 means "not pooled" */
    struct xds_names **head = &pool->buckets[h % XDS_NAMES_POOL_BUCKETS];
    for (struct xds_names *e = *head; e; e = e->next) {
        if (e->hash == h && e->n == l->n && names_bytes(e) == bytes &&
            (bytes == 0 || memcmp(e->v[0], l->v[0], bytes) == 0)) {
            e->refs++;
            free(l);
            return e;
        }
    }
    l->hash = h;
    l->next = *head;
    *head = l;
    pool->count++;
    size_t b = names_alloc_bytes(l);
    pool->bytes += b;
    xds_sub_charge(pool->budget, &pool->charged, b);
    return l;
}

static void free_names(struct xds_ads_stream *s, struct xds_ads_type_state *t)
{
    names_release(s->pool, t->list);
    t->list = NULL;
    t->names = NULL;
    t->nnames = 0;
}

static uint64_t sent_hash(struct xds_resource *const *v, size_t n)
{
    uint64_t h = cx_fnv64(0, &n, sizeof(n));
    h = cx_fnv64(h, v, n * sizeof(*v));
    return h ? h : 1;
}

static void sent_release(struct xds_names_pool *pool, struct xds_sent *l)
{
    if (!l || --l->refs > 0)
        return;
    if (pool && l->hash) {
        struct xds_sent **pp = &pool->sent[l->hash % XDS_NAMES_POOL_BUCKETS];
        while (*pp && *pp != l)
            pp = &(*pp)->next;
        if (*pp)
            *pp = l->next;
    }
    for (size_t i = 0; i < l->n; i++)
        xlate_resource_unref(l->v[i]);
    free(l);
}

static void free_sent(struct xds_ads_stream *s, struct xds_ads_type_state *t)
{
    sent_release(s->pool, t->sentl);
    t->sentl = NULL;
    t->sent = NULL;
    t->nsent = 0;
}

/* Makes the |n| resources of |v| (sorted, borrowed; may point into the
 * current list) the sent list: the pool's equal list if there is one, else
 * a new one holding a reference to each. */
static int sent_set(struct xds_ads_stream *s, struct xds_ads_type_state *t,
                    struct xds_resource *const *v, size_t n)
{
    struct xds_sent *l = NULL;
    if (n) {
        uint64_t h = sent_hash(v, n);
        if (s->pool) {
            for (l = s->pool->sent[h % XDS_NAMES_POOL_BUCKETS]; l; l = l->next)
                if (l->hash == h && l->n == n && memcmp(l->v, v, n * sizeof(*v)) == 0)
                    break;
        }
        if (l) {
            l->refs++;
        } else {
            l = malloc(sizeof(*l) + n * sizeof(l->v[0]));
            if (!l)
                return XDS_ADS_ENOMEM;
            l->refs = 1;
            l->n = n;
            l->hash = 0;
            l->next = NULL;
            for (size_t i = 0; i < n; i++)
                l->v[i] = xlate_resource_ref(v[i]);
            if (s->pool) {
                l->hash = h;
                l->next = s->pool->sent[h % XDS_NAMES_POOL_BUCKETS];
                s->pool->sent[h % XDS_NAMES_POOL_BUCKETS] = l;
            }
        }
    }
    free_sent(s, t);
    t->sentl = l;
    t->sent = l ? l->v : NULL;
    t->nsent = n;
    return 0;
}

void xds_ads_stream_free(struct xds_ads_stream *s)
{
    xds_sub_node_free(&s->node);
    for (int i = 0; i < XDS_TYPE_COUNT; i++) {
        free_names(s, &s->types[i]);
        free_sent(s, &s->types[i]);
    }
}

/* ---- subscription ---------------------------------------------------------- */

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int name_cmp_res(const char *name, const struct xds_resource *r)
{
    return strcmp(name, r->name);
}

/* Sorted, unique list of |names| (a new, unpooled xds_names with one
 * reference; NULL in *out when there are none); with |strip_star|, "*" is
 * dropped and reported in *star ("*" is a wildcard for LDS/CDS only, a
 * plain name for RDS/EDS). */
static int normalise_names(char **in, size_t n, int strip_star, struct xds_names **out, int *star)
{
    *out = NULL;
    *star = 0;
    if (n == 0)
        return 0;
    char **v = malloc(n * sizeof(*v));
    if (!v)
        return XDS_ADS_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!in[i])
            continue;
        if (strip_star && strcmp(in[i], "*") == 0) {
            *star = 1;
            continue;
        }
        v[k++] = in[i];
    }
    if (k > 1)
        qsort(v, k, sizeof(*v), str_cmp);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || strcmp(v[u - 1], v[i]) != 0)
            v[u++] = v[i];
    if (u == 0) {
        free(v);
        return 0;
    }
    size_t bytes = sizeof(struct xds_names) + u * sizeof(char *);
    for (size_t i = 0; i < u; i++)
        bytes += strlen(v[i]) + 1;
    struct xds_names *l = malloc(bytes);
    if (!l) {
        free(v);
        return XDS_ADS_ENOMEM;
    }
    l->refs = 1;
    l->hash = 0;
    l->n = u;
    l->next = NULL;
    char *p = (char *)(l->v + u);
    for (size_t i = 0; i < u; i++) {
        size_t len = strlen(v[i]) + 1;
        memcpy(p, v[i], len);
        l->v[i] = p;
        p += len;
    }
    free(v);
    *out = l;
    return 0;
}

static int names_have(const struct xds_ads_type_state *t, const char *name)
{
    int found;
    xds_sub_find_str(t->names, t->nnames, name, &found);
    return found;
}

/* Keeps only the sent entries that are still subscribed. */
static int prune_sent(struct xds_ads_stream *s, struct xds_ads_type_state *t)
{
    if (t->wildcard || !t->nsent)
        return 0;
    struct xds_resource **v = malloc(t->nsent * sizeof(*v));
    if (!v)
        return XDS_ADS_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < t->nsent; i++)
        if (names_have(t, t->sent[i]->name))
            v[k++] = t->sent[i];
    int rc = k == t->nsent ? 0 : sent_set(s, t, v, k);
    free(v);
    return rc;
}

/* Replaces the subscription of |t| (type |type|) by the request's names.
 * Sets *changed when it differs from the previous one. */
static int update_names(struct xds_ads_stream *s, struct xds_ads_type_state *t, enum xds_type type,
                        int first, char **req_names, size_t n, int *changed)
{
    struct xds_names *list;
    int star;
    *changed = 0;
    if (n > XDS_ADS_MAX_NAMES)
        return XDS_ADS_ELIMIT;
    int rc = normalise_names(req_names, n, xds_sub_full_state(type), &list, &star);
    if (rc != 0)
        return rc;
    size_t nn = list ? list->n : 0;
    int wildcard = 0, legacy = 0;
    if (xds_sub_full_state(type)) {
        if (star)
            wildcard = 1;
        else if (nn == 0 && (first || t->legacy_wildcard))
            wildcard = legacy = 1;
    }
    int added = 0, same = (nn == t->nnames);
    for (size_t i = 0; i < nn; i++) {
        if (!names_have(t, list->v[i])) {
            added = 1;
            same = 0;
        }
    }
    if (wildcard && !t->wildcard)
        added = 1;
    if (wildcard != t->wildcard)
        same = 0;
    if (same) {
        free(list);
        t->legacy_wildcard = (uint8_t)legacy;
        return 0;
    }
    free_names(s, t);
    if (list) {
        t->list = names_intern(s->pool, list);
        t->names = t->list->v;
        t->nnames = t->list->n;
    }
    t->wildcard = (uint8_t)wildcard;
    t->legacy_wildcard = (uint8_t)legacy;
    rc = prune_sent(s, t);
    if (rc != 0)
        return rc;
    if (added && xds_sub_full_state(type))
        t->force = 1; /* the client must learn at once what exists and what not */
    t->eval_version[0] = '\0';
    *changed = 1;
    return 0;
}

/* ---- requests -------------------------------------------------------------- */

int xds_ads_on_request(struct xds_ads_stream *s, const uint8_t *msg, size_t len,
                       const char *default_group, struct xds_ads_event *ev)
{
    memset(ev, 0, sizeof(*ev));
    ev->type = -1;
    ProtobufCMessage *m;
    int rc = xds_sub_decode(&envoy__service__discovery__v3__discovery_request__descriptor, msg, len,
                            ev, &m);
    if (rc != 0)
        return rc;
    Envoy__Service__Discovery__V3__DiscoveryRequest *req =
        (Envoy__Service__Discovery__V3__DiscoveryRequest *)m;
    int type;
    rc = xds_sub_begin(&s->node, req->node, req->type_url, default_group, ev, &type);
    if (rc != 0 || type < 0)
        goto out;
    struct xds_ads_type_state *t = &s->types[type];
    xds_sub_on_nonce(&t->x, req->response_nonce, req->error_detail, ev);
    if (ev->verdict == XDS_ADS_STALE)
        goto out;
    int first = !t->x.requested;
    int changed = 0;
    rc = update_names(s, t, (enum xds_type)type, first, req->resource_names, req->n_resource_names,
                      &changed);
    if (rc != 0)
        goto out;
    ev->names_changed = (uint8_t)changed;
    if (first) {
        t->x.requested = 1;
        if (xds_sub_full_state((enum xds_type)type))
            t->force = 1;
        const char *v = req->version_info ? req->version_info : "";
        if (v[0] && strlen(v) <= XDS_VERSION_LEN) {
            xds_sub_copy(t->resync_version, sizeof(t->resync_version), v);
            t->resync_valid = 1;
        }
    }
out:
    protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}

/* ---- responses ------------------------------------------------------------- */

void xds_ads_response_clear(struct xds_ads_response *r)
{
    for (size_t i = 0; i < r->n; i++)
        xlate_resource_unref(r->items[i]);
    free(r->items);
    r->items = NULL;
    r->n = 0;
}

/* The resources the client should hold: every one for a wildcard, else the
 * subscribed names that exist. Borrowed pointers into |set|. */
static int want_list(const struct xds_ads_type_state *t, const struct xds_resource_set *set,
                     struct xds_resource ***out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    size_t cap = t->wildcard ? set->n : (t->nnames < set->n ? t->nnames : set->n);
    if (cap == 0)
        return 0;
    struct xds_resource **v = malloc(cap * sizeof(*v));
    if (!v)
        return XDS_ADS_ENOMEM;
    size_t k = 0;
    if (t->wildcard) {
        memcpy(v, set->items, set->n * sizeof(*v));
        k = set->n;
    } else {
        /* Both lists are sorted: merge. */
        size_t i = 0, j = 0;
        while (i < t->nnames && j < set->n && k < cap) {
            int c = name_cmp_res(t->names[i], set->items[j]);
            if (c == 0) {
                v[k++] = set->items[j];
                i++;
                j++;
            } else if (c < 0) {
                i++;
            } else {
                j++;
            }
        }
    }
    *out = v;
    *nout = k;
    return 0;
}

static int same_resource(const struct xds_resource *a, const struct xds_resource *b)
{
    return a == b || (strcmp(a->name, b->name) == 0 && strcmp(a->version, b->version) == 0);
}

/* Finds |name| in the sorted sent list; NULL if absent. */
static struct xds_resource *sent_find(const struct xds_ads_type_state *t, const char *name)
{
    return xds_sub_find_res(t->sent, t->nsent, name);
}

/* Makes |want| (borrowed) the sent list. */
static int sent_replace(struct xds_ads_stream *s, struct xds_ads_type_state *t,
                        struct xds_resource **want, size_t n)
{
    return sent_set(s, t, want, n);
}

/* Merges |upd| (sorted, borrowed) into the sent list: same names replaced. */
static int sent_merge(struct xds_ads_stream *s, struct xds_ads_type_state *t,
                      struct xds_resource **upd, size_t n)
{
    struct xds_resource **v = malloc((t->nsent + n) * sizeof(*v));
    if (!v)
        return XDS_ADS_ENOMEM;
    size_t i = 0, j = 0, k = 0;
    while (i < t->nsent || j < n) {
        int c = i == t->nsent ? 1 : j == n ? -1 : strcmp(t->sent[i]->name, upd[j]->name);
        if (c < 0) {
            v[k++] = t->sent[i++];
        } else {
            if (c == 0)
                i++;
            v[k++] = upd[j++];
        }
    }
    int rc = sent_set(s, t, v, k);
    free(v);
    return rc;
}

/* Evaluates one type. Returns 1 with |out| filled, 0, or an error. */
static int eval_type(struct xds_ads_stream *s, enum xds_type type,
                     const struct xds_resource_set *set, int64_t origin_ns,
                     struct xds_ads_response *out)
{
    struct xds_ads_type_state *t = &s->types[type];
    if (!xds_sub_ready(&t->x, set))
        return 0;
    if (!t->force && t->eval_version[0] && strcmp(t->eval_version, set->version) == 0)
        return 0; /* nothing changed for this type since we last looked */
    struct xds_resource **want = NULL;
    size_t nwant = 0;
    int rc = want_list(t, set, &want, &nwant);
    if (rc != 0)
        return rc;
    struct xds_resource **send = NULL;
    size_t nsend = 0;
    int respond = 0;
    if (!t->responded && t->resync_valid && strcmp(t->resync_version, set->version) == 0) {
        /* A reconnecting client already holds this version (versions are
         * content hashes, equal on every replica): send nothing. */
        rc = sent_replace(s, t, want, nwant);
        if (rc != 0)
            goto out;
        t->responded = 1;
        t->force = 0;
        xds_sub_copy(t->x.version_sent, sizeof(t->x.version_sent), set->version);
        xds_sub_copy(t->x.version_acked, sizeof(t->x.version_acked), set->version);
        xds_sub_copy(t->eval_version, sizeof(t->eval_version), set->version);
        goto out;
    }
    if (xds_sub_full_state(type)) {
        int differ = t->force || nwant != t->nsent;
        for (size_t i = 0; !differ && i < nwant; i++)
            differ = !same_resource(want[i], t->sent[i]);
        if (differ) {
            send = want;
            nsend = nwant;
            respond = 1;
        }
    } else {
        for (size_t i = 0; i < nwant; i++) {
            const struct xds_resource *have = sent_find(t, want[i]->name);
            if (!have || !same_resource(have, want[i]))
                want[nsend++] = want[i];
        }
        send = want;
        respond = nsend > 0;
    }
    xds_sub_copy(t->eval_version, sizeof(t->eval_version), set->version);
    if (!respond)
        goto out;
    struct xds_resource **items = NULL;
    if (nsend) {
        items = malloc(nsend * sizeof(*items));
        if (!items) {
            rc = XDS_ADS_ENOMEM;
            goto out;
        }
    }
    rc = xds_sub_full_state(type) ? sent_replace(s, t, send, nsend) : sent_merge(s, t, send, nsend);
    if (rc != 0) {
        free(items);
        goto out;
    }
    for (size_t i = 0; i < nsend; i++)
        items[i] = xlate_resource_ref(send[i]);
    memset(out, 0, sizeof(*out));
    out->type = type;
    out->items = items;
    out->n = nsend;
    xds_sub_copy(out->version, sizeof(out->version), set->version);
    xds_sub_sent(&t->x, &s->nonce_counter, set->version, origin_ns, out->nonce);
    t->force = 0;
    t->responded = 1;
    rc = 1;
out:
    free(want);
    return rc;
}

int xds_ads_next(struct xds_ads_stream *s, const struct xds_ads_sets *sets, int64_t origin_ns,
                 struct xds_ads_response *out)
{
    if (!sets || !s->node.have)
        return 0;
    for (int i = 0; i < XDS_TYPE_COUNT; i++) {
        enum xds_type t = mbb_order[i];
        int rc = eval_type(s, t, sets->t[t], origin_ns, out);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* ---- wire encoding ----------------------------------------------------------
 * DiscoveryResponse is written by hand so that each resource's bytes (encoded
 * once by the translator) are wrapped in Any without being re-encoded. */

enum {
    DR_VERSION_INFO = 1,
    DR_RESOURCES = 2, /* Any */
    DR_TYPE_URL = 4,
    DR_NONCE = 5,
    DR_CONTROL_PLANE = 6,
};

size_t xds_ads_resources_size(enum xds_type type, struct xds_resource *const *items, size_t n)
{
    const char *url = xlate_type_url(type);
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += cx_wire_len_size(DR_RESOURCES, xds_sub_any_size(url, items[i]));
    return total;
}

size_t xds_ads_response_size(const struct xds_ads_response *r, const char *identifier)
{
    const char *url = xlate_type_url(r->type);
    size_t n = 0;
    if (r->version[0])
        n += cx_wire_len_size(DR_VERSION_INFO, strlen(r->version));
    n += xds_ads_resources_size(r->type, r->items, r->n);
    n += cx_wire_len_size(DR_TYPE_URL, strlen(url));
    if (r->nonce[0])
        n += cx_wire_len_size(DR_NONCE, strlen(r->nonce));
    n += xds_sub_control_plane_size(DR_CONTROL_PLANE, identifier);
    return n;
}

int xds_ads_emit_head(const struct xds_ads_response *r, xds_ads_emit_fn emit, void *user)
{
    return r->version[0]
               ? xds_sub_emit_ld(emit, user, DR_VERSION_INFO, strlen(r->version), r->version)
               : 0;
}

int xds_ads_emit_resources(enum xds_type type, struct xds_resource *const *items, size_t n,
                           xds_ads_emit_fn emit, void *user)
{
    const char *url = xlate_type_url(type);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = xds_sub_emit_any(emit, user, DR_RESOURCES, url, items[i]);
    return rc;
}

int xds_ads_emit_tail(const struct xds_ads_response *r, const char *identifier,
                      xds_ads_emit_fn emit, void *user)
{
    const char *url = xlate_type_url(r->type);
    int rc = xds_sub_emit_ld(emit, user, DR_TYPE_URL, strlen(url), url);
    if (rc == 0 && r->nonce[0])
        rc = xds_sub_emit_ld(emit, user, DR_NONCE, strlen(r->nonce), r->nonce);
    if (rc == 0)
        rc = xds_sub_emit_control_plane(emit, user, DR_CONTROL_PLANE, identifier);
    return rc;
}

int xds_ads_response_emit(const struct xds_ads_response *r, const char *identifier,
                          xds_ads_emit_fn emit, void *user)
{
    int rc = xds_ads_emit_head(r, emit, user);
    if (rc == 0)
        rc = xds_ads_emit_resources(r->type, r->items, r->n, emit, user);
    if (rc == 0)
        rc = xds_ads_emit_tail(r, identifier, emit, user);
    return rc;
}

static int emit_buf(void *user, const void *p, size_t n, struct xds_resource *res)
{
    (void)res;
    return cx_buf_append(user, p, n);
}

int xds_ads_response_encode(const struct xds_ads_response *r, const char *identifier,
                            struct cx_buf *b)
{
    return xds_ads_response_emit(r, identifier, emit_buf, b);
}
