/* Delta ADS over real sockets: the xDS server with our delta client
 * (tests/lib/xdsc_ads.c, delta mode). A 50-Upstream Gateway's Clusters, then exactly
 * the one that changed, then the removal of a deleted one; a proxy that
 * reconnects to another replica with the versions it holds gets nothing;
 * a proxy with a SotW and a delta stream sees the same configuration;
 * NACKs reach the NACK records as SotW ones do; authentication applies. */
#include "cxtest.h"
#include "xds_server.h"
#include "xdsc.h"
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

static struct xdsc_ads *delta(struct xdsc *c, const char *node)
{
    struct xdsc_ads_config dc = {.node_id = node, .gateway = GW, .delta = 1, .keep = 1};
    return xdsc_ads_open(c, &dc);
}

static const char *const star[] = {"*"};

static void test_clusters_change_and_removal(void)
{
    struct xds_server *srv = server(XDS_AUTH_NONE);
    REQUIRE(srv != NULL);
    publish(srv, world(-1, 0, -1));
    struct xdsc *c = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
    struct xdsc_ads *d = delta(c, "p1");
    REQUIRE(d != NULL);
    REQUIRE_INT_EQ(
        xdsc_ads_delta_request(d, XDS_CLUSTER, star, 1, NULL, 0, NULL, NULL, 0, NULL, NULL), 0);
    xdsc_delta_response *r = xdsc_ads_delta_wait(d, base, WAIT_MS);
    REQUIRE(r != NULL);
    CHECK_STR_EQ(r->type_url, XDS_TYPE_URL_CLUSTER);
    CHECK_INT_EQ(r->n_resources, 50);
    CHECK_INT_EQ(r->n_removed_resources, 0);
    REQUIRE(r->control_plane != NULL);
    CHECK_STR_EQ(r->control_plane->identifier, "r");
    REQUIRE_INT_EQ(
        xdsc_ads_delta_request(d, XDS_CLUSTER, NULL, 0, NULL, 0, NULL, NULL, 0, r->nonce, NULL), 0);
    xdsc_delta_response_free(r);
    CHECK_INT_EQ(xdsc_ads_count(d, XDS_CLUSTER), 50);
    const char *v07 = xdsc_ads_held_version(d, XDS_CLUSTER, "c07");
    REQUIRE(v07 != NULL);
    char old07[32];
    snprintf(old07, sizeof(old07), "%s", v07);

    /* one cluster changes: exactly that one */
    publish(srv, world(7, 1, -1));
    r = xdsc_ads_delta_wait(d, base, WAIT_MS);
    REQUIRE(r != NULL);
    REQUIRE_INT_EQ(r->n_resources, 1);
    CHECK_STR_EQ(r->resources[0]->name, "c07");
    CHECK_INT_EQ(r->n_removed_resources, 0);
    CHECK(strcmp(xdsc_ads_held_version(d, XDS_CLUSTER, "c07"), old07) != 0);
    REQUIRE_INT_EQ(
        xdsc_ads_delta_request(d, XDS_CLUSTER, NULL, 0, NULL, 0, NULL, NULL, 0, r->nonce, NULL), 0);
    xdsc_delta_response_free(r);

    /* one is deleted: its removal, nothing else */
    publish(srv, world(7, 1, 33));
    r = xdsc_ads_delta_wait(d, base, WAIT_MS);
    REQUIRE(r != NULL);
    CHECK_INT_EQ(r->n_resources, 0);
    REQUIRE_INT_EQ(r->n_removed_resources, 1);
    CHECK_STR_EQ(r->removed_resources[0], "c33");
    CHECK_INT_EQ(xdsc_ads_count(d, XDS_CLUSTER), 49);
    xdsc_delta_response_free(r);

    struct xds_server_stats st;
    cxt_loop_for(base, 50);
    xds_server_stats(srv, &st);
    CHECK_INT_EQ(st.pushes_total[XDS_CLUSTER], 3);
    CHECK_INT_EQ(st.push_resources_total[XDS_CLUSTER], 51);
    CHECK_INT_EQ(st.delta_removed_total, 1);
    CHECK_INT_EQ(st.acks_total, 2);
    xdsc_ads_free(d);
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
    struct xdsc_ads *d = delta(ca, "p1");
    const char *eds[] = {"c01", "c02"};
    REQUIRE_INT_EQ(
        xdsc_ads_delta_request(d, XDS_CLUSTER, star, 1, NULL, 0, NULL, NULL, 0, NULL, NULL), 0);
    REQUIRE_INT_EQ(
        xdsc_ads_delta_request(d, XDS_ENDPOINT, eds, 2, NULL, 0, NULL, NULL, 0, NULL, NULL), 0);
    for (int i = 0; i < 2; i++) {
        xdsc_delta_response *r = xdsc_ads_delta_wait(d, base, WAIT_MS);
        REQUIRE(r != NULL);
        xdsc_delta_response_free(r);
    }
    REQUIRE_INT_EQ(xdsc_ads_count(d, XDS_CLUSTER), 49);
    /* what the proxy holds, as initial_resource_versions */
    const char *cn[64], *cv[64], *en[4], *ev[4];
    size_t nc = xdsc_ads_count(d, XDS_CLUSTER), ne = xdsc_ads_count(d, XDS_ENDPOINT);
    for (size_t i = 0; i < nc; i++)
        cn[i] = xdsc_ads_name_at(d, XDS_CLUSTER, i, &cv[i], NULL, NULL);
    for (size_t i = 0; i < ne; i++)
        en[i] = xdsc_ads_name_at(d, XDS_ENDPOINT, i, &ev[i], NULL, NULL);
    CHECK_INT_EQ(ne, 2);

    struct xdsc *cb = xdsc_connect(base, "127.0.0.1", xds_server_port(b), NULL, NULL);
    struct xdsc_ads *d2 = delta(cb, "p1");
    REQUIRE_INT_EQ(
        xdsc_ads_delta_request(d2, XDS_CLUSTER, star, 1, NULL, 0, cn, cv, nc, NULL, NULL), 0);
    REQUIRE_INT_EQ(
        xdsc_ads_delta_request(d2, XDS_ENDPOINT, eds, 2, NULL, 0, en, ev, ne, NULL, NULL), 0);
    xdsc_delta_response *r = xdsc_ads_delta_wait(d2, base, 400);
    CHECK(r == NULL); /* nothing resent */
    xdsc_delta_response_free(r);
    struct xds_server_stats st;
    xds_server_stats(b, &st);
    CHECK_INT_EQ(st.pushes_total[XDS_CLUSTER] + st.pushes_total[XDS_ENDPOINT], 0);
    CHECK_INT_EQ(st.streams, 1);
    /* a change on the new replica arrives as usual */
    publish(b, world(3, 6, 10));
    r = xdsc_ads_delta_wait(d2, base, WAIT_MS);
    REQUIRE(r != NULL);
    REQUIRE_INT_EQ(r->n_resources, 1);
    CHECK_STR_EQ(r->resources[0]->name, "c03");
    xdsc_delta_response_free(r);
    xdsc_ads_free(d);
    xdsc_ads_free(d2);
    xdsc_free(ca);
    xdsc_free(cb);
    xds_server_free(a);
    xds_server_free(b);
}

struct pair {
    struct xdsc_ads *s, *d;
    size_t lds, cds, eds_s, eds_d; /* counts both views must reach */
    const char *held, *gone;       /* a Cluster both must hold, one neither */
};

static int pair_settled(void *arg)
{
    const struct pair *p = arg;
    const struct xdsc_ads *v[2] = {p->s, p->d};
    for (int i = 0; i < 2; i++) {
        if (xdsc_ads_count(v[i], XDS_LISTENER) != p->lds ||
            xdsc_ads_count(v[i], XDS_CLUSTER) != p->cds ||
            xdsc_ads_count(v[i], XDS_ENDPOINT) != (i ? p->eds_d : p->eds_s) ||
            (p->held && !xdsc_ads_held_version(v[i], XDS_CLUSTER, p->held)) ||
            (p->gone && xdsc_ads_held_version(v[i], XDS_CLUSTER, p->gone)))
            return 0;
    }
    return 1;
}

/* Every Endpoints resource the delta stream holds, the SotW stream holds
 * with the same bytes. */
static int eds_agree(const struct xdsc_ads *s, const struct xdsc_ads *d)
{
    const char *name;
    const uint8_t *db, *sb;
    size_t dl, sl;
    for (size_t i = 0; (name = xdsc_ads_name_at(d, XDS_ENDPOINT, i, NULL, &db, &dl)); i++) {
        int found = 0;
        const char *sn;
        for (size_t j = 0; (sn = xdsc_ads_name_at(s, XDS_ENDPOINT, j, NULL, &sb, &sl)); j++) {
            if (strcmp(sn, name) == 0) {
                found = sl == dl && memcmp(sb, db, dl) == 0;
                break;
            }
        }
        if (!found)
            return 0;
    }
    return 1;
}

/* One proxy, one connection, a SotW and a delta stream subscribed to the
 * same Listeners, Clusters and Endpoints, both ACKing: they hold the same
 * configuration byte for byte, before and after a change, a deletion and
 * an addition. */
static void test_sotw_and_delta_agree(void)
{
    struct xds_server *srv = server(XDS_AUTH_NONE);
    REQUIRE(srv != NULL);
    publish(srv, world(5, 2, 40));
    struct xdsc *c = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
    struct xdsc_ads_config ac = {.node_id = "p", .gateway = GW, .auto_ack = 1};
    struct xdsc_ads *s = xdsc_ads_open(c, &ac);
    ac.delta = 1;
    struct xdsc_ads *d = xdsc_ads_open(c, &ac);
    REQUIRE(s && d);
    char names[50][8];
    const char *eds[50];
    for (int i = 0; i < 50; i++) {
        snprintf(names[i], sizeof(names[i]), "c%02d", i);
        eds[i] = names[i];
    }
    REQUIRE_INT_EQ(xdsc_ads_request(s, XDS_CLUSTER, NULL, 0, "", "", NULL), 0);
    REQUIRE_INT_EQ(xdsc_ads_request(s, XDS_ENDPOINT, eds, 50, "", "", NULL), 0);
    REQUIRE_INT_EQ(xdsc_ads_request(s, XDS_LISTENER, NULL, 0, "", "", NULL), 0);
    REQUIRE_INT_EQ(
        xdsc_ads_delta_request(d, XDS_CLUSTER, star, 1, NULL, 0, NULL, NULL, 0, NULL, NULL), 0);
    REQUIRE_INT_EQ(
        xdsc_ads_delta_request(d, XDS_ENDPOINT, eds, 50, NULL, 0, NULL, NULL, 0, NULL, NULL), 0);
    REQUIRE_INT_EQ(
        xdsc_ads_delta_request(d, XDS_LISTENER, star, 1, NULL, 0, NULL, NULL, 0, NULL, NULL), 0);
    struct pair p = {.s = s,
                     .d = d,
                     .lds = 1,
                     .cds = 49,
                     .eds_s = 49,
                     .eds_d = 49,
                     .held = "c05",
                     .gone = "c40"};
    REQUIRE(cxt_loop_until(base, pair_settled, &p, WAIT_MS));
    CHECK(xdsc_ads_same_view(s, d, XDS_LISTENER));
    CHECK(xdsc_ads_same_view(s, d, XDS_CLUSTER));
    CHECK(xdsc_ads_same_view(s, d, XDS_ENDPOINT));
    /* both name the set's version */
    CHECK_STR_EQ(xdsc_ads_version(s, XDS_CLUSTER), xdsc_ads_version(d, XDS_CLUSTER));

    /* c05 changes, c12 goes, c40 comes */
    const char *v05 = xdsc_ads_held_version(d, XDS_CLUSTER, "c05");
    REQUIRE(v05 != NULL);
    char old05[64];
    snprintf(old05, sizeof(old05), "%s", v05);
    publish(srv, world(5, 3, 12));
    /* SotW cannot take an Endpoints resource back (RDS/EDS responses only
     * add): its view keeps c12's; delta removes it */
    p = (struct pair){.s = s,
                      .d = d,
                      .lds = 1,
                      .cds = 49,
                      .eds_s = 50,
                      .eds_d = 49,
                      .held = "c40",
                      .gone = "c12"};
    REQUIRE(cxt_loop_until(base, pair_settled, &p, WAIT_MS));
    CHECK(strcmp(xdsc_ads_held_version(d, XDS_CLUSTER, "c05"), old05) != 0);
    CHECK(xdsc_ads_same_view(s, d, XDS_LISTENER));
    CHECK(xdsc_ads_same_view(s, d, XDS_CLUSTER));
    CHECK(eds_agree(s, d));
    CHECK(xdsc_ads_held_version(s, XDS_ENDPOINT, "c12") != NULL);
    CHECK(xdsc_ads_held_version(d, XDS_ENDPOINT, "c12") == NULL);
    CHECK_STR_EQ(xdsc_ads_version(s, XDS_CLUSTER), xdsc_ads_version(d, XDS_CLUSTER));
    xdsc_ads_free(s);
    xdsc_ads_free(d);
    xdsc_free(c);
    xds_server_free(srv);
}

static void test_nack_recorded(void)
{
    struct xds_server *srv = server(XDS_AUTH_NONE);
    REQUIRE(srv != NULL);
    publish(srv, world(-1, 0, -1));
    struct xdsc *c = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
    struct xdsc_ads *d = delta(c, "nacker");
    REQUIRE_INT_EQ(
        xdsc_ads_delta_request(d, XDS_LISTENER, star, 1, NULL, 0, NULL, NULL, 0, NULL, NULL), 0);
    xdsc_delta_response *r = xdsc_ads_delta_wait(d, base, WAIT_MS);
    REQUIRE(r != NULL);
    REQUIRE_INT_EQ(xdsc_ads_delta_request(d, XDS_LISTENER, NULL, 0, NULL, 0, NULL, NULL, 0,
                                          r->nonce, "listener l1: bad filter"),
                   0);
    xdsc_delta_response_free(r);
    cxt_loop_for(base, 100);
    struct xds_nack_stat ns;
    REQUIRE_INT_EQ(xds_server_nack_stat(srv, GW, XDS_LISTENER, &ns), 0);
    CHECK_INT_EQ(ns.total, 1);
    CHECK_INT_EQ(ns.active, 1);
    CHECK_STR_EQ(ns.last_node, "nacker");
    CHECK_STR_CONTAINS(ns.last_message, "bad filter");
    /* the stream goes: no longer active */
    xdsc_ads_free(d);
    xdsc_free(c);
    cxt_loop_for(base, 100);
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
    struct xdsc_ads *d = delta(c, "anon");
    REQUIRE_INT_EQ(
        xdsc_ads_delta_request(d, XDS_CLUSTER, star, 1, NULL, 0, NULL, NULL, 0, NULL, NULL), 0);
    xdsc_delta_response *r = xdsc_ads_delta_wait(d, base, WAIT_MS);
    CHECK(r == NULL);
    int status = -1;
    const char *msg = "";
    REQUIRE(xdsc_ads_closed(d, &status, &msg));
    CHECK_INT_EQ(status, 16); /* UNAUTHENTICATED */
    CHECK_STR_CONTAINS(msg, "unauthenticated client");
    xdsc_ads_free(d);
    xdsc_free(c);
    xds_server_free(srv);
}

/* Secrets over delta: "ns/gw" references Secret "s" and opts in to clients
 * without credentials; "ns/other" holds "s-other". Such a client gets the
 * Listener and never a Secret; a stream of auth none gets "s", never the
 * other group's. */
static struct xlate_snapshot *secrets_world(void)
{
    struct xlate_snapshot *s = xdsc_snapshot_new();
    if (xdsc_snapshot_add(s, GW, xdsc_fake_resource(XDS_LISTENER, "l1", "listener")) != 0 ||
        xdsc_snapshot_add(s, GW, xdsc_fake_resource(XDS_SECRET, "s", "key-of-gw")) != 0 ||
        xdsc_snapshot_add(s, "ns/other", xdsc_fake_resource(XDS_SECRET, "s-other", "key")) != 0 ||
        xdsc_snapshot_seal(s) != 0)
        abort();
    struct xlate_group *g = (struct xlate_group *)xlate_snapshot_group(s, GW);
    g->access.unauthenticated = 1;
    return s;
}

static const char *const secret_names[] = {"s", "s-other", "*"};

static void test_delta_secrets(void)
{
    for (int auth = 0; auth < 2; auth++) {
        struct xds_server *srv = server(auth ? XDS_AUTH_REQUIRED : XDS_AUTH_NONE);
        REQUIRE(srv != NULL);
        publish(srv, secrets_world());
        struct xdsc *c = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
        struct xdsc_ads *d = delta(c, "anon");
        REQUIRE_INT_EQ(
            xdsc_ads_delta_request(d, XDS_LISTENER, star, 1, NULL, 0, NULL, NULL, 0, NULL, NULL),
            0);
        xdsc_delta_response *r = xdsc_ads_delta_wait(d, base, WAIT_MS);
        REQUIRE(r != NULL);
        CHECK_STR_EQ(r->type_url, XDS_TYPE_URL_LISTENER);
        REQUIRE_INT_EQ(xdsc_ads_delta_request(d, XDS_LISTENER, NULL, 0, NULL, 0, NULL, NULL, 0,
                                              r->nonce, NULL),
                       0);
        xdsc_delta_response_free(r);
        REQUIRE_INT_EQ(xdsc_ads_delta_request(d, XDS_SECRET, secret_names, 3, NULL, 0, NULL, NULL,
                                              0, NULL, NULL),
                       0);
        /* names the stream may not have are said absent (removed), once */
        r = xdsc_ads_delta_wait(d, base, WAIT_MS);
        REQUIRE(r != NULL);
        CHECK_STR_EQ(r->type_url, XDS_TYPE_URL_SECRET);
        if (auth) {
            /* admitted by the opt-in, without credentials: no Secret */
            CHECK_INT_EQ(r->n_resources, 0);
            CHECK_INT_EQ(r->n_removed_resources, 3);
            CHECK(!xdsc_ads_closed(d, NULL, NULL));
        } else {
            REQUIRE_INT_EQ(r->n_resources, 1);
            CHECK_STR_EQ(r->resources[0]->name, "s");
            CHECK_INT_EQ(r->n_removed_resources, 2); /* "s-other" (another group's), "*" */
            for (size_t i = 0; i < r->n_removed_resources; i++)
                CHECK(strcmp(r->removed_resources[i], "s") != 0);
        }
        CHECK_INT_EQ(xdsc_ads_count(d, XDS_SECRET), auth ? 0 : 1);
        xdsc_delta_response_free(r);
        xdsc_ads_free(d);
        xdsc_free(c);
        xds_server_free(srv);
    }
}

static void setup_and_run(void (*fn)(void))
{
    base = event_base_new();
    fn();
    event_base_free(base);
    base = NULL;
}

#define CASE(f)               \
    static void run_##f(void) \
    {                         \
        setup_and_run(f);     \
    }
CASE(test_clusters_change_and_removal)
CASE(test_reconnect_to_another_replica)
CASE(test_sotw_and_delta_agree)
CASE(test_nack_recorded)
CASE(test_delta_needs_credentials)
CASE(test_delta_secrets)

static const struct cxt_case cases[] = {
    {"test_clusters_change_and_removal", run_test_clusters_change_and_removal},
    {"test_reconnect_to_another_replica", run_test_reconnect_to_another_replica},
    {"test_sotw_and_delta_agree", run_test_sotw_and_delta_agree},
    {"test_nack_recorded", run_test_nack_recorded},
    {"test_delta_needs_credentials", run_test_delta_needs_credentials},
    {"test_delta_secrets", run_test_delta_secrets},
};
CXT_MAIN(cases)
