#include "election_peer.h"

#include "cx_log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LOG "election-peer"

struct served {
    int fd;
    struct event *ev;
    struct election_peer *p;
    struct served *next;
};

enum cstate {
    C_IDLE = 0,    /* nobody to follow, or waiting to retry */
    C_CONNECT = 1, /* first connection: connecting */
    C_GREET = 2,   /* first connection: waiting for the greeting */
    C_HELD = 3,    /* connected to the holder, its greeting seen */
    C_RECHECK = 4, /* the held one ended: connecting again */
    C_REGREET = 5, /* ...and waiting for that greeting */
    C_DONE = 6,    /* proven dead, or proved nothing: until the record changes */
    C_REPROBE = 7, /* a recheck connection ended before its greeting: probing again soon */
};

struct election_peer {
    struct event_base *base;
    char identity[ELECTION_IDENTITY_MAX];
    election_peer_dead_fn on_dead;
    void *arg;

    /* Serving. */
    int lfd;
    int port;
    struct event *lev;
    struct served *served;
    unsigned nserved;
    bool leader;
    uint64_t term;

    /* Following. */
    char holder[ELECTION_IDENTITY_MAX];
    char endpoint[ELECTION_PEER_MAX];
    char rv[ELECTION_RV_MAX];       /* the record version now */
    char ended_rv[ELECTION_RV_MAX]; /* when the held connection ended */
    enum cstate st;
    int cfd;
    struct event *cev; /* the connection's I/O, with the state's timeout */
    struct event *retry;
    char line[PEER_LINE_MAX];
    size_t linelen;
    int probes; /* recheck connections opened since the held one ended */

    struct election_peer_stats stats;
};

/* ---- addresses ---------------------------------------------------------- */

int election_peer_parse(const char *hp, void *ss_, unsigned *len)
{
    struct sockaddr_storage *ss = ss_;
    char host[ELECTION_PEER_MAX];
    const char *colon = strrchr(hp, ':');
    if (!colon || colon == hp || !colon[1])
        return -1;
    size_t hl = (size_t)(colon - hp);
    if (hp[0] == '[') {
        if (hl < 3 || hp[hl - 1] != ']')
            return -1;
        hp++;
        hl -= 2;
    }
    if (hl >= sizeof(host))
        return -1;
    memcpy(host, hp, hl);
    host[hl] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535)
        return -1;
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        *len = sizeof(*s4);
        return 0;
    }
    if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        *len = sizeof(*s6);
        return 0;
    }
    return -1;
}

/* ---- serving ------------------------------------------------------------ */

static void served_close(struct election_peer *p, struct served *s)
{
    for (struct served **pp = &p->served; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    event_free(s->ev);
    close(s->fd);
    free(s);
    p->nserved--;
}

static void on_served(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct served *s = arg;
    char buf[PEER_READ_MAX];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR)))
        return; /* nothing is expected from a standby: dropped */
    served_close(s->p, s);
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
    (void)what;
    struct election_peer *p = arg;
    for (int k = 0; k < 16; k++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or a transient error: the listener stays */
        if (p->nserved >= PEER_MAX_CONNS) {
            p->stats.refused++;
            close(fd);
            continue;
        }
        char g[PEER_LINE_MAX];
        int gl =
            snprintf(g, sizeof(g), "coxswain-peer/1 %s %llu %s\n", p->leader ? "leader" : "standby",
                     (unsigned long long)p->term, p->identity);
        struct served *s = calloc(1, sizeof(*s));
        if (!s || gl <= 0 || (size_t)gl >= sizeof(g) ||
            send(fd, g, (size_t)gl, MSG_NOSIGNAL) != gl) {
            free(s);
            close(fd);
            continue;
        }
        s->fd = fd;
        s->p = p;
        s->ev = event_new(p->base, fd, EV_READ | EV_PERSIST, on_served, s);
        if (!s->ev || event_add(s->ev, NULL) != 0) {
            if (s->ev)
                event_free(s->ev);
            free(s);
            close(fd);
            continue;
        }
        s->next = p->served;
        p->served = s;
        p->nserved++;
        p->stats.accepted++;
    }
}

/* ---- following ---------------------------------------------------------- */

static void c_close(struct election_peer *p)
{
    if (p->cev) {
        event_free(p->cev);
        p->cev = NULL;
    }
    if (p->cfd >= 0) {
        close(p->cfd);
        p->cfd = -1;
    }
    p->linelen = 0;
}

static void c_io(evutil_socket_t fd, short what, void *arg);

static void c_arm(struct election_peer *p, short what, int timeout_ms)
{
    if (p->cev)
        event_free(p->cev);
    p->cev = event_new(p->base, p->cfd, what, c_io, p);
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    if (!p->cev || event_add(p->cev, timeout_ms > 0 ? &tv : NULL) != 0)
        cx_warn(LOG, "cannot watch the peer connection");
}

static void retry_later(struct election_peer *p)
{
    c_close(p);
    p->st = C_IDLE;
    struct timeval tv = {PEER_TIMEOUT_MS / 1000, (PEER_TIMEOUT_MS % 1000) * 1000};
    evtimer_add(p->retry, &tv);
}

/* The recheck after the held connection ended proved nothing. */
static void no_proof(struct election_peer *p, const char *why)
{
    p->stats.no_proofs++;
    cx_info(LOG, "connection to %s (%s) ended, but %s: its lease decides", p->endpoint, p->holder,
            why);
    c_close(p);
    p->st = C_DONE;
}

/* A recheck connection was ended by the other side before any greeting.
 * A dying process's kernel does this: it completes the handshake of a
 * connection into the listener's backlog, then resets it when it closes
 * the listener, which can come after the held connection's FIN (sockets
 * are closed in descriptor order). A live replica does it only when over
 * its connection cap. Neither proves anything: probe again, a little
 * later, at most PEER_PROBES_MAX times (refused then is the proof). */
static void reprobe(struct election_peer *p)
{
    c_close(p);
    if (p->probes >= PEER_PROBES_MAX) {
        no_proof(p, "every new connection ended before its greeting");
        return;
    }
    p->st = C_REPROBE;
    int ms = PEER_REPROBE_MS << (p->probes - 1); /* 10, 20, 40, 80 ms */
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(p->retry, &tv);
}

static void proof(struct election_peer *p, const char *why)
{
    p->stats.proofs++;
    cx_info(LOG, "%s is dead: its connection at %s was closed by its host and %s", p->holder,
            p->endpoint, why);
    c_close(p);
    p->st = C_DONE;
    p->on_dead(p->arg, p->holder, p->ended_rv);
}

static void c_connect(struct election_peer *p, enum cstate st)
{
    c_close(p);
    struct sockaddr_storage ss;
    unsigned len = 0;
    if (election_peer_parse(p->endpoint, &ss, &len) != 0) {
        p->st = C_DONE; /* not numeric, or garbled: nothing to follow */
        return;
    }
    p->cfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p->cfd < 0) {
        if (st == C_RECHECK)
            no_proof(p, "no socket");
        else
            retry_later(p);
        return;
    }
    p->stats.connects++;
    if (st == C_RECHECK)
        p->probes++;
    p->st = st;
    if (connect(p->cfd, (struct sockaddr *)&ss, len) == 0 || errno == EINPROGRESS) {
        c_arm(p, EV_WRITE, PEER_TIMEOUT_MS);
        return;
    }
    int e = errno;
    if (st == C_RECHECK && e == ECONNREFUSED) {
        proof(p, "a new connection was refused");
        return;
    }
    if (st == C_RECHECK)
        no_proof(p, strerror(e));
    else
        retry_later(p);
}

int election_peer_line_feed(char *line, size_t cap, size_t *len, const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            line[*len] = '\0';
            return 1;
        }
        if (*len + 1 >= cap)
            return -1;
        line[(*len)++] = buf[i];
    }
    return 0;
}

const char *election_peer_greeting_identity(const char *line, size_t len)
{
    static const char magic[] = "coxswain-peer/1 ";
    const size_t ml = sizeof(magic) - 1;
    if (len < ml || memcmp(line, magic, ml) != 0)
        return NULL;
    /* Printable bytes only: a NUL would cut the identity short, and a cut
     * or garbled identity must never read as another process's. */
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
            return NULL;
    const char *s = line + ml, *end = line + len;
    const char *role_end = memchr(s, ' ', (size_t)(end - s));
    if (!role_end)
        return NULL;
    size_t rl = (size_t)(role_end - s);
    if (!((rl == 6 && memcmp(s, "leader", 6) == 0) || (rl == 7 && memcmp(s, "standby", 7) == 0)))
        return NULL;
    const char *t = role_end + 1;
    const char *term_end = memchr(t, ' ', (size_t)(end - t));
    if (!term_end || term_end == t || term_end - t > 20)
        return NULL;
    for (const char *q = t; q < term_end; q++)
        if (*q < '0' || *q > '9')
            return NULL;
    const char *id = term_end + 1;
    if (id >= end || (size_t)(end - id) >= ELECTION_IDENTITY_MAX)
        return NULL;
    return id;
}

static void c_io(evutil_socket_t fd, short what, void *arg)
{
    struct election_peer *p = arg;
    bool recheck = p->st == C_RECHECK || p->st == C_REGREET;
    if (what & EV_TIMEOUT) {
        if (recheck)
            no_proof(p, p->st == C_RECHECK ? "connecting again timed out"
                                           : "the new connection sent no greeting");
        else
            retry_later(p);
        return;
    }
    if (p->st == C_CONNECT || p->st == C_RECHECK) {
        int e = 0;
        socklen_t el = sizeof(e);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) != 0)
            e = errno;
        if (e == 0) {
            p->st = recheck ? C_REGREET : C_GREET;
            c_arm(p, EV_READ | EV_PERSIST, PEER_TIMEOUT_MS);
        } else if (recheck && e == ECONNREFUSED) {
            proof(p, "a new connection was refused");
        } else if (recheck && e == ECONNRESET) {
            reprobe(p); /* reset in a dying backlog before we saw it connect */
        } else if (recheck) {
            no_proof(p, strerror(e));
        } else {
            retry_later(p);
        }
        return;
    }
    char buf[PEER_READ_MAX];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (p->st == C_HELD) {
        if (n > 0)
            return; /* nothing more is expected: dropped */
        /* Ended by the peer: a FIN (0) or an RST. A timeout or an
         * unreachable host proves nothing. */
        int e = n < 0 ? errno : 0;
        p->stats.ended++;
        if (n < 0 && e != ECONNRESET) {
            no_proof(p, strerror(e));
            return;
        }
        snprintf(p->ended_rv, sizeof(p->ended_rv), "%s", p->rv);
        p->probes = 0;
        c_connect(p, C_RECHECK);
        return;
    }
    /* C_GREET / C_REGREET: one line. */
    if (n <= 0) {
        if (recheck)
            reprobe(p);
        else
            retry_later(p);
        return;
    }
    int got = election_peer_line_feed(p->line, sizeof(p->line), &p->linelen, buf, (size_t)n);
    if (got < 0) {
        if (recheck)
            no_proof(p, "the new connection's greeting is too long");
        else
            retry_later(p);
        return;
    }
    if (got == 1) {
        const char *who = election_peer_greeting_identity(p->line, p->linelen);
        if (!who) {
            if (recheck)
                no_proof(p, "the new connection's greeting is garbled");
            else
                retry_later(p);
            return;
        }
        if (strcmp(who, p->holder) != 0) {
            if (recheck) {
                char why[ELECTION_IDENTITY_MAX + 64];
                snprintf(why, sizeof(why), "a new connection reached %s", who);
                proof(p, why);
            } else {
                retry_later(p); /* not its endpoint (yet): no proof without an end */
            }
            return;
        }
        p->linelen = 0;
        if (recheck)
            cx_info(LOG, "%s at %s answered again: alive", p->holder, p->endpoint);
        p->st = C_HELD;
        c_arm(p, EV_READ | EV_PERSIST, 0);
        return;
    }
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct election_peer *p = arg;
    if (p->st == C_REPROBE)
        c_connect(p, C_RECHECK);
    else if (p->st == C_IDLE && p->holder[0] && p->endpoint[0])
        c_connect(p, C_CONNECT);
}

void election_peer_follow(struct election_peer *p, const char *holder, const char *endpoint,
                          const char *rv)
{
    bool same = strcmp(holder, p->holder) == 0 && strcmp(endpoint, p->endpoint) == 0;
    bool new_rv = strcmp(rv, p->rv) != 0;
    snprintf(p->rv, sizeof(p->rv), "%s", rv);
    if (same) {
        /* A proof is about one version: a new one (a renewal after all)
         * gets a fresh connection; so does a standby that proved nothing. */
        if (p->st == C_DONE && new_rv && holder[0] && endpoint[0])
            c_connect(p, C_CONNECT);
        return;
    }
    c_close(p);
    evtimer_del(p->retry);
    snprintf(p->holder, sizeof(p->holder), "%s", holder);
    snprintf(p->endpoint, sizeof(p->endpoint), "%s", endpoint);
    p->st = C_IDLE;
    if (holder[0] && endpoint[0])
        c_connect(p, C_CONNECT);
}

/* ---- lifecycle ---------------------------------------------------------- */

struct election_peer *election_peer_new(struct event_base *base, const char *identity,
                                        const char *listen_addr, char *advertise, size_t adv_cap,
                                        election_peer_dead_fn on_dead, void *arg, char *err,
                                        size_t errlen)
{
    struct sockaddr_storage ss;
    unsigned len = 0;
    if (listen_addr && election_peer_parse(listen_addr, &ss, &len) != 0) {
        snprintf(err, errlen, "--leader-elect-peer-listen \"%s\": not a numeric host:port",
                 listen_addr);
        return NULL;
    }
    struct election_peer *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "no memory");
        return NULL;
    }
    p->base = base;
    p->cfd = -1;
    p->on_dead = on_dead;
    p->arg = arg;
    snprintf(p->identity, sizeof(p->identity), "%s", identity);
    p->lfd = -1;
    p->retry = evtimer_new(base, on_retry, p);
    if (!p->retry) {
        snprintf(err, errlen, "no memory");
        goto fail;
    }
    if (!listen_addr)
        return p; /* following only: nothing to serve */
    p->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (p->lfd < 0 || setsockopt(p->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(p->lfd, (struct sockaddr *)&ss, len) != 0 || listen(p->lfd, 64) != 0) {
        snprintf(err, errlen, "--leader-elect-peer-listen %s: %s", listen_addr, strerror(errno));
        goto fail;
    }
    struct sockaddr_storage bound;
    socklen_t bl = sizeof(bound);
    if (getsockname(p->lfd, (struct sockaddr *)&bound, &bl) != 0) {
        snprintf(err, errlen, "--leader-elect-peer-listen %s: %s", listen_addr, strerror(errno));
        goto fail;
    }
    p->port = ntohs(bound.ss_family == AF_INET ? ((struct sockaddr_in *)&bound)->sin_port
                                               : ((struct sockaddr_in6 *)&bound)->sin6_port);
    /* The advertised endpoint's port 0 is the bound one. */
    char *colon = advertise ? strrchr(advertise, ':') : NULL;
    if (colon && strcmp(colon, ":0") == 0)
        snprintf(colon, adv_cap - (size_t)(colon - advertise), ":%d", p->port);
    p->lev = event_new(base, p->lfd, EV_READ | EV_PERSIST, on_accept, p);
    if (!p->lev || event_add(p->lev, NULL) != 0) {
        snprintf(err, errlen, "cannot serve the peer listener");
        goto fail;
    }
    return p;
fail:
    election_peer_free(p);
    return NULL;
}

void election_peer_set_role(struct election_peer *p, bool leader, uint64_t term)
{
    p->leader = leader;
    p->term = term;
}

int election_peer_port(const struct election_peer *p)
{
    return p->port;
}

void election_peer_stats(const struct election_peer *p, struct election_peer_stats *out)
{
    *out = p->stats;
}

void election_peer_free(struct election_peer *p)
{
    if (!p)
        return;
    c_close(p);
    if (p->retry)
        event_free(p->retry);
    /* The listener first: a standby whose held connection ends is refused
     * from then on, never queued in a backlog about to be reset. */
    if (p->lev)
        event_free(p->lev);
    if (p->lfd >= 0)
        close(p->lfd);
    while (p->served)
        served_close(p, p->served);
    free(p);
}
