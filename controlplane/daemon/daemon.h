/*
 * daemon: one replica of the control plane (`coxswain run`).
 *
 *   informers -> filters -> store -> debounced translation (worker thread)
 *     -> snapshot -> xDS server (every replica)
 *                 -> status writer + snapshot publisher (leader only)
 *   election thread -> leadership callbacks + write guard
 *   admin HTTP: /metrics, /healthz, /readyz, /debug/{snapshot,leader,config},
 *               /v3/discovery:*
 *
 * Everything but the elector and the translator worker runs on one libevent
 * loop (the calling thread). SIGTERM/SIGINT stop the writers, release the
 * lease, GOAWAY the xDS streams and return within --shutdown-grace.
 * Losing leadership never ends the process: the writers stop, xDS goes on.
 */
#ifndef DAEMON_H
#define DAEMON_H

#include "daemon_config.h"

/* Runs the daemon until a signal stops it. Returns the process exit code
 * (0 after a clean shutdown, 1 when start-up failed; the reason is logged). */
int daemon_run(struct daemon_config *cfg);

#endif
