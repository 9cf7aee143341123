/*
 * bench_kubesim: is kubesim ever the bottleneck? Measures, against a
 * baseline taken in the same run:
 *
 *  1. LIST of 50k ConfigMaps. Baseline: the same response bytes served as a
 *     static buffer by a bare libevent evhttp server in this process (the
 *     HTTP transfer floor of this machine and stack).
 *  2. CREATE rate, one keep-alive connection. Baseline: the same POSTs to
 *     the bare server, which answers 201 echoing the body (the per-request
 *     HTTP floor).
 *  3. Watch fan-out: an update of one ConfigMap delivered to 100 watchers;
 *     latency from sending the PUT to the event reaching the last watcher.
 *     Baseline: the same with 1 watcher (the cost of fanning out).
 *
 * Prints one JSON object (bench/run.sh). KUBESIM_BENCH_N overrides 50000.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/bufferevent.h>
#include <event2/thread.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cx_buf.h"
#include "cx_kubesim.h"
#include "cx_time.h"

/* ---- a minimal blocking HTTP/1.1 client ---------------------------------- */

struct conn {
    int fd;
    char buf[1 << 16];
    size_t off, len;
};

static int conn_open(struct conn *c, int port)
{
    c->off = c->len = 0;
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0)
        return -1;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(c->fd);
        return -1;
    }
    return 0;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int fill(struct conn *c)
{
    if (c->off == c->len)
        c->off = c->len = 0;
    if (c->len == sizeof(c->buf)) {
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
    }
    ssize_t r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
    if (r <= 0)
        return -1;
    c->len += (size_t)r;
    return 0;
}

/* Reads one line (without CRLF) into |out|. */
static int read_line(struct conn *c, char *out, size_t n)
{
    size_t k = 0;
    for (;;) {
        while (c->off < c->len) {
            char ch = c->buf[c->off++];
            if (ch == '\n') {
                if (k && out[k - 1] == '\r')
                    k--;
                out[k] = 0;
                return 0;
            }
            if (k + 1 < n)
                out[k++] = ch;
        }
        if (fill(c) != 0)
            return -1;
    }
}

static int read_n(struct conn *c, size_t n, struct cx_buf *body)
{
    while (n) {
        if (c->off == c->len && fill(c) != 0)
            return -1;
        size_t take = c->len - c->off < n ? c->len - c->off : n;
        if (body && cx_buf_append(body, c->buf + c->off, take) != 0)
            return -1;
        c->off += take;
        n -= take;
    }
    return 0;
}

/* Reads a response; the body goes to |body| (may be NULL). */
static int read_response(struct conn *c, int *status, struct cx_buf *body)
{
    char line[8192];
    if (read_line(c, line, sizeof(line)) != 0 || sscanf(line, "HTTP/1.1 %d", status) != 1)
        return -1;
    long clen = -1;
    int chunked = 0;
    while (read_line(c, line, sizeof(line)) == 0 && line[0]) {
        if (strncasecmp(line, "Content-Length:", 15) == 0)
            clen = strtol(line + 15, NULL, 10);
        if (strncasecmp(line, "Transfer-Encoding:", 18) == 0 && strstr(line, "chunked"))
            chunked = 1;
    }
    if (!chunked)
        return clen >= 0 ? read_n(c, (size_t)clen, body) : 0;
    for (;;) {
        if (read_line(c, line, sizeof(line)) != 0)
            return -1;
        long n = strtol(line, NULL, 16);
        if (n == 0) {
            read_line(c, line, sizeof(line));
            return 0;
        }
        if (read_n(c, (size_t)n, body) != 0 || read_line(c, line, sizeof(line)) != 0)
            return -1;
    }
}

static int request(struct conn *c, const char *method, const char *path, const char *body,
                   int *status, struct cx_buf *out)
{
    char hdr[1024];
    int n = snprintf(hdr, sizeof(hdr),
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: bench\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                     method, path, body ? strlen(body) : 0);
    if (send_all(c->fd, hdr, (size_t)n) != 0 || (body && send_all(c->fd, body, strlen(body)) != 0))
        return -1;
    return read_response(c, status, out);
}

/* ---- the bare baseline server ---------------------------------------------- */

struct bare {
    struct event_base *base;
    struct evhttp *http;
    int port;
    char *blob;
    size_t blob_len;
    pthread_t th;
};

static void bare_cb(struct evhttp_request *req, void *arg)
{
    struct bare *b = arg;
    /* Same socket options as kubesim (and Go's net/http): no Nagle. */
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evhttp_request_get_connection(req));
    int one = 1;
    if (bev)
        setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct evbuffer *out = evbuffer_new();
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    if (evhttp_request_get_command(req) == EVHTTP_REQ_POST) {
        evbuffer_add_buffer(out, evhttp_request_get_input_buffer(req));
        evhttp_send_reply(req, 201, "Created", out);
    } else {
        evbuffer_add_reference(out, b->blob, b->blob_len, NULL, NULL);
        evhttp_send_reply(req, 200, "OK", out);
    }
    evbuffer_free(out);
}

static void *bare_run(void *arg)
{
    struct bare *b = arg;
    event_base_dispatch(b->base);
    return NULL;
}

static int bare_start(struct bare *b)
{
    b->base = event_base_new();
    b->http = evhttp_new(b->base);
    evhttp_set_allowed_methods(b->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
    evhttp_set_gencb(b->http, bare_cb, b);
    struct evhttp_bound_socket *s = evhttp_bind_socket_with_handle(b->http, "127.0.0.1", 0);
    if (!s)
        return -1;
    struct sockaddr_in a;
    socklen_t al = sizeof(a);
    getsockname(evhttp_bound_socket_get_fd(s), (struct sockaddr *)&a, &al);
    b->port = ntohs(a.sin_port);
    return pthread_create(&b->th, NULL, bare_run, b);
}

static void bare_stop(struct bare *b)
{
    event_base_loopbreak(b->base);
    pthread_join(b->th, NULL);
    evhttp_free(b->http);
    event_base_free(b->base);
}

/* ---- stats --------------------------------------------------------------------- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
    qsort(v, n, sizeof(*v), cmp_d);
    size_t i = (size_t)(p * (double)(n - 1));
    return v[i];
}

static double now_ms(void)
{
    return (double)cx_mono_ns() / 1e6;
}

/* ---- watch fan-out --------------------------------------------------------- */

struct watcher {
    struct conn c;
    int state; /* 0 size line, 1 data, 2 data CRLF */
    long left;
    char line[64];
    size_t ll;
    long events;
};

/* Parses chunked stream bytes; counts complete events (newlines in data). */
static void watcher_parse(struct watcher *w, const char *buf, ssize_t r)
{
    for (ssize_t i = 0; i < r; i++) {
        char ch = buf[i];
        switch (w->state) {
        case 0:
            if (ch == '\n') {
                w->line[w->ll] = 0;
                w->left = strtol(w->line, NULL, 16);
                w->ll = 0;
                w->state = w->left ? 1 : 0;
            } else if (ch != '\r' && w->ll + 1 < sizeof(w->line)) {
                w->line[w->ll++] = ch;
            }
            break;
        case 1:
            if (ch == '\n')
                w->events++;
            if (--w->left == 0)
                w->state = 2;
            break;
        case 2:
            if (ch == '\n')
                w->state = 0;
            break;
        }
    }
}

static int watcher_feed(struct watcher *w)
{
    char buf[65536];
    ssize_t r = read(w->c.fd, buf, sizeof(buf));
    if (r <= 0)
        return -1;
    watcher_parse(w, buf, r);
    return 0;
}

static int fanout(int port, int nwatch, int nevents, double *lat)
{
    struct watcher *ws = calloc((size_t)nwatch, sizeof(*ws));
    struct pollfd *pf = calloc((size_t)nwatch, sizeof(*pf));
    int rc = -1;
    struct conn wc;
    struct cx_buf body;
    cx_buf_init(&body, 0);
    if (!ws || !pf || conn_open(&wc, port) != 0)
        goto out;
    int st;
    char name[64];
    snprintf(name, sizeof(name), "fan-%d", nwatch);
    char obj[512];
    snprintf(obj, sizeof(obj), "{\"metadata\":{\"name\":\"%s\"},\"data\":{\"v\":\"0\"}}", name);
    if (request(&wc, "POST", "/api/v1/namespaces/kube-public/configmaps", obj, &st, NULL) != 0)
        goto out;
    for (int i = 0; i < nwatch; i++) {
        char path[256];
        snprintf(
            path, sizeof(path),
            "GET "
            "/api/v1/namespaces/kube-public/configmaps?watch=1&fieldSelector=metadata.name%%3D%s"
            "&resourceVersion=0 HTTP/1.1\r\nHost: x\r\n\r\n",
            name);
        if (conn_open(&ws[i].c, port) != 0 || send_all(ws[i].c.fd, path, strlen(path)) != 0)
            goto out;
        char line[1024];
        if (read_line(&ws[i].c, line, sizeof(line)) != 0)
            goto out;
        while (read_line(&ws[i].c, line, sizeof(line)) == 0 && line[0])
            ;
        /* leftover bytes in the conn buffer belong to the stream */
        watcher_parse(&ws[i], ws[i].c.buf + ws[i].c.off, (ssize_t)(ws[i].c.len - ws[i].c.off));
        ws[i].c.off = ws[i].c.len = 0;
        pf[i].fd = ws[i].c.fd;
        pf[i].events = POLLIN;
    }
    /* wait for the synthetic ADDED everywhere */
    for (int i = 0; i < nwatch; i++)
        while (ws[i].events < 1)
            if (watcher_feed(&ws[i]) != 0)
                goto out;
    for (int e = 1; e <= nevents; e++) {
        snprintf(obj, sizeof(obj), "{\"metadata\":{\"name\":\"%s\"},\"data\":{\"v\":\"%d\"}}", name,
                 e);
        char path[256];
        snprintf(path, sizeof(path), "/api/v1/namespaces/kube-public/configmaps/%s", name);
        double t0 = now_ms();
        if (request(&wc, "PUT", path, obj, &st, NULL) != 0 || st != 200)
            goto out;
        int done = 0;
        for (int i = 0; i < nwatch; i++)
            if (ws[i].events > e)
                done++;
        while (done < nwatch) {
            if (poll(pf, (nfds_t)nwatch, 5000) <= 0)
                goto out;
            done = 0;
            for (int i = 0; i < nwatch; i++) {
                if ((pf[i].revents & POLLIN) && watcher_feed(&ws[i]) != 0)
                    goto out;
                if (ws[i].events > e)
                    done++;
            }
        }
        lat[e - 1] = now_ms() - t0;
    }
    rc = 0;
out:
    for (int i = 0; ws && i < nwatch; i++)
        if (ws[i].c.fd > 0)
            close(ws[i].c.fd);
    if (wc.fd > 0)
        close(wc.fd);
    free(ws);
    free(pf);
    cx_buf_free(&body);
    return rc;
}

/* ---- main ------------------------------------------------------------------ */

int main(void)
{
    evthread_use_pthreads();
    int N = 50000;
    const char *env = getenv("KUBESIM_BENCH_N");
    if (env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*env && !*end && v > 0 && v <= 10000000)
            N = (int)v;
        else
            fprintf(stderr, "bench_kubesim: ignoring KUBESIM_BENCH_N=%s (want 1..10000000)\n", env);
    }
    struct cx_kubesim ks;
    const char *args[] = {"--log-level", "warn", NULL};
    if (cx_kubesim_start(&ks, args) != 0) {
        fprintf(stderr, "bench_kubesim: cannot start kubesim\n");
        return 1;
    }
    struct bare bare = {0};
    struct conn c;
    int st;
    int rc = 1;
    double *lat = calloc((size_t)N, sizeof(double));
    double *blat = calloc((size_t)N, sizeof(double));
    if (!lat || !blat || conn_open(&c, ks.port) != 0)
        goto out;
    /* 1. create rate */
    char body[600];
    const char *pad = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    double t0 = now_ms();
    for (int i = 0; i < N; i++) {
        snprintf(
            body, sizeof(body),
            "{\"metadata\":{\"name\":\"cm-%06d\",\"labels\":{\"app\":\"bench\",\"shard\":\"%d\"}},"
            "\"data\":{\"a\":\"%s\",\"b\":\"%s\",\"n\":\"%d\"}}",
            i, i % 16, pad, pad, i);
        double s = now_ms();
        if (request(&c, "POST", "/api/v1/namespaces/default/configmaps", body, &st, NULL) != 0 ||
            st != 201) {
            fprintf(stderr, "bench_kubesim: create %d failed (%d)\n", i, st);
            goto out;
        }
        lat[i] = now_ms() - s;
    }
    double create_s = (now_ms() - t0) / 1000.0;
    if (bare_start(&bare) != 0)
        goto out;
    struct conn bc;
    if (conn_open(&bc, bare.port) != 0)
        goto out;
    t0 = now_ms();
    for (int i = 0; i < N; i++) {
        snprintf(
            body, sizeof(body),
            "{\"metadata\":{\"name\":\"cm-%06d\",\"labels\":{\"app\":\"bench\",\"shard\":\"%d\"}},"
            "\"data\":{\"a\":\"%s\",\"b\":\"%s\",\"n\":\"%d\"}}",
            i, i % 16, pad, pad, i);
        double s = now_ms();
        if (request(&bc, "POST", "/echo", body, &st, NULL) != 0 || st != 201)
            goto out;
        blat[i] = now_ms() - s;
    }
    double bare_create_s = (now_ms() - t0) / 1000.0;
    double create_p50 = pct(lat, (size_t)N, 0.5), create_p99 = pct(lat, (size_t)N, 0.99);
    double bcreate_p50 = pct(blat, (size_t)N, 0.5);
    /* 2. list */
    struct cx_buf lb;
    cx_buf_init(&lb, (size_t)1 << 30);
    const int LISTS = 7;
    double llat[16], bllat[16];
    for (int i = 0; i < LISTS; i++) {
        cx_buf_reset(&lb);
        double s = now_ms();
        if (request(&c, "GET", "/api/v1/namespaces/default/configmaps", NULL, &st, &lb) != 0 ||
            st != 200)
            goto out;
        llat[i] = now_ms() - s;
    }
    size_t list_bytes = lb.len;
    bare.blob = lb.data;
    bare.blob_len = lb.len;
    struct cx_buf bb;
    cx_buf_init(&bb, (size_t)1 << 30);
    for (int i = 0; i < LISTS; i++) {
        cx_buf_reset(&bb);
        double s = now_ms();
        if (request(&bc, "GET", "/blob", NULL, &st, &bb) != 0 || st != 200 || bb.len != list_bytes)
            goto out;
        bllat[i] = now_ms() - s;
    }
    cx_buf_free(&bb);
    close(bc.fd);
    double list_p50 = pct(llat, LISTS, 0.5), blist_p50 = pct(bllat, LISTS, 0.5);
    /* 3. fan-out */
    const int EV = 500;
    double f100[500], f1[500];
    if (fanout(ks.port, 100, EV, f100) != 0 || fanout(ks.port, 1, EV, f1) != 0) {
        fprintf(stderr, "bench_kubesim: fan-out failed\n");
        goto out;
    }
    double f100_p50 = pct(f100, EV, 0.5), f100_p99 = pct(f100, EV, 0.99);
    double f1_p50 = pct(f1, EV, 0.5);
    double f100_total = 0;
    for (int i = 0; i < EV; i++)
        f100_total += f100[i];
    printf(
        "{\"benchmark\":\"kubesim\",\"title\":\"kubesim: list, create, watch fan-out\","
        "\"notes\":\"One client on loopback. List and create baselines: the same bytes/requests "
        "served by a bare libevent evhttp server in the benchmark process (static buffer; 201 "
        "echoing the body) - the HTTP floor of this stack. Fan-out baseline: the same update "
        "stream to 1 watcher. Latencies are per request (create, list) or from sending the PUT "
        "to the event reaching the last watcher (fan-out).\",\"rows\":["
        "{\"case\":\"list %d ConfigMaps (%.1f MB)\",\"p50_ms\":%.2f,\"baseline_p50_ms\":%.2f,"
        "\"ratio\":%.2f,\"MB_per_s\":%.0f},"
        "{\"case\":\"create ConfigMap, 1 connection (%d)\",\"per_s\":%.0f,\"p50_ms\":%.3f,"
        "\"p99_ms\":%.3f,\"baseline_per_s\":%.0f,\"baseline_p50_ms\":%.3f,\"ratio\":%.2f},"
        "{\"case\":\"watch fan-out to 100 watchers (%d updates)\",\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
        "\"baseline_p50_ms\":%.3f,\"ratio\":%.2f,\"events_per_s\":%.0f}]}\n",
        N, (double)list_bytes / 1e6, list_p50, blist_p50, list_p50 / blist_p50,
        (double)list_bytes / 1e6 / (list_p50 / 1000.0), N, N / create_s, create_p50, create_p99,
        N / bare_create_s, bcreate_p50, bare_create_s / create_s > 0 ? create_s / bare_create_s : 0,
        EV, f100_p50, f100_p99, f1_p50, f100_p50 / f1_p50, 100.0 * EV / (f100_total / 1000.0));
    rc = 0;
    bare.blob = NULL;
    cx_buf_free(&lb);
out:
    if (bare.base)
        bare_stop(&bare);
    free(lat);
    free(blat);
    if (c.fd > 0)
        close(c.fd);
    cx_kubesim_stop(&ks);
    return rc;
}
