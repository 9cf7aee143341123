#include "xlate_encode.h"

#include "cx_wire.h"
#include "xlate_cluster.h"
#include "xlate_route.h"
#include "xlate_util.h"

#include "envoy/config/accesslog/v3/accesslog.pb-c.h"
#include "envoy/config/cluster/v3/cluster.pb-c.h"
#include "envoy/config/endpoint/v3/endpoint.pb-c.h"
#include "envoy/config/listener/v3/listener.pb-c.h"
#include "envoy/config/route/v3/route.pb-c.h"
#include "envoy/extensions/access_loggers/file/v3/file.pb-c.h"
#include "envoy/extensions/filters/http/cors/v3/cors.pb-c.h"
#include "envoy/extensions/filters/http/local_ratelimit/v3/local_rate_limit.pb-c.h"
#include "envoy/extensions/filters/http/router/v3/router.pb-c.h"
#include "envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.pb-c.h"
#include "envoy/extensions/transport_sockets/tls/v3/secret.pb-c.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.pb-c.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* protobuf-c's names are long; these keep the builders readable. */
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
typedef Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpConnectionManager Hcm;
typedef Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__Rds Rds;
typedef Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpFilter HttpFilter;
typedef Envoy__Extensions__Filters__Http__Router__V3__Router Router;
typedef Envoy__Config__Core__V3__ConfigSource ConfigSource;
typedef Envoy__Config__Core__V3__AggregatedConfigSource Ads;
typedef Envoy__Config__Listener__V3__Listener Listener;
typedef Envoy__Config__Listener__V3__FilterChain FilterChain;
typedef Envoy__Config__Listener__V3__Filter Filter;
typedef Envoy__Config__Listener__V3__ApiListener ApiListener;
typedef Envoy__Config__Core__V3__Address Address;
typedef Envoy__Config__Core__V3__SocketAddress SocketAddress;
typedef Envoy__Config__Cluster__V3__Cluster Cluster;
typedef Envoy__Config__Cluster__V3__Cluster__EdsClusterConfig EdsClusterConfig;
typedef Envoy__Config__Endpoint__V3__ClusterLoadAssignment Cla;
typedef Envoy__Config__Endpoint__V3__LocalityLbEndpoints LocalityLbEndpoints;
typedef Envoy__Config__Endpoint__V3__LbEndpoint LbEndpoint;
typedef Envoy__Config__Endpoint__V3__Endpoint Endpoint;
typedef Envoy__Config__Core__V3__Locality Locality;
typedef Envoy__Config__Core__V3__DataSource DataSource;
typedef Envoy__Config__Core__V3__TransportSocket TransportSocket;
typedef Envoy__Config__Listener__V3__FilterChainMatch FilterChainMatch;
typedef Envoy__Config__Listener__V3__ListenerFilter ListenerFilter;
typedef Envoy__Extensions__Filters__Listener__TlsInspector__V3__TlsInspector TlsInspector;
typedef Envoy__Extensions__TransportSockets__Tls__V3__DownstreamTlsContext DownstreamTlsContext;
typedef Envoy__Extensions__TransportSockets__Tls__V3__UpstreamTlsContext UpstreamTlsContext;
typedef Envoy__Extensions__TransportSockets__Tls__V3__CommonTlsContext CommonTlsContext;
typedef Envoy__Extensions__TransportSockets__Tls__V3__TlsParameters TlsParameters;
typedef Envoy__Extensions__TransportSockets__Tls__V3__TlsCertificate TlsCertificate;
typedef Envoy__Extensions__TransportSockets__Tls__V3__CertificateValidationContext
    CertificateValidationContext;
typedef Envoy__Extensions__TransportSockets__Tls__V3__SubjectAltNameMatcher SubjectAltNameMatcher;
typedef Envoy__Extensions__TransportSockets__Tls__V3__SdsSecretConfig SdsSecretConfig;
typedef Envoy__Extensions__TransportSockets__Tls__V3__Secret Secret;
typedef Envoy__Extensions__TransportSockets__Tls__V3__CommonTlsContext__CombinedCertificateValidationContext
    CombinedValidationContext;
typedef Envoy__Type__Matcher__V3__StringMatcher StringMatcher;

/* A message of type T in the arena, initialised from its INIT macro. */
#define NEW(a, T, INIT) ((T *)new_msg((a), sizeof(T), &(T)INIT))

static void *new_msg(struct xl_arena *a, size_t size, const void *init)
{
    void *p = xlate_alloc(a, size);
    if (p)
        memcpy(p, init, size);
    return p;
}

static int pack(const ProtobufCMessage *m, uint8_t **out, size_t *len)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *b = malloc(n ? n : 1);
    if (!b)
        return -1;
    protobuf_c_message_pack(m, b);
    *out = b;
    *len = n;
    return 0;
}

/* An Any holding |m|, its bytes in the arena. */
static Google__Protobuf__Any *any_of(struct xl_arena *a, const char *type_url,
                                     const ProtobufCMessage *m)
{
    Google__Protobuf__Any *any = NEW(a, Google__Protobuf__Any, GOOGLE__PROTOBUF__ANY__INIT);
    if (!any)
        return NULL;
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *b = xlate_alloc(a, n ? n : 1);
    if (!b)
        return NULL;
    protobuf_c_message_pack(m, b);
    any->type_url = (char *)type_url;
    any->value.data = b;
    any->value.len = n;
    return any;
}

static ConfigSource *ads_source(struct xl_arena *a)
{
    ConfigSource *cs = NEW(a, ConfigSource, ENVOY__CONFIG__CORE__V3__CONFIG_SOURCE__INIT);
    Ads *ads = NEW(a, Ads, ENVOY__CONFIG__CORE__V3__AGGREGATED_CONFIG_SOURCE__INIT);
    if (!cs || !ads)
        return NULL;
    cs->config_source_specifier_case =
        ENVOY__CONFIG__CORE__V3__CONFIG_SOURCE__CONFIG_SOURCE_SPECIFIER_ADS;
    cs->ads = ads;
    cs->resource_api_version = ENVOY__CONFIG__CORE__V3__API_VERSION__V3;
    return cs;
}

/* ---- VirtualHost, written back to front --------------------------------------
 *
 * One per VirtualService and gateway mode: the bulk of a full translation's
 * encoding. protobuf-c sizes every nested message again at each level
 * above it (Route > RouteAction > RetryPolicy > UInt32Value...) and wants
 * an arena of message structs first; common/cx_wire writes each message
 * once, back to front, its fields last to first. The bytes are
 * protobuf-c's; test_xlate_encode compares the two. */

/* envoy.type.matcher.v3.RegexMatcher {google_re2: {}, regex} */
void xlate_enc_regex(struct cx_wire *w, uint32_t field, const char *re)
{
    size_t mark = cx_wire_mark(w);
    cx_wire_str3(w, 2, re);
    cx_wire_bytes(w, 1, NULL, 0); /* google_re2, empty */
    cx_wire_close(w, field, mark);
}

static void enc_header(struct cx_wire *w, const struct xl_header *h)
{
    size_t mark = cx_wire_mark(w);
    switch (h->kind) {
    case XL_HDR_REGEX:
        xlate_enc_regex(w, 11, h->value); /* safe_regex_match */
        break;
    case XL_HDR_PREFIX:
        cx_wire_str(w, 9, h->value); /* prefix_match */
        break;
    default:
        break;
    }
    if (h->invert)
        cx_wire_uint(w, 8, 1); /* invert_match */
    if (h->kind == XL_HDR_PRESENT)
        cx_wire_uint(w, 7, 1); /* present_match */
    else if (h->kind == XL_HDR_EXACT)
        cx_wire_str(w, 4, h->value); /* exact_match */
    cx_wire_str3(w, 1, h->name);
    cx_wire_close(w, 6, mark); /* RouteMatch.headers */
}

static void enc_route_match(struct cx_wire *w, const struct xl_rroute *r)
{
    size_t mark = cx_wire_mark(w);
    if (r->kind == XL_PATH_REGEX)
        xlate_enc_regex(w, 10, r->path); /* safe_regex */
    xlate_enc_query(w, r);               /* query_parameters (7) */
    for (size_t i = r->nheaders; i-- > 0;)
        enc_header(w, r->headers[i]);
    if (!r->case_sensitive)
        cx_wire_wrapped(w, 4, 0); /* case_sensitive: false */
    if (r->kind == XL_PATH_EXACT)
        cx_wire_str(w, 2, r->path); /* path */
    else if (r->kind == XL_PATH_PREFIX)
        cx_wire_str(w, 1, r->path); /* prefix */
    cx_wire_close(w, 1, mark);      /* Route.match */
}

/* RouteAction.hash_policy: one HashPolicy, its fields in number order
 * (header 1, cookie 2, connection_properties 3, terminal 4,
 * query_parameter 5), so back to front from 5. */
static void enc_hash_policy(struct cx_wire *w, const struct xl_hash_policy *h)
{
    size_t mark = cx_wire_mark(w), m2;
    if (h->kind == XL_HASH_QUERY) {
        m2 = cx_wire_mark(w);
        cx_wire_str3(w, 1, h->name);
        cx_wire_close(w, 5, m2); /* query_parameter {name} */
    }
    if (h->terminal)
        cx_wire_uint(w, 4, 1); /* terminal */
    switch (h->kind) {
    case XL_HASH_SOURCE_IP:
        m2 = cx_wire_mark(w);
        cx_wire_uint(w, 1, 1);   /* source_ip: true */
        cx_wire_close(w, 3, m2); /* connection_properties */
        break;
    case XL_HASH_COOKIE:
        m2 = cx_wire_mark(w);
        if (h->cookie_path)
            cx_wire_str3(w, 3, h->cookie_path); /* path */
        if (h->has_ttl)
            cx_wire_duration(w, 2, h->cookie_ttl_ns); /* ttl: 0 makes a session cookie */
        cx_wire_str3(w, 1, h->name);
        cx_wire_close(w, 2, m2); /* cookie */
        break;
    case XL_HASH_HEADER:
        m2 = cx_wire_mark(w);
        cx_wire_str3(w, 1, h->name); /* header_name */
        cx_wire_close(w, 1, m2);     /* header */
        break;
    case XL_HASH_QUERY:
        break;
    }
    cx_wire_close(w, 15, mark); /* RouteAction.hash_policy */
}

static void enc_route_action(struct cx_wire *w, const struct xl_rroute *r,
                             enum xlate_gateway_mode mode)
{
    size_t mark = cx_wire_mark(w);
    if (r->has_timeout && mode == XLATE_MODE_PROXYLESS) {
        /* gRPC reads the deadline from max_stream_duration, not timeout */
        size_t m2 = cx_wire_mark(w);
        cx_wire_duration(w, 1, r->timeout_ns);
        cx_wire_close(w, 36, m2); /* max_stream_duration */
    }
    xlate_enc_regex_rewrite(w, r); /* 32 */
    for (size_t i = r->nhash; i-- > 0;)
        enc_hash_policy(w, r->hash[i]);
    if (r->has_retries) {
        size_t m2 = cx_wire_mark(w);
        cx_wire_wrapped(w, 2, r->retry_attempts); /* num_retries */
        cx_wire_str3(w, 1, r->retry_on);
        cx_wire_close(w, 9, m2); /* retry_policy */
    }
    if (r->has_timeout && mode != XLATE_MODE_PROXYLESS)
        cx_wire_duration(w, 8, r->timeout_ns); /* timeout */
    xlate_enc_host_rewrite(w, r);              /* 7, 6 */
    cx_wire_str3(w, 5, r->prefix_rewrite);
    if (r->cluster) {
        cx_wire_str(w, 1, r->cluster); /* cluster */
    } else {
        size_t m2 = cx_wire_mark(w);
        /* total_weight defaults to 100; gRPC requires the sum to match it */
        if (r->total_weight != 100)
            cx_wire_wrapped(w, 3, r->total_weight);
        for (size_t i = r->nwc; i-- > 0;) {
            size_t m3 = cx_wire_mark(w);
            cx_wire_wrapped(w, 2, r->wc[i].weight);
            cx_wire_str3(w, 1, r->wc[i].cluster);
            cx_wire_close(w, 1, m3); /* clusters */
        }
        cx_wire_close(w, 3, m2); /* weighted_clusters */
    }
    cx_wire_close(w, 2, mark); /* Route.route */
}

int xlate_encode_vhost(const char *name, char *const *domains, size_t ndomains,
                       const struct xl_rroute *routes, size_t nroutes, enum xlate_gateway_mode mode,
                       size_t max_bytes, uint8_t **out, size_t *len)
{
    return xlate_encode_vhost_ex(name, domains, ndomains, routes, nroutes, NULL, mode, max_bytes,
                                 out, len);
}

int xlate_encode_vhost_ex(const char *name, char *const *domains, size_t ndomains,
                          const struct xl_rroute *routes, size_t nroutes, const struct xl_vs_ext *x,
                          enum xlate_gateway_mode mode, size_t max_bytes, uint8_t **out,
                          size_t *len)
{
    /* the first buffer holds the usual routes, within the cap: a larger
     * message grows it, up to the cap and no further */
    struct cx_wire w;
    if (cx_wire_init_max(&w, 256 + 192 * nroutes, max_bytes) != 0)
        return -1;
    xlate_enc_vhost_ext(&w, x); /* 15, 4 */
    for (size_t i = nroutes; i-- > 0;) {
        size_t mark = cx_wire_mark(&w);
        xlate_enc_route_headers(&w, &routes[i]); /* 12..9 */
        if (routes[i].redirect)
            xlate_enc_redirect(&w, routes[i].redirect); /* 3 */
        else
            enc_route_action(&w, &routes[i], mode); /* 2 */
        enc_route_match(&w, &routes[i]);
        cx_wire_close(&w, 3, mark); /* VirtualHost.routes */
    }
    for (size_t i = ndomains; i-- > 0;)
        cx_wire_str(&w, 2, domains[i]); /* domains: repeated, every item written */
    cx_wire_str3(&w, 1, name);
    return cx_wire_finish(&w, out, len); /* -2: past max_bytes */
}

/* Forward: the virtual hosts are encoded already, so every length is known
 * and their bytes are copied once, each behind its field header. */
int xlate_encode_route_config(const char *name, const struct xl_bytes *vhosts, size_t n,
                              unsigned big_flags, uint8_t **out, size_t *len)
{
    enum { RC_NAME = 1, RC_VIRTUAL_HOSTS = 2 };
    size_t nlen = strlen(name);
    size_t total = nlen ? CX_WIRE_HDR_MAX + nlen : 0;
    for (size_t i = 0; i < n; i++)
        total += CX_WIRE_HDR_MAX + vhosts[i].len;
    /* megabytes for a big Gateway, new each pass: xlate_big_alloc */
    uint8_t *b = xlate_big_alloc(total ? total : 1, big_flags);
    if (!b)
        return -1;
    size_t o = 0;
    if (nlen) {
        o += cx_wire_put_len_header(b + o, RC_NAME, nlen);
        memcpy(b + o, name, nlen);
        o += nlen;
    }
    for (size_t i = 0; i < n; i++) {
        o += cx_wire_put_len_header(b + o, RC_VIRTUAL_HOSTS, vhosts[i].len);
        if (vhosts[i].len)
            memcpy(b + o, vhosts[i].data, vhosts[i].len);
        o += vhosts[i].len;
    }
    *out = b;
    *len = o;
    return 0;
}

/* An HTTP filter |name| whose typed_config is |m|. */
static HttpFilter *http_filter(struct xl_arena *a, const char *name, const char *type_url,
                               const ProtobufCMessage *m)
{
    HttpFilter *hf =
        NEW(a, HttpFilter,
            ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_FILTER__INIT);
    if (!hf)
        return NULL;
    hf->name = (char *)name;
    hf->config_type_case =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_FILTER__CONFIG_TYPE_TYPED_CONFIG;
    if (!(hf->typed_config = any_of(a, type_url, m)))
        return NULL;
    return hf;
}

typedef Envoy__Config__Accesslog__V3__AccessLog AccessLog;
typedef Envoy__Extensions__AccessLoggers__File__V3__FileAccessLog FileAccessLog;
typedef Envoy__Config__Core__V3__SubstitutionFormatString FormatString;

/* An envoy.access_loggers.file AccessLog: |l|'s path and format (text, or
 * a JSON object of formats; none: Envoy's default format). */
static AccessLog *access_log(struct xl_arena *a, const struct xl_access_log *l)
{
    FileAccessLog f = ENVOY__EXTENSIONS__ACCESS_LOGGERS__FILE__V3__FILE_ACCESS_LOG__INIT;
    FormatString fmt = ENVOY__CONFIG__CORE__V3__SUBSTITUTION_FORMAT_STRING__INIT;
    DataSource text = ENVOY__CONFIG__CORE__V3__DATA_SOURCE__INIT;
    Google__Protobuf__Struct js = GOOGLE__PROTOBUF__STRUCT__INIT;
    AccessLog *al = NEW(a, AccessLog, ENVOY__CONFIG__ACCESSLOG__V3__ACCESS_LOG__INIT);
    if (!al)
        return NULL;
    f.path = l->path;
    if (l->text) {
        text.specifier_case = ENVOY__CONFIG__CORE__V3__DATA_SOURCE__SPECIFIER_INLINE_STRING;
        text.inline_string = l->text;
        fmt.format_case =
            ENVOY__CONFIG__CORE__V3__SUBSTITUTION_FORMAT_STRING__FORMAT_TEXT_FORMAT_SOURCE;
        fmt.text_format_source = &text;
    } else if (l->njson) {
        js.fields = xlate_alloc(a, l->njson * sizeof(*js.fields));
        if (!js.fields)
            return NULL;
        for (size_t i = 0; i < l->njson; i++) {
            Google__Protobuf__Struct__FieldsEntry *fe =
                NEW(a, Google__Protobuf__Struct__FieldsEntry,
                    GOOGLE__PROTOBUF__STRUCT__FIELDS_ENTRY__INIT);
            Google__Protobuf__Value *v =
                NEW(a, Google__Protobuf__Value, GOOGLE__PROTOBUF__VALUE__INIT);
            if (!fe || !v)
                return NULL;
            v->kind_case = GOOGLE__PROTOBUF__VALUE__KIND_STRING_VALUE;
            v->string_value = l->json[i].value;
            fe->key = l->json[i].key;
            fe->value = v;
            js.fields[i] = fe;
        }
        js.n_fields = l->njson;
        fmt.format_case = ENVOY__CONFIG__CORE__V3__SUBSTITUTION_FORMAT_STRING__FORMAT_JSON_FORMAT;
        fmt.json_format = &js;
    }
    if (fmt.format_case) {
        f.access_log_format_case =
            ENVOY__EXTENSIONS__ACCESS_LOGGERS__FILE__V3__FILE_ACCESS_LOG__ACCESS_LOG_FORMAT_LOG_FORMAT;
        f.log_format = &fmt;
    }
    al->name = XL_FILE_ACCESS_LOG_NAME;
    al->config_type_case = ENVOY__CONFIG__ACCESSLOG__V3__ACCESS_LOG__CONFIG_TYPE_TYPED_CONFIG;
    if (!(al->typed_config = any_of(a, XL_TYPE_URL_FILE_ACCESS_LOG, &f.base)))
        return NULL;
    return al;
}

/* HttpConnectionManager: RDS over ADS, router last; |o| (or NULL) adds the
 * CORS and local rate limit filters before it, and access logs. */
static Hcm *hcm(struct xl_arena *a, const char *rc_name, const char *stat_prefix,
                const struct xl_hcm_opts *o)
{
    Hcm *h = NEW(
        a, Hcm,
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_CONNECTION_MANAGER__INIT);
    Rds *rds =
        NEW(a, Rds, ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__RDS__INIT);
    HttpFilter **hfs = xlate_alloc(a, 3 * sizeof(*hfs));
    Router router = ENVOY__EXTENSIONS__FILTERS__HTTP__ROUTER__V3__ROUTER__INIT;
    if (!h || !rds || !hfs)
        return NULL;
    if (!(rds->config_source = ads_source(a)))
        return NULL;
    rds->route_config_name = (char *)rc_name;
    h->stat_prefix = (char *)stat_prefix;
    h->route_specifier_case =
        ENVOY__EXTENSIONS__FILTERS__NETWORK__HTTP_CONNECTION_MANAGER__V3__HTTP_CONNECTION_MANAGER__ROUTE_SPECIFIER_RDS;
    h->rds = rds;
    size_t n = 0;
    if (o && o->envoy_filters) {
        /* CORS first: a preflight is answered before it counts against a
         * rate limit; both do nothing for hosts and routes without a
         * typed_per_filter_config (the rate limit's own is 0% enabled) */
        Envoy__Extensions__Filters__Http__Cors__V3__Cors cors =
            ENVOY__EXTENSIONS__FILTERS__HTTP__CORS__V3__CORS__INIT;
        Envoy__Extensions__Filters__Http__LocalRatelimit__V3__LocalRateLimit rl =
            ENVOY__EXTENSIONS__FILTERS__HTTP__LOCAL_RATELIMIT__V3__LOCAL_RATE_LIMIT__INIT;
        rl.stat_prefix = XL_LOCAL_RATELIMIT_STAT_PREFIX;
        if (!(hfs[n++] = http_filter(a, XL_CORS_FILTER_NAME, XL_TYPE_URL_CORS, &cors.base)) ||
            !(hfs[n++] = http_filter(a, XL_LOCAL_RATELIMIT_FILTER_NAME, XL_TYPE_URL_LOCAL_RATELIMIT,
                                     &rl.base)))
            return NULL;
    }
    if (!(hfs[n++] = http_filter(a, XL_ROUTER_FILTER_NAME, XL_TYPE_URL_ROUTER, &router.base)))
        return NULL;
    h->http_filters = hfs;
    h->n_http_filters = n;
    if (o && o->nlogs) {
        h->access_log = xlate_alloc(a, o->nlogs * sizeof(*h->access_log));
        if (!h->access_log)
            return NULL;
        for (size_t i = 0; i < o->nlogs; i++)
            if (!(h->access_log[i] = access_log(a, &o->logs[i])))
                return NULL;
        h->n_access_log = o->nlogs;
    }
    return h;
}

/* The network filter every envoy-mode filter chain holds: the HCM. */
static Filter **hcm_filters(struct xl_arena *a, const char *rc_name, const char *stat_prefix,
                            const struct xl_hcm_opts *o)
{
    Filter *f = NEW(a, Filter, ENVOY__CONFIG__LISTENER__V3__FILTER__INIT);
    Filter **fs = xlate_alloc(a, sizeof(*fs));
    Hcm *h = hcm(a, rc_name, stat_prefix, o);
    if (!f || !fs || !h)
        return NULL;
    f->name = XL_HCM_FILTER_NAME;
    f->config_type_case = ENVOY__CONFIG__LISTENER__V3__FILTER__CONFIG_TYPE_TYPED_CONFIG;
    if (!(f->typed_config = any_of(a, XL_TYPE_URL_HCM, &h->base)))
        return NULL;
    fs[0] = f;
    return fs;
}

static Address *socket_address(struct xl_arena *a, const char *address, uint32_t port)
{
    Address *addr = NEW(a, Address, ENVOY__CONFIG__CORE__V3__ADDRESS__INIT);
    SocketAddress *sa = NEW(a, SocketAddress, ENVOY__CONFIG__CORE__V3__SOCKET_ADDRESS__INIT);
    if (!addr || !sa)
        return NULL;
    sa->address = (char *)address;
    sa->port_specifier_case = ENVOY__CONFIG__CORE__V3__SOCKET_ADDRESS__PORT_SPECIFIER_PORT_VALUE;
    sa->port_value = port;
    addr->address_case = ENVOY__CONFIG__CORE__V3__ADDRESS__ADDRESS_SOCKET_ADDRESS;
    addr->socket_address = sa;
    return addr;
}

int xlate_encode_listener_envoy(const char *name, const char *address, uint32_t port,
                                const char *rc_name, const char *stat_prefix, uint8_t **out,
                                size_t *len)
{
    return xlate_encode_listener_envoy_ex(name, address, port, rc_name, stat_prefix, NULL, out,
                                          len);
}

int xlate_encode_listener_envoy_ex(const char *name, const char *address, uint32_t port,
                                   const char *rc_name, const char *stat_prefix,
                                   const struct xl_hcm_opts *o, uint8_t **out, size_t *len)
{
    struct xl_arena a = {0};
    int rc = -1;
    Listener l = ENVOY__CONFIG__LISTENER__V3__LISTENER__INIT;
    Address *addr = socket_address(&a, address, port);
    FilterChain *fc = NEW(&a, FilterChain, ENVOY__CONFIG__LISTENER__V3__FILTER_CHAIN__INIT);
    FilterChain **fcs = xlate_alloc(&a, sizeof(*fcs));
    Filter **fs = hcm_filters(&a, rc_name, stat_prefix, o);
    if (!addr || !fc || !fcs || !fs)
        goto out;
    fc->filters = fs;
    fc->n_filters = 1;
    fcs[0] = fc;
    l.name = (char *)name;
    l.address = addr;
    l.filter_chains = fcs;
    l.n_filter_chains = 1;
    rc = pack(&l.base, out, len);
out:
    xlate_arena_free(&a);
    return rc;
}

/* ---- TLS ------------------------------------------------------------------ */

/* PEM as a DataSource: inline_string while it is plain ASCII text (readable
 * in JSON), else inline_bytes. |secret|: always inline_bytes (private keys;
 * the JSON renderers redact them anyway). */
static DataSource *data_source(struct xl_arena *a, const uint8_t *p, size_t n, int secret)
{
    DataSource *d = NEW(a, DataSource, ENVOY__CONFIG__CORE__V3__DATA_SOURCE__INIT);
    if (!d)
        return NULL;
    int text = !secret;
    for (size_t i = 0; i < n && text; i++)
        if (p[i] > 0x7e || (p[i] < 0x20 && p[i] != '\n' && p[i] != '\r' && p[i] != '\t'))
            text = 0;
    if (text) {
        d->specifier_case = ENVOY__CONFIG__CORE__V3__DATA_SOURCE__SPECIFIER_INLINE_STRING;
        if (!(d->inline_string = xlate_strndup(a, (const char *)p, n)))
            return NULL;
    } else {
        d->specifier_case = ENVOY__CONFIG__CORE__V3__DATA_SOURCE__SPECIFIER_INLINE_BYTES;
        d->inline_bytes.data = (uint8_t *)p;
        d->inline_bytes.len = n;
    }
    return d;
}

/* ---- SDS ---------------------------------------------------------------------------- */

void xlate_sds_cert_name(const char *ns, const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "secret:%s/%s", ns, name);
}

void xlate_sds_ca_name(const char *ns, const char *name, const char *key, char *out, size_t cap)
{
    snprintf(out, cap, "configmap:%s/%s/%s", ns, name, key);
}

/* A reference to SDS Secret |name| over the ADS stream. */
static SdsSecretConfig *sds_ref(struct xl_arena *a, const char *name)
{
    SdsSecretConfig *c = NEW(
        a, SdsSecretConfig, ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SDS_SECRET_CONFIG__INIT);
    if (!c || !(c->sds_config = ads_source(a)))
        return NULL;
    c->name = (char *)name;
    return c;
}

/* |ctc|'s certificate: SDS Secret |name|. Returns 0 or -1. */
static int sds_certificate(struct xl_arena *a, CommonTlsContext *ctc, const char *name)
{
    SdsSecretConfig **v = xlate_alloc(a, sizeof(*v));
    if (!v || !(v[0] = sds_ref(a, name)))
        return -1;
    ctc->tls_certificate_sds_secret_configs = v;
    ctc->n_tls_certificate_sds_secret_configs = 1;
    return 0;
}

int xlate_encode_secret_cert(const char *name, const uint8_t *chain, size_t chainlen,
                             const uint8_t *key, size_t keylen, uint8_t **out, size_t *len)
{
    struct xl_arena a = {0};
    Secret sec = ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SECRET__INIT;
    TlsCertificate *t = NEW(&a, TlsCertificate,
                            ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__TLS_CERTIFICATE__INIT);
    int rc = -1;
    if (!t || !(t->certificate_chain = data_source(&a, chain, chainlen, 0)) ||
        !(t->private_key = data_source(&a, key, keylen, 1)))
        goto out;
    sec.name = (char *)name;
    sec.type_case = ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SECRET__TYPE_TLS_CERTIFICATE;
    sec.tls_certificate = t;
    rc = pack(&sec.base, out, len);
out:
    xlate_arena_free(&a);
    return rc;
}

int xlate_encode_secret_ca(const char *name, const char *pem, size_t pemlen, uint8_t **out,
                           size_t *len)
{
    struct xl_arena a = {0};
    Secret sec = ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SECRET__INIT;
    CertificateValidationContext *vc =
        NEW(&a, CertificateValidationContext,
            ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__CERTIFICATE_VALIDATION_CONTEXT__INIT);
    int rc = -1;
    if (!vc || !(vc->trusted_ca = data_source(&a, (const uint8_t *)pem, pemlen, 0)))
        goto out;
    sec.name = (char *)name;
    sec.type_case = ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SECRET__TYPE_VALIDATION_CONTEXT;
    sec.validation_context = vc;
    rc = pack(&sec.base, out, len);
out:
    xlate_arena_free(&a);
    return rc;
}

/* Sets |ctc|'s tls_params when a version is given. Returns 0 or -1. */
static int tls_params(struct xl_arena *a, CommonTlsContext *ctc, enum xl_tls_version min,
                      enum xl_tls_version max)
{
    if (min == XL_TLS_AUTO && max == XL_TLS_AUTO)
        return 0;
    TlsParameters *p =
        NEW(a, TlsParameters, ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__TLS_PARAMETERS__INIT);
    if (!p)
        return -1;
    /* the numbers are Envoy's TlsProtocol values */
    p->tls_minimum_protocol_version =
        (Envoy__Extensions__TransportSockets__Tls__V3__TlsParameters__TlsProtocol)min;
    p->tls_maximum_protocol_version =
        (Envoy__Extensions__TransportSockets__Tls__V3__TlsParameters__TlsProtocol)max;
    ctc->tls_params = p;
    return 0;
}

static TransportSocket *tls_socket(struct xl_arena *a, const char *type_url,
                                   const ProtobufCMessage *ctx)
{
    TransportSocket *ts = NEW(a, TransportSocket, ENVOY__CONFIG__CORE__V3__TRANSPORT_SOCKET__INIT);
    if (!ts)
        return NULL;
    ts->name = XL_TLS_SOCKET_NAME;
    ts->config_type_case = ENVOY__CONFIG__CORE__V3__TRANSPORT_SOCKET__CONFIG_TYPE_TYPED_CONFIG;
    if (!(ts->typed_config = any_of(a, type_url, ctx)))
        return NULL;
    return ts;
}

static FilterChain *tls_chain(struct xl_arena *a, const struct xl_downstream_tls *tls,
                              const struct xl_tls_chain *c, Filter **fs)
{
    FilterChain *fc = NEW(a, FilterChain, ENVOY__CONFIG__LISTENER__V3__FILTER_CHAIN__INIT);
    DownstreamTlsContext *dtc =
        NEW(a, DownstreamTlsContext,
            ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__DOWNSTREAM_TLS_CONTEXT__INIT);
    CommonTlsContext *ctc =
        NEW(a, CommonTlsContext,
            ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__INIT);
    if (!fc || !dtc || !ctc || sds_certificate(a, ctc, c->secret) != 0 ||
        tls_params(a, ctc, tls->min_version, tls->max_version) != 0)
        return NULL;
    ctc->alpn_protocols = (char **)tls->alpn;
    ctc->n_alpn_protocols = tls->nalpn;
    if (tls->client_ca) {
        if (!(ctc->validation_context_sds_secret_config = sds_ref(a, tls->client_ca)))
            return NULL;
        ctc->validation_context_type_case =
            ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__VALIDATION_CONTEXT_TYPE_VALIDATION_CONTEXT_SDS_SECRET_CONFIG;
        if (tls->require_client_cert) {
            dtc->require_client_certificate =
                NEW(a, Google__Protobuf__BoolValue, GOOGLE__PROTOBUF__BOOL_VALUE__INIT);
            if (!dtc->require_client_certificate)
                return NULL;
            dtc->require_client_certificate->value = 1;
        }
    }
    dtc->common_tls_context = ctc;
    if (!(fc->transport_socket = tls_socket(a, XL_TYPE_URL_DOWNSTREAM_TLS, &dtc->base)))
        return NULL;
    if (c->nserver_names) {
        FilterChainMatch *m =
            NEW(a, FilterChainMatch, ENVOY__CONFIG__LISTENER__V3__FILTER_CHAIN_MATCH__INIT);
        if (!m)
            return NULL;
        m->server_names = (char **)c->server_names;
        m->n_server_names = c->nserver_names;
        fc->filter_chain_match = m;
    }
    fc->name = (char *)c->name;
    fc->filters = fs;
    fc->n_filters = 1;
    return fc;
}

int xlate_encode_listener_envoy_tls(const char *name, const char *address, uint32_t port,
                                    const char *rc_name, const char *stat_prefix,
                                    const struct xl_downstream_tls *tls,
                                    const struct xl_tls_chain *chains, size_t nchains,
                                    const struct xl_tls_chain *dflt, const struct xl_hcm_opts *o,
                                    uint8_t **out, size_t *len)
{
    struct xl_arena a = {0};
    int rc = -1;
    Listener l = ENVOY__CONFIG__LISTENER__V3__LISTENER__INIT;
    Address *addr = socket_address(&a, address, port);
    Filter **fs = hcm_filters(&a, rc_name, stat_prefix, o);
    FilterChain **fcs = xlate_alloc(&a, (nchains ? nchains : 1) * sizeof(*fcs));
    ListenerFilter *lf =
        NEW(&a, ListenerFilter, ENVOY__CONFIG__LISTENER__V3__LISTENER_FILTER__INIT);
    ListenerFilter **lfs = xlate_alloc(&a, sizeof(*lfs));
    TlsInspector ti = ENVOY__EXTENSIONS__FILTERS__LISTENER__TLS_INSPECTOR__V3__TLS_INSPECTOR__INIT;
    if (!addr || !fs || !fcs || !lf || !lfs)
        goto out;
    /* SNI is read from the ClientHello by the TLS inspector: without it no
     * server_names match */
    lf->name = XL_TLS_INSPECTOR_NAME;
    lf->config_type_case = ENVOY__CONFIG__LISTENER__V3__LISTENER_FILTER__CONFIG_TYPE_TYPED_CONFIG;
    if (!(lf->typed_config = any_of(&a, XL_TYPE_URL_TLS_INSPECTOR, &ti.base)))
        goto out;
    lfs[0] = lf;
    for (size_t i = 0; i < nchains; i++)
        if (!(fcs[i] = tls_chain(&a, tls, &chains[i], fs)))
            goto out;
    if (dflt && !(l.default_filter_chain = tls_chain(&a, tls, dflt, fs)))
        goto out;
    l.name = (char *)name;
    l.address = addr;
    l.filter_chains = fcs;
    l.n_filter_chains = nchains;
    l.listener_filters = lfs;
    l.n_listener_filters = 1;
    rc = pack(&l.base, out, len);
out:
    xlate_arena_free(&a);
    return rc;
}

int xlate_encode_listener_api(const char *name, const char *rc_name, const char *stat_prefix,
                              uint8_t **out, size_t *len)
{
    struct xl_arena a = {0};
    int rc = -1;
    Listener l = ENVOY__CONFIG__LISTENER__V3__LISTENER__INIT;
    ApiListener *al = NEW(&a, ApiListener, ENVOY__CONFIG__LISTENER__V3__API_LISTENER__INIT);
    Hcm *h = hcm(&a, rc_name, stat_prefix, NULL); /* gRPC: the router alone (gRFC A39) */
    if (!al || !h || !(al->api_listener = any_of(&a, XL_TYPE_URL_HCM, &h->base)))
        goto out;
    l.name = (char *)name;
    l.api_listener = al;
    rc = pack(&l.base, out, len);
out:
    xlate_arena_free(&a);
    return rc;
}

int xlate_encode_cluster(const char *name, enum xl_lb_policy lb, int64_t connect_timeout_ns,
                         int has_connect_timeout, uint8_t **out, size_t *len)
{
    return xlate_encode_cluster_tls(name, lb, connect_timeout_ns, has_connect_timeout, NULL, out,
                                    len);
}

static TransportSocket *upstream_tls(struct xl_arena *a, const struct xl_upstream_tls_enc *t)
{
    UpstreamTlsContext *utc =
        NEW(a, UpstreamTlsContext,
            ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__UPSTREAM_TLS_CONTEXT__INIT);
    CommonTlsContext *ctc =
        NEW(a, CommonTlsContext,
            ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__INIT);
    if (!utc || !ctc || tls_params(a, ctc, t->min_version, t->max_version) != 0)
        return NULL;
    if (t->client && sds_certificate(a, ctc, t->client) != 0)
        return NULL;
    if (t->ca && !t->nsans) {
        if (!(ctc->validation_context_sds_secret_config = sds_ref(a, t->ca)))
            return NULL;
        ctc->validation_context_type_case =
            ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__VALIDATION_CONTEXT_TYPE_VALIDATION_CONTEXT_SDS_SECRET_CONFIG;
    } else if (t->ca) {
        /* the CA from SDS, the names to match inline: Envoy merges the
         * Secret's validation context into default_validation_context */
        CertificateValidationContext *vc = NEW(
            a, CertificateValidationContext,
            ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__CERTIFICATE_VALIDATION_CONTEXT__INIT);
        CombinedValidationContext *cvc = NEW(
            a, CombinedValidationContext,
            ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__COMBINED_CERTIFICATE_VALIDATION_CONTEXT__INIT);
        if (!vc || !cvc || !(cvc->validation_context_sds_secret_config = sds_ref(a, t->ca)))
            return NULL;
        vc->match_typed_subject_alt_names =
            xlate_alloc(a, t->nsans * sizeof(*vc->match_typed_subject_alt_names));
        if (!vc->match_typed_subject_alt_names)
            return NULL;
        for (size_t i = 0; i < t->nsans; i++) {
            SubjectAltNameMatcher *m =
                NEW(a, SubjectAltNameMatcher,
                    ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SUBJECT_ALT_NAME_MATCHER__INIT);
            StringMatcher *sm =
                NEW(a, StringMatcher, ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__INIT);
            if (!m || !sm)
                return NULL;
            sm->match_pattern_case = ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__MATCH_PATTERN_EXACT;
            sm->exact = t->sans[i];
            m->san_type =
                ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SUBJECT_ALT_NAME_MATCHER__SAN_TYPE__DNS;
            m->matcher = sm;
            vc->match_typed_subject_alt_names[i] = m;
        }
        vc->n_match_typed_subject_alt_names = t->nsans;
        cvc->default_validation_context = vc;
        ctc->validation_context_type_case =
            ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__VALIDATION_CONTEXT_TYPE_COMBINED_VALIDATION_CONTEXT;
        ctc->combined_validation_context = cvc;
    }
    utc->common_tls_context = ctc;
    if (t->sni)
        utc->sni = (char *)t->sni;
    return tls_socket(a, XL_TYPE_URL_UPSTREAM_TLS, &utc->base);
}

int xlate_encode_cluster_tls(const char *name, enum xl_lb_policy lb, int64_t connect_timeout_ns,
                             int has_connect_timeout, const struct xl_upstream_tls_enc *tls,
                             uint8_t **out, size_t *len)
{
    const struct xl_cluster_enc c = {.lb = lb,
                                     .connect_timeout_ns = connect_timeout_ns,
                                     .has_connect_timeout = has_connect_timeout,
                                     .tls = tls};
    return xlate_encode_cluster_ex(name, &c, out, len);
}

int xlate_encode_cluster_ex(const char *name, const struct xl_cluster_enc *c, uint8_t **out,
                            size_t *len)
{
    const struct xl_upstream_tls_enc *tls = c->tls;
    /* one per Upstream and mode: written back to front like virtual hosts;
     * the transport socket (TLS, rare) is packed by protobuf-c and put in
     * as it is */
    struct cx_wire w;
    if (cx_wire_init(&w, 128 + strlen(name)) != 0)
        return -1;
    if (c->opts)
        xlate_cluster_encode_high(&w, c->opts, c->mode);
    if (tls) {
        struct xl_arena a = {0};
        TransportSocket *ts = upstream_tls(&a, tls);
        size_t mark = cx_wire_mark(&w);
        size_t n = ts ? protobuf_c_message_get_packed_size(&ts->base) : 0;
        uint8_t *d = ts ? cx_wire_front(&w, n) : NULL;
        if (d)
            protobuf_c_message_pack(&ts->base, d);
        xlate_arena_free(&a);
        if (!d) {
            cx_wire_discard(&w);
            return -1;
        }
        cx_wire_close(&w, 24, mark); /* transport_socket */
    }
    if (c->lb == XL_LB_RING_HASH && (c->ring_min || c->ring_max)) {
        size_t mark = cx_wire_mark(&w); /* ring_hash_lb_config: UInt64Value sizes */
        if (c->ring_max)
            cx_wire_wrapped(&w, 4, c->ring_max); /* maximum_ring_size */
        if (c->ring_min)
            cx_wire_wrapped(&w, 1, c->ring_min); /* minimum_ring_size */
        cx_wire_close(&w, 23, mark);
    }
    if (c->opts)
        xlate_cluster_encode_mid(&w, c->opts, c->mode);
    uint64_t policy = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__ROUND_ROBIN;
    switch (c->lb) {
    case XL_LB_ROUND_ROBIN:
        break;
    case XL_LB_LEAST_REQUEST:
        policy = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__LEAST_REQUEST;
        break;
    case XL_LB_RING_HASH:
        policy = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__RING_HASH;
        break;
    case XL_LB_RANDOM:
        policy = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__RANDOM;
        break;
    case XL_LB_MAGLEV:
        policy = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__LB_POLICY__MAGLEV;
        break;
    }
    if (policy)
        cx_wire_uint(&w, 6, policy); /* lb_policy */
    if (c->has_connect_timeout)
        cx_wire_duration(&w, 4, c->connect_timeout_ns); /* connect_timeout */
    size_t eds = cx_wire_mark(&w), src = eds;
    /* eds_cluster_config.eds_config: ADS, resources of API v3 */
    cx_wire_uint(&w, 6, ENVOY__CONFIG__CORE__V3__API_VERSION__V3); /* resource_api_version */
    cx_wire_bytes(&w, 3, NULL, 0);                                 /* ads: {} */
    cx_wire_close(&w, 1, src);                                     /* eds_config */
    cx_wire_close(&w, 3, eds);                                     /* eds_cluster_config */
    cx_wire_uint(&w, 2, ENVOY__CONFIG__CLUSTER__V3__CLUSTER__DISCOVERY_TYPE__EDS); /* type */
    cx_wire_str3(&w, 1, name);
    return cx_wire_finish(&w, out, len);
}

/* ---- ClusterLoadAssignment ------------------------------------------------
 *
 * The most frequent message (one per Upstream, rebuilt whenever its
 * endpoints change) and the deepest (CLA > LocalityLbEndpoints >
 * LbEndpoint > Endpoint > Address > SocketAddress): written back to front
 * by cluster/xlate_locality.c, one locality per zone. The bytes are
 * protobuf-c's (test_xlate_encode compares the two). */

int xlate_encode_cla(const char *name, const struct xl_lb_endpoint *eps, size_t n, uint8_t **out,
                     size_t *len)
{
    static const struct xl_cluster_opts none;
    struct xl_cla_locality *locs = NULL;
    size_t nlocs = 0;
    if (xlate_localities(&none, eps, n, &locs, &nlocs) != 0)
        return -1;
    int rc = xlate_encode_cla_localities(name, locs, nlocs, out, len);
    free(locs);
    return rc;
}
