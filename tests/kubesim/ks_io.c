/*
 * ks_io: a request's transport. HTTP/1.1 requests are libevent's evhttp
 * requests (r->req); HTTP/2 requests are streams of ks_h2.c (r->h2). The
 * handlers only see these functions.
 */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <string.h>
#include <sys/socket.h>

#include "ks_h2.h"
#include "ks_http.h"

struct evkeyvalq *ks_req_in_headers(struct ks_req *r)
{
    if (r->h2)
        return ks_h2_in_headers(r->h2);
    return r->req ? evhttp_request_get_input_headers(r->req) : NULL;
}

const char *ks_req_header(struct ks_req *r, const char *name)
{
    struct evkeyvalq *h = ks_req_in_headers(r);
    return h ? evhttp_find_header(h, name) : NULL;
}

void ks_req_add_header(struct ks_req *r, const char *k, const char *v)
{
    struct evkeyvalq *h = r->h2    ? ks_h2_out_headers(r->h2)
                          : r->req ? evhttp_request_get_output_headers(r->req)
                                   : NULL;
    if (h)
        evhttp_add_header(h, k, v);
}

void ks_req_send(struct ks_req *r, int code, const char *phrase, struct evbuffer *body)
{
    if (r->h2)
        ks_h2_reply(r->h2, code, body, false);
    else if (r->req)
        evhttp_send_reply(r->req, code, phrase, body);
    else if (body)
        evbuffer_drain(body, evbuffer_get_length(body));
}

void ks_req_start(struct ks_req *r, int code, const char *phrase)
{
    if (r->h2)
        ks_h2_reply(r->h2, code, NULL, true);
    else if (r->req)
        evhttp_send_reply_start(r->req, code, phrase);
}

void ks_req_chunk(struct ks_req *r, struct evbuffer *buf)
{
    if (r->stalled) {
        /* A stalled stream: the bytes never leave. */
        evbuffer_drain(buf, evbuffer_get_length(buf));
        return;
    }
    if (r->h2)
        ks_h2_chunk(r->h2, buf);
    else if (r->req)
        evhttp_send_reply_chunk(r->req, buf);
}

void ks_req_end(struct ks_req *r)
{
    if (r->h2)
        ks_h2_end(r->h2);
    else if (r->req)
        evhttp_send_reply_end(r->req);
}

static struct bufferevent *h1_bev(struct ks_req *r)
{
    struct evhttp_connection *c = r->req ? evhttp_request_get_connection(r->req) : NULL;
    return c ? evhttp_connection_get_bufferevent(c) : NULL;
}

size_t ks_req_queued(struct ks_req *r)
{
    if (r->h2)
        return ks_h2_queued(r->h2);
    struct bufferevent *bev = h1_bev(r);
    return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

static void h1_closecb(struct evhttp_connection *conn, void *arg)
{
    struct ks_req *r = arg;
    evhttp_connection_set_closecb(conn, NULL, NULL);
    void (*cb)(struct ks_req *, void *) = r->close_cb;
    r->close_cb = NULL;
    if (cb)
        cb(r, r->close_arg);
}

void ks_req_on_close(struct ks_req *r, void (*cb)(struct ks_req *r, void *arg), void *arg)
{
    r->close_cb = cb;
    r->close_arg = arg;
    if (r->h2)
        return; /* ks_h2.c calls it when the stream closes */
    struct evhttp_connection *c = r->req ? evhttp_request_get_connection(r->req) : NULL;
    if (c)
        evhttp_connection_set_closecb(c, cb ? h1_closecb : NULL, cb ? r : NULL);
}

void ks_req_gone(struct ks_req *r)
{
    if (r->h2) {
        ks_h2_detach(r->h2);
        r->h2 = NULL;
    }
    /* libevent detached the request from its dying connection: ending the
     * reply frees it. */
    if (r->req && evhttp_request_get_connection(r->req) == NULL)
        evhttp_send_reply_end(r->req);
    r->req = NULL;
}

const char *ks_req_peer(struct ks_req *r)
{
    if (r->h2)
        return ks_h2_peer(r->h2);
    struct evhttp_connection *c = r->req ? evhttp_request_get_connection(r->req) : NULL;
    char *addr = NULL;
    ev_uint16_t port = 0;
    if (!c)
        return NULL;
    evhttp_connection_get_peer(c, &addr, &port);
    return addr;
}

int ks_req_close_conn(struct ks_req *r)
{
    if (r->h2) {
        ks_h2_close_conn(r->h2);
        return 0;
    }
    struct bufferevent *bev = h1_bev(r);
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd < 0)
        return -1;
    shutdown(fd, SHUT_RDWR);
    return 0;
}

int ks_req_blackhole(struct ks_req *r, int64_t ms)
{
    if (r->h2) {
        ks_h2_blackhole_conn(r->h2, ms);
        return 0;
    }
    struct bufferevent *bev = h1_bev(r);
    if (!bev)
        return -1;
    /* The connection stays open and nothing crosses it any more. */
    bufferevent_disable(bev, EV_READ | EV_WRITE);
    return 0;
}

int ks_req_reset(struct ks_req *r, uint32_t code)
{
    if (r->h2) {
        ks_h2_reset(r->h2, code);
        return 0;
    }
    return ks_req_close_conn(r); /* HTTP/1.1 has no stream to reset */
}

void ks_req_goaway(struct ks_req *r)
{
    if (r->h2)
        ks_h2_goaway_conn(r->h2);
    else
        ks_req_add_header(r, "Connection", "close");
}
