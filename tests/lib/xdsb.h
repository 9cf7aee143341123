/*
 * xdsb: hand-built xDS resources for tests and benchmarks — the minimal
 * shapes gRPC's proxyless xDS clients accept (reference/xds.md): an API
 * listener with an HttpConnectionManager (RDS over ADS, router last), a
 * RouteConfiguration with prefix routes (single or weighted clusters), an
 * EDS cluster over ADS, and a ClusterLoadAssignment of 127.0.0.1 ports.
 * Each returns an encoded struct xds_resource (one reference), NULL on
 * failure. Once the translator produces real snapshots, e2e tests should
 * prefer its output; these stay for targeted cases (invalid resources).
 */
#ifndef XDSB_H
#define XDSB_H

#include "xlate_snapshot_types.h"

#include <stddef.h>

struct xdsb_route {
    const char *prefix;   /* "" or "/"-led */
    const char *cluster;  /* single cluster, or the first of a weighted pair */
    const char *cluster2; /* NULL: single cluster */
    unsigned w1, w2;      /* weights of a pair */
    unsigned total;       /* total_weight (0: leave unset, meaning 100) */
};

struct xds_resource *xdsb_api_listener(const char *name, const char *route_config);
struct xds_resource *xdsb_route_config(const char *name, const char *domain,
                                       const struct xdsb_route *routes, size_t n);
/* |lb_policy|: 0 ROUND_ROBIN, 1 LEAST_REQUEST, 2 RING_HASH...; |eds| 0 makes
 * a STATIC cluster (which gRPC refuses). */
struct xds_resource *xdsb_cluster(const char *name, int lb_policy, int eds);
struct xds_resource *xdsb_endpoints(const char *cluster, const int *ports, size_t n);

#endif
