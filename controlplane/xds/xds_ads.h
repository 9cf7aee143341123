/*
 * xds_ads: the ADS state-of-the-world stream state machine, I/O-free.
 *
 * One struct xds_ads_stream per gRPC stream. Requests go in as serialised
 * DiscoveryRequest bytes (xds_ads_on_request); xds_ads_next() then says what
 * to send, given the resources of the stream's node group in the current
 * snapshot. No sockets, no clocks (the caller passes timestamps), no
 * globals: the unit tests and the fuzz target drive it with recorded bytes.
 *
 * Rules (reference/xds.md): per type the subscribed names, the version and
 * nonce last sent, ACK/NACK (NACK = error_detail present; the exchange and
 * the node are xds_sub's, shared with delta); node kept from the
 * first request; wildcard for LDS/CDS ("*" or a legacy empty first request);
 * requests with a stale nonce ignored; at most one response per type
 * outstanding (the next waits for the ACK/NACK, which also coalesces pushes);
 * names that do not exist are remembered and sent when they appear;
 * LDS/CDS responses carry the full subscribed state, RDS/EDS only what the
 * client does not hold yet (and so do SDS Secrets); only changes are sent;
 * several types are answered in Envoy's make-before-break order CDS, EDS,
 * then SDS, LDS, RDS.
 *
 * Single-threaded: a stream is touched by the main loop only.
 */
#ifndef XDS_ADS_H
#define XDS_ADS_H

#include "cx_buf.h"
#include "xds_types.h"

/* |pool| (may be NULL) interns subscription lists; it must outlive the
 * stream. */
void xds_ads_stream_init(struct xds_ads_stream *s);
void xds_ads_stream_set_pool(struct xds_ads_stream *s, struct xds_names_pool *pool);

struct xds_names_pool *xds_names_pool_new(void);
/* Frees the pool; every stream using it must be gone. */
void xds_names_pool_free(struct xds_names_pool *p);
/* Drops every name and reference the stream holds. */
void xds_ads_stream_free(struct xds_ads_stream *s);

/* Applies one DiscoveryRequest (|len| bytes). The first request fixes the
 * node and its group: node.metadata["coxswain.dev/gateway"] (a string), else
 * node.cluster, else |default_group| (may be NULL: ""). Fills |ev| with what
 * happened. Returns 0, or one of: XDS_ADS_EINVAL (not a DiscoveryRequest,
 * empty type_url), XDS_ADS_EBOUND (nested deeper than XDS_PB_MAX_DEPTH or
 * too many elements: refused on the wire before decoding, ev->pb_error says
 * which), XDS_ADS_ELIMIT (too many names), XDS_ADS_ENOMEM; the stream
 * should then end with an error. */
__attribute__((warn_unused_result)) int xds_ads_on_request(struct xds_ads_stream *s,
                                                           const uint8_t *msg, size_t len,
                                                           const char *default_group,
                                                           struct xds_ads_event *ev);

/* The resources of each type for the stream's group. NULL as a whole (no
 * snapshot yet) means "send nothing"; a group missing from the snapshot is
 * passed as empty sets. */
struct xds_ads_sets {
    const struct xds_resource_set *t[XDS_TYPE_COUNT];
};

/* Computes the next response to send, types in make-before-break order
 * (CDS, EDS, SDS, LDS, RDS). |origin_ns| is remembered with the response and
 * handed back with its ACK/NACK (push latency). Returns 1 with |out| filled
 * (caller calls xds_ads_response_clear), 0 when nothing is to be sent, or
 * XDS_ADS_ENOMEM. */
__attribute__((warn_unused_result)) int xds_ads_next(struct xds_ads_stream *s,
                                                     const struct xds_ads_sets *sets,
                                                     int64_t origin_ns,
                                                     struct xds_ads_response *out);

void xds_ads_response_clear(struct xds_ads_response *r);

/* Serialised size of the DiscoveryResponse for |r| (|identifier|, may be
 * NULL, fills control_plane.identifier). */
size_t xds_ads_response_size(const struct xds_ads_response *r, const char *identifier);

/* Emits the serialised DiscoveryResponse as a sequence of pieces: each call
 * gives bytes to append; |res| is non-NULL when the piece is the encoded
 * bytes of that resource (the caller may reference them instead of copying:
 * each resource is encoded once and only wrapped in Any here). Returns 0 or
 * the first non-zero value |emit| returned. */
int xds_ads_response_emit(const struct xds_ads_response *r, const char *identifier,
                          xds_ads_emit_fn emit, void *user);

/* The same in three parts, so that the middle one — the resources wrapped
 * in Any, identical for every stream that gets the same list — can be
 * encoded once and shared: head (version_info), resources, tail (type_url,
 * nonce, control_plane). Sizes add up to xds_ads_response_size(). */
size_t xds_ads_resources_size(enum xds_type type, struct xds_resource *const *items, size_t n);
int xds_ads_emit_head(const struct xds_ads_response *r, xds_ads_emit_fn emit, void *user);
int xds_ads_emit_resources(enum xds_type type, struct xds_resource *const *items, size_t n,
                           xds_ads_emit_fn emit, void *user);
int xds_ads_emit_tail(const struct xds_ads_response *r, const char *identifier,
                      xds_ads_emit_fn emit, void *user);

/* Appends the serialised DiscoveryResponse to |b|. Returns 0 or -1 (cap). */
__attribute__((warn_unused_result)) int
xds_ads_response_encode(const struct xds_ads_response *r, const char *identifier, struct cx_buf *b);

/* Make-before-break order: the i-th type to answer (i < XDS_TYPE_COUNT). */
enum xds_type xds_ads_order(int i);

#endif
