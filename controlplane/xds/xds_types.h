/*
 * xds_types: structs, enums and caps of the xDS server (gRPC ADS, state of
 * the world, v3) — the I/O-free framing and stream state machine, the
 * snapshot cache and the server's public configuration.
 *
 * Structs and constants only; functions are in xds_frame.h, xds_ads.h,
 * xds_h2.h and xds_server.h.
 */
#ifndef XDS_TYPES_H
#define XDS_TYPES_H

#include "xlate_snapshot_types.h"

#include <stddef.h>
#include <stdint.h>

/* ---- caps on what a peer can make us hold --------------------------------- */

/* Largest gRPC message we accept (a DiscoveryRequest). */
#define XDS_MAX_MESSAGE_DEFAULT ((size_t)4 << 20)
/* Subscribed names per stream and type (xds_server_stream.c's refusal
 * message names the number). */
#define XDS_ADS_MAX_NAMES 100000
/* Bytes of a NACK's error_detail.message we keep (the rest is cut). */
#define XDS_NACK_MSG_MAX 1024
/* Bytes of node id / cluster / group name we keep. */
#define XDS_NODE_STR_MAX 256
/* A nonce is a per-stream decimal counter. */
#define XDS_NONCE_MAX 24

/* Default of the server's memory budget for what peers make it hold:
 * partly received messages and subscription name lists, all streams and
 * connections together (one connection may take a quarter of it). */
#define XDS_MEMORY_BUDGET_DEFAULT ((size_t)64 << 20)

/* A memory budget: bytes charged against a cap. Main loop only. */
struct xds_budget {
    size_t max; /* 0: unlimited */
    size_t used;
    uint64_t refused; /* charges refused because the budget was spent */
};

/* gRPC status codes we send. */
enum xds_grpc_status {
    XDS_GRPC_OK = 0,
    XDS_GRPC_CANCELLED = 1,
    XDS_GRPC_UNKNOWN = 2,
    XDS_GRPC_INVALID_ARGUMENT = 3,
    XDS_GRPC_PERMISSION_DENIED = 7,
    XDS_GRPC_RESOURCE_EXHAUSTED = 8,
    XDS_GRPC_UNIMPLEMENTED = 12,
    XDS_GRPC_INTERNAL = 13,
    XDS_GRPC_UNAVAILABLE = 14,
    XDS_GRPC_UNAUTHENTICATED = 16,
};

/* ---- gRPC message framing (xds_frame.h) -------------------------------- */

enum xds_deframe_err {
    XDS_DEFRAME_OK = 0,
    XDS_DEFRAME_TOO_BIG = -1,    /* length prefix above the cap */
    XDS_DEFRAME_COMPRESSED = -2, /* compressed flag set: we only do identity */
    XDS_DEFRAME_NOMEM = -3,
    XDS_DEFRAME_BAD_FLAG = -4, /* flag byte other than 0 or 1 */
    XDS_DEFRAME_BUDGET = -5,   /* the memory budget for partly received messages is spent */
};

/* Reassembles length-prefixed gRPC messages from arbitrary DATA chunks. */
struct xds_deframer {
    uint8_t hdr[5];
    size_t hdr_have; /* bytes of hdr filled */
    uint32_t need;   /* body bytes of the current message */
    uint8_t *body;   /* partial body, |have| bytes of |need| */
    size_t have;
    size_t max;                   /* cap on one message */
    int failed;                   /* a fatal error happened; further input is refused */
    struct xds_budget *budget[2]; /* charged with |need| while a body is buffered (NULL: none) */
};

/* ---- ADS stream state machine (xds_ads.h) ------------------------------ */

/* A sorted, unique list of subscribed names in one allocation (pointers,
 * then the strings). Lists are interned in a pool when the stream has one:
 * the proxies of a gateway all subscribe to the same names, so a thousand
 * streams share one copy. Main loop only (plain refcount). */
struct xds_names {
    int refs;
    uint64_t hash;
    size_t n;
    struct xds_names *next; /* pool bucket chain */
    char *v[];              /* n pointers, then the strings */
};

#define XDS_NAMES_POOL_BUCKETS 4096

/* A sorted list of resources sent (SotW: what a client holds from us of a
 * type), one reference per resource, interned in the pool like the names:
 * the streams of a group hold the same lists. Main loop only. */
struct xds_sent {
    int refs;
    uint64_t hash; /* of the pointers; 0: not in a pool */
    size_t n;
    struct xds_sent *next; /* pool bucket chain */
    struct xds_resource *v[];
};

struct xds_names_pool {
    struct xds_names *buckets[XDS_NAMES_POOL_BUCKETS];
    struct xds_sent *sent[XDS_NAMES_POOL_BUCKETS];
    size_t count;
    size_t bytes;              /* allocation bytes of the pooled lists */
    struct xds_budget *budget; /* charged with |bytes| (NULL: none); may go over: the
                                * server checks it after each request */
    size_t charged;            /* what the pool charged to |budget| */
};

/* What every stream keeps of its node (SotW and delta alike): heap copies
 * cut at XDS_NODE_STR_MAX - 1 bytes, NULL until the first request (have),
 * then never NULL. */
struct xds_node {
    uint8_t have; /* the first request was seen (node kept from it) */
    char *id;
    char *cluster;
    char *group; /* node group: gateway metadata, cluster or default */
    char *user_agent;
};

/* Per stream and type, the exchange of responses and ACK/NACKs, the same
 * for SotW and delta (xds_sub.h). */
struct xds_exchange {
    uint8_t requested; /* a request of this type arrived */
    uint8_t awaiting;  /* a response is out, no ACK/NACK for it yet */
    uint8_t answered;  /* nonce_sent was ACKed or NACKed already */
    uint8_t nacked;    /* the last response was NACKed (not yet ACKed since) */
    char version_sent[XDS_VERSION_LEN + 1];
    char version_acked[XDS_VERSION_LEN + 1];
    char nonce_sent[XDS_NONCE_MAX];
    int64_t origin_ns; /* what triggered the outstanding response (caller's clock) */
    uint64_t nacks;
};

/* What one type of one SotW stream knows. "sent" is what the client holds
 * from us on this stream: the resources of our last full-state response
 * (LDS/CDS) or every RDS/EDS resource sent and still subscribed. Each
 * entry holds a reference, sorted by name. */
struct xds_ads_type_state {
    struct xds_exchange x;
    uint8_t wildcard;        /* LDS/CDS: subscribed to everything */
    uint8_t legacy_wildcard; /* wildcard because the first request had no names */
    uint8_t force;           /* LDS/CDS: respond even if nothing changed */
    uint8_t responded;       /* we answered at least once on this stream */
    uint8_t resync_valid;    /* resync_version holds the first request's version */
    struct xds_names *list;  /* the subscription (NULL: none) */
    char **names;            /* list->v, or NULL */
    size_t nnames;
    struct xds_sent *sentl;     /* interned (NULL: nothing sent) */
    struct xds_resource **sent; /* sentl->v: sorted by name */
    size_t nsent;
    char eval_version[XDS_VERSION_LEN + 1];   /* set version last evaluated ("" never) */
    char resync_version[XDS_VERSION_LEN + 1]; /* version_info of the first request */
};

struct xds_ads_stream {
    struct xds_node node;
    uint64_t nonce_counter;
    struct xds_names_pool *pool; /* may be NULL: lists are then private */
    struct xds_ads_type_state types[XDS_TYPE_COUNT];
};

/* The node metadata key naming a node's Gateway ("namespace/name"). */
#define XDS_NODE_GATEWAY_KEY "coxswain.dev/gateway"

enum xds_ads_verdict {
    XDS_ADS_SUBSCRIBE = 0,    /* request without nonce: (re)subscription */
    XDS_ADS_ACK = 1,          /* latest nonce, no error_detail */
    XDS_ADS_NACK = 2,         /* latest nonce with error_detail */
    XDS_ADS_STALE = 3,        /* nonce is not the latest: ignored */
    XDS_ADS_UNKNOWN_TYPE = 4, /* a type we do not serve: ignored */
};

/* What xds_ads_on_request() saw, for counting and logging. */
struct xds_ads_event {
    enum xds_ads_verdict verdict;
    int type;                          /* enum xds_type, or -1 for UNKNOWN_TYPE */
    uint8_t first_node;                /* this request fixed the stream's node and group */
    uint8_t names_changed;             /* the subscription changed */
    int64_t origin_ns;                 /* ACK/NACK: origin_ns of the answered response */
    int nack_code;                     /* NACK: error_detail.code */
    int pb_error;                      /* XDS_ADS_EBOUND: the enum xds_pbcheck_err */
    char version[XDS_VERSION_LEN + 1]; /* ACK/NACK: the version answered (ours) */
    char nack_message[XDS_NACK_MSG_MAX];
};

enum xds_ads_err {
    XDS_ADS_EINVAL = -1, /* not a DiscoveryRequest, or no type_url */
    XDS_ADS_ENOMEM = -2,
    XDS_ADS_ELIMIT = -3, /* too many names */
    XDS_ADS_EBOUND = -4, /* nesting or element count over the decoding bounds (xds_pbcheck) */
};

/* One response to send: |items| hold a reference each. */
struct xds_ads_response {
    enum xds_type type;
    char version[XDS_VERSION_LEN + 1];
    char nonce[XDS_NONCE_MAX];
    size_t n;
    struct xds_resource **items;
};

/* Receives a serialised response piece by piece: |res| is set when the
 * piece is that resource's encoded bytes (the caller may reference them
 * instead of copying). Returns 0 or an error that stops the emission. */
typedef int (*xds_ads_emit_fn)(void *user, const void *p, size_t n, struct xds_resource *res);

/* ---- NACK reports (xds_server.h) ---------------------------------------- */

/* One NACK, as handed to the NACK callback. Pointers are valid during the
 * call only. */
struct xds_nack {
    const char *group; /* node group (Gateway "namespace/name") */
    enum xds_type type;
    const char *node_id;
    const char *rejected_version; /* the version we sent and the client refused */
    int code;                     /* error_detail.code */
    const char *message;          /* error_detail.message (cut at XDS_NACK_MSG_MAX) */
    uint64_t total;               /* NACKs counted for this group and type so far */
};

/* Per node group and type, what the status writer reads. */
struct xds_nack_stat {
    uint64_t total;  /* NACKs ever counted */
    unsigned active; /* streams whose latest response of this type is NACKed */
    int64_t last_ns; /* CLOCK_MONOTONIC of the last NACK (0: none) */
    char last_version[XDS_VERSION_LEN + 1];
    char last_node[XDS_NODE_STR_MAX];
    char last_message[XDS_NACK_MSG_MAX];
};

/* ---- server configuration (xds_server.h) ------------------------------ */

/* Authentication of proxies (xds_auth.h). The zero value requires it. */
enum xds_auth_mode {
    XDS_AUTH_DEFAULT = 0, /* = XDS_AUTH_REQUIRED */
    XDS_AUTH_REQUIRED =
        1,             /* tokens (TokenReview) and SPIFFE certificates; authorization per Gateway */
    XDS_AUTH_NONE = 2, /* anyone gets any Gateway (--xds-auth none) */
};

struct xds_token_reviewer;

struct xds_server_config {
    const char *listen; /* "host:port", "[v6]:port" or ":port"; port 0 picks one */
    enum xds_auth_mode auth;
    const struct xds_token_reviewer *reviewer; /* TokenReview (copied); NULL: tokens are
                                                * refused with UNAVAILABLE */
    const char *token_audience;                /* NULL: XDS_AUTH_AUDIENCE_DEFAULT */
    const char *trust_domain;                  /* SPIFFE; NULL: XDS_SPIFFE_TRUST_DOMAIN_DEFAULT */
    const char *tls_cert;        /* PEM certificate chain; NULL (with tls_key) = h2c */
    const char *tls_key;         /* PEM private key */
    const char *tls_client_ca;   /* PEM CA bundle: ask for and verify client certs */
    int tls_require_client_cert; /* refuse clients without a valid certificate */
    const char *default_group;   /* group of nodes without gateway metadata or cluster */
    const char *identifier;      /* control_plane.identifier in responses; NULL: none */
    size_t max_message;          /* 0: XDS_MAX_MESSAGE_DEFAULT */
    unsigned max_connections;    /* 0: 10000 */
    unsigned max_streams;        /* concurrent streams per connection; 0: 100 */
    int keepalive_ms;            /* idle PING interval; 0: 30000; < 0: off */
    int handshake_timeout_ms;    /* preface/TLS must finish in this; 0: 10000 */
    int idle_conn_ms;            /* close connections without a stream after this;
                                  * 0: 300000; < 0: never */
    size_t memory_budget;        /* partly received messages + subscription lists, all
                                  * streams; 0: XDS_MEMORY_BUDGET_DEFAULT */
    double nack_qps;             /* NACKs per stream that are logged and reach the NACK
                                  * callback (status); 0: XDS_NACK_QPS_DEFAULT */
};

/* NACKs per stream and second that are recorded (logged, reported);
 * more are counted only. Burst: XDS_NACK_BURST. */
#define XDS_NACK_QPS_DEFAULT 0.2
#define XDS_NACK_BURST       3
/* Bytes of a NACK's message kept after escaping control characters. */
#define XDS_NACK_TEXT_MAX 512

/* Counters the server keeps (read with xds_server_stats()). */
struct xds_server_stats {
    uint64_t connections;          /* open now */
    uint64_t connections_total;    /* accepted */
    uint64_t connections_rejected; /* over max_connections */
    uint64_t streams;              /* ADS streams open now */
    uint64_t streams_total;
    uint64_t requests_total;
    uint64_t acks_total;
    uint64_t nacks_total;
    uint64_t stale_total;
    uint64_t pushes_total[XDS_TYPE_COUNT]; /* responses sent */
    uint64_t push_bytes_total[XDS_TYPE_COUNT];
    uint64_t push_resources_total[XDS_TYPE_COUNT];
    uint64_t snapshots_total;
    uint64_t refused_bounds_total; /* requests over the decoding bounds (xds_pbcheck) */
    uint64_t refused_budget_total; /* streams ended because the memory budget was spent */
    uint64_t nacks_limited_total;  /* NACKs over the per-stream rate: counted, not recorded */
    uint64_t groups;               /* node groups tracked now */
    uint64_t idle_closed_total;    /* connections closed for holding no stream */
    uint64_t accept_backoffs_total;
    size_t budget_used; /* bytes charged to the memory budget now */
    /* nghttp2's memory (xds_h2_server_mem): heap bytes of every session of
     * the process, the length of their mapped blocks, and how much of this
     * server's mapped blocks is resident (an idle connection's is none). */
    size_t h2_heap_bytes, h2_mapped_bytes, h2_resident_bytes;
    uint64_t auth_refused_total;  /* streams refused by authentication or authorization */
    uint64_t delta_removed_total; /* names sent in removed_resources (delta) */
};

#endif
