/* The encoders, checked by decoding what they write: what Envoy and gRPC's
 * xDS client require (reference/xds.md) must be there. */
#include "cxtest.h"
#include "xlate_encode.h"
#include "xlate_util.h"

#include "envoy/config/cluster/v3/cluster.pb-c.h"
#include "envoy/config/endpoint/v3/endpoint.pb-c.h"
#include "envoy/config/listener/v3/listener.pb-c.h"
#include "envoy/config/route/v3/route.pb-c.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb-c.h"

#include <stdlib.h>
#include <string.h>

typedef Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpConnectionManager Hcm;

static void check_hcm(const Google__Protobuf__Any *any, const char *rc_name)
{
    REQUIRE(any);
    CHECK_STR_EQ(any->type_url, XL_TYPE_URL_HCM);
    Hcm *h =
        envoy__extensions__filters__network__http_connection_manager__v3__http_connection_manager__unpack(
            NULL, any->value.len, any->value.data);
    REQUIRE(h);
    CHECK_INT_EQ(
        h->route_specifier_case,
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_CONNECTION_MANAGER__ROUTE_SPECIFIER_RDS);
    CHECK_STR_EQ(h->rds->route_config_name, rc_name);
    CHECK_INT_EQ(h->rds->config_source->config_source_specifier_case,
                 ENVOY__CONFIG__CORE__V3__CONFIG_SOURCE__CONFIG_SOURCE_SPECIFIER_ADS);
    CHECK_INT_EQ(h->rds->config_source->resource_api_version,
                 ENVOY__CONFIG__CORE__V3__API_VERSION__V3);
    CHECK(h->stat_prefix && h->stat_prefix[0]); /* Envoy requires one */
    /* gRPC: non-empty, the last is the router */
    REQUIRE(h->n_http_filters >= 1);
    const Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter *last =
        h->http_filters[h->n_http_filters - 1];
    CHECK_STR_EQ(last->name, XL_ROUTER_FILTER_NAME);
    CHECK_STR_EQ(last->typed_config->type_url, XL_TYPE_URL_ROUTER);
    protobuf_c_message_free_unpacked(&h->base, NULL);
}

static void test_listeners(void)
{
    uint8_t *b = NULL;
    size_t len = 0;
    REQUIRE_INT_EQ(xlate_encode_listener_envoy("ns/gw", "::", 8443, "ns/gw", "ns_gw", &b, &len), 0);
    Envoy__Config__Listener__V3__Listener *l =
        envoy__config__listener__v3__listener__unpack(NULL, len, b);
    REQUIRE(l);
    CHECK_STR_EQ(l->name, "ns/gw");
    CHECK_STR_EQ(l->address->socket_address->address, "::");
    CHECK_INT_EQ(l->address->socket_address->port_value, 8443);
    CHECK(l->api_listener == NULL);
    REQUIRE_INT_EQ(l->n_filter_chains, 1);
    REQUIRE_INT_EQ(l->filter_chains[0]->n_filters, 1);
    CHECK_STR_EQ(l->filter_chains[0]->filters[0]->name, XL_HCM_FILTER_NAME);
    check_hcm(l->filter_chains[0]->filters[0]->typed_config, "ns/gw");
    protobuf_c_message_free_unpacked(&l->base, NULL);
    free(b);

    REQUIRE_INT_EQ(xlate_encode_listener_api("greeter:50051", "ns/mesh", "ns_mesh", &b, &len), 0);
    l = envoy__config__listener__v3__listener__unpack(NULL, len, b);
    REQUIRE(l);
    /* gRPC: the name is the dialled target, no address, an ApiListener */
    CHECK_STR_EQ(l->name, "greeter:50051");
    CHECK(l->address == NULL);
    CHECK_INT_EQ(l->n_filter_chains, 0);
    REQUIRE(l->api_listener);
    check_hcm(l->api_listener->api_listener, "ns/mesh");
    protobuf_c_message_free_unpacked(&l->base, NULL);
    free(b);
}

/* 1 if protobuf-c packs |m| (unpacked from |b|) back into exactly |b|: the
 * encoders that write bytes themselves must write what protobuf-c would
 * (field order, zero values left out, ...). */
static int repacks_the_same(const ProtobufCMessage *m, const uint8_t *b, size_t len)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *again = malloc(n ? n : 1);
    protobuf_c_message_pack(m, again);
    int same = n == len && memcmp(again, b, len) == 0;
    free(again);
    return same;
}

static void test_cluster_tls_bytes(void)
{
    char *sans[] = {"a.example.com", "b.example.com"};
    const struct xl_upstream_tls_enc cases[] = {
        {.sni = "a.example.com",
         .ca = "configmap:ns/ca/ca.crt",
         .sans = sans,
         .nsans = 2,
         .client = "secret:ns/client",
         .min_version = XL_TLS_1_2,
         .max_version = XL_TLS_1_3},
        {.sni = NULL, .ca = NULL},
        {.sni = "x", .ca = "configmap:ns/ca/ca.crt", .sans = sans, .nsans = 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t *b = NULL;
        size_t len = 0;
        REQUIRE_INT_EQ(
            xlate_encode_cluster_tls("ns/tls", XL_LB_RING_HASH, 250000000, 1, &cases[i], &b, &len),
            0);
        Envoy__Config__Cluster__V3__Cluster *c =
            envoy__config__cluster__v3__cluster__unpack(NULL, len, b);
        REQUIRE(c);
        REQUIRE(c->transport_socket);
        CHECK_STR_EQ(c->transport_socket->name, "envoy.transport_sockets.tls");
        CHECK(c->eds_cluster_config->eds_config->ads != NULL);
        CHECK_INT_EQ(c->connect_timeout->nanos, 250000000);
        CHECK(repacks_the_same(&c->base, b, len));
        protobuf_c_message_free_unpacked(&c->base, NULL);
        free(b);
    }
}

static void test_cluster(void)
{
    static const struct {
        enum xl_lb_policy lb;
        int want;
    } lbs[] = {
        {XL_LB_ROUND_ROBIN, ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__ROUND_ROBIN},
        {XL_LB_LEAST_REQUEST, ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__LEAST_REQUEST},
        {XL_LB_RING_HASH, ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__RING_HASH},
        {XL_LB_RANDOM, ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__RANDOM},
    };
    for (size_t i = 0; i < 4; i++) {
        uint8_t *b = NULL;
        size_t len = 0;
        REQUIRE_INT_EQ(xlate_encode_cluster("ns/up", lbs[i].lb, 1500000000, i == 0, &b, &len), 0);
        Envoy__Config__Cluster__V3__Cluster *c =
            envoy__config__cluster__v3__cluster__unpack(NULL, len, b);
        REQUIRE(c);
        CHECK_STR_EQ(c->name, "ns/up");
        CHECK_INT_EQ(c->cluster_discovery_type_case,
                     ENVOY__CONFIG__CLUSTER__V3__CLUSTER__CLUSTER_DISCOVERY_TYPE_TYPE);
        CHECK_INT_EQ(c->type, ENVOY__CONFIG__CLUSTER__V3__CLUSTER__DISCOVERY_TYPE__EDS);
        CHECK_INT_EQ(c->eds_cluster_config->eds_config->config_source_specifier_case,
                     ENVOY__CONFIG__CORE__V3__CONFIG_SOURCE__CONFIG_SOURCE_SPECIFIER_ADS);
        /* no service_name: the EDS name is the cluster's */
        CHECK(!c->eds_cluster_config->service_name || !c->eds_cluster_config->service_name[0]);
        CHECK_INT_EQ(c->lb_policy, lbs[i].want);
        CHECK(c->eds_cluster_config->eds_config->ads != NULL);
        CHECK_INT_EQ(c->eds_cluster_config->eds_config->resource_api_version,
                     ENVOY__CONFIG__CORE__V3__API_VERSION__V3);
        /* written directly: the bytes are what protobuf-c packs from them */
        CHECK(repacks_the_same(&c->base, b, len));
        if (i == 0) {
            REQUIRE(c->connect_timeout);
            CHECK_INT_EQ(c->connect_timeout->seconds, 1);
            CHECK_INT_EQ(c->connect_timeout->nanos, 500000000);
        } else {
            CHECK(c->connect_timeout == NULL);
        }
        protobuf_c_message_free_unpacked(&c->base, NULL);
        free(b);
    }
}

/* Ring sizes (ring_hash_lb_config, UInt64Value) with RING_HASH only;
 * MAGLEV's number is 5 (4 is reserved). */
static void test_cluster_hashing(void)
{
    static const struct {
        struct xl_cluster_enc c;
        int policy, has_ring;
        uint64_t min, max;
    } cases[] = {
        {{.lb = XL_LB_RING_HASH, .ring_min = 1024, .ring_max = 8388608},
         ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__RING_HASH,
         1,
         1024,
         8388608},
        {{.lb = XL_LB_RING_HASH, .ring_max = 4096},
         ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__RING_HASH,
         1,
         0,
         4096},
        {{.lb = XL_LB_RING_HASH, .ring_min = 1},
         ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__RING_HASH,
         1,
         1,
         0},
        {{.lb = XL_LB_RING_HASH},
         ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__RING_HASH,
         0,
         0,
         0},
        {{.lb = XL_LB_MAGLEV, .has_connect_timeout = 1, .connect_timeout_ns = 1},
         ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__MAGLEV,
         0,
         0,
         0},
    };
    CHECK_INT_EQ(ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__MAGLEV, 5);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t *b = NULL;
        size_t len = 0;
        REQUIRE_INT_EQ(xlate_encode_cluster_ex("ns/h", &cases[i].c, &b, &len), 0);
        Envoy__Config__Cluster__V3__Cluster *c =
            envoy__config__cluster__v3__cluster__unpack(NULL, len, b);
        REQUIRE(c);
        CHECK_INT_EQ(c->lb_policy, cases[i].policy);
        if (cases[i].has_ring) {
            CHECK_INT_EQ(c->lb_config_case,
                         ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_CONFIG_RING_HASH_LB_CONFIG);
            REQUIRE(c->ring_hash_lb_config);
            CHECK(!cases[i].min == !c->ring_hash_lb_config->minimum_ring_size);
            CHECK(!cases[i].max == !c->ring_hash_lb_config->maximum_ring_size);
            if (cases[i].min && c->ring_hash_lb_config->minimum_ring_size)
                CHECK_INT_EQ(c->ring_hash_lb_config->minimum_ring_size->value, cases[i].min);
            if (cases[i].max && c->ring_hash_lb_config->maximum_ring_size)
                CHECK_INT_EQ(c->ring_hash_lb_config->maximum_ring_size->value, cases[i].max);
            /* gRPC refuses any hash function but XX_HASH (the default, 0) */
            CHECK_INT_EQ(c->ring_hash_lb_config->hash_function, 0);
        } else {
            CHECK(c->ring_hash_lb_config == NULL);
        }
        CHECK(repacks_the_same(&c->base, b, len));
        protobuf_c_message_free_unpacked(&c->base, NULL);
        free(b);
    }
}

static void test_cla(void)
{
    const struct xl_lb_endpoint eps[] = {
        {"10.0.0.1", 80, 1, "", NULL},
        {"10.0.0.2", 80, 3, "", NULL},
        {"10.0.1.1", 8080, 1, "zone-a", "db-0"},
    };
    uint8_t *b = NULL;
    size_t len = 0;
    REQUIRE_INT_EQ(xlate_encode_cla("ns/up", eps, 3, &b, &len), 0);
    Envoy__Config__Endpoint__V3__ClusterLoadAssignment *c =
        envoy__config__endpoint__v3__cluster_load_assignment__unpack(NULL, len, b);
    REQUIRE(c);
    CHECK_STR_EQ(c->cluster_name, "ns/up");
    REQUIRE_INT_EQ(c->n_endpoints, 2);
    for (size_t i = 0; i < 2; i++) {
        /* gRPC skips a locality without a weight, NACKs one without locality */
        REQUIRE(c->endpoints[i]->locality);
        REQUIRE(c->endpoints[i]->load_balancing_weight);
        CHECK_INT_GT(c->endpoints[i]->load_balancing_weight->value, 0);
        CHECK_INT_EQ(c->endpoints[i]->priority, 0);
        for (size_t k = 0; k < c->endpoints[i]->n_lb_endpoints; k++)
            CHECK_INT_EQ(c->endpoints[i]->lb_endpoints[k]->health_status,
                         ENVOY__CONFIG__CORE__V3__HEALTH_STATUS__HEALTHY);
    }
    CHECK_STR_EQ(c->endpoints[0]->locality->zone, "");
    CHECK_INT_EQ(c->endpoints[0]->load_balancing_weight->value, 4);         /* 1 + 3 */
    CHECK(c->endpoints[0]->lb_endpoints[0]->load_balancing_weight == NULL); /* weight 1 */
    CHECK_INT_EQ(c->endpoints[0]->lb_endpoints[1]->load_balancing_weight->value, 3);
    CHECK_STR_EQ(c->endpoints[1]->locality->zone, "zone-a");
    CHECK_STR_EQ(c->endpoints[1]->lb_endpoints[0]->endpoint->address->socket_address->address,
                 "10.0.1.1");
    CHECK_INT_EQ(c->endpoints[1]->lb_endpoints[0]->endpoint->address->socket_address->port_value,
                 8080);
    /* Endpoint.hostname (3): what auto_host_rewrite puts in Host */
    CHECK_STR_EQ(c->endpoints[1]->lb_endpoints[0]->endpoint->hostname, "db-0");
    CHECK_STR_EQ(c->endpoints[0]->lb_endpoints[0]->endpoint->hostname, "");
    const ProtobufCFieldDescriptor *hf = protobuf_c_message_descriptor_get_field_by_name(
        &envoy__config__endpoint__v3__endpoint__descriptor, "hostname");
    REQUIRE(hf);
    CHECK_INT_EQ(hf->id, 3);
    CHECK_INT_EQ(hf->type, PROTOBUF_C_TYPE_STRING);
    protobuf_c_message_free_unpacked(&c->base, NULL);
    free(b);
    /* no endpoints: an empty assignment, still named */
    REQUIRE_INT_EQ(xlate_encode_cla("ns/empty", NULL, 0, &b, &len), 0);
    c = envoy__config__endpoint__v3__cluster_load_assignment__unpack(NULL, len, b);
    REQUIRE(c);
    CHECK_STR_EQ(c->cluster_name, "ns/empty");
    CHECK_INT_EQ(c->n_endpoints, 0);
    protobuf_c_message_free_unpacked(&c->base, NULL);
    free(b);
}

/* The ClusterLoadAssignment as protobuf-c packs it: what xlate_encode_cla,
 * which writes the bytes directly, must give byte for byte. */
static uint8_t *reference_cla(const char *name, const struct xl_lb_endpoint *eps, size_t n,
                              size_t *len)
{
    Envoy__Config__Endpoint__V3__ClusterLoadAssignment cla =
        ENVOY__CONFIG__ENDPOINT__V3__CLUSTER_LOAD_ASSIGNMENT__INIT;
    Envoy__Config__Endpoint__V3__LocalityLbEndpoints locs[64], *plocs[64];
    Envoy__Config__Core__V3__Locality loc[64];
    Google__Protobuf__UInt32Value lw[64], w[256];
    Envoy__Config__Endpoint__V3__LbEndpoint lbe[256], *plbe[256];
    Envoy__Config__Endpoint__V3__Endpoint ep[256];
    Envoy__Config__Core__V3__Address addr[256];
    Envoy__Config__Core__V3__SocketAddress sa[256];
    cla.cluster_name = (char *)name;
    cla.endpoints = plocs;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && strcmp(eps[j].zone, eps[i].zone) == 0)
            j++;
        size_t l = cla.n_endpoints++;
        envoy__config__endpoint__v3__locality_lb_endpoints__init(&locs[l]);
        envoy__config__core__v3__locality__init(&loc[l]);
        google__protobuf__uint32_value__init(&lw[l]);
        loc[l].zone = (char *)eps[i].zone;
        locs[l].locality = &loc[l];
        locs[l].lb_endpoints = &plbe[i];
        uint64_t sum = 0;
        for (size_t k = i; k < j; k++) {
            envoy__config__endpoint__v3__lb_endpoint__init(&lbe[k]);
            envoy__config__endpoint__v3__endpoint__init(&ep[k]);
            envoy__config__core__v3__address__init(&addr[k]);
            envoy__config__core__v3__socket_address__init(&sa[k]);
            sa[k].address = (char *)eps[k].address;
            sa[k].port_specifier_case =
                ENVOY__CONFIG__CORE__V3__SOCKET_ADDRESS__PORT_SPECIFIER_PORT_VALUE;
            sa[k].port_value = eps[k].port;
            addr[k].address_case = ENVOY__CONFIG__CORE__V3__ADDRESS__ADDRESS_SOCKET_ADDRESS;
            addr[k].socket_address = &sa[k];
            ep[k].address = &addr[k];
            if (eps[k].hostname)
                ep[k].hostname = (char *)eps[k].hostname;
            lbe[k].host_identifier_case =
                ENVOY__CONFIG__ENDPOINT__V3__LB_ENDPOINT__HOST_IDENTIFIER_ENDPOINT;
            lbe[k].endpoint = &ep[k];
            lbe[k].health_status = ENVOY__CONFIG__CORE__V3__HEALTH_STATUS__HEALTHY;
            if (eps[k].weight != 1) {
                google__protobuf__uint32_value__init(&w[k]);
                w[k].value = eps[k].weight;
                lbe[k].load_balancing_weight = &w[k];
            }
            sum += eps[k].weight;
            plbe[k] = &lbe[k];
            locs[l].n_lb_endpoints++;
        }
        lw[l].value = sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
        locs[l].load_balancing_weight = &lw[l];
        plocs[l] = &locs[l];
        i = j;
    }
    *len = protobuf_c_message_get_packed_size(&cla.base);
    uint8_t *b = malloc(*len ? *len : 1);
    protobuf_c_message_pack(&cla.base, b);
    return b;
}

static void test_cla_bytes(void)
{
    /* long strings and many endpoints: multi-byte lengths at every level */
    static char long_addr[200], long_name[300];
    memset(long_addr, '1', sizeof(long_addr) - 1);
    memset(long_name, 'n', sizeof(long_name) - 1);
    struct xl_lb_endpoint many[200];
    for (size_t i = 0; i < 200; i++)
        many[i] = (struct xl_lb_endpoint){i % 2 ? "10.0.0.1" : long_addr, (uint32_t)(i * 331),
                                          (uint32_t)(i % 7 == 3 ? 0
                                                     : i % 5    ? 1
                                                                : 100000 * i),
                                          i < 150 ? "" : "zone-b", i % 3 ? NULL : long_name};
    const struct xl_lb_endpoint mixed[] = {
        {"10.0.0.1", 0, 1, "", "h-1"},
        {"10.0.0.2", 65535, 4294967295u, "", NULL},
        {"::1", 443, 2, "a", "db-0.db.ns.svc.cluster.local"},
        {"", 80, 1, "a", NULL},
        {"10.0.0.3", 80, 1, long_name, long_name},
    };
    struct {
        const char *name;
        const struct xl_lb_endpoint *eps;
        size_t n;
    } cases[] = {
        {"ns/up", mixed, 5},    {"", mixed, 5},       {long_name, mixed, 3},
        {"ns/many", many, 200}, {"ns/none", NULL, 0}, {"", NULL, 0},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        size_t want_len = 0, len = 0;
        uint8_t *want = reference_cla(cases[c].name, cases[c].eps, cases[c].n, &want_len);
        uint8_t *b = NULL;
        REQUIRE_INT_EQ(xlate_encode_cla(cases[c].name, cases[c].eps, cases[c].n, &b, &len), 0);
        CHECK_INT_EQ(len, want_len);
        CHECK(len == want_len && memcmp(b, want, len) == 0);
        free(b);
        free(want);
    }
}

/* ---- the VirtualHost as protobuf-c packs it (xlate_encode_vhost writes the
 * bytes directly and must give the same, byte for byte) ---------------------- */

typedef Envoy__Config__Route__V3__VirtualHost VirtualHost;
typedef Envoy__Config__Route__V3__Route Route;
typedef Envoy__Config__Route__V3__RouteMatch RouteMatch;
typedef Envoy__Config__Route__V3__RouteAction RouteAction;
typedef Envoy__Config__Route__V3__WeightedCluster WeightedCluster;
typedef Envoy__Config__Route__V3__WeightedCluster__ClusterWeight ClusterWeight;
typedef Envoy__Config__Route__V3__HeaderMatcher HeaderMatcher;
typedef Envoy__Config__Route__V3__RetryPolicy RetryPolicy;
typedef Envoy__Type__Matcher__V3__RegexMatcher RegexMatcher;
typedef Envoy__Type__Matcher__V3__RegexMatcher__GoogleRE2 GoogleRE2;

#define NEW(a, T, INIT) ((T *)new_msg((a), sizeof(T), &(T)INIT))

static void *new_msg(struct xl_arena *a, size_t size, const void *init)
{
    void *p = xlate_alloc(a, size);
    if (p)
        memcpy(p, init, size);
    return p;
}

static Google__Protobuf__Duration *ref_duration(struct xl_arena *a, int64_t ns)
{
    Google__Protobuf__Duration *d =
        NEW(a, Google__Protobuf__Duration, GOOGLE__PROTOBUF__DURATION__INIT);
    if (d) {
        d->seconds = ns / 1000000000;
        d->nanos = (int32_t)(ns % 1000000000);
    }
    return d;
}

static RegexMatcher *ref_regex(struct xl_arena *a, const char *re)
{
    RegexMatcher *m = NEW(a, RegexMatcher, ENVOY__TYPE__MATCHER__V3__REGEX_MATCHER__INIT);
    GoogleRE2 *g = NEW(a, GoogleRE2, ENVOY__TYPE__MATCHER__V3__REGEX_MATCHER__GOOGLE_RE2__INIT);
    if (!m || !g)
        return NULL;
    m->engine_type_case = ENVOY__TYPE__MATCHER__V3__REGEX_MATCHER__ENGINE_TYPE_GOOGLE_RE2;
    m->google_re2 = g;
    m->regex = (char *)re;
    return m;
}

static HeaderMatcher *ref_header(struct xl_arena *a, const struct xl_header *h)
{
    HeaderMatcher *m = NEW(a, HeaderMatcher, ENVOY__CONFIG__ROUTE__V3__HEADER_MATCHER__INIT);
    if (!m)
        return NULL;
    m->name = h->name;
    m->invert_match = h->invert;
    switch (h->kind) {
    case XL_HDR_EXACT:
        m->header_match_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__HEADER_MATCHER__HEADER_MATCH_SPECIFIER_EXACT_MATCH;
        m->exact_match = h->value;
        break;
    case XL_HDR_PREFIX:
        m->header_match_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__HEADER_MATCHER__HEADER_MATCH_SPECIFIER_PREFIX_MATCH;
        m->prefix_match = h->value;
        break;
    case XL_HDR_REGEX:
        m->header_match_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__HEADER_MATCHER__HEADER_MATCH_SPECIFIER_SAFE_REGEX_MATCH;
        m->safe_regex_match = ref_regex(a, h->value);
        if (!m->safe_regex_match)
            return NULL;
        break;
    case XL_HDR_PRESENT:
        m->header_match_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__HEADER_MATCHER__HEADER_MATCH_SPECIFIER_PRESENT_MATCH;
        m->present_match = 1;
        break;
    }
    return m;
}

typedef Envoy__Config__Route__V3__RouteAction__HashPolicy HashPolicy;

static HashPolicy *ref_hash(struct xl_arena *a, const struct xl_hash_policy *h)
{
    HashPolicy *p = NEW(a, HashPolicy, ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__INIT);
    if (!p)
        return NULL;
    p->terminal = h->terminal;
    switch (h->kind) {
    case XL_HASH_HEADER: {
        Envoy__Config__Route__V3__RouteAction__HashPolicy__Header *x =
            NEW(a, Envoy__Config__Route__V3__RouteAction__HashPolicy__Header,
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__HEADER__INIT);
        if (!x)
            return NULL;
        x->header_name = h->name;
        p->policy_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__POLICY_SPECIFIER_HEADER;
        p->header = x;
        break;
    }
    case XL_HASH_COOKIE: {
        Envoy__Config__Route__V3__RouteAction__HashPolicy__Cookie *x =
            NEW(a, Envoy__Config__Route__V3__RouteAction__HashPolicy__Cookie,
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__COOKIE__INIT);
        if (!x)
            return NULL;
        x->name = h->name;
        if (h->cookie_path)
            x->path = h->cookie_path;
        if (h->has_ttl && !(x->ttl = ref_duration(a, h->cookie_ttl_ns)))
            return NULL;
        p->policy_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__POLICY_SPECIFIER_COOKIE;
        p->cookie = x;
        break;
    }
    case XL_HASH_SOURCE_IP: {
        Envoy__Config__Route__V3__RouteAction__HashPolicy__ConnectionProperties *x =
            NEW(a, Envoy__Config__Route__V3__RouteAction__HashPolicy__ConnectionProperties,
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__CONNECTION_PROPERTIES__INIT);
        if (!x)
            return NULL;
        x->source_ip = 1;
        p->policy_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__POLICY_SPECIFIER_CONNECTION_PROPERTIES;
        p->connection_properties = x;
        break;
    }
    case XL_HASH_QUERY: {
        Envoy__Config__Route__V3__RouteAction__HashPolicy__QueryParameter *x =
            NEW(a, Envoy__Config__Route__V3__RouteAction__HashPolicy__QueryParameter,
                ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__QUERY_PARAMETER__INIT);
        if (!x)
            return NULL;
        x->name = h->name;
        p->policy_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HASH_POLICY__POLICY_SPECIFIER_QUERY_PARAMETER;
        p->query_parameter = x;
        break;
    }
    }
    return p;
}

static Route *ref_route(struct xl_arena *a, const struct xl_rroute *r, enum xlate_gateway_mode mode)
{
    Route *rt = NEW(a, Route, ENVOY__CONFIG__ROUTE__V3__ROUTE__INIT);
    RouteMatch *m = NEW(a, RouteMatch, ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__INIT);
    RouteAction *act = NEW(a, RouteAction, ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__INIT);
    if (!rt || !m || !act)
        return NULL;
    rt->match = m;
    rt->action_case = ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_ROUTE;
    rt->route = act;
    switch (r->kind) {
    case XL_PATH_PREFIX:
        m->path_specifier_case = ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_PREFIX;
        m->prefix = (char *)r->path;
        break;
    case XL_PATH_EXACT:
        m->path_specifier_case = ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_PATH;
        m->path = (char *)r->path;
        break;
    case XL_PATH_REGEX:
        m->path_specifier_case = ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_SAFE_REGEX;
        m->safe_regex = ref_regex(a, r->path);
        if (!m->safe_regex)
            return NULL;
        break;
    }
    if (!r->case_sensitive) {
        m->case_sensitive = NEW(a, Google__Protobuf__BoolValue, GOOGLE__PROTOBUF__BOOL_VALUE__INIT);
        if (!m->case_sensitive)
            return NULL;
    }
    if (r->nheaders) {
        m->headers = xlate_alloc(a, r->nheaders * sizeof(*m->headers));
        if (!m->headers)
            return NULL;
        for (size_t i = 0; i < r->nheaders; i++)
            if (!(m->headers[i] = ref_header(a, r->headers[i])))
                return NULL;
        m->n_headers = r->nheaders;
    }
    if (r->cluster) {
        act->cluster_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__CLUSTER_SPECIFIER_CLUSTER;
        act->cluster = (char *)r->cluster;
    } else {
        WeightedCluster *wc =
            NEW(a, WeightedCluster, ENVOY__CONFIG__ROUTE__V3__WEIGHTED_CLUSTER__INIT);
        if (!wc)
            return NULL;
        wc->clusters = xlate_alloc(a, r->nwc * sizeof(*wc->clusters));
        if (!wc->clusters)
            return NULL;
        for (size_t i = 0; i < r->nwc; i++) {
            ClusterWeight *cw = NEW(
                a, ClusterWeight, ENVOY__CONFIG__ROUTE__V3__WEIGHTED_CLUSTER__CLUSTER_WEIGHT__INIT);
            Google__Protobuf__UInt32Value *w =
                NEW(a, Google__Protobuf__UInt32Value, GOOGLE__PROTOBUF__UINT32_VALUE__INIT);
            if (!cw || !w)
                return NULL;
            cw->name = (char *)r->wc[i].cluster;
            w->value = r->wc[i].weight;
            cw->weight = w;
            wc->clusters[i] = cw;
        }
        wc->n_clusters = r->nwc;
        /* total_weight defaults to 100; gRPC requires the sum to match it */
        if (r->total_weight != 100) {
            wc->total_weight =
                NEW(a, Google__Protobuf__UInt32Value, GOOGLE__PROTOBUF__UINT32_VALUE__INIT);
            if (!wc->total_weight)
                return NULL;
            wc->total_weight->value = r->total_weight;
        }
        act->cluster_specifier_case =
            ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__CLUSTER_SPECIFIER_WEIGHTED_CLUSTERS;
        act->weighted_clusters = wc;
    }
    if (r->prefix_rewrite)
        act->prefix_rewrite = (char *)r->prefix_rewrite;
    if (r->has_timeout) {
        if (mode == XLATE_MODE_PROXYLESS) {
            /* gRPC reads the deadline from max_stream_duration, not timeout */
            Envoy__Config__Route__V3__RouteAction__MaxStreamDuration *msd =
                NEW(a, Envoy__Config__Route__V3__RouteAction__MaxStreamDuration,
                    ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__MAX_STREAM_DURATION__INIT);
            if (!msd || !(msd->max_stream_duration = ref_duration(a, r->timeout_ns)))
                return NULL;
            act->max_stream_duration = msd;
        } else if (!(act->timeout = ref_duration(a, r->timeout_ns))) {
            return NULL;
        }
    }
    if (r->has_retries) {
        RetryPolicy *rp = NEW(a, RetryPolicy, ENVOY__CONFIG__ROUTE__V3__RETRY_POLICY__INIT);
        Google__Protobuf__UInt32Value *n =
            NEW(a, Google__Protobuf__UInt32Value, GOOGLE__PROTOBUF__UINT32_VALUE__INIT);
        if (!rp || !n)
            return NULL;
        rp->retry_on = (char *)r->retry_on;
        n->value = r->retry_attempts;
        rp->num_retries = n;
        act->retry_policy = rp;
    }
    if (r->nhash) {
        act->hash_policy = xlate_alloc(a, r->nhash * sizeof(*act->hash_policy));
        if (!act->hash_policy)
            return NULL;
        for (size_t i = 0; i < r->nhash; i++)
            if (!(act->hash_policy[i] = ref_hash(a, r->hash[i])))
                return NULL;
        act->n_hash_policy = r->nhash;
    }
    return rt;
}

static int reference_vhost(const char *name, char *const *domains, size_t ndomains,
                           const struct xl_rroute *routes, size_t nroutes,
                           enum xlate_gateway_mode mode, uint8_t **out, size_t *len)
{
    struct xl_arena a = {0};
    int rc = -1;
    VirtualHost vh = ENVOY__CONFIG__ROUTE__V3__VIRTUAL_HOST__INIT;
    vh.name = (char *)name;
    vh.domains = (char **)domains;
    vh.n_domains = ndomains;
    vh.routes = xlate_alloc(&a, (nroutes ? nroutes : 1) * sizeof(*vh.routes));
    if (!vh.routes)
        goto out;
    for (size_t i = 0; i < nroutes; i++)
        if (!(vh.routes[i] = ref_route(&a, &routes[i], mode)))
            goto out;
    vh.n_routes = nroutes;
    *len = protobuf_c_message_get_packed_size(&vh.base);
    *out = malloc(*len ? *len : 1);
    protobuf_c_message_pack(&vh.base, *out);
    rc = 0;
out:
    xlate_arena_free(&a);
    return rc;
}

static void test_vhost_bytes(void)
{
    static char long_str[400];
    memset(long_str, 'x', sizeof(long_str) - 1);
    const struct xl_header h[] = {
        {"x-tenant", "t1", XL_HDR_EXACT, 0},   {"x-p", "ab", XL_HDR_PREFIX, 1},
        {"x-re", "v[0-9]+", XL_HDR_REGEX, 0},  {"x-present", NULL, XL_HDR_PRESENT, 0},
        {"x-absent", NULL, XL_HDR_PRESENT, 1}, {"x-long", long_str, XL_HDR_EXACT, 0},
        {"x-empty", "", XL_HDR_EXACT, 0},
    };
    const struct xl_header *hp[] = {&h[0], &h[1], &h[2], &h[3], &h[4], &h[5], &h[6]};
    const struct xl_cluster_weight wc[] = {{"ns/a", 1}, {"ns/b", 3}, {long_str, 300000}};
    const struct xl_hash_policy hash[] = {
        {.kind = XL_HASH_HEADER, .name = "x-user", .terminal = 1},
        {.kind = XL_HASH_COOKIE,
         .name = "s",
         .cookie_path = "/api",
         .has_ttl = 1,
         .cookie_ttl_ns = 3600000000001},
        {.kind = XL_HASH_COOKIE, .name = "session", .has_ttl = 1, .cookie_ttl_ns = 0},
        {.kind = XL_HASH_COOKIE, .name = long_str},
        {.kind = XL_HASH_SOURCE_IP, .terminal = 1},
        {.kind = XL_HASH_QUERY, .name = "q", .terminal = 1},
        {.kind = XL_HASH_HEADER, .name = ""},
    };
    const struct xl_hash_policy *hashp[] = {&hash[0], &hash[1], &hash[2], &hash[3],
                                            &hash[4], &hash[5], &hash[6]};
    const struct xl_rroute routes[] = {
        {.kind = XL_PATH_PREFIX,
         .path = "/",
         .case_sensitive = 1,
         .cluster = "ns/up",
         .hash = hashp,
         .nhash = 7},
        {.kind = XL_PATH_EXACT,
         .path = "/exact",
         .case_sensitive = 0,
         .headers = hp,
         .nheaders = 7,
         .cluster = "ns/up",
         .has_timeout = 1,
         .timeout_ns = 5000000000,
         .has_retries = 1,
         .retry_attempts = 3,
         .retry_on = "5xx,reset",
         .prefix_rewrite = "/new"},
        {.kind = XL_PATH_REGEX,
         .path = "/v[0-9]+/.*",
         .case_sensitive = 1,
         .headers = hp + 2,
         .nheaders = 1,
         .wc = wc,
         .nwc = 3,
         .total_weight = 300004,
         .has_timeout = 1,
         .timeout_ns = 1500000001,
         .has_retries = 1,
         .retry_attempts = 0,
         .retry_on = "",
         .hash = hashp + 4,
         .nhash = 2},
        {.kind = XL_PATH_PREFIX,
         .path = "",
         .case_sensitive = 1,
         .wc = wc,
         .nwc = 2,
         .total_weight = 100,
         .has_timeout = 1,
         .timeout_ns = 0,
         .prefix_rewrite = ""},
        {.kind = XL_PATH_REGEX,
         .path = "",
         .case_sensitive = 0,
         .cluster = long_str,
         .has_timeout = 1,
         .timeout_ns = 250000000},
    };
    char *doms[] = {"a.example.com", "*.example.com", "", long_str};
    struct xl_rroute many[40];
    for (size_t i = 0; i < 40; i++)
        many[i] = routes[i % 5];
    struct {
        const char *name;
        char *const *domains;
        size_t ndomains;
        const struct xl_rroute *routes;
        size_t nroutes;
    } cases[] = {
        {"ns/vs", doms, 2, routes, 5},
        {"", doms, 4, routes + 1, 4},
        {long_str, doms, 1, many, 40},
        {"ns/none", NULL, 0, NULL, 0},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        for (int mode = XLATE_MODE_ENVOY; mode <= XLATE_MODE_PROXYLESS; mode++) {
            uint8_t *want = NULL, *b = NULL;
            size_t want_len = 0, len = 0;
            REQUIRE_INT_EQ(reference_vhost(cases[c].name, cases[c].domains, cases[c].ndomains,
                                           cases[c].routes, cases[c].nroutes, mode, &want,
                                           &want_len),
                           0);
            REQUIRE_INT_EQ(xlate_encode_vhost(cases[c].name, cases[c].domains, cases[c].ndomains,
                                              cases[c].routes, cases[c].nroutes, mode, 0, &b, &len),
                           0);
            CHECK_INT_EQ(len, want_len);
            CHECK(len == want_len && memcmp(b, want, len) == 0);
            free(b);
            free(want);
        }
}

static void test_vhost_modes_and_rc_assembly(void)
{
    struct xl_header h1 = {.name = "x-env", .kind = XL_HDR_EXACT, .value = "prod"};
    struct xl_header h2 = {.name = "x-v", .kind = XL_HDR_REGEX, .value = "v[0-9]+", .invert = 1};
    const struct xl_header *hs[] = {&h1, &h2};
    struct xl_cluster_weight wc[] = {{"ns/a", 3}, {"ns/b", 1}};
    struct xl_cluster_weight wc100[] = {{"ns/a", 90}, {"ns/b", 10}};
    struct xl_rroute routes[] = {
        {.kind = XL_PATH_PREFIX,
         .path = "",
         .case_sensitive = 1,
         .cluster = "ns/a",
         .has_timeout = 1,
         .timeout_ns = 2000000000},
        {.kind = XL_PATH_REGEX,
         .path = "/v[0-9]+/.*",
         .case_sensitive = 0,
         .headers = hs,
         .nheaders = 2,
         .wc = wc,
         .nwc = 2,
         .total_weight = 4,
         .has_retries = 1,
         .retry_attempts = 2,
         .retry_on = "5xx"},
        {.kind = XL_PATH_EXACT,
         .path = "/x",
         .case_sensitive = 1,
         .wc = wc100,
         .nwc = 2,
         .total_weight = 100,
         .prefix_rewrite = "/y"},
    };
    char *domains[] = {"a.example.com"};
    uint8_t *env = NULL, *pl = NULL;
    size_t envlen = 0, pllen = 0;
    REQUIRE_INT_EQ(
        xlate_encode_vhost("ns/vs", domains, 1, routes, 3, XLATE_MODE_ENVOY, 0, &env, &envlen), 0);
    REQUIRE_INT_EQ(
        xlate_encode_vhost("ns/vs", domains, 1, routes, 3, XLATE_MODE_PROXYLESS, 0, &pl, &pllen),
        0);
    Envoy__Config__Route__V3__VirtualHost *e =
        envoy__config__route__v3__virtual_host__unpack(NULL, envlen, env);
    Envoy__Config__Route__V3__VirtualHost *p =
        envoy__config__route__v3__virtual_host__unpack(NULL, pllen, pl);
    REQUIRE(e && p);
    REQUIRE_INT_EQ(e->n_routes, 3);
    /* the empty prefix survives (a route with no path specifier is a NACK) */
    CHECK_INT_EQ(e->routes[0]->match->path_specifier_case,
                 ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_PREFIX);
    CHECK_STR_EQ(e->routes[0]->match->prefix, "");
    /* timeout: Envoy's field vs gRPC's */
    REQUIRE(e->routes[0]->route->timeout);
    CHECK_INT_EQ(e->routes[0]->route->timeout->seconds, 2);
    CHECK(e->routes[0]->route->max_stream_duration == NULL);
    CHECK(p->routes[0]->route->timeout == NULL);
    REQUIRE(p->routes[0]->route->max_stream_duration);
    CHECK_INT_EQ(p->routes[0]->route->max_stream_duration->max_stream_duration->seconds, 2);
    /* regex, case, headers, weights (sum 4: total written), retries */
    const Envoy__Config__Route__V3__Route *r = e->routes[1];
    CHECK_STR_EQ(r->match->safe_regex->regex, "/v[0-9]+/.*");
    CHECK(r->match->safe_regex->google_re2 != NULL);
    REQUIRE(r->match->case_sensitive);
    CHECK(!r->match->case_sensitive->value);
    CHECK(e->routes[0]->match->case_sensitive == NULL); /* default true: omitted */
    REQUIRE_INT_EQ(r->match->n_headers, 2);
    CHECK_STR_EQ(r->match->headers[0]->exact_match, "prod");
    CHECK_STR_EQ(r->match->headers[1]->safe_regex_match->regex, "v[0-9]+");
    CHECK(r->match->headers[1]->invert_match);
    REQUIRE(r->route->weighted_clusters->total_weight);
    CHECK_INT_EQ(r->route->weighted_clusters->total_weight->value, 4);
    CHECK_INT_EQ(r->route->weighted_clusters->clusters[0]->weight->value, 3);
    CHECK_STR_EQ(r->route->retry_policy->retry_on, "5xx");
    CHECK_INT_EQ(r->route->retry_policy->num_retries->value, 2);
    /* a sum of 100 leaves total_weight at its default */
    CHECK(e->routes[2]->route->weighted_clusters->total_weight == NULL);
    CHECK_STR_EQ(e->routes[2]->route->prefix_rewrite, "/y");

    /* a RouteConfiguration assembled from encoded virtual hosts is the
     * message protobuf-c would write */
    struct xl_bytes vh[2] = {{env, envlen}, {pl, pllen}};
    uint8_t *rc = NULL;
    size_t rclen = 0;
    REQUIRE_INT_EQ(xlate_encode_route_config("ns/gw", vh, 2, 0, &rc, &rclen), 0);
    Envoy__Config__Route__V3__RouteConfiguration whole =
        ENVOY__CONFIG__ROUTE__V3__ROUTE_CONFIGURATION__INIT;
    Envoy__Config__Route__V3__VirtualHost *vhs[2] = {e, p};
    whole.name = "ns/gw";
    whole.n_virtual_hosts = 2;
    whole.virtual_hosts = vhs;
    size_t wlen = protobuf_c_message_get_packed_size(&whole.base);
    uint8_t *wb = malloc(wlen);
    protobuf_c_message_pack(&whole.base, wb);
    CHECK_INT_EQ(rclen, wlen);
    CHECK(rclen == wlen && memcmp(rc, wb, wlen) == 0);
    free(wb);
    xlate_big_free(rc);
    /* no virtual host: just the name */
    REQUIRE_INT_EQ(xlate_encode_route_config("ns/empty", NULL, 0, XL_BIG_MAP, &rc, &rclen), 0);
    Envoy__Config__Route__V3__RouteConfiguration *back =
        envoy__config__route__v3__route_configuration__unpack(NULL, rclen, rc);
    REQUIRE(back);
    CHECK_STR_EQ(back->name, "ns/empty");
    CHECK_INT_EQ(back->n_virtual_hosts, 0);
    protobuf_c_message_free_unpacked(&back->base, NULL);
    xlate_big_free(rc);
    protobuf_c_message_free_unpacked(&e->base, NULL);
    protobuf_c_message_free_unpacked(&p->base, NULL);
    free(env);
    free(pl);
}

static const struct cxt_case cases[] = {
    CXT(test_listeners),
    CXT(test_cluster),
    CXT(test_cluster_hashing),
    CXT(test_cluster_tls_bytes),
    CXT(test_cla),
    CXT(test_cla_bytes),
    CXT(test_vhost_bytes),
    CXT(test_vhost_modes_and_rc_assembly),
};
CXT_MAIN(cases)
