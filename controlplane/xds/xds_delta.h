/*
 * xds_delta: the incremental (delta) ADS stream state machine, I/O-free —
 * DeltaAggregatedResources for Listeners, Routes, Clusters and Endpoints.
 *
 * One struct xds_delta_stream per gRPC stream. Requests go in as serialised
 * DeltaDiscoveryRequest bytes (xds_delta_on_request); xds_delta_next() then
 * says what to send — the resources the client does not hold at their
 * current version, and the names it holds that are gone — given the
 * resources of the stream's node group in the current snapshot.
 *
 * Rules (the xDS protocol's incremental variant):
 *   - per type: the subscribed names, or a wildcard (LDS/CDS: "*", or a
 *     first request that subscribes to nothing; "*" is a plain name for
 *     RDS/EDS); resource_names_subscribe / _unsubscribe change it at any
 *     time, whatever the nonce (they are never repeated);
 *   - what the client holds, name -> version: from what we sent, and on a
 *     stream's first request of a type from initial_resource_versions
 *     (versions are content hashes, equal on every replica, so a client
 *     that reconnects elsewhere is sent nothing it has);
 *   - a response carries the resources whose version differs from the
 *     client's and removed_resources for the names it holds (or subscribed
 *     to and was never told about) that do not exist; nothing is sent when
 *     nothing differs;
 *   - nonces are a per-stream counter; one response per type is
 *     outstanding at a time (the next waits for its ACK/NACK, which also
 *     coalesces pushes); NACK = error_detail; a NACKed resource is not sent
 *     again until it changes (the node, the exchange of nonces and ACK/NACK,
 *     lookups, the budget and the wire pieces are xds_sub's, shared with
 *     SotW);
 *   - unsubscribed names are forgotten (no removal is sent for them).
 *
 * What the client holds is kept cheaply for wildcard subscriptions: once
 * answered, such a client holds exactly the group's set at one version, so
 * the stream references an interned copy of that set (its resources by
 * reference, shared by every stream that holds the same version) instead of
 * a name -> version table; a push diffs two sorted sets, comparing
 * pointers first. Named subscriptions keep their versions beside the names.
 *
 * Single-threaded: a stream is touched by the main loop only.
 */
#ifndef XDS_DELTA_H
#define XDS_DELTA_H

#include "xds_ads.h"
#include "xds_types.h"

#define XDS_DELTA_PATH \
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"

/* A name the client holds, at a version ("": told it does not exist). */
struct xds_delta_held {
    char *name;
    char version[XDS_VERSION_LEN + 1];
};

struct xds_delta_set;  /* a set a wildcard client holds (interned) */
struct xds_delta_pool; /* the interned sets, shared by a server's streams */

struct xds_delta_type {
    struct xds_exchange x; /* nonces, ACK/NACK (xds_sub.h, as SotW) */
    uint8_t wildcard;
    uint8_t dirty;                       /* the subscription or the held table changed: evaluate */
    char **subs;                         /* explicit subscriptions, sorted, owned */
    char (*subver)[XDS_VERSION_LEN + 1]; /* the version the client holds of each
                                          * ("": told absent, "\x01": nothing told) */
    size_t nsubs;
    /* what a wildcard client holds: the whole |shared| set once answered,
     * else the |held| table (initial_resource_versions) */
    struct xds_delta_set *shared;
    struct xds_delta_held *held; /* sorted by name */
    size_t nheld;
    const struct xds_resource_set *eval_set; /* the set last evaluated (borrowed, compared) */
    char eval_version[XDS_VERSION_LEN + 1];
};

struct xds_delta_stream {
    struct xds_node node;
    struct xds_delta_pool *pool;
    struct xds_budget *budget; /* charged with the names kept (may be NULL) */
    size_t charged;
    uint64_t nonce_counter;
    struct xds_delta_type types[XDS_TYPE_COUNT];
};

/* One response: |items| (a reference each) and |removed| (owned names). */
struct xds_delta_response {
    enum xds_type type;
    char version[XDS_VERSION_LEN + 1]; /* system_version_info: the set's version */
    char nonce[XDS_NONCE_MAX];
    size_t n;
    struct xds_resource **items;
    size_t nremoved;
    char **removed;
};

struct xds_delta_pool *xds_delta_pool_new(void);
/* Frees the pool; every stream using it must be gone. */
void xds_delta_pool_free(struct xds_delta_pool *p);
/* Interned sets alive. */
size_t xds_delta_pool_count(const struct xds_delta_pool *p);

/* |pool| must outlive the stream; |budget| (may be NULL) is charged with
 * the names the client makes the stream keep (the server refuses a request
 * that spends it). */
void xds_delta_stream_init(struct xds_delta_stream *s, struct xds_delta_pool *pool,
                           struct xds_budget *budget);
void xds_delta_stream_free(struct xds_delta_stream *s);

/* Applies one DeltaDiscoveryRequest (|len| bytes); the first fixes the node
 * and its group as for SotW. Fills |ev| (verdict, type, first_node,
 * ACK/NACK details). Returns 0 or XDS_ADS_EINVAL / EBOUND / ELIMIT / ENOMEM
 * (the stream should then end with an error). */
__attribute__((warn_unused_result)) int xds_delta_on_request(struct xds_delta_stream *s,
                                                             const uint8_t *msg, size_t len,
                                                             const char *default_group,
                                                             struct xds_ads_event *ev);

/* The next response to send (types in make-before-break order), given the
 * group's sets (NULL before the first snapshot: nothing). Returns 1 with
 * |out| filled (xds_delta_response_clear after), 0 when nothing is due, or
 * XDS_ADS_ENOMEM. */
__attribute__((warn_unused_result)) int xds_delta_next(struct xds_delta_stream *s,
                                                       const struct xds_ads_sets *sets,
                                                       int64_t origin_ns,
                                                       struct xds_delta_response *out);

void xds_delta_response_clear(struct xds_delta_response *r);

/* Serialised DeltaDiscoveryResponse: size, and emission in pieces (a piece
 * with |res| set is that resource's encoded bytes, which the caller may
 * reference instead of copying). */
size_t xds_delta_response_size(const struct xds_delta_response *r, const char *identifier);
int xds_delta_response_emit(const struct xds_delta_response *r, const char *identifier,
                            xds_ads_emit_fn emit, void *user);

#endif
