/* xds_sub: the parts the SotW and delta stream machines share. The same
 * ACK/NACK transcript through a SotW and a delta stream gives the same
 * verdicts, counts and versions (one implementation); the node and the
 * decoding bounds apply to both alike; the lookups and the budget. */
#include "cxtest.h"
#include "xds_ads.h"
#include "xds_cache.h"
#include "xds_delta.h"
#include "xds_pbcheck.h"
#include "xds_sub.h"
#include "xdsc.h"
#include "xdsc.h"
#include "xlate_snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fx {
    struct xds_cache *cache;
    struct xds_delta_pool *pool;
    struct xds_budget budget;
    struct xds_ads_stream sotw;
    struct xds_delta_stream delta;
    struct xds_ads_sets tmp;
};

static void fx_init(struct fx *f)
{
    memset(f, 0, sizeof(*f));
    f->cache = xds_cache_new();
    f->pool = xds_delta_pool_new();
    xds_ads_stream_init(&f->sotw);
    xds_delta_stream_init(&f->delta, f->pool, &f->budget);
    struct xlate_snapshot *s = xdsc_snapshot_new();
    if (xdsc_snapshot_add(s, "ns/gw", xdsc_fake_resource(XDS_CLUSTER, "c1", "one")) != 0 ||
        xdsc_snapshot_add(s, "ns/gw", xdsc_fake_resource(XDS_CLUSTER, "c2", "two")) != 0 ||
        xdsc_snapshot_seal(s) != 0)
        abort();
    xds_cache_set_snapshot(f->cache, s, NULL, NULL);
    xlate_snapshot_unref(s);
}

static void fx_free(struct fx *f)
{
    xds_ads_stream_free(&f->sotw);
    xds_delta_stream_free(&f->delta);
    CHECK_INT_EQ(f->budget.used, 0);
    xds_delta_pool_free(f->pool);
    xds_cache_free(f->cache);
}

/* One CDS request on each stream with |nonce| and, with |nack|, an
 * error_detail; the verdicts of both. */
static void both(struct fx *f, const char *nonce, const char *nack, struct xds_ads_event *es,
                 struct xds_ads_event *ed)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    REQUIRE_INT_EQ(
        xdsc_encode_request(&b, XDS_CLUSTER, NULL, 0, "", nonce, "node-1", NULL, "ns/gw", 3, nack),
        0);
    REQUIRE_INT_EQ(xds_ads_on_request(&f->sotw, (const uint8_t *)b.data, b.len, "", es), 0);
    cx_buf_reset(&b);
    REQUIRE_INT_EQ(xdsc_encode_delta_request(&b, XDS_CLUSTER, NULL, 0, NULL, 0, NULL, NULL, 0,
                                             nonce, "node-1", "ns/gw", nack),
                   0);
    REQUIRE_INT_EQ(xds_delta_on_request(&f->delta, (const uint8_t *)b.data, b.len, "", ed), 0);
    cx_buf_free(&b);
}

/* The next response of each; returns their nonces (equal: one counter
 * rule) in |nonce|. */
static void respond(struct fx *f, char *nonce, size_t cap)
{
    const struct xds_ads_sets *sets = xds_cache_sets_for(f->cache, "ns/gw", &f->tmp);
    struct xds_ads_response rs;
    struct xds_delta_response rd;
    REQUIRE_INT_EQ(xds_ads_next(&f->sotw, sets, 7, &rs), 1);
    REQUIRE_INT_EQ(xds_delta_next(&f->delta, sets, 7, &rd), 1);
    CHECK_STR_EQ(rs.nonce, rd.nonce);
    CHECK_STR_EQ(rs.version, rd.version);
    CHECK_INT_EQ(rs.n, 2);
    CHECK_INT_EQ(rd.n, 2);
    snprintf(nonce, cap, "%s", rs.nonce);
    xds_ads_response_clear(&rs);
    xds_delta_response_clear(&rd);
}

static void test_same_ack_nack_rules(void)
{
    struct fx f;
    fx_init(&f);
    struct xds_ads_event es, ed;
    char nonce[XDS_NONCE_MAX];
    both(&f, "", NULL, &es, &ed);
    CHECK_INT_EQ(es.verdict, XDS_ADS_SUBSCRIBE);
    CHECK_INT_EQ(ed.verdict, XDS_ADS_SUBSCRIBE);
    CHECK(es.first_node && ed.first_node);
    CHECK_STR_EQ(f.sotw.node.group, "ns/gw");
    CHECK_STR_EQ(f.delta.node.group, "ns/gw");
    respond(&f, nonce, sizeof(nonce));
    /* one response outstanding: nothing more until it is answered */
    const struct xds_ads_sets *sets = xds_cache_sets_for(f.cache, "ns/gw", &f.tmp);
    CHECK(!xds_sub_ready(&f.sotw.types[XDS_CLUSTER].x, sets->t[XDS_CLUSTER]));
    CHECK(!xds_sub_ready(&f.delta.types[XDS_CLUSTER].x, sets->t[XDS_CLUSTER]));

    /* transcript: NACK, the same NACK again, ACK after it, the ACK again,
     * a stale nonce; each step the same verdict on both streams */
    static const struct {
        const char *nack;
        int stale;
        enum xds_ads_verdict want;
    } steps[] = {
        {"bad cluster", 0, XDS_ADS_NACK},
        {"bad cluster", 0, XDS_ADS_SUBSCRIBE}, /* a NACK counts once */
        {NULL, 0, XDS_ADS_ACK},                /* accepted after all */
        {NULL, 0, XDS_ADS_SUBSCRIBE},          /* no second ACK */
        {NULL, 1, XDS_ADS_STALE},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        both(&f, steps[i].stale ? "999" : nonce, steps[i].nack, &es, &ed);
        CHECK_INT_EQ(es.verdict, steps[i].want);
        CHECK_INT_EQ(ed.verdict, steps[i].want);
        if (steps[i].want == XDS_ADS_NACK || steps[i].want == XDS_ADS_ACK) {
            CHECK_INT_EQ(es.origin_ns, 7);
            CHECK_INT_EQ(ed.origin_ns, 7);
            CHECK_STR_EQ(es.version, ed.version);
            CHECK(es.version[0] != '\0');
        }
        if (steps[i].want == XDS_ADS_NACK) {
            CHECK_INT_EQ(es.nack_code, 3);
            CHECK_STR_EQ(es.nack_message, "bad cluster");
            CHECK_STR_EQ(ed.nack_message, "bad cluster");
        }
    }
    CHECK_INT_EQ(f.sotw.types[XDS_CLUSTER].x.nacks, 1);
    CHECK_INT_EQ(f.delta.types[XDS_CLUSTER].x.nacks, 1);
    CHECK(!f.sotw.types[XDS_CLUSTER].x.nacked && !f.delta.types[XDS_CLUSTER].x.nacked);
    CHECK_STR_EQ(f.sotw.types[XDS_CLUSTER].x.version_acked,
                 f.delta.types[XDS_CLUSTER].x.version_acked);
    fx_free(&f);
}

/* |field| as a length-delimited field holding |in| (n bytes), after |out|'s
 * |len| bytes; returns the new length. */
static size_t put_ld(uint8_t *out, size_t len, unsigned field, const uint8_t *in, size_t n)
{
    uint8_t tmp[8192];
    size_t k = 0;
    tmp[k++] = (uint8_t)(field << 3 | 2);
    for (size_t v = n;; v >>= 7) {
        tmp[k++] = (uint8_t)(v > 0x7f ? (v & 0x7f) | 0x80 : v);
        if (v <= 0x7f)
            break;
    }
    memcpy(tmp + k, in, n);
    memcpy(out + len, tmp, k + n);
    return len + k + n;
}

/* A Node whose metadata holds a value nested |depth| ListValues deep. */
static size_t deep_node(uint8_t *out, int depth)
{
    uint8_t a[8192], b[8192];
    size_t n = 0;
    for (int i = 0; i < depth; i++) {
        n = put_ld(b, 0, 1, a, n); /* ListValue.values */
        n = put_ld(a, 0, 6, b, n); /* Value.list_value */
    }
    size_t e = put_ld(b, 0, 1, (const uint8_t *)"k", 1); /* entry key */
    e = put_ld(b, e, 2, a, n);                           /* entry value */
    n = put_ld(a, 0, 1, b, e);                           /* Struct.fields */
    return put_ld(out, 0, 3, a, n);                      /* Node.metadata */
}

static void test_same_bounds_and_garbage(void)
{
    struct fx f;
    fx_init(&f);
    struct xds_ads_event ev;
    uint8_t node[8192], msg[8192];
    /* a node nested 40 levels deep: refused by both before decoding;
     * node is field 2 of a DiscoveryRequest, 1 of a DeltaDiscoveryRequest */
    size_t nn = deep_node(node, 40);
    size_t n = put_ld(msg, 0, 2, node, nn);
    CHECK_INT_EQ(xds_ads_on_request(&f.sotw, msg, n, "", &ev), XDS_ADS_EBOUND);
    CHECK_INT_EQ(ev.pb_error, XDS_PB_TOO_DEEP);
    n = put_ld(msg, 0, 1, node, nn);
    CHECK_INT_EQ(xds_delta_on_request(&f.delta, msg, n, "", &ev), XDS_ADS_EBOUND);
    CHECK_INT_EQ(ev.pb_error, XDS_PB_TOO_DEEP);
    CHECK(!f.sotw.node.have && !f.delta.node.have);
    /* 10 levels are fine: refused only for want of a type_url, the node
     * kept from the first request all the same */
    nn = deep_node(node, 10);
    n = put_ld(msg, 0, 2, node, nn);
    CHECK_INT_EQ(xds_ads_on_request(&f.sotw, msg, n, "dflt", &ev), XDS_ADS_EINVAL);
    n = put_ld(msg, 0, 1, node, nn);
    CHECK_INT_EQ(xds_delta_on_request(&f.delta, msg, n, "dflt", &ev), XDS_ADS_EINVAL);
    CHECK(f.sotw.node.have && f.delta.node.have);
    CHECK_STR_EQ(f.sotw.node.group, "dflt");
    CHECK_STR_EQ(f.delta.node.group, "dflt");
    /* not a message at all */
    static const uint8_t junk[] = {0xff, 0xff, 0xff};
    CHECK_INT_EQ(xds_ads_on_request(&f.sotw, junk, sizeof(junk), "", &ev), XDS_ADS_EINVAL);
    CHECK_INT_EQ(xds_delta_on_request(&f.delta, junk, sizeof(junk), "", &ev), XDS_ADS_EINVAL);
    /* a type we do not serve: ignored by both */
    static const char url[] = "type.googleapis.com/envoy.config.core.v3.Nope";
    n = put_ld(msg, 0, 4, (const uint8_t *)url, sizeof(url) - 1); /* DiscoveryRequest.type_url */
    CHECK_INT_EQ(xds_ads_on_request(&f.sotw, msg, n, "", &ev), 0);
    CHECK_INT_EQ(ev.verdict, XDS_ADS_UNKNOWN_TYPE);
    CHECK_INT_EQ(ev.type, -1);
    n = put_ld(msg, 0, 2, (const uint8_t *)url, sizeof(url) - 1); /* Delta...type_url */
    CHECK_INT_EQ(xds_delta_on_request(&f.delta, msg, n, "", &ev), 0);
    CHECK_INT_EQ(ev.verdict, XDS_ADS_UNKNOWN_TYPE);
    CHECK_INT_EQ(ev.type, -1);
    fx_free(&f);
}

static void test_lookups_and_budget(void)
{
    char *v[] = {"a", "c", "e"};
    int found;
    CHECK_INT_EQ(xds_sub_find_str(v, 3, "c", &found), 1);
    CHECK(found);
    CHECK_INT_EQ(xds_sub_find_str(v, 3, "d", &found), 2);
    CHECK(!found);
    CHECK_INT_EQ(xds_sub_find_str(v, 3, "z", &found), 3);
    CHECK(!found);
    CHECK_INT_EQ(xds_sub_find_str(NULL, 0, "a", &found), 0);
    struct xds_budget b = {.max = 100};
    size_t mine = 0, other = 0;
    xds_sub_charge(&b, &mine, 30);
    xds_sub_charge(&b, &other, 50);
    CHECK_INT_EQ(b.used, 80);
    xds_sub_uncharge(&b, &mine, 1000); /* never more than it charged */
    CHECK_INT_EQ(b.used, 50);
    CHECK_INT_EQ(mine, 0);
    xds_sub_charge(NULL, &mine, 10); /* no budget: nothing */
    CHECK_INT_EQ(mine, 0);
    char small[4];
    xds_sub_copy(small, sizeof(small), "abcdef");
    CHECK_STR_EQ(small, "abc");
    xds_sub_copy(small, sizeof(small), NULL);
    CHECK_STR_EQ(small, "");
    CHECK(xds_sub_full_state(XDS_LISTENER) && xds_sub_full_state(XDS_CLUSTER));
    CHECK(!xds_sub_full_state(XDS_ROUTE) && !xds_sub_full_state(XDS_ENDPOINT));
}

static const struct cxt_case cases[] = {
    CXT(test_same_ack_nack_rules),
    CXT(test_same_bounds_and_garbage),
    CXT(test_lookups_and_budget),
};
CXT_MAIN(cases)
