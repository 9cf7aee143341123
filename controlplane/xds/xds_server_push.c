/* The xDS server's responses: encoding (SotW lists shared by every stream
 * of a group, delta pieces referenced), pushing on wake-ups, NACK
 * accounting and push latency. */
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

void xds_srv_memo_clear(struct memo_entry *e)
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
    xds_srv_memo_clear(victim);
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

static void res_cleanup(const void *data, size_t len, void *arg)
{
    (void)data;
    (void)len;
    xlate_resource_unref(arg);
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
                 xlate_type_short(r->type), r->version, r->nonce, r->n, size, ss_node_id(ss));
    }
    return rc;
}

/* A delta response interleaves each resource's bytes with its own name,
 * version and Any header. Referencing every resource made two evbuffer
 * chains per resource (a 10,000-Cluster response: 20,000 chains, written a
 * few dozen bytes per iovec); small resources are copied into the
 * surrounding chain instead, large ones referenced (encoded once, never
 * copied). */
#define DELTA_REF_MIN 4096

static int emit_delta(void *user, const void *p, size_t n, struct xds_resource *res)
{
    struct evbuffer *eb = user;
    if (res && n >= DELTA_REF_MIN)
        return evbuffer_add_reference(eb, p, n, res_cleanup, xlate_resource_ref(res));
    return evbuffer_add(eb, p, n);
}

static int send_delta(struct sstream *ss, const struct xds_delta_response *r)
{
    struct xds_server *s = ss->srv;
    size_t size = xds_delta_response_size(r, s->identifier);
    if (size > UINT32_MAX)
        return -1;
    struct evbuffer *eb = evbuffer_new();
    if (!eb)
        return -1;
    uint8_t prefix[5];
    xds_frame_prefix(prefix, (uint32_t)size);
    int rc = evbuffer_add(eb, prefix, 5);
    if (rc == 0)
        rc = xds_delta_response_emit(r, s->identifier, emit_delta, eb);
    if (rc == 0)
        rc = xds_h2_stream_send(ss->h2, eb);
    evbuffer_free(eb);
    if (rc == 0) {
        s->stats.pushes_total[r->type]++;
        s->stats.push_bytes_total[r->type] += size + 5;
        s->stats.push_resources_total[r->type] += r->n;
        s->stats.delta_removed_total += r->nremoved;
        m_add(s->m.pushes[r->type], 1);
        m_add(s->m.push_bytes[r->type], (double)(size + 5));
        m_add(s->m.push_resources[r->type], (double)r->n);
        cx_debug("xds", "delta push %s nonce %s (%zu resources, %zu removed, %zu bytes) to %s",
                 xlate_type_short(r->type), r->nonce, r->n, r->nremoved, size, ss_node_id(ss));
    }
    return rc;
}

static void pump_delta(struct sstream *ss, const struct xds_ads_sets *sets, int64_t origin_ns)
{
    for (;;) {
        struct xds_delta_response r;
        int rc = xds_delta_next(&ss->dl, sets, origin_ns, &r);
        if (rc == 0)
            return;
        if (rc < 0) {
            xds_h2_stream_finish(ss->h2, XDS_GRPC_INTERNAL, "out of memory");
            return;
        }
        rc = send_delta(ss, &r);
        xds_delta_response_clear(&r);
        if (rc != 0) {
            xds_h2_stream_finish(ss->h2, XDS_GRPC_INTERNAL, "cannot queue response");
            return;
        }
    }
}

/* Sends whatever the stream's state says is due, unless its output is
 * congested (then on_writable comes back here). */
void xds_srv_pump(struct sstream *ss, int64_t origin_ns)
{
    if (!ss->registered || xds_h2_stream_queued(ss->h2) > XDS_H2_STREAM_LOW)
        return;
    const struct xds_ads_sets *sets = xds_cache_sets(ss->srv->cache, &ss->watch);
    /* A client served without credentials (the Gateway's
     * allowUnauthenticated) gets every type but Secrets: the SDS set it
     * sees is empty, so a Secret it names never comes. */
    static const struct xds_resource_set no_secrets = {.version = "0"};
    struct xds_ads_sets masked;
    if (sets && ss->no_secrets) {
        masked = *sets;
        masked.t[XDS_SECRET] = &no_secrets;
        sets = &masked;
    }
    if (ss->delta) {
        pump_delta(ss, sets, origin_ns);
        return;
    }
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

void xds_srv_wake(void *user, struct xds_cache_watch *w)
{
    struct xds_server *s = user;
    struct sstream *ss = (struct sstream *)w;
    /* The Gateway's spec.xdsAccess may have changed with the snapshot. */
    const char *msg = NULL;
    int code = xds_srv_authorize(ss, &msg);
    if (code != 0) {
        xds_h2_stream_finish(ss->h2, code, msg);
        return;
    }
    xds_srv_pump(ss, s->snapshot_ns);
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

void xds_srv_note_nack(struct sstream *ss, const struct xds_ads_event *ev)
{
    struct xds_server *s = ss->srv;
    enum xds_type t = (enum xds_type)ev->type;
    s->stats.nacks_total++;
    if (s->m.nacks)
        cx_metric_inc(s->m.nacks, ss_group(ss), xlate_type_short(t));
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
    cx_log_escape(ss_node_id(ss), st->last_node, sizeof(st->last_node));
    snprintf(st->last_message, sizeof(st->last_message), "%s", text);
    cx_warn("xds", "NACK from node \"%s\" (group \"%s\", %s) for %s version %s: code %d: %s",
            st->last_node, ss_group(ss), xds_h2_stream_peer(ss->h2), xlate_type_short(t),
            ev->version, ev->nack_code, text);
    if (s->nack_cb) {
        struct xds_nack n = {
            .group = ss_group(ss),
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

void xds_srv_clear_nack(struct sstream *ss, enum xds_type t)
{
    if (!ss->nack_active[t])
        return;
    ss->nack_active[t] = 0;
    struct xds_nack_stat *st = xds_cache_nack(&ss->watch, t);
    if (st && st->active)
        st->active--;
}

void xds_srv_note_latency(struct xds_server *s, int type, int64_t origin_ns)
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
