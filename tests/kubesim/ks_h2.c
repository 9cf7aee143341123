/*
 * ks_h2: HTTP/2 over TLS for kubesim (nghttp2 on the TLS bufferevent).
 *
 * evhttp accepts every connection and creates its TLS bufferevent
 * (ks_h2_new_bev). When the handshake's ALPN picks "h2", the ALPN callback
 * takes the bufferevent over: its callbacks become ours before a byte of
 * HTTP/2 is read, and evhttp's connection object only owns (and in the
 * end frees) the bufferevent. Every other connection stays evhttp's
 * HTTP/1.1.
 *
 * As Go's HTTP/2 server that kube-apiserver runs: SETTINGS with 250
 * concurrent streams, a 1 MiB header list cap, request bodies capped at
 * 3 MiB (413), lowercase response headers, GOAWAY with the last processed
 * stream on a Connection: close (here: the goaway fault) and the
 * connection closed once its streams are done.
 */
#include "ks_h2.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <nghttp2/nghttp2.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "cx_json.h"
#include "cx_log.h"
#include "cx_time.h"

#define OUT_HIGH     ((size_t)256 << 10) /* stop asking nghttp2 for frames above */
#define HDR_LIST_MAX ((size_t)1 << 20)   /* Go's default MaxHeaderBytes */
#define MAX_STREAMS  250                 /* Go's http2 default MaxConcurrentStreams */

struct ks_h2_stream {
    struct ks_h2_conn *c;
    int32_t id;
    LIST_ENTRY(ks_h2_stream) link;
    struct evkeyvalq in, out_hdrs;
    struct evbuffer *body;
    struct evbuffer *out;
    char method[16];
    char *path;
    size_t hdr_bytes;
    struct ks_req *req;
    bool dispatched, responded, eof, deferred, reset, too_big;
    bool goaway_after; /* GOAWAY once this stream is done */
};

struct ks_h2_conn {
    struct ks_server *s;
    struct bufferevent *bev;
    struct evhttp_connection *evcon; /* owns |bev| */
    nghttp2_session *sess;
    LIST_HEAD(, ks_h2_stream) streams;
    LIST_ENTRY(ks_h2_conn) link;
    struct event *flush_ev, *close_ev, *blackhole_ev;
    bool dead, blackholed, goaway;
    uint64_t streams_total;
    char peer[64];
    char user[KS_USER_MAX]; /* of its latest request */
};

static struct {
    struct ks_server *s;
    int idx_bev;
    LIST_HEAD(, ks_h2_conn) conns;
    bool init;
} g;

static void conn_kill(struct ks_h2_conn *c);

/* ---- streams ------------------------------------------------------------- */

static void hdrs_clear(struct evkeyvalq *h)
{
    evhttp_clear_headers(h);
}

static void stream_free(struct ks_h2_stream *st)
{
    LIST_REMOVE(st, link);
    hdrs_clear(&st->in);
    hdrs_clear(&st->out_hdrs);
    if (st->body)
        evbuffer_free(st->body);
    if (st->out)
        evbuffer_free(st->out);
    free(st->path);
    free(st);
}

/* The stream is gone (closed, reset, or its connection went): a parked or
 * streaming request hears of it through its close callback. */
static void stream_gone(struct ks_h2_stream *st)
{
    struct ks_req *r = st->req;
    st->req = NULL;
    if (r) {
        r->h2 = NULL;
        void (*cb)(struct ks_req *, void *) = r->close_cb;
        r->close_cb = NULL;
        if (cb)
            cb(r, r->close_arg);
    }
    stream_free(st);
}

static void schedule_flush(struct ks_h2_conn *c)
{
    if (!c->dead && c->flush_ev)
        event_active(c->flush_ev, EV_TIMEOUT, 0);
}

static void resume(struct ks_h2_stream *st)
{
    if (st->deferred && !st->c->dead) {
        st->deferred = false;
        nghttp2_session_resume_data(st->c->sess, st->id);
    }
    schedule_flush(st->c);
}

static ssize_t read_data(nghttp2_session *sess, int32_t id, uint8_t *buf, size_t len,
                         uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    (void)sess;
    (void)id;
    (void)ud;
    struct ks_h2_stream *st = src->ptr;
    size_t have = evbuffer_get_length(st->out);
    if (have == 0) {
        if (st->eof) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
            return 0;
        }
        st->deferred = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    size_t n = have < len ? have : len;
    if (evbuffer_remove(st->out, buf, n) != (int)n)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (st->eof && n == have)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static void submit(struct ks_h2_stream *st, int code, bool with_data)
{
    nghttp2_nv nv[40];
    char status[8], clen[24], names[39][64];
    size_t n = 0;
    snprintf(status, sizeof(status), "%d", code);
    nv[n++] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)status, 7, strlen(status),
                           NGHTTP2_NV_FLAG_NONE};
    struct evkeyval *kv;
    TAILQ_FOREACH(kv, &st->out_hdrs, next)
    {
        size_t kl = strlen(kv->key);
        /* HTTP/2 field names are lowercase; Connection-specific ones are
         * not allowed at all. */
        if (n == 38 || kl >= sizeof(names[0]) || strcasecmp(kv->key, "Connection") == 0 ||
            strcasecmp(kv->key, "Transfer-Encoding") == 0)
            continue;
        for (size_t i = 0; i <= kl; i++) {
            char ch = kv->key[i];
            names[n][i] = (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : ch;
        }
        nv[n] = (nghttp2_nv){(uint8_t *)names[n], (uint8_t *)kv->value, kl, strlen(kv->value),
                             NGHTTP2_NV_FLAG_NONE};
        n++;
    }
    if (st->eof) {
        snprintf(clen, sizeof(clen), "%zu", evbuffer_get_length(st->out));
        nv[n++] = (nghttp2_nv){(uint8_t *)"content-length", (uint8_t *)clen, 14, strlen(clen),
                               NGHTTP2_NV_FLAG_NONE};
    }
    nghttp2_data_provider prd = {.source.ptr = st, .read_callback = read_data};
    st->responded = true;
    int rv = nghttp2_submit_response(st->c->sess, st->id, nv, n, with_data ? &prd : NULL);
    if (rv != 0)
        cx_warn(KS_LOG, "h2: cannot answer stream %d: %s", st->id, nghttp2_strerror(rv));
    schedule_flush(st->c);
}

struct evkeyvalq *ks_h2_in_headers(struct ks_h2_stream *st)
{
    return &st->in;
}

struct evkeyvalq *ks_h2_out_headers(struct ks_h2_stream *st)
{
    return &st->out_hdrs;
}

void ks_h2_reply(struct ks_h2_stream *st, int code, struct evbuffer *body, bool stream)
{
    if (st->responded || st->reset)
        return;
    if (body)
        evbuffer_add_buffer(st->out, body);
    st->eof = !stream;
    bool head = strcmp(st->method, "HEAD") == 0;
    if (head)
        evbuffer_drain(st->out, evbuffer_get_length(st->out));
    submit(st, code, stream || (!head && evbuffer_get_length(st->out) > 0));
}

void ks_h2_chunk(struct ks_h2_stream *st, struct evbuffer *buf)
{
    if (st->reset || st->eof) {
        evbuffer_drain(buf, evbuffer_get_length(buf));
        return;
    }
    evbuffer_add_buffer(st->out, buf);
    resume(st);
}

void ks_h2_end(struct ks_h2_stream *st)
{
    st->eof = true;
    resume(st);
}

size_t ks_h2_queued(struct ks_h2_stream *st)
{
    return evbuffer_get_length(st->out) + evbuffer_get_length(bufferevent_get_output(st->c->bev));
}

const char *ks_h2_peer(struct ks_h2_stream *st)
{
    return st->c->peer;
}

void ks_h2_detach(struct ks_h2_stream *st)
{
    st->req = NULL;
    if (st->c->dead || st->reset)
        return;
    if (!st->responded) {
        ks_h2_reset(st, NGHTTP2_INTERNAL_ERROR);
        return;
    }
    if (!st->eof)
        ks_h2_end(st);
}

void ks_h2_note_user(struct ks_h2_stream *st, const char *user)
{
    snprintf(st->c->user, sizeof(st->c->user), "%s", user);
}

/* ---- faults -------------------------------------------------------------- */

static void on_blackhole_over(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct ks_h2_conn *c = arg;
    cx_info(KS_LOG, "h2: closing the blackholed connection from %s", c->peer);
    conn_kill(c);
}

static void blackhole(struct ks_h2_conn *c, int64_t ms)
{
    if (c->dead || c->blackholed)
        return;
    cx_info(KS_LOG, "h2: connection from %s (%s) goes silent%s", c->peer, c->user,
            ms > 0 ? " for a while" : "");
    c->blackholed = true;
    bufferevent_disable(c->bev, EV_READ | EV_WRITE);
    if (ms > 0) {
        c->blackhole_ev = evtimer_new(c->s->base, on_blackhole_over, c);
        struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
        if (c->blackhole_ev)
            event_add(c->blackhole_ev, &tv);
    }
}

void ks_h2_blackhole_conn(struct ks_h2_stream *st, int64_t ms)
{
    blackhole(st->c, ms);
}

static void goaway(struct ks_h2_conn *c)
{
    if (c->dead || c->goaway)
        return;
    c->goaway = true;
    int32_t last = nghttp2_session_get_last_proc_stream_id(c->sess);
    nghttp2_submit_goaway(c->sess, NGHTTP2_FLAG_NONE, last, NGHTTP2_NO_ERROR, NULL, 0);
    schedule_flush(c);
}

void ks_h2_goaway_conn(struct ks_h2_stream *st)
{
    /* After the answer, as Go's server does with a Connection: close
     * response: its last frame goes first. */
    st->goaway_after = true;
}

void ks_h2_reset(struct ks_h2_stream *st, uint32_t code)
{
    if (st->reset || st->c->dead)
        return;
    st->reset = true;
    nghttp2_submit_rst_stream(st->c->sess, NGHTTP2_FLAG_NONE, st->id, code);
    schedule_flush(st->c);
}

void ks_h2_close_conn(struct ks_h2_stream *st)
{
    conn_kill(st->c);
}

/* ---- connections --------------------------------------------------------- */

static void conn_free(struct ks_h2_conn *c)
{
    struct ks_h2_stream *st;
    c->dead = true;
    while ((st = LIST_FIRST(&c->streams)) != NULL)
        stream_gone(st);
    LIST_REMOVE(c, link);
    nghttp2_session_del(c->sess);
    if (c->flush_ev)
        event_free(c->flush_ev);
    if (c->close_ev)
        event_free(c->close_ev);
    if (c->blackhole_ev)
        event_free(c->blackhole_ev);
    /* evhttp's connection owns the bufferevent (and the socket). */
    if (c->evcon)
        evhttp_connection_free(c->evcon);
    else
        bufferevent_free(c->bev);
    free(c);
}

static void on_close_ev(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_free(arg);
}

/* Ends the connection from the loop (never inside its own callbacks). */
static void conn_kill(struct ks_h2_conn *c)
{
    if (c->dead)
        return;
    c->dead = true;
    bufferevent_disable(c->bev, EV_READ | EV_WRITE);
    event_active(c->close_ev, EV_TIMEOUT, 0);
}

static void flush(struct ks_h2_conn *c)
{
    if (c->dead || c->blackholed)
        return;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    while (evbuffer_get_length(out) < OUT_HIGH) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(c->sess, &data);
        if (n < 0) {
            cx_warn(KS_LOG, "h2: %s: %s", c->peer, nghttp2_strerror((int)n));
            conn_kill(c);
            return;
        }
        if (n == 0)
            break;
        bufferevent_write(c->bev, data, (size_t)n);
    }
    if (!nghttp2_session_want_read(c->sess) && !nghttp2_session_want_write(c->sess) &&
        evbuffer_get_length(out) == 0)
        conn_kill(c); /* GOAWAY sent (or received) and every stream done */
}

static void on_flush_ev(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    flush(arg);
}

static void readcb(struct bufferevent *bev, void *arg)
{
    struct ks_h2_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    while (!c->dead && !c->blackholed && evbuffer_get_length(in) > 0) {
        struct evbuffer_iovec v;
        if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
            break;
        ssize_t n = nghttp2_session_mem_recv(c->sess, v.iov_base, v.iov_len);
        if (n < 0) {
            cx_debug(KS_LOG, "h2: %s: %s", c->peer, nghttp2_strerror((int)n));
            conn_kill(c);
            return;
        }
        evbuffer_drain(in, (size_t)n);
    }
    flush(c);
}

static void writecb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    flush(arg);
}

static void eventcb(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        conn_kill(arg);
}

/* ---- nghttp2 callbacks --------------------------------------------------- */

static int on_begin_headers(nghttp2_session *sess, const nghttp2_frame *f, void *ud)
{
    struct ks_h2_conn *c = ud;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    struct ks_h2_stream *st = calloc(1, sizeof(*st));
    if (!st)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    st->c = c;
    st->id = f->hd.stream_id;
    TAILQ_INIT(&st->in);
    TAILQ_INIT(&st->out_hdrs);
    st->body = evbuffer_new();
    st->out = evbuffer_new();
    LIST_INSERT_HEAD(&c->streams, st, link);
    if (!st->body || !st->out) {
        stream_free(st);
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    c->streams_total++;
    nghttp2_session_set_stream_user_data(sess, st->id, st);
    return 0;
}

static int on_header(nghttp2_session *sess, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
    (void)flags;
    (void)ud;
    struct ks_h2_stream *st = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id);
    if (!st || st->dispatched)
        return 0;
    st->hdr_bytes += namelen + valuelen + 32;
    if (st->hdr_bytes > HDR_LIST_MAX)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets the stream */
    const char *n = (const char *)name, *v = (const char *)value;
    if (strcmp(n, ":method") == 0) {
        snprintf(st->method, sizeof(st->method), "%s", v);
    } else if (strcmp(n, ":path") == 0) {
        free(st->path);
        st->path = strdup(v);
    } else if (strcmp(n, ":authority") == 0) {
        evhttp_add_header(&st->in, "Host", v);
    } else if (n[0] != ':') {
        evhttp_add_header(&st->in, n, v);
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *sess, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *ud)
{
    (void)flags;
    (void)ud;
    struct ks_h2_stream *st = nghttp2_session_get_stream_user_data(sess, id);
    if (!st || st->too_big)
        return 0;
    if (evbuffer_get_length(st->body) + len > KS_BODY_MAX) {
        st->too_big = true;
        evbuffer_drain(st->body, evbuffer_get_length(st->body));
        return 0;
    }
    evbuffer_add(st->body, data, len);
    return 0;
}

static enum evhttp_cmd_type method_of(const char *m)
{
    static const struct {
        const char *name;
        enum evhttp_cmd_type t;
    } tab[] = {{"GET", EVHTTP_REQ_GET},        {"POST", EVHTTP_REQ_POST},
               {"PUT", EVHTTP_REQ_PUT},        {"PATCH", EVHTTP_REQ_PATCH},
               {"DELETE", EVHTTP_REQ_DELETE},  {"HEAD", EVHTTP_REQ_HEAD},
               {"OPTIONS", EVHTTP_REQ_OPTIONS}};
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
        if (strcmp(m, tab[i].name) == 0)
            return tab[i].t;
    return 0;
}

static void simple_reply(struct ks_h2_stream *st, int code, const char *text)
{
    struct evbuffer *b = evbuffer_new();
    if (b)
        evbuffer_add(b, text, strlen(text));
    evhttp_add_header(&st->out_hdrs, "Content-Type", "text/plain; charset=utf-8");
    ks_h2_reply(st, code, b, false);
    if (b)
        evbuffer_free(b);
}

static void dispatch(struct ks_h2_stream *st)
{
    st->dispatched = true;
    enum evhttp_cmd_type m = method_of(st->method);
    if (!m || !st->path) {
        simple_reply(st, 405, "method not allowed\n");
        return;
    }
    if (st->too_big) {
        simple_reply(st, 413, "request entity too large\n");
        return;
    }
    struct ks_req *r = calloc(1, sizeof(*r));
    if (!r) {
        simple_reply(st, 500, "out of memory\n");
        return;
    }
    r->s = st->c->s;
    r->h2 = st;
    r->was_h2 = true;
    r->method = m;
    r->start_mono_ns = cx_mono_ns();
    st->req = r;
    char *q = strchr(st->path, '?');
    if (q)
        *q++ = '\0';
    ks_http_serve(r, st->path, q, st->body);
}

static int on_frame_recv(nghttp2_session *sess, const nghttp2_frame *f, void *ud)
{
    (void)ud;
    if ((f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) &&
        (f->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        struct ks_h2_stream *st = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id);
        if (st && !st->dispatched)
            dispatch(st);
    }
    return 0;
}

static int on_stream_close(nghttp2_session *sess, int32_t id, uint32_t code, void *ud)
{
    (void)code;
    (void)ud;
    struct ks_h2_stream *st = nghttp2_session_get_stream_user_data(sess, id);
    if (st) {
        nghttp2_session_set_stream_user_data(sess, id, NULL);
        if (st->goaway_after)
            goaway(st->c);
        stream_gone(st);
    }
    return 0;
}

static nghttp2_session_callbacks *callbacks(void)
{
    static nghttp2_session_callbacks *cbs;
    if (!cbs && nghttp2_session_callbacks_new(&cbs) == 0) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
        nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    }
    return cbs;
}

/* ---- taking a connection over from evhttp --------------------------------- */

static int take_over(SSL *ssl)
{
    struct bufferevent *bev = SSL_get_ex_data(ssl, g.idx_bev);
    nghttp2_session_callbacks *cbs = callbacks();
    /* evhttp's callbacks on the bufferevent carry its connection. */
    void *evcon = NULL;
    if (bev)
        bufferevent_getcb(bev, NULL, NULL, NULL, &evcon);
    if (!bev || !evcon || !cbs)
        return -1;
    struct ks_h2_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return -1;
    c->s = g.s;
    c->bev = bev;
    c->evcon = evcon;
    LIST_INIT(&c->streams);
    c->flush_ev = event_new(g.s->base, -1, 0, on_flush_ev, c);
    c->close_ev = event_new(g.s->base, -1, 0, on_close_ev, c);
    if (!c->flush_ev || !c->close_ev || nghttp2_session_server_new(&c->sess, cbs, c) != 0) {
        if (c->flush_ev)
            event_free(c->flush_ev);
        if (c->close_ev)
            event_free(c->close_ev);
        free(c);
        return -1;
    }
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_STREAMS},
                                   {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, HDR_LIST_MAX}};
    nghttp2_submit_settings(c->sess, NGHTTP2_FLAG_NONE, iv, 2);
    /* Go's server grows the connection window to 1 GiB; a body of a few
     * MiB must not wait for WINDOW_UPDATEs either way. */
    nghttp2_session_set_local_window_size(c->sess, NGHTTP2_FLAG_NONE, 0, 1 << 30);
    evutil_socket_t fd = bufferevent_getfd(bev);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (fd >= 0 && getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, c->peer, sizeof(c->peer));
        else if (ss.ss_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, c->peer, sizeof(c->peer));
    }
    if (fd >= 0) {
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    /* From now on the bytes are ours; evhttp's read timeout goes too. */
    bufferevent_setcb(bev, readcb, writecb, eventcb, c);
    bufferevent_set_timeouts(bev, NULL, NULL);
    bufferevent_setwatermark(bev, EV_WRITE, OUT_HIGH / 4, 0);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    LIST_INSERT_HEAD(&g.conns, c, link);
    cx_debug(KS_LOG, "h2: connection from %s", c->peer);
    return 0;
}

static int alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned int inlen, void *arg)
{
    struct ks_server *s = arg;
    static const unsigned char both[] = "\x02h2\x08http/1.1";
    static const unsigned char h1[] = "\x08http/1.1";
    const unsigned char *offer = s->cfg.no_http2 ? h1 : both;
    unsigned int offer_len = s->cfg.no_http2 ? sizeof(h1) - 1 : sizeof(both) - 1;
    if (SSL_select_next_proto((unsigned char **)out, outlen, offer, offer_len, in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    if (*outlen == 2 && memcmp(*out, "h2", 2) == 0 && take_over(ssl) != 0) {
        /* Cannot serve h2 on it: HTTP/1.1 if the client takes it. */
        if (SSL_select_next_proto((unsigned char **)out, outlen, h1, sizeof(h1) - 1, in, inlen) !=
            OPENSSL_NPN_NEGOTIATED)
            return SSL_TLSEXT_ERR_ALERT_FATAL;
    }
    return SSL_TLSEXT_ERR_OK;
}

int ks_h2_setup(struct ks_server *s, SSL_CTX *ctx)
{
    g.s = s;
    if (!g.init) {
        LIST_INIT(&g.conns);
        g.idx_bev = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
        g.init = true;
    }
    if (g.idx_bev < 0 || !callbacks())
        return -1;
    SSL_CTX_set_alpn_select_cb(ctx, alpn_cb, s);
    return 0;
}

struct bufferevent *ks_h2_new_bev(struct ks_server *s, SSL *ssl)
{
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        s->base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (bev)
        SSL_set_ex_data(ssl, g.idx_bev, bev);
    return bev;
}

void ks_h2_free_all(struct ks_server *s)
{
    (void)s;
    if (!g.init)
        return;
    struct ks_h2_conn *c;
    while ((c = LIST_FIRST(&g.conns)) != NULL)
        conn_free(c);
    nghttp2_session_callbacks *cbs = callbacks();
    nghttp2_session_callbacks_del(cbs);
}

/* ---- /_sim/h2/ -------------------------------------------------------------- */

static void list_conns(struct ks_req *r)
{
    struct cx_buf b;
    cx_buf_init(&b, 1 << 20);
    int rc = cx_buf_puts(&b, "{\"connections\":[");
    bool first = true;
    struct ks_h2_conn *c;
    LIST_FOREACH(c, &g.conns, link)
    {
        size_t n = 0;
        struct ks_h2_stream *st;
        LIST_FOREACH(st, &c->streams, link)
        n++;
        rc |= cx_buf_printf(&b, "%s{\"peer\":", first ? "" : ",");
        rc |= cx_json_escape(&b, c->peer);
        rc |= cx_buf_puts(&b, ",\"user\":");
        rc |= cx_json_escape(&b, c->user);
        rc |=
            cx_buf_printf(&b,
                          ",\"streams\":%zu,\"streamsTotal\":%llu,\"blackholed\":%s,"
                          "\"goaway\":%s,\"closing\":%s}",
                          n, (unsigned long long)c->streams_total, c->blackholed ? "true" : "false",
                          c->goaway ? "true" : "false", c->dead ? "true" : "false");
        first = false;
    }
    rc |= cx_buf_puts(&b, "]}");
    if (rc)
        ks_err_internal(r, "out of memory");
    else
        ks_reply_json(r, 200, b.data, b.len);
    cx_buf_free(&b);
}

/* POST /_sim/h2/blackhole|goaway {"user": U, "ms": N}: every HTTP/2
 * connection (of U, by its latest request) goes silent (for N ms, then it
 * is closed; 0: until kubesim exits) or gets a GOAWAY. */
static void act(struct ks_req *r, bool hole)
{
    cJSON *body = r->body_len ? cJSON_ParseWithLength(r->body, r->body_len) : NULL;
    const char *user = body ? cx_json_str(body, "user") : NULL;
    const cJSON *ms = body ? cJSON_GetObjectItemCaseSensitive(body, "ms") : NULL;
    int64_t dur = cJSON_IsNumber(ms) ? (int64_t)ms->valuedouble : 0;
    size_t n = 0;
    struct ks_h2_conn *c;
    LIST_FOREACH(c, &g.conns, link)
    {
        if (c->dead || (hole && c->blackholed) || (user && *user && strcmp(user, c->user) != 0))
            continue;
        if (hole)
            blackhole(c, dur);
        else
            goaway(c);
        n++;
    }
    cJSON_Delete(body);
    char out[64];
    int len = snprintf(out, sizeof(out), "{\"connections\":%zu}", n);
    ks_reply_json(r, 200, out, (size_t)len);
}

int ks_h2_admin(struct ks_req *r, const char *p)
{
    if (strncmp(p, "/h2/", 4) != 0)
        return -1;
    p += 4;
    if (strcmp(p, "connections") == 0 && r->method == EVHTTP_REQ_GET)
        list_conns(r);
    else if (strcmp(p, "blackhole") == 0 && r->method == EVHTTP_REQ_POST)
        act(r, true);
    else if (strcmp(p, "goaway") == 0 && r->method == EVHTTP_REQ_POST)
        act(r, false);
    else
        return -1;
    return 0;
}
