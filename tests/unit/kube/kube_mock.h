/* A scripted HTTP server for the kube_* unit tests: evhttp on the test's
 * own event_base answers requests in order from a script (reply, close the
 * connection, or stream chunks like a watch) and records what it saw.
 * Header-only (static functions) so each test program includes it. */
#ifndef KUBE_MOCK_H
#define KUBE_MOCK_H

#include "cx_time.h"
#include "cxtest.h"
#include "cxt_loop.h"
#include "kube_client.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- scripted server ------------------------------------------------------ */

#define MAX_SCRIPT 64
#define MAX_REQS   64

enum act { ACT_REPLY = 0, ACT_CLOSE = 1, ACT_WATCH = 2 };

struct step {
    enum act act;
    int status;
    const char *body;
    const char *retry_after;
    int delay_ms;
    const char *chunks[8]; /* ACT_WATCH: sent one per tick */
    int chunk_ms;
    int hang; /* ACT_WATCH: keep the stream open after the chunks */
};

struct seen {
    char method[8];
    char uri[512];
    char auth[128];
    char ua[128];
    char ctype[64];
    char accept[128];
    char body[1024];
    int port; /* the client's source port: tells connections apart */
};

struct mock {
    struct event_base *base;
    struct evhttp *http;
    int port;
    struct step script[MAX_SCRIPT];
    int nscript, next;
    struct seen reqs[MAX_REQS];
    int nreqs;
    struct pending_reply *pending; /* replies not finished yet */
};

struct pending_reply {
    struct mock *m;
    struct evhttp_request *req;
    struct evhttp_connection *conn;
    const struct step *s;
    int i;
    struct event *ev;
    int gone; /* the client hung up; evhttp detached |req| and left it to us */
    struct pending_reply *next;
};

__attribute__((unused)) static void pending_drop(struct pending_reply *p)
{
    struct pending_reply **pp = &p->m->pending;
    while (*pp && *pp != p)
        pp = &(*pp)->next;
    if (*pp)
        *pp = p->next;
    if (p->ev)
        event_free(p->ev);
    free(p);
}

/* Frees a request whose client hung up (evhttp detached it: finishing it
 * with no connection frees it). */
__attribute__((unused)) static void finish_gone(struct pending_reply *p)
{
    if (p->s->act == ACT_WATCH && p->i > 0)
        evhttp_send_reply_end(p->req);
    else
        evhttp_send_reply(p->req, 500, "gone", NULL);
    pending_drop(p);
}

/* The client hung up: its pending requests now belong to us. */
__attribute__((unused)) static void on_conn_close(struct evhttp_connection *conn, void *arg)
{
    struct mock *m = arg;
    for (struct pending_reply *p = m->pending; p; p = p->next)
        if (p->conn == conn)
            p->gone = 1;
}

__attribute__((unused)) static void copy_hdr(char *dst, size_t n, struct evkeyvalq *h,
                                             const char *k)
{
    const char *v = evhttp_find_header(h, k);
    snprintf(dst, n, "%s", v ? v : "");
}

__attribute__((unused)) static void send_step(struct pending_reply *p);

__attribute__((unused)) static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    send_step(arg);
}

__attribute__((unused)) static void send_step(struct pending_reply *p)
{
    const struct step *s = p->s;
    if (p->gone) {
        finish_gone(p);
        return;
    }
    if (s->act == ACT_CLOSE) {
        struct evhttp_connection *conn = p->conn;
        pending_drop(p);
        evhttp_connection_free(conn);
        return;
    }
    if (s->act == ACT_REPLY) {
        struct evbuffer *b = evbuffer_new();
        if (s->body)
            evbuffer_add(b, s->body, strlen(s->body));
        struct evkeyvalq *oh = evhttp_request_get_output_headers(p->req);
        evhttp_add_header(oh, "Content-Type", "application/json");
        if (s->retry_after)
            evhttp_add_header(oh, "Retry-After", s->retry_after);
        evhttp_send_reply(p->req, s->status, "x", b);
        evbuffer_free(b);
        pending_drop(p);
        return;
    }
    /* ACT_WATCH */
    if (p->i == 0) {
        evhttp_add_header(evhttp_request_get_output_headers(p->req), "Content-Type",
                          "application/json");
        evhttp_send_reply_start(p->req, s->status ? s->status : 200, "OK");
    }
    if (p->i < 8 && s->chunks[p->i]) {
        struct evbuffer *b = evbuffer_new();
        evbuffer_add(b, s->chunks[p->i], strlen(s->chunks[p->i]));
        evhttp_send_reply_chunk(p->req, b);
        evbuffer_free(b);
        p->i++;
        struct timeval tv = {0, s->chunk_ms * 1000};
        evtimer_add(p->ev, &tv);
        return;
    }
    if (s->hang)
        return; /* keep the request open; it dies with the connection */
    evhttp_send_reply_end(p->req);
    pending_drop(p);
}

__attribute__((unused)) static void on_request(struct evhttp_request *req, void *arg)
{
    struct mock *m = arg;
    if (m->nreqs < MAX_REQS) {
        struct seen *sn = &m->reqs[m->nreqs];
        static const char *const methods[] = {"GET",     "POST",  "HEAD",    "PUT",  "DELETE",
                                              "OPTIONS", "TRACE", "CONNECT", "PATCH"};
        enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
        const char *mname = "?";
        for (int i = 0; i < 9; i++)
            if (cmd == (enum evhttp_cmd_type)(1 << i))
                mname = methods[i];
        snprintf(sn->method, sizeof(sn->method), "%s", mname);
        snprintf(sn->uri, sizeof(sn->uri), "%s", evhttp_request_get_uri(req));
        struct evkeyvalq *h = evhttp_request_get_input_headers(req);
        copy_hdr(sn->auth, sizeof(sn->auth), h, "Authorization");
        copy_hdr(sn->ua, sizeof(sn->ua), h, "User-Agent");
        copy_hdr(sn->ctype, sizeof(sn->ctype), h, "Content-Type");
        copy_hdr(sn->accept, sizeof(sn->accept), h, "Accept");
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t n = evbuffer_get_length(in);
        if (n >= sizeof(sn->body))
            n = sizeof(sn->body) - 1;
        evbuffer_copyout(in, sn->body, n);
        sn->body[n] = '\0';
        char *addr = NULL;
        ev_uint16_t port = 0;
        evhttp_connection_get_peer(evhttp_request_get_connection(req), &addr, &port);
        sn->port = port;
    }
    m->nreqs++;
    static const struct step notfound = {
        .status = 404,
        .body =
            "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"NotFound\",\"code\":404}"};
    const struct step *s = m->next < m->nscript ? &m->script[m->next++] : &notfound;
    struct pending_reply *p = calloc(1, sizeof(*p));
    p->m = m;
    p->req = req;
    p->conn = evhttp_request_get_connection(req);
    p->next = m->pending;
    m->pending = p;
    evhttp_connection_set_closecb(p->conn, on_conn_close, m);
    p->s = s;
    p->ev = evtimer_new(m->base, on_tick, p);
    struct timeval tv = {s->delay_ms / 1000, (s->delay_ms % 1000) * 1000};
    evtimer_add(p->ev, &tv);
}

__attribute__((unused)) static void mock_start(struct mock *m, struct event_base *base)
{
    memset(m, 0, sizeof(*m));
    m->base = base;
    m->http = evhttp_new(base);
    evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                            EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH);
    evhttp_set_gencb(m->http, on_request, m);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(m->http, "127.0.0.1", 0);
    if (!bs)
        cxt_fail(__FILE__, __LINE__, 1, "cannot bind");
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl);
    m->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

__attribute__((unused)) static void mock_stop(struct mock *m)
{
    while (m->pending) {
        if (m->pending->gone)
            finish_gone(m->pending);
        else
            pending_drop(m->pending); /* evhttp_free frees its request */
    }
    evhttp_free(m->http);
    m->http = NULL;
}

__attribute__((unused)) static void mock_push(struct mock *m, struct step s)
{
    if (m->nscript < MAX_SCRIPT)
        m->script[m->nscript++] = s;
}

/* ---- client fixture ------------------------------------------------------------ */

struct fx {
    struct event_base *base;
    struct mock m;
    struct kube_config cfg;
    struct kube_client *c;
};

__attribute__((unused)) static void fx_client(struct fx *f, const struct kube_client_opts *o)
{
    char url[64], err[256] = "";
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", f->m.port);
    if (!f->cfg.server)
        f->cfg.server = strdup(url);
    f->c = kube_client_new(f->base, &f->cfg, o, err, sizeof(err));
    if (!f->c)
        cxt_fail(__FILE__, __LINE__, 1, "kube_client_new: %s", err);
}

__attribute__((unused)) static void fx_init(struct fx *f, const struct kube_client_opts *o)
{
    memset(f, 0, sizeof(*f));
    signal(SIGPIPE, SIG_IGN); /* the mock writes to clients that hung up */
    f->base = event_base_new();
    mock_start(&f->m, f->base);
    f->cfg.token = strdup("tok-1");
    if (o)
        fx_client(f, o);
}

__attribute__((unused)) static void fx_free(struct fx *f)
{
    kube_client_free(f->c);
    f->c = NULL;
    mock_stop(&f->m);
    kube_config_free(&f->cfg);
    event_base_free(f->base);
}

struct outcome {
    int done;
    struct kube_result res;
    cJSON *obj;
    int64_t t_done;
};

__attribute__((unused)) static void on_result(struct kube_result *res, void *ud)
{
    struct outcome *o = ud;
    o->done = 1;
    o->res = *res;
    o->obj = res->object;
    res->object = NULL;
    o->res.object = NULL;
    o->t_done = cx_mono_ms();
}

#endif
