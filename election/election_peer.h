/*
 * election_peer: the peer liveness channel between replicas (proof of
 * death).
 *
 * Every replica listens on --leader-elect-peer-listen and greets each
 * connection with one line, "coxswain-peer/1 <role> <term> <identity>\n",
 * then keeps it open and says nothing more (bytes sent to it are read and
 * dropped). The leader advertises the endpoint in the lock record
 * (annotation coxswain.dev/peer). A standby holds one connection to the
 * holder's advertised endpoint. When that connection is ended by the
 * peer's kernel (a FIN or an RST: the process exited or was killed, its
 * sockets closed), the standby connects again at once: if that is refused,
 * or answered by a process greeting with another identity, the holder's
 * process is dead, and |on_dead| is called with the holder and the lock
 * record version the standby held when the connection ended. A new
 * connection ended before its greeting (a dying kernel resets what its
 * backlog held when it closes the listener, maybe after the held
 * connection; a live replica over its cap closes at once) is tried again
 * a few times. Anything else - a timeout, an unreachable host, no
 * greeting, the same identity again, every new connection ended - proves
 * nothing: the lease decides, as without the channel.
 *
 * The listener and its connections live as long as the elector: a leader
 * that steps down keeps serving (greeting "standby"); election_peer_free
 * closes them after the elector's last write.
 *
 * Bounds: at most PEER_MAX_CONNS accepted connections (more are closed at
 * once), at most PEER_READ_MAX bytes read per event and dropped, a
 * greeting line of at most PEER_LINE_MAX bytes, connect and greeting each
 * within PEER_TIMEOUT_MS. Endpoints must be numeric (IPv4 or [IPv6]):
 * the elector's thread never waits for DNS.
 *
 * Runs on the elector's event base (its thread), except new/free.
 */
#ifndef ELECTION_PEER_H
#define ELECTION_PEER_H

#include "election_types.h"

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PEER_MAX_CONNS  64
#define PEER_READ_MAX   512
#define PEER_LINE_MAX   (ELECTION_IDENTITY_MAX + 64)
#define PEER_TIMEOUT_MS 1000
/* A recheck connection ended before its greeting is tried again after
 * 10, 20, 40, ... 640 ms: at most 8 connections, ~1.3 s in all. A dying
 * process can take hundreds of milliseconds to close its listener on a
 * loaded machine (or under a sanitizer, which unmaps its shadow memory at
 * exit); 5 connections (~150 ms) once gave up there. Still far below any
 * lease. */
#define PEER_PROBES_MAX 8
#define PEER_REPROBE_MS 10

struct election_peer;

/* The holder's process was proven dead while the lock record was version
 * |rv|. */
typedef void (*election_peer_dead_fn)(void *arg, const char *holder, const char *rv);

struct election_peer_stats {
    uint64_t accepted;  /* connections served */
    uint64_t refused;   /* over PEER_MAX_CONNS */
    uint64_t connects;  /* connections a standby opened */
    uint64_t ended;     /* held connections ended by the peer (FIN / RST) */
    uint64_t proofs;    /* proofs of death delivered */
    uint64_t no_proofs; /* ends that proved nothing (timeout, same identity...) */
};

/* Binds |listen_addr| ("host:port", port 0 picks one) on |base| and serves it.
 * |advertise| (capacity |adv_cap|) is the endpoint to advertise: when its
 * port is 0 (or it is empty and the listen host is concrete) the bound
 * port is filled in. NULL with a message in |err| when the address cannot
 * be bound. |listen_addr| NULL: no listener at all (a replica with no
 * address to advertise); it still follows a holder (port 0). */
struct election_peer *election_peer_new(struct event_base *base, const char *identity,
                                        const char *listen_addr, char *advertise, size_t adv_cap,
                                        election_peer_dead_fn on_dead, void *arg, char *err,
                                        size_t errlen);

/* What the greeting says from now on. */
void election_peer_set_role(struct election_peer *p, bool leader, uint64_t term);

/* The lock record as the elector holds it now: its holder (someone else's,
 * or "" for none or ourselves), the holder's advertised |endpoint| ("" for
 * none) and the record's version |rv|. A different holder or endpoint
 * drops the connection and opens one to the new endpoint. */
void election_peer_follow(struct election_peer *p, const char *holder, const char *endpoint,
                          const char *rv);

/* The bound port. */
int election_peer_port(const struct election_peer *p);

void election_peer_stats(const struct election_peer *p, struct election_peer_stats *out);

/* Closes every connection and the listener. */
void election_peer_free(struct election_peer *p);

/* Splits "host:port" / "[v6]:port" into a numeric address. 0, or -1. */
int election_peer_parse(const char *hostport, void *sockaddr_storage, unsigned *len);

/* The greeting a standby reads, in pieces as they arrive: appends |n|
 * bytes of |buf| to |line| (capacity |cap|, *len bytes so far). Returns 1
 * once the newline arrived (|line| then holds the line, NUL-terminated,
 * without it; bytes after it are ignored), 0 while more is needed, -1
 * when the line does not fit. */
int election_peer_line_feed(char *line, size_t cap, size_t *len, const char *buf, size_t n);

/* The identity a whole greeting line (|len| bytes, from the network) says:
 * "coxswain-peer/1 <leader|standby> <term digits> <identity>", printable
 * bytes only, the identity non-empty and under ELECTION_IDENTITY_MAX.
 * Returns a pointer into |line| (its end is the line's end), or NULL when
 * garbled: a garbled greeting proves nothing. */
const char *election_peer_greeting_identity(const char *line, size_t len);

#endif
