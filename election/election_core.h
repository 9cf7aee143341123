/*
 * election_core: the leader elector's decision core. No I/O, no clocks.
 *
 * Inputs: observations of the lock (from the watch or from responses),
 * results of the requests it asked for, the watch's health, timer ticks and
 * a shutdown request, each stamped with the caller's monotonic time (and
 * wall time, which is only ever written into the record). Outputs: a queue
 * of actions (send a request, cancel one, leadership changes, done) that the
 * caller drains with election_core_next_action(), and the monotonic time at
 * which it wants election_core_tick() again.
 *
 * The rules (client-go's algorithm, then better):
 * - Expiry is judged on our monotonic clock from the moment the record (or
 *   its resourceVersion) last changed, never on the record's renewTime.
 * - An empty holder is taken at once; a missing object is created; our own
 *   identity as holder is re-acquired at once.
 * - Writes carry the resourceVersion last observed (optimistic concurrency);
 *   a conflict is followed by a fresh GET. Holder change increments
 *   leaderTransitions.
 * - The leader renews every retryPeriod; it may write until (send time of the
 *   last successful renewal) + renewDeadline, and steps down the moment that
 *   passes. A renewal that the server answered without a new
 *   resourceVersion (no-op) does not count. Losing never ends the core: it
 *   goes back to standby.
 * - Standbys send nothing while the watch is up; polling at retryPeriod
 *   (jittered) only while it is broken.
 * - Clock jumps (negative or larger than jump_ns): step down, stop acting,
 *   restart the expiry clock and act again only after a fresh GET.
 * - Shutdown: step down at once, GET the lock fresh, and only if the holder
 *   is still us write holder "" / leaseDurationSeconds 1 (transitions kept);
 *   409 means GET again; everything bounded by renewDeadline.
 * - Planned handover: a leader that sees preferredHolder naming someone else
 *   releases at its next renewal; standbys other than the preferred one let
 *   the released lock lie for its (1 s) duration first.
 *
 * At most one request is in flight at a time. Not thread-safe: one core per
 * elector thread.
 */
#ifndef ELECTION_CORE_H
#define ELECTION_CORE_H

#include "election_types.h"

#include <stddef.h>

struct election_core;

/* Monotonic time (judging) and wall time (written into records). */
struct election_now {
    int64_t mono_ns;
    int64_t wall_ns;
};

/* Creates a core for |cfg| (validated by the caller) that publishes to
 * |guard| (initialised by the caller, outlives the core). NULL on ENOMEM. */
struct election_core *election_core_new(const struct election_config *cfg,
                                        struct election_guard *guard);
void election_core_free(struct election_core *c);

/* Starts electing: the first action is a GET of the lock. */
void election_core_start(struct election_core *c, struct election_now now);

/* Timer: call at (or after) election_core_next_wakeup(). */
void election_core_tick(struct election_core *c, struct election_now now);

/* The watch delivered |obs| (ADDED/MODIFIED: found; DELETED: not found). */
void election_core_observe(struct election_core *c, struct election_now now,
                           const struct election_observation *obs);

/* The watch is (up=true) established and delivering, or broken. */
void election_core_watch_state(struct election_core *c, struct election_now now, bool up);

/* Request |req_id| finished with |outcome|. |obs| is the object the server
 * returned (OK), or NULL. Results of cancelled or unknown requests are
 * counted and their object, if any, is treated as an observation. */
void election_core_result(struct election_core *c, struct election_now now, uint64_t req_id,
                          enum election_outcome outcome, const struct election_observation *obs);

/* The I/O side proved that the process of |holder| is dead (its peer
 * connection was closed by that host's kernel, and a new one was refused
 * or answered by another identity) while the lock record it knew was
 * version |rv|. If the record the core holds now is that very version
 * and names that holder (someone else), while standing by, its lease
 * counts as over: the lock is taken at once (with |rv| as the
 * precondition, so a renewal that lands meanwhile wins). Anything else,
 * and any later version, voids the proof: the lease rules apply. */
void election_core_holder_dead(struct election_core *c, struct election_now now, const char *holder,
                               const char *rv);

/* Asks the core to release the lock (if ours) and finish; ends with a DONE
 * action within renewDeadline. */
void election_core_shutdown(struct election_core *c, struct election_now now);

/* Pops the next action into *out. Returns 1, or 0 when the queue is empty. */
int election_core_next_action(struct election_core *c, struct election_action *out);

/* Monotonic time at which election_core_tick() is wanted. Never later than
 * one retryPeriod after the last input (the heartbeat that makes clock
 * jumps detectable). */
int64_t election_core_next_wakeup(const struct election_core *c);

/* State, for logs, metrics and tests. */
enum election_role election_core_role(const struct election_core *c);
uint64_t election_core_term(const struct election_core *c);
bool election_core_done(const struct election_core *c);
/* Holder of the last observation ("" if none or released). */
const char *election_core_holder(const struct election_core *c);
/* Last observation; NULL before the first one. */
const struct election_observation *election_core_observed(const struct election_core *c);
int64_t election_core_observed_time(const struct election_core *c);
/* Leader only: monotonic deadline of safe writes (0 when standby). */
int64_t election_core_safe_deadline(const struct election_core *c);
const struct election_core_stats *election_core_stats(const struct election_core *c);

/* Names for logs. */
const char *election_stop_reason_name(enum election_stop_reason r);
const char *election_purpose_name(enum election_purpose p);
const char *election_outcome_name(enum election_outcome o);
const char *election_takeover_name(enum election_takeover k);

#endif
