#include "xds_h2_impl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- nghttp2 memory ------------------------------------------------------------
 * Every session allocates a 16 KB frame buffer of which we only ever write
 * frame headers (DATA goes out without copying, see cb_send_data). Taken
 * from the heap, its pages become resident as soon as the heap recycles
 * them; mapped on its own, the untouched pages never count. Allocations of
 * H2_MMAP_MIN bytes or more are therefore mmap'ed; a 16-byte header says
 * which kind each block is. */
#define H2_MMAP_MIN ((size_t)8192)
#define H2_HDR      ((size_t)16)

static void *h2_alloc(size_t n, int zero)
{
    size_t total = n + H2_HDR;
    size_t *p;
    if (n >= H2_MMAP_MIN) {
        void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        p = m;
        p[1] = 1;
    } else {
        p = zero ? calloc(1, total) : malloc(total);
        if (!p)
            return NULL;
        p[1] = 0;
    }
    p[0] = total;
    return (uint8_t *)p + H2_HDR;
}

static void h2_free(void *ptr, void *user)
{
    (void)user;
    if (!ptr)
        return;
    size_t *p = (size_t *)(void *)((uint8_t *)ptr - H2_HDR);
    if (p[1])
        munmap(p, p[0]);
    else
        free(p);
}

static void *h2_malloc(size_t n, void *user)
{
    (void)user;
    return h2_alloc(n, 0);
}

static void *h2_calloc(size_t nmemb, size_t size, void *user)
{
    (void)user;
    if (size && nmemb > SIZE_MAX / size)
        return NULL;
    return h2_alloc(nmemb * size, 1);
}

static void *h2_realloc(void *ptr, size_t n, void *user)
{
    if (!ptr)
        return h2_alloc(n, 0);
    size_t *p = (size_t *)(void *)((uint8_t *)ptr - H2_HDR);
    size_t old = p[0] - H2_HDR;
    void *q = h2_alloc(n, 0);
    if (!q)
        return NULL;
    memcpy(q, ptr, old < n ? old : n);
    h2_free(ptr, user);
    return q;
}

nghttp2_mem xds_h2_mem = {NULL, h2_malloc, h2_free, h2_calloc, h2_realloc};
