/*
 * xds_sub: what the state-of-the-world (xds_ads) and the delta (xds_delta)
 * stream machines share, I/O-free: one implementation of
 *   - a request's decoding under the wire bounds (xds_pbcheck before
 *     protobuf-c), the node kept from a stream's first request and its
 *     group, the type_url check;
 *   - per type, the exchange of responses and their ACK/NACK: nonces from a
 *     per-stream counter, one response outstanding, stale nonces, a NACK
 *     repeated on one nonce counted once;
 *   - the sorted lookups of subscriptions and resource sets, the budget
 *     charged with what a client makes a stream keep;
 *   - the wire pieces of both responses (Any, control_plane).
 *
 * Single-threaded: a stream is touched by the main loop only.
 */
#ifndef XDS_SUB_H
#define XDS_SUB_H

#include "xds_types.h"

#include <protobuf-c/protobuf-c.h>

struct Envoy__Config__Core__V3__Node;
struct Google__Rpc__Status;

/* LDS and CDS are full-state types: a wildcard is "*" (or, on a stream's
 * first request, no name at all) and SotW responses carry every resource. */
int xds_sub_full_state(enum xds_type t);

/* Bounded copy that always terminates (NULL copies ""). */
void xds_sub_copy(char *dst, size_t cap, const char *src);

/* ---- requests ------------------------------------------------------------------ */

/* Checks |msg| against the wire bounds (nesting, element count), then
 * decodes it as |desc|. Returns 0 with *out set (free with
 * protobuf_c_message_free_unpacked), XDS_ADS_EBOUND (ev->pb_error says
 * which bound) or XDS_ADS_EINVAL. */
__attribute__((warn_unused_result)) int xds_sub_decode(const ProtobufCMessageDescriptor *desc,
                                                       const uint8_t *msg, size_t len,
                                                       struct xds_ads_event *ev,
                                                       ProtobufCMessage **out);

/* A request's node and type: on the stream's first request the node's
 * fields are kept (ev->first_node); then |type_url| must be set
 * (XDS_ADS_EINVAL) and name a type we serve (else *type = -1 and
 * ev->verdict = XDS_ADS_UNKNOWN_TYPE). Returns 0 or an XDS_ADS_E* error. */
__attribute__((warn_unused_result)) int
xds_sub_begin(struct xds_node *n, const struct Envoy__Config__Core__V3__Node *node,
              const char *type_url, const char *default_group, struct xds_ads_event *ev, int *type);

/* Frees the node's strings (the struct may be reused after). */
void xds_sub_node_free(struct xds_node *n);

/* The ACK/NACK side of a request of type |x|: |nonce| ("" or NULL: none)
 * and |error| (a NACK when set). Fills ev->verdict: SUBSCRIBE (no nonce,
 * or a repeat of an answered nonce: a NACK counts once, an ACK after a NACK
 * on the same nonce still counts), STALE (not the latest nonce), ACK or
 * NACK (with ev->version, ev->origin_ns and the NACK's code and message). */
void xds_sub_on_nonce(struct xds_exchange *x, const char *nonce,
                      const struct Google__Rpc__Status *error, struct xds_ads_event *ev);

/* 1 when type |x| may be answered now: requested, nothing outstanding and a
 * set to answer from. */
int xds_sub_ready(const struct xds_exchange *x, const struct xds_resource_set *set);

/* A response of version |version| goes out: the stream's next nonce into
 * |nonce| (XDS_NONCE_MAX bytes), kept as the one to be answered. */
void xds_sub_sent(struct xds_exchange *x, uint64_t *nonce_counter, const char *version,
                  int64_t origin_ns, char *nonce);

/* ---- sorted lookups ------------------------------------------------------------- */

/* Index of |name| in the sorted |v| (n strings), or where it would go. */
size_t xds_sub_find_str(char *const *v, size_t n, const char *name, int *found);
/* |name| in the name-sorted |items|, or NULL. */
struct xds_resource *xds_sub_find_res(struct xds_resource *const *items, size_t n,
                                      const char *name);

/* ---- the budget -------------------------------------------------------------------
 * What a client makes a stream keep is charged to the server's budget
 * (NULL: none); the server refuses the request that spends it. |charged|
 * is what this holder charged, so that it never gives back more. */
void xds_sub_charge(struct xds_budget *b, size_t *charged, size_t n);
void xds_sub_uncharge(struct xds_budget *b, size_t *charged, size_t n);

/* ---- wire pieces -------------------------------------------------------------------- */

/* Emits the key and length of the length-delimited field |field| (+ the
 * |len| bytes of |s| when |s| is given). */
int xds_sub_emit_ld(xds_ads_emit_fn emit, void *user, uint32_t field, size_t len, const char *s);
/* A resource wrapped in google.protobuf.Any of type |url|, as field |field|:
 * its size, and its emission (the resource's bytes are one piece, |res|
 * set, so that the caller may reference them). */
size_t xds_sub_any_size(const char *url, const struct xds_resource *r);
int xds_sub_emit_any(xds_ads_emit_fn emit, void *user, uint32_t field, const char *url,
                     struct xds_resource *r);
/* control_plane { identifier } as field |field| (nothing for NULL or ""). */
size_t xds_sub_control_plane_size(uint32_t field, const char *identifier);
int xds_sub_emit_control_plane(xds_ads_emit_fn emit, void *user, uint32_t field,
                               const char *identifier);

#endif
