/*
 * cx_wire: the one protobuf wire-format writer, for the messages written
 * without protobuf-c: the translator's VirtualHosts, RouteConfigurations,
 * Clusters and ClusterLoadAssignments, and the xDS server's
 * DiscoveryResponses (which wrap the translator's bytes without re-encoding
 * them). A field is named by its number and wire type; the key byte(s) are
 * computed here, never written as literals.
 *
 * The writer fills its buffer from the end: a message's fields go in last
 * to first, so when a nested message is done its length is known and its
 * key and length go in front of it (cx_wire_close). One pass, no sizing
 * pass. The bytes are what protobuf-c writes when the caller keeps its
 * rules: fields in number order (so written in reverse), proto3 zero values
 * left out, oneof members and present messages written even when empty.
 *
 * A writer belongs to one thread; it frees its own buffer when finished
 * and after a failure (memory, or the message passing the writer's cap)
 * remembers the failure until cx_wire_finish.
 *
 * Encoders that put already-encoded bytes behind their field headers, in
 * order (a RouteConfiguration of encoded virtual hosts, the xDS server's
 * DiscoveryResponses streamed piece by piece), use the header functions
 * below alone.
 */
#ifndef CX_WIRE_H
#define CX_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum cx_wire_type {
    CX_WIRE_VARINT = 0,
    CX_WIRE_I64 = 1,
    CX_WIRE_LEN = 2, /* length-delimited: strings, bytes, messages */
    CX_WIRE_I32 = 5,
};

/* Longest field header: a key of field number up to 2^29 (5 bytes) and a
 * length or value (10 bytes). */
#define CX_WIRE_HDR_MAX 15

/* The thread's scratch buffer for writers (see cx_wire_init). */
#define CX_WIRE_SCRATCH 16384

/* The key of field |field| with wire type |type|. */
static inline uint64_t cx_wire_key(uint32_t field, enum cx_wire_type type)
{
    return (uint64_t)field << 3 | (uint64_t)type;
}

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

/* Bytes of the length-delimited field |field| holding |len| bytes, key and
 * length included. */
static inline size_t cx_wire_len_size(uint32_t field, size_t len)
{
    return cx_varint_len(cx_wire_key(field, CX_WIRE_LEN)) + cx_varint_len(len) + len;
}

/* Writes the key and length of the length-delimited field |field| holding
 * |len| bytes at |p| (room for CX_WIRE_HDR_MAX); returns the bytes written.
 * The |len| bytes of content go right after. */
static inline size_t cx_wire_put_len_header(uint8_t *p, uint32_t field, size_t len)
{
    size_t n = cx_put_varint(p, cx_wire_key(field, CX_WIRE_LEN));
    return n + cx_put_varint(p + n, len);
}

/* ---- the writer, back to front ------------------------------------------- */

struct cx_wire {
    uint8_t *buf; /* malloc, or the thread's scratch buffer */
    size_t cap;
    size_t used; /* the bytes written: the last |used| of buf */
    size_t max;  /* the message may not pass it (0: no cap) */
    int oom;     /* no more is written: memory ran out, or over */
    int over;    /* the message would have passed |max| */
    int scratch; /* buf is the thread's scratch buffer (not freed) */
};

/* An empty writer with room for |cap| bytes (more is allocated as needed).
 * Returns 0, or -1 when memory ran out (nothing to free then). A message
 * that fits in CX_WIRE_SCRATCH bytes is written in a buffer of the thread
 * (one writer at a time has it; others allocate): tens of thousands of
 * small messages in a row allocate only their copies out. */
int cx_wire_init(struct cx_wire *w, size_t cap);

/* The same, for a message of at most |max| bytes (0: no cap): the buffer
 * never grows past |max|, and writing more fails the writer
 * (cx_wire_finish returns -2). The first buffer is |cap| bytes, or |max|
 * when smaller. */
int cx_wire_init_max(struct cx_wire *w, size_t cap, size_t max);

/* Where the content of a message field begins: pass it to cx_wire_close
 * once the content (its last field first) is written. */
static inline size_t cx_wire_mark(const struct cx_wire *w)
{
    return w->used;
}

/* Room for |n| more bytes in front of what is written (the slow path of
 * cx_wire_front); NULL, and the writer failed, when memory ran out or the
 * message would pass the cap. */
uint8_t *cx_wire_front_grow(struct cx_wire *w, size_t n);

/* Room for |n| more bytes in front of what is written, to be filled by the
 * caller (bytes packed by another encoder); NULL when memory ran out or
 * the message would pass the cap. The buffer never passes the cap, so
 * room in it is within the cap. */
static inline uint8_t *cx_wire_front(struct cx_wire *w, size_t n)
{
    if (__builtin_expect(!w->oom && w->cap - w->used >= n, 1)) {
        w->used += n;
        return w->buf + w->cap - w->used;
    }
    return cx_wire_front_grow(w, n);
}

static inline void cx_wire_varint(struct cx_wire *w, uint64_t v)
{
    if (v < 0x80) { /* keys, small lengths and numbers: one byte */
        uint8_t *p = cx_wire_front(w, 1);
        if (p)
            *p = (uint8_t)v;
        return;
    }
    uint8_t tmp[10];
    size_t n = cx_put_varint(tmp, v);
    uint8_t *p = cx_wire_front(w, n);
    if (p)
        memcpy(p, tmp, n);
}

/* The varint field |field| = |v| (written even when 0: leave proto3 zero
 * values out at the call). */
static inline void cx_wire_uint(struct cx_wire *w, uint32_t field, uint64_t v)
{
    cx_wire_varint(w, v);
    cx_wire_varint(w, cx_wire_key(field, CX_WIRE_VARINT));
}

/* The length-delimited field |field| holding the |n| bytes at |p|. */
static inline void cx_wire_bytes(struct cx_wire *w, uint32_t field, const void *p, size_t n)
{
    uint8_t *d = cx_wire_front(w, n);
    if (d && n)
        memcpy(d, p, n);
    cx_wire_varint(w, n);
    cx_wire_varint(w, cx_wire_key(field, CX_WIRE_LEN));
}

static inline void cx_wire_str(struct cx_wire *w, uint32_t field, const char *s)
{
    cx_wire_bytes(w, field, s, strlen(s));
}

/* A proto3 string field: left out when NULL or empty. */
static inline void cx_wire_str3(struct cx_wire *w, uint32_t field, const char *s)
{
    if (s && *s)
        cx_wire_str(w, field, s);
}

/* Ends the message field |field| whose content was written since |mark|. */
static inline void cx_wire_close(struct cx_wire *w, uint32_t field, size_t mark)
{
    cx_wire_varint(w, w->used - mark);
    cx_wire_varint(w, cx_wire_key(field, CX_WIRE_LEN));
}

/* google.protobuf.UInt32Value / BoolValue {value: v} as field |field| (the
 * message present, its value left out when 0). */
static inline void cx_wire_wrapped(struct cx_wire *w, uint32_t field, uint64_t v)
{
    size_t mark = w->used;
    if (v)
        cx_wire_uint(w, 1, v);
    cx_wire_close(w, field, mark);
}

/* google.protobuf.Duration of |ns| nanoseconds as field |field|. */
static inline void cx_wire_duration(struct cx_wire *w, uint32_t field, int64_t ns)
{
    size_t mark = w->used;
    int32_t nanos = (int32_t)(ns % 1000000000);
    int64_t seconds = ns / 1000000000;
    if (nanos) /* int32: negative values are sign-extended to 64 bits */
        cx_wire_uint(w, 2, (uint64_t)(int64_t)nanos);
    if (seconds)
        cx_wire_uint(w, 1, (uint64_t)seconds);
    cx_wire_close(w, field, mark);
}

/* The message written, copied out at its size into |*out| (caller frees)
 * and |*len|; frees the writer's buffer. Returns 0, -1 when memory ran out
 * at any point, or -2 when the message would have passed the writer's cap
 * (nothing to free then). */
__attribute__((warn_unused_result)) int cx_wire_finish(struct cx_wire *w, uint8_t **out,
                                                       size_t *len);

/* Frees the writer's buffer without output (an error path). */
void cx_wire_discard(struct cx_wire *w);

#endif
