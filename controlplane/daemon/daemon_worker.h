/*
 * daemon_worker: debounced translation on a worker thread.
 *
 * The main loop pokes the worker whenever the store changed significantly.
 * The first poke after a pass arms a debounce timer (the batch window);
 * when it fires the worker asks the main loop for an immutable store view
 * (make_view), translates it on its own thread with its own xlate_ctx (the
 * view's changes alone when the context holds the previous view's world,
 * else the whole view), and
 * hands the new snapshot back to the main loop (on_snapshot), which swaps
 * one pointer. Pokes that arrive while a pass runs are batched into the
 * next pass, which starts as soon as the running one ends (the changes have
 * already waited at least one window).
 *
 * Nothing is translated before daemon_worker_enable() (the daemon calls it
 * once every informer has synced); enabling starts a pass at once.
 *
 * Metrics: coxswain_translation_duration_seconds (histogram),
 * coxswain_translations_total{result}, coxswain_translation_objects,
 * coxswain_translation_resources{outcome=built|reused} (last pass),
 * coxswain_translation_inputs_total{input=changes|full}.
 *
 * Main loop only (the thread is internal).
 */
#ifndef DAEMON_WORKER_H
#define DAEMON_WORKER_H

#include "store.h"
#include "xlate.h"

#include <event2/event.h>
#include <stdint.h>

struct daemon_worker;

struct daemon_worker_result {
    uint64_t pass;            /* 1 for the first pass */
    uint64_t view_generation; /* store generation the snapshot reflects */
    int64_t queued_ns;        /* monotonic: first poke of this batch */
    int64_t started_ns;       /* translation start (worker thread) */
    int64_t duration_ns;      /* the translator call(s) only */
    int incremental;          /* translated from the view's changes alone */
    size_t objects;           /* objects in the view (the world translated) */
    struct xlate_stats stats;
};

struct daemon_worker_opts {
    int64_t debounce_ns;
    struct xlate_limits limits; /* the translator's budgets */
    /* Main loop: an immutable view of the store now (a reference for the
     * worker), or NULL if memory ran out (retried after the window). */
    struct store_view *(*make_view)(void *user);
    /* Main loop: a new snapshot; the callee takes over the reference. */
    void (*on_snapshot)(void *user, struct xlate_snapshot *snap,
                        const struct daemon_worker_result *res);
    void *user;
};

/* Creates the worker and starts its thread. NULL with a message in |err|. */
struct daemon_worker *daemon_worker_new(struct event_base *base, const struct daemon_worker_opts *o,
                                        char *err, size_t errlen);

/* The store changed: translate within one debounce window. */
void daemon_worker_poke(struct daemon_worker *w);

/* Allows translation (idempotent) and starts a pass now. */
void daemon_worker_enable(struct daemon_worker *w);

/* 1 when a pass is running or a poke is waiting for one. */
int daemon_worker_pending(const struct daemon_worker *w);

/* Passes completed. */
uint64_t daemon_worker_passes(const struct daemon_worker *w);

/* Stops the thread (waits for a running pass to end) and frees. */
void daemon_worker_free(struct daemon_worker *w);

#endif
