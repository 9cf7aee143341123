/*
 * cx_ratelimit: a token bucket (qps, burst) judged on a caller-supplied
 * monotonic clock, so it is deterministic under test. Not thread-safe:
 * one owner.
 */
#ifndef CX_RATELIMIT_H
#define CX_RATELIMIT_H

#include <stdint.h>

struct cx_ratelimit {
    double qps;   /* tokens added per second; <= 0 means unlimited */
    double burst; /* bucket size (>= 1) */
    double tokens;
    int64_t last_ns; /* monotonic time of the last refill */
};

void cx_ratelimit_init(struct cx_ratelimit *rl, double qps, double burst, int64_t now_ns);

/* Takes one token if available: returns 0 then. Otherwise returns the
 * nanoseconds to wait until one is available (> 0) and takes nothing. */
int64_t cx_ratelimit_take(struct cx_ratelimit *rl, int64_t now_ns);

#endif
