#include "xdsc.h"

#include "xlate_snapshot.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xdsc_call {
    struct xdsc *c;
    struct xdsc_call *next;
    int32_t id;
    const struct xdsc_call_cbs *cbs;
    void *user;
    struct cx_buf out; /* bytes to send */
    struct cx_buf in;  /* partial messages */
    uint8_t eof_send, deferred, done, closing_cb;
    int http_status;
    int grpc_status;
    char grpc_message[512];
};

struct xdsc {
    struct event_base *base;
    struct bufferevent *bev;
    nghttp2_session *session;
    struct xdsc_call *calls;
    struct event *flush_ev;
    struct ev_token_bucket_cfg *rate; /* xdsc_limit_read */
    uint8_t alive, goaway, ignore_pings;
    unsigned pings;
};

static void flush_soon(struct xdsc *c)
{
    if (c->alive)
        event_active(c->flush_ev, EV_TIMEOUT, 0);
}

static void call_finish(struct xdsc_call *call, int grpc_status, const char *msg)
{
    if (call->done)
        return;
    call->done = 1;
    if (grpc_status >= 0 && call->grpc_status < 0) {
        call->grpc_status = grpc_status;
        snprintf(call->grpc_message, sizeof(call->grpc_message), "%s", msg ? msg : "");
    }
    if (call->cbs && call->cbs->on_close)
        call->cbs->on_close(call->user, call, call->grpc_status, call->grpc_message,
                            call->http_status);
}

static void conn_dead(struct xdsc *c)
{
    if (!c->alive)
        return;
    c->alive = 0;
    for (struct xdsc_call *call = c->calls; call; call = call->next)
        call_finish(call, -1, NULL);
}

static ssize_t cb_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *u)
{
    (void)s;
    (void)flags;
    struct xdsc *c = u;
    if (evbuffer_add(bufferevent_get_output(c->bev), data, len) != 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    return (ssize_t)len;
}

static ssize_t data_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
                         uint32_t *flags, nghttp2_data_source *src, void *u)
{
    (void)s;
    (void)id;
    (void)u;
    struct xdsc_call *call = src->ptr;
    size_t n = call->out.len < length ? call->out.len : length;
    if (n) {
        memcpy(buf, call->out.data, n);
        cx_buf_consume(&call->out, n);
        return (ssize_t)n;
    }
    if (call->eof_send) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        return 0;
    }
    call->deferred = 1;
    return NGHTTP2_ERR_DEFERRED;
}

static int cb_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags, void *u)
{
    (void)flags;
    (void)u;
    struct xdsc_call *call = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    if (!call)
        return 0;
    char v[512];
    size_t vl = valuelen < sizeof(v) - 1 ? valuelen : sizeof(v) - 1;
    memcpy(v, value, vl);
    v[vl] = '\0';
    if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
        call->http_status = (int)strtol(v, NULL, 10);
    } else if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0) {
        call->grpc_status = (int)strtol(v, NULL, 10);
    } else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0) {
        /* percent-decode */
        size_t k = 0;
        for (size_t i = 0; i < vl && k + 1 < sizeof(call->grpc_message); i++) {
            if (v[i] == '%' && i + 2 < vl) {
                char hx[3] = {v[i + 1], v[i + 2], 0};
                call->grpc_message[k++] = (char)strtol(hx, NULL, 16);
                i += 2;
            } else {
                call->grpc_message[k++] = v[i];
            }
        }
        call->grpc_message[k] = '\0';
    }
    return 0;
}

static int cb_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *u)
{
    struct xdsc *c = u;
    if (f->hd.type == NGHTTP2_GOAWAY)
        c->goaway = 1;
    if (f->hd.type == NGHTTP2_PING && !(f->hd.flags & NGHTTP2_FLAG_ACK))
        c->pings++;
    struct xdsc_call *call = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    if (call && f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_RESPONSE &&
        call->cbs && call->cbs->on_headers)
        call->cbs->on_headers(call->user, call, call->http_status);
    return 0;
}

static int cb_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *u)
{
    (void)flags;
    (void)u;
    struct xdsc_call *call = nghttp2_session_get_stream_user_data(s, id);
    if (!call)
        return 0;
    if (cx_buf_append(&call->in, data, len) != 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    while (call->in.len >= 5) {
        const uint8_t *p = (const uint8_t *)call->in.data;
        uint32_t n = ((uint32_t)p[1] << 24) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 8) | p[4];
        if (call->in.len < 5 + (size_t)n)
            break;
        if (call->cbs && call->cbs->on_message)
            call->cbs->on_message(call->user, call, p + 5, n);
        cx_buf_consume(&call->in, 5 + (size_t)n);
    }
    return 0;
}

static int cb_close(nghttp2_session *s, int32_t id, uint32_t err, void *u)
{
    (void)err;
    (void)u;
    struct xdsc_call *call = nghttp2_session_get_stream_user_data(s, id);
    if (call)
        call_finish(call, -1, NULL);
    return 0;
}

static void do_flush(struct xdsc *c)
{
    if (!c->alive)
        return;
    if (nghttp2_session_send(c->session) != 0)
        conn_dead(c);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    do_flush(arg);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct xdsc *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t len = evbuffer_get_length(in);
    if (c->ignore_pings) {
        /* Drop the session's automatic PING ACKs by not processing PINGs:
         * simplest is to stop reading altogether. */
        evbuffer_drain(in, len);
        return;
    }
    unsigned char *data = evbuffer_pullup(in, -1);
    ssize_t rv = nghttp2_session_mem_recv(c->session, data, len);
    evbuffer_drain(in, len);
    if (rv < 0) {
        conn_dead(c);
        return;
    }
    do_flush(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct xdsc *c = arg;
    if (what & BEV_EVENT_CONNECTED) {
        do_flush(c);
        return;
    }
    conn_dead(c);
}

struct xdsc *xdsc_connect(struct event_base *base, const char *host, int port, SSL_CTX *ssl_ctx,
                          const char *sni)
{
    return xdsc_connect_alpn(base, host, port, ssl_ctx, sni, (const unsigned char *)"\x02h2", 3);
}

struct xdsc *xdsc_connect_alpn(struct event_base *base, const char *host, int port,
                               SSL_CTX *ssl_ctx, const char *sni, const unsigned char *alpn,
                               unsigned alpn_len)
{
    struct xdsc *c = calloc(1, sizeof(*c));
    nghttp2_session_callbacks *cbs = NULL;
    if (!c)
        return NULL;
    c->base = base;
    signal(SIGPIPE, SIG_IGN);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
        goto fail;
    if (ssl_ctx) {
        SSL *ssl = SSL_new(ssl_ctx);
        if (!ssl)
            goto fail;
        if (alpn_len)
            SSL_set_alpn_protos(ssl, alpn, alpn_len);
        if (sni)
            SSL_set_tlsext_host_name(ssl, sni);
        c->bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                BEV_OPT_CLOSE_ON_FREE);
        if (!c->bev) {
            SSL_free(ssl);
            goto fail;
        }
        bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
    } else {
        c->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
        if (!c->bev)
            goto fail;
    }
    c->flush_ev = event_new(base, -1, 0, on_flush, c);
    if (!c->flush_ev || nghttp2_session_callbacks_new(&cbs) != 0)
        goto fail;
    nghttp2_session_callbacks_set_send_callback(cbs, cb_send);
    nghttp2_session_callbacks_set_on_header_callback(cbs, cb_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, cb_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, cb_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, cb_close);
    int rv = nghttp2_session_client_new(&c->session, cbs, c);
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0)
        goto fail;
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 22}};
    nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, iv, 1);
    nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, 1 << 24);
    bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    c->alive = 1;
    if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&sin, sizeof(sin)) != 0)
        goto fail;
    int one = 1;
    setsockopt(bufferevent_getfd(c->bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return c;
fail:
    c->alive = 0;
    xdsc_free(c);
    return NULL;
}

int xdsc_alive(const struct xdsc *c)
{
    return c->alive;
}

int xdsc_goaway(const struct xdsc *c)
{
    return c->goaway;
}

unsigned xdsc_pings(const struct xdsc *c)
{
    return c->pings;
}

void xdsc_ignore_pings(struct xdsc *c)
{
    c->ignore_pings = 1;
}

int xdsc_limit_read(struct xdsc *c, size_t bytes_per_s)
{
    if (c->rate) {
        bufferevent_set_rate_limit(c->bev, NULL);
        ev_token_bucket_cfg_free(c->rate);
        c->rate = NULL;
    }
    if (!bytes_per_s)
        return 0;
    /* ten refills a second */
    struct timeval tick = {0, 100000};
    size_t per = bytes_per_s / 10 ? bytes_per_s / 10 : 1;
    c->rate = ev_token_bucket_cfg_new(per, per, EV_RATE_LIMIT_MAX, EV_RATE_LIMIT_MAX, &tick);
    if (!c->rate)
        return -1;
    return bufferevent_set_rate_limit(c->bev, c->rate);
}

void xdsc_free(struct xdsc *c)
{
    if (!c)
        return;
    c->alive = 0;
    struct xdsc_call *call = c->calls;
    while (call) {
        struct xdsc_call *next = call->next;
        cx_buf_free(&call->out);
        cx_buf_free(&call->in);
        free(call);
        call = next;
    }
    if (c->session)
        nghttp2_session_del(c->session);
    if (c->bev)
        bufferevent_free(c->bev);
    if (c->rate)
        ev_token_bucket_cfg_free(c->rate);
    if (c->flush_ev)
        event_free(c->flush_ev);
    free(c);
}

struct xdsc_call *xdsc_call_open(struct xdsc *c, const char *path, const char *content_type,
                                 const struct xdsc_call_cbs *cbs, void *user)
{
    return xdsc_call_open_auth(c, path, content_type, NULL, cbs, user);
}

struct xdsc_call *xdsc_call_open_auth(struct xdsc *c, const char *path, const char *content_type,
                                      const char *authorization, const struct xdsc_call_cbs *cbs,
                                      void *user)
{
    if (!c->alive)
        return NULL;
    struct xdsc_call *call = calloc(1, sizeof(*call));
    if (!call)
        return NULL;
    call->c = c;
    call->cbs = cbs;
    call->user = user;
    call->grpc_status = -1;
    cx_buf_init(&call->out, 0);
    cx_buf_init(&call->in, 64 << 20);
    nghttp2_nv nv[] = {
        {(uint8_t *)":method", (uint8_t *)"POST", 7, 4, 0},
        {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
        {(uint8_t *)":authority", (uint8_t *)"xds", 10, 3, 0},
        {(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), 0},
        {(uint8_t *)"content-type", (uint8_t *)content_type, 12, strlen(content_type), 0},
        {(uint8_t *)"te", (uint8_t *)"trailers", 2, 8, 0},
        {(uint8_t *)"authorization", (uint8_t *)(authorization ? authorization : ""), 13,
         authorization ? strlen(authorization) : 0, 0},
    };
    nghttp2_data_provider dp = {.source.ptr = call, .read_callback = data_read};
    call->id = nghttp2_submit_request(c->session, NULL, nv, authorization ? 7 : 6, &dp, call);
    if (call->id < 0) {
        free(call);
        return NULL;
    }
    call->next = c->calls;
    c->calls = call;
    flush_soon(c);
    return call;
}

static void call_kick(struct xdsc_call *call)
{
    if (call->deferred) {
        call->deferred = 0;
        nghttp2_session_resume_data(call->c->session, call->id);
    }
    flush_soon(call->c);
}

int xdsc_call_send(struct xdsc_call *call, const void *msg, size_t len)
{
    uint8_t p[5] = {0, (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
                    (uint8_t)len};
    if (call->done || call->eof_send || cx_buf_append(&call->out, p, 5) != 0 ||
        cx_buf_append(&call->out, msg, len) != 0)
        return -1;
    call_kick(call);
    return 0;
}

int xdsc_call_send_raw(struct xdsc_call *call, const void *bytes, size_t len)
{
    if (call->done || call->eof_send || cx_buf_append(&call->out, bytes, len) != 0)
        return -1;
    call_kick(call);
    return 0;
}

void xdsc_call_close_send(struct xdsc_call *call)
{
    call->eof_send = 1;
    call_kick(call);
}

int xdsc_call_done(const struct xdsc_call *call)
{
    return call->done;
}

void xdsc_call_detach(struct xdsc_call *call)
{
    if (call)
        call->user = NULL, call->cbs = NULL;
}

/* ---- snapshots for tests ------------------------------------------------------ */

struct xds_resource *xdsc_fake_resource(enum xds_type type, const char *name, const char *payload)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    size_t nl = strlen(name), pl = strlen(payload);
    uint8_t hdr[12];
    int rc = 0;
    size_t h = 0;
    hdr[h++] = 0x0a;
    for (size_t v = nl;; v >>= 7) {
        hdr[h++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80)
            break;
    }
    rc |= cx_buf_append(&b, hdr, h);
    rc |= cx_buf_append(&b, name, nl);
    h = 0;
    hdr[h++] = 0x12;
    for (size_t v = pl;; v >>= 7) {
        hdr[h++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80)
            break;
    }
    rc |= cx_buf_append(&b, hdr, h);
    rc |= cx_buf_append(&b, payload, pl);
    size_t len = 0;
    uint8_t *bytes = rc == 0 ? (uint8_t *)cx_buf_steal(&b, &len) : NULL;
    cx_buf_free(&b);
    if (!bytes)
        return NULL;
    return xlate_resource_new(type, name, bytes, len);
}

struct xlate_snapshot *xdsc_snapshot_new(void)
{
    struct xlate_snapshot *s = calloc(1, sizeof(*s));
    if (s)
        atomic_init(&s->refs, 1);
    return s;
}

int xdsc_snapshot_add(struct xlate_snapshot *s, const char *group, struct xds_resource *r)
{
    if (!r)
        return -1;
    struct xlate_group *g = NULL;
    for (size_t i = 0; i < s->ngroups; i++)
        if (strcmp(s->groups[i].name, group) == 0)
            g = &s->groups[i];
    if (!g) {
        struct xlate_group *v = realloc(s->groups, (s->ngroups + 1) * sizeof(*v));
        if (!v) {
            xlate_resource_unref(r);
            return -1;
        }
        s->groups = v;
        g = &s->groups[s->ngroups++];
        memset(g, 0, sizeof(*g));
        g->name = strdup(group);
        g->mode = XLATE_MODE_PROXYLESS;
    }
    struct xds_resource_set *set = &g->types[r->type];
    struct xds_resource **items = realloc(set->items, (set->n + 1) * sizeof(*items));
    if (!items) {
        xlate_resource_unref(r);
        return -1;
    }
    set->items = items;
    set->items[set->n++] = r;
    return 0;
}

static int group_cmp(const void *a, const void *b)
{
    return strcmp(((const struct xlate_group *)a)->name, ((const struct xlate_group *)b)->name);
}

int xdsc_snapshot_seal(struct xlate_snapshot *s)
{
    if (s->ngroups > 1)
        qsort(s->groups, s->ngroups, sizeof(*s->groups), group_cmp);
    for (size_t g = 0; g < s->ngroups; g++)
        for (int t = 0; t < XDS_TYPE_COUNT; t++)
            if (xlate_resource_set_seal(&s->groups[g].types[t]) != 0)
                return -1;
    xlate_snapshot_seal(s);
    return 0;
}

/* ---- TLS for tests ------------------------------------------------------------ */

int xdsc_make_certs(const char *dir)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "set -e; cd '%s'; "
             "EC='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'; "
             "openssl req -x509 $EC -keyout ca.key -out ca.crt -subj /CN=coxswain-test-ca "
             "-days 2 2>/dev/null; "
             "for who in server client; do "
             "openssl req $EC -keyout $who.key -out $who.csr -subj /CN=$who 2>/dev/null; "
             "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > $who.ext; "
             "openssl x509 -req -in $who.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
             "-out $who.crt -days 2 -extfile $who.ext 2>/dev/null; done",
             dir);
    return system(cmd) == 0 ? 0 : -1;
}

SSL_CTX *xdsc_tls_client_ctx(const char *ca, const char *cert, const char *key)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx)
        return NULL;
    if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1)
        goto fail;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (cert && (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
                 SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1))
        goto fail;
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}
