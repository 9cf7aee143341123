/* The ADS state machine, driven with DiscoveryRequest bytes (built with
 * protobuf-c, the same encoding every client uses) and snapshots made by
 * hand. */
#include "cxtest.h"
#include "xds_ads.h"
#include "xds_cache.h"
#include "xdsc.h"
#include "xlate_snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "group T:name=payload ..." groups separated by ';'. T is L, R, C or E. */
static struct xlate_snapshot *mk(const char *spec)
{
    struct xlate_snapshot *s = xdsc_snapshot_new();
    char *copy = strdup(spec), *save1 = NULL;
    for (char *grp = strtok_r(copy, ";", &save1); grp; grp = strtok_r(NULL, ";", &save1)) {
        char *save2 = NULL;
        char *gname = strtok_r(grp, " ", &save2);
        for (char *it = strtok_r(NULL, " ", &save2); it; it = strtok_r(NULL, " ", &save2)) {
            enum xds_type t = it[0] == 'L'   ? XDS_LISTENER
                              : it[0] == 'R' ? XDS_ROUTE
                              : it[0] == 'C' ? XDS_CLUSTER
                              : it[0] == 'S' ? XDS_SECRET
                                             : XDS_ENDPOINT;
            char *eq = strchr(it + 2, '=');
            *eq = '\0';
            if (xdsc_snapshot_add(s, gname, xdsc_fake_resource(t, it + 2, eq + 1)) != 0)
                abort();
        }
    }
    free(copy);
    if (xdsc_snapshot_seal(s) != 0)
        abort();
    return s;
}

struct fx {
    struct xds_cache *cache;
    struct xds_ads_stream st;
    struct xds_ads_sets tmp;
    struct xds_ads_event ev;
};

static void fx_init(struct fx *f, const char *spec)
{
    memset(f, 0, sizeof(*f));
    f->cache = xds_cache_new();
    xds_ads_stream_init(&f->st);
    if (spec) {
        struct xlate_snapshot *s = mk(spec);
        xds_cache_set_snapshot(f->cache, s, NULL, NULL);
        xlate_snapshot_unref(s);
    }
}

static void fx_set(struct fx *f, const char *spec)
{
    struct xlate_snapshot *s = mk(spec);
    xds_cache_set_snapshot(f->cache, s, NULL, NULL);
    xlate_snapshot_unref(s);
}

static void fx_free(struct fx *f)
{
    xds_ads_stream_free(&f->st);
    xds_cache_free(f->cache);
}

/* Sends a request; node fields only matter on the first. */
static int rq(struct fx *f, enum xds_type t, const char *names_csv, const char *version,
              const char *nonce, const char *nack)
{
    const char *names[16];
    size_t n = 0;
    char *copy = strdup(names_csv ? names_csv : ""), *save = NULL;
    for (char *p = strtok_r(copy, ",", &save); p && n < 16; p = strtok_r(NULL, ",", &save))
        names[n++] = p;
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = xdsc_encode_request(&b, t, names, n, version, nonce, "node-1", "cl", "ns/gw", 3, nack);
    if (rc == 0)
        rc = xds_ads_on_request(&f->st, (const uint8_t *)b.data, b.len, "default", &f->ev);
    cx_buf_free(&b);
    free(copy);
    return rc;
}

/* Next response as "TYPE name,name|version" or "" when none. */
static const char *nx(struct fx *f, struct xds_ads_response *keep)
{
    static char out[512];
    out[0] = '\0';
    const struct xds_ads_sets *sets = xds_cache_sets_for(f->cache, f->st.node.group, &f->tmp);
    struct xds_ads_response r;
    int rc = xds_ads_next(&f->st, sets, 42, &r);
    if (rc < 0)
        return "ERROR";
    if (rc == 0)
        return out;
    size_t k = (size_t)snprintf(out, sizeof(out), "%s ", xlate_type_short(r.type));
    for (size_t i = 0; i < r.n; i++)
        k += (size_t)snprintf(out + k, sizeof(out) - k, "%s%s", i ? "," : "", r.items[i]->name);
    if (keep)
        *keep = r;
    else
        xds_ads_response_clear(&r);
    return out;
}

static void test_node_group_from_metadata_and_first_lds(void)
{
    struct fx f;
    fx_init(&f, "ns/gw L:echo=1 L:other=1 R:rc=1;default L:x=1");
    REQUIRE_INT_EQ(rq(&f, XDS_LISTENER, "echo,missing", "", "", NULL), 0);
    CHECK(f.ev.first_node);
    CHECK_INT_EQ(f.ev.verdict, XDS_ADS_SUBSCRIBE);
    CHECK_STR_EQ(f.st.node.group, "ns/gw");
    CHECK_STR_EQ(f.st.node.id, "node-1");
    struct xds_ads_response r;
    CHECK_STR_EQ(nx(&f, &r), "LDS echo");
    CHECK_STR_EQ(r.nonce, "1");
    const struct xlate_group *g = xlate_snapshot_group(xds_cache_snapshot(f.cache), "ns/gw");
    CHECK_STR_EQ(r.version, g->types[XDS_LISTENER].version);
    xds_ads_response_clear(&r);
    /* one response outstanding per type: nothing more until the ACK */
    CHECK_STR_EQ(nx(&f, NULL), "");
    fx_free(&f);
}

static void test_group_from_cluster_then_default(void)
{
    struct xds_ads_stream st;
    struct xds_ads_event ev;
    struct cx_buf b;
    const char *names[1] = {"a"};
    xds_ads_stream_init(&st);
    cx_buf_init(&b, 0);
    REQUIRE_INT_EQ(
        xdsc_encode_request(&b, XDS_CLUSTER, names, 1, "", "", "n", "clusterA", NULL, 0, NULL), 0);
    REQUIRE_INT_EQ(xds_ads_on_request(&st, (uint8_t *)b.data, b.len, "dflt", &ev), 0);
    CHECK_STR_EQ(st.node.group, "clusterA");
    xds_ads_stream_free(&st);
    cx_buf_reset(&b);
    xds_ads_stream_init(&st);
    REQUIRE_INT_EQ(xdsc_encode_request(&b, XDS_CLUSTER, names, 1, "", "", "n", NULL, NULL, 0, NULL),
                   0);
    REQUIRE_INT_EQ(xds_ads_on_request(&st, (uint8_t *)b.data, b.len, "dflt", &ev), 0);
    CHECK_STR_EQ(st.node.group, "dflt");
    /* the node of later requests is ignored */
    cx_buf_reset(&b);
    REQUIRE_INT_EQ(xdsc_encode_request(&b, XDS_LISTENER, names, 1, "", "", "other", "clusterB",
                                       "x/y", 0, NULL),
                   0);
    REQUIRE_INT_EQ(xds_ads_on_request(&st, (uint8_t *)b.data, b.len, "dflt", &ev), 0);
    CHECK(!ev.first_node);
    CHECK_STR_EQ(st.node.group, "dflt");
    CHECK_STR_EQ(st.node.id, "n");
    cx_buf_free(&b);
    xds_ads_stream_free(&st);
}

static void test_ack_then_only_changes(void)
{
    struct fx f;
    fx_init(&f, "ns/gw L:echo=1 L:other=1");
    REQUIRE_INT_EQ(rq(&f, XDS_LISTENER, "echo", "", "", NULL), 0);
    struct xds_ads_response r;
    REQUIRE_STR_EQ(nx(&f, &r), "LDS echo");
    char v1[32];
    snprintf(v1, sizeof(v1), "%s", r.version);
    REQUIRE_INT_EQ(rq(&f, XDS_LISTENER, "echo", v1, r.nonce, NULL), 0);
    xds_ads_response_clear(&r);
    CHECK_INT_EQ(f.ev.verdict, XDS_ADS_ACK);
    CHECK_INT_EQ(f.ev.origin_ns, 42);
    CHECK_STR_EQ(f.st.types[XDS_LISTENER].x.version_acked, v1);
    CHECK_STR_EQ(nx(&f, NULL), "");
    /* a change to a resource the stream did not ask for sends nothing */
    fx_set(&f, "ns/gw L:echo=1 L:other=2");
    CHECK_STR_EQ(nx(&f, NULL), "");
    /* a change to its resource sends it */
    fx_set(&f, "ns/gw L:echo=2 L:other=2");
    CHECK_STR_EQ(nx(&f, NULL), "LDS echo");
    fx_free(&f);
}

static void test_stale_nonce_ignored(void)
{
    struct fx f;
    fx_init(&f, "ns/gw R:a=1 R:b=1");
    REQUIRE_INT_EQ(rq(&f, XDS_ROUTE, "a", "", "", NULL), 0);
    struct xds_ads_response r;
    REQUIRE_STR_EQ(nx(&f, &r), "RDS a");
    /* a request answering an older nonce is ignored, names included */
    REQUIRE_INT_EQ(rq(&f, XDS_ROUTE, "a,b", "", "0", NULL), 0);
    CHECK_INT_EQ(f.ev.verdict, XDS_ADS_STALE);
    CHECK_INT_EQ(f.st.types[XDS_ROUTE].nnames, 1);
    CHECK(f.st.types[XDS_ROUTE].x.awaiting);
    /* the right nonce with new names: ACK, and b is sent */
    REQUIRE_INT_EQ(rq(&f, XDS_ROUTE, "a,b", r.version, r.nonce, NULL), 0);
    CHECK_INT_EQ(f.ev.verdict, XDS_ADS_ACK);
    xds_ads_response_clear(&r);
    CHECK_STR_EQ(nx(&f, NULL), "RDS b");
    fx_free(&f);
}

static void test_nack_detected_by_error_detail_and_not_resent(void)
{
    struct fx f;
    fx_init(&f, "ns/gw C:c1=bad");
    REQUIRE_INT_EQ(rq(&f, XDS_CLUSTER, "c1", "", "", NULL), 0);
    struct xds_ads_response r;
    REQUIRE_STR_EQ(nx(&f, &r), "CDS c1");
    /* NACK: version_info is the last accepted (empty), error_detail set */
    REQUIRE_INT_EQ(rq(&f, XDS_CLUSTER, "c1", "", r.nonce,
                      "xDS response validation errors: [cluster c1: bad lb_policy]"),
                   0);
    CHECK_INT_EQ(f.ev.verdict, XDS_ADS_NACK);
    CHECK_INT_EQ(f.ev.nack_code, 3);
    CHECK_STR_CONTAINS(f.ev.nack_message, "bad lb_policy");
    CHECK_STR_EQ(f.ev.version, r.version);
    CHECK(f.st.types[XDS_CLUSTER].x.nacked);
    CHECK_INT_EQ(f.st.types[XDS_CLUSTER].x.nacks, 1);
    xds_ads_response_clear(&r);
    /* the same content is not pushed again */
    CHECK_STR_EQ(nx(&f, NULL), "");
    /* a fix is */
    fx_set(&f, "ns/gw C:c1=good");
    REQUIRE_STR_EQ(nx(&f, &r), "CDS c1");
    REQUIRE_INT_EQ(rq(&f, XDS_CLUSTER, "c1", r.version, r.nonce, NULL), 0);
    CHECK_INT_EQ(f.ev.verdict, XDS_ADS_ACK);
    CHECK(!f.st.types[XDS_CLUSTER].x.nacked);
    xds_ads_response_clear(&r);
    fx_free(&f);
}

static void test_wildcard_star_and_legacy(void)
{
    struct fx f;
    fx_init(&f, "ns/gw C:c1=1 C:c2=1 L:l1=1 L:l2=1 E:c1=1");
    /* "*" */
    REQUIRE_INT_EQ(rq(&f, XDS_CLUSTER, "*", "", "", NULL), 0);
    CHECK(f.st.types[XDS_CLUSTER].wildcard);
    CHECK_STR_EQ(nx(&f, NULL), "CDS c1,c2");
    /* legacy: empty first request */
    REQUIRE_INT_EQ(rq(&f, XDS_LISTENER, "", "", "", NULL), 0);
    CHECK(f.st.types[XDS_LISTENER].wildcard);
    struct xds_ads_response r;
    REQUIRE_STR_EQ(nx(&f, &r), "LDS l1,l2");
    /* an empty ACK keeps a legacy wildcard */
    REQUIRE_INT_EQ(rq(&f, XDS_LISTENER, "", r.version, r.nonce, NULL), 0);
    CHECK(f.st.types[XDS_LISTENER].wildcard);
    xds_ads_response_clear(&r);
    /* a new listener reaches a wildcard subscriber */
    fx_set(&f, "ns/gw C:c1=1 C:c2=1 L:l1=1 L:l2=1 L:l3=1 E:c1=1");
    CHECK_STR_EQ(nx(&f, NULL), "LDS l1,l2,l3");
    /* EDS: no wildcard; an empty request subscribes to nothing */
    REQUIRE_INT_EQ(rq(&f, XDS_ENDPOINT, "", "", "", NULL), 0);
    CHECK(!f.st.types[XDS_ENDPOINT].wildcard);
    CHECK_STR_EQ(nx(&f, NULL), "");
    fx_free(&f);
}

static void test_star_is_a_plain_name_for_rds(void)
{
    struct fx f;
    fx_init(&f, "ns/gw R:*=1 R:a=1");
    REQUIRE_INT_EQ(rq(&f, XDS_ROUTE, "*", "", "", NULL), 0);
    CHECK(!f.st.types[XDS_ROUTE].wildcard);
    CHECK_STR_EQ(nx(&f, NULL), "RDS *");
    fx_free(&f);
}

static void test_missing_names_remembered(void)
{
    struct fx f;
    fx_init(&f, "ns/gw R:other=1");
    REQUIRE_INT_EQ(rq(&f, XDS_ROUTE, "later", "", "", NULL), 0);
    /* RDS: nothing exists, nothing is sent (the client times out) */
    CHECK_STR_EQ(nx(&f, NULL), "");
    fx_set(&f, "ns/gw R:other=1 R:later=1");
    CHECK_STR_EQ(nx(&f, NULL), "RDS later");
    fx_free(&f);

    /* LDS: the full state is sent at once, empty, so the client knows */
    fx_init(&f, "ns/gw L:other=1");
    REQUIRE_INT_EQ(rq(&f, XDS_LISTENER, "echo", "", "", NULL), 0);
    struct xds_ads_response r;
    REQUIRE_STR_EQ(nx(&f, &r), "LDS ");
    REQUIRE_INT_EQ(rq(&f, XDS_LISTENER, "echo", r.version, r.nonce, NULL), 0);
    xds_ads_response_clear(&r);
    CHECK_STR_EQ(nx(&f, NULL), "");
    fx_set(&f, "ns/gw L:other=1 L:echo=1");
    CHECK_STR_EQ(nx(&f, NULL), "LDS echo");
    fx_free(&f);
}

static void test_lds_full_state_on_delete(void)
{
    struct fx f;
    fx_init(&f, "ns/gw L:a=1 L:b=1");
    REQUIRE_INT_EQ(rq(&f, XDS_LISTENER, "a,b", "", "", NULL), 0);
    struct xds_ads_response r;
    REQUIRE_STR_EQ(nx(&f, &r), "LDS a,b");
    REQUIRE_INT_EQ(rq(&f, XDS_LISTENER, "a,b", r.version, r.nonce, NULL), 0);
    xds_ads_response_clear(&r);
    /* b deleted: the response lists only a (absent = deleted) */
    fx_set(&f, "ns/gw L:a=1");
    REQUIRE_STR_EQ(nx(&f, &r), "LDS a");
    REQUIRE_INT_EQ(rq(&f, XDS_LISTENER, "a,b", r.version, r.nonce, NULL), 0);
    xds_ads_response_clear(&r);
    /* everything deleted: an empty response */
    fx_set(&f, "ns/gw C:x=1");
    CHECK_STR_EQ(nx(&f, NULL), "LDS ");
    fx_free(&f);
}

static void test_rds_sends_only_changed(void)
{
    struct fx f;
    fx_init(&f, "ns/gw R:a=1 R:b=1 R:c=1");
    REQUIRE_INT_EQ(rq(&f, XDS_ROUTE, "a,b,c", "", "", NULL), 0);
    struct xds_ads_response r;
    REQUIRE_STR_EQ(nx(&f, &r), "RDS a,b,c");
    REQUIRE_INT_EQ(rq(&f, XDS_ROUTE, "a,b,c", r.version, r.nonce, NULL), 0);
    xds_ads_response_clear(&r);
    fx_set(&f, "ns/gw R:a=1 R:b=2 R:c=1");
    CHECK_STR_EQ(nx(&f, NULL), "RDS b");
    fx_free(&f);
}

static void test_resubscribe_resends_unchanged(void)
{
    struct fx f;
    fx_init(&f, "ns/gw E:a=1 E:b=1");
    REQUIRE_INT_EQ(rq(&f, XDS_ENDPOINT, "a,b", "", "", NULL), 0);
    struct xds_ads_response r;
    REQUIRE_STR_EQ(nx(&f, &r), "EDS a,b");
    /* drop b */
    REQUIRE_INT_EQ(rq(&f, XDS_ENDPOINT, "a", r.version, r.nonce, NULL), 0);
    CHECK(f.ev.names_changed);
    xds_ads_response_clear(&r);
    CHECK_STR_EQ(nx(&f, NULL), "");
    /* ask for b again: sent even though unchanged */
    REQUIRE_INT_EQ(rq(&f, XDS_ENDPOINT, "a,b", "", "", NULL), 0);
    CHECK_STR_EQ(nx(&f, NULL), "EDS b");
    fx_free(&f);
}

static void test_coalesces_while_awaiting_ack(void)
{
    struct fx f;
    fx_init(&f, "ns/gw E:a=1");
    REQUIRE_INT_EQ(rq(&f, XDS_ENDPOINT, "a", "", "", NULL), 0);
    struct xds_ads_response r;
    REQUIRE_STR_EQ(nx(&f, &r), "EDS a");
    fx_set(&f, "ns/gw E:a=2");
    CHECK_STR_EQ(nx(&f, NULL), "");
    fx_set(&f, "ns/gw E:a=3");
    REQUIRE_INT_EQ(rq(&f, XDS_ENDPOINT, "a", r.version, r.nonce, NULL), 0);
    xds_ads_response_clear(&r);
    /* one response, with the latest content */
    REQUIRE_STR_EQ(nx(&f, &r), "EDS a");
    struct xds_resource *now = xlate_resource_set_find(
        &xlate_snapshot_group(xds_cache_snapshot(f.cache), "ns/gw")->types[XDS_ENDPOINT], "a");
    CHECK_STR_EQ(r.items[0]->version, now->version);
    xds_ads_response_clear(&r);
    fx_free(&f);
}

static void test_make_before_break_order(void)
{
    struct fx f;
    fx_init(&f, "ns/gw L:l=1 R:r=1 C:c=1 E:c=1 S:s=1");
    struct xds_ads_response r;
    const char *want[5] = {"LDS l", "RDS r", "CDS c", "EDS c", "SDS s"};
    enum xds_type ts[5] = {XDS_LISTENER, XDS_ROUTE, XDS_CLUSTER, XDS_ENDPOINT, XDS_SECRET};
    const char *names[5] = {"l", "r", "c", "c", "s"};
    for (int i = 0; i < 5; i++) {
        REQUIRE_INT_EQ(rq(&f, ts[i], names[i], "", "", NULL), 0);
        REQUIRE_STR_EQ(nx(&f, &r), want[i]);
        REQUIRE_INT_EQ(rq(&f, ts[i], names[i], r.version, r.nonce, NULL), 0);
        xds_ads_response_clear(&r);
    }
    fx_set(&f, "ns/gw L:l=2 R:r=2 C:c=2 E:c=2 S:s=2");
    CHECK_STR_EQ(nx(&f, NULL), "CDS c");
    CHECK_STR_EQ(nx(&f, NULL), "EDS c");
    CHECK_STR_EQ(nx(&f, NULL), "SDS s");
    CHECK_STR_EQ(nx(&f, NULL), "LDS l");
    CHECK_STR_EQ(nx(&f, NULL), "RDS r");
    CHECK_STR_EQ(nx(&f, NULL), "");
    fx_free(&f);
}

static void test_reconnect_with_current_version_gets_nothing(void)
{
    struct fx f;
    fx_init(&f, "ns/gw C:c=1");
    const char *v =
        xlate_snapshot_group(xds_cache_snapshot(f.cache), "ns/gw")->types[XDS_CLUSTER].version;
    REQUIRE_INT_EQ(rq(&f, XDS_CLUSTER, "c", v, "", NULL), 0);
    CHECK_STR_EQ(nx(&f, NULL), "");
    /* but a later change is sent */
    fx_set(&f, "ns/gw C:c=2");
    CHECK_STR_EQ(nx(&f, NULL), "CDS c");
    fx_free(&f);
    /* an old version gets the current state */
    fx_init(&f, "ns/gw C:c=1");
    REQUIRE_INT_EQ(rq(&f, XDS_CLUSTER, "c", "0123456789abcdef", "", NULL), 0);
    CHECK_STR_EQ(nx(&f, NULL), "CDS c");
    fx_free(&f);
}

static void test_no_snapshot_and_unknown_group(void)
{
    struct fx f;
    fx_init(&f, NULL);
    REQUIRE_INT_EQ(rq(&f, XDS_LISTENER, "echo", "", "", NULL), 0);
    /* no snapshot yet: wait */
    CHECK_STR_EQ(nx(&f, NULL), "");
    /* a snapshot without our group: the group has nothing */
    fx_set(&f, "other/gw L:echo=1");
    CHECK_STR_EQ(nx(&f, NULL), "LDS ");
    fx_free(&f);
}

static void test_bad_requests(void)
{
    struct xds_ads_stream st;
    struct xds_ads_event ev;
    xds_ads_stream_init(&st);
    const uint8_t junk[] = {0xff, 0xff, 0xff};
    CHECK_INT_EQ(xds_ads_on_request(&st, junk, sizeof(junk), NULL, &ev), XDS_ADS_EINVAL);
    struct cx_buf b;
    cx_buf_init(&b, 0);
    /* no type_url (ADS needs one) */
    const uint8_t empty[1] = {0};
    CHECK_INT_EQ(xds_ads_on_request(&st, empty, 0, NULL, &ev), XDS_ADS_EINVAL);
    /* an unknown type is ignored, not an error */
    Envoy__Service__Discovery__V3__DiscoveryRequest req =
        ENVOY__SERVICE__DISCOVERY__V3__DISCOVERY_REQUEST__INIT;
    req.type_url = "type.googleapis.com/envoy.config.route.v3.ScopedRouteConfiguration";
    uint8_t buf[256];
    size_t n = envoy__service__discovery__v3__discovery_request__pack(&req, buf);
    CHECK_INT_EQ(xds_ads_on_request(&st, buf, n, NULL, &ev), 0);
    CHECK_INT_EQ(ev.verdict, XDS_ADS_UNKNOWN_TYPE);
    CHECK_INT_EQ(ev.type, -1);
    cx_buf_free(&b);
    xds_ads_stream_free(&st);
}

static void test_too_many_names(void)
{
    size_t n = XDS_ADS_MAX_NAMES + 1;
    char **names = calloc(n, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        names[i] = malloc(12);
        snprintf(names[i], 12, "n%zu", i);
    }
    struct cx_buf b;
    cx_buf_init(&b, 0);
    REQUIRE_INT_EQ(xdsc_encode_request(&b, XDS_ENDPOINT, (const char *const *)names, n, "", "", "n",
                                       NULL, NULL, 0, NULL),
                   0);
    struct xds_ads_stream st;
    struct xds_ads_event ev;
    xds_ads_stream_init(&st);
    CHECK_INT_EQ(xds_ads_on_request(&st, (uint8_t *)b.data, b.len, NULL, &ev), XDS_ADS_ELIMIT);
    xds_ads_stream_free(&st);
    cx_buf_free(&b);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The hand-written DiscoveryResponse parses with protobuf-c and wraps each
 * resource's bytes unchanged in an Any of the right type. */
static void test_response_encoding(void)
{
    struct fx f;
    fx_init(&f, "ns/gw C:c1=payload-one C:c2=payload-two");
    REQUIRE_INT_EQ(rq(&f, XDS_CLUSTER, "c1,c2", "", "", NULL), 0);
    struct xds_ads_response r;
    REQUIRE_STR_EQ(nx(&f, &r), "CDS c1,c2");
    struct cx_buf b;
    cx_buf_init(&b, 0);
    REQUIRE_INT_EQ(xds_ads_response_encode(&r, "replica-7", &b), 0);
    CHECK_INT_EQ(b.len, xds_ads_response_size(&r, "replica-7"));
    Envoy__Service__Discovery__V3__DiscoveryResponse *d =
        envoy__service__discovery__v3__discovery_response__unpack(NULL, b.len, (uint8_t *)b.data);
    REQUIRE(d != NULL);
    CHECK_STR_EQ(d->version_info, r.version);
    CHECK_STR_EQ(d->nonce, r.nonce);
    CHECK_STR_EQ(d->type_url, XDS_TYPE_URL_CLUSTER);
    REQUIRE_INT_EQ(d->n_resources, 2);
    CHECK_STR_EQ(d->resources[1]->type_url, XDS_TYPE_URL_CLUSTER);
    CHECK_INT_EQ(d->resources[1]->value.len, r.items[1]->len);
    CHECK(memcmp(d->resources[1]->value.data, r.items[1]->bytes, r.items[1]->len) == 0);
    REQUIRE(d->control_plane != NULL);
    CHECK_STR_EQ(d->control_plane->identifier, "replica-7");
    envoy__service__discovery__v3__discovery_response__free_unpacked(d, NULL);
    /* a large resource (multi-byte varints) */
    char *big = malloc(70000);
    memset(big, 'x', 69999);
    big[69999] = '\0';
    struct xds_resource *res = xdsc_fake_resource(XDS_CLUSTER, "big", big);
    struct xds_ads_response rb = {.type = XDS_CLUSTER, .n = 1, .items = &res};
    cx_buf_reset(&b);
    REQUIRE_INT_EQ(xds_ads_response_encode(&rb, NULL, &b), 0);
    CHECK_INT_EQ(b.len, xds_ads_response_size(&rb, NULL));
    d = envoy__service__discovery__v3__discovery_response__unpack(NULL, b.len, (uint8_t *)b.data);
    REQUIRE(d != NULL);
    CHECK_INT_EQ(d->resources[0]->value.len, res->len);
    CHECK(d->control_plane == NULL);
    envoy__service__discovery__v3__discovery_response__free_unpacked(d, NULL);
    xlate_resource_unref(res);
    free(big);
    cx_buf_free(&b);
    xds_ads_response_clear(&r);
    fx_free(&f);
}

/* Streams with the same subscription share one interned name list; the
 * pool empties when the last user goes. */
static void test_names_pool_shares_lists(void)
{
    struct xds_names_pool *pool = xds_names_pool_new();
    REQUIRE(pool != NULL);
    struct fx a, b;
    fx_init(&a, "ns/gw E:x=1 E:y=1");
    fx_init(&b, "ns/gw E:x=1 E:y=1");
    xds_ads_stream_set_pool(&a.st, pool);
    xds_ads_stream_set_pool(&b.st, pool);
    REQUIRE_INT_EQ(rq(&a, XDS_ENDPOINT, "y,x", "", "", NULL), 0);
    REQUIRE_INT_EQ(rq(&b, XDS_ENDPOINT, "x,y,x", "", "", NULL), 0);
    CHECK(a.st.types[XDS_ENDPOINT].list == b.st.types[XDS_ENDPOINT].list);
    CHECK_INT_EQ(a.st.types[XDS_ENDPOINT].list->refs, 2);
    CHECK_INT_EQ(pool->count, 1);
    CHECK_STR_EQ(a.st.types[XDS_ENDPOINT].names[0], "x");
    /* b narrows its subscription: a keeps the old list */
    REQUIRE_INT_EQ(rq(&b, XDS_ENDPOINT, "y", "", "", NULL), 0);
    CHECK(a.st.types[XDS_ENDPOINT].list != b.st.types[XDS_ENDPOINT].list);
    CHECK_INT_EQ(a.st.types[XDS_ENDPOINT].list->refs, 1);
    CHECK_INT_EQ(pool->count, 2);
    CHECK_STR_EQ(nx(&a, NULL), "EDS x,y");
    CHECK_STR_EQ(nx(&b, NULL), "EDS y");
    fx_free(&a);
    CHECK_INT_EQ(pool->count, 1);
    fx_free(&b);
    CHECK_INT_EQ(pool->count, 0);
    xds_names_pool_free(pool);
}

/* Streams of one snapshot holding the same resources share one interned
 * sent list (an idle stream's memory); a change gives both the new list,
 * one that diverges gets its own, and the pool empties with the streams. */
static void test_sent_lists_shared(void)
{
    struct xds_names_pool *pool = xds_names_pool_new();
    REQUIRE(pool != NULL);
    struct fx a, b;
    fx_init(&a, "ns/gw E:x=1 E:y=1 E:z=1");
    fx_init(&b, NULL);
    xds_cache_free(b.cache);
    b.cache = a.cache; /* the same snapshot, so the same resources */
    xds_ads_stream_set_pool(&a.st, pool);
    xds_ads_stream_set_pool(&b.st, pool);
    struct xds_ads_response ra, rb;
    REQUIRE_INT_EQ(rq(&a, XDS_ENDPOINT, "x,y", "", "", NULL), 0);
    REQUIRE_INT_EQ(rq(&b, XDS_ENDPOINT, "y,x", "", "", NULL), 0);
    REQUIRE_STR_EQ(nx(&a, &ra), "EDS x,y");
    REQUIRE_STR_EQ(nx(&b, &rb), "EDS x,y");
    const struct xds_ads_type_state *ta = &a.st.types[XDS_ENDPOINT],
                                    *tb = &b.st.types[XDS_ENDPOINT];
    REQUIRE(ta->sentl != NULL);
    CHECK(ta->sentl == tb->sentl);
    CHECK_INT_EQ(ta->sentl->refs, 2);
    CHECK_INT_EQ(ta->nsent, 2);
    CHECK_STR_EQ(ta->sent[1]->name, "y");
    REQUIRE_INT_EQ(rq(&a, XDS_ENDPOINT, "x,y", ra.version, ra.nonce, NULL), 0);
    REQUIRE_INT_EQ(rq(&b, XDS_ENDPOINT, "x,y", rb.version, rb.nonce, NULL), 0);
    xds_ads_response_clear(&ra);
    xds_ads_response_clear(&rb);
    /* y changes: both merge it in and meet on one list again */
    fx_set(&a, "ns/gw E:x=1 E:y=2 E:z=1");
    CHECK_STR_EQ(nx(&a, &ra), "EDS y");
    CHECK_STR_EQ(nx(&b, &rb), "EDS y");
    CHECK(ta->sentl == tb->sentl);
    CHECK_INT_EQ(ta->sentl->refs, 2);
    REQUIRE_INT_EQ(rq(&a, XDS_ENDPOINT, "x,y", ra.version, ra.nonce, NULL), 0);
    xds_ads_response_clear(&ra);
    xds_ads_response_clear(&rb);
    /* a drops x: its list is pruned to its own, b's stays */
    REQUIRE_INT_EQ(rq(&a, XDS_ENDPOINT, "y", "", "", NULL), 0);
    CHECK(ta->sentl != tb->sentl);
    CHECK_INT_EQ(ta->nsent, 1);
    CHECK_STR_EQ(ta->sent[0]->name, "y");
    CHECK_INT_EQ(tb->sentl->refs, 1);
    CHECK_INT_EQ(tb->nsent, 2);
    CHECK_STR_EQ(tb->sent[0]->name, "x");
    xds_ads_stream_free(&a.st);
    /* b's list and its resources outlive a */
    CHECK_STR_EQ(tb->sent[1]->name, "y");
    fx_free(&b);
    for (size_t i = 0; i < XDS_NAMES_POOL_BUCKETS; i++)
        CHECK(pool->sent[i] == NULL);
    xds_names_pool_free(pool);
}

/* One response NACKed a thousand times on its nonce counts once; the
 * repeats may still change the subscription; an ACK after it counts. */
static void test_nack_repeat_counts_once(void)
{
    struct fx f;
    fx_init(&f, "ns/gw C:c1=bad C:c2=x");
    REQUIRE_INT_EQ(rq(&f, XDS_CLUSTER, "c1", "", "", NULL), 0);
    struct xds_ads_response r;
    REQUIRE_STR_EQ(nx(&f, &r), "CDS c1");
    int nacks = 0;
    for (int i = 0; i < 1000; i++) {
        REQUIRE_INT_EQ(rq(&f, XDS_CLUSTER, "c1", "", r.nonce, "again"), 0);
        nacks += f.ev.verdict == XDS_ADS_NACK;
    }
    CHECK_INT_EQ(nacks, 1);
    CHECK_INT_EQ(f.st.types[XDS_CLUSTER].x.nacks, 1);
    REQUIRE_INT_EQ(rq(&f, XDS_CLUSTER, "c1,c2", "", r.nonce, "again"), 0);
    CHECK_INT_EQ(f.ev.verdict, XDS_ADS_SUBSCRIBE);
    CHECK(f.ev.names_changed);
    REQUIRE_INT_EQ(rq(&f, XDS_CLUSTER, "c1,c2", r.version, r.nonce, NULL), 0);
    CHECK_INT_EQ(f.ev.verdict, XDS_ADS_ACK);
    xds_ads_response_clear(&r);
    fx_free(&f);
}

/* Pooled name lists are charged to the pool's budget while pooled. */
static void test_names_pool_budget(void)
{
    struct xds_budget b = {.max = 1 << 20};
    struct xds_names_pool *pool = xds_names_pool_new();
    pool->budget = &b;
    struct fx f, g;
    fx_init(&f, "ns/gw C:c1=x");
    fx_init(&g, "ns/gw C:c1=x");
    xds_ads_stream_set_pool(&f.st, pool);
    xds_ads_stream_set_pool(&g.st, pool);
    REQUIRE_INT_EQ(rq(&f, XDS_CLUSTER, "c1,c2,c3", "", "", NULL), 0);
    size_t one = b.used;
    CHECK_INT_GT(one, 6);
    CHECK_INT_EQ(one, pool->bytes);
    REQUIRE_INT_EQ(rq(&g, XDS_CLUSTER, "c1,c2,c3", "", "", NULL), 0);
    CHECK_INT_EQ(b.used, one); /* shared: charged once */
    fx_free(&f);
    CHECK_INT_EQ(b.used, one);
    fx_free(&g);
    CHECK_INT_EQ(b.used, 0);
    xds_names_pool_free(pool);
}

/* Groups that no Gateway has go with their last stream, NACK records or
 * not; a Gateway's NACK records stay; made-up groups are capped. */
static void test_groups_evicted_and_capped(void)
{
    struct xds_cache *c = xds_cache_new();
    struct xlate_snapshot *s = mk("ns/gw C:c1=x");
    xds_cache_set_snapshot(c, s, NULL, NULL);
    xlate_snapshot_unref(s);
    struct xds_cache_watch gw = {0}, junk = {0};
    REQUIRE_INT_EQ(xds_cache_watch_add(c, &gw, "ns/gw"), 0);
    REQUIRE_INT_EQ(xds_cache_watch_add(c, &junk, "made/up"), 0);
    xds_cache_nack(&gw, XDS_CLUSTER)->total = 1;
    xds_cache_nack(&junk, XDS_CLUSTER)->total = 1;
    CHECK_INT_EQ(xds_cache_ngroups(c), 2);
    xds_cache_watch_remove(c, &junk);
    xds_cache_watch_remove(c, &gw);
    CHECK_INT_EQ(xds_cache_ngroups(c), 1);
    CHECK(xds_cache_nack_find(c, "ns/gw", XDS_CLUSTER) != NULL);
    CHECK(xds_cache_nack_find(c, "made/up", XDS_CLUSTER) == NULL);
    /* the Gateway goes from the snapshot: its records go too */
    s = mk("other/gw C:c1=x");
    xds_cache_set_snapshot(c, s, NULL, NULL);
    xlate_snapshot_unref(s);
    CHECK_INT_EQ(xds_cache_ngroups(c), 0);
    /* made-up groups: capped, Gateways still admitted */
    static struct xds_cache_watch w[XDS_CACHE_MAX_UNKNOWN_GROUPS + 1];
    char name[32];
    for (int i = 0; i < XDS_CACHE_MAX_UNKNOWN_GROUPS; i++) {
        snprintf(name, sizeof(name), "junk-%d", i);
        REQUIRE_INT_EQ(xds_cache_watch_add(c, &w[i], name), 0);
    }
    CHECK_INT_EQ(xds_cache_watch_add(c, &w[XDS_CACHE_MAX_UNKNOWN_GROUPS], "one/more"), -1);
    CHECK_INT_EQ(xds_cache_watch_add(c, &gw, "other/gw"), 0);
    for (int i = 0; i < XDS_CACHE_MAX_UNKNOWN_GROUPS; i++)
        xds_cache_watch_remove(c, &w[i]);
    xds_cache_watch_remove(c, &gw);
    CHECK_INT_EQ(xds_cache_ngroups(c), 0);
    CHECK_INT_EQ(xds_cache_watch_add(c, &w[0], "one/more"), 0);
    xds_cache_watch_remove(c, &w[0]);
    xds_cache_free(c);
}

static const struct cxt_case cases[] = {
    CXT(test_nack_repeat_counts_once),
    CXT(test_names_pool_budget),
    CXT(test_sent_lists_shared),
    CXT(test_groups_evicted_and_capped),
    CXT(test_names_pool_shares_lists),
    CXT(test_node_group_from_metadata_and_first_lds),
    CXT(test_group_from_cluster_then_default),
    CXT(test_ack_then_only_changes),
    CXT(test_stale_nonce_ignored),
    CXT(test_nack_detected_by_error_detail_and_not_resent),
    CXT(test_wildcard_star_and_legacy),
    CXT(test_star_is_a_plain_name_for_rds),
    CXT(test_missing_names_remembered),
    CXT(test_lds_full_state_on_delete),
    CXT(test_rds_sends_only_changed),
    CXT(test_resubscribe_resends_unchanged),
    CXT(test_coalesces_while_awaiting_ack),
    CXT(test_make_before_break_order),
    CXT(test_reconnect_with_current_version_gets_nothing),
    CXT(test_no_snapshot_and_unknown_group),
    CXT(test_bad_requests),
    CXT(test_too_many_names),
    CXT(test_response_encoding),
};
CXT_MAIN(cases)
