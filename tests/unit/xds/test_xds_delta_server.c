/* Delta ADS over real sockets: the xDS server with our delta client
 * (tests/lib/xdsc_delta). A 50-Upstream Gateway's Clusters, then exactly
 * the one that changed, then the removal of a deleted one; a proxy that
 * reconnects to another replica with the versions it holds gets nothing;
 * a proxy with a SotW and a delta stream sees the same configuration;
 * NACKs reach the NACK records as SotW ones do; authentication applies. */
#include "cxtest.h"
#include "xds_server.h"
#include "xdsc.h"
#include "xdsc_delta.h"
#include "xlate_snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_MS 5000
#define GW      "ns/gw"

static struct event_base *base;

/* 50 clusters c00..c49 (payload |gen| for |changed|, absent |gone|), an
 * EDS set for each, one listener. Built afresh each time: two replicas
 * translate the same objects into equal bytes and versions. */
static struct xlate_snapshot *world(int changed, int gen, int gone)
{
    struct xlate_snapshot *s = xdsc_snapshot_new();
    char name[32], payload[32];
    for (int i = 0; i < 50; i++) {
        if (i == gone)
            continue;
        snprintf(name, sizeof(name), "c%02d", i);
        snprintf(payload, sizeof(payload), "cluster-%d-%d", i, i == changed ? gen : 0);
        if (xdsc_snapshot_add(s, GW, xdsc_fake_resource(XDS_CLUSTER, name, payload)) != 0 ||
            xdsc_snapshot_add(s, GW, xdsc_fake_resource(XDS_ENDPOINT, name, "eps")) != 0)
            abort();
    }
    if (xdsc_snapshot_add(s, GW, xdsc_fake_resource(XDS_LISTENER, "l1", "listener")) != 0 ||
        xdsc_snapshot_seal(s) != 0)
        abort();
    return s;
}

static struct xds_server *server(enum xds_auth_mode auth)
{
    struct xds_server_config cfg = {.listen = "127.0.0.1:0", .identifier = "r", .auth = auth};
    char err[256];
    struct xds_server *srv = xds_server_new(base, &cfg, err, sizeof(err));
    if (!srv)
        printf("# %s\n", err);
    return srv;
}

static void publish(struct xds_server *srv, struct xlate_snapshot *s)
{
    xds_server_set_snapshot(srv, s);
    xlate_snapshot_unref(s);
}

static struct xdsc_delta *delta(struct xdsc *c, const char *node)
{
    struct xdsc_delta_config dc = {.node_id = node, .gateway = GW, .keep = 1};
    return xdsc_delta_open(c, &dc);
}

static const char *const star[] = {"*"};

static void test_clusters_change_and_removal(void)
{
    struct xds_server *srv = server(XDS_AUTH_NONE);
    REQUIRE(srv != NULL);
    publish(srv, world(-1, 0, -1));
    struct xdsc *c = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
    struct xdsc_delta *d = delta(c, "p1");
    REQUIRE(d != NULL);
    REQUIRE_INT_EQ(xdsc_delta_request(d, XDS_CLUSTER, star, 1, NULL, 0, NULL, NULL, 0, NULL,
                                      NULL),
                   0);
    xdsc_delta_response *r = xdsc_delta_wait(d, base, WAIT_MS);
    REQUIRE(r != NULL);
    CHECK_STR_EQ(r->type_url, XDS_TYPE_URL_CLUSTER);
    CHECK_INT_EQ(r->n_resources, 50);
    CHECK_INT_EQ(r->n_removed_resources, 0);
    REQUIRE(r->control_plane != NULL);
    CHECK_STR_EQ(r->control_plane->identifier, "r");
    REQUIRE_INT_EQ(xdsc_delta_request(d, XDS_CLUSTER, NULL, 0, NULL, 0, NULL, NULL, 0, r->nonce,
                                      NULL),
                   0);
    xdsc_delta_response_free(r);
    CHECK_INT_EQ(xdsc_delta_count(d, XDS_CLUSTER), 50);
    const char *v07 = xdsc_delta_version(d, XDS_CLUSTER, "c07");
    REQUIRE(v07 != NULL);
    char old07[32];
    snprintf(old07, sizeof(old07), "%s", v07);

    /* one cluster changes: exactly that one */
    publish(srv, world(7, 1, -1));
    r = xdsc_delta_wait(d, base, WAIT_MS);
    REQUIRE(r != NULL);
    REQUIRE_INT_EQ(r->n_resources, 1);
    CHECK_STR_EQ(r->resources[0]->name, "c07");
    CHECK_INT_EQ(r->n_removed_resources, 0);
    CHECK(strcmp(xdsc_delta_version(d, XDS_CLUSTER, "c07"), old07) != 0);
    REQUIRE_INT_EQ(xdsc_delta_request(d, XDS_CLUSTER, NULL, 0, NULL, 0, NULL, NULL, 0, r->nonce,
                                      NULL),
                   0);
    xdsc_delta_response_free(r);

    /* one is deleted: its removal, nothing else */
    publish(srv, world(7, 1, 33));
    r = xdsc_delta_wait(d, base, WAIT_MS);
    REQUIRE(r != NULL);
    CHECK_INT_EQ(r->n_resources, 0);
    REQUIRE_INT_EQ(r->n_removed_resources, 1);
    CHECK_STR_EQ(r->removed_resources[0], "c33");
    CHECK_INT_EQ(xdsc_delta_count(d, XDS_CLUSTER), 49);
    xdsc_delta_response_free(r);

    struct xds_server_stats st;
    xdsc_run_for(base, 50);
    xds_server_stats(srv, &st);
    CHECK_INT_EQ(st.pushes_total[XDS_CLUSTER], 3);
    CHECK_INT_EQ(st.push_resources_total[XDS_CLUSTER], 51);
    CHECK_INT_EQ(st.delta_removed_total, 1);
    CHECK_INT_EQ(st.acks_total, 2);
    xdsc_delta_free(d);
    xdsc_free(c);
    xds_server_free(srv);
}

static void test_reconnect_to_another_replica(void)
{
    struct xds_server *a = server(XDS_AUTH_NONE), *b = server(XDS_AUTH_NONE);
    REQUIRE(a && b);
    publish(a, world(3, 5, 10));
    publish(b, world(3, 5, 10)); /* the same objects, translated by the other replica */
    struct xdsc *ca = xdsc_connect(base, "127.0.0.1", xds_server_port(a), NULL, NULL);
    struct xdsc_delta *d = delta(ca, "p1");
    const char *eds[] = {"c01", "c02"};
    REQUIRE_INT_EQ(xdsc_delta_request(d, XDS_CLUSTER, star, 1, NULL, 0, NULL, NULL, 0, NULL, NULL),
                   0);
    REQUIRE_INT_EQ(xdsc_delta_request(d, XDS_ENDPOINT, eds, 2, NULL, 0, NULL, NULL, 0, NULL, NULL),
                   0);
    for (int i = 0; i < 2; i++) {
        xdsc_delta_response *r = xdsc_delta_wait(d, base, WAIT_MS);
        REQUIRE(r != NULL);
        xdsc_delta_response_free(r);
    }
    REQUIRE_INT_EQ(xdsc_delta_count(d, XDS_CLUSTER), 49);
    /* what the proxy holds, as initial_resource_versions */
    const char *cn[64], *cv[64], *en[4], *ev[4];
    size_t nc = xdsc_delta_count(d, XDS_CLUSTER), ne = xdsc_delta_count(d, XDS_ENDPOINT);
    for (size_t i = 0; i < nc; i++)
        cn[i] = xdsc_delta_name_at(d, XDS_CLUSTER, i, &cv[i]);
    for (size_t i = 0; i < ne; i++)
        en[i] = xdsc_delta_name_at(d, XDS_ENDPOINT, i, &ev[i]);
    CHECK_INT_EQ(ne, 2);

    struct xdsc *cb = xdsc_connect(base, "127.0.0.1", xds_server_port(b), NULL, NULL);
    struct xdsc_delta *d2 = delta(cb, "p1");
    REQUIRE_INT_EQ(xdsc_delta_request(d2, XDS_CLUSTER, star, 1, NULL, 0, cn, cv, nc, NULL, NULL),
                   0);
    REQUIRE_INT_EQ(xdsc_delta_request(d2, XDS_ENDPOINT, eds, 2, NULL, 0, en, ev, ne, NULL, NULL),
                   0);
    xdsc_delta_response *r = xdsc_delta_wait(d2, base, 400);
    CHECK(r == NULL); /* nothing resent */
    xdsc_delta_response_free(r);
    struct xds_server_stats st;
    xds_server_stats(b, &st);
    CHECK_INT_EQ(st.pushes_total[XDS_CLUSTER] + st.pushes_total[XDS_ENDPOINT], 0);
    CHECK_INT_EQ(st.streams, 1);
    /* a change on the new replica arrives as usual */
    publish(b, world(3, 6, 10));
    r = xdsc_delta_wait(d2, base, WAIT_MS);
    REQUIRE(r != NULL);
    REQUIRE_INT_EQ(r->n_resources, 1);
    CHECK_STR_EQ(r->resources[0]->name, "c03");
    xdsc_delta_response_free(r);
    xdsc_delta_free(d);
    xdsc_delta_free(d2);
    xdsc_free(ca);
    xdsc_free(cb);
    xds_server_free(a);
    xds_server_free(b);
}

static void test_sotw_and_delta_agree(void)
{
    struct xds_server *srv = server(XDS_AUTH_NONE);
    REQUIRE(srv != NULL);
    publish(srv, world(5, 2, 40));
    struct xdsc *c = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
    struct xdsc_ads_config ac = {.node_id = "p", .gateway = GW, .keep = 1};
    struct xdsc_ads *s = xdsc_ads_open(c, &ac);
    struct xdsc_delta *d = delta(c, "p"); /* one proxy, one connection, both methods */
    REQUIRE(s && d);
    REQUIRE_INT_EQ(xdsc_ads_request(s, XDS_CLUSTER, NULL, 0, "", "", NULL), 0);
    REQUIRE_INT_EQ(xdsc_delta_request(d, XDS_CLUSTER, star, 1, NULL, 0, NULL, NULL, 0, NULL, NULL),
                   0);
    xdsc_response *sr = xdsc_ads_wait(s, base, WAIT_MS);
    xdsc_delta_response *dr = xdsc_delta_wait(d, base, WAIT_MS);
    REQUIRE(sr && dr);
    REQUIRE_INT_EQ(sr->n_resources, dr->n_resources);
    CHECK_INT_EQ(sr->n_resources, 49);
    /* the same resources, byte for byte, in the same (name) order */
    for (size_t i = 0; i < sr->n_resources; i++) {
        CHECK_STR_EQ(sr->resources[i]->type_url, dr->resources[i]->resource->type_url);
        CHECK_INT_EQ(sr->resources[i]->value.len, dr->resources[i]->resource->value.len);
        CHECK(memcmp(sr->resources[i]->value.data, dr->resources[i]->resource->value.data,
                     sr->resources[i]->value.len) == 0);
    }
    /* both name the set's version */
    CHECK_STR_EQ(sr->version_info, dr->system_version_info);
    xdsc_response_free(sr);
    xdsc_delta_response_free(dr);
    xdsc_ads_free(s);
    xdsc_delta_free(d);
    xdsc_free(c);
    xds_server_free(srv);
}

static void test_nack_recorded(void)
{
    struct xds_server *srv = server(XDS_AUTH_NONE);
    REQUIRE(srv != NULL);
    publish(srv, world(-1, 0, -1));
    struct xdsc *c = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
    struct xdsc_delta *d = delta(c, "nacker");
    REQUIRE_INT_EQ(xdsc_delta_request(d, XDS_LISTENER, star, 1, NULL, 0, NULL, NULL, 0, NULL,
                                      NULL),
                   0);
    xdsc_delta_response *r = xdsc_delta_wait(d, base, WAIT_MS);
    REQUIRE(r != NULL);
    REQUIRE_INT_EQ(xdsc_delta_request(d, XDS_LISTENER, NULL, 0, NULL, 0, NULL, NULL, 0, r->nonce,
                                      "listener l1: bad filter"),
                   0);
    xdsc_delta_response_free(r);
    xdsc_run_for(base, 100);
    struct xds_nack_stat ns;
    REQUIRE_INT_EQ(xds_server_nack_stat(srv, GW, XDS_LISTENER, &ns), 0);
    CHECK_INT_EQ(ns.total, 1);
    CHECK_INT_EQ(ns.active, 1);
    CHECK_STR_EQ(ns.last_node, "nacker");
    CHECK_STR_CONTAINS(ns.last_message, "bad filter");
    /* the stream goes: no longer active */
    xdsc_delta_free(d);
    xdsc_free(c);
    xdsc_run_for(base, 100);
    REQUIRE_INT_EQ(xds_server_nack_stat(srv, GW, XDS_LISTENER, &ns), 0);
    CHECK_INT_EQ(ns.active, 0);
    xds_server_free(srv);
}

static void test_delta_needs_credentials(void)
{
    struct xds_server *srv = server(XDS_AUTH_REQUIRED);
    REQUIRE(srv != NULL);
    publish(srv, world(-1, 0, -1));
    struct xdsc *c = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
    struct xdsc_delta *d = delta(c, "anon");
    REQUIRE_INT_EQ(xdsc_delta_request(d, XDS_CLUSTER, star, 1, NULL, 0, NULL, NULL, 0, NULL, NULL),
                   0);
    xdsc_delta_response *r = xdsc_delta_wait(d, base, WAIT_MS);
    CHECK(r == NULL);
    int status = -1;
    const char *msg = "";
    REQUIRE(xdsc_delta_closed(d, &status, &msg));
    CHECK_INT_EQ(status, 16); /* UNAUTHENTICATED */
    CHECK_STR_CONTAINS(msg, "unauthenticated client");
    xdsc_delta_free(d);
    xdsc_free(c);
    xds_server_free(srv);
}

static void setup_and_run(void (*fn)(void))
{
    base = event_base_new();
    fn();
    event_base_free(base);
    base = NULL;
}

#define CASE(f) \
    static void run_##f(void) { setup_and_run(f); }
CASE(test_clusters_change_and_removal)
CASE(test_reconnect_to_another_replica)
CASE(test_sotw_and_delta_agree)
CASE(test_nack_recorded)
CASE(test_delta_needs_credentials)

static const struct cxt_case cases[] = {
    {"test_clusters_change_and_removal", run_test_clusters_change_and_removal},
    {"test_reconnect_to_another_replica", run_test_reconnect_to_another_replica},
    {"test_sotw_and_delta_agree", run_test_sotw_and_delta_agree},
    {"test_nack_recorded", run_test_nack_recorded},
    {"test_delta_needs_credentials", run_test_delta_needs_credentials},
};
CXT_MAIN(cases)
