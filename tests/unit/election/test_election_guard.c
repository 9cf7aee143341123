/* The write guard: margins, timeouts, health, and its behaviour when read
 * from other threads while the elector publishes and clears it. */
#include "cxtest.h"
#include "election_guard.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

#define MS(x) ((int64_t)(x)*1000000)

static void test_not_leader_refuses(void)
{
    struct election_guard g;
    election_guard_init(&g, MS(200));
    int64_t to = -1;
    uint64_t term = 99;
    CHECK(!election_guard_check(&g, MS(1000), &to, &term));
    CHECK_INT_EQ(to, -1); /* untouched on refusal */
    CHECK_INT_EQ(term, 99);
    CHECK_INT_EQ(election_guard_term(&g), 0);
    CHECK_INT_EQ(atomic_load(&g.refused), 1);
}

static void test_margin_and_timeout(void)
{
    struct election_guard g;
    election_guard_init(&g, MS(200));
    election_guard_publish(&g, 3, MS(10000), MS(8000), 12345);
    int64_t to = 0;
    uint64_t term = 0;
    CHECK(election_guard_check(&g, MS(9000), &to, &term));
    CHECK_INT_EQ(to, MS(1000)); /* bounded by the remaining safe time */
    CHECK_INT_EQ(term, 3);
    CHECK(election_guard_check(&g, MS(9800), &to, NULL));
    CHECK_INT_EQ(to, MS(200));
    CHECK(!election_guard_check(&g, MS(9801), NULL, NULL)); /* under the margin */
    CHECK(!election_guard_check(&g, MS(10000), NULL, NULL));
    CHECK(!election_guard_check(&g, MS(20000), NULL, NULL));
    CHECK_INT_EQ(election_guard_term(&g), 3);
    CHECK_INT_EQ(atomic_load(&g.allowed), 2);
    election_guard_clear(&g);
    CHECK(!election_guard_check(&g, MS(9000), NULL, NULL));
    CHECK_INT_EQ(election_guard_term(&g), 0);
}

static void test_zero_margin_still_refuses_at_deadline(void)
{
    struct election_guard g;
    election_guard_init(&g, 0);
    election_guard_publish(&g, 1, MS(100), 0, 0);
    CHECK(election_guard_check(&g, MS(99), NULL, NULL));
    CHECK(!election_guard_check(&g, MS(100), NULL, NULL));
}

/* The second look after queueing a write: same term and enough time left,
 * on the election clock. */
static void test_recheck(void)
{
    struct election_guard g;
    election_guard_init(&g, MS(200));
    CHECK(!election_guard_recheck(&g, 0));
    int64_t now = election_clock_ns();
    election_guard_publish(&g, 4, now + MS(5000), now, 0);
    CHECK(election_guard_recheck(&g, 4));
    CHECK(!election_guard_recheck(&g, 3)); /* a write of an earlier term */
    election_guard_clear(&g);
    CHECK(!election_guard_recheck(&g, 4));
    election_guard_publish(&g, 5, now + MS(5000), now, 0);
    CHECK(!election_guard_recheck(&g, 4)); /* lost and regained since: not ours */
    CHECK(election_guard_recheck(&g, 5));
    election_guard_publish(&g, 5, election_clock_ns() + MS(100), now, 0);
    CHECK(!election_guard_recheck(&g, 5)); /* under the margin */
    /* The election clock runs with CLOCK_MONOTONIC (and beyond it only
     * across a suspend). */
    int64_t a = election_clock_ns(), b = election_clock_ns();
    CHECK_INT_LE(a, b);
}

static void test_enter_leave_drain(void)
{
    struct election_guard g;
    election_guard_init(&g, MS(200));
    CHECK(!election_guard_enter(&g, 0)); /* not leader: refused, not counted */
    CHECK(!election_guard_draining(&g, election_clock_ns()));
    int64_t now = election_clock_ns();
    election_guard_publish(&g, 7, now + MS(5000), now, 0);
    CHECK(election_guard_enter(&g, 7));
    CHECK(election_guard_enter(&g, 7));
    CHECK(!election_guard_enter(&g, 6)); /* another term's write */
    /* leading: nothing to drain for */
    CHECK(!election_guard_draining(&g, election_clock_ns()));
    election_guard_clear(&g);
    CHECK(!election_guard_enter(&g, 7)); /* after the step-down: refused */
    /* two writes let through before it are still out, until the deadline
     * of the term they were let through in */
    CHECK(election_guard_draining(&g, election_clock_ns()));
    CHECK(!election_guard_draining(&g, now + MS(5000)));
    election_guard_leave(&g);
    CHECK(election_guard_draining(&g, election_clock_ns()));
    election_guard_leave(&g);
    CHECK(!election_guard_draining(&g, election_clock_ns()));
    /* a clear while not leading keeps the last term's deadline */
    election_guard_clear(&g);
    CHECK(election_guard_enter(&g, 7) == false);
    CHECK(!election_guard_draining(&g, election_clock_ns()));
}

static void test_healthz(void)
{
    struct election_guard g;
    election_guard_init(&g, MS(200));
    int64_t lease = MS(15000), grace = MS(20000);
    CHECK(election_guard_healthy(&g, MS(1000000), lease, grace)); /* standby */
    election_guard_publish(&g, 1, MS(12000), MS(2000), 0);
    CHECK(election_guard_healthy(&g, MS(2000) + lease + grace, lease, grace));
    CHECK(!election_guard_healthy(&g, MS(2001) + lease + grace, lease, grace));
    election_guard_clear(&g);
    CHECK(election_guard_healthy(&g, MS(1000000), lease, grace));
}

/* ---- threads ---------------------------------------------------------- */

#define BASE MS(1000000)

struct race {
    struct election_guard g;
    _Atomic int stop;
    _Atomic uint64_t cleared_epoch; /* odd: cleared and not republished */
    _Atomic uint64_t bad_after_clear;
    _Atomic uint64_t bad_term;
    _Atomic uint64_t allowed;
};

static void *reader(void *arg)
{
    struct race *r = arg;
    while (!atomic_load(&r->stop)) {
        uint64_t e = atomic_load(&r->cleared_epoch);
        int64_t to = 0;
        uint64_t term = 0;
        bool ok = election_guard_check(&r->g, 0, &to, &term);
        uint64_t e2 = atomic_load(&r->cleared_epoch);
        if (!ok)
            continue;
        atomic_fetch_add(&r->allowed, 1);
        /* Cleared before our check began and still not republished after
         * it: the guard must have said no. */
        if ((e & 1) && e == e2)
            atomic_fetch_add(&r->bad_after_clear, 1);
        /* Every deadline belongs to its term: BASE + term * 1000 (+1 when
         * renewed). */
        if ((uint64_t)((to - BASE) / 1000) != term)
            atomic_fetch_add(&r->bad_term, 1);
    }
    return NULL;
}

static void test_concurrent_readers(void)
{
    static struct race r;
    memset(&r, 0, sizeof(r));
    election_guard_init(&r.g, 0);
    atomic_store(&r.cleared_epoch, 1);
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        REQUIRE(pthread_create(&th[i], NULL, reader, &r) == 0);
    /* Until the readers have seen plenty of allowed writes (they may start
     * late on a busy machine), at most ~5 million terms. */
    uint64_t slow = (uint64_t)cxt_slowdown();
    for (uint64_t term = 1; term <= 5000000 / slow; term++) {
        if (term > 200000 / slow && atomic_load(&r.allowed) > 100000 / slow)
            break;
        atomic_fetch_add(&r.cleared_epoch, 1); /* even: about to publish */
        election_guard_publish(&r.g, term, BASE + (int64_t)term * 1000, 0, 0);
        election_guard_publish(&r.g, term, BASE + (int64_t)term * 1000 + 1, 0, 0);
        /* Now and then hand the CPU over while a term is published: under
         * valgrind threads run one at a time, and without this the readers
         * only ever ran while the guard was cleared. */
        if ((term & 255) == 0)
            sched_yield();
        election_guard_clear(&r.g);
        atomic_fetch_add(&r.cleared_epoch, 1); /* odd: cleared */
    }
    atomic_store(&r.stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    printf("# %llu writes allowed during the race\n", (unsigned long long)atomic_load(&r.allowed));
    CHECK_INT_GT(atomic_load(&r.allowed), 1000);
    CHECK_INT_EQ(atomic_load(&r.bad_after_clear), 0);
    CHECK_INT_EQ(atomic_load(&r.bad_term), 0);
}

static const struct cxt_case cases[] = {
    CXT(test_not_leader_refuses),
    CXT(test_margin_and_timeout),
    CXT(test_zero_margin_still_refuses_at_deadline),
    CXT(test_recheck),
    CXT(test_enter_leave_drain),
    CXT(test_healthz),
    CXT(test_concurrent_readers),
};
CXT_MAIN(cases)
