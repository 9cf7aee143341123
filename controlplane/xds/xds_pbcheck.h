/*
 * xds_pbcheck: bounds on an untrusted protobuf message, checked on the wire
 * before protobuf-c decodes it.
 *
 * protobuf-c's unpack recurses once per nested message, with no limit: a
 * 155 KB DiscoveryRequest whose node.metadata nests 20,000 ListValues runs
 * it off the stack. This walk follows exactly the fields the message's
 * descriptor decodes as messages (unknown fields are skipped as protobuf-c
 * keeps them, as bytes), with recursion bounded by the depth limit, and
 * counts what decoding would allocate (messages and strings), so that a
 * small message cannot expand into a huge tree either. Linear in the bytes.
 *
 * I/O-free, no allocation, thread-safe.
 */
#ifndef XDS_PBCHECK_H
#define XDS_PBCHECK_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

/* Message levels allowed, the outermost message counting as 1. */
#define XDS_PB_MAX_DEPTH 32
/* Messages and string/bytes fields a decode may allocate. */
#define XDS_PB_MAX_ITEMS 200000

enum xds_pbcheck_err {
    XDS_PB_OK = 0,
    XDS_PB_TOO_DEEP = -1,  /* nesting above XDS_PB_MAX_DEPTH */
    XDS_PB_TOO_MANY = -2,  /* more than XDS_PB_MAX_ITEMS messages and strings */
    XDS_PB_MALFORMED = -3, /* not valid protobuf wire format */
};

/* Walks |len| bytes of |msg| as a message of type |desc|. Returns
 * XDS_PB_OK or one of the errors above; a message that passes can be given
 * to protobuf-c's unpack without unbounded recursion. */
__attribute__((warn_unused_result)) int xds_pbcheck(const ProtobufCMessageDescriptor *desc,
                                                    const uint8_t *msg, size_t len);

/* A sentence for the error (static string). */
const char *xds_pbcheck_strerror(int err);

#endif
