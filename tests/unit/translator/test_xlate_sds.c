/* SDS: the Secret resources and the TLS contexts that name them.
 *
 * No Envoy binary runs here, so our .proto subset is checked field by field
 * against Envoy's API (envoy/extensions/transport_sockets/tls/v3/secret.proto,
 * tls.proto and envoy/config/core/v3/config_source.proto, envoyproxy/envoy
 * main): every field the translator writes for SDS has Envoy's number, type
 * and label, and its message the full name Envoy's type URL names. A wrong
 * number here would make Envoy read our bytes as another field. */
#include "cxtest.h"
#include "xlate_encode.h"
#include "xlate_snapshot.h"

#include "envoy/config/cluster/v3/cluster.pb-c.h"
#include "envoy/config/core/v3/config_source.pb-c.h"
#include "envoy/config/listener/v3/listener.pb-c.h"
#include "envoy/extensions/transport_sockets/tls/v3/secret.pb-c.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.pb-c.h"

#include <stdlib.h>
#include <string.h>

typedef Envoy__Extensions__TransportSockets__Tls__V3__Secret Secret;
typedef Envoy__Extensions__TransportSockets__Tls__V3__CommonTlsContext CommonTlsContext;
typedef Envoy__Extensions__TransportSockets__Tls__V3__SdsSecretConfig SdsSecretConfig;

/* One field as Envoy's API declares it. |msg| is the field's message type
 * (full name) for message fields, NULL otherwise. */
struct envoy_field {
    const ProtobufCMessageDescriptor *in;
    const char *name;
    unsigned number;
    ProtobufCType type;
    ProtobufCLabel label; /* proto3 singular fields: NONE; repeated: REPEATED */
    const char *msg;
};

#define TLS(x)     envoy__extensions__transport_sockets__tls__v3__##x##__descriptor
#define SECRET_MSG "envoy.extensions.transport_sockets.tls.v3.Secret"
#define SDS_MSG    "envoy.extensions.transport_sockets.tls.v3.SdsSecretConfig"
#define CVC_MSG    "envoy.extensions.transport_sockets.tls.v3.CertificateValidationContext"

static void test_fields_match_envoy(void)
{
    const struct envoy_field want[] = {
        /* secret.proto: message SdsSecretConfig */
        {&TLS(sds_secret_config), "name", 1, PROTOBUF_C_TYPE_STRING, PROTOBUF_C_LABEL_NONE, NULL},
        {&TLS(sds_secret_config), "sds_config", 2, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE,
         "envoy.config.core.v3.ConfigSource"},
        /* secret.proto: message Secret, oneof type */
        {&TLS(secret), "name", 1, PROTOBUF_C_TYPE_STRING, PROTOBUF_C_LABEL_NONE, NULL},
        {&TLS(secret), "tls_certificate", 2, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE,
         "envoy.extensions.transport_sockets.tls.v3.TlsCertificate"},
        {&TLS(secret), "validation_context", 4, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE,
         CVC_MSG},
        /* tls.proto: message CommonTlsContext */
        {&TLS(common_tls_context), "tls_certificates", 2, PROTOBUF_C_TYPE_MESSAGE,
         PROTOBUF_C_LABEL_REPEATED, "envoy.extensions.transport_sockets.tls.v3.TlsCertificate"},
        {&TLS(common_tls_context), "tls_certificate_sds_secret_configs", 6, PROTOBUF_C_TYPE_MESSAGE,
         PROTOBUF_C_LABEL_REPEATED, SDS_MSG},
        {&TLS(common_tls_context), "validation_context", 3, PROTOBUF_C_TYPE_MESSAGE,
         PROTOBUF_C_LABEL_NONE, CVC_MSG},
        {&TLS(common_tls_context), "validation_context_sds_secret_config", 7,
         PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE, SDS_MSG},
        {&TLS(common_tls_context), "combined_validation_context", 8, PROTOBUF_C_TYPE_MESSAGE,
         PROTOBUF_C_LABEL_NONE,
         "envoy.extensions.transport_sockets.tls.v3.CommonTlsContext."
         "CombinedCertificateValidationContext"},
        {&TLS(common_tls_context), "alpn_protocols", 4, PROTOBUF_C_TYPE_STRING,
         PROTOBUF_C_LABEL_REPEATED, NULL},
        /* tls.proto: CommonTlsContext.CombinedCertificateValidationContext */
        {&TLS(common_tls_context__combined_certificate_validation_context),
         "default_validation_context", 1, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE, CVC_MSG},
        {&TLS(common_tls_context__combined_certificate_validation_context),
         "validation_context_sds_secret_config", 2, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE,
         SDS_MSG},
        /* common.proto: TlsCertificate, CertificateValidationContext */
        {&TLS(tls_certificate), "certificate_chain", 1, PROTOBUF_C_TYPE_MESSAGE,
         PROTOBUF_C_LABEL_NONE, "envoy.config.core.v3.DataSource"},
        {&TLS(tls_certificate), "private_key", 2, PROTOBUF_C_TYPE_MESSAGE, PROTOBUF_C_LABEL_NONE,
         "envoy.config.core.v3.DataSource"},
        {&TLS(certificate_validation_context), "trusted_ca", 1, PROTOBUF_C_TYPE_MESSAGE,
         PROTOBUF_C_LABEL_NONE, "envoy.config.core.v3.DataSource"},
        /* config_source.proto: ConfigSource.ads (oneof), resource_api_version */
        {&envoy__config__core__v3__config_source__descriptor, "ads", 3, PROTOBUF_C_TYPE_MESSAGE,
         PROTOBUF_C_LABEL_NONE, "envoy.config.core.v3.AggregatedConfigSource"},
        {&envoy__config__core__v3__config_source__descriptor, "resource_api_version", 6,
         PROTOBUF_C_TYPE_ENUM, PROTOBUF_C_LABEL_NONE, NULL},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const struct envoy_field *w = &want[i];
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field_by_name(w->in, w->name);
        CHECK_STR_EQ(f ? f->name : "(none)", w->name);
        if (!f)
            continue;
        CHECK_INT_EQ(f->id, w->number);
        CHECK_INT_EQ(f->type, w->type);
        CHECK_INT_EQ(f->label, w->label);
        if (w->msg) {
            REQUIRE(f->descriptor);
            CHECK_STR_EQ(((const ProtobufCMessageDescriptor *)f->descriptor)->name, w->msg);
        }
        /* and the number names that field, not another */
        const ProtobufCFieldDescriptor *byn =
            protobuf_c_message_descriptor_get_field(w->in, w->number);
        CHECK(byn == f);
    }
    /* the type URL the server answers with names the Secret message */
    CHECK_STR_EQ(XDS_TYPE_URL_SECRET, "type.googleapis.com/" SECRET_MSG);
    CHECK_STR_EQ(TLS(secret).name, SECRET_MSG);
    CHECK_STR_EQ(xlate_type_url(XDS_SECRET), XDS_TYPE_URL_SECRET);
    CHECK_INT_EQ(xlate_type_from_url(XDS_TYPE_URL_SECRET), XDS_SECRET);
    CHECK_STR_EQ(xlate_type_short(XDS_SECRET), "SDS");
    /* the validation contexts are one oneof, as in Envoy */
    const ProtobufCFieldDescriptor *a =
        protobuf_c_message_descriptor_get_field(&TLS(common_tls_context), 3);
    const ProtobufCFieldDescriptor *b =
        protobuf_c_message_descriptor_get_field(&TLS(common_tls_context), 7);
    const ProtobufCFieldDescriptor *c =
        protobuf_c_message_descriptor_get_field(&TLS(common_tls_context), 8);
    REQUIRE(a && b && c);
    CHECK(a->flags & PROTOBUF_C_FIELD_FLAG_ONEOF);
    CHECK(a->quantifier_offset == b->quantifier_offset &&
          b->quantifier_offset == c->quantifier_offset);
}

static const char CRT[] = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
static const char KEY[] = "-----BEGIN PRIVATE KEY-----\nBBBB\n-----END PRIVATE KEY-----\n";

static void test_secret_resources(void)
{
    char name[XL_SDS_NAME_MAX];
    xlate_sds_cert_name("prod", "www-tls", name, sizeof(name));
    CHECK_STR_EQ(name, "secret:prod/www-tls");
    uint8_t *b = NULL;
    size_t len = 0;
    REQUIRE_INT_EQ(xlate_encode_secret_cert(name, (const uint8_t *)CRT, strlen(CRT),
                                            (const uint8_t *)KEY, strlen(KEY), &b, &len),
                   0);
    Secret *s = envoy__extensions__transport_sockets__tls__v3__secret__unpack(NULL, len, b);
    REQUIRE(s);
    CHECK_STR_EQ(s->name, "secret:prod/www-tls");
    REQUIRE_INT_EQ(s->type_case,
                   ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SECRET__TYPE_TLS_CERTIFICATE);
    REQUIRE(s->tls_certificate->certificate_chain && s->tls_certificate->private_key);
    CHECK_STR_EQ(s->tls_certificate->certificate_chain->inline_string, CRT);
    /* the key as bytes: what the renderings redact */
    CHECK_INT_EQ(s->tls_certificate->private_key->specifier_case,
                 ENVOY__CONFIG__CORE__V3__DATA_SOURCE__SPECIFIER_INLINE_BYTES);
    CHECK_INT_EQ(s->tls_certificate->private_key->inline_bytes.len, strlen(KEY));
    CHECK(memcmp(s->tls_certificate->private_key->inline_bytes.data, KEY, strlen(KEY)) == 0);
    protobuf_c_message_free_unpacked(&s->base, NULL);
    free(b);

    xlate_sds_ca_name("prod", "ca", "ca.crt", name, sizeof(name));
    CHECK_STR_EQ(name, "configmap:prod/ca/ca.crt");
    REQUIRE_INT_EQ(xlate_encode_secret_ca(name, CRT, strlen(CRT), &b, &len), 0);
    s = envoy__extensions__transport_sockets__tls__v3__secret__unpack(NULL, len, b);
    REQUIRE(s);
    CHECK_STR_EQ(s->name, "configmap:prod/ca/ca.crt");
    REQUIRE_INT_EQ(s->type_case,
                   ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__SECRET__TYPE_VALIDATION_CONTEXT);
    CHECK_STR_EQ(s->validation_context->trusted_ca->inline_string, CRT);
    protobuf_c_message_free_unpacked(&s->base, NULL);
    free(b);
}

/* An SdsSecretConfig naming |name| over ADS. */
static void check_sds(const SdsSecretConfig *c, const char *name)
{
    REQUIRE(c);
    CHECK_STR_EQ(c->name, name);
    REQUIRE(c->sds_config);
    CHECK_INT_EQ(c->sds_config->config_source_specifier_case,
                 ENVOY__CONFIG__CORE__V3__CONFIG_SOURCE__CONFIG_SOURCE_SPECIFIER_ADS);
    CHECK_INT_EQ(c->sds_config->resource_api_version, ENVOY__CONFIG__CORE__V3__API_VERSION__V3);
}

static void test_listener_names_secrets(void)
{
    char *names[] = {"www.example.com"};
    char *alpn[] = {"h2"};
    const struct xl_tls_chain chains[] = {
        {.name = "prod/www",
         .server_names = names,
         .nserver_names = 1,
         .secret = "secret:prod/www"},
    };
    const struct xl_tls_chain dflt = {.name = "default", .secret = "secret:prod/www"};
    const struct xl_downstream_tls dt = {.min_version = XL_TLS_1_2,
                                         .alpn = alpn,
                                         .nalpn = 1,
                                         .client_ca = "configmap:prod/ca/ca.crt",
                                         .require_client_cert = 1};
    uint8_t *b = NULL;
    size_t len = 0;
    REQUIRE_INT_EQ(xlate_encode_listener_envoy_tls("prod/gw", "0.0.0.0", 8443, "prod/gw", "prod_gw",
                                                   &dt, chains, 1, &dflt, NULL, &b, &len),
                   0);
    CHECK(!memmem(b, len, "BEGIN", 5)); /* no PEM at all */
    Envoy__Config__Listener__V3__Listener *l =
        envoy__config__listener__v3__listener__unpack(NULL, len, b);
    REQUIRE(l && l->n_filter_chains == 1 && l->default_filter_chain);
    const Envoy__Config__Listener__V3__FilterChain *fcs[] = {l->filter_chains[0],
                                                             l->default_filter_chain};
    for (int i = 0; i < 2; i++) {
        const Envoy__Config__Core__V3__TransportSocket *ts = fcs[i]->transport_socket;
        REQUIRE(ts && ts->typed_config);
        CHECK_STR_EQ(ts->typed_config->type_url, XL_TYPE_URL_DOWNSTREAM_TLS);
        Envoy__Extensions__TransportSockets__Tls__V3__DownstreamTlsContext *d =
            envoy__extensions__transport_sockets__tls__v3__downstream_tls_context__unpack(
                NULL, ts->typed_config->value.len, ts->typed_config->value.data);
        REQUIRE(d && d->common_tls_context);
        const CommonTlsContext *c = d->common_tls_context;
        CHECK_INT_EQ(c->n_tls_certificates, 0);
        REQUIRE_INT_EQ(c->n_tls_certificate_sds_secret_configs, 1);
        check_sds(c->tls_certificate_sds_secret_configs[0], "secret:prod/www");
        REQUIRE_INT_EQ(
            c->validation_context_type_case,
            ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__VALIDATION_CONTEXT_TYPE_VALIDATION_CONTEXT_SDS_SECRET_CONFIG);
        check_sds(c->validation_context_sds_secret_config, "configmap:prod/ca/ca.crt");
        CHECK(d->require_client_certificate && d->require_client_certificate->value);
        protobuf_c_message_free_unpacked(&d->base, NULL);
    }
    protobuf_c_message_free_unpacked(&l->base, NULL);
    free(b);
}

static CommonTlsContext *
cluster_ctx(const struct xl_upstream_tls_enc *t, Envoy__Config__Cluster__V3__Cluster **cl,
            Envoy__Extensions__TransportSockets__Tls__V3__UpstreamTlsContext **u)
{
    uint8_t *b = NULL;
    size_t len = 0;
    if (xlate_encode_cluster_tls("prod/be", XL_LB_ROUND_ROBIN, 0, 0, t, &b, &len) != 0)
        return NULL;
    int pem = memmem(b, len, "BEGIN", 5) != NULL;
    *cl = envoy__config__cluster__v3__cluster__unpack(NULL, len, b);
    free(b);
    if (pem || !*cl || !(*cl)->transport_socket)
        return NULL;
    const Google__Protobuf__Any *any = (*cl)->transport_socket->typed_config;
    *u = envoy__extensions__transport_sockets__tls__v3__upstream_tls_context__unpack(
        NULL, any->value.len, any->value.data);
    return *u ? (*u)->common_tls_context : NULL;
}

static void test_cluster_names_secrets(void)
{
    char *sans[] = {"backend.internal"};
    Envoy__Config__Cluster__V3__Cluster *cl = NULL;
    Envoy__Extensions__TransportSockets__Tls__V3__UpstreamTlsContext *u = NULL;
    /* CA and client certificate, no names: plain SDS references */
    const struct xl_upstream_tls_enc a = {.sni = "backend.internal",
                                          .ca = "configmap:prod/ca/ca.crt",
                                          .client = "secret:prod/client"};
    CommonTlsContext *c = cluster_ctx(&a, &cl, &u);
    REQUIRE(c);
    REQUIRE_INT_EQ(c->n_tls_certificate_sds_secret_configs, 1);
    check_sds(c->tls_certificate_sds_secret_configs[0], "secret:prod/client");
    REQUIRE_INT_EQ(
        c->validation_context_type_case,
        ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__VALIDATION_CONTEXT_TYPE_VALIDATION_CONTEXT_SDS_SECRET_CONFIG);
    check_sds(c->validation_context_sds_secret_config, "configmap:prod/ca/ca.crt");
    CHECK_STR_EQ(u->sni, "backend.internal");
    protobuf_c_message_free_unpacked(&u->base, NULL);
    protobuf_c_message_free_unpacked(&cl->base, NULL);
    /* names to match: the CA from SDS combined with them inline */
    const struct xl_upstream_tls_enc b = {
        .ca = "configmap:prod/ca/ca.crt", .sans = sans, .nsans = 1};
    REQUIRE((c = cluster_ctx(&b, &cl, &u)));
    CHECK_INT_EQ(c->n_tls_certificate_sds_secret_configs, 0);
    REQUIRE_INT_EQ(
        c->validation_context_type_case,
        ENVOY__EXTENSIONS__TRANSPORT_SOCKETS__TLS__V3__COMMON_TLS_CONTEXT__VALIDATION_CONTEXT_TYPE_COMBINED_VALIDATION_CONTEXT);
    const Envoy__Extensions__TransportSockets__Tls__V3__CommonTlsContext__CombinedCertificateValidationContext
        *cvc = c->combined_validation_context;
    check_sds(cvc->validation_context_sds_secret_config, "configmap:prod/ca/ca.crt");
    REQUIRE(cvc->default_validation_context);
    CHECK(!cvc->default_validation_context->trusted_ca);
    REQUIRE_INT_EQ(cvc->default_validation_context->n_match_typed_subject_alt_names, 1);
    CHECK_STR_EQ(cvc->default_validation_context->match_typed_subject_alt_names[0]->matcher->exact,
                 "backend.internal");
    protobuf_c_message_free_unpacked(&u->base, NULL);
    protobuf_c_message_free_unpacked(&cl->base, NULL);
}

static const struct cxt_case cases[] = {
    CXT(test_fields_match_envoy),
    CXT(test_secret_resources),
    CXT(test_listener_names_secrets),
    CXT(test_cluster_names_secrets),
};
CXT_MAIN(cases)
