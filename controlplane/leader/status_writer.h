/*
 * status_writer: the leader's status writer. Level-triggered: for each
 * object it compares the status the translator's report calls for
 * (status_desired) with the status the informer cache holds, and writes
 * only the difference, through the /status subresource, as a merge patch
 * carrying metadata.resourceVersion as a precondition.
 *
 * What gets checked:
 *   - on becoming leader (status_writer_start): every report of the current
 *     snapshot — a full reconcile pass from the warm cache, so no status
 *     stays stuck whatever happened while nobody led;
 *   - on each new snapshot: the objects whose report changed;
 *   - on every informer change of a status-carrying object (someone else
 *     edited the status, our own write came back, a conflict resolved);
 *   - a Gateway whenever the xDS server reports a NACK for it
 *     (status_writer_recheck_gateway), whose XdsAccepted condition comes
 *     from the gateway_conditions callback.
 *
 * Writes are rate-limited (token bucket: qps, burst), at most max_inflight
 * at once, each preceded by the write guard, whose remaining safe time
 * bounds the write's timeout. A 409 waits for the informer to deliver the
 * newer object (or 2 s), then the object is checked again. Our own writes
 * are remembered until the informer shows them, so a check in between does
 * not write the same status twice. An object whose newer generation is
 * still being translated is deferred to the next snapshot.
 *
 * status_writer_stop() (leadership lost) cancels every in-flight write and
 * forgets the queue at once.
 *
 * Metrics: coxswain_status_writes_total{kind,result},
 * coxswain_status_write_duration_seconds, coxswain_status_checks_total
 * {outcome}, coxswain_status_queue_length.
 *
 * Main loop only.
 */
#ifndef STATUS_WRITER_H
#define STATUS_WRITER_H

#include "leader_guard.h"
#include "kube_cache.h"
#include "kube_client.h"
#include "status_build.h"
#include "xlate_types.h"

#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>

struct status_writer;

struct status_writer_opts {
    struct kube_client *kc;
    double qps;       /* writes per second; <= 0 unlimited */
    double burst;     /* bucket depth (>= 1) */
    int max_inflight; /* concurrent writes; 0: 4 */
    struct leader_guard guard;
    /* The informer cache's current object of |kind| at |key|
     * ("namespace/name"), borrowed, or NULL. */
    struct kube_obj *(*lookup)(void *user, enum xlate_kind kind, const char *key);
    /* Extra conditions for Gateway |group| ("namespace/name"): fills up to
     * |max| and returns how many. Strings must stay valid until the next
     * call. May be NULL. */
    size_t (*gateway_conditions)(void *user, const char *group, struct status_condition *out,
                                 size_t max);
    /* 1 while the store has changes not yet in a snapshot. May be NULL. */
    int (*translation_pending)(void *user);
    void *user;
};

struct status_writer_stats {
    uint64_t checks;     /* objects compared */
    uint64_t up_to_date; /* ... that needed nothing */
    uint64_t deferred;   /* ... left for the next snapshot */
    uint64_t writes;     /* writes sent */
    uint64_t writes_ok;
    uint64_t conflicts;
    uint64_t failures;  /* other errors */
    uint64_t refused;   /* writes the guard refused */
    uint64_t cancelled; /* in-flight writes cancelled by stop */
    uint64_t passes;    /* full reconcile passes started */
    size_t queued;
    size_t inflight;
    int leading;
};

struct status_writer *status_writer_new(struct event_base *base,
                                        const struct status_writer_opts *o);
void status_writer_free(struct status_writer *w);

/* The current snapshot (the writer takes a reference of its own). Changed
 * reports are queued when leading. Returns 0 or -1 (memory: the next
 * snapshot or a full pass catches up). */
int status_writer_set_snapshot(struct status_writer *w, struct xlate_snapshot *snap);

/* We lead |term|: a full reconcile pass (now, or on the first snapshot). */
void status_writer_start(struct status_writer *w, uint64_t term);

/* We no longer lead: cancel in-flight writes, forget the queue. */
void status_writer_stop(struct status_writer *w);

/* The informer saw a change of |kind| |key| ("namespace/name"). */
void status_writer_object_changed(struct status_writer *w, enum xlate_kind kind, const char *key);

/* Re-check Gateway |group| ("namespace/name"), e.g. after a NACK. */
void status_writer_recheck_gateway(struct status_writer *w, const char *group);

void status_writer_stats(const struct status_writer *w, struct status_writer_stats *out);

/* 1 when leading with a snapshot and nothing queued, parked or in flight. */
int status_writer_idle(const struct status_writer *w);

#endif
