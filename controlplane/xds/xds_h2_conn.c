/* Connections of the gRPC transport: accept, the HTTP/2 session on the
 * socket (h2c) or an OpenSSL bufferevent (TLS), flushing with backpressure, the handshake
 * deadline and keepalive timer, and teardown. */
#include "xds_h2_impl.h"

#include "cx_time.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <linux/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* ---- connections ------------------------------------------------------------- */

static void conn_notify_writable(struct h2_conn *c)
{
    struct cx_list *l;
    cx_list_for_each (l, &c->streams) {
        struct xds_h2_stream *st = cx_list_entry(l, struct xds_h2_stream, link);
        if (st->notify) {
            st->notify = 0;
            if (st->ctx && st->method->on_writable && !st->finishing)
                st->method->on_writable(st->ctx);
        }
    }
}

struct evbuffer *xds_h2_conn_out(struct h2_conn *c)
{
    if (c->bev)
        return bufferevent_get_output(c->bev);
    if (!c->wbuf)
        c->wbuf = evbuffer_new();
    return c->wbuf;
}

size_t xds_h2_conn_out_len(const struct h2_conn *c)
{
    if (c->bev)
        return evbuffer_get_length(bufferevent_get_output(c->bev));
    return c->wbuf ? evbuffer_get_length(c->wbuf) : 0;
}

static void on_io(evutil_socket_t fd, short what, void *arg);

static int retriable(int e)
{
    return e == EAGAIN || e == EWOULDBLOCK || e == EINTR;
}

/* h2c: makes io_ev wait for writability too, or no longer. */
static void conn_io_want_write(struct h2_conn *c, int on)
{
    if (!c->io_ev || !!on == c->io_write)
        return;
    event_del(c->io_ev);
    event_assign(c->io_ev, c->srv->base, c->fd, EV_READ | EV_PERSIST | (on ? EV_WRITE : 0), on_io,
                 c);
    event_add(c->io_ev, NULL);
    c->io_write = (uint8_t) !!on;
}

/* h2c: writes what the socket takes; the rest waits for writability, and
 * the buffer goes once empty. Returns 0, or -1 when |c| was freed (the
 * peer is gone). */
static int conn_write(struct h2_conn *c)
{
    while (c->wbuf && evbuffer_get_length(c->wbuf) > 0) {
        int n = evbuffer_write(c->wbuf, c->fd);
        if (n > 0)
            continue;
        if (n == 0 || retriable(errno))
            break;
        xds_h2_conn_free(c);
        return -1;
    }
    if (c->wbuf && evbuffer_get_length(c->wbuf) == 0) {
        evbuffer_free(c->wbuf);
        c->wbuf = NULL;
    }
    conn_io_want_write(c, c->wbuf != NULL);
    return 0;
}

/* Hands what nghttp2 has to the socket; closes the connection when the
 * session is over. Returns 0, or -1 when |c| was freed. */
static int conn_flush(struct h2_conn *c)
{
    if (nghttp2_session_send(c->session) != 0) {
        xds_h2_conn_free(c);
        return -1;
    }
    if (!c->bev && conn_write(c) != 0)
        return -1;
    conn_notify_writable(c);
    if (nghttp2_session_want_write(c->session)) {
        /* a stream queued more while we notified: go again soon */
        if (xds_h2_conn_out_len(c) < CONN_OUT_HIGH)
            xds_h2_conn_schedule_flush(c);
    }
    if (!nghttp2_session_want_read(c->session) && !nghttp2_session_want_write(c->session)) {
        if (xds_h2_conn_out_len(c) == 0) {
            xds_h2_conn_free(c);
            return -1;
        }
        c->draining = 1;
        if (c->bev)
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

void xds_h2_conn_schedule_flush(struct h2_conn *c)
{
    if (!event_pending(c->flush_ev, EV_TIMEOUT, NULL))
        event_active(c->flush_ev, EV_TIMEOUT, 0);
}

/* Input for nghttp2; frees |c| on a protocol error. Returns 0 or -1 (freed). */
static int conn_recv(struct h2_conn *c, const uint8_t *p, size_t n)
{
    c->last_rx_ns = cx_mono_ns();
    while (n > 0) {
        ssize_t rv = nghttp2_session_mem_recv(c->session, p, n);
        if (rv <= 0) {
            xds_h2_conn_free(c);
            return -1;
        }
        p += rv;
        n -= (size_t)rv;
    }
    return 0;
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct h2_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    while (evbuffer_get_length(in) > 0) {
        struct evbuffer_iovec v;
        if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
            break;
        if (conn_recv(c, v.iov_base, v.iov_len) != 0)
            return;
        evbuffer_drain(in, v.iov_len);
    }
    conn_flush(c);
}

/* h2c: the socket is readable (read once, as a bufferevent does: the loop
 * stays fair) and/or writable. */
static void on_io(evutil_socket_t fd, short what, void *arg)
{
    struct h2_conn *c = arg;
    if (what & EV_WRITE) {
        if (conn_write(c) != 0)
            return;
        if (c->draining) {
            if (!c->wbuf)
                xds_h2_conn_free(c);
            return;
        }
        if (xds_h2_conn_out_len(c) <= CONN_OUT_LOW && conn_flush(c) != 0)
            return;
    }
    if (!(what & EV_READ))
        return;
    uint8_t buf[16384];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && !retriable(errno))) {
        xds_h2_conn_free(c); /* EOF or a reset */
        return;
    }
    if (n < 0)
        return;
    if (conn_recv(c, buf, (size_t)n) != 0)
        return;
    conn_flush(c);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct h2_conn *c = arg;
    if (c->draining) {
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
            xds_h2_conn_free(c);
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
    xds_h2_conn_free(c);
}

/* Smaller of two intervals where < 0 means "none". */
static int min_ms(int a, int b)
{
    return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

/* One timer per connection: the handshake deadline until the preface came,
 * then the keepalive tick, or the idle deadline of a connection that holds
 * no stream when that comes first. */
void xds_h2_conn_arm_timer(struct h2_conn *c)
{
    const struct xds_h2_server *s = c->srv;
    int ms = s->keepalive_ms;
    if (!c->preface_ok)
        ms = min_ms(ms, s->handshake_ms);
    if (cx_list_empty(&c->streams) && s->idle_conn_ms >= 0) {
        int64_t left = (int64_t)s->idle_conn_ms - (cx_mono_ns() - c->idle_since_ns) / CX_NS_PER_MS;
        ms = min_ms(ms, left < 1 ? 1 : (int)left);
    }
    if (ms < 0)
        return;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(c->timer, &tv);
}

/* Bytes of ours the peer's TCP has acknowledged (TCP_INFO), 0 if unknown.
 * It moves while the peer reads; it stops for a peer that is gone, or that
 * reads nothing while its receive buffer is full. */
static uint64_t conn_acked(const struct h2_conn *c)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    memset(&ti, 0, sizeof(ti));
    evutil_socket_t fd = c->bev ? bufferevent_getfd(c->bev) : c->fd;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof(ti.tcpi_bytes_acked))
        return 0;
    return ti.tcpi_bytes_acked;
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
            xds_h2_conn_free(c); /* no TLS handshake / HTTP/2 preface in time */
            return;
        }
        xds_h2_conn_arm_timer(c);
        return;
    }
    if (cx_list_empty(&c->streams) && !c->closing && s->idle_conn_ms >= 0 &&
        now - c->idle_since_ns >= (int64_t)s->idle_conn_ms * CX_NS_PER_MS) {
        /* A connection that holds no call costs a socket and a session for
         * nothing: GOAWAY, then closed once that is written. */
        s->counts.idle_closed++;
        if (s->on_counts)
            s->on_counts(s->user);
        nghttp2_session_terminate_session(c->session, NGHTTP2_NO_ERROR);
        c->closing = 1;
        xds_h2_conn_schedule_flush(c);
        return;
    }
    if (s->keepalive_ms >= 0) {
        if (c->ping_out) {
            uint64_t acked = conn_acked(c);
            if (acked != c->ping_acked) {
                /* The peer is still taking in what we sent before the PING
                 * (a large response to a slow reader): its answer waits
                 * behind that; the interval starts again. */
                c->ping_acked = acked;
                c->ping_sent_ns = now;
            } else if (now - c->ping_sent_ns >= (int64_t)s->keepalive_ms * CX_NS_PER_MS) {
                xds_h2_conn_free(c); /* the PING went unanswered for a whole interval */
                return;
            }
        } else if (now - c->last_rx_ns >= (int64_t)s->keepalive_ms * CX_NS_PER_MS) {
            if (nghttp2_submit_ping(c->session, NGHTTP2_FLAG_NONE, NULL) == 0) {
                c->ping_out = 1;
                c->ping_sent_ns = now;
                c->ping_acked = conn_acked(c);
            }
            if (conn_flush(c) != 0)
                return; /* (now, so that the PING's frame is out before the trim below) */
        }
    }
    /* Frames were written (or header blocks received) since the last tick
     * and none is under way: the frame buffer's pages, and the pages of the
     * connection's unit that hold nothing live (xds_h2_mem.c), go back to
     * the kernel. Once per keepalive tick at most (at once after every flush, each response would
     * fault them back: +30% server CPU per push measured), so an idle connection holds none of them
     * after one interval. */
    if ((c->mem.dirty || c->mem.cold_dirty) && !c->closing &&
        !nghttp2_session_want_write(c->session))
        xds_h2_mem_trim(&c->mem,
                        nghttp2_session_get_hd_inflate_dynamic_table_size(c->session) == 0 &&
                            nghttp2_session_get_hd_deflate_dynamic_table_size(c->session) == 0);
    xds_h2_conn_arm_timer(c);
}

void xds_h2_server_check_done(struct xds_h2_server *s)
{
    if (s->shutting && cx_list_empty(&s->conns) && s->done_ev)
        event_active(s->done_ev, EV_TIMEOUT, 0);
}

/* The connection's events live in its hot area when they fit (each would
 * otherwise be a heap block of its own). */
static struct event *conn_event_new(struct h2_conn *c, evutil_socket_t fd, short what,
                                    event_callback_fn fn)
{
    struct event *ev = xds_h2_mem_hot_alloc(&c->mem, event_get_struct_event_size());
    if (ev && event_assign(ev, c->srv->base, fd, what, fn, c) != 0) {
        xds_h2_mem_hot_free(&c->mem, ev);
        ev = NULL;
    }
    return ev;
}

static void conn_event_free(struct h2_conn *c, struct event *ev)
{
    if (!ev)
        return;
    event_del(ev);
    xds_h2_mem_hot_free(&c->mem, ev);
}

void xds_h2_conn_free(struct h2_conn *c)
{
    struct xds_h2_server *s = c->srv;
    while (!cx_list_empty(&c->streams))
        xds_h2_stream_free_(cx_list_entry(c->streams.next, struct xds_h2_stream, link));
    if (c->session)
        nghttp2_session_del(c->session);
    if (c->bev)
        bufferevent_free(c->bev);
    conn_event_free(c, c->flush_ev);
    conn_event_free(c, c->timer);
    conn_event_free(c, c->io_ev);
    if (c->wbuf)
        evbuffer_free(c->wbuf);
    if (c->fd >= 0)
        evutil_closesocket(c->fd);
    cx_list_del(&c->link);
    s->counts.connections--;
    xds_h2_mem_conn_free(&c->mem, c);
    xds_h2_server_check_done(s);
}

void xds_h2_on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
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
    s->accept_backoff_ms = 0; /* descriptors are back */
    struct h2_conn *c = xds_h2_mem_conn_new(sizeof(*c), offsetof(struct h2_conn, mem));
    nghttp2_session_callbacks *cbs = NULL;
    nghttp2_option *opt = NULL;
    if (!c) {
        evutil_closesocket(fd);
        return;
    }
    c->srv = s;
    c->fd = -1;
    cx_list_init(&c->streams);
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
    cx_list_prepend(&s->conns, &c->link);
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
        c->fd = fd; /* closed with the connection from here on */
        c->io_ev = conn_event_new(c, fd, EV_READ | EV_PERSIST, on_io);
        if (!c->io_ev)
            goto fail;
    }
    c->flush_ev = conn_event_new(c, -1, 0, on_flush_ev);
    c->timer = conn_event_new(c, -1, 0, on_timer);
    cbs = xds_h2_callbacks_new();
    if (!c->flush_ev || !c->timer || !cbs || nghttp2_option_new(&opt) != 0)
        goto fail;
    /* Flood and abuse limits come from nghttp2's defaults; we add ours. */
    nghttp2_option_set_max_outbound_ack(opt, 1000);
    /* An ADS connection carries one long-lived stream: HPACK's dynamic
     * tables would save a few bytes once and cost memory forever. */
    nghttp2_option_set_max_deflate_dynamic_table_size(opt, 0);
    c->mem.creating = 1;
    int rv = nghttp2_session_server_new3(&c->session, cbs, c, opt, &c->mem.mem);
    c->mem.creating = 0;
    if (rv != 0)
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
    if (c->bev) {
        bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
        bufferevent_setwatermark(c->bev, EV_WRITE, CONN_OUT_LOW, 0);
        bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    } else if (event_add(c->io_ev, NULL) != 0) {
        goto fail;
    }
    c->accepted_ns = c->last_rx_ns;
    c->idle_since_ns = c->last_rx_ns;
    if (s->budget && s->budget->max)
        c->budget.max = s->budget->max / 4 ? s->budget->max / 4 : 1;
    xds_h2_conn_arm_timer(c);
    conn_flush(c);
    return;
fail:
    if (cbs)
        nghttp2_session_callbacks_del(cbs);
    if (opt)
        nghttp2_option_del(opt);
    xds_h2_conn_free(c);
}
