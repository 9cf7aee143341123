/*
 * xds_server: the xDS server of a replica — gRPC ADS (state of the world,
 * v3) over HTTP/2 (h2c or TLS), serving the current snapshot to proxies.
 *
 * It ties the transport (xds_h2), the per-stream state machine (xds_ads)
 * and the snapshot cache (xds_cache) together: each request is applied to
 * its stream's state; each new snapshot wakes the streams of the node groups
 * whose resources changed; NACKs are counted per node group and type, logged
 * with the client's error and handed to a callback (the status writer puts
 * them on the Gateway's status).
 *
 * The daemon's use:
 *   srv = xds_server_new(base, &cfg, err, sizeof(err));
 *   xds_server_on_nack(srv, cb, user);            // optional
 *   xds_server_set_snapshot(srv, snap);           // after every translation
 *   ... xds_server_nack_stat(srv, "ns/gw", XDS_CLUSTER, &st) ...
 *   xds_server_shutdown(srv, 2000, done, arg);    // GOAWAY, then
 *   xds_server_free(srv);
 * The REST-JSON debug endpoint is in xds_rest.h.
 *
 * Everything runs on the main loop (the event_base's thread).
 */
#ifndef XDS_SERVER_H
#define XDS_SERVER_H

#include "xds_types.h"

#include <event2/event.h>

#define XDS_ADS_PATH \
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"

struct xds_server;

typedef void (*xds_nack_cb)(void *user, const struct xds_nack *nack);

/* Listens on cfg->listen (TLS when tls_cert and tls_key are set). Sets
 * SIGPIPE to ignored if it was at its default (a vanished peer must not end
 * the process). Returns the server, or NULL with a message in |err|. */
struct xds_server *xds_server_new(struct event_base *base, const struct xds_server_config *cfg,
                                  char *err, size_t errlen);

/* The bound port (useful with port 0). */
int xds_server_port(const struct xds_server *s);

/* Makes |snap| the served snapshot: the server takes a reference of its own
 * (the caller keeps its reference). NULL withdraws it (streams get nothing
 * new until the next one). Streams whose subscribed resources changed are
 * answered before this returns (queued on their connections). */
void xds_server_set_snapshot(struct xds_server *s, struct xlate_snapshot *snap);

/* Called on every NACK (after it is counted). */
void xds_server_on_nack(struct xds_server *s, xds_nack_cb cb, void *user);

/* Copies the NACK record of |group| and |type|. Returns 0, or -1 if that
 * group never NACKed that type. */
int xds_server_nack_stat(const struct xds_server *s, const char *group, enum xds_type type,
                         struct xds_nack_stat *out);

/* Calls |fn| for every group and type that NACKed at least once. */
void xds_server_foreach_nack(const struct xds_server *s,
                             void (*fn)(void *user, const char *group, enum xds_type type,
                                        const struct xds_nack_stat *st),
                             void *user);

/* Debugging tap: called with every DiscoveryRequest's bytes before it is
 * applied (node_id is "" until the stream's first request was seen). */
typedef void (*xds_request_tap)(void *user, const char *node_id, const uint8_t *msg, size_t len);
void xds_server_on_request(struct xds_server *s, xds_request_tap tap, void *user);

void xds_server_stats(const struct xds_server *s, struct xds_server_stats *out);

/* Push latency: every ACK's delay since the snapshot (or request) that made
 * the response, in a log2 histogram: bucket i counts delays < 2^i us
 * (the last bucket is open). */
#define XDS_LATENCY_BUCKETS 24
void xds_server_latency(const struct xds_server *s, uint64_t out[XDS_LATENCY_BUCKETS]);

/* The cache (for xds_rest). */
struct xds_cache *xds_server_cache(struct xds_server *s);
const char *xds_server_default_group(const struct xds_server *s);

/* 1 unless the server runs with XDS_AUTH_NONE. */
int xds_server_auth_required(const struct xds_server *s);

/* The token cache's counters (zero without a reviewer). */
struct xds_tokens_stats;
void xds_server_token_stats(const struct xds_server *s, struct xds_tokens_stats *out);

/* Stops accepting, ends every stream with UNAVAILABLE and sends GOAWAY;
 * |done| runs once every connection is closed (at most |grace_ms| later). */
void xds_server_shutdown(struct xds_server *s, int grace_ms, void (*done)(void *), void *arg);

/* Stops serving and tells every proxy to go elsewhere: the listener is
 * closed (connections refused), every stream ends with UNAVAILABLE and
 * every connection gets GOAWAY (closed after |grace_ms| at the latest).
 * The cache, the NACK records and the REST views stay. A cold standby
 * (--standby cold) pauses when it stops leading. */
void xds_server_pause(struct xds_server *s, int grace_ms);

/* Serves again on the same address and port. Returns 0, or -1 with a
 * message in |err| (then still paused). */
int xds_server_resume(struct xds_server *s, char *err, size_t errlen);

/* 1 while paused. */
int xds_server_paused(const struct xds_server *s);

void xds_server_free(struct xds_server *s);

#endif
