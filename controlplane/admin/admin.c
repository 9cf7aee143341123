#include "admin.h"

#include "cx_log.h"
#include "cx_metrics.h"
#include "cx_time.h"
#include "cx_version.h"

#include <dirent.h>
#include <errno.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define ADMIN_MAX_CHECKS   32
#define ADMIN_MAX_PREFIXES 16
#define ADMIN_MAX_ROUTES   32

struct admin_check {
    char *name;
    admin_check_fn fn;
    void *arg;
};

struct admin_prefix {
    char *prefix;
    void (*cb)(struct evhttp_request *, void *);
    void *arg;
};

/* An exact path (admin_handle). */
struct admin_route {
    struct admin_server *a;
    char *path;
    void (*cb)(struct evhttp_request *, void *);
    void *arg;
};

/* A request waiting for its authorization (admin_protect). */
struct admin_ticket {
    struct admin_server *a;
    struct admin_ticket *prev, *next;
    struct evhttp_request *req;
    void (*cb)(struct evhttp_request *, void *);
    void *arg;
};

enum { AUTHZ_NO_TOKEN = 0, AUTHZ_DENIED = 1, AUTHZ_UNAVAILABLE = 2, AUTHZ_REASONS = 3 };

/* A connection, seen from the bufferevent we make for it (evhttp_set_bevcb):
 * evhttp tells nobody when it frees one, so we hold a reference to it and
 * learn that evhttp let go when its error callback is gone (evhttp always
 * sets one on a live connection; bufferevent_free clears them). */
struct admin_conn {
    struct admin_conn *prev, *next; /* oldest first */
    struct bufferevent *bev;
    int64_t since_ns; /* accepted, or its latest request began to be answered */
};

enum { CONN_EVICTED = 0, CONN_DEADLINE = 1, CONN_REASONS = 2 };
struct admin_server {
    struct evhttp *http;
    int port;
    struct admin_check health[ADMIN_MAX_CHECKS], ready[ADMIN_MAX_CHECKS];
    size_t nhealth, nready;
    struct admin_prefix prefixes[ADMIN_MAX_PREFIXES];
    size_t nprefixes;
    struct admin_route routes[ADMIN_MAX_ROUTES];
    size_t nroutes;
    admin_authz_fn authz; /* NULL: nothing protected */
    void *authz_arg;
    int trust_loopback;
    struct admin_ticket *tickets;
    struct cx_series *refused[AUTHZ_REASONS];
    /* connections (admin_set_limits) */
    struct event_base *base;
    struct admin_conn *oldest, *newest;
    unsigned nconns, max_conns;
    int64_t deadline_ns;
    struct event *sweep_ev;
    struct event *soon_ev; /* a sweep shortly after a cut (conn_cut) */
    struct cx_series *conns_gauge, *closed[CONN_REASONS];
};

void admin_reply(struct evhttp_request *req, int code, const char *content_type, const char *body,
                 size_t len)
{
    struct evbuffer *out = evhttp_request_get_output_buffer(req);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", content_type);
    evbuffer_add(out, body, len);
    const char *reason = code == 200 ? "OK" : code == 404 ? "Not Found" : NULL;
    evhttp_send_reply(req, code, reason, NULL);
}

static void conn_note_request(struct admin_server *a, struct evhttp_request *req);

static void handle_metrics(struct evhttp_request *req, void *arg)
{
    conn_note_request(arg, req);
    struct cx_buf b;
    cx_buf_init(&b, 0);
    if (cx_metrics_render(&b) != 0) {
        cx_buf_free(&b);
        admin_reply(req, 500, "text/plain", "metrics exposition failed\n", 26);
        return;
    }
    admin_reply(req, 200, CX_METRICS_CONTENT_TYPE, b.data ? b.data : "", b.len);
    cx_buf_free(&b);
}

/* Kubernetes-style probe: "ok", or with ?verbose one "[+]name ok" /
 * "[-]name failed: why" line per check. */
static void run_checks(struct evhttp_request *req, const struct admin_check *checks, size_t n,
                       const char *what)
{
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *q = evhttp_uri_get_query(uri);
    int verbose = q && strstr(q, "verbose") != NULL;
    struct cx_buf body, why;
    cx_buf_init(&body, 0);
    cx_buf_init(&why, 4096);
    int failed = 0, rc = 0;
    for (size_t i = 0; i < n; i++) {
        cx_buf_reset(&why);
        int r = checks[i].fn(checks[i].arg, &why);
        int ok = r >= 0;
        failed |= !ok;
        if (ok && r > 0)
            rc |= cx_buf_printf(&body, "[+]%s ok (warning: %s)\n", checks[i].name,
                                why.data ? why.data : "");
        else if (ok)
            rc |= cx_buf_printf(&body, "[+]%s ok\n", checks[i].name);
        else
            rc |= cx_buf_printf(&body, "[-]%s failed: %s\n", checks[i].name,
                                why.data ? why.data : "");
    }
    if (failed) {
        rc |= cx_buf_printf(&body, "%s check failed\n", what);
        admin_reply(req, 500, "text/plain; charset=utf-8", body.data, body.len);
    } else if (verbose) {
        rc |= cx_buf_printf(&body, "%s check passed\n", what);
        admin_reply(req, 200, "text/plain; charset=utf-8", body.data, body.len);
    } else {
        admin_reply(req, 200, "text/plain; charset=utf-8", "ok", 2);
    }
    (void)rc;
    cx_buf_free(&body);
    cx_buf_free(&why);
}

static void handle_healthz(struct evhttp_request *req, void *arg)
{
    struct admin_server *a = arg;
    conn_note_request(a, req);
    run_checks(req, a->health, a->nhealth, "healthz");
}

static void handle_readyz(struct evhttp_request *req, void *arg)
{
    struct admin_server *a = arg;
    conn_note_request(a, req);
    run_checks(req, a->ready, a->nready, "readyz");
}

/* ---- connections ------------------------------------------------------------ */

static void conn_unlink(struct admin_server *a, struct admin_conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        a->oldest = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        a->newest = c->prev;
    a->nconns--;
}

static int conn_dead(struct admin_conn *c)
{
    bufferevent_event_cb ecb = NULL;
    bufferevent_getcb(c->bev, NULL, NULL, &ecb, NULL);
    return ecb == NULL;
}

/* Ends a live connection: evhttp sees the socket shut and frees it. */
static void conn_cut(struct admin_server *a, struct admin_conn *c, int reason)
{
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
    c->since_ns = INT64_MAX; /* cut once */
    if (a->closed[reason])
        cx_series_add(a->closed[reason], 1);
    /* evhttp frees the connection as soon as it reads the shut socket's
     * end; the sweep that drops our reference (and the descriptor) follows
     * within milliseconds, not at the next second's sweep: a flood of
     * connections past the cap holds no more descriptors than the cap. */
    struct timeval soon = {0, 5000};
    if (a->soon_ev && !evtimer_pending(a->soon_ev, NULL))
        evtimer_add(a->soon_ev, &soon);
}

/* Forgets connections evhttp freed; cuts those whose request (and its
 * answer) took longer than the deadline. */
static unsigned conn_sweep(struct admin_server *a)
{
    int64_t now = cx_mono_ns();
    unsigned cut_alive = 0;
    for (struct admin_conn *c = a->oldest, *next; c; c = next) {
        next = c->next;
        if (conn_dead(c)) {
            conn_unlink(a, c);
            bufferevent_decref(c->bev); /* the last reference: closes the socket */
            free(c);
        } else if (c->since_ns == INT64_MAX) {
            cut_alive++;
        } else if (now - c->since_ns > a->deadline_ns) {
            conn_cut(a, c, CONN_DEADLINE);
            cut_alive++;
        }
    }
    if (a->conns_gauge)
        cx_series_set(a->conns_gauge, (double)a->nconns);
    return cut_alive;
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_sweep(arg);
}

/* After a cut: sweeps until evhttp has let go of every cut connection,
 * every 5 ms then every 50 ms (the 1 s sweep remains the backstop). */
static void on_soon(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct admin_server *a = arg;
    struct timeval later = {0, 50000};
    if (conn_sweep(a) > 0 && !evtimer_pending(a->soon_ev, NULL))
        evtimer_add(a->soon_ev, &later);
}

static struct bufferevent *on_new_conn(struct event_base *base, void *arg)
{
    struct admin_server *a = arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    struct admin_conn *c = calloc(1, sizeof(*c));
    if (!bev || !c) {
        free(c);
        return bev; /* untracked: evhttp still owns and frees it */
    }
    conn_sweep(a);
    /* At the cap, the connection waiting longest for its answer goes: a
     * crowd of slow clients cannot keep a probe out, it only pushes its
     * own oldest members out. */
    if (a->nconns >= a->max_conns) {
        for (struct admin_conn *o = a->oldest; o; o = o->next) {
            if (o->since_ns != INT64_MAX) {
                conn_cut(a, o, CONN_EVICTED);
                break;
            }
        }
    }
    bufferevent_incref(bev);
    c->bev = bev;
    c->since_ns = cx_mono_ns();
    c->prev = a->newest;
    if (a->newest)
        a->newest->next = c;
    else
        a->oldest = c;
    a->newest = c;
    a->nconns++;
    if (a->conns_gauge)
        cx_series_set(a->conns_gauge, (double)a->nconns);
    return bev;
}

/* A request is about to be answered: its connection's clock restarts
 * (keep-alive connections serve many). */
static void conn_note_request(struct admin_server *a, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    for (struct admin_conn *c = a->newest; bev && c; c = c->prev) {
        if (c->bev == bev) {
            if (c->since_ns != INT64_MAX)
                c->since_ns = cx_mono_ns();
            return;
        }
    }
}

void admin_set_limits(struct admin_server *a, unsigned max_connections, int request_deadline_s)
{
    if (max_connections)
        a->max_conns = max_connections;
    if (request_deadline_s > 0)
        a->deadline_ns = (int64_t)request_deadline_s * 1000000000;
}

unsigned admin_connections(const struct admin_server *a)
{
    return a->nconns;
}

/* ---- protected paths ------------------------------------------------------- */

static int is_protected(const char *path)
{
    return strncmp(path, "/debug/", 7) == 0 || strncmp(path, "/v3/discovery:", 14) == 0;
}

static int peer_is_loopback(struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    const struct sockaddr *sa = evcon ? evhttp_connection_get_addr(evcon) : NULL;
    if (!sa)
        return 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a6))
            return 1;
        return IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127;
    }
    return 0;
}

static void ticket_unlink(struct admin_ticket *t)
{
    if (t->prev)
        t->prev->next = t->next;
    else
        t->a->tickets = t->next;
    if (t->next)
        t->next->prev = t->prev;
}

static void authz_done(void *ticket, int allowed, const char *why, int unavailable)
{
    struct admin_ticket *t = ticket;
    struct admin_server *a = t->a;
    ticket_unlink(t);
    if (allowed) {
        t->cb(t->req, t->arg);
    } else {
        char body[600];
        int n = snprintf(body, sizeof(body), "%s\n", why && *why ? why : "forbidden");
        if (n < 0 || (size_t)n >= sizeof(body))
            n = (int)sizeof(body) - 1;
        if (a->refused[unavailable ? AUTHZ_UNAVAILABLE : AUTHZ_DENIED])
            cx_series_add(a->refused[unavailable ? AUTHZ_UNAVAILABLE : AUTHZ_DENIED], 1);
        admin_reply(t->req, unavailable ? 503 : 403, "text/plain; charset=utf-8", body, (size_t)n);
    }
    free(t);
}

/* Runs |cb| now, or once the request's token is allowed for its path. */
static void dispatch(struct admin_server *a, struct evhttp_request *req, const char *path,
                     void (*cb)(struct evhttp_request *, void *), void *arg)
{
    if (!a->authz || !path || !is_protected(path) || (a->trust_loopback && peer_is_loopback(req))) {
        cb(req, arg);
        return;
    }
    const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0 || !h[7]) {
        if (a->refused[AUTHZ_NO_TOKEN])
            cx_series_add(a->refused[AUTHZ_NO_TOKEN], 1);
        evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer");
        static const char msg[] =
            "Unauthorized: this path needs a bearer token whose user may `get` it "
            "(SubjectAccessReview), or a loopback client\n";
        admin_reply(req, 401, "text/plain; charset=utf-8", msg, sizeof(msg) - 1);
        return;
    }
    struct admin_ticket *t = calloc(1, sizeof(*t));
    if (!t) {
        admin_reply(req, 503, "text/plain", "out of memory\n", 14);
        return;
    }
    *t = (struct admin_ticket){.a = a, .req = req, .cb = cb, .arg = arg, .next = a->tickets};
    if (a->tickets)
        a->tickets->prev = t;
    a->tickets = t;
    char p[256];
    snprintf(p, sizeof(p), "%s", path);
    a->authz(a->authz_arg, h + 7, p, authz_done, t);
}

void admin_protect(struct admin_server *a, admin_authz_fn fn, void *arg, int trust_loopback)
{
    a->authz = fn;
    a->authz_arg = arg;
    a->trust_loopback = trust_loopback;
    struct cx_metric *m = cx_counter("coxswain_admin_auth_refused_total",
                                     "Admin requests to /debug/* or /v3/discovery:* refused, "
                                     "by reason.",
                                     "reason");
    static const char *const reasons[AUTHZ_REASONS] = {"no_token", "denied", "unavailable"};
    for (int i = 0; i < AUTHZ_REASONS; i++)
        a->refused[i] = m ? cx_metric_with(m, reasons[i]) : NULL;
}

static void handle_route(struct evhttp_request *req, void *arg)
{
    struct admin_route *r = arg;
    conn_note_request(r->a, req);
    dispatch(r->a, req, r->path, r->cb, r->arg);
}

static void handle_generic(struct evhttp_request *req, void *arg)
{
    struct admin_server *a = arg;
    conn_note_request(a, req);
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    for (size_t i = 0; path && i < a->nprefixes; i++) {
        if (strncmp(path, a->prefixes[i].prefix, strlen(a->prefixes[i].prefix)) == 0) {
            dispatch(a, req, path, a->prefixes[i].cb, a->prefixes[i].arg);
            return;
        }
    }
    admin_reply(req, 404, "text/plain", "not found\n", 10);
}

/* A listening, non-blocking socket on |host|:|port|, or -1 with the reason
 * in |why| (the resolver's or the kernel's: "Address already in use",
 * "Cannot assign requested address", "Name or service not known"). */
static evutil_socket_t bind_listener(const char *host, int port, char *why, size_t n)
{
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    struct evutil_addrinfo hints = {.ai_family = AF_UNSPEC,
                                    .ai_socktype = SOCK_STREAM,
                                    .ai_protocol = IPPROTO_TCP,
                                    .ai_flags = EVUTIL_AI_PASSIVE};
    struct evutil_addrinfo *ai = NULL;
    int rc = evutil_getaddrinfo(*host ? host : NULL, ps, &hints, &ai);
    if (rc != 0) {
        snprintf(why, n, "%s", evutil_gai_strerror(rc));
        return -1;
    }
    evutil_socket_t fd = -1;
    int e = 0;
    for (struct evutil_addrinfo *p = ai; p && fd < 0; p = p->ai_next) {
        fd = socket(p->ai_family, p->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, p->ai_protocol);
        if (fd < 0) {
            e = errno;
            continue;
        }
        int one = 1;
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
            bind(fd, p->ai_addr, p->ai_addrlen) != 0 || listen(fd, 128) != 0) {
            e = errno;
            close(fd);
            fd = -1;
        }
    }
    evutil_freeaddrinfo(ai);
    if (fd < 0)
        snprintf(why, n, "%s", strerror(e ? e : EADDRNOTAVAIL));
    return fd;
}

struct admin_server *admin_new(struct event_base *base, const char *listen, char *err,
                               size_t errlen)
{
    char host[256];
    const char *colon = listen ? strrchr(listen, ':') : NULL;
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || !end || *end || port < 0 || port > 65535 ||
        (size_t)(colon - listen) >= sizeof(host)) {
        snprintf(err, errlen, "invalid admin listen address \"%s\": expected host:port",
                 listen ? listen : "");
        return NULL;
    }
    snprintf(host, sizeof(host), "%.*s", (int)(colon - listen), listen);
    /* [::1]:9000 */
    char *h = host;
    if (h[0] == '[' && h[strlen(h) - 1] == ']') {
        h[strlen(h) - 1] = '\0';
        h++;
    }
    struct admin_server *a = calloc(1, sizeof(*a));
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    a->http = evhttp_new(base);
    if (!a->http) {
        snprintf(err, errlen, "evhttp_new failed");
        free(a);
        return NULL;
    }
    evhttp_set_allowed_methods(a->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD);
    /* What one client may make us hold or wait for: request line and
     * headers, body, and silence while sending a request or reading an
     * answer (the connection is closed past it). */
    evhttp_set_max_headers_size(a->http, ADMIN_MAX_HEADERS);
    evhttp_set_max_body_size(a->http, ADMIN_MAX_BODY);
    evhttp_set_timeout(a->http, ADMIN_TIMEOUT_S_DEFAULT);
    char why[160] = "";
    evutil_socket_t fd = bind_listener(h, (int)port, why, sizeof(why));
    struct evhttp_bound_socket *bs = fd >= 0 ? evhttp_accept_socket_with_handle(a->http, fd) : NULL;
    if (!bs) {
        if (fd >= 0) {
            snprintf(why, sizeof(why), "libevent refused the socket");
            evutil_closesocket(fd);
        }
        snprintf(err, errlen, "cannot listen on %s for the admin server: %s", listen, why);
        evhttp_free(a->http);
        free(a);
        return NULL;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            a->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            a->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    a->base = base;
    a->max_conns = ADMIN_MAX_CONNECTIONS_DEFAULT;
    a->deadline_ns = (int64_t)ADMIN_REQUEST_DEADLINE_S_DEFAULT * 1000000000;
    a->sweep_ev = event_new(base, -1, EV_PERSIST, on_sweep, a);
    a->soon_ev = evtimer_new(base, on_soon, a);
    struct timeval sweep_tv = {1, 0};
    if (!a->sweep_ev || !a->soon_ev || event_add(a->sweep_ev, &sweep_tv) != 0) {
        snprintf(err, errlen, "cannot arm the admin connection sweep");
        if (a->sweep_ev)
            event_free(a->sweep_ev);
        if (a->soon_ev)
            event_free(a->soon_ev);
        evhttp_free(a->http);
        free(a);
        return NULL;
    }
    evhttp_set_bevcb(a->http, on_new_conn, a);
    a->conns_gauge = cx_metric_with(
        cx_gauge("coxswain_admin_connections", "Open admin HTTP connections.", NULL));
    struct cx_metric *closed =
        cx_counter("coxswain_admin_connections_closed_total",
                   "Admin connections closed by the server: evicted (the oldest unanswered "
                   "one, at the connection cap) or past the request deadline.",
                   "reason");
    static const char *const creasons[CONN_REASONS] = {"evicted", "deadline"};
    for (int i = 0; i < CONN_REASONS; i++)
        a->closed[i] = closed ? cx_metric_with(closed, creasons[i]) : NULL;
    evhttp_set_cb(a->http, "/metrics", handle_metrics, a);
    evhttp_set_cb(a->http, "/healthz", handle_healthz, a);
    evhttp_set_cb(a->http, "/readyz", handle_readyz, a);
    evhttp_set_cb(a->http, "/livez", handle_healthz, a);
    evhttp_set_gencb(a->http, handle_generic, a);
    return a;
}

void admin_set_timeout(struct admin_server *a, int timeout_s)
{
    if (timeout_s > 0)
        evhttp_set_timeout(a->http, timeout_s);
}

int admin_port(const struct admin_server *a)
{
    return a->port;
}

static int add_check(struct admin_check *list, size_t *n, const char *name, admin_check_fn fn,
                     void *arg)
{
    if (*n == ADMIN_MAX_CHECKS)
        return -1;
    char *nm = strdup(name);
    if (!nm)
        return -1;
    list[*n].name = nm;
    list[*n].fn = fn;
    list[*n].arg = arg;
    (*n)++;
    return 0;
}

int admin_add_health_check(struct admin_server *a, const char *name, admin_check_fn fn, void *arg)
{
    return add_check(a->health, &a->nhealth, name, fn, arg);
}

int admin_add_ready_check(struct admin_server *a, const char *name, admin_check_fn fn, void *arg)
{
    return add_check(a->ready, &a->nready, name, fn, arg);
}

int admin_handle(struct admin_server *a, const char *path,
                 void (*cb)(struct evhttp_request *req, void *arg), void *arg)
{
    if (a->nroutes == ADMIN_MAX_ROUTES)
        return -1;
    struct admin_route *r = &a->routes[a->nroutes];
    *r = (struct admin_route){.a = a, .path = strdup(path), .cb = cb, .arg = arg};
    if (!r->path)
        return -1;
    if (evhttp_set_cb(a->http, path, handle_route, r) != 0) {
        free(r->path);
        return -1;
    }
    a->nroutes++;
    return 0;
}

int admin_handle_prefix(struct admin_server *a, const char *prefix,
                        void (*cb)(struct evhttp_request *req, void *arg), void *arg)
{
    if (a->nprefixes == ADMIN_MAX_PREFIXES)
        return -1;
    char *p = strdup(prefix);
    if (!p)
        return -1;
    a->prefixes[a->nprefixes].prefix = p;
    a->prefixes[a->nprefixes].cb = cb;
    a->prefixes[a->nprefixes].arg = arg;
    a->nprefixes++;
    return 0;
}

void admin_free(struct admin_server *a)
{
    if (!a)
        return;
    if (a->sweep_ev)
        event_free(a->sweep_ev);
    if (a->soon_ev)
        event_free(a->soon_ev);
    evhttp_free(a->http); /* frees its connections: our references are the last */
    while (a->oldest) {
        struct admin_conn *c = a->oldest;
        conn_unlink(a, c);
        bufferevent_decref(c->bev);
        free(c);
    }
    while (a->tickets) { /* the authorizer must not answer them any more */
        struct admin_ticket *t = a->tickets;
        a->tickets = t->next;
        free(t);
    }
    for (size_t i = 0; i < a->nroutes; i++)
        free(a->routes[i].path);
    for (size_t i = 0; i < a->nhealth; i++)
        free(a->health[i].name);
    for (size_t i = 0; i < a->nready; i++)
        free(a->ready[i].name);
    for (size_t i = 0; i < a->nprefixes; i++)
        free(a->prefixes[i].prefix);
    free(a);
}

/* ---- process metrics ---------------------------------------------------- */

static double start_time_s;

static double proc_rss(void *arg)
{
    (void)arg;
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
        rss = 0;
    fclose(f);
    return (double)rss * (double)sysconf(_SC_PAGESIZE);
}

static double proc_vsize(void *arg)
{
    (void)arg;
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    if (fscanf(f, "%ld", &pages) != 1)
        pages = 0;
    fclose(f);
    return (double)pages * (double)sysconf(_SC_PAGESIZE);
}

static double proc_cpu(void *arg)
{
    (void)arg;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double proc_fds(void *arg)
{
    (void)arg;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    double n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own fd */
}

static double proc_max_fds(void *arg)
{
    (void)arg;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    return (double)rl.rlim_cur;
}

static double proc_start(void *arg)
{
    (void)arg;
    return start_time_s;
}

void admin_register_process_metrics(void)
{
    if (start_time_s == 0)
        start_time_s = (double)(cx_wall_ns() / CX_NS_PER_MS) / 1000.0;
    cx_gauge_func("process_resident_memory_bytes", "Resident memory size in bytes.", proc_rss,
                  NULL);
    cx_gauge_func("process_virtual_memory_bytes", "Virtual memory size in bytes.", proc_vsize,
                  NULL);
    cx_gauge_func("process_open_fds", "Number of open file descriptors.", proc_fds, NULL);
    cx_gauge_func("process_max_fds", "Maximum number of open file descriptors.", proc_max_fds,
                  NULL);
    cx_gauge_func("process_start_time_seconds",
                  "Start time of the process since unix epoch in seconds.", proc_start, NULL);
    cx_counter_func("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                    proc_cpu, NULL);
    cx_metric_set(
        cx_gauge("coxswain_build_info", "Build information; the value is always 1.", "version"), 1,
        COXSWAIN_VERSION);
}
