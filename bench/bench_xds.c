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
 * The baseline is the same push with a single stream, in the same run. The
 * idle streams' memory is measured again with the connections over TLS
 * (what the chart deploys), against the h2c figure of the same run.
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
#include "xdsbench.h"
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

#define GROUP    XDSBENCH_GROUP
#define CLUSTERS XDSBENCH_CLUSTERS

/* The server runs in a fresh process image: a forked child would inherit
 * this process's heap (the load generator's freed pages, resident), and
 * reuse them, hiding the streams' RSS. */
static const char *self_exe = "/proc/self/exe";

__attribute__((noreturn)) static void exec_server(int cmd_fd, int out_fd, int auth, int big,
                                                  const char *tls_dir)
{
    char a[4][16];
    snprintf(a[0], sizeof(a[0]), "%d", cmd_fd);
    snprintf(a[1], sizeof(a[1]), "%d", out_fd);
    snprintf(a[2], sizeof(a[2]), "%d", auth);
    snprintf(a[3], sizeof(a[3]), "%d", big);
    execl(self_exe, "bench_xds", "--server", a[0], a[1], a[2], a[3], tls_dir ? tls_dir : "",
          (char *)NULL);
    perror("bench_xds: exec");
    _exit(1);
}

/* ---- the load generator ------------------------------------------------------- */

struct gen;

struct stream {
    struct gen *g;
    struct xdsc *conn;
    struct xdsc_ads *ads;
    unsigned eds_responses;
    int64_t last_ns;
};

struct gen {
    struct event_base *base;
    struct stream *s;
    int n;
    unsigned want_eds; /* EDS responses each stream must have */
    int reached;       /* streams that have them */
    int cmd_fd, stat_fd;
};

static void on_resp(void *user, struct xdsc_ads *a, const xdsc_response *r)
{
    (void)a;
    struct stream *s = user;
    if (strcmp(r->type_url, XDS_TYPE_URL_ENDPOINT) == 0) {
        s->last_ns = cx_mono_ns();
        if (++s->eds_responses == s->g->want_eds)
            s->g->reached++;
    }
}

/* Every stream has its EDS responses (a counter, not a scan of 10,000
 * streams every millisecond); a closed connection ends the wait too. */
static int all_have(void *arg)
{
    struct gen *g = arg;
    if (g->reached >= g->n)
        return 1;
    static int64_t last_scan;
    int64_t now = cx_mono_ns();
    if (now - last_scan < 500 * CX_NS_PER_MS)
        return 0;
    last_scan = now;
    for (int i = 0; i < g->n; i++)
        if (g->s[i].conn && !xdsc_alive(g->s[i].conn))
            return 1;
    return 0;
}

/* Sets the next goal: |want| EDS responses per stream. */
static void want(struct gen *g, unsigned w)
{
    g->want_eds = w;
    g->reached = 0;
    for (int i = 0; i < g->n; i++)
        g->reached += g->s[i].eds_responses >= w;
}

static int behind(const struct gen *g, const char *what)
{
    int dead = 0, late = 0;
    for (int i = 0; i < g->n; i++) {
        dead += !xdsc_alive(g->s[i].conn);
        late += g->s[i].eds_responses < g->want_eds;
    }
    if (late || dead)
        fprintf(stderr, "bench_xds: %s: %d of %d streams behind, %d connections closed\n", what,
                late, g->n, dead);
    return late || dead;
}

struct srv_stats {
    long rss_kb;
    double cpu;
    unsigned long long bytes, pushes, acks, streams;
    size_t heap, h2_heap, h2_resident;
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
    return sscanf(line, "%ld %lf %llu %llu %llu %llu %zu %zu %zu", &out->rss_kb, &out->cpu,
                  &out->bytes, &out->pushes, &out->acks, &out->streams, &out->heap, &out->h2_heap,
                  &out->h2_resident) == 9
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
    int streams, pushes;
    double p50_ms, p99_ms, all_p50_ms, all_p99_ms, max_ms;
    double push_p99[3]; /* per push, the p99 over the streams: min, median, max over pushes */
    double bytes_per_push, cpu_ms_per_push, rss_kb_per_stream, heap_kb_per_stream, setup_s;
    double h2_heap_kb_per_stream, h2_resident_kb_per_stream;
};

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void spread3(double *v, int n, double out[3])
{
    qsort(v, (size_t)n, sizeof(double), cmp_dbl);
    out[0] = v[0];
    out[1] = v[n / 2];
    out[2] = v[n - 1];
}

/* |tls_dir|: NULL for h2c, else a directory xdsc_make_certs filled: the
 * server serves TLS and every connection handshakes (no client
 * certificate, as with --xds-auth none). */
static int measure(int nstreams, int pushes, const char *tls_dir, struct result *res)
{
    int cmd[2], out[2];
    if (pipe(cmd) != 0 || pipe(out) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(cmd[1]);
        close(out[0]);
        exec_server(cmd[0], out[1], 0, 0, tls_dir);
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
    SSL_CTX *tls = NULL;
    if (tls_dir) {
        char ca[512];
        snprintf(ca, sizeof(ca), "%s/ca.crt", tls_dir);
        if (!(tls = xdsc_tls_client_ctx(ca, NULL, NULL)))
            return -1;
    }
    struct srv_stats s0, s1, s2;
    cxt_loop_for(g.base, 50);
    if (query(&g, &s0) != 0)
        return -1;

    char *cnames[CLUSTERS];
    for (int i = 0; i < CLUSTERS; i++) {
        cnames[i] = malloc(32);
        snprintf(cnames[i], 32, "cluster-%02d", i);
    }
    const char *lds[] = {"bench.test"}, *rds[] = {"rc"};
    int64_t t_setup = cx_mono_ns();
    want(&g, 1);
    for (int i = 0; i < nstreams; i++) {
        char id[32];
        snprintf(id, sizeof(id), "proxy-%d", i);
        g.s[i].g = &g;
        g.s[i].conn = xdsc_connect(g.base, "127.0.0.1", port, tls, tls ? "localhost" : NULL);
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
            cxt_loop_for(g.base, 1); /* let the accept queue drain */
    }
    cxt_loop_until(g.base, all_have, &g, 300000);
    if (behind(&g, "initial resources"))
        return -1;
    res->setup_s = (double)(cx_mono_ns() - t_setup) / 1e9;
    /* Last ACKs in, streams idle: for more than one keepalive interval (30 s)
     * when memory per stream is reported, since an idle connection hands
     * its frame buffer back at its first keepalive tick. */
    cxt_loop_for(g.base, nstreams >= 100 ? 31500 : 500);
    if (query(&g, &s1) != 0)
        return -1;

    size_t nlat = 0;
    int64_t *lat = malloc(sizeof(int64_t) * (size_t)nstreams * (size_t)pushes);
    int64_t *one = malloc(sizeof(int64_t) * (size_t)nstreams);
    int64_t *all = malloc(sizeof(int64_t) * (size_t)pushes);
    double *p99s = malloc(sizeof(double) * (size_t)pushes);
    for (int p = 0; p < pushes; p++) {
        want(&g, 2 + (unsigned)p);
        int64_t t0 = cx_mono_ns();
        char c = 'p';
        if (write(g.cmd_fd, &c, 1) != 1)
            return -1;
        cxt_loop_until(g.base, all_have, &g, 120000);
        char what[32];
        snprintf(what, sizeof(what), "push %d", p);
        if (behind(&g, what))
            return -1;
        int64_t worst = 0;
        for (int i = 0; i < nstreams; i++) {
            int64_t d = g.s[i].last_ns - t0;
            lat[nlat++] = d;
            one[i] = d;
            if (d > worst)
                worst = d;
        }
        all[p] = worst;
        p99s[p] = pct(one, (size_t)nstreams, 0.99);
        cxt_loop_for(g.base, 20); /* the ACKs reach the server */
    }
    cxt_loop_for(g.base, 200);
    if (query(&g, &s2) != 0)
        return -1;
    res->streams = nstreams;
    res->pushes = pushes;
    res->p50_ms = pct(lat, nlat, 0.50);
    res->p99_ms = pct(lat, nlat, 0.99);
    res->max_ms = pct(lat, nlat, 1.0);
    res->all_p50_ms = pct(all, (size_t)pushes, 0.50);
    res->all_p99_ms = pct(all, (size_t)pushes, 0.99);
    spread3(p99s, pushes, res->push_p99);
    res->bytes_per_push = (double)(s2.bytes - s1.bytes) / pushes;
    res->cpu_ms_per_push = (s2.cpu - s1.cpu) * 1000.0 / pushes;
    res->rss_kb_per_stream = (double)(s1.rss_kb - s0.rss_kb) / nstreams;
    res->heap_kb_per_stream = ((double)s1.heap - (double)s0.heap) / 1024.0 / nstreams;
    res->h2_heap_kb_per_stream = ((double)s1.h2_heap - (double)s0.h2_heap) / 1024.0 / nstreams;
    res->h2_resident_kb_per_stream = (double)s1.h2_resident / 1024.0 / nstreams;
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
    free(one);
    free(all);
    free(p99s);
    if (tls)
        SSL_CTX_free(tls);
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

/* |auth|: 0 --xds-auth none; 1 the same token for every stream (the first
 * reviewed, the rest from the cache); 2 a new token per stream (each one
 * reviewed: a cache miss, a review started and answered). */
static int setup_cost(int nstreams, int auth, struct setup_result *res)
{
    int cmd[2], out[2];
    if (pipe(cmd) != 0 || pipe(out) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(cmd[1]);
        close(out[0]);
        exec_server(cmd[0], out[1], auth != 0, 0, NULL);
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
    cxt_loop_for(g.base, 50);
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
        char fresh[sizeof(token) + 16];
        snprintf(fresh, sizeof(fresh), "%s%d", token, i);
        int64_t t0 = cx_mono_ns();
        conns[i] = xdsc_connect(g.base, "127.0.0.1", port, NULL, NULL);
        struct xdsc_ads_config ac = {.node_id = id,
                                     .gateway = GROUP,
                                     .auto_ack = 1,
                                     .on_response = on_first,
                                     .user = &first[i],
                                     .authorization = auth == 2 ? fresh
                                                      : auth    ? token
                                                                : NULL};
        ads[i] = conns[i] ? xdsc_ads_open(conns[i], &ac) : NULL;
        if (!ads[i] || xdsc_ads_request(ads[i], XDS_LISTENER, lds, 1, "", "", NULL) != 0 ||
            !cxt_loop_until(g.base, got_first, &first[i], 10000)) {
            fprintf(stderr, "bench_xds: stream %d (auth %d) got no response\n", i, auth);
            return -1;
        }
        lat[i] = first[i] - t0;
    }
    cxt_loop_for(g.base, 100);
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

/* Every stream has its response; a closed connection ends the wait too
 * (the caller sees who is behind). */
static int vs_all(void *arg)
{
    struct vs_gen *g = arg;
    int done = 1;
    for (int i = 0; i < g->n; i++) {
        if (!xdsc_alive(g->s[i].conn))
            return 1;
        if (g->s[i].responses < g->want)
            done = 0;
    }
    return done;
}

static int vs_behind(const struct vs_gen *g, const char *what)
{
    int dead = 0, behind = 0;
    for (int i = 0; i < g->n; i++) {
        dead += !xdsc_alive(g->s[i].conn);
        behind += g->s[i].responses < g->want;
    }
    if (behind || dead)
        fprintf(stderr, "bench_xds: %s: %d of %d streams behind, %d connections closed\n", what,
                behind, g->n, dead);
    return behind || dead;
}

/* Per push: bytes sent, server CPU (the push and its ACKs), latency p50
 * and p99 over the streams; reported as median, min and max over pushes. */
enum { VS_BYTES, VS_CPU_MS, VS_P50_MS, VS_P99_MS, VS_METRICS };
#define VS_PUSHES 5

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
        exec_server(cmd[0], out[1], 0, clusters, NULL);
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
        if (i % 50 == 49)
            cxt_loop_for(base, 1);
    }
    /* Every call is open at the server before any request goes: sending
     * them while connecting, the initial responses (10,000 resources each)
     * starved the connecting loop, and connections whose preface came more
     * than the server's 10 s handshake deadline after accept were closed. */
    for (int tries = 0;; tries++) {
        struct srv_stats st;
        cxt_loop_for(base, 100);
        if (query(&q, &st) != 0)
            return -1;
        if (st.streams >= (unsigned long long)nstreams)
            break;
        if (tries == 600) {
            fprintf(stderr, "bench_xds: %llu of %d calls open after 60 s\n", st.streams, nstreams);
            return -1;
        }
    }
    for (int i = 0; i < nstreams; i++) {
        struct vs_stream *v = &g.s[i];
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
    }
    g.want = 1;
    cxt_loop_until(base, vs_all, &g, 600000);
    if (vs_behind(&g, delta ? "delta streams' initial clusters" : "SotW streams' initial clusters"))
        return -1;
    res->setup_s = (double)(cx_mono_ns() - t0) / 1e9;
    cxt_loop_for(base, 300);
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
        if (write(q.cmd_fd, &c, 1) != 1)
            return -1;
        cxt_loop_until(base, vs_all, &g, 600000);
        char what[64];
        snprintf(what, sizeof(what), "%s push %d", delta ? "delta" : "SotW", p);
        if (vs_behind(&g, what))
            return -1;
        for (int i = 0; i < nstreams; i++)
            lat[i] = g.s[i].last_ns - tp;
        cxt_loop_for(base, 100); /* the ACKs */
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

/* Median of |n| runs of each mode, interleaved (none, cached, fresh, none...). */
#define SETUP_RUNS  5
#define SETUP_MODES 3
static int setup_rows(int nstreams, struct setup_result out[SETUP_MODES],
                      double spread[SETUP_MODES][3])
{
    double p50[SETUP_MODES][SETUP_RUNS], p99[SETUP_MODES][SETUP_RUNS], cpu[SETUP_MODES][SETUP_RUNS];
    for (int run = 0; run < SETUP_RUNS; run++)
        for (int auth = 0; auth < SETUP_MODES; auth++) {
            struct setup_result r;
            if (setup_cost(nstreams, auth, &r) != 0)
                return -1;
            p50[auth][run] = r.p50_ms;
            p99[auth][run] = r.p99_ms;
            cpu[auth][run] = r.cpu_us_per_stream;
        }
    for (int auth = 0; auth < SETUP_MODES; auth++) {
        double x[3];
        spread3(p99[auth], SETUP_RUNS, x);
        spread3(cpu[auth], SETUP_RUNS, x);
        out[auth] = (struct setup_result){.streams = nstreams,
                                          .p99_ms = p99[auth][SETUP_RUNS / 2],
                                          .cpu_us_per_stream = cpu[auth][SETUP_RUNS / 2]};
        spread3(p50[auth], SETUP_RUNS, spread[auth]);
        out[auth].p50_ms = spread[auth][1];
    }
    return 0;
}

static void print_push_row(const struct result *x, const struct result *base1, int first)
{
    /* Per-stream memory is a slope: one stream measures warm-up noise. */
    char mem[256] = "";
    if (x->streams >= 100)
        snprintf(mem, sizeof(mem),
                 ",\"rss_kb_per_idle_stream\":%.2f,\"heap_kb_per_idle_stream\":%.2f,"
                 "\"nghttp2_heap_kb_per_idle_stream\":%.2f,"
                 "\"nghttp2_resident_mapped_kb_per_idle_stream\":%.2f",
                 x->rss_kb_per_stream, x->heap_kb_per_stream, x->h2_heap_kb_per_stream,
                 x->h2_resident_kb_per_stream);
    char target[160] = "";
    if (x->streams >= 10000)
        snprintf(target, sizeof(target), ",\"target\":\"push p99 <= 1000 ms\",\"met\":\"%s\"",
                 x->push_p99[1] <= 1000 ? "yes" : "no");
    else if (x->streams >= 1000)
        snprintf(target, sizeof(target), ",\"target\":\"push p99 <= 500 ms\",\"met\":\"%s\"",
                 x->push_p99[1] <= 500 ? "yes" : "no");
    printf("%s{\"case\":\"push to %d stream%s\",\"streams\":%d,\"pushes\":%d,\"p50_ms\":%.3f,"
           "\"p99_ms\":%.3f,\"max_ms\":%.3f,\"push_p99_ms_median\":%.3f,\"push_p99_ms_min\":%.3f,"
           "\"push_p99_ms_max\":%.3f,\"all_acked_p50_ms\":%.3f,\"all_acked_p99_ms\":%.3f,"
           "\"bytes_per_push\":%.0f,\"server_cpu_ms_per_push\":%.3f%s,\"setup_s\":%.2f,"
           "\"baseline\":\"the same push to 1 stream, same run\",\"baseline_p50_ms\":%.3f,"
           "\"ratio\":%.2f%s}",
           first ? "" : ",", x->streams, x->streams == 1 ? "" : "s", x->streams, x->pushes,
           x->p50_ms, x->p99_ms, x->max_ms, x->push_p99[1], x->push_p99[0], x->push_p99[2],
           x->all_p50_ms, x->all_p99_ms, x->bytes_per_push, x->cpu_ms_per_push, mem, x->setup_s,
           base1->p50_ms, base1->p50_ms > 0 ? x->p50_ms / base1->p50_ms : 0, target);
}

static void print_idle_row(const struct result *x)
{
    printf(",{\"case\":\"%d idle ADS streams: memory per stream\",\"streams\":%d,"
           "\"rss_kb_per_idle_stream\":%.2f,\"heap_kb_per_idle_stream\":%.2f,"
           "\"nghttp2_heap_kb_per_idle_stream\":%.2f,"
           "\"baseline\":\"the server's RSS before the streams, same process\","
           "\"target\":\"<= 8 KB RSS per idle stream\",\"met\":\"%s\"}",
           x->streams, x->streams, x->rss_kb_per_stream, x->heap_kb_per_stream,
           x->h2_heap_kb_per_stream, x->rss_kb_per_stream <= 8.0 ? "yes" : "no");
}

static void print_tls_idle_row(const struct result *x, const struct result *h2c)
{
    printf(",{\"case\":\"%d idle ADS streams over TLS: memory per stream\",\"streams\":%d,"
           "\"rss_kb_per_idle_stream\":%.2f,\"heap_kb_per_idle_stream\":%.2f,"
           "\"nghttp2_heap_kb_per_idle_stream\":%.2f,"
           "\"baseline\":\"the same streams over h2c, same run\","
           "\"baseline_rss_kb_per_idle_stream\":%.2f,\"ratio\":%.2f}",
           x->streams, x->streams, x->rss_kb_per_stream, x->heap_kb_per_stream,
           x->h2_heap_kb_per_stream, h2c->rss_kb_per_stream,
           h2c->rss_kb_per_stream > 0 ? x->rss_kb_per_stream / h2c->rss_kb_per_stream : 0);
}

/* A directory with the test CA, server and client certificates (removed
 * by the caller with rm -rf). */
static int make_tls_dir(char *dir, size_t cap)
{
    snprintf(dir, cap, "/tmp/bench-xds-tls-XXXXXX");
    return mkdtemp(dir) && xdsc_make_certs(dir) == 0 ? 0 : -1;
}

static void remove_dir(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_xds: cannot remove %s\n", dir);
}

static const char *const setup_case[SETUP_MODES] = {
    "stream setup, --xds-auth none", "stream setup, token (cached TokenReview)",
    "stream setup, token (first-time TokenReview, answered at once)"};

static void print_setup_stderr(const struct setup_result *setup, double spread[][3])
{
    for (int a = 0; a < SETUP_MODES; a++)
        fprintf(stderr, "%-62s p50 %.3f ms (min %.3f, max %.3f)  p99 %.3f ms  %.1f us CPU/stream\n",
                setup_case[a], setup[a].p50_ms, spread[a][0], spread[a][2], setup[a].p99_ms,
                setup[a].cpu_us_per_stream);
}

static void print_push_stderr(const struct result *x)
{
    fprintf(stderr,
            "%5d streams: p50 %8.2f ms  p99 %8.2f ms (per push: median %.2f, min %.2f, max "
            "%.2f)  %9.0f B/push  %7.2f ms CPU/push  %6.2f KB RSS (%.2f KB heap, nghttp2 %.2f "
            "KB heap + %.2f KB mapped resident)/idle stream  setup %.1f s\n",
            x->streams, x->p50_ms, x->p99_ms, x->push_p99[1], x->push_p99[0], x->push_p99[2],
            x->bytes_per_push, x->cpu_ms_per_push, x->rss_kb_per_stream, x->heap_kb_per_stream,
            x->h2_heap_kb_per_stream, x->h2_resident_kb_per_stream, x->setup_s);
}

int main(int argc, char **argv)
{
    if (argc == 7 && strcmp(argv[1], "--server") == 0)
        xdsbench_run_server((int)strtol(argv[2], NULL, 10), (int)strtol(argv[3], NULL, 10),
                            (int)strtol(argv[4], NULL, 10), (int)strtol(argv[5], NULL, 10),
                            argv[6]);
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
    int big_pushes = 7;
    struct result base1, many, big, tls;
    char tls_dir[64];
    struct setup_result setup[SETUP_MODES];
    struct vs_result vs[2];
    double spread[SETUP_MODES][3];
    int nsetup = streams < 300 ? streams : 300;
    const char *only = getenv("BENCH_XDS_ONLY"); /* development: one phase, on stderr */
    if (only) {
        int rc = 2;
        if (strcmp(only, "fanout") == 0 && (rc = measure(streams, pushes, NULL, &many)) == 0)
            print_push_stderr(&many);
        else if (strcmp(only, "big") == 0 &&
                 (rc = measure(big_streams, big_pushes, NULL, &big)) == 0)
            print_push_stderr(&big);
        else if (strcmp(only, "tls") == 0 && make_tls_dir(tls_dir, sizeof(tls_dir)) == 0) {
            if ((rc = measure(big_streams, 1, tls_dir, &tls)) == 0)
                print_push_stderr(&tls);
            remove_dir(tls_dir);
        } else if (strcmp(only, "setup") == 0 && (rc = setup_rows(nsetup, setup, spread)) == 0)
            print_setup_stderr(setup, spread);
        else if (strcmp(only, "vs") == 0 &&
                 (rc = sotw_vs_delta(vs_clusters, vs_streams, VS_PUSHES, 0, &vs[0]) ||
                       sotw_vs_delta(vs_clusters, vs_streams, VS_PUSHES, 1, &vs[1])) == 0)
            vs_print_stderr(vs);
        return rc ? 1 : 0;
    }
    int64_t t0 = cx_mono_ns();
    if (make_tls_dir(tls_dir, sizeof(tls_dir)) != 0) {
        fprintf(stderr, "bench_xds: cannot make the TLS certificates\n");
        return 1;
    }
    int tls_rc = measure(big_streams, 1, tls_dir, &tls);
    remove_dir(tls_dir);
    if (tls_rc != 0 || measure(1, pushes, NULL, &base1) != 0 ||
        measure(streams, pushes, NULL, &many) != 0 ||
        measure(big_streams, big_pushes, NULL, &big) != 0 ||
        setup_rows(nsetup, setup, spread) != 0 ||
        sotw_vs_delta(vs_clusters, vs_streams, VS_PUSHES, 0, &vs[0]) != 0 ||
        sotw_vs_delta(vs_clusters, vs_streams, VS_PUSHES, 1, &vs[1]) != 0) {
        fprintf(stderr, "bench_xds: failed after %.0f s\n", (double)(cx_mono_ns() - t0) / 1e9);
        return 1;
    }
    printf("{\"benchmark\":\"xds\",\"title\":\"xDS server: pushes to concurrent ADS streams, "
           "SotW vs delta, the cost of authentication\",\"notes\":\"Server in a child process; "
           "load generator = our C ADS client (tests/lib/xdsc), one connection per stream, "
           "gRPC-style subscription (1 listener, 1 route, %d clusters, %d endpoints sets); the "
           "push changes one ClusterLoadAssignment. Latency = snapshot handed to the server -> "
           "response received and ACK sent, per stream; push_p99 = p99 over the streams of one "
           "push, median/min/max over the pushes (%d at 1 and %d streams, %d at %d); "
           "all_acked = slowest stream of a push. Baseline: the same push to 1 stream. Memory "
           "per idle stream: the server's RSS (and malloc heap; nghttp2's share counted by the "
           "server's allocator) after the streams are set up and idle, minus before, over the "
           "streams, one sample per run; the TLS row: the same streams (1 push) over TLS "
           "(no client certificate), baseline the h2c row of the same run. Stream setup rows: one "
           "stream at a time (connect, LDS "
           "request, first response), %d streams per run, %d runs per mode interleaved, "
           "median/min/max over runs; cached = the same token for all (the first reviewed), "
           "first-time = a new token per stream (each reviewed; the reviewer answers at once, "
           "so the API server's own time is not in it); baseline --xds-auth none. SotW vs "
           "delta rows: one Cluster changed among %d, %d streams subscribed to every Cluster "
           "(wildcard), %d pushes (fewer than before, to keep the benchmark near 10 minutes on 2 "
           "cores), each measured alone (bytes, server CPU for the push and its ACKs, latency "
           "p99 over the streams), median with min and max; baseline SotW; the load generator "
           "reads only nonces and versions.\",\"rows\":[",
           CLUSTERS, CLUSTERS, pushes, streams, big_pushes, big_streams, nsetup, SETUP_RUNS,
           vs_clusters, vs_streams, VS_PUSHES);
    print_push_row(&many, &base1, 1);
    print_push_row(&big, &base1, 0);
    print_push_row(&base1, &base1, 0);
    print_idle_row(&big);
    print_tls_idle_row(&tls, &big);
    for (int d = 0; d < 2; d++) {
        const struct vs_result *v = &vs[d];
        double ratio = v->med[VS_BYTES] > 0 ? vs[0].med[VS_BYTES] / v->med[VS_BYTES] : 0;
        char target[128] = "";
        if (d)
            snprintf(target, sizeof(target),
                     ",\"target\":\"bytes per push >= 100x below SotW\",\"met\":\"%s\"",
                     ratio >= 100 ? "yes" : "no");
        printf(",{\"case\":\"one Cluster changed among %d, %s, %d streams\",\"clusters\":%d,"
               "\"vs_streams\":%d,\"pushes\":%d,\"bytes_per_push\":%.0f,"
               "\"bytes_per_push_min\":%.0f,\"bytes_per_push_max\":%.0f,"
               "\"server_cpu_ms_per_push\":%.3f,\"server_cpu_ms_per_push_min\":%.3f,"
               "\"server_cpu_ms_per_push_max\":%.3f,\"push_p50_ms\":%.3f,\"push_p99_ms\":%.3f,"
               "\"push_p99_ms_min\":%.3f,\"push_p99_ms_max\":%.3f,\"setup_s\":%.2f,"
               "\"baseline\":\"SotW, the same change and streams, same run\","
               "\"baseline_bytes_per_push\":%.0f,\"bytes_ratio\":%.6f,\"sotw_over_delta\":%.0f,"
               "\"baseline_server_cpu_ms_per_push\":%.3f,\"cpu_ratio\":%.4f,"
               "\"baseline_push_p99_ms\":%.3f%s}",
               v->clusters, d ? "delta" : "SotW", v->streams, v->clusters, v->streams, v->pushes,
               v->med[VS_BYTES], v->min[VS_BYTES], v->max[VS_BYTES], v->med[VS_CPU_MS],
               v->min[VS_CPU_MS], v->max[VS_CPU_MS], v->med[VS_P50_MS], v->med[VS_P99_MS],
               v->min[VS_P99_MS], v->max[VS_P99_MS], v->setup_s, vs[0].med[VS_BYTES],
               vs[0].med[VS_BYTES] > 0 ? v->med[VS_BYTES] / vs[0].med[VS_BYTES] : 0, ratio,
               vs[0].med[VS_CPU_MS],
               vs[0].med[VS_CPU_MS] > 0 ? v->med[VS_CPU_MS] / vs[0].med[VS_CPU_MS] : 0,
               vs[0].med[VS_P99_MS], target);
    }
    for (int a = 0; a < SETUP_MODES; a++)
        printf(",{\"case\":\"%s\",\"setup_streams\":%d,\"runs\":%d,\"setup_p50_ms\":%.3f,"
               "\"setup_p50_min_ms\":%.3f,\"setup_p50_max_ms\":%.3f,\"setup_p99_ms\":%.3f,"
               "\"server_cpu_us_per_stream\":%.1f,\"baseline\":\"--xds-auth none, same run\","
               "\"baseline_setup_p50_ms\":%.3f,\"ratio\":%.2f,"
               "\"baseline_server_cpu_us_per_stream\":%.1f}",
               setup_case[a], setup[a].streams, SETUP_RUNS, setup[a].p50_ms, spread[a][0],
               spread[a][2], setup[a].p99_ms, setup[a].cpu_us_per_stream, setup[0].p50_ms,
               setup[0].p50_ms > 0 ? setup[a].p50_ms / setup[0].p50_ms : 0,
               setup[0].cpu_us_per_stream);
    printf("]}\n");
    print_setup_stderr(setup, spread);
    vs_print_stderr(vs);
    print_push_stderr(&many);
    print_push_stderr(&big);
    print_push_stderr(&base1);
    print_push_stderr(&tls);
    fprintf(stderr, "bench_xds: %.0f s\n", (double)(cx_mono_ns() - t0) / 1e9);
    return 0;
}
