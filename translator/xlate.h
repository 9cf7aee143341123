/*
 * xlate: the translator. Gateways, VirtualServices, RouteTables, Upstreams,
 * Services and EndpointSlices in; an xDS snapshot (per Gateway: Listeners,
 * RouteConfigurations, Clusters, ClusterLoadAssignments, each type versioned
 * by a content hash) plus a report for every coxswain object out.
 *
 * Pure: no I/O, no clocks, no globals, no threads. Identical input gives a
 * byte-identical snapshot (same versions) whatever the input order, so every
 * replica serves the same thing.
 *
 * Incremental: the context remembers each object's parsed form and results
 * by digest; a pass re-translates only what changed and what depends on it,
 * and unchanged xDS resources keep their encoded bytes (the same
 * struct xds_resource, shared between consecutive snapshots).
 *
 * Usage (translator worker thread; one context per thread at a time):
 *
 *   struct xlate_ctx *ctx = xlate_ctx_new();
 *   struct xlate_snapshot *snap;
 *   if (xlate_run(ctx, &full_view, &snap, NULL) == 0)   // first pass
 *       publish(snap);                                  // takes the reference
 *   ...
 *   if (xlate_run_changes(ctx, changes, n, &snap, NULL) == 0)  // later passes
 *       publish(snap);
 *   else if (xlate_run(ctx, &full_view, &snap, NULL) == 0)     // recovery
 *       publish(snap);
 *   ...
 *   xlate_ctx_free(ctx);          // snapshots stay valid
 *
 * Node groups: one per accepted Gateway, named "namespace/name". Envoy mode:
 * Listener "namespace/name" (socket, HCM with RDS "namespace/name", router
 * last; with spec.tls one filter chain per certificate, chosen by SNI). Proxyless mode: one API
 * Listener per exact virtual-host domain. Clusters and ClusterLoadAssignments are named
 * "namespace/name" of the Upstream.
 */
#ifndef XLATE_H
#define XLATE_H

#include "xlate_snapshot.h"
#include "xlate_types.h"

#include "cx_flags.h"

struct xlate_ctx;

/* A new, empty context with the default budgets (caller frees with
 * xlate_ctx_free), or NULL. */
struct xlate_ctx *xlate_ctx_new(void);
/* The same with budgets |lim| (NULL, or a field 0: the defaults), fixed
 * for the context's life. */
struct xlate_ctx *xlate_ctx_new_limits(const struct xlate_limits *lim);

/* The default budgets. */
void xlate_limits_default(struct xlate_limits *lim);
/* The budgets as flags (--max-routes-per-virtual-service, ...: the
 * XLATE_LIMITS_FLAGS entries written to |out|, targets in |lim|, defaults
 * and environment variables set) for `coxswain run` and `coxswain
 * translate`. Returns the number written, 0 if |max| is too small. */
#define XLATE_LIMITS_FLAGS 6
size_t xlate_limits_flags(struct xlate_limits *lim, struct cx_flag *out, size_t max);
void xlate_ctx_free(struct xlate_ctx *ctx);
/* Gives back to the system the memory the translator keeps for its next
 * passes' big buffers (a few freed mappings, 64 MiB at most): after a full
 * pass, with malloc_trim. Any thread. */
void xlate_trim(void);

/* Translates |in| into a new snapshot (*out, one reference for the caller).
 * Objects are borrowed for the call only. |stats| may be NULL. Returns 0, or
 * -1 when memory ran out (*out is NULL; the context stays usable and the
 * next pass redoes what was lost). */
__attribute__((warn_unused_result)) int xlate_run(struct xlate_ctx *ctx,
                                                  const struct xlate_input *in,
                                                  struct xlate_snapshot **out,
                                                  struct xlate_stats *stats);

/* Translates the previous pass's world with |changes| applied (objects not
 * mentioned are as they were): the cheap path for the daemon, which knows
 * what its informers changed since the last pass. Same output as xlate_run
 * on the full, changed view. Returns 0, or -1 when memory ran out or the
 * context has no complete view yet (after a failed pass): call xlate_run
 * with the full view then. */
__attribute__((warn_unused_result)) int xlate_run_changes(struct xlate_ctx *ctx,
                                                          const struct xlate_change *changes,
                                                          size_t n, struct xlate_snapshot **out,
                                                          struct xlate_stats *stats);

/* The same, at evaluation time |now| (see struct xlate_input); plain
 * xlate_run_changes keeps the previous pass's time. */
__attribute__((warn_unused_result)) int
xlate_run_changes_at(struct xlate_ctx *ctx, const struct xlate_change *changes, size_t n,
                     int64_t now, struct xlate_snapshot **out, struct xlate_stats *stats);

/* The digest the translator computes when an input carries none: FNV-1a 64
 * of the canonical JSON of every top-level member but status, metadata
 * reduced to creationTimestamp, generation, labels, name, namespace, uid
 * (and annotations for Secrets and ConfigMaps, where coxswain reads one).
 * Never 0. */
uint64_t xlate_digest(const cJSON *obj);

/* Decodes |obj| once into the form the translator reads (xlate_record.h):
 * every field the translator, the reports and the status writer need,
 * validated (problems become the object's report), in one arena; |obj| is
 * not referenced afterwards and may be freed at once. |kind| may be
 * XLATE_KIND_UNKNOWN (taken from apiVersion/kind); |digest| 0: computed
 * (xlate_digest) during the decode. |lim|: the budgets of the contexts the
 * record will be given to (NULL: the defaults); the decode reads the regex
 * program-size limit, and a context whose limit differs refuses the record
 * (its pass fails) rather than translate it under another budget. |hint|, optional, is the caller's
 * per-kind memory: in, the bytes the kind's records needed so far; out,
 * updated (objects of a kind are alike, so most records are then one
 * allocation). Returns a record with one reference (the caller's), or NULL
 * if |obj| is not an object of a kind the translator reads, its name
 * cannot exist in Kubernetes, or memory ran out. Any thread. */
struct xlate_record *xlate_record_new(enum xlate_kind kind, const cJSON *obj, uint64_t digest,
                                      const struct xlate_limits *lim, size_t *hint);
/* Another reference to |r| (returned; NULL gives NULL); atomic, any thread. */
struct xlate_record *xlate_record_ref(const struct xlate_record *r);
/* Drops a reference; the last frees the record. NULL is ignored. */
void xlate_record_unref(const struct xlate_record *r);
enum xlate_kind xlate_record_kind(const struct xlate_record *r);
uint64_t xlate_record_digest(const struct xlate_record *r);
/* "namespace/name" */
const char *xlate_record_key(const struct xlate_record *r);
/* Memory the record holds (its arena's chunks). */
size_t xlate_record_bytes(const struct xlate_record *r);

/* Kind helpers (also in xlate_api.h). */
enum xlate_kind xlate_kind_of(const cJSON *obj);
const char *xlate_kind_name(enum xlate_kind k);

#endif
