/*
 * xlate_internal: the translator context's memo, shared by xlate.c (passes,
 * snapshot), xlate_resolve.c (routes, delegation, virtual hosts),
 * xlate_upstream.c (endpoints, clusters) and xlate_report.c (reports).
 *
 * Memo rules (what makes a pass incremental):
 * - every input object has an entry keyed by kind + "namespace/name"; its
 *   parsed form is kept while its digest is unchanged;
 * - a VirtualService's resolution (routes after delegation, its encoded
 *   virtual host) is kept while the VirtualService is unchanged and none of
 *   the keys it looked up (Upstreams, RouteTables, namespaces searched by a
 *   delegation selector) changed state this pass;
 * - an Upstream's Cluster and ClusterLoadAssignment are kept while the
 *   Upstream, its Service and that Service's EndpointSlices are unchanged;
 * - a Gateway's resources are kept while what they are built from is the
 *   same (compared by content hash, so the same xds_resource pointer
 *   survives).
 * Not thread-safe: one context, one thread at a time.
 */
#ifndef XLATE_INTERNAL_H
#define XLATE_INTERNAL_H

#include "xlate.h"
#include "xlate_api.h"
#include "xlate_encode.h"
#include "xlate_util.h"

#define XL_MODES 2

struct xl_entry_list {
    struct xl_entry **items;
    size_t n, cap;
};

/* A problem found while resolving, attributed to one object. */
struct xl_msg {
    struct xl_entry *target; /* the VirtualService itself or a RouteTable */
    enum xlate_state state;
    enum xl_reason reason;
    char *text;
};

/* A VirtualService's routes resolved for one gateway mode. */
struct xl_vs_res {
    int valid;       /* computed and still current */
    uint32_t serial; /* changes whenever recomputed (report memo key) */
    struct xl_arena arena;
    uint8_t *vh; /* encoded VirtualHost (malloc) */
    size_t vhlen;
    uint8_t vh_hash[16];
    size_t nroutes;        /* routes in the virtual host */
    struct xl_entry **ups; /* Upstreams referenced by kept routes, in order */
    size_t nups;
    char **deps; /* keys looked up ("U/ns/name", "R/ns/name", "N/ns") */
    size_t ndeps;
    struct xl_msg *msgs;
    size_t nmsgs;
};

struct xl_up_memo {
    uint64_t ep_digest; /* Upstream + Service + EndpointSlices */
    struct xds_resource *cla;
    size_t nendpoints;
    struct xl_errors ep_errors; /* ServiceNotFound, NoReadyEndpoints... */
    struct xl_arena ep_arena;   /* their messages */
    uint64_t cluster_digest[XL_MODES];
    struct xds_resource *cluster[XL_MODES];
    int valid_last; /* validity last pass (dependency changes) */
    int exists_last;
};

/* A Gateway that selected a VirtualService this pass. */
struct xl_use {
    struct xl_entry *gw;
    const char *conflict; /* DomainConflict message, or NULL */
};

/* One input object. */
struct xl_entry {
    enum xlate_kind kind;
    uint64_t digest;
    const void *obj_ptr;  /* the cJSON last seen (fast lookup) */
    uint32_t seen;        /* pass number */
    uint32_t changed;     /* pass number of the last (re)parse */
    uint32_t mark;        /* scratch stamp */
    int duplicate;        /* the input held it more than once this pass */
    int pending;          /* in ctx->pending */
    const void *cand_obj; /* this pass's object for the key (smallest digest) */
    uint64_t cand_digest;
    struct xl_arena arena;
    struct xl_object obj;
    enum xlate_state parse_state;
    uint64_t label_hash; /* metadata.labels: Gateway selection depends on it */
    uint64_t claim_hash; /* creation time + domains (VirtualService) */
    struct xl_vs_res res[XL_MODES];
    struct xl_up_memo *up;
    /* this pass's uses, for reports (valid when use_pass == ctx->pass) */
    uint32_t use_pass;
    struct xl_use *uses; /* VirtualService: the Gateways selecting it */
    size_t nuses, capuses;
    int used_modes;              /* VirtualService/Upstream: 1 << mode of its Gateways */
    const struct xl_msg **rmsgs; /* RouteTable: problems found by resolutions */
    size_t nrmsgs, caprmsgs;
    /* report memo */
    uint64_t rep_key;
    enum xlate_state rep_state;
    const char *rep_reason;
    char *rep_msg; /* malloc */
    size_t keylen;
    char key[]; /* "namespace/name" */
};

/* Per Gateway: what its group was built from last time. */
struct xl_gw_memo {
    uint64_t gw_digest;
    uint32_t sel_epoch;         /* ctx->sel_epoch when selected was built */
    struct xl_entry **selected; /* VirtualServices, sorted by key */
    size_t nselected;
    uint64_t claim_hash;        /* of the claims the conflicts were computed from */
    struct xl_entry **accepted; /* selected and served, sorted by key */
    size_t naccepted;
    char **conflict_msgs; /* per selected VS, or NULL (malloc) */
    uint8_t rc_hash[16];
    struct xds_resource *rc;
    struct xds_resource *listener; /* envoy mode */
    struct xl_map api_listeners;   /* proxyless: domain -> xds_resource */
    uint64_t lds_key;
    struct xds_resource_set sets[XDS_TYPE_COUNT]; /* last built, items referenced */
    struct xds_resource **seq[XDS_TYPE_COUNT];    /* the unsorted sequence it came from */
    size_t nseq[XDS_TYPE_COUNT];
    size_t nvhosts;
    size_t nclusters;
};

struct xlate_ctx {
    uint32_t pass;
    struct xl_map by_key[XLATE_KIND_COUNT];   /* "ns/name" -> entry */
    struct xl_map by_ptr;                     /* (cJSON*, digest) -> entry */
    struct xl_entry_list pending;             /* entries offered a new candidate */
    struct xl_entry **list[XLATE_KIND_COUNT]; /* sorted by (namespace, name) */
    size_t nlist[XLATE_KIND_COUNT];
    int list_dirty[XLATE_KIND_COUNT];
    /* EndpointSlices by Service key "ns/name" (rebuilt when slices change) */
    struct xl_map slices_by_svc; /* -> struct xl_slice_list */
    int slices_dirty;
    struct xl_map rt_by_ns; /* namespace -> struct xl_entry_list */
    /* this pass */
    struct xl_map changed_deps;   /* dependency keys that changed */
    struct xl_map dirty_services; /* Service keys whose endpoints changed */
    uint32_t sel_epoch;           /* bumped when Gateway selection may change */
    struct xl_map gw_memo;        /* Gateway key -> struct xl_gw_memo (malloc) */
    uint32_t res_serial;
    struct xlate_stats stats;
};

/* xlate_resolve.c: (re)computes e->res[mode] for a VirtualService entry.
 * Returns 0 or -1 (memory). */
int xl_resolve_vs(struct xlate_ctx *ctx, struct xl_entry *e, enum xlate_gateway_mode mode);
void xl_res_clear(struct xl_vs_res *r);

/* xlate_upstream.c: refreshes the Upstream memo (endpoints, CLA, clusters
 * for the modes in |modes_used|). Returns 0 or -1. */
int xl_upstream_refresh(struct xlate_ctx *ctx, struct xl_entry *e, int dirty);
/* Ensures e->up->cluster[mode] is current. Returns 0 or -1. */
int xl_upstream_cluster(struct xlate_ctx *ctx, struct xl_entry *e, enum xlate_gateway_mode mode);
void xl_up_memo_free(struct xl_up_memo *m);

/* xlate_report.c: builds every report of the pass into |snap| (reports and
 * their string block). Returns 0 or -1. */
int xl_reports_build(struct xlate_ctx *ctx, struct xlate_snapshot *snap);

/* Marks |e| as used this pass (resets its per-pass lists on first use). */
void xl_touch(struct xlate_ctx *ctx, struct xl_entry *e);

/* xlate.c helpers */
struct xl_entry *xl_find(struct xlate_ctx *ctx, enum xlate_kind kind, const char *ns,
                         const char *name);
int xl_list_push(struct xl_entry_list *l, struct xl_entry *e);
/* 1 if |sel| (NULL: everything) matches the entry's labels. */
int xl_selector_matches(const struct filter_selector *sel, const struct xl_entry *e);
uint64_t xl_fnv(uint64_t h, const void *p, size_t n);
uint64_t xl_fnv_str(uint64_t h, const char *s);

#endif
