/* Fuzz target: arbitrary bytes as the client side of a delta ADS stream
 * (DeltaAggregatedResources). The bytes go through the gRPC deframer in
 * chunk sizes picked by the input's first byte; each message goes to the
 * delta state machine; after each, the target drains xds_delta_next()
 * against one of two snapshots of a group (a message whose first byte is
 * odd swaps them) and encodes every response. Invariants: at most one
 * response per type is outstanding, every encoded response has the size
 * xds_delta_response_size() says and parses back as a DeltaDiscoveryResponse
 * of the right type with as many resources and removals, the memory budget
 * is given back and the interned sets freed when the stream goes, and
 * nothing leaks (ASan). */
#include "cx_buf.h"
#include "xds_delta.h"
#include "xds_frame.h"
#include "xlate_snapshot.h"

#include "envoy/service/discovery/v3/discovery.pb-c.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct xds_resource *res(enum xds_type t, const char *name, const char *payload)
{
    size_t n = strlen(payload);
    uint8_t *b = malloc(n + 1);
    memcpy(b, payload, n + 1);
    return xlate_resource_new(t, name, b, n);
}

/* Two versions of one group; the second changes some and drops c2. */
static struct xds_resource_set sets[2][XDS_TYPE_COUNT];

static void build(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    const char *names[XDS_TYPE_COUNT][3] = {{"*", "l1", "l2"},
                                            {"", "r1", "*"},
                                            {"c1", "c2", "c3"},
                                            {"c1", "c2", "e"},
                                            {"*", "s1", "s2"}};
    for (int v = 0; v < 2; v++) {
        for (int t = 0; t < XDS_TYPE_COUNT; t++) {
            struct xds_resource_set *s = &sets[v][t];
            s->items = calloc(3, sizeof(*s->items));
            for (int i = 0; i < 3; i++) {
                if (v == 1 && t == XDS_CLUSTER && i == 1)
                    continue;
                s->items[s->n++] = res((enum xds_type)t, names[t][i], v && i == 0 ? "v2" : "v1");
            }
            if (xlate_resource_set_seal(s) != 0)
                abort();
        }
    }
}

struct ctx {
    struct xds_delta_stream st;
    int which;
    int64_t clock;
};

static int emit(void *user, const void *p, size_t n, struct xds_resource *r)
{
    (void)r;
    return cx_buf_append(user, p, n);
}

static void drain(struct ctx *c)
{
    struct xds_ads_sets ss;
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        ss.t[t] = &sets[c->which][t];
    int seen[XDS_TYPE_COUNT] = {0};
    for (int round = 0; round < 8; round++) {
        struct xds_delta_response r;
        int rc = xds_delta_next(&c->st, &ss, ++c->clock, &r);
        if (rc <= 0)
            return;
        if (seen[r.type]++) /* a second response of one type before its ACK */
            abort();
        struct cx_buf b;
        cx_buf_init(&b, 0);
        if (xds_delta_response_emit(&r, "fuzz", emit, &b) != 0 ||
            b.len != xds_delta_response_size(&r, "fuzz"))
            abort();
        Envoy__Service__Discovery__V3__DeltaDiscoveryResponse *d =
            envoy__service__discovery__v3__delta_discovery_response__unpack(NULL, b.len,
                                                                            (uint8_t *)b.data);
        if (!d || strcmp(d->type_url, xlate_type_url(r.type)) != 0 || d->n_resources != r.n ||
            d->n_removed_resources != r.nremoved || (r.n == 0 && r.nremoved == 0))
            abort();
        envoy__service__discovery__v3__delta_discovery_response__free_unpacked(d, NULL);
        cx_buf_free(&b);
        xds_delta_response_clear(&r);
    }
    abort(); /* more than one response per type */
}

static int on_msg(void *user, const uint8_t *msg, size_t len)
{
    struct ctx *c = user;
    struct xds_ads_event ev;
    if (len && (msg[0] & 1))
        c->which ^= 1;
    int rc = xds_delta_on_request(&c->st, msg, len, "default", &ev);
    if (rc == 0)
        drain(c);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    build();
    if (size < 1)
        return 0;
    size_t chunk = (size_t)(data[0] % 17) + 1;
    data++;
    size--;
    struct ctx c;
    memset(&c, 0, sizeof(c));
    struct xds_delta_pool *pool = xds_delta_pool_new();
    struct xds_budget budget = {0};
    xds_delta_stream_init(&c.st, pool, &budget);
    struct xds_deframer d;
    xds_deframer_init(&d, 1 << 16);
    for (size_t off = 0; off < size; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        if (xds_deframer_feed(&d, data + off, n, on_msg, &c) != 0)
            break;
    }
    xds_deframer_free(&d);
    xds_delta_stream_free(&c.st);
    if (budget.used != 0 || xds_delta_pool_count(pool) != 0)
        abort();
    xds_delta_pool_free(pool);
    return 0;
}
