/* The delta ADS state machine, driven with DeltaDiscoveryRequest bytes
 * (protobuf-c, as every client encodes them) and snapshots made by hand:
 * transcripts per type, reconnects with initial_resource_versions, named
 * and wildcard subscriptions, flow control, NACKs, limits and the wire
 * encoding. */
#include "cxtest.h"
#include "xds_cache.h"
#include "xds_delta.h"
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
    struct xds_delta_pool *pool;
    struct xds_budget budget;
    struct xds_delta_stream st;
    struct xds_ads_sets tmp;
    struct xds_ads_event ev;
    struct xds_delta_response r;
};

static void fx_set(struct fx *f, const char *spec)
{
    struct xlate_snapshot *s = mk(spec);
    xds_cache_set_snapshot(f->cache, s, NULL, NULL);
    xlate_snapshot_unref(s);
}

static void fx_init(struct fx *f, const char *spec)
{
    memset(f, 0, sizeof(*f));
    f->cache = xds_cache_new();
    f->pool = xds_delta_pool_new();
    xds_delta_stream_init(&f->st, f->pool, &f->budget);
    if (spec)
        fx_set(f, spec);
}

static void fx_free(struct fx *f)
{
    xds_delta_response_clear(&f->r);
    xds_delta_stream_free(&f->st);
    CHECK_INT_EQ(f->budget.used, 0); /* every charge given back */
    CHECK_INT_EQ(xds_delta_pool_count(f->pool), 0);
    xds_delta_pool_free(f->pool);
    xds_cache_free(f->cache);
}

/* Sends one request: "+a,b" subscribe, "-c" unsubscribe, "=n:v,..." initial
 * versions; |nonce| "" none; |nack| non-NULL makes it a NACK. */
static int req(struct fx *f, enum xds_type t, const char *sub, const char *unsub, const char *init,
               const char *nonce, const char *nack)
{
    const char *s[16], *u[16], *in[16], *iv[16];
    size_t ns = 0, nu = 0, ni = 0;
    char sb[512] = "", ub[512] = "", ib[1024] = "";
    char *save = NULL;
    if (sub) {
        snprintf(sb, sizeof(sb), "%s", sub);
        for (char *x = strtok_r(sb, ",", &save); x; x = strtok_r(NULL, ",", &save))
            s[ns++] = x;
    }
    if (unsub) {
        snprintf(ub, sizeof(ub), "%s", unsub);
        for (char *x = strtok_r(ub, ",", &save); x; x = strtok_r(NULL, ",", &save))
            u[nu++] = x;
    }
    if (init) {
        snprintf(ib, sizeof(ib), "%s", init);
        for (char *x = strtok_r(ib, ",", &save); x; x = strtok_r(NULL, ",", &save)) {
            char *colon = strchr(x, ':');
            *colon = '\0';
            in[ni] = x;
            iv[ni++] = colon + 1;
        }
    }
    struct cx_buf b;
    cx_buf_init(&b, 0);
    REQUIRE_INT_EQ(xdsc_encode_delta_request(&b, t, s, ns, u, nu, in, iv, ni, nonce,
                                             f->st.node.have ? NULL : "node-1",
                                             f->st.node.have ? NULL : "ns/gw", nack),
                   0);
    int rc = xds_delta_on_request(&f->st, (const uint8_t *)b.data, b.len, "", &f->ev);
    cx_buf_free(&b);
    return rc;
}

/* The next response: 1 with f->r filled, 0 when none is due. */
static int next(struct fx *f)
{
    xds_delta_response_clear(&f->r);
    const struct xds_ads_sets *sets = xds_cache_sets_for(f->cache, "ns/gw", &f->tmp);
    int rc = xds_delta_next(&f->st, sets, 0, &f->r);
    REQUIRE(rc >= 0);
    return rc;
}

/* "name=version-of-payload ...; -removed ..." of f->r: names sent, then
 * removed names. */
static const char *summary(struct fx *f)
{
    static char out[2048];
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; i < f->r.n; i++)
        k += (size_t)snprintf(out + k, sizeof(out) - k, "%s%s", i ? " " : "", f->r.items[i]->name);
    for (size_t i = 0; i < f->r.nremoved; i++)
        k += (size_t)snprintf(out + k, sizeof(out) - k, "%s-%s", k ? " " : "", f->r.removed[i]);
    return out;
}

static const char *version_of(struct fx *f, enum xds_type t, const char *name)
{
    struct xlate_snapshot *s = xds_cache_snapshot(f->cache);
    const struct xlate_group *g = xlate_snapshot_group(s, "ns/gw");
    for (size_t i = 0; g && i < g->types[t].n; i++)
        if (strcmp(g->types[t].items[i]->name, name) == 0)
            return g->types[t].items[i]->version;
    return "";
}

static void test_wildcard_cds_transcript(void)
{
    struct fx f;
    char spec[4096] = "ns/gw";
    size_t n = strlen(spec);
    for (int i = 0; i < 50; i++)
        n += (size_t)snprintf(spec + n, sizeof(spec) - n, " C:c%02d=v1", i);
    fx_init(&f, spec);
    /* legacy wildcard: a first CDS request that names nothing */
    REQUIRE_INT_EQ(req(&f, XDS_CLUSTER, NULL, NULL, NULL, "", NULL), 0);
    CHECK(f.ev.first_node);
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_INT_EQ(f.r.n, 50);
    CHECK_INT_EQ(f.r.nremoved, 0);
    CHECK_STR_EQ(f.r.nonce, "1");
    /* nothing more until the ACK, even when something changes */
    char nonce[32];
    snprintf(nonce, sizeof(nonce), "%s", f.r.nonce);
    char changed[4096];
    snprintf(changed, sizeof(changed), "%s", spec);
    memcpy(strstr(changed, "c07=v1") + 4, "v2", 2);
    fx_set(&f, changed);
    CHECK_INT_EQ(next(&f), 0);
    REQUIRE_INT_EQ(req(&f, XDS_CLUSTER, NULL, NULL, NULL, nonce, NULL), 0);
    CHECK_INT_EQ(f.ev.verdict, XDS_ADS_ACK);
    /* then exactly the one that changed */
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_STR_EQ(summary(&f), "c07");
    CHECK_STR_EQ(f.r.items[0]->version, version_of(&f, XDS_CLUSTER, "c07"));
    snprintf(nonce, sizeof(nonce), "%s", f.r.nonce);
    REQUIRE_INT_EQ(req(&f, XDS_CLUSTER, NULL, NULL, NULL, nonce, NULL), 0);
    CHECK_INT_EQ(next(&f), 0);
    /* then the removal of a deleted one, nothing else */
    char *gone = strstr(changed, " C:c33=v1");
    memmove(gone, gone + 9, strlen(gone + 9) + 1);
    fx_set(&f, changed);
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_STR_EQ(summary(&f), "-c33");
    snprintf(nonce, sizeof(nonce), "%s", f.r.nonce);
    REQUIRE_INT_EQ(req(&f, XDS_CLUSTER, NULL, NULL, NULL, nonce, NULL), 0);
    /* a snapshot with the same content: nothing */
    fx_set(&f, changed);
    CHECK_INT_EQ(next(&f), 0);
    fx_free(&f);
}

static void test_wildcard_lds_star_and_types(void)
{
    struct fx f;
    fx_init(&f, "ns/gw L:l1=a L:l2=b R:r1=x C:c1=y E:c1=z");
    REQUIRE_INT_EQ(req(&f, XDS_LISTENER, "*", NULL, NULL, "", NULL), 0);
    REQUIRE_INT_EQ(req(&f, XDS_ROUTE, "r1", NULL, NULL, "", NULL), 0);
    REQUIRE_INT_EQ(req(&f, XDS_CLUSTER, "*", NULL, NULL, "", NULL), 0);
    REQUIRE_INT_EQ(req(&f, XDS_ENDPOINT, "c1", NULL, NULL, "", NULL), 0);
    /* make-before-break order: CDS, EDS, LDS, RDS */
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_INT_EQ(f.r.type, XDS_CLUSTER);
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_INT_EQ(f.r.type, XDS_ENDPOINT);
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_INT_EQ(f.r.type, XDS_LISTENER);
    CHECK_STR_EQ(summary(&f), "l1 l2");
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_INT_EQ(f.r.type, XDS_ROUTE);
    CHECK_STR_EQ(summary(&f), "r1");
    char rnonce[32];
    snprintf(rnonce, sizeof(rnonce), "%s", f.r.nonce);
    CHECK_INT_EQ(next(&f), 0);
    /* "*" is a plain name for RDS: it does not exist, said once */
    REQUIRE_INT_EQ(req(&f, XDS_ROUTE, "*", NULL, NULL, rnonce, NULL), 0);
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_STR_EQ(summary(&f), "-*");
    fx_free(&f);
}

static void test_named_subscriptions(void)
{
    struct fx f;
    fx_init(&f, "ns/gw E:a=1 E:c=3");
    /* b does not exist: said in removed_resources, once */
    REQUIRE_INT_EQ(req(&f, XDS_ENDPOINT, "a,b", NULL, NULL, "", NULL), 0);
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_STR_EQ(summary(&f), "a -b");
    char nonce[32];
    snprintf(nonce, sizeof(nonce), "%s", f.r.nonce);
    REQUIRE_INT_EQ(req(&f, XDS_ENDPOINT, NULL, NULL, NULL, nonce, NULL), 0);
    CHECK_INT_EQ(next(&f), 0);
    /* subscribe c mid-stream: only c */
    REQUIRE_INT_EQ(req(&f, XDS_ENDPOINT, "c", NULL, NULL, "", NULL), 0);
    CHECK_INT_EQ(f.ev.verdict, XDS_ADS_SUBSCRIBE);
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_STR_EQ(summary(&f), "c");
    snprintf(nonce, sizeof(nonce), "%s", f.r.nonce);
    REQUIRE_INT_EQ(req(&f, XDS_ENDPOINT, NULL, NULL, NULL, nonce, NULL), 0);
    /* unsubscribe a: nothing is sent, and its changes no more */
    REQUIRE_INT_EQ(req(&f, XDS_ENDPOINT, NULL, "a", NULL, "", NULL), 0);
    CHECK_INT_EQ(next(&f), 0);
    fx_set(&f, "ns/gw E:a=9 E:c=3");
    CHECK_INT_EQ(next(&f), 0);
    /* b appears: sent */
    fx_set(&f, "ns/gw E:a=9 E:b=2 E:c=3");
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_STR_EQ(summary(&f), "b");
    snprintf(nonce, sizeof(nonce), "%s", f.r.nonce);
    REQUIRE_INT_EQ(req(&f, XDS_ENDPOINT, NULL, NULL, NULL, nonce, NULL), 0);
    /* c goes: removed */
    fx_set(&f, "ns/gw E:a=9 E:b=2");
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_STR_EQ(summary(&f), "-c");
    fx_free(&f);
}

static void test_reconnect_with_initial_versions(void)
{
    struct fx f;
    fx_init(&f, "ns/gw C:c1=a C:c2=b C:c3=c E:c1=x E:c2=y");
    char init[512];
    /* a client that holds every version of this snapshot: nothing resent */
    snprintf(init, sizeof(init), "c1:%s,c2:%s,c3:%s", version_of(&f, XDS_CLUSTER, "c1"),
             version_of(&f, XDS_CLUSTER, "c2"), version_of(&f, XDS_CLUSTER, "c3"));
    REQUIRE_INT_EQ(req(&f, XDS_CLUSTER, "*", NULL, init, "", NULL), 0);
    snprintf(init, sizeof(init), "c1:%s,c2:%s", version_of(&f, XDS_ENDPOINT, "c1"),
             version_of(&f, XDS_ENDPOINT, "c2"));
    REQUIRE_INT_EQ(req(&f, XDS_ENDPOINT, "c1,c2", NULL, init, "", NULL), 0);
    CHECK_INT_EQ(next(&f), 0);
    /* a later change is sent as usual */
    fx_set(&f, "ns/gw C:c1=a C:c2=B C:c3=c E:c1=x E:c2=y");
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_STR_EQ(summary(&f), "c2");
    fx_free(&f);

    /* stale versions, a name that went, an unknown version format */
    fx_init(&f, "ns/gw C:c1=a C:c2=b");
    snprintf(init, sizeof(init), "c1:%s,c2:0000000000000000,gone:%s,c0:v1",
             version_of(&f, XDS_CLUSTER, "c1"), version_of(&f, XDS_CLUSTER, "c1"));
    REQUIRE_INT_EQ(req(&f, XDS_CLUSTER, NULL, NULL, init, "", NULL), 0);
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_STR_EQ(summary(&f), "c2 -c0 -gone");
    fx_free(&f);
}

static void test_nack_and_stale_nonces(void)
{
    struct fx f;
    fx_init(&f, "ns/gw C:c1=a");
    REQUIRE_INT_EQ(req(&f, XDS_CLUSTER, "*", NULL, NULL, "", NULL), 0);
    REQUIRE_INT_EQ(next(&f), 1);
    char nonce[32];
    snprintf(nonce, sizeof(nonce), "%s", f.r.nonce);
    /* a NACK: counted once, with its text and the version it refused */
    REQUIRE_INT_EQ(req(&f, XDS_CLUSTER, NULL, NULL, NULL, nonce, "bad cluster"), 0);
    CHECK_INT_EQ(f.ev.verdict, XDS_ADS_NACK);
    CHECK_STR_EQ(f.ev.nack_message, "bad cluster");
    CHECK_INT_EQ(f.ev.nack_code, 3);
    CHECK_STR_EQ(f.ev.version, f.st.types[XDS_CLUSTER].x.version_sent);
    REQUIRE_INT_EQ(req(&f, XDS_CLUSTER, NULL, NULL, NULL, nonce, "bad cluster"), 0);
    CHECK_INT_EQ(f.ev.verdict, XDS_ADS_SUBSCRIBE); /* the same nonce again: no second NACK */
    /* not resent until it changes */
    CHECK_INT_EQ(next(&f), 0);
    fx_set(&f, "ns/gw C:c1=b");
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_STR_EQ(summary(&f), "c1");
    /* a stale nonce is no ACK, but its subscription changes apply */
    REQUIRE_INT_EQ(req(&f, XDS_CLUSTER, "extra", NULL, NULL, "1", NULL), 0);
    CHECK_INT_EQ(f.ev.verdict, XDS_ADS_STALE);
    CHECK_INT_EQ(f.st.types[XDS_CLUSTER].nsubs, 1);
    CHECK(f.st.types[XDS_CLUSTER].x.awaiting);
    fx_free(&f);
}

static void test_wildcard_off_and_on(void)
{
    struct fx f;
    fx_init(&f, "ns/gw L:a=1 L:b=2 L:c=3");
    REQUIRE_INT_EQ(req(&f, XDS_LISTENER, "*,b", NULL, NULL, "", NULL), 0);
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_STR_EQ(summary(&f), "a b c");
    char nonce[32];
    snprintf(nonce, sizeof(nonce), "%s", f.r.nonce);
    REQUIRE_INT_EQ(req(&f, XDS_LISTENER, NULL, "*", NULL, nonce, NULL), 0);
    /* the client keeps b (explicit) and drops the rest itself: nothing sent */
    CHECK_INT_EQ(next(&f), 0);
    fx_set(&f, "ns/gw L:a=9 L:b=2 L:c=3");
    CHECK_INT_EQ(next(&f), 0);
    fx_set(&f, "ns/gw L:a=9 L:b=8 L:c=3");
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_STR_EQ(summary(&f), "b");
    snprintf(nonce, sizeof(nonce), "%s", f.r.nonce);
    /* wildcard again: what it lacks (a, c), not b */
    REQUIRE_INT_EQ(req(&f, XDS_LISTENER, "*", NULL, NULL, nonce, NULL), 0);
    REQUIRE_INT_EQ(next(&f), 1);
    CHECK_STR_EQ(summary(&f), "a c");
    fx_free(&f);
}

static void test_shared_sets(void)
{
    struct fx f;
    fx_init(&f, "ns/gw C:c1=a C:c2=b");
    struct xds_delta_stream two;
    xds_delta_stream_init(&two, f.pool, &f.budget);
    REQUIRE_INT_EQ(req(&f, XDS_CLUSTER, "*", NULL, NULL, "", NULL), 0);
    REQUIRE_INT_EQ(next(&f), 1);
    struct cx_buf b;
    cx_buf_init(&b, 0);
    const char *star[] = {"*"};
    REQUIRE_INT_EQ(xdsc_encode_delta_request(&b, XDS_CLUSTER, star, 1, NULL, 0, NULL, NULL, 0, "",
                                             "node-2", "ns/gw", NULL),
                   0);
    struct xds_ads_event ev;
    REQUIRE_INT_EQ(xds_delta_on_request(&two, (const uint8_t *)b.data, b.len, "", &ev), 0);
    cx_buf_free(&b);
    struct xds_delta_response r2 = {0};
    const struct xds_ads_sets *sets = xds_cache_sets_for(f.cache, "ns/gw", &f.tmp);
    REQUIRE_INT_EQ(xds_delta_next(&two, sets, 0, &r2), 1);
    CHECK_INT_EQ(r2.n, 2);
    xds_delta_response_clear(&r2);
    /* both streams hold one interned copy of the set */
    CHECK_INT_EQ(xds_delta_pool_count(f.pool), 1);
    /* a new version: the old copy goes once nobody holds it */
    fx_set(&f, "ns/gw C:c1=a C:c2=c");
    xds_delta_stream_free(&two);
    CHECK_INT_EQ(xds_delta_pool_count(f.pool), 1);
    fx_free(&f);
}

static void test_limits_and_garbage(void)
{
    struct fx f;
    fx_init(&f, "ns/gw C:c1=a");
    CHECK_INT_EQ(xds_delta_on_request(&f.st, (const uint8_t *)"\xff\xff\xff", 3, "", &f.ev),
                 XDS_ADS_EINVAL);
    /* a request without a type_url */
    uint8_t deep[8];
    size_t n = 0;
    deep[n++] = 0x0a; /* node */
    deep[n++] = 0x02;
    deep[n++] = 0x0a; /* id */
    deep[n++] = 0x00;
    CHECK_INT_EQ(xds_delta_on_request(&f.st, deep, n, "", &f.ev), XDS_ADS_EINVAL);
    fx_free(&f);
    /* more names than XDS_ADS_MAX_NAMES in one request */
    fx_init(&f, "ns/gw C:c1=a");
    size_t many = XDS_ADS_MAX_NAMES + 1;
    char **names = calloc(many, sizeof(char *));
    char *store = malloc(many * 8);
    REQUIRE(names && store);
    for (size_t i = 0; i < many; i++) {
        snprintf(store + i * 8, 8, "n%zu", i);
        names[i] = store + i * 8;
    }
    struct cx_buf b;
    cx_buf_init(&b, 0);
    REQUIRE_INT_EQ(xdsc_encode_delta_request(&b, XDS_ENDPOINT, (const char *const *)names, many,
                                             NULL, 0, NULL, NULL, 0, "", "n", "ns/gw", NULL),
                   0);
    CHECK_INT_EQ(xds_delta_on_request(&f.st, (const uint8_t *)b.data, b.len, "", &f.ev),
                 XDS_ADS_ELIMIT);
    cx_buf_free(&b);
    free(names);
    free(store);
    fx_free(&f);
}

static void test_budget_charged(void)
{
    struct fx f;
    fx_init(&f, "ns/gw E:a=1");
    REQUIRE_INT_EQ(req(&f, XDS_ENDPOINT, "aaaa,bbbb", NULL, NULL, "", NULL), 0);
    size_t two = f.budget.used;
    CHECK(two > 8);
    REQUIRE_INT_EQ(req(&f, XDS_ENDPOINT, NULL, "aaaa", NULL, "", NULL), 0);
    CHECK_INT_LT(f.budget.used, two);
    CHECK(f.budget.used > 0);
    fx_free(&f); /* checks the rest is given back */
}

static int emit(void *user, const void *p, size_t n, struct xds_resource *res)
{
    (void)res;
    return cx_buf_append(user, p, n);
}

static void test_encoding(void)
{
    struct fx f;
    fx_init(&f, "ns/gw C:c1=payload-one C:c2=payload-two");
    REQUIRE_INT_EQ(req(&f, XDS_CLUSTER, "c1,gone", NULL, NULL, "", NULL), 0);
    REQUIRE_INT_EQ(next(&f), 1);
    struct cx_buf b;
    cx_buf_init(&b, 0);
    size_t size = xds_delta_response_size(&f.r, "replica-a");
    REQUIRE_INT_EQ(xds_delta_response_emit(&f.r, "replica-a", emit, &b), 0);
    CHECK_INT_EQ(b.len, size);
    xdsc_delta_response *r = envoy__service__discovery__v3__delta_discovery_response__unpack(
        NULL, b.len, (const uint8_t *)b.data);
    REQUIRE(r != NULL);
    CHECK_STR_EQ(r->type_url, XDS_TYPE_URL_CLUSTER);
    CHECK_STR_EQ(r->nonce, f.r.nonce);
    CHECK_STR_EQ(r->system_version_info, f.r.version);
    REQUIRE_INT_EQ(r->n_resources, 1);
    CHECK_STR_EQ(r->resources[0]->name, "c1");
    CHECK_STR_EQ(r->resources[0]->version, version_of(&f, XDS_CLUSTER, "c1"));
    REQUIRE(r->resources[0]->resource != NULL);
    CHECK_STR_EQ(r->resources[0]->resource->type_url, XDS_TYPE_URL_CLUSTER);
    CHECK_INT_EQ(r->resources[0]->resource->value.len, f.r.items[0]->len);
    CHECK(memcmp(r->resources[0]->resource->value.data, f.r.items[0]->bytes, f.r.items[0]->len) ==
          0);
    REQUIRE_INT_EQ(r->n_removed_resources, 1);
    CHECK_STR_EQ(r->removed_resources[0], "gone");
    REQUIRE(r->control_plane != NULL);
    CHECK_STR_EQ(r->control_plane->identifier, "replica-a");
    xdsc_delta_response_free(r);
    cx_buf_free(&b);
    fx_free(&f);
}

static const struct cxt_case cases[] = {
    CXT(test_wildcard_cds_transcript),
    CXT(test_wildcard_lds_star_and_types),
    CXT(test_named_subscriptions),
    CXT(test_reconnect_with_initial_versions),
    CXT(test_nack_and_stale_nonces),
    CXT(test_wildcard_off_and_on),
    CXT(test_shared_sets),
    CXT(test_limits_and_garbage),
    CXT(test_budget_charged),
    CXT(test_encoding),
};
CXT_MAIN(cases)
