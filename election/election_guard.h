/*
 * election_guard: the write guard that every leader-only writer consults.
 *
 * The elector thread publishes (deadline, term) when it acquires or renews
 * and clears the deadline when it steps down. Writers on any thread call
 * election_guard_allow() right before each write: it says no when we are
 * not the leader or when less than the margin of safe time remains, and
 * otherwise hands back the timeout the write must use so that it cannot
 * outlive the safe window. The deadline is on election_clock_ns() (CLOCK_BOOTTIME) and judged by
 * the reader, so a writer that wakes up after a pause (SIGSTOP, GC-like
 * stalls, a wedged elector thread) is refused even before the elector has
 * noticed anything.
 *
 * Thread-safe: one writer (the elector thread), any number of readers.
 */
#ifndef ELECTION_GUARD_H
#define ELECTION_GUARD_H

#include "election_types.h"

/* Initialises |g| as "not leader" with the given margin. */
void election_guard_init(struct election_guard *g, int64_t margin_ns);

/* Elector side: we lead |term| and writes are safe until |deadline_ns|
 * (monotonic). |renew_mono_ns| / |renew_wall_ns| is the send time of the
 * renewal that set the deadline. */
void election_guard_publish(struct election_guard *g, uint64_t term, int64_t deadline_ns,
                            int64_t renew_mono_ns, int64_t renew_wall_ns);

/* Elector side: we no longer lead. Writes are refused from now on. */
void election_guard_clear(struct election_guard *g);

/* Writer side, at monotonic time |now_ns|: returns true if a write may be
 * sent now, and then sets *timeout_ns (if not NULL) to the time the write may
 * take at most (the remaining safe time) and *term (if not NULL) to the
 * current term. Returns false when not leader or when less than the margin
 * remains. */
bool election_guard_check(struct election_guard *g, int64_t now_ns, int64_t *timeout_ns,
                          uint64_t *term);

/* The election's clock: CLOCK_BOOTTIME, monotonic like CLOCK_MONOTONIC but
 * also counting system suspend, so a leader that was suspended finds its
 * safe time gone on resume. Nanoseconds. */
int64_t election_clock_ns(void);

/* election_guard_check() at election_clock_ns(). */
bool election_guard_allow(struct election_guard *g, int64_t *timeout_ns, uint64_t *term);

/* Right after a write has been queued (kube_patch() and friends return
 * before libcurl sends anything: it sends on the next loop turn), the
 * writer asks again: true if we still lead |term| with at least the margin
 * left. False means cancel the call (kube_call_cancel) — it has not been
 * sent. This closes the gap in which a process paused between the first
 * check and the queueing would otherwise send a stale write when resumed;
 * what remains is the time from here to libcurl's send in the next loop
 * turn. Any thread. */
bool election_guard_recheck(struct election_guard *g, uint64_t term);

/* A write that is about to leave, counted until election_guard_leave():
 * true (counted) if we still lead |term| with the margin left, false (not
 * counted) otherwise. The count goes up before the check, so a step-down
 * either refuses the write or sees it counted (election_guard_draining):
 * the elector releases the lock only once the writes let through in its
 * term ended, so the one it hands over to cannot see them land after it
 * took the lock. Any thread. */
bool election_guard_enter(struct election_guard *g, uint64_t term);
/* The write counted by election_guard_enter() ended (answered, failed,
 * cancelled). Any thread. */
void election_guard_leave(struct election_guard *g);
/* Elector side, after a step-down: true while writes counted by
 * election_guard_enter() have not ended and the safe deadline of the term
 * they were let through in (which bounds their timeouts) has not passed
 * at |now_ns|. */
bool election_guard_draining(struct election_guard *g, int64_t now_ns);
/* Current term if we lead (a writer compares it before and after a pass to
 * notice a lost and regained leadership); 0 when not leading. */
uint64_t election_guard_term(struct election_guard *g);

/* Health check (client-go's HealthzAdaptor): false when the elector believes
 * it leads but its last successful renewal is older than |lease_ns| +
 * |grace_ns| at |now_ns|. A standby is always healthy. */
bool election_guard_healthy(struct election_guard *g, int64_t now_ns, int64_t lease_ns,
                            int64_t grace_ns);

#endif
