/*
 * TLS references: a Gateway's TLS blocks (spec.tls and each listener's own
 * tls) and an Upstream's spec.tls resolved against the Secrets and
 * ConfigMaps they name (found, shared with the referrer's namespace,
 * usable, valid at the pass's time), and a Gateway's TLS listeners: every
 * host name a listener serves goes to the certificate of its block that
 * covers it best (an exact name before a wildcard, then spec order), one
 * filter chain per certificate, the block's first usable certificate as
 * the default chain.
 *
 * What is wrong is reported with the field path of the referrer:
 * "spec.tls.certificates[1].secretRef: Secret default/www has no tls.key".
 * The evaluation time only changes Warnings, never bytes.
 */
#include "xlate_internal.h"

#include "cx_buf.h"
#include "cx_hash.h"
#include "xlate_tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Secret or ConfigMap |ref| (kind |kind|) as a reference from namespace
 * |from| may use it: found, and in the same namespace or allowing |from|
 * by annotation. XL_R_NONE with *e set, else the reason and a message in
 * |why|. */
static enum xl_reason ref_entry(struct xlate_ctx *ctx, enum xlate_kind kind, const char *from,
                                const struct xl_obj_ref *ref, struct xl_entry **e, char *why,
                                size_t n)
{
    const char *what = xlate_kind_name(kind);
    *e = xlate_find(ctx, kind, ref->ns, ref->name);
    if (!*e) {
        snprintf(why, n, "%s %s/%s not found", what, ref->ns, ref->name);
        return kind == XLATE_KIND_SECRET ? XL_R_SECRET_NOT_FOUND : XL_R_CONFIG_MAP_NOT_FOUND;
    }
    const char *allow =
        kind == XLATE_KIND_SECRET ? (*e)->obj->u.secret.allow_from : (*e)->obj->u.cm.allow_from;
    if (!xlate_tls_ref_allowed(from, ref->ns, allow)) {
        snprintf(why, n,
                 "%s %s/%s is in another namespace and does not allow references from "
                 "namespace %s (annotation " XLATE_ALLOW_REFS_ANNOTATION ")",
                 what, ref->ns, ref->name, from);
        *e = NULL;
        return XL_R_REF_NOT_PERMITTED;
    }
    return XL_R_NONE;
}

/* Why Secret |ref| cannot serve as a certificate for an object of
 * namespace |from|: 0 and *out set when it can, else the reason with a
 * message in |why|. */
static enum xl_reason secret_usable(struct xlate_ctx *ctx, const char *from,
                                    const struct xl_obj_ref *ref, struct xl_entry **out, char *why,
                                    size_t n)
{
    struct xl_entry *se;
    *out = NULL;
    enum xl_reason r = ref_entry(ctx, XLATE_KIND_SECRET, from, ref, &se, why, n);
    if (r != XL_R_NONE)
        return r;
    const struct xl_secret *s = &se->obj->u.secret;
    if (s->state != XL_SECRET_OK) {
        snprintf(why, n, "Secret %s/%s: %s", ref->ns, ref->name,
                 s->problem ? s->problem : "unusable");
        return XL_R_INVALID_CERTIFICATE;
    }
    *out = se;
    return XL_R_NONE;
}

/* The same for the CA bundle in ConfigMap |ref| (key ref->key); *pem set
 * when usable. |cache|/|cache_ok|/|cache_msg| remember the last OpenSSL
 * check (keyed by the ConfigMap's digest and the key). */
static enum xl_reason ca_usable(struct xlate_ctx *ctx, const char *from,
                                const struct xl_obj_ref *ref, struct xl_entry **out,
                                const char **pem, uint64_t *cache, int *cache_ok, char *cache_msg,
                                size_t cache_len, char *why, size_t n)
{
    struct xl_entry *ce;
    *out = NULL;
    *pem = NULL;
    enum xl_reason r = ref_entry(ctx, XLATE_KIND_CONFIG_MAP, from, ref, &ce, why, n);
    if (r != XL_R_NONE)
        return r;
    const struct xl_config_map *c = &ce->obj->u.cm;
    const char *v = xlate_config_map_get(c, ref->key);
    if (!v) {
        snprintf(why, n, "ConfigMap %s/%s has no key %s", ref->ns, ref->name, ref->key);
        return XL_R_INVALID_CERTIFICATE;
    }
    uint64_t k = xlate_fnv_str(xlate_fnv(CX_FNV64_INIT, &ce->digest, sizeof(ce->digest)), ref->key);
    k = k ? k : 1;
    if (!cache || *cache != k) {
        char msg[300];
        int ok = xlate_tls_check_ca(v, strlen(v), msg, sizeof(msg)) > 0;
        if (cache) {
            *cache = k;
            *cache_ok = ok;
            snprintf(cache_msg, cache_len, "%s", ok ? "" : msg);
        } else if (!ok) {
            snprintf(why, n, "ConfigMap %s/%s: %s %s", ref->ns, ref->name, ref->key, msg);
            return XL_R_INVALID_CERTIFICATE;
        }
    }
    if (cache && !*cache_ok) {
        snprintf(why, n, "ConfigMap %s/%s: %s %s", ref->ns, ref->name, ref->key, cache_msg);
        return XL_R_INVALID_CERTIFICATE;
    }
    *out = ce;
    *pem = v;
    return XL_R_NONE;
}

/* A Warning when the certificate of Secret |se| is outside its validity
 * period at |now|. Returns 0 or -1. */
static int validity(struct xl_errors *e, struct xl_arena *a, const char *path,
                    const struct xl_entry *se, int64_t now, int client)
{
    /* a Gateway serves its certificate to clients; an Upstream presents its
     * client certificate to backends */
    const char *used = client ? "presented" : "served";
    const char *peers = client ? "backends" : "clients";
    const struct xl_cert_info *c = &se->obj->u.secret.cert;
    char t[40];
    switch (xlate_tls_phase(c, now)) {
    case XL_CERT_EXPIRED:
        xlate_tls_time_str(c->not_after, t, sizeof(t));
        return xlate_errors_add(
            e, a, XLATE_WARNING, XL_R_CERT_EXPIRED,
            "%s: the certificate of Secret %s expired at %s; it is still %s and %s "
            "refuse it: renew it",
            path, se->key, t, used, peers);
    case XL_CERT_NOT_YET_VALID:
        xlate_tls_time_str(c->not_before, t, sizeof(t));
        return xlate_errors_add(
            e, a, XLATE_WARNING, XL_R_CERT_NOT_YET_VALID,
            "%s: the certificate of Secret %s is not valid before %s; it is %s and "
            "%s refuse it until then",
            path, se->key, t, used, peers);
    case XL_CERT_VALID:
        break;
    }
    return 0;
}

/* ---- Gateways ---------------------------------------------------------------------- */

void xlate_gw_tls_free(struct xl_gw_tls *t)
{
    if (!t)
        return;
    xlate_arena_free(&t->arena);
    free(t->blocks);
    free(t);
}

/* The field path of block |b| ("spec.tls", "spec.listeners[1].tls") in |out|. */
static void block_path(const struct xl_tls_block *b, char *out, size_t n)
{
    if (b->listener)
        snprintf(out, n, "spec.listeners[%zu].tls", b->listener - 1);
    else
        snprintf(out, n, "spec.tls");
}

/* Resolves one used block of Gateway |gwe| into |b| (arrays and messages
 * in t->arena), adding what its listeners read to |*d|. Returns 0 or -1. */
static int block_resolve(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_tls *t,
                         struct xl_tls_block *b, uint64_t *d)
{
    const struct xl_gateway_tls *tls = b->spec;
    size_t n = tls->ncerts;
    struct xl_arena *a = &t->arena;
    b->certs = xlate_alloc(a, (n ? n : 1) * sizeof(*b->certs));
    b->cert_index = xlate_alloc(a, (n ? n : 1) * sizeof(*b->cert_index));
    char(*why)[600] = xlate_alloc(a, (n ? n : 1) * sizeof(*why));
    enum xl_reason *rs = xlate_alloc(a, (n ? n : 1) * sizeof(*rs));
    if (!b->certs || !b->cert_index || !why || !rs)
        return -1;
    const char *from = gwe->obj->meta.ns;
    *d = xlate_fnv(*d, &b->listener, sizeof(b->listener));
    for (size_t i = 0; i < n; i++) {
        struct xl_entry *se;
        rs[i] = secret_usable(ctx, from, &tls->certs[i], &se, why[i], sizeof(why[i]));
        if (rs[i] != XL_R_NONE)
            continue;
        b->certs[b->ncerts] = se;
        b->cert_index[b->ncerts++] = i;
        *d = xlate_fnv(*d, &se->digest, sizeof(se->digest));
        *d = xlate_fnv(*d, &i, sizeof(i));
    }
    char bp[48];
    block_path(b, bp, sizeof(bp));
    int fatal = b->ncerts == 0;
    int rc = 0;
    for (size_t i = 0, u = 0; i < n && rc == 0; i++) {
        char path[128];
        snprintf(path, sizeof(path), "%s.certificates[%zu]", bp, i);
        if (u < b->ncerts && b->cert_index[u] == i) {
            rc = validity(&t->errors, a, path, b->certs[u++], ctx->now, 0);
            continue;
        }
        rc = xlate_errors_add(&t->errors, a, XLATE_WARNING, rs[i],
                              "%s.secretRef: %s; certificate left out", path, why[i]);
    }
    /* nothing to serve: rejected, for the reason of the first certificate */
    if (rc == 0 && fatal)
        rc = xlate_errors_add(&t->errors, a, XLATE_REJECTED, n ? rs[0] : XL_R_INVALID_SPEC,
                              "%s: no certificate is usable, so the Gateway is not served", bp);
    if (rc == 0 && tls->has_client_ca) {
        struct xl_entry *ce;
        const char *pem;
        char cwhy[600];
        enum xl_reason r = ca_usable(ctx, from, &tls->client_ca, &ce, &pem, &b->ca_checked,
                                     &b->ca_ok, b->ca_msg, sizeof(b->ca_msg), cwhy, sizeof(cwhy));
        if (r != XL_R_NONE) {
            rc = xlate_errors_add(&t->errors, a, XLATE_REJECTED, r,
                                  "%s.clientValidation.caConfigMapRef: %s; client certificates "
                                  "cannot be verified, so the Gateway is not served",
                                  bp, cwhy);
            fatal = 1;
        } else {
            b->client_ca = pem;
            *d = xlate_fnv(*d, &ce->digest, sizeof(ce->digest));
            *d = xlate_fnv_str(*d, tls->client_ca.key);
        }
    }
    t->fatal |= fatal;
    return rc;
}

int xlate_gw_tls_resolve(struct xlate_ctx *ctx, struct xl_entry *gwe)
{
    const struct xl_gateway *g = &gwe->obj->u.gw;
    int any = g->tls != NULL;
    for (size_t k = 0; k < g->nlisteners; k++)
        any |= g->listeners[k].tls != NULL;
    if (gwe->parse_state == XLATE_REJECTED || g->mode != XLATE_MODE_ENVOY || !any) {
        xlate_gw_tls_free(gwe->gtls);
        gwe->gtls = NULL;
        return 0;
    }
    struct xl_gw_tls *t = gwe->gtls;
    if (!t && !(t = gwe->gtls = calloc(1, sizeof(*t))))
        return -1;
    xlate_arena_free(&t->arena);
    memset(&t->errors, 0, sizeof(t->errors));
    t->fatal = 0;
    size_t nb = 1 + g->nlisteners;
    if (t->nblocks != nb) {
        struct xl_tls_block *v = calloc(nb, sizeof(*v));
        if (!v)
            return -1;
        free(t->blocks);
        t->blocks = v;
        t->nblocks = nb;
    }
    for (size_t i = 0; i < nb; i++) {
        struct xl_tls_block *b = &t->blocks[i];
        b->spec = i ? g->listeners[i - 1].tls : g->tls;
        b->listener = i;
        b->ncerts = 0;
        b->client_ca = NULL;
    }
    uint64_t d = CX_FNV64_INIT;
    int rc = 0;
    for (size_t i = 0; i < nb && rc == 0; i++)
        if (t->blocks[i].spec)
            rc = block_resolve(ctx, gwe, t, &t->blocks[i], &d);
    t->digest = d;
    return rc;
}

const struct xl_tls_block *xlate_gw_tls_block(const struct xl_entry *gwe, size_t k)
{
    const struct xl_gw_tls *t = gwe->gtls;
    const struct xl_gateway *g = &gwe->obj->u.gw;
    if (!t)
        return NULL;
    size_t i = k < g->nlisteners && g->listeners[k].tls ? k + 1 : 0;
    return i < t->nblocks && t->blocks[i].spec ? &t->blocks[i] : NULL;
}

/* ---- SDS Secrets ------------------------------------------------------------------------ */

/* The SDS name of the certificate in Secret entry |se|, in |a|. */
static const char *cert_sds_name(struct xl_arena *a, const struct xl_entry *se)
{
    char buf[XL_SDS_NAME_MAX];
    xlate_sds_cert_name(se->obj->meta.ns, se->obj->meta.name, buf, sizeof(buf));
    return xlate_strdup(a, buf);
}

/* A Secret resource for the certificate of Secret entry |se|. */
static struct xds_resource *cert_secret(struct xlate_ctx *ctx, const struct xl_entry *se)
{
    const struct xl_secret *s = &se->obj->u.secret;
    char name[XL_SDS_NAME_MAX];
    xlate_sds_cert_name(se->obj->meta.ns, se->obj->meta.name, name, sizeof(name));
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (xlate_encode_secret_cert(name, s->crt, s->crtlen, s->key, s->keylen, &bytes, &len) != 0)
        return NULL;
    return xlate_ctx_resource_new(ctx, XDS_SECRET, name, bytes, len);
}

/* A Secret resource for the CA bundle |pem| of ConfigMap reference |ref|. */
static struct xds_resource *ca_secret(struct xlate_ctx *ctx, const struct xl_obj_ref *ref,
                                      const char *pem)
{
    char name[XL_SDS_NAME_MAX];
    xlate_sds_ca_name(ref->ns, ref->name, ref->key, name, sizeof(name));
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (xlate_encode_secret_ca(name, pem, strlen(pem), &bytes, &len) != 0)
        return NULL;
    return xlate_ctx_resource_new(ctx, XDS_SECRET, name, bytes, len);
}

static int same_res(const struct xds_resource *a, const struct xds_resource *b)
{
    return a == b ||
           (a && b && strcmp(a->name, b->name) == 0 && strcmp(a->version, b->version) == 0);
}

/* Puts |fresh| (one reference, may be NULL) in |*slot| unless the same
 * resource is there already. Returns 1 if the slot changed. */
static int sds_swap(struct xlate_ctx *ctx, struct xds_resource **slot, struct xds_resource *fresh)
{
    if (same_res(*slot, fresh)) {
        ctx->stats.resources_reused += fresh != NULL;
        xlate_resource_unref(fresh);
        return 0;
    }
    ctx->stats.resources_built += fresh != NULL;
    xlate_resource_unref(*slot);
    *slot = fresh;
    return 1;
}

int xlate_up_sds_refresh(struct xlate_ctx *ctx, struct xl_entry *e)
{
    struct xl_up_memo *m = e->up;
    const struct xl_upstream_tls *tls = xlate_upstream_tls_of(&e->obj->u.up);
    int want = tls->enabled && xlate_upstream_usable(e);
    if (want && m->sds_key == m->tls_key)
        return 0;
    struct xds_resource *fresh[2] = {NULL, NULL};
    if (want && m->tls_cert && !(fresh[0] = cert_secret(ctx, m->tls_cert)))
        return -1;
    if (want && m->tls_ca_pem && !(fresh[1] = ca_secret(ctx, &tls->ca, m->tls_ca_pem))) {
        xlate_resource_unref(fresh[0]);
        return -1;
    }
    int changed = sds_swap(ctx, &m->sds[0], fresh[0]) | sds_swap(ctx, &m->sds[1], fresh[1]);
    m->sds_key = want ? m->tls_key : 0;
    if (changed)
        m->sds_changed = ctx->pass;
    return changed;
}

static void res_list_free(struct xds_resource **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        xlate_resource_unref(v[i]);
    free(v);
}

int xlate_gw_sds_own(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m)
{
    const struct xl_gw_tls *t = gwe->gtls;
    uint64_t d = t && !t->fatal ? t->digest : 0;
    if (d == m->own_sds_digest && (d == 0 || m->nown_sds))
        return 0;
    size_t n = 0, cap = 0;
    for (size_t b = 0; t && b < t->nblocks; b++)
        cap += t->blocks[b].spec ? t->blocks[b].ncerts + 1 : 0;
    struct xds_resource **v = cap ? calloc(cap, sizeof(*v)) : NULL;
    if (cap && !v)
        return -1;
    /* block by block: a Secret listed twice, the collection keeps one */
    for (size_t b = 0; d && b < t->nblocks; b++) {
        const struct xl_tls_block *k = &t->blocks[b];
        if (!k->spec)
            continue;
        for (size_t i = 0; i < k->ncerts; i++) {
            if (!(v[n] = cert_secret(ctx, k->certs[i]))) {
                res_list_free(v, n);
                return -1;
            }
            n++;
        }
        if (k->client_ca) {
            if (!(v[n] = ca_secret(ctx, &k->spec->client_ca, k->client_ca))) {
                res_list_free(v, n);
                return -1;
            }
            n++;
        }
    }
    int same = n == m->nown_sds;
    for (size_t i = 0; i < n; i++) {
        int kept = i < m->nown_sds && same_res(v[i], m->own_sds[i]);
        ctx->stats.resources_built += !kept;
        ctx->stats.resources_reused += kept;
        same &= kept;
        if (kept) { /* the same bytes keep their resource */
            xlate_resource_unref(v[i]);
            v[i] = xlate_resource_ref(m->own_sds[i]);
        }
    }
    if (same) {
        res_list_free(v, n);
    } else {
        res_list_free(m->own_sds, m->nown_sds);
        m->own_sds = v;
        m->nown_sds = n;
        m->sds_dirty = 1;
    }
    m->own_sds_digest = d;
    return 0;
}

static int res_name_cmp(const void *a, const void *b)
{
    return strcmp((*(struct xds_resource *const *)a)->name,
                  (*(struct xds_resource *const *)b)->name);
}

/* The SDS set as it should be (references taken). Returns 0 or -1. */
static int sds_collect(const struct xl_gw_memo *m, struct xds_resource_set *out)
{
    memset(out, 0, sizeof(*out));
    size_t cap = m->nown_sds, n = 0;
    const struct cx_map_slot *sl;
    for (size_t i = 0; cx_map_next(&m->upcount, &i, &sl);) {
        const struct xl_entry *up = ((const struct xl_ucount *)sl->val)->up;
        cap += up->up ? (up->up->sds[0] != NULL) + (up->up->sds[1] != NULL) : 0;
    }
    if (!cap)
        return 0;
    struct xds_resource **v = malloc(cap * sizeof(*v));
    if (!v)
        return -1;
    for (size_t i = 0; i < m->nown_sds; i++)
        v[n++] = m->own_sds[i];
    for (size_t i = 0; cx_map_next(&m->upcount, &i, &sl);) {
        const struct xl_entry *up = ((const struct xl_ucount *)sl->val)->up;
        if (up->deleted || !up->up || !xlate_upstream_usable(up))
            continue;
        for (int k = 0; k < 2; k++)
            if (up->up->sds[k])
                v[n++] = up->up->sds[k];
    }
    if (n > 1)
        qsort(v, n, sizeof(*v), res_name_cmp);
    /* one per name: the same Secret or ConfigMap key named twice gives the
     * same bytes */
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || strcmp(v[u - 1]->name, v[i]->name) != 0)
            v[u++] = v[i];
    for (size_t i = 0; i < u; i++)
        xlate_resource_ref(v[i]);
    out->items = v;
    out->n = u;
    return 0;
}

int xlate_gw_sds_update(struct xl_gw_memo *m)
{
    struct xds_resource_set fresh;
    if (sds_collect(m, &fresh) != 0)
        return -1;
    struct xds_resource_set *old = &m->sets[XDS_SECRET];
    int same = fresh.n == old->n;
    for (size_t i = 0; same && i < fresh.n; i++)
        same = fresh.items[i] == old->items[i];
    struct xds_resource_set *drop = same ? &fresh : old;
    res_list_free(drop->items, drop->n);
    if (!same) {
        *old = fresh;
        m->cap[XDS_SECRET] = fresh.n;
        m->set_dirty[XDS_SECRET] = 1;
    }
    m->sds_dirty = 0;
    return 0;
}

/* ---- the TLS listener ------------------------------------------------------------------ */

struct assign {
    size_t cert; /* index into gtls->certs */
    char *host;
};

static int assign_cmp(const void *a, const void *b)
{
    const struct assign *x = a, *y = b;
    if (x->cert != y->cert)
        return x->cert < y->cert ? -1 : 1;
    return strcmp(x->host, y->host);
}

/* The host an SNI would carry for virtual-host domain |d| (lower case, port
 * stripped) into |out|; 0 when no SNI can name it ("*", "example.*", IP
 * literals). */
static int sni_host(const char *d, char *out, size_t n)
{
    size_t l = strlen(d);
    if (d[0] == '[' || l + 1 > n)
        return 0;
    const char *colon = strrchr(d, ':');
    if (colon) {
        int digits = colon[1] != '\0';
        for (const char *c = colon + 1; *c; c++)
            digits &= *c >= '0' && *c <= '9';
        if (digits)
            l = (size_t)(colon - d);
    }
    for (size_t i = 0; i < l; i++)
        out[i] = (d[i] >= 'A' && d[i] <= 'Z') ? (char)(d[i] - 'A' + 'a') : d[i];
    out[l] = '\0';
    if (l == 0 || out[l - 1] == '*' || strcmp(out, "*") == 0 || xlate_is_ip(out))
        return 0;
    return 1;
}

static void free_notes(struct xl_gw_memo *m)
{
    for (size_t i = 0; i < m->ncert_notes; i++)
        free(m->cert_notes[i]);
    free(m->cert_notes);
    m->cert_notes = NULL;
    m->ncert_notes = 0;
}

static int dirty_keys(struct xlate_ctx *ctx, const struct cx_map *m)
{
    const struct cx_map_slot *s;
    for (size_t i = 0; cx_map_next(m, &i, &s);) {
        struct xl_entry *v = xlate_find_key(ctx, XLATE_KIND_VIRTUAL_SERVICE, s->key);
        if (v && xlate_rep_dirty(ctx, v) != 0)
            return -1;
    }
    return 0;
}

/* Whether an HTTPS listener of |g| with TLS block |bi| (0: spec.tls, 1 + k:
 * spec.listeners[k].tls) serves |vs| (its domains then need a certificate
 * of that block). */
static int block_serves(const struct xl_gateway *g, size_t bi, const struct xl_virtual_service *vs)
{
    if (!g->nlisteners)
        return bi == 0;
    for (size_t k = 0; k < g->nlisteners; k++) {
        const struct xl_listener *l = &g->listeners[k];
        if (l->https && (l->tls ? k + 1 : 0) == bi && xlate_listener_serves(vs, l->name))
            return 1;
    }
    return 0;
}

/* The certificate of |b| covering |host| best (an exact name before a
 * wildcard, then the earlier one): its index into b->certs, or -1. */
static long best_cert(const struct xl_tls_block *b, const char *host)
{
    long best = -1;
    int score = 0;
    for (size_t j = 0; j < b->ncerts && score < 2; j++) {
        int sc = xlate_tls_cert_covers(&b->certs[j]->obj->u.secret.cert, host);
        if (sc > score) {
            score = sc;
            best = (long)j;
        }
    }
    return best;
}

/* "Gateway ns/name", or "listener "x" of Gateway ns/name
 * (spec.listeners[k].tls)" for a listener's own block. */
static void block_owner(const struct xl_entry *gwe, const struct xl_tls_block *b, char *out,
                        size_t n)
{
    const struct xl_gateway *g = &gwe->obj->u.gw;
    if (b->listener)
        snprintf(out, n, "listener \"%s\" of Gateway %s (spec.listeners[%zu].tls)",
                 g->listeners[b->listener - 1].name ? g->listeners[b->listener - 1].name : "",
                 gwe->key, b->listener - 1);
    else
        snprintf(out, n, "Gateway %s", gwe->key);
}

int xlate_gw_tls_coverage(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m)
{
    const struct xl_gateway *g = &gwe->obj->u.gw;
    const struct xl_gw_tls *t = gwe->gtls;
    struct xl_arena a = {0};
    struct cx_map fresh = {0};
    struct cx_buf msg;
    cx_buf_init(&msg, 8192);
    int rc = -1;
    size_t total = 0, nnotes = 0;
    for (size_t b = 0; b < t->nblocks; b++)
        total += t->blocks[b].spec ? t->blocks[b].ncerts : 0;
    int *used = xlate_alloc(&a, (total ? total : 1) * sizeof(*used));
    char **notes = calloc(total ? total : 1, sizeof(*notes));
    if (!used || !notes)
        goto out;
    memset(used, 0, (total ? total : 1) * sizeof(*used));
    for (size_t i = 0; i < m->nacc; i++) {
        const struct xl_entry *vs = m->acc[i].vs;
        const struct xl_virtual_service *v = &vs->obj->u.vs;
        msg.len = 0;
        for (size_t bi = 0, off = 0; bi < t->nblocks; bi++) {
            const struct xl_tls_block *b = &t->blocks[bi];
            if (!b->spec)
                continue;
            size_t here = off;
            off += b->ncerts;
            if (!block_serves(g, bi, v))
                continue;
            for (size_t k = 0; k < v->ndomains; k++) {
                char host[300], owner[400];
                if (!sni_host(v->domains[k], host, sizeof(host)))
                    continue;
                long best = best_cert(b, host);
                if (best >= 0) {
                    used[here + (size_t)best] = 1;
                    continue;
                }
                block_owner(gwe, b, owner, sizeof(owner));
                if (cx_buf_printf(&msg,
                                  "%sspec.domains[%zu]: \"%s\" is not covered by any certificate "
                                  "of %s; TLS clients asking for it get the default "
                                  "certificate (Secret %s) and refuse it",
                                  msg.len ? "; " : "", k, v->domains[k], owner,
                                  b->certs[0]->key) != 0 &&
                    msg.len == 0)
                    goto out;
            }
        }
        if (msg.len) {
            char *c = strndup(msg.data, msg.len);
            if (!c || cx_map_put(&fresh, vs->key, vs->keylen, c, NULL) != 0) {
                free(c);
                goto out;
            }
        }
    }
    /* a certificate (other than the default) no served domain needs */
    for (size_t bi = 0, off = 0; bi < t->nblocks; bi++) {
        const struct xl_tls_block *b = &t->blocks[bi];
        if (!b->spec)
            continue;
        for (size_t j = 1; j < b->ncerts; j++) {
            if (used[off + j])
                continue;
            char names[300], buf[800], bp[48];
            xlate_tls_names_str(&b->certs[j]->obj->u.secret.cert, names, sizeof(names));
            block_path(b, bp, sizeof(bp));
            if (b->listener)
                snprintf(buf, sizeof(buf),
                         "%s.certificates[%zu]: Secret %s covers none of the domains listener "
                         "\"%s\" serves (it names %s); not used",
                         bp, b->cert_index[j], b->certs[j]->key, g->listeners[b->listener - 1].name,
                         names);
            else
                snprintf(buf, sizeof(buf),
                         "%s.certificates[%zu]: Secret %s covers none of the served domains (it "
                         "names %s); not used",
                         bp, b->cert_index[j], b->certs[j]->key, names);
            if (!(notes[nnotes++] = strdup(buf)))
                goto out;
        }
        off += b->ncerts;
    }
    /* the VirtualServices whose coverage messages come or go */
    if (dirty_keys(ctx, &m->uncovered) != 0 || dirty_keys(ctx, &fresh) != 0)
        goto out;
    const struct cx_map_slot *sl;
    for (size_t i = 0; cx_map_next(&m->uncovered, &i, &sl);)
        free(sl->val);
    cx_map_free(&m->uncovered);
    m->uncovered = fresh;
    memset(&fresh, 0, sizeof(fresh));
    free_notes(m);
    m->cert_notes = notes;
    m->ncert_notes = nnotes;
    notes = NULL;
    rc = 0;
out:
    if (notes) {
        for (size_t i = 0; i < nnotes; i++)
            free(notes[i]);
        free(notes);
    }
    const struct cx_map_slot *fs;
    for (size_t i = 0; cx_map_next(&fresh, &i, &fs);)
        free(fs->val);
    cx_map_free(&fresh);
    xlate_arena_free(&a);
    cx_buf_free(&msg);
    return rc;
}

int xlate_gw_tls_listener(const struct xl_entry *gwe, const struct xl_gw_memo *m,
                          const struct xl_tls_block *b, const struct xl_listener *l,
                          const char *name, const char *rc_name, const char *stat_prefix,
                          uint8_t **out, size_t *len)
{
    const struct xl_gateway *g = &gwe->obj->u.gw;
    const struct xl_gateway_tls *gt = b->spec;
    struct xl_arena a = {0};
    struct cx_map seen = {0};
    int rc = -1;
    size_t total = 0;
    for (size_t i = 0; i < m->nacc; i++)
        total += m->acc[i].vs->obj->u.vs.ndomains;
    struct assign *as = xlate_alloc(&a, (total ? total : 1) * sizeof(*as));
    struct xl_tls_chain *chains = xlate_alloc(&a, (b->ncerts ? b->ncerts : 1) * sizeof(*chains));
    size_t nas = 0, nchains = 0;
    if (!as || !chains)
        goto out;
    /* this listener's chains: the domains it serves, each to the
     * certificate of its block covering it best */
    for (size_t i = 0; i < m->nacc; i++) {
        const struct xl_virtual_service *v = &m->acc[i].vs->obj->u.vs;
        if (!xlate_listener_serves(v, l->name))
            continue;
        for (size_t k = 0; k < v->ndomains; k++) {
            char host[300];
            if (!sni_host(v->domains[k], host, sizeof(host)) || cx_map_gets(&seen, host))
                continue;
            long best = best_cert(b, host);
            if (best < 0)
                continue;
            char *h = xlate_strdup(&a, host);
            if (!h || cx_map_put(&seen, h, strlen(h), h, NULL) != 0)
                goto out;
            as[nas++] = (struct assign){(size_t)best, h};
        }
    }
    qsort(as, nas, sizeof(*as), assign_cmp);
    for (size_t i = 0; i < nas;) {
        size_t j = i;
        while (j < nas && as[j].cert == as[i].cert)
            j++;
        char **names = xlate_alloc(&a, (j - i) * sizeof(*names));
        if (!names)
            goto out;
        for (size_t k = i; k < j; k++)
            names[k - i] = as[k].host;
        const char *sds = cert_sds_name(&a, b->certs[as[i].cert]);
        if (!sds)
            goto out;
        chains[nchains++] = (struct xl_tls_chain){
            .name = b->certs[as[i].cert]->key,
            .server_names = names,
            .nserver_names = j - i,
            .secret = sds,
        };
        i = j;
    }
    struct xl_tls_chain dflt = {
        .name = "default",
        .secret = cert_sds_name(&a, b->certs[0]),
    };
    char ca_sds[XL_SDS_NAME_MAX];
    if (b->client_ca)
        xlate_sds_ca_name(gt->client_ca.ns, gt->client_ca.name, gt->client_ca.key, ca_sds,
                          sizeof(ca_sds));
    if (!dflt.secret)
        goto out;
    struct xl_downstream_tls dt = {
        /* explicit, so Envoy's own default may change without us noticing */
        .min_version = gt->min_version ? gt->min_version : XL_TLS_1_2,
        .max_version = gt->max_version,
        .alpn = gt->alpn,
        .nalpn = gt->nalpn,
        .client_ca = b->client_ca ? ca_sds : NULL,
        .require_client_cert = b->client_ca && !gt->client_cert_optional,
    };
    const struct xl_hcm_opts ho = {.envoy_filters = 1, .logs = g->logs, .nlogs = g->nlogs};
    if (xlate_encode_listener_envoy_tls(name, l->address, l->port, rc_name, stat_prefix, &dt,
                                        chains, nchains, &dflt, &ho, out, len) != 0)
        goto out;
    rc = 0;
out:
    cx_map_free(&seen);
    xlate_arena_free(&a);
    return rc;
}

/* ---- Upstreams ---------------------------------------------------------------------------- */

int xlate_up_tls_resolve(struct xlate_ctx *ctx, struct xl_entry *e)
{
    struct xl_up_memo *m = e->up;
    const struct xl_upstream_tls *tls = xlate_upstream_tls_of(&e->obj->u.up);
    xlate_arena_free(&m->tls_arena);
    memset(&m->tls_errors, 0, sizeof(m->tls_errors));
    m->tls_bad = 0;
    m->tls_ca_cm = m->tls_cert = NULL;
    m->tls_ca_pem = NULL;
    uint64_t k = xlate_fnv(CX_FNV64_INIT, &e->digest, sizeof(e->digest));
    m->tls_key = k;
    if (!tls->enabled || e->parse_state == XLATE_REJECTED)
        return 0;
    const char *from = e->obj->meta.ns;
    char why[600];
    int rc = 0;
    if (tls->has_ca) {
        struct xl_entry *ce;
        const char *pem;
        enum xl_reason r =
            ca_usable(ctx, from, &tls->ca, &ce, &pem, NULL, NULL, NULL, 0, why, sizeof(why));
        if (r != XL_R_NONE) {
            rc =
                xlate_errors_add(&m->tls_errors, &m->tls_arena, XLATE_REJECTED, r,
                                 "spec.tls.caConfigMapRef: %s; the backend's certificate cannot be "
                                 "verified, so the Upstream is not used",
                                 why);
            m->tls_bad = 1;
        } else {
            m->tls_ca_cm = ce;
            m->tls_ca_pem = pem;
            k = xlate_fnv(k, &ce->digest, sizeof(ce->digest));
            k = xlate_fnv_str(k, tls->ca.key);
        }
    }
    if (rc == 0 && tls->has_client_cert) {
        struct xl_entry *se;
        enum xl_reason r = secret_usable(ctx, from, &tls->client_cert, &se, why, sizeof(why));
        if (r != XL_R_NONE) {
            rc = xlate_errors_add(
                &m->tls_errors, &m->tls_arena, XLATE_REJECTED, r,
                "spec.tls.clientCertificate.secretRef: %s; the Upstream has no client "
                "certificate to present, so it is not used",
                why);
            m->tls_bad = 1;
        } else {
            m->tls_cert = se;
            k = xlate_fnv(k, &se->digest, sizeof(se->digest));
            rc = validity(&m->tls_errors, &m->tls_arena, "spec.tls.clientCertificate", se, ctx->now,
                          1);
        }
    }
    m->tls_key = k;
    return rc;
}
