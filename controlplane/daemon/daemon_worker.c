#include "daemon_worker.h"

#include "cx_log.h"
#include "cx_metrics.h"
#include "cx_time.h"

#include <errno.h>
#include <fcntl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Translation takes milliseconds to seconds (50k objects, cold). */
static const double duration_buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                          0.25,  0.5,    1,     2.5,  5,     10,   30};

struct daemon_worker {
    struct event_base *base;
    struct daemon_worker_opts o;
    pthread_t thread;
    int thread_started;
    int pipe_rd, pipe_wr;
    struct event *wake_ev;  /* pipe readable: a result is ready */
    struct event *timer_ev; /* debounce window */

    /* Main loop state. */
    int enabled;
    int timer_armed;
    int dirty;   /* poked since the running/last pass took its view */
    int running; /* a job is with the thread */
    int64_t first_poke_ns;
    uint64_t passes;

    /* Shared with the thread, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    struct store_view *job; /* handed to the thread */
    int64_t job_queued_ns;
    uint64_t job_pass;
    struct xlate_snapshot *done; /* handed back */
    int done_ok;
    struct daemon_worker_result done_res;

    struct {
        struct cx_series *duration;
        struct cx_series *ok, *failed;
        struct cx_series *objects, *built, *reused;
        struct cx_series *in_changes, *in_full;
    } m;
};

static void *thread_main(void *arg)
{
    struct daemon_worker *w = arg;
    struct xlate_ctx *ctx = xlate_ctx_new_limits(&w->o.limits);
    int have_world = 0; /* ctx holds the world of the last view */
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stop && !w->job)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->stop)
            break;
        struct store_view *view = w->job;
        w->job = NULL;
        struct daemon_worker_result res = {.pass = w->job_pass,
                                           .view_generation = view->generation,
                                           .objects = view->n,
                                           .queued_ns = w->job_queued_ns};
        pthread_mutex_unlock(&w->mu);

        struct xlate_snapshot *snap = NULL;
        int ok = 0;
        res.started_ns = cx_mono_ns();
        if (!ctx) {
            ctx = xlate_ctx_new_limits(&w->o.limits);
            have_world = 0;
        }
        /* The evaluation time of certificates (whole seconds): it can only
         * change reports, never xDS bytes, so replicas whose clocks differ
         * still serve identical snapshots. */
        int64_t now = cx_wall_ns() / CX_NS_PER_S;
        if (ctx && have_world && view->changes_complete) {
            /* The cheap path: the previous pass's world plus what changed. */
            int rc =
                xlate_run_changes_at(ctx, view->changes, view->nchanges, now, &snap, &res.stats);
            ok = rc == 0;
            res.incremental = ok;
        }
        if (ctx && !ok) {
            struct xlate_input in = store_view_input(view);
            in.now = now;
            ok = xlate_run(ctx, &in, &snap, &res.stats) == 0;
        }
        have_world = ok;
        res.duration_ns = cx_mono_ns() - res.started_ns;
        store_view_unref(view);
#ifdef __GLIBC__
        /* A full pass follows a (re)list: the informers' JSON and the
         * pass's own scratch are freed by now, in holes between the
         * records that stay. Handing those pages back costs a few ms
         * once per full pass and 7% of a replica's steady RSS
         * (bench/bench_replica.py, 10k world: 139 -> 129 MB). */
        if (!res.incremental)
            malloc_trim(0);
#endif
        if (!res.incremental)
            xlate_trim(); /* and the translator's kept mappings */

        pthread_mutex_lock(&w->mu);
        w->done = snap;
        w->done_ok = ok;
        w->done_res = res;
        pthread_mutex_unlock(&w->mu);
        char c = 1;
        ssize_t wr;
        do
            wr = write(w->pipe_wr, &c, 1);
        while (wr < 0 && errno == EINTR);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    xlate_ctx_free(ctx);
    return NULL;
}

/* Main loop: hands a new view to the thread. */
static void start_pass(struct daemon_worker *w)
{
    struct store_view *v = w->o.make_view(w->o.user);
    if (!v) {
        cx_error("translate", "out of memory taking a store view; retrying");
        if (!w->timer_armed) {
            struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};
            evtimer_add(w->timer_ev, &tv);
            w->timer_armed = 1;
        }
        return;
    }
    int64_t queued = w->dirty ? w->first_poke_ns : cx_mono_ns();
    w->dirty = 0;
    w->running = 1;
    pthread_mutex_lock(&w->mu);
    w->job = v;
    w->job_queued_ns = queued;
    w->job_pass = w->passes + 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct daemon_worker *w = arg;
    w->timer_armed = 0;
    if (!w->enabled || w->running)
        return; /* the end of the running pass starts the next */
    if (w->dirty)
        start_pass(w);
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct daemon_worker *w = arg;
    char buf[64];
    while (read(fd, buf, sizeof(buf)) > 0) {
    }
    pthread_mutex_lock(&w->mu);
    struct xlate_snapshot *snap = w->done;
    int ok = w->done_ok;
    struct daemon_worker_result res = w->done_res;
    int have = res.pass != 0;
    w->done = NULL;
    w->done_res.pass = 0;
    pthread_mutex_unlock(&w->mu);
    if (!have)
        return;
    w->running = 0;
    w->passes++;
    double secs = (double)res.duration_ns / 1e9;
    cx_series_observe(w->m.duration, secs);
    if (ok && snap) {
        cx_series_inc(w->m.ok);
        cx_series_inc(res.incremental ? w->m.in_changes : w->m.in_full);
        cx_series_set(w->m.objects, (double)res.objects);
        cx_series_set(w->m.built, (double)res.stats.resources_built);
        cx_series_set(w->m.reused, (double)res.stats.resources_reused);
        cx_debug("translate",
                 "pass %llu (%s): %zu objects in %.1f ms (%zu parsed, %zu resources built, %zu "
                 "reused)",
                 (unsigned long long)res.pass, res.incremental ? "changes" : "full", res.objects,
                 secs * 1e3, res.stats.parsed, res.stats.resources_built,
                 res.stats.resources_reused);
        w->o.on_snapshot(w->o.user, snap, &res);
    } else {
        cx_series_inc(w->m.failed);
        cx_error("translate", "pass %llu failed (out of memory); retrying",
                 (unsigned long long)res.pass);
        xlate_snapshot_unref(snap);
        if (!w->dirty) {
            w->dirty = 1;
            w->first_poke_ns = res.queued_ns;
        }
    }
    /* Changes that arrived meanwhile have waited long enough. */
    if (w->dirty && !w->timer_armed)
        start_pass(w);
}

struct daemon_worker *daemon_worker_new(struct event_base *base, const struct daemon_worker_opts *o,
                                        char *err, size_t errlen)
{
    struct daemon_worker *w = calloc(1, sizeof(*w));
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    w->base = base;
    w->o = *o;
    w->pipe_rd = w->pipe_wr = -1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    w->pipe_rd = p[0];
    w->pipe_wr = p[1];
    w->wake_ev = event_new(base, w->pipe_rd, EV_READ | EV_PERSIST, on_wake, w);
    w->timer_ev = evtimer_new(base, on_timer, w);
    if (!w->wake_ev || !w->timer_ev || event_add(w->wake_ev, NULL) != 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    struct cx_metric *d = cx_histogram(
        "coxswain_translation_duration_seconds", "Time one translation pass took (worker thread).",
        NULL, duration_buckets, sizeof(duration_buckets) / sizeof(duration_buckets[0]));
    struct cx_metric *t =
        cx_counter("coxswain_translations_total", "Translation passes, by result.", "result");
    struct cx_metric *ob =
        cx_gauge("coxswain_translation_objects", "Objects the last translation pass read.", NULL);
    struct cx_metric *rs =
        cx_gauge("coxswain_translation_resources",
                 "xDS resources of the last pass, built anew or reused.", "outcome");
    struct cx_metric *inp = cx_counter("coxswain_translation_inputs_total",
                                       "Translation passes by input: the changes since the "
                                       "previous pass, or the whole store.",
                                       "input");
    if (!d || !t || !ob || !rs || !inp) {
        snprintf(err, errlen, "cannot register translation metrics");
        goto fail;
    }
    w->m.duration = cx_metric_with(d);
    w->m.ok = cx_metric_with(t, "ok");
    w->m.failed = cx_metric_with(t, "failed");
    w->m.objects = cx_metric_with(ob);
    w->m.built = cx_metric_with(rs, "built");
    w->m.reused = cx_metric_with(rs, "reused");
    w->m.in_changes = cx_metric_with(inp, "changes");
    w->m.in_full = cx_metric_with(inp, "full");
    if (pthread_create(&w->thread, NULL, thread_main, w) != 0) {
        snprintf(err, errlen, "cannot start the translator thread");
        goto fail;
    }
    w->thread_started = 1;
    return w;
fail:
    daemon_worker_free(w);
    return NULL;
}

void daemon_worker_poke(struct daemon_worker *w)
{
    if (!w->dirty) {
        w->dirty = 1;
        w->first_poke_ns = cx_mono_ns();
    }
    if (!w->enabled || w->running || w->timer_armed)
        return;
    int64_t ns = w->o.debounce_ns;
    struct timeval tv = {.tv_sec = (time_t)(ns / CX_NS_PER_S),
                         .tv_usec = (suseconds_t)((ns % CX_NS_PER_S) / 1000)};
    evtimer_add(w->timer_ev, &tv);
    w->timer_armed = 1;
}

void daemon_worker_enable(struct daemon_worker *w)
{
    if (w->enabled)
        return;
    w->enabled = 1;
    if (!w->running) {
        w->dirty = 1;
        w->first_poke_ns = cx_mono_ns();
        start_pass(w);
    }
}

int daemon_worker_pending(const struct daemon_worker *w)
{
    return w->running || w->dirty;
}

uint64_t daemon_worker_passes(const struct daemon_worker *w)
{
    return w->passes;
}

void daemon_worker_free(struct daemon_worker *w)
{
    if (!w)
        return;
    if (w->thread_started) {
        pthread_mutex_lock(&w->mu);
        w->stop = 1;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
    }
    store_view_unref(w->job);
    xlate_snapshot_unref(w->done);
    if (w->wake_ev)
        event_free(w->wake_ev);
    if (w->timer_ev)
        event_free(w->timer_ev);
    if (w->pipe_rd >= 0)
        close(w->pipe_rd);
    if (w->pipe_wr >= 0)
        close(w->pipe_wr);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
