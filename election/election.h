/*
 * election: the leader elector of a coxswain replica.
 *
 * The elector runs on its own thread with its own event_base and its own
 * connection to the API (election_kube.h, opened on that base), so a renewal never waits behind
 * translation or xDS work. It drives the decision core (election_core.h) with the lock's watch, its
 * requests' results and a timer, and publishes the outcome two ways:
 *
 * - the write guard (election_guard.h): the truth for writers. Call
 *   election_guard_allow(election_guard_of(e), &timeout_ns, &term) right
 *   before each leader-only write and give the write that timeout; any
 *   thread may call it.
 * - callbacks on the main loop (on_started_leading, on_stopped_leading,
 *   on_new_leader, on_done), delivered through a pipe watched by the main
 *   event_base. They are notifications, later than the guard by a loop
 *   turn: a writer never waits for on_stopped_leading to stop writing.
 *
 * Lifecycle (main thread): election_new() -> election_start() ->
 * ... -> election_stop() (releases the lock if held, within renewDeadline;
 * on_done follows) -> election_free(). Losing the lock never ends the
 * elector: it steps down and stands by again.
 *
 * Also: a Kubernetes Event on every acquisition and loss, metrics in the
 * cx_metrics registry (leader_election_master_status{name} and
 * coxswain_leader_election_*), a health check and a status document.
 */
#ifndef ELECTION_H
#define ELECTION_H

#include "cx_buf.h"
#include "election_config.h"
#include "election_core.h"
#include "election_guard.h"
#include "election_kube.h"
#include "election_types.h"

#include <event2/event.h>

struct election;

struct election_callbacks {
    /* We lead |term| (writes are allowed by the guard from now on). */
    void (*on_started_leading)(void *user_data, uint64_t term);
    /* We stopped leading |term| (the guard closed before this runs). */
    void (*on_stopped_leading)(void *user_data, uint64_t term, enum election_stop_reason reason);
    /* The lock's holder changed; "" means nobody holds it (released). */
    void (*on_new_leader)(void *user_data, const char *identity);
    /* election_stop() finished; |released| if we handed the lock back. */
    void (*on_done)(void *user_data, bool released);
    void *user_data;
};

struct election_opts {
    const struct election_config *cfg; /* validated here; identity must be set */
    const struct election_kube *kube;  /* the API; copied, its impl outlives the elector */
    /* Where callbacks run. NULL: on the elector thread itself. */
    struct event_base *main_base;
    struct election_callbacks cb;
    bool post_events;      /* a Kubernetes Event on each acquisition and loss */
    const char *component; /* User-Agent product and Event source; "coxswain" */
};

/* Creates an elector (not started). Returns NULL with a message in |err|
 * (invalid config, no memory, the connection cannot be opened). */
struct election *election_new(const struct election_opts *o, char *err, size_t errlen);

/* Starts the elector thread. Returns 0, or -1 with a message in |err|. */
__attribute__((warn_unused_result)) int election_start(struct election *e, char *err,
                                                       size_t errlen);

/* The write guard (valid until election_free). */
struct election_guard *election_guard_of(struct election *e);

/* Asks the elector to step down, release the lock if it is ours (fresh GET,
 * holder compared, bounded by renewDeadline) and end. Returns at once;
 * on_done follows. Idempotent. Main thread. */
void election_stop(struct election *e);

/* Stops if needed, waits for the thread, drops undelivered callbacks and
 * frees. Blocks for at most about renewDeadline. Main thread; never from a
 * callback of this elector running on the elector thread. */
void election_free(struct election *e);

/* A health check (admin_check_fn shape, |arg| is the election): -1 with a
 * reason when we believe we lead but our last successful renewal is older
 * than leaseDuration + 20 s (the elector is wedged). Any thread. */
int election_healthz(void *arg, struct cx_buf *why);

/* A JSON status document for /debug/leader: identity, lock, role, term,
 * holder, safe time left, watch state, counters. Returns 0/-1 (cap). Any
 * thread. */
__attribute__((warn_unused_result)) int election_status_json(struct election *e,
                                                             struct cx_buf *out);

/* The identity this elector uses. */
const char *election_identity(const struct election *e);

#endif
