/* Replays DiscoveryRequests recorded from real xDS clients (tests/data/xds,
 * see its README) through the ADS state machine and checks what it answers
 * after each one, against a snapshot shaped like the e2e test's. */
#include "cxtest.h"
#include "xds_ads.h"
#include "xds_cache.h"
#include "xdsb.h"
#include "xdsc.h"
#include "xlate_snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fx {
    struct xds_cache *cache;
    struct xds_ads_stream st;
    struct xds_ads_event ev;
};

static void fx_init(struct fx *f)
{
    memset(f, 0, sizeof(*f));
    f->cache = xds_cache_new();
    xds_ads_stream_init(&f->st);
    struct xlate_snapshot *s = xdsc_snapshot_new();
    struct xdsb_route r[2] = {{.prefix = "/svc.A/", .cluster = "cA"},
                              {.prefix = "/svc.B/", .cluster = "cB"}};
    int pa = 1001, pb = 1002;
    if (xdsc_snapshot_add(s, "e2e/gw", xdsb_api_listener("echo.test", "rc-echo")) != 0 ||
        xdsc_snapshot_add(s, "e2e/gw", xdsb_route_config("rc-echo", "echo.test", r, 2)) != 0 ||
        xdsc_snapshot_add(s, "e2e/gw", xdsb_cluster("cA", 0, 1)) != 0 ||
        xdsc_snapshot_add(s, "e2e/gw", xdsb_cluster("cB", 0, 1)) != 0 ||
        xdsc_snapshot_add(s, "e2e/gw", xdsb_endpoints("cA", &pa, 1)) != 0 ||
        xdsc_snapshot_add(s, "e2e/gw", xdsb_endpoints("cB", &pb, 1)) != 0 ||
        xdsc_snapshot_seal(s) != 0)
        abort();
    xds_cache_set_snapshot(f->cache, s, NULL, NULL);
    xlate_snapshot_unref(s);
}

static void fx_free(struct fx *f)
{
    xds_ads_stream_free(&f->st);
    xds_cache_free(f->cache);
}

/* Feeds one recorded file; returns on_request's result. */
static int feed(struct fx *f, const char *rel)
{
    size_t len = 0;
    char *data = cxt_read_file(cxt_data_path(rel), &len);
    if (!data) {
        printf("# cannot read %s\n", rel);
        return -100;
    }
    int rc = xds_ads_on_request(&f->st, (uint8_t *)data, len, "default", &f->ev);
    free(data);
    return rc;
}

/* All responses now due, as "TYPE nonce: names; ..." */
static const char *drain(struct fx *f)
{
    static char out[1024];
    size_t k = 0;
    out[0] = '\0';
    struct xds_ads_sets tmp;
    const struct xds_ads_sets *sets = xds_cache_sets_for(f->cache, f->st.node.group, &tmp);
    struct xds_ads_response r;
    while (xds_ads_next(&f->st, sets, 1, &r) == 1) {
        k += (size_t)snprintf(out + k, sizeof(out) - k, "%s%s %s:", k ? "; " : "",
                              xlate_type_short(r.type), r.nonce);
        for (size_t i = 0; i < r.n; i++)
            k += (size_t)snprintf(out + k, sizeof(out) - k, " %s", r.items[i]->name);
        xds_ads_response_clear(&r);
    }
    return out;
}

static void test_grpc_python_initial_sequence(void)
{
    struct fx f;
    fx_init(&f);
    const char *want[8] = {"LDS 1: echo.test", "", "RDS 2: rc-echo", "",
                           "CDS 3: cA cB",     "", "EDS 4: cA cB",   ""};
    const enum xds_ads_verdict verdict[8] = {
        XDS_ADS_SUBSCRIBE, XDS_ADS_ACK, XDS_ADS_SUBSCRIBE, XDS_ADS_ACK,
        XDS_ADS_SUBSCRIBE, XDS_ADS_ACK, XDS_ADS_SUBSCRIBE, XDS_ADS_ACK};
    for (int i = 0; i < 8; i++) {
        char rel[64];
        snprintf(rel, sizeof(rel), "xds/grpc-python-1.51/%02d.bin", i);
        REQUIRE_INT_EQ(feed(&f, rel), 0);
        CHECK_INT_EQ(f.ev.verdict, verdict[i]);
        CHECK_STR_EQ(drain(&f), want[i]);
        if (i == 0) {
            CHECK(f.ev.first_node);
            CHECK_STR_EQ(f.st.node.id, "e2e-client");
            CHECK_STR_EQ(f.st.node.group, "e2e/gw"); /* from node.metadata */
            CHECK_STR_CONTAINS(f.st.node.user_agent, "gRPC C-core");
        }
    }
    /* gRPC asks for exact names: no wildcard anywhere */
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        CHECK(!f.st.types[t].wildcard);

    /* after its Listener vanished it drops CDS/EDS with empty lists: that
     * is "nothing", not a (legacy) wildcard, on a non-first request */
    /* (as if responses with the recording's nonces were out, unanswered) */
    snprintf(f.st.types[XDS_ENDPOINT].x.nonce_sent, XDS_NONCE_MAX, "5");
    snprintf(f.st.types[XDS_CLUSTER].x.nonce_sent, XDS_NONCE_MAX, "9");
    f.st.types[XDS_ENDPOINT].x.answered = f.st.types[XDS_CLUSTER].x.answered = 0;
    REQUIRE_INT_EQ(feed(&f, "xds/grpc-python-1.51/unsub-eds.bin"), 0);
    REQUIRE_INT_EQ(feed(&f, "xds/grpc-python-1.51/unsub-cds.bin"), 0);
    CHECK_INT_EQ(f.ev.verdict, XDS_ADS_ACK);
    CHECK(!f.st.types[XDS_CLUSTER].wildcard);
    CHECK_INT_EQ(f.st.types[XDS_CLUSTER].nnames, 0);
    CHECK_INT_EQ(f.st.types[XDS_CLUSTER].nsent, 0);
    CHECK_STR_EQ(drain(&f), "");
    fx_free(&f);
}

static void test_grpc_python_nack(void)
{
    struct fx f;
    fx_init(&f);
    REQUIRE_INT_EQ(feed(&f, "xds/grpc-python-1.51/00.bin"), 0);
    CHECK_STR_EQ(drain(&f), "LDS 1: echo.test");
    REQUIRE_INT_EQ(feed(&f, "xds/grpc-python-1.51/02.bin"), 0);
    CHECK_STR_EQ(drain(&f), "RDS 2: rc-echo");
    /* the recording answers nonce 7: anything else is stale */
    REQUIRE_INT_EQ(feed(&f, "xds/grpc-python-1.51/nack-rds.bin"), 0);
    CHECK_INT_EQ(f.ev.verdict, XDS_ADS_STALE);
    snprintf(f.st.types[XDS_ROUTE].x.nonce_sent, XDS_NONCE_MAX, "7");
    REQUIRE_INT_EQ(feed(&f, "xds/grpc-python-1.51/nack-rds.bin"), 0);
    CHECK_INT_EQ(f.ev.verdict, XDS_ADS_NACK);
    CHECK_INT_EQ(f.ev.nack_code, 3);
    CHECK_STR_CONTAINS(f.ev.nack_message, "xDS response validation errors");
    CHECK_STR_CONTAINS(f.ev.nack_message, "rc-echo");
    CHECK_STR_CONTAINS(f.ev.nack_message, "incorrect total weight");
    CHECK(f.st.types[XDS_ROUTE].x.nacked);
    CHECK_STR_EQ(drain(&f), "");
    fx_free(&f);
}

/* grpc-js widens its CDS (then EDS) subscription with a nonce-less request
 * while the first response of that type is unanswered: the widening waits
 * for the ACK, then only what the client lacks goes out (all of CDS, which
 * is full state; just the new cB for EDS). */
static void test_grpc_js_widening_subscriptions(void)
{
    struct fx f;
    fx_init(&f);
    const char *want[12] = {
        "LDS 1: echo.test",
        "",
        "RDS 2: rc-echo",
        "",
        "CDS 3: cA",
        "",
        "CDS 4: cA cB",
        "EDS 5: cA",
        "",
        "",
        "EDS 6: cB",
        "",
    };
    for (int i = 0; i < 12; i++) {
        char rel[64];
        snprintf(rel, sizeof(rel), "xds/grpc-js-1.14/%02d.bin", i);
        REQUIRE_INT_EQ(feed(&f, rel), 0);
        const char *got = drain(&f);
        if (strcmp(got, want[i]) != 0)
            printf("# after %s\n", rel);
        CHECK_STR_EQ(got, want[i]);
        if (i == 0)
            CHECK_STR_CONTAINS(f.st.node.user_agent, "gRPC Node");
    }
    CHECK(!f.st.types[XDS_ENDPOINT].x.awaiting);
    CHECK_INT_EQ(f.st.types[XDS_ENDPOINT].nsent, 2);
    fx_free(&f);
}

static const struct cxt_case cases[] = {
    CXT(test_grpc_python_initial_sequence),
    CXT(test_grpc_python_nack),
    CXT(test_grpc_js_widening_subscriptions),
};
CXT_MAIN(cases)
