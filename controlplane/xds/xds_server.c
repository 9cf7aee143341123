#include "xds_server_impl.h"

#include "cx_log.h"
#include "cx_time.h"
#include "xlate_snapshot.h"

#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const xds_srv_auth_reason_names[AUTH_COUNT] = {
    "no_credentials", "invalid_token", "token_review_unavailable", "invalid_certificate",
    "permission_denied"};
const char *const xds_srv_auth_method_names[3] = {"none", "token", "certificate"};
const char *const xds_srv_refuse_names[REFUSE_COUNT] = {"invalid", "decode_bounds", "names",
                                                        "groups", "memory_budget"};
const char *const xds_srv_verdict_names[5] = {"subscribe", "ack", "nack", "stale", "unknown_type"};

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
        m->refused[r] = refused ? cx_metric_with(refused, xds_srv_refuse_names[r]) : NULL;
    for (int t = 0; t <= XDS_TYPE_COUNT; t++) {
        const char *tn = t < XDS_TYPE_COUNT ? xlate_type_short((enum xds_type)t) : "unknown";
        if (t < XDS_TYPE_COUNT) {
            m->pushes[t] = pushes ? cx_metric_with(pushes, tn) : NULL;
            m->push_bytes[t] = bytes ? cx_metric_with(bytes, tn) : NULL;
            m->push_resources[t] = res ? cx_metric_with(res, tn) : NULL;
            m->latency[t] = lat ? cx_metric_with(lat, tn) : NULL;
        }
        for (int v = 0; v < 5; v++)
            m->requests[t][v] = req ? cx_metric_with(req, tn, xds_srv_verdict_names[v]) : NULL;
    }
}

/* ---- public API ----------------------------------------------------------------- */

static void on_counts(void *user)
{
    xds_srv_gauges(user);
}

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
    struct cx_metric *ar =
        cx_counter("coxswain_xds_auth_refused_total",
                   "Streams refused by authentication or authorization, by reason.", "reason");
    for (int r = 0; r < AUTH_COUNT; r++)
        s->auth_refused[r] = ar ? cx_metric_with(ar, xds_srv_auth_reason_names[r]) : NULL;
    struct cx_metric *as = cx_counter(
        "coxswain_xds_auth_streams_total",
        "Streams admitted to a Gateway's configuration, by how the client authenticated.",
        "method");
    struct cx_metric *tr = cx_counter("coxswain_xds_token_reviews_total",
                                      "TokenReviews of proxies' tokens, by outcome.", "outcome");
    static const char *const outcomes[3] = {"authenticated", "rejected", "unavailable"};
    for (int i = 0; i < 3; i++) {
        s->auth_streams[i] = as ? cx_metric_with(as, xds_srv_auth_method_names[i]) : NULL;
        s->token_reviews[i] = tr ? cx_metric_with(tr, outcomes[i]) : NULL;
    }
    s->token_cache_entries = cx_metric_with(
        cx_gauge("coxswain_xds_token_cache_entries", "Reviewed tokens remembered.", NULL));
    s->token_cache_hits = cx_metric_with(
        cx_counter("coxswain_xds_token_cache_hits_total",
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
        s->tokens = xds_tokens_new(
            cfg->reviewer, cfg->token_audience ? cfg->token_audience : XDS_AUTH_AUDIENCE_DEFAULT, 0,
            0);
        if (!s->tokens) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
    }
    s->cache = xds_cache_new();
    s->names = xds_names_pool_new();
    s->delta_sets = xds_delta_pool_new();
    s->budget.max = cfg->memory_budget ? cfg->memory_budget : XDS_MEMORY_BUDGET_DEFAULT;
    s->nack_qps = cfg->nack_qps > 0 ? cfg->nack_qps : XDS_NACK_QPS_DEFAULT;
    if (s->names)
        s->names->budget = &s->budget;
    s->default_group = strdup(cfg->default_group ? cfg->default_group : "");
    s->identifier = cfg->identifier ? strdup(cfg->identifier) : NULL;
    if (!s->cache || !s->names || !s->delta_sets || !s->default_group ||
        (cfg->identifier && !s->identifier)) {
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
                             s->auth == XDS_AUTH_NONE && cfg->tls_require_client_cert, err, errlen);
        if (!ctx)
            goto fail;
    }
    s->methods[0] = (struct xds_h2_method){
        .path = XDS_ADS_PATH,
        .on_open = xds_srv_ads_open,
        .on_message = xds_srv_message,
        .on_half_close = xds_srv_half_close,
        .on_writable = xds_srv_writable,
        .on_close = xds_srv_close,
    };
    s->methods[1] = s->methods[0];
    s->methods[1].path = XDS_DELTA_PATH;
    s->methods[1].on_open = xds_srv_delta_open;
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
    s->h2 = xds_h2_server_new(base, &hc, s->methods, 2, s, err, errlen);
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
void xds_srv_gauges(struct xds_server *s)
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
    xds_cache_set_snapshot(s->cache, snap, xds_srv_wake, s);
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
    xds_srv_gauges((struct xds_server *)s);
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
    struct xds_h2_mem_stats ms;
    xds_h2_server_mem(s->h2, &ms);
    out->h2_heap_bytes = ms.heap;
    out->h2_mapped_bytes = ms.mapped;
    out->h2_resident_bytes = ms.resident;
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
        xds_srv_memo_clear(&s->memo[i]);
    xds_cache_free(s->cache);
    xds_names_pool_free(s->names);
    xds_delta_pool_free(s->delta_sets);
    free(s->default_group);
    free(s->identifier);
    free(s);
}
