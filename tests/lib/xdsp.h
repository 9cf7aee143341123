/*
 * xdsp: child processes for e2e tests (gRPC backends and xDS client drivers
 * in Python or Node) talking a line protocol over stdin/stdout, read while
 * the caller's event loop keeps running (the xDS server under test lives in
 * the same loop). The child's stderr goes to the test's stderr.
 */
#ifndef XDSP_H
#define XDSP_H

#include <event2/event.h>
#include <stddef.h>

struct xdsp;

/* Starts argv[0] (searched in PATH) with |env| ("K=V" strings, NULL-ended,
 * may be NULL) added to the environment. NULL on failure. */
struct xdsp *xdsp_spawn(char *const argv[], char *const env[]);

/* Writes |line| plus a newline to the child's stdin. 0/-1. */
int xdsp_send(struct xdsp *p, const char *line);

/* Runs |base|'s loop until the child printed a whole line (copied to |out|
 * without the newline, cut at |cap|) or |timeout_ms| passed. Returns 1, 0 on
 * timeout, -1 if the child closed its stdout. */
int xdsp_readline(struct xdsp *p, struct event_base *base, char *out, size_t cap, int timeout_ms);

/* Closes stdin, waits up to 2 s, then kills. Returns the exit status. */
int xdsp_stop(struct xdsp *p);

#endif
