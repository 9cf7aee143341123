/*
 * kube_cache: the informer's store. Refcounted immutable objects indexed by
 * namespace/name, plus optional indexes by namespace and by label value.
 *
 * A kube_obj never changes once built: an update replaces the object, so a
 * reader (the translator worker, on another thread) that holds a reference
 * keeps a consistent view without locks. References are atomic; the cache
 * itself is owned by one thread (the informer's event_base).
 */
#ifndef KUBE_CACHE_H
#define KUBE_CACHE_H

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stddef.h>

/* What an informer's owner keeps of an object instead of its JSON
 * (kube_informer_opts.decode): how to free it and read its labels. */
struct kube_rec_ops {
    void (*free)(void *rec);
    /* metadata.labels[key] or NULL */
    const char *(*label)(const void *rec, const char *key);
};

struct kube_obj {
    atomic_int refs;
    /* The whole object, never modified after kube_obj_new; NULL once
     * kube_obj_keep_rec replaced it with its decoded form. */
    cJSON *json;
    void *rec; /* that decoded form (owned), or NULL */
    const struct kube_rec_ops *rec_ops;
    /* copies, in the object's own memory (valid without |json|) */
    const char *ns; /* "" for cluster-scoped objects */
    const char *name;
    const char *uid; /* "" when absent */
    const char *rv;  /* metadata.resourceVersion, "" when absent */
    char key[];      /* "ns/name", or "name" for cluster-scoped objects */
};

/* Wraps |json| (taking ownership on success) in an object with one
 * reference. Returns NULL (json untouched) if it has no metadata.name or
 * memory ran out. */
struct kube_obj *kube_obj_new(cJSON *json);
/* Replaces |o|'s JSON (freed now) with |rec|, its decoded form, which the
 * object then owns (freed with |ops|->free). Only while the caller holds
 * the one reference, before anyone else sees |o|. */
void kube_obj_keep_rec(struct kube_obj *o, void *rec, const struct kube_rec_ops *ops);
/* The most one object may take (its JSON, roughly: kube_json_size). etcd
 * keeps objects under ~1.5 MiB and a ConfigMap's data under 1 MiB; base64
 * and JSON escapes stay well inside this. Anything larger is refused. */
#define KUBE_OBJECT_MAX ((size_t)3 << 20)

/* About the bytes |j| takes as JSON (keys and strings at their length, two
 * quotes each, 8 per number or literal, 2 per container and 1 per
 * separator); stops counting once past |cap| and returns a value > |cap|.
 * Bounded by cJSON's nesting limit. */
size_t kube_json_size(const cJSON *j, size_t cap);

/* Reduces |json| in place to what a PartialObjectMetadata carries: kind
 * "PartialObjectMetadata", apiVersion "meta.k8s.io/v1" and metadata (for a
 * server that answered a metadata request with whole objects). Returns 0,
 * or -1 when memory ran out or |json| has no metadata object. */
int kube_obj_metadata_only(cJSON *json);

/* Removes metadata.managedFields and the kubectl last-applied-configuration
 * annotation from |json| (before kube_obj_new; objects are immutable after).
 * Drops metadata.annotations when that leaves it empty. */
void kube_obj_trim(cJSON *json);
/* Makes an arriving object (a list item or a watch event's object) what a
 * cache keeps: cut to its metadata when |metadata_only|, else trimmed when
 * |trim|; then kind and apiVersion filled in when absent (list items carry
 * neither) from |kind| and |api_version|. Returns 0, or -1 when it is over
 * |max_object| (kube_json_size; *size_out tells the size, capped just past
 * the limit): the caller treats it as absent. */
int kube_obj_admit(cJSON *json, int metadata_only, int trim, size_t max_object, const char *kind,
                   const char *api_version, size_t *size_out);
struct kube_obj *kube_obj_ref(struct kube_obj *o);
/* Drops a reference; the last one frees the object. NULL is ignored. */
void kube_obj_unref(struct kube_obj *o);
/* metadata.labels[key] or NULL (from the JSON, or the decoded form). */
const char *kube_obj_label(const struct kube_obj *o, const char *key);

/* Writes "ns/name" (or "name") into |out| (|n| bytes). Returns 0 or -1 if
 * it does not fit. */
int kube_obj_key(const char *ns, const char *name, char *out, size_t n);

struct kube_cache;

struct kube_cache *kube_cache_new(void);
/* Drops the cache's references and frees it. */
void kube_cache_free(struct kube_cache *c);
size_t kube_cache_len(const struct kube_cache *c);

/* Adds an index on the label |key| (before or after objects arrive).
 * Returns 0 or -1 (memory, or more than KUBE_CACHE_MAX_LABEL_INDEXES). */
#define KUBE_CACHE_MAX_LABEL_INDEXES 8
int kube_cache_index_label(struct kube_cache *c, const char *key);

/* The object at |key| ("ns/name"), borrowed (take a ref to keep it), or NULL. */
struct kube_obj *kube_cache_get(const struct kube_cache *c, const char *key);

/* Stores |o| (the cache takes over the caller's reference) under its key.
 * Returns the object it replaced (the caller now owns that reference) or
 * NULL. Returns |o| itself, not stored, if memory ran out. */
struct kube_obj *kube_cache_put(struct kube_cache *c, struct kube_obj *o);

/* Removes |key|; returns the object (caller owns the reference) or NULL. */
struct kube_obj *kube_cache_remove(struct kube_cache *c, const char *key);

/* Calls |fn| for every object (borrowed); stops early when fn returns
 * non-zero. The cache must not change meanwhile. Returns objects visited. */
typedef int (*kube_cache_fn)(void *user_data, struct kube_obj *o);
size_t kube_cache_foreach(const struct kube_cache *c, kube_cache_fn fn, void *user_data);
/* Objects of namespace |ns| only. */
size_t kube_cache_foreach_ns(const struct kube_cache *c, const char *ns, kube_cache_fn fn,
                             void *user_data);
/* Objects whose label |key| equals |value|; |key| must be indexed
 * (returns 0 visits otherwise). */
size_t kube_cache_foreach_label(const struct kube_cache *c, const char *key, const char *value,
                                kube_cache_fn fn, void *user_data);

/* Every object with a reference taken, in key order: an immutable view for
 * another thread. Caller frees with kube_cache_list_free. NULL only if
 * memory ran out (or the cache is empty: *n = 0). */
struct kube_obj **kube_cache_list(const struct kube_cache *c, size_t *n);
void kube_cache_list_free(struct kube_obj **list, size_t n);

#endif
