/*
 * leader_queue: the work queue of a leader-only writer (the status writer,
 * the snapshot publisher). One item per object the writer is busy with,
 * found by its key. An item is queued (in the FIFO, waiting for a check),
 * parked (waiting for a retry time, or for the informer after a conflict),
 * or in flight (its write sent, the answer not back), at most one of these
 * at a time; a check asked for while its write is in flight is remembered
 * (recheck) and queued when the write ends.
 *
 * A pump timer drains the FIFO through the owner's |check| while fewer
 * than max_inflight writes are out, at most |budget| checks per loop turn;
 * a check that must wait (rate limit, guard) puts its item back at the
 * head and the pump runs again after the wait. A rescan timer (every
 * LEADER_QUEUE_RESCAN_MS while anything is parked) queues the parked items
 * whose time has come. An item is freed (the owner's |destroy|) once no
 * state holds it and the owner's |busy| says it needs it no more.
 * leader_queue_clear drops every item at once: leadership lost, a new term
 * starts from nothing.
 *
 * The owner embeds struct leader_item in its own item, allocates it and
 * keeps the key's storage, which must stay valid (and unchanged) while the
 * item lives. Main loop only.
 */
#ifndef LEADER_QUEUE_H
#define LEADER_QUEUE_H

#include "cx_list.h"
#include "cx_map.h"

#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>

/* How often parked items are looked at while any is parked. */
#define LEADER_QUEUE_RESCAN_MS 250

struct leader_item {
    struct cx_list link; /* in the FIFO while queued */
    const char *key;     /* the owner's storage */
    unsigned queued : 1;
    unsigned parked : 1;
    unsigned inflight : 1;
    unsigned recheck : 1; /* asked for while its write was in flight */
    int64_t due_ns;       /* parked until (CLOCK_MONOTONIC) */
};

enum leader_check {
    LEADER_CHECK_DONE = 0,  /* nothing to write, written, or parked */
    LEADER_CHECK_LATER = 1, /* must wait (*wait_ns): back to the head of the FIFO */
};

struct leader_queue_ops {
    /* 1 while the pump may check items (leading, with a snapshot). */
    int (*ready)(void *user);
    /* Checks |it| (just taken off the FIFO) and, if a write is due, sends
     * it and calls leader_queue_sent. LEADER_CHECK_LATER sets *wait_ns. */
    enum leader_check (*check)(void *user, struct leader_item *it, int64_t *wait_ns);
    /* The FIFO is empty: one step of other work (a full pass) that may
     * queue items. Returns 1 when it did a step, 0 when there is none.
     * May be NULL. */
    int (*idle)(void *user);
    /* 1 while the owner still needs |it| beyond the queue's own states (a
     * write remembered until the informer shows it, ...). May be NULL. */
    int (*busy)(void *user, const struct leader_item *it);
    /* Frees |it| (and cancels its write, if one is in flight). */
    void (*destroy)(void *user, struct leader_item *it);
    /* Runs after every pump turn (queue metrics). May be NULL. */
    void (*pumped)(void *user);
};

struct leader_queue {
    /* read-only for the owner */
    size_t nqueued, ninflight, nparked;

    const struct leader_queue_ops *ops;
    void *user;
    size_t max_inflight;
    int budget; /* checks per pump turn, 0: no limit */
    struct event *pump_ev, *park_ev;
    int pump_armed, park_armed;
    int64_t pump_due_ns;
    struct cx_map items; /* key -> struct leader_item * */
    struct cx_list fifo; /* of leader_item.link */
};

/* An empty queue on |base| calling |ops| with |user|; at most
 * |max_inflight| (>= 1) writes at once and |budget| checks per loop turn
 * (0: no limit). Returns 0 or -1 (memory; leader_queue_free is still
 * safe). */
__attribute__((warn_unused_result)) int
leader_queue_init(struct leader_queue *q, struct event_base *base,
                  const struct leader_queue_ops *ops, void *user, size_t max_inflight, int budget);
/* Destroys every item and the timers. */
void leader_queue_free(struct leader_queue *q);

/* The item at |key|, or NULL. */
struct leader_item *leader_queue_find(const struct leader_queue *q, const char *key);
/* Adds |it| (zeroed but for its key, which must be new) to the queue's
 * items, in no state yet. Returns 0 or -1 (memory: |it| not added). */
__attribute__((warn_unused_result)) int leader_queue_add(struct leader_queue *q,
                                                         struct leader_item *it);
/* Items known. */
static inline size_t leader_queue_len(const struct leader_queue *q)
{
    return cx_map_len(&q->items);
}

/* Queues |it| for a check at the tail of the FIFO, taking it out of the
 * parked state; if its write is in flight, asks for a check when the write
 * ends instead. Does not schedule the pump. */
void leader_queue_push(struct leader_queue *q, struct leader_item *it);
/* Parks |it| until |delay_ns| from now. */
void leader_queue_park(struct leader_queue *q, struct leader_item *it, int64_t delay_ns);
/* The owner has sent |it|'s write (called from |check|). */
void leader_queue_sent(struct leader_queue *q, struct leader_item *it);
/* The owner has handled the end of |it|'s write (called last in the
 * write's callback, after any leader_queue_park): queues the recheck asked
 * for meanwhile, frees |it| if nothing holds it, runs the pump. |it| may be
 * gone on return. */
void leader_queue_write_done(struct leader_queue *q, struct leader_item *it);
/* Frees |it| if no state holds it and the owner's |busy| says no. |it| may
 * be gone on return. */
void leader_queue_release(struct leader_queue *q, struct leader_item *it);

/* Runs the pump |delay_ns| from now (or sooner, if it is due earlier). */
void leader_queue_schedule(struct leader_queue *q, int64_t delay_ns);

/* Drops every item: |drop| (NULL: the owner's |destroy|) frees each; the
 * FIFO, the counts and the timers start afresh. */
void leader_queue_clear(struct leader_queue *q, void (*drop)(void *user, struct leader_item *it));

#endif
