#include "xds_h2_impl.h"

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- nghttp2 memory ------------------------------------------------------------
 * One allocator per connection (its user pointer is the connection's
 * struct h2_mem). nghttp2 1.52 gives every session a 16 KB frame buffer of
 * which we only ever write frame headers (DATA goes out without copying,
 * see cb_send_data). Taken from the heap, its pages become resident as soon
 * as the heap recycles them; mapped on its own, only the pages written count
 * (one), and that one is handed back to the kernel whenever the session has
 * nothing left to send (xds_h2_mem_trim): an idle connection holds no page
 * of it. Allocations of H2_MMAP_MIN bytes or more are therefore mmap'ed
 * (up to H2_MEM_MAPS per session; beyond, the heap); the connection
 * remembers which, so that no block carries a header. */
#define H2_MMAP_MIN ((size_t)8192)

static size_t g_heap_bytes;   /* malloc_usable_size of nghttp2's live heap blocks */
static size_t g_mapped_bytes; /* length of nghttp2's live mapped blocks */

static int slot_of(const struct h2_mem *m, const void *p)
{
    for (int i = 0; i < H2_MEM_MAPS; i++)
        if (m->map[i] && m->map[i] == p)
            return i;
    return -1;
}

static void *h2_alloc(struct h2_mem *m, size_t n, int zero)
{
    if (n >= H2_MMAP_MIN) {
        for (int i = 0; i < H2_MEM_MAPS; i++) {
            if (m->map[i])
                continue;
            void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED)
                return NULL;
            m->map[i] = p;
            m->map_len[i] = n;
            if (m->creating && !m->framebuf)
                m->framebuf = p; /* the only large block a new session takes */
            g_mapped_bytes += n;
            return p;
        }
    }
    void *p = zero ? calloc(1, n ? n : 1) : malloc(n ? n : 1);
    if (p)
        g_heap_bytes += malloc_usable_size(p);
    return p;
}

static void h2_free(void *ptr, void *user)
{
    struct h2_mem *m = user;
    if (!ptr)
        return;
    int i = slot_of(m, ptr);
    if (i >= 0) {
        munmap(ptr, m->map_len[i]);
        g_mapped_bytes -= m->map_len[i];
        if (m->framebuf == ptr)
            m->framebuf = NULL;
        m->map[i] = NULL;
        m->map_len[i] = 0;
        return;
    }
    g_heap_bytes -= malloc_usable_size(ptr);
    free(ptr);
}

static void *h2_malloc(size_t n, void *user)
{
    return h2_alloc(user, n, 0);
}

static void *h2_calloc(size_t nmemb, size_t size, void *user)
{
    if (size && nmemb > SIZE_MAX / size)
        return NULL;
    return h2_alloc(user, nmemb * size, 1); /* mapped pages are zero */
}

static void *h2_realloc(void *ptr, size_t n, void *user)
{
    struct h2_mem *m = user;
    if (!ptr)
        return h2_alloc(m, n, 0);
    int i = slot_of(m, ptr);
    size_t old;
    if (i < 0) {
        old = malloc_usable_size(ptr);
        if (n < H2_MMAP_MIN) {
            void *q = realloc(ptr, n ? n : 1);
            if (q) {
                g_heap_bytes -= old;
                g_heap_bytes += malloc_usable_size(q);
            }
            return q;
        }
    } else {
        old = m->map_len[i];
    }
    void *q = h2_alloc(m, n, 0);
    if (!q)
        return NULL;
    memcpy(q, ptr, old < n ? old : n);
    h2_free(ptr, m);
    return q;
}

void xds_h2_mem_init(struct h2_mem *m)
{
    memset(m, 0, sizeof(*m));
    m->mem = (nghttp2_mem){m, h2_malloc, h2_free, h2_calloc, h2_realloc};
}

void xds_h2_mem_trim(struct h2_mem *m)
{
    if (!m->dirty || !m->framebuf)
        return;
    int i = slot_of(m, m->framebuf);
    /* The session has no frame under way: the buffer's bytes are dead, and
     * the next frame is written from its start. Zero pages come back on
     * the next write. */
    if (i >= 0 && madvise(m->framebuf, m->map_len[i], MADV_DONTNEED) == 0)
        m->dirty = 0;
}

size_t xds_h2_mem_resident(const struct h2_mem *m)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), total = 0;
    for (int i = 0; i < H2_MEM_MAPS; i++) {
        if (!m->map[i])
            continue;
        size_t pages = (m->map_len[i] + page - 1) / page;
        unsigned char vec[64];
        for (size_t off = 0; off < pages; off += sizeof(vec)) {
            size_t k = pages - off < sizeof(vec) ? pages - off : sizeof(vec);
            if (mincore((uint8_t *)m->map[i] + off * page, k * page, vec) != 0)
                return SIZE_MAX;
            for (size_t j = 0; j < k; j++)
                total += (vec[j] & 1) ? page : 0;
        }
    }
    return total;
}

void xds_h2_mem_usage(size_t *heap, size_t *mapped)
{
    *heap = g_heap_bytes;
    *mapped = g_mapped_bytes;
}
