/* Fuzz target: arbitrary bytes from a client, as an HTTP/2 connection to
 * the gRPC transport (xds_h2: nghttp2 and our callbacks, header routing,
 * the deframer with its caps and budget, calls, trailers, flushing,
 * teardown). The bytes follow the client preface, so the fuzzer starts
 * inside a valid connection. A server with one echo method is created
 * once; each input is one connection over a socketpair, accepted as the
 * listener would accept it, fed in chunks sized by the input's first
 * byte, with the loop run between chunks, then closed. Checks: no crash,
 * no leak (ASan), and every connection is gone at the end. */
#include "xds_h2_impl.h"

#include <event2/event.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct event_base *base;
static struct xds_h2_server *srv;
static struct xds_budget budget = {.max = 1 << 20};

static void *on_open(void *user, struct xds_h2_stream *st)
{
    (void)user;
    return st;
}

static int on_message(void *ctx, const uint8_t *msg, size_t len, const char **errmsg)
{
    struct xds_h2_stream *st = ctx;
    if (len && msg[0] == 'X') {
        *errmsg = "refused";
        return 3;
    }
    struct evbuffer *b = evbuffer_new();
    uint8_t p[5];
    xds_frame_prefix(p, (uint32_t)len);
    evbuffer_add(b, p, 5);
    evbuffer_add(b, msg, len);
    if (xds_h2_stream_send(st, b) != 0) {
        evbuffer_free(b);
        return 0;
    }
    evbuffer_free(b);
    return 0;
}

static void on_half_close(void *ctx)
{
    xds_h2_stream_finish(ctx, 0, NULL);
}

static void on_writable(void *ctx)
{
    (void)ctx;
}

static void on_close(void *ctx)
{
    (void)ctx;
}

static const struct xds_h2_method methods[] = {{
    .path = "/fuzz.Echo/Call",
    .on_open = on_open,
    .on_message = on_message,
    .on_half_close = on_half_close,
    .on_writable = on_writable,
    .on_close = on_close,
}};

static void setup(void)
{
    if (srv)
        return;
    signal(SIGPIPE, SIG_IGN); /* as xds_server_new does: libevent writes with writev */
    base = event_base_new();
    struct xds_h2_config cfg = {
        .listen = "127.0.0.1:0",
        .max_message = 4096,
        .max_streams = 8,
        .keepalive_ms = -1,
        .idle_conn_ms = -1,
        .budget = &budget,
    };
    char err[256];
    srv = xds_h2_server_new(base, &cfg, methods, 1, NULL, err, sizeof(err));
    if (!srv)
        abort();
}

static void drain(int fd)
{
    char buf[65536];
    while (read(fd, buf, sizeof(buf)) > 0) {
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size < 1)
        return 0;
    size_t chunk = (size_t)data[0] * 64 + 1;
    data++;
    size--;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
        return 0;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(1)};
    xds_h2_on_accept(NULL, sv[0], (struct sockaddr *)&sa, sizeof(sa), srv);
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    if (send(sv[1], preface, sizeof(preface) - 1, MSG_NOSIGNAL) < 0)
        abort();
    for (size_t off = 0; off < size; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        if (send(sv[1], data + off, n, MSG_NOSIGNAL) < 0)
            break;
        event_base_loop(base, EVLOOP_NONBLOCK);
        drain(sv[1]);
    }
    event_base_loop(base, EVLOOP_NONBLOCK);
    drain(sv[1]);
    close(sv[1]);
    for (int i = 0; i < 8 && !cx_list_empty(&srv->conns); i++)
        event_base_loop(base, EVLOOP_NONBLOCK);
    while (!cx_list_empty(&srv->conns))
        xds_h2_conn_free(cx_list_entry(srv->conns.next, struct h2_conn, link));
    if (budget.used != 0)
        abort();
    return 0;
}
