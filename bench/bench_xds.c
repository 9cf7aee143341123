/* Benchmark: the xDS server pushing one snapshot change to many concurrent
 * ADS streams.
 *
 * The server runs in a child process (its own event loop and RSS); this
 * process is the load generator: N connections, one ADS stream each, built
 * on tests/lib/xdsc (the same protos). Each stream subscribes like gRPC does
 * (LDS listener, RDS route, CDS + EDS for every cluster of the group) and
 * ACKs every response at once. A push changes one ClusterLoadAssignment of
 * the group; we measure, from just before the snapshot is handed to the
 * server until each stream has the new version and has ACKed it:
 *   - per-stream latency p50/p99 over all streams and pushes,
 *   - the time until every stream ACKed, p50/p99 over pushes,
 *   - bytes sent and server CPU per push, and server RSS per idle stream.
 * The baseline is the same push with a single stream, in the same run.
 *
 * A second pair of rows measures what authentication costs a stream's setup
 * (connect, open, LDS request, first response; one stream at a time): every
 * stream presents the same ServiceAccount token, so the first is reviewed
 * (by a reviewer that answers at once: the cost of TokenReview itself is
 * the API server's) and the others hit the token cache, against the same
 * setup on a server with --xds-auth none, interleaved in the same run.
 *
 *   build/bin/bench_xds [streams=1000] [pushes=20] [clusters=10000] [vs_streams=1000]
 *                       [big_streams=10000]
 * Prints one JSON object (bench/run.sh); a table goes to stderr.
 */
#include "cx_time.h"
#include "xds_auth.h"
#include "xds_server.h"
#include "xdsb.h"
#include "xdsc.h"
#include "xdsc.h"
#include "xlate_snapshot.h"

#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define GROUP    "bench/gw"
#define CLUSTERS 50

/* ---- the server process ------------------------------------------------------ */

static struct xlate_snapshot *bench_snapshot(int generation)
{
    struct xlate_snapshot *s = xdsc_snapshot_new();
    struct xdsb_route routes[16];
    char cn[CLUSTERS][32];
    for (int i = 0; i < CLUSTERS; i++)
        snprintf(cn[i], sizeof(cn[i]), "cluster-%02d", i);
    char prefixes[16][32];
    for (int i = 0; i < 16; i++) {
        snprintf(prefixes[i], sizeof(prefixes[i]), "/svc%02d/", i);
        routes[i] = (struct xdsb_route){.prefix = prefixes[i], .cluster = cn[i]};
    }
    int ok = xdsc_snapshot_add(s, GROUP, xdsb_api_listener("bench.test", "rc")) == 0 &&
             xdsc_snapshot_add(s, GROUP, xdsb_route_config("rc", "bench.test", routes, 16)) == 0;
    for (int i = 0; i < CLUSTERS && ok; i++) {
        /* cluster 0's endpoints move with every generation */
        int ports[3] = {10000 + i * 3, 10001 + i * 3, 10002 + i * 3};
        if (i == 0)
            ports[0] = 20000 + generation;
        ok = xdsc_snapshot_add(s, GROUP, xdsb_cluster(cn[i], 0, 1)) == 0 &&
             xdsc_snapshot_add(s, GROUP, xdsb_endpoints(cn[i], ports, 3)) == 0;
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
        if (xdsc_snapshot_add(s, GROUP, xdsb_cluster(name, i == 0 ? generation % 2 : 0, 1)) != 0)
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
    int n =
        snprintf(line, sizeof(line), "%ld %.6f %llu %llu %llu %llu %zu\n", rss_kb(), cpu_s(),
                 (unsigned long long)bytes, (unsigned long long)pushes,
                 (unsigned long long)st.acks_total, (unsigned long long)st.streams, mi.uordblks);
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

static void run_server(int cmd_fd, int out_fd, int auth, int big)
{
    struct child c = {.out_fd = out_fd};
    c.base = event_base_new();
    char err[256];
    struct xds_token_reviewer rv = {.start = review_start, .user = c.base};
    struct xds_server_config cfg = {.listen = "127.0.0.1:0",
                                    .max_connections = 20000,
                                    .auth = auth ? XDS_AUTH_REQUIRED : XDS_AUTH_NONE,
                                    .reviewer = &rv};
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

/* ---- the load generator ------------------------------------------------------- */

struct stream {
    struct xdsc *conn;
    struct xdsc_ads *ads;
    unsigned eds_responses;
    unsigned initial; /* responses before the first push */
    int64_t last_ns;
};

struct gen {
    struct event_base *base;
    struct stream *s;
    int n;
    unsigned want_eds; /* EDS responses each stream must have */
    int cmd_fd, stat_fd;
};

static void on_resp(void *user, struct xdsc_ads *a, const xdsc_response *r)
{
    (void)a;
    struct stream *s = user;
    s->initial++;
    if (strcmp(r->type_url, XDS_TYPE_URL_ENDPOINT) == 0) {
        s->eds_responses++;
        s->last_ns = cx_mono_ns();
    }
}

static int all_have(void *arg)
{
    struct gen *g = arg;
    for (int i = 0; i < g->n; i++)
        if (g->s[i].eds_responses < g->want_eds)
            return 0;
    return 1;
}

struct srv_stats {
    long rss_kb;
    double cpu;
    unsigned long long bytes, pushes, acks, streams;
    size_t heap;
};

static int query(struct gen *g, struct srv_stats *out)
{
    char c = 's', line[256];
    if (write(g->cmd_fd, &c, 1) != 1)
        return -1;
    ssize_t n = read(g->stat_fd, line, sizeof(line) - 1);
    if (n <= 0)
        return -1;
    line[n] = '\0';
    return sscanf(line, "%ld %lf %llu %llu %llu %llu %zu", &out->rss_kb, &out->cpu, &out->bytes,
                  &out->pushes, &out->acks, &out->streams, &out->heap) == 7
               ? 0
               : -1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(int64_t *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), cmp_i64);
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return (double)v[i] / 1e6;
}

struct result {
    int streams;
    double p50_ms, p99_ms, all_p50_ms, all_p99_ms, max_ms;
    double bytes_per_push, cpu_ms_per_push, rss_kb_per_stream, heap_kb_per_stream, setup_s;
};

static int measure(int nstreams, int pushes, struct result *res)
{
    int cmd[2], out[2];
    if (pipe(cmd) != 0 || pipe(out) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(cmd[1]);
        close(out[0]);
        run_server(cmd[0], out[1], 0, 0);
    }
    close(cmd[0]);
    close(out[1]);
    struct gen g = {.n = nstreams, .cmd_fd = cmd[1], .stat_fd = out[0]};
    char line[64];
    ssize_t r = read(out[0], line, sizeof(line) - 1);
    if (r <= 0)
        return -1;
    line[r] = '\0';
    int port = (int)strtol(line, NULL, 10);
    g.base = event_base_new();
    g.s = calloc((size_t)nstreams, sizeof(*g.s));
    struct srv_stats s0, s1, s2;
    xdsc_run_for(g.base, 50);
    if (query(&g, &s0) != 0)
        return -1;

    char *cnames[CLUSTERS];
    for (int i = 0; i < CLUSTERS; i++) {
        cnames[i] = malloc(32);
        snprintf(cnames[i], 32, "cluster-%02d", i);
    }
    const char *lds[] = {"bench.test"}, *rds[] = {"rc"};
    int64_t t_setup = cx_mono_ns();
    for (int i = 0; i < nstreams; i++) {
        char id[32];
        snprintf(id, sizeof(id), "proxy-%d", i);
        g.s[i].conn = xdsc_connect(g.base, "127.0.0.1", port, NULL, NULL);
        struct xdsc_ads_config ac = {.node_id = id,
                                     .gateway = GROUP,
                                     .auto_ack = 1,
                                     .on_response = on_resp,
                                     .user = &g.s[i]};
        g.s[i].ads = g.s[i].conn ? xdsc_ads_open(g.s[i].conn, &ac) : NULL;
        if (!g.s[i].ads) {
            fprintf(stderr, "bench_xds: cannot open stream %d\n", i);
            return -1;
        }
        xdsc_ads_request(g.s[i].ads, XDS_LISTENER, lds, 1, "", "", NULL);
        xdsc_ads_request(g.s[i].ads, XDS_ROUTE, rds, 1, "", "", NULL);
        xdsc_ads_request(g.s[i].ads, XDS_CLUSTER, (const char *const *)cnames, CLUSTERS, "", "",
                         NULL);
        xdsc_ads_request(g.s[i].ads, XDS_ENDPOINT, (const char *const *)cnames, CLUSTERS, "", "",
                         NULL);
        if (i % 50 == 49)
            xdsc_run_for(g.base, 1); /* let the accept queue drain */
    }
    g.want_eds = 1;
    if (!xdsc_run_until(g.base, all_have, &g, 60000)) {
        fprintf(stderr, "bench_xds: not every stream got its initial resources\n");
        return -1;
    }
    res->setup_s = (double)(cx_mono_ns() - t_setup) / 1e9;
    xdsc_run_for(g.base, 300); /* last ACKs in, streams idle */
    if (query(&g, &s1) != 0)
        return -1;

    size_t nlat = 0;
    int64_t *lat = malloc(sizeof(int64_t) * (size_t)nstreams * (size_t)pushes);
    int64_t *all = malloc(sizeof(int64_t) * (size_t)pushes);
    for (int p = 0; p < pushes; p++) {
        g.want_eds = 2 + (unsigned)p;
        int64_t t0 = cx_mono_ns();
        char c = 'p';
        if (write(g.cmd_fd, &c, 1) != 1)
            return -1;
        if (!xdsc_run_until(g.base, all_have, &g, 30000)) {
            fprintf(stderr, "bench_xds: push %d did not reach every stream\n", p);
            return -1;
        }
        int64_t worst = 0;
        for (int i = 0; i < nstreams; i++) {
            int64_t d = g.s[i].last_ns - t0;
            lat[nlat++] = d;
            if (d > worst)
                worst = d;
        }
        all[p] = worst;
        xdsc_run_for(g.base, 20); /* the ACKs reach the server */
    }
    xdsc_run_for(g.base, 200);
    if (query(&g, &s2) != 0)
        return -1;
    res->streams = nstreams;
    res->p50_ms = pct(lat, nlat, 0.50);
    res->p99_ms = pct(lat, nlat, 0.99);
    res->max_ms = pct(lat, nlat, 1.0);
    res->all_p50_ms = pct(all, (size_t)pushes, 0.50);
    res->all_p99_ms = pct(all, (size_t)pushes, 0.99);
    res->bytes_per_push = (double)(s2.bytes - s1.bytes) / pushes;
    res->cpu_ms_per_push = (s2.cpu - s1.cpu) * 1000.0 / pushes;
    res->rss_kb_per_stream = (double)(s1.rss_kb - s0.rss_kb) / nstreams;
    res->heap_kb_per_stream = ((double)s1.heap - (double)s0.heap) / 1024.0 / nstreams;
    if (s2.acks < s1.acks + (unsigned long long)nstreams * (unsigned long long)pushes)
        fprintf(stderr, "bench_xds: server counted %llu ACKs, expected >= %llu\n",
                s2.acks - s1.acks, (unsigned long long)nstreams * (unsigned long long)pushes);

    char q = 'q';
    if (write(g.cmd_fd, &q, 1) != 1)
        kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    for (int i = 0; i < nstreams; i++) {
        xdsc_ads_free(g.s[i].ads);
        xdsc_free(g.s[i].conn);
    }
    for (int i = 0; i < CLUSTERS; i++)
        free(cnames[i]);
    free(g.s);
    free(lat);
    free(all);
    event_base_free(g.base);
    close(cmd[1]);
    close(out[0]);
    return 0;
}

/* ---- what authentication costs a stream's setup ------------------------------------ */

struct setup_result {
    int streams;
    double p50_ms, p99_ms, cpu_us_per_stream;
};

static void on_first(void *user, struct xdsc_ads *a, const xdsc_response *r)
{
    (void)a;
    (void)r;
    int64_t *t = user;
    if (*t == 0)
        *t = cx_mono_ns();
}

static int got_first(void *arg)
{
    return *(int64_t *)arg != 0;
}

static int setup_cost(int nstreams, int auth, struct setup_result *res)
{
    int cmd[2], out[2];
    if (pipe(cmd) != 0 || pipe(out) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(cmd[1]);
        close(out[0]);
        run_server(cmd[0], out[1], auth, 0);
    }
    close(cmd[0]);
    close(out[1]);
    struct gen g = {.n = 0, .cmd_fd = cmd[1], .stat_fd = out[0]};
    char line[64];
    ssize_t r = read(out[0], line, sizeof(line) - 1);
    if (r <= 0)
        return -1;
    line[r] = '\0';
    int port = (int)strtol(line, NULL, 10);
    g.base = event_base_new();
    struct xdsc **conns = calloc((size_t)nstreams, sizeof(*conns));
    struct xdsc_ads **ads = calloc((size_t)nstreams, sizeof(*ads));
    int64_t *first = calloc((size_t)nstreams, sizeof(*first));
    int64_t *lat = calloc((size_t)nstreams, sizeof(*lat));
    struct srv_stats s0, s1;
    xdsc_run_for(g.base, 50);
    if (!conns || !ads || !first || !lat || query(&g, &s0) != 0)
        return -1;
    const char *lds[] = {"bench.test"};
    /* the same projected token for every proxy, shaped like one (a JWT) */
    static const char token[] =
        "Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6YmVuY2g6cHJveHkifQ."
        "c2lnbmF0dXJl";
    for (int i = 0; i < nstreams; i++) {
        char id[32];
        snprintf(id, sizeof(id), "proxy-%d", i);
        int64_t t0 = cx_mono_ns();
        conns[i] = xdsc_connect(g.base, "127.0.0.1", port, NULL, NULL);
        struct xdsc_ads_config ac = {.node_id = id,
                                     .gateway = GROUP,
                                     .auto_ack = 1,
                                     .on_response = on_first,
                                     .user = &first[i],
                                     .authorization = auth ? token : NULL};
        ads[i] = conns[i] ? xdsc_ads_open(conns[i], &ac) : NULL;
        if (!ads[i] || xdsc_ads_request(ads[i], XDS_LISTENER, lds, 1, "", "", NULL) != 0 ||
            !xdsc_run_until(g.base, got_first, &first[i], 10000)) {
            fprintf(stderr, "bench_xds: stream %d (auth %d) got no response\n", i, auth);
            return -1;
        }
        lat[i] = first[i] - t0;
    }
    xdsc_run_for(g.base, 100);
    if (query(&g, &s1) != 0 || s1.streams != (unsigned long long)nstreams)
        return -1;
    res->streams = nstreams;
    res->p50_ms = pct(lat, (size_t)nstreams, 0.50);
    res->p99_ms = pct(lat, (size_t)nstreams, 0.99);
    res->cpu_us_per_stream = (s1.cpu - s0.cpu) * 1e6 / nstreams;
    char q = 'q';
    if (write(g.cmd_fd, &q, 1) != 1)
        kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    for (int i = 0; i < nstreams; i++) {
        xdsc_ads_free(ads[i]);
        xdsc_free(conns[i]);
    }
    free(conns);
    free(ads);
    free(first);
    free(lat);
    event_base_free(g.base);
    close(cmd[1]);
    close(out[0]);
    return 0;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- one Cluster changed among many: SotW against delta -------------------------- */

struct vs_stream {
    struct xdsc *conn;
    struct xdsc_call *call;
    int delta;
    unsigned responses;
    int64_t last_ns;
};

/* Top-level string field |num| of a serialised message (no decoding of
 * the resources: the load generator must not be what is measured). */
static void top_field(const uint8_t *p, size_t n, unsigned num, char *out, size_t cap)
{
    size_t i = 0;
    out[0] = '\0';
    while (i < n) {
        uint64_t key = 0, v = 0;
        int sh = 0;
        while (i < n) {
            key |= (uint64_t)(p[i] & 0x7f) << sh;
            sh += 7;
            if (!(p[i++] & 0x80))
                break;
        }
        if ((key & 7) != 2)
            return; /* every field of a response we read is a string or message */
        sh = 0;
        while (i < n) {
            v |= (uint64_t)(p[i] & 0x7f) << sh;
            sh += 7;
            if (!(p[i++] & 0x80))
                break;
        }
        if (v > n - i)
            return;
        if ((key >> 3) == num) {
            size_t l = v < cap - 1 ? (size_t)v : cap - 1;
            memcpy(out, p + i, l);
            out[l] = '\0';
            return;
        }
        i += (size_t)v;
    }
}

static void vs_message(void *user, struct xdsc_call *call, const uint8_t *msg, size_t len)
{
    struct vs_stream *v = user;
    char nonce[32], version[32] = "";
    v->responses++;
    v->last_ns = cx_mono_ns();
    top_field(msg, len, 5, nonce, sizeof(nonce));
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc;
    if (v->delta) {
        rc = xdsc_encode_delta_request(&b, XDS_CLUSTER, NULL, 0, NULL, 0, NULL, NULL, 0, nonce,
                                       NULL, NULL, NULL);
    } else {
        top_field(msg, len, 1, version, sizeof(version));
        rc = xdsc_encode_request(&b, XDS_CLUSTER, NULL, 0, version, nonce, NULL, NULL, NULL, 0,
                                 NULL);
    }
    if (rc == 0)
        xdsc_call_send(call, b.data, b.len);
    cx_buf_free(&b);
}

static const struct xdsc_call_cbs vs_cbs = {.on_message = vs_message};

struct vs_gen {
    struct vs_stream *s;
    int n;
    unsigned want;
};

static int vs_all(void *arg)
{
    struct vs_gen *g = arg;
    for (int i = 0; i < g->n; i++)
        if (g->s[i].responses < g->want)
            return 0;
    return 1;
}

/* Per push: bytes sent, server CPU (the push and its ACKs), latency p50
 * and p99 over the streams; reported as median, min and max over pushes. */
enum { VS_BYTES, VS_CPU_MS, VS_P50_MS, VS_P99_MS, VS_METRICS };
#define VS_PUSHES 7

struct vs_result {
    int delta, clusters, streams, pushes;
    double med[VS_METRICS], min[VS_METRICS], max[VS_METRICS];
    double setup_s;
};

static int sotw_vs_delta(int clusters, int nstreams, int pushes, int delta, struct vs_result *res)
{
    int cmd[2], out[2];
    if (pipe(cmd) != 0 || pipe(out) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(cmd[1]);
        close(out[0]);
        run_server(cmd[0], out[1], 0, clusters);
    }
    close(cmd[0]);
    close(out[1]);
    struct gen q = {.cmd_fd = cmd[1], .stat_fd = out[0]};
    char line[64];
    ssize_t r = read(out[0], line, sizeof(line) - 1);
    if (r <= 0)
        return -1;
    line[r] = '\0';
    int port = (int)strtol(line, NULL, 10);
    struct event_base *base = event_base_new();
    struct vs_gen g = {.s = calloc((size_t)nstreams, sizeof(struct vs_stream)), .n = nstreams};
    int64_t *lat = malloc(sizeof(int64_t) * (size_t)nstreams);
    if (!g.s || !lat)
        return -1;
    static const char *const star[] = {"*"};
    int64_t t0 = cx_mono_ns();
    for (int i = 0; i < nstreams; i++) {
        struct vs_stream *v = &g.s[i];
        v->delta = delta;
        v->conn = xdsc_connect(base, "127.0.0.1", port, NULL, NULL);
        v->call = v->conn ? xdsc_call_open(v->conn,
                                           delta ? "/envoy.service.discovery.v3."
                                                   "AggregatedDiscoveryService/"
                                                   "DeltaAggregatedResources"
                                                 : "/envoy.service.discovery.v3."
                                                   "AggregatedDiscoveryService/"
                                                   "StreamAggregatedResources",
                                           "application/grpc", &vs_cbs, v)
                          : NULL;
        if (!v->call)
            return -1;
        char id[32];
        snprintf(id, sizeof(id), "proxy-%d", i);
        struct cx_buf b;
        cx_buf_init(&b, 0);
        int rc =
            delta ? xdsc_encode_delta_request(&b, XDS_CLUSTER, star, 1, NULL, 0, NULL, NULL, 0, "",
                                              id, GROUP, NULL)
                  : xdsc_encode_request(&b, XDS_CLUSTER, NULL, 0, "", "", id, NULL, GROUP, 0, NULL);
        if (rc != 0 || xdsc_call_send(v->call, b.data, b.len) != 0)
            return -1;
        cx_buf_free(&b);
        if (i % 50 == 49)
            xdsc_run_for(base, 1);
    }
    g.want = 1;
    if (!xdsc_run_until(base, vs_all, &g, 600000)) {
        fprintf(stderr, "bench_xds: %s streams did not get their %d clusters\n",
                delta ? "delta" : "SotW", clusters);
        return -1;
    }
    res->setup_s = (double)(cx_mono_ns() - t0) / 1e9;
    xdsc_run_for(base, 300);
    double per[VS_METRICS][VS_PUSHES];
    if (pushes > VS_PUSHES)
        pushes = VS_PUSHES;
    for (int p = 0; p < pushes; p++) {
        struct srv_stats s1, s2;
        if (query(&q, &s1) != 0)
            return -1;
        g.want = 2 + (unsigned)p;
        int64_t tp = cx_mono_ns();
        char c = 'p';
        if (write(q.cmd_fd, &c, 1) != 1 || !xdsc_run_until(base, vs_all, &g, 600000)) {
            fprintf(stderr, "bench_xds: push %d did not reach every stream\n", p);
            return -1;
        }
        for (int i = 0; i < nstreams; i++)
            lat[i] = g.s[i].last_ns - tp;
        xdsc_run_for(base, 100); /* the ACKs */
        if (query(&q, &s2) != 0)
            return -1;
        per[VS_BYTES][p] = (double)(s2.bytes - s1.bytes);
        per[VS_CPU_MS][p] = (s2.cpu - s1.cpu) * 1000.0;
        per[VS_P50_MS][p] = pct(lat, (size_t)nstreams, 0.50);
        per[VS_P99_MS][p] = pct(lat, (size_t)nstreams, 0.99);
    }
    *res = (struct vs_result){.delta = delta,
                              .clusters = clusters,
                              .streams = nstreams,
                              .pushes = pushes,
                              .setup_s = res->setup_s};
    for (int m = 0; m < VS_METRICS; m++) {
        qsort(per[m], (size_t)pushes, sizeof(double), cmp_dbl);
        res->min[m] = per[m][0];
        res->med[m] = per[m][pushes / 2];
        res->max[m] = per[m][pushes - 1];
    }
    char qc = 'q';
    if (write(q.cmd_fd, &qc, 1) != 1)
        kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    for (int i = 0; i < nstreams; i++)
        xdsc_free(g.s[i].conn);
    free(g.s);
    free(lat);
    event_base_free(base);
    close(cmd[1]);
    close(out[0]);
    return 0;
}

static void vs_print_stderr(const struct vs_result vs[2])
{
    for (int d = 0; d < 2; d++) {
        const struct vs_result *v = &vs[d];
        fprintf(stderr,
                "%s: %.0f B/push (min %.0f, max %.0f)  %.2f ms CPU/push (min %.2f, max %.2f)  "
                "p99 %.2f ms (min %.2f, max %.2f)  setup %.1f s\n",
                d ? "delta" : "SotW ", v->med[VS_BYTES], v->min[VS_BYTES], v->max[VS_BYTES],
                v->med[VS_CPU_MS], v->min[VS_CPU_MS], v->max[VS_CPU_MS], v->med[VS_P99_MS],
                v->min[VS_P99_MS], v->max[VS_P99_MS], v->setup_s);
    }
    if (vs[1].med[VS_BYTES] > 0)
        fprintf(stderr, "SotW/delta bytes per push: %.0fx\n",
                vs[0].med[VS_BYTES] / vs[1].med[VS_BYTES]);
}

/* Median of |n| runs of each, interleaved (none, token, none, token...). */
#define SETUP_RUNS 5
static int setup_rows(int nstreams, struct setup_result out[2], double spread[2][3])
{
    double p50[2][SETUP_RUNS], p99[2][SETUP_RUNS], cpu[2][SETUP_RUNS];
    for (int run = 0; run < SETUP_RUNS; run++)
        for (int auth = 0; auth < 2; auth++) {
            struct setup_result r;
            if (setup_cost(nstreams, auth, &r) != 0)
                return -1;
            p50[auth][run] = r.p50_ms;
            p99[auth][run] = r.p99_ms;
            cpu[auth][run] = r.cpu_us_per_stream;
        }
    for (int auth = 0; auth < 2; auth++) {
        qsort(p50[auth], SETUP_RUNS, sizeof(double), cmp_dbl);
        qsort(p99[auth], SETUP_RUNS, sizeof(double), cmp_dbl);
        qsort(cpu[auth], SETUP_RUNS, sizeof(double), cmp_dbl);
        out[auth] = (struct setup_result){.streams = nstreams,
                                          .p50_ms = p50[auth][SETUP_RUNS / 2],
                                          .p99_ms = p99[auth][SETUP_RUNS / 2],
                                          .cpu_us_per_stream = cpu[auth][SETUP_RUNS / 2]};
        spread[auth][0] = p50[auth][0];
        spread[auth][1] = p50[auth][SETUP_RUNS / 2];
        spread[auth][2] = p50[auth][SETUP_RUNS - 1];
    }
    return 0;
}

int main(int argc, char **argv)
{
    int streams = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 1000;
    int pushes = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 20;
    if (streams < 1 || pushes < 1)
        return 2;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    int vs_clusters = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 10000;
    int vs_streams = argc > 4 ? (int)strtol(argv[4], NULL, 10) : 1000;
    int big_streams = argc > 5 ? (int)strtol(argv[5], NULL, 10) : 10000;
    struct result base1, many, big;
    struct setup_result setup[2];
    struct vs_result vs[2];
    double spread[2][3];
    int nsetup = streams < 500 ? streams : 500;
    if (getenv("BENCH_XDS_VS_ONLY")) {
        /* development: the SotW-vs-delta rows alone, on stderr */
        if (sotw_vs_delta(vs_clusters, vs_streams, VS_PUSHES, 0, &vs[0]) != 0 ||
            sotw_vs_delta(vs_clusters, vs_streams, VS_PUSHES, 1, &vs[1]) != 0)
            return 1;
        vs_print_stderr(vs);
        return 0;
    }
    if (measure(1, pushes, &base1) != 0 || measure(streams, pushes, &many) != 0 ||
        measure(big_streams, 5, &big) != 0 || setup_rows(nsetup, setup, spread) != 0 ||
        sotw_vs_delta(vs_clusters, vs_streams, VS_PUSHES, 0, &vs[0]) != 0 ||
        sotw_vs_delta(vs_clusters, vs_streams, VS_PUSHES, 1, &vs[1]) != 0) {
        fprintf(stderr, "bench_xds: failed\n");
        return 1;
    }
    struct result *rs[3] = {&many, &big, &base1};
    printf("{\"benchmark\":\"xds\",\"title\":\"xDS server: one EDS change pushed to concurrent ADS "
           "streams\",\"notes\":\"Server in a child process; load generator = our C ADS client "
           "(tests/lib/xdsc), one connection per stream, gRPC-style subscription (1 listener, 1 "
           "route, %d clusters, %d endpoints sets). Latency = snapshot handed to the server -> "
           "response received and ACK sent, per stream; all_acked = slowest stream of a push. "
           "Targets: p99 <= 500 ms at 1000 streams, p99 <= 1 s at 10000, <= 8 KB RSS per idle "
           "stream (connection included). Baseline: the same push to 1 stream. Stream setup rows: "
           "one stream at a time (connect, LDS request, first response), the same token for all "
           "(the first reviewed, the rest from the cache) against --xds-auth none, 5 runs "
           "interleaved, medians. SotW vs delta rows: one Cluster changed among %d, %d streams "
           "subscribed to every Cluster (wildcard), 7 pushes, each measured alone (bytes, server "
           "CPU for the push and its ACKs, latency p99 over the streams), reported as the median "
           "with min and max; the baseline is SotW; the load generator reads only "
           "nonces and versions.\",\"rows\":[",
           CLUSTERS, CLUSTERS, vs_clusters, vs_streams);
    for (int i = 0; i < 3; i++) {
        struct result *x = rs[i];
        /* Per-stream memory is a slope: one stream measures warm-up noise. */
        char rss[32] = "null", heap[32] = "null";
        if (x->streams >= 100) {
            snprintf(rss, sizeof(rss), "%.2f", x->rss_kb_per_stream);
            snprintf(heap, sizeof(heap), "%.2f", x->heap_kb_per_stream);
        }
        printf(
            "%s{\"case\":\"push to %d stream%s\",\"streams\":%d,\"pushes\":%d,\"p50_ms\":%.3f,"
            "\"p99_ms\":%.3f,\"max_ms\":%.3f,\"all_acked_p50_ms\":%.3f,\"all_acked_p99_ms\":%.3f,"
            "\"bytes_per_push\":%.0f,\"server_cpu_ms_per_push\":%.3f,"
            "\"rss_kb_per_idle_stream\":%s,\"heap_kb_per_idle_stream\":%s,\"setup_s\":%.2f,"
            "\"baseline_p50_ms\":%.3f,"
            "\"ratio\":%.2f}",
            i ? "," : "", x->streams, x->streams == 1 ? "" : "s", x->streams, pushes, x->p50_ms,
            x->p99_ms, x->max_ms, x->all_p50_ms, x->all_p99_ms, x->bytes_per_push,
            x->cpu_ms_per_push, rss, heap, x->setup_s, base1.p50_ms,
            base1.p50_ms > 0 ? x->p50_ms / base1.p50_ms : 0);
    }
    static const char *const setup_case[2] = {"stream setup, --xds-auth none",
                                              "stream setup, token (cached TokenReview)"};
    for (int d = 0; d < 2; d++) {
        const struct vs_result *v = &vs[d];
        printf(",{\"case\":\"one Cluster changed among %d, %s, %d streams\",\"clusters\":%d,"
               "\"vs_streams\":%d,\"pushes\":%d,\"bytes_per_push\":%.0f,"
               "\"bytes_per_push_min\":%.0f,\"bytes_per_push_max\":%.0f,"
               "\"server_cpu_ms_per_push\":%.3f,\"server_cpu_ms_per_push_min\":%.3f,"
               "\"server_cpu_ms_per_push_max\":%.3f,\"push_p50_ms\":%.3f,\"push_p99_ms\":%.3f,"
               "\"push_p99_ms_min\":%.3f,\"push_p99_ms_max\":%.3f,\"setup_s\":%.2f,"
               "\"baseline\":\"SotW, the same change and streams, same run\","
               "\"baseline_bytes_per_push\":%.0f,\"bytes_ratio\":%.6f,"
               "\"baseline_server_cpu_ms_per_push\":%.3f,\"cpu_ratio\":%.4f}",
               v->clusters, d ? "delta" : "SotW", v->streams, v->clusters, v->streams, v->pushes,
               v->med[VS_BYTES], v->min[VS_BYTES], v->max[VS_BYTES], v->med[VS_CPU_MS],
               v->min[VS_CPU_MS], v->max[VS_CPU_MS], v->med[VS_P50_MS], v->med[VS_P99_MS],
               v->min[VS_P99_MS], v->max[VS_P99_MS], v->setup_s, vs[0].med[VS_BYTES],
               vs[0].med[VS_BYTES] > 0 ? v->med[VS_BYTES] / vs[0].med[VS_BYTES] : 0,
               vs[0].med[VS_CPU_MS],
               vs[0].med[VS_CPU_MS] > 0 ? v->med[VS_CPU_MS] / vs[0].med[VS_CPU_MS] : 0);
    }
    for (int a = 0; a < 2; a++)
        printf(",{\"case\":\"%s\",\"setup_streams\":%d,\"runs\":%d,\"setup_p50_ms\":%.3f,"
               "\"setup_p50_min_ms\":%.3f,\"setup_p50_max_ms\":%.3f,\"setup_p99_ms\":%.3f,"
               "\"server_cpu_us_per_stream\":%.1f,\"baseline_setup_p50_ms\":%.3f,"
               "\"ratio\":%.2f}",
               setup_case[a], setup[a].streams, SETUP_RUNS, setup[a].p50_ms, spread[a][0],
               spread[a][2], setup[a].p99_ms, setup[a].cpu_us_per_stream, setup[0].p50_ms,
               setup[0].p50_ms > 0 ? setup[a].p50_ms / setup[0].p50_ms : 0);
    printf("]}\n");
    for (int a = 0; a < 2; a++)
        fprintf(stderr, "%-42s p50 %.3f ms (min %.3f, max %.3f)  p99 %.3f ms  %.1f us CPU/stream\n",
                setup_case[a], setup[a].p50_ms, spread[a][0], spread[a][2], setup[a].p99_ms,
                setup[a].cpu_us_per_stream);
    vs_print_stderr(vs);
    for (int i = 0; i < 3; i++) {
        struct result *x = rs[i];
        fprintf(stderr,
                "%5d streams: p50 %8.2f ms  p99 %8.2f ms  all-ACKed p50 %8.2f p99 %8.2f ms  "
                "%9.0f B/push  %7.2f ms CPU/push  %6.2f KB RSS (%.2f KB heap)/idle stream\n",
                x->streams, x->p50_ms, x->p99_ms, x->all_p50_ms, x->all_p99_ms, x->bytes_per_push,
                x->cpu_ms_per_push, x->rss_kb_per_stream, x->heap_kb_per_stream);
    }
    return 0;
}
