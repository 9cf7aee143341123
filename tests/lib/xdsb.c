#include "xdsb.h"

#include "xlate_snapshot.h"

#include "envoy/config/cluster/v3/cluster.pb-c.h"
#include "envoy/config/endpoint/v3/endpoint.pb-c.h"
#include "envoy/config/listener/v3/listener.pb-c.h"
#include "envoy/config/route/v3/route.pb-c.h"
#include "envoy/extensions/filters/http/router/v3/router.pb-c.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb-c.h"

#include <stdlib.h>

static struct xds_resource *pack(enum xds_type t, const char *name, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return NULL;
    protobuf_c_message_pack(m, buf);
    return xlate_resource_new(t, name, buf, n);
}

#define HCM_PFX Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__
#define HCM_URL            \
    "type.googleapis.com/" \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
#define ROUTER_URL "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"

struct xds_resource *xdsb_api_listener(const char *name, const char *route_config)
{
    Envoy__Config__Core__V3__AggregatedConfigSource ads =
        ENVOY__CONFIG__CORE__V3__AGGREGATED_CONFIG_SOURCE__INIT;
    Envoy__Config__Core__V3__ConfigSource cs = ENVOY__CONFIG__CORE__V3__CONFIG_SOURCE__INIT;
    cs.config_source_specifier_case =
        ENVOY__CONFIG__CORE__V3__CONFIG_SOURCE__CONFIG_SOURCE_SPECIFIER_ADS;
    cs.ads = &ads;
    cs.resource_api_version = ENVOY__CONFIG__CORE__V3__API_VERSION__V3;
    Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__Rds rds =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__RDS__INIT;
    rds.config_source = &cs;
    rds.route_config_name = (char *)route_config;
    Envoy__Extensions__Filters__Http__Router__V3__Router router =
        ENVOY__EXTENSIONS__FILTERS__HTTP__ROUTER__V3__ROUTER__INIT;
    uint8_t rbuf[8];
    size_t rlen = envoy__extensions__filters__http__router__v3__router__pack(&router, rbuf);
    Google__Protobuf__Any rany = GOOGLE__PROTOBUF__ANY__INIT;
    rany.type_url = ROUTER_URL;
    rany.value.data = rbuf;
    rany.value.len = rlen;
    Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter hf =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_FILTER__INIT;
    hf.name = "envoy.filters.http.router";
    hf.config_type_case =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_FILTER__CONFIG_TYPE_TYPED_CONFIG;
    hf.typed_config = &rany;
    Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter *hfs[1] = {&hf};
    Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpConnectionManager hcm =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_CONNECTION_MANAGER__INIT;
    hcm.route_specifier_case =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_CONNECTION_MANAGER__ROUTE_SPECIFIER_RDS;
    hcm.rds = &rds;
    hcm.n_http_filters = 1;
    hcm.http_filters = hfs;
    hcm.stat_prefix = (char *)name;
    size_t hlen = protobuf_c_message_get_packed_size(&hcm.base);
    uint8_t *hbuf = malloc(hlen ? hlen : 1);
    if (!hbuf)
        return NULL;
    protobuf_c_message_pack(&hcm.base, hbuf);
    Google__Protobuf__Any hany = GOOGLE__PROTOBUF__ANY__INIT;
    hany.type_url = HCM_URL;
    hany.value.data = hbuf;
    hany.value.len = hlen;
    Envoy__Config__Listener__V3__ApiListener al = ENVOY__CONFIG__LISTENER__V3__API_LISTENER__INIT;
    al.api_listener = &hany;
    Envoy__Config__Listener__V3__Listener l = ENVOY__CONFIG__LISTENER__V3__LISTENER__INIT;
    l.name = (char *)name;
    l.api_listener = &al;
    struct xds_resource *r = pack(XDS_LISTENER, name, &l.base);
    free(hbuf);
    return r;
}

struct xds_resource *xdsb_route_config(const char *name, const char *domain,
                                       const struct xdsb_route *routes, size_t n)
{
    Envoy__Config__Route__V3__Route *rv[16];
    Envoy__Config__Route__V3__Route rt[16];
    Envoy__Config__Route__V3__RouteMatch rm[16];
    Envoy__Config__Route__V3__RouteAction ra[16];
    Envoy__Config__Route__V3__WeightedCluster wc[16];
    Envoy__Config__Route__V3__WeightedCluster__ClusterWeight cw[16][2];
    Envoy__Config__Route__V3__WeightedCluster__ClusterWeight *cwp[16][2];
    Google__Protobuf__UInt32Value wv[16][3];
    if (n > 16)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const struct xdsb_route *x = &routes[i];
        rm[i] = (Envoy__Config__Route__V3__RouteMatch)ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__INIT;
        rm[i].path_specifier_case = ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_PREFIX;
        rm[i].prefix = (char *)x->prefix;
        ra[i] = (Envoy__Config__Route__V3__RouteAction)ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__INIT;
        if (!x->cluster2) {
            ra[i].cluster_specifier_case =
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__CLUSTER_SPECIFIER_CLUSTER;
            ra[i].cluster = (char *)x->cluster;
        } else {
            const char *cn[2] = {x->cluster, x->cluster2};
            unsigned w[2] = {x->w1, x->w2};
            for (int k = 0; k < 2; k++) {
                cw[i][k] = (Envoy__Config__Route__V3__WeightedCluster__ClusterWeight)
                    ENVOY__CONFIG__ROUTE__V3__WEIGHTED_CLUSTER__CLUSTER_WEIGHT__INIT;
                cw[i][k].name = (char *)cn[k];
                wv[i][k] = (Google__Protobuf__UInt32Value)GOOGLE__PROTOBUF__UINT32_VALUE__INIT;
                wv[i][k].value = w[k];
                cw[i][k].weight = &wv[i][k];
                cwp[i][k] = &cw[i][k];
            }
            wc[i] = (Envoy__Config__Route__V3__WeightedCluster)
                ENVOY__CONFIG__ROUTE__V3__WEIGHTED_CLUSTER__INIT;
            wc[i].n_clusters = 2;
            wc[i].clusters = cwp[i];
            if (x->total) {
                wv[i][2] = (Google__Protobuf__UInt32Value)GOOGLE__PROTOBUF__UINT32_VALUE__INIT;
                wv[i][2].value = x->total;
                wc[i].total_weight = &wv[i][2];
            }
            ra[i].cluster_specifier_case =
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__CLUSTER_SPECIFIER_WEIGHTED_CLUSTERS;
            ra[i].weighted_clusters = &wc[i];
        }
        rt[i] = (Envoy__Config__Route__V3__Route)ENVOY__CONFIG__ROUTE__V3__ROUTE__INIT;
        rt[i].match = &rm[i];
        rt[i].action_case = ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_ROUTE;
        rt[i].route = &ra[i];
        rv[i] = &rt[i];
    }
    Envoy__Config__Route__V3__VirtualHost vh = ENVOY__CONFIG__ROUTE__V3__VIRTUAL_HOST__INIT;
    char *domains[1] = {(char *)domain};
    vh.name = (char *)domain;
    vh.n_domains = 1;
    vh.domains = domains;
    vh.n_routes = n;
    vh.routes = rv;
    Envoy__Config__Route__V3__VirtualHost *vhs[1] = {&vh};
    Envoy__Config__Route__V3__RouteConfiguration rc =
        ENVOY__CONFIG__ROUTE__V3__ROUTE_CONFIGURATION__INIT;
    rc.name = (char *)name;
    rc.n_virtual_hosts = 1;
    rc.virtual_hosts = vhs;
    return pack(XDS_ROUTE, name, &rc.base);
}

struct xds_resource *xdsb_cluster(const char *name, int lb_policy, int eds)
{
    Envoy__Config__Core__V3__AggregatedConfigSource ads =
        ENVOY__CONFIG__CORE__V3__AGGREGATED_CONFIG_SOURCE__INIT;
    Envoy__Config__Core__V3__ConfigSource cs = ENVOY__CONFIG__CORE__V3__CONFIG_SOURCE__INIT;
    cs.config_source_specifier_case =
        ENVOY__CONFIG__CORE__V3__CONFIG_SOURCE__CONFIG_SOURCE_SPECIFIER_ADS;
    cs.ads = &ads;
    cs.resource_api_version = ENVOY__CONFIG__CORE__V3__API_VERSION__V3;
    Envoy__Config__Cluster__V3__Cluster__EdsClusterConfig ec =
        ENVOY__CONFIG__CLUSTER__V3__CLUSTER__EDS_CLUSTER_CONFIG__INIT;
    ec.eds_config = &cs;
    Envoy__Config__Cluster__V3__Cluster c = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__INIT;
    c.name = (char *)name;
    c.cluster_discovery_type_case =
        ENVOY__CONFIG__CLUSTER__V3__CLUSTER__CLUSTER_DISCOVERY_TYPE_TYPE;
    c.type = eds ? ENVOY__CONFIG__CLUSTER__V3__CLUSTER__DISCOVERY_TYPE__EDS
                 : ENVOY__CONFIG__CLUSTER__V3__CLUSTER__DISCOVERY_TYPE__STATIC;
    if (eds)
        c.eds_cluster_config = &ec;
    c.lb_policy = (Envoy__Config__Cluster__V3__Cluster__LbPolicy)lb_policy;
    return pack(XDS_CLUSTER, name, &c.base);
}

struct xds_resource *xdsb_endpoints(const char *cluster, const int *ports, size_t n)
{
    Envoy__Config__Endpoint__V3__LbEndpoint lb[16], *lbp[16];
    Envoy__Config__Endpoint__V3__Endpoint ep[16];
    Envoy__Config__Core__V3__Address ad[16];
    Envoy__Config__Core__V3__SocketAddress sa[16];
    if (n > 16)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        sa[i] =
            (Envoy__Config__Core__V3__SocketAddress)ENVOY__CONFIG__CORE__V3__SOCKET_ADDRESS__INIT;
        sa[i].address = "127.0.0.1";
        sa[i].port_specifier_case =
            ENVOY__CONFIG__CORE__V3__SOCKET_ADDRESS__PORT_SPECIFIER_PORT_VALUE;
        sa[i].port_value = (uint32_t)ports[i];
        ad[i] = (Envoy__Config__Core__V3__Address)ENVOY__CONFIG__CORE__V3__ADDRESS__INIT;
        ad[i].address_case = ENVOY__CONFIG__CORE__V3__ADDRESS__ADDRESS_SOCKET_ADDRESS;
        ad[i].socket_address = &sa[i];
        ep[i] = (Envoy__Config__Endpoint__V3__Endpoint)ENVOY__CONFIG__ENDPOINT__V3__ENDPOINT__INIT;
        ep[i].address = &ad[i];
        lb[i] =
            (Envoy__Config__Endpoint__V3__LbEndpoint)ENVOY__CONFIG__ENDPOINT__V3__LB_ENDPOINT__INIT;
        lb[i].host_identifier_case =
            ENVOY__CONFIG__ENDPOINT__V3__LB_ENDPOINT__HOST_IDENTIFIER_ENDPOINT;
        lb[i].endpoint = &ep[i];
        lb[i].health_status = ENVOY__CONFIG__CORE__V3__HEALTH_STATUS__HEALTHY;
        lbp[i] = &lb[i];
    }
    Envoy__Config__Core__V3__Locality loc = ENVOY__CONFIG__CORE__V3__LOCALITY__INIT;
    loc.zone = "z1";
    Google__Protobuf__UInt32Value w = GOOGLE__PROTOBUF__UINT32_VALUE__INIT;
    w.value = 1;
    Envoy__Config__Endpoint__V3__LocalityLbEndpoints lle =
        ENVOY__CONFIG__ENDPOINT__V3__LOCALITY_LB_ENDPOINTS__INIT;
    lle.locality = &loc;
    lle.n_lb_endpoints = n;
    lle.lb_endpoints = lbp;
    lle.load_balancing_weight = &w;
    Envoy__Config__Endpoint__V3__LocalityLbEndpoints *llep[1] = {&lle};
    Envoy__Config__Endpoint__V3__ClusterLoadAssignment cla =
        ENVOY__CONFIG__ENDPOINT__V3__CLUSTER_LOAD_ASSIGNMENT__INIT;
    cla.cluster_name = (char *)cluster;
    cla.n_endpoints = 1;
    cla.endpoints = llep;
    return pack(XDS_ENDPOINT, cluster, &cla.base);
}
