/*
 * xds_cache: the snapshot cache of the xDS server, keyed by node group.
 *
 * It holds the current snapshot (one reference) and, per node group (a
 * Gateway "namespace/name"), the streams watching it and the NACKs its
 * proxies sent. Resources are never copied or re-encoded here: a group's
 * sets point into the snapshot, whose encoded resources every stream shares.
 * When a snapshot replaces another, only the watches of groups whose type
 * versions changed are woken.
 *
 * Main loop only.
 */
#ifndef XDS_CACHE_H
#define XDS_CACHE_H

#include "cx_list.h"
#include "xds_ads.h"
#include "xds_types.h"

/* Node groups tracked at once (a peer chooses its group name). */
#define XDS_CACHE_MAX_GROUPS 10000
/* ... of which groups that no Gateway of the snapshot has (names made up
 * by clients, or Gateways not translated yet). */
#define XDS_CACHE_MAX_UNKNOWN_GROUPS 1000

struct xds_cache;
struct xds_cache_group;

/* Embedded in whatever watches a group (a stream). */
struct xds_cache_watch {
    struct cx_list link; /* in its group's watches */
    struct xds_cache_group *group;
};

typedef void (*xds_cache_wake_fn)(void *user, struct xds_cache_watch *w);

struct xds_cache *xds_cache_new(void);
void xds_cache_free(struct xds_cache *c);

/* Makes |snap| current (takes a reference of its own; NULL clears) and
 * calls |wake| for every watch whose group's resources changed. */
void xds_cache_set_snapshot(struct xds_cache *c, struct xlate_snapshot *snap,
                            xds_cache_wake_fn wake, void *user);

/* The current snapshot (borrowed), or NULL. */
struct xlate_snapshot *xds_cache_snapshot(const struct xds_cache *c);

/* Adds |w| to |group|. Returns 0, or -1 if too many groups exist. */
__attribute__((warn_unused_result)) int
xds_cache_watch_add(struct xds_cache *c, struct xds_cache_watch *w, const char *group);
void xds_cache_watch_remove(struct xds_cache *c, struct xds_cache_watch *w);

/* The resources of the watch's group: NULL before the first snapshot; empty
 * sets when the snapshot has no such group. */
const struct xds_ads_sets *xds_cache_sets(const struct xds_cache *c,
                                          const struct xds_cache_watch *w);

/* Same for a group by name (REST); |tmp| receives the sets. */
const struct xds_ads_sets *xds_cache_sets_for(const struct xds_cache *c, const char *group,
                                              struct xds_ads_sets *tmp);

/* The NACK record of the watch's group for |type|. */
struct xds_nack_stat *xds_cache_nack(struct xds_cache_watch *w, enum xds_type type);
const char *xds_cache_group_name(const struct xds_cache_watch *w);
size_t xds_cache_group_watches(const struct xds_cache_watch *w);

/* Looks a group's NACK record up by name; NULL if never seen. */
const struct xds_nack_stat *xds_cache_nack_find(const struct xds_cache *c, const char *group,
                                                enum xds_type type);

/* Calls |fn| for every group and type with at least one NACK. */
void xds_cache_foreach_nack(const struct xds_cache *c,
                            void (*fn)(void *user, const char *group, enum xds_type type,
                                       const struct xds_nack_stat *st),
                            void *user);

/* Number of groups with watches or NACK records. A group that no stream
 * holds is dropped at once unless it is a Gateway of the current snapshot
 * with NACK records (kept for the status writer); groups that no Gateway
 * has are capped at XDS_CACHE_MAX_UNKNOWN_GROUPS. */
size_t xds_cache_ngroups(const struct xds_cache *c);

#endif
