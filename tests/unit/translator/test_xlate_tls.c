/*
 * xlate_tls (certificates with OpenSSL, names, validity, references) and
 * the translator's TLS behaviour that goldens cannot show: what a Secret or
 * ConfigMap change rebuilds (and what it leaves alone), that the
 * evaluation time changes reports but never bytes, recheck_at, and that the
 * private key reaches the xDS bytes but not the JSON.
 */
#include "cx_buf.h"
#include "cx_json.h"
#include "xlate_pbjson.h"
#include "cx_yaml.h"
#include "cxtest.h"
#include "xlate.h"
#include "xlate_render.h"
#include "xlate_tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T2025 INT64_C(1735689600) /* 2025-01-01T00:00:00Z */

static char *file(const char *name, size_t *len)
{
    char rel[200];
    snprintf(rel, sizeof(rel), "tls/%s", name);
    char *d = cxt_read_file(cxt_data_path(rel), len);
    REQUIRE(d);
    return d;
}

static void test_names(void)
{
    CHECK_INT_EQ(xlate_tls_name_covers("www.example.com", "www.example.com"), 2);
    CHECK_INT_EQ(xlate_tls_name_covers("WWW.Example.com", "www.example.COM"), 2);
    CHECK_INT_EQ(xlate_tls_name_covers("*.example.com", "a.example.com"), 1);
    CHECK_INT_EQ(xlate_tls_name_covers("*.example.com", "example.com"), 0);
    CHECK_INT_EQ(xlate_tls_name_covers("*.example.com", "a.b.example.com"), 0);
    CHECK_INT_EQ(xlate_tls_name_covers("*.example.com", "*.example.com"), 2);
    CHECK_INT_EQ(xlate_tls_name_covers("*.example.com", "*.a.example.com"), 0);
    CHECK_INT_EQ(xlate_tls_name_covers("a.example.com", "*.example.com"), 0);
    CHECK_INT_EQ(xlate_tls_name_covers("*.example.com", ".example.com"), 0);
    CHECK_INT_EQ(xlate_tls_name_covers("*", "a"), 0);
    CHECK_INT_EQ(xlate_tls_name_covers("", "a"), 0);

    CHECK(xlate_tls_ref_allowed("a", "a", NULL));
    CHECK(!xlate_tls_ref_allowed("a", "b", NULL));
    CHECK(xlate_tls_ref_allowed("edge", "certs", "team-a, edge"));
    CHECK(xlate_tls_ref_allowed("edge", "certs", " *"));
    CHECK(!xlate_tls_ref_allowed("edge", "certs", "edges,edg,team"));
    CHECK(!xlate_tls_ref_allowed("edge", "certs", ""));
}

static struct xl_secret pair(struct xl_arena *a, const char *crt, const char *key)
{
    struct xl_secret s = {0};
    s.crt = (uint8_t *)file(crt, &s.crtlen);
    s.key = (uint8_t *)file(key, &s.keylen);
    REQUIRE_INT_EQ(xlate_tls_check_pair(a, &s), 0);
    return s;
}

static void drop(struct xl_secret *s)
{
    free(s->crt);
    free(s->key);
}

static void test_pairs(void)
{
    struct xl_arena a = {0};
    struct xl_secret s = pair(&a, "www.crt", "www.key");
    CHECK_INT_EQ(s.state, XL_SECRET_OK);
    CHECK(s.problem == NULL);
    CHECK_INT_EQ(s.cert.nchain, 1);
    REQUIRE_INT_EQ(s.cert.ndns, 2);
    CHECK_STR_EQ(s.cert.dns[0], "www.example.com");
    CHECK_STR_EQ(s.cert.dns[1], "example.com");
    CHECK_STR_EQ(s.cert.cn, "www.example.com");
    CHECK_INT_EQ(s.cert.not_before, 1704067200);  /* 2024-01-01 */
    CHECK_INT_EQ(s.cert.not_after, 4859740800LL); /* 2124-01-01 */
    CHECK_INT_EQ(xlate_tls_cert_covers(&s.cert, "example.com"), 2);
    CHECK_INT_EQ(xlate_tls_cert_covers(&s.cert, "api.example.com"), 0);
    char names[100];
    xlate_tls_names_str(&s.cert, names, sizeof(names));
    CHECK_STR_EQ(names, "www.example.com, example.com");
    drop(&s);

    s = pair(&a, "chain.crt", "www.key"); /* leaf first, then the CA */
    CHECK_INT_EQ(s.state, XL_SECRET_OK);
    CHECK_INT_EQ(s.cert.nchain, 2);
    drop(&s);

    s = pair(&a, "www.crt", "other.key");
    CHECK_INT_EQ(s.state, XL_SECRET_KEY_MISMATCH);
    CHECK(s.problem && strstr(s.problem, "does not match"));
    drop(&s);

    s = pair(&a, "chain.crt", "ca.key"); /* the key of the second certificate */
    CHECK_INT_EQ(s.state, XL_SECRET_KEY_MISMATCH);
    drop(&s);

    s = pair(&a, "www.key", "www.key"); /* a combined PEM in tls.crt */
    CHECK_INT_EQ(s.state, XL_SECRET_BAD_PEM);
    CHECK(s.problem && strstr(s.problem, "\"PRIVATE KEY\""));
    drop(&s);

    s = pair(&a, "www.crt", "www.crt");
    CHECK_INT_EQ(s.state, XL_SECRET_BAD_PEM);
    CHECK_STR_EQ(s.problem, "tls.key holds a certificate, not a private key");
    drop(&s);

    /* an encrypted key is refused, never prompted for */
    struct xl_secret e = {0};
    e.crt = (uint8_t *)file("www.crt", &e.crtlen);
    static const char enc[] = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n"
                              "-----END ENCRYPTED PRIVATE KEY-----\n";
    e.key = (uint8_t *)enc;
    e.keylen = sizeof(enc) - 1;
    REQUIRE_INT_EQ(xlate_tls_check_pair(&a, &e), 0);
    CHECK_INT_EQ(e.state, XL_SECRET_BAD_PEM);
    CHECK(e.problem && strstr(e.problem, "encrypted"));
    free(e.crt);

    s = pair(&a, "shop.crt", "shop.key");
    CHECK_INT_EQ(xlate_tls_cert_covers(&s.cert, "a.shop.example.com"), 1);
    CHECK_INT_EQ(xlate_tls_cert_covers(&s.cert, "*.shop.example.com"), 2);
    CHECK_INT_EQ(xlate_tls_cert_covers(&s.cert, "shop.example.com"), 0);
    drop(&s);
    xlate_arena_free(&a);
}

static void test_validity(void)
{
    struct xl_arena a = {0};
    struct xl_secret old = pair(&a, "expired.crt", "expired.key");
    struct xl_secret fut = pair(&a, "future.crt", "future.key");
    CHECK_INT_EQ(old.state, XL_SECRET_OK);
    CHECK_INT_EQ(xlate_tls_phase(&old.cert, T2025), XL_CERT_EXPIRED);
    CHECK_INT_EQ(xlate_tls_phase(&old.cert, old.cert.not_after), XL_CERT_VALID);
    CHECK_INT_EQ(xlate_tls_phase(&old.cert, old.cert.not_after + 1), XL_CERT_EXPIRED);
    CHECK_INT_EQ(xlate_tls_phase(&old.cert, 0), XL_CERT_VALID); /* not checked */
    CHECK_INT_EQ(xlate_tls_phase(&fut.cert, T2025), XL_CERT_NOT_YET_VALID);
    CHECK_INT_EQ(xlate_tls_next_change(&fut.cert, T2025), fut.cert.not_before);
    CHECK_INT_EQ(xlate_tls_next_change(&old.cert, T2025), 0);
    CHECK_INT_EQ(xlate_tls_next_change(&old.cert, old.cert.not_before), old.cert.not_after + 1);
    char t[40];
    xlate_tls_time_str(old.cert.not_after, t, sizeof(t));
    CHECK_STR_EQ(t, "2001-01-01T00:00:00Z");
    drop(&old);
    drop(&fut);
    xlate_arena_free(&a);
}

static void test_ca_bundles(void)
{
    size_t len;
    char msg[300];
    char *ca = file("chain.crt", &len);
    CHECK_INT_EQ(xlate_tls_check_ca(ca, len, msg, sizeof(msg)), 2);
    free(ca);
    CHECK_INT_EQ(xlate_tls_check_ca("", 0, msg, sizeof(msg)), 0);
    CHECK_STR_EQ(msg, "holds no PEM certificate");
    char *key = file("ca.key", &len);
    CHECK_INT_EQ(xlate_tls_check_ca(key, len, msg, sizeof(msg)), 0);
    CHECK(strstr(msg, "PRIVATE KEY") != NULL);
    free(key);
    static const char bad[] = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    CHECK_INT_EQ(xlate_tls_check_ca(bad, sizeof(bad) - 1, msg, sizeof(msg)), 0);
    CHECK(strstr(msg, "not a valid PEM") != NULL);
}

/* ---- the translator ------------------------------------------------------------ */

static char *b64(const char *name)
{
    char rel[200];
    snprintf(rel, sizeof(rel), "tls/%s", name);
    char *out = cxt_read_file_b64(cxt_data_path(rel));
    REQUIRE(out);
    return out;
}

static cJSON *secret_obj(const char *name, const char *crt, const char *key)
{
    char *c = b64(crt), *k = b64(key);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    cJSON_AddStringToObject(o, "kind", "Secret");
    cJSON *md = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", "default");
    cJSON_AddStringToObject(o, "type", "kubernetes.io/tls");
    cJSON *data = cJSON_AddObjectToObject(o, "data");
    cJSON_AddStringToObject(data, "tls.crt", c);
    cJSON_AddStringToObject(data, "tls.key", k);
    free(c);
    free(k);
    return o;
}

static cJSON *ca_obj(const char *name, const char *pemfile)
{
    char *pem = file(pemfile, NULL);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    cJSON_AddStringToObject(o, "kind", "ConfigMap");
    cJSON *md = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", "default");
    cJSON *data = cJSON_AddObjectToObject(o, "data");
    cJSON_AddStringToObject(data, "ca.crt", pem);
    free(pem);
    return o;
}

static const char *WORLD =
    "apiVersion: coxswain.dev/v1\nkind: Gateway\nmetadata: {name: gw, namespace: default}\n"
    "spec: {bindPort: 8443, tls: {certificates: [{secretRef: {name: www}}, "
    "{secretRef: {name: future}}]}}\n---\n"
    "apiVersion: coxswain.dev/v1\nkind: VirtualService\nmetadata: {name: www, namespace: default}\n"
    "spec: {domains: [www.example.com, future.example.com], routes: [{upstream: {name: be}}]}\n"
    "---\n"
    "apiVersion: coxswain.dev/v1\nkind: Upstream\nmetadata: {name: be, namespace: default}\n"
    "spec: {static: {hosts: [{address: 10.0.0.1, port: 443}]},\n"
    "       tls: {sni: backend.internal, caConfigMapRef: {name: ca}}}\n---\n"
    "apiVersion: coxswain.dev/v1\nkind: Upstream\nmetadata: {name: plain, namespace: default}\n"
    "spec: {static: {hosts: [{address: 10.0.0.2, port: 80}]}}\n";

struct world {
    cJSON *docs;
    cJSON *extra[4];
    struct xlate_object in[16];
    size_t n;
};

static void world_load(struct world *w)
{
    char err[200];
    w->docs = cx_yaml_parse(WORLD, strlen(WORLD), err, sizeof(err));
    REQUIRE(w->docs);
    w->n = 0;
    cJSON *d;
    cJSON_ArrayForEach(d, w->docs)
    {
        w->in[w->n++] = (struct xlate_object){.kind = XLATE_KIND_UNKNOWN, .obj = d};
    }
    w->extra[0] = secret_obj("www", "www.crt", "www.key");
    w->extra[1] = secret_obj("future", "future.crt", "future.key");
    w->extra[2] = ca_obj("ca", "ca.crt");
    w->extra[3] = secret_obj("unrelated", "shop.crt", "shop.key");
    for (int i = 0; i < 4; i++)
        w->in[w->n++] = (struct xlate_object){.kind = XLATE_KIND_UNKNOWN, .obj = w->extra[i]};
}

static void world_free(struct world *w)
{
    for (int i = 0; i < 4; i++)
        cJSON_Delete(w->extra[i]);
    cJSON_Delete(w->docs);
}

static struct xds_resource *find(const struct xlate_snapshot *s, enum xds_type t, const char *name)
{
    const struct xlate_group *g = xlate_snapshot_group(s, "default/gw");
    return g ? xlate_resource_set_find(&g->types[t], name) : NULL;
}

static const struct xlate_report *report(const struct xlate_snapshot *s, const char *kind,
                                         const char *name)
{
    for (size_t i = 0; i < s->nreports; i++)
        if (!strcmp(s->reports[i].kind, kind) && !strcmp(s->reports[i].name, name))
            return &s->reports[i];
    return NULL;
}

static int contains(const struct xds_resource *r, const char *needle, size_t n)
{
    return r && memmem(r->bytes, r->len, needle, n) != NULL;
}

static void test_changes_rebuild_what_depends(void)
{
    struct world w;
    world_load(&w);
    struct xlate_ctx *ctx = xlate_ctx_new();
    struct xlate_snapshot *s1 = NULL, *s2 = NULL, *s3 = NULL, *s4 = NULL, *s5 = NULL;
    struct xlate_stats st;
    REQUIRE_INT_EQ(xlate_run(ctx, &(struct xlate_input){w.in, w.n, T2025}, &s1, &st), 0);
    REQUIRE(find(s1, XDS_LISTENER, "default/gw"));
    /* the key is in the bytes Envoy gets, in the SDS Secret the Listener
     * names, never in the Listener itself... */
    size_t klen;
    char *key = file("www.key", &klen);
    CHECK(!contains(find(s1, XDS_LISTENER, "default/gw"), key, klen));
    CHECK(contains(find(s1, XDS_LISTENER, "default/gw"), "secret:default/www", 18));
    CHECK(contains(find(s1, XDS_LISTENER, "default/gw"), "secret:default/future", 21));
    CHECK(contains(find(s1, XDS_SECRET, "secret:default/www"), key, klen));
    /* the Upstream's CA too: by name in the Cluster, the PEM in the Secret */
    size_t calen;
    char *ca = file("ca.crt", &calen);
    CHECK(!contains(find(s1, XDS_CLUSTER, "default/be"), ca, calen));
    CHECK(contains(find(s1, XDS_CLUSTER, "default/be"), "configmap:default/ca/ca.crt", 27));
    CHECK(contains(find(s1, XDS_SECRET, "configmap:default/ca/ca.crt"), ca, calen));
    /* exactly the Secrets it references: not "unrelated" */
    const struct xlate_group *g1 = xlate_snapshot_group(s1, "default/gw");
    REQUIRE(g1);
    CHECK_INT_EQ(g1->types[XDS_SECRET].n, 3);
    CHECK(!find(s1, XDS_SECRET, "secret:default/unrelated"));
    for (int t = 0; t < XDS_SECRET; t++)
        for (size_t i = 0; i < g1->types[t].n; i++)
            CHECK(!contains(g1->types[t].items[i], "PRIVATE KEY", 11));
    /* ...and nowhere in the JSON, unless asked */
    struct cx_buf b;
    cx_buf_init(&b, 0);
    REQUIRE_INT_EQ(xlate_render_groups(s1, 0, &b), 0);
    char *line = strchr(key, '\n') + 1; /* the first line of base64 DER */
    char frag[41];
    snprintf(frag, sizeof(frag), "%.40s", line);
    CHECK(b.data && !strstr(b.data, frag));
    CHECK(b.data && strstr(b.data, "\"privateKey\": {\n") && strstr(b.data, "[redacted]"));
    CHECK(b.data && strstr(b.data, "\"secrets\": {") &&
          strstr(b.data, "\"tlsCertificateSdsSecretConfigs\": ["));
    cx_buf_free(&b);
    cx_buf_init(&b, 0);
    REQUIRE_INT_EQ(xlate_render_groups_flags(s1, 0, XLATE_PBJSON_SHOW_SECRETS, &b), 0);
    CHECK(b.data && !strstr(b.data, "[redacted]"));
    cx_buf_free(&b);
    /* future.example.com is covered by the not-yet-valid certificate: the
     * Gateway warns; recheck_at is the first boundary: the end of www's
     * validity */
    const struct xlate_report *gr = report(s1, "Gateway", "gw");
    REQUIRE(gr);
    CHECK_INT_EQ(gr->state, XLATE_WARNING);
    CHECK_STR_EQ(gr->reason, "CertificateNotYetValid");
    CHECK_INT_EQ(s1->recheck_at, INT64_C(4859740801)); /* 2124-01-01 + 1 s */

    /* an unrelated Secret rotates: nothing is rebuilt, no report changes */
    cJSON *u2 = secret_obj("unrelated", "www-rotated.crt", "www-rotated.key");
    struct xlate_change c = {.kind = XLATE_KIND_SECRET, .obj = u2};
    REQUIRE_INT_EQ(xlate_run_changes(ctx, &c, 1, &s2, &st), 0);
    CHECK_INT_EQ(st.parsed, 1);
    CHECK_INT_EQ(st.resources_built, 0);
    CHECK_INT_EQ(st.vhosts_built, 0);
    CHECK_STR_EQ(s1->version, s2->version);
    CHECK(s1->report_block == s2->report_block);

    /* www rotates: its SDS Secret alone changes; the Listener keeps its
     * bytes, pointer and version (Envoy does not drain it) */
    cJSON *www2 = secret_obj("www", "www-rotated.crt", "www-rotated.key");
    c = (struct xlate_change){.kind = XLATE_KIND_SECRET, .obj = www2};
    REQUIRE_INT_EQ(xlate_run_changes(ctx, &c, 1, &s3, &st), 0);
    CHECK_INT_EQ(st.vhosts_built, 0);
    CHECK_INT_EQ(st.resources_built, 1);
    const struct xlate_group *g2 = xlate_snapshot_group(s2, "default/gw");
    const struct xlate_group *g3 = xlate_snapshot_group(s3, "default/gw");
    REQUIRE(g2 && g3);
    CHECK(find(s2, XDS_LISTENER, "default/gw") == find(s3, XDS_LISTENER, "default/gw"));
    CHECK_STR_EQ(g2->types[XDS_LISTENER].version, g3->types[XDS_LISTENER].version);
    for (int t = 0; t < XDS_SECRET; t++)
        CHECK_STR_EQ(g2->types[t].version, g3->types[t].version);
    CHECK(strcmp(g2->types[XDS_SECRET].version, g3->types[XDS_SECRET].version) != 0);
    struct xds_resource *w2 = find(s2, XDS_SECRET, "secret:default/www");
    struct xds_resource *w3 = find(s3, XDS_SECRET, "secret:default/www");
    REQUIRE(w2 && w3);
    CHECK(strcmp(w2->version, w3->version) != 0);
    CHECK(find(s2, XDS_SECRET, "secret:default/future") ==
          find(s3, XDS_SECRET, "secret:default/future"));
    CHECK(find(s2, XDS_ROUTE, "default/gw") == find(s3, XDS_ROUTE, "default/gw"));
    CHECK(find(s2, XDS_CLUSTER, "default/be") == find(s3, XDS_CLUSTER, "default/be"));
    size_t rlen;
    char *rkey = file("www-rotated.key", &rlen);
    CHECK(contains(w3, rkey, rlen));
    CHECK(!contains(w3, key, klen));
    CHECK(strcmp(s2->version, s3->version) != 0);

    /* the CA ConfigMap changes: its SDS Secret alone; the Cluster stays */
    cJSON *ca2 = ca_obj("ca", "chain.crt");
    c = (struct xlate_change){.kind = XLATE_KIND_CONFIG_MAP, .obj = ca2};
    REQUIRE_INT_EQ(xlate_run_changes(ctx, &c, 1, &s4, &st), 0);
    CHECK_INT_EQ(st.resources_built, 1);
    CHECK(find(s3, XDS_CLUSTER, "default/be") == find(s4, XDS_CLUSTER, "default/be"));
    CHECK(find(s3, XDS_SECRET, "configmap:default/ca/ca.crt") !=
          find(s4, XDS_SECRET, "configmap:default/ca/ca.crt"));
    size_t chlen;
    char *chain = file("chain.crt", &chlen);
    CHECK(contains(find(s4, XDS_SECRET, "configmap:default/ca/ca.crt"), chain, chlen));
    CHECK(find(s3, XDS_LISTENER, "default/gw") == find(s4, XDS_LISTENER, "default/gw"));
    CHECK(find(s3, XDS_ENDPOINT, "default/be") == find(s4, XDS_ENDPOINT, "default/be"));

    /* time passes both boundaries (2200): future is valid, www expired;
     * the reports change, no byte and no version does */
    REQUIRE_INT_EQ(xlate_run_changes_at(ctx, NULL, 0, INT64_C(7258118400), &s5, &st), 0);
    CHECK_INT_EQ(st.resources_built, 0);
    CHECK_STR_EQ(s4->version, s5->version);
    gr = report(s5, "Gateway", "gw");
    REQUIRE(gr);
    CHECK_INT_EQ(gr->state, XLATE_WARNING);
    CHECK_STR_EQ(gr->reason, "CertificateExpired");
    CHECK(strstr(gr->message, "Secret default/www expired") && !strstr(gr->message, "future"));
    CHECK_INT_EQ(s5->recheck_at, INT64_C(7289654401)); /* 2201-01-01 + 1 s */

    /* the CA ConfigMap goes: the Upstream is rejected, the route with it */
    struct xlate_snapshot *s6 = NULL;
    c = (struct xlate_change){.kind = XLATE_KIND_CONFIG_MAP, .namespace = "default", .name = "ca"};
    REQUIRE_INT_EQ(xlate_run_changes(ctx, &c, 1, &s6, &st), 0);
    const struct xlate_report *ur = report(s6, "Upstream", "be");
    REQUIRE(ur);
    CHECK_INT_EQ(ur->state, XLATE_REJECTED);
    CHECK_STR_EQ(ur->reason, "ConfigMapNotFound");
    CHECK(find(s6, XDS_CLUSTER, "default/be") == NULL);
    /* ...and the Secret only it named leaves the group */
    CHECK(find(s6, XDS_SECRET, "configmap:default/ca/ca.crt") == NULL);
    CHECK(find(s6, XDS_SECRET, "secret:default/www") != NULL);

    xlate_snapshot_unref(s1);
    xlate_snapshot_unref(s2);
    xlate_snapshot_unref(s3);
    xlate_snapshot_unref(s4);
    xlate_snapshot_unref(s5);
    xlate_snapshot_unref(s6);
    xlate_ctx_free(ctx);
    cJSON_Delete(u2);
    cJSON_Delete(www2);
    cJSON_Delete(ca2);
    free(key);
    free(rkey);
    free(ca);
    free(chain);
    world_free(&w);
}

/* Replicas whose clocks differ by a year serve the same bytes. */
static void test_time_never_changes_bytes(void)
{
    struct world w;
    world_load(&w);
    static const int64_t nows[] = {0, T2025, INT64_C(7258118400), INT64_C(9999999999)};
    char first[XDS_VERSION_LEN + 1] = "";
    for (size_t i = 0; i < sizeof(nows) / sizeof(nows[0]); i++) {
        struct xlate_ctx *ctx = xlate_ctx_new();
        struct xlate_snapshot *s = NULL;
        REQUIRE_INT_EQ(xlate_run(ctx, &(struct xlate_input){w.in, w.n, nows[i]}, &s, NULL), 0);
        if (!first[0])
            memcpy(first, s->version, sizeof(first));
        CHECK_STR_EQ(s->version, first);
        xlate_snapshot_unref(s);
        xlate_ctx_free(ctx);
    }
    world_free(&w);
}

static const struct cxt_case cases[] = {
    CXT(test_names),
    CXT(test_pairs),
    CXT(test_validity),
    CXT(test_ca_bundles),
    CXT(test_changes_rebuild_what_depends),
    CXT(test_time_never_changes_bytes),
};
CXT_MAIN(cases)
