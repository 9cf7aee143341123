/*
 * store_obj: what the daemon keeps of an input object instead of its JSON.
 * The informer decodes each arriving Gateway, VirtualService, RouteTable,
 * Upstream, Service and EndpointSlice once (store_obj_decode, its
 * kube_informer_opts.decode) and frees the JSON right after; the store,
 * the filters, the translator, the status writer and the TLS references
 * read this:
 *
 *   - the translator's record (xlate_record.h: the object's fields in
 *     typed, compact form, its labels included), decoded by
 *     xlate_record_new — the one decode every new field goes through;
 *   - the change-significance digest (filter_digest), computed during the
 *     decode: the filters compare it and the store keeps it;
 *   - for the kinds whose status the leader writes, .status as compact
 *     JSON (the status writer compares it with the one it would write),
 *     one copy per distinct text (objects accepted together share it);
 *   - the Secrets and ConfigMaps it names (the caller's list: daemon_refs).
 *
 * Immutable once made, owned by its kube_obj (freed with it).
 */
#ifndef STORE_OBJ_H
#define STORE_OBJ_H

#include "cx_buf.h"
#include "kube_cache.h"
#include "xlate_types.h"

#include <stddef.h>
#include <stdint.h>

struct store_obj {
    struct xlate_record *rec; /* one reference */
    uint64_t digest;          /* filter_digest of the JSON it was decoded from */
    const char *status;       /* .status as compact JSON, shared by the objects whose
                               * status is the same text; NULL when absent or not kept */
    size_t nrefs;
    char **refs; /* "S/namespace/name" (Secret) or "C/namespace/name" (ConfigMap) */
};

/* Decoding state, one per thread: scratch memory and per-kind sizes. */
struct store_decoder {
    struct xlate_limits lim; /* the budgets the records are decoded under */
    struct cx_buf scratch;
    size_t hint[XLATE_KIND_COUNT];
};

/* |lim| NULL: the defaults. Never fails. */
void store_decoder_init(struct store_decoder *d, const struct xlate_limits *lim);
void store_decoder_free(struct store_decoder *d);

/* Decodes |json|, an object of |kind| (one the translator reads), with its
 * references |refs| ("S/ns/name" or "C/ns/name"; copied). Returns the kept
 * form, or NULL when the translator does not take it as a record (a name
 * that cannot exist) or memory ran out: keep the JSON then. */
struct store_obj *store_obj_decode(struct store_decoder *d, enum xlate_kind kind, const cJSON *json,
                                   const char *const *refs, size_t nrefs);
void store_obj_free(struct store_obj *so);

/* How a kube_obj holds a store_obj (kube_obj_keep_rec). */
extern const struct kube_rec_ops store_obj_ops;

/* |o|'s kept form, or NULL when |o| holds its JSON. */
static inline const struct store_obj *store_obj_of(const struct kube_obj *o)
{
    return o && o->rec_ops == &store_obj_ops ? (const struct store_obj *)o->rec : NULL;
}

/* Distinct status texts kept (all objects together). */
size_t store_status_texts(void);

/* metadata.labels[key] of a kept object, or NULL. */
const char *store_obj_label(const struct store_obj *so, const char *key);
/* metadata.generation of a kept object. */
int64_t store_obj_generation(const struct store_obj *so);

/* .status of |o| (from its JSON or its kept form), as a tree the caller
 * frees with cJSON_Delete; NULL when it has none (or memory ran out). */
cJSON *store_obj_status(const struct kube_obj *o);
/* metadata.generation of |o| (0 when absent). */
int64_t store_kube_generation(const struct kube_obj *o);

#endif
