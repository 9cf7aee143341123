#include "xds_pbcheck.h"

struct walk {
    size_t items;
};

/* Reads a varint at *p (< end). Returns 0, or -1 when truncated or longer
 * than 10 bytes. */
static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*p >= end)
            return -1;
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static int walk_msg(struct walk *w, const ProtobufCMessageDescriptor *desc, const uint8_t *p,
                    const uint8_t *end, int depth)
{
    if (depth > XDS_PB_MAX_DEPTH)
        return XDS_PB_TOO_DEEP;
    if (++w->items > XDS_PB_MAX_ITEMS)
        return XDS_PB_TOO_MANY;
    while (p < end) {
        uint64_t key, v;
        if (get_varint(&p, end, &key) != 0)
            return XDS_PB_MALFORMED;
        uint64_t num = key >> 3;
        if (num == 0 || num > 0x1fffffff)
            return XDS_PB_MALFORMED;
        switch (key & 7) {
        case 0:
            if (get_varint(&p, end, &v) != 0)
                return XDS_PB_MALFORMED;
            break;
        case 1:
            if (end - p < 8)
                return XDS_PB_MALFORMED;
            p += 8;
            break;
        case 5:
            if (end - p < 4)
                return XDS_PB_MALFORMED;
            p += 4;
            break;
        case 2: {
            if (get_varint(&p, end, &v) != 0 || v > (uint64_t)(end - p))
                return XDS_PB_MALFORMED;
            const ProtobufCFieldDescriptor *f =
                protobuf_c_message_descriptor_get_field(desc, (unsigned)num);
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                int rc = walk_msg(w, f->descriptor, p, p + v, depth + 1);
                if (rc != 0)
                    return rc;
            } else if (f &&
                       (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_BYTES)) {
                if (++w->items > XDS_PB_MAX_ITEMS)
                    return XDS_PB_TOO_MANY;
            }
            /* packed scalars and unknown fields: held as they are */
            p += v;
            break;
        }
        default: /* groups (3, 4) and reserved wire types: protobuf-c refuses them too */
            return XDS_PB_MALFORMED;
        }
    }
    return XDS_PB_OK;
}

int xds_pbcheck(const ProtobufCMessageDescriptor *desc, const uint8_t *msg, size_t len)
{
    struct walk w = {0};
    return walk_msg(&w, desc, msg, msg + len, 1);
}

#define STR_(x) #x
#define STR(x)  STR_(x)

const char *xds_pbcheck_strerror(int err)
{
    switch (err) {
    case XDS_PB_OK:
        return "ok";
    case XDS_PB_TOO_DEEP:
        return "the message nests deeper than " STR(XDS_PB_MAX_DEPTH) " levels";
    case XDS_PB_TOO_MANY:
        return "the message holds more than " STR(XDS_PB_MAX_ITEMS) " messages and strings";
    default:
        return "not valid protobuf";
    }
}
