/*
 * ks_h2: HTTP/2 for kubesim, as kube-apiserver (Go's net/http) serves it:
 * with --tls, ALPN offers "h2" and "http/1.1"; a client that picks h2 gets
 * this nghttp2 server on the connection, every other one libevent's evhttp.
 * Each stream is a ks_req routed like an HTTP/1.1 request (ks_http.c).
 *
 * Faults only HTTP/2 has: a connection that stops reading and writing
 * without closing (blackhole), GOAWAY, RST_STREAM on one stream. Event
 * loop only.
 */
#ifndef KS_H2_H
#define KS_H2_H

#include <openssl/ssl.h>

#include "ks_http.h"

struct ks_h2_conn;
struct ks_h2_stream;

/* Sets up ALPN on |ctx| and the hooks that hand h2 connections over from
 * evhttp. Returns 0 or -1. */
int ks_h2_setup(struct ks_server *s, SSL_CTX *ctx);
/* The TLS bufferevent of a new connection (evhttp's bevcb). */
struct bufferevent *ks_h2_new_bev(struct ks_server *s, SSL *ssl);
/* Closes every HTTP/2 connection (shutdown). */
void ks_h2_free_all(struct ks_server *s);

/* Transport of a request on a stream (ks_io.c calls these). */
struct evkeyvalq *ks_h2_in_headers(struct ks_h2_stream *st);
struct evkeyvalq *ks_h2_out_headers(struct ks_h2_stream *st);
void ks_h2_reply(struct ks_h2_stream *st, int code, struct evbuffer *body, bool stream);
void ks_h2_chunk(struct ks_h2_stream *st, struct evbuffer *buf);
void ks_h2_end(struct ks_h2_stream *st);
size_t ks_h2_queued(struct ks_h2_stream *st);
const char *ks_h2_peer(struct ks_h2_stream *st);
/* The user of the connection's latest request (/_sim/h2/ acts by user). */
void ks_h2_note_user(struct ks_h2_stream *st, const char *user);
/* Lets go of the request: the stream finishes sending on its own. */
void ks_h2_detach(struct ks_h2_stream *st);

/* Faults. */
void ks_h2_blackhole_conn(struct ks_h2_stream *st, int64_t ms);
void ks_h2_goaway_conn(struct ks_h2_stream *st);
void ks_h2_reset(struct ks_h2_stream *st, uint32_t code);
void ks_h2_close_conn(struct ks_h2_stream *st);

/* /_sim/h2/... admin requests (|p| after "/_sim"). Returns 0 if answered. */
int ks_h2_admin(struct ks_req *r, const char *p);

#endif
