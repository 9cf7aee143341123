#include "store_kinds.h"

#include <string.h>

static const struct kube_resource resources[XLATE_KIND_COUNT] = {
    [XLATE_KIND_GATEWAY] = {STORE_GROUP, "v1", "gateways", "Gateway", 1},
    [XLATE_KIND_VIRTUAL_SERVICE] = {STORE_GROUP, "v1", "virtualservices", "VirtualService", 1},
    [XLATE_KIND_ROUTE_TABLE] = {STORE_GROUP, "v1", "routetables", "RouteTable", 1},
    [XLATE_KIND_UPSTREAM] = {STORE_GROUP, "v1", "upstreams", "Upstream", 1},
    [XLATE_KIND_SERVICE] = {"", "v1", "services", "Service", 1},
    [XLATE_KIND_ENDPOINT_SLICE] = {"discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", 1},
    [XLATE_KIND_SECRET] = {"", "v1", "secrets", "Secret", 1},
    [XLATE_KIND_CONFIG_MAP] = {"", "v1", "configmaps", "ConfigMap", 1},
};

const struct kube_resource store_res_proxysnapshots = {STORE_GROUP, "v1", "proxysnapshots",
                                                       "ProxySnapshot", 1};
const struct kube_resource store_res_namespaces = {"", "v1", "namespaces", "Namespace", 0};

const struct kube_resource *store_kind_resource(enum xlate_kind k)
{
    return k >= 0 && k < XLATE_KIND_COUNT ? &resources[k] : NULL;
}

int store_kind_has_status(enum xlate_kind k)
{
    return k == XLATE_KIND_GATEWAY || k == XLATE_KIND_VIRTUAL_SERVICE ||
           k == XLATE_KIND_ROUTE_TABLE || k == XLATE_KIND_UPSTREAM;
}

enum xlate_kind store_kind_from_name(const char *kind)
{
    if (!kind)
        return XLATE_KIND_UNKNOWN;
    for (int k = 0; k < XLATE_KIND_COUNT; k++)
        if (strcmp(resources[k].kind, kind) == 0)
            return (enum xlate_kind)k;
    return XLATE_KIND_UNKNOWN;
}
