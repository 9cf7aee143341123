/*
 * publish: the snapshot publisher. The leader keeps one ProxySnapshot per
 * Gateway (node group) in the control plane's namespace, so operators (and
 * standbys) can see what every proxy of that Gateway is being served:
 *
 *   apiVersion: coxswain.dev/v1
 *   kind: ProxySnapshot
 *   metadata: {name: <gateway namespace>.<gateway name>, namespace: <--namespace>,
 *              labels: {app.kubernetes.io/managed-by: coxswain}}
 *   spec:
 *     gateway: ns/name
 *     mode: envoy | proxyless
 *     version: <16 hex: hash of the mode and the four type versions>
 *     versions: {listeners: <version>, routes: ..., clusters: ..., endpoints: ...}
 *     counts: {listeners: <n>, routes: ..., clusters: ..., endpoints: ...}
 *     snapshot: <gzip of the group's JSON (as /debug/snapshot shows it), base64>
 *     snapshotBytes: <bytes of that JSON>
 *     truncated: false   # true when the encoded snapshot exceeds the cap: no snapshot
 *
 * A ProxySnapshot is created when its Gateway appears, replaced when the
 * version changes and deleted when the Gateway leaves the snapshot; nothing
 * is written while the versions agree. The snapshot JSON is rendered and
 * compressed on the encoder thread (publish_encode.h), never on the main
 * loop. Every write goes through the write
 * guard (its timeout bounded by the guard) and a token bucket; conflicts
 * wait for the informer.
 *
 * Every replica (leader or standby) compares its own version of each
 * Gateway with the published one: coxswain_snapshot_consistent{gateway}
 * is 1 when they agree.
 *
 * Main loop only.
 */
#ifndef PUBLISH_H
#define PUBLISH_H

#include "leader_guard.h"
#include "kube_cache.h"
#include "kube_client.h"
#include "publish_encode.h"
#include "xlate_snapshot_types.h"

#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>

/* Default cap on the encoded (gzip+base64) snapshot carried in spec. */
#define PUBLISH_MAX_BYTES_DEFAULT ((size_t)512 << 10)
/* Label every published ProxySnapshot carries. */
#define PUBLISH_LABEL_KEY   "app.kubernetes.io/managed-by"
#define PUBLISH_LABEL_VALUE "coxswain"

struct publish;

struct publish_opts {
    struct kube_client *kc;
    const char *namespace; /* where ProxySnapshots live (copied) */
    struct leader_guard guard;
    size_t max_bytes; /* cap on spec.snapshot; 0: PUBLISH_MAX_BYTES_DEFAULT */
    double qps, burst;
    /* The informer's ProxySnapshot |name| in the namespace (borrowed) or NULL. */
    struct kube_obj *(*lookup)(void *user, const char *name);
    /* Calls |fn| for every ProxySnapshot the informer holds. */
    void (*foreach)(void *user, int (*fn)(void *ctx, struct kube_obj *o), void *ctx);
    void *user;
};

struct publish_stats {
    uint64_t creates, updates, deletes; /* successful writes */
    uint64_t conflicts, failures, refused;
    uint64_t truncated; /* writes whose snapshot did not fit */
    size_t queued, inflight;
    size_t groups, consistent; /* of our groups, how many match the published version */
    int leading;
};

struct publish *publish_new(struct event_base *base, const struct publish_opts *o);
void publish_free(struct publish *p);

/* The current snapshot (the publisher keeps a reference). Updates the
 * consistency gauges; when leading, queues the Gateways whose version
 * changed and those that disappeared. */
void publish_set_snapshot(struct publish *p, struct xlate_snapshot *snap);

/* Leadership: start reconciles everything against the informer cache; stop
 * cancels in-flight writes and forgets the queue. */
void publish_start(struct publish *p, uint64_t term);
void publish_stop(struct publish *p);

/* The ProxySnapshot informer saw a change of |name| (any event). */
void publish_object_changed(struct publish *p, const char *name);

void publish_stats(const struct publish *p, struct publish_stats *out);

/* 1 when leading with a snapshot and nothing queued or in flight. */
int publish_idle(const struct publish *p);

/* ---- pure helpers (tests) ------------------------------------------------------- */

/* The ProxySnapshot name of Gateway |group| ("ns/name" -> "ns.name") into
 * |out|. Returns 0 or -1 (does not fit, or not "ns/name"). */
int publish_name(const char *group, char *out, size_t n);

/* What the leader reads of a ProxySnapshot a previous leader (or anyone
 * with write access to the namespace) wrote: its spec.version ("" when
 * absent or not a string; NULL |o| too), and whether it carries our
 * managed-by label (only those are ever deleted). */
const char *publish_obj_version(const struct kube_obj *o);
int publish_obj_is_ours(const struct kube_obj *o);

#endif
