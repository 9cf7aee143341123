/*
 * xds_server_impl: the xDS server's private structures, shared by its files
 * and by nothing else: xds_server.c (configuration, metrics, public API),
 * xds_server_push.c (responses, wake-ups, NACK accounting),
 * xds_server_auth.c (authentication and authorization of streams) and
 * xds_server_stream.c (the gRPC method callbacks). Main loop only.
 */
#ifndef XDS_SERVER_IMPL_H
#define XDS_SERVER_IMPL_H

#include "cx_metrics.h"
#include "cx_ratelimit.h"
#include "xds_ads.h"
#include "xds_auth.h"
#include "xds_cache.h"
#include "xds_delta.h"
#include "xds_h2.h"
#include "xds_server.h"

/* Encoded resource lists (the Any-wrapped "resources" field) kept for
 * reuse: a push usually sends the same list to every stream of a group, so
 * it is encoded once and referenced by every stream's output; only the head
 * (version) and tail (type_url, nonce) are per stream. */
#define MEMO_SLOTS 64

struct blob {
    int refs; /* main loop only */
    size_t len;
    uint8_t data[];
};

struct memo_entry {
    uint64_t hash;
    uint64_t last_use;
    enum xds_type type;
    size_t n;
    struct xds_resource **items; /* referenced; NULL: empty slot */
    struct blob *blob;           /* referenced */
};

struct sstream {
    struct xds_cache_watch watch; /* first: container_of by cast */
    struct xds_server *srv;
    struct xds_h2_stream *h2;
    uint8_t delta; /* DeltaAggregatedResources: |dl|, else |ads| */
    union {
        struct xds_ads_stream ads;
        struct xds_delta_stream dl;
    };
    uint8_t registered;
    uint8_t auth_pending; /* a TokenReview runs for this stream's token */
    uint8_t no_secrets;   /* served as a client without credentials: no Secrets */
    uint8_t nack_active[XDS_TYPE_COUNT];
    struct cx_ratelimit nack_rl; /* NACKs recorded (logged, reported) */
    char *id;                    /* who the proxy is: method, namespace and name packed (NULL:
                                  * nobody; xds_srv_identity unpacks it) */
    struct xds_auth_waiter waiter;
    char *refusal; /* the grpc-message of an authorization refusal (owned) */
};

static inline const struct xds_node *ss_node(const struct sstream *ss)
{
    return ss->delta ? &ss->dl.node : &ss->ads.node;
}

static inline const char *ss_group(const struct sstream *ss)
{
    return ss_node(ss)->group;
}

static inline const char *ss_node_id(const struct sstream *ss)
{
    return ss_node(ss)->id;
}

static inline const char *ss_user_agent(const struct sstream *ss)
{
    return ss_node(ss)->user_agent;
}

static inline int ss_have_node(const struct sstream *ss)
{
    return ss_node(ss)->have;
}

/* Why a stream was refused by authentication
 * (coxswain_xds_auth_refused_total{reason}). */
enum auth_reason {
    AUTH_NO_CREDENTIALS = 0, /* none presented, and the Gateway does not opt in */
    AUTH_BAD_TOKEN = 1,      /* TokenReview said no, or not a ServiceAccount, or malformed */
    AUTH_UNAVAILABLE = 2,    /* TokenReview could not answer */
    AUTH_BAD_CERT = 3,       /* a certificate without a SPIFFE ServiceAccount ID */
    AUTH_DENIED = 4,         /* authenticated, not allowed for the Gateway */
    AUTH_COUNT = 5,
};
extern const char *const xds_srv_auth_reason_names[AUTH_COUNT];
extern const char *const xds_srv_auth_method_names[3];

/* Why a stream was ended by us (coxswain_xds_refused_total{reason}). */
enum refuse_reason {
    REFUSE_INVALID = 0, /* not a DiscoveryRequest */
    REFUSE_BOUNDS = 1,  /* nesting / element count over the decoding bounds */
    REFUSE_NAMES = 2,   /* too many resource names */
    REFUSE_GROUPS = 3,  /* too many node groups */
    REFUSE_BUDGET = 4,  /* the memory budget is spent */
    REFUSE_COUNT = 5,
};
extern const char *const xds_srv_refuse_names[REFUSE_COUNT];

/* Series looked up once (the registry is process-wide; several servers in
 * one process, as in tests, add up). */
struct xds_metrics {
    struct cx_series *connections, *streams, *streams_total, *rejected, *snapshots;
    struct cx_series *pushes[XDS_TYPE_COUNT], *push_bytes[XDS_TYPE_COUNT];
    struct cx_series *push_resources[XDS_TYPE_COUNT], *latency[XDS_TYPE_COUNT];
    struct cx_series *requests[XDS_TYPE_COUNT + 1][5]; /* [type or unknown][verdict] */
    struct cx_metric *nacks;                           /* {group,type} */
    struct cx_series *refused[REFUSE_COUNT];
};

struct xds_server {
    struct event_base *base;
    struct xds_h2_server *h2;
    struct xds_cache *cache;
    char *default_group;
    char *identifier;
    xds_nack_cb nack_cb;
    void *nack_user;
    xds_request_tap tap;
    void *tap_user;
    int64_t snapshot_ns;
    struct xds_server_stats stats;
    uint64_t latency[XDS_LATENCY_BUCKETS];
    struct xds_h2_method methods[2]; /* SotW, delta */
    struct xds_delta_pool *delta_sets;
    struct xds_metrics m;
    uint64_t m_rejected_seen;
    struct memo_entry memo[MEMO_SLOTS];
    uint64_t memo_clock;
    struct xds_names_pool *names;
    struct xds_budget budget; /* partly received messages (xds_h2) + name lists (pool) */
    double nack_qps;
    struct cx_series *nacks_limited, *budget_used, *groups_gauge, *idle_closed, *accept_backoffs;
    uint64_t idle_closed_seen, accept_backoffs_seen, budget_refused_seen;
    /* authentication (xds_auth.h) */
    enum xds_auth_mode auth;
    char *trust_domain;
    struct xds_tokens *tokens; /* NULL: no reviewer */
    struct cx_ratelimit auth_log_rl;
    struct cx_series *auth_refused[AUTH_COUNT], *auth_streams[3], *token_reviews[3];
    struct cx_series *token_cache_entries, *token_cache_hits;
    uint64_t token_reviews_seen[3], token_hits_seen;
};

extern const char *const xds_srv_verdict_names[5];

/* NULL-safe: a registry that refused a family (a programming error caught
 * by the tests) must not crash the server. */
static inline void m_add(struct cx_series *s, double v)
{
    if (s)
        cx_series_add(s, v);
}

static inline void m_set(struct cx_series *s, double v)
{
    if (s)
        cx_series_set(s, v);
}

/* xds_server.c */
void xds_srv_gauges(struct xds_server *s);

/* xds_server_push.c */
void xds_srv_memo_clear(struct memo_entry *e);
/* Sends whatever the stream's state says is due (unless congested). */
void xds_srv_pump(struct sstream *ss, int64_t origin_ns);
/* The cache's wake-up: authorization checked again, then pumped. */
void xds_srv_wake(void *user, struct xds_cache_watch *w);
void xds_srv_note_nack(struct sstream *ss, const struct xds_ads_event *ev);
void xds_srv_clear_nack(struct sstream *ss, enum xds_type t);
void xds_srv_note_latency(struct xds_server *s, int type, int64_t origin_ns);

/* xds_server_auth.c */
/* The stream's identity (method NONE: nobody), unpacked into |out|. */
const struct xds_identity *xds_srv_identity(const struct sstream *ss, struct xds_identity *out);
void xds_srv_auth_refused(struct xds_server *s, enum auth_reason r, const char *peer,
                          const char *msg);
/* May the stream's identity receive its node group? 0, or a gRPC status
 * with the refusal in |*errmsg| (owned by the stream). */
int xds_srv_authorize(struct sstream *ss, const char **errmsg);
/* Authorized, the stream joins its group. 0 or a gRPC status. */
int xds_srv_admit(struct sstream *ss, const char **errmsg);
/* A new call's credentials: 0 (known, or a review runs) or a gRPC status
 * with the message in |msg|. */
int xds_srv_authenticate(struct sstream *ss, struct xds_h2_stream *st, char *msg, size_t cap,
                         enum auth_reason *why);

/* xds_server_stream.c */
void *xds_srv_ads_open(void *user, struct xds_h2_stream *st);
void *xds_srv_delta_open(void *user, struct xds_h2_stream *st);
int xds_srv_message(void *ctx, const uint8_t *msg, size_t len, const char **errmsg);
void xds_srv_half_close(void *ctx);
void xds_srv_writable(void *ctx);
void xds_srv_close(void *ctx);

#endif
