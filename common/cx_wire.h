#ifndef CX_WIRE_H
#define CX_WIRE_H

/* Protobuf wire format by hand, for the encoders that write messages
 * without protobuf-c (the translator's VirtualHosts, Clusters and
 * ClusterLoadAssignments; the xDS server's DiscoveryResponses, which wrap
 * the translator's bytes without re-encoding them). */

#include <stddef.h>
#include <stdint.h>

/* Bytes of |v| as a varint. */
static inline size_t cx_varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Writes |v| as a varint at |p| (room for 10 bytes); returns its length. */
static inline size_t cx_put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* Bytes of a length-delimited field of |len| bytes with a one-byte tag
 * (field numbers below 16). */
static inline size_t cx_ld_len(size_t len)
{
    return 1 + cx_varint_len(len) + len;
}

#endif
