/* The xDS server's gRPC methods, StreamAggregatedResources (SotW) and
 * DeltaAggregatedResources: a call's life from open to close. */
#include "xds_server_impl.h"

#include "cx_hash.h"
#include "cx_log.h"
#include "cx_time.h"
#include "xds_frame.h"
#include "xds_pbcheck.h"
#include "xlate_snapshot.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- gRPC method callbacks ------------------------------------------------------ */

static void *stream_open(struct xds_server *s, struct xds_h2_stream *st, int delta)
{
    struct sstream *ss = xds_h2_stream_mem_alloc(st, sizeof(*ss));
    if (!ss) {
        xds_h2_stream_finish(st, XDS_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    ss->srv = s;
    ss->h2 = st;
    char msg[600];
    enum auth_reason why = AUTH_BAD_TOKEN;
    int code = xds_srv_authenticate(ss, st, msg, sizeof(msg), &why);
    if (code != 0) {
        xds_srv_auth_refused(s, why, xds_h2_stream_peer(st), msg);
        xds_h2_stream_finish(st, code, msg);
        free(ss->id);
        xds_h2_stream_mem_free(st, ss);
        return NULL;
    }
    cx_ratelimit_init(&ss->nack_rl, s->nack_qps, XDS_NACK_BURST, cx_mono_ns());
    ss->delta = (uint8_t)delta;
    if (delta) {
        xds_delta_stream_init(&ss->dl, s->delta_sets, &s->budget);
    } else {
        xds_ads_stream_init(&ss->ads);
        xds_ads_stream_set_pool(&ss->ads, s->names);
    }
    s->stats.streams++;
    s->stats.streams_total++;
    m_add(s->m.streams_total, 1);
    xds_srv_gauges(s);
    return ss;
}

void *xds_srv_ads_open(void *user, struct xds_h2_stream *st)
{
    return stream_open(user, st, 0);
}

void *xds_srv_delta_open(void *user, struct xds_h2_stream *st)
{
    return stream_open(user, st, 1);
}

int xds_srv_message(void *ctx, const uint8_t *msg, size_t len, const char **errmsg)
{
    struct sstream *ss = ctx;
    struct xds_server *s = ss->srv;
    struct xds_ads_event ev;
    s->stats.requests_total++;
    if (s->tap)
        s->tap(s->tap_user, ss_have_node(ss) ? ss_node_id(ss) : "", msg, len);
    int rc = ss->delta ? xds_delta_on_request(&ss->dl, msg, len, s->default_group, &ev)
                       : xds_ads_on_request(&ss->ads, msg, len, s->default_group, &ev);
    if (ev.first_node && !ss->registered && !ss->auth_pending) {
        /* Until the token's review ends, requests only update the
         * stream's state; token_checked admits it. */
        int code = xds_srv_admit(ss, errmsg);
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
        *errmsg = "too many resource names: more than 100000 per stream and type";
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
        const struct xds_delta_type *td = &ss->dl.types[ev.type];
        const struct xds_exchange *x = ss->delta ? &td->x : &ts->x;
        cx_debug("xds", "%srequest %s %s from %s: %zu names%s, nonce sent %s, awaiting %d",
                 ss->delta ? "delta " : "", xlate_type_short((enum xds_type)ev.type),
                 xds_srv_verdict_names[ev.verdict], ss_node_id(ss),
                 ss->delta ? td->nsubs : ts->nnames,
                 (ss->delta ? td->wildcard : ts->wildcard) ? " (wildcard)" : "", x->nonce_sent,
                 x->awaiting);
    }
    xds_srv_gauges(s);
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
        xds_srv_note_latency(s, ev.type, ev.origin_ns);
    switch (ev.verdict) {
    case XDS_ADS_ACK:
        s->stats.acks_total++;
        xds_srv_clear_nack(ss, (enum xds_type)ev.type);
        xds_srv_note_latency(s, ev.type, ev.origin_ns);
        break;
    case XDS_ADS_NACK:
        if (ss->registered) /* never from a client not (yet) authorized */
            xds_srv_note_nack(ss, &ev);
        break;
    case XDS_ADS_STALE:
        s->stats.stale_total++;
        break;
    case XDS_ADS_SUBSCRIBE:
    case XDS_ADS_UNKNOWN_TYPE:
        break;
    }
    xds_srv_pump(ss, cx_mono_ns());
    return 0;
}

void xds_srv_half_close(void *ctx)
{
    struct sstream *ss = ctx;
    xds_h2_stream_finish(ss->h2, XDS_GRPC_OK, NULL);
}

void xds_srv_writable(void *ctx)
{
    struct sstream *ss = ctx;
    xds_srv_pump(ss, cx_mono_ns());
}

void xds_srv_close(void *ctx)
{
    struct sstream *ss = ctx;
    struct xds_server *s = ss->srv;
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        xds_srv_clear_nack(ss, (enum xds_type)t);
    if (ss->registered)
        xds_cache_watch_remove(s->cache, &ss->watch);
    xds_tokens_cancel(&ss->waiter);
    free(ss->refusal);
    free(ss->id);
    if (ss->delta)
        xds_delta_stream_free(&ss->dl);
    else
        xds_ads_stream_free(&ss->ads);
    s->stats.streams--;
    xds_h2_stream_mem_free(ss->h2, ss);
    xds_srv_gauges(s);
}
