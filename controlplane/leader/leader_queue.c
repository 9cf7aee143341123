#include "leader_queue.h"

#include "cx_time.h"

#include <string.h>

static void on_pump(evutil_socket_t fd, short what, void *arg);
static void on_park(evutil_socket_t fd, short what, void *arg);

int leader_queue_init(struct leader_queue *q, struct event_base *base,
                      const struct leader_queue_ops *ops, void *user, size_t max_inflight,
                      int budget)
{
    memset(q, 0, sizeof(*q));
    q->ops = ops;
    q->user = user;
    q->max_inflight = max_inflight ? max_inflight : 1;
    q->budget = budget > 0 ? budget : 0;
    cx_list_init(&q->fifo);
    q->pump_ev = evtimer_new(base, on_pump, q);
    q->park_ev = evtimer_new(base, on_park, q);
    return q->pump_ev && q->park_ev ? 0 : -1;
}

void leader_queue_free(struct leader_queue *q)
{
    const struct cx_map_slot *s;
    for (size_t i = 0; cx_map_next(&q->items, &i, &s);)
        q->ops->destroy(q->user, s->val);
    cx_map_free(&q->items);
    if (q->pump_ev)
        event_free(q->pump_ev);
    if (q->park_ev)
        event_free(q->park_ev);
    q->pump_ev = q->park_ev = NULL;
    cx_list_init(&q->fifo);
    q->nqueued = q->ninflight = q->nparked = 0;
}

struct leader_item *leader_queue_find(const struct leader_queue *q, const char *key)
{
    return cx_map_gets(&q->items, key);
}

int leader_queue_add(struct leader_queue *q, struct leader_item *it)
{
    return cx_map_puts(&q->items, it->key, it, NULL);
}

void leader_queue_push(struct leader_queue *q, struct leader_item *it)
{
    if (it->inflight)
        it->recheck = 1; /* checked again when the write ends */
    if (it->queued || it->inflight)
        return;
    if (it->parked) {
        it->parked = 0;
        q->nparked--;
    }
    it->queued = 1;
    cx_list_append(&q->fifo, &it->link);
    q->nqueued++;
}

static struct leader_item *dequeue(struct leader_queue *q)
{
    struct leader_item *it = cx_list_entry(cx_list_pop(&q->fifo), struct leader_item, link);
    it->queued = 0;
    q->nqueued--;
    return it;
}

static void push_front(struct leader_queue *q, struct leader_item *it)
{
    it->queued = 1;
    cx_list_prepend(&q->fifo, &it->link);
    q->nqueued++;
}

static void arm_rescan(struct leader_queue *q)
{
    struct timeval tv = {.tv_sec = 0, .tv_usec = LEADER_QUEUE_RESCAN_MS * 1000};
    evtimer_add(q->park_ev, &tv);
    q->park_armed = 1;
}

void leader_queue_park(struct leader_queue *q, struct leader_item *it, int64_t delay_ns)
{
    if (!it->parked)
        q->nparked++;
    it->parked = 1;
    it->due_ns = cx_mono_ns() + delay_ns;
    if (!q->park_armed)
        arm_rescan(q);
}

void leader_queue_sent(struct leader_queue *q, struct leader_item *it)
{
    it->inflight = 1;
    q->ninflight++;
}

void leader_queue_release(struct leader_queue *q, struct leader_item *it)
{
    if (it->queued || it->parked || it->inflight || (q->ops->busy && q->ops->busy(q->user, it)))
        return;
    cx_map_dels(&q->items, it->key);
    q->ops->destroy(q->user, it);
}

void leader_queue_write_done(struct leader_queue *q, struct leader_item *it)
{
    it->inflight = 0;
    q->ninflight--;
    if (it->recheck && q->ops->ready(q->user) && !it->parked)
        leader_queue_push(q, it);
    it->recheck = 0;
    leader_queue_release(q, it);
    leader_queue_schedule(q, 0);
}

static void pump(struct leader_queue *q)
{
    int budget = q->budget;
    while (q->ops->ready(q->user) && q->ninflight < q->max_inflight) {
        if (q->budget && budget-- <= 0) {
            leader_queue_schedule(q, 0); /* the rest on the next loop turn */
            break;
        }
        if (cx_list_empty(&q->fifo)) {
            if (!q->ops->idle || !q->ops->idle(q->user))
                break;
            continue;
        }
        struct leader_item *it = dequeue(q);
        int64_t wait = 0;
        if (q->ops->check(q->user, it, &wait) == LEADER_CHECK_LATER) {
            push_front(q, it);
            leader_queue_schedule(q, wait);
            break;
        }
        leader_queue_release(q, it);
    }
    if (q->ops->pumped)
        q->ops->pumped(q->user);
}

static void on_pump(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct leader_queue *q = arg;
    q->pump_armed = 0;
    pump(q);
}

void leader_queue_schedule(struct leader_queue *q, int64_t delay_ns)
{
    int64_t due = cx_mono_ns() + delay_ns;
    if (q->pump_armed && q->pump_due_ns <= due)
        return;
    struct timeval tv = {.tv_sec = (time_t)(delay_ns / CX_NS_PER_S),
                         .tv_usec = (suseconds_t)((delay_ns % CX_NS_PER_S) / 1000)};
    evtimer_add(q->pump_ev, &tv);
    q->pump_armed = 1;
    q->pump_due_ns = due;
}

static void on_park(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct leader_queue *q = arg;
    q->park_armed = 0;
    if (!q->nparked)
        return; /* all unparked meanwhile, and queued with a pump run */
    int64_t now = cx_mono_ns();
    int any = 0; /* something stays parked */
    const struct cx_map_slot *s;
    for (size_t i = 0; cx_map_next(&q->items, &i, &s);) {
        struct leader_item *it = s->val;
        if (!it->parked)
            continue;
        if (it->due_ns <= now)
            leader_queue_push(q, it);
        else
            any = 1;
    }
    if (any)
        arm_rescan(q);
    leader_queue_schedule(q, 0);
}

void leader_queue_clear(struct leader_queue *q, void (*drop)(void *user, struct leader_item *it))
{
    if (!drop)
        drop = q->ops->destroy;
    const struct cx_map_slot *s;
    for (size_t i = 0; cx_map_next(&q->items, &i, &s);)
        drop(q->user, s->val);
    cx_map_free(&q->items);
    cx_list_init(&q->fifo);
    q->nqueued = q->ninflight = q->nparked = 0;
    if (q->pump_armed)
        evtimer_del(q->pump_ev);
    if (q->park_armed)
        evtimer_del(q->park_ev);
    q->pump_armed = q->park_armed = 0;
}
