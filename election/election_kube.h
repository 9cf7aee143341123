/*
 * election_kube: the small Kubernetes interface the elector depends on, and
 * nothing more: get, create, update, list and watch of the lock object,
 * creating Events, and cancelling. election/ never includes the daemon's
 * Kubernetes client; the daemon implements this interface over it
 * (controlplane/daemon/daemon_elect_kube.h), a test may implement it over
 * anything.
 *
 * A connection is opened on an event_base (the elector thread's own). Every
 * operation, and every callback, runs on that base's thread. Callbacks never
 * run from inside the call that started the request (a callback may start
 * new requests, cancel calls and stop watches). Each request is one attempt:
 * the elector decides about retries and their backoff itself.
 */
#ifndef ELECTION_KUBE_H
#define ELECTION_KUBE_H

#include "election_types.h"

#include <cjson/cJSON.h>
#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>

/* The resources the elector touches. */
enum election_kube_res {
    ELECTION_RES_LEASES = 0,     /* coordination.k8s.io/v1 leases */
    ELECTION_RES_CONFIGMAPS = 1, /* v1 configmaps */
    ELECTION_RES_EVENTS = 2,     /* v1 events */
};

#define ELECTION_KUBE_REASON_MAX  64
#define ELECTION_KUBE_MESSAGE_MAX 512

/* The outcome of a request (or why a watch ended), valid during the
 * callback only. On success |cls| is ELECTION_ERR_NONE and |object| the
 * decoded body (NULL if empty); a callback that keeps it sets it to NULL
 * and owns it. */
struct election_kube_result {
    enum election_err_class cls;
    int http_status;                         /* 0 without an answer */
    int64_t retry_after_ns;                  /* -1 when the server sent none */
    char reason[ELECTION_KUBE_REASON_MAX];   /* Status.reason, may be "" */
    char message[ELECTION_KUBE_MESSAGE_MAX]; /* Status.message or a transport text */
    cJSON *object;
    int64_t sent_mono_ns; /* CLOCK_MONOTONIC when the attempt started (0: never sent) */
    int64_t done_mono_ns; /* when its answer arrived */
};

typedef void (*election_kube_done_fn)(struct election_kube_result *r, void *user_data);

enum election_watch_ev {
    ELECTION_WATCH_ADDED = 0,
    ELECTION_WATCH_MODIFIED = 1,
    ELECTION_WATCH_DELETED = 2,
    ELECTION_WATCH_BOOKMARK = 3,
};

struct election_kube_watch_handlers {
    /* One event; takes ownership of |object|. May stop the watch. */
    void (*on_event)(void *user_data, enum election_watch_ev type, cJSON *object);
    /* The watch ended: |why->cls| ELECTION_ERR_NONE for a clean end of the
     * stream, ELECTION_ERR_EXPIRED for 410 (re-list), ELECTION_ERR_TIMEOUT
     * for a stall, anything else for an error answer or a broken
     * connection. The handle is gone after this returns. */
    void (*on_end)(void *user_data, const struct election_kube_result *why);
};

/* Opaque handles, defined by the implementation. */
struct election_kube_conn;
struct election_kube_call;
struct election_kube_watch;

/* Every request-starting operation returns a handle valid until its
 * callback starts, or NULL (no callback ever) when it cannot be built.
 * |ns| is the lock's namespace; |timeout_ms| bounds the one attempt. */
struct election_kube_ops {
    /* Opens a connection bound to |base|, sending |identity| and
     * |component| in its User-Agent. NULL with a message in |err|. */
    struct election_kube_conn *(*open)(void *impl, struct event_base *base, const char *identity,
                                       const char *component, char *err, size_t errlen);
    /* Cancels everything still open on |c| (no callbacks) and frees it. */
    void (*close)(struct election_kube_conn *c);
    struct election_kube_call *(*get)(struct election_kube_conn *c, enum election_kube_res res,
                                      const char *ns, const char *name, int64_t timeout_ms,
                                      election_kube_done_fn cb, void *user_data);
    /* POST |obj| (not taken). */
    struct election_kube_call *(*create)(struct election_kube_conn *c, enum election_kube_res res,
                                         const char *ns, const cJSON *obj, int64_t timeout_ms,
                                         election_kube_done_fn cb, void *user_data);
    /* PUT |obj| (not taken) to its metadata.name, with the
     * metadata.resourceVersion it carries as the precondition. */
    struct election_kube_call *(*update)(struct election_kube_conn *c, enum election_kube_res res,
                                         const char *ns, const cJSON *obj, int64_t timeout_ms,
                                         election_kube_done_fn cb, void *user_data);
    /* One list of |res| in |ns| with |field_selector| (no paging). */
    struct election_kube_call *(*list)(struct election_kube_conn *c, enum election_kube_res res,
                                       const char *ns, const char *field_selector,
                                       int64_t timeout_ms, election_kube_done_fn cb,
                                       void *user_data);
    /* A watch from |rv| with bookmarks, ended after |stall_ms| without a
     * byte. */
    struct election_kube_watch *(*watch)(struct election_kube_conn *c, enum election_kube_res res,
                                         const char *ns, const char *field_selector, const char *rv,
                                         int64_t stall_ms,
                                         const struct election_kube_watch_handlers *h,
                                         void *user_data);
    /* The callback of |call| will not run. Not valid once it has started. */
    void (*cancel)(struct election_kube_call *call);
    /* No callback of |w| runs afterwards. Safe from inside on_event. */
    void (*watch_stop)(struct election_kube_watch *w);
};

/* An implementation: its operations and its own state (for open). Both
 * outlive every elector opened with it. */
struct election_kube {
    const struct election_kube_ops *ops;
    void *impl;
};

#endif
