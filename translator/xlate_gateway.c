/*
 * Gateways, the second half of a pass (see xlate_internal.h): each
 * accepted Gateway's memo is patched for what the pass touched, in four
 * phases (selection, resolution, domain claims, resources), and holds the
 * Gateway's four sorted resource sets, patched in place so unchanged
 * resources keep their bytes.
 */
#include "xlate_internal.h"

#include "cx_hash.h"
#include "xlate_tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    const struct xl_gateway *g = &gwe->obj->u.gw;
    return !v->deleted && v->parse_state != XLATE_REJECTED && ns_allowed(g, v->obj->meta.ns) &&
           xlate_selector_matches(g->vs_selector, v);
}

/* The claim order, the same in a cluster and offline: the oldest
 * VirtualService first (metadata.creationTimestamp, to the second); one
 * without a creation time (a manifest not yet applied: `coxswain
 * translate` of files) after every one with, as it would be created after
 * them; ties in namespace/name order. Domain claims and the Gateway's
 * budgets are taken in this order. */
static int claim_cmp(const void *a, const void *b)
{
    const struct xl_entry *x = *(struct xl_entry *const *)a;
    const struct xl_entry *y = *(struct xl_entry *const *)b;
    if (x->has_created != y->has_created)
        return x->has_created ? -1 : 1;
    if (x->has_created && x->created != y->created)
        return x->created < y->created ? -1 : 1;
    return xlate_entry_cmp(x, y);
}

/* Which part of claim_cmp put |first| before |v|, for their messages. */
static void claim_rule(const struct xl_entry *first, const struct xl_entry *v, char *out, size_t n)
{
    char t1[32], t2[32];
    xlate_tls_time_str(first->created, t1, sizeof(t1));
    xlate_tls_time_str(v->created, t2, sizeof(t2));
    if (first->has_created && v->has_created && first->created != v->created)
        snprintf(out, n, "the oldest keeps it: %s was created at %s, this one at %s", first->key,
                 t1, t2);
    else if (first->has_created && v->has_created)
        snprintf(out, n, "both were created at %s, so the first in namespace/name order keeps it",
                 t1);
    else if (first->has_created)
        snprintf(out, n,
                 "%s was created at %s and this one has no creationTimestamp (a manifest not "
                 "yet applied counts as created after every existing object)",
                 first->key, t1);
    else
        snprintf(out, n,
                 "neither has a creationTimestamp (manifests not yet applied), so the first in "
                 "namespace/name order keeps it");
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

static void set_free(struct xds_resource_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        xlate_resource_unref(s->items[i]);
    free(s->items);
    memset(s, 0, sizeof(*s));
}

static void free_slots(struct xl_gw_memo *m)
{
    for (size_t i = 0; i < m->nacc; i++)
        free(m->acc[i].ups);
    free(m->acc);
    m->acc = NULL;
    m->nacc = 0;
}

void xlate_gw_memo_free(struct xl_gw_memo *m)
{
    if (!m)
        return;
    free(m->sel);
    free_slots(m);
    xlate_map_free_vals(&m->conflicts);
    xlate_map_free_vals(&m->upcount);
    xlate_resource_unref(m->rc);
    for (size_t i = 0; i < m->nlrc; i++)
        xlate_resource_unref(m->lrc[i].rc);
    free(m->lrc);
    for (size_t i = 0; i < m->nlisteners; i++)
        xlate_resource_unref(m->listeners[i]);
    free(m->listeners);
    const struct cx_map_slot *s;
    for (size_t i = 0; cx_map_next(&m->api_listeners, &i, &s);) {
        struct xl_api_listener *al = s->val;
        xlate_resource_unref(al->r);
        free(al);
    }
    cx_map_free(&m->api_listeners);
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        set_free(&m->sets[t]);
    free(m->touched.items);
    xlate_map_free_vals(&m->uncovered);
    for (size_t i = 0; i < m->ncert_notes; i++)
        free(m->cert_notes[i]);
    free(m->cert_notes);
    for (size_t i = 0; i < m->nown_sds; i++)
        xlate_resource_unref(m->own_sds[i]);
    free(m->own_sds);
    free(m);
}

/* Frees a Gateway's memo, marking the reports that depended on it. */
int xlate_gw_memo_drop(struct xlate_ctx *ctx, struct xl_gw_memo *m)
{
    int rc = 0;
    if (!m)
        return 0;
    for (size_t i = 0; i < m->nsel; i++) {
        xlate_gw_sel_unmark(m, m->sel[i]);
        if (rc == 0)
            rc = xlate_usage_changed(ctx, m->sel[i]);
    }
    const struct cx_map_slot *u;
    for (size_t i = 0; rc == 0 && cx_map_next(&m->uncovered, &i, &u);) {
        struct xl_entry *v = xlate_find_key(ctx, XLATE_KIND_VIRTUAL_SERVICE, u->key);
        if (v)
            rc = xlate_rep_dirty(ctx, v);
    }
    const struct cx_map_slot *s;
    for (size_t i = 0; rc == 0 && cx_map_next(&m->upcount, &i, &s);)
        rc = xlate_rep_dirty(ctx, ((struct xl_ucount *)s->val)->up);
    xlate_gw_memo_free(m);
    return rc;
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

int xlate_gw_set_put(struct xl_gw_memo *m, int t, struct xds_resource *r)
{
    return set_put(m, t, r);
}

void xlate_gw_set_del(struct xl_gw_memo *m, int t, const char *name,
                      const struct xds_resource *only)
{
    set_del(m, t, name, only);
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
 * Upstream deleted and re-created in one pass is two entries with one name.
 * The Upstream remembers its count in the memo looked up last: with one
 * Gateway, no lookup touches the map (at 100k Upstreams, a cache miss on
 * its table and one on the count each). */
static void ucount_remember(const struct xl_gw_memo *m, const struct xl_entry *up,
                            struct xl_ucount *c)
{
    if (up->up && c) {
        up->up->uc_memo = m->id;
        up->up->uc = c;
    }
}

struct xl_ucount *xlate_gw_ucount(const struct xl_gw_memo *m, const struct xl_entry *up)
{
    const struct xl_up_memo *u = up->up;
    if (u && u->uc && u->uc_memo == m->id)
        return u->uc;
    struct xl_ucount *c = cx_map_get(&m->upcount, &up, sizeof(up));
    ucount_remember(m, up, c);
    return c;
}

/* Whether Upstream |up| brings SDS Secrets, or changed them this pass. */
static int sds_matters(const struct xlate_ctx *ctx, const struct xl_entry *up)
{
    const struct xl_up_memo *u = up->up;
    return u && (u->sds[0] || u->sds[1] || u->sds_changed == ctx->pass);
}

static int count_upstream(struct xlate_ctx *ctx, struct xl_gw_memo *m, struct xl_entry *up,
                          int delta)
{
    struct xl_ucount *c = xlate_gw_ucount(m, up);
    if (!c || (delta < 0 && c->count == 1))
        m->sds_dirty |= sds_matters(ctx, up);
    if (delta > 0) {
        if (c) {
            c->count++;
            return 0;
        }
        if (!(c = calloc(1, sizeof(*c))))
            return -1;
        c->up = up;
        c->count = 1;
        if (cx_map_put(&m->upcount, &c->up, sizeof(c->up), c, NULL) != 0) {
            free(c);
            return -1;
        }
        ucount_remember(m, up, c);
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
    cx_map_del(&m->upcount, &c->up, sizeof(c->up));
    if (up->up && up->up->uc == c)
        up->up->uc = NULL;
    free(c);
    /* unless a successor of the same name (deleted and re-created in one
     * pass) is counted and holds the slots now */
    struct xl_entry *succ = xlate_find_key(ctx, XLATE_KIND_UPSTREAM, up->key);
    if (!(succ && succ != up && xlate_gw_ucount(m, succ))) {
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
    s->nroutes = r->nroutes;
    memcpy(s->hash, r->vh_hash, sizeof(s->hash));
    s->ups = malloc((r->nups ? r->nups : 1) * sizeof(*s->ups));
    if (!s->ups)
        return -1;
    if (r->nups) /* none: a VirtualService whose routes only redirect */
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

/* A Gateway's budgets while its VirtualServices are accepted, oldest
 * first: what the accepted ones hold so far. */
struct budget {
    size_t routes;    /* in the RouteConfiguration */
    size_t bytes;     /* of the RouteConfiguration */
    size_t resources; /* listeners, the route configuration, clusters, endpoints */
    uint64_t run;     /* the Upstreams counted carry it in up->budget_run */
};

static void budget_start(struct budget *b, struct xlate_ctx *ctx, const struct xl_entry *gwe,
                         enum xlate_gateway_mode mode)
{
    b->run = ++ctx->claims_run;
    b->bytes = gwe->keylen + 12; /* the name, with its tag and length */
    /* the RouteConfiguration, and the envoy-mode listeners */
    const struct xl_gateway *g = &gwe->obj->u.gw;
    b->resources = 1 + (mode == XLATE_MODE_ENVOY ? (g->nlisteners ? g->nlisteners : 1) : 0);
}

/* The VirtualHost's bytes in a RouteConfiguration: tag, length, message. */
static size_t vh_framed(size_t len)
{
    size_t n = 1;
    for (size_t l = len; l >= 0x80; l >>= 7)
        n++;
    return 1 + n + len;
}

/* Whether |v| fits in what is left of the Gateway's budgets: 1 and it is
 * counted in |b|, 0 with |msg| saying which budget it would pass and the
 * numbers. An Upstream is counted once, stamped with the budget's run
 * (every usable Upstream entry has its memo). */
static int budget_fits(struct budget *b, const struct xlate_limits *lim,
                       enum xlate_gateway_mode mode, const struct xl_entry *v,
                       const struct xl_entry *gwe, char *msg, size_t msglen)
{
    const struct xl_vs_res *r = &v->res[mode];
    size_t bytes = vh_framed(r->vhlen), fresh = 0, listeners = 0;
    for (size_t k = 0; k < r->nups; k++)
        fresh += r->ups[k]->up->budget_run != b->run;
    if (mode == XLATE_MODE_PROXYLESS)
        for (size_t k = 0; k < v->obj->u.vs.ndomains; k++)
            listeners += !strchr(v->obj->u.vs.domains[k], '*');
    size_t more = listeners + 2 * fresh; /* a Cluster and a ClusterLoadAssignment each */
    if (b->routes + r->nroutes > (size_t)lim->routes_per_gateway) {
        snprintf(msg, msglen,
                 "Gateway %s serves %zu routes of older VirtualServices; this one's %zu more "
                 "would pass the limit of %ld (--max-routes-per-gateway)",
                 gwe->key, b->routes, r->nroutes, lim->routes_per_gateway);
        return 0;
    }
    if (b->bytes + bytes > (size_t)lim->resource_bytes) {
        snprintf(msg, msglen,
                 "Gateway %s's RouteConfiguration holds %zu bytes of older VirtualServices; "
                 "this one's %zu more would pass the limit of %ld (--max-resource-bytes)",
                 gwe->key, b->bytes, bytes, lim->resource_bytes);
        return 0;
    }
    if (b->resources + more > (size_t)lim->resources_per_gateway) {
        snprintf(msg, msglen,
                 "Gateway %s holds %zu xDS resources for older VirtualServices; this one's %zu "
                 "more (listeners, and a cluster and endpoints per new Upstream) would pass "
                 "the limit of %ld (--max-resources-per-gateway)",
                 gwe->key, b->resources, more, lim->resources_per_gateway);
        return 0;
    }
    for (size_t k = 0; k < r->nups; k++)
        r->ups[k]->up->budget_run = b->run;
    b->routes += r->nroutes;
    b->bytes += bytes;
    b->resources += more;
    return 1;
}

/* Records why VirtualService |v| is not served on the Gateway (a domain
 * conflict or a budget). Returns 0 or -1. */
static int refuse(struct xl_gw_memo *m, const struct xl_entry *v, enum xl_reason why,
                  const char *text)
{
    size_t tl = strlen(text);
    struct xl_refusal *f = malloc(sizeof(*f) + tl + 1);
    if (!f)
        return -1;
    f->reason = why;
    memcpy(f->msg, text, tl + 1);
    if (cx_map_put(&m->conflicts, v->key, v->keylen, f, NULL) != 0) {
        free(f);
        return -1;
    }
    m->nbudget += why == XL_R_BUDGET;
    m->nnolistener += why == XL_R_LISTENER_NOT_FOUND;
    return 0;
}

/* Domain claims over the whole selection: each domain goes to the oldest
 * VirtualService; a younger one asking for a taken domain is rejected on
 * this Gateway, and so is one that would pass a budget of the Gateway
 * (routes, RouteConfiguration bytes, resources) when the older ones are
 * counted. Rebuilds the accepted slots, their Upstream counts, the totals
 * and the refusal messages. */
static int compute_claims(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m)
{
    int rc = -1;
    struct xl_entry **order = malloc((m->nsel ? m->nsel : 1) * sizeof(*order));
    struct cx_map owner = {0};
    struct xl_arena keys = {0};
    struct xl_slot *acc = NULL, *old = m->acc;
    size_t nold = m->nacc, nacc = 0;
    struct budget b = {0};
    budget_start(&b, ctx, gwe, m->mode);
    if (!order)
        goto out;
    for (size_t i = 0; i < nold; i++)
        (void)xlate_rep_dirty(ctx, old[i].vs);
    const struct cx_map_slot *cs;
    for (size_t i = 0; cx_map_next(&m->conflicts, &i, &cs);) {
        struct xl_entry *v = xlate_find_key(ctx, XLATE_KIND_VIRTUAL_SERVICE, cs->key);
        if (v)
            (void)xlate_rep_dirty(ctx, v);
    }
    xlate_map_free_vals(&m->conflicts);
    m->nbudget = 0;
    m->nnolistener = 0;
    size_t n = 0;
    for (size_t i = 0; i < m->nsel; i++) {
        struct xl_entry *v = m->sel[i];
        v->mark = 0;
        if (v->res[m->mode].nroutes)
            order[n++] = v;
    }
    xlate_sort_unless_sorted(order, n, sizeof(*order), claim_cmp);
    /* room for every domain and Upstream the candidates name: the maps are
     * filled by tens of thousands of puts, each doubling a rehash */
    size_t ndom = 0, nups = 0;
    for (size_t i = 0; i < n; i++) {
        ndom += order[i]->obj->u.vs.ndomains;
        nups += order[i]->res[m->mode].nups;
    }
    if (nups > ctx->nlist[XLATE_KIND_UPSTREAM])
        nups = ctx->nlist[XLATE_KIND_UPSTREAM];
    if (cx_map_reserve(&owner, ndom) != 0 || cx_map_reserve(&m->upcount, nups) != 0)
        goto out;
    size_t naccepted = 0;
    for (size_t i = 0; i < n; i++) {
        struct xl_entry *v = order[i];
        const struct xl_virtual_service *vs = &v->obj->u.vs;
        char d[300];
        struct xl_entry *other = NULL;
        const char *dom = NULL;
        for (size_t k = 0; k < vs->ndomains && !other; k++) {
            lower(d, vs->domains[k], sizeof(d));
            other = cx_map_gets(&owner, d);
            dom = vs->domains[k];
        }
        char buf[900];
        enum xl_reason why = XL_R_NONE;
        if (m->mode == XLATE_MODE_ENVOY && !xlate_gw_serves(gwe, vs, buf, sizeof(buf))) {
            why = XL_R_LISTENER_NOT_FOUND; /* claims no domain here */
        } else if (other) {
            char rule[400];
            claim_rule(other, v, rule, sizeof(rule));
            snprintf(buf, sizeof(buf),
                     "domain \"%s\" is already served by VirtualService %s on Gateway %s: %s", dom,
                     other->key, gwe->key, rule);
            why = XL_R_DOMAIN_CONFLICT;
        } else if (!budget_fits(&b, &ctx->limits, m->mode, v, gwe, buf, sizeof(buf))) {
            why = XL_R_BUDGET;
        }
        if (why != XL_R_NONE) {
            if (refuse(m, v, why, buf) != 0)
                goto out;
            (void)xlate_rep_dirty(ctx, v);
            continue;
        }
        for (size_t k = 0; k < vs->ndomains; k++) {
            lower(d, vs->domains[k], sizeof(d));
            char *kd = xlate_strdup(&keys, d);
            if (!kd || cx_map_put(&owner, kd, strlen(kd), v, NULL) != 0)
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
            xlate_sort_unless_sorted(m->sets[t].items, m->sets[t].n, sizeof(*m->sets[t].items),
                                     res_cmp_name);
            m->unsorted[t] = 0;
        }
    for (size_t i = 0; i < nold; i++)
        slot_release(ctx, m, &old[i]);
    free(old);
    m->acc = acc;
    m->nacc = nacc;
    m->acc_routes = b.routes;
    m->acc_bytes = b.bytes;
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
    cx_map_free(&owner);
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
    struct xds_resource *r;
    if (xlate_gw_encode_rc(ctx, gwe->key, m->acc, m->nacc, 0, NULL, m->rc_hash, m->rc, &r) != 0)
        return -1;
    if (!r) /* the same virtual hosts */
        return 0;
    if (m->rc)
        set_del(m, XDS_ROUTE, m->rc->name, m->rc);
    xlate_resource_unref(m->rc);
    m->rc = r;
    return set_put(m, XDS_ROUTE, r);
}

static int build_lds(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m,
                     int gw_changed)
{
    char sp[300];
    stat_prefix(sp, sizeof(sp), gwe->key);
    if (m->mode == XLATE_MODE_ENVOY) {
        const struct xl_gw_tls *t = gwe->gtls;
        /* a TLS listener also follows its certificates and the served
         * domains (SNI) */
        if (m->nlisteners && !gw_changed && !m->lds_names_dirty &&
            (!t || (!m->lds_dirty && m->lds_tls_digest == t->digest)))
            return 0;
        struct xds_resource **ls = NULL;
        size_t n = 0;
        if (xlate_gw_listeners(ctx, gwe, m, sp, &ls, &n) != 0)
            return -1;
        m->lds_dirty = m->lds_names_dirty = 0;
        m->lds_tls_digest = t ? t->digest : 0;
        /* a Listener whose bytes did not change keeps its resource (a new
         * certificate for the same names: the key is in an SDS Secret; a
         * sibling's RouteConfiguration changed), so no drain */
        size_t kept = 0;
        for (size_t i = 0; i < n && i < m->nlisteners; i++) {
            struct xds_resource *o = m->listeners[i];
            if (ls[i]->len == o->len && strcmp(ls[i]->name, o->name) == 0 &&
                memcmp(ls[i]->bytes, o->bytes, o->len) == 0) {
                xlate_resource_unref(ls[i]);
                ls[i] = o; /* with the memo's reference */
                m->listeners[i] = NULL;
                kept++;
            }
        }
        for (size_t i = 0; i < m->nlisteners; i++)
            if (m->listeners[i]) {
                set_del(m, XDS_LISTENER, m->listeners[i]->name, m->listeners[i]);
                xlate_resource_unref(m->listeners[i]);
            }
        free(m->listeners);
        ctx->stats.resources_reused += kept;
        ctx->stats.resources_built += n - kept;
        m->listeners = ls;
        m->nlisteners = n;
        for (size_t i = 0; i < n; i++)
            if (set_put(m, XDS_LISTENER, ls[i]) != 0)
                return -1;
        return 0;
    }
    if (!m->lds_dirty && !gw_changed)
        return 0;
    /* one API Listener per exact domain of an accepted VirtualService */
    struct cx_map fresh = {0};
    int rc = 0;
    for (size_t i = 0; i < m->nacc && rc == 0; i++) {
        const struct xl_virtual_service *vs = &m->acc[i].vs->obj->u.vs;
        for (size_t k = 0; k < vs->ndomains && rc == 0; k++) {
            const char *d = vs->domains[k];
            size_t dl = strlen(d);
            if (strchr(d, '*'))
                continue;
            /* an API listener keeps its bytes while its domain stays served */
            struct xl_api_listener *al = cx_map_del(&m->api_listeners, d, dl);
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
            if (cx_map_put(&fresh, al->domain, dl, al, NULL) != 0) {
                xlate_resource_unref(al->r);
                free(al);
                rc = -1;
                break;
            }
        }
    }
    /* listeners of domains no longer served go */
    const struct cx_map_slot *s;
    for (size_t i = 0; cx_map_next(&m->api_listeners, &i, &s);) {
        struct xl_api_listener *al = s->val;
        xlate_resource_unref(al->r);
        free(al);
    }
    cx_map_free(&m->api_listeners);
    m->api_listeners = fresh;
    if (rc != 0)
        return -1;
    /* rebuild the sorted set from the map */
    set_free(&m->sets[XDS_LISTENER]);
    m->cap[XDS_LISTENER] = 0;
    size_t n = cx_map_len(&fresh);
    struct xds_resource **items = malloc((n ? n : 1) * sizeof(*items));
    if (!items)
        return -1;
    size_t j = 0;
    for (size_t i = 0; cx_map_next(&fresh, &i, &s);)
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

/* Phase 1, selection. Accepts an accepted Gateway entry; its memo is kept
 * while the Gateway's digest is unchanged, and dropped otherwise (mode,
 * selector or bind address changed: start over; the reports that depended
 * on it are marked). Leaves behind the memo in ctx->gw_memo with
 * |m->sel| holding every VirtualService the Gateway selects (selects():
 * not deleted, not Rejected, in an allowed namespace, matching the
 * selector), |m->touched| the selected ones this pass must look at again,
 * and claims_dirty set when membership changed. *gw_changed says whether
 * the memo is new. Returns the memo, or NULL (memory). */
static struct xl_gw_memo *gw_select(struct xlate_ctx *ctx, struct xl_entry *gwe, int *gw_changed)
{
    struct xl_gw_memo *m = cx_map_get(&ctx->gw_memo, gwe->key, gwe->keylen);
    *gw_changed = !m || m->gw_digest != gwe->digest;
    if (m && *gw_changed) {
        cx_map_del(&ctx->gw_memo, gwe->key, gwe->keylen);
        if (xlate_gw_memo_drop(ctx, m) != 0)
            return NULL;
        m = NULL;
    }
    if (!m) {
        m = calloc(1, sizeof(*m));
        if (!m || cx_map_put(&ctx->gw_memo, gwe->key, gwe->keylen, m, NULL) != 0) {
            free(m);
            return NULL;
        }
        m->id = ++ctx->memo_serial;
        m->mode = gwe->obj->u.gw.mode;
        m->gw_digest = gwe->digest;
        const struct xl_entry_list all = {ctx->list[XLATE_KIND_VIRTUAL_SERVICE],
                                          ctx->nlist[XLATE_KIND_VIRTUAL_SERVICE], 0};
        for (size_t i = 0; i < all.n; i++) {
            struct xl_entry *v = all.items[i];
            xlate_list_prefetch(&all, i);
            if (selects(gwe, v) &&
                (xlate_gw_sel_add(m, v) != 0 || xlate_usage_changed(ctx, v) != 0))
                return NULL;
        }
        m->claims_dirty = 1;
        for (size_t i = 0; i < m->nsel; i++)
            if (xlate_list_push(&m->touched, m->sel[i]) != 0)
                return NULL;
        return m;
    }
    /* membership and resolution changes of the touched VirtualServices */
    for (size_t i = 0; i < ctx->vs_touched.n; i++) {
        struct xl_entry *v = ctx->vs_touched.items[i];
        int want = selects(gwe, v);
        long at = xlate_gw_find_sel(m, v);
        if (want && at < 0) {
            if (xlate_gw_sel_add(m, v) != 0 || xlate_usage_changed(ctx, v) != 0)
                return NULL;
            m->claims_dirty = 1;
        } else if (!want && at >= 0) {
            xlate_sorted_remove(m->sel, &m->nsel, v);
            xlate_gw_sel_unmark(m, v);
            if (xlate_gw_find_acc(m, v) >= 0 || cx_map_get(&m->conflicts, v->key, v->keylen))
                m->claims_dirty = 1;
            if (xlate_usage_changed(ctx, v) != 0)
                return NULL;
            continue;
        }
        if (want && xlate_list_push(&m->touched, v) != 0)
            return NULL;
    }
    return m;
}

/* Phase 2, resolution. Accepts the memo with its touched list; every
 * touched VirtualService without a current resolution for the Gateway's
 * mode is resolved (routes after delegation, its encoded virtual host:
 * xlate_resolve_vs, which records what it refuses in the resolution's
 * messages). Leaves behind a valid resolution for each, their reports
 * marked, and claims_dirty set when a claim (domains, creation, served or
 * not) changed. Returns 0 or -1 (memory). */
static int gw_resolve(struct xlate_ctx *ctx, struct xl_gw_memo *m)
{
    /* Many at once (a first pass) are resolved in memory order, where
     * entries and their parse arenas were allocated one after another,
     * instead of in name order (scattered). Nothing in the output follows
     * this order: each resolution is its own, and a RouteTable's report
     * sorts what its delegators left (test_large_first_pass_order_free). */
    if (m->touched.n > 256)
        qsort(m->touched.items, m->touched.n, sizeof(*m->touched.items), addr_cmp);
    for (size_t i = 0; i < m->touched.n; i++) {
        struct xl_entry *v = m->touched.items[i];
        xlate_list_prefetch(&m->touched, i);
        xlate_resolve_prefetch(ctx, &m->touched, i);
        struct xl_vs_res *r = &v->res[m->mode];
        if (!r->valid && xlate_resolve_vs(ctx, v, m->mode) != 0)
            return -1;
        if (v->claim_changed[m->mode] == ctx->pass)
            m->claims_dirty = 1;
        if (xlate_rep_dirty(ctx, v) != 0)
            return -1;
    }
    ctx->stats.vhosts_reused += m->nsel - m->touched.n;
    return 0;
}

/* Phase 3, acceptance. Accepts the resolved selection; when claims are
 * dirty, domains are claimed anew over the whole selection (the oldest
 * VirtualService keeps a domain; a younger one is refused on this Gateway
 * with a DomainConflict message), otherwise only the touched accepted
 * slots take their new virtual hosts. Leaves behind |m->acc| (the accepted
 * slots, in name order) with their Upstreams counted into the CDS and EDS
 * sets, rc_dirty set when the route configuration must be rebuilt, and an
 * empty touched list. Returns 0 or -1 (memory). */
static int gw_accept(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m)
{
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
            m->acc_routes += s->nroutes - old.nroutes;
            m->acc_bytes += vh_framed(s->vhlen) - vh_framed(old.vhlen);
            slot_release(ctx, m, &old);
            m->rc_dirty = 1;
        }
        /* a patched VirtualService that grew past a budget, or one refused
         * for a budget that may fit now: the budgets are counted again,
         * oldest first (rare: the budgets are far above real use) */
        const struct xlate_limits *lim = &ctx->limits;
        size_t listeners =
            m->mode == XLATE_MODE_ENVOY ? m->nlisteners : cx_map_len(&m->api_listeners);
        size_t resources = 1 + listeners + m->sets[XDS_CLUSTER].n + m->sets[XDS_ENDPOINT].n;
        if (m->touched.n &&
            (m->nbudget || m->acc_routes > (size_t)lim->routes_per_gateway ||
             m->acc_bytes > (size_t)lim->resource_bytes ||
             resources > (size_t)lim->resources_per_gateway) &&
            compute_claims(ctx, gwe, m) != 0)
            return -1;
    }
    xlate_list_clear(&m->touched);
    return 0;
}

/* Phase 4, resources. Accepts the accepted slots; puts the Clusters and
 * ClusterLoadAssignments this pass rebuilt for Upstreams the Gateway
 * sends to, rebuilds the RouteConfiguration when a slot changed and the
 * Listener(s) when the Gateway, its certificates or (proxyless, TLS) its
 * served domains changed. Refuses nothing. Leaves behind the four sets
 * sorted by name with their versions current. Returns 0 or -1 (memory). */
static int gw_emit(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m,
                   int gw_changed)
{
    for (size_t i = 0; i < ctx->up_touched.n; i++) {
        struct xl_entry *up = ctx->up_touched.items[i];
        xlate_list_prefetch(&ctx->up_touched, i);
        if (up->up && up->up->sds_changed == ctx->pass && xlate_gw_ucount(m, up))
            m->sds_dirty = 1;
        if (up->deleted || !xlate_upstream_usable(up) || !up->up->cla)
            continue;
        /* not sent to, or counted in this pass with the resources as they
         * are now (every Upstream of a first pass) */
        const struct xl_ucount *c = xlate_gw_ucount(m, up);
        if (!c || c->put_pass == ctx->pass)
            continue;
        if (xlate_upstream_cluster(ctx, up, m->mode) != 0 ||
            set_put(m, XDS_CLUSTER, up->up->cluster[m->mode]) != 0 ||
            set_put(m, XDS_ENDPOINT, up->up->cla) != 0)
            return -1;
    }
    if ((m->rc_dirty || !m->rc) &&
        (build_rc(ctx, gwe, m) != 0 || xlate_gw_listener_rcs(ctx, gwe, m) != 0))
        return -1;
    m->rc_dirty = 0;
    if (build_lds(ctx, gwe, m, gw_changed) != 0)
        return -1;
    if (m->mode == XLATE_MODE_ENVOY && xlate_gw_sds_own(ctx, gwe, m) != 0)
        return -1;
    if (m->sds_dirty && xlate_gw_sds_update(m) != 0)
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

int xlate_build_gateway(struct xlate_ctx *ctx, struct xl_entry *gwe)
{
    int gw_changed;
    struct xl_gw_memo *m = gw_select(ctx, gwe, &gw_changed);
    if (!m || gw_resolve(ctx, m) != 0 || gw_accept(ctx, gwe, m) != 0 ||
        gw_emit(ctx, gwe, m, gw_changed) != 0)
        return -1;
    return 0;
}
