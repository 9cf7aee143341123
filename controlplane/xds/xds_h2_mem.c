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
static size_t g_mapped_bytes; /* length of nghttp2's live mapped blocks and cold pages */

/* ---- the cold pool ---------------------------------------------------------------
 * nghttp2 1.52 gives every session two HPACK rings of 1 KB, sized for the
 * default 4 KB table even when both tables are 0. The deflater's is never
 * written (max_deflate_dynamic_table_size 0); the inflater's only while the
 * peer still indexes headers before it has our SETTINGS (HEADER_TABLE_SIZE
 * 0): a few pointers, dead once the table is empty. From the heap they cost
 * 2 KB of RSS per connection; on a page of their own, handed back once the
 * tables are empty (xds_h2_mem_trim), nothing. Such blocks (malloc'ed --
 * not calloc'ed -- while the session is created, 512 bytes to H2_MMAP_MIN)
 * are carved from the connection's cold page. Pages come from chunks of
 * COLD_CHUNK_PAGES (one mapping per chunk, not per connection), belong to
 * one connection at a time and go back clean; the chunks are unmapped when
 * no page is in use. Main loop only. */
#define COLD_CHUNK_PAGES 64
#define COLD_MIN         ((size_t)512)

static struct {
    uint8_t **free; /* clean pages */
    size_t nfree, cap;
    uint8_t **chunks;
    size_t nchunks;
    size_t in_use;
} g_cold;

static size_t page_size(void)
{
    static size_t page;
    if (!page)
        page = (size_t)sysconf(_SC_PAGESIZE);
    return page;
}

static void cold_pool_drop(void)
{
    for (size_t i = 0; i < g_cold.nchunks; i++)
        munmap(g_cold.chunks[i], COLD_CHUNK_PAGES * page_size());
    free(g_cold.chunks);
    free(g_cold.free);
    memset(&g_cold, 0, sizeof(g_cold));
}

static uint8_t *cold_page_get(void)
{
    size_t page = page_size();
    if (!g_cold.nfree) {
        uint8_t **ch = realloc(g_cold.chunks, (g_cold.nchunks + 1) * sizeof(*ch));
        if (!ch)
            return NULL;
        g_cold.chunks = ch;
        if (g_cold.cap < g_cold.nchunks * COLD_CHUNK_PAGES + COLD_CHUNK_PAGES) {
            size_t cap = (g_cold.nchunks + 1) * COLD_CHUNK_PAGES * 2;
            uint8_t **f = realloc(g_cold.free, cap * sizeof(*f));
            if (!f)
                return NULL;
            g_cold.free = f;
            g_cold.cap = cap;
        }
        void *p = mmap(NULL, COLD_CHUNK_PAGES * page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        g_cold.chunks[g_cold.nchunks++] = p;
        for (size_t i = COLD_CHUNK_PAGES; i > 0; i--)
            g_cold.free[g_cold.nfree++] = (uint8_t *)p + (i - 1) * page;
    }
    g_cold.in_use++;
    g_mapped_bytes += page;
    return g_cold.free[--g_cold.nfree];
}

static void cold_page_put(uint8_t *pg)
{
    madvise(pg, page_size(), MADV_DONTNEED); /* back clean */
    g_cold.free[g_cold.nfree++] = pg;
    g_mapped_bytes -= page_size();
    if (--g_cold.in_use == 0)
        cold_pool_drop();
}

static int in_cold(const struct h2_mem *m, const void *p)
{
    return m->cold && (const uint8_t *)p >= m->cold && (const uint8_t *)p < m->cold + page_size();
}

static void *cold_alloc(struct h2_mem *m, size_t n)
{
    size_t need = (n + 15) & ~(size_t)15;
    if (!m->cold) {
        if (!(m->cold = cold_page_get()))
            return NULL;
        m->cold_used = 0;
        m->cold_live = 0;
    }
    if ((size_t)m->cold_used + need > page_size())
        return NULL;
    void *p = m->cold + m->cold_used;
    m->cold_used = (uint16_t)(m->cold_used + need);
    m->cold_live++;
    return p;
}

static void cold_free(struct h2_mem *m)
{
    if (--m->cold_live == 0) {
        cold_page_put(m->cold);
        m->cold = NULL;
        m->cold_used = 0;
        m->cold_dirty = 0;
    }
}

static int slot_of(const struct h2_mem *m, const void *p)
{
    for (int i = 0; i < H2_MEM_MAPS; i++)
        if (m->map[i] && m->map[i] == p)
            return i;
    return -1;
}

static void *h2_alloc(struct h2_mem *m, size_t n, int zero)
{
    if (m->creating && !zero && n >= COLD_MIN && n < H2_MMAP_MIN) {
        void *p = cold_alloc(m, n);
        if (p)
            return p;
    }
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
    if (in_cold(m, ptr)) {
        cold_free(m);
        return;
    }
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
    if (in_cold(m, ptr)) {
        old = page_size() - (size_t)((const uint8_t *)ptr - m->cold); /* at most */
    } else if (i < 0) {
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

void xds_h2_mem_trim(struct h2_mem *m, int hd_empty)
{
    int i = m->framebuf ? slot_of(m, m->framebuf) : -1;
    /* The session has no frame under way: the buffer's bytes are dead, and
     * the next frame is written from its start. Zero pages come back on
     * the next write. */
    if (m->dirty && i >= 0 && madvise(m->framebuf, m->map_len[i], MADV_DONTNEED) == 0)
        m->dirty = 0;
    /* Both dynamic tables empty: no ring holds a live entry (nghttp2 reads
     * none beyond the ring's length), so their bytes are dead too. */
    if (m->cold_dirty && hd_empty && m->cold && madvise(m->cold, page_size(), MADV_DONTNEED) == 0)
        m->cold_dirty = 0;
}

size_t xds_h2_mem_resident(const struct h2_mem *m)
{
    size_t page = page_size(), total = 0;
    if (m->cold) {
        unsigned char v = 0;
        if (mincore(m->cold, page, &v) != 0)
            return SIZE_MAX;
        total += (v & 1) ? page : 0;
    }
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
