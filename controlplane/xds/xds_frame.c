#include "xds_frame.h"

#include <stdlib.h>
#include <string.h>

void xds_deframer_init(struct xds_deframer *d, size_t max)
{
    memset(d, 0, sizeof(*d));
    d->max = max ? max : XDS_MAX_MESSAGE_DEFAULT;
}

/* Charges |n| bytes to every budget, or none. Returns 0 or -1. */
static int charge(struct xds_deframer *d, size_t n)
{
    for (int i = 0; i < 2; i++) {
        struct xds_budget *b = d->budget[i];
        if (b && b->max && (n > b->max || b->used > b->max - n)) {
            for (int j = 0; j < 2; j++) /* every budget counts the refusal */
                if (d->budget[j])
                    d->budget[j]->refused++;
            return -1;
        }
    }
    for (int i = 0; i < 2; i++)
        if (d->budget[i])
            d->budget[i]->used += n;
    return 0;
}

static void release(struct xds_deframer *d, size_t n)
{
    for (int i = 0; i < 2; i++)
        if (d->budget[i])
            d->budget[i]->used -= n;
}

void xds_deframer_set_budget(struct xds_deframer *d, struct xds_budget *global,
                             struct xds_budget *conn)
{
    d->budget[0] = global;
    d->budget[1] = conn;
}

void xds_deframer_free(struct xds_deframer *d)
{
    if (d->body)
        release(d, d->need);
    free(d->body);
    d->body = NULL;
    d->have = 0;
    d->hdr_have = 0;
}

int xds_deframer_partial(const struct xds_deframer *d)
{
    return d->hdr_have > 0;
}

void xds_frame_prefix(uint8_t out[5], uint32_t len)
{
    out[0] = 0;
    out[1] = (uint8_t)(len >> 24);
    out[2] = (uint8_t)(len >> 16);
    out[3] = (uint8_t)(len >> 8);
    out[4] = (uint8_t)len;
}

/* Validates a complete 5-byte header and sets d->need. */
static int header_done(struct xds_deframer *d)
{
    if (d->hdr[0] == 1)
        return XDS_DEFRAME_COMPRESSED;
    if (d->hdr[0] != 0)
        return XDS_DEFRAME_BAD_FLAG;
    uint32_t n = ((uint32_t)d->hdr[1] << 24) | ((uint32_t)d->hdr[2] << 16) |
                 ((uint32_t)d->hdr[3] << 8) | (uint32_t)d->hdr[4];
    if (n > d->max)
        return XDS_DEFRAME_TOO_BIG;
    d->need = n;
    d->have = 0;
    return 0;
}

int xds_deframer_feed(struct xds_deframer *d, const uint8_t *data, size_t len, xds_deframe_cb cb,
                      void *user)
{
    if (d->failed)
        return d->failed;
    int rc = 0;
    while (len > 0) {
        if (d->hdr_have < 5) {
            size_t take = 5 - d->hdr_have;
            if (take > len)
                take = len;
            memcpy(d->hdr + d->hdr_have, data, take);
            d->hdr_have += take;
            data += take;
            len -= take;
            if (d->hdr_have < 5)
                break;
            rc = header_done(d);
            if (rc != 0)
                goto out;
        }
        if (len == 0 && d->need > 0)
            break; /* the body comes with the next chunk */
        if (d->have == 0 && len >= d->need) {
            /* The whole body is here: hand it over without copying. */
            const uint8_t *msg = data;
            uint32_t n = d->need;
            data += n;
            len -= n;
            d->hdr_have = 0;
            rc = cb(user, n ? msg : (const uint8_t *)"", n);
            if (rc != 0)
                return rc;
            continue;
        }
        if (!d->body) {
            /* Charged for the whole declared length before any of it is
             * held: a peer that declares much and sends little holds the
             * budget, not memory we did not plan for. */
            if (charge(d, d->need) != 0) {
                rc = XDS_DEFRAME_BUDGET;
                goto out;
            }
            d->body = malloc(d->need ? d->need : 1);
            if (!d->body) {
                release(d, d->need);
                rc = XDS_DEFRAME_NOMEM;
                goto out;
            }
        }
        size_t take = d->need - d->have;
        if (take > len)
            take = len;
        memcpy(d->body + d->have, data, take);
        d->have += take;
        data += take;
        len -= take;
        if (d->have < d->need)
            break;
        uint8_t *body = d->body;
        size_t n = d->need;
        d->body = NULL;
        d->have = 0;
        d->hdr_have = 0;
        rc = cb(user, body, n);
        free(body);
        release(d, n);
        if (rc != 0)
            return rc;
    }
    return 0;
out:
    d->failed = rc;
    if (d->body)
        release(d, d->need);
    free(d->body);
    d->body = NULL;
    return rc;
}
