#include "xds_server.h"

#include "cx_hash.h"
#include "cx_log.h"
#include "cx_metrics.h"
#include "cx_ratelimit.h"
#include "cx_time.h"
#include "xds_ads.h"
#include "xds_auth.h"
#include "xds_cache.h"
#include "xds_frame.h"
#include "xds_h2.h"
#include "xds_pbcheck.h"
#include "xlate_snapshot.h"

#include <event2/buffer.h>
#include <signal.h>
#include <stddef.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    struct xds_ads_stream ads;
    uint8_t registered;
    uint8_t auth_pending; /* a TokenReview runs for this stream's token */
    uint8_t no_secrets;   /* served as a client without credentials: no Secrets */
    uint8_t nack_active[XDS_TYPE_COUNT];
    struct cx_ratelimit nack_rl; /* NACKs recorded (logged, reported) */
    struct xds_identity id;      /* who the proxy is (method NONE: nobody) */
    struct xds_auth_waiter waiter;
    char *refusal; /* the grpc-message of an authorization refusal (owned) */
};

/* Why a stream was refused by authentication or authorization
 * (coxswain_xds_auth_refused_total{reason}). */
enum auth_reason {
    AUTH_NO_CREDENTIALS = 0, /* none presented, and the Gateway does not opt in */
    AUTH_BAD_TOKEN = 1,      /* TokenReview said no, or not a ServiceAccount, or malformed */
    AUTH_UNAVAILABLE = 2,    /* TokenReview could not answer */
    AUTH_BAD_CERT = 3,       /* a certificate without a SPIFFE ServiceAccount ID */
    AUTH_DENIED = 4,         /* authenticated, not allowed for the Gateway */
    AUTH_COUNT = 5,
};
static const char *const auth_reason_names[AUTH_COUNT] = {
    "no_credentials", "invalid_token", "token_review_unavailable", "invalid_certificate",
    "permission_denied"};
static const char *const auth_method_names[3] = {"none", "token", "certificate"};

/* Why a stream was ended by us (coxswain_xds_refused_total{reason}). */
enum refuse_reason {
    REFUSE_INVALID = 0, /* not a DiscoveryRequest */
    REFUSE_BOUNDS = 1,  /* nesting / element count over the decoding bounds */
    REFUSE_NAMES = 2,   /* too many resource names */
    REFUSE_GROUPS = 3,  /* too many node groups */
    REFUSE_BUDGET = 4,  /* the memory budget is spent */
    REFUSE_COUNT = 5,
};
static const char *const refuse_names[REFUSE_COUNT] = {"invalid", "decode_bounds", "names",
                                                       "groups", "memory_budget"};

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
    struct xds_h2_method method;
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

static const char *const verdict_names[5] = {"subscribe", "ack", "nack", "stale", "unknown_type"};

static void metrics_init(struct xds_metrics *m)
{
    m->connections =
        cx_metric_with(cx_gauge("coxswain_xds_connections", "Open xDS (gRPC) connections.", NULL));
    m->streams = cx_metric_with(cx_gauge("coxswain_xds_streams", "Open ADS streams.", NULL));
    m->streams_total =
        cx_metric_with(cx_counter("coxswain_xds_streams_total", "ADS streams opened.", NULL));
    m->rejected = cx_metric_with(cx_counter("coxswain_xds_connections_rejected_total",
                                            "Connections refused over the limit.", NULL));
    m->snapshots = cx_metric_with(
        cx_counter("coxswain_xds_snapshots_total", "Snapshots handed to the xDS server.", NULL));
    struct cx_metric *pushes =
        cx_counter("coxswain_xds_pushes_total", "DiscoveryResponses sent.", "type");
    struct cx_metric *bytes = cx_counter("coxswain_xds_push_bytes_total",
                                         "Bytes of DiscoveryResponses sent (framed).", "type");
    struct cx_metric *res = cx_counter("coxswain_xds_push_resources_total",
                                       "Resources carried by DiscoveryResponses.", "type");
    struct cx_metric *lat =
        cx_histogram("coxswain_xds_push_latency_seconds",
                     "From the snapshot (or request) that caused a response to its ACK or NACK.",
                     "type", cx_metric_latency_buckets, cx_metric_latency_nbuckets);
    struct cx_metric *req = cx_counter("coxswain_xds_requests_total",
                                       "DiscoveryRequests by type and verdict.", "type,verdict");
    m->nacks =
        cx_counter("coxswain_xds_nacks_total",
                   "NACKs (requests with error_detail) by node group and type.", "group,type");
    struct cx_metric *refused = cx_counter(
        "coxswain_xds_refused_total",
        "Streams ended by the server because of what the client sent, by reason.", "reason");
    for (int r = 0; r < REFUSE_COUNT; r++)
        m->refused[r] = refused ? cx_metric_with(refused, refuse_names[r]) : NULL;
    for (int t = 0; t <= XDS_TYPE_COUNT; t++) {
        const char *tn = t < XDS_TYPE_COUNT ? xlate_type_short((enum xds_type)t) : "unknown";
        if (t < XDS_TYPE_COUNT) {
            m->pushes[t] = pushes ? cx_metric_with(pushes, tn) : NULL;
            m->push_bytes[t] = bytes ? cx_metric_with(bytes, tn) : NULL;
            m->push_resources[t] = res ? cx_metric_with(res, tn) : NULL;
            m->latency[t] = lat ? cx_metric_with(lat, tn) : NULL;
        }
        for (int v = 0; v < 5; v++)
            m->requests[t][v] = req ? cx_metric_with(req, tn, verdict_names[v]) : NULL;
    }
}

/* NULL-safe: a registry that refused a family (a programming error caught
 * by the tests) must not crash the server. */
static void m_add(struct cx_series *s, double v)
{
    if (s)
        cx_series_add(s, v);
}

static void m_set(struct cx_series *s, double v)
{
    if (s)
        cx_series_set(s, v);
}

static void m_gauges(struct xds_server *s);

/* ---- pushing ------------------------------------------------------------------ */

static void blob_unref(struct blob *b)
{
    if (b && --b->refs == 0)
        free(b);
}

static void blob_cleanup(const void *data, size_t len, void *arg)
{
    (void)data;
    (void)len;
    blob_unref(arg);
}

static int emit_blob(void *user, const void *p, size_t n, struct xds_resource *res)
{
    (void)res;
    struct blob *b = user;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

static void memo_clear(struct memo_entry *e)
{
    for (size_t i = 0; i < e->n; i++)
        xlate_resource_unref(e->items[i]);
    free(e->items);
    blob_unref(e->blob);
    memset(e, 0, sizeof(*e));
}

/* The encoded resources of |r|, shared (one reference for the caller), or
 * NULL when memory ran out. */
static struct blob *memo_get(struct xds_server *s, const struct xds_ads_response *r)
{
    uint64_t h = cx_fnv64(CX_FNV64_INIT, &r->type, sizeof(r->type));
    h = cx_fnv64(h, r->items, r->n * sizeof(*r->items));
    struct memo_entry *victim = &s->memo[0];
    for (int i = 0; i < MEMO_SLOTS; i++) {
        struct memo_entry *e = &s->memo[i];
        if (e->items && e->hash == h && e->type == r->type && e->n == r->n &&
            memcmp(e->items, r->items, r->n * sizeof(*r->items)) == 0) {
            e->last_use = ++s->memo_clock;
            e->blob->refs++;
            return e->blob;
        }
        if (!e->items || (victim->items && e->last_use < victim->last_use))
            victim = e;
    }
    size_t len = xds_ads_resources_size(r->type, r->items, r->n);
    struct blob *b = malloc(sizeof(*b) + len);
    struct xds_resource **items = malloc(r->n * sizeof(*items));
    if (!b || !items) {
        free(b);
        free(items);
        return NULL;
    }
    b->refs = 1;
    b->len = 0;
    if (xds_ads_emit_resources(r->type, r->items, r->n, emit_blob, b) != 0 || b->len != len) {
        free(b);
        free(items);
        return NULL;
    }
    memo_clear(victim);
    for (size_t i = 0; i < r->n; i++)
        items[i] = xlate_resource_ref(r->items[i]);
    *victim = (struct memo_entry){.hash = h,
                                  .last_use = ++s->memo_clock,
                                  .type = r->type,
                                  .n = r->n,
                                  .items = items,
                                  .blob = b};
    b->refs++; /* the memo's and the caller's */
    return b;
}

static int emit_evbuf(void *user, const void *p, size_t n, struct xds_resource *res)
{
    (void)res;
    return evbuffer_add(user, p, n);
}

/* Frames and queues one response. Returns 0 or -1. */
static int send_response(struct sstream *ss, const struct xds_ads_response *r)
{
    struct xds_server *s = ss->srv;
    size_t size = xds_ads_response_size(r, s->identifier);
    if (size > UINT32_MAX)
        return -1;
    struct evbuffer *eb = evbuffer_new();
    if (!eb)
        return -1;
    uint8_t prefix[5];
    xds_frame_prefix(prefix, (uint32_t)size);
    int rc = evbuffer_add(eb, prefix, 5);
    if (rc == 0)
        rc = xds_ads_emit_head(r, emit_evbuf, eb);
    if (rc == 0 && r->n) {
        struct blob *b = memo_get(s, r);
        if (!b || evbuffer_add_reference(eb, b->data, b->len, blob_cleanup, b) != 0) {
            blob_unref(b);
            rc = -1;
        }
    }
    if (rc == 0)
        rc = xds_ads_emit_tail(r, s->identifier, emit_evbuf, eb);
    if (rc == 0)
        rc = xds_h2_stream_send(ss->h2, eb);
    evbuffer_free(eb);
    if (rc == 0) {
        s->stats.pushes_total[r->type]++;
        s->stats.push_bytes_total[r->type] += size + 5;
        s->stats.push_resources_total[r->type] += r->n;
        m_add(s->m.pushes[r->type], 1);
        m_add(s->m.push_bytes[r->type], (double)(size + 5));
        m_add(s->m.push_resources[r->type], (double)r->n);
        cx_debug("xds", "push %s version %s nonce %s (%zu resources, %zu bytes) to %s",
                 xlate_type_short(r->type), r->version, r->nonce, r->n, size, ss->ads.node_id);
    }
    return rc;
}

/* Sends whatever the stream's state says is due, unless its output is
 * congested (then on_writable comes back here). */
static void pump(struct sstream *ss, int64_t origin_ns)
{
    if (!ss->registered || xds_h2_stream_queued(ss->h2) > XDS_H2_STREAM_LOW)
        return;
    const struct xds_ads_sets *sets = xds_cache_sets(ss->srv->cache, &ss->watch);
    for (;;) {
        struct xds_ads_response r;
        int rc = xds_ads_next(&ss->ads, sets, origin_ns, &r);
        if (rc == 0)
            return;
        if (rc < 0) {
            xds_h2_stream_finish(ss->h2, XDS_GRPC_INTERNAL, "out of memory");
            return;
        }
        rc = send_response(ss, &r);
        xds_ads_response_clear(&r);
        if (rc != 0) {
            xds_h2_stream_finish(ss->h2, XDS_GRPC_INTERNAL, "cannot queue response");
            return;
        }
    }
}

static int authorize(struct sstream *ss, const char **errmsg);

static void wake(void *user, struct xds_cache_watch *w)
{
    struct xds_server *s = user;
    struct sstream *ss = (struct sstream *)w;
    /* The Gateway's spec.xdsAccess may have changed with the snapshot. */
    const char *msg = NULL;
    int code = authorize(ss, &msg);
    if (code != 0) {
        xds_h2_stream_finish(ss->h2, code, msg);
        return;
    }
    pump(ss, s->snapshot_ns);
}

/* ---- NACK accounting ---------------------------------------------------------- */

/* A NACK's text is the client's choice: escaped (no control characters
 * reach a log line or a status) and cut at XDS_NACK_TEXT_MAX bytes. */
static void nack_text(const char *in, char *out, size_t cap)
{
    if (cap > XDS_NACK_TEXT_MAX + 1)
        cap = XDS_NACK_TEXT_MAX + 1;
    cx_log_escape(in, out, cap);
}

static void note_nack(struct sstream *ss, const struct xds_ads_event *ev)
{
    struct xds_server *s = ss->srv;
    enum xds_type t = (enum xds_type)ev->type;
    s->stats.nacks_total++;
    if (s->m.nacks)
        cx_metric_inc(s->m.nacks, ss->ads.group, xlate_type_short(t));
    struct xds_nack_stat *st = xds_cache_nack(&ss->watch, t);
    if (!st)
        return;
    st->total++;
    if (!ss->nack_active[t]) {
        ss->nack_active[t] = 1;
        st->active++;
    }
    /* Counted always; recorded (text kept, logged, handed to the status
     * writer) at a bounded rate per stream, so that a client that NACKs
     * in a loop costs neither the log nor the API server anything. */
    if (cx_ratelimit_take(&ss->nack_rl, cx_mono_ns()) != 0) {
        s->stats.nacks_limited_total++;
        m_add(s->nacks_limited, 1);
        return;
    }
    char text[XDS_NACK_TEXT_MAX + 1];
    nack_text(ev->nack_message, text, sizeof(text));
    st->last_ns = cx_mono_ns();
    snprintf(st->last_version, sizeof(st->last_version), "%s", ev->version);
    cx_log_escape(ss->ads.node_id, st->last_node, sizeof(st->last_node));
    snprintf(st->last_message, sizeof(st->last_message), "%s", text);
    cx_warn("xds", "NACK from node \"%s\" (group \"%s\", %s) for %s version %s: code %d: %s",
            st->last_node, ss->ads.group, xds_h2_stream_peer(ss->h2), xlate_type_short(t),
            ev->version, ev->nack_code, text);
    if (s->nack_cb) {
        struct xds_nack n = {
            .group = ss->ads.group,
            .type = t,
            .node_id = st->last_node,
            .rejected_version = ev->version,
            .code = ev->nack_code,
            .message = text,
            .total = st->total,
        };
        s->nack_cb(s->nack_user, &n);
    }
}

static void clear_nack(struct sstream *ss, enum xds_type t)
{
    if (!ss->nack_active[t])
        return;
    ss->nack_active[t] = 0;
    struct xds_nack_stat *st = xds_cache_nack(&ss->watch, t);
    if (st && st->active)
        st->active--;
}

static void note_latency(struct xds_server *s, int type, int64_t origin_ns)
{
    if (origin_ns <= 0 || type < 0)
        return;
    int64_t us = (cx_mono_ns() - origin_ns) / 1000;
    if (s->m.latency[type])
        cx_series_observe(s->m.latency[type], (double)us / 1e6);
    int b = 0;
    while (b < XDS_LATENCY_BUCKETS - 1 && us >= ((int64_t)1 << b))
        b++;
    s->latency[b]++;
}

/* ---- authentication and authorization ------------------------------------------- */

static void auth_refused(struct xds_server *s, enum auth_reason r, const char *peer,
                         const char *msg)
{
    s->stats.auth_refused_total++;
    m_add(s->auth_refused[r], 1);
    /* Refusals are the clients' business, said to them; the log gets a
     * bounded share so that a storm of them costs it nothing. */
    if (cx_ratelimit_take(&s->auth_log_rl, cx_mono_ns()) == 0) {
        char esc[512];
        cx_log_escape(msg, esc, sizeof(esc));
        cx_info("xds", "refused a stream from %s (%s): %s", peer, auth_reason_names[r], esc);
    }
}

/* May the stream's identity receive its node group? 0, or a gRPC status
 * with the refusal in |*errmsg| (owned by the stream). Sets no_secrets. */
static int authorize(struct sstream *ss, const char **errmsg)
{
    struct xds_server *s = ss->srv;
    if (s->auth == XDS_AUTH_NONE)
        return 0;
    struct xlate_snapshot *snap = xds_cache_snapshot(s->cache);
    const struct xlate_group *g = snap ? xlate_snapshot_group(snap, ss->ads.group) : NULL;
    char msg[600];
    enum xds_authz a = xds_authorize(&ss->id, ss->ads.group, g ? &g->access : NULL, msg,
                                     sizeof(msg));
    if (a == XDS_AUTHZ_ALLOW || a == XDS_AUTHZ_ALLOW_NO_SECRETS) {
        ss->no_secrets = a == XDS_AUTHZ_ALLOW_NO_SECRETS;
        return 0;
    }
    free(ss->refusal);
    ss->refusal = strdup(msg);
    *errmsg = ss->refusal ? ss->refusal : "permission denied";
    enum auth_reason r = a == XDS_AUTHZ_DENY ? AUTH_DENIED : AUTH_NO_CREDENTIALS;
    auth_refused(s, r, xds_h2_stream_peer(ss->h2), msg);
    return a == XDS_AUTHZ_DENY ? XDS_GRPC_PERMISSION_DENIED : XDS_GRPC_UNAUTHENTICATED;
}

/* The stream knows its identity and its node group: authorized, it
 * joins the group and is answered. Returns 0 or a gRPC status. */
static int admit(struct sstream *ss, const char **errmsg)
{
    struct xds_server *s = ss->srv;
    int code = authorize(ss, errmsg);
    if (code != 0)
        return code;
    if (xds_cache_watch_add(s->cache, &ss->watch, ss->ads.group) != 0) {
        m_add(s->m.refused[REFUSE_GROUPS], 1);
        *errmsg = "too many node groups";
        return XDS_GRPC_RESOURCE_EXHAUSTED;
    }
    ss->registered = 1;
    m_add(s->auth_streams[ss->id.method], 1);
    cx_debug("xds", "stream from %s: node \"%s\" group \"%s\" agent \"%s\" as %s/%s (%s)",
             xds_h2_stream_peer(ss->h2), ss->ads.node_id, ss->ads.group, ss->ads.user_agent,
             ss->id.ns, ss->id.name, auth_method_names[ss->id.method]);
    return 0;
}

static void token_checked(void *arg, const struct xds_auth_verdict *v)
{
    struct sstream *ss = arg;
    struct xds_server *s = ss->srv;
    ss->auth_pending = 0;
    if (v->status != 0) {
        free(ss->refusal);
        ss->refusal = strdup(v->message);
        auth_refused(s, v->status == XDS_GRPC_UNAVAILABLE ? AUTH_UNAVAILABLE : AUTH_BAD_TOKEN,
                     xds_h2_stream_peer(ss->h2), v->message);
        xds_h2_stream_finish(ss->h2, v->status, ss->refusal ? ss->refusal : "");
        return;
    }
    ss->id = v->id;
    if (!ss->ads.have_node || ss->registered)
        return;
    const char *msg = NULL;
    int code = admit(ss, &msg);
    if (code != 0) {
        xds_h2_stream_finish(ss->h2, code, msg);
        return;
    }
    pump(ss, cx_mono_ns());
}

/* Authenticates a new call from its certificate and `authorization`
 * header. Returns 0 (identity known, or a review runs), or a gRPC status
 * with the message in |msg|. */
static int authenticate(struct sstream *ss, struct xds_h2_stream *st, char *msg, size_t cap,
                        enum auth_reason *why)
{
    struct xds_server *s = ss->srv;
    if (s->auth == XDS_AUTH_NONE)
        return 0;
    const char *authz = xds_h2_stream_authorization(st);
    X509 *cert = xds_h2_stream_peer_cert(st);
    if (cert) {
        if (xds_spiffe_from_cert(cert, s->trust_domain, &ss->id, msg, cap) == 0)
            return 0;
        if (!authz) {
            *why = AUTH_BAD_CERT;
            return XDS_GRPC_UNAUTHENTICATED;
        }
    }
    if (!authz)
        return 0; /* nobody: the Gateway decides (allowUnauthenticated) */
    *why = AUTH_BAD_TOKEN;
    if (strncasecmp(authz, "Bearer ", 7) != 0) {
        snprintf(msg, cap, "the authorization header is not \"Bearer <token>\"");
        return XDS_GRPC_UNAUTHENTICATED;
    }
    const char *token = authz + 7;
    while (*token == ' ')
        token++;
    if (!s->tokens) {
        *why = AUTH_UNAVAILABLE;
        snprintf(msg, cap, "this server cannot review tokens (no Kubernetes API client)");
        return XDS_GRPC_UNAVAILABLE;
    }
    struct xds_auth_verdict v;
    if (xds_tokens_check(s->tokens, token, &v, &ss->waiter, token_checked, ss) == 0) {
        ss->auth_pending = 1;
        return 0;
    }
    if (v.status != 0) {
        snprintf(msg, cap, "%s", v.message);
        if (v.status == XDS_GRPC_UNAVAILABLE)
            *why = AUTH_UNAVAILABLE;
        return v.status;
    }
    ss->id = v.id;
    return 0;
}

/* ---- gRPC method callbacks ------------------------------------------------------ */

static void *ads_open(void *user, struct xds_h2_stream *st)
{
    struct xds_server *s = user;
    struct sstream *ss = calloc(1, sizeof(*ss));
    if (!ss) {
        xds_h2_stream_finish(st, XDS_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    ss->srv = s;
    ss->h2 = st;
    char msg[600];
    enum auth_reason why = AUTH_BAD_TOKEN;
    int code = authenticate(ss, st, msg, sizeof(msg), &why);
    if (code != 0) {
        auth_refused(s, why, xds_h2_stream_peer(st), msg);
        xds_h2_stream_finish(st, code, msg);
        free(ss);
        return NULL;
    }
    cx_ratelimit_init(&ss->nack_rl, s->nack_qps, XDS_NACK_BURST, cx_mono_ns());
    xds_ads_stream_init(&ss->ads);
    xds_ads_stream_set_pool(&ss->ads, s->names);
    s->stats.streams++;
    s->stats.streams_total++;
    m_add(s->m.streams_total, 1);
    m_gauges(s);
    return ss;
}

static int ads_message(void *ctx, const uint8_t *msg, size_t len, const char **errmsg)
{
    struct sstream *ss = ctx;
    struct xds_server *s = ss->srv;
    struct xds_ads_event ev;
    s->stats.requests_total++;
    if (s->tap)
        s->tap(s->tap_user, ss->ads.have_node ? ss->ads.node_id : "", msg, len);
    int rc = xds_ads_on_request(&ss->ads, msg, len, s->default_group, &ev);
    if (ev.first_node && !ss->registered && !ss->auth_pending) {
        /* Until the token's review ends, requests only update the
         * stream's state; token_checked admits it. */
        int code = admit(ss, errmsg);
        if (code != 0)
            return code;
    }
    switch (rc) {
    case 0:
        break;
    case XDS_ADS_EINVAL:
        m_add(s->m.refused[REFUSE_INVALID], 1);
        *errmsg = "not a DiscoveryRequest with a type_url";
        return XDS_GRPC_INVALID_ARGUMENT;
    case XDS_ADS_ELIMIT:
        m_add(s->m.refused[REFUSE_NAMES], 1);
        *errmsg = "too many resource names";
        return XDS_GRPC_RESOURCE_EXHAUSTED;
    case XDS_ADS_EBOUND:
        s->stats.refused_bounds_total++;
        m_add(s->m.refused[REFUSE_BOUNDS], 1);
        cx_debug("xds", "refused a DiscoveryRequest from %s: %s", xds_h2_stream_peer(ss->h2),
                 xds_pbcheck_strerror(ev.pb_error));
        *errmsg = xds_pbcheck_strerror(ev.pb_error);
        return XDS_GRPC_INVALID_ARGUMENT;
    default:
        *errmsg = "out of memory";
        return XDS_GRPC_INTERNAL;
    }
    if (cx_log_enabled(CX_LOG_DEBUG) && ev.type >= 0) {
        const struct xds_ads_type_state *ts = &ss->ads.types[ev.type];
        cx_debug("xds", "request %s %s from %s: %zu names%s, nonce sent %s, awaiting %d",
                 xlate_type_short((enum xds_type)ev.type), verdict_names[ev.verdict],
                 ss->ads.node_id, ts->nnames, ts->wildcard ? " (wildcard)" : "", ts->nonce_sent,
                 ts->awaiting);
    }
    m_gauges(s);
    if (s->budget.max && s->budget.used > s->budget.max) {
        /* This request's names pushed the budget over: the stream goes and
         * gives its lists back. Refused, never served half. */
        s->stats.refused_budget_total++;
        m_add(s->m.refused[REFUSE_BUDGET], 1);
        *errmsg = "server memory budget for subscriptions is spent (--xds-memory-budget)";
        return XDS_GRPC_RESOURCE_EXHAUSTED;
    }
    m_add(s->m.requests[ev.type >= 0 ? ev.type : XDS_TYPE_COUNT][ev.verdict], 1);
    if (ev.verdict == XDS_ADS_NACK)
        note_latency(s, ev.type, ev.origin_ns);
    switch (ev.verdict) {
    case XDS_ADS_ACK:
        s->stats.acks_total++;
        clear_nack(ss, (enum xds_type)ev.type);
        note_latency(s, ev.type, ev.origin_ns);
        break;
    case XDS_ADS_NACK:
        if (ss->registered) /* never from a client not (yet) authorized */
            note_nack(ss, &ev);
        break;
    case XDS_ADS_STALE:
        s->stats.stale_total++;
        break;
    case XDS_ADS_SUBSCRIBE:
    case XDS_ADS_UNKNOWN_TYPE:
        break;
    }
    pump(ss, cx_mono_ns());
    return 0;
}

static void ads_half_close(void *ctx)
{
    struct sstream *ss = ctx;
    xds_h2_stream_finish(ss->h2, XDS_GRPC_OK, NULL);
}

static void ads_writable(void *ctx)
{
    struct sstream *ss = ctx;
    pump(ss, cx_mono_ns());
}

static void ads_close(void *ctx)
{
    struct sstream *ss = ctx;
    struct xds_server *s = ss->srv;
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        clear_nack(ss, (enum xds_type)t);
    if (ss->registered)
        xds_cache_watch_remove(s->cache, &ss->watch);
    xds_tokens_cancel(&ss->waiter);
    free(ss->refusal);
    xds_ads_stream_free(&ss->ads);
    s->stats.streams--;
    free(ss);
    m_gauges(s);
}

static void on_counts(void *user)
{
    m_gauges(user);
}

/* ---- public API ----------------------------------------------------------------- */

struct xds_server *xds_server_new(struct event_base *base, const struct xds_server_config *cfg,
                                  char *err, size_t errlen)
{
    SSL_CTX *ctx = NULL;
    struct xds_server *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->base = base;
    /* A peer that vanishes must cost a closed connection, not the process:
     * libevent writes with writev(), which raises SIGPIPE on a reset socket. */
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
        signal(SIGPIPE, SIG_IGN);
    metrics_init(&s->m);
    s->nacks_limited = cx_metric_with(cx_counter(
        "coxswain_xds_nacks_limited_total",
        "NACKs over the per-stream rate (--xds-nack-rate): counted, not logged or reported.",
        NULL));
    s->budget_used = cx_metric_with(cx_gauge(
        "coxswain_xds_memory_budget_used_bytes",
        "Bytes charged to the xDS memory budget (partly received messages, name lists).", NULL));
    s->groups_gauge =
        cx_metric_with(cx_gauge("coxswain_xds_node_groups", "Node groups tracked.", NULL));
    s->idle_closed = cx_metric_with(cx_counter("coxswain_xds_idle_connections_closed_total",
                                               "Connections closed for holding no stream.", NULL));
    s->accept_backoffs = cx_metric_with(
        cx_counter("coxswain_xds_accept_backoffs_total",
                   "Pauses of accept() for lack of file descriptors (EMFILE/ENFILE).", NULL));
    struct cx_metric *ar = cx_counter(
        "coxswain_xds_auth_refused_total",
        "Streams refused by authentication or authorization, by reason.", "reason");
    for (int r = 0; r < AUTH_COUNT; r++)
        s->auth_refused[r] = ar ? cx_metric_with(ar, auth_reason_names[r]) : NULL;
    struct cx_metric *as = cx_counter(
        "coxswain_xds_auth_streams_total",
        "Streams admitted to a Gateway's configuration, by how the client authenticated.",
        "method");
    struct cx_metric *tr = cx_counter("coxswain_xds_token_reviews_total",
                                      "TokenReviews of proxies' tokens, by outcome.", "outcome");
    static const char *const outcomes[3] = {"authenticated", "rejected", "unavailable"};
    for (int i = 0; i < 3; i++) {
        s->auth_streams[i] = as ? cx_metric_with(as, auth_method_names[i]) : NULL;
        s->token_reviews[i] = tr ? cx_metric_with(tr, outcomes[i]) : NULL;
    }
    s->token_cache_entries = cx_metric_with(
        cx_gauge("coxswain_xds_token_cache_entries", "Reviewed tokens remembered.", NULL));
    s->token_cache_hits = cx_metric_with(cx_counter(
        "coxswain_xds_token_cache_hits_total",
        "Streams whose token's review was remembered (no TokenReview).", NULL));
    s->auth = cfg->auth == XDS_AUTH_NONE ? XDS_AUTH_NONE : XDS_AUTH_REQUIRED;
    cx_ratelimit_init(&s->auth_log_rl, 1, 5, cx_mono_ns());
    s->trust_domain =
        strdup(cfg->trust_domain ? cfg->trust_domain : XDS_SPIFFE_TRUST_DOMAIN_DEFAULT);
    if (!s->trust_domain) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (s->auth != XDS_AUTH_NONE && cfg->reviewer) {
        s->tokens = xds_tokens_new(cfg->reviewer,
                                   cfg->token_audience ? cfg->token_audience
                                                       : XDS_AUTH_AUDIENCE_DEFAULT,
                                   0, 0);
        if (!s->tokens) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
    }
    s->cache = xds_cache_new();
    s->names = xds_names_pool_new();
    s->budget.max = cfg->memory_budget ? cfg->memory_budget : XDS_MEMORY_BUDGET_DEFAULT;
    s->nack_qps = cfg->nack_qps > 0 ? cfg->nack_qps : XDS_NACK_QPS_DEFAULT;
    if (s->names)
        s->names->budget = &s->budget;
    s->default_group = strdup(cfg->default_group ? cfg->default_group : "");
    s->identifier = cfg->identifier ? strdup(cfg->identifier) : NULL;
    if (!s->cache || !s->names || !s->default_group || (cfg->identifier && !s->identifier)) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if ((cfg->tls_cert != NULL) != (cfg->tls_key != NULL)) {
        snprintf(err, errlen, "TLS needs both a certificate and a key");
        goto fail;
    }
    if (cfg->tls_cert) {
        /* With authentication, a client may present a certificate or a
         * token: certificates are verified when presented, not required. */
        ctx = xds_h2_tls_ctx(cfg->tls_cert, cfg->tls_key, cfg->tls_client_ca,
                             s->auth == XDS_AUTH_NONE && cfg->tls_require_client_cert, err,
                             errlen);
        if (!ctx)
            goto fail;
    }
    s->method = (struct xds_h2_method){
        .path = XDS_ADS_PATH,
        .on_open = ads_open,
        .on_message = ads_message,
        .on_half_close = ads_half_close,
        .on_writable = ads_writable,
        .on_close = ads_close,
    };
    struct xds_h2_config hc = {
        .listen = cfg->listen,
        .ssl_ctx = ctx,
        .max_message = cfg->max_message ? cfg->max_message : XDS_MAX_MESSAGE_DEFAULT,
        .max_connections = cfg->max_connections,
        .max_streams = cfg->max_streams,
        .keepalive_ms = cfg->keepalive_ms,
        .handshake_timeout_ms = cfg->handshake_timeout_ms,
        .idle_conn_ms = cfg->idle_conn_ms,
        .budget = &s->budget,
        .on_counts = on_counts,
    };
    s->h2 = xds_h2_server_new(base, &hc, &s->method, 1, s, err, errlen);
    if (ctx)
        SSL_CTX_free(ctx); /* the transport holds its own reference */
    if (!s->h2)
        goto fail;
    return s;
fail:
    xds_server_free(s);
    return NULL;
}

/* Gauges and the counters the transport keeps, refreshed on stream
 * events (cheap: a few atomic stores). */
static void m_gauges(struct xds_server *s)
{
    struct xds_h2_counts hc;
    if (!s->h2)
        return;
    xds_h2_server_counts(s->h2, &hc);
    m_set(s->m.connections, (double)hc.connections);
    m_set(s->m.streams, (double)s->stats.streams);
    if (s->m.rejected && hc.connections_rejected > s->m_rejected_seen) {
        cx_series_add(s->m.rejected, (double)(hc.connections_rejected - s->m_rejected_seen));
        s->m_rejected_seen = hc.connections_rejected;
    }
    m_add(s->idle_closed, (double)(hc.idle_closed - s->idle_closed_seen));
    s->idle_closed_seen = hc.idle_closed;
    m_add(s->accept_backoffs, (double)(hc.accept_backoffs - s->accept_backoffs_seen));
    s->accept_backoffs_seen = hc.accept_backoffs;
    m_set(s->budget_used, (double)s->budget.used);
    /* partly received messages refused by the deframers (xds_h2) */
    m_add(s->m.refused[REFUSE_BUDGET], (double)(s->budget.refused - s->budget_refused_seen));
    s->budget_refused_seen = s->budget.refused;
    m_set(s->groups_gauge, (double)xds_cache_ngroups(s->cache));
    if (s->tokens) {
        struct xds_tokens_stats ts;
        xds_tokens_stats(s->tokens, &ts);
        m_set(s->token_cache_entries, (double)ts.entries);
        m_add(s->token_cache_hits, (double)(ts.hits - s->token_hits_seen));
        s->token_hits_seen = ts.hits;
        for (int i = 0; i < 3; i++) {
            m_add(s->token_reviews[i], (double)(ts.reviews[i] - s->token_reviews_seen[i]));
            s->token_reviews_seen[i] = ts.reviews[i];
        }
    }
}

int xds_server_port(const struct xds_server *s)
{
    return xds_h2_server_port(s->h2);
}

void xds_server_set_snapshot(struct xds_server *s, struct xlate_snapshot *snap)
{
    s->snapshot_ns = cx_mono_ns();
    s->stats.snapshots_total++;
    m_add(s->m.snapshots, 1);
    xds_cache_set_snapshot(s->cache, snap, wake, s);
}

void xds_server_on_nack(struct xds_server *s, xds_nack_cb cb, void *user)
{
    s->nack_cb = cb;
    s->nack_user = user;
}

void xds_server_on_request(struct xds_server *s, xds_request_tap tap, void *user)
{
    s->tap = tap;
    s->tap_user = user;
}

int xds_server_nack_stat(const struct xds_server *s, const char *group, enum xds_type type,
                         struct xds_nack_stat *out)
{
    const struct xds_nack_stat *st = xds_cache_nack_find(s->cache, group, type);
    if (!st || st->total == 0)
        return -1;
    *out = *st;
    return 0;
}

void xds_server_foreach_nack(const struct xds_server *s,
                             void (*fn)(void *user, const char *group, enum xds_type type,
                                        const struct xds_nack_stat *st),
                             void *user)
{
    xds_cache_foreach_nack(s->cache, fn, user);
}

void xds_server_stats(const struct xds_server *s, struct xds_server_stats *out)
{
    m_gauges((struct xds_server *)s);
    *out = s->stats;
    struct xds_h2_counts hc;
    xds_h2_server_counts(s->h2, &hc);
    out->connections = hc.connections;
    out->connections_total = hc.connections_total;
    out->connections_rejected = hc.connections_rejected;
    out->idle_closed_total = hc.idle_closed;
    out->accept_backoffs_total = hc.accept_backoffs;
    out->groups = xds_cache_ngroups(s->cache);
    out->budget_used = s->budget.used;
}

void xds_server_latency(const struct xds_server *s, uint64_t out[XDS_LATENCY_BUCKETS])
{
    memcpy(out, s->latency, sizeof(s->latency));
}

struct xds_cache *xds_server_cache(struct xds_server *s)
{
    return s->cache;
}

const char *xds_server_default_group(const struct xds_server *s)
{
    return s->default_group;
}

int xds_server_auth_required(const struct xds_server *s)
{
    return s->auth != XDS_AUTH_NONE;
}

void xds_server_token_stats(const struct xds_server *s, struct xds_tokens_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (s->tokens)
        xds_tokens_stats(s->tokens, out);
}

void xds_server_shutdown(struct xds_server *s, int grace_ms, void (*done)(void *), void *arg)
{
    xds_h2_server_shutdown(s->h2, grace_ms, done, arg);
}

void xds_server_pause(struct xds_server *s, int grace_ms)
{
    xds_h2_server_pause(s->h2, grace_ms);
}

int xds_server_resume(struct xds_server *s, char *err, size_t errlen)
{
    return xds_h2_server_resume(s->h2, err, errlen);
}

int xds_server_paused(const struct xds_server *s)
{
    return xds_h2_server_paused(s->h2);
}

void xds_server_free(struct xds_server *s)
{
    if (!s)
        return;
    xds_h2_server_free(s->h2); /* closes every stream first */
    xds_tokens_free(s->tokens);
    free(s->trust_domain);
    for (int i = 0; i < MEMO_SLOTS; i++)
        memo_clear(&s->memo[i]);
    xds_cache_free(s->cache);
    xds_names_pool_free(s->names);
    free(s->default_group);
    free(s->identifier);
    free(s);
}
