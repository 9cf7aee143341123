/*
 * store: the daemon's filtered, indexed view of what the translator reads —
 * per kind (Gateway, VirtualService, RouteTable, Upstream, Service,
 * EndpointSlice) the objects the filters let through, each with its
 * change-significance digest, found by "namespace/name".
 *
 * The store holds a reference to each immutable kube_obj the informers
 * built (which holds its record, store_obj.h, or, when it could not be
 * decoded, its JSON); it keeps the object of the last *significant* change (an
 * insignificant update — a status write, a resourceVersion bump — leaves the
 * stored copy alone), which is the generation the translator reports as
 * observedGeneration.
 *
 * store_view_new() takes an immutable snapshot of the whole store (one
 * reference per object) that the translator worker reads on its own thread
 * while the main loop keeps changing the store. A view also carries what
 * changed since the previous view (coalesced per object), so the worker can
 * translate the changes alone (xlate_run_changes) and keep the full view
 * for a pass that must start over.
 *
 * Main loop only, except store_view_* (refcounted, any thread).
 */
#ifndef STORE_H
#define STORE_H

#include "kube_cache.h"
#include "xlate_types.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct store;

struct store_entry {
    struct kube_obj *obj; /* one reference held by the store */
    uint64_t digest;      /* filter_digest of obj */
};

/* An empty store, or NULL if memory ran out. */
struct store *store_new(void);
void store_free(struct store *s);

/* The entry of |kind| at |key| ("namespace/name"), borrowed, or NULL. */
const struct store_entry *store_get(const struct store *s, enum xlate_kind kind, const char *key);

/* Adds or replaces the entry at obj->key; the store takes over the caller's
 * reference to |obj| on success. Returns 0, or -1 if memory ran out (the
 * caller keeps its reference). Bumps the generation. */
__attribute__((warn_unused_result)) int store_put(struct store *s, enum xlate_kind kind,
                                                  struct kube_obj *obj, uint64_t digest);

/* Removes |key|. Returns 1 if it was there (generation bumped), else 0. */
int store_remove(struct store *s, enum xlate_kind kind, const char *key);

size_t store_len(const struct store *s, enum xlate_kind kind);
size_t store_total(const struct store *s);

/* Incremented by every put and remove: a view is current while its
 * generation equals this. */
uint64_t store_generation(const struct store *s);

/* Calls |fn| for every entry of |kind| (borrowed; the store must not change
 * meanwhile); stops when |fn| returns non-zero. */
void store_foreach(const struct store *s, enum xlate_kind kind,
                   int (*fn)(void *user, const struct store_entry *e), void *user);

/* An immutable view: every stored object (a reference each) as translator
 * input, and the changes since the previous view. */
struct store_view {
    atomic_int refs;
    uint64_t generation; /* store generation it was taken at */
    size_t n;
    /* n entries: rec is objs[i]'s record (store_obj.h), or obj its JSON */
    struct xlate_object *objects;
    struct kube_obj **objs; /* n references */
    /* Since the previous view, one per object: adds/updates (obj set) and
     * deletions (namespace and name set). changes_complete is 0 when a
     * change could not be recorded (memory): translate the full view. */
    int changes_complete;
    size_t nchanges;
    struct xlate_change *changes;
    struct kube_obj **change_objs; /* references; NULL for deletions */
    char **change_keys;            /* deletions: "ns\0name" (the strings above) */
};

/* Takes a view (one reference for the caller) and moves the change log into
 * it (the next view carries the changes after this one), or NULL if memory
 * ran out (the log is kept then). */
struct store_view *store_view_new(struct store *s);
struct store_view *store_view_ref(struct store_view *v);
/* Drops a reference; the last one releases the objects. NULL is ignored. */
void store_view_unref(struct store_view *v);

/* The translator's input for |v|. */
static inline struct xlate_input store_view_input(const struct store_view *v)
{
    return (struct xlate_input){.objects = v->objects, .n = v->n};
}

#endif
