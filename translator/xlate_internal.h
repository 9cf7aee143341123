/*
 * xlate_internal: the translator context's memo, shared by xlate.c (passes,
 * gateways, snapshot), xlate_resolve.c (routes, delegation, virtual hosts),
 * xlate_upstream.c (endpoints, clusters) and xlate_report.c (reports).
 *
 * A pass is driven by what changed, so its cost follows the change, not the
 * size of the world:
 * - every input object has an entry keyed by kind + "namespace/name"; its
 *   parsed form is kept while its digest is unchanged;
 * - a VirtualService's resolution (routes after delegation, its encoded
 *   virtual host, per gateway mode) is kept until the VirtualService changes
 *   or one of the keys it looked up changes (an Upstream appears, goes or
 *   flips validity; a RouteTable changes; a namespace searched by a
 *   delegation selector gains or loses a RouteTable): the dependency index
 *   maps those keys back to the VirtualServices;
 * - an Upstream's Cluster and ClusterLoadAssignment are kept until the
 *   Upstream, its Service or that Service's EndpointSlices change (the
 *   service index maps a Service to its Upstreams);
 * - a Gateway keeps its selection, domain claims, accepted virtual hosts and
 *   its four sorted resource sets, and patches them for the VirtualServices
 *   and Upstreams the pass touched; unchanged resources keep their
 *   xds_resource (same pointer, same bytes);
 * - reports are recomputed for touched objects only, and the whole report
 *   block is shared with the previous snapshot when none changed.
 * Entries deleted during a pass are freed at its end (the graveyard), so
 * nothing that still points at them dangles while the pass updates it.
 * Not thread-safe: one context, one thread at a time.
 */
#ifndef XLATE_INTERNAL_H
#define XLATE_INTERNAL_H

#include "xlate.h"
#include "xlate_api.h"
#include "xlate_encode.h"
#include "xlate_record.h"
#include "xlate_util.h"

#include "cx_hash.h"
#include "cx_map.h"

#define XL_MODES 2

struct xl_entry_list {
    struct xl_entry **items;
    size_t n, cap;
};

/* A list of an index (slices by Service, Upstreams by Service or by the
 * Secret or ConfigMap they name, RouteTables by namespace): most hold one
 * entry, kept in the list's block with the key (|l| first: the maps'
 * values are used as struct xl_entry_list). */
struct xl_index_list {
    struct xl_entry_list l; /* items is &one while cap is 1 */
    struct xl_entry *one;
    char key[];
};
void xlate_index_list_free(struct xl_entry_list *l);

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
    int over_budget; /* a budget Rejected the VirtualService (its message says which) */
    uint32_t serial; /* changes whenever recomputed (dependency index, reports) */
    struct xl_arena arena;
    uint8_t *vh; /* encoded VirtualHost (malloc), NULL when no route is left */
    size_t vhlen;
    uint8_t vh_hash[16];
    size_t nroutes;        /* routes in the virtual host */
    struct xl_entry **ups; /* Upstreams referenced by kept routes, in order */
    size_t nups;
    struct xl_msg *msgs;
    size_t nmsgs;
};

struct xl_up_memo {
    /* spec.tls resolved against its ConfigMap and Secret (every refresh) */
    int tls_bad;      /* a reference is unusable: the Upstream is rejected */
    uint64_t tls_key; /* Upstream digest + TLS material: what clusters are built from */
    const struct xl_entry *tls_ca_cm, *tls_cert; /* the ConfigMap and Secret used, or NULL */
    const char *tls_ca_pem;                      /* borrowed from the ConfigMap's parse */
    struct xl_errors tls_errors;                 /* SecretNotFound, CertificateExpired... */
    struct xl_arena tls_arena;                   /* their messages */
    char *ref_keys[2];  /* registered in ctx->ref_ups ("S/ns/name", "C/ns/name") */
    uint64_t ep_digest; /* Upstream + Service + EndpointSlices */
    struct xds_resource *cla;
    size_t nendpoints;
    struct xl_errors ep_errors; /* ServiceNotFound, NoReadyEndpoints... */
    struct xl_arena ep_arena;   /* their messages */
    uint64_t cluster_digest[XL_MODES];
    struct xds_resource *cluster[XL_MODES];
    /* registered in ctx->svc_ups under this key: the record's kube_key,
     * valid while the entry holds that record (index_entry takes it out
     * before the record goes) */
    const char *svc_key;
    /* SDS Secrets its envoy-mode Cluster names: the client certificate and
     * the CA bundle (NULL when not used), built from |tls_key| */
    struct xds_resource *sds[2];
    uint64_t sds_key;
    uint32_t sds_changed; /* pass in which one of them changed */
    /* compute_claims: the run (ctx->claims_run) whose budget counted it */
    uint64_t budget_run;
    /* its count in the Gateway memo of id |uc_memo| (xlate_gw_ucount), or
     * NULL: one Gateway's lookups skip the memo's map */
    uint64_t uc_memo;
    struct xl_ucount *uc;
};

/* One TLS block of a Gateway (spec.tls, or a listener's own tls) resolved
 * against the Secrets and ConfigMap it names. */
struct xl_tls_block {
    const struct xl_gateway_tls *spec; /* NULL: the block is unused */
    size_t listener;                   /* spec.listeners index + 1; 0: spec.tls */
    struct xl_entry **certs;           /* the usable certificates' Secrets, in spec order */
    size_t *cert_index;                /* their index in the block's certificates */
    size_t ncerts;
    const char *client_ca; /* PEM, borrowed from the ConfigMap, or NULL */
    /* the client CA's last check (OpenSSL), redone when the ConfigMap changes */
    uint64_t ca_checked; /* ConfigMap digest + key hash; 0: none */
    int ca_ok;
    char ca_msg[300];
};

/* A Gateway's TLS blocks resolved (envoy mode; recomputed every pass,
 * xlate_tlsref.c): [0] spec.tls, [1 + k] spec.listeners[k].tls. */
struct xl_gw_tls {
    int fatal;                   /* a used block has nothing usable: the Gateway is rejected */
    struct xl_tls_block *blocks; /* malloc; kept across passes (the CA checks) */
    size_t nblocks;
    uint64_t digest;         /* what the listeners read of them */
    struct xl_errors errors; /* for the Gateway's report */
    struct xl_arena arena;   /* this pass's: errors and arrays */
};

/* One input object (one per object of the world: fields ordered so that
 * none leaves a hole). */
struct xl_entry {
    enum xlate_kind kind;
    enum xlate_state parse_state;
    uint64_t digest;
    const void *obj_ptr;  /* the input last seen, cJSON or record (fast lookup); follows
                           * digest */
    uint32_t seen;        /* pass number */
    uint32_t changed;     /* pass number of the last (re)parse */
    uint32_t mark;        /* scratch stamp */
    uint32_t touched;     /* pass in which it was put on a touched list */
    uint32_t rep_dirty;   /* pass in which its report was marked for recompute */
    uint32_t rep_changed; /* pass in which its published report changed */
    int duplicate;        /* the input held it more than once this pass */
    int pending;          /* in ctx->pending */
    int deleted;          /* in the graveyard */
    int in_by_ptr;        /* keyed in ctx->by_ptr (its input is a cJSON tree) */
    const void *cand_obj; /* this pass's input for the key (smallest digest) */
    const struct xlate_record *cand_rec; /* cand_obj when it is a record, else NULL */
    uint64_t cand_digest;
    struct xlate_record *rec;    /* the decoded object (one reference), NULL before */
    const struct xl_object *obj; /* &rec->obj, or an empty object of the kind before */
    /* VirtualService: a Gateway memo whose selection (m->sel) holds it, 0
     * when none is known; and how many memos' selections hold it. The
     * reports ask, for every VirtualService, which Gateways select it:
     * with one Gateway these answer without a search (xlate_gw_is_sel). */
    uint64_t sel_id;
    int64_t created;       /* VirtualService: metadata.creationTimestamp, Unix seconds */
    int has_created;       /* ... when it has a readable one */
    int cert_phase;        /* Secret: enum xl_cert_phase at the last pass's time */
    uint32_t nsel;         /* VirtualService: see sel_id */
    struct xl_vs_res *res; /* VirtualService: [XL_MODES], else NULL */
    /* per mode: domains + creation + served, what domain claims read; kept
     * across resolutions to notice when it changes */
    uint64_t claim_key[XL_MODES];
    uint32_t claim_changed[XL_MODES]; /* pass in which claim_key last changed */
    struct xl_up_memo *up;
    struct xl_entry_list contrib; /* RouteTable: VirtualServices with problems about it */
    int up_exists, up_valid;      /* Upstream: what dependants saw last */
    int up_hashing;               /* ... and whether it balances by hash (routes' hashPolicy) */
    /* report memo */
    enum xlate_state rep_state;
    const char *rep_reason;
    char *rep_msg;          /* malloc */
    struct xl_gw_tls *gtls; /* Gateway with TLS blocks (envoy mode), else NULL */
    size_t keylen;
    char *skey; /* sort key: key with the '/' as '\x01', so strcmp orders
                 * by (namespace, name); points after key */
    char key[]; /* "namespace/name" */
};

/* An accepted VirtualService in a Gateway. */
struct xl_slot {
    struct xl_entry *vs;
    const uint8_t *vh; /* borrowed from vs->res[mode] */
    size_t vhlen;
    size_t nroutes;
    uint8_t hash[16];
    struct xl_entry **ups; /* the Upstreams counted for it (malloc copy) */
    size_t nups;
};

/* Why a selected VirtualService is not served on a Gateway. */
struct xl_refusal {
    enum xl_reason reason; /* XL_R_DOMAIN_CONFLICT or XL_R_BUDGET */
    char msg[];
};

struct xl_ucount {
    struct xl_entry *up;
    size_t count;      /* accepted VirtualServices of the Gateway sending to it */
    uint32_t put_pass; /* pass in which its resources were put in the sets */
};

/* An envoy-mode listener's own RouteConfiguration, when it serves fewer
 * than every accepted VirtualService (they name listeners). */
struct xl_listener_rc {
    struct xds_resource *rc; /* NULL: it uses the Gateway's */
    uint8_t hash[16];
};

/* A proxyless Gateway's API Listener for one domain. */
struct xl_api_listener {
    struct xds_resource *r;
    char domain[]; /* the map key */
};

/* Per Gateway: everything its node group is built from. */
struct xl_gw_memo {
    uint64_t id; /* from ctx->memo_serial: never 0, never reused */
    uint64_t gw_digest;
    enum xlate_gateway_mode mode;
    struct xl_entry **sel; /* selected VirtualServices, sorted */
    size_t nsel, capsel;
    size_t sel_finger;   /* xlate_gw_is_sel: where the last lookup ended */
    struct xl_slot *acc; /* accepted (served, no conflict), sorted */
    size_t nacc;
    size_t acc_routes, acc_bytes; /* the accepted ones' routes and RouteConfiguration bytes */
    struct cx_map conflicts;      /* VirtualService key -> struct xl_refusal (malloc) */
    size_t nbudget;               /* refusals for a budget among them */
    size_t nnolistener;           /* refusals for no listener serving it among them */
    struct cx_map upcount;        /* Upstream key -> struct xl_ucount (malloc) */
    int claims_dirty, rc_dirty, lds_dirty;
    int bulk; /* compute_claims: append to sets, sort after */
    int unsorted[XDS_TYPE_COUNT];
    size_t bulk_sorted[XDS_TYPE_COUNT]; /* items sorted when the bulk began */
    int set_dirty[XDS_TYPE_COUNT];
    uint8_t rc_hash[16];
    struct xds_resource *rc;
    struct xds_resource **listeners; /* envoy mode, in spec order (malloc) */
    size_t nlisteners;
    struct xl_listener_rc *lrc; /* per spec.listeners entry (malloc), or NULL */
    size_t nlrc;
    int lds_names_dirty;                          /* a listener's RouteConfiguration name changed */
    struct cx_map api_listeners;                  /* proxyless: domain -> struct xl_api_listener */
    struct xds_resource_set sets[XDS_TYPE_COUNT]; /* sorted by name; refs held */
    size_t cap[XDS_TYPE_COUNT];
    struct xl_entry_list touched; /* this pass: selected VirtualServices to patch */
    /* TLS listener (envoy mode with spec.tls) */
    uint64_t lds_tls_digest; /* the xl_gw_tls digest the listener was built from */
    struct cx_map uncovered; /* VirtualService key -> DomainNotCovered message (malloc) */
    char **cert_notes;       /* CertificateUnused messages for the Gateway (malloc) */
    size_t ncert_notes;
    /* SDS: the Secrets its Listener names (certificates, client CA), built
     * from the xl_gw_tls digest |own_sds_digest|; the SDS set is rebuilt
     * from them and the counted Upstreams' when |sds_dirty| */
    struct xds_resource **own_sds;
    size_t nown_sds;
    uint64_t own_sds_digest;
    int sds_dirty;
};

struct xl_dep_item {
    char *vskey; /* malloc */
    uint32_t serial;
    int mode;
};

/* Most keys are read by one VirtualService: the first item, and the key of
 * the VirtualService that made the list, live in the list's block. */
struct xl_dep_list {
    struct xl_dep_item *items; /* &first while cap is 1 */
    size_t n, cap;
    const char *vskey0; /* in the block: not freed on its own */
    struct xl_dep_item first;
};

struct xlate_ctx {
    struct xlate_limits limits; /* fixed at creation */
    uint32_t pass;
    int broken; /* a pass ran out of memory: the next must be a full view */
    /* this pass began with no entry: every entry is parsed in it, so no
     * dependant of an earlier pass is left to mark */
    int fresh;
    uint64_t claims_run;                      /* compute_claims calls so far (budget stamps) */
    uint64_t memo_serial;                     /* Gateway memos made so far (their ids) */
    struct cx_map by_key[XLATE_KIND_COUNT];   /* "ns/name" -> entry */
    struct cx_map by_ptr;                     /* (digest, cJSON*) -> entry; records are
                                               * found by key (rec->key) */
    struct xl_entry **list[XLATE_KIND_COUNT]; /* sorted by (namespace, name); none for
                                               * Services and EndpointSlices */
    size_t nlist[XLATE_KIND_COUNT], caplist[XLATE_KIND_COUNT];
    size_t list_changes[XLATE_KIND_COUNT]; /* adds + removes this pass */
    struct cx_map slices_by_svc;           /* "ns/svc" -> struct xl_entry_list (slices) */
    struct cx_map svc_ups;                 /* "ns/svc" -> struct xl_entry_list (Upstreams) */
    struct cx_map rt_by_ns;                /* namespace -> struct xl_entry_list (RTs) */
    struct cx_map ref_ups;              /* "S/ns/name", "C/ns/name" -> xl_entry_list (Upstreams) */
    struct cx_map deps;                 /* dependency key -> struct xl_dep_list */
    struct cx_map gw_memo;              /* Gateway key -> struct xl_gw_memo */
    struct xl_pool entries;             /* the entries' blocks */
    struct xlate_report_block *reports; /* last pass's, shared when unchanged */
    uint32_t res_serial;
    size_t arena_hint[XLATE_KIND_COUNT]; /* bytes the last parse of the kind used */
    /* this pass */
    size_t nseen[XLATE_KIND_COUNT]; /* entries of the kind seen (sweep skips a kind all seen) */
    struct xl_entry_list pending;   /* entries offered a new candidate */
    /* parsed, added or deleted, by kind: the passes over them read no
     * entry of another kind (each a cache miss at scale) */
    struct xl_entry_list changed[XLATE_KIND_COUNT];
    size_t ndeleted[XLATE_KIND_COUNT]; /* of them, deleted */
    struct xl_entry_list graveyard;    /* deleted: freed at the end of the pass */
    struct xl_entry_list vs_touched;   /* VirtualServices whose resolution or membership changed */
    struct xl_entry_list up_touched;   /* Upstreams whose resources or existence changed */
    struct xl_entry_list rep_list;     /* entries whose report is recomputed */
    struct cx_map changed_deps;        /* dependency keys that changed (key -> malloc key) */
    struct cx_map dirty_services;      /* Service keys whose endpoints changed */
    struct cx_map dirty_refs;          /* "S/ns/name", "C/ns/name" that changed (or crossed a
                                        * validity boundary) */
    int64_t now, prev_now;             /* evaluation time (struct xlate_input) */
    int64_t recheck_at;                /* the next validity boundary after now, or 0 */
    int reports_changed;
    struct xlate_stats stats;
    struct cx_sha256_ctx *sha; /* resource versions and virtual-host hashes */
    /* xlate_resolve_vs's scratch, kept from one resolution to the next */
    struct xl_rroute *rroutes;
    size_t caprroutes;
    struct xl_arena rscratch;
};

/* xlate_resolve.c: (re)computes e->res[mode] for a VirtualService entry and
 * registers its dependencies. Returns 0 or -1 (memory). */
int xlate_resolve_vs(struct xlate_ctx *ctx, struct xl_entry *e, enum xlate_gateway_mode mode);
/* In a walk of VirtualServices |l| about to be resolved, at |i|: asks for
 * what the resolution of the ones a few ahead looks up first (their first
 * route's Upstream and its dependency), in stages behind
 * xlate_list_prefetch's. */
void xlate_resolve_prefetch(struct xlate_ctx *ctx, const struct xl_entry_list *l, size_t i);
/* Drops e->res[mode] (its RouteTable problems go with it). */
void xlate_res_drop(struct xlate_ctx *ctx, struct xl_entry *e, int mode);
void xlate_res_clear(struct xl_vs_res *r);

/* xlate_upstream.c: refreshes the Upstream's endpoints and CLA (and its
 * clusters already built). Returns 1 if a resource pointer changed, 0 if
 * not, -1 (memory). */
int xlate_upstream_refresh(struct xlate_ctx *ctx, struct xl_entry *e);
/* Ensures e->up->cluster[mode] is current. Returns 0 or -1. */
int xlate_upstream_cluster(struct xlate_ctx *ctx, struct xl_entry *e, enum xlate_gateway_mode mode);
/* Frees what the memo holds, not the memo (it lives in its entry's block). */
void xlate_up_memo_clear(struct xl_up_memo *m);

/* 1 if Upstream |up| can be routed to: parsed fine and its TLS references
 * usable. */
static inline int xlate_upstream_usable(const struct xl_entry *up)
{
    return up->parse_state != XLATE_REJECTED && !(up->up && up->up->tls_bad);
}

/* 1 if Upstream |u| balances by hash, so that routes' hash policies
 * choose its endpoints (Envoy's RING_HASH and MAGLEV; proxyless Gateways
 * get RING_HASH for both). */
static inline int xlate_upstream_hashing(const struct xl_upstream *u)
{
    return u->lb == XL_LB_RING_HASH || u->lb == XL_LB_MAGLEV;
}

/* xlate_tlsref.c: resolves |gwe|'s TLS blocks (spec.tls and its listeners'
 * own tls; envoy mode) into gwe->gtls for this pass. Returns 0 or -1
 * (memory). */
int xlate_gw_tls_resolve(struct xlate_ctx *ctx, struct xl_entry *gwe);
void xlate_gw_tls_free(struct xl_gw_tls *t);
/* The TLS block spec.listeners[|k|] uses (its own tls, else spec.tls; |k|
 * past the listeners: the one listener of a Gateway without them), or
 * NULL when it has none. */
const struct xl_tls_block *xlate_gw_tls_block(const struct xl_entry *gwe, size_t k);
/* Records in the memo, from its accepted virtual hosts, the domains no
 * certificate of the TLS block of a listener serving them covers
 * (DomainNotCovered, per VirtualService) and the certificates no served
 * domain needs (CertificateUnused), block by block. Returns 0 or -1. */
int xlate_gw_tls_coverage(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m);
/* Encodes TLS listener |l| of |gwe| with TLS block |b|: assigns every host
 * name it serves to the certificate of |b| covering it best. Returns 0 or
 * -1. */
int xlate_gw_tls_listener(const struct xl_entry *gwe, const struct xl_gw_memo *m,
                          const struct xl_tls_block *b, const struct xl_listener *l,
                          const char *name, const char *rc_name, const char *stat_prefix,
                          uint8_t **out, size_t *len);
/* translator/route/xlate_listeners.c: the socket Listeners of envoy-mode
 * Gateway |gwe| (spec.listeners, else bindAddress:bindPort), new resources
 * in |*out| (malloc'ed array, |*n| of them, refs owned by the caller).
 * Returns 0 or -1. */
int xlate_gw_listeners(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m,
                       const char *stat_prefix, struct xds_resource ***out, size_t *n);
/* 1 if a listener named |lname| (NULL: the unnamed one of a Gateway
 * without spec.listeners) serves VirtualService |vs|: it names none, or
 * names |lname|. */
int xlate_listener_serves(const struct xl_virtual_service *vs, const char *lname);
/* 1 if some listener of envoy-mode Gateway |gwe| serves |vs|; else 0 with
 * why in |msg|. */
int xlate_gw_serves(const struct xl_entry *gwe, const struct xl_virtual_service *vs, char *msg,
                    size_t n);
/* RouteConfiguration |name| of the accepted slots (|filter|: only those
 * listener |lname| serves). When |cur| is set and their hash is |hash|,
 * *fresh is NULL (reused); else *fresh is a new resource (one reference)
 * and |hash| its hash. Returns 0 or -1. */
int xlate_gw_encode_rc(struct xlate_ctx *ctx, const char *name, const struct xl_slot *acc,
                       size_t nacc, int filter, const char *lname, uint8_t hash[16],
                       const struct xds_resource *cur, struct xds_resource **fresh);
/* Brings the memo's per-listener RouteConfigurations (lrc) up to date with
 * its accepted slots, in the XDS_ROUTE set; lds_names_dirty when one
 * appears or goes. Returns 0 or -1. */
int xlate_gw_listener_rcs(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m);
/* The memo's sorted resource sets (xlate_gateway.c): put (replacing the
 * same name; 0 or -1) and delete (only |only|, when set). */
int xlate_gw_set_put(struct xl_gw_memo *m, int t, struct xds_resource *r);
void xlate_gw_set_del(struct xl_gw_memo *m, int t, const char *name,
                      const struct xds_resource *only);
/* Resolves an Upstream's spec.tls into e->up (tls_bad, tls_key, errors).
 * Returns 0 or -1. */
int xlate_up_tls_resolve(struct xlate_ctx *ctx, struct xl_entry *e);
/* Brings e->up->sds (the Secrets its envoy-mode Cluster names) up to date
 * with its TLS material. Returns 1 if one changed, 0 if not, -1. */
int xlate_up_sds_refresh(struct xlate_ctx *ctx, struct xl_entry *e);
/* Brings the memo's own_sds up to date with gwe->gtls (sds_dirty set when
 * they change). Returns 0 or -1. */
int xlate_gw_sds_own(struct xlate_ctx *ctx, struct xl_entry *gwe, struct xl_gw_memo *m);
/* Rebuilds the memo's SDS set: its own Secrets and those of every usable
 * Upstream it counts, sorted by name, one per name (set_dirty when it
 * changed; sds_dirty cleared). Returns 0 or -1. */
int xlate_gw_sds_update(struct xl_gw_memo *m);

/* xlate_report.c: recomputes the reports of ctx->rep_list (and every
 * Gateway's) and gives |snap| its report block (shared with the previous
 * snapshot when nothing changed). Returns 0 or -1. */
int xlate_reports_build(struct xlate_ctx *ctx, struct xlate_snapshot *snap);

/* xlate_entry.c: entries, their lists and sorted arrays */
struct xl_entry *xlate_find(struct xlate_ctx *ctx, enum xlate_kind kind, const char *ns,
                            const char *name);
struct xl_entry *xlate_find_key(struct xlate_ctx *ctx, enum xlate_kind kind, const char *key);
int xlate_list_push(struct xl_entry_list *l, struct xl_entry *e);
void xlate_list_remove(struct xl_entry_list *l, struct xl_entry *e);
/* __builtin_prefetch has no side effect, so to GCC a helper made of
 * prefetches and loads alone is pure, and its calls (whose result, void,
 * is unused) are deleted after inlining: every prefetching helper ends
 * with this empty volatile asm, which keeps it. */
#define XL_PREFETCH_KEEP() __asm__ volatile("")

/* Asks for |e|'s header, every cache line of it. */
static inline void xlate_entry_prefetch(const struct xl_entry *e)
{
    const char *p = (const char *)e;
    for (size_t off = 0; off < sizeof(*e); off += 64)
        __builtin_prefetch(p + off);
    __builtin_prefetch(p + sizeof(*e) - 1);
}

/* In a walk of |l| at item |i|: asks for the entry XL_AHEAD items ahead,
 * and for the record and memo of the one XL_AHEAD / 2 ahead (read through
 * the entry, by then in the cache). Entries are scattered: at scale each
 * line is a cache miss, which the walk otherwise waits for; a walk's step
 * can be a few nanoseconds, a miss over a hundred. */
#define XL_AHEAD 32
static inline void xlate_list_prefetch(const struct xl_entry_list *l, size_t i)
{
    if (i + XL_AHEAD < l->n)
        xlate_entry_prefetch(l->items[i + XL_AHEAD]);
    if (i + XL_AHEAD / 2 < l->n) {
        const struct xl_entry *e = l->items[i + XL_AHEAD / 2];
        for (size_t off = 0; off < sizeof(*e->obj); off += 64)
            __builtin_prefetch((const char *)e->obj + off);
        if (e->up)
            __builtin_prefetch(e->up);
        if (e->res)
            __builtin_prefetch(e->res);
    }
    XL_PREFETCH_KEEP();
}

/* Empties a pass's list (one a big pass grew is freed). */
void xlate_list_clear(struct xl_entry_list *l);
/* Marks |e|'s report for recompute this pass. Returns 0 or -1. */
int xlate_rep_dirty(struct xlate_ctx *ctx, struct xl_entry *e);

/* The kinds that have a report (a status): the others never enter
 * ctx->rep_list. */
static inline int xlate_kind_reportable(enum xlate_kind k)
{
    return k == XLATE_KIND_GATEWAY || k == XLATE_KIND_ROUTE_TABLE || k == XLATE_KIND_UPSTREAM ||
           k == XLATE_KIND_VIRTUAL_SERVICE;
}
/* A VirtualService started or stopped being selected by a Gateway: marks
 * its report and those of the RouteTables it has problems about. Returns 0
 * or -1. */
int xlate_usage_changed(struct xlate_ctx *ctx, struct xl_entry *v);
/* 1 if |sel| (NULL: everything) matches the entry's labels. */
int xlate_selector_matches(const struct filter_selector *sel, const struct xl_entry *e);
/* (namespace, name) order. */
int xlate_entry_cmp(const struct xl_entry *x, const struct xl_entry *y);
/* qsort, unless |base| is in order already (one comparison per item). */
void xlate_sort_unless_sorted(void *base, size_t n, size_t size,
                              int (*cmp)(const void *, const void *));
/* Sorted arrays of entries (xlate_entry_cmp order, no duplicates): insert
 * (returns 0 or -1) and remove. */
int xlate_sorted_insert(struct xl_entry ***items, size_t *n, size_t *cap, struct xl_entry *e);
void xlate_sorted_remove(struct xl_entry **items, size_t *n, struct xl_entry *e);
/* Index of |vs| in the memo's selection or accepted list, or -1. */
long xlate_gw_find_sel(const struct xl_gw_memo *m, const struct xl_entry *vs);
/* |v| enters |m|'s selection (kept sorted; 0 or -1), or was taken out of
 * it (xlate_gw_sel_unmark, after the removal or with the memo's end): the
 * entry's sel_id and nsel follow. */
int xlate_gw_sel_add(struct xl_gw_memo *m, struct xl_entry *v);
void xlate_gw_sel_unmark(const struct xl_gw_memo *m, struct xl_entry *v);
/* Whether |vs| is selected: xlate_gw_find_sel >= 0, from the entry when
 * one memo at most holds it or this one is its sel_id, else in constant
 * time when the calls come in name order, else by a search. */
int xlate_gw_is_sel(struct xl_gw_memo *m, const struct xl_entry *vs);
long xlate_gw_find_acc(const struct xl_gw_memo *m, const struct xl_entry *vs);
/* Frees every value of |m| (malloc'ed), then the map. */
void xlate_map_free_vals(struct cx_map *m);
void xlate_dep_list_free(struct xl_dep_list *l);

/* xlate_ingest.c: the first half of a pass. */
/* Offers input object |obj| or record |rec| (kind, digest as in struct
 * xlate_object) to its entry, creating it; a full view (|last_wins| 0)
 * decodes it at once, a change (|last_wins| 1) waits for xlate_settle.
 * Returns 1 when the input is the very one of the last pass (nothing of it
 * read), 0 otherwise, -1 when memory ran out. */
int xlate_ingest_one(struct xlate_ctx *ctx, enum xlate_kind kind, const cJSON *obj,
                     const struct xlate_record *rec, uint64_t digest, int last_wins);
/* Deletes |e|: it leaves every index now and is freed at the end of the
 * pass. Returns 0 or -1. */
int xlate_delete_entry(struct xlate_ctx *ctx, struct xl_entry *e);
/* Full view: deletes every entry the pass did not see. Returns 0 or -1. */
int xlate_sweep(struct xlate_ctx *ctx);
/* After the pass's inputs: parses the pending candidates, brings the sorted
 * per-kind lists up to date, scans certificate validity times, refreshes
 * Upstreams and invalidates the VirtualServices whose dependencies
 * changed (ctx->vs_touched, ctx->up_touched filled). Returns 0 or -1. */
int xlate_settle(struct xlate_ctx *ctx);
/* Drops |e|'s resolution for |mode| (-1: both) and puts it on
 * ctx->vs_touched. Returns 0 or -1. */
int xlate_invalidate_vs(struct xlate_ctx *ctx, struct xl_entry *e, int mode);
/* "<namespace>/<name>" of |obj| in |key|: its length, 0 if it does not fit. */
size_t xlate_object_key(const cJSON *obj, char *key, size_t cap);
void xlate_entry_free(struct xlate_ctx *ctx, struct xl_entry *e);

/* xlate_gateway.c: the second half of a pass. */
/* Brings accepted Gateway |gwe|'s memo (ctx->gw_memo) up to date with this
 * pass's touched VirtualServices and Upstreams: selection, resolutions,
 * domain claims, the four resource sets and their versions. Returns 0 or
 * -1 (memory). */
int xlate_build_gateway(struct xlate_ctx *ctx, struct xl_entry *gwe);
/* Frees a Gateway's memo (NULL: nothing), marking the reports that
 * depended on it. Returns 0 or -1. */
int xlate_gw_memo_drop(struct xlate_ctx *ctx, struct xl_gw_memo *m);
void xlate_gw_memo_free(struct xl_gw_memo *m);
/* Upstream |up|'s count in Gateway memo |m| (the accepted VirtualServices
 * sending to it), or NULL when none sends to it. Remembered in |up|'s memo
 * for the next lookup. */
struct xl_ucount *xlate_gw_ucount(const struct xl_gw_memo *m, const struct xl_entry *up);

/* xlate.c: the context */
/* xlate_resource_new with the context's SHA-256 (same version). Takes
 * ownership of |bytes|. */
struct xds_resource *xlate_ctx_resource_new(struct xlate_ctx *ctx, enum xds_type type,
                                            const char *name, uint8_t *bytes, size_t len);

#endif
