/*
 * Upstreams: their endpoints (static hosts, or the ready endpoints of a
 * Service's EndpointSlices) as one ClusterLoadAssignment, and their EDS
 * Cluster per gateway mode. Both are memoised on the Upstream's entry and
 * keep their xds_resource while their bytes do not change.
 */
#include "xlate_internal.h"

#include "xlate_cluster.h"

#include "cx_buf.h"
#include "cx_hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void xlate_up_memo_clear(struct xl_up_memo *m)
{
    if (!m)
        return;
    xlate_resource_unref(m->cla);
    for (int i = 0; i < XL_MODES; i++)
        xlate_resource_unref(m->cluster[i]);
    xlate_arena_free(&m->ep_arena);
    xlate_arena_free(&m->tls_arena);
    xlate_resource_unref(m->sds[0]);
    xlate_resource_unref(m->sds[1]);
    free(m->ref_keys[0]);
    free(m->ref_keys[1]);
}

static int ep_cmp(const void *a, const void *b)
{
    const struct xl_lb_endpoint *x = a, *y = b;
    /* a slice's endpoints share its few zone strings */
    int c = x->zone == y->zone ? 0 : strcmp(x->zone, y->zone);
    if (c)
        return c;
    c = strcmp(x->address, y->address);
    if (c)
        return c;
    return (x->port > y->port) - (x->port < y->port);
}

/* Sorts by (zone, address, port). Most Upstreams have a few dozen
 * endpoints, often in order already: up to 64 are sorted by insertion
 * (stable, no calls through a pointer), more by qsort. */
static void ep_sort(struct xl_lb_endpoint *eps, size_t n)
{
    if (n > 64) {
        qsort(eps, n, sizeof(*eps), ep_cmp);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        if (ep_cmp(&eps[i - 1], &eps[i]) <= 0)
            continue;
        struct xl_lb_endpoint t = eps[i];
        size_t j = i;
        for (; j > 0 && ep_cmp(&eps[j - 1], &t) > 0; j--)
            eps[j] = eps[j - 1];
        eps[j] = t;
    }
}

/* Replaces *slot with a resource made of |bytes| unless the bytes are the
 * same as the current one's (then the old resource, and its pointer, stay).
 * Takes ownership of |bytes|. Returns 1 if replaced, 0 if kept, -1. */
static int swap_resource(struct xlate_ctx *ctx, struct xds_resource **slot, enum xds_type type,
                         const char *name, uint8_t *bytes, size_t len)
{
    struct xds_resource *old = *slot;
    if (old && old->len == len && memcmp(old->bytes, bytes, len) == 0) {
        free(bytes);
        ctx->stats.resources_reused++;
        return 0;
    }
    struct xds_resource *r = xlate_ctx_resource_new(ctx, type, name, bytes, len);
    if (!r)
        return -1;
    xlate_resource_unref(old);
    *slot = r;
    ctx->stats.resources_built++;
    return 1;
}

static const char *port_list(struct xl_arena *a, const struct xl_service *svc)
{
    struct cx_buf b;
    cx_buf_init(&b, 4096);
    int rc = 0;
    for (size_t i = 0; i < svc->nports; i++)
        rc |= cx_buf_printf(&b, "%s%s%s%u", i ? ", " : "", svc->ports[i].name,
                            svc->ports[i].name[0] ? "/" : "", svc->ports[i].port);
    const char *s = xlate_strdup(a, rc == 0 && b.data ? b.data : "none");
    cx_buf_free(&b);
    return s ? s : "";
}

/* Collects the endpoints of |e| into |eps| (malloc'ed, sorted, unique);
 * a kube Upstream's are those of Service |svc| (NULL: not found) and its
 * EndpointSlices |sl| (NULL: none). */
static int collect(struct xl_entry *e, struct xl_up_memo *m, const struct xl_entry *svc,
                   const struct xl_entry_list *sl, struct xl_lb_endpoint **out, size_t *nout)
{
    const struct xl_upstream *u = &e->obj->u.up;
    struct xl_lb_endpoint *eps = NULL;
    size_t n = 0, cap = 0;
    *out = NULL;
    *nout = 0;
    if (!u->is_kube) {
        eps = calloc(u->nhosts ? u->nhosts : 1, sizeof(*eps));
        if (!eps)
            return -1;
        for (size_t i = 0; i < u->nhosts; i++)
            eps[n++] = (struct xl_lb_endpoint){
                u->hosts[i].address, u->hosts[i].port, u->hosts[i].weight,
                u->hosts[i].zone ? u->hosts[i].zone : "", u->hosts[i].hostname};
        goto done;
    }
    if (!svc) {
        if (xlate_errors_add(&m->ep_errors, &m->ep_arena, XLATE_WARNING, XL_R_SERVICE_NOT_FOUND,
                             "spec.kube.service: Service %s/%s not found; the Upstream has no "
                             "endpoints",
                             u->kube_ns, u->kube_service) != 0)
            return -1;
        return 0;
    }
    const struct xl_service *s = &svc->obj->u.svc;
    const char *pname = NULL;
    for (size_t i = 0; i < s->nports && !pname; i++)
        if ((u->kube_port_name && strcmp(s->ports[i].name, u->kube_port_name) == 0) ||
            (!u->kube_port_name && s->ports[i].port == u->kube_port))
            pname = s->ports[i].name;
    if (!pname) {
        char want[32];
        if (u->kube_port_name)
            snprintf(want, sizeof(want), "\"%s\"", u->kube_port_name);
        else
            snprintf(want, sizeof(want), "%u", u->kube_port);
        if (xlate_errors_add(&m->ep_errors, &m->ep_arena, XLATE_WARNING, XL_R_PORT_NOT_FOUND,
                             "spec.kube.port: Service %s has no port %s (its ports: %s)", svc->key,
                             want, port_list(&m->ep_arena, s)) != 0)
            return -1;
        return 0;
    }
    for (size_t i = 0; sl && i < sl->n; i++) {
        const struct xl_endpoint_slice *es = &sl->items[i]->obj->u.eps;
        if (es->ip_family == 0)
            continue; /* FQDN slices: EDS needs IP literals */
        uint32_t port = 0;
        for (size_t k = 0; k < es->nports; k++)
            if (strcmp(es->ports[k].name, pname) == 0)
                port = es->ports[k].port;
        if (!port)
            continue;
        for (size_t k = 0; k < es->nendpoints; k++) {
            const struct xl_slice_endpoint *ep = &es->endpoints[k];
            if (!ep->ready)
                continue;
            for (size_t a = 0; a < ep->naddresses; a++) {
                if (n == cap) {
                    cap = cap ? cap * 2 : 16;
                    struct xl_lb_endpoint *ne = realloc(eps, cap * sizeof(*ne));
                    if (!ne) {
                        free(eps);
                        return -1;
                    }
                    eps = ne;
                }
                eps[n++] =
                    (struct xl_lb_endpoint){ep->addresses[a], port, 1, ep->zone, ep->hostname};
            }
        }
    }
    if (n == 0) {
        char want[48];
        if (u->kube_port_name)
            snprintf(want, sizeof(want), "\"%s\"", u->kube_port_name);
        else
            snprintf(want, sizeof(want), "%u", u->kube_port);
        if (xlate_errors_add(&m->ep_errors, &m->ep_arena, XLATE_WARNING, XL_R_NO_ENDPOINTS,
                             "Service %s has no ready endpoints for port %s", svc->key,
                             want) != 0) {
            free(eps);
            return -1;
        }
    }
done:
    ep_sort(eps, n);
    /* the same address twice (a Pod in two slices while they roll): once */
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (w > 0 && strcmp(eps[w - 1].address, eps[i].address) == 0 &&
            eps[w - 1].port == eps[i].port)
            continue;
        eps[w++] = eps[i];
    }
    *out = eps;
    *nout = w;
    return 0;
}

static int encode_cluster(struct xlate_ctx *ctx, struct xl_entry *e, int mode)
{
    struct xl_up_memo *m = e->up;
    const struct xl_upstream *u = &e->obj->u.up;
    enum xl_lb_policy lb = u->lb;
    /* gRPC 1.51 supports ROUND_ROBIN and RING_HASH only (the report warns):
     * Maglev, a consistent hash too, becomes RING_HASH so that routes'
     * hash policies keep their meaning */
    if (mode == XLATE_MODE_PROXYLESS && (lb == XL_LB_LEAST_REQUEST || lb == XL_LB_RANDOM))
        lb = XL_LB_ROUND_ROBIN;
    if (mode == XLATE_MODE_PROXYLESS && lb == XL_LB_MAGLEV)
        lb = XL_LB_RING_HASH;
    uint8_t *bytes = NULL;
    size_t len = 0;
    /* TLS to the endpoints: envoy mode only (gRPC clients take theirs from
     * certificate providers; the report warns) */
    const struct xl_upstream_tls *t = xlate_upstream_tls_of(u);
    struct xl_upstream_tls_enc tls = {0};
    if (t->enabled && mode == XLATE_MODE_ENVOY) {
        /* the material by name: the Secrets in e->up->sds */
        tls.sni = t->sni;
        tls.ca = m->sds[1] ? m->sds[1]->name : NULL;
        tls.sans = t->nsans ? t->sans : NULL;
        tls.nsans = t->nsans;
        tls.min_version = t->min_version;
        tls.max_version = t->max_version;
        tls.client = m->sds[0] ? m->sds[0]->name : NULL;
    }
    const struct xl_cluster_enc c = {.lb = lb,
                                     .ring_min = u->ring_min,
                                     .ring_max = u->ring_max,
                                     .connect_timeout_ns = u->connect_timeout_ns,
                                     .has_connect_timeout = u->has_connect_timeout,
                                     .tls = t->enabled && mode == XLATE_MODE_ENVOY ? &tls : NULL,
                                     .opts = u->opts,
                                     .mode = (enum xlate_gateway_mode)mode};
    if (xlate_encode_cluster_ex(e->key, &c, &bytes, &len) != 0)
        return -1;
    int rc = swap_resource(ctx, &m->cluster[mode], XDS_CLUSTER, e->key, bytes, len);
    if (rc >= 0)
        m->cluster_digest[mode] = m->tls_key;
    return rc;
}

int xlate_upstream_refresh(struct xlate_ctx *ctx, struct xl_entry *e)
{
    struct xl_up_memo *m = e->up;
    int changed = 0;
    const struct xl_upstream *u = &e->obj->u.up;
    if (xlate_up_tls_resolve(ctx, e) != 0)
        return -1;
    int sds = xlate_up_sds_refresh(ctx, e);
    if (sds < 0)
        return -1;
    changed = sds;
    if (!xlate_upstream_usable(e)) {
        changed |= m->cla != NULL || m->cluster[0] || m->cluster[1];
        xlate_resource_unref(m->cla);
        m->cla = NULL;
        for (int i = 0; i < XL_MODES; i++) {
            xlate_resource_unref(m->cluster[i]);
            m->cluster[i] = NULL;
        }
        m->ep_digest = 0;
        xlate_arena_free(&m->ep_arena);
        memset(&m->ep_errors, 0, sizeof(m->ep_errors));
        m->nendpoints = 0;
        return changed;
    }
    /* clusters already built follow the Upstream's spec and TLS material */
    for (int mode = 0; mode < XL_MODES; mode++) {
        if (!m->cluster[mode] || m->cluster_digest[mode] == m->tls_key)
            continue;
        int rc = encode_cluster(ctx, e, mode);
        if (rc < 0)
            return -1;
        changed |= rc;
    }
    uint64_t d = xlate_fnv(CX_FNV64_INIT, &e->digest, sizeof(e->digest));
    struct xl_entry *svc = NULL;
    struct xl_entry_list *sl = NULL;
    if (u->is_kube) {
        /* "ns/svc", as index_entry registered it (none: a name longer than
         * any Kubernetes name, which matches no Service) */
        size_t kl = m->svc_key ? strlen(m->svc_key) : 0;
        svc = kl ? cx_map_get(&ctx->by_key[XLATE_KIND_SERVICE], m->svc_key, kl) : NULL;
        uint64_t sd = svc ? svc->digest : 0;
        d = xlate_fnv(d, &sd, sizeof(sd));
        sl = svc ? cx_map_get(&ctx->slices_by_svc, m->svc_key, kl) : NULL;
        for (size_t i = 0; sl && i < sl->n; i++)
            d = xlate_fnv(d, &sl->items[i]->digest, sizeof(sl->items[i]->digest));
    }
    if (m->cla && m->ep_digest == d)
        return changed;
    m->ep_digest = d;
    xlate_arena_free(&m->ep_arena);
    memset(&m->ep_errors, 0, sizeof(m->ep_errors));
    m->nendpoints = 0;
    struct xl_lb_endpoint *eps = NULL;
    size_t n = 0;
    if (collect(e, m, svc, sl, &eps, &n) != 0)
        return -1;
    uint8_t *bytes = NULL;
    size_t len = 0;
    struct xl_cla_locality *locs = NULL;
    size_t nlocs = 0;
    int rc = xlate_localities(xlate_cluster_opts_of(u), eps, n, &locs, &nlocs);
    if (rc == 0)
        rc = xlate_encode_cla_localities(e->key, locs, nlocs, &bytes, &len);
    free(locs);
    free(eps);
    if (rc != 0)
        return -1;
    m->nendpoints = n;
    rc = swap_resource(ctx, &m->cla, XDS_ENDPOINT, e->key, bytes, len);
    if (rc < 0)
        return -1;
    return changed | rc;
}

int xlate_upstream_cluster(struct xlate_ctx *ctx, struct xl_entry *e, enum xlate_gateway_mode mode)
{
    struct xl_up_memo *m = e->up;
    if (m->cluster[mode] && m->cluster_digest[mode] == m->tls_key)
        return 0;
    return encode_cluster(ctx, e, mode) < 0 ? -1 : 0;
}
