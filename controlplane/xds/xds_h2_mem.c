#include "xds_h2_impl.h"

#include "cx_sanitize.h"

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- nghttp2 memory ------------------------------------------------------------
 * One allocator per connection (its user pointer is the connection's
 * struct h2_mem). What an idle connection keeps resident is what was
 * touched, rounded to pages: the allocator places nghttp2's blocks so that
 * the bytes an idle session does not use stay on pages it can hand back.
 *
 * The frame buffer: nghttp2 1.52 gives every session a 16 KB frame buffer
 * of which we only ever write frame headers (DATA goes out without
 * copying, see cb_send_data). Mapped on its own, only the pages written
 * count (one), and that one is handed back to the kernel whenever the
 * session has nothing left to send (xds_h2_mem_trim). Allocations of
 * H2_MMAP_MIN bytes or more are therefore mmap'ed (up to H2_MEM_MAPS per
 * session; beyond, the heap); the connection remembers which, so that no
 * block carries a header.
 *
 * The connection's unit: UNIT_PAGES pages from a shared pool (chunks of
 * UNIT_CHUNK units, one mapping each), laid out as
 *
 *   P0  [deflater ring]...[stream map, buckets 0..157      ]  handed back
 *   P1  [buckets 158..255][hot area: struct h2_conn, calls ]  resident
 *   P2  [inflater ring]                                       handed back
 *
 * - The stream map: nghttp2 1.52 callocs a 4 KB table of 256 buckets of
 *   16 bytes at session creation; a connection with one stream uses one
 *   bucket, the one of stream 1 (158: the table hashes key * 2654435769
 *   and takes the top 8 bits). From the heap the whole table is resident;
 *   here it straddles P0 and P1 so that bucket 158 opens P1, and the rest
 *   of P1 holds what is written anyway (the hot area). nghttp2 reads the
 *   whole table now and then (SETTINGS walk every stream), which faults
 *   P0 in: while it holds only zeros (no stream's bucket in it, the
 *   deflater's ring unused), handing it back changes nothing, so the trim
 *   does that. A stream whose bucket falls in P0 keeps it resident: more
 *   memory, never an error.
 * - The HPACK rings: both 1 KB, sized for the default 4 KB table even with
 *   both tables at 0. The deflater's is never written
 *   (max_deflate_dynamic_table_size 0); the inflater's holds a few
 *   pointers while the peer still indexes headers before it has our
 *   SETTINGS (HEADER_TABLE_SIZE 0), dead once the table is empty: P2 is
 *   then handed back (xds_h2_mem_trim).
 * - The hot area: the connection struct, nghttp2's streams (HOT_MIN to
 *   HOT_MAX bytes; its frame items, 152 bytes, come and go and would take
 *   the room) and the calls' state (xds_h2_mem_hot_alloc), first fit,
 *   while they fit; the heap beyond.
 *
 * Which block is which comes from nghttp2 1.52's session creation:
 * malloc'ed blocks of COLD_MIN bytes or more are the rings (deflater's
 * first), the calloc of MAP_TABLE bytes is the map. Another version that
 * allocates otherwise only costs more memory: each slot is handed out once
 * per unit (so it is zero, the unit came clean), a block goes there only
 * if it fits, and a page is handed back only when its bytes are dead.
 * Main loop only. */
#define H2_MMAP_MIN ((size_t)8192)
#define UNIT_PAGES  3
#define UNIT_CHUNK  32
#define MAP_TABLE   ((size_t)4096) /* 256 buckets of 16 bytes */
#define MAP_SPLIT   ((size_t)2528) /* offset of stream 1's bucket (158 * 16) */
#define COLD_MIN    ((size_t)512)
#define HOT_MIN     ((size_t)192) /* nghttp2 blocks placed in the hot area: its */
#define HOT_MAX     ((size_t)256) /* streams (not its short-lived frame items) */
#define ALIGN       ((size_t)16)

enum { SLOT_RING0 = 1, SLOT_MAP = 2, SLOT_RING2 = 4 };

static size_t g_heap_bytes;   /* malloc_usable_size of nghttp2's live heap blocks */
static size_t g_mapped_bytes; /* length of nghttp2's live mapped blocks and units */

static size_t page_size(void)
{
    static size_t page;
    if (!page)
        page = (size_t)sysconf(_SC_PAGESIZE);
    return page;
}

/* ---- the pool of units ------------------------------------------------------ */

static struct {
    uint8_t **free; /* clean units */
    size_t nfree, cap;
    uint8_t **chunks;
    size_t nchunks;
    size_t in_use;
} g_pool;

static size_t unit_bytes(void)
{
    return UNIT_PAGES * page_size();
}

static void pool_drop(void)
{
    /* the free units are poisoned: the addresses go back to the kernel,
     * and a later mapping there (nghttp2's frame buffer) must not inherit
     * the poison (ASan keeps shadow bytes across munmap) */
    for (size_t i = 0; i < g_pool.nchunks; i++) {
        CX_UNPOISON(g_pool.chunks[i], UNIT_CHUNK * unit_bytes());
        munmap(g_pool.chunks[i], UNIT_CHUNK * unit_bytes());
    }
    free(g_pool.chunks);
    free(g_pool.free);
    memset(&g_pool, 0, sizeof(g_pool));
}

static uint8_t *unit_get(void)
{
    if (page_size() < MAP_TABLE)
        return NULL; /* the layout needs pages of 4 KB or more */
    if (!g_pool.nfree) {
        uint8_t **ch = realloc(g_pool.chunks, (g_pool.nchunks + 1) * sizeof(*ch));
        if (!ch)
            return NULL;
        g_pool.chunks = ch;
        size_t need = (g_pool.nchunks + 1) * UNIT_CHUNK;
        if (g_pool.cap < need) {
            uint8_t **f = realloc(g_pool.free, need * 2 * sizeof(*f));
            if (!f)
                return NULL;
            g_pool.free = f;
            g_pool.cap = need * 2;
        }
        void *p = mmap(NULL, UNIT_CHUNK * unit_bytes(), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        g_pool.chunks[g_pool.nchunks++] = p;
        for (size_t i = UNIT_CHUNK; i > 0; i--)
            g_pool.free[g_pool.nfree++] = (uint8_t *)p + (i - 1) * unit_bytes();
    }
    g_pool.in_use++;
    g_mapped_bytes += unit_bytes();
    uint8_t *u = g_pool.free[--g_pool.nfree];
    CX_POISON(u, unit_bytes()); /* blocks are unpoisoned as they are handed out */
    return u;
}

static void unit_put(uint8_t *u)
{
    CX_POISON(u, unit_bytes());
    madvise(u, unit_bytes(), MADV_DONTNEED); /* back clean (zero) */
    g_pool.free[g_pool.nfree++] = u;
    g_mapped_bytes -= unit_bytes();
    if (--g_pool.in_use == 0)
        pool_drop();
}

/* ---- slots of a unit ---------------------------------------------------------- */

static size_t ring0_cap(void)
{
    return page_size() - MAP_SPLIT;
}
static size_t map_off(void)
{
    return page_size() - MAP_SPLIT;
}
static size_t hot_off(void)
{
    return page_size() + (MAP_TABLE - MAP_SPLIT);
}
static size_t hot_cap(void)
{
    return page_size() - (MAP_TABLE - MAP_SPLIT);
}
static size_t ring2_off(void)
{
    return 2 * page_size();
}

static int in_unit(const struct h2_mem *m, const void *p)
{
    return m->unit && (const uint8_t *)p >= m->unit && (const uint8_t *)p < m->unit + unit_bytes();
}

/* First fit in the hot area; NULL when nothing fits. */
static void *hot_alloc(struct h2_mem *m, size_t n)
{
    size_t need = (n + ALIGN - 1) & ~(ALIGN - 1);
    if (!m->unit || m->nhot >= H2_HOT_BLOCKS || need > hot_cap() || need == 0)
        return NULL;
    size_t at = 0;
    int i = 0;
    for (; i < m->nhot; i++) {
        if (m->hot_off[i] >= at + need)
            break;
        at = (size_t)m->hot_off[i] + m->hot_len[i];
    }
    if (i == m->nhot && at + need > hot_cap())
        return NULL;
    memmove(&m->hot_off[i + 1], &m->hot_off[i], (size_t)(m->nhot - i) * sizeof(m->hot_off[0]));
    memmove(&m->hot_len[i + 1], &m->hot_len[i], (size_t)(m->nhot - i) * sizeof(m->hot_len[0]));
    m->hot_off[i] = (uint16_t)at;
    m->hot_len[i] = (uint16_t)need;
    m->nhot++;
    CX_UNPOISON(m->unit + hot_off() + at, need);
    return m->unit + hot_off() + at;
}

static int hot_index(const struct h2_mem *m, const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    if (b < m->unit + hot_off())
        return -1;
    size_t at = (size_t)(b - (m->unit + hot_off()));
    for (int i = 0; i < m->nhot; i++)
        if (m->hot_off[i] == at)
            return i;
    return -1;
}

static void hot_free(struct h2_mem *m, int i)
{
    CX_POISON(m->unit + hot_off() + m->hot_off[i], m->hot_len[i]);
    m->nhot--;
    memmove(&m->hot_off[i], &m->hot_off[i + 1], (size_t)(m->nhot - i) * sizeof(m->hot_off[0]));
    memmove(&m->hot_len[i], &m->hot_len[i + 1], (size_t)(m->nhot - i) * sizeof(m->hot_len[0]));
}

/* Bytes a block of the unit holds (for realloc), 0 if |p| is none. */
static size_t unit_block_len(const struct h2_mem *m, const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    if ((m->slots & SLOT_RING0) && b == m->unit)
        return m->ring_len[0];
    if ((m->slots & SLOT_MAP) && b == m->unit + map_off())
        return MAP_TABLE;
    if ((m->slots & SLOT_RING2) && b == m->unit + ring2_off())
        return m->ring_len[1];
    int i = hot_index(m, p);
    return i >= 0 ? m->hot_len[i] : 0;
}

static void unit_free(struct h2_mem *m, void *p)
{
    uint8_t *b = p;
    if ((m->slots & SLOT_RING0) && b == m->unit) {
        m->slots &= (uint8_t)~SLOT_RING0;
        CX_POISON(b, m->ring_len[0]);
    } else if ((m->slots & SLOT_MAP) && b == m->unit + map_off()) {
        m->slots &= (uint8_t)~SLOT_MAP;
        CX_POISON(b, MAP_TABLE);
    } else if ((m->slots & SLOT_RING2) && b == m->unit + ring2_off()) {
        m->slots &= (uint8_t)~SLOT_RING2;
        CX_POISON(b, m->ring_len[1]);
    } else {
        int i = hot_index(m, p);
        if (i >= 0)
            hot_free(m, i);
    }
}

/* A block of the unit for nghttp2, or NULL (the heap then). */
static void *unit_alloc(struct h2_mem *m, size_t n, int zero)
{
    if (!m->unit)
        return NULL;
    if (m->creating) {
        uint8_t *p = NULL;
        int slot = 0;
        if (zero && n == MAP_TABLE && !(m->used & SLOT_MAP)) {
            slot = SLOT_MAP;
            p = m->unit + map_off();
        } else if (!zero && n >= COLD_MIN && n <= ring0_cap() && !(m->used & SLOT_RING0)) {
            slot = SLOT_RING0;
            m->ring_len[0] = (uint16_t)n;
            p = m->unit;
        } else if (!zero && n >= COLD_MIN && n <= page_size() && !(m->used & SLOT_RING2)) {
            slot = SLOT_RING2;
            m->ring_len[1] = (uint16_t)n;
            p = m->unit + ring2_off();
        }
        if (p) {
            m->used |= (uint8_t)slot; /* zero until now: the unit came clean */
            m->slots |= (uint8_t)slot;
            CX_UNPOISON(p, n);
        }
        return p;
    }
    if (n < HOT_MIN || n > HOT_MAX)
        return NULL;
    void *p = hot_alloc(m, n);
    if (p && zero)
        memset(p, 0, n);
    return p;
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
    void *p = unit_alloc(m, n, zero);
    if (p)
        return p;
    if (n >= H2_MMAP_MIN) {
        for (int i = 0; i < H2_MEM_MAPS; i++) {
            if (m->map[i])
                continue;
            p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
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
    p = zero ? calloc(1, n ? n : 1) : malloc(n ? n : 1);
    if (p)
        g_heap_bytes += malloc_usable_size(p);
    return p;
}

static void h2_free(void *ptr, void *user)
{
    struct h2_mem *m = user;
    if (!ptr)
        return;
    if (in_unit(m, ptr)) {
        unit_free(m, ptr);
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
    if (in_unit(m, ptr)) {
        old = unit_block_len(m, ptr);
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

void *xds_h2_mem_conn_new(size_t size, size_t mem_off)
{
    uint8_t *u = unit_get();
    if (u && size > hot_cap()) {
        unit_put(u);
        u = NULL;
    }
    if (!u) {
        uint8_t *c = calloc(1, size);
        if (c)
            xds_h2_mem_init((struct h2_mem *)(void *)(c + mem_off));
        return c;
    }
    uint8_t *c = u + hot_off(); /* zero: the unit came clean */
    CX_UNPOISON(c, size);
    struct h2_mem *m = (struct h2_mem *)(void *)(c + mem_off);
    xds_h2_mem_init(m);
    m->unit = u;
    hot_alloc(m, size); /* == c: the first block of an empty hot area */
    return c;
}

void xds_h2_mem_conn_free(struct h2_mem *m, void *conn)
{
    uint8_t *u = m->unit;
    if (u)
        unit_put(u); /* |conn| and |m| are in it: nothing after this */
    else
        free(conn);
}

void *xds_h2_mem_hot_alloc(struct h2_mem *m, size_t n)
{
    void *p = hot_alloc(m, n);
    if (p)
        memset(p, 0, n);
    else
        p = calloc(1, n);
    return p;
}

void xds_h2_mem_hot_free(struct h2_mem *m, void *p)
{
    if (!p)
        return;
    if (in_unit(m, p)) {
        int i = hot_index(m, p);
        if (i >= 0)
            hot_free(m, i);
        return;
    }
    free(p);
}

static int page_resident(const void *p)
{
    unsigned char v = 0;
    return mincore((void *)(uintptr_t)p, page_size(), &v) == 0 && (v & 1);
}

static int page_zero(const uint8_t *p)
{
    const uint64_t *w = (const uint64_t *)(const void *)p;
    for (size_t i = 0; i < page_size() / sizeof(*w); i++)
        if (w[i])
            return 0;
    return 1;
}

void xds_h2_mem_trim(struct h2_mem *m, int hd_empty)
{
    int i = m->framebuf ? slot_of(m, m->framebuf) : -1;
    /* The session has no frame under way: the buffer's bytes are dead, and
     * the next frame is written from its start. Zero pages come back on
     * the next write. */
    if (m->dirty && i >= 0 && madvise(m->framebuf, m->map_len[i], MADV_DONTNEED) == 0)
        m->dirty = 0;
    if (!m->unit)
        return;
    /* Both dynamic tables empty: no ring holds a live entry (nghttp2 reads
     * none beyond a ring's length), so P2's bytes are dead too. */
    if (m->cold_dirty && hd_empty &&
        madvise(m->unit + ring2_off(), page_size(), MADV_DONTNEED) == 0)
        m->cold_dirty = 0;
    /* P0 holding only zeros reads the same once handed back. (Poisoned
     * bytes of it are no one's: read them unpoisoned for the check.) */
    if (page_resident(m->unit)) {
        CX_UNPOISON(m->unit, page_size());
        int zero = page_zero(m->unit);
        CX_POISON(m->unit, page_size());
        if (m->slots & SLOT_RING0)
            CX_UNPOISON(m->unit, m->ring_len[0]);
        if (m->slots & SLOT_MAP)
            CX_UNPOISON(m->unit + map_off(), page_size() - map_off());
        if (zero)
            madvise(m->unit, page_size(), MADV_DONTNEED);
    }
}

static size_t resident_pages(const void *p, size_t len)
{
    size_t page = page_size(), total = 0;
    size_t pages = (len + page - 1) / page;
    unsigned char vec[64];
    for (size_t off = 0; off < pages; off += sizeof(vec)) {
        size_t k = pages - off < sizeof(vec) ? pages - off : sizeof(vec);
        if (mincore((uint8_t *)(uintptr_t)p + off * page, k * page, vec) != 0)
            return SIZE_MAX;
        for (size_t j = 0; j < k; j++)
            total += (vec[j] & 1) ? page : 0;
    }
    return total;
}

size_t xds_h2_mem_resident(const struct h2_mem *m)
{
    size_t total = 0, r;
    for (int i = 0; i < H2_MEM_MAPS; i++) {
        if (!m->map[i])
            continue;
        if ((r = resident_pages(m->map[i], m->map_len[i])) == SIZE_MAX)
            return SIZE_MAX;
        total += r;
    }
    if (m->unit) {
        /* P0 and P2; P1 is the connection's own page, resident by design */
        if ((r = resident_pages(m->unit, page_size())) == SIZE_MAX)
            return SIZE_MAX;
        total += r;
        if ((r = resident_pages(m->unit + ring2_off(), page_size())) == SIZE_MAX)
            return SIZE_MAX;
        total += r;
    }
    return total;
}

void xds_h2_mem_usage(size_t *heap, size_t *mapped)
{
    *heap = g_heap_bytes;
    *mapped = g_mapped_bytes;
}
