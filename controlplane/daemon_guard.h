/*
 * daemon_guard: what a leader-only writer (status writer, snapshot
 * publisher) asks right before every write. The daemon backs it with the
 * elector's write guard (election_guard_allow); tests back it with a flag.
 */
#ifndef DAEMON_GUARD_H
#define DAEMON_GUARD_H

#include <stdbool.h>
#include <stdint.h>

struct daemon_guard {
    /* True if a write may be sent now; then *timeout_ns is the longest the
     * write may take (its deadline) and *term the current leadership term.
     * Any thread; cheap (atomics). */
    bool (*allow)(void *arg, int64_t *timeout_ns, uint64_t *term);
    void *arg;
};

/* The guard's answer as a per-attempt timeout in milliseconds (>= 1). */
static inline int64_t daemon_guard_timeout_ms(int64_t timeout_ns)
{
    int64_t ms = timeout_ns / 1000000;
    return ms < 1 ? 1 : ms;
}

#endif
