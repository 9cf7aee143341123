#include "xds_h2.h"

#include "cx_time.h"
#include "xds_frame.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

/* Connection output (bytes in the bufferevent) above which nghttp2 is told
 * to wait, and below which it is resumed. */
#define CONN_OUT_HIGH ((size_t)512 << 10)
#define CONN_OUT_LOW  ((size_t)64 << 10)
/* Request header bytes per stream. */
#define HDR_MAX      16384
#define PATH_MAX_LEN 512

struct h2_conn;

struct xds_h2_stream {
    struct h2_conn *conn;
    struct xds_h2_stream *prev, *next;
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
};

struct h2_conn {
    struct xds_h2_server *srv;
    struct h2_conn *prev, *next;
    struct bufferevent *bev;
    nghttp2_session *session;
    struct xds_h2_stream *streams;
    struct event *flush_ev;
    struct event *timer;
    int64_t last_rx_ns;
    int64_t accepted_ns;
    uint8_t preface_ok;
    uint8_t ping_out;
    uint8_t closing;  /* GOAWAY submitted */
    uint8_t draining; /* close as soon as the output is written */
    uint8_t tls;
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
    int port;
    struct h2_conn *conns;
    struct xds_h2_counts counts;
    uint8_t shutting;
    struct event *grace_ev;
    struct event *done_ev;
    void (*done)(void *);
    void *done_arg;
};

static void conn_free(struct h2_conn *c);
static void conn_schedule_flush(struct h2_conn *c);

/* ---- small helpers ----------------------------------------------------------- */

void xds_h2_percent_encode(const char *in, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;
    if (cap == 0)
        return;
    for (const unsigned char *p = (const unsigned char *)(in ? in : ""); *p; p++) {
        if (*p >= 0x20 && *p <= 0x7e && *p != '%') {
            if (k + 1 >= cap)
                break;
            out[k++] = (char)*p;
        } else {
            if (k + 3 >= cap)
                break;
            out[k++] = '%';
            out[k++] = hex[*p >> 4];
            out[k++] = hex[*p & 15];
        }
    }
    out[k] = '\0';
}

int xds_h2_parse_hostport(const char *s, char *host, size_t hostcap, int *port)
{
    if (!s || hostcap == 0)
        return -1;
    const char *colon;
    const char *h = s;
    size_t hl;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return -1;
        h = s + 1;
        hl = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return -1;
        hl = (size_t)(colon - s);
        if (memchr(s, ':', hl))
            return -1; /* bare IPv6 needs brackets */
    }
    if (hl >= hostcap)
        return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    char *end;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || p < 0 || p > 65535)
        return -1;
    *port = (int)p;
    return 0;
}

/* ---- streams ------------------------------------------------------------------- */

static struct xds_h2_stream *stream_new(struct h2_conn *c, int32_t id)
{
    struct xds_h2_stream *st = calloc(1, sizeof(*st));
    if (!st)
        return NULL;
    st->out = evbuffer_new();
    if (!st->out) {
        free(st);
        return NULL;
    }
    st->hdr = calloc(1, sizeof(*st->hdr));
    if (!st->hdr) {
        evbuffer_free(st->out);
        free(st);
        return NULL;
    }
    st->conn = c;
    st->id = id;
    xds_deframer_init(&st->df, c->srv->max_message);
    st->next = c->streams;
    if (c->streams)
        c->streams->prev = st;
    c->streams = st;
    return st;
}

/* Unlinks and frees |st|, telling its method first. */
static void stream_free(struct xds_h2_stream *st)
{
    struct h2_conn *c = st->conn;
    if (st->ctx) {
        void *ctx = st->ctx;
        st->ctx = NULL;
        c->srv->counts.streams--;
        st->method->on_close(ctx);
    }
    if (st->prev)
        st->prev->next = st->next;
    else
        c->streams = st->next;
    if (st->next)
        st->next->prev = st->prev;
    xds_deframer_free(&st->df);
    evbuffer_free(st->out);
    free(st->hdr);
    free(st->message);
    free(st);
}

/* Sets the grpc-message to send (cut at 512 bytes). */
static void stream_set_message(struct xds_h2_stream *st, const char *m)
{
    free(st->message);
    st->message = m && m[0] ? strndup(m, 512) : NULL;
}

#define NV(n, v)                                                                       \
    {                                                                                  \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE \
    }

static void fill_status(nghttp2_nv *nv, size_t *n, const struct xds_h2_stream *st, char *code,
                        size_t codecap, char *msg, size_t msgcap)
{
    snprintf(code, codecap, "%d", st->status);
    nv[(*n)++] = (nghttp2_nv)NV("grpc-status", code);
    if (st->message) {
        xds_h2_percent_encode(st->message, msg, msgcap);
        nv[(*n)++] = (nghttp2_nv)NV("grpc-message", msg);
    }
}

/* An answer without a body: trailers-only (gRPC) or a bare HTTP status. */
static void stream_respond_now(struct xds_h2_stream *st, const char *http_status)
{
    nghttp2_nv nv[5];
    size_t n = 0;
    char code[16], msg[1600];
    nv[n++] = (nghttp2_nv)NV(":status", http_status);
    if (strcmp(http_status, "200") == 0) {
        nv[n++] = (nghttp2_nv)NV("content-type", "application/grpc");
        fill_status(nv, &n, st, code, sizeof(code), msg, sizeof(msg));
    }
    st->responded = 1;
    st->finishing = 1;
    st->trailed = 1;
    nghttp2_submit_response(st->conn->session, st->id, nv, n, NULL);
}

static ssize_t data_read(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                         uint32_t *flags, nghttp2_data_source *source, void *user_data)
{
    (void)buf;
    (void)user_data;
    struct xds_h2_stream *st = source->ptr;
    size_t avail = evbuffer_get_length(st->out);
    if (avail) {
        *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
        return (ssize_t)(avail < length ? avail : length);
    }
    if (st->finishing) {
        nghttp2_nv nv[2];
        size_t n = 0;
        char code[16], msg[1600];
        fill_status(nv, &n, st, code, sizeof(code), msg, sizeof(msg));
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (nghttp2_submit_trailer(session, stream_id, nv, n) == 0) {
            *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
            st->trailed = 1;
        }
        return 0;
    }
    st->deferred = 1;
    return NGHTTP2_ERR_DEFERRED;
}

int xds_h2_stream_send(struct xds_h2_stream *st, struct evbuffer *framed)
{
    if (st->finishing || !st->responded)
        return -1;
    if (evbuffer_add_buffer(st->out, framed) != 0)
        return -1;
    if (evbuffer_get_length(st->out) > XDS_H2_STREAM_LOW)
        st->congested = 1;
    if (st->deferred) {
        st->deferred = 0;
        nghttp2_session_resume_data(st->conn->session, st->id);
    }
    conn_schedule_flush(st->conn);
    return 0;
}

size_t xds_h2_stream_queued(const struct xds_h2_stream *st)
{
    return evbuffer_get_length(st->out);
}

const char *xds_h2_stream_peer(const struct xds_h2_stream *st)
{
    return st->conn->peer;
}

void xds_h2_stream_finish(struct xds_h2_stream *st, int status, const char *message)
{
    if (st->finishing)
        return;
    st->status = status;
    stream_set_message(st, message);
    if (!st->responded) {
        stream_respond_now(st, "200");
    } else {
        st->finishing = 1;
        if (st->deferred) {
            st->deferred = 0;
            nghttp2_session_resume_data(st->conn->session, st->id);
        }
    }
    conn_schedule_flush(st->conn);
}

/* ---- nghttp2 callbacks ------------------------------------------------------- */

static ssize_t cb_send(nghttp2_session *session, const uint8_t *data, size_t length, int flags,
                       void *user_data)
{
    (void)session;
    (void)flags;
    struct h2_conn *c = user_data;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (evbuffer_get_length(out) >= CONN_OUT_HIGH)
        return NGHTTP2_ERR_WOULDBLOCK;
    if (evbuffer_add(out, data, length) != 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    return (ssize_t)length;
}

static int cb_send_data(nghttp2_session *session, nghttp2_frame *frame, const uint8_t *framehd,
                        size_t length, nghttp2_data_source *source, void *user_data)
{
    (void)session;
    struct h2_conn *c = user_data;
    struct xds_h2_stream *st = source->ptr;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (evbuffer_get_length(out) >= CONN_OUT_HIGH)
        return NGHTTP2_ERR_WOULDBLOCK;
    if (evbuffer_add(out, framehd, 9) != 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    size_t pad = frame->data.padlen;
    if (pad > 0) {
        uint8_t pl = (uint8_t)(pad - 1);
        if (evbuffer_add(out, &pl, 1) != 0)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    if (evbuffer_remove_buffer(st->out, out, length) != (int)length)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    if (pad > 1) {
        static const uint8_t zeros[256];
        if (evbuffer_add(out, zeros, pad - 1) != 0)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    if (st->congested && evbuffer_get_length(st->out) <= XDS_H2_STREAM_LOW) {
        st->congested = 0;
        st->notify = 1;
    }
    return 0;
}

static int cb_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct h2_conn *c = user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    struct xds_h2_stream *st = stream_new(c, frame->hd.stream_id);
    if (!st)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, st);
    return 0;
}

static void copy_hdr(char *dst, size_t cap, const uint8_t *v, size_t vl)
{
    if (vl >= cap)
        vl = cap - 1;
    memcpy(dst, v, vl);
    dst[vl] = '\0';
}

static int cb_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user_data)
{
    (void)flags;
    (void)user_data;
    if (frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    struct xds_h2_stream *st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!st || st->responded || !st->hdr)
        return 0;
    st->hdr_bytes += namelen + valuelen + 32;
    if (st->hdr_bytes > HDR_MAX)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (namelen == 5 && memcmp(name, ":path", 5) == 0) {
        if (valuelen >= sizeof(st->hdr->path))
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        copy_hdr(st->hdr->path, sizeof(st->hdr->path), value, valuelen);
    } else if (namelen == 7 && memcmp(name, ":method", 7) == 0) {
        copy_hdr(st->hdr->hmethod, sizeof(st->hdr->hmethod), value, valuelen);
    } else if (namelen == 12 && memcmp(name, "content-type", 12) == 0) {
        copy_hdr(st->hdr->ctype, sizeof(st->hdr->ctype), value, valuelen);
    }
    return 0;
}

static int is_grpc_ctype(const char *ct)
{
    if (strncmp(ct, "application/grpc", 16) != 0)
        return 0;
    return ct[16] == '\0' || ct[16] == '+' || ct[16] == ';';
}

static const struct xds_h2_method *find_method(const struct xds_h2_server *s, const char *path)
{
    for (size_t i = 0; i < s->nmethods; i++)
        if (strcmp(s->methods[i].path, path) == 0)
            return &s->methods[i];
    return NULL;
}

static int stream_route(struct h2_conn *c, struct xds_h2_stream *st)
{
    struct xds_h2_server *s = c->srv;
    const struct h2_reqhdr *h = st->hdr;
    if (strcmp(h->hmethod, "POST") != 0) {
        stream_respond_now(st, "405");
        return 0;
    }
    if (!is_grpc_ctype(h->ctype)) {
        stream_respond_now(st, "415");
        return 0;
    }
    const struct xds_h2_method *m = find_method(s, h->path);
    if (!m) {
        char msg[PATH_MAX_LEN + 32];
        st->status = 12; /* UNIMPLEMENTED */
        snprintf(msg, sizeof(msg), "unknown method %s", h->path);
        stream_set_message(st, msg);
        stream_respond_now(st, "200");
        return 0;
    }
    if (s->shutting || c->closing) {
        st->status = 14; /* UNAVAILABLE */
        stream_set_message(st, "server shutting down");
        stream_respond_now(st, "200");
        return 0;
    }
    nghttp2_nv nv[3] = {
        NV(":status", "200"),
        NV("content-type", "application/grpc"),
        NV("grpc-accept-encoding", "identity"),
    };
    nghttp2_data_provider dp = {.source.ptr = st, .read_callback = data_read};
    if (nghttp2_submit_response(c->session, st->id, nv, 3, &dp) != 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    st->responded = 1;
    st->method = m;
    void *ctx = m->on_open(s->user, st);
    if (!ctx) {
        if (!st->finishing)
            xds_h2_stream_finish(st, 13, "call refused");
        return 0;
    }
    st->ctx = ctx;
    s->counts.streams++;
    return 0;
}

/* Request headers complete: route the call, then drop the headers. */
static int stream_start(struct h2_conn *c, struct xds_h2_stream *st)
{
    if (!st->hdr)
        return 0; /* trailers or a second HEADERS: nothing to route */
    int rc = stream_route(c, st);
    free(st->hdr);
    st->hdr = NULL;
    return rc;
}

static int deliver(void *user, const uint8_t *msg, size_t len)
{
    struct xds_h2_stream *st = user;
    const char *errmsg = NULL;
    int rc = st->method->on_message(st->ctx, msg, len, &errmsg);
    if (rc != 0) {
        xds_h2_stream_finish(st, rc, errmsg ? errmsg : "");
        return 1; /* stop delivering */
    }
    return st->finishing ? 1 : 0;
}

static int cb_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                         const uint8_t *data, size_t len, void *user_data)
{
    (void)flags;
    (void)user_data;
    struct xds_h2_stream *st = nghttp2_session_get_stream_user_data(session, stream_id);
    if (!st || !st->ctx || st->finishing)
        return 0;
    int rc = xds_deframer_feed(&st->df, data, len, deliver, st);
    if (rc < 0) {
        char m[128];
        int code = 13;
        if (rc == XDS_DEFRAME_TOO_BIG) {
            code = 8; /* RESOURCE_EXHAUSTED */
            snprintf(m, sizeof(m), "message larger than %zu bytes", st->df.max);
        } else if (rc == XDS_DEFRAME_COMPRESSED) {
            code = 12;
            snprintf(m, sizeof(m), "compressed messages are not supported");
        } else if (rc == XDS_DEFRAME_BAD_FLAG) {
            snprintf(m, sizeof(m), "bad message flag");
        } else {
            snprintf(m, sizeof(m), "out of memory");
        }
        xds_h2_stream_finish(st, code, m);
    }
    return 0;
}

static int cb_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct h2_conn *c = user_data;
    c->preface_ok = 1;
    if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK)) {
        c->ping_out = 0;
        return 0;
    }
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
        return 0;
    struct xds_h2_stream *st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!st)
        return 0;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
        int rc = stream_start(c, st);
        if (rc != 0)
            return rc;
    }
    if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) && st->ctx && !st->finishing) {
        if (xds_deframer_partial(&st->df)) {
            xds_h2_stream_finish(st, 13, "stream ended inside a message");
        } else if (st->method->on_half_close) {
            st->method->on_half_close(st->ctx);
        }
    }
    return 0;
}

static int cb_frame_send(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    (void)user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    /* Trailers are out; a client still sending is told to stop (gRPC). */
    if (nghttp2_session_get_stream_remote_close(session, frame->hd.stream_id) == 0)
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                  NGHTTP2_NO_ERROR);
    return 0;
}

static int cb_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *user_data)
{
    (void)error_code;
    (void)user_data;
    struct xds_h2_stream *st = nghttp2_session_get_stream_user_data(session, stream_id);
    if (!st)
        return 0;
    nghttp2_session_set_stream_user_data(session, stream_id, NULL);
    stream_free(st);
    return 0;
}

/* ---- nghttp2 memory ------------------------------------------------------------
 * Every session allocates a 16 KB frame buffer of which we only ever write
 * frame headers (DATA goes out without copying, see cb_send_data). Taken
 * from the heap, its pages become resident as soon as the heap recycles
 * them; mapped on its own, the untouched pages never count. Allocations of
 * H2_MMAP_MIN bytes or more are therefore mmap'ed; a 16-byte header says
 * which kind each block is. */
#define H2_MMAP_MIN ((size_t)8192)
#define H2_HDR      ((size_t)16)

static void *h2_alloc(size_t n, int zero)
{
    size_t total = n + H2_HDR;
    size_t *p;
    if (n >= H2_MMAP_MIN) {
        void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        p = m;
        p[1] = 1;
    } else {
        p = zero ? calloc(1, total) : malloc(total);
        if (!p)
            return NULL;
        p[1] = 0;
    }
    p[0] = total;
    return (uint8_t *)p + H2_HDR;
}

static void h2_free(void *ptr, void *user)
{
    (void)user;
    if (!ptr)
        return;
    size_t *p = (size_t *)(void *)((uint8_t *)ptr - H2_HDR);
    if (p[1])
        munmap(p, p[0]);
    else
        free(p);
}

static void *h2_malloc(size_t n, void *user)
{
    (void)user;
    return h2_alloc(n, 0);
}

static void *h2_calloc(size_t nmemb, size_t size, void *user)
{
    (void)user;
    if (size && nmemb > SIZE_MAX / size)
        return NULL;
    return h2_alloc(nmemb * size, 1);
}

static void *h2_realloc(void *ptr, size_t n, void *user)
{
    if (!ptr)
        return h2_alloc(n, 0);
    size_t *p = (size_t *)(void *)((uint8_t *)ptr - H2_HDR);
    size_t old = p[0] - H2_HDR;
    void *q = h2_alloc(n, 0);
    if (!q)
        return NULL;
    memcpy(q, ptr, old < n ? old : n);
    h2_free(ptr, user);
    return q;
}

static nghttp2_mem h2_mem = {NULL, h2_malloc, h2_free, h2_calloc, h2_realloc};

/* ---- connections ------------------------------------------------------------- */

static void conn_notify_writable(struct h2_conn *c)
{
    for (struct xds_h2_stream *st = c->streams; st; st = st->next) {
        if (st->notify) {
            st->notify = 0;
            if (st->ctx && st->method->on_writable && !st->finishing)
                st->method->on_writable(st->ctx);
        }
    }
}

/* Hands what nghttp2 has to the socket; closes the connection when the
 * session is over. Returns 0, or -1 when |c| was freed. */
static int conn_flush(struct h2_conn *c)
{
    if (nghttp2_session_send(c->session) != 0) {
        conn_free(c);
        return -1;
    }
    conn_notify_writable(c);
    if (nghttp2_session_want_write(c->session) &&
        evbuffer_get_length(bufferevent_get_output(c->bev)) < CONN_OUT_HIGH) {
        /* a stream queued more while we notified: go again soon */
        conn_schedule_flush(c);
    }
    if (!nghttp2_session_want_read(c->session) && !nghttp2_session_want_write(c->session)) {
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
            conn_free(c);
            return -1;
        }
        c->draining = 1;
        bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
    }
    return 0;
}

static void on_flush_ev(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_flush(arg);
}

static void conn_schedule_flush(struct h2_conn *c)
{
    if (!event_pending(c->flush_ev, EV_TIMEOUT, NULL))
        event_active(c->flush_ev, EV_TIMEOUT, 0);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct h2_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    c->last_rx_ns = cx_mono_ns();
    while (evbuffer_get_length(in) > 0) {
        struct evbuffer_iovec v;
        if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
            break;
        ssize_t rv = nghttp2_session_mem_recv(c->session, v.iov_base, v.iov_len);
        if (rv < 0) {
            conn_free(c);
            return;
        }
        evbuffer_drain(in, (size_t)rv);
    }
    conn_flush(c);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct h2_conn *c = arg;
    if (c->draining) {
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
            conn_free(c);
        return;
    }
    conn_flush(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct h2_conn *c = arg;
    if (what & BEV_EVENT_CONNECTED)
        return; /* TLS handshake done */
    if ((what & BEV_EVENT_ERROR) && c->tls && !c->preface_ok)
        c->srv->counts.tls_failures++;
    conn_free(c);
}

/* One timer per connection: the handshake deadline until the preface came,
 * then the keepalive tick. */
static void conn_arm_timer(struct h2_conn *c)
{
    const struct xds_h2_server *s = c->srv;
    int ms = s->keepalive_ms;
    if (!c->preface_ok && (ms < 0 || s->handshake_ms < ms))
        ms = s->handshake_ms;
    if (ms < 0)
        return;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(c->timer, &tv);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct h2_conn *c = arg;
    struct xds_h2_server *s = c->srv;
    int64_t now = cx_mono_ns();
    if (!c->preface_ok) {
        if (now - c->accepted_ns >= (int64_t)s->handshake_ms * CX_NS_PER_MS) {
            conn_free(c); /* no TLS handshake / HTTP/2 preface in time */
            return;
        }
        conn_arm_timer(c);
        return;
    }
    if (s->keepalive_ms < 0)
        return;
    if (c->ping_out) {
        conn_free(c); /* the last PING went unanswered for a whole interval */
        return;
    }
    if (now - c->last_rx_ns >= (int64_t)s->keepalive_ms * CX_NS_PER_MS) {
        if (nghttp2_submit_ping(c->session, NGHTTP2_FLAG_NONE, NULL) == 0)
            c->ping_out = 1;
        conn_schedule_flush(c);
    }
    conn_arm_timer(c);
}

static void server_check_done(struct xds_h2_server *s)
{
    if (s->shutting && !s->conns && s->done_ev)
        event_active(s->done_ev, EV_TIMEOUT, 0);
}

static void conn_free(struct h2_conn *c)
{
    struct xds_h2_server *s = c->srv;
    while (c->streams)
        stream_free(c->streams);
    if (c->session)
        nghttp2_session_del(c->session);
    if (c->bev)
        bufferevent_free(c->bev);
    if (c->flush_ev)
        event_free(c->flush_ev);
    if (c->timer)
        event_free(c->timer);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->counts.connections--;
    free(c);
    server_check_done(s);
}

static nghttp2_session_callbacks *make_callbacks(void)
{
    nghttp2_session_callbacks *cbs;
    if (nghttp2_session_callbacks_new(&cbs) != 0)
        return NULL;
    nghttp2_session_callbacks_set_send_callback(cbs, cb_send);
    nghttp2_session_callbacks_set_send_data_callback(cbs, cb_send_data);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, cb_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, cb_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, cb_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, cb_frame_recv);
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, cb_frame_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, cb_stream_close);
    return cbs;
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    static const unsigned char h2[] = "\x02h2";
    unsigned char *o;
    if (SSL_select_next_proto(&o, outlen, h2, sizeof(h2) - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_ALERT_FATAL; /* a client that cannot speak h2 */
    *out = o;
    return SSL_TLSEXT_ERR_OK;
}

SSL_CTX *xds_h2_tls_ctx(const char *cert, const char *key, const char *client_ca,
                        int require_client_cert, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        snprintf(err, errlen, "SSL_CTX_new failed");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        snprintf(err, errlen, "cannot load certificate %s", cert);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errlen, "cannot load private key %s (or it does not match)", key);
        goto fail;
    }
    if (client_ca) {
        if (SSL_CTX_load_verify_locations(ctx, client_ca, NULL) != 1) {
            snprintf(err, errlen, "cannot load client CA %s", client_ca);
            goto fail;
        }
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(client_ca);
        if (names)
            SSL_CTX_set_client_CA_list(ctx, names);
        SSL_CTX_set_verify(
            ctx, SSL_VERIFY_PEER | (require_client_cert ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
            NULL);
    }
    SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
    return ctx;
fail:
    ERR_clear_error();
    SSL_CTX_free(ctx);
    return NULL;
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    (void)l;
    (void)salen;
    struct xds_h2_server *s = arg;
    if (s->shutting || s->counts.connections >= s->max_connections) {
        s->counts.connections_rejected++;
        evutil_closesocket(fd);
        return;
    }
    struct h2_conn *c = calloc(1, sizeof(*c));
    nghttp2_session_callbacks *cbs = NULL;
    nghttp2_option *opt = NULL;
    if (!c) {
        evutil_closesocket(fd);
        return;
    }
    c->srv = s;
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
        snprintf(c->peer, sizeof(c->peer), "%s:%d", host, port);
    } else if (sa->sa_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
        snprintf(c->peer, sizeof(c->peer), "[%s]:%d", host, port);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    evutil_make_socket_nonblocking(fd);
    /* Linked first so that conn_free can undo a partial setup. */
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->counts.connections++;
    s->counts.connections_total++;
    if (s->ssl_ctx) {
        SSL *ssl = SSL_new(s->ssl_ctx);
        if (!ssl) {
            evutil_closesocket(fd);
            goto fail;
        }
        c->tls = 1;
        c->bev = bufferevent_openssl_socket_new(s->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                BEV_OPT_CLOSE_ON_FREE);
        if (!c->bev) {
            SSL_free(ssl);
            evutil_closesocket(fd);
            goto fail;
        }
        bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
    } else {
        c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
        if (!c->bev) {
            evutil_closesocket(fd);
            goto fail;
        }
    }
    c->flush_ev = event_new(s->base, -1, 0, on_flush_ev, c);
    c->timer = evtimer_new(s->base, on_timer, c);
    cbs = make_callbacks();
    if (!c->flush_ev || !c->timer || !cbs || nghttp2_option_new(&opt) != 0)
        goto fail;
    /* Flood and abuse limits come from nghttp2's defaults; we add ours. */
    nghttp2_option_set_max_outbound_ack(opt, 1000);
    /* An ADS connection carries one long-lived stream: HPACK's dynamic
     * tables would save a few bytes once and cost memory forever. */
    nghttp2_option_set_max_deflate_dynamic_table_size(opt, 0);
    if (nghttp2_session_server_new3(&c->session, cbs, c, opt, &h2_mem) != 0)
        goto fail;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, s->max_streams},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, HDR_MAX},
        {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20},
    };
    if (nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0])) != 0)
        goto fail;
    /* A larger connection window so that many streams can send at once. */
    nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, 8 << 20);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_option_del(opt);
    c->last_rx_ns = cx_mono_ns();
    bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
    bufferevent_setwatermark(c->bev, EV_WRITE, CONN_OUT_LOW, 0);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    c->accepted_ns = c->last_rx_ns;
    conn_arm_timer(c);
    conn_flush(c);
    return;
fail:
    if (cbs)
        nghttp2_session_callbacks_del(cbs);
    if (opt)
        nghttp2_option_del(opt);
    conn_free(c);
}

/* ---- server ------------------------------------------------------------------ */

static void on_done(evutil_socket_t fd, short what, void *arg);

struct xds_h2_server *xds_h2_server_new(struct event_base *base, const struct xds_h2_config *cfg,
                                        const struct xds_h2_method *methods, size_t nmethods,
                                        void *user, char *err, size_t errlen)
{
    char host[256];
    int port;
    struct addrinfo *ai = NULL;
    if (xds_h2_parse_hostport(cfg->listen, host, sizeof(host), &port) != 0) {
        snprintf(err, errlen, "bad listen address \"%s\" (want host:port)",
                 cfg->listen ? cfg->listen : "");
        return NULL;
    }
    struct xds_h2_server *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->base = base;
    s->methods = methods;
    s->nmethods = nmethods;
    s->user = user;
    s->max_message = cfg->max_message ? cfg->max_message : ((size_t)4 << 20);
    s->max_connections = cfg->max_connections ? cfg->max_connections : 10000;
    s->max_streams = cfg->max_streams ? cfg->max_streams : 100;
    s->keepalive_ms = cfg->keepalive_ms ? cfg->keepalive_ms : 30000;
    s->handshake_ms = cfg->handshake_timeout_ms > 0 ? cfg->handshake_timeout_ms : 10000;
    if (cfg->ssl_ctx) {
        SSL_CTX_up_ref(cfg->ssl_ctx);
        s->ssl_ctx = cfg->ssl_ctx;
    }
    s->done_ev = event_new(base, -1, 0, on_done, s);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", port);
    int gai = getaddrinfo(host[0] ? host : NULL, portstr, &hints, &ai);
    if (gai != 0) {
        snprintf(err, errlen, "cannot resolve \"%s\": %s", host, gai_strerror(gai));
        goto fail;
    }
    s->listener = evconnlistener_new_bind(
        base, on_accept, s, LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 1024,
        ai->ai_addr, (int)ai->ai_addrlen);
    if (!s->listener) {
        snprintf(err, errlen, "cannot listen on %s: %s", cfg->listen, strerror(errno));
        goto fail;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(evconnlistener_get_fd(s->listener), (struct sockaddr *)&ss, &sl) == 0)
        s->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                           : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    freeaddrinfo(ai);
    return s;
fail:
    if (ai)
        freeaddrinfo(ai);
    xds_h2_server_free(s);
    return NULL;
}

int xds_h2_server_port(const struct xds_h2_server *s)
{
    return s->port;
}

void xds_h2_server_counts(const struct xds_h2_server *s, struct xds_h2_counts *out)
{
    *out = s->counts;
}

static void on_done(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct xds_h2_server *s = arg;
    if (s->grace_ev)
        evtimer_del(s->grace_ev);
    if (s->done) {
        void (*done)(void *) = s->done;
        s->done = NULL;
        done(s->done_arg);
    }
}

static void on_grace(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct xds_h2_server *s = arg;
    while (s->conns)
        conn_free(s->conns);
}

void xds_h2_server_shutdown(struct xds_h2_server *s, int grace_ms, void (*done)(void *), void *arg)
{
    if (s->shutting)
        return;
    s->shutting = 1;
    s->done = done;
    s->done_arg = arg;
    if (s->listener) {
        evconnlistener_free(s->listener);
        s->listener = NULL;
    }
    s->grace_ev = evtimer_new(s->base, on_grace, s);
    struct timeval tv = {grace_ms / 1000, (grace_ms % 1000) * 1000};
    if (s->grace_ev)
        evtimer_add(s->grace_ev, &tv);
    for (struct h2_conn *c = s->conns; c; c = c->next) {
        for (struct xds_h2_stream *st = c->streams; st; st = st->next)
            if (st->responded)
                xds_h2_stream_finish(st, 14, "server shutting down");
        nghttp2_submit_goaway(c->session, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(c->session), NGHTTP2_NO_ERROR,
                              NULL, 0);
        c->closing = 1;
        conn_schedule_flush(c);
    }
    server_check_done(s);
}

void xds_h2_server_free(struct xds_h2_server *s)
{
    if (!s)
        return;
    s->done = NULL;
    while (s->conns)
        conn_free(s->conns);
    if (s->listener)
        evconnlistener_free(s->listener);
    if (s->grace_ev)
        event_free(s->grace_ev);
    if (s->done_ev)
        event_free(s->done_ev);
    if (s->ssl_ctx)
        SSL_CTX_free(s->ssl_ctx);
    free(s);
}
