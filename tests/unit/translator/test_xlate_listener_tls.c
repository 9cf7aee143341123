/*
 * spec.listeners[].tls: a listener's own certificates. The bytes of two
 * HTTPS listeners with different certificates, decoded with Envoy's own
 * message definitions (Listener.filter_chains (3), FilterChainMatch
 * .server_names (11), FilterChain.transport_socket (6) holding a
 * DownstreamTlsContext: common_tls_context (1), require_client_certificate
 * (2); Listener.default_filter_chain (25)); which node group gets which SDS
 * Secrets; what a change of a Secret only a listener names rebuilds; the
 * per-listener SNI Warnings; the refusals and the Gateway-wide bound on
 * certificates.
 */
#include "cx_buf.h"
#include "cx_json.h"
#include "cx_yaml.h"
#include "cxtest.h"
#include "xlate.h"
#include "xlate_encode.h"
#include "xlate_snapshot.h"

#include "envoy/config/listener/v3/listener.pb-c.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T2025 INT64_C(1735689600) /* 2025-01-01T00:00:00Z */

typedef Envoy__Config__Listener__V3__Listener Listener;
typedef Envoy__Config__Listener__V3__FilterChain FilterChain;
typedef Envoy__Extensions__TransportSockets__Tls__V3__DownstreamTlsContext Dtc;

struct world {
    cJSON *docs;
    struct xlate_object in[64];
    size_t n;
};

static void world_load(struct world *w, const char *rel)
{
    size_t len;
    char *data = cxt_read_file(cxt_data_path(rel), &len);
    REQUIRE(data);
    char err[200];
    w->docs = cx_yaml_parse(data, len, err, sizeof(err));
    free(data);
    REQUIRE(w->docs);
    w->n = 0;
    cJSON *d;
    cJSON_ArrayForEach(d, w->docs)
    {
        REQUIRE(w->n < 64);
        w->in[w->n++] = (struct xlate_object){.kind = XLATE_KIND_UNKNOWN, .obj = d};
    }
}

static const struct xds_resource *find(const struct xlate_snapshot *s, const char *group,
                                       enum xds_type t, const char *name)
{
    const struct xlate_group *g = xlate_snapshot_group(s, group);
    return g ? xlate_resource_set_find(&g->types[t], name) : NULL;
}

static const struct xlate_report *report(const struct xlate_snapshot *s, const char *kind,
                                         const char *ns, const char *name)
{
    for (size_t i = 0; i < s->nreports; i++)
        if (!strcmp(s->reports[i].kind, kind) && !strcmp(s->reports[i].namespace, ns) &&
            !strcmp(s->reports[i].name, name))
            return &s->reports[i];
    return NULL;
}

static Dtc *dtc_of(const FilterChain *fc)
{
    if (!fc || !fc->transport_socket || !fc->transport_socket->typed_config)
        return NULL;
    const Google__Protobuf__Any *a = fc->transport_socket->typed_config;
    if (strcmp(a->type_url, XL_TYPE_URL_DOWNSTREAM_TLS) != 0)
        return NULL;
    return envoy__extensions__transport_sockets__tls__v3__downstream_tls_context__unpack(
        NULL, a->value.len, a->value.data);
}

/* The SDS certificate a chain names, its min version and whether it needs
 * client certificates (1/0; -1 when unset), its CA's SDS name or "". */
struct chain_view {
    char cert[200], ca[200];
    int min_version, require_client;
    size_t nalpn;
};

static int chain_view(const FilterChain *fc, struct chain_view *v)
{
    Dtc *d = dtc_of(fc);
    if (!d || !d->common_tls_context ||
        d->common_tls_context->n_tls_certificate_sds_secret_configs != 1) {
        if (d)
            protobuf_c_message_free_unpacked(&d->base, NULL);
        return -1;
    }
    const Envoy__Extensions__TransportSockets__Tls__V3__CommonTlsContext *c = d->common_tls_context;
    snprintf(v->cert, sizeof(v->cert), "%s", c->tls_certificate_sds_secret_configs[0]->name);
    snprintf(v->ca, sizeof(v->ca), "%s",
             c->validation_context_sds_secret_config ? c->validation_context_sds_secret_config->name
                                                     : "");
    v->min_version = c->tls_params ? (int)c->tls_params->tls_minimum_protocol_version : -1;
    v->require_client = d->require_client_certificate ? d->require_client_certificate->value : -1;
    v->nalpn = c->n_alpn_protocols;
    protobuf_c_message_free_unpacked(&d->base, NULL);
    return 0;
}

static Listener *listener(const struct xlate_snapshot *s, const char *group, const char *name)
{
    const struct xds_resource *r = find(s, group, XDS_LISTENER, name);
    return r ? envoy__config__listener__v3__listener__unpack(NULL, r->len, r->bytes) : NULL;
}

/* Two HTTPS listeners, each with its own certificates: each listener's
 * chains list only its domains, each names only its own certificates, and
 * each carries its own TLS parameters. */
static void test_two_listeners_bytes(void)
{
    struct world w;
    world_load(&w, "translator/tls_listener_certs/input.yaml");
    struct xlate_ctx *ctx = xlate_ctx_new();
    struct xlate_snapshot *s = NULL;
    REQUIRE_INT_EQ(xlate_run(ctx, &(struct xlate_input){w.in, w.n, T2025}, &s, NULL), 0);

    Listener *pub = listener(s, "default/edge", "default/edge/public");
    REQUIRE(pub);
    CHECK_INT_EQ(pub->address->socket_address->port_value, 8443);
    REQUIRE_INT_EQ(pub->n_listener_filters, 1);
    CHECK_STR_EQ(pub->listener_filters[0]->name, "envoy.filters.listener.tls_inspector");
    REQUIRE_INT_EQ(pub->n_filter_chains, 2);
    struct chain_view v;
    /* public: www.example.com to www, a.shop.example.com to the wildcard */
    REQUIRE_INT_EQ(pub->filter_chains[0]->filter_chain_match->n_server_names, 1);
    CHECK_STR_EQ(pub->filter_chains[0]->filter_chain_match->server_names[0], "www.example.com");
    REQUIRE_INT_EQ(chain_view(pub->filter_chains[0], &v), 0);
    CHECK_STR_EQ(v.cert, "secret:default/www");
    CHECK_STR_EQ(v.ca, "");
    CHECK_INT_EQ(v.require_client, -1);
    CHECK_INT_EQ(v.min_version, 3); /* TLSv1_2, written explicitly */
    CHECK_INT_EQ(v.nalpn, 2);
    REQUIRE_INT_EQ(pub->filter_chains[1]->filter_chain_match->n_server_names, 1);
    CHECK_STR_EQ(pub->filter_chains[1]->filter_chain_match->server_names[0], "a.shop.example.com");
    REQUIRE_INT_EQ(chain_view(pub->filter_chains[1], &v), 0);
    CHECK_STR_EQ(v.cert, "secret:default/shop");
    REQUIRE(pub->default_filter_chain);
    CHECK(!pub->default_filter_chain->filter_chain_match);
    REQUIRE_INT_EQ(chain_view(pub->default_filter_chain, &v), 0);
    CHECK_STR_EQ(v.cert, "secret:default/www");

    Listener *in = listener(s, "default/edge", "default/edge/internal");
    REQUIRE(in);
    CHECK_STR_EQ(in->address->socket_address->address, "127.0.0.1");
    CHECK_INT_EQ(in->address->socket_address->port_value, 9443);
    /* internal: its one domain (the catch-all api.example.com is not
     * covered by its certificates) to its own certificate, never public's */
    REQUIRE_INT_EQ(in->n_filter_chains, 1);
    REQUIRE_INT_EQ(in->filter_chains[0]->filter_chain_match->n_server_names, 1);
    CHECK_STR_EQ(in->filter_chains[0]->filter_chain_match->server_names[0], "backend.internal");
    REQUIRE_INT_EQ(chain_view(in->filter_chains[0], &v), 0);
    CHECK_STR_EQ(v.cert, "secret:default/backend");
    CHECK_STR_EQ(v.ca, "configmap:default/clients/ca.crt");
    CHECK_INT_EQ(v.require_client, 1);
    CHECK_INT_EQ(v.min_version, 4); /* TLSv1_3 */
    CHECK_INT_EQ(v.nalpn, 1);
    REQUIRE_INT_EQ(chain_view(in->default_filter_chain, &v), 0);
    CHECK_STR_EQ(v.cert, "secret:default/backend");
    CHECK_INT_EQ(v.require_client, 1);
    const struct xds_resource *inr = find(s, "default/edge", XDS_LISTENER, "default/edge/internal");
    CHECK(!memmem(inr->bytes, inr->len, "secret:default/shop", 19));

    /* the plain listener has no TLS at all */
    Listener *http = listener(s, "default/edge", "default/edge/http");
    REQUIRE(http);
    CHECK_INT_EQ(http->n_listener_filters, 0);
    REQUIRE_INT_EQ(http->n_filter_chains, 1);
    CHECK(!http->filter_chains[0]->transport_socket);
    CHECK(!http->default_filter_chain);

    /* spec.tls for one listener, another with its own (a shared Secret of
     * another namespace) */
    Listener *a = listener(s, "other/mixed", "other/mixed/a");
    Listener *b = listener(s, "other/mixed", "other/mixed/b");
    REQUIRE(a && b);
    REQUIRE_INT_EQ(a->n_filter_chains, 1);
    REQUIRE_INT_EQ(chain_view(a->default_filter_chain, &v), 0);
    CHECK_STR_EQ(v.cert, "secret:other/www");
    REQUIRE_INT_EQ(b->n_filter_chains, 2);
    REQUIRE_INT_EQ(chain_view(b->default_filter_chain, &v), 0);
    CHECK_STR_EQ(v.cert, "secret:default/shared");
    CHECK_STR_EQ(b->filter_chains[0]->filter_chain_match->server_names[0], "b.shop.example.com");

    protobuf_c_message_free_unpacked(&pub->base, NULL);
    protobuf_c_message_free_unpacked(&in->base, NULL);
    protobuf_c_message_free_unpacked(&http->base, NULL);
    protobuf_c_message_free_unpacked(&a->base, NULL);
    protobuf_c_message_free_unpacked(&b->base, NULL);
    xlate_snapshot_unref(s);
    xlate_ctx_free(ctx);
    cJSON_Delete(w.docs);
}

/* Each node group holds exactly the Secrets its listeners name: a proxy of
 * edge gets both listeners' certificates and the client CA; a proxy of
 * mixed none of them (the xDS server serves a proxy its group's set
 * alone), and the rejected Gateway has no group at all. */
static void test_groups_get_their_secrets(void)
{
    struct world w;
    world_load(&w, "translator/tls_listener_certs/input.yaml");
    struct xlate_ctx *ctx = xlate_ctx_new();
    struct xlate_snapshot *s = NULL;
    REQUIRE_INT_EQ(xlate_run(ctx, &(struct xlate_input){w.in, w.n, T2025}, &s, NULL), 0);
    const struct xlate_group *edge = xlate_snapshot_group(s, "default/edge");
    const struct xlate_group *mixed = xlate_snapshot_group(s, "other/mixed");
    REQUIRE(edge && mixed);
    CHECK(!xlate_snapshot_group(s, "other/denied"));
    static const char *const mine[] = {"configmap:default/clients/ca.crt", "secret:default/backend",
                                       "secret:default/shop", "secret:default/www"};
    REQUIRE_INT_EQ(edge->types[XDS_SECRET].n, 4);
    for (size_t i = 0; i < 4; i++) {
        CHECK_STR_EQ(edge->types[XDS_SECRET].items[i]->name, mine[i]);
        CHECK(!xlate_resource_set_find(&mixed->types[XDS_SECRET], mine[i]));
    }
    REQUIRE_INT_EQ(mixed->types[XDS_SECRET].n, 2);
    CHECK_STR_EQ(mixed->types[XDS_SECRET].items[0]->name, "secret:default/shared");
    CHECK_STR_EQ(mixed->types[XDS_SECRET].items[1]->name, "secret:other/www");
    CHECK(!xlate_resource_set_find(&edge->types[XDS_SECRET], "secret:default/shared"));
    CHECK(!xlate_resource_set_find(&edge->types[XDS_SECRET], "secret:other/www"));
    xlate_snapshot_unref(s);
    xlate_ctx_free(ctx);
    cJSON_Delete(w.docs);
}

/* The Secret of the internal listener alone changes: its SDS Secret and
 * the internal Listener's chains follow (the new certificate names other
 * hosts, so the DomainNotCovered Warning names that listener), while the
 * public Listener and the other group keep their resources. */
static void test_listener_secret_change(void)
{
    struct world w;
    world_load(&w, "translator/tls_listener_certs/input.yaml");
    struct xlate_ctx *ctx = xlate_ctx_new();
    struct xlate_snapshot *s1 = NULL, *s2 = NULL, *s3 = NULL;
    struct xlate_stats st;
    REQUIRE_INT_EQ(xlate_run(ctx, &(struct xlate_input){w.in, w.n, T2025}, &s1, &st), 0);
    const struct xlate_report *ar = report(s1, "VirtualService", "default", "admin");
    REQUIRE(ar);
    CHECK_STR_EQ(ar->reason, "Accepted");

    /* the Secret "backend" of default now holds www's certificate */
    cJSON *sec = NULL;
    cJSON *d;
    cJSON_ArrayForEach(d, w.docs)
    {
        if (!strcmp(cx_json_str(d, "kind"), "Secret") &&
            !strcmp(cx_json_path_str(d, "metadata", "name", NULL), "backend"))
            REQUIRE((sec = cJSON_Duplicate(d, 1)));
    }
    REQUIRE(sec);
    const cJSON *www = NULL;
    cJSON_ArrayForEach(d, w.docs)
    {
        if (!strcmp(cx_json_str(d, "kind"), "Secret") &&
            !strcmp(cx_json_path_str(d, "metadata", "name", NULL), "www") &&
            !strcmp(cx_json_path_str(d, "metadata", "namespace", NULL), "default"))
            www = d;
    }
    REQUIRE(www);
    cJSON_ReplaceItemInObjectCaseSensitive(sec, "data",
                                           cJSON_Duplicate(cx_json_member(www, "data"), 1));
    struct xlate_change c = {.kind = XLATE_KIND_SECRET, .obj = sec};
    REQUIRE_INT_EQ(xlate_run_changes(ctx, &c, 1, &s2, &st), 0);
    CHECK_INT_EQ(st.parsed, 1);
    const struct xds_resource *b1 = find(s1, "default/edge", XDS_SECRET, "secret:default/backend");
    const struct xds_resource *b2 = find(s2, "default/edge", XDS_SECRET, "secret:default/backend");
    REQUIRE(b1 && b2);
    CHECK(strcmp(b1->version, b2->version) != 0);
    /* internal: rebuilt; backend.internal is no longer covered there */
    CHECK(find(s1, "default/edge", XDS_LISTENER, "default/edge/internal") !=
          find(s2, "default/edge", XDS_LISTENER, "default/edge/internal"));
    CHECK(find(s1, "default/edge", XDS_LISTENER, "default/edge/public") ==
          find(s2, "default/edge", XDS_LISTENER, "default/edge/public"));
    CHECK(find(s1, "default/edge", XDS_SECRET, "secret:default/www") ==
          find(s2, "default/edge", XDS_SECRET, "secret:default/www"));
    const struct xlate_group *m1 = xlate_snapshot_group(s1, "other/mixed");
    const struct xlate_group *m2 = xlate_snapshot_group(s2, "other/mixed");
    REQUIRE(m1 && m2);
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        CHECK_STR_EQ(m1->types[t].version, m2->types[t].version);
    ar = report(s2, "VirtualService", "default", "admin");
    REQUIRE(ar);
    CHECK_STR_EQ(ar->reason, "DomainNotCovered");
    CHECK(strstr(ar->message,
                 "\"backend.internal\" is not covered by any certificate of listener "
                 "\"internal\" of Gateway default/edge (spec.listeners[1].tls)") != NULL);
    /* www, internal's second certificate, still covers nothing it serves */
    const struct xlate_report *gr = report(s2, "Gateway", "default", "edge");
    REQUIRE(gr);
    CHECK_STR_EQ(gr->reason, "CertificateUnused");
    CHECK(strstr(gr->message, "spec.listeners[1].tls.certificates[1]: Secret default/www covers "
                              "none of the domains listener \"internal\" serves") != NULL);

    /* the Secret goes: the listener's second certificate (www) becomes its
     * default; the Warning names the listener's certificate */
    c = (struct xlate_change){.kind = XLATE_KIND_SECRET, .namespace = "default", .name = "backend"};
    REQUIRE_INT_EQ(xlate_run_changes(ctx, &c, 1, &s3, &st), 0);
    CHECK(!find(s3, "default/edge", XDS_SECRET, "secret:default/backend"));
    Listener *in = listener(s3, "default/edge", "default/edge/internal");
    REQUIRE(in);
    struct chain_view v;
    REQUIRE_INT_EQ(chain_view(in->default_filter_chain, &v), 0);
    CHECK_STR_EQ(v.cert, "secret:default/www");
    CHECK_STR_EQ(v.ca, "configmap:default/clients/ca.crt");
    protobuf_c_message_free_unpacked(&in->base, NULL);
    gr = report(s3, "Gateway", "default", "edge");
    REQUIRE(gr);
    CHECK_INT_EQ(gr->state, XLATE_WARNING);
    CHECK_STR_EQ(gr->reason, "SecretNotFound");
    CHECK(strstr(gr->message, "spec.listeners[1].tls.certificates[0].secretRef: Secret "
                              "default/backend not found; certificate left out") != NULL);
    /* the other group never moved */
    const struct xlate_group *m3 = xlate_snapshot_group(s3, "other/mixed");
    REQUIRE(m3);
    CHECK_STR_EQ(m1->types[XDS_SECRET].version, m3->types[XDS_SECRET].version);
    xlate_snapshot_unref(s1);
    xlate_snapshot_unref(s2);
    xlate_snapshot_unref(s3);
    xlate_ctx_free(ctx);
    cJSON_Delete(sec);
    cJSON_Delete(w.docs);
}

/* A Gateway of |n| HTTPS listeners with |per| certificates each (all the
 * same Secret names in other namespaces), translated alone: its report. */
static char *bound_case(size_t n, size_t per, enum xlate_state *state, char **reason)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    REQUIRE_INT_EQ(cx_buf_printf(&b,
                                 "{\"apiVersion\": \"coxswain.dev/v1\", \"kind\": \"Gateway\", "
                                 "\"metadata\": {\"name\": \"gw\", \"namespace\": \"default\"}, "
                                 "\"spec\": {\"listeners\": ["),
                   0);
    for (size_t i = 0; i < n; i++) {
        REQUIRE_INT_EQ(
            cx_buf_printf(&b,
                          "%s{\"name\": \"l%zu\", \"port\": %zu, \"protocol\": \"HTTPS\", "
                          "\"tls\": {\"certificates\": [",
                          i ? ", " : "", i, 8000 + i),
            0);
        for (size_t k = 0; k < per; k++)
            REQUIRE_INT_EQ(
                cx_buf_printf(&b, "%s{\"secretRef\": {\"name\": \"c%zu\"}}", k ? ", " : "", k), 0);
        REQUIRE_INT_EQ(cx_buf_puts(&b, "]}}"), 0);
    }
    REQUIRE_INT_EQ(cx_buf_puts(&b, "]}}"), 0);
    cJSON *gw = cJSON_ParseWithLength(b.data, b.len);
    cx_buf_free(&b);
    REQUIRE(gw);
    struct xlate_object in = {.kind = XLATE_KIND_UNKNOWN, .obj = gw};
    struct xlate_ctx *ctx = xlate_ctx_new();
    struct xlate_snapshot *s = NULL;
    REQUIRE_INT_EQ(xlate_run(ctx, &(struct xlate_input){&in, 1, T2025}, &s, NULL), 0);
    const struct xlate_report *r = report(s, "Gateway", "default", "gw");
    REQUIRE(r);
    *state = r->state;
    *reason = strdup(r->reason);
    char *msg = strdup(r->message);
    xlate_snapshot_unref(s);
    xlate_ctx_free(ctx);
    cJSON_Delete(gw);
    return msg;
}

/* 16 listeners of 64 certificates each would be 1,024 references: the
 * Gateway is refused past 128 in all, with a message naming the limit;
 * at the limit the certificates are merely missing. */
static void test_certificate_bound(void)
{
    enum xlate_state st;
    char *reason;
    char *msg = bound_case(16, 64, &st, &reason);
    CHECK_INT_EQ(st, XLATE_REJECTED);
    CHECK_STR_EQ(reason, "InvalidSpec");
    CHECK(strstr(msg, "spec.listeners: the Gateway names 1024 certificates in all (spec.tls and "
                      "every listener's tls); at most 128") != NULL);
    free(msg);
    free(reason);
    msg = bound_case(3, 43, &st, &reason); /* 129 */
    CHECK_INT_EQ(st, XLATE_REJECTED);
    CHECK(strstr(msg, "names 129 certificates in all") != NULL);
    free(msg);
    free(reason);
    msg = bound_case(2, 64, &st, &reason); /* 128: not refused for the count */
    CHECK_INT_EQ(st, XLATE_REJECTED);
    CHECK_STR_EQ(reason, "SecretNotFound");
    CHECK(strstr(msg, "certificates in all") == NULL);
    CHECK(strstr(msg, "spec.listeners[0].tls.certificates[0].secretRef: Secret default/c0 not "
                      "found") != NULL);
    free(msg);
    free(reason);
    msg = bound_case(1, 65, &st, &reason); /* a block's own bound */
    CHECK_INT_EQ(st, XLATE_REJECTED);
    CHECK(strstr(msg, "spec.listeners[0].tls.certificates: ") != NULL);
    free(msg);
    free(reason);
}

static const struct cxt_case cases[] = {
    CXT(test_two_listeners_bytes),
    CXT(test_groups_get_their_secrets),
    CXT(test_listener_secret_change),
    CXT(test_certificate_bound),
};
CXT_MAIN(cases)
