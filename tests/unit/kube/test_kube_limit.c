/* kube_limit: the shared token bucket (burst, refill, the reserve only a
 * priority client may take) on a fake clock, and its cap holding across
 * threads on the real one. */
#include "cx_time.h"
#include "cxtest.h"
#include "kube_limit.h"

#include <pthread.h>
#include <stdatomic.h>

#define MS CX_NS_PER_MS

static void test_burst_then_rate(void)
{
    struct kube_limit *l = kube_limit_new(10, 10);
    REQUIRE(l != NULL);
    /* Ordinary takers get the bucket less the reserve at once. */
    int taken = 0;
    while (kube_limit_take(l, 0, 1000 * MS) == 0 && taken < 100)
        taken++;
    CHECK_INT_EQ(taken, 10 - (int)KUBE_LIMIT_RESERVE);
    /* Then one per 100 ms: the wait says so (the reserve stays). */
    int64_t w = kube_limit_take(l, 0, 1000 * MS);
    CHECK_INT_GE(w, 99 * MS);
    CHECK_INT_LE(w, 101 * MS);
    CHECK_INT_NE(kube_limit_take(l, 0, 1050 * MS), 0);
    CHECK_INT_EQ(kube_limit_take(l, 0, 1101 * MS), 0);
    CHECK_INT_NE(kube_limit_take(l, 0, 1101 * MS), 0);
    /* A priority taker may empty the reserve, and only that. */
    CHECK_INT_EQ(kube_limit_take(l, 1, 1101 * MS), 0);
    CHECK_INT_EQ(kube_limit_take(l, 1, 1101 * MS), 0);
    CHECK_INT_NE(kube_limit_take(l, 1, 1101 * MS), 0);
    /* Ordinary takers now wait for the reserve to refill plus one. */
    w = kube_limit_take(l, 0, 1101 * MS);
    CHECK_INT_GE(w, 290 * MS);
    CHECK_INT_LE(w, 310 * MS);
    /* A long pause refills to the burst, no more. */
    taken = 0;
    while (kube_limit_take(l, 1, 60000 * MS) == 0 && taken < 100)
        taken++;
    CHECK_INT_EQ(taken, 10);
    kube_limit_unref(l);
}

static void test_tiny_burst_and_unlimited(void)
{
    /* A burst below the reserve is raised so ordinary clients can send. */
    struct kube_limit *l = kube_limit_new(5, 1);
    REQUIRE(l != NULL);
    CHECK_INT_EQ((int)kube_limit_burst(l), (int)KUBE_LIMIT_RESERVE + 1);
    CHECK_INT_EQ(kube_limit_take(l, 0, 0), 0);
    CHECK_INT_NE(kube_limit_take(l, 0, 0), 0);
    /* References: the config and each copy hold one. */
    CHECK(kube_limit_ref(l) == l);
    kube_limit_unref(l);
    kube_limit_unref(l);
    struct kube_limit *u = kube_limit_new(0, 0);
    REQUIRE(u != NULL);
    for (int i = 0; i < 1000; i++)
        CHECK_INT_EQ(kube_limit_take(u, 0, 0), 0);
    kube_limit_unref(u);
    CHECK_INT_EQ(kube_limit_take(NULL, 0, 0), 0);
}

struct hammer {
    struct kube_limit *l;
    int priority;
    int64_t for_ns; /* how long it hammers, from when it first runs */
    atomic_int *taken;
};

static void *hammer_main(void *arg)
{
    struct hammer *h = arg;
    /* The window starts when the thread runs: on a loaded machine (or
     * under valgrind) a thread may first run long after it was created. */
    int64_t until = cx_mono_ns() + h->for_ns;
    while (cx_mono_ns() < until)
        if (kube_limit_take(h->l, h->priority, cx_mono_ns()) == 0)
            atomic_fetch_add(h->taken, 1);
    return NULL;
}

/* Two threads taking as fast as they can for 500 ms: together they get the
 * burst plus the rate, never more. */
static void test_cap_across_threads(void)
{
    struct kube_limit *l = kube_limit_new(100, 20);
    REQUIRE(l != NULL);
    atomic_int a = 0, b = 0;
    int64_t t0 = cx_mono_ns();
    struct hammer ha = {l, 0, 500 * MS, &a}, hb = {l, 1, 500 * MS, &b};
    pthread_t ta, tb;
    REQUIRE_INT_EQ(pthread_create(&ta, NULL, hammer_main, &ha), 0);
    REQUIRE_INT_EQ(pthread_create(&tb, NULL, hammer_main, &hb), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    double secs = (double)(cx_mono_ns() - t0) / 1e9;
    int total = atomic_load(&a) + atomic_load(&b);
    CHECK_INT_LE(total, 20 + (int)(100 * secs) + 1);
    /* At least the burst went through (how much of the refill each thread
     * got depends on the scheduler: valgrind runs one thread at a time). */
    CHECK_INT_GE(total, 20);
    kube_limit_unref(l);
}

static const struct cxt_case cases[] = {
    CXT(test_burst_then_rate),
    CXT(test_tiny_burst_and_unlimited),
    CXT(test_cap_across_threads),
};
CXT_MAIN(cases)
