/*
 * cx_buf: a growable byte buffer with a hard cap.
 *
 * Every buffer that holds untrusted input names its cap (a watch line, a
 * gRPC message, a request body), so a peer can never grow our memory without
 * bound. The data is always NUL-terminated for convenience (the NUL is not
 * counted in len). Not thread-safe; owned by whoever embeds it.
 */
#ifndef CX_BUF_H
#define CX_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct cx_buf {
    char *data; /* NULL until the first append */
    size_t len; /* bytes used, excluding the terminating NUL */
    size_t cap; /* bytes allocated */
    size_t max; /* hard cap on len; 0 means CX_BUF_DEFAULT_MAX */
};

#define CX_BUF_DEFAULT_MAX ((size_t)64 << 20) /* 64 MiB */

/* Initialises |b| with cap |max| bytes (0: CX_BUF_DEFAULT_MAX). */
void cx_buf_init(struct cx_buf *b, size_t max);

/* Appends |n| bytes. Returns 0, or -1 if the cap would be exceeded or memory
 * ran out; on failure |b| is unchanged. */
__attribute__((warn_unused_result)) int cx_buf_append(struct cx_buf *b, const void *p, size_t n);
__attribute__((warn_unused_result)) int cx_buf_puts(struct cx_buf *b, const char *s);
__attribute__((warn_unused_result, format(printf, 2, 3))) int cx_buf_printf(struct cx_buf *b,
                                                                            const char *fmt, ...);
__attribute__((warn_unused_result, format(printf, 2, 0))) int
cx_buf_vprintf(struct cx_buf *b, const char *fmt, va_list ap);

/* Removes the first |n| bytes (n <= len). */
void cx_buf_consume(struct cx_buf *b, size_t n);

/* Empties |b| but keeps its allocation. */
void cx_buf_reset(struct cx_buf *b);

/* Hands the data to the caller (caller frees it; never NULL on success, an
 * empty string for an empty buffer) and leaves |b| empty. Returns NULL only
 * when memory ran out. */
char *cx_buf_steal(struct cx_buf *b, size_t *len);

/* Frees the data and leaves |b| empty (reusable with the same cap). */
void cx_buf_free(struct cx_buf *b);

#endif
