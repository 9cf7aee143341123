/*
 * bench_guarded: what it costs that guarded writes (the leader's status
 * writes and snapshot records, kube_req_opts.presend) go over HTTP/1.1 on
 * connections of their own, their body handed over through a read
 * callback that runs the check again, instead of over the client's shared
 * HTTP/2 connection.
 *
 * kubesim over TLS (ALPN h2), one kube_client, N status PATCHes of N
 * ConfigMaps (a status-sized body), |conc| in flight at once (the status
 * writer's default is 4; 1 is the sequential floor). Rows: guarded (a
 * check that always says yes) against the baseline, the same writes
 * without a check (multiplexed HTTP/2, what guarded writes used before),
 * in alternating rounds of the same run. Per write: send to answer
 * (median); per round: writes per second. min/median/max over rounds.
 *
 * Prints one JSON object. BENCH_GUARDED_N (default 1000), _ROUNDS (9).
 */
#include "cx_kubesim.h"
#include "cx_time.h"
#include "kube_client.h"
#include "kube_config.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct kube_resource CM = {"", "v1", "configmaps", "ConfigMap", 1};

struct run {
    struct kube_client *kc;
    struct event_base *base;
    int guarded;
    int n, conc;
    int next, done, failed;
    int64_t *lat_ns;
    char body[1024];
};

static int yes(void *arg)
{
    (void)arg;
    return 0;
}

static void start_one(struct run *r);

static void on_done(struct kube_result *res, void *arg)
{
    struct run *r = arg;
    if (res->err.code != KUBE_OK)
        r->failed++;
    r->lat_ns[r->done++] = res->done_mono_ns - res->sent_mono_ns;
    if (r->next < r->n)
        start_one(r);
    if (r->done == r->n)
        event_base_loopbreak(r->base);
}

static void start_one(struct run *r)
{
    char name[32];
    snprintf(name, sizeof(name), "cm-%d", r->next++ % 200);
    struct kube_req_opts ro = {.timeout_ms = 10000, .max_attempts = 1};
    if (r->guarded)
        ro.presend = yes;
    if (!kube_patch(r->kc, &CM, "default", name, KUBE_PATCH_MERGE, r->body, 0, &ro, on_done, r)) {
        r->failed++;
        r->done++;
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One round: returns writes/s, *med_ms the median latency. */
static double round_once(struct run *r, double *med_ms)
{
    r->next = r->done = r->failed = 0;
    int64_t t0 = cx_mono_ns();
    for (int i = 0; i < r->conc && r->next < r->n; i++)
        start_one(r);
    event_base_dispatch(r->base);
    int64_t dt = cx_mono_ns() - t0;
    qsort(r->lat_ns, (size_t)r->n, sizeof(int64_t), cmp_i64);
    *med_ms = (double)r->lat_ns[r->n / 2] / 1e6;
    if (r->failed)
        fprintf(stderr, "bench_guarded: %d writes failed\n", r->failed);
    return (double)r->n / ((double)dt / 1e9);
}

struct spread {
    double min, med, max;
};

static struct spread spread_of(double *v, int k)
{
    qsort(v, (size_t)k, sizeof(double), cmp_dbl);
    return (struct spread){v[0], v[k / 2], v[k - 1]};
}

int main(void)
{
    const char *e = getenv("BENCH_GUARDED_N");
    int n = e ? (int)strtol(e, NULL, 10) : 1000;
    e = getenv("BENCH_GUARDED_ROUNDS");
    int rounds = e ? (int)strtol(e, NULL, 10) : 9;
    if (n < 10 || rounds < 1 || rounds > 50)
        return 2;
    struct cx_kubesim ks;
    const char *args[] = {"--tls", NULL};
    if (cx_kubesim_start(&ks, args) != 0)
        return 1;
    for (int i = 0; i < 200; i++) {
        char body[256];
        snprintf(body, sizeof(body),
                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm-%d\"}}",
                 i);
        long code = 0;
        free(cx_kubesim_request(&ks, "POST", "/api/v1/namespaces/default/configmaps", body,
                                "application/json", &code));
    }
    struct kube_config cfg;
    char err[256];
    if (kube_config_load_default(ks.kubeconfig, NULL, &cfg, err, sizeof(err)) != 0)
        return 1;
    struct event_base *base = event_base_new();
    struct kube_client_opts o = {.qps = -1};
    struct kube_client *kc = kube_client_new(base, &cfg, &o, err, sizeof(err));
    if (!kc)
        return 1;
    struct run r = {.kc = kc, .base = base, .n = n};
    r.lat_ns = calloc((size_t)n, sizeof(int64_t));
    /* a status-sized merge patch (~700 bytes, as a route's conditions) */
    snprintf(r.body, sizeof(r.body),
             "{\"data\":{\"status\":\"{\\\"observedGeneration\\\":7,\\\"state\\\":"
             "\\\"Accepted\\\",\\\"conditions\\\":[{\\\"type\\\":\\\"Accepted\\\","
             "\\\"status\\\":\\\"True\\\",\\\"reason\\\":\\\"Accepted\\\",\\\"message\\\":"
             "\\\"%0400d\\\",\\\"lastTransitionTime\\\":\\\"2026-12-02T07:00:00Z\\\"}]}\"}}",
             0);
    static const int concs[] = {1, 4};
    printf("{\"benchmark\":\"guarded\",\"title\":\"Guarded writes: HTTP/1.1 connections of "
           "their own\",\"notes\":\"kubesim over TLS (ALPN h2), one kube_client, %d status-sized "
           "PATCHes (~700 bytes) per round, N in flight at once (the status writer's default is "
           "4). Guarded: a presend check that always says yes, so the writes go over the "
           "HTTP/1.1 connections of the guarded pool, the body handed over after the check runs "
           "again; baseline: the same writes without a check, multiplexed on the shared HTTP/2 "
           "connection (what guarded writes used before), in alternating rounds of the same "
           "run, connections opened before the first. p50_ms: the median write (send to "
           "answer) of the median round; writes_per_s: per round, min/median/max over %d "
           "rounds.\",\"rows\":[",
           n, rounds);
    for (size_t c = 0; c < sizeof(concs) / sizeof(concs[0]); c++) {
        r.conc = concs[c];
        double tput[2][50], lat[2][50];
        for (int g = 0; g < 2; g++) { /* warm-up: connections open, TLS done */
            r.guarded = g;
            (void)round_once(&r, &lat[g][0]);
        }
        for (int i = 0; i < rounds; i++)
            for (int g = 0; g < 2; g++) {
                r.guarded = (i + g) % 2; /* alternate which goes first */
                tput[r.guarded][i] = round_once(&r, &lat[r.guarded][i]);
            }
        struct spread bt = spread_of(tput[0], rounds), gt = spread_of(tput[1], rounds);
        struct spread bl = spread_of(lat[0], rounds), gl = spread_of(lat[1], rounds);
        printf("%s{\"case\":\"guarded writes, %d in flight\",\"p50_ms\":%.3f,\"p50_ms_min\":%.3f,"
               "\"p50_ms_max\":%.3f,\"writes_per_s\":%.0f,\"writes_per_s_min\":%.0f,"
               "\"writes_per_s_max\":%.0f,\"baseline\":\"the same writes on the shared HTTP/2 "
               "connection\",\"baseline_p50_ms\":%.3f,\"baseline_writes_per_s\":%.0f}",
               c ? "," : "", r.conc, gl.med, gl.min, gl.max, gt.med, gt.min, gt.max, bl.med,
               bt.med);
        fprintf(stderr, "%d in flight: guarded %.0f writes/s (%.3f ms), baseline %.0f (%.3f ms)\n",
                r.conc, gt.med, gl.med, bt.med, bl.med);
    }
    printf("]}\n");
    free(r.lat_ns);
    kube_client_free(kc);
    event_base_free(base);
    kube_config_free(&cfg);
    cx_kubesim_stop(&ks);
    return 0;
}
