/*
 * A Gateway's socket Listeners (envoy mode): spec.listeners[], one
 * Listener per entry (a port, an address, HTTP or HTTPS with the
 * Gateway's spec.tls), all serving the Gateway's one RouteConfiguration;
 * without spec.listeners, one Listener on bindAddress:bindPort as before.
 */
#include "xlate_internal.h"
#include "xlate_route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    int any_https = 0;
    size_t i = 0;
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
        static const char *const allowed[] = {"name", "port", "bindAddress", "protocol", NULL};
        const cJSON *f[4];
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
        if (l->https && !g->tls)
            REJECT_AT(p, "protocol", XL_R_INVALID_SPEC,
                      "HTTPS needs the Gateway's spec.tls (its certificates)");
        any_https |= l->https;
        /* one socket per port: the kernel refuses a second bind, and a
         * wildcard address overlaps every other */
        for (size_t k = 0; k + 1 < i; k++) {
            const struct xl_listener *q = &g->listeners[k];
            if (l->name && q->name && strcmp(l->name, q->name) == 0)
                REJECT_AT(p, "name", XL_R_INVALID_SPEC, "\"%s\" is used by listeners[%zu]", l->name,
                          k);
            if (l->port && l->port == q->port)
                REJECT_AT(p, "port", XL_R_INVALID_PORT, "%u is used by listeners[%zu]",
                          (unsigned)l->port, k);
        }
        pop(p, o);
    }
    g->nlisteners = i;
    if (g->tls && !any_https)
        REJECT(p, XL_R_INVALID_SPEC,
               "tls is set but no listener has protocol HTTPS: its certificates would serve "
               "nothing");
}

int xlate_gw_listeners(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m,
                       const char *stat_prefix, struct xds_resource ***out, size_t *n)
{
    const struct xl_gateway *g = &gwe->obj->u.gw;
    const struct xl_gw_tls *t = gwe->gtls;
    struct xl_listener one = {.address = g->bind_address, .port = g->bind_port, .https = !!t};
    const struct xl_listener *ls = g->nlisteners ? g->listeners : &one;
    size_t nl = g->nlisteners ? g->nlisteners : 1;
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
        uint8_t *bytes = NULL;
        size_t len = 0;
        if ((l->https && t) ? xlate_gw_tls_listener(ctx, gwe, m, name, l->address, l->port, sp,
                                                    &bytes, &len) != 0
                            : xlate_encode_listener_envoy_ex(name, l->address, l->port, gwe->key,
                                                             sp, &ho, &bytes, &len) != 0)
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
