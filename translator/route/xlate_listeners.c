/*
 * A Gateway's socket Listeners (envoy mode): spec.listeners[], one
 * Listener per entry (a port, an address, HTTP or HTTPS with its own
 * tls or the Gateway's spec.tls); without spec.listeners, one Listener on
 * bindAddress:bindPort as before. A VirtualService's spec.listeners names
 * the listeners that serve it: a listener serving every accepted
 * VirtualService uses the Gateway's RouteConfiguration "namespace/name",
 * one serving fewer its own, "namespace/name/<listener>", and an HTTPS
 * listener's SNI filter chains list the domains it serves.
 */
#include "xlate_internal.h"
#include "xlate_route.h"

#include "cx_hash.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 if listeners on |a| and |b| (IP literals) would bind the same port of
 * one address: the same address, or a wildcard of the same family (a
 * wildcard takes the port on every address of its family; Envoy binds an
 * IPv6 wildcard IPv6-only by default). */
static int addr_overlap(const char *a, const char *b)
{
    unsigned char x[16], y[16], zero[16] = {0};
    int fx = strchr(a, ':') ? AF_INET6 : AF_INET, fy = strchr(b, ':') ? AF_INET6 : AF_INET;
    if (fx != fy || inet_pton(fx, a, x) != 1 || inet_pton(fy, b, y) != 1)
        return 0;
    size_t n = fx == AF_INET6 ? 16 : 4;
    return memcmp(x, y, n) == 0 || memcmp(x, zero, n) == 0 || memcmp(y, zero, n) == 0;
}

void xlate_parse_gateway_listeners(struct pctx *p, const cJSON *v, struct xl_gateway *g,
                                   int has_port)
{
    const cJSON *arr = arr_v(p, v, "listeners", 0, XLATE_MAX_LISTENERS);
    if (!arr)
        return; /* absent, or reported */
    size_t n = cx_json_count(arr);
    if (!n) {
        REJECT_AT(p, "listeners", XL_R_INVALID_SPEC,
                  "must not be empty (leave it out for one listener on bindPort)");
        return;
    }
    if (g->mode == XLATE_MODE_PROXYLESS) {
        size_t o = push_lit(p, ".listeners");
        WARN(p, XL_R_UNSUPPORTED, "ignored in proxyless mode (gRPC clients open no listener)");
        pop(p, o);
        return;
    }
    if (has_port)
        REJECT(p, XL_R_INVALID_SPEC,
               "bindPort and listeners are mutually exclusive (set each listener's port)");
    g->listeners = palloc(p, n * sizeof(*g->listeners));
    if (!g->listeners)
        return;
    memset(g->listeners, 0, n * sizeof(*g->listeners));
    int any_https = 0, shared_tls = 0;
    size_t i = 0, ncerts = g->tls ? g->tls->ncerts : 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        struct xl_listener *l = &g->listeners[i];
        size_t o = xlate_path_push(p, ".listeners[%zu]", i++);
        if (!cJSON_IsObject(e)) {
            REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(e));
            pop(p, o);
            continue;
        }
        static const char *const allowed[] = {"name",     "port", "bindAddress",
                                              "protocol", "tls",  NULL};
        const cJSON *f[5];
        xlate_fields(p, e, allowed, f);
        if (str_v(p, f[0], "name", 1, &l->name) == 1 &&
            (!cx_kname_is_label(l->name) || strlen(l->name) > 63))
            REJECT_AT(p, "name", XL_R_INVALID_SPEC,
                      "\"%s\" is not a DNS label (lower case letters, digits and \"-\")", l->name);
        uint64_t port = 0;
        if (uint_v(p, f[1], "port", 1, 1, 65535, XL_R_INVALID_PORT, &port) == 1)
            l->port = (uint32_t)port;
        l->address = g->bind_address;
        if (str_v(p, f[2], "bindAddress", 0, &l->address) == 1 && !xlate_is_ip(l->address))
            REJECT_AT(p, "bindAddress", XL_R_INVALID_SPEC, "\"%s\" is not an IP address",
                      l->address);
        const char *proto = NULL;
        if (str_ref_v(p, f[3], "protocol", 0, &proto) == 1) {
            if (strcmp(proto, "HTTPS") == 0)
                l->https = 1;
            else if (strcmp(proto, "HTTP") != 0)
                REJECT_AT(p, "protocol", XL_R_INVALID_SPEC,
                          "must be \"HTTP\" or \"HTTPS\", got \"%s\"", proto);
        }
        if (f[4]) {
            size_t o2 = push_lit(p, ".tls");
            if (!cJSON_IsObject(f[4]))
                REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(f[4]));
            else if ((l->tls = palloc(p, sizeof(*l->tls))))
                xlate_parse_gateway_tls(p, f[4], l->tls);
            if (l->tls && !l->https)
                REJECT(p, XL_R_INVALID_SPEC,
                       "is for HTTPS listeners only (set protocol: HTTPS, or leave tls out for "
                       "plain HTTP)");
            pop(p, o2);
            ncerts += l->tls ? l->tls->ncerts : 0;
        }
        if (l->https && !l->tls && !g->tls)
            REJECT_AT(p, "protocol", XL_R_INVALID_SPEC,
                      "HTTPS needs the Gateway's spec.tls (its certificates)");
        any_https |= l->https;
        shared_tls |= l->https && !l->tls;
        /* one socket per port: the kernel refuses a second bind, and a
         * wildcard address overlaps every other */
        for (size_t k = 0; k + 1 < i; k++) {
            const struct xl_listener *q = &g->listeners[k];
            if (l->name && q->name && strcmp(l->name, q->name) == 0)
                REJECT_AT(p, "name", XL_R_INVALID_SPEC, "\"%s\" is used by listeners[%zu]", l->name,
                          k);
            if (!l->port || l->port != q->port || !l->address || !q->address ||
                !addr_overlap(l->address, q->address))
                continue;
            if (l->https != q->https)
                REJECT_AT(p, "protocol", XL_R_LISTENER_CONFLICT,
                          "%s on port %u conflicts with listeners[%zu] (\"%s\"), %s on the same "
                          "port of an overlapping address (%s, %s): one socket cannot serve "
                          "both HTTP and HTTPS; use another port",
                          l->https ? "HTTPS" : "HTTP", (unsigned)l->port, k, q->name ? q->name : "",
                          q->https ? "HTTPS" : "HTTP", l->address, q->address);
            else
                REJECT_AT(p, "port", XL_R_LISTENER_CONFLICT,
                          "port %u is used by listeners[%zu] (\"%s\") on an overlapping address "
                          "(%s, %s): one socket, one listener; use another port, or distinct "
                          "addresses that are not wildcards",
                          (unsigned)l->port, k, q->name ? q->name : "", l->address, q->address);
        }
        pop(p, o);
    }
    g->nlisteners = i;
    if (g->tls && !any_https)
        REJECT(p, XL_R_INVALID_SPEC,
               "tls is set but no listener has protocol HTTPS: its certificates would serve "
               "nothing");
    else if (g->tls && !shared_tls)
        REJECT(p, XL_R_INVALID_SPEC,
               "tls is set but every HTTPS listener has its own tls: its certificates would "
               "serve nothing");
    if (ncerts > XLATE_MAX_GATEWAY_CERTIFICATES) {
        size_t o = push_lit(p, ".listeners");
        REJECT(p, XL_R_INVALID_SPEC,
               "the Gateway names %zu certificates in all (spec.tls and every listener's tls); "
               "at most %d",
               ncerts, XLATE_MAX_GATEWAY_CERTIFICATES);
        pop(p, o);
    }
}

int xlate_gw_listeners(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m,
                       const char *stat_prefix, struct xds_resource ***out, size_t *n)
{
    const struct xl_gateway *g = &gwe->obj->u.gw;
    const struct xl_gw_tls *t = gwe->gtls;
    struct xl_listener one = {.address = g->bind_address, .port = g->bind_port, .https = !!t};
    const struct xl_listener *ls = g->nlisteners ? g->listeners : &one;
    size_t nl = g->nlisteners ? g->nlisteners : 1;
    if (t && xlate_gw_tls_coverage(ctx, gwe, m) != 0)
        return -1;
    struct xds_resource **rs = calloc(nl, sizeof(*rs));
    if (!rs)
        return -1;
    const struct xl_hcm_opts ho = {.envoy_filters = 1, .logs = g->logs, .nlogs = g->nlogs};
    size_t k = 0;
    for (; k < nl; k++) {
        const struct xl_listener *l = &ls[k];
        char name[400], sp[400];
        /* without spec.listeners the Listener keeps the Gateway's name */
        if (l->name) {
            snprintf(name, sizeof(name), "%s/%s", gwe->key, l->name);
            snprintf(sp, sizeof(sp), "%s_%s", stat_prefix, l->name);
        } else {
            snprintf(name, sizeof(name), "%s", gwe->key);
            snprintf(sp, sizeof(sp), "%s", stat_prefix);
        }
        /* its own RouteConfiguration when it serves fewer VirtualServices */
        const char *rcn = k < m->nlrc && m->lrc[k].rc ? m->lrc[k].rc->name : gwe->key;
        uint8_t *bytes = NULL;
        size_t len = 0;
        const struct xl_tls_block *b = l->https ? xlate_gw_tls_block(gwe, k) : NULL;
        if (b ? xlate_gw_tls_listener(gwe, m, b, l, name, rcn, sp, &bytes, &len) != 0
              : xlate_encode_listener_envoy_ex(name, l->address, l->port, rcn, sp, &ho, &bytes,
                                               &len) != 0)
            break;
        if (!(rs[k] = xlate_ctx_resource_new(ctx, XDS_LISTENER, name, bytes, len)))
            break;
    }
    if (k < nl) {
        for (size_t i = 0; i < k; i++)
            xlate_resource_unref(rs[i]);
        free(rs);
        return -1;
    }
    *out = rs;
    *n = nl;
    return 0;
}

/* ---- which listeners serve a VirtualService --------------------------------- */

int xlate_listener_serves(const struct xl_virtual_service *vs, const char *lname)
{
    const struct xl_vs_ext *x = vs->ext;
    if (!x || !x->nlisteners)
        return 1;
    for (size_t i = 0; lname && i < x->nlisteners; i++)
        if (strcmp(x->listeners[i], lname) == 0)
            return 1;
    return 0;
}

int xlate_gw_serves(const struct xl_entry *gwe, const struct xl_virtual_service *vs, char *msg,
                    size_t n)
{
    const struct xl_gateway *g = &gwe->obj->u.gw;
    const struct xl_vs_ext *x = vs->ext;
    if (!x || !x->nlisteners)
        return 1;
    if (!g->nlisteners) {
        snprintf(msg, n,
                 "spec.listeners: Gateway %s declares no listeners (its one listener on bindPort "
                 "has no name), so it does not serve a VirtualService that names listeners",
                 gwe->key);
        return 0;
    }
    char names[300];
    size_t o = 0;
    names[0] = '\0';
    for (size_t i = 0; i < g->nlisteners; i++) {
        if (xlate_listener_serves(vs, g->listeners[i].name))
            return 1;
        if (o < sizeof(names))
            o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s", i ? ", " : "",
                                  g->listeners[i].name ? g->listeners[i].name : "");
    }
    char want[300];
    o = 0;
    want[0] = '\0';
    for (size_t i = 0; i < x->nlisteners && o < sizeof(want); i++)
        o += (size_t)snprintf(want + o, sizeof(want) - o, "%s%s", i ? ", " : "", x->listeners[i]);
    snprintf(msg, n,
             "spec.listeners: Gateway %s has none of the listeners it names (%s; the Gateway's: "
             "%s), so it does not serve this VirtualService",
             gwe->key, want, names);
    return 0;
}

/* ---- a listener's own RouteConfiguration ------------------------------------ */

int xlate_gw_encode_rc(struct xlate_ctx *ctx, const char *name, const struct xl_slot *acc,
                       size_t nacc, int filter, const char *lname, uint8_t hash[16],
                       const struct xds_resource *cur, struct xds_resource **fresh)
{
    *fresh = NULL;
    uint8_t hbuf[CX_SHA256_LEN];
    size_t klen = strlen(name), n = 0;
    uint8_t *hin = malloc(klen + 1 + nacc * 16);
    struct xl_bytes *vh = malloc((nacc ? nacc : 1) * sizeof(*vh));
    if (!hin || !vh) {
        free(hin);
        free(vh);
        return -1;
    }
    memcpy(hin, name, klen);
    hin[klen] = '\n';
    for (size_t i = 0; i < nacc; i++) {
        if (filter && !xlate_listener_serves(&acc[i].vs->obj->u.vs, lname))
            continue;
        memcpy(hin + klen + 1 + n * 16, acc[i].hash, 16);
        vh[n++] = (struct xl_bytes){acc[i].vh, acc[i].vhlen};
    }
    cx_sha256_with(ctx->sha, hin, klen + 1 + n * 16, hbuf);
    free(hin);
    if (cur && memcmp(hbuf, hash, 16) == 0) {
        free(vh);
        ctx->stats.resources_reused++;
        return 0;
    }
    uint8_t *bytes = NULL;
    size_t len = 0;
    int rc = xlate_encode_route_config(name, vh, n, XL_BIG_MAP, &bytes, &len);
    free(vh);
    if (rc != 0)
        return -1;
    static const char hex[] = "0123456789abcdef";
    char ver[XDS_VERSION_LEN + 1];
    for (int i = 0; i < XDS_VERSION_LEN; i++)
        ver[i] = hex[(hbuf[i / 2] >> (i % 2 ? 0 : 4)) & 0xf];
    ver[XDS_VERSION_LEN] = '\0';
    if (!(*fresh = xlate_resource_new_big(XDS_ROUTE, name, bytes, len, ver)))
        return -1;
    memcpy(hash, hbuf, 16);
    ctx->stats.resources_built++;
    return 0;
}

int xlate_gw_listener_rcs(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m)
{
    const struct xl_gateway *g = &gwe->obj->u.gw;
    if (m->mode != XLATE_MODE_ENVOY || !g->nlisteners)
        return 0;
    if (!m->lrc) {
        if (!(m->lrc = calloc(g->nlisteners, sizeof(*m->lrc))))
            return -1;
        m->nlrc = g->nlisteners;
    }
    for (size_t k = 0; k < m->nlrc; k++) {
        const struct xl_listener *l = &g->listeners[k];
        struct xl_listener_rc *lr = &m->lrc[k];
        size_t served = 0;
        for (size_t i = 0; i < m->nacc; i++)
            served += xlate_listener_serves(&m->acc[i].vs->obj->u.vs, l->name);
        if (served == m->nacc) { /* the Gateway's RouteConfiguration */
            if (lr->rc) {
                xlate_gw_set_del(m, XDS_ROUTE, lr->rc->name, lr->rc);
                xlate_resource_unref(lr->rc);
                lr->rc = NULL;
                m->lds_names_dirty = 1;
            }
            continue;
        }
        char name[400];
        snprintf(name, sizeof(name), "%s/%s", gwe->key, l->name);
        struct xds_resource *r;
        if (xlate_gw_encode_rc(ctx, name, m->acc, m->nacc, 1, l->name, lr->hash, lr->rc, &r) != 0)
            return -1;
        if (!r)
            continue;
        if (lr->rc)
            xlate_gw_set_del(m, XDS_ROUTE, lr->rc->name, lr->rc);
        else
            m->lds_names_dirty = 1;
        xlate_resource_unref(lr->rc);
        lr->rc = r;
        if (xlate_gw_set_put(m, XDS_ROUTE, r) != 0)
            return -1;
    }
    return 0;
}
