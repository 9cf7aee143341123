/*
 * Snapshot lifetime and lookup helpers (see xlate_snapshot_types.h).
 *
 * Reference counting is atomic: the translator worker creates snapshots and
 * the main loop drops them. Everything else about a snapshot is read-only
 * and may be read from any thread that holds a reference.
 */
#ifndef XLATE_SNAPSHOT_H
#define XLATE_SNAPSHOT_H

#include "xlate_snapshot_types.h"

/* Creates a resource holding a copy of |name| and taking ownership of |bytes|
 * (malloc'ed, |len| bytes); computes its version. Returns it with one
 * reference, or NULL when memory ran out (|bytes| is freed then too). */
struct xds_resource *xlate_resource_new(enum xds_type type, const char *name, uint8_t *bytes,
                                        size_t len);
/* Like xlate_resource_new but with |version| given by the caller: a content
 * hash it already has (the translator hashes a RouteConfiguration from its
 * virtual hosts' hashes instead of re-hashing megabytes). |version| is
 * XDS_VERSION_LEN lower-case hex characters. */
struct xds_resource *xlate_resource_new_versioned(enum xds_type type, const char *name,
                                                  uint8_t *bytes, size_t len, const char *version);
/* xlate_resource_new_versioned for |bytes| from xlate_big_alloc (a
 * RouteConfiguration of megabytes). */
struct xds_resource *xlate_resource_new_big(enum xds_type type, const char *name, uint8_t *bytes,
                                            size_t len, const char *version);
struct xds_resource *xlate_resource_ref(struct xds_resource *r);
void xlate_resource_unref(struct xds_resource *r);

/* Sorts |set| by name and computes its version. Returns 0, or -1 if two
 * resources share a name. */
__attribute__((warn_unused_result)) int xlate_resource_set_seal(struct xds_resource_set *set);

/* Finds |name| in a sealed set (binary search); NULL if absent. */
struct xds_resource *xlate_resource_set_find(const struct xds_resource_set *set, const char *name);

/* Type URL and short name ("LDS"...) of a type, and the type of a URL
 * (-1 if unknown). */
const char *xlate_type_url(enum xds_type t);
const char *xlate_type_short(enum xds_type t);
int xlate_type_from_url(const char *url);

struct xlate_snapshot *xlate_snapshot_ref(struct xlate_snapshot *s);
void xlate_snapshot_unref(struct xlate_snapshot *s);

struct xlate_report_block *xlate_report_block_ref(struct xlate_report_block *b);
void xlate_report_block_unref(struct xlate_report_block *b);
/* A reference from a newer block that points into |b|'s strings (its
 * |base|): it keeps the strings, not the reports array. */
struct xlate_report_block *xlate_report_block_base(struct xlate_report_block *b);

/* Finds a group by "namespace/name"; NULL if absent. */
const struct xlate_group *xlate_snapshot_group(const struct xlate_snapshot *s, const char *name);

/* Computes s->version from the groups' type versions (call after sealing). */
void xlate_snapshot_seal(struct xlate_snapshot *s);

const char *xlate_state_name(enum xlate_state st); /* "Accepted" / "Warning" / "Rejected" */

/* Whether a group's type |t| is rendered (and counted in the snapshot's
 * version): every type but an empty SDS set, so that a group without
 * Secrets renders and hashes as it did before Secrets had a type. */
static inline int xlate_group_type_shown(const struct xlate_group *g, int t)
{
    return t != XDS_SECRET || g->types[t].n > 0;
}
/* The last type xlate_group_type_shown() shows for |g|. */
static inline int xlate_group_last_type(const struct xlate_group *g)
{
    return xlate_group_type_shown(g, XDS_SECRET) ? XDS_SECRET : XDS_SECRET - 1;
}

#endif
