/* Wire-format bounds checked before protobuf-c decodes a DiscoveryRequest. */
#include "cx_buf.h"
#include "cx_wire.h"
#include "cxtest.h"
#include "xds_ads.h"
#include "xds_pbcheck.h"

#include "envoy/service/discovery/v3/discovery.pb-c.h"
#include "google/protobuf/struct.pb-c.h"

#include <stdlib.h>
#include <string.h>

#define REQ_DESC (&envoy__service__discovery__v3__discovery_request__descriptor)

/* Appends tag + length + bytes. */
static size_t put_ld(uint8_t *out, uint8_t tag, const uint8_t *b, size_t n)
{
    size_t k = 0;
    out[k++] = tag;
    k += cx_put_varint(out + k, n);
    memmove(out + k, b, n);
    return k + n;
}

/* A google.protobuf.Value nesting |levels| ListValues, built inside out in
 * a buffer of |cap| bytes; returns its length. */
static size_t nested_value(uint8_t *buf, size_t cap, int levels)
{
    uint8_t *tmp = malloc(cap);
    size_t len = 0;
    for (int i = 0; i < levels; i++) {
        size_t n = put_ld(tmp, 0x0a, buf, len); /* ListValue.values */
        len = put_ld(buf, 0x32, tmp, n);        /* Value.list_value */
    }
    free(tmp);
    return len;
}

/* DiscoveryRequest{node{metadata{fields{"k": value}}}, type_url}: the value
 * starts at message level 5 (request 1, node 2, Struct 3, entry 4). */
static size_t request_with_value(uint8_t *out, size_t cap, int levels)
{
    uint8_t *v = malloc(cap), *a = malloc(cap);
    size_t n = nested_value(v, cap, levels);
    size_t k = put_ld(a, 0x0a, (const uint8_t *)"k", 1);
    k += put_ld(a + k, 0x12, v, n);     /* entry.value */
    n = put_ld(v, 0x0a, a, k);          /* Struct.fields */
    k = put_ld(a, 0x1a, v, n);          /* Node.metadata */
    size_t o = put_ld(out, 0x12, a, k); /* DiscoveryRequest.node */
    static const char url[] = "type.googleapis.com/envoy.config.listener.v3.Listener";
    o += put_ld(out + o, 0x22, (const uint8_t *)url, sizeof(url) - 1);
    free(v);
    free(a);
    return o;
}

static void test_depth_limit_exact(void)
{
    size_t cap = 4096;
    uint8_t *buf = malloc(cap);
    /* value at level 5 with L ListValues: Values at 5,7,..; the innermost
     * (empty) Value at 5 + 2L. 5 + 2*13 = 31 passes; 5 + 2*14 = 33 does not. */
    size_t n = request_with_value(buf, cap, 13);
    CHECK_INT_EQ(xds_pbcheck(REQ_DESC, buf, n), XDS_PB_OK);
    Envoy__Service__Discovery__V3__DiscoveryRequest *req =
        envoy__service__discovery__v3__discovery_request__unpack(NULL, n, buf);
    CHECK(req != NULL);
    if (req)
        envoy__service__discovery__v3__discovery_request__free_unpacked(req, NULL);
    n = request_with_value(buf, cap, 14);
    CHECK_INT_EQ(xds_pbcheck(REQ_DESC, buf, n), XDS_PB_TOO_DEEP);
    CHECK_STR_CONTAINS(xds_pbcheck_strerror(XDS_PB_TOO_DEEP), "deeper than 32 levels");
    free(buf);
}

/* The 155 KB request that crashed the replica: refused, and the state
 * machine says why without decoding it. */
static void test_twenty_thousand_levels(void)
{
    size_t cap = 400000;
    uint8_t *buf = malloc(cap);
    size_t n = request_with_value(buf, cap, 20000);
    CHECK_INT_GT(n, 100000);
    CHECK_INT_EQ(xds_pbcheck(REQ_DESC, buf, n), XDS_PB_TOO_DEEP);
    struct xds_ads_stream st;
    struct xds_ads_event ev;
    xds_ads_stream_init(&st);
    CHECK_INT_EQ(xds_ads_on_request(&st, buf, n, "g", &ev), XDS_ADS_EBOUND);
    CHECK_INT_EQ(ev.pb_error, XDS_PB_TOO_DEEP);
    CHECK(!st.node.have);
    xds_ads_stream_free(&st);
    free(buf);
}

/* Unknown fields are kept as bytes by protobuf-c, never decoded: deep bytes
 * there are fine. A known string field is not a message either. */
static void test_unknown_and_string_fields_not_walked(void)
{
    size_t cap = 200000;
    uint8_t *v = malloc(cap), *buf = malloc(cap);
    size_t n = nested_value(v, cap, 5000);
    size_t o = 0;
    buf[o++] = 0xfa;
    buf[o++] = 0x01; /* key 250 = field 31, LD */
    o += cx_put_varint(buf + o, n);
    memcpy(buf + o, v, n);
    o += n;
    o += put_ld(buf + o, 0x0a, v, n); /* version_info: a string */
    CHECK_INT_EQ(xds_pbcheck(REQ_DESC, buf, o), XDS_PB_OK);
    free(v);
    free(buf);
}

static void test_too_many_items(void)
{
    /* 300,000 empty resource names: 600 KB that decode into 300,000 strings */
    size_t count = 300000;
    uint8_t *buf = malloc(count * 2);
    for (size_t i = 0; i < count; i++) {
        buf[2 * i] = 0x1a;
        buf[2 * i + 1] = 0;
    }
    CHECK_INT_EQ(xds_pbcheck(REQ_DESC, buf, count * 2), XDS_PB_TOO_MANY);
    CHECK_INT_EQ(xds_pbcheck(REQ_DESC, buf, 2000), XDS_PB_OK);
    free(buf);
}

static void test_malformed(void)
{
    static const uint8_t truncated_len[] = {0x12, 0x05, 0x0a};
    static const uint8_t bad_varint[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
                                         0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    static const uint8_t group[] = {0x0b, 0x0c};
    static const uint8_t field0[] = {0x02, 0x00};
    static const uint8_t fixed_cut[] = {0x09, 1, 2, 3};
    CHECK_INT_EQ(xds_pbcheck(REQ_DESC, truncated_len, sizeof(truncated_len)), XDS_PB_MALFORMED);
    CHECK_INT_EQ(xds_pbcheck(REQ_DESC, bad_varint, sizeof(bad_varint)), XDS_PB_MALFORMED);
    CHECK_INT_EQ(xds_pbcheck(REQ_DESC, group, sizeof(group)), XDS_PB_MALFORMED);
    CHECK_INT_EQ(xds_pbcheck(REQ_DESC, field0, sizeof(field0)), XDS_PB_MALFORMED);
    CHECK_INT_EQ(xds_pbcheck(REQ_DESC, fixed_cut, sizeof(fixed_cut)), XDS_PB_MALFORMED);
    CHECK_INT_EQ(xds_pbcheck(REQ_DESC, (const uint8_t *)"", 0), XDS_PB_OK);
}

static const struct cxt_case cases[] = {
    CXT(test_depth_limit_exact),
    CXT(test_twenty_thousand_levels),
    CXT(test_unknown_and_string_fields_not_walked),
    CXT(test_too_many_items),
    CXT(test_malformed),
};
CXT_MAIN(cases)
