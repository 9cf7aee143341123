/*
 * xlate_util: the translator's small building blocks — an arena for the
 * parsed form of one object (freed in one call when the object changes or
 * goes) and bounded string building. (Its hash maps: common/cx_map.)
 *
 * Internal to the translator; not thread-safe (one translator context is
 * used by one thread at a time).
 */
#ifndef XLATE_UTIL_H
#define XLATE_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* ---- arena ---------------------------------------------------------------- */

struct xl_chunk;

struct xl_arena {
    struct xl_chunk *head;
    size_t used;  /* bytes used in head */
    size_t total; /* bytes allocated, all chunks (for stats) */
    size_t hint;  /* size of the first chunk (0: the default) */
    size_t live;  /* bytes handed out since the last free */
};

/* Zeroed memory, 8-byte aligned (what every type it holds needs), valid until xlate_arena_free.
 * NULL when memory ran out. */
void *xlate_alloc(struct xl_arena *a, size_t n);
/* Copies of strings, packed without alignment. */
char *xlate_strdup(struct xl_arena *a, const char *s);
char *xlate_strndup(struct xl_arena *a, const char *s, size_t n);
__attribute__((format(printf, 2, 3))) char *xlate_printf(struct xl_arena *a, const char *fmt, ...);
void xlate_arena_free(struct xl_arena *a);
/* Forgets everything allocated but keeps the newest chunk for what comes
 * next (a scratch arena reused call after call). */
void xlate_arena_reset(struct xl_arena *a);

/* ---- big buffers ---------------------------------------------------------- */

/* Buffers of megabytes written afresh by a pass (a Gateway's
 * RouteConfiguration, the report block). Memory new to the process costs
 * one page fault per 4 KiB page on first touch: on the benchmark machine
 * (a VM) a fault costs ~18 us, 8 MiB of fresh pages ~37 ms, a tenth of a
 * full 10k translation's CPU. From XL_BIG_MIN bytes these buffers are
 * mapped on their own, 2 MiB aligned and advised for transparent huge
 * pages (MADV_HUGEPAGE): where the kernel allows it (THP "always" or
 * "madvise") 2 MiB take one fault, 8 MiB ~0.5 ms; elsewhere they cost what
 * malloc's pages cost. XL_BIG_MIN counts a 16-byte header: a buffer of
 * XL_BIG_MIN - 16 bytes is one huge page. Smaller ones, and every one in
 * sanitizer builds (so that ASan sees their bounds and leaks), come from
 * malloc. Free with xlate_big_free only. NULL when memory ran out. */
#define XL_BIG_MIN ((size_t)2 << 20)
enum {
    XL_BIG_ZERO = 1, /* zeroed */
    XL_BIG_MAP = 2,  /* mapped when big enough */
};
void *xlate_big_alloc(size_t n, unsigned flags);
/* Tests: buffers from |n| bytes on are mapped (XL_BIG_MIN by default);
 * returns the previous value. Whether this build maps at all:
 * xlate_big_maps(). */
size_t xlate_big_threshold(size_t n);
int xlate_big_maps(void);
/* Room for |n| bytes, contents kept (xlate_big_alloc's memory only; a
 * mapped buffer stays mapped, a malloc'd one malloc'd). NULL when memory
 * ran out, |p| then still valid. */
void *xlate_big_realloc(void *p, size_t n);
void xlate_big_free(void *p);
/* Bytes mapped by xlate_big_alloc and not yet freed, process-wide (tests:
 * mapped buffers are not in leak checkers' view). */
size_t xlate_big_mapped(void);
/* Freed mappings are kept for reuse (a few, 64 MiB at most): their bytes,
 * and their return to the system (after a full pass, with malloc_trim). */
size_t xlate_big_cached(void);
void xlate_big_trim(void);

/* ---- a pool of small blocks ------------------------------------------------ */

/* Blocks of up to XL_POOL_MAX bytes in size classes of 64, carved from
 * slabs: a first of 64 KiB, then 2 MiB ones (xlate_big_alloc: huge pages), a
 * freed block kept on its class's list for the next of its size. For
 * what a context holds by the tens of thousands (its entries): one
 * allocation per object from malloc's fragmented heap, and one page fault
 * per 4 KiB of them, cost a tenth of a full pass. The slabs are given back
 * by xlate_pool_free only. ASan and valgrind see every block as a heap
 * block of its own (bounds, use after put, leaks). */
#define XL_POOL_MAX     1024
#define XL_POOL_CLASSES (XL_POOL_MAX / 64)

struct xl_pool_slab;
struct xl_pool {
    struct xl_pool_slab *slabs;
    unsigned char *cur; /* the newest slab's unused part */
    size_t left;
    size_t next;                 /* size of the next slab */
    void *free[XL_POOL_CLASSES]; /* per class: blocks put back */
    size_t live;                 /* blocks out */
};

/* |n| (1..XL_POOL_MAX) zeroed bytes, 16-byte aligned; NULL when memory ran
 * out. */
void *xlate_pool_get(struct xl_pool *p, size_t n);
/* Gives back block |b| of |n| bytes (as asked of xlate_pool_get). */
void xlate_pool_put(struct xl_pool *p, void *b, size_t n);
/* Every slab; every block must have been put back. */
void xlate_pool_free(struct xl_pool *p);

/* ---- bounded strings without printf ----------------------------------------- */

/* Appends |s| (xlate_cat) or the decimal |v| (xlate_cat_u) to the string ending
 * at |p| in a buffer ending at |end| (exclusive; p < end), truncating; the
 * result is NUL-terminated. Returns the new end of the string. For names
 * and messages built once per object, where snprintf's cost shows. */
char *xlate_cat(char *p, const char *end, const char *s);
char *xlate_cat_u(char *p, const char *end, uint64_t v);

/* FNV-1a (cx_fnv64) of |n| bytes, and of a string with its NUL (NULL as
 * ""), continuing |h|: in-process change keys, never published. */
uint64_t xlate_fnv(uint64_t h, const void *p, size_t n);
uint64_t xlate_fnv_str(uint64_t h, const char *s);

#endif
