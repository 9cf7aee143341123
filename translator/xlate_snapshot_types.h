/*
 * The snapshot: what the translator produces and every other part reads.
 *
 * The translator (worker thread) builds a snapshot; the main loop swaps one
 * pointer to it; the xDS server streams its encoded resources; the status
 * writer reads its reports; the publisher records its versions. A snapshot
 * and everything it points to is immutable once published. Encoded resources
 * are refcounted so that an unchanged resource keeps the same bytes (one
 * allocation, shared by every stream and by consecutive snapshots).
 *
 * Structs only; functions are in xlate_snapshot.h.
 */
#ifndef XLATE_SNAPSHOT_TYPES_H
#define XLATE_SNAPSHOT_TYPES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum xds_type {
    XDS_LISTENER = 0,
    XDS_ROUTE = 1,
    XDS_CLUSTER = 2,
    XDS_ENDPOINT = 3,
    XDS_SECRET = 4, /* SDS: certificates and CA bundles the others name */
    XDS_TYPE_COUNT = 5,
};

#define XDS_TYPE_URL_LISTENER "type.googleapis.com/envoy.config.listener.v3.Listener"
#define XDS_TYPE_URL_ROUTE    "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
#define XDS_TYPE_URL_CLUSTER  "type.googleapis.com/envoy.config.cluster.v3.Cluster"
#define XDS_TYPE_URL_ENDPOINT "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
#define XDS_TYPE_URL_SECRET   "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"

/* Versions are lower-case hex content hashes of this many characters. */
#define XDS_VERSION_LEN 16

/* One encoded xDS resource: the serialised message (Listener,
 * RouteConfiguration, Cluster, ClusterLoadAssignment or Secret — not
 * wrapped in Any).
 * Immutable after creation; freed when the last reference goes. */
struct xds_resource {
    _Atomic int refs;
    enum xds_type type;
    char *name;     /* resource name, as proxies ask for it */
    uint8_t *bytes; /* serialised message */
    size_t len;
    char version[XDS_VERSION_LEN + 1]; /* content hash of bytes */
    unsigned char bytes_big;           /* |bytes| from xlate_big_alloc */
};

/* All resources of one type for one node group, sorted by name (strcmp), no
 * duplicate names. |version| hashes every name and resource version. */
struct xds_resource_set {
    char version[XDS_VERSION_LEN + 1];
    size_t n;
    struct xds_resource **items; /* each holds one reference */
};

/* A node group: the proxies of one Gateway. */
enum xlate_gateway_mode {
    XLATE_MODE_ENVOY = 0,
    XLATE_MODE_PROXYLESS = 1,
};

/* A ServiceAccount a Gateway lets receive its configuration
 * (spec.xdsAccess.serviceAccounts). */
struct xlate_sa_ref {
    char *ns;
    char *name; /* "*": every ServiceAccount of |ns| */
};

/* Who may receive a group's configuration over xDS besides the
 * ServiceAccounts of the Gateway's own namespace (spec.xdsAccess). */
struct xlate_access {
    size_t n;
    struct xlate_sa_ref *sas; /* NULL when n is 0; strings in the same block */
    uint8_t unauthenticated;  /* clients without credentials get it, without Secrets */
};

struct xlate_group {
    char *name; /* Gateway "namespace/name" */
    enum xlate_gateway_mode mode;
    struct xds_resource_set types[XDS_TYPE_COUNT];
    struct xlate_access access;
};

enum xlate_state {
    XLATE_ACCEPTED = 0,
    XLATE_WARNING = 1,
    XLATE_REJECTED = 2,
};

/* The verdict on one input object; becomes its status. */
struct xlate_report {
    char *kind; /* "VirtualService", "Gateway", ... */
    char *namespace;
    char *name;
    char *uid;          /* may be NULL */
    int64_t generation; /* metadata.generation the verdict is for */
    enum xlate_state state;
    char *reason;  /* CamelCase condition reason, e.g. "InvalidRegex" */
    char *message; /* human-readable, precise */
};

struct xlate_snapshot {
    _Atomic int refs;
    char version[XDS_VERSION_LEN + 1]; /* hash over every group's type versions */
    size_t ngroups;
    struct xlate_group *groups; /* sorted by name */
    size_t nreports;
    struct xlate_report *reports; /* sorted by kind, namespace, name */
    /* When not NULL, |reports| is this block's array (shared, read-only)
     * and xlate_snapshot_unref drops a reference to the block instead of
     * freeing each report: consecutive snapshots share one block while no
     * report changes. */
    struct xlate_report_block *report_block;
    /* Unix seconds at which the reports may change with time alone (a
     * certificate becomes valid or expires); 0: never. The daemon
     * translates again then. */
    int64_t recheck_at;
};

/* Reports shared by consecutive snapshots (refcounted; see
 * xlate_report_block_unref). Every string of every report points into
 * |strings|. */
struct xlate_report_block {
    _Atomic int refs;
    /* References through xlate_report_block_ref (snapshots, the
     * translator): the ones that read |reports|. When they are gone the
     * array is freed at once, though newer blocks may keep the strings. */
    _Atomic int users;
    size_t n;
    struct xlate_report *reports;
    char *strings;
    /* Reports copied from an older block keep pointing into its strings:
     * this block holds a reference to it (NULL for a full block). */
    struct xlate_report_block *base;
    int depth; /* blocks in the base chain */
};

#endif
