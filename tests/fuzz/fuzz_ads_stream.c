/* Fuzz target: arbitrary bytes as the client side of an ADS stream. The
 * bytes go through the gRPC deframer in chunk sizes picked by the input's
 * first byte; each message goes to the ADS state machine; after each, the
 * target drains xds_ads_next() against one of two snapshots (a message whose
 * first byte is odd swaps them) and encodes every response. Invariants:
 * at most one response per type is outstanding, every encoded response has
 * the size xds_ads_response_size() says and parses back as a
 * DiscoveryResponse of the right type, and nothing leaks (ASan). */
#include "xds_ads.h"
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

/* Two versions of one group: "l1","r1","c1"/"c2","c1" (EDS); the second
 * changes some and drops c2. */
static struct xds_resource_set sets[2][XDS_TYPE_COUNT];

static void build(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    const char *names[XDS_TYPE_COUNT][2] = {
        {"l1", "*"}, {"r1", ""}, {"c1", "c2"}, {"c1", "e"}, {"s1", "*"}};
    for (int v = 0; v < 2; v++) {
        for (int t = 0; t < XDS_TYPE_COUNT; t++) {
            struct xds_resource_set *s = &sets[v][t];
            s->items = calloc(2, sizeof(*s->items));
            for (int i = 0; i < 2; i++) {
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
    struct xds_ads_stream st;
    int which;
    int64_t clock;
};

static void drain(struct ctx *c)
{
    struct xds_ads_sets ss;
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        ss.t[t] = &sets[c->which][t];
    int seen[XDS_TYPE_COUNT] = {0};
    for (int round = 0; round < 8; round++) {
        struct xds_ads_response r;
        int rc = xds_ads_next(&c->st, &ss, ++c->clock, &r);
        if (rc <= 0)
            return;
        if (seen[r.type]++) /* a second response of one type before its ACK */
            abort();
        struct cx_buf b;
        cx_buf_init(&b, 0);
        if (xds_ads_response_encode(&r, "fuzz", &b) != 0 ||
            b.len != xds_ads_response_size(&r, "fuzz"))
            abort();
        Envoy__Service__Discovery__V3__DiscoveryResponse *d =
            envoy__service__discovery__v3__discovery_response__unpack(NULL, b.len,
                                                                      (uint8_t *)b.data);
        if (!d || strcmp(d->type_url, xlate_type_url(r.type)) != 0 || d->n_resources != r.n)
            abort();
        envoy__service__discovery__v3__discovery_response__free_unpacked(d, NULL);
        cx_buf_free(&b);
        xds_ads_response_clear(&r);
    }
    abort(); /* more than one response per type */
}

static int on_msg(void *user, const uint8_t *msg, size_t len)
{
    struct ctx *c = user;
    struct xds_ads_event ev;
    if (len && (msg[0] & 1))
        c->which ^= 1;
    int rc = xds_ads_on_request(&c->st, msg, len, "default", &ev);
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
    struct xds_names_pool *pool = xds_names_pool_new();
    xds_ads_stream_init(&c.st);
    xds_ads_stream_set_pool(&c.st, pool);
    struct xds_deframer d;
    xds_deframer_init(&d, 1 << 16);
    for (size_t off = 0; off < size; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        if (xds_deframer_feed(&d, data + off, n, on_msg, &c) != 0)
            break;
    }
    xds_deframer_free(&d);
    xds_ads_stream_free(&c.st);
    if (pool->count != 0) /* every list released */
        abort();
    xds_names_pool_free(pool);
    return 0;
}
