/* Calls on the gRPC transport: routing, messages in (deframed), responses
 * and trailers out, and the nghttp2 callbacks that drive them. */
#include "xds_h2_impl.h"

#include "cx_time.h"

#include <event2/bufferevent_ssl.h>
#include <openssl/crypto.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- streams ------------------------------------------------------------------- */

static void reqhdr_free(struct h2_reqhdr *h)
{
    if (!h)
        return;
    if (h->authorization) {
        OPENSSL_cleanse(h->authorization, strlen(h->authorization));
        free(h->authorization);
    }
    free(h);
}

struct xds_h2_stream *xds_h2_stream_new(struct h2_conn *c, int32_t id)
{
    struct xds_h2_stream *st = xds_h2_mem_hot_alloc(&c->mem, sizeof(*st));
    if (!st)
        return NULL;
    st->hdr = calloc(1, sizeof(*st->hdr));
    if (!st->hdr) {
        xds_h2_mem_hot_free(&c->mem, st);
        return NULL;
    }
    st->conn = c;
    st->id = id;
    xds_deframer_init(&st->df, c->srv->max_message);
    xds_deframer_set_budget(&st->df, c->srv->budget, &c->budget);
    cx_list_prepend(&c->streams, &st->link);
    return st;
}

void xds_h2_stream_free_(struct xds_h2_stream *st)
{
    struct h2_conn *c = st->conn;
    if (st->ctx) {
        void *ctx = st->ctx;
        st->ctx = NULL;
        c->srv->counts.streams--;
        st->method->on_close(ctx);
    }
    cx_list_del(&st->link);
    if (cx_list_empty(&c->streams)) {
        c->idle_since_ns = cx_mono_ns(); /* the idle-connection deadline starts */
        xds_h2_conn_arm_timer(c);
    }
    xds_deframer_free(&st->df);
    if (st->out)
        evbuffer_free(st->out);
    reqhdr_free(st->hdr);
    free(st->message);
    xds_h2_mem_hot_free(&c->mem, st);
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

/* Bytes of |st|'s output not yet handed to nghttp2. */
static size_t out_len(const struct xds_h2_stream *st)
{
    return st->out ? evbuffer_get_length(st->out) : 0;
}

static ssize_t data_read(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                         uint32_t *flags, nghttp2_data_source *source, void *user_data)
{
    (void)buf;
    (void)user_data;
    struct xds_h2_stream *st = source->ptr;
    size_t avail = out_len(st);
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
    /* (made when there is something to send, freed when it is sent: an
     * idle stream holds no buffer) */
    if (!st->out && !(st->out = evbuffer_new()))
        return -1;
    if (evbuffer_add_buffer(st->out, framed) != 0)
        return -1;
    if (evbuffer_get_length(st->out) > XDS_H2_STREAM_LOW)
        st->congested = 1;
    if (st->deferred) {
        st->deferred = 0;
        nghttp2_session_resume_data(st->conn->session, st->id);
    }
    xds_h2_conn_schedule_flush(st->conn);
    return 0;
}

size_t xds_h2_stream_queued(const struct xds_h2_stream *st)
{
    return out_len(st);
}

const char *xds_h2_stream_peer(const struct xds_h2_stream *st)
{
    return st->conn->peer;
}

void *xds_h2_stream_mem_alloc(struct xds_h2_stream *st, size_t n)
{
    return xds_h2_mem_hot_alloc(&st->conn->mem, n);
}

void xds_h2_stream_mem_free(struct xds_h2_stream *st, void *p)
{
    xds_h2_mem_hot_free(&st->conn->mem, p);
}

const char *xds_h2_stream_authorization(const struct xds_h2_stream *st)
{
    return st->hdr ? st->hdr->authorization : NULL;
}

X509 *xds_h2_stream_peer_cert(const struct xds_h2_stream *st)
{
    if (!st->conn->tls || !st->conn->bev)
        return NULL;
    SSL *ssl = bufferevent_openssl_get_ssl(st->conn->bev);
    if (!ssl || SSL_get_verify_result(ssl) != X509_V_OK)
        return NULL;
    return SSL_get0_peer_certificate(ssl);
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
    xds_h2_conn_schedule_flush(st->conn);
}

/* ---- nghttp2 callbacks ------------------------------------------------------- */

static ssize_t cb_send(nghttp2_session *session, const uint8_t *data, size_t length, int flags,
                       void *user_data)
{
    (void)session;
    (void)flags;
    struct h2_conn *c = user_data;
    struct evbuffer *out = xds_h2_conn_out(c);
    if (!out)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    c->mem.dirty = 1;
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
    struct evbuffer *out = xds_h2_conn_out(c);
    if (!out)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    c->mem.dirty = 1;
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
    if (evbuffer_get_length(st->out) == 0) {
        evbuffer_free(st->out);
        st->out = NULL;
    }
    return 0;
}

static int cb_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct h2_conn *c = user_data;
    c->mem.cold_dirty = 1; /* the peer's header block may index into the inflater's ring */
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    struct xds_h2_stream *st = xds_h2_stream_new(c, frame->hd.stream_id);
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
    } else if (namelen == 13 && memcmp(name, "authorization", 13) == 0 && !st->hdr->authorization) {
        st->hdr->authorization = strndup((const char *)value, valuelen);
        if (!st->hdr->authorization)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
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
    reqhdr_free(st->hdr);
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
        } else if (rc == XDS_DEFRAME_BUDGET) {
            code = 8; /* RESOURCE_EXHAUSTED */
            snprintf(m, sizeof(m),
                     "server memory budget for partly received messages is spent "
                     "(--xds-memory-budget)");
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
    xds_h2_stream_free_(st);
    return 0;
}

nghttp2_session_callbacks *xds_h2_callbacks_new(void)
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
