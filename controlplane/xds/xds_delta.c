#include "xds_delta.h"

#include "cx_hash.h"
#include "cx_wire.h"
#include "xds_sub.h"
#include "xlate_snapshot.h"

#include "envoy/service/discovery/v3/discovery.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- held sets ----------------------------------------------------------------
 * What a wildcard client holds once answered: the group's whole set at one
 * version. Interned by type and version (a version hashes every name and
 * resource version), so the streams of a group share one copy; each holds
 * its resources by reference, not the snapshot they came from. */

struct xds_delta_set {
    int refs;
    enum xds_type type;
    char version[XDS_VERSION_LEN + 1];
    struct xds_delta_set *next; /* pool bucket chain */
    size_t n;
    struct xds_resource *items[]; /* sorted by name, a reference each */
};

#define POOL_BUCKETS 256

struct xds_delta_pool {
    struct xds_delta_set *buckets[POOL_BUCKETS];
    size_t count;
};

struct xds_delta_pool *xds_delta_pool_new(void)
{
    return calloc(1, sizeof(struct xds_delta_pool));
}

void xds_delta_pool_free(struct xds_delta_pool *p)
{
    free(p);
}

size_t xds_delta_pool_count(const struct xds_delta_pool *p)
{
    return p ? p->count : 0;
}

static size_t pool_bucket(enum xds_type type, const char *version)
{
    uint64_t h = cx_fnv64(CX_FNV64_INIT, &type, sizeof(type));
    h = cx_fnv64(h, version, strlen(version));
    return (size_t)(h % POOL_BUCKETS);
}

static struct xds_delta_set *set_get(struct xds_delta_pool *p, enum xds_type type,
                                     const struct xds_resource_set *set)
{
    size_t b = pool_bucket(type, set->version);
    for (struct xds_delta_set *h = p->buckets[b]; h; h = h->next) {
        if (h->type == type && strcmp(h->version, set->version) == 0) {
            h->refs++;
            return h;
        }
    }
    struct xds_delta_set *h = malloc(sizeof(*h) + set->n * sizeof(h->items[0]));
    if (!h)
        return NULL;
    h->refs = 1;
    h->type = type;
    snprintf(h->version, sizeof(h->version), "%s", set->version);
    h->n = set->n;
    for (size_t i = 0; i < set->n; i++)
        h->items[i] = xlate_resource_ref(set->items[i]);
    h->next = p->buckets[b];
    p->buckets[b] = h;
    p->count++;
    return h;
}

static void set_put(struct xds_delta_pool *p, struct xds_delta_set *h)
{
    if (!h || --h->refs > 0)
        return;
    size_t b = pool_bucket(h->type, h->version);
    for (struct xds_delta_set **pp = &p->buckets[b]; *pp; pp = &(*pp)->next) {
        if (*pp == h) {
            *pp = h->next;
            break;
        }
    }
    p->count--;
    for (size_t i = 0; i < h->n; i++)
        xlate_resource_unref(h->items[i]);
    free(h);
}

/* ---- the stream ------------------------------------------------------------------ */

/* The budget is charged with the bytes of names a client makes us keep. */
static int charge(struct xds_delta_stream *s, size_t n)
{
    xds_sub_charge(s->budget, &s->charged, n);
    return 0;
}

static void uncharge(struct xds_delta_stream *s, size_t n)
{
    xds_sub_uncharge(s->budget, &s->charged, n);
}

#define NAME_COST(len) ((len) + 1 + sizeof(char *) + XDS_VERSION_LEN + 1)

void xds_delta_stream_init(struct xds_delta_stream *s, struct xds_delta_pool *pool,
                           struct xds_budget *budget)
{
    memset(s, 0, sizeof(*s));
    s->pool = pool;
    s->budget = budget;
}

static void held_clear(struct xds_delta_stream *s, struct xds_delta_type *t)
{
    for (size_t i = 0; i < t->nheld; i++) {
        uncharge(s, NAME_COST(strlen(t->held[i].name)));
        free(t->held[i].name);
    }
    free(t->held);
    t->held = NULL;
    t->nheld = 0;
}

static void type_free(struct xds_delta_stream *s, struct xds_delta_type *t)
{
    for (size_t i = 0; i < t->nsubs; i++) {
        uncharge(s, NAME_COST(strlen(t->subs[i])));
        free(t->subs[i]);
    }
    free(t->subs);
    free(t->subver);
    held_clear(s, t);
    if (t->shared)
        set_put(s->pool, t->shared);
    memset(t, 0, sizeof(*t));
}

void xds_delta_stream_free(struct xds_delta_stream *s)
{
    for (int i = 0; i < XDS_TYPE_COUNT; i++)
        type_free(s, &s->types[i]);
    xds_sub_node_free(&s->node);
    uncharge(s, s->charged);
}

static size_t find_held(const struct xds_delta_held *v, size_t n, const char *name, int *found)
{
    size_t lo = 0, hi = n;
    *found = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(v[mid].name, name);
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

static const struct xds_resource *set_find(struct xds_resource *const *items, size_t n,
                                           const char *name)
{
    return xds_sub_find_res(items, n, name);
}

/* A subscription: name and, in parallel, the version the client holds
 * ("": told it does not exist; XDS_DELTA_UNKNOWN: never told). */
#define XDS_DELTA_UNKNOWN "\x01"

/* One request may carry 100,000 names (subscribe, unsubscribe, initial
 * versions): each list is sorted once and merged into the stream's sorted
 * arrays in one pass. Inserting names one by one moved the arrays for
 * every name (quadratic: 100,000 names in reverse order held the main loop
 * for seconds). */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The non-NULL |names| (n), sorted and unique, borrowed; with |full|, "*"
 * is left out and reported in *star. */
static int sorted_names(char **names, size_t n, int full, const char ***out, size_t *nout,
                        int *star)
{
    *out = NULL;
    *nout = 0;
    *star = 0;
    if (n == 0)
        return 0;
    const char **v = malloc(n * sizeof(*v));
    if (!v)
        return XDS_ADS_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!names[i])
            continue;
        if (full && strcmp(names[i], "*") == 0) {
            *star = 1;
            continue;
        }
        v[k++] = names[i];
    }
    if (k > 1)
        qsort(v, k, sizeof(*v), cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || strcmp(v[u - 1], v[i]) != 0)
            v[u++] = v[i];
    *out = v;
    *nout = u;
    return 0;
}

/* Heap copies of the names of sorted |v| (n) that |have| (nhave, sorted)
 * lacks, in order; *out NULL when there are none. */
static int fresh_copies(const char *const *v, size_t n, char *const *have, size_t nhave,
                        char ***out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    size_t fresh = 0;
    for (size_t i = 0; i < n; i++) {
        int found;
        xds_sub_find_str(have, nhave, v[i], &found);
        fresh += !found;
    }
    if (fresh == 0)
        return 0;
    char **c = malloc(fresh * sizeof(*c));
    if (!c)
        return XDS_ADS_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int found;
        xds_sub_find_str(have, nhave, v[i], &found);
        if (found)
            continue;
        if (!(c[k] = strdup(v[i]))) {
            while (k > 0)
                free(c[--k]);
            free(c);
            return XDS_ADS_ENOMEM;
        }
        k++;
    }
    *out = c;
    *nout = k;
    return 0;
}

/* A subscription: name and, in parallel, the version the client holds
 * ("": told it does not exist; XDS_DELTA_UNKNOWN: never told). */
#define XDS_DELTA_UNKNOWN "\x01"

/* Subscribes the sorted, unique |add| (n). */
static int subs_add(struct xds_delta_stream *s, struct xds_delta_type *t, const char *const *add,
                    size_t n)
{
    char **c;
    size_t nc;
    int rc = fresh_copies(add, n, t->subs, t->nsubs, &c, &nc);
    if (rc != 0 || nc == 0)
        return rc;
    size_t total = t->nsubs + nc;
    char **v = total <= XDS_ADS_MAX_NAMES ? malloc(total * sizeof(*v)) : NULL;
    char(*sv)[XDS_VERSION_LEN + 1] = v ? malloc(total * sizeof(*sv)) : NULL;
    if (!v || !sv) {
        free(v);
        for (size_t i = 0; i < nc; i++)
            free(c[i]);
        free(c);
        return total > XDS_ADS_MAX_NAMES ? XDS_ADS_ELIMIT : XDS_ADS_ENOMEM;
    }
    size_t i = 0, j = 0, k = 0;
    while (i < t->nsubs || j < nc) {
        if (j == nc || (i < t->nsubs && strcmp(t->subs[i], c[j]) < 0)) {
            v[k] = t->subs[i];
            memcpy(sv[k++], t->subver[i++], sizeof(*sv));
            continue;
        }
        v[k] = c[j];
        xds_sub_copy(sv[k], sizeof(sv[k]), XDS_DELTA_UNKNOWN);
        if (t->shared) { /* a wildcard client may hold it already */
            const struct xds_resource *r = set_find(t->shared->items, t->shared->n, c[j]);
            if (r)
                xds_sub_copy(sv[k], sizeof(sv[k]), r->version);
        }
        charge(s, NAME_COST(strlen(c[j])));
        k++;
        j++;
    }
    free(c);
    free(t->subs);
    free(t->subver);
    t->subs = v;
    t->subver = sv;
    t->nsubs = total;
    return 0;
}

/* Unsubscribes the sorted, unique |del| (n): one pass. */
static void subs_del(struct xds_delta_stream *s, struct xds_delta_type *t, const char *const *del,
                     size_t n)
{
    if (n == 0)
        return;
    size_t k = 0;
    for (size_t i = 0; i < t->nsubs; i++) {
        int found;
        xds_sub_find_str((char *const *)del, n, t->subs[i], &found);
        if (found) {
            uncharge(s, NAME_COST(strlen(t->subs[i])));
            free(t->subs[i]);
            continue;
        }
        t->subs[k] = t->subs[i];
        if (k != i)
            memcpy(t->subver[k], t->subver[i], sizeof(t->subver[k]));
        k++;
    }
    t->nsubs = k;
}

/* Our versions are XDS_VERSION_LEN hex digits; anything else matches none
 * of them and is sent again. */
static void held_version(char *dst, const char *version)
{
    xds_sub_copy(dst, XDS_VERSION_LEN + 1, strlen(version) == XDS_VERSION_LEN ? version : "-");
}

static int cmp_held(const void *a, const void *b)
{
    return strcmp(((const struct xds_delta_held *)a)->name,
                  ((const struct xds_delta_held *)b)->name);
}

/* Puts the |n| names at their versions (|in|, borrowed, any order, a name
 * given twice takes one of its versions) in the held table, one merge. */
static int held_merge(struct xds_delta_stream *s, struct xds_delta_type *t,
                      struct xds_delta_held *in, size_t n)
{
    if (n == 0)
        return 0;
    qsort(in, n, sizeof(*in), cmp_held);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || strcmp(in[u - 1].name, in[i].name) != 0)
            in[u++] = in[i];
    n = u;
    /* copies of the new names first: past them nothing fails */
    char **c = calloc(n, sizeof(*c));
    if (!c)
        return XDS_ADS_ENOMEM;
    size_t nc = 0;
    for (size_t i = 0; i < n; i++) {
        int found;
        find_held(t->held, t->nheld, in[i].name, &found);
        if (!found && (c[i] = strdup(in[i].name)) == NULL)
            break;
        nc += !found;
    }
    size_t total = t->nheld + nc;
    struct xds_delta_held *v = NULL;
    int rc = 0;
    if (total > XDS_ADS_MAX_NAMES)
        rc = XDS_ADS_ELIMIT;
    else if (!(v = malloc(total * sizeof(*v))))
        rc = XDS_ADS_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        int found;
        find_held(t->held, t->nheld, in[i].name, &found);
        if (!found && !c[i])
            rc = XDS_ADS_ENOMEM; /* a strdup failed */
    }
    if (rc != 0) {
        for (size_t i = 0; i < n; i++)
            free(c[i]);
        free(c);
        free(v);
        return rc;
    }
    size_t i = 0, j = 0, k = 0;
    while (i < t->nheld || j < n) {
        int cmp = i == t->nheld ? 1 : j == n ? -1 : strcmp(t->held[i].name, in[j].name);
        if (cmp < 0) {
            v[k++] = t->held[i++];
            continue;
        }
        if (cmp == 0) {
            v[k] = t->held[i++];
        } else {
            v[k].name = c[j];
            charge(s, NAME_COST(strlen(c[j])));
        }
        held_version(v[k++].version, in[j++].version);
    }
    free(c);
    free(t->held);
    t->held = v;
    t->nheld = total;
    return 0;
}

/* The wildcard goes (unsubscribe "*"): the client keeps what it holds of
 * its explicit subscriptions. */
static void wildcard_off(struct xds_delta_stream *s, struct xds_delta_type *t)
{
    for (size_t i = 0; i < t->nsubs; i++) {
        const struct xds_resource *r = NULL;
        int found = 0;
        size_t k = 0;
        if (t->shared)
            r = set_find(t->shared->items, t->shared->n, t->subs[i]);
        else if (t->nheld)
            k = find_held(t->held, t->nheld, t->subs[i], &found);
        xds_sub_copy(t->subver[i], sizeof(t->subver[i]),
                     r       ? r->version
                     : found ? t->held[k].version
                             : XDS_DELTA_UNKNOWN);
    }
    if (t->shared) {
        set_put(s->pool, t->shared);
        t->shared = NULL;
    }
    held_clear(s, t);
    t->wildcard = 0;
}

/* A wildcard comes (subscribe "*"): what the client holds of its explicit
 * subscriptions moves to the held table, diffed at the next evaluation. */
static int wildcard_on(struct xds_delta_stream *s, struct xds_delta_type *t)
{
    if (t->wildcard)
        return 0;
    struct xds_delta_held *in = t->nsubs ? malloc(t->nsubs * sizeof(*in)) : NULL;
    if (t->nsubs && !in)
        return XDS_ADS_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < t->nsubs; i++) {
        if (strcmp(t->subver[i], XDS_DELTA_UNKNOWN) == 0 || !t->subver[i][0])
            continue;
        in[n].name = t->subs[i];
        xds_sub_copy(in[n++].version, sizeof(in[0].version), t->subver[i]);
    }
    int rc = held_merge(s, t, in, n);
    free(in);
    if (rc == 0)
        t->wildcard = 1;
    return rc;
}

int xds_delta_on_request(struct xds_delta_stream *s, const uint8_t *msg, size_t len,
                         const char *default_group, struct xds_ads_event *ev)
{
    memset(ev, 0, sizeof(*ev));
    ev->type = -1;
    ProtobufCMessage *m;
    int rc = xds_sub_decode(&envoy__service__discovery__v3__delta_discovery_request__descriptor,
                            msg, len, ev, &m);
    if (rc != 0)
        return rc;
    Envoy__Service__Discovery__V3__DeltaDiscoveryRequest *req =
        (Envoy__Service__Discovery__V3__DeltaDiscoveryRequest *)m;
    int type;
    rc = xds_sub_begin(&s->node, req->node, req->type_url, default_group, ev, &type);
    if (rc != 0 || type < 0)
        goto out;
    struct xds_delta_type *t = &s->types[type];
    xds_sub_on_nonce(&t->x, req->response_nonce, req->error_detail, ev);
    /* Subscription changes apply whatever the nonce: a client never
     * repeats them. */
    if (req->n_resource_names_subscribe + t->nsubs > XDS_ADS_MAX_NAMES ||
        req->n_initial_resource_versions > XDS_ADS_MAX_NAMES) {
        rc = XDS_ADS_ELIMIT;
        goto out;
    }
    int first = !t->x.requested;
    int full = xds_sub_full_state((enum xds_type)type), star = 0, unstar = 0;
    const char **v = NULL;
    size_t nv = 0;
    rc = sorted_names(req->resource_names_subscribe, req->n_resource_names_subscribe, full, &v, &nv,
                      &star);
    if (rc == 0)
        rc = subs_add(s, t, v, nv);
    free(v);
    if (rc == 0 && star)
        rc = wildcard_on(s, t);
    if (rc != 0)
        goto out;
    ev->names_changed = nv > 0 || star;
    rc = sorted_names(req->resource_names_unsubscribe, req->n_resource_names_unsubscribe, full, &v,
                      &nv, &unstar);
    if (rc != 0)
        goto out;
    subs_del(s, t, v, nv);
    free(v);
    if (unstar && t->wildcard)
        wildcard_off(s, t);
    ev->names_changed |= nv > 0 || unstar;
    if (first) {
        t->x.requested = 1;
        /* legacy wildcard: a first LDS/CDS request that names nothing */
        if (full && req->n_resource_names_subscribe == 0 && (rc = wildcard_on(s, t)) != 0)
            goto out;
        size_t ni = req->n_initial_resource_versions;
        struct xds_delta_held *in = t->wildcard && ni ? malloc(ni * sizeof(*in)) : NULL;
        if (t->wildcard && ni && !in) {
            rc = XDS_ADS_ENOMEM;
            goto out;
        }
        size_t n = 0;
        for (size_t i = 0; i < ni; i++) {
            const Envoy__Service__Discovery__V3__DeltaDiscoveryRequest__InitialResourceVersionsEntry
                *e = req->initial_resource_versions[i];
            if (!e || !e->key)
                continue;
            const char *ver = e->value ? e->value : "";
            if (in) {
                in[n].name = e->key;
                xds_sub_copy(in[n++].version, sizeof(in[0].version),
                             strlen(ver) == XDS_VERSION_LEN ? ver : "-");
            } else {
                int found;
                size_t k = xds_sub_find_str(t->subs, t->nsubs, e->key, &found);
                if (found)
                    held_version(t->subver[k], ver);
            }
        }
        rc = held_merge(s, t, in, n);
        free(in);
        if (rc != 0)
            goto out;
    }
    t->dirty = 1;
out:
    protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}

/* ---- responses --------------------------------------------------------------------- */

void xds_delta_response_clear(struct xds_delta_response *r)
{
    for (size_t i = 0; i < r->n; i++)
        xlate_resource_unref(r->items[i]);
    free(r->items);
    for (size_t i = 0; i < r->nremoved; i++)
        free(r->removed[i]);
    free(r->removed);
    memset(r, 0, sizeof(*r));
}

struct diff {
    struct xds_resource **items;
    size_t n, cap;
    char **removed;
    size_t nremoved, rcap;
};

static int diff_send(struct diff *d, struct xds_resource *r)
{
    if (d->n == d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 8;
        struct xds_resource **v = realloc(d->items, nc * sizeof(*v));
        if (!v)
            return XDS_ADS_ENOMEM;
        d->items = v;
        d->cap = nc;
    }
    d->items[d->n++] = xlate_resource_ref(r);
    return 0;
}

static int diff_remove(struct diff *d, const char *name)
{
    if (d->nremoved == d->rcap) {
        size_t nc = d->rcap ? d->rcap * 2 : 8;
        char **v = realloc(d->removed, nc * sizeof(*v));
        if (!v)
            return XDS_ADS_ENOMEM;
        d->removed = v;
        d->rcap = nc;
    }
    if (!(d->removed[d->nremoved] = strdup(name)))
        return XDS_ADS_ENOMEM;
    d->nremoved++;
    return 0;
}

static void diff_free(struct diff *d)
{
    for (size_t i = 0; i < d->n; i++)
        xlate_resource_unref(d->items[i]);
    free(d->items);
    for (size_t i = 0; i < d->nremoved; i++)
        free(d->removed[i]);
    free(d->removed);
}

static int same(const struct xds_resource *a, const struct xds_resource *b)
{
    return a == b || strcmp(a->version, b->version) == 0;
}

/* Wildcard: the whole set against what the client holds (a shared set, or
 * the held table of initial_resource_versions). */
static int diff_wildcard(struct xds_delta_type *t, const struct xds_resource_set *set,
                         struct diff *d)
{
    size_t i = 0, j = 0;
    int rc = 0;
    if (t->shared) {
        struct xds_resource *const *h = t->shared->items;
        size_t hn = t->shared->n;
        while (rc == 0 && (i < hn || j < set->n)) {
            int c = i == hn ? 1 : j == set->n ? -1 : strcmp(h[i]->name, set->items[j]->name);
            if (c == 0) {
                if (!same(h[i], set->items[j]))
                    rc = diff_send(d, set->items[j]);
                i++;
                j++;
            } else if (c < 0) {
                rc = diff_remove(d, h[i++]->name);
            } else {
                rc = diff_send(d, set->items[j++]);
            }
        }
        return rc;
    }
    while (rc == 0 && (i < t->nheld || j < set->n)) {
        int c = i == t->nheld ? 1 : j == set->n ? -1 : strcmp(t->held[i].name, set->items[j]->name);
        if (c == 0) {
            if (strcmp(t->held[i].version, set->items[j]->version) != 0)
                rc = diff_send(d, set->items[j]);
            i++;
            j++;
        } else if (c < 0) {
            if (t->held[i].version[0])
                rc = diff_remove(d, t->held[i].name);
            i++;
        } else {
            rc = diff_send(d, set->items[j++]);
        }
    }
    return rc;
}

/* Named: each subscription against the set; absent names are said once. */
static int diff_named(struct xds_delta_type *t, const struct xds_resource_set *set, struct diff *d)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < t->nsubs; i++) {
        const struct xds_resource *r = set_find(set->items, set->n, t->subs[i]);
        if (r) {
            if (strcmp(t->subver[i], r->version) != 0) {
                rc = diff_send(d, (struct xds_resource *)r);
                if (rc == 0)
                    xds_sub_copy(t->subver[i], sizeof(t->subver[i]), r->version);
            }
        } else if (t->subver[i][0]) {
            rc = diff_remove(d, t->subs[i]);
            if (rc == 0)
                t->subver[i][0] = '\0';
        }
    }
    return rc;
}

static int eval_type(struct xds_delta_stream *s, enum xds_type type,
                     const struct xds_resource_set *set, int64_t origin_ns,
                     struct xds_delta_response *out)
{
    struct xds_delta_type *t = &s->types[type];
    if (!xds_sub_ready(&t->x, set))
        return 0;
    if (!t->dirty && t->eval_set == set && strcmp(t->eval_version, set->version) == 0)
        return 0;
    struct diff d = {0};
    int rc = t->wildcard ? diff_wildcard(t, set, &d) : diff_named(t, set, &d);
    if (rc != 0) {
        diff_free(&d);
        return rc;
    }
    if (t->wildcard) {
        /* the client now holds exactly |set| */
        struct xds_delta_set *h = set_get(s->pool, type, set);
        if (!h) {
            diff_free(&d);
            return XDS_ADS_ENOMEM;
        }
        if (t->shared)
            set_put(s->pool, t->shared);
        t->shared = h;
        held_clear(s, t);
        for (size_t i = 0; i < t->nsubs; i++) {
            const struct xds_resource *r = set_find(set->items, set->n, t->subs[i]);
            xds_sub_copy(t->subver[i], sizeof(t->subver[i]), r ? r->version : XDS_DELTA_UNKNOWN);
        }
    }
    t->eval_set = set;
    xds_sub_copy(t->eval_version, sizeof(t->eval_version), set->version);
    t->dirty = 0;
    if (d.n == 0 && d.nremoved == 0) {
        diff_free(&d);
        return 0;
    }
    memset(out, 0, sizeof(*out));
    out->type = type;
    out->items = d.items;
    out->n = d.n;
    out->removed = d.removed;
    out->nremoved = d.nremoved;
    xds_sub_copy(out->version, sizeof(out->version), set->version);
    xds_sub_sent(&t->x, &s->nonce_counter, set->version, origin_ns, out->nonce);
    return 1;
}

int xds_delta_next(struct xds_delta_stream *s, const struct xds_ads_sets *sets, int64_t origin_ns,
                   struct xds_delta_response *out)
{
    if (!sets || !s->node.have)
        return 0;
    for (int i = 0; i < XDS_TYPE_COUNT; i++) {
        enum xds_type type = xds_ads_order(i);
        int rc = eval_type(s, type, sets->t[type], origin_ns, out);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* ---- wire encoding -----------------------------------------------------------------
 * DeltaDiscoveryResponse by hand, each resource's bytes wrapped in Any
 * without being re-encoded. */

enum {
    DD_SYSTEM_VERSION_INFO = 1,
    DD_RESOURCES = 2, /* Resource */
    DD_TYPE_URL = 4,
    DD_NONCE = 5,
    DD_REMOVED_RESOURCES = 6,
    DD_CONTROL_PLANE = 7,
    RES_VERSION = 1,
    RES_RESOURCE = 2, /* Any */
    RES_NAME = 3,
};

static size_t resource_size(const char *url, const struct xds_resource *r)
{
    return cx_wire_len_size(RES_NAME, strlen(r->name)) +
           cx_wire_len_size(RES_VERSION, strlen(r->version)) +
           cx_wire_len_size(RES_RESOURCE, xds_sub_any_size(url, r));
}

size_t xds_delta_response_size(const struct xds_delta_response *r, const char *identifier)
{
    const char *url = xlate_type_url(r->type);
    size_t n = 0;
    if (r->version[0])
        n += cx_wire_len_size(DD_SYSTEM_VERSION_INFO, strlen(r->version));
    for (size_t i = 0; i < r->n; i++)
        n += cx_wire_len_size(DD_RESOURCES, resource_size(url, r->items[i]));
    n += cx_wire_len_size(DD_TYPE_URL, strlen(url));
    if (r->nonce[0])
        n += cx_wire_len_size(DD_NONCE, strlen(r->nonce));
    for (size_t i = 0; i < r->nremoved; i++)
        n += cx_wire_len_size(DD_REMOVED_RESOURCES, strlen(r->removed[i]));
    n += xds_sub_control_plane_size(DD_CONTROL_PLANE, identifier);
    return n;
}

int xds_delta_response_emit(const struct xds_delta_response *r, const char *identifier,
                            xds_ads_emit_fn emit, void *user)
{
    const char *url = xlate_type_url(r->type);
    size_t urllen = strlen(url);
    int rc = r->version[0] ? xds_sub_emit_ld(emit, user, DD_SYSTEM_VERSION_INFO, strlen(r->version),
                                             r->version)
                           : 0;
    for (size_t i = 0; rc == 0 && i < r->n; i++) {
        struct xds_resource *res = r->items[i];
        rc = xds_sub_emit_ld(emit, user, DD_RESOURCES, resource_size(url, res), NULL);
        if (rc == 0)
            rc = xds_sub_emit_ld(emit, user, RES_NAME, strlen(res->name), res->name);
        if (rc == 0)
            rc = xds_sub_emit_ld(emit, user, RES_VERSION, strlen(res->version), res->version);
        if (rc == 0)
            rc = xds_sub_emit_any(emit, user, RES_RESOURCE, url, res);
    }
    if (rc == 0)
        rc = xds_sub_emit_ld(emit, user, DD_TYPE_URL, urllen, url);
    if (rc == 0 && r->nonce[0])
        rc = xds_sub_emit_ld(emit, user, DD_NONCE, strlen(r->nonce), r->nonce);
    for (size_t i = 0; rc == 0 && i < r->nremoved; i++)
        rc =
            xds_sub_emit_ld(emit, user, DD_REMOVED_RESOURCES, strlen(r->removed[i]), r->removed[i]);
    if (rc == 0)
        rc = xds_sub_emit_control_plane(emit, user, DD_CONTROL_PLANE, identifier);
    return rc;
}
