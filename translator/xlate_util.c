#include "xlate_util.h"

#include "cx_hash.h"
#include "cx_sanitize.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- arena ---------------------------------------------------------------- */

/* Small first chunk (most objects parse into well under 1 KiB), growing by
 * half after: a parsed Service costs one small allocation, a big
 * VirtualService a few. */
#define XL_CHUNK_MIN      512
#define XL_CHUNK_SMALLEST 64

struct xl_chunk {
    struct xl_chunk *next;
    size_t size;
    _Alignas(16) unsigned char data[];
};

/* |n| bytes at the next multiple of |align| (a power of two) in the head
 * chunk, or in a new one; not zeroed. */
static unsigned char *arena_get(struct xl_arena *a, size_t n, size_t align)
{
    size_t at = a->head ? (a->used + align - 1) & ~(align - 1) : 0;
    if (!a->head || at + n > a->head->size) {
        /* growing by half: an arena sized by its hint that needs a little
         * more wastes little */
        size_t size = a->total ? a->total / 2 : a->hint ? a->hint : XL_CHUNK_MIN;
        if (size < XL_CHUNK_SMALLEST)
            size = XL_CHUNK_SMALLEST;
        if (size > 1 << 20)
            size = 1 << 20;
        if (n > size)
            size = n;
        struct xl_chunk *c = malloc(sizeof(*c) + size);
        if (!c)
            return NULL;
        c->next = a->head;
        c->size = size;
        a->head = c;
        a->used = 0;
        a->total += size;
        at = 0;
    }
    unsigned char *p = a->head->data + at;
    a->live += at + n - a->used;
    a->used = at + n;
    return p;
}

/* Every type the arenas hold (pointers, sizes, 64-bit integers) needs 8 at
 * most: a 16-byte alignment wasted 8 bytes a block on average, ~10 blocks a
 * record (an EndpointSlice's address lists, a VirtualService's headers). */
#define XL_ALIGN 8
_Static_assert(_Alignof(int64_t) <= XL_ALIGN && _Alignof(void *) <= XL_ALIGN &&
                   _Alignof(double) <= XL_ALIGN && _Alignof(size_t) <= XL_ALIGN,
               "arena alignment");

void *xlate_alloc(struct xl_arena *a, size_t n)
{
    unsigned char *p = arena_get(a, n ? n : 1, XL_ALIGN);
    if (p)
        memset(p, 0, n);
    return p;
}

/* Strings are packed byte after byte: no alignment, no zeroing. */
char *xlate_strndup(struct xl_arena *a, const char *s, size_t n)
{
    char *p = (char *)arena_get(a, n + 1, 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

char *xlate_strdup(struct xl_arena *a, const char *s)
{
    return s ? xlate_strndup(a, s, strlen(s)) : NULL;
}

char *xlate_printf(struct xl_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = (char *)arena_get(a, (size_t)n + 1, 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void xlate_arena_free(struct xl_arena *a)
{
    struct xl_chunk *c = a->head;
    while (c) {
        struct xl_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->used = 0;
    /* the next use of this arena (a re-parse) starts with room for as much */
    if (a->live)
        a->hint = a->live;
    a->total = 0;
    a->live = 0;
}

void xlate_arena_reset(struct xl_arena *a)
{
    if (!a->head)
        return;
    struct xl_chunk *c = a->head->next;
    while (c) {
        struct xl_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head->next = NULL;
    a->used = 0;
    a->total = a->head->size;
    a->live = 0;
}

/* ---- big buffers ------------------------------------------------------------ */

#define XL_HUGE ((size_t)2 << 20)

/* In front of every big buffer: the mapping's length (0: from malloc) and
 * the bytes usable after the header. 16 bytes keep malloc's alignment. */
struct xl_big {
    size_t maplen;
    size_t cap;
};
_Static_assert(sizeof(struct xl_big) == 16, "big buffer header");

static _Atomic size_t big_mapped;
static _Atomic size_t big_min = XL_BIG_MIN;

#define XL_BIG_CAN_MAP (!CX_ASAN) /* ASan sees malloc's blocks, not mappings */

/* The length of a mapping for |len| bytes: a last partial huge page at
 * least half used is worth a whole one; a smaller tail stays on small
 * pages (RSS not spent on nothing). */
static size_t map_len(size_t len)
{
    size_t tail = len % XL_HUGE;
    return tail >= XL_HUGE / 2 ? len - tail + XL_HUGE : (len + 4095) & ~(size_t)4095;
}

/* Mappings freed lately, kept for the next buffers of about their size: a
 * pass's RouteConfiguration and report block replace the previous pass's,
 * whose memory is then warm; a fresh mapping is zeroed by the kernel again
 * (0.6 ms a pass at 10k). At most BIG_CACHE of them, BIG_CACHE_BYTES in
 * all; xlate_big_trim gives them back. Any thread may free a buffer (the
 * xDS server drops snapshots), hence the lock. */
#define BIG_CACHE       4
#define BIG_CACHE_BYTES ((size_t)64 << 20)
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    void *at;
    size_t len;
} cache[BIG_CACHE];
static size_t cache_bytes;

/* A cached mapping of at least |len| bytes and at most a huge page more,
 * or NULL; *maplen gets its length. */
static void *cache_take(size_t len, size_t *maplen)
{
    void *at = NULL;
    pthread_mutex_lock(&cache_mu);
    for (int i = 0; i < BIG_CACHE; i++)
        if (cache[i].at && cache[i].len >= len && cache[i].len <= len + XL_HUGE) {
            at = cache[i].at;
            *maplen = cache[i].len;
            cache_bytes -= cache[i].len;
            cache[i].at = NULL;
            break;
        }
    pthread_mutex_unlock(&cache_mu);
    return at;
}

/* Keeps mapping |at| for reuse: 1, or 0 when the cache is full. */
static int cache_put(void *at, size_t len)
{
    int kept = 0;
    pthread_mutex_lock(&cache_mu);
    for (int i = 0; i < BIG_CACHE && !kept; i++)
        if (!cache[i].at && cache_bytes + len <= BIG_CACHE_BYTES) {
            cache[i].at = at;
            cache[i].len = len;
            cache_bytes += len;
            kept = 1;
        }
    pthread_mutex_unlock(&cache_mu);
    return kept;
}

/* Freed mappings of exactly one huge page (the entry pools' slabs, 86 of
 * them for a world of 100k VirtualServices) are kept apart, on a stack
 * linked through their first word, as many as freed up to PAGES_MAX: a
 * context made after another one was freed (the benchmark, the worker
 * after a failed pass) takes them back warm. Memory handed back to the
 * kernel may be handed on to the host meanwhile (a balloon's free page
 * reporting) and then costs 2.5 ms per MiB to touch again, against 0.07
 * for a page the kernel recycles at once (docs/daemon.md). */
#define PAGES_MAX 512 /* 1 GiB */
static void *pages;
static size_t npages;

static void *page_take(void)
{
    pthread_mutex_lock(&cache_mu);
    void *at = pages;
    if (at) {
        pages = *(void **)at;
        npages--;
        cache_bytes -= XL_HUGE;
    }
    pthread_mutex_unlock(&cache_mu);
    return at;
}

static int page_put(void *at)
{
    int kept = 0;
    pthread_mutex_lock(&cache_mu);
    if (npages < PAGES_MAX) {
        *(void **)at = pages;
        pages = at;
        npages++;
        cache_bytes += XL_HUGE;
        kept = 1;
    }
    pthread_mutex_unlock(&cache_mu);
    return kept;
}

void xlate_big_trim(void)
{
    pthread_mutex_lock(&cache_mu);
    for (int i = 0; i < BIG_CACHE; i++)
        if (cache[i].at) {
            munmap(cache[i].at, cache[i].len);
            cache[i].at = NULL;
        }
    while (pages) {
        void *next = *(void **)pages;
        munmap(pages, XL_HUGE);
        pages = next;
    }
    npages = 0;
    cache_bytes = 0;
    pthread_mutex_unlock(&cache_mu);
}

size_t xlate_big_cached(void)
{
    pthread_mutex_lock(&cache_mu);
    size_t n = cache_bytes;
    pthread_mutex_unlock(&cache_mu);
    return n;
}

/* A mapping of |len| bytes (map_len) starting on a 2 MiB boundary (a huge
 * page can back only a whole aligned 2 MiB range), advised for huge pages.
 * NULL on failure. */
static void *map_aligned(size_t len)
{
    size_t over = len + XL_HUGE;
    unsigned char *m = mmap(NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    unsigned char *at = (unsigned char *)(((uintptr_t)m + XL_HUGE - 1) & ~(uintptr_t)(XL_HUGE - 1));
    if (at > m)
        munmap(m, (size_t)(at - m));
    if (m + over > at + len)
        munmap(at + len, (size_t)(m + over - (at + len)));
#ifdef MADV_HUGEPAGE
    (void)madvise(at, len, MADV_HUGEPAGE); /* advice: without THP, small pages */
#endif
    return at;
}

size_t xlate_big_threshold(size_t n)
{
    return atomic_exchange(&big_min, n);
}

int xlate_big_maps(void)
{
    return XL_BIG_CAN_MAP;
}

void *xlate_big_alloc(size_t n, unsigned flags)
{
    if (n > SIZE_MAX - sizeof(struct xl_big) - 2 * XL_HUGE)
        return NULL;
    size_t need = sizeof(struct xl_big) + n;
    struct xl_big *h;
    if (XL_BIG_CAN_MAP && (flags & XL_BIG_MAP) && need >= atomic_load(&big_min)) {
        size_t maplen = map_len(need);
        if ((h = maplen == XL_HUGE ? page_take() : cache_take(maplen, &maplen))) {
            if (flags & XL_BIG_ZERO)
                memset(h + 1, 0, n);
        } else if (!(h = map_aligned(maplen))) {
            return NULL; /* a new mapping is zero already */
        }
        h->maplen = maplen;
        h->cap = maplen - sizeof(*h);
        atomic_fetch_add(&big_mapped, maplen);
        return h + 1;
    }
    if (!(h = flags & XL_BIG_ZERO ? calloc(1, need) : malloc(need)))
        return NULL;
    h->maplen = 0;
    h->cap = n;
    return h + 1;
}

void *xlate_big_realloc(void *p, size_t n)
{
    if (!p)
        return xlate_big_alloc(n, 0);
    struct xl_big *h = (struct xl_big *)p - 1;
    if (n <= h->cap)
        return p;
    if (!h->maplen) {
        if (n > SIZE_MAX - sizeof(*h))
            return NULL;
        struct xl_big *g = realloc(h, sizeof(*h) + n);
        if (!g)
            return NULL;
        g->cap = n;
        return g + 1;
    }
    void *q = xlate_big_alloc(n, XL_BIG_MAP);
    if (!q)
        return NULL;
    memcpy(q, p, h->cap);
    xlate_big_free(p);
    return q;
}

void xlate_big_free(void *p)
{
    if (!p)
        return;
    struct xl_big *h = (struct xl_big *)p - 1;
    if (!h->maplen) {
        free(h);
        return;
    }
    size_t maplen = h->maplen;
    atomic_fetch_sub(&big_mapped, maplen);
    if (!(maplen == XL_HUGE ? page_put(h) : cache_put(h, maplen)))
        munmap(h, maplen);
}

size_t xlate_big_mapped(void)
{
    return atomic_load(&big_mapped);
}

/* ---- a pool of small blocks ----------------------------------------------------- */

#define POOL_SLAB_FIRST ((size_t)64 << 10)
#define POOL_SLAB_MAX   (XL_HUGE - sizeof(struct xl_big)) /* one huge page, mapped */

struct xl_pool_slab {
    struct xl_pool_slab *next;
    size_t size;
    _Alignas(16) unsigned char data[];
};

static size_t pool_class(size_t n)
{
    return (n + 63) / 64 - 1;
}

void *xlate_pool_get(struct xl_pool *p, size_t n)
{
    if (!n || n > XL_POOL_MAX)
        return NULL;
    size_t c = pool_class(n), sz = (c + 1) * 64;
    unsigned char *b = p->free[c];
    if (b) {
        /* the link is the block's first word: readable again for a moment */
        VALGRIND_MAKE_MEM_DEFINED(b, sizeof(void *));
        CX_UNPOISON(b, sizeof(void *));
        p->free[c] = *(void **)b;
    } else {
        if (p->left < sz) {
            size_t size = p->next ? p->next : POOL_SLAB_FIRST;
            struct xl_pool_slab *s = xlate_big_alloc(size, XL_BIG_MAP);
            if (!s)
                return NULL;
            s->next = p->slabs;
            s->size = size - sizeof(*s);
            p->slabs = s;
            p->cur = s->data;
            p->left = s->size;
            /* small worlds fit the first; a big one goes on in huge pages
             * (a 256 KiB slab is a malloc'd mapping of 4 KiB pages
             * again each time a context is made) */
            p->next = POOL_SLAB_MAX;
            CX_POISON(p->cur, p->left);
            VALGRIND_MAKE_MEM_NOACCESS(p->cur, p->left);
        }
        b = p->cur;
        p->cur += sz;
        p->left -= sz;
    }
    CX_UNPOISON(b, n);
    VALGRIND_MALLOCLIKE_BLOCK(b, n, 0, 0);
    memset(b, 0, n);
    p->live++;
    return b;
}

void xlate_pool_put(struct xl_pool *p, void *b, size_t n)
{
    if (!b)
        return;
    size_t c = pool_class(n);
    VALGRIND_FREELIKE_BLOCK(b, 0);
    /* the link: the first word, the rest unreadable until the next get */
    VALGRIND_MAKE_MEM_DEFINED(b, sizeof(void *));
    *(void **)b = p->free[c];
    VALGRIND_MAKE_MEM_NOACCESS(b, sizeof(void *));
    p->free[c] = b;
    CX_POISON(b, (c + 1) * 64);
    p->live--;
}

void xlate_pool_free(struct xl_pool *p)
{
    struct xl_pool_slab *s = p->slabs;
    while (s) {
        struct xl_pool_slab *next = s->next;
        CX_UNPOISON(s->data, s->size);
        VALGRIND_MAKE_MEM_DEFINED(s->data, s->size);
        xlate_big_free(s);
        s = next;
    }
    memset(p, 0, sizeof(*p));
}

/* ---- bounded strings ------------------------------------------------------- */

char *xlate_cat(char *p, const char *end, const char *s)
{
    size_t room = (size_t)(end - p) - 1, n = strlen(s);
    if (n > room)
        n = room;
    memcpy(p, s, n);
    p[n] = '\0';
    return p + n;
}

char *xlate_cat_u(char *p, const char *end, uint64_t v)
{
    char d[24];
    size_t k = sizeof(d);
    d[--k] = '\0';
    do {
        d[--k] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return xlate_cat(p, end, d + k);
}

uint64_t xlate_fnv(uint64_t h, const void *p, size_t n)
{
    return cx_fnv64(h, p, n);
}

uint64_t xlate_fnv_str(uint64_t h, const char *s)
{
    s = s ? s : "";
    return cx_fnv64(h, s, strlen(s) + 1);
}
