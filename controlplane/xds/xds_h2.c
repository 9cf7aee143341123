/* The gRPC transport's server: listener, TLS context, shutdown; the
 * connections and calls are in xds_h2_conn.c and xds_h2_stream.c. */
#include "xds_h2_impl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

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
    /* An ADS connection is idle almost always: its record buffers (about
     * 17 KB each way) go back while nothing is under way. */
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
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

/* ---- server ------------------------------------------------------------------ */

static void on_done(evutil_socket_t fd, short what, void *arg);

/* Accepting again after a pause for lack of descriptors. */
static void on_accept_again(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct xds_h2_server *s = arg;
    if (s->listener && !s->shutting)
        evconnlistener_enable(s->listener);
}

/* accept() failed. Out of descriptors (EMFILE/ENFILE) or kernel memory,
 * the pending connection stays queued and the listener stays readable:
 * accepting again at once would spin the loop. Pause accepting, 50 ms
 * first, doubling up to 1 s while it keeps failing; a successful accept
 * resets the pause (xds_h2_on_accept). */
static void on_listen_error(struct evconnlistener *l, void *arg)
{
    struct xds_h2_server *s = arg;
    int e = EVUTIL_SOCKET_ERROR();
    if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM)
        return; /* ECONNABORTED and the like concern one connection only */
    s->counts.accept_backoffs++;
    s->accept_backoff_ms = s->accept_backoff_ms ? s->accept_backoff_ms * 2 : 50;
    if (s->accept_backoff_ms > 1000)
        s->accept_backoff_ms = 1000;
    evconnlistener_disable(l);
    if (s->on_counts)
        s->on_counts(s->user);
    struct timeval tv = {s->accept_backoff_ms / 1000, (s->accept_backoff_ms % 1000) * 1000};
    if (s->accept_ev)
        evtimer_add(s->accept_ev, &tv);
}

static void on_grace(evutil_socket_t fd, short what, void *arg);

/* Binds s->host:|port| and listens; sets s->port to the bound port.
 * Returns 0, or -1 with a message in |err|. */
static int h2_listen(struct xds_h2_server *s, int port, const char *what, char *err, size_t errlen)
{
    struct addrinfo *ai = NULL;
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", port);
    int gai = getaddrinfo(s->host[0] ? s->host : NULL, portstr, &hints, &ai);
    if (gai != 0) {
        snprintf(err, errlen, "cannot resolve \"%s\": %s", s->host, gai_strerror(gai));
        return -1;
    }
    s->listener =
        evconnlistener_new_bind(s->base, xds_h2_on_accept, s,
                                LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
                                1024, ai->ai_addr, (int)ai->ai_addrlen);
    if (!s->listener) {
        snprintf(err, errlen, "cannot listen on %s: %s", what, strerror(errno));
        freeaddrinfo(ai);
        return -1;
    }
    evconnlistener_set_error_cb(s->listener, on_listen_error);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(evconnlistener_get_fd(s->listener), (struct sockaddr *)&ss, &sl) == 0)
        s->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                           : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    freeaddrinfo(ai);
    return 0;
}

struct xds_h2_server *xds_h2_server_new(struct event_base *base, const struct xds_h2_config *cfg,
                                        const struct xds_h2_method *methods, size_t nmethods,
                                        void *user, char *err, size_t errlen)
{
    char host[256];
    int port;
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
    cx_list_init(&s->conns);
    s->base = base;
    s->methods = methods;
    s->nmethods = nmethods;
    s->user = user;
    s->max_message = cfg->max_message ? cfg->max_message : ((size_t)4 << 20);
    s->max_connections = cfg->max_connections ? cfg->max_connections : 10000;
    s->max_streams = cfg->max_streams ? cfg->max_streams : 100;
    s->keepalive_ms = cfg->keepalive_ms ? cfg->keepalive_ms : 30000;
    s->handshake_ms = cfg->handshake_timeout_ms > 0 ? cfg->handshake_timeout_ms : 10000;
    s->idle_conn_ms = cfg->idle_conn_ms ? cfg->idle_conn_ms : 300000;
    s->budget = cfg->budget;
    s->on_counts = cfg->on_counts;
    if (cfg->ssl_ctx) {
        SSL_CTX_up_ref(cfg->ssl_ctx);
        s->ssl_ctx = cfg->ssl_ctx;
    }
    s->done_ev = event_new(base, -1, 0, on_done, s);
    s->accept_ev = evtimer_new(base, on_accept_again, s);
    s->grace_ev = evtimer_new(base, on_grace, s);
    snprintf(s->host, sizeof(s->host), "%s", host);
    if (!s->done_ev || !s->accept_ev || !s->grace_ev) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (h2_listen(s, port, cfg->listen, err, errlen) != 0)
        goto fail;
    return s;
fail:
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

void xds_h2_server_mem(const struct xds_h2_server *s, struct xds_h2_mem_stats *out)
{
    memset(out, 0, sizeof(*out));
    xds_h2_mem_usage(&out->heap, &out->mapped);
    struct cx_list *l;
    cx_list_for_each (l, &s->conns) {
        const struct h2_conn *c = cx_list_entry(l, struct h2_conn, link);
        size_t r = xds_h2_mem_resident(&c->mem);
        if (r != SIZE_MAX)
            out->resident += r;
    }
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

/* The grace period of a shutdown or a pause is over: the connections told
 * to go that are still there are closed (not those accepted since a
 * resume). */
static void on_grace(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct xds_h2_server *s = arg;
    struct cx_list *l, *next;
    cx_list_for_each_safe (l, next, &s->conns) {
        struct h2_conn *c = cx_list_entry(l, struct h2_conn, link);
        if (c->closing)
            xds_h2_conn_free(c);
    }
}

/* Ends every call with UNAVAILABLE |why|, sends GOAWAY on every connection
 * and closes each once flushed, or after |grace_ms|. */
static void tell_all_to_go(struct xds_h2_server *s, int grace_ms, const char *why)
{
    struct timeval tv = {grace_ms / 1000, (grace_ms % 1000) * 1000};
    if (s->grace_ev)
        evtimer_add(s->grace_ev, &tv);
    struct cx_list *cl, *sl;
    cx_list_for_each (cl, &s->conns) {
        struct h2_conn *c = cx_list_entry(cl, struct h2_conn, link);
        cx_list_for_each (sl, &c->streams) {
            struct xds_h2_stream *st = cx_list_entry(sl, struct xds_h2_stream, link);
            if (st->responded)
                xds_h2_stream_finish(st, 14, why);
        }
        nghttp2_submit_goaway(c->session, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(c->session), NGHTTP2_NO_ERROR,
                              NULL, 0);
        c->closing = 1;
        xds_h2_conn_schedule_flush(c);
    }
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
    tell_all_to_go(s, grace_ms, "server shutting down");
    xds_h2_server_check_done(s);
}

void xds_h2_server_pause(struct xds_h2_server *s, int grace_ms)
{
    if (s->shutting || s->paused)
        return;
    s->paused = 1;
    if (s->listener) {
        evconnlistener_free(s->listener);
        s->listener = NULL;
    }
    if (s->accept_ev)
        evtimer_del(s->accept_ev);
    tell_all_to_go(s, grace_ms, "server not serving: this replica stands by");
}

int xds_h2_server_resume(struct xds_h2_server *s, char *err, size_t errlen)
{
    if (s->shutting) {
        snprintf(err, errlen, "the server is shutting down");
        return -1;
    }
    if (!s->paused)
        return 0;
    char what[300];
    snprintf(what, sizeof(what), "%s:%d", s->host, s->port);
    if (h2_listen(s, s->port, what, err, errlen) != 0)
        return -1;
    s->paused = 0;
    s->accept_backoff_ms = 0;
    return 0;
}

int xds_h2_server_paused(const struct xds_h2_server *s)
{
    return s->paused;
}

void xds_h2_server_free(struct xds_h2_server *s)
{
    if (!s)
        return;
    s->done = NULL;
    while (!cx_list_empty(&s->conns))
        xds_h2_conn_free(cx_list_entry(s->conns.next, struct h2_conn, link));
    if (s->listener)
        evconnlistener_free(s->listener);
    if (s->grace_ev)
        event_free(s->grace_ev);
    if (s->done_ev)
        event_free(s->done_ev);
    if (s->accept_ev)
        event_free(s->accept_ev);
    if (s->ssl_ctx)
        SSL_CTX_free(s->ssl_ctx);
    free(s);
}
