/*
 * election_types: structs, enums and constants of the leader elector.
 *
 * The elector has an I/O-free decision core (election_core.h) fed with
 * observations of the lock record and results of requests, and an I/O side
 * (election.h) that runs on its own thread. The lock record is the same for
 * both backends (Lease, ConfigMap annotation); election_record.h encodes and
 * decodes it. The write guard (election_guard.h) is the one piece other
 * threads touch: it is made of atomics.
 *
 * Includes only other *_types.h and the C library.
 */
#ifndef ELECTION_TYPES_H
#define ELECTION_TYPES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Caps on strings taken from the lock object. A holderIdentity longer than
 * ELECTION_IDENTITY_MAX - 1 is kept truncated and flagged: it never equals
 * our own identity, which always fits. */
#define ELECTION_IDENTITY_MAX 256
#define ELECTION_RV_MAX       64
#define ELECTION_NAME_MAX     254 /* DNS subdomain (253) + NUL */
#define ELECTION_NS_MAX       64  /* DNS label (63) + NUL */
#define ELECTION_STRATEGY_MAX 64
#define ELECTION_PEER_MAX     128 /* "host:port" of a peer endpoint */

/* Defaults (client-go and kube components). */
#define ELECTION_DEFAULT_LEASE_NS (INT64_C(15) * 1000000000)
#define ELECTION_DEFAULT_RENEW_NS (INT64_C(10) * 1000000000)
#define ELECTION_DEFAULT_RETRY_NS (INT64_C(2) * 1000000000)

/* preferredHolder meaning "any standby" (`coxswain handover --any`): the
 * leader hands over; any replica but the one that released may take the
 * released lock at once. Never a valid identity. */
#define ELECTION_PREFERRED_ANY "*"

/* The holder's peer endpoint (election_peer.h), on either lock kind. */
#define ELECTION_PEER_ANNOTATION "coxswain.dev/peer"

/* The ConfigMap lock keeps the record in this annotation. */
#define ELECTION_CONFIGMAP_ANNOTATION "control-plane.alpha.kubernetes.io/leader"

enum election_lock_kind {
    ELECTION_LOCK_LEASES = 0,
    ELECTION_LOCK_CONFIGMAPS = 1,
};

struct election_config {
    bool enabled; /* --leader-elect */
    int64_t lease_ns;
    int64_t renew_ns;
    int64_t retry_ns;
    /* The guard refuses writes when less than this much safe time remains.
     * 0 picks renew_ns / 10. */
    int64_t guard_margin_ns;
    /* A gap between two inputs larger than this (or a negative one) is a
     * clock jump. 0 picks lease_ns. The core asks to be woken at least every
     * retry_ns, so a normal gap is far smaller. */
    int64_t jump_ns;
    enum election_lock_kind lock;
    char name[ELECTION_NAME_MAX];
    char ns[ELECTION_NS_MAX];
    char identity[ELECTION_IDENTITY_MAX];
    uint64_t seed; /* jitter PRNG seed; 0 means a fixed default */
    /* The peer liveness channel (election_peer.h): on, where to listen,
     * and the endpoint the leader advertises in the lock record ("" while
     * unknown: set once the listener is bound). */
    bool peer;
    char peer_listen[ELECTION_PEER_MAX];
    char peer_advertise[ELECTION_PEER_MAX];
};

/* The leader election record, as both lock kinds carry it. */
struct election_record {
    char holder[ELECTION_IDENTITY_MAX]; /* "" = nobody (released) */
    bool holder_overflow;               /* holder was longer than the cap */
    int32_t lease_duration_s;           /* 0 = absent or invalid */
    int64_t acquire_wall_ns;            /* 0 = absent or unparseable */
    int64_t renew_wall_ns;              /* 0 = absent or unparseable */
    int32_t transitions;
    /* Lease only (coordinated leader election, KEP-4355); copied through. */
    char preferred_holder[ELECTION_IDENTITY_MAX];
    char strategy[ELECTION_STRATEGY_MAX];
    /* The holder's peer endpoint (annotation coxswain.dev/peer), "" if none. */
    char peer[ELECTION_PEER_MAX];
};

/* What a GET, a watch event or a write response told us about the lock. */
struct election_observation {
    bool found;                 /* false: the object does not exist */
    char rv[ELECTION_RV_MAX];   /* metadata.resourceVersion ("" if unknown) */
    uint64_t fingerprint;       /* hash of the raw record bytes */
    struct election_record rec; /* all-empty when the object has no record */
};

enum election_role {
    ELECTION_STANDBY = 0,
    ELECTION_LEADER = 1,
    ELECTION_STOPPED = 2, /* shut down; no more actions */
};

enum election_req_kind {
    ELECTION_REQ_GET = 1,
    ELECTION_REQ_CREATE = 2,
    ELECTION_REQ_UPDATE = 3, /* PUT with metadata.resourceVersion = rv */
};

/* Why the core sends a request (logs, metrics). */
enum election_purpose {
    ELECTION_FOR_OBSERVE = 1, /* initial GET, refresh after a conflict or jump */
    ELECTION_FOR_POLL = 2,    /* GET while the watch is broken */
    ELECTION_FOR_ACQUIRE = 3, /* CREATE or UPDATE to take the lock */
    ELECTION_FOR_RENEW = 4,   /* UPDATE by the leader */
    ELECTION_FOR_RELEASE = 5, /* GET or UPDATE to release (shutdown, handover) */
};

/* Outcome of a request, as the I/O side reports it. */
enum election_outcome {
    ELECTION_OK = 0,
    ELECTION_NOT_FOUND = 1, /* 404 */
    ELECTION_CONFLICT = 2,  /* 409: stale resourceVersion, or AlreadyExists */
    ELECTION_FAILED = 3,    /* anything else: 5xx, 429, 403, connection error */
    ELECTION_TIMEOUT = 4,   /* no answer within the action's timeout */
};

/* What kind of failure a request met, as the API answered it (logs,
 * metrics, backoff). The decision core sees only election_outcome. */
enum election_err_class {
    ELECTION_ERR_NONE = 0,
    ELECTION_ERR_NOT_FOUND = 1,    /* 404 (object, or its namespace) */
    ELECTION_ERR_CONFLICT = 2,     /* 409 Conflict: stale resourceVersion */
    ELECTION_ERR_EXISTS = 3,       /* 409 AlreadyExists */
    ELECTION_ERR_EXPIRED = 4,      /* 410 */
    ELECTION_ERR_BAD_REQUEST = 5,  /* 400, 405, 415 */
    ELECTION_ERR_UNAUTHORIZED = 6, /* 401 */
    ELECTION_ERR_FORBIDDEN = 7,    /* 403 */
    ELECTION_ERR_INVALID = 8,      /* 422 */
    ELECTION_ERR_THROTTLED = 9,    /* 429 */
    ELECTION_ERR_SERVER = 10,      /* 5xx */
    ELECTION_ERR_TIMEOUT = 11,     /* no answer in time (ours, or a stalled watch) */
    ELECTION_ERR_TRANSPORT = 12,   /* no HTTP answer: refused, reset, TLS */
    ELECTION_ERR_DECODE = 13,      /* an answer that could not be read */
    ELECTION_ERR_CANCELLED = 14,
    ELECTION_ERR_OTHER = 15,
};
#define ELECTION_ERR_COUNT 16

/* How a term began: what made the lock ours. */
enum election_takeover {
    ELECTION_TAKE_CREATED = 0,  /* the lock did not exist */
    ELECTION_TAKE_RELEASED = 1, /* its holder had released it */
    ELECTION_TAKE_EXPIRED = 2,  /* the holder's lease ran out on our clock */
    ELECTION_TAKE_DEAD = 3,     /* the holder's process was proven dead (peer channel) */
    ELECTION_TAKE_OWN = 4,      /* it already named us (a restart, a late renewal) */
};
#define ELECTION_TAKE_COUNT 5

enum election_stop_reason {
    ELECTION_STOP_NONE = 0,
    ELECTION_STOP_DEADLINE = 1,   /* renew deadline passed without success */
    ELECTION_STOP_LOST = 2,       /* the record names another holder */
    ELECTION_STOP_DELETED = 3,    /* the lock object was deleted */
    ELECTION_STOP_CLOCK_JUMP = 4, /* monotonic time jumped */
    ELECTION_STOP_HANDOVER = 5,   /* preferredHolder names someone else */
    ELECTION_STOP_SHUTDOWN = 6,   /* election_core_shutdown() */
};

enum election_action_kind {
    ELECTION_ACT_NONE = 0,
    ELECTION_ACT_SEND = 1,            /* perform request req_id */
    ELECTION_ACT_CANCEL = 2,          /* abandon request req_id; report nothing */
    ELECTION_ACT_STARTED_LEADING = 3, /* term */
    ELECTION_ACT_STOPPED_LEADING = 4, /* term, reason */
    ELECTION_ACT_NEW_LEADER = 5,      /* leader ("" = nobody holds the lock) */
    ELECTION_ACT_DONE = 6,            /* shutdown finished; released says how */
};

struct election_action {
    enum election_action_kind kind;
    /* SEND / CANCEL */
    uint64_t req_id;
    enum election_req_kind req;
    enum election_purpose purpose;
    int64_t timeout_ns;         /* the request must be abandoned after this */
    char rv[ELECTION_RV_MAX];   /* UPDATE: the precondition */
    struct election_record rec; /* CREATE / UPDATE: what to write */
    /* STARTED_LEADING / STOPPED_LEADING */
    uint64_t term;
    enum election_stop_reason reason;
    enum election_takeover took; /* STARTED_LEADING: how */
    /* NEW_LEADER */
    char leader[ELECTION_IDENTITY_MAX];
    /* DONE */
    bool released;
};

/* Counters kept by the core (read on the elector thread). */
struct election_core_stats {
    uint64_t requests;     /* SEND actions */
    uint64_t renew_ok;     /* successful renewals (not acquisitions) */
    uint64_t renew_failed; /* renewals that failed, conflicted or timed out */
    uint64_t acquisitions; /* terms started */
    uint64_t conflicts;    /* 409 answers */
    uint64_t clock_jumps;
    uint64_t stale_results; /* results of cancelled or unknown requests */
    uint64_t proofs;        /* proofs of death accepted */
    uint64_t slowpath;      /* renewals that needed a GET first (client-go's slow path) */
};

/* The write guard, shared with writer threads. deadline_ns is the time
 * (election_clock_ns(): CLOCK_BOOTTIME) until which writes are safe, 0 when
 * we are not the leader. One atomic word, so a reader can never see
 * "leader" with a stale deadline. */
struct election_guard {
    _Atomic int64_t deadline_ns;
    _Atomic uint64_t term;           /* current or last term */
    _Atomic bool leading;            /* what the elector believes */
    _Atomic int64_t last_renew_mono; /* send time of the last good renewal */
    _Atomic int64_t last_renew_wall; /* wall clock of the same (metrics) */
    _Atomic uint64_t allowed;        /* writes allowed */
    _Atomic uint64_t refused;        /* writes refused */
    _Atomic int inflight;            /* writes entered and not yet ended */
    _Atomic int64_t drain_until;     /* the deadline the last step-down cleared */
    int64_t margin_ns;               /* set once before use */
};

#endif
