/* leader_queue on a real event loop, with an owner that records what the
 * queue asks of it: FIFO order, one entry per item however often it is
 * asked for, the in-flight cap, a check asked for during a write, a wait
 * that puts the item back at the head, parking until a time (and not
 * before), a parked item queued at once when asked for, the per-turn check
 * budget, the idle step, release only when nothing holds an item, and
 * clear dropping everything with the timers. */
#include "cx_time.h"
#include "cxtest.h"
#include "daemon_test.h"
#include "leader_queue.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

struct titem {
    struct leader_item li;
    int busy;        /* the owner still needs it */
    int send;        /* the check sends a write */
    int64_t wait_ns; /* the check asks to wait this long (once) */
    char key[16];
};

/* The item that embeds |l|. */
static inline struct titem *item_of(const struct leader_item *l)
{
    return cx_container_of(l, struct titem, li);
}

static struct event_base *base;
static struct leader_queue q;
static int ready = 1;
/* what the owner saw */
static char order[256];
static size_t norder;
static int destroyed, dropped, pumps, checks_this_turn, max_checks_per_turn;
static int idle_steps, idle_left;
static int64_t checked_at[8];
static struct titem *idle_items[8];

static void reset_log(void)
{
    norder = 0;
    order[0] = '\0';
    destroyed = dropped = pumps = checks_this_turn = max_checks_per_turn = 0;
    idle_steps = idle_left = 0;
    memset(checked_at, 0, sizeof(checked_at));
}

static int o_ready(void *user)
{
    (void)user;
    return ready;
}

static enum leader_check o_check(void *user, struct leader_item *l, int64_t *wait_ns)
{
    (void)user;
    struct titem *it = item_of(l);
    if (norder + 1 < sizeof(order)) {
        order[norder++] = it->key[0];
        order[norder] = '\0';
    }
    int i = it->key[0] - 'a';
    if (i >= 0 && i < 8)
        checked_at[i] = cx_mono_ns();
    if (++checks_this_turn > max_checks_per_turn)
        max_checks_per_turn = checks_this_turn;
    if (it->wait_ns) {
        *wait_ns = it->wait_ns;
        it->wait_ns = 0;
        return LEADER_CHECK_LATER;
    }
    if (it->send)
        leader_queue_sent(&q, l);
    return LEADER_CHECK_DONE;
}

static int o_idle(void *user)
{
    (void)user;
    if (idle_left <= 0)
        return 0;
    idle_left--;
    leader_queue_push(&q, &idle_items[idle_steps++]->li);
    return 1;
}

static int o_busy(void *user, const struct leader_item *l)
{
    (void)user;
    return item_of(l)->busy;
}

static void o_destroy(void *user, struct leader_item *l)
{
    (void)user;
    destroyed++;
    free(item_of(l));
}

static void o_drop(void *user, struct leader_item *l)
{
    dropped++;
    o_destroy(user, l);
}

static void o_pumped(void *user)
{
    (void)user;
    pumps++;
    checks_this_turn = 0;
}

static const struct leader_queue_ops ops = {
    .ready = o_ready,
    .check = o_check,
    .idle = o_idle,
    .busy = o_busy,
    .destroy = o_destroy,
    .pumped = o_pumped,
};

static struct titem *item(const char *key)
{
    struct leader_item *l = leader_queue_find(&q, key);
    if (l)
        return item_of(l);
    struct titem *it = calloc(1, sizeof(*it));
    if (!it)
        return NULL;
    snprintf(it->key, sizeof(it->key), "%s", key);
    it->li.key = it->key;
    if (leader_queue_add(&q, &it->li) != 0) {
        free(it);
        return NULL;
    }
    return it;
}

static void want(const char *key)
{
    struct titem *it = item(key);
    if (it)
        leader_queue_push(&q, &it->li);
    leader_queue_schedule(&q, 0);
}

static void setup(size_t max_inflight, int budget)
{
    ready = 1;
    reset_log();
    if (!base)
        base = event_base_new();
    int rc = leader_queue_init(&q, base, &ops, NULL, max_inflight, budget);
    if (rc != 0)
        cxt_fail(__FILE__, __LINE__, 1, "leader_queue_init failed");
}

static void teardown(void)
{
    leader_queue_free(&q);
}

static int n_checked(void *arg)
{
    return (int)norder >= *(int *)arg;
}

static void run_until_checked(int n, int ms)
{
    cxt_loop_until(base, n_checked, &n, ms * cxt_slowdown());
}

static void test_fifo_order_and_release(void)
{
    setup(4, 0);
    want("a");
    want("b");
    want("c");
    want("a"); /* already queued: no second entry */
    CHECK_INT_EQ(q.nqueued, 3);
    CHECK_INT_EQ(leader_queue_len(&q), 3);
    run_until_checked(3, 1000);
    CHECK_STR_EQ(order, "abc");
    /* nothing holds them: each is freed after its check */
    CHECK_INT_EQ(destroyed, 3);
    CHECK_INT_EQ(leader_queue_len(&q), 0);
    CHECK_INT_EQ(q.nqueued, 0);
    teardown();
}

static void test_busy_item_stays_until_released(void)
{
    setup(4, 0);
    struct titem *a = item("a");
    a->busy = 1;
    want("a");
    run_until_checked(1, 1000);
    cxt_loop_for(base, 20); /* and nothing more happens */
    CHECK_STR_EQ(order, "a");
    CHECK_INT_EQ(destroyed, 0);
    CHECK(leader_queue_find(&q, "a") == &a->li);
    a->busy = 0;
    leader_queue_release(&q, &a->li);
    CHECK_INT_EQ(destroyed, 1);
    CHECK(leader_queue_find(&q, "a") == NULL);
    teardown();
}

static void test_inflight_cap_and_recheck(void)
{
    setup(2, 0);
    const char *keys[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        item(keys[i])->send = 1;
        want(keys[i]);
    }
    run_until_checked(2, 1000);
    cxt_loop_for(base, 30);
    /* two writes out, the third waits for a slot */
    CHECK_STR_EQ(order, "ab");
    CHECK_INT_EQ(q.ninflight, 2);
    CHECK_INT_EQ(q.nqueued, 1);
    struct titem *a = item("a"), *b = item("b");
    item("c")->send = 0;
    /* asked for during its write: not queued now, checked after it */
    want("a");
    CHECK_INT_EQ(q.nqueued, 1);
    CHECK(!a->li.queued);
    a->send = 0;
    leader_queue_write_done(&q, &a->li); /* "a" requeued behind "c" */
    CHECK_INT_EQ(q.ninflight, 1);
    CHECK(a->li.queued);
    run_until_checked(4, 1000);
    CHECK_STR_EQ(order, "abca");
    CHECK_INT_EQ(q.ninflight, 1); /* "b" */
    CHECK(leader_queue_find(&q, "a") == NULL);
    CHECK(leader_queue_find(&q, "c") == NULL);
    /* a write that ends with nothing asked meanwhile: released */
    leader_queue_write_done(&q, &b->li);
    CHECK(leader_queue_find(&q, "b") == NULL);
    CHECK_INT_EQ(destroyed, 3);
    CHECK_INT_EQ(q.ninflight, 0);
    teardown();
}

static void test_recheck_dropped_when_no_longer_ready(void)
{
    setup(1, 0);
    struct titem *a = item("a");
    a->send = 1;
    want("a");
    cxt_loop_for(base, 20);
    want("a");
    CHECK(a->li.recheck);
    ready = 0;
    leader_queue_write_done(&q, &a->li);
    CHECK(leader_queue_find(&q, "a") == NULL); /* not requeued: released */
    CHECK_INT_EQ(q.nqueued, 0);
    teardown();
}

static void test_wait_puts_the_item_back_at_the_head(void)
{
    setup(4, 0);
    item("a")->wait_ns = 80 * CX_NS_PER_MS;
    int64_t t0 = cx_mono_ns();
    want("a");
    want("b");
    run_until_checked(1, 1000);
    CHECK_STR_EQ(order, "a");
    cxt_loop_for(base, 40);
    /* "b" waits behind "a" (checked only while a's 80 ms are not over:
     * a slow machine may have spent them already) */
    if (cx_mono_ns() - checked_at[0] < 80 * CX_NS_PER_MS) {
        CHECK_STR_EQ(order, "a");
        CHECK_INT_EQ(q.nqueued, 2);
    }
    run_until_checked(3, 2000);
    CHECK_STR_EQ(order, "aab");
    /* libevent times with a coarse clock: a few ms early at most */
    CHECK_INT_GE(checked_at[0] - t0, 70 * CX_NS_PER_MS);
    teardown();
}

static void test_park_until_due_then_rescan(void)
{
    setup(4, 0);
    struct titem *a = item("a"), *b = item("b");
    int64_t t0 = cx_mono_ns();
    leader_queue_park(&q, &a->li, 300 * CX_NS_PER_MS);
    leader_queue_park(&q, &b->li, 600 * CX_NS_PER_MS);
    leader_queue_park(&q, &b->li, 600 * CX_NS_PER_MS); /* counted once */
    CHECK_INT_EQ(q.nparked, 2);
    leader_queue_release(&q, &a->li); /* parked: stays */
    CHECK_INT_EQ(destroyed, 0);
    cxt_loop_for(base, 200);
    if (cx_mono_ns() - t0 < 300 * CX_NS_PER_MS) /* else a slow machine spent a's wait */
        CHECK_STR_EQ(order, "");
    run_until_checked(2, 3000);
    CHECK_STR_EQ(order, "ab");
    /* not before its time, and found by a rescan within one period */
    CHECK_INT_GE(checked_at[0] - t0, 300 * CX_NS_PER_MS);
    CHECK_INT_GE(checked_at[1] - t0, 600 * CX_NS_PER_MS);
    if (cxt_slowdown() == 1)
        CHECK_INT_LT(checked_at[1] - t0, (600 + 2 * LEADER_QUEUE_RESCAN_MS) * CX_NS_PER_MS);
    CHECK_INT_EQ(q.nparked, 0);
    CHECK_INT_EQ(destroyed, 2);
    teardown();
}

static void test_push_unparks_at_once(void)
{
    setup(4, 0);
    struct titem *a = item("a");
    leader_queue_park(&q, &a->li, 10 * CX_NS_PER_S);
    CHECK_INT_EQ(q.nparked, 1);
    want("a"); /* the informer brought news: no need to wait */
    CHECK_INT_EQ(q.nparked, 0);
    CHECK(!a->li.parked);
    run_until_checked(1, 1000);
    CHECK_STR_EQ(order, "a");
    teardown();
}

static void test_budget_limits_checks_per_turn(void)
{
    setup(100, 3);
    char k[2] = {0};
    for (int i = 0; i < 10; i++) {
        k[0] = (char)('a' + i);
        want(k);
    }
    run_until_checked(10, 2000);
    CHECK_STR_EQ(order, "abcdefghij");
    CHECK_INT_EQ(max_checks_per_turn, 3);
    CHECK_INT_GE(pumps, 4); /* 10 checks in turns of at most 3 */
    teardown();
}

static void test_idle_steps_when_the_fifo_is_empty(void)
{
    setup(4, 0);
    idle_items[0] = item("x");
    idle_items[1] = item("y");
    idle_left = 2;
    want("a");
    run_until_checked(3, 1000);
    CHECK_STR_EQ(order, "axy"); /* the FIFO first, then the idle steps */
    CHECK_INT_EQ(idle_steps, 2);
    teardown();
}

static void test_not_ready_checks_nothing(void)
{
    setup(4, 0);
    ready = 0;
    want("a");
    cxt_loop_for(base, 30);
    CHECK_STR_EQ(order, "");
    CHECK_INT_EQ(q.nqueued, 1);
    ready = 1;
    leader_queue_schedule(&q, 0);
    run_until_checked(1, 1000);
    CHECK_STR_EQ(order, "a");
    teardown();
}

static void test_clear_drops_everything_and_disarms(void)
{
    setup(1, 0);
    item("a")->send = 1;
    want("a");
    run_until_checked(1, 1000);
    CHECK_INT_EQ(q.ninflight, 1);
    want("b");
    leader_queue_park(&q, &item("c")->li, 100 * CX_NS_PER_MS);
    item("d")->busy = 1;
    leader_queue_schedule(&q, 0);
    leader_queue_clear(&q, o_drop);
    CHECK_INT_EQ(dropped, 4);
    CHECK_INT_EQ(leader_queue_len(&q), 0);
    CHECK_INT_EQ(q.nqueued + q.nparked + q.ninflight, 0);
    cxt_loop_for(base, 400); /* neither timer fires on a dropped item */
    CHECK_STR_EQ(order, "a");
    /* and the queue works afresh */
    want("e");
    run_until_checked(2, 1000);
    CHECK_STR_EQ(order, "ae");
    teardown();
}

static void test_free_destroys_every_item(void)
{
    setup(4, 0);
    item("a")->busy = 1;
    leader_queue_park(&q, &item("b")->li, CX_NS_PER_S);
    want("c");
    leader_queue_free(&q);
    CHECK_INT_EQ(destroyed, 3);
    event_base_free(base);
    base = NULL;
}

static const struct cxt_case cases[] = {
    CXT(test_fifo_order_and_release),
    CXT(test_busy_item_stays_until_released),
    CXT(test_inflight_cap_and_recheck),
    CXT(test_recheck_dropped_when_no_longer_ready),
    CXT(test_wait_puts_the_item_back_at_the_head),
    CXT(test_park_until_due_then_rescan),
    CXT(test_push_unparks_at_once),
    CXT(test_budget_limits_checks_per_turn),
    CXT(test_idle_steps_when_the_fifo_is_empty),
    CXT(test_not_ready_checks_nothing),
    CXT(test_clear_drops_everything_and_disarms),
    CXT(test_free_destroys_every_item),
};
CXT_MAIN(cases)
