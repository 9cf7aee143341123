/*
 * kube_limit: the client-side safety limit on requests to the API server, a
 * token bucket (QPS and burst, client-go's --kube-api-qps/--kube-api-burst)
 * shared by every client of one process.
 *
 * Whatever a caller does wrong (a retry loop without backoff, a storm of
 * watch restarts), one replica cannot send more than |burst| requests at
 * once and |qps| per second after that. Calls and watch starts wait for a
 * token in their own client's queue; nothing is dropped.
 *
 * A limiter hangs off a kube_config (kube_config.limit), so every client
 * made from that config, on any thread (the main loop's and the election
 * thread's), draws from the same bucket: the cap holds per process, not per
 * client. A client marked |priority| (the elector's) may take the last
 * KUBE_LIMIT_RESERVE tokens, which the others leave alone, so lease
 * renewals never queue behind a flood of other requests.
 *
 * Thread-safe (one mutex around the bucket). Reference-counted: the config
 * that carries it and each copy hold one reference.
 */
#ifndef KUBE_LIMIT_H
#define KUBE_LIMIT_H

#include <stdint.h>

/* Tokens only priority clients may take. */
#define KUBE_LIMIT_RESERVE 2.0

/* Defaults of the daemon's flags. The status writer (20/s, burst 50) and the
 * ProxySnapshot publisher (5/s, burst 10) fit under them with room for the
 * informers' lists and watches and the elector. */
#define KUBE_LIMIT_DEFAULT_QPS   50.0
#define KUBE_LIMIT_DEFAULT_BURST 100

struct kube_limit;

/* A limiter of |qps| requests per second with a bucket of |burst| (>= 1;
 * raised to KUBE_LIMIT_RESERVE + 1 so that ordinary clients can send at
 * all). |qps| <= 0 means unlimited. Returns NULL when out of memory. The
 * caller holds the one reference. */
struct kube_limit *kube_limit_new(double qps, int burst);

struct kube_limit *kube_limit_ref(struct kube_limit *l);
/* Drops a reference; frees on the last. NULL is ignored. */
void kube_limit_unref(struct kube_limit *l);

/* Takes a token at |now_ns| (CLOCK_MONOTONIC): returns 0 when taken, else
 * the nanoseconds until one can be (nothing taken; ask again then: another
 * thread may take it first). A |priority| taker may empty the bucket; an
 * ordinary one leaves KUBE_LIMIT_RESERVE tokens. */
int64_t kube_limit_take(struct kube_limit *l, int priority, int64_t now_ns);

double kube_limit_qps(const struct kube_limit *l);
double kube_limit_burst(const struct kube_limit *l);

#endif
