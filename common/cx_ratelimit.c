#include "cx_ratelimit.h"

#include "cx_time.h"

void cx_ratelimit_init(struct cx_ratelimit *rl, double qps, double burst, int64_t now_ns)
{
    rl->qps = qps;
    rl->burst = burst < 1 ? 1 : burst;
    rl->tokens = rl->burst;
    rl->last_ns = now_ns;
}

int64_t cx_ratelimit_take(struct cx_ratelimit *rl, int64_t now_ns)
{
    if (rl->qps <= 0)
        return 0;
    int64_t dt = now_ns - rl->last_ns;
    if (dt > 0) {
        rl->tokens += (double)dt / 1e9 * rl->qps;
        if (rl->tokens > rl->burst)
            rl->tokens = rl->burst;
        rl->last_ns = now_ns;
    } else if (dt < 0) {
        /* the clock went backwards: restart the interval, add nothing */
        rl->last_ns = now_ns;
    }
    if (rl->tokens >= 1) {
        rl->tokens -= 1;
        return 0;
    }
    int64_t wait = (int64_t)((1 - rl->tokens) / rl->qps * 1e9);
    return wait > 0 ? wait : 1;
}
