/*
 * xdsc: our own gRPC/ADS test client on nghttp2 + libevent (h2c or TLS with
 * ALPN h2), on the same protos as the server. Used by the xDS unit and e2e
 * tests and by bench/bench_xds.c as its load generator.
 *
 * Two layers: a generic HTTP/2 gRPC client (any path, content type and raw
 * bytes, so tests can send what real clients never would) and an ADS stream
 * on top of it, state of the world or delta, that builds requests, decodes
 * responses, keeps per type the last version/nonce and the resources the
 * client holds, and can ACK automatically.
 *
 * Single-threaded, on the caller's event_base.
 */
#ifndef XDSC_H
#define XDSC_H

#include "cx_buf.h"
#include "cxt_loop.h"
#include "xlate_snapshot_types.h"

#include "envoy/service/discovery/v3/discovery.pb-c.h"

#include <event2/event.h>
#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>

struct xdsc;
struct xdsc_call;

struct xdsc_call_cbs {
    void (*on_headers)(void *user, struct xdsc_call *call, int http_status);
    void (*on_message)(void *user, struct xdsc_call *call, const uint8_t *msg, size_t len);
    /* grpc_status is -1 when the stream ended without one (reset or a bare
     * HTTP status); http_status 0 when no response headers came. */
    void (*on_close)(void *user, struct xdsc_call *call, int grpc_status, const char *grpc_message,
                     int http_status);
};

/* Connects to 127.0.0.1-style numeric |host|:|port|; TLS when |ssl_ctx| is
 * set (ALPN h2, SNI |sni| if non-NULL). Returns NULL on immediate failure. */
struct xdsc *xdsc_connect(struct event_base *base, const char *host, int port, SSL_CTX *ssl_ctx,
                          const char *sni);
/* Same, offering ALPN |alpn| (wire format, |alpn_len| bytes; 0: none). */
struct xdsc *xdsc_connect_alpn(struct event_base *base, const char *host, int port,
                               SSL_CTX *ssl_ctx, const char *sni, const unsigned char *alpn,
                               unsigned alpn_len);
/* 1 while connected, 0 once the connection closed. */
int xdsc_alive(const struct xdsc *c);
/* 1 once a GOAWAY arrived. */
int xdsc_goaway(const struct xdsc *c);
/* Number of PINGs received from the server. */
unsigned xdsc_pings(const struct xdsc *c);
/* Stops answering PINGs (simulates a dead peer). */
void xdsc_ignore_pings(struct xdsc *c);
/* Reads at most |bytes_per_s| from the socket (a slow reader); 0: no limit. */
int xdsc_limit_read(struct xdsc *c, size_t bytes_per_s);
void xdsc_free(struct xdsc *c);

struct xdsc_call *xdsc_call_open(struct xdsc *c, const char *path, const char *content_type,
                                 const struct xdsc_call_cbs *cbs, void *user);
/* The same with an `authorization` header (NULL: none). */
struct xdsc_call *xdsc_call_open_auth(struct xdsc *c, const char *path, const char *content_type,
                                      const char *authorization, const struct xdsc_call_cbs *cbs,
                                      void *user);
/* Sends one message (adds the 5-byte prefix). Returns 0/-1. */
int xdsc_call_send(struct xdsc_call *call, const void *msg, size_t len);
/* Sends raw DATA bytes (no prefix). */
int xdsc_call_send_raw(struct xdsc_call *call, const void *bytes, size_t len);
void xdsc_call_close_send(struct xdsc_call *call);
/* No more callbacks for |call| (its owner goes; the connection frees it). */
void xdsc_call_detach(struct xdsc_call *call);
/* 1 once the call ended (on_close ran). */
int xdsc_call_done(const struct xdsc_call *call);

/* ---- ADS: state of the world and delta ---------------------------------------
 * One stream object for both methods (tests/lib/xdsc_ads.c): the node goes
 * with the first request; per type the last version and nonce; responses
 * queued for the test (keep) and ACKed at once (auto_ack); the client's
 * view of what it holds per type (name -> version and bytes), kept by the
 * rules of its mode: SotW LDS/CDS responses replace the view, RDS/EDS add
 * to it; delta responses add, replace and remove (removed_resources). */

struct xdsc_ads;
typedef Envoy__Service__Discovery__V3__DiscoveryResponse xdsc_response;
typedef Envoy__Service__Discovery__V3__DeltaDiscoveryResponse xdsc_delta_response;

/* Called for each response, after the view is updated, before any auto-ACK. */
typedef void (*xdsc_ads_cb)(void *user, struct xdsc_ads *a, const xdsc_response *r);
typedef void (*xdsc_delta_cb)(void *user, struct xdsc_ads *a, const xdsc_delta_response *r);

struct xdsc_ads_config {
    const char *node_id;
    const char *cluster;       /* may be NULL (SotW only) */
    const char *gateway;       /* node.metadata coxswain.dev/gateway; may be NULL */
    int delta;                 /* DeltaAggregatedResources instead of StreamAggregatedResources */
    int auto_ack;              /* ACK every response (SotW: with the same names) */
    int keep;                  /* queue responses for xdsc_ads_wait / xdsc_ads_delta_wait */
    const char *authorization; /* "Bearer <token>" header; NULL: none */
    xdsc_ads_cb on_response;   /* SotW */
    xdsc_delta_cb on_delta_response; /* delta */
    void *user;
};

struct xdsc_ads *xdsc_ads_open(struct xdsc *c, const struct xdsc_ads_config *cfg);

/* SotW: a DiscoveryRequest for |type| with |names| (n may be 0). version
 * and nonce: NULL uses the last received for that type. |nack| non-NULL
 * makes it a NACK with that message (code 3). -1 on a delta stream. */
int xdsc_ads_request(struct xdsc_ads *a, enum xds_type type, const char *const *names, size_t n,
                     const char *version, const char *nonce, const char *nack);

/* Delta: a DeltaDiscoveryRequest for |type|: subscribe |sub| (nsub),
 * unsubscribe |unsub|, initial versions |init_names|/|init_versions|
 * (ninit), the response_nonce |nonce| (NULL: none) and, with |nack|,
 * error_detail (code 3). -1 on a SotW stream. */
int xdsc_ads_delta_request(struct xdsc_ads *a, enum xds_type type, const char *const *sub,
                           size_t nsub, const char *const *unsub, size_t nunsub,
                           const char *const *init_names, const char *const *init_versions,
                           size_t ninit, const char *nonce, const char *nack);

/* The next queued response (free with xdsc_response_free /
 * xdsc_delta_response_free), waiting up to |timeout_ms| for the _wait
 * forms; NULL if none came, the stream closed or the mode differs. */
xdsc_response *xdsc_ads_pop(struct xdsc_ads *a);
xdsc_response *xdsc_ads_wait(struct xdsc_ads *a, struct event_base *base, int timeout_ms);
xdsc_delta_response *xdsc_ads_delta_wait(struct xdsc_ads *a, struct event_base *base,
                                         int timeout_ms);
void xdsc_response_free(xdsc_response *r);
void xdsc_delta_response_free(xdsc_delta_response *r);
size_t xdsc_ads_queued(const struct xdsc_ads *a);

unsigned xdsc_ads_responses(const struct xdsc_ads *a);
/* Last version (SotW version_info, delta system_version_info) / nonce
 * received for |type| ("" if none). */
const char *xdsc_ads_version(const struct xdsc_ads *a, enum xds_type type);
const char *xdsc_ads_nonce(const struct xdsc_ads *a, enum xds_type type);

/* The view: how many resources of |type| the client holds; one's version
 * (delta: the resource's, SotW: the response's; NULL if it holds no such
 * name); the i-th (sorted by name) with its version and bytes. */
size_t xdsc_ads_count(const struct xdsc_ads *a, enum xds_type type);
const char *xdsc_ads_held_version(const struct xdsc_ads *a, enum xds_type type, const char *name);
const char *xdsc_ads_name_at(const struct xdsc_ads *a, enum xds_type type, size_t i,
                             const char **version, const uint8_t **bytes, size_t *len);
/* 1 when both hold the same resources of |type|, byte for byte (whatever
 * their modes). */
int xdsc_ads_same_view(const struct xdsc_ads *a, const struct xdsc_ads *b, enum xds_type type);

/* Stream end: 1 and the status once closed. */
int xdsc_ads_closed(const struct xdsc_ads *a, int *grpc_status, const char **message);
struct xdsc_call *xdsc_ads_call(struct xdsc_ads *a);
void xdsc_ads_free(struct xdsc_ads *a);

/* Encodes a DiscoveryRequest / a DeltaDiscoveryRequest (for raw tests, the
 * fuzz corpus and the benchmark's load generator). Return 0/-1. */
int xdsc_encode_request(struct cx_buf *out, enum xds_type type, const char *const *names, size_t n,
                        const char *version, const char *nonce, const char *node_id,
                        const char *cluster, const char *gateway, int nack_code,
                        const char *nack_msg);
int xdsc_encode_delta_request(struct cx_buf *out, enum xds_type type, const char *const *sub,
                              size_t nsub, const char *const *unsub, size_t nunsub,
                              const char *const *init_names, const char *const *init_versions,
                              size_t ninit, const char *nonce, const char *node_id,
                              const char *gateway, const char *nack);

/* Names of the resources in |r| (decoded from the Any values only as far as
 * field 1, which is the name of every xDS resource type). Caller frees the
 * returned array and each string; *n set. */
char **xdsc_response_names(const xdsc_response *r, size_t *n);
void xdsc_names_free(char **names, size_t n);

/* ---- TLS for tests --------------------------------------------------------- */

/* Writes a test CA (ca.crt/ca.key), a server certificate for 127.0.0.1 and
 * localhost (server.crt/server.key) and a client certificate
 * (client.crt/client.key) into |dir| with the openssl tool. Returns 0/-1. */
int xdsc_make_certs(const char *dir);

/* A client TLS context trusting |ca|, presenting |cert|/|key| if non-NULL
 * (ALPN is set per connection by xdsc_connect). */
SSL_CTX *xdsc_tls_client_ctx(const char *ca, const char *cert, const char *key);

/* ---- snapshots for tests ---------------------------------------------------- */

/* A resource whose bytes are a message with field 1 = |name| and field 2 =
 * |payload| (the shape of every xDS resource's name field). */
struct xds_resource *xdsc_fake_resource(enum xds_type type, const char *name, const char *payload);

/* An empty snapshot with one reference. */
struct xlate_snapshot *xdsc_snapshot_new(void);
/* Adds |r| (ownership taken) to |group| (created on first use). 0/-1. */
int xdsc_snapshot_add(struct xlate_snapshot *s, const char *group, struct xds_resource *r);
/* Sorts groups, seals every set and the snapshot. 0/-1 (duplicate names). */
int xdsc_snapshot_seal(struct xlate_snapshot *s);

#endif
