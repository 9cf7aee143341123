/*
 * admin: the daemon's admin HTTP server (evhttp on the main loop).
 *
 * Serves /metrics (the cx_metrics registry plus process metrics), /healthz
 * and /readyz (named checks registered by the modules; `?verbose` lists
 * each), and whatever debug handlers modules mount (/debug/snapshot,
 * /debug/leader, /v3/discovery:*...). Main-loop thread only.
 */
#ifndef ADMIN_H
#define ADMIN_H

#include "cx_buf.h"

#include <event2/event.h>
#include <event2/http.h>
#include <stddef.h>

/* Limits on what one client can make the admin server hold or wait for. */
#define ADMIN_MAX_HEADERS             8192      /* request line + headers, bytes */
#define ADMIN_MAX_BODY                (1 << 20) /* request body, bytes */
#define ADMIN_TIMEOUT_S_DEFAULT       10        /* silence allowed while sending / reading */
#define ADMIN_MAX_CONNECTIONS_DEFAULT 256       /* open connections */
#define ADMIN_REQUEST_DEADLINE_S_DEFAULT             \
    30 /* a request, from its connection's start (or \
        * the previous request) to its answer's end */

struct admin_server;

/* A check: returns 0 when healthy/ready, else -1 and appends a reason to
 * |why|; 1 passes with a warning in |why| (shown by ?verbose). Called on
 * the main loop for every probe. */
typedef int (*admin_check_fn)(void *arg, struct cx_buf *why);

/* Listens on |listen| ("host:port", port 0 picks a free one). Returns the
 * server, or NULL with a message in |err|. */
struct admin_server *admin_new(struct event_base *base, const char *listen, char *err,
                               size_t errlen);

/* Seconds of silence allowed while a client sends its request or reads
 * the answer (--admin-timeout); the connection is closed past it. evhttp
 * times each read, so a client that trickles bytes keeps its connection. */
void admin_set_timeout(struct admin_server *a, int timeout_s);

/* At most |max_connections| open connections (0: keep): a new one past it
 * closes the oldest connection still waiting for an answer. A request must
 * arrive and its answer leave within |request_deadline_s| of the
 * connection's start or its previous request (<= 0: keep), however slowly
 * the bytes trickle; the connection is closed past it. */
void admin_set_limits(struct admin_server *a, unsigned max_connections, int request_deadline_s);

/* Open connections now (swept once a second). */
unsigned admin_connections(const struct admin_server *a);

/* The port actually bound. */
int admin_port(const struct admin_server *a);

int admin_add_health_check(struct admin_server *a, const char *name, admin_check_fn fn, void *arg);
int admin_add_ready_check(struct admin_server *a, const char *name, admin_check_fn fn, void *arg);

/* Mounts |cb| at exactly |path| (evhttp semantics). Returns 0 or -1 if the
 * path is taken. */
int admin_handle(struct admin_server *a, const char *path,
                 void (*cb)(struct evhttp_request *req, void *arg), void *arg);

/* Mounts |cb| for every path that starts with |prefix| and is not mounted
 * exactly. */
int admin_handle_prefix(struct admin_server *a, const char *prefix,
                        void (*cb)(struct evhttp_request *req, void *arg), void *arg);

/* Protection of /debug/... and /v3/discovery:...: a loopback peer passes;
 * any other needs `Authorization: Bearer <token>` (401 without) that |fn|
 * allows for `get` on the request's path. |fn| calls |done| once, now or
 * later from the loop, with |ticket|: allowed, or not with a reason (403;
 * 503 when |unavailable|: the reviews could not be made). /metrics,
 * /healthz, /readyz stay open. Without |trust_loopback| loopback peers
 * need a token too. */
typedef void (*admin_authz_done_fn)(void *ticket, int allowed, const char *why, int unavailable);
typedef int (*admin_authz_fn)(void *arg, const char *token, const char *path,
                              admin_authz_done_fn done, void *ticket);
void admin_protect(struct admin_server *a, admin_authz_fn fn, void *arg, int trust_loopback);

/* Sends |body| with |code| and |content_type|. */
void admin_reply(struct evhttp_request *req, int code, const char *content_type, const char *body,
                 size_t len);

/* Registers process_* metrics (RSS, CPU, fds, start time) and
 * coxswain_build_info. Idempotent. */
void admin_register_process_metrics(void);

void admin_free(struct admin_server *a);

#endif
