/*
 * xds_h2: a small gRPC server transport on nghttp2 and libevent
 * bufferevents — h2c with prior knowledge or TLS (ALPN "h2", optional client
 * certificates).
 *
 * It owns the listener, the connections and the HTTP/2 sessions; it frames
 * and deframes gRPC messages (bounded size), answers unknown paths with
 * grpc-status 12 and non-gRPC content types with HTTP 415, ends calls with
 * trailers (grpc-status, percent-encoded grpc-message), pings idle
 * connections and drops those that stop answering, caps connections and
 * concurrent streams, and sends GOAWAY on shutdown.
 *
 * What a call means is up to the methods registered at creation: the
 * transport calls them back with each complete message and they answer with
 * xds_h2_stream_send()/xds_h2_stream_finish(). Everything runs on the
 * event_base's loop thread (the main loop); nothing here is thread-safe.
 */
#ifndef XDS_H2_H
#define XDS_H2_H

#include "xds_types.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>

struct xds_h2_server;
struct xds_h2_stream;

/* One gRPC method. Every callback gets the context on_open returned.
 * Callbacks may call xds_h2_stream_send/finish but never free the server. */
struct xds_h2_method {
    const char *path; /* "/pkg.Service/Method" */
    /* A new call. Returns the call's context, or NULL after calling
     * xds_h2_stream_finish() to refuse it. */
    void *(*on_open)(void *user, struct xds_h2_stream *st);
    /* One complete request message. Returns 0, or a gRPC status (> 0) to end
     * the call with (the message is then taken from |*errmsg| if set to a
     * static or call-owned string). */
    int (*on_message)(void *ctx, const uint8_t *msg, size_t len, const char **errmsg);
    /* The client half-closed its side. */
    void (*on_half_close)(void *ctx);
    /* The queued output fell below XDS_H2_STREAM_LOW after
     * xds_h2_stream_queued() had been above it. */
    void (*on_writable)(void *ctx);
    /* The call is gone (finished, reset or its connection closed). The stream
     * pointer is invalid afterwards. */
    void (*on_close)(void *ctx);
};

struct xds_h2_config {
    const char *listen;       /* "host:port", "[v6]:port", ":port"; port 0 picks one */
    SSL_CTX *ssl_ctx;         /* NULL: h2c; else TLS (the server takes a reference) */
    size_t max_message;       /* cap on one request message; 0: 4 MiB */
    unsigned max_connections; /* 0: 10000 */
    unsigned max_streams;     /* concurrent streams per connection; 0: 100 */
    int keepalive_ms;         /* PING after this much silence; 0: 30000; < 0: off */
    int handshake_timeout_ms; /* TLS + preface deadline; 0: 10000 */
    int idle_conn_ms;         /* close a connection without calls after this; 0: 300000; < 0 off */
    void (*on_counts)(void *user); /* xds_h2_counts changed outside a call (idle close,
                                    * accept pause); gets the |user| of the server */
    struct xds_budget *budget;     /* memory budget for partly received messages, shared by every
                                    * connection (one may take a quarter); caller-owned, outlives
                                    * the server; NULL: none */
};

/* Queued output (bytes) above which a stream counts as congested. */
#define XDS_H2_STREAM_LOW ((size_t)256 << 10)

struct xds_h2_counts {
    uint64_t connections;
    uint64_t connections_total;
    uint64_t connections_rejected;
    uint64_t tls_failures;
    uint64_t streams;
    uint64_t idle_closed;     /* connections closed for holding no call */
    uint64_t accept_backoffs; /* accept failed for lack of descriptors (EMFILE/ENFILE) */
};

/* Binds and listens. |methods| (|nmethods| entries) must outlive the server;
 * |user| is passed to on_open. Returns the server, or NULL with a message in
 * |err|. */
struct xds_h2_server *xds_h2_server_new(struct event_base *base, const struct xds_h2_config *cfg,
                                        const struct xds_h2_method *methods, size_t nmethods,
                                        void *user, char *err, size_t errlen);

/* The bound TCP port (the one picked for port 0). */
int xds_h2_server_port(const struct xds_h2_server *s);

void xds_h2_server_counts(const struct xds_h2_server *s, struct xds_h2_counts *out);

/* nghttp2's memory: |heap| the bytes of every session's heap blocks in the
 * process (malloc_usable_size), |mapped| the length of their mapped blocks,
 * |resident| how much of this server's mapped blocks is resident now. */
struct xds_h2_mem_stats {
    size_t heap, mapped, resident;
};
void xds_h2_server_mem(const struct xds_h2_server *s, struct xds_h2_mem_stats *out);
/* The process-wide part of the above (no server needed). */
void xds_h2_mem_usage(size_t *heap, size_t *mapped);

/* Stops accepting, ends every call with UNAVAILABLE, sends GOAWAY and closes
 * each connection once its output is flushed, or after |grace_ms| at the
 * latest. |done| (may be NULL) runs from the loop once every connection is
 * closed. Free the server afterwards (or from |done|). */
void xds_h2_server_shutdown(struct xds_h2_server *s, int grace_ms, void (*done)(void *), void *arg);

/* Stops serving without ending the server: closes the listener (new
 * connections are refused), ends every call with UNAVAILABLE, sends GOAWAY
 * and closes each connection once flushed, or after |grace_ms|, so that
 * clients go to another server. No-op when paused or shutting down. */
void xds_h2_server_pause(struct xds_h2_server *s, int grace_ms);

/* Listens again on the same address and port after a pause. Returns 0
 * (also when not paused), or -1 with a message in |err| (the port is
 * taken; the server stays paused and may be resumed later). */
int xds_h2_server_resume(struct xds_h2_server *s, char *err, size_t errlen);

/* 1 while paused. */
int xds_h2_server_paused(const struct xds_h2_server *s);

/* Closes everything at once (calls on_close for every open call). */
void xds_h2_server_free(struct xds_h2_server *s);

/* Queues one framed message (the caller wrote the 5-byte prefix): the bytes
 * of |framed| are moved (not copied; references stay references). Returns
 * 0, or -1 if the call is finishing. */
__attribute__((warn_unused_result)) int xds_h2_stream_send(struct xds_h2_stream *st,
                                                           struct evbuffer *framed);

/* Bytes queued and not yet handed to the socket. */
size_t xds_h2_stream_queued(const struct xds_h2_stream *st);

/* Ends the call after the queued messages with |status| and |message|
 * (may be NULL). Idempotent; later sends fail. */
void xds_h2_stream_finish(struct xds_h2_stream *st, int status, const char *message);

/* "ip:port" of the peer. */
const char *xds_h2_stream_peer(const struct xds_h2_stream *st);

/* Zeroed memory for the call's own state (on_open), from its connection's
 * page while it fits (what an idle connection keeps resident is then one
 * page), else the heap; or NULL. Freed with xds_h2_stream_mem_free before
 * on_close returns. */
void *xds_h2_stream_mem_alloc(struct xds_h2_stream *st, size_t n);
void xds_h2_stream_mem_free(struct xds_h2_stream *st, void *p);

/* The request's `authorization` header, or NULL. Valid in on_open only
 * (request headers are dropped once the call is routed). */
const char *xds_h2_stream_authorization(const struct xds_h2_stream *st);

/* The TLS peer's certificate, verified against the client CA (borrowed,
 * valid while the stream is), or NULL: h2c, no certificate, or none
 * asked for. */
X509 *xds_h2_stream_peer_cert(const struct xds_h2_stream *st);

/* Creates a TLS context for the server: |cert| chain and |key| (PEM files);
 * when |client_ca| is set, client certificates are asked for and verified
 * against it, and required if |require_client_cert|. ALPN offers only "h2".
 * Returns the context (caller frees with SSL_CTX_free), or NULL with a
 * message in |err|. */
SSL_CTX *xds_h2_tls_ctx(const char *cert, const char *key, const char *client_ca,
                        int require_client_cert, char *err, size_t errlen);

/* Percent-encodes a grpc-message value into |out| (|cap| bytes, always
 * terminated; cut when too long). */
void xds_h2_percent_encode(const char *in, char *out, size_t cap);

/* Parses "host:port" / "[v6]:port" / ":port" into |host| (empty = any) and
 * |port|. Returns 0 or -1. */
__attribute__((warn_unused_result)) int xds_h2_parse_hostport(const char *s, char *host,
                                                              size_t hostcap, int *port);

#endif
