/*
 * xds_h2_impl: the gRPC transport's private structures, shared by its
 * files and by nothing else: xds_h2.c (server, listener, TLS, shutdown),
 * xds_h2_conn.c (connections: accept, socket I/O, timers),
 * xds_h2_stream.c (calls and the nghttp2 callbacks) and xds_h2_mem.c
 * (nghttp2's allocator). Main loop only.
 */
#ifndef XDS_H2_IMPL_H
#define XDS_H2_IMPL_H

#include "cx_list.h"
#include "xds_frame.h"
#include "xds_h2.h"

#include <event2/bufferevent.h>
#include <nghttp2/nghttp2.h>

/* Connection output (bytes in the bufferevent) above which nghttp2 is told
 * to wait, and below which it is resumed. */
#define CONN_OUT_HIGH ((size_t)512 << 10)
#define CONN_OUT_LOW  ((size_t)64 << 10)
/* Request header bytes per stream. */
#define HDR_MAX      16384
#define PATH_MAX_LEN 512

struct h2_conn;

/* nghttp2's allocator of one connection (xds_h2_mem.c): large blocks are
 * mapped (the frame buffer's pages handed back when idle); the connection
 * struct, nghttp2's session tables and the calls' state live in the
 * connection's unit of pages, placed so that what an idle connection never
 * writes stays off the pages it writes. */
#define H2_MEM_MAPS   4
#define H2_HOT_BLOCKS 12
struct h2_mem {
    nghttp2_mem mem; /* mem_user_data: this struct */
    void *map[H2_MEM_MAPS];
    size_t map_len[H2_MEM_MAPS];
    void *framebuf;                  /* the session's frame buffer (mapped), or NULL */
    uint8_t *unit;                   /* the connection's pages, or NULL (all heap) */
    uint16_t hot_off[H2_HOT_BLOCKS]; /* live blocks of the hot area, by offset */
    uint16_t hot_len[H2_HOT_BLOCKS];
    uint16_t ring_len[2];
    uint8_t nhot;
    uint8_t slots;      /* unit slots live (map, rings) */
    uint8_t used;       /* unit slots ever handed out */
    uint8_t creating;   /* inside nghttp2_session_*_new */
    uint8_t dirty;      /* frames were written since the last trim */
    uint8_t cold_dirty; /* header blocks were received since the last trim */
};

struct xds_h2_stream {
    struct h2_conn *conn;
    struct cx_list link; /* in conn->streams */
    int32_t id;
    const struct xds_h2_method *method;
    void *ctx;             /* from on_open; NULL until then */
    struct h2_reqhdr *hdr; /* request headers, until the call is routed */
    size_t hdr_bytes;
    struct xds_deframer df;
    struct evbuffer *out;
    uint8_t responded; /* response HEADERS submitted */
    uint8_t finishing; /* trailers requested */
    uint8_t trailed;   /* trailers submitted */
    uint8_t deferred;  /* data provider deferred */
    uint8_t congested; /* queued went above XDS_H2_STREAM_LOW */
    uint8_t notify;    /* on_writable due */
    int status;
    char *message; /* grpc-message, set when finishing (NULL: none) */
};

/* What routing a call needs; freed once it is routed (an idle stream keeps
 * nothing of its request headers). */
struct h2_reqhdr {
    char path[PATH_MAX_LEN];
    char ctype[128];
    char hmethod[16];
    char *authorization; /* the `authorization` header, if any (heap) */
};

/* A connection's socket I/O: TLS goes through an OpenSSL bufferevent;
 * h2c reads the socket straight into nghttp2 and buffers only output the
 * socket did not take (an idle h2c connection holds no buffer). */
struct h2_conn {
    struct xds_h2_server *srv;
    struct cx_list link;     /* in srv->conns */
    struct bufferevent *bev; /* TLS; NULL for h2c */
    evutil_socket_t fd;      /* h2c: the socket (closed with the connection) */
    struct event *io_ev;     /* h2c: readable, and writable while |wbuf| waits */
    struct evbuffer *wbuf;   /* h2c: output not yet written, or NULL */
    nghttp2_session *session;
    struct cx_list streams; /* of xds_h2_stream, newest first */
    struct event *flush_ev;
    struct event *timer;
    int64_t last_rx_ns;
    int64_t accepted_ns;
    int64_t idle_since_ns;    /* when the last stream went (or accept); valid while no streams */
    int64_t ping_sent_ns;     /* or when the peer last acknowledged bytes since */
    uint64_t ping_acked;      /* the peer's acknowledged bytes then */
    struct xds_budget budget; /* this connection's share of the server's memory budget */
    struct h2_mem mem;
    uint8_t preface_ok;
    uint8_t ping_out;
    uint8_t closing;  /* GOAWAY submitted */
    uint8_t draining; /* close as soon as the output is written */
    uint8_t tls;
    uint8_t io_write; /* h2c: io_ev waits for writability too */
    char peer[64];
};

struct xds_h2_server {
    struct event_base *base;
    struct evconnlistener *listener;
    SSL_CTX *ssl_ctx;
    const struct xds_h2_method *methods;
    size_t nmethods;
    void *user;
    size_t max_message;
    unsigned max_connections;
    unsigned max_streams;
    int keepalive_ms;
    int handshake_ms;
    int idle_conn_ms;
    void (*on_counts)(void *user);
    struct xds_budget *budget; /* the server's (caller-owned); NULL: none */
    struct event *accept_ev;   /* re-enables accepting after EMFILE/ENFILE */
    int accept_backoff_ms;
    int port;
    char host[256];       /* the listen host, to listen again after a pause */
    struct cx_list conns; /* of h2_conn, newest first */
    struct xds_h2_counts counts;
    uint8_t shutting;
    uint8_t paused; /* not listening, connections told to go (xds_h2_server_pause) */
    struct event *grace_ev;
    struct event *done_ev;
    void (*done)(void *);
    void *done_arg;
};

/* xds_h2_conn.c */
void xds_h2_conn_free(struct h2_conn *c);
/* Where nghttp2's output goes (made on demand for h2c), or NULL (no memory). */
struct evbuffer *xds_h2_conn_out(struct h2_conn *c);
/* Bytes of output not yet written to the socket (TLS: to OpenSSL). */
size_t xds_h2_conn_out_len(const struct h2_conn *c);
void xds_h2_conn_schedule_flush(struct h2_conn *c);
void xds_h2_on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg);
void xds_h2_conn_arm_timer(struct h2_conn *c);
/* Runs |done| once the last connection is gone during shutdown. */
void xds_h2_server_check_done(struct xds_h2_server *s);

/* xds_h2_stream.c */
struct xds_h2_stream *xds_h2_stream_new(struct h2_conn *c, int32_t id);
/* Unlinks and frees |st|, telling its method first. */
void xds_h2_stream_free_(struct xds_h2_stream *st);
nghttp2_session_callbacks *xds_h2_callbacks_new(void);

/* xds_h2_mem.c */
void xds_h2_mem_init(struct h2_mem *m);
/* A zeroed connection struct of |size| bytes whose struct h2_mem, at
 * |mem_off|, is initialised: in the first bytes of a unit's hot area, or
 * from the heap. Freed by xds_h2_mem_conn_free once nothing else of the
 * connection is (streams, session). */
void *xds_h2_mem_conn_new(size_t size, size_t mem_off);
void xds_h2_mem_conn_free(struct h2_mem *m, void *conn);
/* Zeroed memory from the connection's hot area when it fits, else the heap. */
void *xds_h2_mem_hot_alloc(struct h2_mem *m, size_t n);
void xds_h2_mem_hot_free(struct h2_mem *m, void *p);
/* Hands the frame buffer's pages back to the kernel if frames were written
 * since the last call; only when the session has no frame under way. With
 * |hd_empty| (both HPACK dynamic tables hold no entry: the rings' contents
 * are dead), the inflater ring's page too if header blocks came in since;
 * and the stream map's first page if it holds only zeros. */
void xds_h2_mem_trim(struct h2_mem *m, int hd_empty);
/* Resident bytes of the connection's mapped blocks and of its unit's pages
 * other than the hot one (mincore). */
size_t xds_h2_mem_resident(const struct h2_mem *m);

#endif
