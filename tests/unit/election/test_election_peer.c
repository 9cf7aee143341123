/* The peer liveness channel on loopback, in one event loop: a held
 * connection whose server process goes away (listener closed: refused)
 * is a proof; a new process with another identity on the same port is a
 * proof; the same identity again, or a port that accepts but never
 * greets, or no connection ever established, is none. Bounds: connections
 * beyond PEER_MAX_CONNS are closed at once; garbage sent to a server is
 * dropped. A replica with no listener (nothing to advertise) still
 * follows and proves. */
#include "cxtest.h"
#include "election_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct got {
    int n;
    char holder[ELECTION_IDENTITY_MAX];
    char rv[ELECTION_RV_MAX];
};

static void on_dead(void *arg, const char *holder, const char *rv)
{
    struct got *g = arg;
    g->n++;
    snprintf(g->holder, sizeof(g->holder), "%s", holder);
    snprintf(g->rv, sizeof(g->rv), "%s", rv);
}

static void never(void *arg, const char *holder, const char *rv)
{
    (void)arg;
    (void)holder;
    (void)rv;
    CHECK(0 && "a server never proves anything");
}

static void spin(struct event_base *b, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_loopexit(b, &tv);
    event_base_dispatch(b);
}

static struct election_peer *server(struct event_base *b, const char *id, int port, char *adv)
{
    char listen[64], err[256] = "";
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    snprintf(adv, ELECTION_PEER_MAX, "127.0.0.1:%d", port);
    struct election_peer *p =
        election_peer_new(b, id, listen, adv, ELECTION_PEER_MAX, never, NULL, err, sizeof(err));
    if (!p)
        printf("# %s\n", err);
    return p;
}

static struct election_peer *standby(struct event_base *b, struct got *g)
{
    char adv[ELECTION_PEER_MAX] = "", err[256] = "";
    return election_peer_new(b, "s", "127.0.0.1:0", adv, sizeof(adv), on_dead, g, err, sizeof(err));
}

static void held(struct election_peer *s)
{
    struct election_peer_stats st;
    election_peer_stats(s, &st);
    CHECK_INT_EQ(st.connects, 1);
}

/* kill -9: the kernel closes the listener and the connection. */
static void test_refused_after_end_is_proof(void)
{
    struct event_base *b = event_base_new();
    char adv[ELECTION_PEER_MAX];
    struct election_peer *a = server(b, "a", 0, adv);
    REQUIRE(a != NULL);
    CHECK(strcmp(adv, "127.0.0.1:0") != 0); /* the bound port filled in */
    struct got g = {0};
    struct election_peer *s = standby(b, &g);
    REQUIRE(s != NULL);
    election_peer_follow(s, "a", adv, "7");
    spin(b, 100);
    held(s);
    election_peer_follow(s, "a", adv, "8"); /* a renewal: still held */
    spin(b, 50);
    CHECK_INT_EQ(g.n, 0);
    election_peer_free(a);
    spin(b, 100);
    CHECK_INT_EQ(g.n, 1);
    CHECK_STR_EQ(g.holder, "a");
    CHECK_STR_EQ(g.rv, "8");
    struct election_peer_stats st;
    election_peer_stats(s, &st);
    CHECK_INT_EQ(st.ended, 1);
    CHECK_INT_EQ(st.proofs, 1);
    election_peer_free(s);
    event_base_free(b);
}

/* A restart on the same address: the new process says who it is. */
static void test_other_identity_after_end_is_proof_same_is_not(void)
{
    struct event_base *b = event_base_new();
    char adv[ELECTION_PEER_MAX];
    struct election_peer *a = server(b, "a", 0, adv);
    REQUIRE(a != NULL);
    int port = election_peer_port(a);
    struct got g = {0};
    struct election_peer *s = standby(b, &g);
    election_peer_follow(s, "a", adv, "7");
    spin(b, 100);
    /* the same identity answers again: alive (its connection ended for
     * another reason) */
    election_peer_free(a);
    a = server(b, "a", port, adv);
    REQUIRE(a != NULL);
    spin(b, 100);
    CHECK_INT_EQ(g.n, 0);
    struct election_peer_stats st;
    election_peer_stats(s, &st);
    CHECK_INT_EQ(st.ended, 1);
    CHECK_INT_EQ(st.proofs, 0);
    /* held again: another identity on the port after the next end */
    election_peer_free(a);
    a = server(b, "a2", port, adv);
    REQUIRE(a != NULL);
    spin(b, 100);
    CHECK_INT_EQ(g.n, 1);
    CHECK_STR_EQ(g.holder, "a");
    election_peer_free(a);
    election_peer_free(s);
    event_base_free(b);
}

/* A paused process: the kernel completes the handshake, nobody greets. */
static void test_no_greeting_proves_nothing(void)
{
    struct event_base *b = event_base_new();
    char adv[ELECTION_PEER_MAX];
    struct election_peer *a = server(b, "a", 0, adv);
    REQUIRE(a != NULL);
    int port = election_peer_port(a);
    struct got g = {0};
    struct election_peer *s = standby(b, &g);
    election_peer_follow(s, "a", adv, "7");
    spin(b, 100);
    election_peer_free(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    REQUIRE(listen(fd, 8) == 0); /* never accepts, never greets */
    spin(b, PEER_TIMEOUT_MS + 300);
    CHECK_INT_EQ(g.n, 0);
    struct election_peer_stats st;
    election_peer_stats(s, &st);
    CHECK_INT_EQ(st.no_proofs, 1);
    close(fd);
    election_peer_free(s);
    event_base_free(b);
}

/* Never connected (nothing listens): no proof, however long; and a
 * holder change follows the new endpoint. */
static void test_never_held_is_no_proof(void)
{
    struct event_base *b = event_base_new();
    char adv[ELECTION_PEER_MAX];
    struct election_peer *a = server(b, "a", 0, adv);
    REQUIRE(a != NULL);
    int port = election_peer_port(a);
    election_peer_free(a); /* the port is free again: refused */
    struct got g = {0};
    struct election_peer *s = standby(b, &g);
    snprintf(adv, sizeof(adv), "127.0.0.1:%d", port);
    election_peer_follow(s, "a", adv, "7");
    spin(b, 2500);
    CHECK_INT_EQ(g.n, 0);
    struct election_peer_stats st;
    election_peer_stats(s, &st);
    CHECK_INT_GE(st.connects, 2); /* retried, within bounds */
    CHECK_INT_LE(st.connects, 4);
    /* garbled endpoints are not followed */
    election_peer_follow(s, "a", "db.example:80", "7");
    election_peer_follow(s, "a", "1.2.3.4", "7");
    spin(b, 50);
    CHECK_INT_EQ(g.n, 0);
    election_peer_free(s);
    event_base_free(b);
}

/* A listener of the test's own, on loopback: |greet| is sent to the first
 * connection accepted; later ones are accepted and closed at once when
 * |close_rest| (a live replica over its cap), else left in the backlog. */
struct raw {
    int lfd;
    int port;
    int held;
    int closed;
    bool close_rest;
    struct event *ev;
};

static void raw_accept(evutil_socket_t lfd, short what, void *arg)
{
    (void)what;
    struct raw *r = arg;
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        return;
    if (r->held < 0) {
        static const char greet[] = "coxswain-peer/1 leader 3 a\n";
        CHECK(send(fd, greet, sizeof(greet) - 1, MSG_NOSIGNAL) == (ssize_t)sizeof(greet) - 1);
        r->held = fd;
        if (!r->close_rest)
            event_del(r->ev); /* from now on the kernel queues, nobody accepts */
        return;
    }
    r->closed++;
    close(fd);
}

static void raw_open(struct event_base *b, struct raw *r, bool close_rest)
{
    memset(r, 0, sizeof(*r));
    r->held = -1;
    r->close_rest = close_rest;
    r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof(sa);
    REQUIRE(bind(r->lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    REQUIRE(listen(r->lfd, 8) == 0);
    REQUIRE(getsockname(r->lfd, (struct sockaddr *)&sa, &sl) == 0);
    r->port = ntohs(sa.sin_port);
    r->ev = event_new(b, r->lfd, EV_READ | EV_PERSIST, raw_accept, r);
    REQUIRE(r->ev && event_add(r->ev, NULL) == 0);
}

static void raw_close_listener(struct raw *r)
{
    if (r->ev)
        event_free(r->ev);
    r->ev = NULL;
    if (r->lfd >= 0)
        close(r->lfd);
    r->lfd = -1;
}

/* kill -9 as the kernel does it when the held connection's descriptor is
 * below the listener's: the held connection ends (FIN) while the listener
 * still exists, so the standby's new connection completes its handshake
 * into the backlog; then the listener closes and that connection is reset
 * before any greeting. One more connection is refused: proof. (Seen in 1
 * of 4 runs of real processes before the recheck was tried again.) */
static void test_reset_in_dying_backlog_then_refused_is_proof(void)
{
    struct event_base *b = event_base_new();
    struct raw r;
    raw_open(b, &r, false);
    struct got g = {0};
    struct election_peer *s = standby(b, &g);
    REQUIRE(s != NULL);
    char adv[ELECTION_PEER_MAX];
    snprintf(adv, sizeof(adv), "127.0.0.1:%d", r.port);
    election_peer_follow(s, "a", adv, "9");
    spin(b, 100);
    REQUIRE(r.held >= 0);
    held(s);
    close(r.held); /* the held connection first... */
    spin(b, 100);  /* ...the standby's new one waits in the backlog, no greeting */
    CHECK_INT_EQ(g.n, 0);
    struct election_peer_stats st;
    election_peer_stats(s, &st);
    CHECK_INT_EQ(st.connects, 2);
    CHECK_INT_EQ(st.no_proofs, 0);
    raw_close_listener(&r); /* ...then the listener: the backlog is reset */
    spin(b, 300);
    CHECK_INT_EQ(g.n, 1);
    CHECK_STR_EQ(g.holder, "a");
    CHECK_STR_EQ(g.rv, "9");
    election_peer_stats(s, &st);
    CHECK_INT_EQ(st.connects, 3);
    CHECK_INT_EQ(st.proofs, 1);
    CHECK_INT_EQ(st.no_proofs, 0);
    election_peer_free(s);
    event_base_free(b);
}

/* As above, but the reset comes before the standby saw its new connection
 * complete: connect's result (SO_ERROR) is ECONNRESET, not a failed read.
 * The same dying backlog: probe again. (Seen under sanitizers, where the
 * standby is slower than the dying kernel.) */
static void test_reset_before_connect_seen_then_refused_is_proof(void)
{
    struct event_base *b = event_base_new();
    struct raw r;
    raw_open(b, &r, false);
    struct got g = {0};
    struct election_peer *s = standby(b, &g);
    REQUIRE(s != NULL);
    char adv[ELECTION_PEER_MAX];
    snprintf(adv, sizeof(adv), "127.0.0.1:%d", r.port);
    election_peer_follow(s, "a", adv, "9");
    spin(b, 100);
    REQUIRE(r.held >= 0);
    held(s);
    close(r.held);
    /* one pass: the standby reads the end and connects again, and the
     * handshake completes into the backlog; its result is not read yet */
    event_base_loop(b, EVLOOP_ONCE);
    struct election_peer_stats st;
    election_peer_stats(s, &st);
    CHECK_INT_EQ(st.connects, 2);
    raw_close_listener(&r); /* the backlog is reset */
    spin(b, 300);
    CHECK_INT_EQ(g.n, 1);
    CHECK_STR_EQ(g.holder, "a");
    election_peer_stats(s, &st);
    CHECK_INT_EQ(st.connects, 3);
    CHECK_INT_EQ(st.proofs, 1);
    CHECK_INT_EQ(st.no_proofs, 0);
    election_peer_free(s);
    event_base_free(b);
}

/* A live replica over its connection cap closes new connections before
 * any greeting: however often the standby asks, no proof. */
static void test_live_holder_closing_new_connections_is_no_proof(void)
{
    struct event_base *b = event_base_new();
    struct raw r;
    raw_open(b, &r, true);
    struct got g = {0};
    struct election_peer *s = standby(b, &g);
    REQUIRE(s != NULL);
    char adv[ELECTION_PEER_MAX];
    snprintf(adv, sizeof(adv), "127.0.0.1:%d", r.port);
    election_peer_follow(s, "a", adv, "9");
    spin(b, 100);
    REQUIRE(r.held >= 0);
    close(r.held);
    spin(b, 2000); /* every probe: 10 + 20 + ... + 640 ms of waits */
    CHECK_INT_EQ(g.n, 0);
    struct election_peer_stats st;
    election_peer_stats(s, &st);
    CHECK_INT_EQ(st.no_proofs, 1);
    CHECK_INT_EQ(st.connects, 1 + PEER_PROBES_MAX);
    CHECK_INT_EQ(r.closed, PEER_PROBES_MAX);
    raw_close_listener(&r);
    spin(b, 100); /* proved nothing: refused now is no proof without a held end */
    CHECK_INT_EQ(g.n, 0);
    election_peer_free(s);
    event_base_free(b);
}

static void test_bounds(void)
{
    struct event_base *b = event_base_new();
    char adv[ELECTION_PEER_MAX];
    struct election_peer *a = server(b, "a", 0, adv);
    REQUIRE(a != NULL);
    int port = election_peer_port(a);
    int fds[PEER_MAX_CONNS + 5];
    for (int i = 0; i < PEER_MAX_CONNS + 5; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)) == 0);
        static const char junk[] = "GET / HTTP/1.1\r\n\r\n";
        CHECK(send(fds[i], junk, sizeof(junk) - 1, MSG_NOSIGNAL) > 0);
        spin(b, 5); /* the server accepts as they come (the backlog is finite) */
    }
    spin(b, 200);
    struct election_peer_stats st;
    election_peer_stats(a, &st);
    CHECK_INT_EQ(st.accepted, PEER_MAX_CONNS);
    CHECK_INT_EQ(st.refused, 5);
    char buf[PEER_LINE_MAX];
    ssize_t n = recv(fds[0], buf, sizeof(buf) - 1, 0);
    REQUIRE(n > 0);
    buf[n] = '\0';
    CHECK_STR_EQ(buf, "coxswain-peer/1 standby 0 a\n");
    election_peer_set_role(a, true, 4);
    for (int i = 0; i < PEER_MAX_CONNS + 5; i++)
        close(fds[i]);
    spin(b, 100);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    spin(b, 50);
    n = recv(fd, buf, sizeof(buf) - 1, 0);
    REQUIRE(n > 0);
    buf[n] = '\0';
    CHECK_STR_EQ(buf, "coxswain-peer/1 leader 4 a\n");
    close(fd);
    election_peer_free(a);
    event_base_free(b);
}

static void test_parse(void)
{
    struct sockaddr_storage ss;
    unsigned len;
    CHECK_INT_EQ(election_peer_parse("10.1.2.3:18090", &ss, &len), 0);
    CHECK_INT_EQ(election_peer_parse("[fd00::1]:18090", &ss, &len), 0);
    CHECK_INT_EQ(ss.ss_family, AF_INET6);
    CHECK_INT_EQ(election_peer_parse("10.1.2.3", &ss, &len), -1);
    CHECK_INT_EQ(election_peer_parse("10.1.2.3:", &ss, &len), -1);
    CHECK_INT_EQ(election_peer_parse("10.1.2.3:70000", &ss, &len), -1);
    CHECK_INT_EQ(election_peer_parse("host.example:1", &ss, &len), -1);
    CHECK_INT_EQ(election_peer_parse("[fd00::1:1", &ss, &len), -1);
}

/* No address to advertise: no listener (port 0, nothing bound), and
 * following a holder still works: its death is proven. */
static void test_no_listener_still_follows(void)
{
    struct event_base *b = event_base_new();
    char adv[ELECTION_PEER_MAX];
    struct election_peer *a = server(b, "a", 0, adv);
    REQUIRE(a != NULL);
    struct got g = {0};
    char none[ELECTION_PEER_MAX] = "", err[256] = "";
    struct election_peer *s =
        election_peer_new(b, "s", NULL, none, sizeof(none), on_dead, &g, err, sizeof(err));
    REQUIRE(s != NULL);
    CHECK_INT_EQ(election_peer_port(s), 0);
    CHECK_STR_EQ(none, "");
    election_peer_follow(s, "a", adv, "3");
    spin(b, 100);
    held(s);
    election_peer_free(a);
    spin(b, 100);
    CHECK_INT_EQ(g.n, 1);
    CHECK_STR_EQ(g.holder, "a");
    CHECK_STR_EQ(g.rv, "3");
    struct election_peer_stats st;
    election_peer_stats(s, &st);
    CHECK_INT_EQ(st.accepted, 0);
    CHECK_INT_EQ(st.proofs, 1);
    election_peer_free(s);
    event_base_free(b);
}

static const char *ident(const char *line, size_t len)
{
    return election_peer_greeting_identity(line, len);
}
#define IDENT(lit) ident(lit, sizeof(lit) - 1)

/* A greeting is bytes from the network: an identity is read only from a
 * well-formed one. Before, "coxswain-peer/1 x y \0a" read as identity ""
 * (not the holder's): garbage on a recheck was a proof of death. */
static void test_greeting_parse(void)
{
    CHECK_STR_EQ(IDENT("coxswain-peer/1 leader 7 pod-a"), "pod-a");
    CHECK_STR_EQ(IDENT("coxswain-peer/1 standby 0 pod b"), "pod b"); /* the rest of the line */
    CHECK(IDENT("coxswain-peer/1 leader 7 a\0b") == NULL);           /* a NUL: garbled */
    CHECK(IDENT("coxswain-peer/1 leader 7 \0a") == NULL);
    CHECK(IDENT("coxswain-peer/1 leader 7 pod-a\r") == NULL); /* CRLF: not ours */
    CHECK(IDENT("coxswain-peer/1 leader 7 ") == NULL);        /* no identity */
    CHECK(IDENT("coxswain-peer/1 king 7 pod-a") == NULL);
    CHECK(IDENT("coxswain-peer/1 leader -7 pod-a") == NULL);
    CHECK(IDENT("coxswain-peer/1 leader  pod-a") == NULL);
    CHECK(IDENT("coxswain-peer/1 leader 123456789012345678901 pod-a") == NULL);
    CHECK(IDENT("coxswain-peer/2 leader 7 pod-a") == NULL);
    CHECK(IDENT("coxswain-peer/1") == NULL);
    char big[ELECTION_IDENTITY_MAX + 40];
    int n = snprintf(big, sizeof(big), "coxswain-peer/1 leader 1 ");
    memset(big + n, 'x', ELECTION_IDENTITY_MAX);
    CHECK(ident(big, (size_t)n + ELECTION_IDENTITY_MAX) == NULL); /* would not fit */
    CHECK(ident(big, (size_t)n + ELECTION_IDENTITY_MAX - 1) != NULL);

    /* the line, in pieces */
    char line[PEER_LINE_MAX];
    size_t len = 0;
    CHECK_INT_EQ(election_peer_line_feed(line, sizeof(line), &len, "coxswain-pe", 11), 0);
    CHECK_INT_EQ(election_peer_line_feed(line, sizeof(line), &len, "er/1 leader 3 a\nxx", 18), 1);
    CHECK_STR_EQ(line, "coxswain-peer/1 leader 3 a");
    CHECK_INT_EQ(len, 26);
    char junk[PEER_LINE_MAX + 10];
    memset(junk, 'j', sizeof(junk));
    len = 0;
    CHECK_INT_EQ(election_peer_line_feed(line, sizeof(line), &len, junk, sizeof(junk)), -1);
    CHECK(len < sizeof(line));
}

static const struct cxt_case cases[] = {
    CXT(test_no_listener_still_follows),
    CXT(test_refused_after_end_is_proof),
    CXT(test_other_identity_after_end_is_proof_same_is_not),
    CXT(test_no_greeting_proves_nothing),
    CXT(test_reset_in_dying_backlog_then_refused_is_proof),
    CXT(test_reset_before_connect_seen_then_refused_is_proof),
    CXT(test_live_holder_closing_new_connections_is_no_proof),
    CXT(test_never_held_is_no_proof),
    CXT(test_bounds),
    CXT(test_parse),
    CXT(test_greeting_parse),
};
CXT_MAIN(cases)
