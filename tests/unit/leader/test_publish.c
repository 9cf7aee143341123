/* publish: names, group versions, the gzip+base64 encoding (decoded back
 * and compared with the rendered JSON; truncated when it does not fit),
 * and against kubesim: create, update only on version change, delete of a
 * Gateway's ProxySnapshot when it leaves, nothing while standby or refused
 * by the guard, and the consistency gauge of a standby. */
#include "cx_metrics.h"
#include "daemon_test.h"
#include "publish.h"
#include "xlate.h"
#include "xlate_render.h"
#include "xlate_snapshot.h"

#include <openssl/evp.h>
#include <zlib.h>

#define NS "cp"

static struct event_base *base;
static struct cx_kubesim ks;
static struct kube_client *kc;
static struct kube_informer *inf;
static struct publish *leader, *standby;
static int guard_open = 1;

static struct xlate_snapshot *snapshot_of(int ngw, const char *host)
{
    struct xlate_ctx *ctx = xlate_ctx_new();
    cJSON *objs[8];
    struct xlate_object in[8];
    size_t n = 0;
    char buf[512];
    for (int i = 0; i < ngw; i++) {
        snprintf(buf, sizeof(buf),
                 "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Gateway\",\"metadata\":"
                 "{\"namespace\":\"app\",\"name\":\"gw%d\"},\"spec\":{\"mode\":\"proxyless\"}}",
                 i);
        objs[n] = cx_json_parse(buf, strlen(buf));
        in[n] = (struct xlate_object){.kind = XLATE_KIND_GATEWAY, .obj = objs[n]};
        n++;
    }
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Upstream\",\"metadata\":{"
             "\"namespace\":\"app\",\"name\":\"up\"},\"spec\":{\"static\":{\"hosts\":[{"
             "\"address\":\"%s\",\"port\":80}]}}}",
             host);
    objs[n] = cx_json_parse(buf, strlen(buf));
    in[n] = (struct xlate_object){.kind = XLATE_KIND_UPSTREAM, .obj = objs[n]};
    n++;
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\",\"metadata\":{"
             "\"namespace\":\"app\",\"name\":\"vs\"},\"spec\":{\"domains\":[\"svc.test\"],"
             "\"routes\":[{\"match\":{\"prefix\":\"/\"},\"upstream\":{\"name\":\"up\"}}]}}");
    objs[n] = cx_json_parse(buf, strlen(buf));
    in[n] = (struct xlate_object){.kind = XLATE_KIND_VIRTUAL_SERVICE, .obj = objs[n]};
    n++;
    struct xlate_input input = {.objects = in, .n = n};
    struct xlate_snapshot *s = NULL;
    if (xlate_run(ctx, &input, &s, NULL) != 0)
        s = NULL;
    for (size_t i = 0; i < n; i++)
        cJSON_Delete(objs[i]);
    xlate_ctx_free(ctx);
    return s;
}

static void test_names(void)
{
    char out[64];
    CHECK_INT_EQ(publish_name("ns/gw", out, sizeof(out)), 0);
    CHECK_STR_EQ(out, "ns.gw");
    CHECK_INT_EQ(publish_name("ns/a.b", out, sizeof(out)), 0);
    CHECK_STR_EQ(out, "ns.a.b");
    CHECK_INT_EQ(publish_name("nsgw", out, sizeof(out)), -1);
    CHECK_INT_EQ(publish_name("/gw", out, sizeof(out)), -1);
    CHECK_INT_EQ(publish_name("ns/", out, sizeof(out)), -1);
    CHECK_INT_EQ(publish_name("a/b/c", out, sizeof(out)), -1);
    CHECK_INT_EQ(publish_name("ns/gw", out, 5), -1); /* does not fit */
}

static char *gunzip_b64(const char *b64, size_t *outlen)
{
    size_t n = strlen(b64);
    unsigned char *raw = malloc(n);
    int len = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)n);
    if (len < 0) {
        free(raw);
        return NULL;
    }
    while (n > 0 && b64[n - 1] == '=') { /* EVP_DecodeBlock counts padding */
        len--;
        n--;
    }
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    inflateInit2(&zs, 15 + 16);
    size_t cap = 8 << 20;
    char *out = malloc(cap);
    zs.next_in = raw;
    zs.avail_in = (uInt)len;
    zs.next_out = (Bytef *)out;
    zs.avail_out = (uInt)cap;
    int rc = inflate(&zs, Z_FINISH);
    *outlen = zs.total_out;
    inflateEnd(&zs);
    free(raw);
    if (rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}

static void test_encode_roundtrip_and_truncation(void)
{
    struct xlate_snapshot *s = snapshot_of(1, "10.0.0.1");
    REQUIRE(s != NULL);
    REQUIRE_INT_EQ(s->ngroups, 1);
    const struct xlate_group *g = &s->groups[0];
    char *b64 = NULL;
    int trunc = -1;
    size_t jb = 0;
    REQUIRE_INT_EQ(publish_encode(g, 512 * 1024, &b64, &trunc, &jb), 0);
    REQUIRE(b64 != NULL);
    CHECK_INT_EQ(trunc, 0);
    size_t dl = 0;
    char *json = gunzip_b64(b64, &dl);
    REQUIRE(json != NULL);
    CHECK_INT_EQ(dl, jb);
    /* The same JSON /debug/snapshot shows for this group. */
    struct xlate_snapshot one;
    memset(&one, 0, sizeof(one));
    one.ngroups = 1;
    one.groups = (struct xlate_group *)g;
    publish_group_version(g, one.version);
    struct cx_buf want;
    cx_buf_init(&want, 0);
    REQUIRE_INT_EQ(xlate_render_groups(&one, 0, &want), 0);
    CHECK_INT_EQ(dl, want.len);
    CHECK(dl == want.len && memcmp(json, want.data, dl) == 0);
    CHECK_STR_CONTAINS(json, "svc.test");
    cx_buf_free(&want);
    free(json);
    free(b64);
    /* Too small a cap: no snapshot, truncated. */
    REQUIRE_INT_EQ(publish_encode(g, 64, &b64, &trunc, &jb), 0);
    CHECK(b64 == NULL);
    CHECK_INT_EQ(trunc, 1);
    /* Versions: the group's type versions decide, nothing else. */
    char v1[XDS_VERSION_LEN + 1], v2[XDS_VERSION_LEN + 1], v3[XDS_VERSION_LEN + 1];
    publish_group_version(g, v1);
    struct xlate_snapshot *s2 = snapshot_of(1, "10.0.0.1");
    struct xlate_snapshot *s3 = snapshot_of(1, "10.0.0.2");
    publish_group_version(&s2->groups[0], v2);
    publish_group_version(&s3->groups[0], v3);
    CHECK_STR_EQ(v1, v2);
    CHECK(strcmp(v1, v3) != 0);
    CHECK_INT_EQ(strlen(v1), XDS_VERSION_LEN);
    xlate_snapshot_unref(s3);
    xlate_snapshot_unref(s2);
    xlate_snapshot_unref(s);
}

/* An Envoy-mode Gateway with |n| VirtualServices: a RouteConfiguration of
 * n virtual hosts, far more JSON than one deflate chunk. */
static struct xlate_snapshot *big_snapshot(int n)
{
    struct xlate_ctx *ctx = xlate_ctx_new();
    cJSON **objs = calloc((size_t)n + 2, sizeof(*objs));
    struct xlate_object *in = calloc((size_t)n + 2, sizeof(*in));
    size_t k = 0;
    char buf[512];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Gateway\","
             "\"metadata\":{\"namespace\":\"app\",\"name\":\"edge\"},"
             "\"spec\":{\"mode\":\"envoy\"}}");
    objs[k] = cx_json_parse(buf, strlen(buf));
    in[k] = (struct xlate_object){.kind = XLATE_KIND_GATEWAY, .obj = objs[k]};
    k++;
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Upstream\","
             "\"metadata\":{\"namespace\":\"app\",\"name\":\"up\"},"
             "\"spec\":{\"static\":{\"hosts\":[{\"address\":\"10.0.0.1\","
             "\"port\":80}]}}}");
    objs[k] = cx_json_parse(buf, strlen(buf));
    in[k] = (struct xlate_object){.kind = XLATE_KIND_UPSTREAM, .obj = objs[k]};
    k++;
    for (int i = 0; i < n; i++) {
        snprintf(buf, sizeof(buf),
                 "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\",\"metadata\":"
                 "{\"namespace\":\"app\",\"name\":\"vs%d\"},\"spec\":{\"domains\":"
                 "[\"vs%d.test\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"upstream\":"
                 "{\"name\":\"up\"}}]}}",
                 i, i);
        objs[k] = cx_json_parse(buf, strlen(buf));
        in[k] = (struct xlate_object){.kind = XLATE_KIND_VIRTUAL_SERVICE, .obj = objs[k]};
        k++;
    }
    struct xlate_input input = {.objects = in, .n = k};
    struct xlate_snapshot *s = NULL;
    if (xlate_run(ctx, &input, &s, NULL) != 0)
        s = NULL;
    for (size_t i = 0; i < k; i++)
        cJSON_Delete(objs[i]);
    free(objs);
    free(in);
    xlate_ctx_free(ctx);
    return s;
}

static void test_encode_streams_large_groups(void)
{
    struct xlate_snapshot *s = big_snapshot(2000);
    REQUIRE(s != NULL);
    const struct xlate_group *g = xlate_snapshot_group(s, "app/edge");
    REQUIRE(g != NULL);
    struct xlate_snapshot one;
    memset(&one, 0, sizeof(one));
    one.ngroups = 1;
    one.groups = (struct xlate_group *)g;
    publish_group_version(g, one.version);
    struct cx_buf want;
    cx_buf_init(&want, 0);
    REQUIRE_INT_EQ(xlate_render_groups(&one, 0, &want), 0);
    CHECK(want.len > 500 * 1024); /* many deflate chunks */
    char *b64 = NULL;
    int trunc = -1;
    size_t jb = 0;
    REQUIRE_INT_EQ(publish_encode(g, 512 * 1024, &b64, &trunc, &jb), 0);
    REQUIRE(b64 != NULL);
    CHECK_INT_EQ(trunc, 0);
    CHECK_INT_EQ(jb, want.len);
    size_t dl = 0;
    char *json = gunzip_b64(b64, &dl);
    REQUIRE(json != NULL);
    CHECK(dl == want.len && memcmp(json, want.data, dl) == 0);
    printf("# %zu bytes of JSON -> %zu bytes of gzip+base64\n", want.len, strlen(b64));
    free(json);
    free(b64);
    /* A cap it cannot fit: it stops early and says truncated. */
    REQUIRE_INT_EQ(publish_encode(g, 8192, &b64, &trunc, &jb), 0);
    CHECK(b64 == NULL);
    CHECK_INT_EQ(trunc, 1);
    CHECK_INT_EQ(jb, 0);
    cx_buf_free(&want);
    xlate_snapshot_unref(s);
}

static bool guard(void *arg, int64_t *timeout_ns, uint64_t *term)
{
    (void)arg;
    if (!guard_open)
        return false;
    *timeout_ns = 5 * CX_NS_PER_S;
    *term = 1;
    return true;
}

static void on_ps(void *ud, struct kube_obj *o)
{
    (void)ud;
    if (leader)
        publish_object_changed(leader, o->name);
    if (standby)
        publish_object_changed(standby, o->name);
}

static void on_ps_update(void *ud, struct kube_obj *old, struct kube_obj *o)
{
    (void)old;
    on_ps(ud, o);
}

static struct kube_obj *lookup(void *user, const char *name)
{
    (void)user;
    char key[256];
    snprintf(key, sizeof(key), NS "/%s", name);
    return kube_cache_get(kube_informer_cache(inf), key);
}

static void foreach_ps(void *user, int (*fn)(void *ctx, struct kube_obj *o), void *ctx)
{
    (void)user;
    kube_cache_foreach(kube_informer_cache(inf), fn, ctx);
}

static int synced(void *arg)
{
    (void)arg;
    return kube_informer_synced(inf);
}

static struct publish *new_pub(void)
{
    struct publish_opts o = {.kc = kc,
                             .namespace = NS,
                             .guard = {.allow = guard},
                             .max_bytes = 512 * 1024,
                             .qps = 100,
                             .burst = 100,
                             .lookup = lookup,
                             .foreach = foreach_ps};
    return publish_new(base, &o);
}

static void test_setup_kubesim(void)
{
    base = event_base_new();
    REQUIRE(base != NULL);
    REQUIRE_INT_EQ(cx_kubesim_start(&ks, NULL), 0);
    REQUIRE_INT_EQ(dt_apply_crds(&ks), 0);
    long code = 0;
    free(cx_kubesim_request(&ks, "POST", "/api/v1/namespaces",
                            "{\"metadata\":{\"name\":\"" NS "\"}}", "application/json", &code));
    REQUIRE_INT_EQ(code, 201);
    kc = dt_client(base, &ks, "publish-test");
    REQUIRE(kc != NULL);
    static const struct kube_informer_handlers h = {
        .on_add = on_ps, .on_update = on_ps_update, .on_delete = on_ps};
    struct kube_informer_opts o = {.res = &store_res_proxysnapshots,
                                   .ns = NS,
                                   .label_selector = PUBLISH_LABEL_KEY "=" PUBLISH_LABEL_VALUE};
    inf = kube_informer_new(kc, &o, &h, NULL);
    REQUIRE(inf != NULL);
    REQUIRE_INT_EQ(kube_informer_start(inf), 0);
    REQUIRE(cxt_loop_until(base, synced, NULL, 5000));
    leader = new_pub();
    standby = new_pub();
    REQUIRE(leader && standby);
}

static int leader_idle(void *arg)
{
    (void)arg;
    struct publish_stats st;
    publish_stats(standby, &st);
    return publish_idle(leader) && st.consistent == st.groups;
}

static double consistent(const char *gw)
{
    return cx_metric_get(cx_gauge("coxswain_snapshot_consistent", "", "gateway"), gw);
}

static void test_create_update_delete(void)
{
    REQUIRE(leader != NULL);
    struct xlate_snapshot *s1 = snapshot_of(2, "10.0.0.1");
    REQUIRE(s1 != NULL);
    long seq = dt_audit_seq(&ks);
    publish_set_snapshot(standby, s1);
    publish_set_snapshot(leader, s1);
    cxt_loop_for(base, 200);
    CHECK_INT_EQ(dt_audit_count(&ks, NULL, "proxysnapshots", NULL, seq), 0); /* not leading */
    struct publish_stats st;
    publish_stats(standby, &st);
    CHECK_INT_EQ(st.groups, 2);
    CHECK_INT_EQ(st.consistent, 0);
    CHECK(consistent("app/gw0") == 0);

    publish_start(leader, 1);
    REQUIRE(cxt_loop_until(base, leader_idle, NULL, 5000));
    CHECK_INT_EQ(dt_audit_count(&ks, "create", "proxysnapshots", NULL, seq), 2);
    publish_stats(standby, &st);
    CHECK_INT_EQ(st.consistent, 2);
    CHECK(consistent("app/gw0") == 1);
    cJSON *o = dt_get(&ks, &store_res_proxysnapshots, NS, "app.gw1");
    REQUIRE(o != NULL);
    char v[XDS_VERSION_LEN + 1];
    publish_group_version(xlate_snapshot_group(s1, "app/gw1"), v);
    CHECK_STR_EQ(cx_json_path_str(o, "spec", "version", NULL), v);
    CHECK_STR_EQ(cx_json_path_str(o, "spec", "gateway", NULL), "app/gw1");
    CHECK_STR_EQ(cx_json_path_str(o, "spec", "mode", NULL), "proxyless");
    CHECK_STR_EQ(cx_json_path_str(o, "spec", "versions", "routes", NULL),
                 xlate_snapshot_group(s1, "app/gw1")->types[XDS_ROUTE].version);
    const cJSON *sb = cx_json_path(o, "spec", "snapshotBytes", NULL);
    CHECK(cJSON_IsNumber(sb) && sb->valuedouble > 100);
    CHECK(cJSON_IsFalse(cx_json_path(o, "spec", "truncated", NULL)));
    CHECK(cx_json_path_str(o, "spec", "snapshot", NULL) != NULL);
    const cJSON *cnt = cx_json_path(o, "spec", "counts", "listeners", NULL);
    CHECK(cJSON_IsNumber(cnt) && cnt->valueint == 1);
    cJSON_Delete(o);

    /* The same snapshot again, and a new term's full pass: no writes. */
    seq = dt_audit_seq(&ks);
    publish_set_snapshot(leader, s1);
    publish_stop(leader);
    publish_start(leader, 1);
    REQUIRE(cxt_loop_until(base, leader_idle, NULL, 5000));
    cxt_loop_for(base, 100);
    CHECK_INT_EQ(dt_audit_count(&ks, NULL, "proxysnapshots", NULL, seq), 0);

    /* The upstream changes: both Gateways' versions change, two updates. */
    struct xlate_snapshot *s2 = snapshot_of(2, "10.0.0.2");
    publish_set_snapshot(standby, s2);
    publish_stats(standby, &st);
    CHECK_INT_EQ(st.consistent, 0); /* ahead of the published versions */
    publish_set_snapshot(leader, s2);
    REQUIRE(cxt_loop_until(base, leader_idle, NULL, 5000));
    CHECK_INT_EQ(dt_audit_count(&ks, "update", "proxysnapshots", NULL, seq), 2);
    CHECK_INT_EQ(dt_audit_count(&ks, NULL, "proxysnapshots", NULL, seq), 2);

    /* gw1 goes away: its ProxySnapshot is deleted, its gauge hidden. */
    struct xlate_snapshot *s3 = snapshot_of(1, "10.0.0.2");
    publish_set_snapshot(standby, s3);
    publish_set_snapshot(leader, s3);
    REQUIRE(cxt_loop_until(base, leader_idle, NULL, 5000));
    CHECK_INT_EQ(dt_audit_count(&ks, "delete", "proxysnapshots", NULL, seq), 1);
    o = dt_get(&ks, &store_res_proxysnapshots, NS, "app.gw1");
    CHECK(o == NULL);
    cJSON_Delete(o);
    struct cx_buf m;
    cx_buf_init(&m, 0);
    REQUIRE_INT_EQ(cx_metrics_render(&m), 0);
    CHECK(strstr(m.data, "coxswain_snapshot_consistent{gateway=\"app/gw1\"}") == NULL);
    CHECK_STR_CONTAINS(m.data, "coxswain_snapshot_consistent{gateway=\"app/gw0\"} 1");
    cx_buf_free(&m);
    xlate_snapshot_unref(s1);
    xlate_snapshot_unref(s2);
    xlate_snapshot_unref(s3);
}

static void test_refused_and_stale_deletion_on_start(void)
{
    REQUIRE(leader != NULL);
    publish_stop(leader); /* a leader would delete it at once */
    /* Someone left a ProxySnapshot of a Gateway we do not have. */
    REQUIRE_INT_EQ(dt_create(&ks, &store_res_proxysnapshots, NS,
                             "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"ProxySnapshot\","
                             "\"metadata\":{\"name\":\"old.gone\",\"labels\":{"
                             "\"app.kubernetes.io/managed-by\":\"coxswain\"}},\"spec\":{"
                             "\"gateway\":\"old/gone\",\"version\":\"x\"}}"),
                   201);
    REQUIRE_INT_EQ(dt_create(&ks, &store_res_proxysnapshots, NS,
                             "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"ProxySnapshot\","
                             "\"metadata\":{\"name\":\"not.ours\"},\"spec\":{}}"),
                   201);
    cxt_loop_for(base, 100);
    guard_open = 0;
    long seq = dt_audit_seq(&ks);
    publish_start(leader, 1);
    cxt_loop_for(base, 300);
    CHECK_INT_EQ(dt_audit_count(&ks, NULL, "proxysnapshots", NULL, seq), 0);
    struct publish_stats st;
    publish_stats(leader, &st);
    CHECK(st.refused >= 1);
    guard_open = 1;
    REQUIRE(cxt_loop_until(base, leader_idle, NULL, 5000));
    CHECK_INT_EQ(dt_audit_count(&ks, "delete", "proxysnapshots", NULL, seq), 1);
    cJSON *o = dt_get(&ks, &store_res_proxysnapshots, NS, "old.gone");
    CHECK(o == NULL);
    cJSON_Delete(o);
    o = dt_get(&ks, &store_res_proxysnapshots, NS, "not.ours");
    CHECK(o != NULL); /* unlabelled: not ours to delete (and not watched) */
    cJSON_Delete(o);
}

static void test_teardown(void)
{
    publish_free(leader);
    publish_free(standby);
    leader = standby = NULL;
    kube_informer_free(inf);
    kube_client_free(kc);
    CHECK_INT_EQ(cx_kubesim_stop(&ks), 0);
    event_base_free(base);
}

static const struct cxt_case cases[] = {
    CXT(test_names),
    CXT(test_encode_roundtrip_and_truncation),
    CXT(test_encode_streams_large_groups),
    CXT(test_setup_kubesim),
    CXT(test_create_update_delete),
    CXT(test_refused_and_stale_deletion_on_start),
    CXT(test_teardown),
};
CXT_MAIN(cases)
