/*
 * xlate_util: the translator's small building blocks — an arena for the
 * parsed form of one object (freed in one call when the object changes or
 * goes), and an open-addressing hash map from strings to pointers.
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

/* Zeroed memory, 16-byte aligned, valid until xlate_arena_free. NULL when memory
 * ran out. */
void *xlate_alloc(struct xl_arena *a, size_t n);
/* Copies of strings, packed without alignment. */
char *xlate_strdup(struct xl_arena *a, const char *s);
char *xlate_strndup(struct xl_arena *a, const char *s, size_t n);
__attribute__((format(printf, 2, 3))) char *xlate_printf(struct xl_arena *a, const char *fmt, ...);
void xlate_arena_free(struct xl_arena *a);
/* Forgets everything allocated but keeps the newest chunk for what comes
 * next (a scratch arena reused call after call). */
void xlate_arena_reset(struct xl_arena *a);

/* ---- bounded strings without printf ----------------------------------------- */

/* Appends |s| (xlate_cat) or the decimal |v| (xlate_cat_u) to the string ending
 * at |p| in a buffer ending at |end| (exclusive; p < end), truncating; the
 * result is NUL-terminated. Returns the new end of the string. For names
 * and messages built once per object, where snprintf's cost shows. */
char *xlate_cat(char *p, const char *end, const char *s);
char *xlate_cat_u(char *p, const char *end, uint64_t v);

/* ---- string -> pointer map ------------------------------------------------ */

struct xl_map_slot {
    uint64_t hash; /* 0: empty */
    const char *key;
    size_t klen;
    void *val;
};

struct xl_map {
    struct xl_map_slot *slots;
    size_t cap; /* power of two */
    size_t n;
    size_t tombs;
};

uint64_t xlate_hash(const void *key, size_t len);

/* Key bytes are not copied: they must live as long as the entry. */
void *xlate_map_get(const struct xl_map *m, const void *key, size_t klen);
/* Inserts or replaces. Returns 0, or -1 when memory ran out. */
__attribute__((warn_unused_result)) int xlate_map_put(struct xl_map *m, const void *key,
                                                      size_t klen, void *val);
/* Makes room for |n| entries in all, so that as many puts never rehash.
 * Returns 0, or -1 when memory ran out (the map is unchanged). */
__attribute__((warn_unused_result)) int xlate_map_reserve(struct xl_map *m, size_t n);
/* Removes |key|; returns its value or NULL. */
void *xlate_map_del(struct xl_map *m, const void *key, size_t klen);
void xlate_map_free(struct xl_map *m);

/* Asks for the slot where |key|'s probe starts: a lookup soon after finds
 * it in the cache. */
static inline void xlate_map_prefetch(const struct xl_map *m, const void *key, size_t klen)
{
    if (m->cap)
        __builtin_prefetch(&m->slots[xlate_hash(key, klen) & (m->cap - 1)]);
}

static inline void *xlate_map_gets(const struct xl_map *m, const char *key)
{
    return xlate_map_get(m, key, __builtin_strlen(key));
}

/* Iteration: for (size_t i = 0; xlate_map_next(m, &i, &slot);) */
int xlate_map_next(const struct xl_map *m, size_t *i, const struct xl_map_slot **slot);

#endif
