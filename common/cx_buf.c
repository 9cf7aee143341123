#include "cx_buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cx_buf_init(struct cx_buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max ? max : CX_BUF_DEFAULT_MAX;
}

static size_t buf_max(const struct cx_buf *b)
{
    return b->max ? b->max : CX_BUF_DEFAULT_MAX;
}

/* Makes room for |extra| more bytes plus the NUL. */
static int buf_reserve(struct cx_buf *b, size_t extra)
{
    if (extra > buf_max(b) || b->len > buf_max(b) - extra)
        return -1;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < need)
        ncap *= 2;
    char *p = realloc(b->data, ncap);
    if (!p)
        return -1;
    b->data = p;
    b->cap = ncap;
    return 0;
}

int cx_buf_append(struct cx_buf *b, const void *p, size_t n)
{
    if (buf_reserve(b, n) != 0)
        return -1;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int cx_buf_puts(struct cx_buf *b, const char *s)
{
    return cx_buf_append(b, s, strlen(s));
}

int cx_buf_vprintf(struct cx_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || buf_reserve(b, (size_t)n) != 0)
        return -1;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int cx_buf_printf(struct cx_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = cx_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

void cx_buf_consume(struct cx_buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
    } else {
        memmove(b->data, b->data + n, b->len - n);
        b->len -= n;
    }
    if (b->data)
        b->data[b->len] = '\0';
}

void cx_buf_reset(struct cx_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

char *cx_buf_steal(struct cx_buf *b, size_t *len)
{
    char *p = b->data;
    if (!p) {
        p = calloc(1, 1);
        if (!p)
            return NULL;
    }
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return p;
}

void cx_buf_free(struct cx_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}
