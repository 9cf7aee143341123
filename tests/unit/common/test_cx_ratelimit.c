#include "cx_ratelimit.h"
#include "cx_time.h"
#include "cxtest.h"

static void test_burst_then_rate(void)
{
    struct cx_ratelimit rl;
    int64_t t = 1000 * CX_NS_PER_S;
    cx_ratelimit_init(&rl, 10, 3, t);
    CHECK_INT_EQ(cx_ratelimit_take(&rl, t), 0);
    CHECK_INT_EQ(cx_ratelimit_take(&rl, t), 0);
    CHECK_INT_EQ(cx_ratelimit_take(&rl, t), 0);
    int64_t w = cx_ratelimit_take(&rl, t);
    /* empty bucket at 10 qps: the next token in 100 ms */
    CHECK_INT_GT(w, 99 * CX_NS_PER_MS);
    CHECK_INT_LE(w, 100 * CX_NS_PER_MS);
    CHECK_INT_GT(cx_ratelimit_take(&rl, t + 50 * CX_NS_PER_MS), 0);
    CHECK_INT_EQ(cx_ratelimit_take(&rl, t + 100 * CX_NS_PER_MS), 0);
    /* over 10 s at most burst + 10*10 tokens are granted */
    int granted = 0;
    for (int64_t dt = 100; dt <= 10000; dt += 1)
        if (cx_ratelimit_take(&rl, t + dt * CX_NS_PER_MS) == 0)
            granted++;
    CHECK_INT_GE(granted, 98);
    CHECK_INT_LE(granted, 100);
}

static void test_unlimited_and_clock_jump(void)
{
    struct cx_ratelimit rl;
    cx_ratelimit_init(&rl, 0, 1, 0);
    for (int i = 0; i < 1000; i++)
        CHECK_INT_EQ(cx_ratelimit_take(&rl, 0), 0);
    cx_ratelimit_init(&rl, 1, 1, 10 * CX_NS_PER_S);
    CHECK_INT_EQ(cx_ratelimit_take(&rl, 10 * CX_NS_PER_S), 0);
    /* backwards clock adds no tokens */
    CHECK_INT_GT(cx_ratelimit_take(&rl, 5 * CX_NS_PER_S), 0);
    CHECK_INT_GT(cx_ratelimit_take(&rl, 5 * CX_NS_PER_S + 500 * CX_NS_PER_MS), 0);
    CHECK_INT_EQ(cx_ratelimit_take(&rl, 6 * CX_NS_PER_S), 0);
}

static const struct cxt_case cases[] = {
    CXT(test_burst_then_rate),
    CXT(test_unlimited_and_clock_jump),
};
CXT_MAIN(cases)
