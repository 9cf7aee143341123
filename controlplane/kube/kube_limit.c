#include "kube_limit.h"

#include "cx_ratelimit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct kube_limit {
    pthread_mutex_t mu;
    struct cx_ratelimit rl; /* under mu */
    atomic_int refs;
};

struct kube_limit *kube_limit_new(double qps, int burst)
{
    struct kube_limit *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    if (pthread_mutex_init(&l->mu, NULL) != 0) {
        free(l);
        return NULL;
    }
    double b = burst < KUBE_LIMIT_RESERVE + 1 ? KUBE_LIMIT_RESERVE + 1 : (double)burst;
    /* Starts full: a replica's start-up (every informer's list) is the
     * burst the bucket is for. cx_ratelimit reads no clock itself. */
    cx_ratelimit_init(&l->rl, qps, b, 0);
    l->rl.last_ns = -1; /* set at the first take */
    atomic_init(&l->refs, 1);
    return l;
}

struct kube_limit *kube_limit_ref(struct kube_limit *l)
{
    if (l)
        atomic_fetch_add(&l->refs, 1);
    return l;
}

void kube_limit_unref(struct kube_limit *l)
{
    if (!l || atomic_fetch_sub(&l->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&l->mu);
    free(l);
}

int64_t kube_limit_take(struct kube_limit *l, int priority, int64_t now_ns)
{
    if (!l || l->rl.qps <= 0)
        return 0;
    pthread_mutex_lock(&l->mu);
    if (l->rl.last_ns < 0)
        l->rl.last_ns = now_ns;
    /* Threads read the clock before the lock: a caller that arrives with
     * an older time than the last one must not move the bucket's clock
     * back (which would count that interval twice). */
    if (now_ns < l->rl.last_ns)
        now_ns = l->rl.last_ns;
    int64_t wait = cx_ratelimit_take(&l->rl, now_ns);
    if (!priority) {
        if (wait == 0 && l->rl.tokens < KUBE_LIMIT_RESERVE) {
            l->rl.tokens += 1; /* one of the reserve: give it back */
            wait = -1;
        }
        if (wait != 0) {
            /* Until the bucket holds one token beyond the reserve. */
            wait = (int64_t)((KUBE_LIMIT_RESERVE + 1 - l->rl.tokens) / l->rl.qps * 1e9);
            if (wait < 1)
                wait = 1;
        }
    }
    pthread_mutex_unlock(&l->mu);
    return wait;
}

double kube_limit_qps(const struct kube_limit *l)
{
    return l ? l->rl.qps : 0;
}

double kube_limit_burst(const struct kube_limit *l)
{
    return l ? l->rl.burst : 0;
}
