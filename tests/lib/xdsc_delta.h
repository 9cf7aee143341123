/*
 * xdsc_delta: a delta (incremental) ADS client for tests and benchmarks, on
 * the xdsc gRPC client: DeltaDiscoveryRequests with subscribe/unsubscribe
 * lists, initial_resource_versions and nonces; each DeltaDiscoveryResponse
 * is applied to the client's view (name -> version per type: resources
 * added or updated, removed_resources deleted), optionally ACKed at once,
 * and queued for the test.
 *
 * Single-threaded, on the caller's event_base.
 */
#ifndef XDSC_DELTA_H
#define XDSC_DELTA_H

#include "xdsc.h"

typedef Envoy__Service__Discovery__V3__DeltaDiscoveryResponse xdsc_delta_response;

struct xdsc_delta;

typedef void (*xdsc_delta_cb)(void *user, struct xdsc_delta *d, const xdsc_delta_response *r);

struct xdsc_delta_config {
    const char *node_id;
    const char *gateway;       /* node.metadata coxswain.dev/gateway; may be NULL */
    const char *authorization; /* "Bearer <token>"; NULL: none */
    int auto_ack;              /* ACK every response (nonce, nothing else) */
    int keep;                  /* queue responses for xdsc_delta_wait() */
    xdsc_delta_cb on_response; /* after the view is updated, before the ACK */
    void *user;
};

struct xdsc_delta *xdsc_delta_open(struct xdsc *c, const struct xdsc_delta_config *cfg);
void xdsc_delta_free(struct xdsc_delta *d);

/* One DeltaDiscoveryRequest for |type|: subscribe |sub| (nsub), unsubscribe
 * |unsub|, initial versions |init_names|/|init_versions| (ninit), the
 * response_nonce |nonce| (NULL: none) and, with |nack|, error_detail (code
 * 3). The node goes with the stream's first request. Returns 0/-1. */
int xdsc_delta_request(struct xdsc_delta *d, enum xds_type type, const char *const *sub,
                       size_t nsub, const char *const *unsub, size_t nunsub,
                       const char *const *init_names, const char *const *init_versions,
                       size_t ninit, const char *nonce, const char *nack);

/* Encodes one (for the fuzz corpus and raw tests). Returns 0/-1. */
int xdsc_encode_delta_request(struct cx_buf *out, enum xds_type type, const char *const *sub,
                              size_t nsub, const char *const *unsub, size_t nunsub,
                              const char *const *init_names, const char *const *init_versions,
                              size_t ninit, const char *nonce, const char *node_id,
                              const char *gateway, const char *nack);

/* The next queued response (free with xdsc_delta_response_free), waiting up
 * to |timeout_ms|; NULL if none came (or the stream closed). */
xdsc_delta_response *xdsc_delta_wait(struct xdsc_delta *d, struct event_base *base,
                                     int timeout_ms);
void xdsc_delta_response_free(xdsc_delta_response *r);
size_t xdsc_delta_queued(const struct xdsc_delta *d);
unsigned xdsc_delta_responses(const struct xdsc_delta *d);
/* Nonce of the last response of |type| ("" if none). */
const char *xdsc_delta_nonce(const struct xdsc_delta *d, enum xds_type type);

/* The client's view of |type|: how many resources, and one's version (NULL
 * if it holds no such name). */
size_t xdsc_delta_count(const struct xdsc_delta *d, enum xds_type type);
const char *xdsc_delta_version(const struct xdsc_delta *d, enum xds_type type, const char *name);
/* The i-th held name (sorted) and its version. */
const char *xdsc_delta_name_at(const struct xdsc_delta *d, enum xds_type type, size_t i,
                               const char **version);

int xdsc_delta_closed(const struct xdsc_delta *d, int *grpc_status, const char **message);

#endif
