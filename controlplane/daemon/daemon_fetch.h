/*
 * daemon_fetch: the whole Secrets and ConfigMaps that stored Gateways and
 * Upstreams reference, and only those.
 *
 * The Secret and ConfigMap informers list and watch metadata only
 * (PartialObjectMetadata): an object nothing references costs a few hundred
 * bytes however large its data, so a tenant's hundred 1 MB ConfigMaps cost
 * a replica nothing worth counting. When an object becomes referenced, and
 * whenever the metadata watch reports a change of a referenced object, it
 * is read in full: a list of that one name (fieldSelector metadata.name=,
 * which RBAC grants with the list verb the informers need anyway), capped
 * at KUBE_OBJECT_MAX. The whole copy then goes through the owner's feed
 * (filters, store) like an informer event; when the last reference goes
 * the copy is fed once more (the filters then drop it as unreferenced) and
 * freed. One read in flight per object; a change meanwhile reads it again
 * after; a failed read is retried with backoff (the client logs it).
 *
 * Main loop only.
 */
#ifndef DAEMON_FETCH_H
#define DAEMON_FETCH_H

#include "filter.h"
#include "kube_cache.h"
#include "kube_client.h"
#include "xlate_types.h"

#include <stddef.h>

struct daemon_fetch;

/* Hands a whole copy to the owner: |type| ADDED or MODIFIED for a read
 * copy (or one whose last reference went), DELETED when the object is
 * gone. |obj| is borrowed. */
typedef void (*daemon_fetch_feed_fn)(void *user, enum xlate_kind kind, enum filter_event_type type,
                                     struct kube_obj *obj);

/* Returns NULL when memory ran out. |idle| (may be NULL) runs each time the
 * last read in progress ends. */
struct daemon_fetch *daemon_fetch_new(struct kube_client *kc, daemon_fetch_feed_fn feed,
                                      void (*idle)(void *user), void *user);
/* Cancels every read; feeds nothing. */
void daemon_fetch_free(struct daemon_fetch *f);

/* |kind| |key| ("ns/name") became referenced (|referenced| 1: read it when
 * |present|, i.e. the metadata informer holds it; otherwise when it
 * appears) or is no longer (0: its copy is fed and freed). */
void daemon_fetch_ref(struct daemon_fetch *f, enum xlate_kind kind, const char *key, int referenced,
                      int present);

/* The metadata informer saw |kind| |key| added or changed (|gone| 0: read
 * it again if referenced) or deleted (1: its copy is fed as DELETED). */
void daemon_fetch_changed(struct daemon_fetch *f, enum xlate_kind kind, const char *key, int gone);

/* The whole copy of |kind| |key|, or NULL (not referenced, or not read). */
struct kube_obj *daemon_fetch_get(const struct daemon_fetch *f, enum xlate_kind kind,
                                  const char *key);

/* Calls |fn| for every whole copy of |kind| in namespace |ns|. */
void daemon_fetch_foreach_ns(const struct daemon_fetch *f, enum xlate_kind kind, const char *ns,
                             void (*fn)(void *ctx, struct kube_obj *o), void *ctx);

/* Reads in flight (not those waiting for a retry after a failure). */
size_t daemon_fetch_pending(const struct daemon_fetch *f);

/* Whole copies held, and reads made so far. */
struct daemon_fetch_stats {
    size_t held;
    uint64_t reads, failures;
};
void daemon_fetch_stats(const struct daemon_fetch *f, struct daemon_fetch_stats *out);

#endif
