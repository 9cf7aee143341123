/*
 * Connections: which transfer runs on which connection, when each
 * connection last received anything, and the health check that abandons a
 * dead one.
 *
 * Over HTTP/2 libcurl multiplexes every request and watch of a client over
 * one connection (guarded writes excepted: they go over HTTP/1.1,
 * kube_call.c call_setup_guarded). A connection that goes silent without closing (a load
 * balancer failing over, a NAT entry dropped) would otherwise hold every
 * watch, status write and lease renewal until TCP gives up, minutes later:
 * a timed-out stream is reset and the next request takes the same dead
 * connection. client-go answers this with HTTP/2 PINGs (ReadIdleTimeout 30
 * s, PingTimeout 15 s). libcurl's multi interface sends no PINGs, so the
 * client probes the same way with what it has: a connection waiting for
 * bytes (transfers on it, or one that ended unanswered) that received
 * nothing for read_idle, or whose request just timed out unanswered, gets a
 * probe (GET /livez, multiplexed onto it: any answer, whatever its status,
 * proves the connection alive). A probe not answered within ping_timeout
 * while the connection still received nothing marks it dead: the socket is
 * shut down, libcurl sees it end, every call and watch on it fails with a
 * transport error and moves (retry, watch resume) to a new connection.
 *
 * Sockets are libcurl's, opened and closed through this file's callbacks,
 * so one is never touched after libcurl closed it. Which connection a
 * transfer took is known from CURLOPT_PREREQFUNCTION's local port.
 * HTTP/1.1 connections carry one transfer each and are not probed: a
 * request's own timeout closes its connection, a watch's stall timer ends
 * it.
 */
#include "kube_client_internal.h"

#include "cx_log.h"
#include "cx_metrics.h"
#include "cx_time.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PROBE_PATH      "/livez"
#define PROBE_BODY_MAX  ((size_t)4 << 10)
#define TICK_MIN_MS     100
#define TICK_MAX_MS     1000
#define DEFAULT_IDLE_MS 25000
#define DEFAULT_PING_MS 15000

struct kube_conn {
    struct kube_conn *next;
    uint64_t id;
    curl_socket_t fd;
    int port;          /* local port, 0 until read */
    int inflight;      /* transfers on it now */
    int unanswered;    /* a transfer on it ended without a byte received */
    int suspect;       /* a request on it timed out: probe now */
    int multiplexed;   /* an answer on it came over HTTP/2 */
    int single;        /* an answer on it came over HTTP/1.x: never checked */
    int dead;          /* shut down by the health check */
    int64_t rx_ns;     /* last byte received, or when waiting began */
    int64_t missed_ns; /* a probe meant for it took another connection */
};

struct kube_probe {
    struct kube_xfer h; /* first: CURLOPT_PRIVATE */
    struct kube_client *c;
    CURL *easy;
    struct curl_slist *hdrs;
    uint64_t target; /* the connection it means to check */
    int64_t sent_ns;
    size_t body;
};

static struct cx_metric *m_abandoned;
static struct cx_metric *m_probes;

void kube_conn_metrics_init(void)
{
    m_abandoned = cx_counter("coxswain_kube_connections_abandoned_total",
                             "Connections to the API server closed by the client because they "
                             "received nothing and missed a health check, by client.",
                             "client");
    m_probes = cx_counter("coxswain_kube_connection_probes_total",
                          "Health checks sent on connections to the API server that received "
                          "nothing for the read-idle time, by client.",
                          "client");
}

static struct kube_conn *conn_by_id(struct kube_client *c, uint64_t id)
{
    for (struct kube_conn *k = c->conns; k; k = k->next)
        if (k->id == id)
            return k;
    return NULL;
}

static struct kube_conn *conn_by_fd(struct kube_client *c, curl_socket_t fd)
{
    for (struct kube_conn *k = c->conns; k; k = k->next)
        if (k->fd == fd)
            return k;
    return NULL;
}

static int local_port(curl_socket_t fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return 0;
}

/* The connection whose local port is |port| (connected sockets only). */
static struct kube_conn *conn_by_port(struct kube_client *c, int port)
{
    for (struct kube_conn *k = c->conns; k; k = k->next) {
        if (!k->port)
            k->port = local_port(k->fd);
        if (k->port == port)
            return k;
    }
    return NULL;
}

static curl_socket_t open_cb(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
    struct kube_client *c = clientp;
    (void)purpose;
    curl_socket_t fd = socket(addr->family, addr->socktype, addr->protocol);
    if (fd == CURL_SOCKET_BAD)
        return fd;
    struct kube_conn *k = calloc(1, sizeof(*k));
    if (!k) {
        close(fd);
        return CURL_SOCKET_BAD;
    }
    k->id = ++c->conn_serial;
    k->fd = fd;
    k->rx_ns = cx_mono_ns();
    k->next = c->conns;
    c->conns = k;
    return fd;
}

static int close_cb(void *clientp, curl_socket_t fd)
{
    struct kube_client *c = clientp;
    for (struct kube_conn **p = &c->conns; *p; p = &(*p)->next) {
        if ((*p)->fd == fd) {
            struct kube_conn *k = *p;
            *p = k->next;
            free(k);
            break;
        }
    }
    return close(fd);
}

void kube_conn_setup_easy(struct kube_client *c, CURL *e)
{
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_cb);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, c);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, close_cb);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, c);
    /* Over TLS, while the first connection is being set up, wait for its
     * ALPN answer to learn whether it multiplexes instead of opening one
     * per request. Not over plain HTTP, where libcurl learns the version
     * only from a first answer: every other transfer would wait for it. */
    if (strncmp(c->url_base, "https://", 8) == 0)
        curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
}

/* Notes what |e|'s answer (if it has one yet) says of its connection. */
static void note_version(struct kube_conn *k, CURL *e)
{
    long v = 0;
    if (!e || curl_easy_getinfo(e, CURLINFO_HTTP_VERSION, &v) != CURLE_OK || v == 0)
        return;
    if (v >= CURL_HTTP_VERSION_2_0)
        k->multiplexed = 1;
    else
        k->single = 1;
}

void kube_conn_attach(struct kube_client *c, struct kube_xfer *x, int port)
{
    struct kube_conn *k = conn_by_port(c, port);
    if (x->conn_id)
        kube_conn_detach(c, x, NULL, CURLE_OK);
    if (!k)
        return;
    int64_t now = cx_mono_ns();
    /* Silence counts from when something waits for an answer. */
    if (k->inflight == 0 && !k->unanswered)
        k->rx_ns = now;
    k->inflight++;
    x->conn_id = k->id;
    x->attached_ns = now;
}

void kube_conn_detach(struct kube_client *c, struct kube_xfer *x, CURL *e, CURLcode code)
{
    if (!x->conn_id)
        return;
    struct kube_conn *k = conn_by_id(c, x->conn_id);
    x->conn_id = 0;
    if (!k)
        return;
    if (k->inflight > 0)
        k->inflight--;
    note_version(k, e);
    if (code == CURLE_ABORTED_BY_CALLBACK && k->multiplexed && !k->dead && k->inflight == 0) {
        /* We cancelled the last stream of an HTTP/2 connection (a watch
         * stopped: leadership lost, an informer torn down). libcurl queues
         * its RST_STREAM until the connection carries something again,
         * which an idle one never does: the server would keep serving the
         * stream (a watch until its timeoutSeconds). Closing the idle
         * connection ends every stream on it at once. */
        cx_debug("kube",
                 "closing idle HTTP/2 connection (local port %d): its last stream was "
                 "cancelled (client %s)",
                 k->port, c->report.client);
        k->dead = 1;
        if (shutdown(k->fd, SHUT_RDWR) != 0)
            cx_debug("kube", "shutdown of an idle connection: %s", strerror(errno));
        return;
    }
    if (k->rx_ns <= x->attached_ns && code != CURLE_OK) {
        /* Nothing came back on it since this transfer went out, which
         * failed or was abandoned (a caller's own timeout cancels). */
        k->unanswered = 1;
        if (code == CURLE_OPERATION_TIMEDOUT && k->multiplexed && !k->dead) {
            k->suspect = 1;
            if (c->health_ev)
                event_active(c->health_ev, 0, 0);
        }
    }
}

void kube_conn_rx(struct kube_client *c, curl_socket_t fd)
{
    struct kube_conn *k = conn_by_fd(c, fd);
    if (!k)
        return;
    k->rx_ns = cx_mono_ns();
    k->unanswered = 0;
    k->suspect = 0;
}

/* Learns whether |k| is HTTP/2 from a transfer on it that has its answer's
 * headers. */
static void learn_version(struct kube_client *c, struct kube_conn *k)
{
    for (struct kube_call *call = c->calls; call && !k->multiplexed && !k->single;
         call = call->next)
        if (call->easy && call->h.conn_id == k->id)
            note_version(k, call->easy);
    for (struct kube_watch *w = c->watches; w && !k->multiplexed && !k->single; w = w->next)
        if (w->easy && w->h.conn_id == k->id)
            note_version(k, w->easy);
}

/* ---- the probe ---------------------------------------------------------- */

static void probe_free(struct kube_client *c)
{
    struct kube_probe *p = c->probe;
    if (!p)
        return;
    c->probe = NULL;
    kube_conn_detach(c, &p->h, NULL, CURLE_OK);
    if (p->easy) {
        curl_multi_remove_handle(c->shared.m, p->easy);
        curl_easy_cleanup(p->easy);
    }
    curl_slist_free_all(p->hdrs);
    free(p);
}

static size_t probe_write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct kube_probe *p = userdata;
    size_t n = size * nmemb;
    (void)ptr;
    p->body += n;
    return p->body > PROBE_BODY_MAX ? 0 : n; /* any answer will do; not a big one */
}

static int probe_prereq_cb(void *clientp, char *primary_ip, char *local_ip, int primary_port,
                           int port)
{
    struct kube_probe *p = clientp;
    (void)primary_ip;
    (void)local_ip;
    (void)primary_port;
    kube_conn_attach(p->c, &p->h, port);
    return CURL_PREREQFUNC_OK;
}

static void abandon(struct kube_client *c, struct kube_conn *k, int64_t now)
{
    k->dead = 1;
    c->stats.conns_abandoned++;
    if (m_abandoned)
        cx_metric_inc(m_abandoned, c->report.client);
    cx_warn("kube",
            "connection to %s (local port %d) received nothing for %.1f s with %d requests or "
            "watches on it and did not answer a health check within %.1f s: closed, they move "
            "to a new connection (client %s)",
            c->cfg.server, k->port, (double)(now - k->rx_ns) / 1e9, k->inflight,
            (double)c->ping_timeout_ns / 1e9, c->report.client);
    /* libcurl sees the connection end (EOF) and fails what runs on it; the
     * descriptor stays libcurl's to close. */
    if (shutdown(k->fd, SHUT_RDWR) != 0)
        cx_debug("kube", "shutdown of a dead connection: %s", strerror(errno));
}

void kube_conn_probe_done(struct kube_client *c, struct kube_xfer *x, CURLcode code)
{
    struct kube_probe *p = (struct kube_probe *)x;
    if (p != c->probe)
        return;
    uint64_t on = p->h.conn_id;
    int64_t now = cx_mono_ns();
    struct kube_conn *k = conn_by_id(c, p->target);
    if (!k) {
        /* the target closed meanwhile */
    } else if (on == p->target && code == CURLE_OPERATION_TIMEDOUT && k->rx_ns <= p->sent_ns &&
               !k->dead) {
        abandon(c, k, now);
    } else if (on == p->target && code == CURLE_OK) {
        k->suspect = 0;
        k->unanswered = 0;
        k->rx_ns = now;
    } else {
        /* Inconclusive: it went to another connection (the target full or
         * not multiplexed), failed otherwise, or bytes came meanwhile. The
         * target waits a read-idle period before the next check, so no
         * outcome makes checks back to back. */
        k->missed_ns = now;
        k->suspect = 0;
    }
    probe_free(c);
}

static void probe_start(struct kube_client *c, struct kube_conn *k, int64_t now)
{
    struct kube_probe *p = calloc(1, sizeof(*p));
    if (!p)
        return;
    p->h.kind = KUBE_XFER_PROBE;
    p->c = c;
    p->target = k->id;
    p->sent_ns = now;
    c->probe = p;
    k->suspect = 0;
    CURL *e = p->easy = curl_easy_init();
    if (!e || kube_client_setup_easy(c, e, PROBE_PATH, &p->hdrs, NULL, NULL) != 0) {
        probe_free(c);
        return;
    }
    curl_easy_setopt(e, CURLOPT_PRIVATE, &p->h);
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, probe_write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, p);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, probe_prereq_cb);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, p);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(c->ping_timeout_ns / CX_NS_PER_MS));
    c->stats.probes++;
    if (m_probes)
        cx_metric_inc(m_probes, c->report.client);
    cx_debug("kube", "connection (local port %d) silent for %.1f s with %d on it: health check",
             k->port, (double)(now - k->rx_ns) / 1e9, k->inflight);
    if (curl_multi_add_handle(c->shared.m, e) != CURLM_OK)
        probe_free(c);
}

static void on_health(evutil_socket_t fd, short what, void *arg)
{
    struct kube_client *c = arg;
    (void)fd;
    (void)what;
    if (c->probe)
        return;
    int64_t now = cx_mono_ns();
    for (struct kube_conn *k = c->conns; k; k = k->next) {
        if (k->dead || (k->inflight == 0 && !k->unanswered))
            continue;
        if (!k->suspect && now - k->rx_ns < c->read_idle_ns)
            continue;
        if (k->missed_ns && now - k->missed_ns < c->read_idle_ns)
            continue;
        if (!k->multiplexed && !k->single)
            learn_version(c, k);
        if (!k->multiplexed)
            continue;
        probe_start(c, k, now);
        return;
    }
}

int kube_conn_init(struct kube_client *c, const struct kube_client_opts *o)
{
    int64_t idle = o->read_idle_ms ? o->read_idle_ms : c->cfg.read_idle_ms;
    int64_t ping = o->ping_timeout_ms ? o->ping_timeout_ms : c->cfg.ping_timeout_ms;
    if (idle < 0)
        return 0;
    if (idle == 0)
        idle = DEFAULT_IDLE_MS;
    if (ping <= 0)
        ping = DEFAULT_PING_MS;
    c->read_idle_ns = idle * CX_NS_PER_MS;
    c->ping_timeout_ns = ping * CX_NS_PER_MS;
    int64_t tick = (idle < ping ? idle : ping) / 4;
    if (tick < TICK_MIN_MS)
        tick = TICK_MIN_MS;
    if (tick > TICK_MAX_MS)
        tick = TICK_MAX_MS;
    c->health_ev = event_new(c->base, -1, EV_PERSIST, on_health, c);
    struct timeval tv = {.tv_sec = tick / 1000, .tv_usec = (tick % 1000) * 1000};
    return c->health_ev && event_add(c->health_ev, &tv) == 0 ? 0 : -1;
}

void kube_conn_free_probe(struct kube_client *c)
{
    probe_free(c);
}

void kube_conn_free(struct kube_client *c)
{
    if (c->health_ev) {
        event_free(c->health_ev);
        c->health_ev = NULL;
    }
    while (c->conns) {
        struct kube_conn *k = c->conns;
        c->conns = k->next;
        free(k);
    }
}
