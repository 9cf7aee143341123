/* The xDS server over real sockets on 127.0.0.1 (port 0), driven by our
 * own client (tests/lib/xdsc): ADS round trips, pushes that reach only the
 * streams whose resources changed, NACK accounting, gRPC error answers,
 * limits, keepalive, GOAWAY on shutdown, and TLS with ALPN and client
 * certificates. Server and client share one event loop. */
#include "cx_metrics.h"
#include "cxtest.h"
#include "xds_h2.h"
#include "xds_server.h"
#include "xdsc.h"
#include "xlate_snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WAIT_MS (3000 * cxt_slowdown()) /* TLS handshakes under valgrind take seconds */

static struct event_base *base;

static struct xlate_snapshot *snap2(const char *echo_payload, const char *other_payload)
{
    struct xlate_snapshot *s = xdsc_snapshot_new();
    xdsc_snapshot_add(s, "ns/gw", xdsc_fake_resource(XDS_LISTENER, "echo", echo_payload));
    xdsc_snapshot_add(s, "ns/gw", xdsc_fake_resource(XDS_CLUSTER, "c1", "c"));
    xdsc_snapshot_add(s, "ns/other", xdsc_fake_resource(XDS_LISTENER, "echo", other_payload));
    if (xdsc_snapshot_seal(s) != 0)
        abort();
    return s;
}

static struct xds_server *start(struct xds_server_config *cfg)
{
    char err[256] = "";
    if (!cfg->listen)
        cfg->listen = "127.0.0.1:0";
    if (cfg->auth == XDS_AUTH_DEFAULT) /* the cases of authentication say so */
        cfg->auth = XDS_AUTH_NONE;
    struct xds_server *s = xds_server_new(base, cfg, err, sizeof(err));
    if (!s)
        printf("# server: %s\n", err);
    return s;
}

static struct xdsc_ads *ads(struct xdsc *c, const char *node, const char *gw)
{
    struct xdsc_ads_config ac = {.node_id = node, .gateway = gw, .keep = 1};
    return xdsc_ads_open(c, &ac);
}

static int server_has_streams(void *arg)
{
    struct xds_server_stats st;
    xds_server_stats(arg, &st);
    return st.streams > 0;
}

static void test_ads_roundtrip_and_targeted_push(void)
{
    struct xds_server_config cfg = {.identifier = "replica-a"};
    struct xds_server *srv = start(&cfg);
    REQUIRE(srv != NULL);
    CHECK_INT_GT(xds_server_port(srv), 0);
    struct xlate_snapshot *s1 = snap2("v1", "o1");
    xds_server_set_snapshot(srv, s1);
    xlate_snapshot_unref(s1);

    struct xdsc *c1 = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
    struct xdsc *c2 = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
    REQUIRE(c1 && c2);
    struct xdsc_ads *a = ads(c1, "n1", "ns/gw"), *b = ads(c2, "n2", "ns/other");
    REQUIRE(a && b);
    const char *echo[] = {"echo"};
    REQUIRE_INT_EQ(xdsc_ads_request(a, XDS_LISTENER, echo, 1, "", "", NULL), 0);
    REQUIRE_INT_EQ(xdsc_ads_request(b, XDS_LISTENER, echo, 1, "", "", NULL), 0);
    xdsc_response *r = xdsc_ads_wait(a, base, WAIT_MS);
    REQUIRE(r != NULL);
    CHECK_STR_EQ(r->type_url, XDS_TYPE_URL_LISTENER);
    REQUIRE_INT_EQ(r->n_resources, 1);
    /* the Any holds the resource's bytes as the snapshot has them */
    CHECK_INT_EQ(r->resources[0]->value.data[r->resources[0]->value.len - 1], '1');
    REQUIRE(r->control_plane != NULL);
    CHECK_STR_EQ(r->control_plane->identifier, "replica-a");
    xdsc_response_free(r);
    r = xdsc_ads_wait(b, base, WAIT_MS);
    REQUIRE(r != NULL);
    xdsc_response_free(r);
    /* ACK both */
    REQUIRE_INT_EQ(xdsc_ads_request(a, XDS_LISTENER, echo, 1, NULL, NULL, NULL), 0);
    REQUIRE_INT_EQ(xdsc_ads_request(b, XDS_LISTENER, echo, 1, NULL, NULL, NULL), 0);
    cxt_loop_for(base, 100);
    struct xds_server_stats st;
    xds_server_stats(srv, &st);
    CHECK_INT_EQ(st.acks_total, 2);
    CHECK_INT_EQ(st.streams, 2);
    CHECK_INT_EQ(st.connections, 2);
    CHECK_INT_EQ(st.pushes_total[XDS_LISTENER], 2);

    /* change only group ns/gw: only stream a hears of it */
    struct xlate_snapshot *s2 = snap2("v2", "o1");
    xds_server_set_snapshot(srv, s2);
    xlate_snapshot_unref(s2);
    r = xdsc_ads_wait(a, base, WAIT_MS);
    REQUIRE(r != NULL);
    CHECK_INT_EQ(r->resources[0]->value.data[r->resources[0]->value.len - 1], '2');
    xdsc_response_free(r);
    cxt_loop_for(base, 150);
    CHECK_INT_EQ(xdsc_ads_queued(b), 0);
    xds_server_stats(srv, &st);
    CHECK_INT_EQ(st.pushes_total[XDS_LISTENER], 3);
    /* ACK latency was recorded */
    uint64_t lat[XDS_LATENCY_BUCKETS], sum = 0;
    xds_server_latency(srv, lat);
    for (int i = 0; i < XDS_LATENCY_BUCKETS; i++)
        sum += lat[i];
    CHECK_INT_EQ(sum, 2);

    /* the client half-closes: the stream ends with OK */
    xdsc_call_close_send(xdsc_ads_call(a));
    int status = -2;
    cxt_loop_until(base, (int (*)(void *))xdsc_call_done, xdsc_ads_call(a), WAIT_MS);
    CHECK(xdsc_ads_closed(a, &status, NULL));
    CHECK_INT_EQ(status, 0);
    xdsc_ads_free(a);
    xdsc_ads_free(b);
    xdsc_free(c1);
    xdsc_free(c2);
    xds_server_free(srv);
}

struct call_result {
    int done, grpc_status, http_status;
    char msg[256];
};

static void res_close(void *user, struct xdsc_call *call, int gs, const char *m, int hs)
{
    (void)call;
    struct call_result *r = user;
    r->done = 1;
    r->grpc_status = gs;
    r->http_status = hs;
    snprintf(r->msg, sizeof(r->msg), "%s", m ? m : "");
}

static const struct xdsc_call_cbs res_cbs = {.on_close = res_close};

static int res_done(void *arg)
{
    return ((struct call_result *)arg)->done;
}

static void test_grpc_errors(void)
{
    struct xds_server_config cfg = {.max_message = 1024};
    struct xds_server *srv = start(&cfg);
    REQUIRE(srv != NULL);
    struct xdsc *c = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
    REQUIRE(c != NULL);

    struct call_result r1 = {0};
    struct xdsc_call *k = xdsc_call_open(c, "/no.Such/Method", "application/grpc", &res_cbs, &r1);
    REQUIRE(k != NULL);
    xdsc_call_close_send(k);
    REQUIRE(cxt_loop_until(base, res_done, &r1, WAIT_MS));
    CHECK_INT_EQ(r1.http_status, 200);
    CHECK_INT_EQ(r1.grpc_status, 12);
    CHECK_STR_CONTAINS(r1.msg, "/no.Such/Method");

    struct call_result r2 = {0};
    k = xdsc_call_open(c, XDS_ADS_PATH, "application/json", &res_cbs, &r2);
    REQUIRE(cxt_loop_until(base, res_done, &r2, WAIT_MS));
    CHECK_INT_EQ(r2.http_status, 415);

    /* a message over the cap */
    struct call_result r3 = {0};
    k = xdsc_call_open(c, XDS_ADS_PATH, "application/grpc+proto", &res_cbs, &r3);
    char big[2000];
    memset(big, 0, sizeof(big));
    REQUIRE_INT_EQ(xdsc_call_send(k, big, sizeof(big)), 0);
    REQUIRE(cxt_loop_until(base, res_done, &r3, WAIT_MS));
    CHECK_INT_EQ(r3.grpc_status, 8);

    /* bytes that are not a DiscoveryRequest */
    struct call_result r4 = {0};
    k = xdsc_call_open(c, XDS_ADS_PATH, "application/grpc", &res_cbs, &r4);
    const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff};
    REQUIRE_INT_EQ(xdsc_call_send(k, junk, sizeof(junk)), 0);
    REQUIRE(cxt_loop_until(base, res_done, &r4, WAIT_MS));
    CHECK_INT_EQ(r4.grpc_status, 3);

    /* a compressed message (we only do identity) */
    struct call_result r5 = {0};
    k = xdsc_call_open(c, XDS_ADS_PATH, "application/grpc", &res_cbs, &r5);
    const uint8_t comp[] = {1, 0, 0, 0, 1, 0};
    REQUIRE_INT_EQ(xdsc_call_send_raw(k, comp, sizeof(comp)), 0);
    REQUIRE(cxt_loop_until(base, res_done, &r5, WAIT_MS));
    CHECK_INT_EQ(r5.grpc_status, 12);
    /* the connection survived all of it */
    CHECK(xdsc_alive(c));
    xdsc_free(c);
    xds_server_free(srv);
}

/* A request dribbled in 1-byte DATA frames is reassembled. */
static void test_request_split_across_frames(void)
{
    struct xds_server_config cfg = {0};
    struct xds_server *srv = start(&cfg);
    REQUIRE(srv != NULL);
    struct xlate_snapshot *s1 = snap2("v1", "o1");
    xds_server_set_snapshot(srv, s1);
    xlate_snapshot_unref(s1);
    struct xdsc *c = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
    struct xdsc_ads *a = ads(c, "n1", "ns/gw");
    REQUIRE(a != NULL);
    struct cx_buf b;
    cx_buf_init(&b, 0);
    const char *names[] = {"c1"};
    REQUIRE_INT_EQ(
        xdsc_encode_request(&b, XDS_CLUSTER, names, 1, "", "", "n1", NULL, "ns/gw", 0, NULL), 0);
    uint8_t prefix[5] = {0, 0, 0, (uint8_t)(b.len >> 8), (uint8_t)b.len};
    for (size_t i = 0; i < 5; i++) {
        REQUIRE_INT_EQ(xdsc_call_send_raw(xdsc_ads_call(a), prefix + i, 1), 0);
        cxt_loop_for(base, 2);
    }
    for (size_t i = 0; i < b.len; i++) {
        REQUIRE_INT_EQ(xdsc_call_send_raw(xdsc_ads_call(a), b.data + i, 1), 0);
        cxt_loop_for(base, 1);
    }
    xdsc_response *r = xdsc_ads_wait(a, base, WAIT_MS);
    REQUIRE(r != NULL);
    CHECK_STR_EQ(r->type_url, XDS_TYPE_URL_CLUSTER);
    CHECK_INT_EQ(r->n_resources, 1);
    xdsc_response_free(r);
    cx_buf_free(&b);
    xdsc_ads_free(a);
    xdsc_free(c);
    xds_server_free(srv);
}

struct nack_seen {
    int n;
    char group[64], msg[256], node[64];
    enum xds_type type;
};

static void on_nack(void *user, const struct xds_nack *n)
{
    struct nack_seen *s = user;
    s->n++;
    snprintf(s->group, sizeof(s->group), "%s", n->group);
    snprintf(s->msg, sizeof(s->msg), "%s", n->message);
    snprintf(s->node, sizeof(s->node), "%s", n->node_id);
    s->type = n->type;
}

static void test_nack_counted_and_reported(void)
{
    struct xds_server_config cfg = {0};
    struct xds_server *srv = start(&cfg);
    REQUIRE(srv != NULL);
    struct nack_seen seen = {0};
    xds_server_on_nack(srv, on_nack, &seen);
    struct xlate_snapshot *s1 = snap2("v1", "o1");
    xds_server_set_snapshot(srv, s1);
    xlate_snapshot_unref(s1);
    struct xdsc *c = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
    struct xdsc_ads *a = ads(c, "proxy-9", "ns/gw");
    const char *names[] = {"c1"};
    REQUIRE_INT_EQ(xdsc_ads_request(a, XDS_CLUSTER, names, 1, "", "", NULL), 0);
    xdsc_response *r = xdsc_ads_wait(a, base, WAIT_MS);
    REQUIRE(r != NULL);
    xdsc_response_free(r);
    REQUIRE_INT_EQ(xdsc_ads_request(a, XDS_CLUSTER, names, 1, "", NULL,
                                    "xDS response validation errors: [lb_policy unsupported]"),
                   0);
    REQUIRE(cxt_loop_until(base, (int (*)(void *))(void *)res_done, &seen, 10) || 1);
    cxt_loop_for(base, 100);
    CHECK_INT_EQ(seen.n, 1);
    CHECK_STR_EQ(seen.group, "ns/gw");
    CHECK_STR_EQ(seen.node, "proxy-9");
    CHECK_INT_EQ(seen.type, XDS_CLUSTER);
    CHECK_STR_CONTAINS(seen.msg, "lb_policy unsupported");
    struct xds_nack_stat st;
    REQUIRE_INT_EQ(xds_server_nack_stat(srv, "ns/gw", XDS_CLUSTER, &st), 0);
    CHECK_INT_EQ(st.total, 1);
    CHECK_INT_EQ(st.active, 1);
    CHECK_STR_CONTAINS(st.last_message, "lb_policy");
    struct cx_metric *m =
        cx_counter("coxswain_xds_nacks_total",
                   "NACKs (requests with error_detail) by node group and type.", "group,type");
    REQUIRE(m != NULL);
    CHECK_INT_EQ((int)cx_metric_get(m, "ns/gw", "CDS"), 1);
    CHECK_INT_EQ((int)cx_metric_get(m, "ns/gw", "LDS"), 0);
    struct cx_buf text;
    cx_buf_init(&text, 0);
    REQUIRE_INT_EQ(cx_metrics_render(&text), 0);
    CHECK_STR_CONTAINS(text.data, "coxswain_xds_nacks_total{group=\"ns/gw\",type=\"CDS\"} 1");
    CHECK_STR_CONTAINS(text.data, "coxswain_xds_requests_total{type=\"CDS\",verdict=\"nack\"} 1");
    cx_buf_free(&text);
    CHECK_INT_EQ(xds_server_nack_stat(srv, "ns/gw", XDS_LISTENER, &st), -1);
    CHECK_INT_EQ(xds_server_nack_stat(srv, "ns/other", XDS_CLUSTER, &st), -1);
    /* a fixed snapshot is pushed and ACKed: no longer active, total kept */
    struct xlate_snapshot *s2 = xdsc_snapshot_new();
    xdsc_snapshot_add(s2, "ns/gw", xdsc_fake_resource(XDS_CLUSTER, "c1", "fixed"));
    REQUIRE_INT_EQ(xdsc_snapshot_seal(s2), 0);
    xds_server_set_snapshot(srv, s2);
    xlate_snapshot_unref(s2);
    r = xdsc_ads_wait(a, base, WAIT_MS);
    REQUIRE(r != NULL);
    xdsc_response_free(r);
    REQUIRE_INT_EQ(xdsc_ads_request(a, XDS_CLUSTER, names, 1, NULL, NULL, NULL), 0);
    cxt_loop_for(base, 100);
    REQUIRE_INT_EQ(xds_server_nack_stat(srv, "ns/gw", XDS_CLUSTER, &st), 0);
    CHECK_INT_EQ(st.total, 1);
    CHECK_INT_EQ(st.active, 0);
    xdsc_ads_free(a);
    xdsc_free(c);
    xds_server_free(srv);
}

static int not_alive(void *arg)
{
    return !xdsc_alive(arg);
}

static void test_connection_and_stream_limits(void)
{
    struct xds_server_config cfg = {.max_connections = 2, .max_streams = 2};
    struct xds_server *srv = start(&cfg);
    REQUIRE(srv != NULL);
    int port = xds_server_port(srv);
    struct xdsc *c1 = xdsc_connect(base, "127.0.0.1", port, NULL, NULL);
    struct xdsc *c2 = xdsc_connect(base, "127.0.0.1", port, NULL, NULL);
    cxt_loop_for(base, 50);
    struct xdsc *c3 = xdsc_connect(base, "127.0.0.1", port, NULL, NULL);
    REQUIRE(c1 && c2 && c3);
    CHECK(cxt_loop_until(base, not_alive, c3, WAIT_MS));
    CHECK(xdsc_alive(c1));
    struct xds_server_stats st;
    xds_server_stats(srv, &st);
    CHECK_INT_EQ(st.connections_rejected, 1);
    CHECK_INT_EQ(st.connections, 2);

    /* two concurrent streams per connection (SETTINGS): a third waits */
    struct call_result r[3] = {{0}};
    struct xdsc_call *k[3];
    for (int i = 0; i < 3; i++) {
        k[i] = xdsc_call_open(c1, XDS_ADS_PATH, "application/grpc", &res_cbs, &r[i]);
        REQUIRE(k[i] != NULL);
    }
    cxt_loop_for(base, 100);
    xds_server_stats(srv, &st);
    CHECK_INT_EQ(st.streams, 2);
    CHECK_INT_EQ(st.streams_total, 2);
    /* one ends: the third gets its turn */
    xdsc_call_close_send(k[0]);
    CHECK(cxt_loop_until(base, res_done, &r[0], WAIT_MS));
    CHECK_INT_EQ(r[0].grpc_status, 0);
    cxt_loop_for(base, 100);
    xds_server_stats(srv, &st);
    CHECK_INT_EQ(st.streams_total, 3);
    CHECK_INT_EQ(st.streams, 2);
    CHECK(!r[2].done);
    xdsc_free(c1);
    xdsc_free(c2);
    xdsc_free(c3);
    xds_server_free(srv);
}

static void test_keepalive_drops_silent_peer(void)
{
    struct xds_server_config cfg = {.keepalive_ms = 100};
    struct xds_server *srv = start(&cfg);
    REQUIRE(srv != NULL);
    int port = xds_server_port(srv);
    struct xdsc *good = xdsc_connect(base, "127.0.0.1", port, NULL, NULL);
    struct xdsc *dead = xdsc_connect(base, "127.0.0.1", port, NULL, NULL);
    cxt_loop_for(base, 50);
    xdsc_ignore_pings(dead);
    CHECK(cxt_loop_until(base, not_alive, dead, WAIT_MS));
    CHECK(xdsc_alive(good));
    CHECK_INT_GE(xdsc_pings(good), 1);
    xdsc_free(good);
    xdsc_free(dead);
    xds_server_free(srv);
}

/* A proxy that takes a large response slowly answers the keepalive PING
 * only once it has read what was queued before it: it is alive (its TCP
 * acknowledges what it reads) and must not be dropped. A 2 MB listener read
 * at 1 MB/s takes 2 s, 7 keepalive intervals. (Loopback's MSS is 64 KB: a
 * reader's window opens in steps that large, hence the rate.) */
static void test_keepalive_spares_slow_reader(void)
{
    /* Under a sanitizer the reader takes longer to answer the PING once it
     * has read everything (decoding 2 MB under valgrind can outlast 300 ms):
     * interval and read rate are scaled together, so the read still spans
     * about 7 intervals. */
    int k = cxt_slowdown() < 4 ? cxt_slowdown() : 4;
    struct xds_server_config cfg = {.keepalive_ms = 300 * k};
    struct xds_server *srv = start(&cfg);
    REQUIRE(srv != NULL);
    size_t big = (size_t)2 << 20;
    char *payload = malloc(big + 1);
    REQUIRE(payload != NULL);
    memset(payload, 'x', big);
    payload[big] = '\0';
    struct xlate_snapshot *s = xdsc_snapshot_new();
    xdsc_snapshot_add(s, "ns/gw", xdsc_fake_resource(XDS_LISTENER, "echo", payload));
    REQUIRE_INT_EQ(xdsc_snapshot_seal(s), 0);
    free(payload);
    xds_server_set_snapshot(srv, s);
    xlate_snapshot_unref(s);
    struct xdsc *c = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
    REQUIRE(c != NULL);
    struct xdsc_ads *a = ads(c, "slow", "ns/gw");
    REQUIRE(a != NULL);
    cxt_loop_for(base, 50);
    REQUIRE_INT_EQ(xdsc_limit_read(c, (1 << 20) / k), 0);
    const char *echo[] = {"echo"};
    REQUIRE_INT_EQ(xdsc_ads_request(a, XDS_LISTENER, echo, 1, "", "", NULL), 0);
    xdsc_response *r = xdsc_ads_wait(a, base, 20000 * cxt_slowdown());
    REQUIRE(r != NULL);
    REQUIRE_INT_EQ(r->n_resources, 1);
    CHECK_INT_GE(r->resources[0]->value.len, big);
    xdsc_response_free(r);
    CHECK(xdsc_alive(c));
    CHECK_INT_GE(xdsc_pings(c), 1); /* the keepalive was at work meanwhile */
    xdsc_ads_free(a);
    xdsc_free(c);
    xds_server_free(srv);
}

/* What an idle ADS stream costs in nghttp2, counted by the server's own
 * allocator (malloc_usable_size of every block; mincore of the mapped
 * ones): each idle connection's 16 KB frame buffer is handed back to the
 * kernel at the first keepalive tick after its last frame (none of it
 * resident), and the session's heap stays within the
 * bound measured for nghttp2 1.52 (session 2.9 KB, stream map 4 KB, two
 * 1 KB HPACK rings, the stream and its DATA item). A regression -- HPACK
 * tables turned back on, a buffer kept per idle connection, the frame
 * buffer back on the heap -- crosses it. */
#define IDLE_STREAMS 20
/* nghttp2's heap per idle connection: the session struct (2.9 KB) and a
 * few small blocks. Its stream map, HPACK rings and streams live in the
 * connection's pages (xds_h2_mem.c): were they back on the heap, 7.4 KB
 * and more. */
#define H2_HEAP_PER_STREAM 4096

struct idle {
    int n;
    unsigned want; /* responses each stream must have */
    struct xdsc *c[IDLE_STREAMS];
    struct xdsc_ads *a[IDLE_STREAMS];
};

static int idle_acked(void *arg)
{
    struct idle *w = arg;
    for (int i = 0; i < w->n; i++)
        if (xdsc_ads_responses(w->a[i]) < w->want)
            return 0;
    return 1;
}

/* |n| gRPC-style streams (LDS and CDS, auto-ACK), until each has both
 * responses. */
static void idle_open(struct idle *w, struct xds_server *srv, int n)
{
    const char *echo[] = {"echo"}, *c1[] = {"c1"};
    w->n = n;
    w->want = 2;
    for (int i = 0; i < n; i++) {
        char id[16];
        snprintf(id, sizeof(id), "n%d", i);
        w->c[i] = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
        REQUIRE(w->c[i] != NULL);
        struct xdsc_ads_config ac = {.node_id = id, .gateway = "ns/gw", .auto_ack = 1};
        w->a[i] = xdsc_ads_open(w->c[i], &ac);
        REQUIRE(w->a[i] != NULL);
        REQUIRE_INT_EQ(xdsc_ads_request(w->a[i], XDS_LISTENER, echo, 1, "", "", NULL), 0);
        REQUIRE_INT_EQ(xdsc_ads_request(w->a[i], XDS_CLUSTER, c1, 1, "", "", NULL), 0);
    }
    REQUIRE(cxt_loop_until(base, idle_acked, w, WAIT_MS));
}

static void idle_close(struct idle *w)
{
    for (int i = 0; i < w->n; i++) {
        xdsc_ads_free(w->a[i]);
        xdsc_free(w->c[i]);
    }
}

static void test_idle_stream_memory(void)
{
    struct xlate_snapshot *s1 = snap2("v1", "o1");
    /* Without a keepalive tick yet (60 s), the frame buffers that wrote
     * the responses are resident: what is measured below is real. */
    struct xds_server_config lcfg = {.keepalive_ms = 60000};
    struct xds_server *lsrv = start(&lcfg);
    REQUIRE(lsrv != NULL);
    xds_server_set_snapshot(lsrv, s1);
    struct idle w;
    idle_open(&w, lsrv, 2);
    struct xds_server_stats st;
    xds_server_stats(lsrv, &st);
    CHECK_INT_GE(st.h2_resident_bytes, 2 * 4096);
    idle_close(&w);
    xds_server_free(lsrv);

    struct xds_server_config cfg = {.keepalive_ms = 300};
    struct xds_server *srv = start(&cfg);
    REQUIRE(srv != NULL);
    xds_server_set_snapshot(srv, s1);
    xlate_snapshot_unref(s1);
    struct xds_server_stats before, after;
    xds_server_stats(srv, &before);
    CHECK_INT_EQ(before.h2_resident_bytes, 0);
    idle_open(&w, srv, IDLE_STREAMS);
    /* the ACKs are in, and the connections stay quiet for longer than a
     * keepalive interval */
    cxt_loop_for(base, 1000 * cxt_slowdown());
    xds_server_stats(srv, &after);
    CHECK_INT_EQ(after.streams, IDLE_STREAMS);
    CHECK_INT_EQ(after.acks_total, 2 * IDLE_STREAMS);
    /* every session maps its frame buffer and its unit of three pages, and
     * of those only the unit's middle page (not counted here) stays
     * resident: the frame buffer, the stream map's first page (read by
     * nghttp2's walks, zero) and the inflater's ring page went back */
    CHECK_INT_GE(after.h2_mapped_bytes - before.h2_mapped_bytes,
                 (size_t)IDLE_STREAMS * (16384 + 3 * 4096));
    CHECK_INT_EQ(after.h2_resident_bytes, 0);
    size_t per = (after.h2_heap_bytes - before.h2_heap_bytes) / IDLE_STREAMS;
    printf("# nghttp2 heap per idle stream: %zu bytes\n", per);
    CHECK_INT_GT(per, 0);
    CHECK_INT_LE(per, H2_HEAP_PER_STREAM);
    /* a push writes frames again; idle once more, the pages go again */
    struct xlate_snapshot *s2 = snap2("v2", "o1");
    xds_server_set_snapshot(srv, s2);
    xlate_snapshot_unref(s2);
    w.want = 3;
    CHECK(cxt_loop_until(base, idle_acked, &w, WAIT_MS));
    cxt_loop_for(base, 1000 * cxt_slowdown());
    xds_server_stats(srv, &after);
    CHECK_INT_EQ(after.acks_total, 3 * IDLE_STREAMS);
    CHECK_INT_EQ(after.h2_resident_bytes, 0);
    idle_close(&w);
    xds_server_free(srv);
}

/* Three streams on one connection (ids 1, 3 and 5): stream 5's bucket of
 * nghttp2's stream map lies on the first page of the connection's unit,
 * which the idle trim hands back only while it holds zeros. After several
 * trims all three streams still get a push (a page with a live bucket
 * handed back would lose stream 5), and the page stays resident. */
static void test_trim_keeps_live_streams(void)
{
    struct xlate_snapshot *s1 = snap2("v1", "o1");
    struct xds_server_config cfg = {.keepalive_ms = 300};
    struct xds_server *srv = start(&cfg);
    REQUIRE(srv != NULL);
    xds_server_set_snapshot(srv, s1);
    xlate_snapshot_unref(s1);
    struct xdsc *c = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
    REQUIRE(c != NULL);
    struct xdsc_ads *a[3];
    const char *echo[] = {"echo"};
    for (int i = 0; i < 3; i++) {
        char node[16];
        snprintf(node, sizeof(node), "n%d", i);
        a[i] = ads(c, node, "ns/gw");
        REQUIRE(a[i] != NULL);
        REQUIRE_INT_EQ(xdsc_ads_request(a[i], XDS_LISTENER, echo, 1, "", "", NULL), 0);
    }
    for (int i = 0; i < 3; i++) {
        xdsc_response *r = xdsc_ads_wait(a[i], base, WAIT_MS);
        REQUIRE(r != NULL);
        xdsc_response_free(r);
        REQUIRE_INT_EQ(xdsc_ads_request(a[i], XDS_LISTENER, echo, 1, NULL, NULL, NULL), 0);
    }
    /* quiet for several keepalive ticks: PINGs answered, the trims run */
    cxt_loop_for(base, 1500 * cxt_slowdown());
    struct xds_server_stats st;
    xds_server_stats(srv, &st);
    CHECK_INT_EQ(st.streams, 3);
    CHECK_INT_GE(st.h2_resident_bytes, 4096); /* stream 5's bucket keeps its page */
    struct xlate_snapshot *s2 = snap2("v2", "o1");
    xds_server_set_snapshot(srv, s2);
    xlate_snapshot_unref(s2);
    for (int i = 0; i < 3; i++) {
        xdsc_response *r = xdsc_ads_wait(a[i], base, WAIT_MS);
        REQUIRE(r != NULL);
        REQUIRE_INT_EQ(r->n_resources, 1);
        CHECK_INT_EQ(r->resources[0]->value.data[r->resources[0]->value.len - 1], '2');
        xdsc_response_free(r);
    }
    CHECK(xdsc_alive(c));
    for (int i = 0; i < 3; i++)
        xdsc_ads_free(a[i]);
    xdsc_free(c);
    xds_server_free(srv);
}

static int done_flag;
static void on_shutdown_done(void *arg)
{
    (void)arg;
    done_flag = 1;
}

static int flag_set(void *arg)
{
    return *(int *)arg;
}

static void test_shutdown_sends_goaway(void)
{
    struct xds_server_config cfg = {0};
    struct xds_server *srv = start(&cfg);
    REQUIRE(srv != NULL);
    struct xdsc *c = xdsc_connect(base, "127.0.0.1", xds_server_port(srv), NULL, NULL);
    struct xdsc_ads *a = ads(c, "n1", "ns/gw");
    const char *names[] = {"echo"};
    REQUIRE_INT_EQ(xdsc_ads_request(a, XDS_LISTENER, names, 1, "", "", NULL), 0);
    REQUIRE(cxt_loop_until(base, server_has_streams, srv, WAIT_MS));
    done_flag = 0;
    xds_server_shutdown(srv, 2000, on_shutdown_done, NULL);
    CHECK(cxt_loop_until(base, flag_set, &done_flag, WAIT_MS));
    CHECK(xdsc_goaway(c));
    int status = -2;
    CHECK(xdsc_ads_closed(a, &status, NULL));
    CHECK_INT_EQ(status, 14);
    xdsc_ads_free(a);
    xdsc_free(c);
    xds_server_free(srv);
}

static int client_gone(void *arg)
{
    return !xdsc_alive(arg);
}

/* A cold standby that stops leading pauses its server: GOAWAY and
 * UNAVAILABLE to every stream, the connection closed, new connections
 * refused; resumed, it serves again on the same port. */
static void test_pause_and_resume(void)
{
    struct xds_server_config cfg = {0};
    struct xds_server *srv = start(&cfg);
    REQUIRE(srv != NULL);
    int port = xds_server_port(srv);
    struct xlate_snapshot *sn = snap2("e1", "o1");
    xds_server_set_snapshot(srv, sn);
    struct xdsc *c = xdsc_connect(base, "127.0.0.1", port, NULL, NULL);
    struct xdsc_ads *a = ads(c, "n1", "ns/gw");
    const char *names[] = {"echo"};
    REQUIRE_INT_EQ(xdsc_ads_request(a, XDS_LISTENER, names, 1, "", "", NULL), 0);
    xdsc_response *r = xdsc_ads_wait(a, base, WAIT_MS);
    REQUIRE(r != NULL);
    xdsc_response_free(r);
    CHECK_INT_EQ(xds_server_paused(srv), 0);

    xds_server_pause(srv, 1000);
    CHECK_INT_EQ(xds_server_paused(srv), 1);
    CHECK(cxt_loop_until(base, client_gone, c, WAIT_MS));
    CHECK(xdsc_goaway(c));
    int status = -2;
    const char *msg = NULL;
    CHECK(xdsc_ads_closed(a, &status, &msg));
    CHECK_INT_EQ(status, 14);
    CHECK(msg && strstr(msg, "stands by") != NULL);
    xdsc_ads_free(a);
    xdsc_free(c);
    /* Refused while paused. */
    struct xdsc *c2 = xdsc_connect(base, "127.0.0.1", port, NULL, NULL);
    if (c2) {
        CHECK(cxt_loop_until(base, client_gone, c2, WAIT_MS));
        xdsc_free(c2);
    }
    xds_server_pause(srv, 1000); /* again: nothing */

    char err[256] = "";
    REQUIRE_INT_EQ(xds_server_resume(srv, err, sizeof(err)), 0);
    CHECK_INT_EQ(xds_server_paused(srv), 0);
    CHECK_INT_EQ(xds_server_port(srv), port);
    struct xdsc *c3 = xdsc_connect(base, "127.0.0.1", port, NULL, NULL);
    struct xdsc_ads *a3 = ads(c3, "n1", "ns/gw");
    REQUIRE_INT_EQ(xdsc_ads_request(a3, XDS_LISTENER, names, 1, "", "", NULL), 0);
    r = xdsc_ads_wait(a3, base, WAIT_MS);
    CHECK(r != NULL);
    if (r)
        xdsc_response_free(r);
    /* The pause's grace timer (1 s) must not close the new connection. */
    cxt_loop_for(base, 1300);
    CHECK(xdsc_alive(c3));
    xdsc_ads_free(a3);
    xdsc_free(c3);
    xds_server_free(srv);
    xlate_snapshot_unref(sn);
}

static void test_tls_alpn_and_client_certs(void)
{
    char dir[] = "/tmp/xds-tls-XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    REQUIRE_INT_EQ(xdsc_make_certs(dir), 0);
    char ca[512], crt[512], key[512], ccrt[512], ckey[512];
    snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
    snprintf(crt, sizeof(crt), "%s/server.crt", dir);
    snprintf(key, sizeof(key), "%s/server.key", dir);
    snprintf(ccrt, sizeof(ccrt), "%s/client.crt", dir);
    snprintf(ckey, sizeof(ckey), "%s/client.key", dir);
    /* An idle connection hands its TLS record buffers back (~17 KB each
     * way; bench_xds's TLS idle row measures it). */
    char cerr[256] = "";
    SSL_CTX *sctx = xds_h2_tls_ctx(crt, key, ca, 1, cerr, sizeof(cerr));
    REQUIRE(sctx != NULL);
    CHECK(SSL_CTX_get_mode(sctx) & SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_free(sctx);
    struct xds_server_config cfg = {
        .tls_cert = crt, .tls_key = key, .tls_client_ca = ca, .tls_require_client_cert = 1};
    struct xds_server *srv = start(&cfg);
    REQUIRE(srv != NULL);
    struct xlate_snapshot *s1 = snap2("v1", "o1");
    xds_server_set_snapshot(srv, s1);
    xlate_snapshot_unref(s1);
    int port = xds_server_port(srv);

    /* with a client certificate: ADS works */
    SSL_CTX *with = xdsc_tls_client_ctx(ca, ccrt, ckey);
    SSL_CTX *without = xdsc_tls_client_ctx(ca, NULL, NULL);
    REQUIRE(with && without);
    struct xdsc *c = xdsc_connect(base, "127.0.0.1", port, with, "localhost");
    struct xdsc_ads *a = ads(c, "n1", "ns/gw");
    const char *names[] = {"echo"};
    REQUIRE_INT_EQ(xdsc_ads_request(a, XDS_LISTENER, names, 1, "", "", NULL), 0);
    xdsc_response *r = xdsc_ads_wait(a, base, WAIT_MS);
    CHECK(r != NULL);
    xdsc_response_free(r);

    /* without one: the handshake fails, the connection dies */
    struct xdsc *bad = xdsc_connect(base, "127.0.0.1", port, without, "localhost");
    struct xdsc_ads *b = ads(bad, "n2", "ns/gw");
    if (b)
        xdsc_ads_request(b, XDS_LISTENER, names, 1, "", "", NULL);
    CHECK(cxt_loop_until(base, not_alive, bad, WAIT_MS));
    CHECK(!b || xdsc_ads_responses(b) == 0);

    /* offering only http/1.1: refused by ALPN */
    struct xdsc *h1 = xdsc_connect_alpn(base, "127.0.0.1", port, with, "localhost",
                                        (const unsigned char *)"\x08http/1.1", 9);
    CHECK(cxt_loop_until(base, not_alive, h1, WAIT_MS));
    struct xds_server_stats st;
    xds_server_stats(srv, &st);
    CHECK_INT_EQ(st.streams, 1);
    xdsc_ads_free(a);
    xdsc_ads_free(b);
    xdsc_free(c);
    xdsc_free(bad);
    xdsc_free(h1);
    SSL_CTX_free(with);
    SSL_CTX_free(without);
    xds_server_free(srv);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_INT_EQ(system(cmd), 0);
}

static void test_config_errors(void)
{
    char err[256] = "";
    struct xds_server_config cfg = {.listen = "nonsense"};
    CHECK(xds_server_new(base, &cfg, err, sizeof(err)) == NULL);
    CHECK_STR_CONTAINS(err, "listen address");
    struct xds_server_config cfg2 = {.listen = "127.0.0.1:0", .tls_cert = "/nonexistent.crt"};
    CHECK(xds_server_new(base, &cfg2, err, sizeof(err)) == NULL);
    CHECK_STR_CONTAINS(err, "certificate and a key");
    struct xds_server_config cfg3 = {
        .listen = "127.0.0.1:0", .tls_cert = "/nonexistent.crt", .tls_key = "/nonexistent.key"};
    CHECK(xds_server_new(base, &cfg3, err, sizeof(err)) == NULL);
    CHECK_STR_CONTAINS(err, "/nonexistent.crt");
}

static void setup_and_run(void (*fn)(void))
{
    base = event_base_new();
    fn();
    event_base_free(base);
    base = NULL;
}

#define WRAP(name)             \
    static void name##_w(void) \
    {                          \
        setup_and_run(name);   \
    }
WRAP(test_ads_roundtrip_and_targeted_push)
WRAP(test_grpc_errors)
WRAP(test_request_split_across_frames)
WRAP(test_nack_counted_and_reported)
WRAP(test_connection_and_stream_limits)
WRAP(test_keepalive_drops_silent_peer)
WRAP(test_keepalive_spares_slow_reader)
WRAP(test_idle_stream_memory)
WRAP(test_trim_keeps_live_streams)
WRAP(test_shutdown_sends_goaway)
WRAP(test_pause_and_resume)
WRAP(test_tls_alpn_and_client_certs)
WRAP(test_config_errors)

static const struct cxt_case cases[] = {
    {"ads_roundtrip_and_targeted_push", test_ads_roundtrip_and_targeted_push_w},
    {"grpc_errors", test_grpc_errors_w},
    {"request_split_across_frames", test_request_split_across_frames_w},
    {"nack_counted_and_reported", test_nack_counted_and_reported_w},
    {"connection_and_stream_limits", test_connection_and_stream_limits_w},
    {"keepalive_drops_silent_peer", test_keepalive_drops_silent_peer_w},
    {"keepalive_spares_slow_reader", test_keepalive_spares_slow_reader_w},
    {"idle_stream_memory", test_idle_stream_memory_w},
    {"trim_keeps_live_streams", test_trim_keeps_live_streams_w},
    {"shutdown_sends_goaway", test_shutdown_sends_goaway_w},
    {"pause_and_resume", test_pause_and_resume_w},
    {"tls_alpn_and_client_certs", test_tls_alpn_and_client_certs_w},
    {"config_errors", test_config_errors_w},
};
CXT_MAIN(cases)
