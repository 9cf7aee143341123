/*
 * Localities of a ClusterLoadAssignment (xlate_cluster.h): zones with their
 * weight and priority, priorities renumbered without gaps, and their
 * encoding back to front.
 */
#include "xlate_cluster.h"

#include <stdlib.h>
#include <string.h>

static const struct xl_locality *listed(const struct xl_cluster_opts *o, const char *zone)
{
    for (size_t i = 0; i < o->nlocalities; i++)
        if (strcmp(o->localities[i].zone, zone) == 0)
            return &o->localities[i];
    return NULL;
}

static uint32_t sum_weights(const struct xl_lb_endpoint *eps, size_t n)
{
    uint64_t sum = 0;
    for (size_t k = 0; k < n; k++)
        sum += eps[k].weight;
    return sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
}

static int loc_cmp(const void *a, const void *b)
{
    const struct xl_cla_locality *x = a, *y = b;
    if (x->priority != y->priority)
        return x->priority < y->priority ? -1 : 1;
    return strcmp(x->zone, y->zone);
}

int xlate_localities(const struct xl_cluster_opts *o, const struct xl_lb_endpoint *eps, size_t n,
                     struct xl_cla_locality **out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    if (n == 0)
        return 0;
    size_t nz = 1;
    for (size_t i = 1; i < n; i++)
        nz += strcmp(eps[i - 1].zone, eps[i].zone) != 0;
    struct xl_cla_locality *locs = calloc(nz, sizeof(*locs));
    if (!locs)
        return -1;
    uint32_t unlisted = 0; /* the priority after every listed one */
    for (size_t i = 0; i < o->nlocalities; i++)
        if (o->localities[i].priority + 1 > unlisted)
            unlisted = o->localities[i].priority + 1;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && strcmp(eps[j].zone, eps[i].zone) == 0)
            j++;
        const struct xl_locality *l = listed(o, eps[i].zone);
        locs[k++] = (struct xl_cla_locality){
            .zone = eps[i].zone,
            .eps = &eps[i],
            .n = j - i,
            .weight = l && l->weight ? l->weight : sum_weights(&eps[i], j - i),
            .priority = l ? l->priority : unlisted,
        };
        i = j;
    }
    /* without spec.localities every zone is at one priority and the
     * endpoints came sorted by zone: already in order (the common case,
     * one per Upstream whose endpoints changed) */
    if (o->nlocalities)
        qsort(locs, k, sizeof(*locs), loc_cmp);
    /* only zones with endpoints are here: renumber their priorities
     * 0..k-1 in order, so the first priority with a ready endpoint is 0 */
    uint32_t next = 0, prev = locs[0].priority;
    for (size_t i = 0; i < k; i++) {
        if (locs[i].priority != prev)
            next++;
        prev = locs[i].priority;
        locs[i].priority = next;
    }
    *out = locs;
    *nout = k;
    return 0;
}

/* Field numbers: ClusterLoadAssignment, LocalityLbEndpoints, Locality,
 * LbEndpoint, Endpoint, Address, SocketAddress (endpoint.proto,
 * endpoint_components.proto, base.proto, address.proto). */
enum {
    CLA_CLUSTER_NAME = 1,
    CLA_ENDPOINTS = 2,
    LOCALITY_LB_LOCALITY = 1,
    LOCALITY_LB_LB_ENDPOINTS = 2,
    LOCALITY_LB_WEIGHT = 3,
    LOCALITY_LB_PRIORITY = 5,
    LOCALITY_ZONE = 2,
    LB_ENDPOINT_ENDPOINT = 1,
    LB_ENDPOINT_HEALTH_STATUS = 2,
    LB_ENDPOINT_WEIGHT = 4,
    ENDPOINT_ADDRESS = 1,
    ENDPOINT_HOSTNAME = 3,
    ADDRESS_SOCKET_ADDRESS = 1,
    SOCKET_ADDRESS_ADDRESS = 2,
    SOCKET_ADDRESS_PORT_VALUE = 3,
    HEALTH_STATUS_HEALTHY = 1,
};

static void enc_lb_endpoint(struct cx_wire *w, const struct xl_lb_endpoint *e)
{
    size_t lb = cx_wire_mark(w);
    if (e->weight != 1)
        cx_wire_wrapped(w, LB_ENDPOINT_WEIGHT, e->weight);
    cx_wire_uint(w, LB_ENDPOINT_HEALTH_STATUS, HEALTH_STATUS_HEALTHY);
    size_t ep = cx_wire_mark(w);
    if (e->hostname) /* after the address: written first, back to front */
        cx_wire_str3(w, ENDPOINT_HOSTNAME, e->hostname);
    size_t addr = cx_wire_mark(w), sa = addr;
    cx_wire_uint(w, SOCKET_ADDRESS_PORT_VALUE, e->port); /* a oneof member: even when 0 */
    cx_wire_str3(w, SOCKET_ADDRESS_ADDRESS, e->address);
    cx_wire_close(w, ADDRESS_SOCKET_ADDRESS, sa);
    cx_wire_close(w, ENDPOINT_ADDRESS, addr);
    cx_wire_close(w, LB_ENDPOINT_ENDPOINT, ep);
    cx_wire_close(w, LOCALITY_LB_LB_ENDPOINTS, lb);
}

int xlate_encode_cla_localities(const char *name, const struct xl_cla_locality *locs, size_t n,
                                uint8_t **out, size_t *len)
{
    size_t neps = 0;
    for (size_t i = 0; i < n; i++)
        neps += locs[i].n;
    struct cx_wire w;
    if (cx_wire_init(&w, 64 + strlen(name) + 48 * neps + 32 * n) != 0)
        return -1;
    for (size_t i = n; i-- > 0;) {
        const struct xl_cla_locality *l = &locs[i];
        size_t loc = cx_wire_mark(&w);
        if (l->priority)
            cx_wire_uint(&w, LOCALITY_LB_PRIORITY, l->priority);
        cx_wire_wrapped(&w, LOCALITY_LB_WEIGHT, l->weight);
        for (size_t k = l->n; k-- > 0;)
            enc_lb_endpoint(&w, &l->eps[k]);
        size_t z = cx_wire_mark(&w);
        cx_wire_str3(&w, LOCALITY_ZONE, l->zone);
        cx_wire_close(&w, LOCALITY_LB_LOCALITY, z); /* present even when empty */
        cx_wire_close(&w, CLA_ENDPOINTS, loc);
    }
    cx_wire_str3(&w, CLA_CLUSTER_NAME, name);
    return cx_wire_finish(&w, out, len);
}
