/* The server process of bench_xds (bench/bench_xds.c): an xDS server on
 * 127.0.0.1 with a benchmark snapshot, driven by one-byte commands on a
 * pipe ('p' push, 's' stats, 'q' quit); it writes its port, then one line
 * of stats per 's' (see xdsbench.h). */
#include "xdsbench.h"

#include "xds_auth.h"
#include "xds_server.h"
#include "xdsb.h"
#include "xdsc.h"
#include "xlate_snapshot.h"

#include <event2/event.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* ---- the server process ------------------------------------------------------ */

static struct xlate_snapshot *bench_snapshot(int generation)
{
    struct xlate_snapshot *s = xdsc_snapshot_new();
    struct xdsb_route routes[16];
    char cn[XDSBENCH_CLUSTERS][32];
    for (int i = 0; i < XDSBENCH_CLUSTERS; i++)
        snprintf(cn[i], sizeof(cn[i]), "cluster-%02d", i);
    char prefixes[16][32];
    for (int i = 0; i < 16; i++) {
        snprintf(prefixes[i], sizeof(prefixes[i]), "/svc%02d/", i);
        routes[i] = (struct xdsb_route){.prefix = prefixes[i], .cluster = cn[i]};
    }
    int ok = xdsc_snapshot_add(s, XDSBENCH_GROUP, xdsb_api_listener("bench.test", "rc")) == 0 &&
             xdsc_snapshot_add(s, XDSBENCH_GROUP,
                               xdsb_route_config("rc", "bench.test", routes, 16)) == 0;
    for (int i = 0; i < XDSBENCH_CLUSTERS && ok; i++) {
        /* cluster 0's endpoints move with every generation */
        int ports[3] = {10000 + i * 3, 10001 + i * 3, 10002 + i * 3};
        if (i == 0)
            ports[0] = 20000 + generation;
        ok = xdsc_snapshot_add(s, XDSBENCH_GROUP, xdsb_cluster(cn[i], 0, 1)) == 0 &&
             xdsc_snapshot_add(s, XDSBENCH_GROUP, xdsb_endpoints(cn[i], ports, 3)) == 0;
    }
    if (!ok || xdsc_snapshot_seal(s) != 0) {
        fprintf(stderr, "bench_xds: cannot build the snapshot\n");
        exit(1);
    }
    return s;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

struct child {
    struct event_base *base;
    struct xds_server *srv;
    int generation;
    int out_fd;
    struct xlate_snapshot *big[2]; /* the SotW-vs-delta world, two generations */
};

/* |n| Clusters in one group; cluster 0's settings differ between the
 * two generations (a one-Cluster change among n). */
static struct xlate_snapshot *big_snapshot(int n, int generation)
{
    struct xlate_snapshot *s = xdsc_snapshot_new();
    char name[32];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "upstream-%05d", i);
        if (xdsc_snapshot_add(s, XDSBENCH_GROUP,
                              xdsb_cluster(name, i == 0 ? generation % 2 : 0, 1)) != 0)
            exit(1);
    }
    if (xdsc_snapshot_seal(s) != 0)
        exit(1);
    return s;
}

/* Commands, one byte each: 'p' push, 's' report stats, 'q' quit. */
static void on_cmd(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct child *c = arg;
    char cmd;
    if (read(fd, &cmd, 1) != 1 || cmd == 'q') {
        event_base_loopbreak(c->base);
        return;
    }
    if (cmd == 'p') {
        struct xlate_snapshot *s = c->big[0] ? xlate_snapshot_ref(c->big[++c->generation % 2])
                                             : bench_snapshot(++c->generation);
        xds_server_set_snapshot(c->srv, s);
        xlate_snapshot_unref(s);
        return;
    }
    struct xds_server_stats st;
    xds_server_stats(c->srv, &st);
    uint64_t bytes = 0, pushes = 0;
    for (int t = 0; t < XDS_TYPE_COUNT; t++) {
        bytes += st.push_bytes_total[t];
        pushes += st.pushes_total[t];
    }
    char line[256];
    struct mallinfo2 mi = mallinfo2();
    int n = snprintf(line, sizeof(line), "%ld %.6f %llu %llu %llu %llu %zu %zu %zu\n", rss_kb(),
                     cpu_s(), (unsigned long long)bytes, (unsigned long long)pushes,
                     (unsigned long long)st.acks_total, (unsigned long long)st.streams, mi.uordblks,
                     st.h2_heap_bytes, st.h2_resident_bytes);
    if (write(c->out_fd, line, (size_t)n) != n)
        event_base_loopbreak(c->base);
}

/* The reviewer of the authenticated server: every token is
 * system:serviceaccount:bench:proxy, answered from the loop at once. */
struct review {
    xds_review_done_fn done;
    void *arg;
};

static void review_fire(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct review *r = arg;
    struct xds_review_result res = {.outcome = XDS_REVIEW_OK};
    snprintf(res.username, sizeof(res.username), "system:serviceaccount:bench:proxy");
    r->done(r->arg, &res);
    free(r);
}

static void *review_start(void *user, const char *token, const char *audience,
                          xds_review_done_fn done, void *arg)
{
    (void)token;
    (void)audience;
    struct review *r = malloc(sizeof(*r));
    struct timeval now = {0, 0};
    if (!r)
        return NULL;
    *r = (struct review){.done = done, .arg = arg};
    if (event_base_once(user, -1, EV_TIMEOUT, review_fire, r, &now) != 0) {
        free(r);
        return NULL;
    }
    return r;
}

void xdsbench_run_server(int cmd_fd, int out_fd, int auth, int big, const char *tls_dir)
{
    struct child c = {.out_fd = out_fd};
    c.base = event_base_new();
    char err[256];
    struct xds_token_reviewer rv = {.start = review_start, .user = c.base};
    const char *ka = getenv("BENCH_XDS_KEEPALIVE_MS");
    struct xds_server_config cfg = {.listen = "127.0.0.1:0",
                                    .max_connections = 20000,
                                    .keepalive_ms = ka ? (int)strtol(ka, NULL, 10) : 0,
                                    .auth = auth ? XDS_AUTH_REQUIRED : XDS_AUTH_NONE,
                                    .reviewer = &rv};
    char crt[512], key[512];
    if (tls_dir && *tls_dir) {
        snprintf(crt, sizeof(crt), "%s/server.crt", tls_dir);
        snprintf(key, sizeof(key), "%s/server.key", tls_dir);
        cfg.tls_cert = crt;
        cfg.tls_key = key;
    }
    c.srv = xds_server_new(c.base, &cfg, err, sizeof(err));
    if (!c.srv) {
        fprintf(stderr, "bench_xds: server: %s\n", err);
        exit(1);
    }
    struct xlate_snapshot *s;
    if (big) {
        c.big[0] = big_snapshot(big, 0);
        c.big[1] = big_snapshot(big, 1);
        s = xlate_snapshot_ref(c.big[0]);
    } else {
        s = bench_snapshot(0);
    }
    xds_server_set_snapshot(c.srv, s);
    xlate_snapshot_unref(s);
    char line[32];
    int n = snprintf(line, sizeof(line), "%d\n", xds_server_port(c.srv));
    if (write(out_fd, line, (size_t)n) != n)
        exit(1);
    struct event *ev = event_new(c.base, cmd_fd, EV_READ | EV_PERSIST, on_cmd, &c);
    event_add(ev, NULL);
    event_base_dispatch(c.base);
    event_free(ev);
    xds_server_free(c.srv);
    xlate_snapshot_unref(c.big[0]);
    xlate_snapshot_unref(c.big[1]);
    event_base_free(c.base);
    exit(0);
}
