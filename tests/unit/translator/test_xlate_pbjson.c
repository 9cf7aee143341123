#include "xlate_pbjson.h"
#include "cxtest.h"

#include "envoy/config/cluster/v3/cluster.pb-c.h"
#include "envoy/config/listener/v3/listener.pb-c.h"
#include "envoy/config/route/v3/route.pb-c.h"
#include "envoy/extensions/filters/http/router/v3/router.pb-c.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb-c.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.pb-c.h"
#include "google/protobuf/struct.pb-c.h"
#include "google/protobuf/timestamp.pb-c.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *render(const ProtobufCMessage *m, unsigned flags, int *rc)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    *rc = xlate_pbjson_render(m, flags, &b);
    char *s = cx_buf_steal(&b, NULL);
    return s;
}

#define CHECK_JSON(msg, flags, expect)                                     \
    do {                                                                   \
        int rc_;                                                           \
        char *s_ = render((const ProtobufCMessage *)(msg), (flags), &rc_); \
        CHECK_INT_EQ(rc_, 0);                                              \
        CHECK_STR_EQ(s_, expect);                                          \
        free(s_);                                                          \
    } while (0)

static void test_cluster_fields_enums_and_duration(void)
{
    Envoy__Config__Cluster__V3__Cluster c = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__INIT;
    Envoy__Config__Cluster__V3__Cluster__EdsClusterConfig eds =
        ENVOY__CONFIG__CLUSTER__V3__CLUSTER__EDS_CLUSTER_CONFIG__INIT;
    Envoy__Config__Core__V3__ConfigSource cs = ENVOY__CONFIG__CORE__V3__CONFIG_SOURCE__INIT;
    Envoy__Config__Core__V3__AggregatedConfigSource ads =
        ENVOY__CONFIG__CORE__V3__AGGREGATED_CONFIG_SOURCE__INIT;
    Google__Protobuf__Duration ct = GOOGLE__PROTOBUF__DURATION__INIT;
    c.name = "default/echo";
    c.cluster_discovery_type_case =
        ENVOY__CONFIG__CLUSTER__V3__CLUSTER__CLUSTER_DISCOVERY_TYPE_TYPE;
    c.type = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__DISCOVERY_TYPE__EDS;
    cs.config_source_specifier_case =
        ENVOY__CONFIG__CORE__V3__CONFIG_SOURCE__CONFIG_SOURCE_SPECIFIER_ADS;
    cs.ads = &ads;
    cs.resource_api_version = ENVOY__CONFIG__CORE__V3__API_VERSION__V3;
    eds.eds_config = &cs;
    c.eds_cluster_config = &eds;
    ct.seconds = 1;
    ct.nanos = 500000000;
    c.connect_timeout = &ct;
    c.lb_policy = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__RING_HASH;
    CHECK_JSON(&c, 0,
               "{\"name\":\"default/echo\",\"type\":\"EDS\",\"edsClusterConfig\":{\"edsConfig\":"
               "{\"ads\":{},\"resourceApiVersion\":\"V3\"}},\"connectTimeout\":\"1.500s\","
               "\"lbPolicy\":\"RING_HASH\"}");
    CHECK_JSON(&c, XLATE_PBJSON_PROTO_NAMES,
               "{\"name\":\"default/echo\",\"type\":\"EDS\",\"eds_cluster_config\":{\"eds_config\":"
               "{\"ads\":{},\"resource_api_version\":\"V3\"}},\"connect_timeout\":\"1.500s\","
               "\"lb_policy\":\"RING_HASH\"}");
    /* a STATIC (0) type in the oneof is still shown; ROUND_ROBIN (0) is not */
    c.type = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__DISCOVERY_TYPE__STATIC;
    c.lb_policy = 0;
    c.eds_cluster_config = NULL;
    c.connect_timeout = NULL;
    CHECK_JSON(&c, 0, "{\"name\":\"default/echo\",\"type\":\"STATIC\"}");
    /* unknown enum numbers fall back to the number */
    c.lb_policy = 42;
    CHECK_JSON(&c, 0, "{\"name\":\"default/echo\",\"type\":\"STATIC\",\"lbPolicy\":42}");
}

static void test_durations(void)
{
    struct {
        int64_t s;
        int32_t n;
        const char *want;
    } cases[] = {
        {0, 0, "\"0s\""},
        {15, 0, "\"15s\""},
        {0, 1000, "\"0.000001s\""},
        {0, 1, "\"0.000000001s\""},
        {-1, -500000000, "\"-1.500s\""},
        {0, -250000000, "\"-0.250s\""},
        {315576000000, 0, "\"315576000000s\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Google__Protobuf__Duration d = GOOGLE__PROTOBUF__DURATION__INIT;
        d.seconds = cases[i].s;
        d.nanos = cases[i].n;
        CHECK_JSON(&d, 0, cases[i].want);
    }
    /* mixed signs and out of range are refused */
    Google__Protobuf__Duration bad = GOOGLE__PROTOBUF__DURATION__INIT;
    bad.seconds = 1;
    bad.nanos = -1;
    int rc;
    char *s = render(&bad.base, 0, &rc);
    CHECK_INT_EQ(rc, XLATE_PBJSON_EDECODE);
    free(s);
    bad.seconds = 315576000001;
    bad.nanos = 0;
    s = render(&bad.base, 0, &rc);
    CHECK_INT_EQ(rc, XLATE_PBJSON_EDECODE);
    free(s);
}

static void test_oneof_empty_string_and_wrappers(void)
{
    Envoy__Config__Route__V3__RouteConfiguration rcfg =
        ENVOY__CONFIG__ROUTE__V3__ROUTE_CONFIGURATION__INIT;
    Envoy__Config__Route__V3__VirtualHost vh = ENVOY__CONFIG__ROUTE__V3__VIRTUAL_HOST__INIT;
    Envoy__Config__Route__V3__Route r = ENVOY__CONFIG__ROUTE__V3__ROUTE__INIT;
    Envoy__Config__Route__V3__RouteMatch m = ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__INIT;
    Envoy__Config__Route__V3__RouteAction a = ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__INIT;
    Envoy__Config__Route__V3__WeightedCluster wc = ENVOY__CONFIG__ROUTE__V3__WEIGHTED_CLUSTER__INIT;
    Envoy__Config__Route__V3__WeightedCluster__ClusterWeight cw[2] = {
        ENVOY__CONFIG__ROUTE__V3__WEIGHTED_CLUSTER__CLUSTER_WEIGHT__INIT,
        ENVOY__CONFIG__ROUTE__V3__WEIGHTED_CLUSTER__CLUSTER_WEIGHT__INIT};
    Envoy__Config__Route__V3__WeightedCluster__ClusterWeight *cwp[2] = {&cw[0], &cw[1]};
    Google__Protobuf__UInt32Value w0 = GOOGLE__PROTOBUF__UINT32_VALUE__INIT,
                                  w1 = GOOGLE__PROTOBUF__UINT32_VALUE__INIT;
    Google__Protobuf__BoolValue cs = GOOGLE__PROTOBUF__BOOL_VALUE__INIT;
    Envoy__Config__Route__V3__VirtualHost *vhp = &vh;
    Envoy__Config__Route__V3__Route *rp = &r;
    char *domains[] = {"echo", "*.example.com"};
    rcfg.name = "gw";
    rcfg.n_virtual_hosts = 1;
    rcfg.virtual_hosts = &vhp;
    vh.name = "vs";
    vh.n_domains = 2;
    vh.domains = domains;
    vh.n_routes = 1;
    vh.routes = &rp;
    r.match = &m;
    m.path_specifier_case = ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_PREFIX;
    m.prefix = "";
    m.case_sensitive = &cs; /* false, but present */
    r.action_case = ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_ROUTE;
    r.route = &a;
    a.cluster_specifier_case =
        ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__CLUSTER_SPECIFIER_WEIGHTED_CLUSTERS;
    a.weighted_clusters = &wc;
    wc.n_clusters = 2;
    wc.clusters = cwp;
    cw[0].name = "a";
    cw[0].weight = &w0; /* 0 but present */
    cw[1].name = "b";
    w1.value = 100;
    cw[1].weight = &w1;
    CHECK_JSON(&rcfg, 0,
               "{\"name\":\"gw\",\"virtualHosts\":[{\"name\":\"vs\",\"domains\":[\"echo\",\"*."
               "example.com\"],"
               "\"routes\":[{\"match\":{\"prefix\":\"\",\"caseSensitive\":false},\"route\":"
               "{\"weightedClusters\":{\"clusters\":[{\"name\":\"a\",\"weight\":0},{\"name\":\"b\","
               "\"weight\":100}]}}}]}]}");

    /* protobuf-c must also serialise the empty oneof prefix: gRPC NACKs a
     * route without a path specifier. */
    size_t len = protobuf_c_message_get_packed_size(&m.base);
    uint8_t *buf = malloc(len);
    REQUIRE(buf);
    protobuf_c_message_pack(&m.base, buf);
    Envoy__Config__Route__V3__RouteMatch *back =
        envoy__config__route__v3__route_match__unpack(NULL, len, buf);
    REQUIRE(back);
    CHECK_INT_EQ(back->path_specifier_case,
                 ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_PREFIX);
    CHECK_STR_EQ(back->prefix, "");
    envoy__config__route__v3__route_match__free_unpacked(back, NULL);
    free(buf);
}

static uint8_t *pack(const ProtobufCMessage *m, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(m);
    uint8_t *b = malloc(*len ? *len : 1);
    if (b)
        protobuf_c_message_pack(m, b);
    return b;
}

static void test_any_nested_and_pretty(void)
{
    Envoy__Extensions__Filters__Http__Router__V3__Router router =
        ENVOY__EXTENSIONS__FILTERS__HTTP__ROUTER__V3__ROUTER__INIT;
    size_t rlen;
    uint8_t *rbytes = pack(&router.base, &rlen);
    Google__Protobuf__Any rany = GOOGLE__PROTOBUF__ANY__INIT;
    rany.type_url = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router";
    rany.value.data = rbytes;
    rany.value.len = rlen;
    Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter hf =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_FILTER__INIT;
    Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter *hfp = &hf;
    hf.name = "envoy.filters.http.router";
    hf.config_type_case =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_FILTER__CONFIG_TYPE_TYPED_CONFIG;
    hf.typed_config = &rany;
    Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__Rds rds =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__RDS__INIT;
    rds.route_config_name = "default/gw";
    Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpConnectionManager hcm =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_CONNECTION_MANAGER__INIT;
    hcm.stat_prefix = "gw";
    hcm.route_specifier_case =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_CONNECTION_MANAGER__ROUTE_SPECIFIER_RDS;
    hcm.rds = &rds;
    hcm.n_http_filters = 1;
    hcm.http_filters = &hfp;
    size_t hlen;
    uint8_t *hbytes = pack(&hcm.base, &hlen);
    Google__Protobuf__Any hany = GOOGLE__PROTOBUF__ANY__INIT;
    hany.type_url =
        "type.googleapis.com/"
        "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";
    hany.value.data = hbytes;
    hany.value.len = hlen;
    Envoy__Config__Listener__V3__ApiListener al = ENVOY__CONFIG__LISTENER__V3__API_LISTENER__INIT;
    al.api_listener = &hany;
    Envoy__Config__Listener__V3__Listener l = ENVOY__CONFIG__LISTENER__V3__LISTENER__INIT;
    l.name = "echo";
    l.api_listener = &al;
    CHECK_JSON(
        &l, XLATE_PBJSON_PRETTY,
        "{\n"
        "  \"name\": \"echo\",\n"
        "  \"apiListener\": {\n"
        "    \"apiListener\": {\n"
        "      \"@type\": \"type.googleapis.com/envoy.extensions.filters.network."
        "http_connection_manager.v3.HttpConnectionManager\",\n"
        "      \"statPrefix\": \"gw\",\n"
        "      \"rds\": {\n"
        "        \"routeConfigName\": \"default/gw\"\n"
        "      },\n"
        "      \"httpFilters\": [\n"
        "        {\n"
        "          \"name\": \"envoy.filters.http.router\",\n"
        "          \"typedConfig\": {\n"
        "            \"@type\": \"type.googleapis.com/envoy.extensions.filters.http.router.v3."
        "Router\"\n"
        "          }\n"
        "        }\n"
        "      ]\n"
        "    }\n"
        "  }\n"
        "}");
    /* render_bytes and render_any agree with rendering the struct */
    size_t llen;
    uint8_t *lbytes = pack(&l.base, &llen);
    struct cx_buf b1, b2;
    cx_buf_init(&b1, 0);
    cx_buf_init(&b2, 0);
    CHECK_INT_EQ(xlate_pbjson_render_bytes(&envoy__config__listener__v3__listener__descriptor,
                                           lbytes, llen, 0, &b1),
                 0);
    CHECK_INT_EQ(xlate_pbjson_render_any("type.googleapis.com/envoy.config.listener.v3.Listener",
                                         lbytes, llen, 0, &b2),
                 0);
    CHECK_STR_CONTAINS(b1.data, "\"routeConfigName\":\"default/gw\"");
    const char *want = "{\"@type\":\"type.googleapis.com/envoy.config.listener.v3.Listener\","
                       "\"name\":\"echo\",";
    CHECK(strncmp(b2.data, want, strlen(want)) == 0);
    /* the rest of the Any equals the plain rendering minus its opening brace */
    CHECK_STR_EQ(strstr(b2.data, "\"name\""), b1.data + 1);
    cx_buf_free(&b1);
    cx_buf_free(&b2);
    free(lbytes);
    free(rbytes);
    free(hbytes);
}

static void test_any_errors_and_wkt_value(void)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    CHECK_INT_EQ(
        xlate_pbjson_render_any("type.googleapis.com/no.such.Type", (const uint8_t *)"", 0, 0, &b),
        XLATE_PBJSON_EDECODE);
    cx_buf_reset(&b);
    /* truncated bytes */
    const uint8_t junk[] = {0x0a, 0x10, 'a'};
    CHECK_INT_EQ(xlate_pbjson_render_any("type.googleapis.com/envoy.config.listener.v3.Listener",
                                         junk, sizeof(junk), 0, &b),
                 XLATE_PBJSON_EDECODE);
    cx_buf_reset(&b);
    /* a well-known type inside an Any goes under "value" */
    Google__Protobuf__Duration d = GOOGLE__PROTOBUF__DURATION__INIT;
    d.seconds = 3;
    size_t len;
    uint8_t *bytes = pack(&d.base, &len);
    CHECK_INT_EQ(
        xlate_pbjson_render_any("type.googleapis.com/google.protobuf.Duration", bytes, len, 0, &b),
        0);
    CHECK_STR_EQ(b.data,
                 "{\"@type\":\"type.googleapis.com/google.protobuf.Duration\",\"value\":\"3s\"}");
    free(bytes);
    cx_buf_free(&b);
    CHECK(xlate_pbjson_find_type("envoy.config.route.v3.RouteConfiguration") ==
          &envoy__config__route__v3__route_configuration__descriptor);
    CHECK(xlate_pbjson_find_type("type.googleapis.com/envoy.config.cluster.v3.Cluster") ==
          &envoy__config__cluster__v3__cluster__descriptor);
    CHECK(xlate_pbjson_find_type("type.googleapis.com/envoy.config.cluster.v3.Clusterx") == NULL);
}

static void test_struct_sorted_and_values(void)
{
    Google__Protobuf__Struct st = GOOGLE__PROTOBUF__STRUCT__INIT,
                             inner = GOOGLE__PROTOBUF__STRUCT__INIT;
    Google__Protobuf__Struct__FieldsEntry e[4] = {
        GOOGLE__PROTOBUF__STRUCT__FIELDS_ENTRY__INIT, GOOGLE__PROTOBUF__STRUCT__FIELDS_ENTRY__INIT,
        GOOGLE__PROTOBUF__STRUCT__FIELDS_ENTRY__INIT, GOOGLE__PROTOBUF__STRUCT__FIELDS_ENTRY__INIT};
    Google__Protobuf__Struct__FieldsEntry *ep[4] = {&e[0], &e[1], &e[2], &e[3]};
    Google__Protobuf__Value v[5] = {GOOGLE__PROTOBUF__VALUE__INIT, GOOGLE__PROTOBUF__VALUE__INIT,
                                    GOOGLE__PROTOBUF__VALUE__INIT, GOOGLE__PROTOBUF__VALUE__INIT,
                                    GOOGLE__PROTOBUF__VALUE__INIT};
    Google__Protobuf__ListValue lv = GOOGLE__PROTOBUF__LIST_VALUE__INIT;
    Google__Protobuf__Value *lvp[2] = {&v[3], &v[4]};
    e[0].key = "zeta";
    e[0].value = &v[0];
    v[0].kind_case = GOOGLE__PROTOBUF__VALUE__KIND_NUMBER_VALUE;
    v[0].number_value = 0.1;
    e[1].key = "alpha";
    e[1].value = &v[1];
    v[1].kind_case = GOOGLE__PROTOBUF__VALUE__KIND_STRING_VALUE;
    v[1].string_value = "default/gw";
    e[2].key = "mid";
    e[2].value = &v[2];
    v[2].kind_case = GOOGLE__PROTOBUF__VALUE__KIND_LIST_VALUE;
    v[2].list_value = &lv;
    lv.n_values = 2;
    lv.values = lvp;
    v[3].kind_case = GOOGLE__PROTOBUF__VALUE__KIND_BOOL_VALUE;
    v[3].bool_value = 1;
    v[4].kind_case = GOOGLE__PROTOBUF__VALUE__KIND_STRUCT_VALUE;
    v[4].struct_value = &inner;
    e[3].key = "nil";
    e[3].value = NULL;
    st.n_fields = 4;
    st.fields = ep;
    CHECK_JSON(&st, 0, "{\"alpha\":\"default/gw\",\"mid\":[true,{}],\"nil\":null,\"zeta\":0.1}");
}

static void test_numbers_and_bytes(void)
{
    Google__Protobuf__DoubleValue dv = GOOGLE__PROTOBUF__DOUBLE_VALUE__INIT;
    dv.value = 1e21;
    CHECK_JSON(&dv, 0, "1e+21");
    dv.value = 2.5;
    CHECK_JSON(&dv, 0, "2.5");
    dv.value = NAN;
    CHECK_JSON(&dv, 0, "\"NaN\"");
    dv.value = -INFINITY;
    CHECK_JSON(&dv, 0, "\"-Infinity\"");
    Google__Protobuf__FloatValue fv = GOOGLE__PROTOBUF__FLOAT_VALUE__INIT;
    fv.value = 0.1f;
    CHECK_JSON(&fv, 0, "0.1");
    Google__Protobuf__Int64Value iv = GOOGLE__PROTOBUF__INT64_VALUE__INIT;
    iv.value = -9007199254740993LL;
    CHECK_JSON(&iv, 0, "\"-9007199254740993\"");
    Google__Protobuf__BytesValue bv = GOOGLE__PROTOBUF__BYTES_VALUE__INIT;
    bv.value.data = (uint8_t *)"hi!?";
    bv.value.len = 4;
    CHECK_JSON(&bv, 0, "\"aGkhPw==\"");
    bv.value.len = 2;
    CHECK_JSON(&bv, 0, "\"aGk=\"");
    Google__Protobuf__StringValue sv = GOOGLE__PROTOBUF__STRING_VALUE__INIT;
    sv.value = "q\"\n";
    CHECK_JSON(&sv, 0, "\"q\\\"\\n\"");
    Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
    ts.seconds = 1700000000;
    ts.nanos = 120000000;
    CHECK_JSON(&ts, 0, "\"2023-11-14T22:13:20.120Z\"");
}

static void test_json_name(void)
{
    char out[64];
    xlate_pbjson_json_name("route_config_name", out, sizeof(out));
    CHECK_STR_EQ(out, "routeConfigName");
    xlate_pbjson_json_name("name", out, sizeof(out));
    CHECK_STR_EQ(out, "name");
    xlate_pbjson_json_name("api_listener", out, 5);
    CHECK_STR_EQ(out, "apiL");
}

static void test_output_is_valid_json_and_capped(void)
{
    Envoy__Config__Cluster__V3__Cluster c = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__INIT;
    c.name = "\x01weird\"name\\";
    struct cx_buf b;
    cx_buf_init(&b, 0);
    REQUIRE_INT_EQ(xlate_pbjson_render(&c.base, XLATE_PBJSON_PRETTY, &b), 0);
    cJSON *j = cJSON_Parse(b.data);
    REQUIRE(j);
    CHECK_STR_EQ(cJSON_GetObjectItem(j, "name")->valuestring, "\x01weird\"name\\");
    cJSON_Delete(j);
    cx_buf_free(&b);
    /* a full buffer is an error, not a silent truncation */
    cx_buf_init(&b, 8);
    CHECK_INT_EQ(xlate_pbjson_render(&c.base, 0, &b), XLATE_PBJSON_ENOMEM);
    cx_buf_free(&b);
}

/* Private keys (TlsCertificate.private_key, .password) are redacted however
 * deep they sit (here inside an Any inside a TransportSocket), as inline
 * bytes or inline string; the certificate chain is not; the flag shows
 * them. */
static void test_sensitive_fields_redacted(void)
{
    typedef Envoy__Extensions__TransportSockets__Tls__V3__DownstreamTlsContext Dtc;
    typedef Envoy__Extensions__TransportSockets__Tls__V3__CommonTlsContext Ctc;
    typedef Envoy__Extensions__TransportSockets__Tls__V3__TlsCertificate Cert;
    Dtc dtc = ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__DOWNSTREAM_TLS_CONTEXT__INIT;
    Ctc ctc = ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__INIT;
    Cert c1 = ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__TLS_CERTIFICATE__INIT;
    Cert c2 = ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__TLS_CERTIFICATE__INIT;
    Envoy__Config__Core__V3__DataSource chain = ENVOY__CONFIG__CORE__V3__DATA_SOURCE__INIT;
    Envoy__Config__Core__V3__DataSource k1 = ENVOY__CONFIG__CORE__V3__DATA_SOURCE__INIT;
    Envoy__Config__Core__V3__DataSource k2 = ENVOY__CONFIG__CORE__V3__DATA_SOURCE__INIT;
    Envoy__Config__Core__V3__DataSource pw = ENVOY__CONFIG__CORE__V3__DATA_SOURCE__INIT;
    chain.specifier_case = ENVOY__CONFIG__CORE__V3__DATA_SOURCE__SPECIFIER_INLINE_STRING;
    chain.inline_string = "CHAIN";
    k1.specifier_case = ENVOY__CONFIG__CORE__V3__DATA_SOURCE__SPECIFIER_INLINE_BYTES;
    k1.inline_bytes.data = (uint8_t *)"KEYBYTES";
    k1.inline_bytes.len = 8;
    k2.specifier_case = ENVOY__CONFIG__CORE__V3__DATA_SOURCE__SPECIFIER_INLINE_STRING;
    k2.inline_string = "KEYSTRING";
    pw.specifier_case = ENVOY__CONFIG__CORE__V3__DATA_SOURCE__SPECIFIER_INLINE_STRING;
    pw.inline_string = "PASSWORD";
    c1.certificate_chain = &chain;
    c1.private_key = &k1;
    c2.private_key = &k2;
    c2.password = &pw;
    Cert *certs[] = {&c1, &c2};
    ctc.tls_certificates = certs;
    ctc.n_tls_certificates = 2;
    char *alpn[] = {"h2"};
    ctc.alpn_protocols = alpn;
    ctc.n_alpn_protocols = 1;
    dtc.common_tls_context = &ctc;
    size_t n = protobuf_c_message_get_packed_size(&dtc.base);
    uint8_t *bytes = malloc(n);
    protobuf_c_message_pack(&dtc.base, bytes);
    Google__Protobuf__Any any = GOOGLE__PROTOBUF__ANY__INIT;
    any.type_url = "type.googleapis.com/"
                   "envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext";
    any.value.data = bytes;
    any.value.len = n;
    Envoy__Config__Core__V3__TransportSocket ts = ENVOY__CONFIG__CORE__V3__TRANSPORT_SOCKET__INIT;
    ts.name = "envoy.transport_sockets.tls";
    ts.config_type_case = ENVOY__CONFIG__CORE__V3__TRANSPORT_SOCKET__CONFIG_TYPE_TYPED_CONFIG;
    ts.typed_config = &any;
    CHECK_JSON(&ts, 0,
               "{\"name\":\"envoy.transport_sockets.tls\",\"typedConfig\":{\"@type\":\"type."
               "googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext\","
               "\"commonTlsContext\":{\"tlsCertificates\":[{\"certificateChain\":{"
               "\"inlineString\":\"CHAIN\"},\"privateKey\":{\"inlineBytes\":\"[redacted]\"}},"
               "{\"privateKey\":{\"inlineString\":\"[redacted]\"},\"password\":{"
               "\"inlineString\":\"[redacted]\"}}],\"alpnProtocols\":[\"h2\"]}}}");
    /* snake_case names too (REST xDS) */
    int rc;
    char *s = render(&ts.base, XLATE_PBJSON_PROTO_NAMES, &rc);
    CHECK_INT_EQ(rc, 0);
    CHECK(s && strstr(s, "\"private_key\":{\"inline_bytes\":\"[redacted]\"}"));
    CHECK(s && !strstr(s, "S0VZQllURVM") && !strstr(s, "KEYSTRING") && !strstr(s, "PASSWORD"));
    free(s);
    /* asked for: shown (base64 of KEYBYTES is S0VZQllURVM=) */
    s = render(&ts.base, XLATE_PBJSON_SHOW_SECRETS, &rc);
    CHECK_INT_EQ(rc, 0);
    CHECK(s && strstr(s, "\"privateKey\":{\"inlineBytes\":\"S0VZQllURVM=\"}"));
    CHECK(s && strstr(s, "KEYSTRING") && strstr(s, "PASSWORD") && !strstr(s, "[redacted]"));
    free(s);
    CHECK(xlate_pbjson_sensitive("envoy.extensions.transport_sockets.tls.v3.TlsCertificate",
                                 "private_key"));
    CHECK(!xlate_pbjson_sensitive("envoy.extensions.transport_sockets.tls.v3.TlsCertificate",
                                  "certificate_chain"));
    free(bytes);
}

static const struct cxt_case cases[] = {
    CXT(test_cluster_fields_enums_and_duration),
    CXT(test_durations),
    CXT(test_oneof_empty_string_and_wrappers),
    CXT(test_any_nested_and_pretty),
    CXT(test_any_errors_and_wkt_value),
    CXT(test_struct_sorted_and_values),
    CXT(test_numbers_and_bytes),
    CXT(test_json_name),
    CXT(test_output_is_valid_json_and_capped),
    CXT(test_sensitive_fields_redacted),
};
CXT_MAIN(cases)
