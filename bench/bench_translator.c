/*
 * bench_translator: full translation at 1k, 10k and 50k VirtualServices (5
 * routes each) with one Upstream, Service and EndpointSlice (10 endpoints)
 * each, plus incremental passes at 10k (one VirtualService changed, one
 * EndpointSlice changed, nothing changed).
 *
 * Baseline, same run, same inputs: cJSON_Parse of the objects' JSON (what
 * the informers pay to receive them). Each size runs in a forked child so
 * its peak RSS is its own. Allocations are counted by interposing malloc.
 * Prints one JSON object (bench/run.sh) and a table on stderr.
 *
 * Targets (one core): 10k full <= 200 ms, incremental <= 5 ms, RSS <= 300 MB.
 */
#include "cx_buf.h"
#include "cx_time.h"
#include "store_obj.h"
#include "xlate.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <limits.h>
#include <malloc.h>
#include <time.h>
#include <unistd.h>

/* ---- allocation counter (glibc: the executable's malloc wins) ---------- */

#ifndef BENCH_NO_INTERPOSE /* valgrind/massif runs: let the tool see malloc */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static _Atomic unsigned long long n_allocs;

void *malloc(size_t n)
{
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    return __libc_realloc(p, n);
}
void free(void *p)
{
    __libc_free(p);
}

static unsigned long long allocs(void)
{
    return atomic_load(&n_allocs);
}
#else
static unsigned long long allocs(void)
{
    return 0;
}
#endif

/* ---- inputs ------------------------------------------------------------- */

#define ROUTES    5
#define ENDPOINTS 10

static char *vs_json(size_t i, int variant)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = cx_buf_printf(&b,
                           "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\","
                           "\"metadata\":{\"name\":\"vs-%zu\",\"namespace\":\"ns-%zu\",\"uid\":"
                           "\"uid-vs-%zu\",\"generation\":%d,\"creationTimestamp\":"
                           "\"2024-01-01T00:00:00Z\",\"labels\":{\"app\":\"app-%zu\"}},"
                           "\"spec\":{\"domains\":[\"vs-%zu.example.com\"],\"routes\":[",
                           i, i % 50, i, 1 + variant, i, i);
    for (int r = 0; r < ROUTES; r++)
        rc |= cx_buf_printf(&b,
                            "%s{\"match\":{\"prefix\":\"/api/v%d/r%d/%d\",\"headers\":[{\"name\":"
                            "\"x-tenant\",\"exact\":\"t%d\"}]},\"upstream\":{\"name\":\"up-%zu\"},"
                            "\"timeout\":\"%ds\"}",
                            r ? "," : "", r, r, variant, r, i, 5 + r);
    rc |= cx_buf_puts(&b, "]}}");
    return rc ? NULL : cx_buf_steal(&b, NULL);
}

static char *up_json(size_t i)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc =
        cx_buf_printf(&b,
                      "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Upstream\",\"metadata\":{"
                      "\"name\":\"up-%zu\",\"namespace\":\"ns-%zu\",\"uid\":\"uid-up-%zu\"},"
                      "\"spec\":{\"kube\":{\"service\":\"svc-%zu\",\"port\":80},"
                      "\"connectTimeout\":\"2s\"}}",
                      i, i % 50, i, i);
    return rc ? NULL : cx_buf_steal(&b, NULL);
}

static char *svc_json(size_t i)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = cx_buf_printf(&b,
                           "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":"
                           "\"svc-%zu\",\"namespace\":\"ns-%zu\"},\"spec\":{\"ports\":[{\"name\":"
                           "\"http\",\"port\":80,\"targetPort\":8080}]}}",
                           i, i % 50);
    return rc ? NULL : cx_buf_steal(&b, NULL);
}

static char *slice_json(size_t i, int variant)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = cx_buf_printf(
        &b,
        "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{"
        "\"name\":\"svc-%zu-abcde\",\"namespace\":\"ns-%zu\",\"labels\":{"
        "\"kubernetes.io/service-name\":\"svc-%zu\"}},\"addressType\":\"IPv4\",\"ports\":[{"
        "\"name\":\"http\",\"port\":8080}],\"endpoints\":[",
        i, i % 50, i);
    for (int e = 0; e < ENDPOINTS; e++)
        rc |= cx_buf_printf(&b,
                            "%s{\"addresses\":[\"10.%zu.%zu.%d\"],\"conditions\":{\"ready\":%s},"
                            "\"zone\":\"zone-%d\"}",
                            e ? "," : "", (i >> 8) & 255, i & 255, e + 1 + variant,
                            e == 9 && variant % 2 ? "false" : "true", e % 3);
    rc |= cx_buf_puts(&b, "]}");
    return rc ? NULL : cx_buf_steal(&b, NULL);
}

struct world {
    size_t n; /* VirtualServices */
    size_t nobj;
    char **text;              /* every object's JSON */
    cJSON **obj;              /* cJSON inputs (the form before records), or NULL */
    struct xlate_object *in;  /* the inputs: records, or the cJSON trees */
    struct kube_obj **kept;   /* the daemon's form of each input (records) */
    struct store_decoder dec; /* the informers' decode */
};

static int build_world(struct world *w, size_t n)
{
    w->n = n;
    w->nobj = 1 + 4 * n;
    w->text = calloc(w->nobj, sizeof(char *));
    w->in = calloc(w->nobj, sizeof(*w->in));
    w->kept = calloc(w->nobj, sizeof(*w->kept));
    if (!w->text || !w->in || !w->kept)
        return -1;
    store_decoder_init(&w->dec, NULL);
    w->text[0] = strdup("{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Gateway\",\"metadata\":"
                        "{\"name\":\"gw\",\"namespace\":\"edge\"},\"spec\":{\"bindPort\":8080,"
                        "\"virtualServiceNamespaces\":[\"*\"]}}");
    for (size_t i = 0; i < n; i++) {
        w->text[1 + 4 * i] = vs_json(i, 0);
        w->text[2 + 4 * i] = up_json(i);
        w->text[3 + 4 * i] = svc_json(i);
        w->text[4 + 4 * i] = slice_json(i, 0);
    }
    for (size_t i = 0; i < w->nobj; i++)
        if (!w->text[i])
            return -1;
    return 0;
}

/* CPU time of this thread: what "one core" means on a machine shared with
 * other jobs (wall time is reported too). */
static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The form the daemon keeps an arriving object in (its informers'
 * decode, controlplane/store/store_obj.h): a kube_obj holding the record,
 * the filter digest computed during the decode, the JSON freed. NULL (and
 * |obj| freed) if it cannot be kept so. */
static struct kube_obj *keep(struct world *w, cJSON *obj)
{
    if (!obj)
        return NULL;
    enum xlate_kind k = xlate_kind_of(obj);
    struct kube_obj *o = kube_obj_new(obj);
    if (!o) {
        cJSON_Delete(obj);
        return NULL;
    }
    struct store_obj *so = store_obj_decode(&w->dec, k, obj, NULL, 0);
    if (!so) {
        kube_obj_unref(o);
        return NULL;
    }
    kube_obj_keep_rec(o, so, &store_obj_ops);
    return o;
}

/* |o| (taken over) replaces input |i|; returns its record or NULL. */
static const struct xlate_record *put(struct world *w, size_t i, struct kube_obj *o)
{
    kube_obj_unref(w->kept[i]);
    w->kept[i] = o;
    const struct store_obj *so = store_obj_of(o);
    w->in[i] = (struct xlate_object){.rec = so ? so->rec : NULL};
    return so ? so->rec : NULL;
}

/* What a replica does when an object arrives, one object at a time as its
 * informers do: cJSON_Parse (the baseline, timed alone: |parse_ms|), the
 * decode into a record with its digest (|decode_ms|), the JSON freed. The
 * record replaces input |i| (the translator keeps its own references).
 * Returns the record, or NULL. */
static const struct xlate_record *receive(struct world *w, size_t i, const char *text,
                                          double *parse_ms, double *decode_ms)
{
    int64_t c0 = cpu_ns();
    cJSON *obj = cJSON_Parse(text);
    int64_t c1 = cpu_ns();
    struct kube_obj *o = keep(w, obj);
    int64_t c2 = cpu_ns();
    *parse_ms += (double)(c1 - c0) / 1e6;
    *decode_ms += (double)(c2 - c1) / 1e6;
    return put(w, i, o);
}

/* Every object received again, as receive() does, in batches of BATCH
 * objects so the clock is read a few times per batch rather than per
 * object (a thread CPU clock read is a system call: per object it would
 * add ~10% to the parse), and at most BATCH trees live at once. Fills
 * w->in with records. Returns 0 or -1. */
#define BATCH 256
static int receive_all(struct world *w, double *parse_ms, double *decode_ms)
{
    *parse_ms = *decode_ms = 0;
    cJSON *batch[BATCH];
    for (size_t i0 = 0; i0 < w->nobj; i0 += BATCH) {
        size_t nb = w->nobj - i0 < BATCH ? w->nobj - i0 : BATCH;
        int64_t c0 = cpu_ns();
        for (size_t j = 0; j < nb; j++)
            batch[j] = cJSON_Parse(w->text[i0 + j]);
        int64_t c1 = cpu_ns();
        int bad = 0;
        for (size_t j = 0; j < nb; j++)
            bad |= !put(w, i0 + j, keep(w, batch[j]));
        int64_t c2 = cpu_ns();
        *parse_ms += (double)(c1 - c0) / 1e6;
        *decode_ms += (double)(c2 - c1) / 1e6;
        if (bad)
            return -1;
    }
    return 0;
}

/* The form before records: every object parsed again and kept as its
 * cJSON tree (timed: |parse_ms|, CPU), the digest computed outside the
 * timed region like the daemon's store does. Returns 0 or -1. */
static int parse_all_json(struct world *w, double *parse_ms)
{
    int64_t c0 = cpu_ns();
    for (size_t i = 0; i < w->nobj; i++) {
        cJSON_Delete(w->obj[i]);
        w->obj[i] = cJSON_Parse(w->text[i]);
    }
    *parse_ms = (double)(cpu_ns() - c0) / 1e6;
    for (size_t i = 0; i < w->nobj; i++) {
        if (!w->obj[i])
            return -1;
        w->in[i] = (struct xlate_object){
            .kind = xlate_kind_of(w->obj[i]), .obj = w->obj[i], .digest = xlate_digest(w->obj[i])};
    }
    return 0;
}

static long rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), dcmp);
    return v[n / 2];
}

/* min, median and max of |v| (sorted in place) */
struct spread {
    double min, med, max;
};

static struct spread spread_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), dcmp);
    return (struct spread){v[0], v[n / 2], v[n - 1]};
}

/* Repetitions of each full translation: the first pass of a process (cold:
 * every page the translator touches is new to the process) is reported on
 * its own, the spread of the others as min/median/max. */
static int reps_of(void)
{
    const char *s = getenv("BENCH_REPS");
    long v = s ? strtol(s, NULL, 10) : 0;
    return v >= 2 && v <= 64 ? (int)v : 9;
}

/* One size, in its own process: writes "key value" lines to |fd|. |json|:
 * the inputs are cJSON trees (the form before records), else records. */
static int run_size(size_t n, int incremental, int json, int fd)
{
    struct world w = {0};
    if (build_world(&w, n) != 0)
        return 1;
    if (json && !(w.obj = calloc(w.nobj, sizeof(cJSON *))))
        return 1;
    enum { MAXREPS = 64 };
    double base[MAXREPS], full[MAXREPS], full_cpu[MAXREPS], base_cpu[MAXREPS], faults[MAXREPS];
    double decode[MAXREPS];
    double heap_mb = 0, records_mb = 0;
    unsigned long long full_allocs = 0;
    long rss_inputs = 0;
    int reps = reps_of();
    struct xlate_snapshot *snap = NULL;
    struct xlate_ctx *ctx = NULL;
    for (int r = 0; r < reps; r++) {
        /* the previous repetition's translation goes first: the peak RSS
         * is that of one set of inputs and one translation */
        xlate_snapshot_unref(snap);
        snap = NULL;
        xlate_ctx_free(ctx);
        decode[r] = 0;
        int got =
            json ? parse_all_json(&w, &base_cpu[r]) : receive_all(&w, &base_cpu[r], &decode[r]);
        if (got != 0)
            return 1;
        base[r] = base_cpu[r]; /* CPU time only */
        /* peak so far: the inputs, before any translation */
        if (r == 0) {
            rss_inputs = rss_kb();
            size_t bytes = 0;
            for (size_t i = 0; i < w.nobj && !json; i++)
                bytes += xlate_record_bytes(w.in[i].rec);
            records_mb = (double)bytes / (1024.0 * 1024.0);
        }
        ctx = xlate_ctx_new();
        size_t heap0 = mallinfo2().uordblks;
        unsigned long long a0 = allocs();
        struct rusage ru0, ru1;
        getrusage(RUSAGE_THREAD, &ru0);
        int64_t t0 = cx_mono_ns(), c1 = cpu_ns();
        if (xlate_run(ctx, &(struct xlate_input){w.in, w.nobj, 0}, &snap, NULL) != 0)
            return 1;
        full[r] = (double)(cx_mono_ns() - t0) / 1e6;
        full_cpu[r] = (double)(cpu_ns() - c1) / 1e6;
        getrusage(RUSAGE_THREAD, &ru1);
        /* first touches of the translator's new memory: part of the CPU time */
        faults[r] = (double)(ru1.ru_minflt - ru0.ru_minflt);
        fprintf(stderr, "  %zu, repetition %d: cpu %.1f ms, %.0f page faults, peak RSS %.1f MB\n",
                n, r + 1, full_cpu[r], faults[r], rss_kb() / 1024.0);
        full_allocs = allocs() - a0;
        heap_mb = (double)(mallinfo2().uordblks - heap0) / (1024.0 * 1024.0);
    }
    /* the cold pass apart; the warm ones' spread */
    struct spread sw = spread_of(full + 1, reps - 1), sc = spread_of(full_cpu + 1, reps - 1);
    struct spread sf = spread_of(faults + 1, reps - 1);
    struct spread sb = spread_of(base, reps), sbc = spread_of(base_cpu, reps);
    struct spread sd = spread_of(decode, reps);
    dprintf(fd,
            "full_ms %.3f\nbase_ms %.3f\nfull_cpu_ms %.3f\nfull_cpu_min %.3f\nfull_cpu_max "
            "%.3f\ncold_cpu_ms %.3f\ncold_faults %.0f\nbase_cpu_ms %.3f\nbase_cpu_min "
            "%.3f\nbase_cpu_max %.3f\nfaults %.0f\nfaults_max %.0f\nreps %d\n",
            sw.med, sb.med, sc.med, sc.min, sc.max, full_cpu[0], faults[0], sbc.med, sbc.min,
            sbc.max, sf.med, sf.max, reps);
    long rss_full = rss_kb(); /* the full translations' peak */
    size_t resources = 0;
    for (size_t g = 0; g < snap->ngroups; g++)
        for (int t = 0; t < XDS_TYPE_COUNT; t++)
            resources += snap->groups[g].types[t].n;
    dprintf(fd,
            "full_allocs %llu\nresources %zu\nreports %zu\nheap_mb %.1f\nrss_full_kb %ld\n"
            "decode_cpu_ms %.3f\nrecords_mb %.1f\n",
            full_allocs, resources, snap->nreports, heap_mb, rss_full, sd.med, records_mb);
    if (incremental) {
        /* one VirtualService changed: its route prefixes */
        enum { ROUNDS = 21 };
        double inc[ROUNDS], eps[ROUNDS], none[ROUNDS], base1[ROUNDS], dec1[ROUNDS];
        unsigned long long inc_allocs = 0;
        struct xlate_stats st = {0};
        for (int r = 0; r < ROUNDS; r++) {
            size_t victim = (size_t)r * 97 % n;
            size_t idx = 1 + 4 * victim;
            char *text = vs_json(victim, r + 1);
            base1[r] = dec1[r] = 0;
            const struct xlate_record *rec = receive(&w, idx, text, &base1[r], &dec1[r]);
            free(text);
            if (!rec)
                return 1;
            struct xlate_snapshot *next = NULL;
            unsigned long long a0 = allocs();
            int64_t t0 = cx_mono_ns();
            if (xlate_run(ctx, &(struct xlate_input){w.in, w.nobj, 0}, &next, &st) != 0)
                return 1;
            inc[r] = (double)(cx_mono_ns() - t0) / 1e6;
            inc_allocs = allocs() - a0;
            if (st.vhosts_built != 1 || st.parsed != 1) {
                fprintf(stderr, "incremental pass rebuilt %zu vhosts, parsed %zu objects\n",
                        st.vhosts_built, st.parsed);
                return 1;
            }
            xlate_snapshot_unref(snap);
            snap = next;
        }
        /* the same through xlate_run_changes: only the changed object is
         * handed over, as the daemon does with its informers' events */
        double chg[ROUNDS], chg_eps[ROUNDS], chg_cpu[ROUNDS];
        unsigned long long chg_allocs = 0;
        for (int r = 0; r < ROUNDS; r++) {
            size_t victim = ((size_t)r * 131 + 7) % n;
            size_t idx = 1 + 4 * victim;
            char *text = vs_json(victim, 100 + r);
            double pm = 0, dm = 0;
            const struct xlate_record *rec = receive(&w, idx, text, &pm, &dm);
            free(text);
            if (!rec)
                return 1;
            struct xlate_change c = {.rec = rec};
            struct xlate_snapshot *next = NULL;
            unsigned long long a0 = allocs();
            int64_t t0 = cx_mono_ns(), c0 = cpu_ns();
            if (xlate_run_changes(ctx, &c, 1, &next, &st) != 0)
                return 1;
            chg[r] = (double)(cx_mono_ns() - t0) / 1e6;
            chg_cpu[r] = (double)(cpu_ns() - c0) / 1e6;
            chg_allocs = allocs() - a0;
            if (st.vhosts_built != 1 || st.parsed != 1) {
                fprintf(stderr, "changes pass rebuilt %zu vhosts, parsed %zu objects\n",
                        st.vhosts_built, st.parsed);
                return 1;
            }
            xlate_snapshot_unref(snap);
            snap = next;
        }
        for (int r = 0; r < ROUNDS; r++) {
            size_t victim = ((size_t)r * 113 + 5) % n;
            size_t idx = 4 + 4 * victim;
            char *text = slice_json(victim, 100 + r);
            double pm = 0, dm = 0;
            const struct xlate_record *rec = receive(&w, idx, text, &pm, &dm);
            free(text);
            if (!rec)
                return 1;
            struct xlate_change c = {.rec = rec};
            struct xlate_snapshot *next = NULL;
            int64_t t0 = cx_mono_ns();
            if (xlate_run_changes(ctx, &c, 1, &next, &st) != 0)
                return 1;
            chg_eps[r] = (double)(cx_mono_ns() - t0) / 1e6;
            xlate_snapshot_unref(snap);
            snap = next;
        }
        struct spread sg = spread_of(chg, ROUNDS);
        dprintf(fd,
                "chg_ms %.3f\nchg_min %.3f\nchg_max %.3f\nchg_cpu_ms %.3f\nchg_allocs "
                "%llu\nchg_eps_ms %.3f\n",
                sg.med, sg.min, sg.max, median(chg_cpu, ROUNDS), chg_allocs,
                median(chg_eps, ROUNDS));
        /* one EndpointSlice changed (an endpoint went unready) */
        for (int r = 0; r < ROUNDS; r++) {
            size_t victim = (size_t)r * 89 % n;
            size_t idx = 4 + 4 * victim;
            char *text = slice_json(victim, r + 1);
            double pm = 0, dm = 0;
            const struct xlate_record *rec = receive(&w, idx, text, &pm, &dm);
            free(text);
            if (!rec)
                return 1;
            struct xlate_snapshot *next = NULL;
            int64_t t0 = cx_mono_ns();
            if (xlate_run(ctx, &(struct xlate_input){w.in, w.nobj, 0}, &next, &st) != 0)
                return 1;
            eps[r] = (double)(cx_mono_ns() - t0) / 1e6;
            xlate_snapshot_unref(snap);
            snap = next;
        }
        /* nothing changed (a lock renewal that slipped through, say) */
        for (int r = 0; r < ROUNDS; r++) {
            struct xlate_snapshot *next = NULL;
            int64_t t0 = cx_mono_ns();
            if (xlate_run(ctx, &(struct xlate_input){w.in, w.nobj, 0}, &next, &st) != 0)
                return 1;
            none[r] = (double)(cx_mono_ns() - t0) / 1e6;
            xlate_snapshot_unref(snap);
            snap = next;
        }
        dprintf(fd,
                "inc_ms %.3f\ninc_base_ms %.4f\ninc_decode_ms %.4f\ninc_allocs %llu\neps_ms "
                "%.3f\nnone_ms %.3f\n",
                median(inc, ROUNDS), median(base1, ROUNDS), median(dec1, ROUNDS), inc_allocs,
                median(eps, ROUNDS), median(none, ROUNDS));
    }
    dprintf(fd, "rss_inputs_kb %ld\nrss_kb %ld\n", rss_inputs, rss_kb());
    xlate_snapshot_unref(snap);
    xlate_ctx_free(ctx);
    return 0;
}

/* What a size's child process reported: "key value" lines. */
#define MAXKEYS 48
struct result {
    size_t n;
    char key[MAXKEYS][32];
    double val[MAXKEYS];
};

static double get(const struct result *r, const char *key)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->key[i], key))
            return r->val[i];
    return 0;
}

static int measure(size_t n, int incremental, int json, struct result *res)
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(p[0]);
        _exit(run_size(n, incremental, json, p[1]));
    }
    close(p[1]);
    char buf[8192];
    size_t len = 0;
    ssize_t r;
    while (len < sizeof(buf) - 1 && (r = read(p[0], buf + len, sizeof(buf) - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = '\0';
    close(p[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    memset(res, 0, sizeof(*res));
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line && res->n < MAXKEYS;
         line = strtok_r(NULL, "\n", &save))
        if (sscanf(line, "%31s %lf", res->key[res->n], &res->val[res->n]) == 2)
            res->n++;
    return 0;
}

/* With `perf record -D -1 --control fd:N` and BENCH_PERF_CTL=N, perf
 * samples the translations alone, not the parsing around them. */
static void perf_ctl(const char *cmd)
{
    const char *fd = getenv("BENCH_PERF_CTL");
    if (!fd)
        return;
    char *end = NULL;
    long ctl = strtol(fd, &end, 10);
    char line[16];
    int n = snprintf(line, sizeof(line), "%s\n", cmd);
    if (end == fd || *end || ctl < 0 || ctl > INT_MAX || write((int)ctl, line, (size_t)n) != n)
        fprintf(stderr, "bench_translator: perf control on fd %s failed\n", fd);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {1000, 10000, 50000, 100000};
    enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]) };
    static struct result res[NSIZES];
    size_t nsizes = NSIZES;
    if (argc > 1 && strcmp(argv[1], "--quick") == 0)
        nsizes = 2;
    if (argc > 1 && strcmp(argv[1], "--profile-full") == 0) {
        /* for perf: full translations of 10k (BENCH_PROFILE_N), nothing else; the inputs are
         * parsed again before each, as the measured runs do */
        struct world w = {0};
        const char *pn = getenv("BENCH_PROFILE_N");
        size_t n = pn ? (size_t)strtoul(pn, NULL, 10) : 10000;
        if (build_world(&w, n ? n : 10000) != 0)
            return 1;
        for (int r = 0; r < reps_of(); r++) {
            double pm, dm;
            if (receive_all(&w, &pm, &dm) != 0)
                return 1;
            struct xlate_ctx *ctx = xlate_ctx_new();
            struct xlate_snapshot *snap = NULL;
            struct rusage ru0, ru1;
            getrusage(RUSAGE_THREAD, &ru0);
            perf_ctl("enable");
            int64_t c0 = cpu_ns();
            if (xlate_run(ctx, &(struct xlate_input){w.in, w.nobj, 0}, &snap, NULL) != 0)
                return 1;
            perf_ctl("disable");
            getrusage(RUSAGE_THREAD, &ru1);
            fprintf(stderr, "full %zu: cpu %.1f ms, %ld page faults\n", w.n,
                    (double)(cpu_ns() - c0) / 1e6, ru1.ru_minflt - ru0.ru_minflt);
            xlate_snapshot_unref(snap);
            xlate_ctx_free(ctx);
        }
        return 0;
    }
    /* the same full translations with the inputs as cJSON trees, the form
     * before records: the comparison the rows' ratios are about */
    static const size_t jsizes[] = {10000, 50000};
    static struct result jres[2];
    size_t njsizes = nsizes == NSIZES ? 2 : 1;
    for (size_t i = 0; i < nsizes; i++) {
        fprintf(stderr, "bench_translator: %zu VirtualServices (records)...\n", sizes[i]);
        if (measure(sizes[i], sizes[i] == 10000, 0, &res[i]) != 0) {
            fprintf(stderr, "bench_translator: run at %zu failed\n", sizes[i]);
            return 1;
        }
    }
    for (size_t i = 0; i < njsizes; i++) {
        fprintf(stderr, "bench_translator: %zu VirtualServices (cJSON inputs)...\n", jsizes[i]);
        if (measure(jsizes[i], 0, 1, &jres[i]) != 0) {
            fprintf(stderr, "bench_translator: run at %zu (cJSON inputs) failed\n", jsizes[i]);
            return 1;
        }
    }
    printf("{\"benchmark\":\"translator\",\"title\":\"Translator: full and incremental "
           "translation\",\"notes\":\"N VirtualServices x %d routes, N Upstreams, Services and "
           "EndpointSlices x %d endpoints, 1 envoy Gateway; one core (CPU time of the thread); "
           "each size in its own process. Inputs: every object received as a replica's "
           "informers receive it (cJSON_Parse, then the daemon's decode, store_obj_decode: "
           "the record by xlate_record_new and the filter digest, kept by a kube_obj, the "
           "JSON freed at once; decode_cpu_ms: the decodes' CPU, paid once per object "
           "received, records_mb: the records' memory) and translated from the records. The "
           "'cJSON inputs' rows: the same objects held and translated as cJSON trees, the "
           "form before records, in the same run. Full rows: %d repetitions, each with a "
           "fresh context and the inputs received again; the first (cold_cpu_ms: every page "
           "the translator touches is new to the process) apart, the others' median (cpu_ms, "
           "p50_ms wall, ratio) and min-max. Baseline: cJSON_Parse of the same objects (CPU), "
           "median of every repetition. peak_rss_mb: the process's peak with one set of "
           "inputs (inputs_rss_mb) and one translation; on the incremental row, the peak "
           "after every incremental round at 10k. page_faults: median minor page faults of "
           "a warm pass. Targets: 10k full <= 0.6x the baseline; 100k per 1k within 20%% of "
           "10k; 50k peak RSS <= 600 MB; incremental <= 5 ms.\",\"rows\":[",
           ROUTES, ENDPOINTS, (int)get(&res[1], "reps"));
    for (size_t i = 0; i < nsizes + njsizes; i++) {
        int json = i >= nsizes;
        size_t size = json ? jsizes[i - nsizes] : sizes[i];
        const struct result *r = json ? &jres[i - nsizes] : &res[i];
        double k = (double)size / 1000, cpu = get(r, "full_cpu_ms");
        double base = get(r, "base_cpu_ms");
        printf("%s{\"case\":\"%sfull, %zuk VirtualServices\",\"p50_ms\":%.2f,\"cpu_ms\":%.2f,"
               "\"cpu_min_max_ms\":\"%.1f-%.1f\",\"cold_cpu_ms\":%.1f,"
               "\"baseline_cpu_ms\":%.2f,\"baseline_min_max_ms\":\"%.1f-%.1f\","
               "\"ratio\":%.2f,\"cpu_ms_per_1k\":%.2f,\"decode_cpu_ms\":%.1f,\"allocs\":%.0f,"
               "\"peak_rss_mb\":%.1f,\"inputs_rss_mb\":%.1f,\"records_mb\":%.1f,"
               "\"translator_heap_mb\":%.1f,\"page_faults\":%.0f,\"resources\":%.0f}",
               i ? "," : "", json ? "cJSON inputs: " : "", size / 1000, get(r, "full_ms"), cpu,
               get(r, "full_cpu_min"), get(r, "full_cpu_max"), get(r, "cold_cpu_ms"), base,
               get(r, "base_cpu_min"), get(r, "base_cpu_max"), cpu / base, cpu / k,
               get(r, "decode_cpu_ms"), get(r, "full_allocs"), get(r, "rss_full_kb") / 1024.0,
               get(r, "rss_inputs_kb") / 1024.0, get(r, "records_mb"), get(r, "heap_mb"),
               get(r, "faults"), get(r, "resources"));
        fprintf(stderr,
                "%s full %4zuk: cpu %8.2f ms (min %.1f max %.1f; cold %.1f; %6.2f ms/1k)  "
                "baseline parse cpu %8.2f ms (min %.1f max %.1f)  ratio %5.2f  decode %.1f ms  "
                "peak RSS %7.1f MB (inputs %7.1f MB, records %.1f MB, translator heap %6.1f MB, "
                "%.0f page faults warm, %.0f cold)\n",
                json ? "cJSON  " : "records", size / 1000, cpu, get(r, "full_cpu_min"),
                get(r, "full_cpu_max"), get(r, "cold_cpu_ms"), cpu / k, base,
                get(r, "base_cpu_min"), get(r, "base_cpu_max"), cpu / base, get(r, "decode_cpu_ms"),
                get(r, "rss_full_kb") / 1024.0, get(r, "rss_inputs_kb") / 1024.0,
                get(r, "records_mb"), get(r, "heap_mb"), get(r, "faults"), get(r, "cold_faults"));
    }
    const struct result *m = &res[1];
    double inc_base = get(m, "inc_base_ms");
    printf(",{\"case\":\"incremental (xlate_run_changes), 1 VirtualService changed at 10k\","
           "\"p50_ms\":%.3f,\"min_max_ms\":\"%.3f-%.3f\",\"cpu_ms\":%.3f,"
           "\"baseline_p50_ms\":%.4f,\"ratio\":%.1f,\"allocs\":%.0f,\"peak_rss_mb\":%.1f}",
           get(m, "chg_ms"), get(m, "chg_min"), get(m, "chg_max"), get(m, "chg_cpu_ms"), inc_base,
           get(m, "chg_ms") / inc_base, get(m, "chg_allocs"), get(m, "rss_kb") / 1024.0);
    printf(",{\"case\":\"incremental (xlate_run_changes), 1 EndpointSlice changed at 10k\","
           "\"p50_ms\":%.3f,\"baseline_p50_ms\":%.4f,\"ratio\":%.1f}",
           get(m, "chg_eps_ms"), inc_base, get(m, "chg_eps_ms") / inc_base);
    printf(",{\"case\":\"incremental (full view, xlate_run), 1 VirtualService changed at 10k\","
           "\"p50_ms\":%.3f,\"baseline_p50_ms\":%.4f,\"ratio\":%.1f,\"decode_ms\":%.4f,"
           "\"allocs\":%.0f}",
           get(m, "inc_ms"), inc_base, get(m, "inc_ms") / inc_base, get(m, "inc_decode_ms"),
           get(m, "inc_allocs"));
    printf(",{\"case\":\"incremental (full view, xlate_run), 1 EndpointSlice changed at 10k\","
           "\"p50_ms\":%.3f,\"baseline_p50_ms\":%.4f,\"ratio\":%.1f}",
           get(m, "eps_ms"), inc_base, get(m, "eps_ms") / inc_base);
    printf(",{\"case\":\"no change at 10k\",\"p50_ms\":%.3f,\"baseline_p50_ms\":%.2f,"
           "\"ratio\":%.3f}",
           get(m, "none_ms"), get(m, "base_ms"), get(m, "none_ms") / get(m, "base_ms"));
    /* the headlines: 10k translation against parsing, 50k memory against
     * the cJSON inputs */
    printf("],\"glance\":[{\"metric\":\"full translation, 10k VirtualServices (records)\","
           "\"value\":\"%.0f ms CPU (median; %.0f-%.0f)\",\"baseline\":\"%.2fx cJSON_Parse "
           "of the same objects (%.0f ms); cJSON inputs: %.2fx\"}",
           get(m, "full_cpu_ms"), get(m, "full_cpu_min"), get(m, "full_cpu_max"),
           get(m, "full_cpu_ms") / get(m, "base_cpu_ms"), get(m, "base_cpu_ms"),
           get(&jres[0], "full_cpu_ms") / get(&jres[0], "base_cpu_ms"));
    if (nsizes >= 3 && njsizes >= 2)
        printf(",{\"metric\":\"peak RSS, 50k VirtualServices world, inputs included\","
               "\"value\":\"%.0f MB (records)\",\"baseline\":\"%.2fx the cJSON inputs' %.0f "
               "MB\"}",
               get(&res[2], "rss_full_kb") / 1024.0,
               get(&res[2], "rss_full_kb") / get(&jres[1], "rss_full_kb"),
               get(&jres[1], "rss_full_kb") / 1024.0);
    printf("]}\n");
    fprintf(stderr,
            "incremental at 10k via xlate_run_changes: 1 VirtualService %.3f ms (min %.3f max "
            "%.3f, cpu %.3f, %.0f allocs), 1 EndpointSlice %.3f ms\n",
            get(m, "chg_ms"), get(m, "chg_min"), get(m, "chg_max"), get(m, "chg_cpu_ms"),
            get(m, "chg_allocs"), get(m, "chg_eps_ms"));
    fprintf(stderr,
            "incremental at 10k via full view: 1 VirtualService %.3f ms, 1 EndpointSlice %.3f "
            "ms, nothing %.3f ms  (baseline: parsing the changed object %.4f ms)\n",
            get(m, "inc_ms"), get(m, "eps_ms"), get(m, "none_ms"), inc_base);
    return 0;
}
